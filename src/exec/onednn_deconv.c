/* The oneDNN layer (onednn.h): deconvolutions (ConvTranspose). */
#include "exec/onednn_impl.h"


/* Channels per group below which the activations are asked channels-last
 * instead of in the layout oneDNN prefers: its blocked deconvolution
 * kernels pad the channels to a block (16 on AVX-512), so a group of 1 to
 * 15 channels does up to 16 times the work; channels-last pads nothing. */
#define BLOCKED_MIN_CHANNELS 16

/* ONNX's W [C, M/group, k...] as oneDNN's deconvolution weights, whose
 * logical dims are ([group,] M/group, C/group, k...): strides over our
 * bytes (the iohw / giohw layouts, any rank). */
static dnnl_status_t onnx_weights(const ipu_dnn_deconv_desc_t *d, dnnl_memory_desc_t *md)
{
    dnnl_dims_t dims, strides;
    int g = d->group > 1, r = 0, nd = d->nd;
    int64_t taps = 1, cg = d->C / d->group, mg = d->M / d->group;
    for (int j = nd - 1; j >= 0; j--) {
        dims[g + 2 + j] = d->k[j];
        strides[g + 2 + j] = taps;
        taps *= d->k[j];
    }
    if (g) {
        dims[r] = d->group;
        strides[r++] = cg * mg * taps;
    }
    dims[r] = mg; /* o: the inner of the two channel dims */
    strides[r++] = taps;
    dims[r] = cg; /* i */
    strides[r] = mg * taps;
    return dnnl_memory_desc_init_by_strides(md, g + 2 + nd, dims, dnnl_f32, strides);
}

ipu_status_t ipu_dnn_deconv(const ipu_node_t *n, const ipu_dnn_deconv_desc_t *d, ipu_dnn_t **out)
{
    ipu_status_t st = IPU_OK;
    const int nd = d->nd;
    dnnl_memory_desc_t src, wei, bias, dst, src_any, wei_any, dst_any;
    dnnl_dims_t sdims = {d->N, d->C}, ddims = {d->N, d->M}, bdims = {d->M};
    dnnl_dims_t strides, dil, pl, pr;
    dnnl_deconvolution_desc_t desc;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    ipu_dnn_t *p = NULL;
    *out = NULL;
    if (nd < 1 || nd > 3)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "%d spatial dims", nd);
    if ((st = dnn_start(n, &p)) != IPU_OK)
        goto out;
    for (int j = 0; j < nd; j++) {
        sdims[2 + j] = d->in[j];
        ddims[2 + j] = d->out[j];
        strides[j] = d->s[j];
        dil[j] = d->d[j] - 1;
        pl[j] = d->pb[j];
        pr[j] = d->pe[j];
    }
    DNN_TRY(dnnl_memory_desc_init_by_tag(&src, nd + 2, sdims, dnnl_f32, dnn_plain_tag(nd)), "describing X");
    DNN_TRY(dnnl_memory_desc_init_by_tag(&dst, nd + 2, ddims, dnnl_f32, dnn_plain_tag(nd)), "describing Y");
    DNN_TRY(onnx_weights(d, &wei), "describing W");
    DNN_TRY(dnnl_memory_desc_init_by_tag(&wei_any, wei.ndims, wei.dims, dnnl_f32,
                                         dnnl_format_tag_any),
            "describing W");
    DNN_TRY(dnnl_memory_desc_init_by_tag(&bias, 1, bdims, dnnl_f32, dnnl_a), "describing B");
    /* the activations in the layout the primitive prefers (channels-last for
     * few channels), reordered to and from ours inside the op, as for
     * convolutions */
    const int few = d->C / d->group < BLOCKED_MIN_CHANNELS || d->M / d->group < BLOCKED_MIN_CHANNELS;
    const dnnl_format_tag_t act_any = few ? dnn_channels_last_tag(nd) : dnnl_format_tag_any;
    DNN_TRY(dnnl_memory_desc_init_by_tag(&src_any, nd + 2, sdims, dnnl_f32, act_any), "describing X");
    DNN_TRY(dnnl_memory_desc_init_by_tag(&dst_any, nd + 2, ddims, dnnl_f32, act_any), "describing Y");
    DNN_TRY(dnn_make_attr(1.0f, 0.0f, NULL, p, &attr), "setting the attributes");
    DNN_TRY(dnnl_dilated_deconvolution_forward_desc_init(
                &desc, dnnl_forward_inference, dnnl_deconvolution_direct, &src_any, &wei_any,
                d->has_bias ? &bias : NULL, &dst_any, strides, dil, pl, pr),
            "describing the deconvolution");
    DNN_TRY(dnn_pd_create(&pd, &desc, attr),
            "choosing a deconvolution implementation");
    p->held[DNN_W].user = wei;
    if ((st = dnn_finish(n, p, pd)) != IPU_OK)
        goto out;
    p->held[DNN_W].reorder = !dnnl_memory_desc_equal(&p->held[DNN_W].md, &wei);
    st = dnn_plain_io(n, p, &src, &dst);
out:
    return dnn_made(st, pd, attr, p, out);
}
