/* The oneDNN layer (onednn.h): running a primitive (ipu_dnn_run,
 * ipu_dnn_exec) and the weights reordered for it at load. A run only points
 * memory objects kept per (primitive, thread) at its buffers and executes:
 * no lock, no allocation once the weights are loaded. */
#include "exec/onednn_impl.h"

#include "common/hugealloc.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* A new buffer holding w reordered into h's layout (*out, caller frees:
 * with ipu_free_pooled() where pooled, the copy kept while a stage is
 * loaded, else free()). */
static ipu_status_t reorder_weights(const ipu_node_t *n, const dnn_held_t *h, dnnl_stream_t s,
                                    const void *w, int pooled, void **out)
{
    ipu_status_t st = IPU_OK;
    dnnl_primitive_t r = NULL;
    size_t bytes = dnn_align64(dnnl_memory_desc_get_size(&h->md));
    void *buf = pooled ? ipu_alloc_pooled(bytes) : aligned_alloc(64, bytes ? bytes : 64);
    *out = NULL;
    if (buf == NULL)
        return ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory reordering the weights");
    /* for the team that runs it now: a run's, or the loader's */
    DNN_TRY(dnn_make_reorder_here(&h->user, &h->md, 0, NULL, &r), "reordering W");
    DNN_TRY(dnn_run_reorder(r, s, &h->user, w, &h->md, buf, NULL), "reordering W");
    *out = buf;
    buf = NULL;
out:
    if (r)
        dnnl_primitive_destroy(r);
    if (pooled)
        ipu_free_pooled(buf);
    else
        free(buf);
    return st;
}

/* Load the weights at w into p's holder h (ipu_dnn_load_weights). */
static ipu_status_t load_held(const ipu_node_t *n, ipu_dnn_t *p, dnn_held_t *h, const void *w)
{
    ipu_status_t st = IPU_OK;
    dnnl_stream_t s = NULL;
    if (!h->reorder || w == NULL)
        return IPU_OK;
    pthread_mutex_lock(&p->mu);
    dnn_wei_t *cur = atomic_load_explicit(&h->wei, memory_order_acquire);
    if ((cur == NULL || cur->from != w) && (st = dnn_stream(n, &s)) == IPU_OK) {
        dnn_wei_t *rec = calloc(1, sizeof(*rec));
        if (rec == NULL)
            st = ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory reordering the weights");
        else if ((st = reorder_weights(n, h, s, w, 1, &rec->buf)) == IPU_OK) {
            rec->from = w;
            rec->prev = cur;
            /* published whole: a run that sees rec sees its buffer filled */
            atomic_store_explicit(&h->wei, rec, memory_order_release);
            rec = NULL;
        }
        free(rec);
    }
    pthread_mutex_unlock(&p->mu);
    return st;
}

ipu_status_t ipu_dnn_load_weights(const ipu_node_t *n, ipu_dnn_t *p, const float *w)
{
    return p ? load_held(n, p, &p->held[DNN_W], w) : IPU_OK;
}

ipu_status_t ipu_dnn_load_post_weights(const ipu_node_t *n, ipu_dnn_t *p, const void *const *post)
{
    if (p == NULL || p->dw_extra < 0 || post == NULL)
        return IPU_OK;
    return load_held(n, p, &p->held[DNN_W_DW], post[p->dw_extra]);
}

size_t ipu_dnn_weights_held(const ipu_dnn_t *p)
{
    size_t b = 0;
    for (int i = 0; p && i < DNN_HELD; i++)
        if (p->held[i].reorder)
            b += dnn_align64(dnnl_memory_desc_get_size(&p->held[i].md));
    return b;
}

size_t ipu_dnn_winograd_bytes(const ipu_dnn_t *p)
{
    if (p == NULL || !p->winograd || !p->direct_known)
        return 0;
    size_t held = ipu_dnn_weights_held(p);
    return held > p->direct_wei_bytes ? held - p->direct_wei_bytes : 0;
}

/* ipu_dnn_keep_weights(): this thread's copies of the weights last
 * reordered for a run, one per holder, kept for the next runs of the same
 * primitive at the same address. */
static _Thread_local struct {
    int on;
    struct {
        const ipu_dnn_t *p;
        const void *from;
        void *buf;
    } held[DNN_HELD];
} g_keep;

void ipu_dnn_keep_weights(int on)
{
    for (int i = 0; i < DNN_HELD; i++)
        free(g_keep.held[i].buf);
    memset(&g_keep, 0, sizeof(g_keep));
    g_keep.on = on;
}

/* The weights of p's holder i to run with: ours, the copy made at load
 * (no lock: it is published atomically), the copy ipu_dnn_keep_weights()
 * kept, or (*tmp, freed by the caller) a copy made now. */
static ipu_status_t run_weights(const ipu_node_t *n, ipu_dnn_t *p, int i, dnnl_stream_t s,
                                const void *w, const void **out, void **tmp)
{
    const dnn_held_t *h = &p->held[i];
    *tmp = NULL;
    *out = w;
    if (!h->reorder)
        return IPU_OK;
    const dnn_wei_t *ready = atomic_load_explicit(&h->wei, memory_order_acquire);
    if (ready && (ready->from == w || w == NULL)) { /* NULL: ours freed, the copy kept */
        *out = ready->buf;
        return IPU_OK;
    }
    if (w == NULL)
        return ipu_op_error(IPU_ERR_INTERNAL, n, "its weights were freed before they were loaded");
    if (g_keep.on && g_keep.held[i].p == p && g_keep.held[i].from == w) {
        *out = g_keep.held[i].buf;
        return IPU_OK;
    }
    ipu_status_t st = reorder_weights(n, h, s, w, 0, tmp);
    *out = *tmp;
    if (st == IPU_OK && g_keep.on) { /* the caller does not free it now */
        free(g_keep.held[i].buf);
        g_keep.held[i].p = p;
        g_keep.held[i].from = w;
        g_keep.held[i].buf = *tmp;
        *tmp = NULL;
    }
    return st;
}

/* ---- a run's primitives and their memory objects -------------------------
 *
 * A run executes up to four primitives in order (the reorder of X, the copy
 * of the residual into Y, the primitive, the reorder of Y). The memory
 * objects they take are made on a thread's first run and kept in its slot;
 * later runs only re-point those whose buffer moved (in a stage's arena,
 * none does). */

enum { CALL_SRC, CALL_RES, CALL_MAIN, CALL_DST, N_CALLS, MAX_ARGS = 16 };

/* What one primitive of a run takes: DNNL_ARG_* ids, descriptors, data. */
typedef struct {
    dnnl_primitive_t prim; /* NULL: not run this time */
    int n;
    int which[MAX_ARGS];
    const dnnl_memory_desc_t *md[MAX_ARGS];
    const void *data[MAX_ARGS];
} call_plan_t;

/* Memory objects made for plan-alike calls of one primitive. */
typedef struct {
    dnnl_primitive_t prim; /* made for (NULL: none made) */
    int n;
    dnnl_exec_arg_t arg[MAX_ARGS];
    const void *at[MAX_ARGS]; /* the buffer each points to */
    unsigned padded;          /* bit i: arg i's layout has padding */
} call_mem_t;

struct dnn_slot {
    call_mem_t call[N_CALLS];
};

static void plan_arg(call_plan_t *c, int which, const dnnl_memory_desc_t *md, const void *data)
{
    c->which[c->n] = which;
    c->md[c->n] = md;
    c->data[c->n++] = data;
}

/* Reorder r from (mf) into to (mt), with its scratchpad in pad. */
static void plan_reorder(call_plan_t *c, dnnl_primitive_t r, const dnnl_memory_desc_t *mf,
                         const void *from, const dnnl_memory_desc_t *mt, void *to, void *pad)
{
    const_dnnl_primitive_desc_t pd;
    const dnnl_memory_desc_t *pmd;
    c->prim = r;
    plan_arg(c, DNNL_ARG_FROM, mf, from);
    plan_arg(c, DNNL_ARG_TO, mt, to);
    if (dnnl_primitive_get_primitive_desc(r, &pd) == dnnl_success &&
        (pmd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0)) &&
        dnnl_memory_desc_get_size(pmd) > 0)
        plan_arg(c, DNNL_ARG_SCRATCHPAD, pmd, pad);
}

static int md_padded(const dnnl_memory_desc_t *md)
{
    for (int i = 0; i < md->ndims; i++)
        if (md->padded_dims[i] != md->dims[i] || md->padded_offsets[i] != 0)
            return 1;
    return 0;
}

static void call_release(call_mem_t *m)
{
    for (int i = 0; i < m->n; i++)
        dnnl_memory_destroy(m->arg[i].memory);
    m->n = 0;
    m->prim = NULL;
}

static void slot_release(dnn_slot_t *sl)
{
    for (int c = 0; c < N_CALLS; c++)
        call_release(&sl->call[c]);
}

/* Point m's memory objects at c's buffers, made first when m holds none
 * for c's primitive and arguments. A buffer of a padded layout is set on
 * every run, as a new memory object's would be (oneDNN zeroes its padding
 * then). */
static dnnl_status_t call_bind(call_mem_t *m, const call_plan_t *c, dnnl_stream_t s)
{
    int same = m->prim == c->prim && m->n == c->n;
    for (int i = 0; same && i < c->n; i++)
        same = m->arg[i].arg == c->which[i];
    if (!same) {
        call_release(m);
        for (int i = 0; i < c->n; i++) {
            dnnl_status_t r = dnnl_memory_create(&m->arg[i].memory, c->md[i], dnn_engine(),
                                                 (void *)c->data[i]);
            if (r != dnnl_success) {
                call_release(m);
                return r;
            }
            m->arg[i].arg = c->which[i];
            m->at[i] = c->data[i];
            m->n = i + 1;
            if (md_padded(c->md[i]))
                m->padded |= 1u << i;
            else
                m->padded &= ~(1u << i);
        }
        m->prim = c->prim;
        return dnnl_success;
    }
    for (int i = 0; i < c->n; i++)
        if (m->at[i] != c->data[i] || (m->padded & (1u << i))) {
            dnnl_status_t r = dnnl_memory_set_data_handle_v2(m->arg[i].memory, (void *)c->data[i], s);
            if (r != dnnl_success)
                return r;
            m->at[i] = c->data[i];
        }
    return dnnl_success;
}

/* This thread's token: the address of a thread-local (unique among the
 * live threads). */
static _Thread_local char g_thread_token;

/* The calling thread's slot in p, claimed on its first run; NULL when the
 * slots are taken by other threads or out of memory (the run then makes
 * its memory objects for itself). */
static dnn_slot_t *slot_of(ipu_dnn_t *p)
{
    uintptr_t me = (uintptr_t)&g_thread_token;
    for (int i = 0; i < DNN_SLOTS; i++) {
        uintptr_t o = atomic_load_explicit(&p->owner[i], memory_order_acquire);
        if (o == 0 && atomic_compare_exchange_strong(&p->owner[i], &o, me)) {
            p->slot[i] = calloc(1, sizeof(dnn_slot_t)); /* read by its owner only */
            return p->slot[i];
        }
        if (o == me)
            return p->slot[i];
    }
    return NULL;
}

/* Run p: the operands of ipu_dnn_run() and the maker's further ones
 * (extra[i] for p->extra_arg[i], NULL only when p has none). */
static ipu_status_t run(const ipu_node_t *n, ipu_dnn_t *p, const float *src, const float *weights,
                        const float *bias, const float *res, const void *const *extra, float *dst,
                        const ipu_kernel_ctx_t *ctx)
{
    ipu_status_t st;
    dnnl_stream_t s = NULL;
    const void *w = NULL, *w_dw = NULL;
    void *tmp = NULL, *tmp_dw = NULL;
    call_plan_t c[N_CALLS];
    if (ipu_dnn_scratch(p) > ctx->scratch_bytes)
        return ipu_op_error(IPU_ERR_INTERNAL, n, "scratch too small");
    if ((st = dnn_stream(n, &s)) != IPU_OK)
        return st;
    int threads = ctx->threads > 0 ? ctx->threads : 1;
    if (p->threads > 0 && p->threads < threads) /* made for one (dnn_pd_create) */
        threads = p->threads;
    if (omp_get_max_threads() != threads)
        omp_set_num_threads(threads);
    if ((st = run_weights(n, p, DNN_W, s, weights, &w, &tmp)) != IPU_OK)
        return st;
    if (p->dw_extra >= 0 && (st = run_weights(n, p, DNN_W_DW, s, extra ? extra[p->dw_extra] : NULL,
                                              &w_dw, &tmp_dw)) != IPU_OK) {
        free(tmp);
        return st;
    }
    dnn_slot_t *sl = slot_of(p), own;
    if (sl == NULL) {
        memset(&own, 0, sizeof own);
        sl = &own;
    }
    for (int k = 0; k < N_CALLS; k++) {
        c[k].prim = NULL;
        c[k].n = 0;
    }
    uint8_t *pad = ctx->scratch, *xs = pad + dnn_align64(p->pad_bytes), *ys = xs + p->src_bytes;
    const void *x = src;
    void *y = dst;
    if (p->src_in && !p->chain_src) {
        plan_reorder(&c[CALL_SRC], p->src_in, &p->src_user, src, &p->src_md, xs, pad);
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
            plan_reorder(&c[CALL_RES], as_dst ? p->res_copy : p->res_in,
                         as_dst ? &p->dst_md : &p->res_user, res, &p->dst_md, y, pad);
    }
    call_plan_t *m = &c[CALL_MAIN];
    m->prim = p->prim;
    plan_arg(m, DNNL_ARG_SRC, &p->src_md, x);
    if (w)
        plan_arg(m, DNNL_ARG_WEIGHTS, &p->held[DNN_W].md, w);
    for (int i = 0; i < p->n_extra; i++)
        plan_arg(m, p->extra_arg[i], &p->extra_md[i], i == p->dw_extra ? w_dw : extra[i]);
    if (bias || p->zero_bias)
        plan_arg(m, DNNL_ARG_BIAS, &p->bias_md, bias ? bias : p->zero_bias);
    plan_arg(m, DNNL_ARG_DST, &p->dst_md, y);
    if (dnnl_memory_desc_get_size(&p->pad_md) > 0)
        plan_arg(m, DNNL_ARG_SCRATCHPAD, &p->pad_md, pad);
    if (p->dst_out && !p->chain_dst)
        plan_reorder(&c[CALL_DST], p->dst_out, &p->dst_md, ys, &p->dst_user, dst, pad);
    static const char *const what[N_CALLS] = {"reordering X", "copying the residual", "executing",
                                              "reordering Y"};
    for (int k = 0; k < N_CALLS; k++)
        if (c[k].prim) {
            call_mem_t *cm = &sl->call[k];
            DNN_TRY(call_bind(cm, &c[k], s), what[k]);
            DNN_TRY(dnnl_primitive_execute(c[k].prim, s, cm->n, cm->arg), what[k]);
        }
    DNN_TRY(dnnl_stream_wait(s), "executing");
out:
    if (sl == &own)
        slot_release(&own);
    free(tmp);
    free(tmp_dw);
    return st;
}

int ipu_dnn_sums_in_place(const ipu_dnn_t *p)
{
    return p && p->has_res && (p->res_in == NULL || p->chain_res); /* run()'s as_dst */
}

size_t ipu_dnn_silu_after(const ipu_dnn_t *p)
{
    if (p == NULL || !p->silu_after)
        return 0;
    /* run()'s Y: reordered into ours, or the primitive's as it wrote it */
    const dnnl_memory_desc_t *y = p->dst_out && !p->chain_dst ? &p->dst_user : &p->dst_md;
    return dnnl_memory_desc_get_size(y) / sizeof(float);
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

void dnn_run_free(ipu_dnn_t *p)
{
    for (int i = 0; i < DNN_SLOTS; i++)
        if (p->slot[i]) {
            slot_release(p->slot[i]);
            free(p->slot[i]);
            p->slot[i] = NULL;
        }
    for (int i = 0; i < DNN_HELD; i++) {
        for (dnn_wei_t *r = atomic_load(&p->held[i].wei), *prev; r; r = prev) {
            prev = r->prev;
            ipu_free_pooled(r->buf);
            free(r);
        }
        atomic_store(&p->held[i].wei, NULL);
    }
}
