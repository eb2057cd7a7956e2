/* Constant-1/9/11/12/13 (attributes value, value_float(s), value_int(s); not
 * sparse_value or strings), ConstantOfShape-9, Range-11 and Trilu-14, per
 * Operators.md. Constant's output is set constant in infer(); the others fold
 * when their inputs are constant (ConstantOfShape's shape and Range's inputs
 * must be, since the output shape depends on them). Dtype-generic except
 * Range (float, double, int16, int32, int64). */
#include "exec/ops/movement.h"
#include "exec/ops/registry.h"

#include <math.h>
#include <string.h>

/* --- Constant ---------------------------------------------------------------- */

/* A view of the node's constant (data points into the attribute). */
static ipu_status_t constant_view(const ipu_node_t *n, ipu_tensor_t *t)
{
    const ipu_attr_t *a;
    memset(t, 0, sizeof(*t));
    if ((a = ipu_attr_find(n, "value")) != NULL && a->type == IPU_ATTR_TENSOR && a->n == 1) {
        *t = a->tensors[0];
    } else if ((a = ipu_attr_find(n, "value_float")) != NULL && a->type == IPU_ATTR_FLOAT) {
        t->dtype = IPU_DTYPE_FLOAT;
        t->data = (void *)&a->f;
    } else if ((a = ipu_attr_find(n, "value_int")) != NULL && a->type == IPU_ATTR_INT) {
        t->dtype = IPU_DTYPE_INT64;
        t->data = (void *)&a->i;
    } else if ((a = ipu_attr_find(n, "value_floats")) != NULL && a->type == IPU_ATTR_FLOATS) {
        *t = (ipu_tensor_t){.dtype = IPU_DTYPE_FLOAT, .rank = 1, .dims = {(int64_t)a->n},
                            .data = a->floats};
    } else if ((a = ipu_attr_find(n, "value_ints")) != NULL && a->type == IPU_ATTR_INTS) {
        *t = (ipu_tensor_t){.dtype = IPU_DTYPE_INT64, .rank = 1, .dims = {(int64_t)a->n},
                            .data = a->ints};
    } else if (n->n_attrs > 0) {
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "attribute '%s' is not supported "
                            "(value, value_float(s), value_int(s) are)", n->attrs[0].name);
    } else {
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "no value attribute");
    }
    size_t es;
    return ipu_mv_esize(n, t->dtype, &es);
}

static ipu_status_t constant_infer(ipu_graph_t *g, ipu_node_t *n)
{
    ipu_tensor_t t;
    ipu_status_t st = constant_view(n, &t);
    ipu_value_t *y = ipu_node_output(g, n, 0);
    if (st != IPU_OK || y == NULL)
        return st;
    return ipu_value_set_const(y, t.dtype, t.rank, t.dims, t.data);
}

static ipu_status_t constant_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                                 ipu_kernel_ctx_t *ctx)
{
    ipu_tensor_t t;
    ipu_status_t st = constant_view(n, &t);
    if (st == IPU_OK && ipu_tensor_nbytes(&t))
        memcpy(out[0].data, t.data, ipu_tensor_nbytes(&t));
    return st;
}

/* --- ConstantOfShape ------------------------------------------------------------ */

static const float zero_f32 = 0.0f;

/* The fill value: attribute 'value' (one element) or float 0. */
static ipu_status_t fill_value(const ipu_node_t *n, ipu_dtype_t *dt, const void **elem)
{
    const ipu_attr_t *a = ipu_attr_find(n, "value");
    *dt = IPU_DTYPE_FLOAT;
    *elem = &zero_f32;
    if (a == NULL)
        return IPU_OK;
    if (a->type != IPU_ATTR_TENSOR || a->n != 1 || ipu_tensor_numel(&a->tensors[0]) != 1)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "'value' must be a one-element tensor");
    *dt = a->tensors[0].dtype;
    *elem = a->tensors[0].data;
    size_t es;
    return ipu_mv_esize(n, *dt, &es);
}

static ipu_status_t constant_of_shape_infer(ipu_graph_t *g, ipu_node_t *n)
{
    int64_t dims[IPU_MAX_RANK];
    int r;
    ipu_dtype_t dt;
    const void *elem;
    ipu_status_t st;
    if ((st = fill_value(n, &dt, &elem)) != IPU_OK ||
        (st = ipu_mv_input_ints(g, n, 0, "shape", dims, IPU_MAX_RANK, &r)) != IPU_OK)
        return st;
    for (int d = 0; d < r; d++)
        if (dims[d] < 0)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "shape[%d] = %lld is negative",
                                d, (long long)dims[d]);
    return ipu_mv_set_output(g, n, 0, dt, r, dims);
}

static ipu_status_t constant_of_shape_run(const ipu_node_t *n, const ipu_tensor_t *in,
                                          ipu_tensor_t *out, ipu_kernel_ctx_t *ctx)
{
    ipu_dtype_t dt;
    const void *elem;
    ipu_status_t st = fill_value(n, &dt, &elem);
    if (st == IPU_OK)
        ipu_mv_fill(out[0].data, (size_t)ipu_tensor_numel(&out[0]), elem, ipu_dtype_size(dt));
    return st;
}

/* --- Range ------------------------------------------------------------------------ */

/* Element count of Range(start, limit, delta) read from three scalars. */
static ipu_status_t range_count(const ipu_node_t *n, const ipu_tensor_t *in, int64_t *count)
{
    ipu_dtype_t dt = in[0].dtype;
    if (ipu_dtype_is_float(dt)) {
        double s = ipu_dtype_get_f64(dt, in[0].data, 0), l = ipu_dtype_get_f64(dt, in[1].data, 0);
        double d = ipu_dtype_get_f64(dt, in[2].data, 0);
        if (d == 0 || !isfinite(s) || !isfinite(l) || !isfinite(d))
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "delta is 0 or a bound is not finite");
        double c = ceil((l - s) / d);
        *count = c > 0 ? (int64_t)c : 0;
    } else {
        int64_t s = ipu_dtype_get_i64(dt, in[0].data, 0), l = ipu_dtype_get_i64(dt, in[1].data, 0);
        int64_t d = ipu_dtype_get_i64(dt, in[2].data, 0);
        if (d == 0)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "delta is 0");
        if (d > 0)
            *count = l > s ? (l - s + d - 1) / d : 0;
        else
            *count = s > l ? (s - l - d - 1) / -d : 0;
    }
    return IPU_OK;
}

static ipu_status_t range_infer(ipu_graph_t *g, ipu_node_t *n)
{
    ipu_tensor_t in[3];
    int64_t count;
    ipu_status_t st;
    for (int i = 0; i < 3; i++) {
        const ipu_value_t *v;
        if ((st = ipu_op_input(g, n, i, &v)) != IPU_OK)
            return st;
        if (v->data == NULL)
            return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "input '%s' must be a constant at "
                                "inference (data-dependent shapes are not supported)", v->name);
        if (v->rank != 0 && ipu_shape_numel(v->rank, v->dims) != 1)
            return ipu_op_error(IPU_ERR_SHAPE, n, "input '%s' must be a scalar", v->name);
        in[i] = ipu_value_tensor(g, n->inputs[i]);
    }
    ipu_dtype_t dt = in[0].dtype;
    if (dt != IPU_DTYPE_FLOAT && dt != IPU_DTYPE_DOUBLE && dt != IPU_DTYPE_INT16 &&
        dt != IPU_DTYPE_INT32 && dt != IPU_DTYPE_INT64)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "dtype %s is not supported",
                            ipu_dtype_name(dt));
    if (in[1].dtype != dt || in[2].dtype != dt)
        return ipu_op_error(IPU_ERR_SHAPE, n, "start, limit and delta must have one dtype");
    if ((st = range_count(n, in, &count)) != IPU_OK)
        return st;
    return ipu_mv_set_output(g, n, 0, dt, 1, &count);
}

static ipu_status_t range_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                              ipu_kernel_ctx_t *ctx)
{
    ipu_dtype_t dt = in[0].dtype;
    int64_t count = out[0].dims[0];
    if (ipu_dtype_is_float(dt)) {
        double s = ipu_dtype_get_f64(dt, in[0].data, 0), d = ipu_dtype_get_f64(dt, in[2].data, 0);
        for (int64_t i = 0; i < count; i++)
            ipu_dtype_set_f64(dt, out[0].data, (size_t)i, s + (double)i * d);
    } else {
        int64_t s = ipu_dtype_get_i64(dt, in[0].data, 0), d = ipu_dtype_get_i64(dt, in[2].data, 0);
        for (int64_t i = 0; i < count; i++)
            ipu_dtype_set_i64(dt, out[0].data, (size_t)i, s + i * d);
    }
    return IPU_OK;
}

/* --- Trilu -------------------------------------------------------------------------- */

static ipu_status_t trilu_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x, *k = ipu_node_input(g, n, 1);
    size_t es;
    ipu_status_t st;
    if ((st = ipu_mv_data_input(g, n, &x, &es)) != IPU_OK)
        return st;
    if (x->rank < 2)
        return ipu_op_error(IPU_ERR_SHAPE, n, "input rank %d < 2", x->rank);
    if (k && (k->dtype != IPU_DTYPE_INT64 || ipu_shape_numel(k->rank, k->dims) != 1))
        return ipu_op_error(IPU_ERR_SHAPE, n, "k must be an int64 scalar");
    return ipu_mv_set_output(g, n, 0, x->dtype, x->rank, x->dims);
}

static ipu_status_t trilu_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                              ipu_kernel_ctx_t *ctx)
{
    const ipu_tensor_t *x = &in[0];
    int upper = ipu_attr_int(n, "upper", 1) != 0;
    int64_t k = n->n_inputs > 1 && in[1].data ? *(const int64_t *)in[1].data : 0;
    int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
    int64_t mats = ipu_shape_numel(x->rank - 2, x->dims);
    size_t es = ipu_dtype_size(x->dtype);
    char *y = out[0].data;
    if (y != x->data)
        memcpy(y, x->data, ipu_tensor_nbytes(x));
    for (int64_t m = 0; m < mats; m++)
        for (int64_t i = 0; i < rows; i++, y += (size_t)cols * es) {
            /* upper keeps j >= i + k; lower keeps j <= i + k */
            int64_t lo = upper ? 0 : i + k + 1, hi = upper ? i + k : cols;
            lo = lo < 0 ? 0 : lo > cols ? cols : lo;
            hi = hi < 0 ? 0 : hi > cols ? cols : hi;
            if (hi > lo)
                memset(y + (size_t)lo * es, 0, (size_t)(hi - lo) * es);
        }
    return IPU_OK;
}

IPU_MV_OP(Constant, 1, 17, 0, constant_infer, NULL, constant_run, NULL)
IPU_MV_OP(ConstantOfShape, 9, 17, 0, constant_of_shape_infer, NULL, constant_of_shape_run, NULL)
IPU_MV_OP(Range, 11, 17, 0, range_infer, NULL, range_run, NULL)
IPU_MV_OP(Trilu, 14, 17, 0, trilu_infer, NULL, trilu_run, NULL)

const ipu_op_t *const ipu_ops_constant[] = {
    &op_Constant, &op_ConstantOfShape, &op_Range, &op_Trilu, NULL,
};
