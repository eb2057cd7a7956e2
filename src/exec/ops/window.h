/* Sliding-window geometry shared by Conv and the pools (private to
 * exec/ops/): the ONNX attributes kernel_shape, strides, dilations, pads,
 * auto_pad and ceil_mode turned into output sizes, and the float loops that
 * walk a window over one channel plane (im2col, depthwise MAC, max, sum).
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

/* Fill w from node n's strides, dilations, pads and auto_pad attributes for
 * nd spatial dims of sizes in[nd] and the kernel k[nd]. ceil_mode rounds the
 * output size up as ONNX pools do (a window that would start in the end
 * padding is dropped, as PyTorch and onnxruntime do). Errors name the node:
 * IPU_ERR_INVALID_MODEL for malformed attributes, IPU_ERR_SHAPE when the
 * window does not fit the input. */
ipu_status_t ipu_window_init(const ipu_node_t *n, int nd, const int64_t *in, const int64_t *k,
                             int ceil_mode, ipu_window_t *w);

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
/* 1 if every output element reads exactly the input element at its own
 * position (kernel 1, stride 1, no padding): Conv needs no im2col. */
int ipu_window_is_pointwise(const ipu_window_t *w);

/* The outputs o of dim i whose tap t lands inside the input:
 * 0 <= o*s + t*d - pb < in  <=>  *lo <= o < *hi. */
void ipu_window_range(const ipu_window_t *w, int i, int64_t t, int64_t *lo, int64_t *hi);

/* im2col of `channels` planes of x (each ipu_window_in_size() floats) for
 * the output rows [r0, r1) (row r: out[0] index r / out[1], out[1] index
 * r % out[1]; out[2] columns each) into col, a [channels * taps,
 * (r1 - r0) * out[2]] row-major matrix; padding reads 0. */
void ipu_window_im2col(const ipu_window_t *w, int64_t channels, const float *x, int64_t r0,
                       int64_t r1, float *col);

typedef enum {
    IPU_WINDOW_MAC,   /* out += weight[tap] * in  (depthwise convolution) */
    IPU_WINDOW_MAX,   /* out = max(out, in)       (max pooling) */
    IPU_WINDOW_SUM,   /* out += in                (average pooling) */
} ipu_window_mode_t;

/* Accumulate one input plane into one output plane (out_size floats, already
 * initialised: bias, -inf or 0) over every in-bounds tap of each window;
 * padded taps are skipped. weights (taps floats) is used by MAC only. */
void ipu_window_plane(const ipu_window_t *w, ipu_window_mode_t mode, const float *weights,
                      const float *in, float *out);

/* Activation applied by a kernel in its output pass (a Conv fused with the
 * Relu, Clip, Sigmoid or x * Sigmoid(x) that followed it, graph/fuse.c). */
typedef enum {
    IPU_ACT_NONE, IPU_ACT_RELU, IPU_ACT_CLIP, IPU_ACT_SIGMOID, IPU_ACT_SILU,
} ipu_act_kind_t;
typedef struct ipu_act {
    ipu_act_kind_t kind;
    float lo, hi;      /* IPU_ACT_CLIP bounds */
} ipu_act_t;

/* dst[i] = act(src[i] + bias) for i < n (dst == src allowed); the same
 * formulas as the Relu, Clip, Sigmoid and Mul kernels (unary.c, ew.h). */
void ipu_act_row(const ipu_act_t *a, float *dst, const float *src, int64_t n, float bias);

/* Depthwise fast path for 1-D/2-D windows of at most IPU_WINDOW_DW_TAPS
 * taps, any strides, dilations and pads. The plane is copied into scratch
 * zero-padded and split into stride phases (padded input (p, q) goes to
 * phase (p % s[1], q % s[2]), row p / s[1], column q / s[2]), so that every
 * tap reads contiguous floats; all taps are accumulated in registers over
 * flat blocks of the output (rows of the phase pitch wq), and the rows are
 * written out through the activation. */
#define IPU_WINDOW_DW_TAPS 64
typedef struct ipu_window_dw {
    int64_t hq, wq, planes; /* phase planes: planes x hq rows x wq floats */
    int64_t n;              /* flat outputs computed: (oH - 1) * wq + oW, rounded up to 8 */
    int64_t scratch;        /* floats of scratch */
    int64_t taps;
    int64_t off[IPU_WINDOW_DW_TAPS];       /* first float each tap reads */
    int64_t first[IPU_WINDOW_MAX_DIMS + 1]; /* per column phase r: input column of */
    int64_t j0[IPU_WINDOW_MAX_DIMS + 1];    /* phase column j0, and the count of */
    int64_t cnt[IPU_WINDOW_MAX_DIMS + 1];   /* valid columns (stride <= 4) */
} ipu_window_dw_t;

/* Set up dw for w; 0 when the fast path does not apply (3-D, too many taps,
 * column stride over 4). */
int ipu_window_dw_init(const ipu_window_t *w, ipu_window_dw_t *dw);
/* Zero the padding of dw->scratch floats of scratch: once per run, the
 * planes then overwrite only the valid positions. */
void ipu_window_dw_zero(const ipu_window_dw_t *dw, float *scratch);
/* out = act(bias + the MAC of ipu_window_plane()) for one plane. */
void ipu_window_plane_dw(const ipu_window_t *w, const ipu_window_dw_t *dw, const float *weights,
                         float bias, const ipu_act_t *act, const float *in, float *out,
                         float *scratch);

/* dst[0..n) = v, vectorised (bias initialisation). */
void ipu_row_fill(float *dst, int64_t n, float v);

/* Taps of the window of output o in dim i that fall in [lo_bound, hi_bound)
 * of input positions (in-bounds only: 0, in; count_include_pad: -pb, in+pe). */
int64_t ipu_window_count(const ipu_window_t *w, int i, int64_t o, int64_t lo_bound,
                         int64_t hi_bound);

#endif
