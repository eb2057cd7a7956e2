/* Shape and view ops: Shape-1/13/15 (start, end), Size-1/13, Reshape-5/13/14
 * (allowzero), Flatten-1/9/11/13, Squeeze-1/11/13 and Unsqueeze-1/11/13
 * (axes attribute before 13, axes input from 13), per Operators.md.
 *
 * Shape and Size are known from shapes alone: infer() sets their outputs
 * constant, which starts the folding of PyTorch's shape sub-graphs. The view
 * ops (Reshape ... Unsqueeze) keep the bytes: output 0 aliases input 0, and
 * run() copies when the planner did not alias. Shape inputs (Reshape's shape,
 * Squeeze/Unsqueeze axes) must be constant at inference. */
#include "exec/ops/movement.h"
#include "exec/ops/registry.h"

#include <string.h>

/* run() of the view ops: the bytes are unchanged. */
static ipu_status_t view_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                             ipu_kernel_ctx_t *ctx)
{
    size_t bytes = ipu_tensor_nbytes(&in[0]);
    if (out[0].data != in[0].data && bytes)
        memcpy(out[0].data, in[0].data, bytes);
    return IPU_OK;
}

/* --- Shape, Size ---------------------------------------------------------- */

/* Shape-15's [start, end) of the dimensions, clamped as the spec says. */
static void shape_range(const ipu_node_t *n, int rank, int *start, int *end)
{
    int64_t s = 0, e = rank;
    if (n->opset >= 15) {
        s = ipu_attr_int(n, "start", 0);
        e = ipu_attr_int(n, "end", rank);
    }
    if (s < 0)
        s += rank;
    if (e < 0)
        e += rank;
    s = s < 0 ? 0 : s > rank ? rank : s;
    e = e < 0 ? 0 : e > rank ? rank : e;
    *start = (int)s;
    *end = (int)(e < s ? s : e);
}

static ipu_status_t shape_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x;
    ipu_status_t st = ipu_op_input(g, n, 0, &x);
    if (st != IPU_OK)
        return st;
    int start, end;
    shape_range(n, x->rank, &start, &end);
    int64_t len = end - start;
    ipu_value_t *y = ipu_node_output(g, n, 0);
    return y ? ipu_value_set_const(y, IPU_DTYPE_INT64, 1, &len, x->dims + start) : IPU_OK;
}

static ipu_status_t shape_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                              ipu_kernel_ctx_t *ctx)
{
    int start, end;
    shape_range(n, in[0].rank, &start, &end);
    memcpy(out[0].data, in[0].dims + start, (size_t)(end - start) * sizeof(int64_t));
    return IPU_OK;
}

static ipu_status_t size_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x;
    ipu_status_t st = ipu_op_input(g, n, 0, &x);
    if (st != IPU_OK)
        return st;
    int64_t numel = ipu_shape_numel(x->rank, x->dims);
    ipu_value_t *y = ipu_node_output(g, n, 0);
    return y ? ipu_value_set_const(y, IPU_DTYPE_INT64, 0, &numel, &numel) : IPU_OK;
}

static ipu_status_t size_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                             ipu_kernel_ctx_t *ctx)
{
    *(int64_t *)out[0].data = ipu_tensor_numel(&in[0]);
    return IPU_OK;
}

/* --- Reshape ---------------------------------------------------------------- */

static ipu_status_t reshape_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x;
    ipu_status_t st = ipu_op_input(g, n, 0, &x);
    if (st != IPU_OK)
        return st;
    int64_t dims[IPU_MAX_RANK];
    int r, infer_at = -1;
    if ((st = ipu_mv_input_ints(g, n, 1, "shape", dims, IPU_MAX_RANK, &r)) != IPU_OK)
        return st;
    int allowzero = n->opset >= 14 && ipu_attr_int(n, "allowzero", 0) != 0;
    int64_t known = 1, numel = ipu_shape_numel(x->rank, x->dims);
    for (int i = 0; i < r; i++) {
        if (dims[i] == -1) {
            if (infer_at >= 0)
                return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "shape has more than one -1");
            infer_at = i;
            continue;
        }
        if (dims[i] == 0 && !allowzero) {
            if (i >= x->rank)
                return ipu_op_error(IPU_ERR_SHAPE, n, "shape[%d] = 0 copies a dimension the "
                                    "rank-%d input does not have", i, x->rank);
            dims[i] = x->dims[i];
        }
        if (dims[i] < 0)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "shape[%d] = %lld is invalid",
                                i, (long long)dims[i]);
        known *= dims[i];
    }
    if (infer_at >= 0) {
        if (known == 0 || numel % known != 0)
            return ipu_op_error(IPU_ERR_SHAPE, n, "cannot infer the -1 in the shape: %lld "
                                "elements do not divide by %lld", (long long)numel,
                                (long long)known);
        dims[infer_at] = numel / known;
        known = numel;
    }
    if (known != numel) {
        char buf[96];
        ipu_tensor_t t = ipu_value_tensor(g, n->inputs[0]);
        return ipu_op_error(IPU_ERR_SHAPE, n, "cannot reshape %s (%lld elements) to %lld elements",
                            ipu_tensor_describe(&t, buf, sizeof(buf)), (long long)numel,
                            (long long)known);
    }
    return ipu_mv_set_output(g, n, 0, x->dtype, r, dims);
}

/* --- Flatten ------------------------------------------------------------------ */

static ipu_status_t flatten_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x;
    ipu_status_t st = ipu_op_input(g, n, 0, &x);
    if (st != IPU_OK)
        return st;
    int64_t axis = ipu_attr_int(n, "axis", 1);
    if (axis < -x->rank || axis > x->rank)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "axis %lld out of range for rank %d",
                            (long long)axis, x->rank);
    if (axis < 0)
        axis += x->rank;
    int64_t dims[2] = {ipu_shape_numel((int)axis, x->dims),
                       ipu_shape_numel(x->rank - (int)axis, x->dims + axis)};
    return ipu_mv_set_output(g, n, 0, x->dtype, 2, dims);
}

/* --- Squeeze, Unsqueeze --------------------------------------------------- */

/* The axes of Squeeze/Unsqueeze: attribute before opset 13, input 1 from 13.
 * *given is 0 when there are none. */
static ipu_status_t read_axes(const ipu_graph_t *g, const ipu_node_t *n, int64_t *axes,
                              int *cnt, int *given)
{
    *cnt = 0;
    *given = 0;
    if (n->opset < 13) {
        size_t c;
        const int64_t *a = ipu_attr_ints(n, "axes", &c);
        if (a == NULL)
            return IPU_OK;
        if (c > IPU_MAX_RANK)
            return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "%zu axes: at most %d supported",
                                c, IPU_MAX_RANK);
        memcpy(axes, a, c * sizeof(int64_t));
        *cnt = (int)c;
        *given = 1;
        return IPU_OK;
    }
    if (ipu_node_input(g, n, 1) == NULL)
        return IPU_OK;
    *given = 1;
    return ipu_mv_input_ints(g, n, 1, "axes", axes, IPU_MAX_RANK, cnt);
}

static ipu_status_t squeeze_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x;
    ipu_status_t st = ipu_op_input(g, n, 0, &x);
    if (st != IPU_OK)
        return st;
    int64_t axes[IPU_MAX_RANK], dims[IPU_MAX_RANK];
    int ax[IPU_MAX_RANK], cnt, given, r = 0;
    unsigned drop = 0;
    if ((st = read_axes(g, n, axes, &cnt, &given)) != IPU_OK ||
        (st = ipu_mv_axes(n, axes, cnt, x->rank, ax)) != IPU_OK)
        return st;
    for (int i = 0; i < cnt; i++) {
        if (x->dims[ax[i]] != 1)
            return ipu_op_error(IPU_ERR_SHAPE, n, "cannot squeeze axis %lld of size %lld",
                                (long long)axes[i], (long long)x->dims[ax[i]]);
        drop |= 1u << ax[i];
    }
    for (int i = 0; i < x->rank; i++)
        if (given ? !(drop & (1u << i)) : x->dims[i] != 1)
            dims[r++] = x->dims[i];
    return ipu_mv_set_output(g, n, 0, x->dtype, r, dims);
}

static ipu_status_t unsqueeze_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x;
    ipu_status_t st = ipu_op_input(g, n, 0, &x);
    if (st != IPU_OK)
        return st;
    int64_t axes[IPU_MAX_RANK], dims[IPU_MAX_RANK];
    int ax[IPU_MAX_RANK], cnt, given;
    unsigned ins = 0;
    if ((st = read_axes(g, n, axes, &cnt, &given)) != IPU_OK)
        return st;
    if (!given)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "axes are required");
    int r = x->rank + cnt;
    if (r > IPU_MAX_RANK)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "output rank %d exceeds the supported %d",
                            r, IPU_MAX_RANK);
    if ((st = ipu_mv_axes(n, axes, cnt, r, ax)) != IPU_OK)
        return st;
    for (int i = 0; i < cnt; i++)
        ins |= 1u << ax[i];
    for (int i = 0, k = 0; i < r; i++)
        dims[i] = (ins & (1u << i)) ? 1 : x->dims[k++];
    return ipu_mv_set_output(g, n, 0, x->dtype, r, dims);
}

IPU_MV_OP(Shape, 1, 17, 0, shape_infer, NULL, shape_run, NULL)
IPU_MV_OP(Size, 1, 17, 0, size_infer, NULL, size_run, NULL)
IPU_MV_OP(Reshape, 5, 17, IPU_OP_ALIAS_INPUT0, reshape_infer, NULL, view_run, NULL)
IPU_MV_OP(Flatten, 1, 17, IPU_OP_ALIAS_INPUT0, flatten_infer, NULL, view_run, NULL)
IPU_MV_OP(Squeeze, 1, 17, IPU_OP_ALIAS_INPUT0, squeeze_infer, NULL, view_run, NULL)
IPU_MV_OP(Unsqueeze, 1, 17, IPU_OP_ALIAS_INPUT0, unsqueeze_infer, NULL, view_run, NULL)

const ipu_op_t *const ipu_ops_shape[] = {
    &op_Shape, &op_Size, &op_Reshape, &op_Flatten, &op_Squeeze, &op_Unsqueeze, NULL,
};
