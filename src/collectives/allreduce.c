/* gcl_allreduce: send[count] -> recv[count] on every member (in place:
 * send = GCL_IN_PLACE). Algorithms:
 *  - recursive_doubling (small): Thakur, Rabenseifner, Gropp, "Optimization
 *    of collective communication operations in MPICH" (IJHPCA 2005) §4.4;
 *    Open MPI ompi/mca/coll/base/coll_base_allreduce.c
 *    ompi_coll_base_allreduce_intra_recursivedoubling. Non-power-of-two: the
 *    first 2*rem ranks fold pairwise into rem before and unfold after. A
 *    power of two up to GCL_CHECK_CARRY_MAX bytes carries the call check in
 *    its messages (check.c) instead of a round of its own before them; two
 *    members beyond send the check's header beside their one exchange.
 *  - rabenseifner (medium): recursive-halving reduce-scatter + recursive-
 *    doubling allgather (Rabenseifner 2004; Thakur et al. 2005 §4.4; Open MPI
 *    ompi_coll_base_allreduce_intra_redscat_allgather), same folding.
 *  - ring (large): Patarasuk & Yuan, JPDC 2009; Open MPI
 *    ompi_coll_base_allreduce_intra_ring_segmented: ring reduce-scatter then
 *    ring allgather, each block in pipelined segments.
 *  - hierarchical (group spans hosts): reduce within each host (shm or
 *    k-nomial), allreduce among the host leaders, broadcast within each host
 *    (Open MPI coll/han's allreduce, UCC's split-rail allreduce). */
#include "collectives/gcl_internal.h"

enum { STEP_FOLD = 0, STEP_CORE = 1, STEP_UNFOLD = 60000 };

/* Fold to a power of two: returns this rank's virtual rank (-1: idle) and
 * fills vmap; *dep is the op after which acc holds the folded data; *fold_send
 * the op that sent acc away (idle ranks). */
static int fold(gcl_request_t *r, char *acc, size_t count, int pof2, int *vmap, int *dep, int *fold_send)
{
    gcl_comm_t *c = r->comm;
    int me = c->rank, rem = c->size - pof2;
    size_t bytes = count * r->esz;
    for (int v = 0; v < pof2; v++)
        vmap[v] = v < rem ? 2 * v + 1 : v + rem;
    *fold_send = -1;
    if (me >= 2 * rem)
        return me - rem;
    if (me % 2 == 0) {
        *fold_send = gcl_s_send(r, me + 1, STEP_FOLD, acc, bytes, *dep, -1);
        return -1;
    }
    char *tmp = gcl_req_alloc(r, bytes);
    if (tmp == NULL)
        return -1;
    int rcv = gcl_s_recv(r, me - 1, STEP_FOLD, tmp, bytes, -1, -1);
    *dep = gcl_s_reduce(r, acc, acc, tmp, count, rcv, *dep);
    return me / 2;
}

static void unfold(gcl_request_t *r, char *acc, size_t count, int pof2, int vrank, int dep, int fold_send)
{
    gcl_comm_t *c = r->comm;
    int me = c->rank, rem = c->size - pof2;
    if (me >= 2 * rem)
        return;
    if (vrank >= 0)
        gcl_s_send(r, me - 1, STEP_UNFOLD, acc, count * r->esz, dep, -1);
    else
        gcl_s_recv(r, me + 1, STEP_UNFOLD, acc, count * r->esz, fold_send, -1);
}

static int copy_in(gcl_request_t *r, const void *send, void *recv, size_t count)
{
    return send == GCL_IN_PLACE ? -1 : gcl_s_copy(r, recv, send, count * r->esz, -1, -1);
}

static gcl_status_t ar_recursive_doubling(gcl_request_t *r, const void *send, char *acc, size_t count)
{
    int pof2 = gcl_pof2_below(r->comm->size), fs;
    size_t bytes = count * r->esz;
    int *vmap = gcl_req_alloc(r, (size_t)pof2 * sizeof(int));
    char *tmp = gcl_req_alloc(r, bytes);
    if (r->err)
        return r->err;
    int prev = copy_in(r, send, acc, count);
    int v = fold(r, acc, count, pof2, vmap, &prev, &fs);
    if (v >= 0) {
        unsigned step = STEP_CORE;
        for (int mask = 1; mask < pof2; mask <<= 1, step++) {
            int partner = vmap[v ^ mask];
            int s = gcl_s_send(r, partner, step, acc, bytes, prev, -1);
            int rc = gcl_s_recv(r, partner, step, tmp, bytes, prev, -1);
            prev = gcl_s_reduce(r, acc, acc, tmp, count, rc, s);
        }
    }
    unfold(r, acc, count, pof2, v, prev, fs);
    return r->err;
}

/* Recursive doubling among a power of two carrying the call check
 * (check.c): round i's exchange with rank ^ 2^i is the check's round i,
 * the data after its header. acc lives in the check's out area; the result
 * reaches recv only after the last round's check passed. */
static gcl_status_t ar_recursive_doubling_checked(gcl_request_t *r, const gcl_args_t *a)
{
    size_t bytes = a->count * r->esz;
    gcl_check_t *k = gcl_check_new(r, a, bytes);
    if (k == NULL)
        return r->err;
    char *acc = gcl_check_out(k), *tmp = gcl_check_in(k);
    int prev = gcl_s_copy(r, acc, a->send == GCL_IN_PLACE ? a->recv : a->send, bytes, -1, -1);
    for (int i = 0; i < gcl_check_rounds(r->comm); i++) {
        int m = gcl_check_round(r, k, prev);
        prev = gcl_s_reduce(r, acc, acc, tmp, a->count, m, -1);
    }
    gcl_s_copy(r, a->recv, acc, bytes, gcl_check_end(r, k, prev), -1);
    return r->err;
}

/* Two members, too large to copy: the one exchange beside the call
 * check's header (its bulk message, check.c); the reduction into recv
 * after the verdict. */
static gcl_status_t ar_exchange_checked(gcl_request_t *r, const gcl_args_t *a)
{
    size_t bytes = a->count * r->esz;
    gcl_check_t *k = gcl_check_new(r, a, 0);
    char *tmp = gcl_req_alloc(r, bytes);
    if (r->err)
        return r->err;
    const void *src = a->send == GCL_IN_PLACE ? a->recv : a->send;
    int s = -1, v = -1;
    gcl_check_round_bulk(r, k, -1, src, bytes, tmp, bytes, &s, &v);
    int end = gcl_check_end(r, k, v);
    gcl_s_dep(r, end, s);
    gcl_s_reduce(r, a->recv, src, tmp, a->count, end, -1);
    return r->err;
}

static gcl_status_t ar_rabenseifner(gcl_request_t *r, const void *send, char *acc, size_t count)
{
    int pof2 = gcl_pof2_below(r->comm->size), fs;
    int *vmap = gcl_req_alloc(r, (size_t)pof2 * sizeof(int));
    gcl_blocks_t b;
    if (vmap == NULL || gcl_blocks_even(r, &b, count, pof2) < 0)
        return r->err;
    int prev = copy_in(r, send, acc, count);
    int v = fold(r, acc, count, pof2, vmap, &prev, &fs), lg = 0;
    while ((1 << lg) < pof2)
        lg++;
    if (v >= 0) {
        prev = gcl_rh_phase(r, acc, &b, v, pof2, vmap, STEP_CORE, prev);
        prev = gcl_rd_ag_phase(r, acc, &b, v, pof2, vmap, STEP_CORE + (unsigned)lg, prev);
    }
    unfold(r, acc, count, pof2, v, prev, fs);
    return r->err;
}

static gcl_status_t ar_ring(gcl_request_t *r, const void *send, char *out, size_t count)
{
    int p = r->comm->size;
    gcl_blocks_t b;
    if (gcl_blocks_even(r, &b, count, p) < 0)
        return r->err;
    int nseg = gcl_nseg(r, b.maxcnt), red[256];
    int *sends = gcl_req_alloc(r, (size_t)(p - 1) * (size_t)nseg * sizeof(int));
    if (sends == NULL)
        return r->err;
    const char *in = send == GCL_IN_PLACE ? out : send;
    unsigned steps = (unsigned)gcl_ring_rs_phase(r, in, out, NULL, &b, 0, -1, red, sends, &nseg);
    gcl_ring_ag_phase(r, out, &b, steps, red, sends, nseg);
    return r->err;
}

static gcl_status_t ar_hierarchical(gcl_request_t *r, const void *send, char *out, size_t count)
{
    gcl_comm_t *c = r->comm, *local = gcl_comm_local(c), *leaders = gcl_comm_leaders(c);
    int lroot = local && local->rank == 0;
    gcl_args_t red = {GCL_COLL_REDUCE, send, out, count, r->dtype, r->op, 0};
    if (send == GCL_IN_PLACE && !lroot)
        red.send = out;
    int dep = gcl_s_child(r, local, &red, -1);
    if (leaders && leaders->size > 1) {
        gcl_args_t ar = {GCL_COLL_ALLREDUCE, GCL_IN_PLACE, out, count, r->dtype, r->op, 0};
        dep = gcl_s_child(r, leaders, &ar, dep);
    }
    gcl_args_t bc = {GCL_COLL_BROADCAST, out, out, count, r->dtype, r->op, 0};
    gcl_s_child(r, local, &bc, dep);
    return r->err;
}

gcl_status_t gcl_allreduce_build(gcl_request_t *r, const gcl_args_t *a, gcl_alg_t alg)
{
    switch (alg) {
    case GCL_ALG_RECURSIVE_DOUBLING:
        if (r->check && gcl_is_pow2(r->comm->size) && a->count * r->esz <= GCL_CHECK_CARRY_MAX)
            return ar_recursive_doubling_checked(r, a);
        if (r->check && r->comm->size == 2)
            return ar_exchange_checked(r, a);
        return ar_recursive_doubling(r, a->send, a->recv, a->count);
    case GCL_ALG_RABENSEIFNER:       return ar_rabenseifner(r, a->send, a->recv, a->count);
    case GCL_ALG_HIERARCHICAL:       return ar_hierarchical(r, a->send, a->recv, a->count);
    default:                         r->algo = "ring"; return ar_ring(r, a->send, a->recv, a->count);
    }
}
