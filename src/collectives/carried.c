/* Small collectives carried by the call check's rounds (check.c): the
 * "dissemination" algorithm of every collective but the barrier (whose
 * checked form is the rounds alone, barrier.c). In round i of ceil(lg p)
 * every member sends the check's header followed by what it holds to its
 * round partner (gcl_check_peers: rank ^ 2^i when p is a power of two, else
 * rank + 2^i, receiving from rank - 2^i), so that after the last round every
 * member has what it needs and the check's verdict, and the check costs no
 * message of its own:
 *  - allgather, allreduce, reduce, reduce_scatter, alltoall: every member's
 *    whole input gathered to every member, the dissemination allgather of
 *    Bruck, Ho, Kipnis, Upfal, Weathersby, "Efficient algorithms for
 *    all-to-all communications in multiport message-passing systems" (IEEE
 *    TPDS 1997; allgather.c's bruck, mirrored), for a power of two
 *    recursive doubling (Thakur, Rabenseifner, Gropp 2005 §4.1); then each
 *    member takes or reduces what its call returns. Reductions go in rank
 *    order, so every member of an allreduce gets the same bits. Reductions,
 *    reduce_scatter and alltoall move p times their bytes: the decision table
 *    takes this algorithm while the gathered area is at most
 *    GCL_CHECK_CARRY_MAX (gcl_carried_bytes).
 *  - broadcast: the root's data forwarded by every member that has it (after
 *    round i the 2^(i+1) members nearest the root do), the others sending the
 *    header alone.
 * The results reach the user's buffers only after the verdict. */
#include "collectives/gcl_internal.h"

#include "collectives/reduce_local.h"

#include <stdint.h>
#include <string.h>

/* what the verdict's continuation needs */
typedef struct carried {
    gcl_args_t a;
    const char *area; /* the gathered inputs, one slot per member (slot_of) */
    size_t blk;       /* bytes of a slot */
} carried_t;

/* The slot of the gathered area holding member m's input: round i puts
 * the partner's slots [0, n) at [2^i, 2^i + n), so slot j holds member
 * rank ^ j (a power of two) or rank - j. */
static const char *slot_of(const carried_t *x, const gcl_comm_t *c, int m)
{
    int p = c->size, j = gcl_is_pow2(p) ? c->rank ^ m : (c->rank - m + p) % p;
    return x->area + (size_t)j * x->blk;
}

size_t gcl_carried_bytes(const gcl_comm_t *c, gcl_coll_t coll, size_t bytes)
{
    size_t p = (size_t)c->size;
    switch (coll) {
    case GCL_COLL_BROADCAST:
    case GCL_COLL_ALLGATHER:
        return bytes;
    case GCL_COLL_BARRIER:
        return 0;
    default: /* every member's whole input */
        return bytes <= SIZE_MAX / p ? bytes * p : SIZE_MAX;
    }
}

/* dst[0, n) = the reduction in rank order of every member's slot at byte
 * offset off, n bytes (count elements) */
static gcl_status_t reduce_slots(gcl_request_t *r, const carried_t *x, char *dst, size_t off, size_t count)
{
    const gcl_comm_t *c = r->comm;
    memcpy(dst, slot_of(x, c, 0) + off, count * r->esz);
    for (int m = 1; m < c->size; m++) {
        gcl_status_t st = gcl_reduce_local(dst, slot_of(x, c, m) + off, count, r->dtype, r->op);
        if (st != GCL_OK)
            return st;
    }
    return GCL_OK;
}

/* after the verdict: the call's result out of the gathered area */
static gcl_status_t deliver(gcl_request_t *r, void *arg)
{
    const carried_t *x = arg;
    const gcl_comm_t *c = r->comm;
    const gcl_args_t *a = &x->a;
    size_t cb = a->count * r->esz;
    char *out = a->recv;
    switch (a->coll) {
    case GCL_COLL_ALLGATHER:
        for (int m = 0; m < c->size; m++)
            memcpy(out + (size_t)m * cb, slot_of(x, c, m), cb);
        return GCL_OK;
    case GCL_COLL_ALLTOALL:
        for (int m = 0; m < c->size; m++)
            memcpy(out + (size_t)m * cb, slot_of(x, c, m) + (size_t)c->rank * cb, cb);
        return GCL_OK;
    case GCL_COLL_REDUCE:
        return c->rank == a->root ? reduce_slots(r, x, out, 0, a->count) : GCL_OK;
    case GCL_COLL_REDUCE_SCATTER:
        return reduce_slots(r, x, out, (size_t)c->rank * cb, a->count);
    default: /* allreduce */
        return reduce_slots(r, x, out, 0, a->count);
    }
}

/* Gather every member's blk bytes at in into the check's out area. */
static gcl_status_t gather_all(gcl_request_t *r, const gcl_args_t *a, const void *in, size_t blk)
{
    const gcl_comm_t *c = r->comm;
    int p = c->size;
    gcl_check_t *k = gcl_check_new(r, a, (size_t)p * blk);
    carried_t *x = gcl_req_alloc(r, sizeof(*x));
    if (k == NULL || x == NULL)
        return r->err;
    char *area = gcl_check_out(k), *got = gcl_check_in(k);
    int prev = gcl_s_copy(r, area, in, blk, -1, -1);
    for (int i = 0, d = 1; d < p; i++, d *= 2) {
        size_t n = (size_t)(d < p - d ? d : p - d) * blk;
        int m = gcl_check_round_n(r, k, prev, n, n);
        prev = gcl_s_copy(r, area + (size_t)d * blk, got, n, m, -1);
    }
    *x = (carried_t){.a = *a, .area = area, .blk = blk};
    gcl_s_call(r, deliver, x, gcl_check_end(r, k, prev), -1);
    return r->err;
}

/* The root's data from every member that has it: after rounds 0..i-1 the
 * members within 2^i of the root (in the rounds' pattern) do. */
static int has_root_data(const gcl_comm_t *c, int member, int root, int d)
{
    int p = c->size;
    return (gcl_is_pow2(p) ? member ^ root : (member - root + p) % p) < d;
}

static gcl_status_t broadcast(gcl_request_t *r, const gcl_args_t *a)
{
    const gcl_comm_t *c = r->comm;
    size_t n = a->count * r->esz;
    gcl_check_t *k = gcl_check_new(r, a, n);
    if (k == NULL)
        return r->err;
    char *buf = gcl_check_out(k), *got = gcl_check_in(k);
    int prev = c->rank == a->root ? gcl_s_copy(r, buf, a->recv, n, -1, -1) : -1;
    for (int i = 0, d = 1; d < c->size; i++, d *= 2) {
        int to, from;
        gcl_check_peers(c, i, &to, &from);
        int mine = has_root_data(c, c->rank, a->root, d), theirs = has_root_data(c, from, a->root, d);
        int m = gcl_check_round_n(r, k, prev, mine ? n : 0, theirs ? n : 0);
        prev = !mine && theirs ? gcl_s_copy(r, buf, got, n, m, -1) : m;
    }
    int end = gcl_check_end(r, k, prev);
    if (c->rank != a->root)
        gcl_s_copy(r, a->recv, buf, n, end, -1);
    return r->err;
}

gcl_status_t gcl_carried_build(gcl_request_t *r, const gcl_args_t *a)
{
    const gcl_comm_t *c = r->comm;
    size_t cb = a->count * r->esz, p = (size_t)c->size;
    const char *in = a->send;
    if (a->coll == GCL_COLL_BROADCAST)
        return broadcast(r, a);
    if (a->send == GCL_IN_PLACE)
        in = a->coll == GCL_COLL_ALLGATHER ? (const char *)a->recv + (size_t)c->rank * cb : a->recv;
    switch (a->coll) {
    case GCL_COLL_ALLGATHER:
    case GCL_COLL_ALLREDUCE:
    case GCL_COLL_REDUCE:
        return gather_all(r, a, in, cb);
    default: /* reduce_scatter, alltoall: a whole array of p blocks each */
        return gather_all(r, a, in, cb * p);
    }
}
