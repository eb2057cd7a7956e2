/* Softmax-1/11 and LogSoftmax-1/11 (input coerced to 2-D at axis, default
 * axis 1) and Softmax-13, LogSoftmax-13 (one axis, default -1)
 * (Operators.md). float only. Numerically stable: the maximum along the axis
 * is subtracted first, so -inf inputs (masked attention) give 0 (LogSoftmax:
 * -inf); a row that is all -inf gives NaN, as in PyTorch (oneDNN's kernel
 * too), and so does a row holding a NaN or +inf (oneDNN's kernel does not:
 * sm_run computes a result with a NaN again here).
 *
 * Runs on oneDNN's softmax (exec/onednn.h), made at infer for the node's
 * shape, but where the loops here were measured faster
 * (bench/results/models.md): see sm_on_dnn. */
#include "exec/ops/ew.h"
#include "exec/ops/registry.h"
#include "exec/onednn.h"

#include <math.h>

typedef struct sm_op {
    ipu_op_t op;
    int log;
} sm_op_t;

#define SM_OP(n) ((const sm_op_t *)(n)->op)

/* Softmax over [outer, len, inner]: for each outer index, normalise along len. */
static void sm_geometry(const ipu_node_t *n, int rank, const int64_t *dims, int axis,
                        int64_t *outer, int64_t *len, int64_t *inner)
{
    *outer = ipu_shape_numel(axis, dims);
    if (n->opset < 13) {
        *len = ipu_shape_numel(rank - axis, dims + axis);
        *inner = 1;
    } else {
        *len = rank ? dims[axis] : 1;
        *inner = ipu_shape_numel(rank - axis - 1, dims + axis + 1);
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

/* Whether oneDNN's softmax runs d rather than sm_row / sm_cols. */
static int sm_on_dnn(const ipu_dnn_softmax_desc_t *d)
{
    if (d->log) /* oneDNN 2.6's is slower than sm_row, and its log loses digits near 0 */
        return 0;
    if (d->inner >= 16) /* sm_cols' full vectors beat oneDNN's two transposes */
        return 0;
    if (d->inner > 1) /* sm_cols' vectors would be mostly empty */
        return 1;
    /* on a team, sm_row's split of the rows scales better than oneDNN's */
    const size_t bytes = 2 * sizeof(float) * (size_t)(d->outer * d->len);
    return ipu_dnn_threads() == 1 || bytes < IPU_TEAM_MIN_BYTES;
}

static ipu_status_t sm_infer(ipu_graph_t *g, ipu_node_t *n)
{
    ipu_status_t st = ipu_ew_check_arity(n, 1, 1, 1, 1);
    int axis;
    if (st != IPU_OK)
        return st;
    const ipu_value_t *x = ipu_node_input(g, n, 0);
    if (x->dtype != IPU_DTYPE_FLOAT)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "dtype %s not supported",
                            ipu_dtype_name(x->dtype));
    if ((st = sm_axis(n, x->rank, &axis)) != IPU_OK)
        return st;
    ipu_value_set_shape(ipu_node_output(g, n, 0), x->dtype, x->rank, x->dims);
    ipu_dnn_softmax_desc_t d = {.log = SM_OP(n)->log};
    sm_geometry(n, x->rank, x->dims, axis, &d.outer, &d.len, &d.inner);
    if (d.outer * d.len * d.inner == 0 || !sm_on_dnn(&d))
        return IPU_OK; /* nothing to compute, or the loops here */
    st = ipu_dnn_softmax(n, &d, (ipu_dnn_t **)&n->state);
    return st == IPU_ERR_UNSUPPORTED ? IPU_OK : st; /* no jit kernel: the loops here */
}

static void sm_fini(ipu_node_t *n)
{
    ipu_dnn_free(n->state);
    n->state = NULL;
}

/* The loops' scratch (sm_cols: 2 x inner floats), or oneDNN's if more: the
 * loops also run a node made on oneDNN (a NaN in its result, sm_run). */
static size_t sm_scratch(const ipu_graph_t *g, const ipu_node_t *n)
{
    const ipu_value_t *x = ipu_node_input(g, n, 0);
    int axis;
    size_t own = 0, dnn = n->state ? ipu_dnn_scratch(n->state) : 0;
    if (sm_axis(n, x->rank, &axis) == IPU_OK && n->opset >= 13)
        own = 2 * sizeof(float) * (size_t)ipu_shape_numel(x->rank - axis - 1, x->dims + axis + 1);
    return own > dnn ? own : dnn;
}

/* One contiguous row. */
IPU_EW_HOT static void sm_row(float *restrict y, const float *restrict x, int64_t len, int log)
{
    const float m = ipu_ew_max_f32(x, len);
    for (int64_t i = 0; i < len; i++)
        y[i] = ipu_ew_expf_nonpos(x[i] - m);
    float s = ipu_ew_sum_f32(y, len);
    if (log) {
        const float c = m + logf(s);
        for (int64_t i = 0; i < len; i++)
            y[i] = x[i] - c;
        return;
    }
    const float r = 1.0f / s;
    for (int64_t i = 0; i < len; i++)
        y[i] *= r;
}

/* len rows of inner elements: normalise each column (stride inner); the
 * loops run along inner so they stay contiguous. mx, sum: inner floats. */
IPU_EW_HOT static void sm_cols(float *restrict y, const float *restrict x, int64_t len,
                               int64_t inner, int log, float *restrict mx, float *restrict sum)
{
    for (int64_t j = 0; j < inner; j++) {
        mx[j] = -INFINITY;
        sum[j] = 0.0f;
    }
    for (int64_t a = 0; a < len; a++)
        for (int64_t j = 0; j < inner; j++)
            mx[j] = x[a * inner + j] > mx[j] ? x[a * inner + j] : mx[j];
    for (int64_t a = 0; a < len; a++)
        for (int64_t j = 0; j < inner; j++) {
            float e = ipu_ew_expf_nonpos(x[a * inner + j] - mx[j]);
            sum[j] += e;
            if (!log)
                y[a * inner + j] = e;
        }
    for (int64_t j = 0; j < inner; j++)
        sum[j] = log ? mx[j] + logf(sum[j]) : 1.0f / sum[j];
    for (int64_t a = 0; a < len; a++)
        for (int64_t j = 0; j < inner; j++)
            y[a * inner + j] = log ? x[a * inner + j] - sum[j] : y[a * inner + j] * sum[j];
}

/* rows [r0, r1) of len elements each (ipu_par_rows) */
typedef struct sm_rows {
    float *y;
    const float *x;
    int64_t len;
    int log;
} sm_rows_t;

static void sm_rows(void *arg, int64_t r0, int64_t r1)
{
    const sm_rows_t *r = arg;
    for (int64_t o = r0; o < r1; o++)
        sm_row(r->y + o * r->len, r->x + o * r->len, r->len, r->log);
}

static ipu_status_t sm_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                           ipu_kernel_ctx_t *ctx)
{
    int axis;
    int64_t outer, len, inner;
    if (n->state) {
        ipu_status_t st = ipu_dnn_exec(n, n->state, in[0].data, NULL, out[0].data, ctx);
        /* a NaN or +inf in X: oneDNN's kernel gives NaN for that element
         * and 0 for the rest of its row, PyTorch (and the loops below) NaN
         * for the whole row: such a tensor is computed again below */
        if (st != IPU_OK || !ipu_ew_any_nan_f32(out[0].data, ipu_tensor_numel(&out[0])))
            return st;
    }
    ipu_status_t st = sm_axis(n, in[0].rank, &axis);
    if (st != IPU_OK)
        return st;
    sm_geometry(n, in[0].rank, in[0].dims, axis, &outer, &len, &inner);
    const float *x = in[0].data;
    float *y = out[0].data;
    int log = SM_OP(n)->log;
    if (inner == 1) { /* the rows split over the IPU's team */
        sm_rows_t r = {y, x, len, log};
        ipu_par_rows(ctx->threads, outer, 2 * sizeof(float) * (size_t)(outer * len), sm_rows, &r);
        return IPU_OK;
    }
    if (ctx->scratch_bytes < 2 * sizeof(float) * (size_t)inner)
        return ipu_op_error(IPU_ERR_INTERNAL, n, "scratch too small");
    for (int64_t o = 0; o < outer; o++)
        sm_cols(y + o * len * inner, x + o * len * inner, len, inner, log, ctx->scratch,
                (float *)ctx->scratch + inner);
    return IPU_OK;
}

static const sm_op_t ops[] = {
    {{"", "Softmax", 1, 17, 0, sm_infer, sm_scratch, sm_run, sm_fini, NULL, NULL, NULL}, 0},
    {{"", "LogSoftmax", 1, 17, 0, sm_infer, sm_scratch, sm_run, sm_fini, NULL, NULL, NULL}, 1},
};

const ipu_op_t *const ipu_ops_softmax[] = {&ops[0].op, &ops[1].op, NULL};
