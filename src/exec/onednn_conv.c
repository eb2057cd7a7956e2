/* The oneDNN layer (onednn.h): convolutions. */
#include "exec/onednn_impl.h"

#include "common/log.h"

#include <stdlib.h>

static const dnnl_format_tag_t wei_tag[4] = {dnnl_format_tag_undef, dnnl_oiw, dnnl_oihw, dnnl_oidhw};
static const dnnl_format_tag_t gwei_tag[4] = {dnnl_format_tag_undef, dnnl_goiw, dnnl_goihw,
                                              dnnl_goidhw};

/* Channels below which Winograd is not asked for: oneDNN's Winograd kernels
 * work on blocks of 16 channels (one AVX-512 vector), padding the rest, so
 * with 3 input channels (an image) its GEMMs do 16/3 times the work, more
 * than the 2.25x fewer multiplies of F(2x2, 3x3) save. */
#define WINOGRAD_MIN_CHANNELS 16

/* Whether to ask for Winograd first: a 2-D 3x3 kernel, stride 1, no
 * dilation, no groups, at least a block of input and output channels,
 * unless IPU_EXEC_WINOGRAD=0 (on any rank of a pipelined run). */
static int winograd_candidate(const ipu_dnn_conv_desc_t *d)
{
    if (!ipu_dnn_winograd() || d->nd != 2 || d->group != 1 || d->C < WINOGRAD_MIN_CHANNELS ||
        d->M < WINOGRAD_MIN_CHANNELS)
        return 0;
    for (int j = 0; j < 2; j++)
        if (d->k[j] != 3 || d->s[j] != 1 || d->d[j] != 1)
            return 0;
    return 1;
}

/* What the Winograd convolution desc would take on direct kernels instead
 * (its weights, held in their layout or ours, and its scratchpad), into p
 * for ipu_dnn_winograd_bytes() and ipu_dnn_scratch_direct(); nothing is
 * known when no direct implementation is found. */
static void direct_alternative(ipu_dnn_t *p, dnnl_convolution_desc_t *desc, const_dnnl_primitive_attr_t attr,
                               const dnnl_memory_desc_t *wei)
{
    dnnl_primitive_desc_t pd = NULL;
    desc->alg_kind = dnnl_convolution_direct;
    if (dnn_pd_probe(&pd, desc, attr) == dnnl_success) {
        const dnnl_memory_desc_t *w = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
        int ours = w == NULL || dnnl_memory_desc_equal(w, wei); /* held: no copy, ours charged */
        p->direct_wei_bytes = ours ? dnnl_memory_desc_get_size(wei) : dnn_align64(dnnl_memory_desc_get_size(w));
        p->direct_pad_bytes = dnn_pd_scratch(pd);
        p->direct_known = 1;
        dnnl_primitive_desc_destroy(pd);
    }
    desc->alg_kind = dnnl_convolution_winograd;
}

ipu_status_t ipu_dnn_conv(const ipu_node_t *n, const ipu_dnn_conv_desc_t *d, ipu_dnn_t **out)
{
    ipu_status_t st = IPU_OK;
    const int nd = d->nd;
    dnnl_memory_desc_t src, wei, bias, dst, src_any, wei_any, dst_any;
    dnnl_dims_t sdims = {d->N, d->C}, ddims = {d->N, d->M}, wdims, bdims = {d->M};
    dnnl_dims_t strides, dil, pl, pr;
    dnnl_convolution_desc_t desc;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    ipu_dnn_t *p = NULL;
    *out = NULL;
    if (nd < 1 || nd > 3)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "%d spatial dims", nd);
    if ((st = dnn_start(n, &p)) != IPU_OK)
        goto out;
    int g = d->group > 1, wr = 0;
    if (g)
        wdims[wr++] = d->group;
    wdims[wr++] = d->M / d->group;
    wdims[wr++] = d->C / d->group;
    for (int j = 0; j < nd; j++) {
        sdims[2 + j] = d->in[j];
        ddims[2 + j] = d->out[j];
        wdims[wr++] = d->k[j];
        strides[j] = d->s[j];
        dil[j] = d->d[j] - 1;
        pl[j] = d->pb[j];
        pr[j] = d->pe[j];
    }
    dnnl_dims_t ydims; /* Y's: after the depthwise post-op where one is fused */
    for (int j = 0; j < nd + 2; j++) {
        int64_t s = d->post.dw_stride;
        ydims[j] = j >= 2 && s > 0 ? (ddims[j] + s - 1) / s : ddims[j];
    }
    DNN_TRY(dnnl_memory_desc_init_by_tag(&src, nd + 2, sdims, dnnl_f32, dnn_plain_tag(nd)), "describing X");
    DNN_TRY(dnnl_memory_desc_init_by_tag(&dst, nd + 2, ydims, dnnl_f32, dnn_plain_tag(nd)), "describing Y");
    DNN_TRY(dnnl_memory_desc_init_by_tag(&wei, wr, wdims, dnnl_f32, g ? gwei_tag[nd] : wei_tag[nd]),
            "describing W");
    DNN_TRY(dnnl_memory_desc_init_by_tag(&bias, 1, bdims, dnnl_f32, dnnl_a), "describing B");
    DNN_TRY(dnnl_memory_desc_init_by_tag(&wei_any, wr, wdims, dnnl_f32, dnnl_format_tag_any),
            "describing W");
    /* oneDNN 2.6's fused depthwise kernel reads the depthwise bias only
     * where the convolution has one too (jit_*_1x1_convolution.cpp: "if
     * (bias) par_conv_dw.bias = ..."), else an unset pointer: give it
     * zeros */
    const int zero_bias = !d->has_bias && d->post.dw_bias;
    if (zero_bias && (p->zero_bias = calloc((size_t)d->M, sizeof(float))) == NULL) {
        st = ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory");
        goto out;
    }
    /* the activations in the layout the primitive prefers (or the blocked
     * one, ipu_dnn_layout()), reordered to and from ours inside the op
     * unless ipu_dnn_set_chain() says otherwise: faster than the
     * primitives that take plain NCHW (pointwise ones included, once
     * chained) */
    DNN_TRY(dnn_make_attr(1.0f, 0.0f, &d->post, p, &attr), "setting the attributes");
    int got_blocked = 0;
    for (int blocked = ipu_dnn_layout() == IPU_DNN_LAYOUT_BLOCKED; blocked >= 0 && pd == NULL;
         blocked--) {
        /* blocked: an image's few channels (under a block) are read as
         * they are, by oneDNN's first-convolution kernel */
        const int bs = dnn_channel_block();
        dnnl_format_tag_t xt = !blocked ? dnnl_format_tag_any
                               : d->C < bs ? dnn_plain_tag(nd) : dnn_blocked_tag(nd, bs),
                          yt = blocked ? dnn_blocked_tag(nd, bs) : dnnl_format_tag_any;
        DNN_TRY(dnnl_memory_desc_init_by_tag(&src_any, nd + 2, sdims, dnnl_f32, xt), "describing X");
        DNN_TRY(dnnl_memory_desc_init_by_tag(&dst_any, nd + 2, ddims, dnnl_f32, yt), "describing Y");
        /* Winograd first where it may apply (oneDNN has it for 3x3
         * stride-1 kernels on AVX-512 CPUs, with some post-ops), else
         * direct: the choice depends only on the shapes, the attributes,
         * the CPU's ISA and the agreed layout, so every rank on the same
         * ISA makes the same one; a blocked request with no kernel but the
         * reference one is asked again in oneDNN's layout */
        for (int a = winograd_candidate(d) ? 0 : 1; a < 2 && pd == NULL; a++) {
            DNN_TRY(dnnl_dilated_convolution_forward_desc_init(
                        &desc, dnnl_forward_inference,
                        a == 0 ? dnnl_convolution_winograd : dnnl_convolution_direct, &src_any,
                        &wei_any, d->has_bias || zero_bias ? &bias : NULL, &dst_any, strides,
                        dil, pl, pr),
                    "describing the convolution");
            dnnl_status_t s = dnn_pd_create(&pd, &desc, attr);
            if (s != dnnl_success && !blocked && (a == 1 || s != dnnl_unimplemented))
                DNN_TRY(s, "choosing a convolution implementation");
            if (s != dnnl_success)
                pd = NULL;
            else if (blocked && dnn_pd_is_ref(pd)) {
                dnnl_primitive_desc_destroy(pd);
                pd = NULL;
            } else {
                got_blocked = blocked;
                if ((p->winograd = a == 0))
                    direct_alternative(p, &desc, attr, &wei);
            }
        }
    }
    if (pd)
        ipu_debug("node '%s' (%s): activations in %s", n->name, n->op_type,
                  got_blocked ? "oneDNN's channel-blocked layout" : "the layout its kernel prefers");
    p->held[DNN_W].user = wei;
    if ((st = dnn_finish(n, p, pd)) != IPU_OK)
        goto out;
    /* W held too where the depthwise weights are: a stage frees the
     * weights (input 1) of an op that holds a copy (IPU_OP_HELD_REPLACES_INPUT1) */
    p->held[DNN_W].reorder = !dnnl_memory_desc_equal(&p->held[DNN_W].md, &wei) ||
                             p->held[DNN_W_DW].reorder;
    if ((st = dnn_plain_io(n, p, &src, &dst)) == IPU_OK)
        st = dnn_residual_io(n, p);
out:
    return dnn_made(st, pd, attr, p, out);
}
