/* Sliding-window geometry shared by Conv and the pools (private to
 * exec/ops/): the ONNX attributes kernel_shape, strides, dilations, pads,
 * auto_pad and ceil_mode turned into output sizes and padding. ConvTranspose
 * reads its attributes with the same readers (ipu_window_ints, _auto_pad).
 *
 * 1-, 2- and 3-D windows are handled as 3-D: the node's nd spatial dims are
 * right-aligned into dims 0..2 and the unused leading ones have size 1,
 * kernel 1, stride 1, dilation 1 and no padding. */
#ifndef IPU_EXEC_OPS_WINDOW_H
#define IPU_EXEC_OPS_WINDOW_H

#include "graph/op.h"

#define IPU_WINDOW_MAX_DIMS 3

typedef struct ipu_window {
    int nd;            /* spatial dims of the node (1..3) */
    int64_t in[3];     /* input sizes */
    int64_t k[3];      /* kernel */
    int64_t s[3];      /* strides */
    int64_t d[3];      /* dilations */
    int64_t pb[3];     /* padding at the beginning */
    int64_t pe[3];     /* padding at the end */
    int64_t out[3];    /* output sizes */
} ipu_window_t;

/* dst[0..want) = node n's ints attribute name, each >= min, or dflt
 * everywhere when the node has none. Errors name the node
 * (IPU_ERR_INVALID_MODEL): another count of values, a value below min;
 * IPU_ERR_UNSUPPORTED: a value above 2^31 - 1. */
ipu_status_t ipu_window_ints(const ipu_node_t *n, const char *name, size_t want, int64_t min,
                             int64_t dflt, int64_t *dst);

typedef enum {
    IPU_AUTO_PAD_NOTSET, IPU_AUTO_PAD_SAME_UPPER, IPU_AUTO_PAD_SAME_LOWER, IPU_AUTO_PAD_VALID,
} ipu_auto_pad_t;
/* Node n's auto_pad attribute (NOTSET when absent or empty); an unknown
 * value: IPU_ERR_INVALID_MODEL naming the node. */
ipu_status_t ipu_window_auto_pad(const ipu_node_t *n, ipu_auto_pad_t *mode);

/* Fill w from node n's strides, dilations, pads and auto_pad attributes for
 * nd spatial dims of sizes in[nd] and the kernel k[nd]. ceil_mode rounds the
 * output size up as ONNX pools do (a window that would start in the end
 * padding is dropped, as PyTorch and onnxruntime do). Errors name the node:
 * IPU_ERR_INVALID_MODEL for malformed attributes, IPU_ERR_SHAPE when the
 * window does not fit the input. */
ipu_status_t ipu_window_init(const ipu_node_t *n, int nd, const int64_t *in, const int64_t *k,
                             int ceil_mode, ipu_window_t *w);

/* The checks Conv and ConvTranspose share on their operands: X (0), W (1)
 * and Y present, X, W and the optional B (2) float32, X of rank 3 to 5 (N,
 * C, 1 to 3 spatial dims) and W of X's rank. Sets *x, *w, *b (NULL when
 * absent) and *y. Errors name the node: IPU_ERR_INVALID_MODEL (a missing
 * operand), IPU_ERR_UNSUPPORTED (another dtype, named; rank above 5),
 * IPU_ERR_SHAPE (rank below 3, W's rank). */
ipu_status_t ipu_window_conv_operands(ipu_graph_t *g, const ipu_node_t *n, const ipu_value_t **x,
                                      const ipu_value_t **w, const ipu_value_t **b,
                                      ipu_value_t **y);

static inline int64_t ipu_window_in_size(const ipu_window_t *w)
{
    return w->in[0] * w->in[1] * w->in[2];
}
static inline int64_t ipu_window_out_size(const ipu_window_t *w)
{
    return w->out[0] * w->out[1] * w->out[2];
}
static inline int64_t ipu_window_taps(const ipu_window_t *w)
{
    return w->k[0] * w->k[1] * w->k[2];
}

#endif
