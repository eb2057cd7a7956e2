/* The oneDNN layer (onednn.h): concatenation on the channels (oneDNN's
 * concat primitive), reading each source in the layout its producer
 * writes, so that a chain of primitives keeps oneDNN's layout through a
 * Concat. */
#include "exec/onednn_impl.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* The sources' descriptors and the memory objects of the thread that ran
 * the concat first (its token in owner; the runs of other threads make
 * their own). */
struct dnn_concat {
    int n_src;
    dnnl_memory_desc_t *md; /* n_src */
    _Atomic uintptr_t owner;
    dnnl_exec_arg_t *arg; /* the sources, Y, the scratchpad (if any) */
    const void **at;      /* the buffer each points to */
    int n_arg;            /* made (0: none yet) */
};

void dnn_concat_free(struct dnn_concat *c)
{
    if (c == NULL)
        return;
    for (int i = 0; i < c->n_arg; i++)
        dnnl_memory_destroy(c->arg[i].memory);
    free(c->arg);
    free(c->at);
    free(c->md);
    free(c);
}

int dnn_concat_sources_channels_last(const struct dnn_concat *c)
{
    for (int k = 0; k < c->n_src; k++)
        if (!dnn_is_channels_last(&c->md[k]))
            return 0;
    return 1;
}

int ipu_dnn_concat_blocked_io(const ipu_dnn_t *p)
{
    if (p == NULL || p->cat == NULL || !p->chain_dst)
        return 0;
    const int bs = dnn_channel_blocked(&p->dst_md);
    for (int k = 0; k < p->cat->n_src && bs; k++)
        if (dnn_channel_blocked(&p->cat->md[k]) != bs)
            return 0;
    return bs;
}

/* The layouts a source may be in, for nd spatial dims (1 to 3): ours (t
 * 0), channels-last (1), oneDNN's channel-blocked ones of 16, 8 and 4
 * channels (2 to 4). */
enum { N_TAGS = 5 };
static dnnl_format_tag_t layout_tag(int nd, int t)
{
    return t == 0 ? dnn_plain_tag(nd) : t == 1 ? dnn_channels_last_tag(nd)
                                               : dnn_blocked_tag(nd, 16 >> (t - 2));
}

/* The tag of md among layout_tag(nd, ...) (md has nd + 2 dims), or
 * dnnl_format_tag_undef when it is none of them. */
static dnnl_format_tag_t tag_of(const dnnl_memory_desc_t *md, int nd)
{
    for (int t = 0; t < N_TAGS; t++) {
        dnnl_memory_desc_t m;
        if (dnnl_memory_desc_init_by_tag(&m, md->ndims, md->dims, dnnl_f32, layout_tag(nd, t)) ==
                dnnl_success &&
            dnnl_memory_desc_equal(&m, md))
            return layout_tag(nd, t);
    }
    return dnnl_format_tag_undef;
}

ipu_status_t ipu_dnn_concat(const ipu_node_t *n, const ipu_dnn_concat_desc_t *d,
                            const ipu_dnn_t *const *like, ipu_dnn_t **out)
{
    ipu_status_t st = IPU_OK;
    const int nd = d->nd, r = nd + 2;
    dnnl_memory_desc_t plain, dst;
    dnnl_dims_t dims = {d->N, 0};
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_format_tag_t tag = dnnl_format_tag_undef;
    int64_t own_channels = 0; /* of the sources in their producers' layouts */
    ipu_dnn_t *p = NULL;
    struct dnn_concat *c = NULL;
    *out = NULL;
    if (nd < 1 || nd > 3 || d->n_src < 1)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "%d spatial dims, %d sources", nd, d->n_src);
    if ((st = dnn_start(n, &p)) != IPU_OK)
        goto out;
    if ((p->cat = c = calloc(1, sizeof(*c))) == NULL ||
        (c->md = calloc((size_t)d->n_src, sizeof(*c->md))) == NULL) {
        st = ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory");
        goto out;
    }
    c->n_src = d->n_src;
    for (int j = 0; j < nd; j++)
        dims[2 + j] = d->sp[j];
    for (int k = 0; k < d->n_src; k++) {
        dims[1] = d->C[k];
        const ipu_dnn_t *l = like ? like[k] : NULL;
        if (l && !dnn_same_dims(dnn_out_md(l), r, dims)) { /* it writes another tensor */
            st = ipu_op_error(IPU_ERR_INTERNAL, n, "source %d is not its producer's output", k);
            goto out;
        }
        if (l) {
            c->md[k] = *dnn_out_md(l);
            p->src_own++;
            own_channels += d->C[k];
            if (tag == dnnl_format_tag_undef)
                tag = tag_of(&c->md[k], nd);
        } else {
            DNN_TRY(dnnl_memory_desc_init_by_tag(&c->md[k], r, dims, dnnl_f32, dnn_plain_tag(nd)),
                    "describing a source");
        }
    }
    dims[1] = 0;
    for (int k = 0; k < d->n_src; k++)
        dims[1] += d->C[k];
    DNN_TRY(dnnl_memory_desc_init_by_tag(&plain, r, dims, dnnl_f32, dnn_plain_tag(nd)),
            "describing Y");
    /* Y in ours where most channels come in ours (converting them would
     * cost more than the readers' one reorder); else in the first chained
     * source's layout, so that its readers may take it as that source's
     * readers would; unpadded (a padded one could not be chained: its
     * buffer is planned for our size) */
    dst = plain;
    if (p->src_own > 0 && 2 * own_channels >= dims[1]) {
        if (tag == dnnl_format_tag_undef)
            tag = dnn_channels_last_tag(nd);
        DNN_TRY(dnnl_memory_desc_init_by_tag(&dst, r, dims, dnnl_f32, tag), "describing Y");
        if (dnnl_memory_desc_get_size(&dst) != dnnl_memory_desc_get_size(&plain))
            DNN_TRY(dnnl_memory_desc_init_by_tag(&dst, r, dims, dnnl_f32, dnn_channels_last_tag(nd)),
                    "describing Y");
    }
    DNN_TRY(dnn_make_attr(1.0f, 0.0f, NULL, p, &attr), "setting the attributes");
    dnn_team_for_create();
    DNN_TRY(dnnl_concat_primitive_desc_create(&pd, &dst, d->n_src, 1, c->md, attr, dnn_engine()),
            "choosing a concat implementation");
    if ((st = dnn_finish(n, p, pd)) != IPU_OK)
        goto out;
    st = dnn_plain_io(n, p, &p->src_md, &plain);
out:
    return dnn_made(st, pd, attr, p, out);
}

/* This thread's token: the address of a thread-local (unique among the
 * live threads). */
static _Thread_local char g_thread_token;

/* Point c's memory objects (the owner's, made on its first run) at the
 * buffers: the sources, Y at y, the scratchpad at pad. */
static dnnl_status_t bind(struct dnn_concat *c, const ipu_dnn_t *p, const float *const *src,
                          void *y, void *pad, dnnl_stream_t s)
{
    /* without a scratchpad, its argument is left off */
    const int n = c->n_src + 1 + (dnnl_memory_desc_get_size(&p->pad_md) > 0);
    if (c->n_arg == 0) {
        if ((c->arg = calloc((size_t)n, sizeof(*c->arg))) == NULL ||
            (c->at = calloc((size_t)n, sizeof(*c->at))) == NULL)
            return dnnl_out_of_memory;
    }
    for (int i = 0; i < n; i++) {
        const void *data = i < c->n_src ? (const void *)src[i] : i == c->n_src ? y : pad;
        const dnnl_memory_desc_t *md = i < c->n_src ? &c->md[i] : i == c->n_src ? &p->dst_md
                                                                                : &p->pad_md;
        dnnl_status_t e = dnnl_success;
        if (i == c->n_arg) {
            e = dnnl_memory_create(&c->arg[i].memory, md, dnn_engine(), (void *)data);
            if (e != dnnl_success)
                return e;
            c->arg[i].arg = i < c->n_src ? DNNL_ARG_MULTIPLE_SRC + i
                            : i == c->n_src ? DNNL_ARG_DST : DNNL_ARG_SCRATCHPAD;
            c->n_arg++;
        } else if (c->at[i] != data) {
            e = dnnl_memory_set_data_handle_v2(c->arg[i].memory, (void *)data, s);
        }
        if (e != dnnl_success)
            return e;
        c->at[i] = data;
    }
    return dnnl_success;
}

ipu_status_t ipu_dnn_concat_run(const ipu_node_t *n, ipu_dnn_t *p, const float *const *src,
                                float *dst, const ipu_kernel_ctx_t *ctx)
{
    ipu_status_t st = IPU_OK;
    dnnl_stream_t s = NULL;
    struct dnn_concat *c = p->cat, own = {.n_src = c->n_src, .md = c->md};
    if (ipu_dnn_scratch(p) > ctx->scratch_bytes)
        return ipu_op_error(IPU_ERR_INTERNAL, n, "scratch too small");
    if ((st = dnn_stream(n, &s)) != IPU_OK)
        return st;
    int threads = ctx->threads > 0 ? ctx->threads : 1;
    if (omp_get_max_threads() != threads)
        omp_set_num_threads(threads);
    uintptr_t me = (uintptr_t)&g_thread_token, o = 0;
    struct dnn_concat *m = c;
    if (!atomic_compare_exchange_strong(&c->owner, &o, me) && o != me)
        m = &own; /* another thread's objects: this run makes its own */
    uint8_t *pad = ctx->scratch, *ys = pad + dnn_align64(p->pad_bytes) + p->src_bytes;
    int reorder = p->dst_out && !p->chain_dst;
    void *y = reorder ? (void *)ys : (void *)dst;
    DNN_TRY(bind(m, p, src, y, pad, s), "binding the sources");
    DNN_TRY(dnnl_primitive_execute(p->prim, s, m->n_arg, m->arg), "executing");
    DNN_TRY(dnnl_stream_wait(s), "executing");
    if (reorder)
        DNN_TRY(dnn_run_reorder(p->dst_out, s, &p->dst_md, ys, &p->dst_user, dst, pad),
                "reordering Y");
out:
    if (m == &own) {
        for (int i = 0; i < own.n_arg; i++)
            dnnl_memory_destroy(own.arg[i].memory);
        free(own.arg);
        free(own.at);
    }
    return st;
}
