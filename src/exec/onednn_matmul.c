/* The oneDNN layer (onednn.h): MatMul and Gemm as oneDNN's matmul; a
 * constant B in the layout the primitive prefers (reordered at load). */
#include "exec/onednn_impl.h"

ipu_status_t ipu_dnn_matmul(const ipu_node_t *n, const ipu_dnn_matmul_desc_t *d, ipu_dnn_t **out)
{
    ipu_status_t st = IPU_OK;
    dnnl_memory_desc_t a, b, b_any, y, bias;
    dnnl_matmul_desc_t desc;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    ipu_dnn_t *p = NULL;
    *out = NULL;
    if ((st = dnn_start(n, &p)) != IPU_OK)
        goto out;
    DNN_TRY(dnn_md_of(&d->a, &a), "describing A");
    DNN_TRY(dnn_md_of(&d->b, &b), "describing B");
    b_any = b;
    if (d->const_b) { /* constant weights: the layout the primitive prefers */
        dnnl_dims_t dims;
        for (int i = 0; i < d->b.rank; i++)
            dims[i] = d->b.dims[i];
        DNN_TRY(dnnl_memory_desc_init_by_tag(&b_any, d->b.rank, dims, dnnl_f32, dnnl_format_tag_any),
                "describing B");
    }
    DNN_TRY(dnn_md_of(&d->y, &y), "describing Y");
    if (d->has_bias)
        DNN_TRY(dnn_md_of(&d->bias, &bias), "describing the bias");
    DNN_TRY(dnnl_matmul_desc_init(&desc, &a, &b_any, d->has_bias ? &bias : NULL, &y),
            "describing the matmul");
    DNN_TRY(dnn_make_attr(d->alpha, d->sum, &d->post, p, &attr), "setting the attributes");
    DNN_TRY(dnn_pd_create(&pd, &desc, attr),
            "choosing a matmul implementation");
    p->src_user = a;
    p->held[DNN_W].user = b;
    p->dst_user = y;
    if ((st = dnn_finish(n, p, pd)) == IPU_OK) {
        p->held[DNN_W].reorder = !dnnl_memory_desc_equal(&p->held[DNN_W].md, &b);
        st = dnn_residual_io(n, p);
    }
out:
    return dnn_made(st, pd, attr, p, out);
}
