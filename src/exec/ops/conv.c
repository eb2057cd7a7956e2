/* Conv-1, Conv-11 (Operators.md), float32, 1-D, 2-D and 3-D: pads, strides,
 * dilations, group, auto_pad, optional bias B, kernel_shape optional (taken
 * from W). Conv-11 only relaxed the attribute defaults, so one entry serves
 * opsets 1..21.
 *
 * Three paths, chosen at infer time:
 *  - pointwise (kernel 1, stride 1, no pads): Y[n,g] = W[g] @ X[n,g], one
 *    sgemm straight on the input, no copy;
 *  - depthwise (group == C, one input channel per group): a direct loop over
 *    each plane (window.c), vectorised along the output row;
 *  - otherwise im2col of one (batch, group) slice into op scratch, then one
 *    sgemm [Mg, Cg*taps] @ [Cg*taps, out]. */
#include "exec/ops/registry.h"
#include "exec/ops/window.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

enum { CONV_IM2COL, CONV_POINTWISE, CONV_DEPTHWISE };

typedef struct conv_state {
    ipu_window_t w;
    int64_t N, C, M, group, Cg, Mg;
    int64_t K;     /* Cg * taps: GEMM inner dimension */
    int64_t isz, osz; /* input and output plane sizes */
    int path;
} conv_state_t;

static ipu_status_t conv_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x = ipu_node_input(g, n, 0), *wv = ipu_node_input(g, n, 1);
    const ipu_value_t *b = ipu_node_input(g, n, 2);
    ipu_value_t *y = ipu_node_output(g, n, 0);
    if (x == NULL || wv == NULL || y == NULL)
        return IPU_NODE_ERROR(IPU_ERR_INVALID_MODEL, n, "needs inputs X, W and output Y");
    if (x->dtype != IPU_DTYPE_FLOAT || wv->dtype != IPU_DTYPE_FLOAT ||
        (b && b->dtype != IPU_DTYPE_FLOAT))
        return IPU_NODE_ERROR(IPU_ERR_UNSUPPORTED, n, "dtype %s is not supported (float only)",
                              ipu_dtype_name(x->dtype != IPU_DTYPE_FLOAT ? x->dtype : wv->dtype));
    if (x->rank < 3 || x->rank > 5)
        return IPU_NODE_ERROR(x->rank < 3 ? IPU_ERR_SHAPE : IPU_ERR_UNSUPPORTED, n,
                              "X has rank %d (3 to 5 supported: N, C, 1 to 3 spatial dims)",
                              x->rank);
    if (wv->rank != x->rank)
        return IPU_NODE_ERROR(IPU_ERR_SHAPE, n, "W has rank %d, X has rank %d", wv->rank,
                              x->rank);
    int nd = x->rank - 2;
    int64_t group = ipu_attr_int(n, "group", 1);
    int64_t C = x->dims[1], M = wv->dims[0];
    if (group < 1)
        return IPU_NODE_ERROR(IPU_ERR_INVALID_MODEL, n, "group %lld", (long long)group);
    if (wv->dims[1] * group != C)
        return IPU_NODE_ERROR(IPU_ERR_SHAPE, n, "X has %lld channels but W expects %lld "
                              "(W dimension 1 = %lld, group %lld)", (long long)C,
                              (long long)(wv->dims[1] * group), (long long)wv->dims[1],
                              (long long)group);
    if (M % group != 0)
        return IPU_NODE_ERROR(IPU_ERR_SHAPE, n, "%lld output channels not divisible by group "
                              "%lld", (long long)M, (long long)group);
    if (b && (b->rank != 1 || b->dims[0] != M))
        return IPU_NODE_ERROR(IPU_ERR_SHAPE, n, "B must have shape [%lld]", (long long)M);
    size_t kc;
    const int64_t *ks = ipu_attr_ints(n, "kernel_shape", &kc);
    if (ks) {
        if (kc != (size_t)nd)
            return IPU_NODE_ERROR(IPU_ERR_INVALID_MODEL, n, "kernel_shape has %zu values for "
                                  "%d spatial dims", kc, nd);
        for (int j = 0; j < nd; j++)
            if (ks[j] != wv->dims[2 + j])
                return IPU_NODE_ERROR(IPU_ERR_SHAPE, n, "kernel_shape[%d] = %lld but W has "
                                      "%lld", j, (long long)ks[j], (long long)wv->dims[2 + j]);
    }

    conv_state_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return IPU_NODE_ERROR(IPU_ERR_NO_MEMORY, n, "out of memory");
    ipu_status_t st = ipu_window_init(n, nd, x->dims + 2, wv->dims + 2, 0, &s->w);
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
    if (group > 1 && s->Cg == 1 && group == C)
        s->path = CONV_DEPTHWISE;
    else if (ipu_window_is_pointwise(&s->w))
        s->path = CONV_POINTWISE;
    else
        s->path = CONV_IM2COL;
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
        return (size_t)ipu_window_flat_scratch(&s->w) * sizeof(float);
    if (s->path == CONV_IM2COL)
        return (size_t)(s->K * s->osz) * sizeof(float);
    return 0;
}

static void conv_depthwise(const conv_state_t *s, const float *x, const float *w,
                           const float *bias, float *y, float *scratch)
{
    const int64_t taps = ipu_window_taps(&s->w);
    for (int64_t c = 0; c < s->C; c++)
        for (int64_t j = 0; j < s->Mg; j++) {
            int64_t m = c * s->Mg + j;
            float *yp = y + m * s->osz;
            if (scratch) {
                ipu_window_plane_flat_mac(&s->w, w + m * taps, bias ? bias[m] : 0.0f,
                                          x + c * s->isz, yp, scratch);
                continue;
            }
            ipu_row_fill(yp, s->osz, bias ? bias[m] : 0.0f);
            ipu_window_plane(&s->w, IPU_WINDOW_MAC, w + m * taps, x + c * s->isz, yp);
        }
}

static ipu_status_t conv_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                             ipu_kernel_ctx_t *ctx)
{
    const conv_state_t *s = n->state;
    const float *x = in[0].data, *w = in[1].data;
    const float *bias = n->n_inputs > 2 ? in[2].data : NULL;
    float *y = out[0].data;
    float *col = ctx->scratch;
    if (conv_scratch(NULL, n) > ctx->scratch_bytes)
        return IPU_NODE_ERROR(IPU_ERR_INTERNAL, n, "scratch too small");
    for (int64_t b = 0; b < s->N; b++) {
        const float *xb = x + b * s->C * s->isz;
        float *yb = y + b * s->M * s->osz;
        if (s->path == CONV_DEPTHWISE) {
            conv_depthwise(s, xb, w, bias, yb,
                           ipu_window_flat_scratch(&s->w) > 0 ? ctx->scratch : NULL);
            continue;
        }
        for (int64_t g = 0; g < s->group; g++) {
            const float *xg = xb + g * s->Cg * s->isz;
            if (s->path == CONV_IM2COL) {
                ipu_window_im2col(&s->w, s->Cg, xg, col);
                xg = col;
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)s->Mg,
                        (blasint)s->osz, (blasint)s->K, 1.0f, w + g * s->Mg * s->K,
                        (blasint)s->K, xg, (blasint)s->osz, 0.0f, yb + g * s->Mg * s->osz,
                        (blasint)s->osz);
        }
        if (bias)
            for (int64_t m = 0; m < s->M; m++)
                ipu_row_add(yb + m * s->osz, s->osz, bias[m]);
    }
    return IPU_OK;
}

static void conv_fini(ipu_node_t *n)
{
    free(n->state);
    n->state = NULL;
}

static const ipu_op_t conv_op = {
    .domain = "", .op_type = "Conv", .since_version = 1, .until_version = 21,
    .infer = conv_infer, .scratch = conv_scratch, .run = conv_run, .fini = conv_fini,
};

const ipu_op_t *const ipu_ops_conv[] = {&conv_op, NULL};
