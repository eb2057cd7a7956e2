/* Conv-1, Conv-11 (Operators.md), float32, 1-D, 2-D and 3-D: pads, strides,
 * dilations, group, auto_pad, optional bias B, kernel_shape optional (taken
 * from W). Conv-11 only relaxed the attribute defaults, so one entry serves
 * opsets 1..21.
 *
 * Runs on oneDNN's convolution (exec/onednn.h): the primitive is made at
 * infer for the node's shapes and its weights are reordered into the layout
 * it prefers when a device loads the stage (load()), a copy kept beside
 * the constant and charged to the stage's weights (held()). Its activations are
 * reordered to and from our NCHW inside the op, through the scratch buffer,
 * except where the layout pass (dnn_chain.h) keeps the tensor in oneDNN's
 * layout between this node and its producer or readers.
 *
 * Fused post-ops: graph/fuse.c may fold the element-wise work that
 * consumed the output into the node (graph/fuse.h; read by fused.h): they
 * become post-ops of the primitive. A fused residual is copied (or
 * reordered) into the output before the run and added by a sum post-op.
 * A fused depthwise Conv makes Y its output; its weights are reordered at
 * load too. */
#include "exec/ops/dnn_chain.h"
#include "exec/ops/fused.h"
#include "exec/ops/registry.h"
#include "exec/ops/window.h"
#include "graph/fuse.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct conv_state {
    ipu_dnn_node_t dnn; /* first: the layout pass reads it (IPU_OP_DNN) */
} conv_state_t;

static void conv_fini(ipu_node_t *n)
{
    conv_state_t *s = n->state;
    if (s)
        ipu_dnn_free(s->dnn.p);
    free(s);
    n->state = NULL;
}

static ipu_status_t conv_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x, *wv, *b;
    ipu_value_t *y;
    ipu_status_t st = ipu_window_conv_operands(g, n, &x, &wv, &b, &y);
    if (st != IPU_OK)
        return st;
    int nd = x->rank - 2;
    int64_t group = ipu_attr_int(n, "group", 1);
    int64_t C = x->dims[1], M = wv->dims[0];
    if (group < 1)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "group %lld", (long long)group);
    if (wv->dims[1] * group != C)
        return ipu_op_error(IPU_ERR_SHAPE, n, "X has %lld channels but W expects %lld "
                            "(W dimension 1 = %lld, group %lld)", (long long)C,
                            (long long)(wv->dims[1] * group), (long long)wv->dims[1],
                            (long long)group);
    if (M % group != 0)
        return ipu_op_error(IPU_ERR_SHAPE, n, "%lld output channels not divisible by group "
                            "%lld", (long long)M, (long long)group);
    if (b && (b->rank != 1 || b->dims[0] != M))
        return ipu_op_error(IPU_ERR_SHAPE, n, "B must have shape [%lld]", (long long)M);
    size_t kc;
    const int64_t *ks = ipu_attr_ints(n, "kernel_shape", &kc);
    if (ks) {
        if (kc != (size_t)nd)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "kernel_shape has %zu values for "
                                "%d spatial dims", kc, nd);
        for (int j = 0; j < nd; j++)
            if (ks[j] != wv->dims[2 + j])
                return ipu_op_error(IPU_ERR_SHAPE, n, "kernel_shape[%d] = %lld but W has "
                                    "%lld", j, (long long)ks[j], (long long)wv->dims[2 + j]);
    }

    ipu_window_t w;
    ipu_dnn_conv_desc_t d = {.nd = nd, .N = x->dims[0], .C = C, .M = M, .group = group,
                             .has_bias = b != NULL};
    st = ipu_window_init(n, nd, x->dims + 2, wv->dims + 2, 0, &w);
    if (st != IPU_OK)
        return st;
    int64_t dims[IPU_MAX_RANK];
    dims[0] = d.N;
    dims[1] = M;
    for (int j = 0; j < nd; j++) { /* w holds the nd dims right-aligned */
        int i = IPU_WINDOW_MAX_DIMS - nd + j;
        d.in[j] = w.in[i];
        d.k[j] = w.k[i];
        d.s[j] = w.s[i];
        d.d[j] = w.d[i];
        d.pb[j] = w.pb[i];
        d.pe[j] = w.pe[i];
        d.out[j] = dims[2 + j] = w.out[i];
    }
    int dw = ipu_fused_dw_stride(n); /* Y: the fused depthwise Conv's output */
    for (int j = 0; dw > 0 && j < nd; j++)
        dims[2 + j] = (dims[2 + j] + dw - 1) / dw;
    ipu_value_set_shape(y, IPU_DTYPE_FLOAT, x->rank, dims);
    if ((st = ipu_fused_post(g, n, y, 1, x->rank, 1, &d.post)) != IPU_OK)
        return st;
    if (dw > 0 && (nd != 2 || group != 1 || d.k[0] != 1 || d.k[1] != 1 || d.s[0] != 1 || d.s[1] != 1 ||
                   d.d[0] != 1 || d.d[1] != 1 || d.pb[0] || d.pb[1] || d.pe[0] || d.pe[1]))
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "a fused depthwise Conv after a Conv that "
                            "is not 2-D pointwise (1x1, stride 1, no pads, group 1)");
    conv_state_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory");
    s->dnn.res_slot = ipu_fused_residual_input(n);
    n->state = s;
    if (ipu_shape_numel(x->rank, dims) == 0 || ipu_shape_numel(x->rank, x->dims) == 0)
        return IPU_OK; /* nothing to compute */
    return ipu_dnn_conv(n, &d, &s->dnn.p);
}

static size_t conv_scratch(const ipu_graph_t *g, const ipu_node_t *n)
{
    const conv_state_t *s = n->state;
    return s ? ipu_dnn_scratch(s->dnn.p) : 0;
}

static ipu_status_t conv_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                             ipu_kernel_ctx_t *ctx)
{
    const conv_state_t *s = n->state;
    const float *bias = n->n_inputs > 2 && n->inputs[2] >= 0 ? in[2].data : NULL;
    if (s->dnn.p == NULL) { /* an empty input: Y is empty or the bias */
        size_t bytes = (size_t)ipu_shape_numel(out[0].rank, out[0].dims) * sizeof(float);
        if (bytes)
            memset(out[0].data, 0, bytes);
        return IPU_OK;
    }
    return ipu_fused_run(n, s->dnn.p, in, bias, out[0].data, ctx);
}

static ipu_status_t conv_load(const ipu_graph_t *g, const ipu_node_t *n)
{
    const conv_state_t *s = n->state;
    const ipu_value_t *w = ipu_node_input(g, n, 1);
    ipu_status_t st = s && w ? ipu_dnn_load_weights(n, s->dnn.p, w->data) : IPU_OK;
    return st == IPU_OK && s ? ipu_fused_load(g, n, s->dnn.p) : st;
}

static size_t conv_held(const ipu_graph_t *g, const ipu_node_t *n)
{
    const conv_state_t *s = n->state;
    return s ? ipu_dnn_weights_held(s->dnn.p) : 0;
}

static int conv_inplace(const ipu_node_t *n)
{
    const conv_state_t *s = n->state;
    return s && ipu_dnn_sums_in_place(s->dnn.p) ? s->dnn.res_slot : -1;
}

static const ipu_op_t conv_op = {
    .domain = "", .op_type = "Conv", .since_version = 1, .until_version = 21,
    .flags = IPU_OP_DNN | IPU_OP_HELD_REPLACES_INPUT1,
    .infer = conv_infer, .scratch = conv_scratch, .run = conv_run, .load = conv_load,
    .held = conv_held, .fini = conv_fini, .inplace = conv_inplace,
};

const ipu_op_t *const ipu_ops_conv[] = {&conv_op, NULL};
