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

static size_t value_bytes(const ipu_value_t *v)
{
    return (size_t)ipu_shape_numel(v->rank, v->dims) * ipu_dtype_size(v->dtype);
}

static int cmp_size_desc(const void *a, const void *b)
{
    const buf_t *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return x->first - y->first;
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
           value_bytes(&g->values[in0]) == value_bytes(&g->values[out0]);
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
        if (!IS_ACT(r) || !IS_ACT(o) || value_bytes(&g->values[r]) != value_bytes(&g->values[o]))
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
            bufs[nb].bytes = (value_bytes(&g->values[v]) + 63) / 64 * 64;
            p.live_bytes += bufs[nb].bytes;
            nb++;
        }
    qsort(bufs, (size_t)nb, sizeof(buf_t), cmp_size_desc);
    for (int i = 0; i < nb; i++) {
        /* lowest offset that fits between conflicting placed buffers: scan
         * candidates (0 and the end of each conflicting buffer) */
        size_t best = 0;
        for (int again = 1; again;) {
            again = 0;
            for (int j = 0; j < i; j++) {
                if (bufs[j].last < bufs[i].first || bufs[i].last < bufs[j].first)
                    continue;
                size_t a = placed_off[j], b = a + bufs[j].bytes;
                if (best < b && a < best + bufs[i].bytes) {
                    best = b;
                    again = 1;
                }
            }
        }
        placed_off[i] = best;
        if (best + bufs[i].bytes > p.arena_bytes)
            p.arena_bytes = best + bufs[i].bytes;
        p.offset[bufs[i].root] = best;
    }
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
