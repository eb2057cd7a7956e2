/* Set-up of a pipelined run (internal.h), every step agreed on by all
 * ranks (fault.h) so that they fail together before any transfer: the
 * shapes and the plan (rank 0's measured costs, the same partition on every
 * rank), this rank's weights and stages on their IPUs, then the transport,
 * the links' first receives and the lost-rank notices. */
#include "pipeline/internal.h"

#include "common/log.h"
#include "exec/measure.h"
#include "exec/onednn.h"
#include "exec/prepare.h"
#include "graph/load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int append(int **arr, int *n, int v)
{
    int *na = realloc(*arr, (size_t)(*n + 1) * sizeof(int));
    if (na == NULL)
        return -1;
    na[(*n)++] = v;
    *arr = na;
    return 0;
}

static int has(const int *list, int n, int v)
{
    for (int i = 0; i < n; i++)
        if (list[i] == v)
            return 1;
    return 0;
}

/* The links into and out of ls, the graph inputs it is fed and the graph
 * outputs it gives (as ipu_stage_build_of() listed them). */
static ipu_status_t list_boundaries(pipe_t *pp, lstage_t *ls)
{
    const ipu_graph_t *g = pp->g;
    ipu_status_t st = IPU_OK;
    for (int l = 0; l < pp->n_links; l++) {
        if (pp->links[l].dst == ls->s && append(&ls->in_links, &ls->n_in, l))
            st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
        if (pp->links[l].src == ls->s && append(&ls->out_links, &ls->n_out, l))
            st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    }
    const ipu_stage_t *sg = &ls->stage;
    for (int k = 0; k < g->n_inputs && st == IPU_OK; k++)
        if (has(sg->inputs, sg->n_inputs, g->inputs[k]) && append(&ls->graph_in, &ls->n_graph_in, k))
            st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    for (int k = 0; k < g->n_outputs && st == IPU_OK; k++)
        if (has(sg->outputs, sg->n_outputs, g->outputs[k]) &&
            append(&ls->graph_out, &ls->n_graph_out, k))
            st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    if (st == IPU_OK && (ls->emitted = calloc((size_t)ls->n_out + 1, 1)) == NULL)
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    return st;
}

/* The releaser of the weights this rank's stages hold copies of (exec/stage.h). */
static ipu_release_t *local_release(ipu_graph_t *g, const int *node_stage, const pipe_t *pp)
{
    unsigned char *local = calloc((size_t)g->n_nodes + 1, 1);
    if (local == NULL)
        return NULL;
    for (int i = 0; i < g->n_nodes; i++)
        local[i] = node_stage[i] >= 0 && pipe_stage_rank(pp, node_stage[i]) == pp->rank;
    ipu_release_t *r = ipu_release_new(g, local);
    free(local);
    return r;
}

ipu_status_t pipe_build_local(pipe_t *pp, const int *node_stage, const ipu_binding_t *bind,
                              ipu_graph_t *g)
{
    const ipu_pipeline_params_t *p = pp->p;
    pp->ls = calloc((size_t)pp->K, sizeof(lstage_t));
    if (pp->ls == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    /* the weights the local stages hold copies of, freed as they load */
    ipu_release_t *release = local_release(g, node_stage, pp);
    int64_t total = pp->W + (p->micro_batches - pp->replica + pp->R - 1) / pp->R;
    ipu_status_t st = IPU_OK;
    for (int i = 0; i < pp->K && st == IPU_OK; i++) {
        lstage_t *ls = &pp->ls[pp->n_ls++];
        ls->s = (pp->rank % pp->P) * pp->K + i;
        ls->total = total;
        ipu_device_params_t dp = {.index = i, .capacity = p->ipu_memory, .threads = p->threads,
                                  .core = bind ? bind->pu[i] : -1};
        if (bind) /* its team on the plan's --threads cores */
            dp.n_cpus = ipu_binding_cpus(bind, i, dp.cpus, IPU_DEVICE_MAX_CPUS);
        if ((st = ipu_device_open(&dp, &ls->dev)) != IPU_OK)
            break;
        char where[64];
        snprintf(where, sizeof where, "rank %d, stage %d", pp->rank, ls->s);
        ipu_prepare_params_t pr = {
            .node_stage = node_stage, .stage = ls->s, .where = where,
            .flags = (ls->s == 0 ? IPU_STAGE_FIRST : 0) | (ls->s == pp->S - 1 ? IPU_STAGE_LAST : 0),
            .profile = p->profile > 0, .release = release};
        if ((st = ipu_prepare_stage(pp->g, &pr, ls->dev, &ls->stage)) == IPU_OK)
            st = list_boundaries(pp, ls);
    }
    ipu_prepare_release_end(release);
    return st;
}

void pipe_free_local(pipe_t *pp)
{
    for (int i = 0; pp->ls && i < pp->n_ls; i++) {
        lstage_t *ls = &pp->ls[i];
        ipu_device_close(ls->dev);
        ipu_stage_free(&ls->stage);
        free(ls->in_links);
        free(ls->out_links);
        free(ls->graph_in);
        free(ls->graph_out);
        free(ls->emitted);
    }
    free(pp->ls);
}

/* Free constants that none of this rank's stages read. */
static void drop_foreign_constants(ipu_graph_t *g, const int *node_stage, const pipe_t *pp)
{
    unsigned char *keep = calloc((size_t)g->n_values + 1, 1);
    if (keep == NULL)
        return;
    for (int i = 0; i < g->n_nodes; i++) {
        int s = node_stage[i];
        if (s < 0 || pipe_stage_rank(pp, s) != pp->rank)
            continue;
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] >= 0)
                keep[g->nodes[i].inputs[k]] = 1;
    }
    for (int k = 0; k < g->n_outputs; k++)
        keep[g->outputs[k]] = 1;
    for (int v = 0; v < g->n_values; v++) {
        ipu_value_t *val = &g->values[v];
        if (!keep[v] && (val->producer < 0 || (val->flags & IPU_VALUE_FOLDED)) &&
            (val->data_kind == IPU_CONST_OWNED || val->data_kind == IPU_CONST_DEFERRED)) {
            if (val->data_kind == IPU_CONST_OWNED)
                free(val->data);
            val->data = NULL;
            val->data_kind = IPU_CONST_NONE;
        }
    }
    free(keep);
}

/* The instruction set of every rank's oneDNN, the layout its convolutions
 * ask for and whether they may run on Winograd: the highest ISA that all
 * ranks have, the blocked layout and Winograd only where every rank wants
 * them, agreed and set before any primitive is made (inferring the shapes
 * makes them, rank 0's measuring runs them), so that every rank makes for a
 * node the kernel the one-rank run makes; rank 0 says so when a cap, a
 * layout or direct convolution was set against a rank's own. */
enum { AGREE_ISA, AGREE_LAYOUT, AGREE_WINOGRAD, AGREE_N };

static ipu_status_t agree_isa(pipe_t *pp, MPI_Comm comm, int *lost)
{
    uint32_t mine[AGREE_N] = {ipu_dnn_isa_mask(), (uint32_t)ipu_dnn_layout_wanted(),
                              (uint32_t)ipu_dnn_winograd_wanted()},
             meet = ~0u;
    uint32_t *all = calloc(AGREE_N * (size_t)pp->world, sizeof(uint32_t));
    ipu_status_t st = all ? IPU_OK : ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    st = ipu_fault_gather(&pp->fault, comm, st, "the instruction set oneDNN dispatches to", 1, mine,
                          all ? AGREE_N : 0, all, lost);
    if (st != IPU_OK) {
        free(all);
        return st;
    }
    int wants = -1, not = -1; /* a rank that wants the blocked layout, one that does not */
    int wino = -1, direct = -1; /* a rank that allows Winograd, one that does not */
    for (int r = 0; r < pp->world; r++) {
        const uint32_t *a = all + AGREE_N * (size_t)r;
        meet &= a[AGREE_ISA];
        if (a[AGREE_LAYOUT] == IPU_DNN_LAYOUT_BLOCKED)
            wants = wants < 0 ? r : wants;
        else
            not = not < 0 ? r : not;
        if (a[AGREE_WINOGRAD])
            wino = wino < 0 ? r : wino;
        else
            direct = direct < 0 ? r : direct;
    }
    int low = -1, high = -1; /* a rank on the highest all have, one above it */
    for (int r = 0; r < pp->world; r++) {
        int above = strcmp(ipu_dnn_isa_top(all[AGREE_N * r + AGREE_ISA]), ipu_dnn_isa_top(meet)) != 0;
        if (above && high < 0)
            high = r;
        if (!above && low < 0)
            low = r;
    }
    int capped = ipu_dnn_cap_isa(meet);
    ipu_dnn_set_layout(not < 0 ? IPU_DNN_LAYOUT_BLOCKED : IPU_DNN_LAYOUT_ONEDNN);
    ipu_dnn_set_winograd(direct < 0);
    if (pp->rank == 0 && high >= 0)
        ipu_warn("oneDNN capped to the instruction set %s on every rank, the highest all ranks have "
                 "(rank %d has %s, rank %d %s), so that ranks holding the same stage run the same "
                 "kernels", ipu_dnn_isa_top(meet), high, ipu_dnn_isa_top(all[AGREE_N * high + AGREE_ISA]),
                 low < 0 ? 0 : low, low < 0 ? "less" : ipu_dnn_isa_top(all[AGREE_N * low + AGREE_ISA]));
    if (pp->rank == 0 && wants >= 0 && not >= 0)
        ipu_warn("convolutions ask for oneDNN's layout on every rank, not the blocked one (rank %d "
                 "asks for the blocked layout, rank %d does not: IPU_EXEC_CONV_LAYOUT or the CPU), so "
                 "that ranks holding the same stage run the same kernels", wants, not);
    if (pp->rank == 0 && wino >= 0 && direct >= 0)
        ipu_warn("convolutions run without Winograd on every rank (rank %d has IPU_EXEC_WINOGRAD=0, "
                 "rank %d does not), so that every stage computes what one rank computes",
                 direct, wino);
    free(all);
    return capped < 0 ? (ipu_status_t)capped : IPU_OK;
}

/* Shapes of micro-batch 0 and the model's costs, agreed on by every rank:
 * rank 0 measures the GEMM-like nodes (unless told not to) and every rank
 * gets its times in *node_ms (allocated; NULL when not measured). The
 * ranks of this host come from the agreement (no collective: one that a
 * rank dies in would never return). */
static ipu_status_t agree_costs(pipe_t *pp, ipu_graph_t *g, MPI_Comm comm, const ipu_partition_params_t *ppar,
                                double **node_ms, pipe_hosts_t *hosts, int *lost)
{
    const ipu_pipeline_params_t *p = pp->p;
    ipu_status_t st = agree_isa(pp, comm, lost);
    if (*lost)
        return st;
    /* shapes of micro-batch 0, then the plan (identical on every rank); as
     * the single-rank session does: the same kernels, the same bits */
    ipu_dnn_set_threads(p->threads); /* before any primitive is made */
    if (st == IPU_OK)
        st = p->make_inputs(p->arg, 0, pp->ins);
    if (st == IPU_OK)
        st = ipu_prepare_shapes(g, pp->ins);
    pp->ins_mb = 0;
    /* measured costs of the GEMM-like nodes, from rank 0 so that every
     * rank computes the same plan */
    int measured = p->measure && !ppar->node_ms && pp->S > 1;
    if (st == IPU_OK && measured) {
        if ((*node_ms = malloc(((size_t)g->n_nodes + 1) * sizeof(double))) == NULL)
            st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
        if (st == IPU_OK && pp->rank == 0)
            st = ipu_measure_nodes(g, *node_ms);
    }
    int *host_ids = pp->host_ids = calloc((size_t)pp->world, sizeof(int));
    if (host_ids == NULL && st == IPU_OK)
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    /* every rank reaches this: agree, with rank 0's measured costs; the
     * others also wait for rank 0's measuring */
    size_t bytes = measured && *node_ms ? (size_t)g->n_nodes * sizeof(double) : 0;
    st = ipu_fault_agree(&pp->fault, comm, st, "the model and the plan's costs", 1, measured ? 2 : 0,
                         *node_ms, bytes, host_ids, lost);
    hosts->local_rank = 0;
    hosts->local_size = 0;
    for (int r = 0; host_ids && r < pp->world; r++)
        if (host_ids[r] == host_ids[pp->rank]) {
            hosts->local_rank += r < pp->rank;
            hosts->local_size++;
        }
    return st;
}

ipu_status_t pipe_agree_plan(pipe_t *pp, ipu_graph_t *g, MPI_Comm comm, const ipu_partition_params_t *ppar,
                             ipu_partition_t *plan, pipe_hosts_t *hosts, int *lost)
{
    const ipu_pipeline_params_t *p = pp->p;
    ipu_partition_params_t part = *ppar;
    part.stages = pp->S;
    part.ipus_per_rank = pp->K;
    part.ipu_memory = p->ipu_memory;
    part.mpi_replicas = pp->R;
    double *node_ms = NULL;
    ipu_status_t st = agree_costs(pp, g, comm, ppar, &node_ms, hosts, lost);
    if (p->measure && !ppar->node_ms && pp->S > 1)
        part.node_ms = node_ms;
    if (*lost) {
        free(node_ms);
        return st;
    }
    if (st == IPU_OK)
        st = ipu_partition_make(g, &part, plan);
    free(node_ms);
    char stages[128];
    if (st == IPU_OK)
        ipu_partition_stages_str(plan, stages, sizeof(stages));
    if (st == IPU_OK && plan->n_stages != pp->S && plan->n_stages % pp->K != 0)
        st = ipu_error(IPU_ERR_INVALID_ARG, "the model's annotations give %s, not a "
                       "multiple of --ipus-per-rank %d (a rank runs one stage on each of its IPUs); "
                       "run with --ipus-per-rank 1 -np %d, or re-plan the model it was made from (the "
                       "annotations win over --stages) with ipu-exec plan --stages %d --ipus-per-rank %d",
                       stages, pp->K, plan->n_stages * pp->R,
                       (plan->n_stages + pp->K - 1) / pp->K * pp->K, pp->K);
    else if (st == IPU_OK && plan->n_stages != pp->S)
        st = ipu_error(IPU_ERR_INVALID_ARG, "the model's annotations give %s but %d "
                       "ranks x %d IPU%s per rank / %d replica%s give %d; run with -np %d (or change "
                       "--ipus-per-rank / --replicas)", stages, pp->world, pp->K, pp->K > 1 ? "s" : "",
                       pp->R, pp->R > 1 ? "s" : "", pp->S, plan->n_stages / pp->K * pp->R);
    return st;
}

ipu_status_t pipe_set_up(pipe_t *pp, ipu_graph_t *g, const ipu_partition_t *plan, const pipe_hosts_t *hosts,
                         ipu_status_t st)
{
    const ipu_pipeline_params_t *p = pp->p;
    pp->W = p->warmup > 0 ? p->warmup : 0;
    pp->t_first = 1e300;
    pp->lat_stride = (p->micro_batches + PIPE_LAT_MAX - 1) / PIPE_LAT_MAX;
    if (pp->lat_stride < 1)
        pp->lat_stride = 1;
    pp->n_lat = (p->micro_batches + pp->lat_stride - 1) / pp->lat_stride;
    pp->t_start = malloc(((size_t)pp->n_lat + 1) * sizeof(double));
    pp->t_end = malloc(((size_t)pp->n_lat + 1) * sizeof(double));
    /* written here, so that the pages are this rank's from now on */
    for (int i = 0; pp->t_start && pp->t_end && i <= pp->n_lat; i++)
        pp->t_start[i] = pp->t_end[i] = -1;
    pp->busy_at_w = calloc((size_t)pp->K, sizeof(double));
    if (st == IPU_OK && (!pp->t_start || !pp->t_end || !pp->busy_at_w))
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    if (st == IPU_OK)
        st = pipe_build_links(pp, plan->node_stage);
    if (st == IPU_OK) {
        drop_foreign_constants(g, plan->node_stage, pp);
        st = ipu_graph_materialise(g); /* this rank's weights out of the model file */
    }
    if (st == IPU_OK) {
        ipu_binding_t bind;
        /* the ranks of this host share its cores */
        int bound = p->bind && ipu_binding_plan(hosts->local_rank, hosts->local_size, pp->K,
                                                   p->threads, &bind) == IPU_OK;
        st = pipe_build_local(pp, plan->node_stage, bound ? &bind : NULL, g);
    }
    return st;
}

/* Ranks holding the same stage (replicas) must have made the same oneDNN
 * implementation for each of its nodes, else their outputs differ:
 * all[r * stride + i] is rank r's hash of node i's (0: not its node, or no
 * oneDNN primitive). The same verdict on every rank. */
static ipu_status_t check_impls(const pipe_t *pp, const int *node_stage, const uint32_t *all, size_t stride)
{
    int n = pp->g->n_nodes;
    for (int i = 0; i < n; i++)
        for (int r = 0; r < pp->world; r++) {
            uint32_t a = all[(size_t)r * stride + i];
            for (int q = r + 1; a && q < pp->world; q++) {
                uint32_t b = all[(size_t)q * stride + i];
                if (b && b != a)
                    return ipu_error(IPU_ERR_UNSUPPORTED, "ranks %d and %d (both holding stage %d) made "
                                     "different oneDNN implementations for node '%s' (%s): their outputs "
                                     "would differ; run every rank with the same oneDNN build, CPU model and "
                                     "ONEDNN_* environment", r, q, node_stage[i],
                                     pp->g->nodes[i].name, pp->g->nodes[i].op_type);
            }
        }
    return IPU_OK;
}

ipu_status_t pipe_start(pipe_t *pp, MPI_Comm comm, const int *node_stage, ipu_status_t st, int *lost)
{
    /* every rank reaches here: fail together before any transfer; with
     * the implementations of this rank's nodes, compared between replicas,
     * and where its segment for the links to the ranks of its host is */
    size_t n = (size_t)pp->g->n_nodes, stride = n + PIPE_SHM_WORDS;
    uint32_t *mine = calloc(stride, sizeof(uint32_t));
    uint32_t *all = calloc((size_t)pp->world * stride, sizeof(uint32_t));
    if ((!mine || !all) && st == IPU_OK)
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; mine && node_stage && i < n; i++)
        if (node_stage[i] >= 0 && pipe_stage_rank(pp, node_stage[i]) == pp->rank)
            mine[i] = ipu_dnn_node_impl(&pp->g->nodes[i]);
    if (st == IPU_OK && pp->world > 1)
        pipe_shm_create(pp);
    if (mine)
        pipe_shm_id(pp, mine + n);
    st = ipu_fault_gather(&pp->fault, comm, st, "the stages' set-up", 1, mine, mine && all ? stride : 0, all,
                          lost);
    if (st == IPU_OK)
        st = check_impls(pp, node_stage, all, stride);
    if (st == IPU_OK)
        st = pipe_shm_agree(pp, comm, all, stride, n, lost);
    free(mine);
    free(all);
    /* this rank's own failure here waits for the start's agreement: the
     * transport's set-up is collective */
    ipu_status_t mine_st = st == IPU_OK ? pipe_alloc_link_buffers(pp) : IPU_OK; /* the other links' */
    if (st == IPU_OK) {
        ipu_watchdog_arm(pp->T, pp->rank, "the transport's set-up (its MPI bootstrap)");
        st = ipu_transport_open(comm, &pp->p->transport, &pp->tr);
        ipu_watchdog_disarm();
        pp->fault.tr = pp->tr;
    }
    if (st == IPU_OK)
        st = mine_st;
    if (st == IPU_OK)
        st = pipe_post_links(pp);
    if (st == IPU_OK && pp->world > 1)
        st = ipu_fault_open_notices(&pp->fault, pp->tr);
    if (!*lost) /* and the start of the run, all together */
        st = ipu_fault_agree(&pp->fault, comm, st, "the start of the run", 1, 0, NULL, 0, NULL, lost);
    return st;
}
