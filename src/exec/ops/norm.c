/* Normalisations (Operators.md): BatchNormalization-7/9/14/15 (inference
 * mode: running statistics; training outputs are rejected),
 * InstanceNormalization-6, LayerNormalization-17 (axis, epsilon; Scale and
 * B broadcast to the normalised shape; optional Mean and InvStdDev outputs
 * computed). float only.
 *
 * LayerNormalization runs on oneDNN's layer normalization (exec/onednn.h)
 * over the rows [prod(dims[:axis]), prod(dims[axis:])], made at infer.
 * BatchNormalization and InstanceNormalization run on the loops below: on
 * our plain NCHW layout oneDNN has only a slower kernel for them (its fast
 * ones take blocked layouts, and the reorders to and from them cost more
 * than the one pass over X these take). A Relu that graph/fuse.c folds into
 * a BatchNormalization (IPU_NORM_RELU_ATTR) is applied in that pass.
 * BatchNormalization of rank 3 to 5 takes part in the layout pass
 * (dnn_chain.h): where its producer keeps X in oneDNN's layout (a Concat's,
 * a Conv's), it is remade (adopt) to run on oneDNN's batch normalization
 * in that layout, the Relu fused, and its output may stay in it for a
 * Conv. Where that layout is channels-last for X and Y, a loop over rows
 * of channels runs instead of the primitive (oneDNN 2.6's kernel there is
 * slower than one pass). */
#include "exec/ops/dnn_chain.h"
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

/* n->state of LayerNormalization (its primitive) and BatchNormalization
 * (NULL where neither has one). */
typedef struct norm_state {
    ipu_dnn_node_t dnn;     /* first (IPU_OP_DNN); p NULL: the loops */
    ipu_dnn_bnorm_desc_t d; /* BatchNormalization: what p is made from (adopt) */
} norm_state_t;

/* The node's primitive, or NULL. */
static ipu_dnn_t *norm_dnn(const ipu_node_t *n)
{
    const norm_state_t *s = n->state;
    return s ? s->dnn.p : NULL;
}

/* y = (x - mean) * inv * s + b over a contiguous row, s and b one value
 * for the row, then Relu (x < 0 ? 0 : x, as the Relu kernel) when relu. */
IPU_EW_HOT static void norm_row(float *restrict y, const float *restrict x, int64_t len,
                                float mean, float inv, float s, float b, int relu)
{
    const float a = inv * s, c = b - mean * a;
    if (relu) {
        for (int64_t i = 0; i < len; i++) {
            float v = x[i] * a + c;
            y[i] = v < 0.0f ? 0.0f : v;
        }
    } else {
        for (int64_t i = 0; i < len; i++)
            y[i] = x[i] * a + c;
    }
}

/* y = (x - mean) * inv * s + b over rows of C channels (channels-last),
 * then Relu when relu. The factors first: a[c] holds channel c's inv on
 * entry, its factor after, b[c] its offset, each computed as norm_row does
 * (the same clone, so the same rounding as in our layout). */
IPU_EW_HOT static void norm_factors_channels_last(int64_t C, float *restrict a, float *restrict b,
                                                  const float *restrict mean,
                                                  const float *restrict s,
                                                  const float *restrict bias)
{
    for (int64_t c = 0; c < C; c++) {
        const float f = a[c] * s[c];
        a[c] = f;
        b[c] = bias[c] - mean[c] * f;
    }
}

typedef struct cl_norm {
    float *y;
    const float *x, *a, *b;
    int64_t C;
    int relu;
} cl_norm_t;

/* rows [r0, r1) of ipu_par_rows */
IPU_EW_HOT static void norm_rows_channels_last(void *arg, int64_t r0, int64_t r1)
{
    const cl_norm_t *p = arg;
    const int64_t C = p->C;
    const float *restrict a = p->a, *restrict b = p->b;
    const float *restrict x = p->x + r0 * C;
    float *restrict y = p->y + r0 * C;
    for (int64_t r = r0; r < r1; r++, x += C, y += C) {
        if (p->relu) {
            for (int64_t c = 0; c < C; c++) {
                float v = x[c] * a[c] + b[c];
                y[c] = v < 0.0f ? 0.0f : v;
            }
        } else {
            for (int64_t c = 0; c < C; c++)
                y[c] = x[c] * a[c] + b[c];
        }
    }
}

/* mean and 1/sqrt(var + eps) of a contiguous row (two passes; tmp: len floats) */
static void row_stats(const float *x, int64_t len, float eps, float *tmp, float *mean, float *inv)
{
    float m = len ? ipu_ew_sum_f32(x, len) / (float)len : 0.0f;
    for (int64_t i = 0; i < len; i++)
        tmp[i] = x[i] - m;
    float var = len ? ipu_ew_dot_f32(tmp, tmp, len) / (float)len : 0.0f;
    *mean = m;
    *inv = 1.0f / sqrtf(var + eps);
}

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

/* A LayerNormalization's rows and their length (its axis is valid). */
static void layer_rows(const ipu_node_t *n, int rank, const int64_t *dims, int64_t *rows,
                       int64_t *len)
{
    int axis = 0;
    ipu_op_axis(n, ipu_attr_int(n, "axis", -1), rank, &axis);
    *rows = ipu_shape_numel(axis, dims);
    *len = ipu_shape_numel(rank - axis, dims + axis);
}

static void norm_fini(ipu_node_t *n)
{
    norm_state_t *s = n->state;
    if (s)
        ipu_dnn_free(s->dnn.p);
    free(s);
    n->state = NULL;
}

static ipu_status_t bn_adopt(const ipu_node_t *n, const ipu_dnn_t *like, ipu_dnn_t **out)
{
    const norm_state_t *s = n->state;
    return ipu_dnn_batchnorm(n, &s->d, like, out);
}

/* n->state for LayerNormalization and BatchNormalization (X of rank 3 to
 * 5, not empty): BatchNormalization's primitive in our layout, which runs
 * only once the layout pass has remade it for another (the loops are
 * faster on ours); none where oneDNN has no kernel. */
static ipu_status_t norm_state(ipu_node_t *n, const ipu_value_t *x, int kind)
{
    norm_state_t *s = calloc(1, sizeof(*s));
    ipu_status_t st = IPU_OK;
    if (s == NULL)
        return ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory");
    s->dnn.res_slot = -1;
    n->state = s;
    if (kind == N_LAYER) {
        int64_t rows, len;
        layer_rows(n, x->rank, x->dims, &rows, &len);
        if (rows * len == 0)
            return IPU_OK; /* nothing to compute */
        return ipu_dnn_layernorm(n, rows, len, ipu_attr_float(n, "epsilon", 1e-5f), &s->dnn.p);
    }
    if (x->rank < 3 || x->rank > 5 || ipu_shape_numel(x->rank, x->dims) == 0)
        return IPU_OK;
    s->d = (ipu_dnn_bnorm_desc_t){.nd = x->rank - 2, .N = x->dims[0], .C = x->dims[1],
                                  .eps = ipu_attr_float(n, "epsilon", 1e-5f),
                                  .relu = ipu_attr_int(n, IPU_NORM_RELU_ATTR, 0) != 0};
    for (int j = 0; j < s->d.nd; j++)
        s->d.sp[j] = x->dims[2 + j];
    s->dnn.adopt = bn_adopt;
    st = ipu_dnn_batchnorm(n, &s->d, NULL, &s->dnn.p);
    return st == IPU_ERR_UNSUPPORTED ? IPU_OK : st; /* no oneDNN kernel: the loops */
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
    return kind == N_INSTANCE ? IPU_OK : norm_state(n, x, kind);
}

/* Where a node's own scratch starts, after the primitive's: for a
 * LayerNormalization, Scale and B expanded to the row length, then the
 * rows' mean and variance; for a BatchNormalization, each channel's factor
 * and offset (channels-last). */
static size_t own_offset(const ipu_node_t *n)
{
    return (ipu_dnn_scratch(norm_dnn(n)) + 63) / 64 * 64;
}

static size_t norm_scratch(const ipu_graph_t *g, const ipu_node_t *n)
{
    const ipu_value_t *x = ipu_node_input(g, n, 0);
    int64_t rows, len;
    /* BatchNorm: its primitive's, then each channel's factor and offset
     * (channels-last); InstanceNorm: a plane */
    if (NORM_OP(n)->kind == N_BATCH)
        return own_offset(n) + 2 * sizeof(float) * (size_t)x->dims[1];
    if (NORM_OP(n)->kind == N_INSTANCE)
        return sizeof(float) * (size_t)ipu_shape_numel(x->rank - 2, x->dims + 2);
    layer_rows(n, x->rank, x->dims, &rows, &len);
    return own_offset(n) + sizeof(float) * (size_t)(2 * len + 2 * rows);
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
    ipu_ew_apply(1, 1, p, &dst, ipu_ew_copy_row, &esz);
    return buf;
}

static ipu_status_t norm_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                             ipu_kernel_ctx_t *ctx)
{
    int kind = NORM_OP(n)->kind, axis = 1;
    float eps = ipu_attr_float(n, "epsilon", 1e-5f);
    const float *x = in[0].data;
    float *y = out[0].data, *tmp = ctx->scratch;
    if (kind == N_LAYER) {
        if (norm_dnn(n) == NULL) /* empty */
            return IPU_OK;
        ipu_status_t st = ipu_op_axis(n, ipu_attr_int(n, "axis", -1), in[0].rank, &axis);
        if (st != IPU_OK)
            return st;
        int64_t rows = ipu_shape_numel(axis, in[0].dims);
        int64_t len = ipu_shape_numel(in[0].rank - axis, in[0].dims + axis);
        if (ctx->scratch_bytes < own_offset(n) + sizeof(float) * (size_t)(2 * len + 2 * rows))
            return ipu_op_error(IPU_ERR_INTERNAL, n, "scratch too small");
        ipu_tensor_t none = {0};
        tmp = (float *)((char *)ctx->scratch + own_offset(n));
        const float *s = expand_param(&in[1], &in[0], axis, 1.0f, tmp, len);
        const float *b = expand_param(n->n_inputs > 2 ? &in[2] : &none, &in[0], axis, 0.0f,
                                      tmp + len, len);
        /* the outputs Mean and InvStdDev, or the scratch; oneDNN gives the
         * variance, InvStdDev is 1 / sqrt(var + eps) */
        float *mo = n->n_outputs > 1 && out[1].data ? out[1].data : tmp + 2 * len;
        float *io = n->n_outputs > 2 && out[2].data ? out[2].data : tmp + 2 * len + rows;
        const void *extra[4] = {s, b, mo, io};
        if ((st = ipu_dnn_exec(n, norm_dnn(n), x, extra, y, ctx)) != IPU_OK)
            return st;
        if (n->n_outputs > 2 && out[2].data)
            for (int64_t r = 0; r < rows; r++)
                io[r] = 1.0f / sqrtf(io[r] + eps);
        return IPU_OK;
    }
    int64_t N = in[0].dims[0], C = in[0].dims[1];
    int64_t S = ipu_shape_numel(in[0].rank - 2, in[0].dims + 2);
    const float *scale = in[1].data, *bias = in[2].data;
    const int relu = ipu_attr_int(n, IPU_NORM_RELU_ATTR, 0) != 0;
    if (kind == N_BATCH && ipu_dnn_channels_last_io(norm_dnn(n))) {
        /* X and Y channels-last (the layout pass's): one pass over the rows */
        const float *mean = in[3].data, *var = in[4].data;
        if (ctx->scratch_bytes < own_offset(n) + 2 * sizeof(float) * (size_t)C)
            return ipu_op_error(IPU_ERR_INTERNAL, n, "scratch too small");
        float *a = (float *)((char *)ctx->scratch + own_offset(n)), *b = a + C;
        for (int64_t c = 0; c < C; c++)
            a[c] = 1.0f / sqrtf(var[c] + eps); /* as the loop of our layout below */
        norm_factors_channels_last(C, a, b, mean, scale, bias);
        cl_norm_t p = {y, x, a, b, C, relu};
        ipu_par_rows(ctx->threads, N * S, 2 * ipu_tensor_nbytes(&out[0]), norm_rows_channels_last, &p);
        return IPU_OK;
    }
    if (kind == N_BATCH && !ipu_dnn_plain(norm_dnn(n)) && norm_dnn(n)) {
        /* in the layout pass's layout */
        const void *extra[4] = {scale, bias, in[3].data, in[4].data};
        return ipu_dnn_exec(n, norm_dnn(n), x, extra, y, ctx);
    }
    if (kind == N_BATCH) {
        const float *mean = in[3].data, *var = in[4].data;
        for (int64_t c = 0; c < C; c++) {
            float inv = 1.0f / sqrtf(var[c] + eps);
            for (int64_t b = 0; b < N; b++) {
                int64_t off = (b * C + c) * S;
                norm_row(y + off, x + off, S, mean[c], inv, scale[c], bias[c], relu);
            }
        }
        return IPU_OK;
    }
    for (int64_t b = 0; b < N; b++)
        for (int64_t c = 0; c < C; c++) {
            int64_t off = (b * C + c) * S;
            float mean, inv;
            row_stats(x + off, S, eps, tmp, &mean, &inv);
            norm_row(y + off, x + off, S, mean, inv, scale[c], bias[c], 0);
        }
    return IPU_OK;
}

#define ENTRY(NAME, SINCE, FLAGS, KIND) \
    {{"", NAME, SINCE, 17, FLAGS, norm_infer, norm_scratch, norm_run, norm_fini, NULL, NULL, NULL}, KIND}

static const norm_op_t ops[] = {
    ENTRY("BatchNormalization", 7, IPU_OP_DNN, N_BATCH),
    ENTRY("InstanceNormalization", 6, 0, N_INSTANCE),
    ENTRY("LayerNormalization", 17, 0, N_LAYER),
};

const ipu_op_t *const ipu_ops_norm[] = {&ops[0].op, &ops[1].op, &ops[2].op, NULL};
