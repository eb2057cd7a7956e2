#include "exec/plan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int root;        /* representative value (alias groups share one) */
    int first, last; /* lifetime in step units */
    size_t bytes;
} buf_t;

static int find_root(int *parent, int v)
{
    while (parent[v] != v)
        v = parent[v] = parent[parent[v]];
    return v;
}

static int cmp_size_desc(const void *a, const void *b)
{
    const buf_t *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return x->first - y->first;
}

/* Whether placed buffer j moves *best, the offset tried for bufs[i]: it
 * overlaps bufs[i] in lifetime and [*best, *best + bytes) in memory; then
 * *best is its end. */
static inline int bumps(const buf_t *bufs, const size_t *off, int i, int j, size_t *best)
{
    if (bufs[j].last < bufs[i].first || bufs[i].last < bufs[j].first)
        return 0;
    size_t a = off[j], b = a + bufs[j].bytes;
    if (*best < b && a < *best + bufs[i].bytes) {
        *best = b;
        return 1;
    }
    return 0;
}

/* The lowest offset for bufs[i] clear of the placed buffers cand[0..nc)
 * (indices into bufs, off their offsets; cand NULL: bufs[0..nc)) whose
 * lifetimes overlap its own: from 0, a candidate that overlaps moves it
 * to that candidate's end, until none does. Each move passes a span the
 * buffer cannot use, so the result is the lowest offset that fits, in any
 * order of cand. */
static size_t lowest_fit(const buf_t *bufs, const size_t *off, int i, const int *cand, int nc)
{
    size_t best = 0;
    for (int again = 1; again;) {
        again = 0;
        if (cand)
            for (int c = 0; c < nc; c++)
                again |= bumps(bufs, off, i, cand[c], &best);
        else
            for (int j = 0; j < nc; j++)
                again |= bumps(bufs, off, i, j, &best);
    }
    return best;
}

/* Placed buffers live at each step (indices into bufs). */
typedef struct {
    int *idx, n, cap;
} step_list_t;

static int step_add(step_list_t *l, int i)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 4;
        int *q = realloc(l->idx, (size_t)cap * sizeof(int));
        if (q == NULL)
            return -1;
        l->idx = q;
        l->cap = cap;
    }
    l->idx[l->n++] = i;
    return 0;
}

/* Whether the per-step lists cost less than scanning every placed buffer:
 * reading a buffer's candidates visits the lists of its steps, so the
 * lists cost about the sum over steps of the buffers live there, squared;
 * the scan about nb^2 / 2. A chain of nodes keeps a few buffers live per
 * step; many values read by one node (a wide Concat) keep them all. */
static int lists_pay(const buf_t *bufs, int nb, int end)
{
    long long *live = calloc((size_t)end + 2, sizeof(long long)), cost = 0;
    if (live == NULL)
        return 0;
    for (int i = 0; i < nb; i++) { /* live[t] by a difference array */
        live[bufs[i].first]++;
        live[bufs[i].last + 1]--;
    }
    for (int t = 0, n = 0; t <= end; t++) {
        n += (int)live[t];
        cost += (long long)n * n;
    }
    free(live);
    return cost < (long long)nb * nb / 4;
}

/* Offsets (off) for bufs[0..nb) in that order, each its lowest fit
 * (lowest_fit) among the placed buffers; lifetimes lie in [0, end]. The
 * candidates are every placed buffer, or, where that costs less
 * (lists_pay), those listed at the buffer's steps. Errors:
 * IPU_ERR_NO_MEMORY. */
static ipu_status_t place(const buf_t *bufs, int nb, int end, size_t *off, size_t *arena)
{
    ipu_status_t st = IPU_ERR_NO_MEMORY;
    int lists = lists_pay(bufs, nb, end);
    step_list_t *live = lists ? calloc((size_t)end + 1, sizeof(step_list_t)) : NULL;
    int *seen = lists ? malloc((size_t)(nb + 1) * sizeof(int)) : NULL;
    int *cand = lists ? malloc((size_t)(nb + 1) * sizeof(int)) : NULL;
    if (lists && (!live || !seen || !cand))
        goto out;
    for (int i = 0; i < nb; i++) {
        int nc = 0;
        if (lists) {
            for (int t = bufs[i].first; t <= bufs[i].last; t++)
                for (int k = 0; k < live[t].n; k++) {
                    int j = live[t].idx[k];
                    if (seen[j] != i) {
                        seen[j] = i;
                        cand[nc++] = j;
                    }
                }
        }
        off[i] = lists ? lowest_fit(bufs, off, i, cand, nc) : lowest_fit(bufs, off, i, NULL, i);
        if (off[i] + bufs[i].bytes > *arena)
            *arena = off[i] + bufs[i].bytes;
        if (!lists)
            continue;
        seen[i] = -1;
        for (int t = bufs[i].first; t <= bufs[i].last; t++)
            if (step_add(&live[t], i) != 0)
                goto out;
    }
    st = IPU_OK;
out:
    for (int t = 0; live && t <= end; t++)
        free(live[t].idx);
    free(live);
    free(seen);
    free(cand);
    return st;
}

int ipu_plan_is_view(const ipu_graph_t *g, const ipu_node_t *n)
{
    if (n->op == NULL || !(n->op->flags & IPU_OP_ALIAS_INPUT0) || n->n_inputs < 1 || n->n_outputs < 1)
        return 0;
    for (int k = 1; k < n->n_outputs; k++) /* e.g. Dropout's mask: run() must write it */
        if (n->outputs[k] >= 0)
            return 0;
    int in0 = n->inputs[0], out0 = n->outputs[0];
    return ipu_value_is_act(g, in0) && ipu_value_is_act(g, out0) &&
           ipu_value_buffer_bytes(&g->values[in0]) == ipu_value_buffer_bytes(&g->values[out0]);
}

ipu_status_t ipu_plan_buffers(const ipu_graph_t *g, const int *nodes, int n,
                              const int *extern_in, int n_extern_in,
                              const int *keep, int n_keep, ipu_buffer_plan_t *out)
{
    ipu_status_t st = IPU_ERR_NO_MEMORY;
    int nv = g->n_values;
    int *parent = malloc((size_t)nv * sizeof(int));
    int *first = malloc((size_t)nv * sizeof(int));
    int *last = malloc((size_t)nv * sizeof(int));
    buf_t *bufs = malloc((size_t)(nv + 1) * sizeof(buf_t));
    size_t *placed_off = malloc((size_t)(nv + 1) * sizeof(size_t));
    ipu_buffer_plan_t p = {0};
    p.offset = malloc((size_t)(nv + 1) * sizeof(size_t));
    p.alias = calloc((size_t)g->n_nodes + 1, 1);
    if (!parent || !first || !last || !bufs || !placed_off || !p.offset || !p.alias)
        goto out;
    for (int v = 0; v < nv; v++) {
        parent[v] = v;
        first[v] = INT32_MAX;
        last[v] = -1;
        p.offset[v] = IPU_PLAN_NONE;
    }
#define IS_ACT(v) ipu_value_is_act(g, v)
    for (int k = 0; k < n_extern_in; k++)
        if (IS_ACT(extern_in[k]))
            first[extern_in[k]] = 0, last[extern_in[k]] = 0;
    /* step 2s+1 = node s runs; inputs live through it, outputs from it */
    for (int s = 0; s < n; s++) {
        const ipu_node_t *nd = &g->nodes[nodes[s]];
        int t = 2 * s + 1;
        for (int k = 0; k < nd->n_inputs; k++) {
            int v = nd->inputs[k];
            if (!IS_ACT(v))
                continue;
            if (first[v] == INT32_MAX)
                first[v] = 0; /* fed from outside without being listed */
            if (last[v] < t)
                last[v] = t;
        }
        for (int k = 0; k < nd->n_outputs; k++) {
            int v = nd->outputs[k];
            if (!IS_ACT(v))
                continue;
            if (first[v] > t)
                first[v] = t;
            if (last[v] < t)
                last[v] = t;
        }
        /* an aliasing op (Reshape...) shares its input's buffer when sizes agree */
        if (ipu_plan_is_view(g, nd)) {
            parent[find_root(parent, nd->outputs[0])] = find_root(parent, nd->inputs[0]);
            p.alias[nodes[s]] = 1;
        }
    }
    int end = 2 * n + 1;
    for (int k = 0; k < n_keep; k++)
        if (IS_ACT(keep[k]) && last[keep[k]] >= 0)
            last[keep[k]] = end;
    /* merge lifetimes into alias roots */
    for (int v = 0; v < nv; v++) {
        if (last[v] < 0)
            continue;
        int r = find_root(parent, v);
        if (r != v) {
            if (first[v] < first[r]) first[r] = first[v];
            if (last[v] > last[r]) last[r] = last[v];
            if (last[r] < 0) last[r] = last[v];
        }
    }
    /* a node that sums into its output the input no later node reads (a
     * residual, ipu_op_t.inplace) writes its output over that input: one
     * buffer (not one fed from outside, which a caller may run again) */
    for (int s = 0; s < n; s++) {
        const ipu_node_t *nd = &g->nodes[nodes[s]];
        int k = nd->op->inplace && !p.alias[nodes[s]] ? nd->op->inplace(nd) : -1;
        if (k < 0 || k >= nd->n_inputs || nd->n_outputs < 1)
            continue;
        int r = nd->inputs[k], o = nd->outputs[0];
        if (!IS_ACT(r) || !IS_ACT(o) || ipu_value_buffer_bytes(&g->values[r]) != ipu_value_buffer_bytes(&g->values[o]))
            continue;
        int rr = find_root(parent, r), ro = find_root(parent, o), t = 2 * s + 1;
        int shared = rr == ro || first[rr] <= 0 || last[rr] != t || first[ro] != t;
        for (int q = 0; q < nd->n_inputs && !shared; q++) /* read otherwise by this node too */
            shared = q != k && IS_ACT(nd->inputs[q]) && find_root(parent, nd->inputs[q]) == rr;
        if (shared)
            continue;
        parent[ro] = rr;
        last[rr] = last[ro];
    }
    int nb = 0;
    for (int v = 0; v < nv; v++)
        if (last[v] >= 0 && find_root(parent, v) == v) {
            bufs[nb].root = v;
            bufs[nb].first = first[v];
            bufs[nb].last = last[v];
            bufs[nb].bytes = (ipu_value_buffer_bytes(&g->values[v]) + 63) / 64 * 64;
            p.live_bytes += bufs[nb].bytes;
            nb++;
        }
    qsort(bufs, (size_t)nb, sizeof(buf_t), cmp_size_desc);
    if (place(bufs, nb, end, placed_off, &p.arena_bytes) != IPU_OK)
        goto out;
    for (int i = 0; i < nb; i++)
        p.offset[bufs[i].root] = placed_off[i];
    for (int v = 0; v < nv; v++)
        if (last[v] >= 0)
            p.offset[v] = p.offset[find_root(parent, v)];
    *out = p;
    p.offset = NULL;
    p.alias = NULL;
    st = IPU_OK;
out:
    if (st != IPU_OK)
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory planning buffers");
    free(p.offset);
    free(p.alias);
    free(placed_off);
    free(bufs);
    free(last);
    free(first);
    free(parent);
    return st;
}

void ipu_plan_free(ipu_buffer_plan_t *p)
{
    if (p == NULL)
        return;
    free(p->offset);
    free(p->alias);
    memset(p, 0, sizeof(*p));
}
