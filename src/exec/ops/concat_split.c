/* Concat-4/11/13 and Split-2/11/13 (Operators.md): Concat joins one or more
 * inputs along axis (negative from 11; empty inputs allowed); Split cuts along
 * axis into the sizes of the 'split' attribute (before 13) or the optional
 * 'split' input (from 13), equal parts by default. Dtype-generic: each of the
 * outer(axis) blocks is one memcpy per input/output. */
#include "exec/ops/movement.h"
#include "exec/ops/registry.h"

#include <string.h>

/* Copy the blocks of parts[] (along axis) into / out of the whole tensor.
 * to_whole: Concat (parts -> whole), else Split (whole -> parts). */
static void join_or_cut(ipu_tensor_t *whole, ipu_tensor_t *parts, int np, int axis, int to_whole)
{
    size_t es = ipu_dtype_size(whole->dtype);
    int64_t outer = ipu_shape_numel(axis, whole->dims);
    int64_t inner = ipu_shape_numel(whole->rank - axis - 1, whole->dims + axis + 1) * (int64_t)es;
    int64_t wrow = whole->dims[axis] * inner;
    int64_t off = 0;
    for (int p = 0; p < np; p++) {
        int64_t prow = parts[p].dims[axis] * inner;
        char *w = (char *)whole->data + off;
        char *b = parts[p].data;
        for (int64_t o = 0; o < outer && prow > 0 && b != NULL; o++) {
            if (to_whole)
                memcpy(w + o * wrow, b + o * prow, (size_t)prow);
            else
                memcpy(b + o * prow, w + o * wrow, (size_t)prow);
        }
        off += prow;
    }
}

/* --- Concat ----------------------------------------------------------------- */

static ipu_status_t concat_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x0 = ipu_node_input(g, n, 0);
    int64_t dims[IPU_MAX_RANK];
    int axis;
    size_t es;
    ipu_status_t st;
    if (x0 == NULL)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "needs at least one input");
    if (ipu_attr_find(n, "axis") == NULL)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "attribute 'axis' is required");
    if ((st = ipu_mv_esize(n, x0->dtype, &es)) != IPU_OK ||
        (st = ipu_op_axis(n, ipu_attr_int(n, "axis", 0), x0->rank, &axis)) != IPU_OK)
        return st;
    if (x0->rank == 0)
        return ipu_op_error(IPU_ERR_SHAPE, n, "cannot concatenate scalars");
    memcpy(dims, x0->dims, sizeof(int64_t) * (size_t)x0->rank);
    dims[axis] = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        const ipu_value_t *x;
        if ((st = ipu_op_input(g, n, i, &x)) != IPU_OK)
            return st;
        if (x->dtype != x0->dtype)
            return ipu_op_error(IPU_ERR_SHAPE, n, "input %d ('%s') is %s, input 0 is %s", i,
                                x->name, ipu_dtype_name(x->dtype), ipu_dtype_name(x0->dtype));
        if (x->rank != x0->rank)
            return ipu_op_error(IPU_ERR_SHAPE, n, "input %d ('%s') has rank %d, input 0 has "
                                "rank %d", i, x->name, x->rank, x0->rank);
        for (int d = 0; d < x->rank; d++)
            if (d != axis && x->dims[d] != x0->dims[d])
                return ipu_op_error(IPU_ERR_SHAPE, n, "input %d ('%s') dimension %d is %lld, "
                                    "input 0's is %lld", i, x->name, d, (long long)x->dims[d],
                                    (long long)x0->dims[d]);
        dims[axis] += x->dims[axis];
    }
    return ipu_mv_set_output(g, n, 0, x0->dtype, x0->rank, dims);
}

static ipu_status_t concat_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                               ipu_kernel_ctx_t *ctx)
{
    int axis = (int)ipu_attr_int(n, "axis", 0);
    if (axis < 0)
        axis += out[0].rank;
    join_or_cut(&out[0], (ipu_tensor_t *)in, n->n_inputs, axis, 1);
    return IPU_OK;
}

/* --- Split -------------------------------------------------------------------- */

#define SPLIT_MAX 64

static ipu_status_t split_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x;
    int64_t sizes[SPLIT_MAX], dims[IPU_MAX_RANK], total = 0;
    int axis, cnt = 0;
    size_t es;
    ipu_status_t st;
    if ((st = ipu_mv_data_input(g, n, &x, &es)) != IPU_OK ||
        (st = ipu_op_axis(n, ipu_attr_int(n, "axis", 0), x->rank, &axis)) != IPU_OK)
        return st;
    if (x->rank == 0)
        return ipu_op_error(IPU_ERR_SHAPE, n, "cannot split a scalar");
    if (n->n_outputs > SPLIT_MAX)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "%d outputs, at most %d supported",
                            n->n_outputs, SPLIT_MAX);
    if (n->opset < 13) {
        size_t c;
        const int64_t *a = ipu_attr_ints(n, "split", &c);
        if (a) {
            cnt = (int)(c < SPLIT_MAX ? c : SPLIT_MAX);
            memcpy(sizes, a, (size_t)cnt * sizeof(int64_t));
            if (c != (size_t)n->n_outputs)
                cnt = -1;
        }
    } else if (ipu_node_input(g, n, 1) != NULL) {
        if ((st = ipu_mv_input_ints(g, n, 1, "split", sizes, SPLIT_MAX, &cnt)) != IPU_OK)
            return st;
        if (cnt != n->n_outputs)
            cnt = -1;
    }
    if (cnt < 0)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "'split' must have one size per output (%d)",
                            n->n_outputs);
    if (cnt == 0) { /* equal parts */
        if (x->dims[axis] % n->n_outputs != 0)
            return ipu_op_error(IPU_ERR_SHAPE, n, "dimension %d (%lld) does not split into %d "
                                "equal parts", axis, (long long)x->dims[axis], n->n_outputs);
        for (int i = 0; i < n->n_outputs; i++)
            sizes[i] = x->dims[axis] / n->n_outputs;
    }
    for (int i = 0; i < n->n_outputs; i++) {
        if (n->outputs[i] < 0)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "output %d is absent", i);
        if (sizes[i] < 0)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "split size %d is negative (%lld)",
                                i, (long long)sizes[i]);
        total += sizes[i];
    }
    if (total != x->dims[axis])
        return ipu_op_error(IPU_ERR_SHAPE, n, "split sizes add up to %lld, dimension %d is %lld",
                            (long long)total, axis, (long long)x->dims[axis]);
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    for (int i = 0; i < n->n_outputs; i++) {
        dims[axis] = sizes[i];
        if ((st = ipu_mv_set_output(g, n, i, x->dtype, x->rank, dims)) != IPU_OK)
            return st;
    }
    return IPU_OK;
}

static ipu_status_t split_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                              ipu_kernel_ctx_t *ctx)
{
    int axis = (int)ipu_attr_int(n, "axis", 0);
    if (axis < 0)
        axis += in[0].rank;
    ipu_tensor_t whole = in[0];
    join_or_cut(&whole, out, n->n_outputs, axis, 0);
    return IPU_OK;
}

IPU_MV_OP(Concat, 4, 17, 0, concat_infer, NULL, concat_run, NULL)
IPU_MV_OP(Split, 2, 17, 0, split_infer, NULL, split_run, NULL)

const ipu_op_t *const ipu_ops_concat_split[] = {&op_Concat, &op_Split, NULL};
