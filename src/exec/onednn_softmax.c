/* The oneDNN layer (onednn.h): softmax and log-softmax (softmax_v2). */
#include "exec/onednn_impl.h"

ipu_status_t ipu_dnn_softmax(const ipu_node_t *n, const ipu_dnn_softmax_desc_t *d,
                             ipu_dnn_t **out)
{
    ipu_status_t st = IPU_OK;
    /* the axis innermost when it is (no inner dim): oneDNN's vectorised
     * kernels want it there */
    const dnnl_dims_t dims = {d->outer, d->len, d->inner};
    const int rank = d->inner == 1 ? 2 : 3;
    dnnl_memory_desc_t plain, prim;
    dnnl_softmax_v2_desc_t desc;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    ipu_dnn_t *p = NULL;
    *out = NULL;
    if ((st = dnn_start(n, &p)) != IPU_OK)
        goto out;
    DNN_TRY(dnnl_memory_desc_init_by_tag(&plain, rank, dims, dnnl_f32, rank == 2 ? dnnl_ab : dnnl_abc),
            "describing X");
    /* an inner dim: the primitive on [outer, inner, len] (its jit kernels
     * want the axis contiguous; along a strided one it has only its
     * reference kernel), X and Y reordered to and from it inside the op */
    if (rank == 3)
        DNN_TRY(dnnl_memory_desc_init_by_tag(&prim, 3, dims, dnnl_f32, dnnl_acb), "describing X");
    else
        prim = plain;
    DNN_TRY(dnn_make_attr(1.0f, 0.0f, NULL, p, &attr), "setting the attributes");
    DNN_TRY(dnnl_softmax_v2_forward_desc_init(&desc, dnnl_forward_inference,
                                              d->log ? dnnl_softmax_log : dnnl_softmax_accurate,
                                              &prim, &prim, 1),
            "describing the softmax");
    DNN_TRY(dnn_pd_create(&pd, &desc, attr), "choosing a softmax implementation");
    if (dnn_pd_is_ref(pd)) {
        st = ipu_op_error(IPU_ERR_UNSUPPORTED, n, "oneDNN softmax: only the reference kernel");
        goto out;
    }
    if ((st = dnn_finish(n, p, pd)) != IPU_OK)
        goto out;
    st = dnn_plain_io(n, p, &plain, &plain);
out:
    return dnn_made(st, pd, attr, p, out);
}
