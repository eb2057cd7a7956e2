/* Conv-1, Conv-11 (Operators.md), float32, 1-D, 2-D and 3-D: pads, strides,
 * dilations, group, auto_pad, optional bias B, kernel_shape optional (taken
 * from W). Conv-11 only relaxed the attribute defaults, so one entry serves
 * opsets 1..21.
 *
 * Three paths, chosen at infer time:
 *  - pointwise (kernel 1, stride 1, no pads): Y[n,g] = W[g] @ X[n,g], one
 *    sgemm straight on the input, no copy (sgemv for 1-element planes);
 *  - depthwise (group == C, one input channel per group): a direct kernel
 *    per plane (window.c): 1-D/2-D windows on a padded, stride-phase-split
 *    copy with all taps accumulated in registers; 3-D row by row;
 *  - otherwise im2col of one (batch, group) slice, a band of output rows at
 *    a time so that the column buffer stays in L2, and one sgemm
 *    [Mg, Cg*taps] @ [Cg*taps, band] per band.
 *
 * Fused activation: graph/fuse.c may fold the Relu, Clip, Sigmoid or
 * x * Sigmoid(x) that consumed the output into the node (the private
 * attributes IPU_CONV_ACT_ATTR, and the Clip bounds IPU_CONV_ACT_MIN/MAX);
 * the bias and the activation are then applied in one output pass. */
#include "exec/ops/registry.h"
#include "exec/ops/window.h"
#include "graph/fuse.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { CONV_IM2COL, CONV_POINTWISE, CONV_DEPTHWISE };

typedef struct conv_state {
    ipu_window_t w;
    int64_t N, C, M, group, Cg, Mg;
    int64_t K;     /* Cg * taps: GEMM inner dimension */
    int64_t isz, osz; /* input and output plane sizes */
    int64_t band;     /* im2col: output rows per band (of out[2] columns each) */
    int64_t rows;     /* output rows in total: out[0] * out[1] */
    int path;
    int dw_fast;      /* depthwise: ipu_window_plane_dw() applies */
    ipu_window_dw_t dw;
    ipu_act_t act;
} conv_state_t;

/* im2col column buffer target: floats (384 KiB, within a 1 MiB L2 with the
 * packed weights), but at least this many columns per sgemm */
enum { CONV_COL_FLOATS = 96 * 1024, CONV_MIN_COLS = 256 };

static ipu_status_t conv_act(const ipu_node_t *n, ipu_act_t *a)
{
    const char *k = ipu_attr_string(n, IPU_CONV_ACT_ATTR, "");
    a->lo = ipu_attr_float(n, IPU_CONV_ACT_MIN, -INFINITY);
    a->hi = ipu_attr_float(n, IPU_CONV_ACT_MAX, INFINITY);
    if (k[0] == '\0')
        a->kind = IPU_ACT_NONE;
    else if (strcmp(k, "Relu") == 0)
        a->kind = IPU_ACT_RELU;
    else if (strcmp(k, "Clip") == 0)
        a->kind = IPU_ACT_CLIP;
    else if (strcmp(k, "Sigmoid") == 0)
        a->kind = IPU_ACT_SIGMOID;
    else if (strcmp(k, "SiLU") == 0)
        a->kind = IPU_ACT_SILU;
    else
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "unknown fused activation '%s'", k);
    return IPU_OK;
}

static ipu_status_t conv_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x = ipu_node_input(g, n, 0), *wv = ipu_node_input(g, n, 1);
    const ipu_value_t *b = ipu_node_input(g, n, 2);
    ipu_value_t *y = ipu_node_output(g, n, 0);
    if (x == NULL || wv == NULL || y == NULL)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "needs inputs X, W and output Y");
    if (x->dtype != IPU_DTYPE_FLOAT || wv->dtype != IPU_DTYPE_FLOAT ||
        (b && b->dtype != IPU_DTYPE_FLOAT))
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "dtype %s is not supported (float only)",
                            ipu_dtype_name(x->dtype != IPU_DTYPE_FLOAT ? x->dtype : wv->dtype));
    if (x->rank < 3 || x->rank > 5)
        return ipu_op_error(x->rank < 3 ? IPU_ERR_SHAPE : IPU_ERR_UNSUPPORTED, n,
                            "X has rank %d (3 to 5 supported: N, C, 1 to 3 spatial dims)",
                            x->rank);
    if (wv->rank != x->rank)
        return ipu_op_error(IPU_ERR_SHAPE, n, "W has rank %d, X has rank %d", wv->rank,
                            x->rank);
    int nd = x->rank - 2;
    int64_t group = ipu_attr_int(n, "group", 1);
    int64_t C = x->dims[1], M = wv->dims[0];
    if (group < 1)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "group %lld", (long long)group);
    if (wv->dims[1] * group != C)
        return ipu_op_error(IPU_ERR_SHAPE, n, "X has %lld channels but W expects %lld "
                            "(W dimension 1 = %lld, group %lld)", (long long)C,
                            (long long)(wv->dims[1] * group), (long long)wv->dims[1],
                            (long long)group);
    if (M % group != 0)
        return ipu_op_error(IPU_ERR_SHAPE, n, "%lld output channels not divisible by group "
                            "%lld", (long long)M, (long long)group);
    if (b && (b->rank != 1 || b->dims[0] != M))
        return ipu_op_error(IPU_ERR_SHAPE, n, "B must have shape [%lld]", (long long)M);
    size_t kc;
    const int64_t *ks = ipu_attr_ints(n, "kernel_shape", &kc);
    if (ks) {
        if (kc != (size_t)nd)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "kernel_shape has %zu values for "
                                "%d spatial dims", kc, nd);
        for (int j = 0; j < nd; j++)
            if (ks[j] != wv->dims[2 + j])
                return ipu_op_error(IPU_ERR_SHAPE, n, "kernel_shape[%d] = %lld but W has "
                                    "%lld", j, (long long)ks[j], (long long)wv->dims[2 + j]);
    }

    conv_state_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory");
    ipu_status_t st = ipu_window_init(n, nd, x->dims + 2, wv->dims + 2, 0, &s->w);
    if (st == IPU_OK)
        st = conv_act(n, &s->act);
    if (st != IPU_OK) {
        free(s);
        return st;
    }
    s->N = x->dims[0];
    s->C = C;
    s->M = M;
    s->group = group;
    s->Cg = C / group;
    s->Mg = M / group;
    s->K = s->Cg * ipu_window_taps(&s->w);
    s->isz = ipu_window_in_size(&s->w);
    s->osz = ipu_window_out_size(&s->w);
    if (group > 1 && s->Cg == 1 && group == C) {
        s->path = CONV_DEPTHWISE;
        s->dw_fast = ipu_window_dw_init(&s->w, &s->dw);
    }
    else if (ipu_window_is_pointwise(&s->w))
        s->path = CONV_POINTWISE;
    else
        s->path = CONV_IM2COL;
    const int64_t oW = s->w.out[2];
    s->rows = s->w.out[0] * s->w.out[1];
    int64_t cols = CONV_COL_FLOATS / (s->K > 0 ? s->K : 1);
    s->band = (cols > CONV_MIN_COLS ? cols : CONV_MIN_COLS) / oW;
    s->band = s->band < 1 ? 1 : s->band > s->rows ? s->rows : s->band;
    n->state = s;

    int64_t dims[IPU_MAX_RANK];
    dims[0] = s->N;
    dims[1] = M;
    for (int j = 0; j < nd; j++)
        dims[2 + j] = s->w.out[IPU_WINDOW_MAX_DIMS - nd + j];
    ipu_value_set_shape(y, IPU_DTYPE_FLOAT, x->rank, dims);
    return IPU_OK;
}

static size_t conv_scratch(const ipu_graph_t *g, const ipu_node_t *n)
{
    const conv_state_t *s = n->state;
    if (s == NULL)
        return 0;
    if (s->path == CONV_DEPTHWISE)
        return s->dw_fast ? (size_t)s->dw.scratch * sizeof(float) : 0;
    if (s->path == CONV_IM2COL)
        return (size_t)(s->K * s->band * s->w.out[2]) * sizeof(float);
    return 0;
}

static void conv_depthwise(const conv_state_t *s, const float *x, const float *w,
                           const float *bias, float *y, float *scratch)
{
    const int64_t taps = ipu_window_taps(&s->w);
    if (s->dw_fast)
        ipu_window_dw_zero(&s->dw, scratch);
    for (int64_t c = 0; c < s->C; c++)
        for (int64_t j = 0; j < s->Mg; j++) {
            int64_t m = c * s->Mg + j;
            float *yp = y + m * s->osz;
            float b = bias ? bias[m] : 0.0f;
            if (s->dw_fast) {
                ipu_window_plane_dw(&s->w, &s->dw, w + m * taps, b, &s->act, x + c * s->isz, yp,
                                    scratch);
                continue;
            }
            ipu_row_fill(yp, s->osz, b);
            ipu_window_plane(&s->w, IPU_WINDOW_MAC, w + m * taps, x + c * s->isz, yp);
            if (s->act.kind != IPU_ACT_NONE)
                ipu_act_row(&s->act, yp, yp, s->osz, 0.0f);
        }
}

/* Output pass of the GEMM paths: columns [c0, c0 + cnt) of the Mg planes
 * of group g get their bias and activation. */
static void conv_epilogue(const conv_state_t *s, const float *bias, float *yg, int64_t c0,
                          int64_t cnt)
{
    if (bias == NULL && s->act.kind == IPU_ACT_NONE)
        return;
    for (int64_t m = 0; m < s->Mg; m++)
        ipu_act_row(&s->act, yg + m * s->osz + c0, yg + m * s->osz + c0, cnt,
                    bias ? bias[m] : 0.0f);
}

static ipu_status_t conv_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                             ipu_kernel_ctx_t *ctx)
{
    const conv_state_t *s = n->state;
    const float *x = in[0].data, *w = in[1].data;
    const float *bias = n->n_inputs > 2 ? in[2].data : NULL;
    float *y = out[0].data;
    float *col = ctx->scratch;
    const int64_t oW = s->w.out[2];
    if (conv_scratch(NULL, n) > ctx->scratch_bytes)
        return ipu_op_error(IPU_ERR_INTERNAL, n, "scratch too small");
    for (int64_t b = 0; b < s->N; b++) {
        const float *xb = x + b * s->C * s->isz;
        float *yb = y + b * s->M * s->osz;
        if (s->path == CONV_DEPTHWISE) {
            conv_depthwise(s, xb, w, bias, yb, ctx->scratch);
            continue;
        }
        for (int64_t g = 0; g < s->group; g++) {
            const float *xg = xb + g * s->Cg * s->isz;
            const float *wg = w + g * s->Mg * s->K;
            const float *bg = bias ? bias + g * s->Mg : NULL;
            float *yg = yb + g * s->Mg * s->osz;
            if (s->path == CONV_POINTWISE && s->osz == 1) { /* 1x1 maps (squeeze-excite) */
                cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)s->Mg, (blasint)s->K, 1.0f, wg,
                            (blasint)s->K, xg, 1, 0.0f, yg, 1);
                conv_epilogue(s, bg, yg, 0, 1);
                continue;
            }
            if (s->path == CONV_POINTWISE) {
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)s->Mg,
                            (blasint)s->osz, (blasint)s->K, 1.0f, wg, (blasint)s->K, xg,
                            (blasint)s->osz, 0.0f, yg, (blasint)s->osz);
                conv_epilogue(s, bg, yg, 0, s->osz);
                continue;
            }
            for (int64_t r0 = 0; r0 < s->rows; r0 += s->band) {
                int64_t r1 = r0 + s->band < s->rows ? r0 + s->band : s->rows;
                int64_t cols = (r1 - r0) * oW;
                ipu_window_im2col(&s->w, s->Cg, xg, r0, r1, col);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)s->Mg,
                            (blasint)cols, (blasint)s->K, 1.0f, wg, (blasint)s->K, col,
                            (blasint)cols, 0.0f, yg + r0 * oW, (blasint)s->osz);
                conv_epilogue(s, bg, yg, r0 * oW, cols);
            }
        }
    }
    return IPU_OK;
}

static const ipu_op_t conv_op = {
    .domain = "", .op_type = "Conv", .since_version = 1, .until_version = 21,
    .infer = conv_infer, .scratch = conv_scratch, .run = conv_run, .fini = ipu_op_free_state,
};

const ipu_op_t *const ipu_ops_conv[] = {&conv_op, NULL};
