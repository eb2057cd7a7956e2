/* Private helpers of the ONNX loader (load.c), TensorProto decoding
 * (tensorproto.c) and external data (extdata.c). Not for use outside
 * src/graph/: the rest of the runtime never sees protobuf structs. */
#ifndef IPU_GRAPH_LOAD_INTERNAL_H
#define IPU_GRAPH_LOAD_INTERNAL_H

#include "graph/ir.h"
#include "onnx/onnx.pb-c.h"

#include <stddef.h>
#include <stdint.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ONNX loader assumes a little-endian host (raw_data is little-endian)"
#endif

/* Largest file the loader parses as one protobuf (the protobuf limit). */
#define IPU_MAX_PROTO_BYTES ((size_t)1 << 31)

/* How a TensorProto is decoded. */
typedef struct ipu_tp_ctx {
    const char *file;     /* file named in messages (model or .pb file) */
    const char *dir;      /* folder that external data paths are relative to */
    ipu_graph_t *g;       /* external data is mmap'd and recorded in g->maps;
                           * NULL: external data is copied into owned memory */
    ipu_status_t bad;     /* status for malformed data: INVALID_MODEL / INPUT */
    int steal_raw;        /* 1: take raw_data's malloc'd bytes instead of copying
                           * them (the TensorProto's raw_data is then NULL) */
    int defer_raw;        /* 1: raw_data points into the model file's mapping:
                           * keep the pointer, kind IPU_CONST_DEFERRED */
} ipu_tp_ctx_t;

/* Whole-file read (mmap'd when non-empty). *data is NULL for an empty file.
 * keep_fd (may be NULL) receives the open descriptor the mapping was made
 * from (the caller closes it), -1 on error. Errors: IPU_ERR_IO (missing,
 * unreadable, not a regular file), c->bad when the file exceeds max_bytes.
 * what is "model", "tensor file", ... */
ipu_status_t ipu_file_slurp(const char *path, const char *what, size_t max_bytes,
                            ipu_status_t too_big, const uint8_t **data, size_t *len, int *keep_fd);
void ipu_file_release(const uint8_t *data, size_t len);

/* Null-safe protobuf string. */
static inline const char *ipu_pbstr(const char *s)
{
    return s ? s : "";
}

/* Decode tp into t (dtype, rank, dims, data). *kind is IPU_CONST_OWNED (data
 * from ipu_tensor_alloc(), the caller frees it) or IPU_CONST_MAPPED (inside
 * one of c->g->maps). what names the tensor in messages, e.g.
 * "initializer 'W'". t and *kind are set only on success. */
ipu_status_t ipu_tp_decode(const ipu_tp_ctx_t *c, const Onnx__TensorProto *tp,
                           const char *what, ipu_tensor_t *t, int *kind);

/* Where a large initializer's raw_data lies in the model file. */
typedef struct {
    size_t init_index; /* its place in GraphProto.initializer */
    size_t offset;     /* of its first byte in the file */
    size_t len;        /* bytes */
} ipu_rawref_t;

/* Rewrite the ModelProto bytes buf[0, len) without the raw_data fields of
 * initializers of at least min_bytes, for protobuf-c to parse without
 * copying them (rawskip.c). On success (0) *out (malloc'd, *out_len bytes)
 * is the rewritten model and *refs (malloc'd, *n_refs entries, in
 * initializer order) says where the left-out bytes are; the caller frees
 * both. -1 when nothing was left out, the bytes are not a well-formed
 * ModelProto this walk understands, or memory is short: parse buf as it
 * is. */
int ipu_rawskip_strip(const uint8_t *buf, size_t len, size_t min_bytes, uint8_t **out,
                      size_t *out_len, ipu_rawref_t **refs, size_t *n_refs);

/* Record a mapping in g->maps (unmapped with the graph); on failure
 * (IPU_ERR_NO_MEMORY) it is unmapped at once. */
ipu_status_t ipu_graph_keep_mapping(ipu_graph_t *g, void *addr, size_t len);

/* External data of tp (data_location = EXTERNAL): nbytes is the size its
 * dims and dtype declare, align the element size. Path rules: relative,
 * without "..", resolving (symlinks followed) inside c->dir. Mapped when
 * c->g is set and the offset is element-aligned, else copied. */
ipu_status_t ipu_extdata_load(const ipu_tp_ctx_t *c, const Onnx__TensorProto *tp,
                              const char *what, size_t nbytes, size_t align,
                              void **data, int *kind);

#endif
