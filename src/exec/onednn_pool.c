/* The oneDNN layer (onednn.h): pooling (pooling_v2, which has dilations). */
#include "exec/onednn_impl.h"


static const dnnl_alg_kind_t pool_alg[] = {
    [IPU_DNN_POOL_MAX] = dnnl_pooling_max,
    [IPU_DNN_POOL_AVG_INCLUDE_PAD] = dnnl_pooling_avg_include_padding,
    [IPU_DNN_POOL_AVG_EXCLUDE_PAD] = dnnl_pooling_avg_exclude_padding,
};

ipu_status_t ipu_dnn_pool(const ipu_node_t *n, const ipu_dnn_pool_desc_t *d, const ipu_dnn_t *like,
                          ipu_dnn_t **out)
{
    ipu_status_t st = IPU_OK;
    const int nd = d->nd;
    dnnl_memory_desc_t src, dst, src_prim, dst_any;
    dnnl_dims_t sdims = {d->N, d->C}, ddims = {d->N, d->C}, strides, kernel, dil, pl, pr;
    dnnl_pooling_v2_desc_t desc;
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
        kernel[j] = d->k[j];
        dil[j] = d->d[j] - 1;
        pl[j] = d->pb[j];
        pr[j] = d->pe[j];
    }
    DNN_TRY(dnnl_memory_desc_init_by_tag(&src, nd + 2, sdims, dnnl_f32, dnn_plain_tag(nd)),
            "describing X");
    DNN_TRY(dnnl_memory_desc_init_by_tag(&dst, nd + 2, ddims, dnnl_f32, dnn_plain_tag(nd)),
            "describing Y");
    /* Y in the layout the primitive picks for X's: X's own */
    DNN_TRY(dnnl_memory_desc_init_by_tag(&dst_any, nd + 2, ddims, dnnl_f32, dnnl_format_tag_any),
            "describing Y");
    /* unchained, X as it is: oneDNN's pooling of our layout runs as fast as
     * of its own, with no reorder */
    src_prim = like && dnn_same_dims(dnn_out_md(like), nd + 2, sdims) ? *dnn_out_md(like) : src;
    DNN_TRY(dnn_make_attr(1.0f, 0.0f, NULL, p, &attr), "setting the attributes");
    DNN_TRY(dnnl_pooling_v2_forward_desc_init(&desc, dnnl_forward_inference, pool_alg[d->alg],
                                              &src_prim, &dst_any, strides, kernel, dil, pl, pr),
            "describing the pooling");
    DNN_TRY(dnn_pd_create(&pd, &desc, attr),
            "choosing a pooling implementation");
    /* the reference kernel (dilated pools) runs orders of magnitude slower
     * than the op's own loop */
    if (dnn_pd_is_ref(pd)) {
        st = ipu_op_error(IPU_ERR_UNSUPPORTED, n, "oneDNN pooling: only the reference kernel");
        goto out;
    }
    if ((st = dnn_finish(n, p, pd)) != IPU_OK)
        goto out;
    st = dnn_plain_io(n, p, &src, &dst);
out:
    return dnn_made(st, pd, attr, p, out);
}
