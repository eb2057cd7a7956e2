/* The oneDNN layer (onednn.h): layer and batch normalization, primitives
 * of one source and one destination run by ipu_dnn_exec(). */
#include "exec/onednn_impl.h"

/* A dense float32 descriptor of dims (rank 1 to DNNL_MAX_NDIMS). */
static dnnl_status_t dense_md(dnnl_memory_desc_t *md, int rank, const int64_t *dims)
{
    ipu_dnn_shape_t s = {.rank = rank};
    for (int i = 0; i < rank; i++)
        s.dims[i] = dims[i];
    ipu_dnn_shape_dense(&s);
    return dnn_md_of(&s, md);
}

/* The common part of the makers: pd from desc, the primitive, X and Y in
 * our layout (data). */
static ipu_status_t finish(const ipu_node_t *n, ipu_dnn_t *p, const void *desc,
                           const dnnl_memory_desc_t *data, dnnl_primitive_attr_t attr,
                           dnnl_primitive_desc_t *pd)
{
    ipu_status_t st = IPU_OK;
    DNN_TRY(dnn_pd_create(pd, desc, attr),
            "choosing an implementation");
    if ((st = dnn_finish(n, p, *pd)) == IPU_OK)
        st = dnn_plain_io(n, p, data, data);
out:
    return st;
}

/* p and attr (user-mode scratchpad) for a maker; the engine made. */
static ipu_status_t start(const ipu_node_t *n, ipu_dnn_t **p, dnnl_primitive_attr_t *attr)
{
    ipu_status_t st = IPU_OK;
    *attr = NULL;
    if ((st = dnn_start(n, p)) != IPU_OK)
        return st;
    DNN_TRY(dnn_make_attr(1.0f, 0.0f, NULL, *p, attr), "setting the attributes");
out:
    return st;
}

ipu_status_t ipu_dnn_layernorm(const ipu_node_t *n, int64_t rows, int64_t len, float eps,
                               ipu_dnn_t **out)
{
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_layer_normalization_desc_t desc;
    dnnl_memory_desc_t md, smd, pmd;
    ipu_dnn_t *p = NULL;
    const int64_t dims[2] = {rows, len};
    *out = NULL;
    ipu_status_t st = start(n, &p, &attr);
    if (st != IPU_OK)
        goto out;
    DNN_TRY(dense_md(&md, 2, dims), "describing X");
    DNN_TRY(dense_md(&smd, 1, &rows), "describing the statistics");
    DNN_TRY(dense_md(&pmd, 1, &len), "describing Scale");
    /* training: the statistics are outputs (Mean, InvStdDev) */
    DNN_TRY(dnnl_layer_normalization_forward_desc_init(&desc, dnnl_forward_training, &md, &smd,
                                                       eps, dnnl_use_scale | dnnl_use_shift),
            "describing the layer normalization");
    if ((st = finish(n, p, &desc, &md, attr, &pd)) != IPU_OK)
        goto out;
    dnn_add_operand(p, DNNL_ARG_SCALE, &pmd);
    dnn_add_operand(p, DNNL_ARG_SHIFT, &pmd);
    dnn_add_operand(p, DNNL_ARG_MEAN, &smd);
    dnn_add_operand(p, DNNL_ARG_VARIANCE, &smd);
out:
    return dnn_made(st, pd, attr, p, out);
}


ipu_status_t ipu_dnn_batchnorm(const ipu_node_t *n, const ipu_dnn_bnorm_desc_t *d,
                               const ipu_dnn_t *like, ipu_dnn_t **out)
{
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_batch_normalization_desc_t desc;
    dnnl_memory_desc_t plain, data, cmd;
    dnnl_dims_t dims = {d->N, d->C};
    ipu_dnn_t *p = NULL;
    const int r = d->nd + 2;
    *out = NULL;
    if (d->nd < 0 || d->nd > 3)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "%d spatial dims", d->nd);
    ipu_status_t st = start(n, &p, &attr);
    if (st != IPU_OK)
        goto out;
    for (int j = 0; j < d->nd; j++)
        dims[2 + j] = d->sp[j];
    DNN_TRY(dense_md(&plain, r, dims), "describing X");
    DNN_TRY(dense_md(&cmd, 1, &d->C), "describing the per-channel operands");
    /* X (and Y, the same layout) as like writes it, where it has X's dims */
    data = like && dnn_same_dims(dnn_out_md(like), r, dims) ? *dnn_out_md(like) : plain;
    /* inference on the running statistics (inputs); scale and shift apart;
     * a fused Relu applied to the result */
    DNN_TRY(dnnl_batch_normalization_forward_desc_init(
                &desc, dnnl_forward_inference, &data, d->eps,
                dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift |
                    (d->relu ? dnnl_fuse_norm_relu : 0)),
            "describing the batch normalization");
    DNN_TRY(dnn_pd_create(&pd, &desc, attr), "choosing an implementation");
    if ((st = dnn_finish(n, p, pd)) != IPU_OK || (st = dnn_plain_io(n, p, &plain, &plain)) != IPU_OK)
        goto out;
    dnn_add_operand(p, DNNL_ARG_SCALE, &cmd);
    dnn_add_operand(p, DNNL_ARG_SHIFT, &cmd);
    dnn_add_operand(p, DNNL_ARG_MEAN, &cmd);
    dnn_add_operand(p, DNNL_ARG_VARIANCE, &cmd);
out:
    return dnn_made(st, pd, attr, p, out);
}
