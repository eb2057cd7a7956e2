/* The oneDNN layer (onednn.h), its core: engine, streams, errors, memory
 * descriptors, attributes, reorders, the implementations made. The makers
 * of the primitives are in onednn_*.c, their runs and weights in
 * onednn_run.c, the CPU and thread queries in onednn_cpu.c; what they
 * share is onednn_impl.h. */
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

/* The team size the last dnn_pd_create() of this thread made its pd for. */
static _Thread_local int g_made_threads = 1;

static size_t pd_io_bytes(const_dnnl_primitive_desc_t pd)
{
    static const dnnl_query_t what[] = {dnnl_query_src_md, dnnl_query_weights_md,
                                        dnnl_query_dst_md};
    size_t b = 0;
    for (size_t i = 0; i < sizeof(what) / sizeof(what[0]); i++) {
        const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, what[i], 0);
        b += md ? dnnl_memory_desc_get_size(md) : 0;
    }
    return b;
}

/* A primitive whose source, weights and destination add up to less than
 * IPU_TEAM_MIN_BYTES (graph/op.h) is made for one thread, and run by one:
 * its work is then shorter than waking the rest of the team for it, which
 * made a small model slower on 2 threads than on 1. */
dnnl_status_t dnn_pd_create(dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t desc,
                            const_dnnl_primitive_attr_t attr)
{
    dnn_team_for_create();
    g_made_threads = omp_get_max_threads();
    dnnl_status_t s = dnnl_primitive_desc_create(pd, desc, attr, dnn_engine(), NULL);
    if (s == dnnl_success && g_made_threads > 1 && pd_io_bytes(*pd) < IPU_TEAM_MIN_BYTES) {
        dnnl_primitive_desc_t one = NULL;
        omp_set_num_threads(1); /* and so for the primitive dnn_finish makes */
        if (dnnl_primitive_desc_create(&one, desc, attr, dnn_engine(), NULL) == dnnl_success) {
            dnnl_primitive_desc_destroy(*pd);
            *pd = one;
            g_made_threads = 1;
        } else {
            dnn_team_for_create();
        }
    }
    return s;
}

dnnl_status_t dnn_pd_probe(dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t desc,
                           const_dnnl_primitive_attr_t attr)
{
    int made = g_made_threads, omp = omp_get_max_threads();
    dnnl_status_t s = dnn_pd_create(pd, desc, attr);
    g_made_threads = made;
    omp_set_num_threads(omp);
    return s;
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

/* post's depthwise convolution (3x3, pads 1, post->dw_stride), appended
 * to po as the *idx-th post-op; p takes its weights (ours: [C, 1, 1, 3,
 * 3], the layout the primitive takes them in set by dnn_finish) and its
 * bias as operands. */
static dnnl_status_t append_dw(dnnl_post_ops_t po, int *idx, const ipu_dnn_post_t *post, ipu_dnn_t *p)
{
    dnnl_memory_desc_t b;
    dnnl_dims_t wdims = {post->channels, 1, 1, 3, 3}, bdims = {post->channels};
    if (p == NULL || p->dw_extra >= 0)
        return dnnl_invalid_arguments;
    dnn_held_t *h = &p->held[DNN_W_DW];
    dnnl_status_t s = dnnl_memory_desc_init_by_tag(&h->user, 5, wdims, dnnl_f32, dnnl_goihw);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&b, 1, bdims, dnnl_f32, dnnl_a);
    if (s == dnnl_success)
        s = dnnl_post_ops_append_dw(po, dnnl_f32, post->dw_bias ? dnnl_f32 : dnnl_data_type_undef,
                                    dnnl_f32, 3, post->dw_stride, 1, 0, 0, NULL);
    if (s != dnnl_success)
        return s;
    (*idx)++;
    p->dw_extra = p->n_extra;
    dnn_add_operand(p, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, &h->user);
    if (post->dw_bias)
        dnn_add_operand(p, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, &b);
    return dnnl_success;
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
    case IPU_FUSED_DW: return append_dw(po, idx, post, p);
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

/* Whether a SiLU that ends the post-ops runs on our loop after the
 * primitive (ipu_dnn_silu_after) rather than as oneDNN's swish post-op:
 * where oneDNN runs AVX-512 kernels, whose swish post-op was measured
 * slower than the primitive without it followed by our 512-bit loop
 * (bench/results/models.md). By the ISA oneDNN dispatches to, so ranks
 * capped to one ISA (ipu_dnn_cap_isa) decide alike. */
static int silu_is_ours(void)
{
    unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    return (isa & (unsigned)dnnl_cpu_isa_avx512_core) == (unsigned)dnnl_cpu_isa_avx512_core;
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
        for (int i = 0; post && i < post->n && s == dnnl_success; i++) {
            if (i == post->n - 1 && post->kind[i] == IPU_FUSED_SILU && p && silu_is_ours()) {
                p->silu_after = 1;
                break;
            }
            s = append_post(po, &idx, post, i, p);
        }
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

/* The scratchpad region holds the activation reorders' scratchpads too. */
static void pad_covers_reorders(ipu_dnn_t *p)
{
    if (p->reorder_pad > p->pad_bytes)
        p->pad_bytes = p->reorder_pad;
}

ipu_status_t dnn_residual_io(const ipu_node_t *n, ipu_dnn_t *p)
{
    ipu_status_t st = IPU_OK;
    if (!p->has_res)
        return IPU_OK;
    p->res_user = p->dst_user;
    if (p->dst_out) /* from our layout into the primitive's */
        DNN_TRY(dnn_make_reorder(&p->dst_user, &p->dst_md, 1, &p->reorder_pad, &p->res_in),
                "reordering the residual");
    /* a copy of a residual already in the primitive's layout */
    DNN_TRY(dnn_make_reorder(&p->dst_md, &p->dst_md, 1, &p->reorder_pad, &p->res_copy),
            "copying the residual");
out:
    pad_covers_reorders(p);
    return st;
}

/* Each node's implementation hash (ipu_dnn_node_impl), by node address. */
static pthread_mutex_t g_impl_mu = PTHREAD_MUTEX_INITIALIZER;
static struct node_impl {
    const ipu_node_t *node;
    uint32_t hash;
} *g_impl;
static size_t g_n_impl, g_impl_cap;

static uint32_t fnv1a(uint32_t h, const char *s)
{
    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

static void record_impl(const ipu_node_t *n, const char *impl)
{
    pthread_mutex_lock(&g_impl_mu);
    size_t i = 0;
    while (i < g_n_impl && g_impl[i].node != n)
        i++;
    if (i == g_n_impl && g_n_impl == g_impl_cap) {
        size_t cap = g_impl_cap ? 2 * g_impl_cap : 256;
        struct node_impl *t = realloc(g_impl, cap * sizeof(*t));
        if (t) {
            g_impl = t;
            g_impl_cap = cap;
        }
    }
    if (i < g_impl_cap) {
        /* with the ISA: some names ("gemm:jit") do not tell it */
        uint32_t h = fnv1a(fnv1a(2166136261u, impl), ipu_dnn_isa());
        g_impl[i] = (struct node_impl){n, h ? h : 1}; /* 0: none made */
        if (i == g_n_impl)
            g_n_impl++;
    }
    pthread_mutex_unlock(&g_impl_mu);
}

uint32_t ipu_dnn_node_impl(const ipu_node_t *n)
{
    uint32_t h = 0;
    pthread_mutex_lock(&g_impl_mu);
    for (size_t i = 0; i < g_n_impl && h == 0; i++)
        if (g_impl[i].node == n)
            h = g_impl[i].hash;
    pthread_mutex_unlock(&g_impl_mu);
    return h;
}

void dnn_log_impl(const ipu_node_t *n, const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl)
        impl = "?";
    record_impl(n, impl);
    ipu_debug("node '%s' (%s): oneDNN %s, scratchpad %zu bytes", n->name, n->op_type, impl,
              dnn_pd_scratch(pd));
}

int dnn_pd_is_ref(const_dnnl_primitive_desc_t pd)
{
    static const char fused[] = "ref_fused_convolution"; /* two primitives: of what kernels */
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || impl == NULL)
        return 1;
    if (strncmp(impl, fused, sizeof(fused) - 1) == 0)
        return strstr(impl + sizeof(fused) - 1, ":ref") != NULL;
    return strncmp(impl, "ref", 3) == 0;
}

size_t dnn_pd_scratch(const_dnnl_primitive_desc_t pd)
{
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    return md ? dnnl_memory_desc_get_size(md) : 0;
}

ipu_dnn_t *dnn_new(void)
{
    ipu_dnn_t *p = calloc(1, sizeof(*p));
    if (p) {
        pthread_mutex_init(&p->mu, NULL);
        p->dw_extra = -1;
    }
    return p;
}

ipu_status_t dnn_start(const ipu_node_t *n, ipu_dnn_t **p)
{
    ipu_status_t st = IPU_OK;
    if ((*p = dnn_new()) == NULL)
        return ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory");
    if (dnn_engine() == NULL)
        DNN_TRY(dnn_engine_status(), "creating the CPU engine");
out:
    return st;
}

/* p->prim from pd; records the primitive's memory descriptors. */
ipu_status_t dnn_finish(const ipu_node_t *n, ipu_dnn_t *p, dnnl_primitive_desc_t pd)
{
    ipu_status_t st = IPU_OK;
    const dnnl_memory_desc_t *md;
    if ((md = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0)))
        p->src_md = *md;
    if ((md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0)))
        p->held[DNN_W].md = *md;
    if ((md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1)))
        p->bias_md = *md;
    if ((md = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0)))
        p->dst_md = *md;
    if ((md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0)))
        p->pad_md = *md;
    if (p->dw_extra >= 0) { /* the fused depthwise weights, in the layout it chose */
        dnn_held_t *h = &p->held[DNN_W_DW];
        int arg = DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS;
        if ((md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg)) == NULL)
            DNN_TRY(dnnl_invalid_arguments, "describing the depthwise weights");
        h->md = p->extra_md[p->dw_extra] = *md;
        h->reorder = !dnnl_memory_desc_equal(&h->md, &h->user);
    }
    p->pad_bytes = dnn_pd_scratch(pd);
    p->threads = g_made_threads;
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
    dnn_team_for_create();
    return dnn_make_reorder_here(from, to, user_pad, pad, out);
}

dnnl_status_t dnn_make_reorder_here(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
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

size_t ipu_dnn_scratch_direct(const ipu_dnn_t *p)
{
    if (p == NULL || !p->winograd || !p->direct_known)
        return ipu_dnn_scratch(p);
    size_t pad = p->direct_pad_bytes > p->reorder_pad ? p->direct_pad_bytes : p->reorder_pad;
    return dnn_align64(pad) + p->src_bytes + p->dst_bytes;
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
        DNN_TRY(dnn_make_reorder(src, &p->src_md, 1, &p->reorder_pad, &p->src_in), "reordering X");
        p->src_bytes = dnn_align64(dnnl_memory_desc_get_size(&p->src_md));
    }
    if (!dnnl_memory_desc_equal(&p->dst_md, dst)) {
        DNN_TRY(dnn_make_reorder(&p->dst_md, dst, 1, &p->reorder_pad, &p->dst_out), "reordering Y");
        p->dst_bytes = dnn_align64(dnnl_memory_desc_get_size(&p->dst_md));
    }
out:
    pad_covers_reorders(p);
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
    dnn_run_free(p);
    free(p->zero_bias);
    dnn_concat_free(p->cat);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* The layout b reads X (or as_residual R) in. */
static const dnnl_memory_desc_t *chain_target(const ipu_dnn_t *b, int as_residual)
{
    return as_residual ? &b->dst_md : &b->src_md;
}

int ipu_dnn_can_chain(const ipu_dnn_t *a, const ipu_dnn_t *b, int as_residual)
{
    if (a == NULL || b == NULL || a->dst_out == NULL)
        return 0;
    /* a layout padding the channels (oneDNN's blocked one, channels not
     * whole blocks): not for a concat, which copies whole blocks */
    if (b->cat && !as_residual && !a->relaid &&
        dnnl_memory_desc_get_size(&a->dst_md) != dnnl_memory_desc_get_size(&a->dst_user))
        return 0;
    const dnnl_memory_desc_t *am = dnn_out_md(a);
    if (b->cat && !as_residual) /* a concat reads any layout */
        return IPU_DNN_CHAIN_AS_IS;
    if (as_residual ? b->res_in && dnnl_memory_desc_equal(am, &b->dst_md)
                    : b->src_in && dnnl_memory_desc_equal(am, &b->src_md))
        return IPU_DNN_CHAIN_AS_IS;
    /* a reorder from a's layout in place of b's from ours: of the same dims */
    const dnnl_memory_desc_t *t = chain_target(b, as_residual);
    if ((as_residual && !b->has_res) || t->ndims != am->ndims)
        return 0;
    for (int i = 0; i < t->ndims; i++)
        if (t->dims[i] != am->dims[i])
            return 0;
    return IPU_DNN_CHAIN_REORDER;
}

ipu_status_t ipu_dnn_chain_reorder(const ipu_node_t *n, ipu_dnn_t *b, const ipu_dnn_t *a,
                                   int as_residual)
{
    ipu_status_t st = IPU_OK;
    dnnl_primitive_t r = NULL;
    const dnnl_memory_desc_t *t = chain_target(b, as_residual);
    DNN_TRY(dnn_make_reorder(dnn_out_md(a), t, 1, &b->reorder_pad, &r),
            as_residual ? "reordering the residual" : "reordering X");
    pad_covers_reorders(b);
    if (as_residual) {
        if (b->res_in)
            dnnl_primitive_destroy(b->res_in);
        b->res_in = r;
        b->res_user = *dnn_out_md(a);
    } else {
        if (b->src_in)
            dnnl_primitive_destroy(b->src_in);
        b->src_in = r;
        b->src_user = *dnn_out_md(a);
        b->src_bytes = dnn_align64(dnnl_memory_desc_get_size(t));
    }
out:
    return st;
}

void ipu_dnn_set_chain(ipu_dnn_t *p, int src_blocked, int dst_blocked, int res_blocked)
{
    if (p == NULL)
        return;
    p->chain_src |= src_blocked;
    p->chain_dst |= dst_blocked;
    p->chain_res |= res_blocked;
}

int ipu_dnn_plain(const ipu_dnn_t *p)
{
    return p && !p->src_in && !p->dst_out && !p->res_in && !p->chain_src && !p->chain_dst &&
           !p->chain_res && p->src_own == 0;
}

int ipu_dnn_chained_dst(const ipu_dnn_t *p)
{
    return p && (p->chain_dst || p->relaid);
}

dnnl_format_tag_t dnn_blocked_tag(int nd, int bs)
{
    static const dnnl_format_tag_t tags[3][3] = {
        {dnnl_aBc16b, dnnl_aBcd16b, dnnl_aBcde16b},
        {dnnl_aBc8b, dnnl_aBcd8b, dnnl_aBcde8b},
        {dnnl_aBc4b, dnnl_aBcd4b, dnnl_aBcde4b},
    };
    int b = bs == 16 ? 0 : bs == 8 ? 1 : bs == 4 ? 2 : -1;
    return b < 0 || nd < 1 || nd > 3 ? dnnl_format_tag_undef : tags[b][nd - 1];
}

int dnn_channel_block(void)
{
    unsigned core = (unsigned)dnnl_cpu_isa_avx512_core;
    return ((unsigned)dnnl_get_effective_cpu_isa() & core) == core ? 16 : 8;
}

int dnn_channel_blocked(const dnnl_memory_desc_t *md)
{
    const int r = md->ndims;
    const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
    if (r < 3 || r > 5 || md->format_kind != dnnl_blocked || b->inner_nblks != 1 ||
        b->inner_idxs[0] != 1 || md->padded_dims[1] != md->dims[1])
        return 0;
    const int bs = (int)b->inner_blks[0];
    dnnl_memory_desc_t m;
    return dnnl_memory_desc_init_by_tag(&m, r, md->dims, dnnl_f32, dnn_blocked_tag(r - 2, bs)) ==
                       dnnl_success &&
                   dnnl_memory_desc_equal(&m, md)
               ? bs
               : 0;
}

size_t ipu_dnn_out_bytes(const ipu_dnn_t *p)
{
    return p ? dnnl_memory_desc_get_size(dnn_out_md(p)) : 0;
}

int ipu_dnn_out_channel_blocked(const ipu_dnn_t *p)
{
    return p && p->dst_out && dnn_channel_blocked(dnn_out_md(p)) > 0;
}

int dnn_is_channels_last(const dnnl_memory_desc_t *md)
{
    const int r = md->ndims;
    const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
    if (r < 3 || r > 5 || md->format_kind != dnnl_blocked || b->inner_nblks != 0 ||
        md->offset0 != 0 || b->strides[1] != 1)
        return 0;
    dnnl_dim_t s = md->dims[1];
    for (int i = r - 1; i >= 2; i--) {
        if (md->padded_dims[i] != md->dims[i] || (md->dims[i] > 1 && b->strides[i] != s))
            return 0;
        s *= md->dims[i];
    }
    return md->padded_dims[1] == md->dims[1] && (md->dims[0] == 1 || b->strides[0] == s);
}

int ipu_dnn_channels_last_io(const ipu_dnn_t *p)
{
    if (p == NULL || !dnn_is_channels_last(p->dst_out && !p->chain_dst ? &p->dst_user : &p->dst_md))
        return 0;
    if (p->cat)
        return dnn_concat_sources_channels_last(p->cat);
    return dnn_is_channels_last(p->src_in && !p->chain_src ? &p->src_user : &p->src_md);
}

ipu_status_t ipu_dnn_relayout_for_concats(const ipu_node_t *n, ipu_dnn_t *p, int *blocked)
{
    ipu_status_t st = IPU_OK;
    dnnl_memory_desc_t cl;
    dnnl_primitive_t r = NULL;
    size_t pad = p->reorder_pad;
    const int rank = p->dst_md.ndims, bs = dnn_channel_block(),
              block = ipu_dnn_layout() == IPU_DNN_LAYOUT_BLOCKED && p->dst_md.dims[1] % bs == 0 ? bs : 0;
    *blocked = block > 0;
    if (rank < 3 || rank > 5)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "a rank %d output relaid for Concats", rank);
    if (p->chain_dst)
        return ipu_op_error(IPU_ERR_INTERNAL, n, "output already kept in the primitive's layout");
    DNN_TRY(dnnl_memory_desc_init_by_tag(&cl, rank, p->dst_md.dims, dnnl_f32,
                                         block > 0 ? dnn_blocked_tag(rank - 2, block)
                                                   : dnn_channels_last_tag(rank - 2)),
            "describing Y's layout for Concats");
    if (dnnl_memory_desc_equal(&cl, &p->dst_md)) { /* its own layout already */
        p->chain_dst = 1;
        return IPU_OK;
    }
    DNN_TRY(dnn_make_reorder(&p->dst_md, &cl, 1, &pad, &r), "reordering Y for Concats");
    if (p->dst_out)
        dnnl_primitive_destroy(p->dst_out);
    p->dst_out = r;
    p->dst_user = cl;
    p->reorder_pad = pad;
    pad_covers_reorders(p);
    p->dst_bytes = dnn_align64(dnnl_memory_desc_get_size(&p->dst_md));
    p->relaid = 1;
out:
    return st;
}
