/* The settings table and its parser: every IPU_EXEC_* and GCL_* environment
 * setting, and oneDNN's instruction-set cap, read and checked here (the one
 * place in src/ that reads them). */
#include "common/settings.h"

#include "common/status.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CHOICES(...) ((const char *const[]){__VA_ARGS__, NULL})
/* GCL_<COLL>_ALGO: "auto" and the collective's algorithms (decision.c) */
#define ALGO(env, coll, ...)                                                                          \
    {env, IPU_SETTING_CHOICE, "auto", NULL, 0, 0, IPU_SETTING_STRICT, CHOICES("auto", __VA_ARGS__), \
     "force the " coll " algorithm (auto: the decision table); an unknown name makes gcl_init fail"}

/* oneDNN's instruction sets, in the order of onednn_cpu.c's table */
#define ISAS                                                                                     \
    CHOICES("all", "sse41", "avx", "avx2", "avx2_vnni", "avx512_mic", "avx512_mic_4ops", "avx512_core", \
            "avx512_core_vnni", "avx512_core_bf16", "avx512_core_amx")

static const ipu_setting_def_t table[IPU_SET_COUNT] = {
    [IPU_SET_IPU_EXEC_LOG_LEVEL] = {"IPU_EXEC_LOG_LEVEL", IPU_SETTING_CHOICE, "warn", NULL, 0, 0, 0,
                                    CHOICES("error", "warn", "info", "debug"),
                                    "ipu-exec's log on stderr: messages of this level and more severe"},
    [IPU_SET_IPU_EXEC_ABORT_GRACE] = {"IPU_EXEC_ABORT_GRACE", IPU_SETTING_INT, "10", NULL, 0, 1000000000, 0, NULL,
                                      "seconds a rank that lost a peer waits for the launcher to end the job "
                                      "before it exits"},
    [IPU_SET_IPU_EXEC_WINOGRAD] = {"IPU_EXEC_WINOGRAD", IPU_SETTING_BOOL, "1", NULL, 0, 0, 0, NULL,
                                   "3x3 stride-1 convolutions run on oneDNN's Winograd kernels where the CPU has "
                                   "them (fewer multiplications; results within --check's tolerances, not "
                                   "bit-equal to direct; weights held transformed, 16/9 or 4 times their size); "
                                   "0: direct convolution only; agreed by the ranks: 0 on one rank is 0 on all"},
    [IPU_SET_IPU_EXEC_CONV_LAYOUT] = {"IPU_EXEC_CONV_LAYOUT", IPU_SETTING_CHOICE, "auto", NULL, 0, 0, 0,
                                      CHOICES("auto", "blocked", "onednn"),
                                      "the activations' layout convolutions ask for: blocked (oneDNN's "
                                      "channel-blocked, its jit kernels), onednn (what its chosen kernel "
                                      "prefers: channels-last on AVX-512); auto: blocked on AVX-512 CPUs "
                                      "other than Intel's, where oneDNN 2.6 guesses the cache sizes its "
                                      "channels-last kernels block for; agreed by the ranks"},
    [IPU_SET_IPU_EXEC_SHM_LINKS] = {"IPU_EXEC_SHM_LINKS", IPU_SETTING_BOOL, "1", NULL, 0, 0, 0, NULL,
                                    "a pipeline's stage links between ranks of one host go through shared "
                                    "memory (the sending rank's setting decides); 0: through the transport "
                                    "(--transport)"},
    /* oneDNN's own (it reads them itself): read here only to know the
     * instruction set a rank will use before oneDNN fixes it */
    [IPU_SET_ONEDNN_MAX_CPU_ISA] = {"ONEDNN_MAX_CPU_ISA", IPU_SETTING_CHOICE, "all", NULL, 0, 0, 0, ISAS,
                                    "oneDNN's own: the highest instruction set it dispatches to; a pipelined "
                                    "run caps every rank to the lowest among the ranks"},
    [IPU_SET_DNNL_MAX_CPU_ISA] = {"DNNL_MAX_CPU_ISA", IPU_SETTING_CHOICE, "all", NULL, 0, 0, 0, ISAS,
                                  "oneDNN's own, the older name of ONEDNN_MAX_CPU_ISA (which wins when both "
                                  "are set)"},
    [IPU_SET_GCL_LOG] = {"GCL_LOG", IPU_SETTING_CHOICE, "quiet", NULL, 0, 0, 0, CHOICES("quiet", "info", "debug"),
                         "libgcl's log on stderr: every collective (number, size, algorithm), splits, fallbacks"},
    [IPU_SET_GCL_DEBUG] = {"GCL_DEBUG", IPU_SETTING_BOOL, "0", NULL, 0, 0, 0, NULL,
                           "check every collective's arguments across the group: mismatches are reported, "
                           "not hung (read at gcl_init)"},
    [IPU_SET_GCL_NO_SHM] = {"GCL_NO_SHM", IPU_SETTING_BOOL, "0", NULL, 0, 0, 0, NULL,
                            "never use the shared-memory path"},
    [IPU_SET_GCL_SEGMENT_BYTES] = {"GCL_SEGMENT_BYTES", IPU_SETTING_SIZE, "256K", NULL, 4096, IPU_SETTING_NO_MAX, 0,
                                   NULL, "pipeline segment of the network algorithms"},
    [IPU_SET_GCL_YIELD_WHEN_IDLE] = {"GCL_YIELD_WHEN_IDLE", IPU_SETTING_BOOL, "auto", NULL, 0, 0, IPU_SETTING_AUTO,
                                     NULL,
                                     "waits yield the core on every poll (1) or every 256th (0); auto: 1 only "
                                     "when the host runs more ranks than it has cores"},
    [IPU_SET_GCL_TOPO_PPN] = {"GCL_TOPO_PPN", IPU_SETTING_INT, "0", NULL, 0, 0x7fffffff, 0, NULL,
                              "testing: pretend every k consecutive ranks share a host (0: the real hosts)"},
    [IPU_SET_GCL_SHM_SLOT_BYTES] = {"GCL_SHM_SLOT_BYTES", IPU_SETTING_SIZE, "256K", NULL, 4096, 256 << 20, 0, NULL,
                                    "staging segment per member of the shared-memory path"},
    [IPU_SET_GCL_SHM_NBUF] = {"GCL_SHM_NBUF", IPU_SETTING_INT, "3", NULL, 3, 6, IPU_SETTING_CLAMP, NULL,
                              "staging segments kept per member; a member runs up to this many minus 2 "
                              "segments ahead of its slowest peer"},
    [IPU_SET_GCL_SHM_ONESHOT_MAX] = {"GCL_SHM_ONESHOT_MAX", IPU_SETTING_SIZE, "16K", NULL, 0, IPU_SETTING_NO_MAX, 0,
                                     NULL,
                                     "largest shared-memory allreduce or reduce done in one step, every member "
                                     "reducing every staged input"},
    [IPU_SET_GCL_SHM_DIRECT_MIN] = {"GCL_SHM_DIRECT_MIN", IPU_SETTING_SIZE, NULL,
                                    "2K; 16K + 1 when the host runs more ranks than it has cores", 0,
                                    IPU_SETTING_NO_MAX, 0, NULL,
                                    "smallest allreduce on registered memory (gcl_mem_alloc) that runs direct, "
                                    "without staging (values under 17 read as 17)"},
    [IPU_SET_GCL_SHM_STREAM_BYTES] = {"GCL_SHM_STREAM_BYTES", IPU_SETTING_SIZE, NULL,
                                      "the last-level cache / (2 x ranks on the host); 32M assumed for the "
                                      "cache where sysfs does not tell",
                                      0, IPU_SETTING_NO_MAX, 0, NULL,
                                      "shared-memory outputs from this size on are written with streaming "
                                      "(non-temporal) stores"},
    [IPU_SET_GCL_SHM_STAGE_NT] = {"GCL_SHM_STAGE_NT", IPU_SETTING_BOOL, "auto", NULL, 0, 0, IPU_SETTING_AUTO, NULL,
                                  "how ops from GCL_SHM_STAGE_NT_MIN bytes write their staging: auto times "
                                  "ordinary and streaming stores and keeps the faster per collective and size "
                                  "class, 1 always streaming, 0 never"},
    [IPU_SET_GCL_SHM_STAGE_NT_MIN] = {"GCL_SHM_STAGE_NT_MIN", IPU_SETTING_SIZE, NULL,
                                      "16K; 2K for allreduce, reduce and reduce_scatter", 0, IPU_SETTING_NO_MAX,
                                      0, NULL,
                                      "smaller shared-memory ops write their staging with ordinary stores"},
    [IPU_SET_GCL_ALLREDUCE_ALGO] = ALGO("GCL_ALLREDUCE_ALGO", "allreduce", "recursive_doubling", "rabenseifner",
                                        "ring", "hierarchical", "dissemination", "shm"),
    [IPU_SET_GCL_REDUCE_ALGO] = ALGO("GCL_REDUCE_ALGO", "reduce", "knomial", "reduce_scatter_gather",
                                     "dissemination", "shm"),
    [IPU_SET_GCL_REDUCE_SCATTER_ALGO] = ALGO("GCL_REDUCE_SCATTER_ALGO", "reduce_scatter", "ring",
                                             "recursive_halving", "pairwise", "dissemination", "shm"),
    [IPU_SET_GCL_ALLGATHER_ALGO] = ALGO("GCL_ALLGATHER_ALGO", "allgather", "ring", "recursive_doubling", "bruck",
                                        "dissemination", "shm"),
    [IPU_SET_GCL_BROADCAST_ALGO] = ALGO("GCL_BROADCAST_ALGO", "broadcast", "knomial", "scatter_allgather",
                                        "dissemination", "shm"),
    [IPU_SET_GCL_ALLTOALL_ALGO] = ALGO("GCL_ALLTOALL_ALGO", "alltoall", "pairwise", "dissemination"),
    [IPU_SET_GCL_BARRIER_ALGO] = ALGO("GCL_BARRIER_ALGO", "barrier", "dissemination", "shm"),
};

const ipu_setting_def_t *ipu_setting_def(ipu_setting_id_t id)
{
    assert(id >= 0 && id < IPU_SET_COUNT);
    return &table[id];
}

const char *ipu_setting_type_name(ipu_setting_type_t type)
{
    static const char *const names[] = {"bool", "int", "size", "choice"};
    return type >= 0 && type <= IPU_SETTING_CHOICE ? names[type] : "?";
}

const char *ipu_setting_env(ipu_setting_id_t id)
{
    const char *s = getenv(ipu_setting_def(id)->name);
    return s && *s ? s : NULL;
}

/* a size as the parser reads it: 262144 -> "256K", 1000 -> "1000" */
static const char *size_text(long long v, char *buf, size_t len)
{
    static const char units[] = "KMGT";
    int u = -1;
    while (v != 0 && u < 3 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, len, "%lld", v);
    else
        snprintf(buf, len, "%lld%c", v, units[u]);
    return buf;
}

static const char *value_text(const ipu_setting_def_t *d, long long v, char *buf, size_t len)
{
    if (d->type == IPU_SETTING_SIZE)
        return size_text(v, buf, len);
    if (d->type == IPU_SETTING_CHOICE)
        snprintf(buf, len, "%s", d->choices[v]);
    else if (d->type == IPU_SETTING_BOOL && v < 0)
        snprintf(buf, len, "auto");
    else
        snprintf(buf, len, "%lld", v);
    return buf;
}

/* an int's or size's range: "3 to 7", "from 4K", "any" */
static const char *range_text(const ipu_setting_def_t *d, char *buf, size_t len)
{
    char lo[32], hi[32];
    value_text(d, d->lo, lo, sizeof(lo));
    value_text(d, d->hi, hi, sizeof(hi));
    if (d->hi != IPU_SETTING_NO_MAX)
        snprintf(buf, len, "%s to %s", lo, hi);
    else if (d->lo != 0)
        snprintf(buf, len, "from %s", lo);
    else
        snprintf(buf, len, "any");
    return buf;
}

static int parse_bool(const ipu_setting_def_t *d, const char *s, long long *v)
{
    static const char *const yes[] = {"1", "y", "yes", "on", "true"}, *const no[] = {"0", "n", "no", "off", "false"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (!strcasecmp(s, yes[i]) || !strcasecmp(s, no[i])) {
            *v = !strcasecmp(s, yes[i]);
            return 0;
        }
    }
    if ((d->flags & IPU_SETTING_AUTO) && !strcasecmp(s, "auto")) {
        *v = -1;
        return 0;
    }
    return -1;
}

/* An int or size: 0 ok, -1 not a number, 1 beyond a long long (*v: the
 * nearest long long) */
int ipu_parse_size(const char *s, unsigned long long *out)
{
    const unsigned long long top = 0x7fffffffffffffffULL;
    char *end;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s < '0' || *s > '9') /* no sign */
        return -1;
    int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    errno = 0;
    unsigned long long u = strtoull(s, &end, hex ? 16 : 10); /* "010" is ten */
    int over = errno == ERANGE;
    double frac = 0; /* digits after a decimal point */
    if (*end == '.' && !hex) {
        const char *f = end;
        frac = strtod(f, &end); /* ".5" */
        if (end == f + 1) /* "1." */
            return -1;
    }
    int shift = 0;
    const char *unit = *end ? strchr("kmgt", tolower((unsigned char)*end)) : NULL;
    if (unit) {
        shift = 10 * (int)(unit - "kmgt" + 1);
        end++;
        if (*end == 'i')
            end++;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end)
        return -1;
    double part = ldexp(frac, shift); /* the fraction's bytes: whole, or an error */
    if (part != floor(part))
        return -1;
    if (over || u > top >> shift || (u << shift) > top - (unsigned long long)part) {
        *out = top;
        return 1;
    }
    *out = (u << shift) + (unsigned long long)part;
    return 0;
}

static int parse_number(const ipu_setting_def_t *d, const char *s, long long *v)
{
    char *end;
    errno = 0;
    if (d->type == IPU_SETTING_INT) {
        *v = strtoll(s, &end, 10);
        return end == s || *end ? -1 : errno == ERANGE;
    }
    unsigned long long u;
    int rc = ipu_parse_size(s, &u);
    if (rc >= 0)
        *v = rc ? IPU_SETTING_NO_MAX : (long long)u;
    return rc;
}

static void say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t len, const char *fmt, ...)
{
    if (why == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

static ipu_setting_source_t parse_text(ipu_setting_id_t id, const char *text, long long *v, char *why, size_t len)
{
    const ipu_setting_def_t *d = ipu_setting_def(id);
    char values[256];
    say(why, len, "%s", "");
    if (d->type == IPU_SETTING_BOOL || d->type == IPU_SETTING_CHOICE) {
        int k = 0;
        if (d->type == IPU_SETTING_BOOL && parse_bool(d, text, v) == 0)
            return IPU_SETTING_FROM_ENV;
        for (; d->type == IPU_SETTING_CHOICE && d->choices[k]; k++)
            if (!strcasecmp(text, d->choices[k])) {
                *v = k;
                return IPU_SETTING_FROM_ENV;
            }
        say(why, len, "expected one of %s", ipu_setting_values_text(id, values, sizeof(values)));
        return IPU_SETTING_FROM_INVALID;
    }
    long long n = 0;
    int rc = parse_number(d, text, &n);
    if (rc < 0) {
        say(why, len, "%s", d->type == IPU_SETTING_INT ? "not an integer" : "not a size (e.g. 4096, 64K, 1M)");
        return IPU_SETTING_FROM_INVALID;
    }
    if (rc == 0 && n >= d->lo && n <= d->hi) {
        *v = n;
        return IPU_SETTING_FROM_ENV;
    }
    say(why, len, "out of range (%s)", range_text(d, values, sizeof(values)));
    if (!(d->flags & IPU_SETTING_CLAMP))
        return IPU_SETTING_FROM_INVALID;
    *v = n < d->lo ? d->lo : d->hi;
    return IPU_SETTING_FROM_CLAMPED;
}

ipu_setting_source_t ipu_setting_parse(ipu_setting_id_t id, const char *text, long long *v, char *why,
                                       size_t why_len)
{
    const ipu_setting_def_t *d = ipu_setting_def(id);
    ipu_setting_source_t src = IPU_SETTING_FROM_DEFAULT;
    if (text && *text)
        src = parse_text(id, text, v, why, why_len);
    else
        say(why, why_len, "%s", "");
    int use_default = src == IPU_SETTING_FROM_DEFAULT ||
                      (src == IPU_SETTING_FROM_INVALID && !(d->flags & IPU_SETTING_STRICT));
    if (use_default && d->dflt) {
        ipu_setting_source_t ok = parse_text(id, d->dflt, v, NULL, 0);
        assert(ok == IPU_SETTING_FROM_ENV); /* tests/unit/test_settings checks every default */
        (void)ok;
    }
    return src;
}

static char warned[IPU_SET_COUNT];

/* read, check, warn; 1 from the environment, 0 a default, negative an error */
static int get(ipu_setting_id_t id, ipu_setting_type_t type, long long *v)
{
    const ipu_setting_def_t *d = ipu_setting_def(id);
    assert(d->type == type);
    (void)type;
    const char *text = ipu_setting_env(id);
    char why[320], used[64];
    ipu_setting_source_t src = ipu_setting_parse(id, text, v, why, sizeof(why));
    if (src == IPU_SETTING_FROM_DEFAULT || src == IPU_SETTING_FROM_ENV)
        return src == IPU_SETTING_FROM_ENV;
    if (d->flags & IPU_SETTING_STRICT)
        return IPU_ERR_INVALID_ARG;
    if (!__atomic_exchange_n(&warned[id], 1, __ATOMIC_RELAXED)) {
        if (src == IPU_SETTING_FROM_CLAMPED)
            value_text(d, *v, used, sizeof(used));
        else
            ipu_setting_default_text(id, used, sizeof(used));
        fprintf(stderr, "%s: warning: %s=%s: %s; using %s%s\n", strncmp(d->name, "GCL_", 4) ? "ipu-exec" : "libgcl",
                d->name, text, why, src == IPU_SETTING_FROM_CLAMPED ? "" : "the default, ", used);
    }
    return src == IPU_SETTING_FROM_CLAMPED;
}

int ipu_setting_bool(ipu_setting_id_t id, int *out)
{
    long long v = *out;
    int rc = get(id, IPU_SETTING_BOOL, &v);
    *out = (int)v;
    return rc;
}

int ipu_setting_int(ipu_setting_id_t id, int *out)
{
    long long v = *out;
    int rc = get(id, IPU_SETTING_INT, &v);
    *out = (int)v;
    return rc;
}

int ipu_setting_choice(ipu_setting_id_t id, int *out)
{
    long long v = *out;
    int rc = get(id, IPU_SETTING_CHOICE, &v);
    *out = (int)v;
    return rc;
}

int ipu_setting_size(ipu_setting_id_t id, size_t *out)
{
    long long v = (long long)*out;
    int rc = get(id, IPU_SETTING_SIZE, &v);
    *out = (size_t)v;
    return rc;
}

ipu_setting_source_t ipu_setting_current(ipu_setting_id_t id, char *buf, size_t len)
{
    const ipu_setting_def_t *d = ipu_setting_def(id);
    const char *text = ipu_setting_env(id);
    long long v = 0;
    ipu_setting_source_t src = ipu_setting_parse(id, text, &v, NULL, 0);
    if (src == IPU_SETTING_FROM_ENV)
        snprintf(buf, len, "%s", text);
    else if (src == IPU_SETTING_FROM_INVALID && (d->flags & IPU_SETTING_STRICT))
        snprintf(buf, len, "%s", text); /* shown as given: the reader will refuse it */
    else if (src == IPU_SETTING_FROM_CLAMPED || d->dflt)
        value_text(d, v, buf, len);
    else
        snprintf(buf, len, "(computed)");
    return src;
}

const char *ipu_setting_values_text(ipu_setting_id_t id, char *buf, size_t len)
{
    const ipu_setting_def_t *d = ipu_setting_def(id);
    char range[80];
    size_t off = 0;
    switch (d->type) {
    case IPU_SETTING_BOOL:
        snprintf(buf, len, "%s1, 0", d->flags & IPU_SETTING_AUTO ? "auto, " : "");
        break;
    case IPU_SETTING_CHOICE:
        buf[0] = '\0';
        for (int k = 0; d->choices[k] && off < len; k++)
            off += (size_t)snprintf(buf + off, len - off, "%s%s", k ? ", " : "", d->choices[k]);
        break;
    default:
        range_text(d, range, sizeof(range));
        snprintf(buf, len, "%s%s", range, d->flags & IPU_SETTING_CLAMP ? " (clamped)" : "");
    }
    return buf;
}

const char *ipu_setting_default_text(ipu_setting_id_t id, char *buf, size_t len)
{
    const ipu_setting_def_t *d = ipu_setting_def(id);
    snprintf(buf, len, "%s", d->dflt ? d->dflt : d->auto_default);
    return buf;
}
