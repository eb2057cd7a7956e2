/* The front end of every collective (gcl_coll_post, from api.c): argument
 * checks, the GCL_DEBUG check, the algorithm from the decision table (each
 * once per call), then the shared-memory path without a request
 * (shm_coll.c) or the schedule built by the collective's builder, the AVG
 * division, the timeout, the log line. Also the trivial cases (no data, one
 * member) and the child collectives of composite algorithms (gcl_s_child). */
#include "collectives/gcl_internal.h"

static int is_reduction(gcl_coll_t c)
{
    return c == GCL_COLL_ALLREDUCE || c == GCL_COLL_REDUCE || c == GCL_COLL_REDUCE_SCATTER;
}

static int has_root(gcl_coll_t c) { return c == GCL_COLL_REDUCE || c == GCL_COLL_BROADCAST; }

static gcl_status_t check(const gcl_comm_t *c, const gcl_args_t *a)
{
    const char *n = gcl_coll_name(a->coll);
    if (c == NULL)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_%s: NULL communicator", n);
    gcl_status_t st = gcl_ctx_notice(c->ctx, n); /* a rank lost: no more calls */
    if (st != GCL_OK)
        return st;
    if (a->coll == GCL_COLL_BARRIER)
        return GCL_OK;
    if (gcl_dtype_size(a->dtype) == 0)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_%s: unknown dtype %d", n, (int)a->dtype);
    if (is_reduction(a->coll) && (a->op < 0 || a->op >= GCL_OP_COUNT))
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_%s: unknown op %d", n, (int)a->op);
    if (has_root(a->coll) && (a->root < 0 || a->root >= c->size))
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_%s: root %d not in [0, %d)", n, a->root, c->size);
    if (a->count == 0)
        return GCL_OK;
    int root_only = a->coll == GCL_COLL_REDUCE && c->rank != a->root;
    if (a->send == NULL || (a->recv == NULL && !root_only))
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_%s: NULL buffer", n);
    if (a->recv == GCL_IN_PLACE)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_%s: GCL_IN_PLACE is not a buffer%s", n,
                             a->coll == GCL_COLL_BROADCAST ? "" : " (in place: pass it as the send buffer)");
    if (a->send == GCL_IN_PLACE && (a->coll == GCL_COLL_ALLTOALL || root_only))
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_%s: GCL_IN_PLACE is not allowed here%s", n,
                             root_only ? " (only at the root)" : "");
    if (a->count > ((size_t)1 << 60) / gcl_dtype_size(a->dtype) / (size_t)c->size)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_%s: count %zu too large", n, a->count);
    return GCL_OK;
}

static size_t coll_bytes(const gcl_comm_t *c, const gcl_args_t *a)
{
    size_t b = a->count * gcl_dtype_size(a->dtype);
    if (a->coll == GCL_COLL_REDUCE_SCATTER || a->coll == GCL_COLL_ALLGATHER || a->coll == GCL_COLL_ALLTOALL)
        b *= (size_t)c->size;
    return b;
}

/* one member, or nothing to move */
static gcl_status_t build_trivial(gcl_request_t *r, const gcl_args_t *a)
{
    if (a->count == 0 || a->coll == GCL_COLL_BROADCAST || a->coll == GCL_COLL_BARRIER)
        return GCL_OK;
    if (a->send != GCL_IN_PLACE && (a->recv != NULL))
        gcl_s_copy(r, a->recv, a->send, a->count * r->esz, -1, -1);
    return r->err;
}

static gcl_status_t build(gcl_request_t *r, const gcl_args_t *a, gcl_alg_t alg)
{
    /* (count 0 on shared memory: an op of the segment all the same, for
     * its call check) */
    if (r->comm->size == 1 || (a->count == 0 && a->coll != GCL_COLL_BARRIER && alg != GCL_ALG_SHM))
        return build_trivial(r, a);
    if (alg == GCL_ALG_SHM)
        return gcl_shm_build(r, a);
    if (alg == GCL_ALG_DISSEMINATION && a->coll != GCL_COLL_BARRIER)
        return gcl_carried_build(r, a);
    switch (a->coll) {
    case GCL_COLL_ALLREDUCE:      return gcl_allreduce_build(r, a, alg);
    case GCL_COLL_REDUCE:         return gcl_reduce_build(r, a, alg);
    case GCL_COLL_REDUCE_SCATTER: return gcl_reduce_scatter_build(r, a, alg);
    case GCL_COLL_ALLGATHER:      return gcl_allgather_build(r, a, alg);
    case GCL_COLL_BROADCAST:      return gcl_broadcast_build(r, a, alg);
    case GCL_COLL_ALLTOALL:       return gcl_alltoall_build(r, a, alg);
    case GCL_COLL_BARRIER:        return gcl_barrier_build(r, a, alg);
    default:                      return GCL_ERR_INVALID_ARG;
    }
}

/* The oldest of c's collectives the user has not completed yet (NULL:
 * none). The live list is oldest first. */
static const gcl_request_t *oldest_live(const gcl_comm_t *c)
{
    for (const gcl_request_t *r = c->ctx->live; r; r = r->live_next)
        if (r->comm == c && r->scope == GCL_SCOPE_COLL)
            return r;
    return NULL;
}

/* The request path once the arguments are checked: the call's place among
 * the outstanding ones, the algorithm (alg < 0: decide now), the schedule,
 * the AVG division, the timeout, the log line, the first steps. */
static gcl_status_t start(gcl_comm_t *c, const gcl_args_t *a, int internal, size_t bytes, int alg,
                          gcl_request_t **out)
{
    gcl_status_t st;
    /* a call's tags carry its sequence number modulo 2^GCL_SEQ_BITS: a
     * call that far ahead of one still outstanding would take its data */
    const gcl_request_t *old = internal ? NULL : oldest_live(c);
    if (old && c->seq - old->seq >= (1u << GCL_SEQ_BITS))
        return gcl_set_error(GCL_ERR_INVALID_ARG,
                             "gcl_%s: %u collective calls on communicator %u are outstanding since #%u, "
                             "the most there may be: complete some (gcl_wait/gcl_test) before starting more",
                             gcl_coll_name(a->coll), c->seq - old->seq, c->id, old->seq);
    if (alg < 0) {
        alg = gcl_decide(c, a->coll, bytes);
        if (alg == GCL_ALG_SHM && c->size > 1 && !gcl_comm_shm(c))
            alg = gcl_decide(c, a->coll, bytes); /* shm_state is now -1: the table again */
    }
    gcl_request_t *r = gcl_req_new(c, a->coll, gcl_coll_name(a->coll), GCL_SCOPE_COLL, a->dtype, a->op);
    if (r == NULL)
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_%s: out of memory", gcl_coll_name(a->coll));
    r->algo = gcl_alg_name((gcl_alg_t)alg);
    /* the network path's call check (check.c), carried by the builder or
     * added before its ops; the shared-memory path checks in its segment
     * (shm_check.c), child calls in their parent. A call with count 0 is
     * checked too (its rounds alone): unchecked, it would leave a member
     * called with a count waiting for it until the timeout. An alltoall
     * (always on the network path) on a communicator with a segment puts
     * its call word there before its messages instead: checked against
     * every member's call on the segment, whatever collective that is. */
    int word = !internal && a->coll == GCL_COLL_ALLTOALL && c->size > 1 && c->shm_state > 0;
    r->check = !internal && !word && alg != GCL_ALG_SHM && c->size > 1;
    st = build(r, a, (gcl_alg_t)alg);
    if (st == GCL_OK && r->check)
        st = gcl_s_call_check(r, a);
    if (st == GCL_OK && word) {
        int w = gcl_s_shm(r, a, -1, -1);
        st = gcl_s_first_of(r, r->nops, w);
    }
    if (st == GCL_OK && r->err)
        st = r->err;
    if (st != GCL_OK) {
        gcl_req_free(r);
        return st;
    }
    if (a->op == GCL_AVG && a->count > 0 && is_reduction(a->coll) &&
        (a->coll != GCL_COLL_REDUCE || c->rank == a->root)) {
        r->avg_buf = a->recv;
        r->avg_count = a->count;
        r->avg_n = c->size;
    }
    if (!internal) {
        if (c->timeout_s > 0)
            r->timed = 1;
        gcl_log(c, GCL_LOG_INFO, "%s #%u: %zu x %s (%zu B) algorithm %s", r->name, r->seq, a->count,
                a->coll == GCL_COLL_BARRIER ? "-" : gcl_dtype_info(a->dtype)->name,
                bytes, r->algo);
        st = gcl_req_progress(r); /* post the first steps now */
        if (st != GCL_OK && st != GCL_IN_PROGRESS) {
            gcl_req_free(r);
            return st;
        }
        gcl_req_track(r);
    }
    *out = r;
    return GCL_OK;
}

/* A blocking call may run on shared memory without a request
 * (gcl_shm_direct): the segment is open, no GCL_DEBUG check or log line is
 * wanted, and there is something to do. */
static int direct_ok(const gcl_comm_t *c, const gcl_args_t *a)
{
    return c->shm_state > 0 && c->size > 1 && !c->ctx->debug && c->ctx->log_level == GCL_LOG_QUIET &&
           a->coll != GCL_COLL_ALLTOALL && (a->count > 0 || a->coll == GCL_COLL_BARRIER);
}

gcl_status_t gcl_coll_post(gcl_comm_t *c, const gcl_args_t *a, gcl_request_t **req)
{
    gcl_status_t st = check(c, a);
    /* GCL_DEBUG: an argument error goes to every member (it would leave
     * the others a call ahead) */
    if (c != NULL && c->ctx->debug)
        st = gcl_debug_check(c, a, st);
    if (st != GCL_OK)
        return st;
    size_t bytes = coll_bytes(c, a);
    int alg = -1;
    if (req == NULL && direct_ok(c, a) && (alg = gcl_decide(c, a->coll, bytes)) == GCL_ALG_SHM)
        return gcl_shm_direct(c, a);
    gcl_request_t *r;
    st = start(c, a, 0, bytes, alg, &r);
    if (st != GCL_OK)
        return st;
    if (req != NULL) {
        *req = r;
        return GCL_OK;
    }
    return gcl_wait(&r);
}

int gcl_s_child(gcl_request_t *r, gcl_comm_t *sub, const gcl_args_t *a, int dep)
{
    gcl_request_t *ch;
    if (r->err)
        return -1;
    if (sub == NULL) {
        r->err = gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_%s: out of memory for a sub-communicator", r->name);
        return -1;
    }
    gcl_status_t st = check(sub, a);
    if (st == GCL_OK)
        st = start(sub, a, 1, coll_bytes(sub, a), -1, &ch);
    if (st != GCL_OK) {
        r->err = st;
        return -1;
    }
    return gcl_s_sub(r, ch, dep, -1);
}
