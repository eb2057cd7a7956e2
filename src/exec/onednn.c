/* The oneDNN layer (onednn.h), its core: engine, streams, errors, memory
 * descriptors, attributes, reorders, execution and weights. The makers of
 * the primitives are in onednn_*.c, the CPU and thread queries in
 * onednn_cpu.c; what they share is onednn_impl.h. */
#include "exec/onednn_impl.h"

#include "common/log.h"

#include <dnnl_debug.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

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

dnnl_engine_t dnn_engine(void)
{
    pthread_once(&g_once, engine_init);
    return g_engine_status == dnnl_success ? g_engine : NULL;
}

dnnl_status_t dnn_engine_status(void)
{
    pthread_once(&g_once, engine_init);
    return g_engine_status;
}

ipu_status_t dnn_error(const ipu_node_t *n, dnnl_status_t s, const char *what)
{
    ipu_status_t st = s == dnnl_unimplemented ? IPU_ERR_UNSUPPORTED
                      : s == dnnl_out_of_memory ? IPU_ERR_NO_MEMORY : IPU_ERR_INTERNAL;
    return ipu_op_error(st, n, "oneDNN %s: %s", what, dnnl_status2str(s));
}

ipu_status_t dnn_stream(const ipu_node_t *n, dnnl_stream_t *out)
{
    dnnl_engine_t e = dnn_engine();
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

dnnl_status_t dnn_md_of(const ipu_dnn_shape_t *s, dnnl_memory_desc_t *md)
{
    dnnl_dims_t dims, strides;
    for (int i = 0; i < s->rank; i++) {
        dims[i] = s->dims[i];
        strides[i] = s->strides[i];
    }
    return dnnl_memory_desc_init_by_strides(md, s->rank, dims, dnnl_f32, strides);
}

static dnnl_status_t append_eltwise(dnnl_post_ops_t po, int *idx, dnnl_alg_kind_t alg, float alpha,
                                     float beta)
{
    (*idx)++;
    return dnnl_post_ops_append_eltwise(po, 1.0f, alg, alpha, beta);
}

/* The i-th post-op of post, appended to po as the *idx-th of oneDNN's (a
 * HardSigmoid takes two); a MUL or ADD operand is registered on p. */
static dnnl_status_t append_post(dnnl_post_ops_t po, int *idx, const ipu_dnn_post_t *post, int i,
                                 ipu_dnn_t *p)
{
    const float a = post->alpha[i], b = post->beta[i];
    switch (post->kind[i]) {
    case IPU_FUSED_RELU: return append_eltwise(po, idx, dnnl_eltwise_relu, a, 0);
    case IPU_FUSED_CLIP: return append_eltwise(po, idx, dnnl_eltwise_clip, a, b);
    case IPU_FUSED_SIGMOID: return append_eltwise(po, idx, dnnl_eltwise_logistic, 0, 0);
    case IPU_FUSED_TANH: return append_eltwise(po, idx, dnnl_eltwise_tanh, 0, 0);
    case IPU_FUSED_ELU: return append_eltwise(po, idx, dnnl_eltwise_elu, a, 0);
    case IPU_FUSED_HARD_SIGMOID: {
        dnnl_status_t s = append_eltwise(po, idx, dnnl_eltwise_linear, a, b);
        return s == dnnl_success ? append_eltwise(po, idx, dnnl_eltwise_clip, 0.0f, 1.0f) : s;
    }
    case IPU_FUSED_HARD_SWISH: return append_eltwise(po, idx, dnnl_eltwise_hardswish, 0, 0);
    case IPU_FUSED_SILU: return append_eltwise(po, idx, dnnl_eltwise_swish, 1.0f, 0);
    case IPU_FUSED_GELU_ERF: return append_eltwise(po, idx, dnnl_eltwise_gelu_erf, 0, 0);
    case IPU_FUSED_LINEAR: return append_eltwise(po, idx, dnnl_eltwise_linear, a, b);
    case IPU_FUSED_SUM: p->has_res = 1; (*idx)++; return dnnl_post_ops_append_sum(po, a);
    case IPU_FUSED_MUL:
    case IPU_FUSED_ADD: {
        dnnl_memory_desc_t md;
        dnnl_dims_t dims;
        for (int d = 0; d < post->rank; d++)
            dims[d] = d == post->axis ? post->channels : 1;
        dnnl_status_t s = dnnl_memory_desc_init_by_tag(&md, post->rank, dims, dnnl_f32,
                                                       post->rank == 2 ? dnnl_ab
                                                       : post->rank == 3 ? dnnl_abc
                                                       : post->rank == 4 ? dnnl_abcd
                                                       : post->rank == 5 ? dnnl_abcde
                                                                         : dnnl_abcdef);
        if (s == dnnl_success)
            s = dnnl_post_ops_append_binary(po, post->kind[i] == IPU_FUSED_MUL ? dnnl_binary_mul
                                                                              : dnnl_binary_add, &md);
        if (s == dnnl_success)
            dnn_add_operand(p, DNNL_ARG_ATTR_MULTIPLE_POST_OP(*idx) | DNNL_ARG_SRC_1, &md);
        (*idx)++;
        return s;
    }
    default: return dnnl_invalid_arguments;
    }
}

dnnl_status_t dnn_make_attr(float alpha, float sum, const ipu_dnn_post_t *post, ipu_dnn_t *p,
                            dnnl_primitive_attr_t *out)
{
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_status_t s = dnnl_primitive_attr_create(&attr);
    if (s == dnnl_success)
        s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (s == dnnl_success && alpha != 1.0f)
        s = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha);
    if (s == dnnl_success && (sum != 0.0f || (post && post->n > 0))) {
        int idx = 0;
        s = dnnl_post_ops_create(&po);
        if (s == dnnl_success && sum != 0.0f) {
            s = dnnl_post_ops_append_sum(po, sum);
            idx++;
        }
        for (int i = 0; post && i < post->n && s == dnnl_success; i++)
            s = append_post(po, &idx, post, i, p);
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

ipu_status_t dnn_residual_io(const ipu_node_t *n, ipu_dnn_t *p)
{
    ipu_status_t st = IPU_OK;
    if (!p->has_res)
        return IPU_OK;
    if (p->dst_out) /* from our layout into the primitive's */
        DNN_TRY(dnn_make_reorder(&p->dst_user, &p->dst_md, 1, &p->pad_bytes, &p->res_in),
                "reordering the residual");
    /* a copy of a residual already in the primitive's layout */
    DNN_TRY(dnn_make_reorder(&p->dst_md, &p->dst_md, 1, &p->pad_bytes, &p->res_copy),
            "copying the residual");
out:
    return st;
}

void dnn_log_impl(const ipu_node_t *n, const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    if (ipu_log_level_current >= IPU_LOG_DEBUG &&
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success)
        ipu_debug("node '%s' (%s): oneDNN %s", n->name, n->op_type, impl ? impl : "?");
}

size_t dnn_pd_scratch(const_dnnl_primitive_desc_t pd)
{
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    return md ? dnnl_memory_desc_get_size(md) : 0;
}

ipu_dnn_t *dnn_new(void)
{
    ipu_dnn_t *p = calloc(1, sizeof(*p));
    if (p)
        pthread_mutex_init(&p->mu, NULL);
    return p;
}

/* p->prim from pd; records the primitive's memory descriptors. */
ipu_status_t dnn_finish(const ipu_node_t *n, ipu_dnn_t *p, dnnl_primitive_desc_t pd)
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
    p->pad_bytes = dnn_pd_scratch(pd);
    dnn_log_impl(n, pd);
    DNN_TRY(dnnl_primitive_create(&p->prim, pd), "creating the primitive");
out:
    return st;
}

/* The end of a make: frees pd and attr; *out = p on success, else p is
 * freed. Returns st. */
ipu_status_t dnn_made(ipu_status_t st, dnnl_primitive_desc_t pd, dnnl_primitive_attr_t attr,
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

/* A reorder primitive from -> to with a user-mode scratchpad; *pad grows to
 * its scratchpad's size. */
dnnl_status_t dnn_make_reorder(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                                  int user_pad, size_t *pad, dnnl_primitive_t *out)
{
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t s = dnnl_primitive_attr_create(&attr);
    if (s == dnnl_success && user_pad)
        s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (s == dnnl_success)
        s = dnnl_reorder_primitive_desc_create(&pd, from, dnn_engine(), to, dnn_engine(), attr);
    if (s == dnnl_success) {
        size_t b = dnn_pd_scratch(pd);
        if (pad && b > *pad)
            *pad = b;
        s = dnnl_primitive_create(out, pd);
    }
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    return s;
}

/* ---- execution ---------------------------------------------------------- */

size_t ipu_dnn_scratch(const ipu_dnn_t *p)
{
    return p ? dnn_align64(p->pad_bytes) + p->src_bytes + p->dst_bytes : 0;
}

dnnl_status_t dnn_arg(dnn_args_t *args, int which, const dnnl_memory_desc_t *md, const void *data)
{
    dnnl_memory_t m;
    dnnl_status_t s = dnnl_memory_create(&m, md, dnn_engine(), (void *)data);
    if (s == dnnl_success)
        args->a[args->n++] = (dnnl_exec_arg_t){which, m};
    return s;
}

void dnn_args_free(dnn_args_t *args)
{
    for (int i = 0; i < args->n; i++)
        dnnl_memory_destroy(args->a[i].memory);
    args->n = 0;
}

/* Execute prim on args (freed) and wait. */
dnnl_status_t dnn_exec(dnnl_primitive_t prim, dnnl_stream_t s, dnn_args_t *args)
{
    dnnl_status_t r = dnnl_primitive_execute(prim, s, args->n, args->a);
    if (r == dnnl_success)
        r = dnnl_stream_wait(s);
    dnn_args_free(args);
    return r;
}

/* A reorder of from (md_from) into to (md_to), scratchpad pad (or none). */
dnnl_status_t dnn_run_reorder(dnnl_primitive_t r, dnnl_stream_t s, const dnnl_memory_desc_t *mf,
                                 const void *from, const dnnl_memory_desc_t *mt, void *to, void *pad)
{
    dnn_args_t args = {.n = 0};
    const dnnl_memory_desc_t *pmd = NULL;
    const_dnnl_primitive_desc_t pd;
    dnnl_status_t e = dnn_arg(&args, DNNL_ARG_FROM, mf, from);
    if (e == dnnl_success)
        e = dnn_arg(&args, DNNL_ARG_TO, mt, to);
    if (e == dnnl_success && pad && dnnl_primitive_get_primitive_desc(r, &pd) == dnnl_success &&
        (pmd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0)) &&
        dnnl_memory_desc_get_size(pmd) > 0)
        e = dnn_arg(&args, DNNL_ARG_SCRATCHPAD, pmd, pad);
    if (e != dnnl_success) {
        dnn_args_free(&args);
        return e;
    }
    return dnn_exec(r, s, &args);
}

/* A new buffer holding w reordered into p->wei_md (*out, caller frees). */
static ipu_status_t reorder_weights(const ipu_node_t *n, ipu_dnn_t *p, dnnl_stream_t s,
                                    const float *w, void **out)
{
    ipu_status_t st = IPU_OK;
    dnnl_primitive_t r = NULL;
    void *buf = aligned_alloc(64, dnn_align64(dnnl_memory_desc_get_size(&p->wei_md)));
    *out = NULL;
    if (buf == NULL)
        return ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory reordering the weights");
    DNN_TRY(dnn_make_reorder(&p->wei_user, &p->wei_md, 0, NULL, &r), "reordering W");
    DNN_TRY(dnn_run_reorder(r, s, &p->wei_user, w, &p->wei_md, buf, NULL), "reordering W");
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
    if (p->wei_from != w && (st = dnn_stream(n, &s)) == IPU_OK) {
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
    return p && p->reorder_weights ? dnn_align64(dnnl_memory_desc_get_size(&p->wei_md)) : 0;
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

/* Run p: the operands of ipu_dnn_run() and the maker's further ones
 * (extra[i] for p->extra_arg[i], NULL only when p has none). */
static ipu_status_t run(const ipu_node_t *n, ipu_dnn_t *p, const float *src, const float *weights,
                        const float *bias, const float *res, const void *const *extra, float *dst,
                        const ipu_kernel_ctx_t *ctx)
{
    ipu_status_t st;
    dnnl_stream_t s = NULL;
    const void *w = NULL;
    void *tmp = NULL;
    dnn_args_t args = {.n = 0};
    if (ipu_dnn_scratch(p) > ctx->scratch_bytes)
        return ipu_op_error(IPU_ERR_INTERNAL, n, "scratch too small");
    if ((st = dnn_stream(n, &s)) != IPU_OK)
        return st;
    int threads = ctx->threads > 0 ? ctx->threads : 1;
    if (omp_get_max_threads() != threads) /* set once by an IPU's worker */
        omp_set_num_threads(threads);
    if ((st = run_weights(n, p, s, weights, &w, &tmp)) != IPU_OK)
        return st;
    uint8_t *pad = ctx->scratch, *xs = pad + dnn_align64(p->pad_bytes), *ys = xs + p->src_bytes;
    const void *x = src;
    void *y = dst;
    if (p->src_in && !p->chain_src) {
        DNN_TRY(dnn_run_reorder(p->src_in, s, &p->src_user, src, &p->src_md, xs, pad), "reordering X");
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
            DNN_TRY(dnn_run_reorder(as_dst ? p->res_copy : p->res_in, s,
                                as_dst ? &p->dst_md : &p->dst_user, res, &p->dst_md, y, pad),
                    "copying the residual");
    }
    DNN_TRY(dnn_arg(&args, DNNL_ARG_SRC, &p->src_md, x), "binding X");
    if (w)
        DNN_TRY(dnn_arg(&args, DNNL_ARG_WEIGHTS, &p->wei_md, w), "binding W");
    for (int i = 0; i < p->n_extra; i++)
        DNN_TRY(dnn_arg(&args, p->extra_arg[i], &p->extra_md[i], extra[i]), "binding an operand");
    if (bias)
        DNN_TRY(dnn_arg(&args, DNNL_ARG_BIAS, &p->bias_md, bias), "binding B");
    DNN_TRY(dnn_arg(&args, DNNL_ARG_DST, &p->dst_md, y), "binding Y");
    if (dnnl_memory_desc_get_size(&p->pad_md) > 0)
        DNN_TRY(dnn_arg(&args, DNNL_ARG_SCRATCHPAD, &p->pad_md, pad), "binding the scratchpad");
    DNN_TRY(dnn_exec(p->prim, s, &args), "executing");
    if (p->dst_out && !p->chain_dst)
        DNN_TRY(dnn_run_reorder(p->dst_out, s, &p->dst_md, ys, &p->dst_user, dst, pad), "reordering Y");
out:
    dnn_args_free(&args);
    free(tmp);
    return st;
}

ipu_status_t ipu_dnn_run(const ipu_node_t *n, ipu_dnn_t *p, const float *src, const float *weights,
                         const float *bias, const float *res, const void *const *post,
                         float *dst, const ipu_kernel_ctx_t *ctx)
{
    return run(n, p, src, weights, bias, res, post, dst, ctx);
}

ipu_status_t ipu_dnn_exec(const ipu_node_t *n, ipu_dnn_t *p, const float *src,
                          const void *const *extra, float *dst, const ipu_kernel_ctx_t *ctx)
{
    return run(n, p, src, NULL, NULL, NULL, extra, dst, ctx);
}

void dnn_add_operand(ipu_dnn_t *p, int dnnl_arg, const dnnl_memory_desc_t *md)
{
    if (p->n_extra < DNN_MAX_EXTRA) {
        p->extra_arg[p->n_extra] = dnnl_arg;
        p->extra_md[p->n_extra++] = *md;
    }
}

ipu_status_t dnn_plain_io(const ipu_node_t *n, ipu_dnn_t *p, const dnnl_memory_desc_t *src,
                          const dnnl_memory_desc_t *dst)
{
    ipu_status_t st = IPU_OK;
    p->src_user = *src;
    p->dst_user = *dst;
    if (!dnnl_memory_desc_equal(&p->src_md, src)) {
        DNN_TRY(dnn_make_reorder(src, &p->src_md, 1, &p->pad_bytes, &p->src_in), "reordering X");
        p->src_bytes = dnn_align64(dnnl_memory_desc_get_size(&p->src_md));
    }
    if (!dnnl_memory_desc_equal(&p->dst_md, dst)) {
        DNN_TRY(dnn_make_reorder(&p->dst_md, dst, 1, &p->pad_bytes, &p->dst_out), "reordering Y");
        p->dst_bytes = dnn_align64(dnnl_memory_desc_get_size(&p->dst_md));
    }
out:
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
