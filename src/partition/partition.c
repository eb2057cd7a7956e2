#include "partition/partition.h"

#include "partition/split.h"

#include <stdlib.h>
#include <string.h>

void ipu_partition_params_init(ipu_partition_params_t *p)
{
    memset(p, 0, sizeof(*p));
    p->stages = 1;
    p->ipus_per_rank = 1;
    p->ipu_memory = (size_t)900 << 20;
    ipu_cost_params_init(&p->cost);
}

static size_t vbytes(const ipu_value_t *v)
{
    return (size_t)ipu_shape_numel(v->rank, v->dims) * ipu_dtype_size(v->dtype);
}

/* Working data over the items (running nodes in topological order). */
typedef struct {
    int n;
    int *item_node;      /* item -> node index */
    int *node_item;      /* node index -> item, -1 if folded */
    int *val_first, *val_last; /* per value: producer item, last consumer item (-1 none) */
    ipu_node_cost_t *cost;
} items_t;

static void items_free(items_t *it)
{
    free(it->item_node);
    free(it->node_item);
    free(it->val_first);
    free(it->val_last);
    free(it->cost);
}

static ipu_status_t items_make(const ipu_graph_t *g, const ipu_partition_params_t *pp, items_t *it)
{
    memset(it, 0, sizeof(*it));
    it->item_node = malloc(((size_t)g->n_nodes + 1) * sizeof(int));
    it->node_item = malloc(((size_t)g->n_nodes + 1) * sizeof(int));
    it->val_first = malloc(((size_t)g->n_values + 1) * sizeof(int));
    it->val_last = malloc(((size_t)g->n_values + 1) * sizeof(int));
    it->cost = calloc((size_t)g->n_nodes + 1, sizeof(ipu_node_cost_t));
    if (!it->item_node || !it->node_item || !it->val_first || !it->val_last || !it->cost)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory partitioning");
    for (int i = 0; i < g->n_nodes; i++) {
        int nd = g->order[i];
        it->node_item[nd] = -1;
        if (!g->nodes[nd].folded) {
            it->node_item[nd] = it->n;
            it->item_node[it->n++] = nd;
        }
    }
    for (int v = 0; v < g->n_values; v++)
        it->val_first[v] = it->val_last[v] = -1;
    for (int i = 0; i < it->n; i++) {
        const ipu_node_t *nd = &g->nodes[it->item_node[i]];
        for (int k = 0; k < nd->n_outputs; k++)
            if (nd->outputs[k] >= 0)
                it->val_first[nd->outputs[k]] = i;
        for (int k = 0; k < nd->n_inputs; k++) {
            int v = nd->inputs[k];
            if (v >= 0 && g->values[v].data == NULL && i > it->val_last[v])
                it->val_last[v] = i;
        }
    }
    ipu_status_t st = ipu_cost_nodes(g, &pp->cost, it->cost);
    for (int i = 0; st == IPU_OK && pp->node_ms && i < g->n_nodes; i++)
        if (pp->node_ms[i] >= 0)
            it->cost[i].est_ms = pp->node_ms[i];
    return st;
}

/* Fill the per-stage figures for a node -> stage assignment. */
static void stage_figures(const ipu_graph_t *g, const items_t *it, const ipu_partition_params_t *p,
                          ipu_partition_t *pt)
{
    int S = pt->n_stages;
    unsigned char *seen = calloc((size_t)g->n_values + 1, 1);
    for (int s = 0; s < S; s++) {
        ipu_stage_info_t *si = &pt->stages[s];
        memset(si, 0, sizeof(*si));
        si->rank = s / p->ipus_per_rank;
        si->ipu = s % p->ipus_per_rank;
    }
    for (int i = 0; i < it->n; i++) {
        int nd = it->item_node[i], s = pt->node_stage[nd];
        const ipu_node_t *n = &g->nodes[nd];
        ipu_stage_info_t *si = &pt->stages[s];
        si->n_nodes++;
        si->gflop += it->cost[nd].flops / 1e9;
        si->est_ms += it->cost[nd].est_ms;
        for (int k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k];
            if (v < 0)
                continue;
            const ipu_value_t *val = &g->values[v];
            if (val->data && seen && seen[v] != (unsigned char)(s + 1)) {
                seen[v] = (unsigned char)(s + 1); /* stages are visited in order */
                si->weight_bytes += vbytes(val);
            }
        }
    }
    /* boundary bytes: each value crossing from its producer's stage to a
     * later stage is sent once per consuming stage */
    for (int v = 0; v < g->n_values; v++) {
        int pi = it->val_first[v];
        if (pi < 0 || it->val_last[v] < 0)
            continue;
        int ps = pt->node_stage[it->item_node[pi]];
        unsigned long long sent = 0;
        for (int i = pi + 1; i <= it->val_last[v]; i++) {
            const ipu_node_t *n = &g->nodes[it->item_node[i]];
            int cs = pt->node_stage[it->item_node[i]];
            for (int k = 0; k < n->n_inputs && cs != ps && cs < 64; k++)
                if (n->inputs[k] == v && !(sent & (1ull << cs))) {
                    sent |= 1ull << cs;
                    pt->stages[ps].out_bytes += vbytes(&g->values[v]);
                    pt->stages[cs].in_bytes += vbytes(&g->values[v]);
                }
        }
    }
    /* peak activations: values live at an item of the stage, by liveness */
    for (int i = 0; i < it->n; i++) {
        int s = pt->node_stage[it->item_node[i]];
        size_t live = 0;
        for (int v = 0; v < g->n_values; v++) {
            int first = it->val_first[v] < 0 ? 0 : it->val_first[v];
            if (it->val_last[v] >= i && first <= i && g->values[v].data == NULL)
                live += vbytes(&g->values[v]);
        }
        if (live > pt->stages[s].act_bytes)
            pt->stages[s].act_bytes = live;
    }
    double sum = 0;
    pt->bottleneck_ms = 0;
    for (int s = 0; s < S; s++) {
        ipu_stage_info_t *si = &pt->stages[s];
        si->est_ms += ipu_cost_transfer_ms(&p->cost, (double)si->in_bytes) +
                      ipu_cost_transfer_ms(&p->cost, (double)si->out_bytes);
        sum += si->est_ms;
        if (si->est_ms > pt->bottleneck_ms)
            pt->bottleneck_ms = si->est_ms;
    }
    pt->imbalance = sum > 0 ? pt->bottleneck_ms / (sum / S) : 1;
    free(seen);
}

static int attr_placement(const ipu_node_t *n, int64_t *out)
{
    const ipu_attr_t *a = ipu_attr_find(n, "__pipeline_stage");
    if (a == NULL || a->type != IPU_ATTR_INT)
        a = ipu_attr_find(n, "__ipu_number");
    if (a == NULL || a->type != IPU_ATTR_INT)
        return 0;
    *out = a->i;
    return 1;
}

/* Manual placement; returns 1 if the model is annotated, 0 if not, <0 on error */
static ipu_status_t manual(const ipu_graph_t *g, const items_t *it, ipu_partition_t *pt, int *annotated)
{
    int have = 0, missing = 0;
    int64_t maxs = -1, val;
    char names[600];
    size_t off = 0;
    names[0] = '\0';
    for (int i = 0; i < it->n; i++) {
        const ipu_node_t *n = &g->nodes[it->item_node[i]];
        if (attr_placement(n, &val)) {
            have++;
            if (val < 0 || val > 4096)
                return ipu_error(IPU_ERR_INVALID_MODEL, "node '%s' (%s): pipeline stage %lld is out of "
                                 "range", n->name, n->op_type, (long long)val);
            pt->node_stage[it->item_node[i]] = (int)val;
            maxs = val > maxs ? val : maxs;
        } else if (missing++ < 8 && off < sizeof(names)) {
            off += (size_t)snprintf(names + off, sizeof(names) - off, "%s'%s' (%s)",
                                    missing > 1 ? ", " : "", n->name, n->op_type);
        }
    }
    *annotated = have > 0;
    if (have == 0)
        return IPU_OK;
    if (missing)
        return ipu_error(IPU_ERR_INVALID_MODEL, "the model is partly annotated: %d node%s without "
                         "__pipeline_stage/__ipu_number: %s%s; annotate every node or none",
                         missing, missing > 1 ? "s" : "", names, missing > 8 ? ", ..." : "");
    for (int i = 0; i < it->n; i++) {
        const ipu_node_t *n = &g->nodes[it->item_node[i]];
        for (int k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k], pi = v >= 0 ? it->val_first[v] : -1;
            if (pi < 0)
                continue;
            const ipu_node_t *pn = &g->nodes[it->item_node[pi]];
            if (pt->node_stage[it->item_node[pi]] > pt->node_stage[it->item_node[i]])
                return ipu_error(IPU_ERR_INVALID_MODEL, "inconsistent annotations: node '%s' (stage %d) "
                                 "reads '%s' from node '%s' of a later stage %d; a pipeline only "
                                 "flows forward", n->name, pt->node_stage[it->item_node[i]],
                                 g->values[v].name, pn->name, pt->node_stage[it->item_node[pi]]);
        }
    }
    pt->n_stages = (int)maxs + 1;
    int *used = calloc((size_t)pt->n_stages, sizeof(int));
    for (int i = 0; used && i < it->n; i++)
        used[pt->node_stage[it->item_node[i]]] = 1;
    for (int s = 0; used && s < pt->n_stages; s++)
        if (!used[s]) {
            free(used);
            return ipu_error(IPU_ERR_INVALID_MODEL, "inconsistent annotations: stage %d has no node "
                             "(stages must be numbered 0..%d without gaps)", s, pt->n_stages - 1);
        }
    free(used);
    return IPU_OK;
}

static ipu_status_t automatic(const ipu_graph_t *g, const items_t *it, const ipu_partition_params_t *p,
                              ipu_partition_t *pt)
{
    int n = it->n;
    ipu_status_t st = IPU_OK;
    double *ms = calloc((size_t)n + 1, sizeof(double)), *cut = calloc((size_t)n + 2, sizeof(double));
    size_t *live = calloc((size_t)n + 1, sizeof(size_t)), *cbytes = calloc((size_t)g->n_values + 1, sizeof(size_t));
    double *cross = calloc((size_t)n + 2, sizeof(double));
    long long *dlive = calloc((size_t)n + 2, sizeof(long long));
    int *cstart = calloc((size_t)n + 2, sizeof(int)), *cids = NULL;
    ipu_split_t sp = {0};
    if (!ms || !cut || !live || !cbytes || !cross || !dlive || !cstart) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory partitioning");
        goto out;
    }
    int total_in = 0;
    for (int i = 0; i < n; i++) {
        const ipu_node_t *nd = &g->nodes[it->item_node[i]];
        ms[i] = it->cost[it->item_node[i]].est_ms;
        total_in += nd->n_inputs;
    }
    cids = malloc(((size_t)total_in + 1) * sizeof(int));
    if (cids == NULL) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory partitioning");
        goto out;
    }
    for (int i = 0, k = 0; i < n; i++) {
        const ipu_node_t *nd = &g->nodes[it->item_node[i]];
        cstart[i] = k;
        for (int j = 0; j < nd->n_inputs; j++) {
            int v = nd->inputs[j];
            if (v >= 0 && g->values[v].data) {
                cids[k++] = v;
                cbytes[v] = vbytes(&g->values[v]);
            }
        }
        cstart[i + 1] = k;
    }
    /* values crossing a cut before item i: produced before i, read at >= i */
    for (int v = 0; v < g->n_values; v++) {
        if (g->values[v].data || it->val_last[v] < 0)
            continue;
        int first = it->val_first[v];
        double b = (double)vbytes(&g->values[v]);
        dlive[first < 0 ? 0 : first] += (long long)b;
        dlive[it->val_last[v] + 1] -= (long long)b;
        if (first >= 0) { /* graph inputs are read by each stage itself */
            cross[first + 1] += b;
            cross[it->val_last[v] + 1] -= b;
        }
    }
    long long acc = 0;
    double cacc = 0;
    for (int i = 0; i <= n; i++) {
        acc += dlive[i];
        cacc += cross[i];
        if (i < n)
            live[i] = (size_t)(acc > 0 ? acc : 0);
        cut[i] = i == 0 || i == n ? 0 : ipu_cost_transfer_ms(&p->cost, cacc);
    }
    ipu_split_problem_t prob = {.n = n, .stages = p->stages, .ms = ms, .cut_ms = cut, .live_bytes = live,
                                .const_start = cstart, .const_ids = cids, .const_bytes = cbytes,
                                .n_consts = g->n_values, .capacity = p->ipu_memory};
    if (p->stages > n) {
        st = ipu_error(IPU_ERR_INVALID_ARG, "cannot split %d nodes into %d stages; use at most %d",
                       n, p->stages, n);
        goto out;
    }
    st = ipu_split_solve(&prob, &sp);
    if (st == IPU_ERR_NO_MEMORY) {
        /* what each stage would need if split for time alone */
        ipu_split_problem_t loose = prob;
        loose.capacity = 0;
        ipu_split_t ls;
        if (ipu_split_solve(&loose, &ls) == IPU_OK) {
            int worst = 0;
            for (int s = 1; s < ls.stages; s++)
                if (ls.stage_mem[s] > ls.stage_mem[worst])
                    worst = s;
            size_t total = ipu_split_range_mem(&prob, 0, n);
            st = ipu_error(IPU_ERR_NO_MEMORY, "the model does not fit %d IPU%s of %.0f MiB: stage %d "
                           "needs %.1f MiB (the whole model %.1f MiB); use more ranks or stages, "
                           "--ipus-per-rank, or a larger --ipu-memory", p->stages, p->stages > 1 ? "s" : "",
                           p->ipu_memory / 1048576.0, worst, ls.stage_mem[worst] / 1048576.0,
                           total / 1048576.0);
            ipu_split_free(&ls);
        }
        goto out;
    }
    if (st != IPU_OK)
        goto out;
    pt->n_stages = p->stages;
    for (int s = 0; s < sp.stages; s++)
        for (int i = sp.start[s]; i < sp.start[s + 1]; i++)
            pt->node_stage[it->item_node[i]] = s;
out:
    ipu_split_free(&sp);
    free(ms); free(cut); free(live); free(cbytes); free(cross); free(dlive); free(cstart); free(cids);
    return st;
}

ipu_status_t ipu_partition_make(const ipu_graph_t *g, const ipu_partition_params_t *p, ipu_partition_t *out)
{
    ipu_partition_t pt = {0};
    items_t it;
    ipu_status_t st = items_make(g, p, &it);
    int annotated = 0;
    if (st == IPU_OK && (pt.node_stage = malloc(((size_t)g->n_nodes + 1) * sizeof(int))) == NULL)
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory partitioning");
    for (int i = 0; st == IPU_OK && i < g->n_nodes; i++)
        pt.node_stage[i] = -1;
    if (st == IPU_OK)
        st = manual(g, &it, &pt, &annotated);
    pt.manual = annotated;
    if (st == IPU_OK && !annotated)
        st = automatic(g, &it, p, &pt);
    if (st == IPU_OK && (pt.stages = calloc((size_t)pt.n_stages, sizeof(ipu_stage_info_t))) == NULL)
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory partitioning");
    if (st == IPU_OK) {
        stage_figures(g, &it, p, &pt);
        for (int s = 0; s < pt.n_stages; s++) {
            const ipu_stage_info_t *si = &pt.stages[s];
            if (si->weight_bytes + si->act_bytes > p->ipu_memory) {
                st = ipu_error(IPU_ERR_NO_MEMORY, "stage %d needs %.1f MiB (weights %.1f + activations "
                               "%.1f) but an IPU has %.0f MiB; use more stages, --ipus-per-rank, or a "
                               "larger --ipu-memory", s, (si->weight_bytes + si->act_bytes) / 1048576.0,
                               si->weight_bytes / 1048576.0, si->act_bytes / 1048576.0,
                               p->ipu_memory / 1048576.0);
                break;
            }
        }
    }
    items_free(&it);
    if (st != IPU_OK) {
        ipu_partition_free(&pt);
        return st;
    }
    *out = pt;
    return IPU_OK;
}

void ipu_partition_free(ipu_partition_t *pt)
{
    if (pt == NULL)
        return;
    free(pt->node_stage);
    free(pt->stages);
    memset(pt, 0, sizeof(*pt));
}

void ipu_partition_print(const ipu_partition_t *pt, FILE *f)
{
    fprintf(f, "%5s %4s %3s %6s %9s %11s %12s %12s %12s %8s\n", "stage", "rank", "ipu", "nodes",
            "GFLOP", "weight MiB", "peak act MiB", "in bytes", "out bytes", "est ms");
    for (int s = 0; s < pt->n_stages; s++) {
        const ipu_stage_info_t *si = &pt->stages[s];
        fprintf(f, "%5d %4d %3d %6d %9.3f %11.1f %12.1f %12zu %12zu %8.3f\n", s, si->rank, si->ipu,
                si->n_nodes, si->gflop, si->weight_bytes / 1048576.0, si->act_bytes / 1048576.0,
                si->in_bytes, si->out_bytes, si->est_ms);
    }
    fprintf(f, "%s partition: %d stage%s, slowest stage %.3f ms, imbalance %.3f (slowest / mean)\n",
            pt->manual ? "manual" : "auto", pt->n_stages, pt->n_stages > 1 ? "s" : "",
            pt->bottleneck_ms, pt->imbalance);
}
