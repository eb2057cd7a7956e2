#include "partition/partition.h"

#include "partition/split.h"

#include "exec/stage.h"

#include <stdint.h>
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

/* The bytes of v's buffer, as the stage's plan will have them (a value the
 * layout pass keeps padded needs more than its elements). */
static size_t vbytes(const ipu_value_t *v)
{
    return ipu_value_buffer_bytes(v);
}

/* Working data over the items (running nodes in topological order). */
typedef struct {
    const ipu_graph_t *g;
    int n;
    int *item_node;      /* item -> node index */
    int *node_item;      /* node index -> item, -1 if folded */
    int *val_first, *val_last; /* per value: producer item, last consumer item (-1 none) */
    ipu_node_cost_t *cost;
    int *iota;           /* 0, 1, ... n - 1 */
    int *stage_of;       /* for stage_mem(): per node, 1 in the stage measured, 0 not, -1 folded */
    ipu_status_t need_st; /* first failure of range_need() */
} items_t;

static void items_free(items_t *it)
{
    free(it->item_node);
    free(it->node_item);
    free(it->val_first);
    free(it->val_last);
    free(it->cost);
    free(it->iota);
    free(it->stage_of);
}

static ipu_status_t items_make(const ipu_graph_t *g, const ipu_partition_params_t *pp, items_t *it)
{
    size_t nn = (size_t)g->n_nodes + 1, nv = (size_t)g->n_values + 1;
    memset(it, 0, sizeof(*it));
    it->g = g;
    it->item_node = malloc(nn * sizeof(int));
    it->node_item = malloc(nn * sizeof(int));
    it->val_first = malloc(nv * sizeof(int));
    it->val_last = malloc(nv * sizeof(int));
    it->cost = calloc(nn, sizeof(ipu_node_cost_t));
    it->iota = malloc(nn * sizeof(int));
    it->stage_of = malloc(nn * sizeof(int));
    if (!it->item_node || !it->node_item || !it->val_first || !it->val_last || !it->cost || !it->iota || !it->stage_of)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory partitioning");
    for (int i = 0; i < g->n_nodes; i++) {
        int nd = g->order[i];
        it->node_item[nd] = -1;
        it->stage_of[nd] = g->nodes[nd].folded ? -1 : 0;
        if (!g->nodes[nd].folded) {
            it->iota[it->n] = it->n;
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

/* What the IPU of the stage made of items list[0..n) is charged: the stage
 * built by ipu_stage_build_of(), as the pipeline builds it, and measured by
 * ipu_stage_mem(), as ipu_device_load() does. first/last: the list is the
 * partition's first/last stage. */
static ipu_status_t stage_mem(items_t *it, const int *list, int n, int first, int last,
                              ipu_stage_mem_t *m)
{
    for (int k = 0; k < n; k++)
        it->stage_of[it->item_node[list[k]]] = 1;
    ipu_stage_t st;
    unsigned flags = (first ? IPU_STAGE_FIRST : 0) | (last ? IPU_STAGE_LAST : 0);
    ipu_status_t rc = ipu_stage_build_of(it->g, it->stage_of, 1, flags, &st);
    for (int k = 0; k < n; k++)
        it->stage_of[it->item_node[list[k]]] = 0;
    if (rc == IPU_OK) {
        *m = ipu_stage_mem(&st);
        ipu_stage_free(&st);
    }
    return rc;
}

/* The split's need(): stage_mem() of items [a, b). */
static size_t range_need(void *arg, int a, int b)
{
    items_t *it = arg;
    ipu_stage_mem_t m;
    ipu_status_t st = stage_mem(it, it->iota + a, b - a, a == 0, b == it->n, &m);
    if (st != IPU_OK && it->need_st == IPU_OK)
        it->need_st = st;
    return st == IPU_OK ? m.total : SIZE_MAX;
}

/* A lower bound of the arena of any stage running item i: its activation
 * outputs and its largest activation input are live together while it runs,
 * in distinct buffers unless the node may alias its input (then its largest
 * activation alone). Buffers are 64-byte rounded, as exec/plan.c places them. */
static size_t item_act_floor(const ipu_graph_t *g, const ipu_node_t *nd)
{
    size_t outs = 0, in_max = 0;
    for (int k = 0; k < nd->n_inputs; k++)
        if (ipu_value_is_act(g, nd->inputs[k])) {
            size_t b = (vbytes(&g->values[nd->inputs[k]]) + 63) / 64 * 64;
            in_max = b > in_max ? b : in_max;
        }
    for (int k = 0; k < nd->n_outputs; k++)
        if (ipu_value_is_act(g, nd->outputs[k])) {
            size_t b = (vbytes(&g->values[nd->outputs[k]]) + 63) / 64 * 64;
            outs = (nd->op->flags & IPU_OP_ALIAS_INPUT0) ? (b > outs ? b : outs) : outs + b;
        }
    if (nd->op->flags & IPU_OP_ALIAS_INPUT0)
        return outs > in_max ? outs : in_max;
    return outs + in_max;
}

/* Fill the per-stage figures for a node -> stage assignment. */
static ipu_status_t stage_figures(const ipu_graph_t *g, items_t *it, const ipu_partition_params_t *p,
                                  ipu_partition_t *pt)
{
    int S = pt->n_stages;
    for (int s = 0; s < S; s++) {
        ipu_stage_info_t *si = &pt->stages[s];
        memset(si, 0, sizeof(*si));
        si->rank = s / p->ipus_per_rank;
        si->ipu = s % p->ipus_per_rank;
    }
    for (int i = 0; i < it->n; i++) {
        int nd = it->item_node[i], s = pt->node_stage[nd];
        ipu_stage_info_t *si = &pt->stages[s];
        si->n_nodes++;
        si->gflop += it->cost[nd].flops / 1e9;
        si->est_ms += it->cost[nd].est_ms;
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
    /* memory: each stage built and measured as its IPU will charge it */
    int *list = malloc(((size_t)it->n + 1) * sizeof(int));
    if (list == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory partitioning");
    ipu_status_t st = IPU_OK;
    for (int s = 0; s < S && st == IPU_OK; s++) {
        int n = 0;
        for (int i = 0; i < it->n; i++)
            if (pt->node_stage[it->item_node[i]] == s)
                list[n++] = i;
        ipu_stage_mem_t m;
        if ((st = stage_mem(it, list, n, s == 0, s == S - 1, &m)) == IPU_OK) {
            pt->stages[s].mem = m;
        }
    }
    free(list);
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
    return st;
}

/* What an annotated stage holds. */
enum { STAGE_NONE, STAGE_RUNS, STAGE_FOLDED };

/* Per stage 0..max the annotations of every node name (folded ones too, up
 * to 4096): STAGE_RUNS where a node that runs is, STAGE_FOLDED where only
 * nodes folded at load are (constant folding emptied it), else STAGE_NONE.
 * NULL and *n = 0 when no node is annotated, *n = -1 out of memory. */
static unsigned char *stage_kinds(const ipu_graph_t *g, int *n)
{
    int64_t max = -1, v;
    for (int i = 0; i < g->n_nodes; i++)
        if (ipu_node_stage(&g->nodes[i], &v) && v > max && v <= 4096)
            max = v;
    *n = (int)(max + 1);
    unsigned char *kind = max >= 0 ? calloc((size_t)*n, 1) : NULL;
    if (max >= 0 && kind == NULL)
        *n = -1;
    for (int i = 0; kind && i < g->n_nodes; i++)
        if (ipu_node_stage(&g->nodes[i], &v) && v >= 0 && v <= max)
            kind[v] = !g->nodes[i].folded ? STAGE_RUNS : kind[v] == STAGE_RUNS ? STAGE_RUNS : STAGE_FOLDED;
    return kind;
}

int ipu_partition_annotated_stages(const ipu_graph_t *g, int *emptied)
{
    int n, e = 0;
    unsigned char *kind = stage_kinds(g, &n);
    for (int s = 0; s < n; s++)
        e += kind[s] == STAGE_FOLDED;
    free(kind);
    if (emptied)
        *emptied = e;
    return n > 0 ? n - e : 0;
}

/* Number the stages that run 0..S-1 (pt->node_stage holds the annotated
 * ones): a stage no node names is a gap in the annotations (an error); one
 * that only nodes folded at load name is dropped and the later ones move
 * down, so an annotation that constant folding emptied still runs. */
static ipu_status_t renumber(const ipu_graph_t *g, const items_t *it, ipu_partition_t *pt)
{
    int n, S = 0;
    unsigned char *kind = stage_kinds(g, &n);
    int *to = kind ? malloc((size_t)n * sizeof(int)) : NULL;
    if (to == NULL) {
        free(kind);
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory partitioning");
    }
    for (int s = 0; s < n; s++)
        to[s] = kind[s] == STAGE_RUNS ? S++ : -1;
    for (int s = 0; s < n; s++)
        if (kind[s] == STAGE_NONE) {
            free(kind);
            free(to);
            return ipu_error(IPU_ERR_INVALID_MODEL, "inconsistent annotations: stage %d has no node "
                             "(stages must be numbered 0..%d without gaps)", s, n - 1);
        }
    for (int i = 0; i < it->n; i++)
        pt->node_stage[it->item_node[i]] = to[pt->node_stage[it->item_node[i]]];
    pt->n_stages = S;
    pt->annotated_stages = n;
    free(kind);
    free(to);
    return IPU_OK;
}

/* Manual placement; returns 1 if the model is annotated, 0 if not, <0 on error */
static ipu_status_t manual(const ipu_graph_t *g, const items_t *it, ipu_partition_t *pt, int *annotated)
{
    int have = 0, missing = 0;
    int64_t val;
    char names[600];
    size_t off = 0;
    names[0] = '\0';
    for (int i = 0; i < it->n; i++) {
        const ipu_node_t *n = &g->nodes[it->item_node[i]];
        if (ipu_node_stage(n, &val)) {
            have++;
            if (val < 0 || val > 4096)
                return ipu_error(IPU_ERR_INVALID_MODEL, "node '%s' (%s): pipeline stage %lld is out of "
                                 "range", n->name, n->op_type, (long long)val);
            pt->node_stage[it->item_node[i]] = (int)val;
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
    return renumber(g, it, pt);
}

/* No split fits: find the smallest capacity that one would, by bisection
 * (fitting only grows with the capacity; every range fits under its weights
 * + scratch + all its activations), and name the stage it is set by. */
static ipu_status_t no_fit(items_t *it, const ipu_split_problem_t *prob, const ipu_partition_params_t *p)
{
    ipu_split_problem_t q = *prob;
    size_t lo = prob->capacity, hi = 0, scratch = 0;
    for (int v = 0; v < q.n_consts; v++) /* values, then the nodes' held copies */
        hi += q.const_bytes[v];
    for (int v = 0; v < q.n_acts; v++)
        hi += q.act_bytes[v];
    for (int i = 0; i < q.n; i++)
        scratch = q.scratch_bytes[i] > scratch ? q.scratch_bytes[i] : scratch;
    hi += scratch;
    ipu_split_t sp = {0};
    while (hi - lo > 1 && it->need_st == IPU_OK) {
        q.capacity = lo + (hi - lo) / 2;
        if (ipu_split_solve(&q, &sp) == IPU_OK)
            hi = q.capacity;
        else
            lo = q.capacity;
        ipu_split_free(&sp);
    }
    q.capacity = hi;
    ipu_status_t st = it->need_st == IPU_OK ? ipu_split_solve(&q, &sp) : it->need_st;
    if (st != IPU_OK)
        return st;
    int worst = 0;
    for (int s = 1; s < sp.stages; s++)
        if (sp.stage_mem[s] > sp.stage_mem[worst])
            worst = s;
    ipu_stage_mem_t m = {0};
    st = stage_mem(it, it->iota + sp.start[worst], sp.start[worst + 1] - sp.start[worst], worst == 0,
                   sp.start[worst + 1] == it->n, &m);
    /* the node that needs the most alone: when that is more than an IPU,
     * more ranks or stages cannot help */
    int alone = -1;
    ipu_stage_mem_t am = {0};
    for (int i = 0; st == IPU_OK && i < it->n; i++) {
        ipu_stage_mem_t mi;
        if ((st = stage_mem(it, it->iota + i, 1, i == 0, i == it->n - 1, &mi)) == IPU_OK &&
            mi.total > p->ipu_memory && mi.total > am.total) {
            am = mi;
            alone = it->item_node[i];
        }
    }
    ipu_split_free(&sp);
    if (st != IPU_OK)
        return st;
    char msg[512];
    ipu_stage_mem_str(alone >= 0 ? &am : &m, p->ipu_memory, msg, sizeof(msg));
    if (alone >= 0) {
        const ipu_node_t *nd = &it->g->nodes[alone];
        return ipu_error(IPU_ERR_NO_MEMORY, "node '%s' (%s) alone does not fit one IPU: it %s; more ranks "
                         "or stages cannot split a node: raise --ipu-memory to at least %zuK",
                         nd->name, nd->op_type, msg, (hi + 1023) / 1024);
    }
    return ipu_error(IPU_ERR_NO_MEMORY, "the model does not fit %d IPU%s in any split: at best, stage %d "
                     "%s; use more ranks or stages, --ipus-per-rank, or --ipu-memory %zuK or more",
                     p->stages, p->stages > 1 ? "s" : "", worst, msg, (hi + 1023) / 1024);
}

/* More stages than nodes to run (n): the error, with a stage count that
 * works. A model whose every node folds at load runs as one empty stage
 * (its outputs are constants), on one rank or as replicas. */
static ipu_status_t too_many_stages(int n, const ipu_partition_params_t *p)
{
    int R = p->mpi_replicas, K = p->ipus_per_rank;
    if (n == 0 && R > 0)
        return ipu_error(IPU_ERR_INVALID_ARG, "cannot split the model into %d stages: constant folding "
                         "computed every node at load, so nothing is left to pipeline; run it on one "
                         "rank, or one stage per replica (mpirun -np %d ... --replicas %d --ipus-per-rank 1)",
                         p->stages, p->stages / K * R, p->stages / K * R);
    if (n == 0)
        return ipu_error(IPU_ERR_INVALID_ARG, "cannot split the model into %d stages: constant folding "
                         "computed every node at load; use --stages 1", p->stages);
    if (R == 0)
        return ipu_error(IPU_ERR_INVALID_ARG, "cannot split %d running node%s (after folding and "
                         "fusion) into %d stages; use at most %d", n, n == 1 ? "" : "s", p->stages, n);
    char advice[96]; /* under mpirun: the user never gave a stage count */
    if (n / K * R > 0)
        snprintf(advice, sizeof(advice), "run with mpirun -np %d or fewer", n / K * R);
    else
        snprintf(advice, sizeof(advice), "use a smaller --ipus-per-rank (at most %d)", n);
    return ipu_error(IPU_ERR_INVALID_ARG, "cannot split %d running node%s into %d stages: under mpirun the stage "
                     "count is the ranks per replica (-np %d / %d replica%s) x --ipus-per-rank %d; %s",
                     n, n == 1 ? "" : "s", p->stages, p->stages / K * R, R, R > 1 ? "s" : "", K, advice);
}

static ipu_status_t automatic(const ipu_graph_t *g, items_t *it, const ipu_partition_params_t *p,
                              ipu_partition_t *pt)
{
    int n = it->n;
    if (n == 0 && p->stages == 1) { /* every node folded: one stage with none */
        pt->n_stages = 1;
        return IPU_OK;
    }
    ipu_status_t st = IPU_OK;
    double *ms = calloc((size_t)n + 1, sizeof(double)), *cut = calloc((size_t)n + 2, sizeof(double));
    size_t *live = calloc((size_t)n + 1, sizeof(size_t)), *cbytes = calloc((size_t)g->n_values + (size_t)n + 1, sizeof(size_t));
    size_t *scratch = calloc((size_t)n + 1, sizeof(size_t)), *abytes = calloc((size_t)g->n_values + 1, sizeof(size_t));
    double *cross = calloc((size_t)n + 2, sizeof(double));
    int *cstart = calloc((size_t)n + 2, sizeof(int)), *cids = NULL;
    int *astart = calloc((size_t)n + 2, sizeof(int)), *aids = NULL;
    ipu_split_t sp = {0};
    if (!ms || !cut || !live || !cbytes || !scratch || !abytes || !cross || !cstart || !astart) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory partitioning");
        goto out;
    }
    int total_in = 0;
    for (int i = 0; i < n; i++) {
        const ipu_node_t *nd = &g->nodes[it->item_node[i]];
        ms[i] = it->cost[it->item_node[i]].est_ms;
        scratch[i] = it->cost[it->item_node[i]].scratch_bytes;
        live[i] = item_act_floor(g, nd);
        total_in += nd->n_inputs + nd->n_outputs + 1;
    }
    cids = malloc(((size_t)total_in + 1) * sizeof(int));
    aids = malloc(((size_t)total_in + 1) * sizeof(int));
    if (cids == NULL || aids == NULL) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory partitioning");
        goto out;
    }
    /* per item, the constants it reads and the activations it touches (an
     * upper bound of a stage's arena is the sum of its activations' buffers) */
    for (int i = 0, k = 0, ka = 0; i < n; i++) {
        const ipu_node_t *nd = &g->nodes[it->item_node[i]];
        cstart[i] = k;
        astart[i] = ka;
        for (int j = 0; j < nd->n_inputs + nd->n_outputs; j++) {
            int v = j < nd->n_inputs ? nd->inputs[j] : nd->outputs[j - nd->n_inputs];
            if (v >= 0 && g->values[v].data && j < nd->n_inputs) {
                if (ipu_node_replaces(g, nd, j)) /* charged as the held copy */
                    continue;
                cids[k++] = v;
                cbytes[v] = vbytes(&g->values[v]);
            } else if (ipu_value_is_act(g, v)) {
                aids[ka++] = v;
                abytes[v] = (vbytes(&g->values[v]) + 63) / 64 * 64;
            }
        }
        size_t held = ipu_node_held(g, nd); /* a constant of its own, after the values */
        if (held) {
            cids[k++] = g->n_values + i;
            cbytes[g->n_values + i] = held;
        }
        cstart[i + 1] = k;
        astart[i + 1] = ka;
    }
    /* values crossing a cut before item i: produced before i, read at >= i
     * (graph inputs are read by each stage itself) */
    for (int v = 0; v < g->n_values; v++) {
        int first = it->val_first[v];
        if (g->values[v].data || it->val_last[v] < 0 || first < 0)
            continue;
        double b = (double)vbytes(&g->values[v]);
        cross[first + 1] += b;
        cross[it->val_last[v] + 1] -= b;
    }
    double cacc = 0;
    for (int i = 0; i <= n; i++) {
        cacc += cross[i];
        cut[i] = i == 0 || i == n ? 0 : ipu_cost_transfer_ms(&p->cost, cacc);
    }
    /* memory: weights + live + scratch bound each range from below, weights
     * + scratch + all its activations from above; in between, whether it
     * fits is what the IPU will be charged (range_need) */
    ipu_split_problem_t prob = {.n = n, .stages = p->stages, .ms = ms, .cut_ms = cut, .live_bytes = live,
                                .const_start = cstart, .const_ids = cids, .const_bytes = cbytes,
                                .n_consts = g->n_values + n, .capacity = p->ipu_memory,
                                .scratch_bytes = scratch, .need = range_need, .need_arg = it,
                                .act_start = astart, .act_ids = aids, .act_bytes = abytes,
                                .n_acts = g->n_values};
    if (p->stages > n) {
        st = too_many_stages(n, p);
        goto out;
    }
    st = ipu_split_solve(&prob, &sp);
    if (st == IPU_ERR_NO_MEMORY && it->need_st == IPU_OK)
        st = no_fit(it, &prob, p);
    if (it->need_st != IPU_OK)
        st = ipu_error(it->need_st, "partitioning: %s", ipu_error_message());
    if (st != IPU_OK)
        goto out;
    pt->n_stages = p->stages;
    for (int s = 0; s < sp.stages; s++)
        for (int i = sp.start[s]; i < sp.start[s + 1]; i++)
            pt->node_stage[it->item_node[i]] = s;
out:
    ipu_split_free(&sp);
    free(ms); free(cut); free(live); free(cbytes); free(scratch); free(abytes); free(cross);
    free(cstart); free(cids); free(astart); free(aids);
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
        st = stage_figures(g, &it, p, &pt);
        for (int s = 0; st == IPU_OK && s < pt.n_stages; s++) {
            const ipu_stage_info_t *si = &pt.stages[s];
            if (si->mem.total > p->ipu_memory) { /* a manual placement */
                char msg[512];
                ipu_stage_mem_str(&si->mem, p->ipu_memory, msg, sizeof(msg));
                st = ipu_error(IPU_ERR_NO_MEMORY, "stage %d %s; use more stages, --ipus-per-rank, or "
                               "a larger --ipu-memory", s, msg);
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

const char *ipu_partition_stages_str(const ipu_partition_t *pt, char *buf, size_t len)
{
    int e = pt->annotated_stages - pt->n_stages;
    int n = snprintf(buf, len, "%d stage%s", pt->n_stages, pt->n_stages == 1 ? "" : "s");
    if (e > 0 && n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " (%d annotated; constant folding left %d of them without a "
                 "node to run)", pt->annotated_stages, e);
    return buf;
}

void ipu_partition_print(const ipu_partition_t *pt, FILE *f)
{
    fprintf(f, "%5s %4s %3s %6s %9s %10s %7s %11s %8s %12s %12s %8s\n", "stage", "rank", "ipu",
            "nodes", "GFLOP", "weight MiB", "act MiB", "scratch MiB", "need MiB", "in bytes",
            "out bytes", "est ms");
    for (int s = 0; s < pt->n_stages; s++) {
        const ipu_stage_info_t *si = &pt->stages[s];
        fprintf(f, "%5d %4d %3d %6d %9.3f %10.1f %7.1f %11.2f %8.1f %12zu %12zu %8.3f\n", s, si->rank,
                si->ipu, si->n_nodes, si->gflop, si->mem.weights / 1048576.0, si->mem.activations / 1048576.0,
                si->mem.scratch / 1048576.0, si->mem.total / 1048576.0, si->in_bytes, si->out_bytes,
                si->est_ms);
    }
    char stages[128];
    fprintf(f, "%s partition: %s, slowest stage %.3f ms, imbalance %.3f (slowest / mean)\n",
            pt->manual ? "manual" : "auto", ipu_partition_stages_str(pt, stages, sizeof(stages)),
            pt->bottleneck_ms, pt->imbalance);
}
