/* The oneDNN layer (onednn.h): element-wise binary ops (binary primitive). */
#include "exec/onednn_impl.h"

#include <string.h>

static const dnnl_alg_kind_t binary_alg[] = {
    [IPU_DNN_BINARY_ADD] = dnnl_binary_add,
    [IPU_DNN_BINARY_SUB] = dnnl_binary_sub,
    [IPU_DNN_BINARY_MUL] = dnnl_binary_mul,
    [IPU_DNN_BINARY_DIV] = dnnl_binary_div,
};

/* B (dims b) described in the dim order of A's layout a (dense, no inner
 * blocks), where that addresses B's elements as ours does: oneDNN's
 * kernels run faster with both operands in one order. Else B as ours. */
static dnnl_status_t b_md_like(const dnnl_memory_desc_t *a, const ipu_dnn_shape_t *b,
                               dnnl_memory_desc_t *out)
{
    ipu_dnn_shape_t s = *b;
    int order[IPU_MAX_RANK], r = b->rank;
    const dnnl_dims_t *as = &a->format_desc.blocking.strides;
    for (int i = 0; i < r; i++) /* outermost first: by A's stride, then index */
        order[i] = i;
    for (int i = 1; i < r; i++)
        for (int j = i; j > 0 && (*as)[order[j]] > (*as)[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    int64_t st = 1;
    for (int k = r - 1; k >= 0; k--) {
        s.strides[order[k]] = st;
        st *= b->dims[order[k]];
    }
    for (int i = 0; i < r; i++)
        if (b->dims[i] > 1 && s.strides[i] != b->strides[i])
            return dnn_md_of(b, out);
    return dnn_md_of(&s, out);
}

/* B's descriptor for A read in layout a (ours: src): where a is blocked
 * on the channels, only a B of A's channels and 1 elsewhere but the batch
 * (a per-channel scale, as a squeeze-and-excitation block's), described in
 * a's blocking, which addresses such a B as ours does (oneDNN 2.6 has only
 * its reference kernel for a blocked A with a B in another layout); B of
 * A's dims is read across a blocked A by no kernel of ours either. */
static ipu_status_t b_md_for(const ipu_node_t *n, const dnnl_memory_desc_t *a,
                             const dnnl_memory_desc_t *src, const ipu_dnn_shape_t *bs, int64_t na,
                             int64_t nb, dnnl_memory_desc_t *out)
{
    ipu_status_t st = IPU_OK;
    if (dnnl_memory_desc_equal(a, src) ||
        (a->format_kind == dnnl_blocked && a->format_desc.blocking.inner_nblks == 0 && nb != na)) {
        DNN_TRY(b_md_like(a, bs, out), "describing B");
        return IPU_OK;
    }
    const int blk = dnn_channel_blocked(a);
    int per_channel = blk > 0 && bs->rank >= 3 && bs->dims[1] == a->dims[1];
    for (int i = 2; i < bs->rank && per_channel; i++)
        per_channel = bs->dims[i] == 1;
    if (!per_channel)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "oneDNN binary: A in a blocked layout, B not "
                            "one value per channel");
    dnnl_dims_t dims;
    for (int i = 0; i < bs->rank; i++)
        dims[i] = bs->dims[i];
    DNN_TRY(dnnl_memory_desc_init_by_tag(out, bs->rank, dims, dnnl_f32,
                                         dnn_blocked_tag(bs->rank - 2, blk)),
            "describing B");
out:
    return st;
}

ipu_status_t ipu_dnn_binary(const ipu_node_t *n, const ipu_dnn_binary_desc_t *d,
                            const ipu_dnn_t *like, ipu_dnn_t **out)
{
    ipu_status_t st = IPU_OK;
    ipu_dnn_shape_t as = {.rank = d->rank}, bs = {.rank = d->rank};
    dnnl_memory_desc_t src, src_prim, b_md, dst, dst_any;
    dnnl_binary_desc_t desc;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    ipu_dnn_t *p = NULL;
    int64_t na = 1, nb = 1;
    *out = NULL;
    if (d->rank < 1 || d->rank > 6)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "rank %d", d->rank);
    for (int i = 0; i < d->rank; i++) {
        as.dims[i] = d->a[i];
        bs.dims[i] = d->b[i];
        na *= d->a[i];
        nb *= d->b[i];
    }
    ipu_dnn_shape_dense(&as);
    ipu_dnn_shape_dense(&bs);
    if ((st = dnn_start(n, &p)) != IPU_OK)
        goto out;
    DNN_TRY(dnn_md_of(&as, &src), "describing A");
    dst = src;
    src_prim = like && dnn_same_dims(dnn_out_md(like), d->rank, d->a) ? *dnn_out_md(like) : src;
    if ((st = b_md_for(n, &src_prim, &src, &bs, na, nb, &b_md)) != IPU_OK)
        goto out;
    /* Y in the layout the primitive picks for A's: A's own */
    {
        dnnl_dims_t dims;
        for (int i = 0; i < d->rank; i++)
            dims[i] = d->a[i];
        DNN_TRY(dnnl_memory_desc_init_by_tag(&dst_any, d->rank, dims, dnnl_f32,
                                             dnnl_format_tag_any), "describing Y");
    }
    DNN_TRY(dnn_make_attr(1.0f, 0.0f, NULL, p, &attr), "setting the attributes");
    DNN_TRY(dnnl_binary_desc_init(&desc, binary_alg[d->alg], &src_prim, &b_md, &dst_any),
            "describing the binary op");
    DNN_TRY(dnn_pd_create(&pd, &desc, attr), "choosing a binary implementation");
    /* the reference kernel runs orders of magnitude slower than ours */
    if (dnn_pd_is_ref(pd)) {
        st = ipu_op_error(IPU_ERR_UNSUPPORTED, n, "oneDNN binary: only the reference kernel");
        goto out;
    }
    dnn_add_operand(p, DNNL_ARG_SRC_1, &b_md);
    if ((st = dnn_finish(n, p, pd)) != IPU_OK)
        goto out;
    st = dnn_plain_io(n, p, &src, &dst);
out:
    return dnn_made(st, pd, attr, p, out);
}
