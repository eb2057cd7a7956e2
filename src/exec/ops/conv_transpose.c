/* ConvTranspose-1, ConvTranspose-11 (Operators.md), float32, 1-D, 2-D and
 * 3-D: strides, dilations, group, pads, auto_pad, output_padding,
 * output_shape, optional bias B, kernel_shape optional (taken from W).
 * ConvTranspose-11 only relaxed the attribute defaults, so one entry serves
 * opsets 1..21.
 *
 * Output size per spatial dim i, with the full extent
 * full = strides*(in-1) + output_padding + (kernel-1)*dilations + 1:
 *   - output_shape given: that size; the total padding full - output_shape
 *     is split with floor(total/2) at the beginning for auto_pad SAME_UPPER
 *     and at the end otherwise (the spec's formula; pads are ignored);
 *   - auto_pad SAME_UPPER / SAME_LOWER: in * strides, split the same way;
 *   - else full - pads_begin - pads_end (pads 0 for VALID).
 * output_padding adds outputs at the end that only the bias reaches.
 *
 * Runs on oneDNN's deconvolution (exec/onednn.h), made at infer for the
 * node's shapes; as for Conv (conv.c) its weights are reordered into the
 * layout it prefers when a device loads the stage (load(), held()), and its
 * X and Y stay in the primitive's layouts where the layout pass
 * (dnn_chain.h) keeps them so. */
#include "exec/ops/dnn_chain.h"
#include "exec/ops/registry.h"
#include "exec/ops/window.h"

#include <stdlib.h>
#include <string.h>

typedef struct ct_state {
    ipu_dnn_node_t dnn; /* first: the layout pass reads it (IPU_OP_DNN) */
} ct_state_t;

static void ct_fini(ipu_node_t *n)
{
    ct_state_t *s = n->state;
    if (s)
        ipu_dnn_free(s->dnn.p);
    free(s);
    n->state = NULL;
}

/* The spatial geometry of d (in and k set) from n's attributes. */
static ipu_status_t ct_geometry(const ipu_node_t *n, ipu_dnn_deconv_desc_t *d)
{
    const int nd = d->nd;
    int64_t op[3], pads[6];
    size_t cnt;
    ipu_auto_pad_t mode;
    ipu_status_t st;
    if ((st = ipu_window_ints(n, "strides", (size_t)nd, 1, 1, d->s)) != IPU_OK ||
        (st = ipu_window_ints(n, "dilations", (size_t)nd, 1, 1, d->d)) != IPU_OK ||
        (st = ipu_window_ints(n, "pads", 2 * (size_t)nd, 0, 0, pads)) != IPU_OK ||
        (st = ipu_window_ints(n, "output_padding", (size_t)nd, 0, 0, op)) != IPU_OK ||
        (st = ipu_window_auto_pad(n, &mode)) != IPU_OK)
        return st;
    /* output_shape: the spatial sizes, or (as some exporters write it) N, M
     * and the spatial sizes */
    const int64_t *os = ipu_attr_ints(n, "output_shape", &cnt);
    if (os && cnt == (size_t)nd + 2) {
        if (os[0] != d->N || os[1] != d->M)
            return ipu_op_error(IPU_ERR_SHAPE, n, "output_shape starts with %lld, %lld but Y "
                                "has N = %lld, M = %lld", (long long)os[0], (long long)os[1],
                                (long long)d->N, (long long)d->M);
        os += 2;
    } else if (os && cnt != (size_t)nd) {
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "output_shape has %zu values for %d "
                            "spatial dims", cnt, nd);
    }
    for (int j = 0; j < nd; j++) {
        int64_t full = d->s[j] * (d->in[j] - 1) + op[j] + (d->k[j] - 1) * d->d[j] + 1;
        if (os || mode == IPU_AUTO_PAD_SAME_UPPER || mode == IPU_AUTO_PAD_SAME_LOWER) {
            int64_t out = os ? os[j] : d->in[j] * d->s[j];
            int64_t total = full - out;
            /* floor division, as the spec's (Python) formula: a negative
             * total (output_shape past the full extent) is negative end
             * padding for NOTSET, as output_padding would be */
            int64_t small = total >= 0 ? total / 2 : -((1 - total) / 2), big = total - small;
            d->pb[j] = mode == IPU_AUTO_PAD_SAME_UPPER ? small : big;
            d->pe[j] = mode == IPU_AUTO_PAD_SAME_UPPER ? big : small;
        } else {
            d->pb[j] = mode == IPU_AUTO_PAD_VALID ? 0 : pads[j];
            d->pe[j] = mode == IPU_AUTO_PAD_VALID ? 0 : pads[j + nd];
        }
        d->out[j] = full - d->pb[j] - d->pe[j];
        d->pe[j] -= op[j]; /* the outputs past the full extent: negative padding */
        if (d->out[j] < 1)
            return ipu_op_error(IPU_ERR_SHAPE, n, "empty output along spatial dimension %d "
                                "(input %lld, full extent %lld, padding %lld+%lld)", j,
                                (long long)d->in[j], (long long)full, (long long)d->pb[j],
                                (long long)(d->pe[j] + op[j]));
        if (d->pb[j] < 0 || d->pe[j] <= -d->s[j])
            return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "spatial dimension %d: pads %lld+%lld "
                                "(from output_shape, output_padding or auto_pad) are not "
                                "supported: the output may start no earlier than the full "
                                "result and end at most stride-1 past it", j,
                                (long long)d->pb[j], (long long)(d->pe[j] + op[j]));
    }
    return IPU_OK;
}

static ipu_status_t ct_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x, *wv, *b;
    ipu_value_t *y;
    ipu_status_t st = ipu_window_conv_operands(g, n, &x, &wv, &b, &y);
    if (st != IPU_OK)
        return st;
    int nd = x->rank - 2;
    int64_t group = ipu_attr_int(n, "group", 1), C = x->dims[1];
    if (group < 1)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "group %lld", (long long)group);
    if (wv->dims[0] != C || C % group != 0)
        return ipu_op_error(IPU_ERR_SHAPE, n, "X has %lld channels, W [C, M/group, k...] has "
                            "%lld (group %lld)", (long long)C, (long long)wv->dims[0],
                            (long long)group);
    ipu_dnn_deconv_desc_t d = {.nd = nd, .N = x->dims[0], .C = C, .M = wv->dims[1] * group,
                               .group = group, .has_bias = b != NULL};
    if (b && (b->rank != 1 || b->dims[0] != d.M))
        return ipu_op_error(IPU_ERR_SHAPE, n, "B must have shape [%lld]", (long long)d.M);
    size_t kc;
    const int64_t *ks = ipu_attr_ints(n, "kernel_shape", &kc);
    if (ks && kc != (size_t)nd)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "kernel_shape has %zu values for %d "
                            "spatial dims", kc, nd);
    for (int j = 0; j < nd; j++) {
        d.in[j] = x->dims[2 + j];
        d.k[j] = wv->dims[2 + j];
        if (ks && ks[j] != d.k[j])
            return ipu_op_error(IPU_ERR_SHAPE, n, "kernel_shape[%d] = %lld but W has %lld", j,
                                (long long)ks[j], (long long)d.k[j]);
        if (d.k[j] < 1 || d.in[j] < 1)
            return ipu_op_error(IPU_ERR_SHAPE, n, "spatial dimension %d: input %lld, kernel "
                                "%lld (both must be >= 1)", j, (long long)d.in[j],
                                (long long)d.k[j]);
    }
    st = ct_geometry(n, &d);
    if (st != IPU_OK)
        return st;
    int64_t dims[IPU_MAX_RANK] = {d.N, d.M};
    for (int j = 0; j < nd; j++)
        dims[2 + j] = d.out[j];
    ipu_value_set_shape(y, IPU_DTYPE_FLOAT, x->rank, dims);
    ct_state_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory");
    s->dnn.res_slot = -1;
    n->state = s;
    if (ipu_shape_numel(x->rank, dims) == 0 || ipu_shape_numel(x->rank, x->dims) == 0)
        return IPU_OK; /* nothing to compute */
    return ipu_dnn_deconv(n, &d, &s->dnn.p);
}

static size_t ct_scratch(const ipu_graph_t *g, const ipu_node_t *n)
{
    const ct_state_t *s = n->state;
    return s ? ipu_dnn_scratch(s->dnn.p) : 0;
}

static ipu_status_t ct_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                           ipu_kernel_ctx_t *ctx)
{
    const ct_state_t *s = n->state;
    const float *bias = n->n_inputs > 2 ? in[2].data : NULL;
    if (s->dnn.p == NULL) { /* an empty input (N or C is 0): Y is empty or the bias */
        int64_t M = out[0].dims[1], plane = 1;
        for (int i = 2; i < out[0].rank; i++)
            plane *= out[0].dims[i];
        float *y = out[0].data;
        for (int64_t i = 0; i < ipu_shape_numel(out[0].rank, out[0].dims); i++)
            y[i] = bias ? bias[i / plane % M] : 0.0f;
        return IPU_OK;
    }
    return ipu_dnn_run(n, s->dnn.p, in[0].data, in[1].data, bias, NULL, NULL, out[0].data, ctx);
}

static ipu_status_t ct_load(const ipu_graph_t *g, const ipu_node_t *n)
{
    const ct_state_t *s = n->state;
    const ipu_value_t *w = ipu_node_input(g, n, 1);
    return s && w ? ipu_dnn_load_weights(n, s->dnn.p, w->data) : IPU_OK;
}

static size_t ct_held(const ipu_graph_t *g, const ipu_node_t *n)
{
    const ct_state_t *s = n->state;
    return s ? ipu_dnn_weights_held(s->dnn.p) : 0;
}

static const ipu_op_t conv_transpose_op = {
    .domain = "", .op_type = "ConvTranspose", .since_version = 1, .until_version = 21,
    .flags = IPU_OP_DNN | IPU_OP_HELD_REPLACES_INPUT1, .infer = ct_infer, .scratch = ct_scratch, .run = ct_run, .load = ct_load,
    .held = ct_held, .fini = ct_fini,
};

const ipu_op_t *const ipu_ops_conv_transpose[] = {&conv_transpose_op, NULL};
