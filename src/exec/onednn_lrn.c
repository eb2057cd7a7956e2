/* The oneDNN layer (onednn.h): local response normalization across
 * channels (LRN). */
#include "exec/onednn_impl.h"

ipu_status_t ipu_dnn_lrn(const ipu_node_t *n, const ipu_dnn_lrn_desc_t *d, const ipu_dnn_t *like,
                         ipu_dnn_t **out)
{
    ipu_status_t st = IPU_OK;
    /* across channels the spatial shape does not change the sums, but a
     * producer's layout is of its dims */
    dnnl_dims_t dims = {d->N, d->C, d->nd == 2 ? d->sp[0] : d->S, d->nd == 2 ? d->sp[1] : 1};
    dnnl_memory_desc_t data, prim;
    dnnl_lrn_desc_t desc;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    ipu_dnn_t *p = NULL;
    *out = NULL;
    /* oneDNN's window is c-(size-1)/2 .. c+(size-1)/2 for every size, and
     * its alpha is divided by size as ONNX's: the same sums for odd sizes
     * only (ONNX puts an even window's extra channel after c) */
    if (d->size < 1 || d->size % 2 == 0)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "oneDNN LRN of size %lld (odd sizes only)",
                            (long long)d->size);
    if ((st = dnn_start(n, &p)) != IPU_OK)
        goto out;
    DNN_TRY(dnnl_memory_desc_init_by_tag(&data, 4, dims, dnnl_f32, dnnl_nchw), "describing X");
    /* unchained, X as it is (our layout) */
    prim = like && dnn_same_dims(dnn_out_md(like), 4, dims) ? *dnn_out_md(like) : data;
    DNN_TRY(dnn_make_attr(1.0f, 0.0f, NULL, p, &attr), "setting the attributes");
    DNN_TRY(dnnl_lrn_forward_desc_init(&desc, dnnl_forward_inference, dnnl_lrn_across_channels,
                                       &prim, d->size, d->alpha, d->beta, d->bias),
            "describing the LRN");
    DNN_TRY(dnn_pd_create(&pd, &desc, attr),
            "choosing an LRN implementation");
    /* in a producer's layout, only where that is no slower than ours */
    if (like && dnn_pd_is_ref(pd)) {
        st = ipu_op_error(IPU_ERR_UNSUPPORTED, n, "oneDNN LRN in that layout: only the reference kernel");
        goto out;
    }
    if ((st = dnn_finish(n, p, pd)) != IPU_OK)
        goto out;
    st = dnn_plain_io(n, p, &data, &data);
out:
    return dnn_made(st, pd, attr, p, out);
}
