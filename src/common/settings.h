/* The environment settings of ipu-exec (IPU_EXEC_*) and libgcl (GCL_*): one
 * typed table (name, type, default, range, description), as UCX's
 * ucs_config_field_t tables. Every setting is read through it: a value is
 * checked when read; an unset or empty one means the default. An invalid
 * value (unparsable, out of range) gives one warning per process on stderr
 * naming the setting and the value used instead (the default, or the
 * nearest bound for settings that clamp); for the few settings where
 * running on would be wrong it is an error the reader reports.
 * `ipu-exec info --config` lists them; docs/settings.md is generated from
 * the table (`ipu-exec info --config --markdown`). */
#ifndef IPU_COMMON_SETTINGS_H
#define IPU_COMMON_SETTINGS_H

#include <stddef.h>

typedef enum {
    IPU_SET_IPU_EXEC_LOG_LEVEL,
    IPU_SET_IPU_EXEC_ABORT_GRACE,
    IPU_SET_IPU_EXEC_WINOGRAD,
    IPU_SET_IPU_EXEC_CONV_LAYOUT,
    IPU_SET_IPU_EXEC_SHM_LINKS,
    IPU_SET_ONEDNN_MAX_CPU_ISA,
    IPU_SET_DNNL_MAX_CPU_ISA,
    IPU_SET_GCL_LOG,
    IPU_SET_GCL_DEBUG,
    IPU_SET_GCL_NO_SHM,
    IPU_SET_GCL_SEGMENT_BYTES,
    IPU_SET_GCL_YIELD_WHEN_IDLE,
    IPU_SET_GCL_TOPO_PPN,
    IPU_SET_GCL_SHM_SLOT_BYTES,
    IPU_SET_GCL_SHM_NBUF,
    IPU_SET_GCL_SHM_ONESHOT_MAX,
    IPU_SET_GCL_SHM_DIRECT_MIN,
    IPU_SET_GCL_SHM_STREAM_BYTES,
    IPU_SET_GCL_SHM_STAGE_NT,
    IPU_SET_GCL_SHM_STAGE_NT_MIN,
    IPU_SET_GCL_ALLREDUCE_ALGO,
    IPU_SET_GCL_REDUCE_ALGO,
    IPU_SET_GCL_REDUCE_SCATTER_ALGO,
    IPU_SET_GCL_ALLGATHER_ALGO,
    IPU_SET_GCL_BROADCAST_ALGO,
    IPU_SET_GCL_ALLTOALL_ALGO,
    IPU_SET_GCL_BARRIER_ALGO,
    IPU_SET_COUNT
} ipu_setting_id_t;

typedef enum {
    IPU_SETTING_BOOL,   /* 1/0, yes/no, on/off, true/false (any case); with
                         * IPU_SETTING_AUTO also "auto", read as -1 */
    IPU_SETTING_INT,    /* decimal integer in [lo, hi] */
    IPU_SETTING_SIZE,   /* bytes in [lo, hi], as ipu_parse_size reads them */
    IPU_SETTING_CHOICE, /* one of choices (any case), read as its index */
} ipu_setting_type_t;

enum {
    IPU_SETTING_AUTO = 1 << 0,   /* bool: "auto" accepted (-1) */
    IPU_SETTING_CLAMP = 1 << 1,  /* out of range: the nearest bound, not the default */
    IPU_SETTING_STRICT = 1 << 2, /* invalid: an error for the reader, no warning */
};

typedef struct ipu_setting_def {
    const char *name;
    ipu_setting_type_t type;
    /* the default in the setting's own syntax; NULL: computed by the reader,
     * as auto_default says */
    const char *dflt;
    const char *auto_default;
    long long lo, hi; /* int, size: the range (hi IPU_SETTING_NO_MAX: none) */
    unsigned flags;
    const char *const *choices; /* choice: NULL-terminated */
    const char *doc;            /* one line, no '|' (a markdown table cell) */
} ipu_setting_def_t;

#define IPU_SETTING_NO_MAX 0x7fffffffffffffffLL

/* Where the value a setting has comes from. */
typedef enum {
    IPU_SETTING_FROM_DEFAULT,   /* unset or empty */
    IPU_SETTING_FROM_ENV,       /* the environment's value */
    IPU_SETTING_FROM_CLAMPED,   /* the environment's value, clamped to the range */
    IPU_SETTING_FROM_INVALID,   /* the environment's value is invalid: the default
                                 * (an error for IPU_SETTING_STRICT settings) */
} ipu_setting_source_t;

/* The table entry of id (static; never NULL for id < IPU_SET_COUNT). */
const ipu_setting_def_t *ipu_setting_def(ipu_setting_id_t id);

/* Reads setting id from the environment; the getter must match its type
 * (bool, choice and int all write an int). On a valid value *out is that
 * value (clamped, for IPU_SETTING_CLAMP) and the result is 1. Unset, empty
 * or invalid: *out is the default (left as the caller set it where the
 * default is computed by the reader) and the result 0; an invalid value
 * warns once per process, or, for IPU_SETTING_STRICT settings, leaves *out
 * alone and returns IPU_ERR_INVALID_ARG without a word (the reader says
 * why; ipu_setting_env() gives the value). */
int ipu_setting_bool(ipu_setting_id_t id, int *out);
int ipu_setting_int(ipu_setting_id_t id, int *out);
int ipu_setting_choice(ipu_setting_id_t id, int *out);
int ipu_setting_size(ipu_setting_id_t id, size_t *out);

/* A size in bytes, as the settings and the command line's --ipu-memory
 * take it: a decimal number (a fraction allowed: 1.5G) or a hex integer
 * (0x1000), an optional K, M, G or T suffix (binary: K = 1024) optionally
 * followed by "iB" or "B", leading blanks allowed, no sign. Returns 0 with
 * *out set; -1 for text that is not a size or a fraction of a byte; 1 when
 * the value is 2^63 or more (*out = 2^63 - 1). */
int ipu_parse_size(const char *s, unsigned long long *out);

/* The environment's text for setting id; NULL when unset or empty. */
const char *ipu_setting_env(ipu_setting_id_t id);

/* Parses text (NULL or "": unset) as setting id's value, without reading
 * the environment or warning. *v is the value to use (left alone when that
 * is a default the reader computes; a size up to IPU_SETTING_NO_MAX). why
 * (may be NULL): what is wrong with an invalid or clamped value, else "". */
ipu_setting_source_t ipu_setting_parse(ipu_setting_id_t id, const char *text, long long *v, char *why,
                                       size_t why_len);

/* Text of the value setting id has now (the environment's as given, the
 * clamped value, or the default)
 * and where it comes from; no warning. A default the reader computes is
 * "(computed)". */
ipu_setting_source_t ipu_setting_current(ipu_setting_id_t id, char *buf, size_t len);

/* The setting's accepted values ("3 to 7", "4K to 256M", "auto, ring",
 * "1, 0") and its default ("256K", or auto_default) as text; return buf. */
const char *ipu_setting_values_text(ipu_setting_id_t id, char *buf, size_t len);
const char *ipu_setting_default_text(ipu_setting_id_t id, char *buf, size_t len);

/* "bool", "int", "size" or "choice". */
const char *ipu_setting_type_name(ipu_setting_type_t type);

#endif
