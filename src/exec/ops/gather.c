/* Gather-1/11/13 and GatherElements-11/13 (Operators.md). Indices are int64
 * or int32, negative ones count from the end, and an index out of range at
 * run time is IPU_ERR_INPUT naming the node and the index. Gather copies
 * whole inner blocks: an embedding lookup ([V,C] by [B,T] ids, axis 0) is one
 * memcpy per id. Dtype-generic for the data. */
#include "exec/ops/movement.h"
#include "exec/ops/registry.h"

#include <string.h>

/* The data (*x, of any fixed-size dtype) and indices (*idx, int64 or int32)
 * inputs of both ops. */
static ipu_status_t get_inputs(const ipu_graph_t *g, const ipu_node_t *n, const ipu_value_t **x,
                               const ipu_value_t **idx)
{
    size_t es;
    ipu_status_t st;
    *x = ipu_node_input(g, n, 0);
    *idx = ipu_node_input(g, n, 1);
    if (*x == NULL || *idx == NULL)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "needs data and indices inputs");
    if ((st = ipu_mv_esize(n, (*x)->dtype, &es)) != IPU_OK)
        return st;
    if ((*idx)->dtype != IPU_DTYPE_INT64 && (*idx)->dtype != IPU_DTYPE_INT32)
        return ipu_op_error(IPU_ERR_SHAPE, n, "indices '%s' must be int64 or int32, not %s",
                            (*idx)->name, ipu_dtype_name((*idx)->dtype));
    return IPU_OK;
}

/* Index i of the indices tensor, normalised into [0, dim) or an error. */
static ipu_status_t get_index(const ipu_node_t *n, const ipu_tensor_t *idx, int64_t i, int64_t dim,
                              int64_t *out)
{
    int64_t k = idx->dtype == IPU_DTYPE_INT32 ? ((const int32_t *)idx->data)[i]
                                              : ((const int64_t *)idx->data)[i];
    if (k < -dim || k >= dim)
        return ipu_op_error(IPU_ERR_INPUT, n, "index %lld (element %lld of the indices) is out "
                            "of range for a dimension of size %lld", (long long)k, (long long)i,
                            (long long)dim);
    *out = k < 0 ? k + dim : k;
    return IPU_OK;
}

/* --- Gather ------------------------------------------------------------------- */

static ipu_status_t gather_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x, *idx;
    int64_t dims[IPU_MAX_RANK];
    int axis, r = 0;
    ipu_status_t st = get_inputs(g, n, &x, &idx);
    if (st != IPU_OK)
        return st;
    if (x->rank == 0)
        return ipu_op_error(IPU_ERR_SHAPE, n, "cannot gather from a scalar");
    if ((st = ipu_op_axis(n, ipu_attr_int(n, "axis", 0), x->rank, &axis)) != IPU_OK)
        return st;
    if (x->rank - 1 + idx->rank > IPU_MAX_RANK)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "output rank %d exceeds the supported %d",
                            x->rank - 1 + idx->rank, IPU_MAX_RANK);
    for (int d = 0; d < axis; d++)
        dims[r++] = x->dims[d];
    for (int d = 0; d < idx->rank; d++)
        dims[r++] = idx->dims[d];
    for (int d = axis + 1; d < x->rank; d++)
        dims[r++] = x->dims[d];
    return ipu_mv_set_output(g, n, 0, x->dtype, r, dims);
}

static ipu_status_t gather_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                               ipu_kernel_ctx_t *ctx)
{
    const ipu_tensor_t *x = &in[0], *idx = &in[1];
    int axis = (int)ipu_attr_int(n, "axis", 0);
    if (axis < 0)
        axis += x->rank;
    size_t es = ipu_dtype_size(x->dtype);
    int64_t outer = ipu_shape_numel(axis, x->dims), dim = x->dims[axis];
    size_t inner = (size_t)ipu_shape_numel(x->rank - axis - 1, x->dims + axis + 1) * es;
    int64_t ni = ipu_tensor_numel(idx), k;
    char *dst = out[0].data;
    const char *src = x->data;
    ipu_status_t st;
    for (int64_t j = 0; j < ni; j++) /* validate all first: no partial output */
        if ((st = get_index(n, idx, j, dim, &k)) != IPU_OK)
            return st;
    for (int64_t o = 0; o < outer; o++) {
        const char *base = src + (size_t)(o * dim) * inner;
        for (int64_t j = 0; j < ni; j++, dst += inner) {
            get_index(n, idx, j, dim, &k);
            memcpy(dst, base + (size_t)k * inner, inner);
        }
    }
    return IPU_OK;
}

/* --- GatherElements ---------------------------------------------------------- */

static ipu_status_t gather_elements_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x, *idx;
    int axis;
    ipu_status_t st = get_inputs(g, n, &x, &idx);
    if (st != IPU_OK)
        return st;
    if (x->rank == 0 || idx->rank != x->rank)
        return ipu_op_error(IPU_ERR_SHAPE, n, "indices rank %d must equal data rank %d (>= 1)",
                            idx->rank, x->rank);
    if ((st = ipu_op_axis(n, ipu_attr_int(n, "axis", 0), x->rank, &axis)) != IPU_OK)
        return st;
    for (int d = 0; d < x->rank; d++)
        if (d != axis && idx->dims[d] > x->dims[d])
            return ipu_op_error(IPU_ERR_SHAPE, n, "indices dimension %d (%lld) exceeds the "
                                "data's (%lld)", d, (long long)idx->dims[d], (long long)x->dims[d]);
    return ipu_mv_set_output(g, n, 0, x->dtype, idx->rank, idx->dims);
}

static ipu_status_t gather_elements_run(const ipu_node_t *n, const ipu_tensor_t *in,
                                        ipu_tensor_t *out, ipu_kernel_ctx_t *ctx)
{
    const ipu_tensor_t *x = &in[0], *idx = &in[1];
    int axis = (int)ipu_attr_int(n, "axis", 0), r = x->rank;
    if (axis < 0)
        axis += r;
    size_t es = ipu_dtype_size(x->dtype);
    int64_t xs[IPU_MAX_RANK], pos[IPU_MAX_RANK] = {0}, ni = ipu_tensor_numel(idx), k;
    int64_t off = 0; /* element offset into x of pos, without the axis term */
    ipu_status_t st;
    ipu_tensor_strides(x, xs);
    for (int64_t j = 0; j < ni; j++) {
        if ((st = get_index(n, idx, j, x->dims[axis], &k)) != IPU_OK)
            return st;
        memcpy((char *)out[0].data + (size_t)j * es,
               (const char *)x->data + (size_t)(off + k * xs[axis]) * es, es);
        for (int d = r - 1; d >= 0; d--) { /* next position in the indices */
            if (d != axis)
                off += xs[d];
            if (++pos[d] < idx->dims[d])
                break;
            if (d != axis)
                off -= xs[d] * idx->dims[d];
            pos[d] = 0;
        }
    }
    return IPU_OK;
}

IPU_MV_OP(Gather, 1, 17, 0, gather_infer, NULL, gather_run, NULL)
IPU_MV_OP(GatherElements, 11, 17, 0, gather_elements_infer, NULL, gather_elements_run, NULL)

const ipu_op_t *const ipu_ops_gather[] = {&op_Gather, &op_GatherElements, NULL};
