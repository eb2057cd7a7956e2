/* The oneDNN layer (onednn.h): engine, streams, memory descriptors,
 * primitives with user-mode scratchpads, reorders, execution and errors. */
#include "exec/onednn.h"

#include "common/log.h"

#include <dnnl.h>
#include <dnnl_debug.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ipu_dnn {
    dnnl_primitive_t prim;
    dnnl_memory_desc_t src_md, wei_md, bias_md, dst_md, pad_md; /* the primitive's */
    dnnl_memory_desc_t src_user, wei_user, dst_user;     /* ours */
    dnnl_primitive_t src_in, dst_out, res_in; /* activation reorders (NULL: none) */
    dnnl_primitive_t res_copy; /* the residual from dst_md into dst_md */
    size_t pad_bytes;   /* scratchpad region (primitive's and reorders') */
    size_t src_bytes, dst_bytes; /* reordered activations after it */
    int reorder_weights; /* the primitive's weights layout differs from ours */
    int has_res;         /* a sum post-op adds the residual, copied into Y first */
    int chain_src, chain_dst, chain_res; /* X / Y / R in the primitive's layout already */
    pthread_mutex_t mu; /* guards the weights copy */
    void *wei;          /* weights in wei_md made at load, or NULL */
    const void *wei_from; /* the address they were made from */
};

/* ---- engine, streams, errors ------------------------------------------ */

static dnnl_engine_t g_engine;
static dnnl_status_t g_engine_status;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_stream_key;

static void stream_destroy(void *s)
{
    dnnl_stream_destroy(s);
}

static void engine_init(void)
{
    g_engine_status = dnnl_engine_create(&g_engine, dnnl_cpu, 0);
    pthread_key_create(&g_stream_key, stream_destroy);
}

static dnnl_engine_t engine(void)
{
    pthread_once(&g_once, engine_init);
    return g_engine_status == dnnl_success ? g_engine : NULL;
}

static ipu_status_t dnn_error(const ipu_node_t *n, dnnl_status_t s, const char *what)
{
    ipu_status_t st = s == dnnl_unimplemented ? IPU_ERR_UNSUPPORTED
                      : s == dnnl_out_of_memory ? IPU_ERR_NO_MEMORY : IPU_ERR_INTERNAL;
    return ipu_op_error(st, n, "oneDNN %s: %s", what, dnnl_status2str(s));
}

#define DNN_TRY(call, what)                     \
    do {                                        \
        dnnl_status_t s_ = (call);              \
        if (s_ != dnnl_success) {               \
            st = dnn_error(n, s_, what);        \
            goto out;                           \
        }                                       \
    } while (0)

static ipu_status_t stream(const ipu_node_t *n, dnnl_stream_t *out)
{
    dnnl_engine_t e = engine();
    if (e == NULL)
        return dnn_error(n, g_engine_status, "creating the CPU engine");
    dnnl_stream_t s = pthread_getspecific(g_stream_key);
    if (s == NULL) {
        dnnl_status_t r = dnnl_stream_create(&s, e, dnnl_stream_default_flags);
        if (r != dnnl_success)
            return dnn_error(n, r, "creating a stream");
        pthread_setspecific(g_stream_key, s);
    }
    *out = s;
    return IPU_OK;
}

/* ---- descriptors -------------------------------------------------------- */

void ipu_dnn_shape_dense(ipu_dnn_shape_t *s)
{
    int64_t st = 1;
    for (int i = s->rank - 1; i >= 0; i--) {
        s->strides[i] = st;
        st *= s->dims[i];
    }
}

static dnnl_status_t md_of(const ipu_dnn_shape_t *s, dnnl_memory_desc_t *md)
{
    dnnl_dims_t dims, strides;
    for (int i = 0; i < s->rank; i++) {
        dims[i] = s->dims[i];
        strides[i] = s->strides[i];
    }
    return dnnl_memory_desc_init_by_strides(md, s->rank, dims, dnnl_f32, strides);
}

static dnnl_status_t append_act(dnnl_post_ops_t po, const ipu_dnn_act_t *a)
{
    switch (a->kind) {
    case IPU_DNN_ACT_RELU: return dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0, 0);
    case IPU_DNN_ACT_CLIP:
        return dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, a->lo, a->hi);
    case IPU_DNN_ACT_SIGMOID:
        return dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_logistic, 0, 0);
    case IPU_DNN_ACT_SILU:
        return dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_swish, 1.0f, 0);
    default: return dnnl_success;
    }
}

/* attr with a user-mode scratchpad, output scale alpha, then the post-ops
 * sum (when sum != 0) and act. */
static dnnl_status_t make_attr(float alpha, float sum, const ipu_dnn_act_t *act,
                               dnnl_primitive_attr_t *out)
{
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_status_t s = dnnl_primitive_attr_create(&attr);
    if (s == dnnl_success)
        s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (s == dnnl_success && alpha != 1.0f)
        s = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha);
    if (s == dnnl_success && (sum != 0.0f || (act && act->kind != IPU_DNN_ACT_NONE))) {
        s = dnnl_post_ops_create(&po);
        if (s == dnnl_success && sum != 0.0f)
            s = dnnl_post_ops_append_sum(po, sum);
        if (s == dnnl_success && act)
            s = append_act(po, act);
        if (s == dnnl_success)
            s = dnnl_primitive_attr_set_post_ops(attr, po);
        dnnl_post_ops_destroy(po);
    }
    if (s != dnnl_success) {
        dnnl_primitive_attr_destroy(attr);
        attr = NULL;
    }
    *out = attr;
    return s;
}

static size_t align64(size_t b)
{
    return (b + 63) / 64 * 64;
}

static void log_impl(const ipu_node_t *n, const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    if (ipu_log_level_current >= IPU_LOG_DEBUG &&
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success)
        ipu_debug("node '%s' (%s): oneDNN %s", n->name, n->op_type, impl ? impl : "?");
}

static size_t pd_scratch(const_dnnl_primitive_desc_t pd)
{
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    return md ? dnnl_memory_desc_get_size(md) : 0;
}

static ipu_dnn_t *dnn_new(void)
{
    ipu_dnn_t *p = calloc(1, sizeof(*p));
    if (p)
        pthread_mutex_init(&p->mu, NULL);
    return p;
}

/* p->prim from pd; records the primitive's memory descriptors. */
static ipu_status_t finish(const ipu_node_t *n, ipu_dnn_t *p, dnnl_primitive_desc_t pd)
{
    ipu_status_t st = IPU_OK;
    const dnnl_memory_desc_t *md;
    if ((md = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0)))
        p->src_md = *md;
    if ((md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0)))
        p->wei_md = *md;
    if ((md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1)))
        p->bias_md = *md;
    if ((md = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0)))
        p->dst_md = *md;
    if ((md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0)))
        p->pad_md = *md;
    p->pad_bytes = pd_scratch(pd);
    log_impl(n, pd);
    DNN_TRY(dnnl_primitive_create(&p->prim, pd), "creating the primitive");
out:
    return st;
}

/* The end of a make: frees pd and attr; *out = p on success, else p is
 * freed. Returns st. */
static ipu_status_t made(ipu_status_t st, dnnl_primitive_desc_t pd, dnnl_primitive_attr_t attr,
                         ipu_dnn_t *p, ipu_dnn_t **out)
{
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    if (st != IPU_OK)
        ipu_dnn_free(p);
    else
        *out = p;
    return st;
}

/* ---- matmul ------------------------------------------------------------- */

ipu_status_t ipu_dnn_matmul(const ipu_node_t *n, const ipu_dnn_matmul_desc_t *d, ipu_dnn_t **out)
{
    ipu_status_t st = IPU_OK;
    dnnl_memory_desc_t a, b, y, bias;
    dnnl_matmul_desc_t desc;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    ipu_dnn_t *p = dnn_new();
    *out = NULL;
    if (p == NULL)
        return ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory");
    if (engine() == NULL)
        DNN_TRY(g_engine_status, "creating the CPU engine");
    DNN_TRY(md_of(&d->a, &a), "describing A");
    DNN_TRY(md_of(&d->b, &b), "describing B");
    DNN_TRY(md_of(&d->y, &y), "describing Y");
    if (d->has_bias)
        DNN_TRY(md_of(&d->bias, &bias), "describing the bias");
    DNN_TRY(dnnl_matmul_desc_init(&desc, &a, &b, d->has_bias ? &bias : NULL, &y),
            "describing the matmul");
    DNN_TRY(make_attr(d->alpha, d->sum, &d->act, &attr), "setting the attributes");
    DNN_TRY(dnnl_primitive_desc_create(&pd, &desc, attr, g_engine, NULL),
            "choosing a matmul implementation");
    p->src_user = a;
    p->wei_user = b;
    p->dst_user = y;
    st = finish(n, p, pd);
out:
    return made(st, pd, attr, p, out);
}

/* ---- convolution -------------------------------------------------------- */

static const dnnl_format_tag_t act_tag[4] = {dnnl_format_tag_undef, dnnl_ncw, dnnl_nchw, dnnl_ncdhw};
static const dnnl_format_tag_t wei_tag[4] = {dnnl_format_tag_undef, dnnl_oiw, dnnl_oihw, dnnl_oidhw};
static const dnnl_format_tag_t gwei_tag[4] = {dnnl_format_tag_undef, dnnl_goiw, dnnl_goihw,
                                              dnnl_goidhw};

/* A reorder primitive from -> to with a user-mode scratchpad; *pad grows to
 * its scratchpad's size. */
static dnnl_status_t make_reorder(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                                  int user_pad, size_t *pad, dnnl_primitive_t *out)
{
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t s = dnnl_primitive_attr_create(&attr);
    if (s == dnnl_success && user_pad)
        s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (s == dnnl_success)
        s = dnnl_reorder_primitive_desc_create(&pd, from, g_engine, to, g_engine, attr);
    if (s == dnnl_success) {
        size_t b = pd_scratch(pd);
        if (pad && b > *pad)
            *pad = b;
        s = dnnl_primitive_create(out, pd);
    }
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    return s;
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
    if ((p = dnn_new()) == NULL)
        return ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory");
    if (engine() == NULL)
        DNN_TRY(g_engine_status, "creating the CPU engine");
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
    DNN_TRY(dnnl_memory_desc_init_by_tag(&src, nd + 2, sdims, dnnl_f32, act_tag[nd]), "describing X");
    DNN_TRY(dnnl_memory_desc_init_by_tag(&dst, nd + 2, ddims, dnnl_f32, act_tag[nd]), "describing Y");
    DNN_TRY(dnnl_memory_desc_init_by_tag(&wei, wr, wdims, dnnl_f32, g ? gwei_tag[nd] : wei_tag[nd]),
            "describing W");
    DNN_TRY(dnnl_memory_desc_init_by_tag(&bias, 1, bdims, dnnl_f32, dnnl_a), "describing B");
    DNN_TRY(dnnl_memory_desc_init_by_tag(&wei_any, wr, wdims, dnnl_f32, dnnl_format_tag_any),
            "describing W");
    /* the activations in the layout the primitive prefers, reordered to and
     * from ours inside the op unless ipu_dnn_set_chain() says otherwise:
     * faster than the primitives that take plain NCHW (pointwise ones
     * included, once chained) */
    DNN_TRY(dnnl_memory_desc_init_by_tag(&src_any, nd + 2, sdims, dnnl_f32, dnnl_format_tag_any),
            "describing X");
    DNN_TRY(dnnl_memory_desc_init_by_tag(&dst_any, nd + 2, ddims, dnnl_f32, dnnl_format_tag_any),
            "describing Y");
    DNN_TRY(dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference,
                                                       dnnl_convolution_direct, &src_any, &wei_any,
                                                       d->has_bias ? &bias : NULL, &dst_any,
                                                       strides, dil, pl, pr),
            "describing the convolution");
    /* the residual: Y is filled with it before the run (a sum post-op) */
    DNN_TRY(make_attr(1.0f, d->has_residual ? 1.0f : 0.0f, &d->act, &attr),
            "setting the attributes");
    DNN_TRY(dnnl_primitive_desc_create(&pd, &desc, attr, g_engine, NULL),
            "choosing a convolution implementation");
    p->has_res = d->has_residual;
    p->src_user = src;
    p->wei_user = wei;
    p->dst_user = dst;
    if ((st = finish(n, p, pd)) != IPU_OK)
        goto out;
    p->reorder_weights = !dnnl_memory_desc_equal(&p->wei_md, &wei);
    if (!dnnl_memory_desc_equal(&p->src_md, &src)) {
        DNN_TRY(make_reorder(&src, &p->src_md, 1, &p->pad_bytes, &p->src_in), "reordering X");
        p->src_bytes = align64(dnnl_memory_desc_get_size(&p->src_md));
    }
    if (!dnnl_memory_desc_equal(&p->dst_md, &dst)) {
        DNN_TRY(make_reorder(&p->dst_md, &dst, 1, &p->pad_bytes, &p->dst_out), "reordering Y");
        p->dst_bytes = align64(dnnl_memory_desc_get_size(&p->dst_md));
        if (p->has_res)
            DNN_TRY(make_reorder(&dst, &p->dst_md, 1, &p->pad_bytes, &p->res_in),
                    "reordering the residual");
    }
    if (p->has_res) /* a copy of a residual already in the primitive's layout */
        DNN_TRY(make_reorder(&p->dst_md, &p->dst_md, 1, &p->pad_bytes, &p->res_copy),
                "copying the residual");
out:
    return made(st, pd, attr, p, out);
}

/* ---- execution ---------------------------------------------------------- */

size_t ipu_dnn_scratch(const ipu_dnn_t *p)
{
    return p ? align64(p->pad_bytes) + p->src_bytes + p->dst_bytes : 0;
}

typedef struct {
    dnnl_exec_arg_t a[8];
    int n;
} args_t;

static dnnl_status_t arg(args_t *args, int which, const dnnl_memory_desc_t *md, const void *data)
{
    dnnl_memory_t m;
    dnnl_status_t s = dnnl_memory_create(&m, md, g_engine, (void *)data);
    if (s == dnnl_success)
        args->a[args->n++] = (dnnl_exec_arg_t){which, m};
    return s;
}

static void args_free(args_t *args)
{
    for (int i = 0; i < args->n; i++)
        dnnl_memory_destroy(args->a[i].memory);
    args->n = 0;
}

/* Execute prim on args (freed) and wait. */
static dnnl_status_t exec(dnnl_primitive_t prim, dnnl_stream_t s, args_t *args)
{
    dnnl_status_t r = dnnl_primitive_execute(prim, s, args->n, args->a);
    if (r == dnnl_success)
        r = dnnl_stream_wait(s);
    args_free(args);
    return r;
}

/* A reorder of from (md_from) into to (md_to), scratchpad pad (or none). */
static dnnl_status_t run_reorder(dnnl_primitive_t r, dnnl_stream_t s, const dnnl_memory_desc_t *mf,
                                 const void *from, const dnnl_memory_desc_t *mt, void *to, void *pad)
{
    args_t args = {.n = 0};
    const dnnl_memory_desc_t *pmd = NULL;
    const_dnnl_primitive_desc_t pd;
    dnnl_status_t e = arg(&args, DNNL_ARG_FROM, mf, from);
    if (e == dnnl_success)
        e = arg(&args, DNNL_ARG_TO, mt, to);
    if (e == dnnl_success && pad && dnnl_primitive_get_primitive_desc(r, &pd) == dnnl_success &&
        (pmd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0)) &&
        dnnl_memory_desc_get_size(pmd) > 0)
        e = arg(&args, DNNL_ARG_SCRATCHPAD, pmd, pad);
    if (e != dnnl_success) {
        args_free(&args);
        return e;
    }
    return exec(r, s, &args);
}

/* A new buffer holding w reordered into p->wei_md (*out, caller frees). */
static ipu_status_t reorder_weights(const ipu_node_t *n, ipu_dnn_t *p, dnnl_stream_t s,
                                    const float *w, void **out)
{
    ipu_status_t st = IPU_OK;
    dnnl_primitive_t r = NULL;
    void *buf = aligned_alloc(64, align64(dnnl_memory_desc_get_size(&p->wei_md)));
    *out = NULL;
    if (buf == NULL)
        return ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory reordering the weights");
    DNN_TRY(make_reorder(&p->wei_user, &p->wei_md, 0, NULL, &r), "reordering W");
    DNN_TRY(run_reorder(r, s, &p->wei_user, w, &p->wei_md, buf, NULL), "reordering W");
    *out = buf;
    buf = NULL;
out:
    if (r)
        dnnl_primitive_destroy(r);
    free(buf);
    return st;
}

ipu_status_t ipu_dnn_load_weights(const ipu_node_t *n, ipu_dnn_t *p, const float *w)
{
    ipu_status_t st = IPU_OK;
    dnnl_stream_t s = NULL;
    void *buf = NULL;
    if (p == NULL || !p->reorder_weights || w == NULL)
        return IPU_OK;
    pthread_mutex_lock(&p->mu);
    if (p->wei_from != w && (st = stream(n, &s)) == IPU_OK) {
        omp_set_num_threads(1);
        if ((st = reorder_weights(n, p, s, w, &buf)) == IPU_OK) {
            free(p->wei);
            p->wei = buf;
            p->wei_from = w;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return st;
}

size_t ipu_dnn_weights_held(const ipu_dnn_t *p)
{
    return p && p->reorder_weights ? align64(dnnl_memory_desc_get_size(&p->wei_md)) : 0;
}

/* The weights to run with: ours, the copy made at load, or (*tmp, freed by
 * the caller) a copy made now. */
static ipu_status_t run_weights(const ipu_node_t *n, ipu_dnn_t *p, dnnl_stream_t s,
                                const float *w, const void **out, void **tmp)
{
    *tmp = NULL;
    *out = w;
    if (!p->reorder_weights)
        return IPU_OK;
    pthread_mutex_lock(&p->mu);
    const void *ready = p->wei_from == w ? p->wei : NULL;
    pthread_mutex_unlock(&p->mu);
    if (ready) {
        *out = ready;
        return IPU_OK;
    }
    ipu_status_t st = reorder_weights(n, p, s, w, tmp);
    *out = *tmp;
    return st;
}

ipu_status_t ipu_dnn_run(const ipu_node_t *n, ipu_dnn_t *p, const float *src, const float *weights,
                         const float *bias, const float *res, float *dst,
                         const ipu_kernel_ctx_t *ctx)
{
    ipu_status_t st;
    dnnl_stream_t s = NULL;
    const void *w = NULL;
    void *tmp = NULL;
    args_t args = {.n = 0};
    if (ipu_dnn_scratch(p) > ctx->scratch_bytes)
        return ipu_op_error(IPU_ERR_INTERNAL, n, "scratch too small");
    if ((st = stream(n, &s)) != IPU_OK)
        return st;
    int threads = ctx->threads > 0 ? ctx->threads : 1;
    if (omp_get_max_threads() != threads) /* set once by an IPU's worker */
        omp_set_num_threads(threads);
    if ((st = run_weights(n, p, s, weights, &w, &tmp)) != IPU_OK)
        return st;
    uint8_t *pad = ctx->scratch, *xs = pad + align64(p->pad_bytes), *ys = xs + p->src_bytes;
    const void *x = src;
    void *y = dst;
    if (p->src_in && !p->chain_src) {
        DNN_TRY(run_reorder(p->src_in, s, &p->src_user, src, &p->src_md, xs, pad), "reordering X");
        x = xs;
    }
    if (p->dst_out && !p->chain_dst)
        y = ys;
    if (p->has_res) { /* the sum post-op adds Y's contents: the residual */
        int as_dst = p->res_in == NULL || p->chain_res;
        if (res == NULL) {
            st = ipu_op_error(IPU_ERR_INTERNAL, n, "no residual");
            goto out;
        }
        if (res != y || !as_dst)
            DNN_TRY(run_reorder(as_dst ? p->res_copy : p->res_in, s,
                                as_dst ? &p->dst_md : &p->dst_user, res, &p->dst_md, y, pad),
                    "copying the residual");
    }
    DNN_TRY(arg(&args, DNNL_ARG_SRC, &p->src_md, x), "binding X");
    DNN_TRY(arg(&args, DNNL_ARG_WEIGHTS, &p->wei_md, w), "binding W");
    if (bias)
        DNN_TRY(arg(&args, DNNL_ARG_BIAS, &p->bias_md, bias), "binding B");
    DNN_TRY(arg(&args, DNNL_ARG_DST, &p->dst_md, y), "binding Y");
    if (dnnl_memory_desc_get_size(&p->pad_md) > 0)
        DNN_TRY(arg(&args, DNNL_ARG_SCRATCHPAD, &p->pad_md, pad), "binding the scratchpad");
    DNN_TRY(exec(p->prim, s, &args), "executing");
    if (p->dst_out && !p->chain_dst)
        DNN_TRY(run_reorder(p->dst_out, s, &p->dst_md, ys, &p->dst_user, dst, pad), "reordering Y");
out:
    args_free(&args);
    free(tmp);
    return st;
}

void ipu_dnn_free(ipu_dnn_t *p)
{
    if (p == NULL)
        return;
    if (p->prim)
        dnnl_primitive_destroy(p->prim);
    if (p->src_in)
        dnnl_primitive_destroy(p->src_in);
    if (p->dst_out)
        dnnl_primitive_destroy(p->dst_out);
    if (p->res_in)
        dnnl_primitive_destroy(p->res_in);
    if (p->res_copy)
        dnnl_primitive_destroy(p->res_copy);
    pthread_mutex_destroy(&p->mu);
    free(p->wei);
    free(p);
}

/* "0,2" style list of the CPUs in set into buf. */
static void cpu_list(const cpu_set_t *set, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE && off < len; c++)
        if (CPU_ISSET(c, set))
            off += (size_t)snprintf(buf + off, len - off, off ? ",%d" : "%d", c);
}

void ipu_dnn_bind_threads(int index, int threads)
{
    cpu_set_t mine;
    int n = threads > 0 ? threads : 1;
    omp_set_num_threads(n);
    if (pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine) != 0)
        return;
    /* libgomp keeps this thread's team for its later parallel regions;
     * threads it adds later inherit the worker's affinity */
#pragma omp parallel num_threads(n)
    {
        cpu_set_t got;
        if (pthread_setaffinity_np(pthread_self(), sizeof(mine), &mine) != 0)
            ipu_warn("IPU %d: cannot bind OpenMP thread %d to its worker's CPUs", index,
                     omp_get_thread_num());
        if (ipu_log_level_current >= IPU_LOG_DEBUG &&
            sched_getaffinity(0, sizeof(got), &got) == 0) {
            char l[256], w[256];
            cpu_list(&got, l, sizeof(l));
            cpu_list(&mine, w, sizeof(w));
            ipu_debug("IPU %d: OpenMP thread %d of %d on CPUs %s, the worker's %s", index,
                      omp_get_thread_num(), omp_get_num_threads(), l, w);
        }
    }
}

int ipu_dnn_can_chain(const ipu_dnn_t *a, const ipu_dnn_t *b, int as_residual)
{
    if (a == NULL || b == NULL || a->dst_out == NULL ||
        dnnl_memory_desc_get_size(&a->dst_md) != dnnl_memory_desc_get_size(&a->dst_user))
        return 0;
    if (as_residual)
        return b->res_in && dnnl_memory_desc_equal(&a->dst_md, &b->dst_md);
    return b->src_in && dnnl_memory_desc_equal(&a->dst_md, &b->src_md);
}

void ipu_dnn_set_chain(ipu_dnn_t *p, int src_blocked, int dst_blocked, int res_blocked)
{
    if (p == NULL)
        return;
    p->chain_src |= src_blocked;
    p->chain_dst |= dst_blocked;
    p->chain_res |= res_blocked;
}

/* ---- what runs ---------------------------------------------------------- */

const char *ipu_dnn_isa(void)
{
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    case dnnl_cpu_isa_all: return "all";
    default: return "unknown";
    }
}

int ipu_dnn_isa_avx2(void)
{
    dnnl_cpu_isa_t i = dnnl_get_effective_cpu_isa();
    /* the ISA values are bit masks: each includes the ones below it */
    return i != dnnl_cpu_isa_all && (i & dnnl_cpu_isa_avx2) == dnnl_cpu_isa_avx2;
}

static char g_version[48];

static void version_init(void)
{
    const dnnl_version_t *d = dnnl_version();
    snprintf(g_version, sizeof(g_version), "oneDNN %d.%d.%d", d->major, d->minor, d->patch);
}

const char *ipu_dnn_version(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, version_init);
    return g_version;
}

char *ipu_cpu_model(char *buf, size_t len)
{
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(buf, len, "unknown");
    while (f && fgets(line, sizeof(line), f)) {
        char *c = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || c == NULL)
            continue;
        c++;
        while (*c == ' ' || *c == '\t')
            c++;
        c[strcspn(c, "\n")] = '\0';
        snprintf(buf, len, "%s", c);
        break;
    }
    if (f)
        fclose(f);
    return buf;
}
