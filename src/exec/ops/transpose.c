/* Transpose-1/13 (Operators.md): perm defaults to the reversed axes.
 * Dtype-generic byte moves through ipu_mv_copy: when the last axis stays
 * last ([B,T,H,D] -> [B,H,T,D]) whole rows are memcpy'd; when it moves
 * ([B,H,T,D] -> [B,H,D,T]) the copy goes in 32x32 cache blocks. */
#include "exec/ops/movement.h"
#include "exec/ops/registry.h"

/* perm of n for a tensor of the given rank, validated. */
static ipu_status_t get_perm(const ipu_node_t *n, int rank, int *perm)
{
    size_t cnt;
    const int64_t *p = ipu_attr_ints(n, "perm", &cnt);
    unsigned seen = 0;
    if (p == NULL) {
        for (int i = 0; i < rank; i++)
            perm[i] = rank - 1 - i;
        return IPU_OK;
    }
    if ((int)cnt != rank)
        return ipu_op_error(IPU_ERR_SHAPE, n, "perm has %zu entries for an input of rank %d",
                            cnt, rank);
    for (int i = 0; i < rank; i++) {
        if (p[i] < 0 || p[i] >= rank || (seen & (1u << p[i])))
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "perm is not a permutation of 0..%d",
                                rank - 1);
        seen |= 1u << p[i];
        perm[i] = (int)p[i];
    }
    return IPU_OK;
}

static ipu_status_t transpose_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x;
    int perm[IPU_MAX_RANK];
    int64_t dims[IPU_MAX_RANK];
    size_t es;
    ipu_status_t st;
    if ((st = ipu_mv_data_input(g, n, &x, &es)) != IPU_OK ||
        (st = get_perm(n, x->rank, perm)) != IPU_OK)
        return st;
    for (int i = 0; i < x->rank; i++)
        dims[i] = x->dims[perm[i]];
    return ipu_mv_set_output(g, n, 0, x->dtype, x->rank, dims);
}

static ipu_status_t transpose_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                                  ipu_kernel_ctx_t *ctx)
{
    int perm[IPU_MAX_RANK];
    int64_t istr[IPU_MAX_RANK], sstr[IPU_MAX_RANK], dstr[IPU_MAX_RANK];
    size_t es = ipu_dtype_size(in[0].dtype);
    ipu_status_t st = get_perm(n, in[0].rank, perm);
    if (st != IPU_OK)
        return st;
    ipu_mv_dense_strides(in[0].rank, in[0].dims, es, istr);
    ipu_mv_dense_strides(out[0].rank, out[0].dims, es, dstr);
    for (int i = 0; i < in[0].rank; i++)
        sstr[i] = istr[perm[i]];
    ipu_mv_copy(ctx->threads, out[0].data, dstr, in[0].data, sstr, out[0].rank, out[0].dims, es);
    return IPU_OK;
}

IPU_MV_OP(Transpose, 1, 17, 0, transpose_infer, NULL, transpose_run, NULL)

const ipu_op_t *const ipu_ops_transpose[] = {&op_Transpose, NULL};
