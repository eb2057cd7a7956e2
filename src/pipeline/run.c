/* ipu_pipeline_run (pipeline.h): the order of a pipelined run's phases.
 * Set-up and plan agreement (setup.c), the links and credit flow
 * (links.c), the micro-batch schedule (schedule.c), the report (report.c);
 * fault handling (fault.h) bounds every wait between them. */
#include "pipeline/internal.h"

#include <stdlib.h>
#include <string.h>

void ipu_pipeline_params_init(ipu_pipeline_params_t *p)
{
    memset(p, 0, sizeof(*p));
    p->replicas = 1;
    p->ipus_per_rank = 1;
    p->micro_batches = 1;
    p->credits = 2;
    p->measure = 1;
    p->bind = 1;
    p->threads = 1;
    p->ipu_memory = IPU_DEFAULT_MEMORY;
    ipu_transport_params_init(&p->transport);
}

/* The run's shape (ranks, replicas, stages, credits) from p and comm.
 * Errors: IPU_ERR_INVALID_ARG, IPU_ERR_NO_MEMORY. */
static ipu_status_t pipe_init(pipe_t *pp, MPI_Comm comm)
{
    const ipu_pipeline_params_t *p = pp->p;
    MPI_Comm_rank(comm, &pp->rank);
    MPI_Comm_size(comm, &pp->world);
    pp->R = p->replicas;
    pp->K = p->ipus_per_rank;
    pp->C = p->credits < 1 ? 1 : p->credits > MAX_CREDITS ? MAX_CREDITS : p->credits;
    if (pp->R < 1 || pp->world % pp->R != 0)
        return ipu_error(IPU_ERR_INVALID_ARG, "%d rank%s do%s not divide into %d replicas; run with a "
                         "multiple of %d ranks (-np)", pp->world, pp->world == 1 ? "" : "s",
                         pp->world == 1 ? "es" : "", pp->R, pp->R);
    pp->P = pp->world / pp->R;
    pp->S = pp->P * pp->K;
    pp->replica = pp->rank / pp->P;
    if (p->micro_batches < pp->R)
        return ipu_error(IPU_ERR_INVALID_ARG, "%d micro-batch%s for %d replicas: give at least one "
                         "per replica (--batches)", p->micro_batches, p->micro_batches == 1 ? "" : "es",
                         pp->R);
    pp->ins = calloc((size_t)pp->g->n_inputs + 1, sizeof(ipu_tensor_t));
    if (pp->ins == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    return IPU_OK;
}

static void pipe_free(pipe_t *pp)
{
    pipe_free_links(pp);
    pipe_shm_close(pp);
    free(pp->host_ids);
    pipe_free_local(pp);
    free(pp->t_start);
    free(pp->t_end);
    free(pp->busy_at_w);
    ipu_fault_close(&pp->fault);
    ipu_transport_close(pp->tr);
    free(pp->ins);
}

ipu_status_t ipu_pipeline_run(ipu_graph_t *g, MPI_Comm comm, const ipu_pipeline_params_t *p,
                              const ipu_partition_params_t *ppar, ipu_partition_t *plan_out,
                              ipu_pipeline_report_t *rep)
{
    pipe_t pp = {.g = g, .p = p, .ins_mb = -1,
                 .T = p->transport.timeout_s > 0 ? p->transport.timeout_s : 30};
    pp.fault.timeout_s = pp.T;
    ipu_partition_t plan = {0};
    pipe_hosts_t hosts;
    int lost = 0;
    rep->setup_failed = 1; /* until the transfers start */
    ipu_status_t st = pipe_init(&pp, comm);
    if (st != IPU_OK) {
        free(pp.ins);
        return st;
    }
    st = pipe_agree_plan(&pp, g, comm, ppar, &plan, &hosts, &lost);
    if (lost) {
        rep->setup_failed = 0; /* a rank is gone: no collective after this */
        goto out;
    }
    st = pipe_set_up(&pp, g, &plan, &hosts, st);
    if ((st = pipe_start(&pp, comm, plan.node_stage, st, &lost)) != IPU_OK) {
        rep->setup_failed = !lost;
        goto out;
    }
    rep->setup_failed = 0;
    pipe_sync_clocks(&pp, comm); /* pp.t0: one base for every rank's times */
    st = pipe_schedule(&pp);
    double t_done = pipe_now_s() - pp.t0;
    /* every rank finished its stages (a rank that did waits for the others
     * answering pings, so the loss of one still running is found) */
    if (st == IPU_OK)
        st = ipu_fault_agree(&pp.fault, comm, st, "the end of the run", 0, 0, NULL, 0, NULL, &lost);
    if (st != IPU_OK) /* a lost peer: tell the others, or name the rank lost first */
        st = ipu_fault_tell(&pp.fault, st);
    if (st == IPU_OK) /* gathered on rank 0 */
        pipe_report(&pp, comm, t_done, rep);
out:
    pipe_free(&pp);
    if (st == IPU_OK && plan_out)
        *plan_out = plan;
    else
        ipu_partition_free(&plan);
    return st;
}
