/* libgcl's collectives on a host's shared-memory segment (the "shm"
 * algorithm): the adapter between a collective's arguments and shm.h's ops,
 * as one op of a request's schedule or, for a blocking call, polled
 * directly without a request. */
#include "collectives/gcl_internal.h"
#include "collectives/reduce_local.h"

gcl_status_t gcl_shm_build(gcl_request_t *r, const gcl_args_t *a)
{
    gcl_args_t s = *a;
    s.op = r->op;
    gcl_s_shm(r, &s, -1, -1);
    return r->err;
}

gcl_status_t gcl_shm_start_args(gcl_shm_t *shm, const gcl_args_t *a, gcl_shm_op_t **op)
{
    switch (a->coll) {
    case GCL_COLL_ALLREDUCE:
        return gcl_shm_allreduce_start(shm, a->send, a->recv, a->count, a->dtype, a->op, op);
    case GCL_COLL_REDUCE:
        return gcl_shm_reduce_start(shm, a->send, a->recv, a->count, a->dtype, a->op, a->root, op);
    case GCL_COLL_REDUCE_SCATTER:
        return gcl_shm_reduce_scatter_start(shm, a->send, a->recv, a->count, a->dtype, a->op, op);
    case GCL_COLL_ALLGATHER:
        return gcl_shm_allgather_start(shm, a->send, a->recv, a->count, a->dtype, op);
    case GCL_COLL_BROADCAST:
        return gcl_shm_broadcast_start(shm, a->recv, a->count, a->dtype, a->root, op);
    case GCL_COLL_BARRIER:
        return gcl_shm_barrier_start(shm, op);
    case GCL_COLL_ALLTOALL: /* the call word alone (coll.c) */
        return gcl_shm_alltoall_word_start(shm, a->count, a->dtype, op);
    default:
        return GCL_ERR_INVALID_ARG;
    }
}

/* A blocking collective on shared memory skips the request and its
 * schedule: one shm op, polled here, so a small allreduce costs the flag
 * exchange itself. Earlier non-blocking shm ops of the communicator still
 * complete first (the segment's queue keeps the call order). Same results
 * as the request path (AVG: SUM, then one division). */
gcl_status_t gcl_shm_direct(gcl_comm_t *c, const gcl_args_t *a)
{
    const char *n = gcl_coll_name(a->coll);
    int avg = a->op == GCL_AVG && (a->coll == GCL_COLL_ALLREDUCE || a->coll == GCL_COLL_REDUCE ||
                                  a->coll == GCL_COLL_REDUCE_SCATTER);
    gcl_args_t s = *a;
    s.op = avg ? GCL_SUM : a->op;
    gcl_shm_op_t *op;
    c->seq++; /* as a request would take */
    gcl_status_t st = gcl_shm_start_args(c->shm, &s, &op);
    if (st != GCL_OK)
        return gcl_comm_shm_error(c, n, st);
    double deadline = 0;
    for (unsigned spin = 0; (st = gcl_shm_progress(op)) == GCL_IN_PROGRESS; spin++) {
        if ((spin & 63) == 0 && c->timeout_s > 0) {
            double now = gcl_now();
            if (deadline == 0)
                deadline = now + c->timeout_s;
            else if (now > deadline) {
                int j = gcl_shm_waited(c->shm);
                gcl_shm_cancel(op);
                if (j < 0 || j >= c->size)
                    return gcl_set_error(GCL_ERR_TIMED_OUT,
                                         "gcl_%s (shm) on communicator %u (rank %d of %d) timed out "
                                         "after %.3g s waiting for the other members", n, c->id,
                                         c->rank, c->size, c->timeout_s);
                return gcl_set_error(GCL_ERR_TIMED_OUT,
                                     "gcl_%s (shm) on communicator %u (rank %d of %d) timed out after "
                                     "%.3g s waiting for rank %d (world rank %d, host %s)", n, c->id,
                                     c->rank, c->size, c->timeout_s, j, c->world[j],
                                     ipu_transport_host(c->ctx->tp, c->world[j]));
            }
        }
        if ((spin & 15) == 15 && (st = gcl_ctx_notice(c->ctx, n)) != GCL_OK) {
            gcl_shm_abandon(op); /* a rank lost elsewhere: stop, and say so here */
            return st;
        }
        if (c->ctx->live && (spin & 15) == 0)
            gcl_progress_live(c->ctx, NULL); /* the caller's non-blocking calls */
        gcl_idle(c->ctx, spin);
    }
    if (st != GCL_OK)
        return gcl_comm_shm_error(c, n, st); /* a member lost, or the segment abandoned */
    if (avg && (a->coll != GCL_COLL_REDUCE || c->rank == a->root))
        gcl_reduce_finish_avg(a->recv, a->count, a->dtype, c->size);
    return st;
}
