/* Reading the fused post-ops of a node (fused.h). */
#include "exec/ops/fused.h"

#include "exec/ops/ew.h"

#include <string.h>

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
        if (kind[i] < IPU_FUSED_RELU || kind[i] > IPU_FUSED_SUM)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "unknown fused post-op %lld",
                                (long long)kind[i]);
        post->kind[i] = (ipu_fused_kind_t)kind[i];
        post->alpha[i] = alpha[i];
        post->beta[i] = beta[i];
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
        next += kind[i] == IPU_FUSED_MUL || kind[i] == IPU_FUSED_ADD;
    }
    return -1;
}

/* At run: *res is the residual's data (NULL without a SUM) and ops[0..]
 * the MUL / ADD operands' data in their order (at most IPU_FUSED_MAX),
 * from the node's inputs in. */
static void fused_operands(const ipu_node_t *n, const ipu_tensor_t *in, const float **res,
                           const void **ops)
{
    size_t nk = 0;
    const int64_t *kind = ipu_attr_ints(n, IPU_FUSED_OPS, &nk);
    int next = IPU_FUSED_INPUT0, k = 0;
    *res = NULL;
    for (size_t i = 0; i < nk && next < n->n_inputs; i++) {
        if (kind[i] == IPU_FUSED_SUM)
            *res = in[next++].data;
        else if (kind[i] == IPU_FUSED_MUL || kind[i] == IPU_FUSED_ADD)
            ops[k++] = in[next++].data;
    }
}

ipu_status_t ipu_fused_run(const ipu_node_t *n, ipu_dnn_t *p, const ipu_tensor_t *in,
                           const float *bias, float *y, const ipu_kernel_ctx_t *ctx)
{
    const float *res;
    const void *ops[IPU_FUSED_MAX];
    fused_operands(n, in, &res, ops);
    ipu_status_t st = ipu_dnn_run(n, p, in[0].data, in[1].data, bias, res, ops, y, ctx);
    size_t silu = ipu_dnn_silu_after(p);
    if (st == IPU_OK && silu)
        ipu_ew_silu_f32(ctx->threads, y, (int64_t)silu);
    return st;
}
