/* Normalisations (Operators.md): BatchNormalization-7/9/14/15 (inference
 * mode: running statistics; training outputs are rejected),
 * InstanceNormalization-6, LayerNormalization-17 (axis, epsilon; Scale and
 * B broadcast to the normalised shape; optional Mean and InvStdDev outputs
 * computed). float only.
 *
 * Run on oneDNN (exec/onednn.h), the primitive made at infer for the
 * node's shapes: BatchNormalization on its batch normalization with the
 * running statistics (and the Relu that graph/fuse.c may fold into it,
 * IPU_NORM_RELU_ATTR); LayerNormalization on its layer normalization over
 * the rows [prod(dims[:axis]), prod(dims[axis:])]; InstanceNormalization
 * on a batch normalization of one batch of N * C channels (the statistics
 * of each (n, c) plane, computed exactly as the layer's are), Scale and B
 * repeated for each n into the scratch buffer. */
#include "exec/ops/ew.h"
#include "exec/ops/registry.h"

#include "exec/onednn.h"
#include "graph/fuse.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { N_BATCH, N_INSTANCE, N_LAYER };

typedef struct norm_op {
    ipu_op_t op;
    int kind;
} norm_op_t;

#define NORM_OP(n) ((const norm_op_t *)(n)->op)

static ipu_status_t check_channel_param(const ipu_graph_t *g, const ipu_node_t *n, int i,
                                        int64_t c)
{
    const ipu_value_t *v = ipu_node_input(g, n, i);
    if (v->dtype != IPU_DTYPE_FLOAT)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "input %d dtype %s not supported", i,
                            ipu_dtype_name(v->dtype));
    if (v->rank != 1 || v->dims[0] != c)
        return ipu_op_error(IPU_ERR_SHAPE, n, "input %d ('%s') must have shape [%lld]", i,
                            v->name, (long long)c);
    return IPU_OK;
}

/* The rows and their length: a LayerNormalization's; N * C planes of the
 * spatial size for the others. */
static ipu_status_t norm_rows(const ipu_node_t *n, const ipu_value_t *x, int64_t *rows,
                              int64_t *len)
{
    int axis = 2;
    if (NORM_OP(n)->kind == N_LAYER) {
        ipu_status_t st = ipu_op_axis(n, ipu_attr_int(n, "axis", -1), x->rank, &axis);
        if (st != IPU_OK)
            return st;
    }
    *rows = ipu_shape_numel(axis, x->dims);
    *len = ipu_shape_numel(x->rank - axis, x->dims + axis);
    return IPU_OK;
}

/* The node's primitive into n->state (none for an empty X). */
static ipu_status_t norm_make(ipu_node_t *n, const ipu_value_t *x)
{
    int kind = NORM_OP(n)->kind;
    float eps = ipu_attr_float(n, "epsilon", 1e-5f);
    int64_t rows, len;
    ipu_status_t st = norm_rows(n, x, &rows, &len);
    if (st != IPU_OK || rows * len == 0)
        return st;
    if (kind == N_BATCH) /* [N, C, S] */
        return ipu_dnn_batchnorm(n, x->dims[0], x->dims[1], len, eps,
                                 ipu_attr_int(n, IPU_NORM_RELU_ATTR, 0) != 0,
                                 (ipu_dnn_t **)&n->state);
    return ipu_dnn_rownorm(n, kind == N_LAYER ? IPU_DNN_NORM_ROWS_COLS : IPU_DNN_NORM_ROWS_ROWS,
                           rows, len, eps, (ipu_dnn_t **)&n->state);
}

static void norm_fini(ipu_node_t *n)
{
    ipu_dnn_free(n->state);
    n->state = NULL;
}

static ipu_status_t norm_infer(ipu_graph_t *g, ipu_node_t *n)
{
    int kind = NORM_OP(n)->kind;
    ipu_status_t st = kind == N_BATCH    ? ipu_ew_check_arity(n, 5, 5, 5, 5)
                      : kind == N_LAYER ? ipu_ew_check_arity(n, 2, 3, 2, 3)
                                         : ipu_ew_check_arity(n, 3, 3, 3, 1);
    if (st != IPU_OK)
        return st;
    const ipu_value_t *x = ipu_node_input(g, n, 0);
    if (x->dtype != IPU_DTYPE_FLOAT)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "dtype %s not supported",
                            ipu_dtype_name(x->dtype));
    if (kind == N_LAYER) {
        int axis;
        if ((st = ipu_op_axis(n, ipu_attr_int(n, "axis", -1), x->rank, &axis)) != IPU_OK)
            return st;
        for (int i = 1; i < n->n_inputs; i++) {
            const ipu_value_t *v = ipu_node_input(g, n, i);
            int r;
            int64_t dims[IPU_MAX_RANK];
            if (v == NULL)
                continue;
            if (v->dtype != IPU_DTYPE_FLOAT)
                return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "input %d dtype %s not supported",
                                    i, ipu_dtype_name(v->dtype));
            if ((st = ipu_op_broadcast(n, x->rank - axis, x->dims + axis, v->rank, v->dims, &r,
                                       dims)) != IPU_OK)
                return st;
            if (!ipu_shape_equal(r, dims, x->rank - axis, x->dims + axis))
                return ipu_op_error(IPU_ERR_SHAPE, n, "input %d ('%s') does not broadcast to "
                                    "the normalised shape", i, v->name);
        }
        int64_t sdims[IPU_MAX_RANK];
        for (int d = 0; d < x->rank; d++)
            sdims[d] = d < axis ? x->dims[d] : 1;
        for (int k = 1; k < 3; k++)
            if (ipu_node_output(g, n, k))
                ipu_value_set_shape(ipu_node_output(g, n, k), IPU_DTYPE_FLOAT, x->rank, sdims);
    } else {
        if (x->rank < 2)
            return ipu_op_error(IPU_ERR_SHAPE, n, "X must have rank >= 2, has %d", x->rank);
        for (int i = 1; i < n->n_inputs; i++)
            if ((st = check_channel_param(g, n, i, x->dims[1])) != IPU_OK)
                return st;
    }
    if (kind == N_BATCH) {
        int training = ipu_attr_int(n, "training_mode", 0) != 0;
        for (int k = 1; k < n->n_outputs; k++)
            training |= n->outputs[k] >= 0;
        if (training)
            return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "training mode (batch statistics, "
                                "running mean/var outputs) is not supported");
        if (n->opset < 9 && ipu_attr_int(n, "spatial", 1) != 1)
            return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "spatial=0 is not supported");
    }
    ipu_value_set_shape(ipu_node_output(g, n, 0), x->dtype, x->rank, x->dims);
    return norm_make(n, x);
}

/* Where the op's own scratch starts, after the primitive's: Layer
 * Normalization's Scale and B expanded to the row length, Instance
 * Normalization's repeated for each of the N * C planes (rows); then the
 * rows' mean and variance. */
static size_t own_offset(const ipu_node_t *n)
{
    return (ipu_dnn_scratch(n->state) + 63) / 64 * 64;
}

static size_t norm_scratch(const ipu_graph_t *g, const ipu_node_t *n)
{
    int64_t rows, len;
    if (n->state == NULL || NORM_OP(n)->kind == N_BATCH ||
        norm_rows(n, ipu_node_input(g, n, 0), &rows, &len) != IPU_OK)
        return ipu_dnn_scratch(n->state);
    int64_t plen = NORM_OP(n)->kind == N_LAYER ? len : rows;
    return own_offset(n) + sizeof(float) * (size_t)(2 * plen + 2 * rows);
}

/* Expand a Scale/B tensor to the normalised shape (or a default value). */
static const float *expand_param(const ipu_tensor_t *p, const ipu_tensor_t *x, int axis,
                                 float dflt, float *buf, int64_t len)
{
    if (p->data == NULL) {
        for (int64_t i = 0; i < len; i++)
            buf[i] = dflt;
        return buf;
    }
    if (ipu_tensor_numel(p) == len)
        return p->data;
    ipu_tensor_t dst = {.dtype = IPU_DTYPE_FLOAT, .rank = x->rank - axis, .data = buf};
    memcpy(dst.dims, x->dims + axis, (size_t)dst.rank * sizeof(int64_t));
    size_t esz = sizeof(float);
    ipu_ew_apply(1, p, &dst, ipu_ew_copy_row, &esz);
    return buf;
}

static ipu_status_t norm_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                             ipu_kernel_ctx_t *ctx)
{
    int kind = NORM_OP(n)->kind;
    if (n->state == NULL) /* empty */
        return IPU_OK;
    if (kind == N_BATCH) {
        const void *extra[4] = {in[3].data, in[4].data, in[1].data, in[2].data};
        return ipu_dnn_exec(n, n->state, in[0].data, extra, out[0].data, ctx);
    }
    if (ctx->scratch_bytes < own_offset(n))
        return ipu_op_error(IPU_ERR_INTERNAL, n, "scratch too small");
    float *tmp = (float *)((char *)ctx->scratch + own_offset(n));
    int axis = 2;
    ipu_status_t st;
    if (kind == N_LAYER &&
        (st = ipu_op_axis(n, ipu_attr_int(n, "axis", -1), in[0].rank, &axis)) != IPU_OK)
        return st;
    int64_t rows = ipu_shape_numel(axis, in[0].dims);
    int64_t len = ipu_shape_numel(in[0].rank - axis, in[0].dims + axis);
    /* Scale and B expanded (2 * plen), then mean and var (rows each) */
    int64_t plen = kind == N_LAYER ? len : rows;
    float *mean = tmp + 2 * plen, *var = mean + rows;
    const float *scale, *shift;
    if (kind == N_LAYER) {
        ipu_tensor_t none = {0};
        scale = expand_param(&in[1], &in[0], axis, 1.0f, tmp, len);
        shift = expand_param(n->n_inputs > 2 ? &in[2] : &none, &in[0], axis, 0.0f, tmp + len, len);
        if (n->n_outputs > 1 && out[1].data)
            mean = out[1].data;
        if (n->n_outputs > 2 && out[2].data)
            var = out[2].data;
    } else { /* Scale and B per plane (n, c) */
        const float *s = in[1].data, *b = in[2].data;
        int64_t C = in[0].dims[1];
        for (int64_t r = 0; r < rows; r++) {
            tmp[r] = s[r % C];
            tmp[rows + r] = b[r % C];
        }
        scale = tmp;
        shift = tmp + rows;
    }
    const void *extra[4] = {scale, shift, mean, var};
    if ((st = ipu_dnn_exec(n, n->state, in[0].data, extra, out[0].data, ctx)) != IPU_OK)
        return st;
    if (kind == N_LAYER && n->n_outputs > 2 && out[2].data) { /* InvStdDev from the variance */
        float eps = ipu_attr_float(n, "epsilon", 1e-5f);
        for (int64_t r = 0; r < rows; r++)
            var[r] = 1.0f / sqrtf(var[r] + eps);
    }
    return IPU_OK;
}

#define ENTRY(NAME, SINCE, KIND) \
    {{"", NAME, SINCE, 17, 0, norm_infer, norm_scratch, norm_run, norm_fini, NULL, NULL}, KIND}

static const norm_op_t ops[] = {
    ENTRY("BatchNormalization", 7, N_BATCH),
    ENTRY("InstanceNormalization", 6, N_INSTANCE),
    ENTRY("LayerNormalization", 17, N_LAYER),
};

const ipu_op_t *const ipu_ops_norm[] = {&ops[0].op, &ops[1].op, &ops[2].op, NULL};
