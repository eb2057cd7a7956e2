/* gcl_reduce_scatter: send[count * size] -> recv[count], block r of the
 * reduction to rank r (MPI_Reduce_scatter_block). In place: recv holds the
 * count * size input and gets block r at its start, as MPI's.
 * Algorithms:
 *  - ring: Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for
 *    clusters of workstations" (JPDC 2009), its reduce-scatter half; Open MPI
 *    ompi/mca/coll/base/coll_base_reduce_scatter_block.c. Each block is cut
 *    into segments, several in flight, so a segment's reduction overlaps the
 *    next one's transfer.
 *  - recursive_halving (power-of-two sizes): Thakur, Rabenseifner, Gropp,
 *    "Optimization of collective communication operations in MPICH" (IJHPCA
 *    2005) §4.2; coll_base_reduce_scatter_block.c, recursive halving.
 *  - pairwise: Thakur et al. 2005 §4.2 (long messages, any size); Open MPI
 *    coll_base_reduce_scatter.c ompi_coll_base_reduce_scatter_intra_ring's
 *    pairwise variant: at step s send block r+s to rank r+s, receive from
 *    r-s. */
#include "collectives/gcl_internal.h"

#include <string.h>

static gcl_status_t rs_ring(gcl_request_t *r, const char *in, char *out, size_t count)
{
    gcl_blocks_t b;
    int red[256], nseg = 0;
    if (gcl_blocks_even(r, &b, count * (size_t)r->comm->size, r->comm->size) < 0)
        return r->err;
    gcl_ring_rs_phase(r, in, NULL, out, &b, 0, -1, red, NULL, &nseg);
    return r->err;
}

static gcl_status_t rs_recursive_halving(gcl_request_t *r, const char *in, char *out, size_t count)
{
    gcl_comm_t *c = r->comm;
    int p = c->size;
    gcl_blocks_t b;
    int *vmap = gcl_req_alloc(r, (size_t)p * sizeof(int));
    char *acc = gcl_req_alloc(r, count * (size_t)p * r->esz);
    if (r->err || gcl_blocks_even(r, &b, count * (size_t)p, p) < 0)
        return r->err;
    for (int i = 0; i < p; i++)
        vmap[i] = i;
    int cp = gcl_s_copy(r, acc, in, count * (size_t)p * r->esz, -1, -1);
    int last = gcl_rh_phase(r, acc, &b, c->rank, p, vmap, 0, cp);
    gcl_s_copy(r, out, acc + b.off[c->rank] * r->esz, count * r->esz, last, -1);
    return r->err;
}

static gcl_status_t rs_pairwise(gcl_request_t *r, const char *in, char *out, size_t count)
{
    gcl_comm_t *c = r->comm;
    int p = c->size, me = c->rank, nslot = p - 1 < 4 ? p - 1 : 4;
    size_t bytes = count * r->esz;
    char *tmp = gcl_req_alloc(r, (size_t)nslot * bytes);
    int *slot_red = gcl_req_alloc(r, (size_t)nslot * sizeof(int));
    if (r->err)
        return r->err;
    int prev = -1;
    for (int s = 1; s < p; s++) {
        int to = (me + s) % p, from = (me - s + p) % p, slot = (s - 1) % nslot;
        gcl_s_send(r, to, (unsigned)s, in + (size_t)to * bytes, bytes, -1, -1);
        char *t = tmp + (size_t)slot * bytes;
        int rcv = gcl_s_recv(r, from, (unsigned)s, t, bytes, s > nslot ? slot_red[slot] : -1, -1);
        prev = gcl_s_reduce(r, out, s == 1 ? in + (size_t)me * bytes : out, t, count, rcv, prev);
        slot_red[slot] = prev;
    }
    return r->err;
}

/* Two members (every algorithm here is one exchange then): the partner's
 * block of the input beside the call check's header (check.c's bulk
 * messages), reduced with this member's own block into recv after the
 * verdict: no round of the check's own. */
static gcl_status_t rs_exchange_checked(gcl_request_t *r, const gcl_args_t *a, const char *in)
{
    size_t bytes = a->count * r->esz;
    int me = r->comm->rank;
    gcl_check_t *k = gcl_check_new(r, a, 0);
    char *tmp = gcl_req_alloc(r, bytes);
    if (r->err)
        return r->err;
    int s = -1, v = -1;
    gcl_check_round_bulk(r, k, -1, in + (size_t)(1 - me) * bytes, bytes, tmp, bytes, &s, &v);
    int end = gcl_check_end(r, k, v);
    gcl_s_dep(r, end, s);
    gcl_s_reduce(r, a->recv, in + (size_t)me * bytes, tmp, a->count, end, -1);
    return r->err;
}

gcl_status_t gcl_reduce_scatter_build(gcl_request_t *r, const gcl_args_t *a, gcl_alg_t alg)
{
    const char *in = a->send;
    size_t total = a->count * (size_t)r->comm->size * r->esz;
    if (a->send == GCL_IN_PLACE) { /* the input is read at the call: copy it */
        char *copy = gcl_req_alloc(r, total);
        if (copy == NULL)
            return r->err;
        memcpy(copy, a->recv, total);
        in = copy;
    }
    if (r->check && r->comm->size == 2)
        return rs_exchange_checked(r, a, in);
    switch (alg) {
    case GCL_ALG_RECURSIVE_HALVING: return rs_recursive_halving(r, in, a->recv, a->count);
    case GCL_ALG_PAIRWISE:          return rs_pairwise(r, in, a->recv, a->count);
    default:                        r->algo = "ring"; return rs_ring(r, in, a->recv, a->count);
    }
}
