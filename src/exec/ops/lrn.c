/* LRN-1, LRN-13 (Operators.md), float32: local response normalization
 * across channels,
 *   Y[n, c, ...] = X[n, c, ...] / (bias + alpha / size * square_sum)^beta,
 * square_sum the sum of X[n, i, ...]^2 over the channels
 * max(0, c - floor((size-1)/2)) <= i <= min(C-1, c + ceil((size-1)/2)).
 * LRN-13 only added bfloat16, so one entry serves opsets 1..21. X has rank
 * >= 2 (N, C, any spatial dims).
 *
 * Odd sizes run on oneDNN's LRN (exec/onednn.h), whose window is the same
 * for them; an even window has its extra channel after c in ONNX but is
 * centred in oneDNN, so even sizes run on the loop here. oneDNN's LRN takes
 * part in the layout pass (dnn_chain.h): one reading a Conv's output is
 * remade (adopt) to read it in the Conv's layout, and writes Y in it. */
#include "exec/ops/dnn_chain.h"
#include "exec/ops/registry.h"

#include <math.h>
#include <stdlib.h>

typedef struct lrn_state {
    ipu_dnn_node_t dnn; /* first (IPU_OP_DNN); its p NULL for the loop here */
    ipu_dnn_lrn_desc_t d;
} lrn_state_t;

static void lrn_fini(ipu_node_t *n)
{
    lrn_state_t *s = n->state;
    if (s)
        ipu_dnn_free(s->dnn.p);
    free(s);
    n->state = NULL;
}

static ipu_status_t lrn_adopt(const ipu_node_t *n, const ipu_dnn_t *like, ipu_dnn_t **out)
{
    const lrn_state_t *s = n->state;
    return ipu_dnn_lrn(n, &s->d, like, out);
}

static ipu_status_t lrn_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x = ipu_node_input(g, n, 0);
    ipu_value_t *y = ipu_node_output(g, n, 0);
    if (x == NULL || y == NULL)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "needs input X and output Y");
    if (x->dtype != IPU_DTYPE_FLOAT)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "dtype %s is not supported (float only)",
                            ipu_dtype_name(x->dtype));
    if (x->rank < 2)
        return ipu_op_error(IPU_ERR_SHAPE, n, "X has rank %d (N, C and spatial dims: 2 or more)",
                            x->rank);
    if (ipu_attr_find(n, "size") == NULL)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "attribute size is required");
    ipu_dnn_lrn_desc_t d = {.N = x->dims[0], .C = x->dims[1], .S = 1,
                            .size = ipu_attr_int(n, "size", 0),
                            .alpha = ipu_attr_float(n, "alpha", 0.0001f),
                            .beta = ipu_attr_float(n, "beta", 0.75f),
                            .bias = ipu_attr_float(n, "bias", 1.0f)};
    if (d.size < 1)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "size %lld (must be >= 1)",
                            (long long)d.size);
    for (int i = 2; i < x->rank; i++)
        d.S *= x->dims[i];
    if (x->rank == 4) { /* else viewed as [N, C, S, 1] */
        d.nd = 2;
        d.sp[0] = x->dims[2];
        d.sp[1] = x->dims[3];
    }
    ipu_value_set_shape(y, IPU_DTYPE_FLOAT, x->rank, x->dims);
    lrn_state_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory");
    s->d = d;
    s->dnn.res_slot = -1;
    n->state = s;
    if (d.size % 2 == 0 || d.N * d.C * d.S == 0)
        return IPU_OK;
    s->dnn.adopt = lrn_adopt;
    return ipu_dnn_lrn(n, &d, NULL, &s->dnn.p);
}

static size_t lrn_scratch(const ipu_graph_t *g, const ipu_node_t *n)
{
    const lrn_state_t *s = n->state;
    return s ? ipu_dnn_scratch(s->dnn.p) : 0;
}

/* The spec's formula, plane by plane: Y's plane of channel c first holds
 * its square sum. */
static void lrn_loop(const ipu_dnn_lrn_desc_t *d, const float *x, float *y)
{
    const int64_t C = d->C, S = d->S, before = (d->size - 1) / 2, after = d->size / 2;
    const float scale = d->alpha / (float)d->size;
    for (int64_t b = 0; b < d->N; b++) {
        const float *xb = x + b * C * S;
        float *yb = y + b * C * S;
        for (int64_t c = 0; c < C; c++) {
            float *yc = yb + c * S;
            int64_t lo = c - before < 0 ? 0 : c - before;
            int64_t hi = c + after > C - 1 ? C - 1 : c + after;
            for (int64_t i = 0; i < S; i++)
                yc[i] = 0.0f;
            for (int64_t k = lo; k <= hi; k++) {
                const float *xk = xb + k * S;
                for (int64_t i = 0; i < S; i++)
                    yc[i] += xk[i] * xk[i];
            }
            const float *xc = xb + c * S;
            for (int64_t i = 0; i < S; i++)
                yc[i] = xc[i] / powf(d->bias + scale * yc[i], d->beta);
        }
    }
}

static ipu_status_t lrn_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                            ipu_kernel_ctx_t *ctx)
{
    const lrn_state_t *s = n->state;
    if (s->dnn.p)
        return ipu_dnn_exec(n, s->dnn.p, in[0].data, NULL, out[0].data, ctx);
    lrn_loop(&s->d, in[0].data, out[0].data);
    return IPU_OK;
}

static const ipu_op_t lrn_op = {
    .domain = "", .op_type = "LRN", .since_version = 1, .until_version = 21, .flags = IPU_OP_DNN,
    .infer = lrn_infer, .scratch = lrn_scratch, .run = lrn_run, .fini = lrn_fini,
};

const ipu_op_t *const ipu_ops_lrn[] = {&lrn_op, NULL};
