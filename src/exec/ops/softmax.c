/* Softmax-1/11 and LogSoftmax-1/11 (input coerced to 2-D at axis, default
 * axis 1) and Softmax-13, LogSoftmax-13 (one axis, default -1)
 * (Operators.md). float only. Runs on oneDNN's softmax (exec/onednn.h),
 * made at infer for the node's shape: numerically stable (the maximum
 * along the axis is subtracted first), so -inf inputs (masked attention)
 * give 0 (LogSoftmax: -inf). */
#include "exec/ops/ew.h"
#include "exec/ops/registry.h"
#include "exec/onednn.h"

#include <stdlib.h>

typedef struct sm_op {
    ipu_op_t op;
    int log;
} sm_op_t;

#define SM_OP(n) ((const sm_op_t *)(n)->op)

/* Softmax over [outer, len, inner]: for each outer index, normalise along len. */
static void sm_geometry(const ipu_node_t *n, const ipu_value_t *x, int axis, int64_t *outer,
                        int64_t *len, int64_t *inner)
{
    *outer = ipu_shape_numel(axis, x->dims);
    if (n->opset < 13) {
        *len = ipu_shape_numel(x->rank - axis, x->dims + axis);
        *inner = 1;
    } else {
        *len = x->rank ? x->dims[axis] : 1;
        *inner = ipu_shape_numel(x->rank - axis - 1, x->dims + axis + 1);
    }
}

static ipu_status_t sm_axis(const ipu_node_t *n, int rank, int *axis)
{
    int64_t a = ipu_attr_int(n, "axis", n->opset < 13 ? 1 : -1);
    if (rank == 0 && (a == 0 || a == -1)) { /* a scalar: softmax of one element */
        *axis = 0;
        return IPU_OK;
    }
    return ipu_op_axis(n, a, rank, axis);
}

static void sm_fini(ipu_node_t *n)
{
    ipu_dnn_free(n->state);
    n->state = NULL;
}

static ipu_status_t sm_infer(ipu_graph_t *g, ipu_node_t *n)
{
    ipu_status_t st = ipu_ew_check_arity(n, 1, 1, 1, 1);
    int axis;
    int64_t outer, len, inner;
    if (st != IPU_OK)
        return st;
    const ipu_value_t *x = ipu_node_input(g, n, 0);
    if (x->dtype != IPU_DTYPE_FLOAT)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "dtype %s not supported",
                            ipu_dtype_name(x->dtype));
    if ((st = sm_axis(n, x->rank, &axis)) != IPU_OK)
        return st;
    ipu_value_set_shape(ipu_node_output(g, n, 0), x->dtype, x->rank, x->dims);
    sm_geometry(n, x, axis, &outer, &len, &inner);
    if (outer * len * inner == 0)
        return IPU_OK; /* nothing to compute */
    return ipu_dnn_softmax(n, outer, len, inner, SM_OP(n)->log, (ipu_dnn_t **)&n->state);
}

static size_t sm_scratch(const ipu_graph_t *g, const ipu_node_t *n)
{
    return ipu_dnn_scratch(n->state);
}

static ipu_status_t sm_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                           ipu_kernel_ctx_t *ctx)
{
    if (n->state == NULL) /* empty */
        return IPU_OK;
    return ipu_dnn_exec(n, n->state, in[0].data, NULL, out[0].data, ctx);
}

static const sm_op_t ops[] = {
    {{"", "Softmax", 1, 17, 0, sm_infer, sm_scratch, sm_run, sm_fini, NULL, NULL}, 0},
    {{"", "LogSoftmax", 1, 17, 0, sm_infer, sm_scratch, sm_run, sm_fini, NULL, NULL}, 1},
};

const ipu_op_t *const ipu_ops_softmax[] = {&ops[0].op, &ops[1].op, NULL};
