#include "exec/stage.h"

#include "exec/ops/dnn_chain.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int *dup_ints(const int *a, int n)
{
    int *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    if (p && n > 0)
        memcpy(p, a, (size_t)n * sizeof(int));
    return p;
}

ipu_status_t ipu_stage_profile(ipu_stage_t *s)
{
    free(s->node_ms);
    s->node_ms = calloc((size_t)s->n_nodes + 1, sizeof(double));
    return s->node_ms ? IPU_OK : ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
}

typedef struct {
    const char *op, *name;
    double ms;
    int count;
} prof_row_t;

static int cmp_row(const void *a, const void *b)
{
    double x = ((const prof_row_t *)a)->ms, y = ((const prof_row_t *)b)->ms;
    return (x < y) - (x > y);
}

/* Append a formatted line to *buf (size *cap, used *len); 0 when out of memory. */
static int append(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int append(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
        va_end(ap);
        if (n < 0)
            return 0;
        if ((size_t)n < *cap - *len) {
            *len += (size_t)n;
            return 1;
        }
        char *nb = realloc(*buf, *cap * 2 + (size_t)n);
        if (nb == NULL)
            return 0;
        *buf = nb;
        *cap = *cap * 2 + (size_t)n;
    }
}

char *ipu_stage_profile_text(const ipu_stage_t *s, int runs, const char *where, int top_nodes)
{
    if (s->node_ms == NULL || runs <= 0)
        return NULL;
    const ipu_graph_t *g = s->g;
    prof_row_t *ops = calloc((size_t)s->n_nodes + 1, sizeof(*ops));
    prof_row_t *nodes = calloc((size_t)s->n_nodes + 1, sizeof(*nodes));
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap), tag[160];
    int nt = 0, ok = ops && nodes && buf;
    double total = 0;
    snprintf(tag, sizeof(tag), "profile%s%s%s: ", where ? " (" : "", where ? where : "", where ? ")" : "");
    for (int i = 0; ok && i < s->n_nodes; i++) {
        const ipu_node_t *n = &g->nodes[s->nodes[i]];
        int k = 0;
        while (k < nt && strcmp(ops[k].op, n->op_type) != 0)
            k++;
        if (k == nt)
            ops[nt++].op = n->op_type;
        ops[k].ms += s->node_ms[i];
        ops[k].count++;
        nodes[i] = (prof_row_t){.op = n->op_type, .name = n->name, .ms = s->node_ms[i]};
        total += s->node_ms[i];
    }
    if (ok) {
        buf[0] = '\0';
        qsort(ops, (size_t)nt, sizeof(*ops), cmp_row);
        qsort(nodes, (size_t)s->n_nodes, sizeof(*nodes), cmp_row);
        ok = append(&buf, &len, &cap, "%s%-24s %6s %10s %6s\n", tag, "op", "nodes", "ms/run", "share");
    }
    for (int k = 0; ok && k < nt; k++)
        ok = append(&buf, &len, &cap, "%s%-24s %6d %10.3f %5.1f%%\n", tag, ops[k].op, ops[k].count,
                    ops[k].ms / runs, total > 0 ? 100 * ops[k].ms / total : 0);
    if (ok && top_nodes > 0 && s->n_nodes > 0)
        ok = append(&buf, &len, &cap, "%s%-40s %-18s %10s %6s\n", tag, "node", "op", "ms/run", "share");
    for (int k = 0; ok && k < top_nodes && k < s->n_nodes; k++)
        ok = append(&buf, &len, &cap, "%s%-40s %-18s %10.3f %5.1f%%\n", tag,
                    nodes[k].name && nodes[k].name[0] ? nodes[k].name : "(unnamed)", nodes[k].op,
                    nodes[k].ms / runs, total > 0 ? 100 * nodes[k].ms / total : 0);
    free(ops);
    free(nodes);
    if (!ok) {
        free(buf);
        return NULL;
    }
    return buf;
}

size_t ipu_node_scratch(const ipu_graph_t *g, const ipu_node_t *n)
{
    return !n->folded && n->op && n->op->scratch ? n->op->scratch(g, n) : 0;
}

size_t ipu_node_held(const ipu_graph_t *g, const ipu_node_t *n)
{
    return !n->folded && n->op && n->op->held ? n->op->held(g, n) : 0;
}

int ipu_node_replaces(const ipu_graph_t *g, const ipu_node_t *n, int slot)
{
    return slot == 1 && n->op && (n->op->flags & IPU_OP_HELD_REPLACES_INPUT1) &&
           ipu_node_held(g, n) > 0;
}

ipu_stage_mem_t ipu_stage_mem(const ipu_stage_t *s)
{
    ipu_stage_mem_t m = {.weights = s->weight_bytes, .winograd = s->winograd_bytes,
                         .scratch_direct = s->scratch_direct,
                         .activations = s->plan.arena_bytes,
                         .scratch = s->scratch_bytes};
    m.total = m.weights + m.activations + m.scratch;
    return m;
}

void ipu_stage_mem_str(const ipu_stage_mem_t *m, size_t capacity, char *buf, size_t len)
{
    char t[IPU_BYTES_STR_LEN], w[IPU_BYTES_STR_LEN], a[IPU_BYTES_STR_LEN], sc[IPU_BYTES_STR_LEN],
        c[IPU_BYTES_STR_LEN];
    ipu_bytes_str(m->total, t);
    ipu_bytes_str(capacity, c);
    if (strcmp(t, c) == 0) { /* "needs 40.0 MiB but an IPU has 40.0 MiB": say by how much */
        snprintf(t, sizeof(t), "%zu B", m->total);
        snprintf(c, sizeof(c), "%zu B", capacity);
    }
    int off = snprintf(buf, len, "needs %s (weights %s + activations %s + scratch %s) but an IPU has %s", t,
                       ipu_bytes_str(m->weights, w), ipu_bytes_str(m->activations, a),
                       ipu_bytes_str(m->scratch, sc), c);
    if (m->winograd && off > 0 && (size_t)off < len) { /* Winograd always holds more weights */
        size_t direct = m->weights - m->winograd + m->activations + m->scratch_direct;
        char more[64] = "";
        if (m->scratch > m->scratch_direct)
            snprintf(more, sizeof(more), " and %s to the scratch",
                     ipu_bytes_str(m->scratch - m->scratch_direct, a));
        snprintf(buf + off, len - (size_t)off, "; Winograd adds %s to the 3x3 convolutions' weights%s: with "
                 "IPU_EXEC_WINOGRAD=0 (slower convolutions) it needs %s", ipu_bytes_str(m->winograd, w), more,
                 ipu_bytes_str(direct, t));
    }
}

ipu_status_t ipu_stage_build(const ipu_graph_t *g, const int *nodes, int n,
                             const int *inputs, int n_inputs,
                             const int *outputs, int n_outputs, ipu_stage_t *out)
{
    ipu_stage_t s = {.g = g};
    ipu_status_t st;
    s.nodes = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    s.inputs = dup_ints(inputs, n_inputs);
    s.outputs = dup_ints(outputs, n_outputs);
    if (!s.nodes || !s.inputs || !s.outputs) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory building a stage");
        goto fail;
    }
    s.n_inputs = n_inputs;
    s.n_outputs = n_outputs;
    unsigned char *seen = calloc((size_t)g->n_values + 1, 1);
    if (seen == NULL) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory building a stage");
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        const ipu_node_t *nd = &g->nodes[nodes[i]];
        if (nd->folded)
            continue;
        s.nodes[s.n_nodes++] = nodes[i];
        size_t b = ipu_node_scratch(g, nd), bd = b; /* bd: on direct kernels */
        if (b > s.scratch_bytes)
            s.scratch_bytes = b;
        s.weight_bytes += ipu_node_held(g, nd); /* e.g. Conv weights in oneDNN's layout */
        if ((nd->op->flags & IPU_OP_DNN) && nd->state) { /* what it would take without Winograd */
            const ipu_dnn_t *p = ((const ipu_dnn_node_t *)nd->state)->p;
            s.winograd_bytes += ipu_dnn_winograd_bytes(p);
            size_t own = ipu_dnn_scratch(p);
            bd = (b > own ? b - own : 0) + ipu_dnn_scratch_direct(p);
        }
        if (bd > s.scratch_direct)
            s.scratch_direct = bd;
        for (int k = 0; k < nd->n_inputs; k++) {
            int v = nd->inputs[k];
            if (v >= 0 && g->values[v].data && !seen[v] && !ipu_node_replaces(g, nd, k)) {
                seen[v] = 1;
                s.weight_bytes += (size_t)ipu_shape_numel(g->values[v].rank, g->values[v].dims) *
                                  ipu_dtype_size(g->values[v].dtype);
            }
        }
    }
    free(seen);
    st = ipu_plan_buffers(g, s.nodes, s.n_nodes, inputs, n_inputs, outputs, n_outputs, &s.plan);
    if (st != IPU_OK)
        goto fail;
    *out = s;
    return IPU_OK;
fail:
    ipu_stage_free(&s);
    return st;
}

/* Append v to list (length *n) unless seen[v]. */
static void add_once(int *list, int *n, unsigned char *seen, int v)
{
    if (!seen[v]) {
        seen[v] = 1;
        list[(*n)++] = v;
    }
}

ipu_status_t ipu_stage_build_of(const ipu_graph_t *g, const int *stage_of, int s, unsigned flags,
                                ipu_stage_t *out)
{
    size_t nv = (size_t)g->n_values + 1;
    int *nodes = malloc(((size_t)g->n_nodes + 1) * sizeof(int));
    int *ins = malloc(nv * sizeof(int)), *outs = malloc((nv + (size_t)g->n_outputs) * sizeof(int));
    /* per value: listed as an input; listed as an output; read outside the stage */
    unsigned char *in_seen = calloc(nv, 1), *out_seen = calloc(nv, 1), *away = calloc(nv, 1);
    ipu_status_t st = IPU_OK;
    if (!nodes || !ins || !outs || !in_seen || !out_seen || !away) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory building a stage");
        goto done;
    }
    for (int k = 0; k < g->n_outputs; k++)
        away[g->outputs[k]] = 1;
    for (int i = 0; i < g->n_nodes; i++) { /* read by a node of another stage */
        const ipu_node_t *nd = &g->nodes[i];
        if (stage_of[i] < 0 || stage_of[i] == s)
            continue;
        for (int k = 0; k < nd->n_inputs; k++)
            if (nd->inputs[k] >= 0)
                away[nd->inputs[k]] = 1;
    }
    int n = 0, n_ins = 0, n_outs = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        int id = g->order[i];
        const ipu_node_t *nd = &g->nodes[id];
        if (stage_of[id] != s)
            continue;
        nodes[n++] = id;
        for (int k = 0; k < nd->n_inputs; k++) {
            int v = nd->inputs[k];
            if (ipu_value_is_act(g, v) && (g->values[v].producer < 0 || stage_of[g->values[v].producer] != s))
                add_once(ins, &n_ins, in_seen, v);
        }
        for (int k = 0; k < nd->n_outputs; k++) {
            int v = nd->outputs[k];
            if (ipu_value_is_act(g, v) && away[v])
                add_once(outs, &n_outs, out_seen, v);
        }
    }
    for (int k = 0; k < g->n_outputs; k++) {
        int v = g->outputs[k], p = g->values[v].producer;
        if (((flags & IPU_STAGE_FIRST) && p < 0) || ((flags & IPU_STAGE_LAST) && p >= 0 && stage_of[p] < 0))
            add_once(outs, &n_outs, out_seen, v);
    }
    st = ipu_stage_build(g, nodes, n, ins, n_ins, outs, n_outs, out);
done:
    free(nodes);
    free(ins);
    free(outs);
    free(in_seen);
    free(out_seen);
    free(away);
    return st;
}

void ipu_stage_free(ipu_stage_t *s)
{
    if (s == NULL)
        return;
    free(s->nodes);
    free(s->inputs);
    free(s->outputs);
    free(s->node_ms);
    ipu_plan_free(&s->plan);
    memset(s, 0, sizeof(*s));
}

/* The tensor view of value v in this stage: constant bytes or arena slot. */
static void bind_value(const ipu_stage_t *s, uint8_t *arena, int v, ipu_tensor_t *t)
{
    *t = ipu_value_tensor(s->g, v);
    if (v >= 0 && t->data == NULL && s->plan.offset[v] != IPU_PLAN_NONE)
        t->data = arena + s->plan.offset[v];
}

ipu_status_t ipu_stage_load(const ipu_stage_t *s)
{
    for (int i = 0; i < s->n_nodes; i++) {
        const ipu_node_t *nd = &s->g->nodes[s->nodes[i]];
        ipu_status_t st = nd->op->load ? nd->op->load(s->g, nd) : IPU_OK;
        if (st != IPU_OK)
            return st;
        ipu_release_loaded(s->release, s->nodes[i]);
    }
    return IPU_OK;
}

struct ipu_release {
    ipu_graph_t *g;
    int *left;             /* per value: readers still to load; -1: not freed */
    unsigned char *loaded; /* per node */
    size_t freed;
};

ipu_release_t *ipu_release_new(ipu_graph_t *g, const unsigned char *local)
{
    ipu_release_t *r = calloc(1, sizeof(*r));
    if (r == NULL || (r->left = calloc((size_t)g->n_values + 1, sizeof(int))) == NULL ||
        (r->loaded = calloc((size_t)g->n_nodes + 1, 1)) == NULL) {
        ipu_release_end(r);
        return NULL;
    }
    r->g = g;
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v].data_kind != IPU_CONST_OWNED || g->values[v].data == NULL)
            r->left[v] = -1;
    for (int k = 0; k < g->n_inputs; k++)
        r->left[g->inputs[k]] = -1;
    for (int k = 0; k < g->n_outputs; k++)
        r->left[g->outputs[k]] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        const ipu_node_t *nd = &g->nodes[i];
        for (int k = 0; k < nd->n_inputs && !nd->folded; k++) {
            int v = nd->inputs[k];
            if (v < 0 || r->left[v] < 0)
                continue;
            if ((local == NULL || local[i]) && ipu_node_replaces(g, nd, k))
                r->left[v]++;
            else
                r->left[v] = -1;
        }
    }
    return r;
}

void ipu_release_loaded(ipu_release_t *r, int node)
{
    if (r == NULL || r->loaded[node])
        return;
    r->loaded[node] = 1;
    const ipu_node_t *nd = &r->g->nodes[node];
    for (int k = 0; k < nd->n_inputs; k++) {
        int v = nd->inputs[k];
        if (v < 0 || r->left[v] <= 0 || --r->left[v] > 0)
            continue;
        ipu_value_t *val = &r->g->values[v];
        r->freed += (size_t)ipu_shape_numel(val->rank, val->dims) * ipu_dtype_size(val->dtype);
        free(val->data);
        val->data = NULL;
        val->data_kind = IPU_CONST_HELD;
        r->left[v] = -1;
    }
}

size_t ipu_release_end(ipu_release_t *r)
{
    if (r == NULL)
        return 0;
    size_t freed = r->freed;
    free(r->left);
    free(r->loaded);
    free(r);
    return freed;
}

ipu_status_t ipu_stage_run(const ipu_stage_t *s, uint8_t *arena, void *scratch, int threads)
{
    const ipu_graph_t *g = s->g;
    ipu_kernel_ctx_t ctx = {.threads = threads, .scratch = scratch, .scratch_bytes = s->scratch_bytes};
    for (int i = 0; i < s->n_nodes; i++) {
        int idx = s->nodes[i];
        const ipu_node_t *nd = &g->nodes[idx];
        if (s->plan.alias[idx])
            continue;
        ipu_tensor_t in[nd->n_inputs + 1], out[nd->n_outputs + 1];
        for (int k = 0; k < nd->n_inputs; k++)
            bind_value(s, arena, nd->inputs[k], &in[k]);
        for (int k = 0; k < nd->n_outputs; k++)
            bind_value(s, arena, nd->outputs[k], &out[k]);
        struct timespec t0, t1;
        if (s->node_ms)
            clock_gettime(CLOCK_MONOTONIC, &t0);
        ipu_status_t st = nd->op->run(nd, in, out, &ctx);
        if (st != IPU_OK)
            return st;
        if (s->node_ms) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            s->node_ms[i] += (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
        }
    }
    return IPU_OK;
}
