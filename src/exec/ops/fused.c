/* Reading the fused post-ops of a node (fused.h). */
#include "exec/ops/fused.h"

#include "exec/ops/ew.h"

#include <string.h>

/* The extra inputs a post-op of kind k reads (graph/fuse.h). */
static int operands_of(int64_t k)
{
    return k == IPU_FUSED_DW ? 2 : k == IPU_FUSED_MUL || k == IPU_FUSED_ADD || k == IPU_FUSED_SUM;
}

/* The depthwise post-op's weights (input at) and bias (at + 1): float
 * [C, 1, 3, 3] and [C] or absent, C y's channels; *bias set. */
static ipu_status_t dw_operands(const ipu_graph_t *g, const ipu_node_t *n, int at, int64_t C,
                                int *bias)
{
    const ipu_value_t *w = ipu_node_input(g, n, at), *b = ipu_node_input(g, n, at + 1);
    if (at + 1 >= n->n_inputs) /* the bias slot is there, -1 when it has none */
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "the fused depthwise Conv has no bias "
                            "slot (input %d)", at + 1);
    if (w == NULL || w->dtype != IPU_DTYPE_FLOAT || w->rank != 4 || w->dims[0] != C ||
        w->dims[1] != 1 || w->dims[2] != 3 || w->dims[3] != 3)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "the fused depthwise Conv's weights "
                            "(input %d) are not float [%lld, 1, 3, 3]", at, (long long)C);
    if (b && (b->dtype != IPU_DTYPE_FLOAT || ipu_shape_numel(b->rank, b->dims) != C))
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "the fused depthwise Conv's bias "
                            "(input %d) is not %lld floats", at + 1, (long long)C);
    *bias = b != NULL;
    return IPU_OK;
}

ipu_status_t ipu_fused_post(const ipu_graph_t *g, const ipu_node_t *n, const ipu_value_t *y,
                            int axis, int dst_rank, int dst_axis, ipu_dnn_post_t *post)
{
    size_t nk = 0, na = 0, nb = 0;
    const int64_t *kind = ipu_attr_ints(n, IPU_FUSED_OPS, &nk);
    const float *alpha = ipu_attr_floats(n, IPU_FUSED_ALPHA, &na);
    const float *beta = ipu_attr_floats(n, IPU_FUSED_BETA, &nb);
    memset(post, 0, sizeof(*post));
    post->rank = dst_rank;
    post->axis = dst_axis;
    post->channels = axis >= 0 && axis < y->rank ? y->dims[axis] : 1;
    if (nk == 0)
        return IPU_OK;
    if (axis < 0 || axis >= y->rank)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "fused post-ops on an output of rank %d",
                            y->rank);
    if (nk > IPU_FUSED_MAX || na != nk || nb != nk)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "fused post-ops: %zu kinds (at most %d), "
                            "%zu alpha and %zu beta values", nk, IPU_FUSED_MAX, na, nb);
    int next = IPU_FUSED_INPUT0, sums = 0;
    for (size_t i = 0; i < nk; i++) {
        if (kind[i] < IPU_FUSED_RELU || kind[i] > IPU_FUSED_DW)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "unknown fused post-op %lld",
                                (long long)kind[i]);
        post->kind[i] = (ipu_fused_kind_t)kind[i];
        post->alpha[i] = alpha[i];
        post->beta[i] = beta[i];
        if (post->dw_stride && kind[i] >= IPU_FUSED_MUL)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "fused post-op %zu after a depthwise "
                                "Conv (activations only)", i);
        if (kind[i] == IPU_FUSED_DW) {
            ipu_status_t st;
            for (size_t j = 0; j < i; j++)
                if (!ipu_fused_before_dw((ipu_fused_kind_t)kind[j]))
                    return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "fused post-op %zu before a "
                                        "depthwise Conv (piecewise-linear activations only)", j);
            if ((alpha[i] != 1.0f && alpha[i] != 2.0f) || axis != 1 || y->rank != 4)
                return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "a fused depthwise Conv of stride "
                                    "%g on an output of rank %d (one of stride 1 or 2 on a "
                                    "2-D Conv)", (double)alpha[i], y->rank);
            if ((st = dw_operands(g, n, next, post->channels, &post->dw_bias)) != IPU_OK)
                return st;
            post->dw_stride = (int)alpha[i];
            next += 2;
            continue;
        }
        if (kind[i] < IPU_FUSED_MUL)
            continue;
        const ipu_value_t *v = ipu_node_input(g, n, next++);
        int sum = kind[i] == IPU_FUSED_SUM;
        if (v == NULL || v->dtype != IPU_DTYPE_FLOAT)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "fused post-op %zu has no float "
                                "operand (input %d)", i, next - 1);
        if (sum && (sums++ > 0 || v->rank != y->rank ||
                    memcmp(v->dims, y->dims, (size_t)y->rank * sizeof(y->dims[0])) != 0))
            return ipu_op_error(IPU_ERR_SHAPE, n, "the fused residual (input %d) is not one "
                                "tensor of Y's shape", next - 1);
        if (!sum && ipu_shape_numel(v->rank, v->dims) != post->channels)
            return ipu_op_error(IPU_ERR_SHAPE, n, "the fused operand (input %d) has %lld "
                                "elements, not Y's %lld channels", next - 1,
                                (long long)ipu_shape_numel(v->rank, v->dims),
                                (long long)post->channels);
    }
    post->n = (int)nk;
    return IPU_OK;
}

int ipu_fused_residual_input(const ipu_node_t *n)
{
    size_t nk = 0;
    const int64_t *kind = ipu_attr_ints(n, IPU_FUSED_OPS, &nk);
    for (size_t i = 0, next = IPU_FUSED_INPUT0; i < nk; i++) {
        if (kind[i] == IPU_FUSED_SUM)
            return (int)next < n->n_inputs ? (int)next : -1;
        next += (size_t)operands_of(kind[i]);
    }
    return -1;
}

void ipu_fused_operands(const ipu_node_t *n, const ipu_tensor_t *in, const float **res,
                        const void **ops)
{
    size_t nk = 0;
    const int64_t *kind = ipu_attr_ints(n, IPU_FUSED_OPS, &nk);
    int next = IPU_FUSED_INPUT0, k = 0;
    if (res)
        *res = NULL;
    for (size_t i = 0; i < nk && next + operands_of(kind[i]) <= n->n_inputs; i++) {
        if (kind[i] == IPU_FUSED_SUM && res)
            *res = in[next].data;
        else if (kind[i] != IPU_FUSED_SUM)
            for (int j = 0; j < operands_of(kind[i]); j++)
                if (n->inputs[next + j] >= 0) /* not an absent bias */
                    ops[k++] = in[next + j].data;
        next += operands_of(kind[i]);
    }
}

ipu_status_t ipu_fused_load(const ipu_graph_t *g, const ipu_node_t *n, ipu_dnn_t *p)
{
    ipu_tensor_t in[IPU_FUSED_INPUT0 + IPU_FUSED_MAX + 1];
    const void *ops[IPU_FUSED_MAX + 1];
    if (ipu_fused_dw_stride(n) == 0 || n->n_inputs > (int)(sizeof(in) / sizeof(in[0])))
        return IPU_OK;
    for (int k = 0; k < n->n_inputs; k++)
        in[k] = ipu_value_tensor(g, n->inputs[k]);
    ipu_fused_operands(n, in, NULL, ops);
    return ipu_dnn_load_post_weights(n, p, ops);
}

ipu_status_t ipu_fused_run(const ipu_node_t *n, ipu_dnn_t *p, const ipu_tensor_t *in,
                           const float *bias, float *y, const ipu_kernel_ctx_t *ctx)
{
    const float *res;
    const void *ops[IPU_FUSED_MAX + 1];
    ipu_fused_operands(n, in, &res, ops);
    ipu_status_t st = ipu_dnn_run(n, p, in[0].data, in[1].data, bias, res, ops, y, ctx);
    size_t silu = ipu_dnn_silu_after(p);
    if (st == IPU_OK && silu)
        ipu_ew_silu_f32(ctx->threads, y, (int64_t)silu);
    return st;
}
