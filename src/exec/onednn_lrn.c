/* The oneDNN layer (onednn.h): local response normalization across
 * channels (LRN). */
#include "exec/onednn_impl.h"

ipu_status_t ipu_dnn_lrn(const ipu_node_t *n, const ipu_dnn_lrn_desc_t *d, ipu_dnn_t **out)
{
    ipu_status_t st = IPU_OK;
    /* [N, C, S, 1]: across channels, the spatial shape does not matter */
    dnnl_dims_t dims = {d->N, d->C, d->S, 1};
    dnnl_memory_desc_t data;
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
    DNN_TRY(dnn_make_attr(1.0f, 0.0f, NULL, p, &attr), "setting the attributes");
    DNN_TRY(dnnl_lrn_forward_desc_init(&desc, dnnl_forward_inference, dnnl_lrn_across_channels,
                                       &data, d->size, d->alpha, d->beta, d->bias),
            "describing the LRN");
    DNN_TRY(dnn_pd_create(&pd, &desc, attr),
            "choosing an LRN implementation");
    if ((st = dnn_finish(n, p, pd)) != IPU_OK)
        goto out;
    st = dnn_plain_io(n, p, &data, &data);
out:
    return dnn_made(st, pd, attr, p, out);
}
