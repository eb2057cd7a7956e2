/* Expand-8/13 (bidirectional numpy broadcast of the input to 'shape') and
 * Tile-6/13 ('repeats' per axis), per Operators.md. Both are one strided copy
 * (ipu_mv_copy): Expand reads broadcast axes with stride 0, Tile views its
 * output as [rep0, d0, rep1, d1, ...] over a source with stride 0 on the
 * repetitions. The shape/repeats inputs must be constant at inference. */
#include "exec/ops/movement.h"
#include "exec/ops/registry.h"

static ipu_status_t expand_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x;
    int64_t shape[IPU_MAX_RANK], dims[IPU_MAX_RANK];
    int cnt, r;
    size_t es;
    ipu_status_t st;
    if ((st = ipu_mv_data_input(g, n, &x, &es)) != IPU_OK ||
        (st = ipu_mv_input_ints(g, n, 1, "shape", shape, IPU_MAX_RANK, &cnt)) != IPU_OK ||
        (st = ipu_op_broadcast(n, x->rank, x->dims, cnt, shape, &r, dims)) != IPU_OK)
        return st;
    return ipu_mv_set_output(g, n, 0, x->dtype, r, dims);
}

static ipu_status_t expand_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                               ipu_kernel_ctx_t *ctx)
{
    const ipu_tensor_t *x = &in[0], *y = &out[0];
    size_t es = ipu_dtype_size(x->dtype);
    int64_t xs[IPU_MAX_RANK], ss[IPU_MAX_RANK], ds[IPU_MAX_RANK];
    int lead = y->rank - x->rank;
    ipu_mv_dense_strides(x->rank, x->dims, es, xs);
    ipu_mv_dense_strides(y->rank, y->dims, es, ds);
    for (int d = 0; d < y->rank; d++)
        ss[d] = d < lead || x->dims[d - lead] == 1 ? 0 : xs[d - lead];
    ipu_mv_copy(ctx->threads, y->data, ds, x->data, ss, y->rank, y->dims, es);
    return IPU_OK;
}

static ipu_status_t tile_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x;
    int64_t reps[IPU_MAX_RANK], dims[IPU_MAX_RANK];
    int cnt;
    size_t es;
    ipu_status_t st;
    if ((st = ipu_mv_data_input(g, n, &x, &es)) != IPU_OK ||
        (st = ipu_mv_input_ints(g, n, 1, "repeats", reps, IPU_MAX_RANK, &cnt)) != IPU_OK)
        return st;
    if (cnt != x->rank)
        return ipu_op_error(IPU_ERR_SHAPE, n, "'repeats' has %d entries for an input of rank %d",
                            cnt, x->rank);
    for (int d = 0; d < x->rank; d++) {
        if (reps[d] < 0)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "repeats[%d] = %lld is negative",
                                d, (long long)reps[d]);
        dims[d] = x->dims[d] * reps[d];
    }
    return ipu_mv_set_output(g, n, 0, x->dtype, x->rank, dims);
}

static ipu_status_t tile_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                             ipu_kernel_ctx_t *ctx)
{
    const ipu_tensor_t *x = &in[0], *y = &out[0];
    size_t es = ipu_dtype_size(x->dtype);
    int64_t xs[IPU_MAX_RANK], ys[IPU_MAX_RANK];
    int64_t dims[IPU_MV_MAX_DIMS], ss[IPU_MV_MAX_DIMS], ds[IPU_MV_MAX_DIMS];
    if (ipu_tensor_numel(y) == 0)
        return IPU_OK;
    ipu_mv_dense_strides(x->rank, x->dims, es, xs);
    ipu_mv_dense_strides(y->rank, y->dims, es, ys);
    for (int d = 0; d < x->rank; d++) {
        dims[2 * d] = y->dims[d] / x->dims[d];     /* repetitions */
        ds[2 * d] = ys[d] * x->dims[d];
        ss[2 * d] = 0;
        dims[2 * d + 1] = x->dims[d];
        ds[2 * d + 1] = ys[d];
        ss[2 * d + 1] = xs[d];
    }
    ipu_mv_copy(ctx->threads, y->data, ds, x->data, ss, 2 * x->rank, dims, es);
    return IPU_OK;
}

IPU_MV_OP(Expand, 8, 17, 0, expand_infer, NULL, expand_run, NULL)
IPU_MV_OP(Tile, 6, 17, 0, tile_infer, NULL, tile_run, NULL)

const ipu_op_t *const ipu_ops_expand[] = {&op_Expand, &op_Tile, NULL};
