/* gcl_allgather: send[count] -> recv[count * size] (in place: block rank of
 * recv holds the input). Algorithms:
 *  - ring: Thakur, Rabenseifner, Gropp 2005 §4.1 (long messages); Open MPI
 *    ompi/mca/coll/base/coll_base_allgather.c ompi_coll_base_allgather_intra_ring,
 *    with each block cut into pipelined segments.
 *  - recursive_doubling (power-of-two sizes): Thakur et al. 2005 §4.1;
 *    coll_base_allgather.c ompi_coll_base_allgather_intra_recursivedoubling.
 *  - bruck (any size, ceil(lg p) steps): Bruck, Ho, Kipnis, Upfal, Weathersby,
 *    "Efficient algorithms for all-to-all communications in multiport
 *    message-passing systems" (IEEE TPDS 1997); coll_base_allgather.c
 *    ompi_coll_base_allgather_intra_bruck. */
#include "collectives/gcl_internal.h"

static int copy_in(gcl_request_t *r, const gcl_args_t *a)
{
    if (a->send == GCL_IN_PLACE)
        return -1;
    size_t bytes = a->count * r->esz;
    return gcl_s_copy(r, (char *)a->recv + (size_t)r->comm->rank * bytes, a->send, bytes, -1, -1);
}

static gcl_status_t ag_ring(gcl_request_t *r, const gcl_args_t *a)
{
    gcl_blocks_t b;
    if (gcl_blocks_even(r, &b, a->count * (size_t)r->comm->size, r->comm->size) < 0)
        return r->err;
    int nseg = gcl_nseg(r, b.maxcnt), first[256], cp = copy_in(r, a);
    for (int j = 0; j < nseg; j++)
        first[j] = cp;
    gcl_ring_ag_phase(r, a->recv, &b, 0, first, NULL, nseg);
    return r->err;
}

static gcl_status_t ag_recursive_doubling(gcl_request_t *r, const gcl_args_t *a)
{
    int p = r->comm->size;
    gcl_blocks_t b;
    int *vmap = gcl_req_alloc(r, (size_t)p * sizeof(int));
    if (vmap == NULL || gcl_blocks_even(r, &b, a->count * (size_t)p, p) < 0)
        return r->err;
    for (int i = 0; i < p; i++)
        vmap[i] = i;
    gcl_rd_ag_phase(r, a->recv, &b, r->comm->rank, p, vmap, 0, copy_in(r, a));
    return r->err;
}

static gcl_status_t ag_bruck(gcl_request_t *r, const gcl_args_t *a)
{
    int p = r->comm->size, me = r->comm->rank;
    size_t bytes = a->count * r->esz;
    char *tmp = gcl_req_alloc(r, (size_t)p * bytes), *out = a->recv;
    if (tmp == NULL)
        return r->err;
    const void *in = a->send == GCL_IN_PLACE ? out + (size_t)me * bytes : a->send;
    int pr = gcl_s_copy(r, tmp, in, bytes, -1, -1), last_send = -1;
    unsigned step = 0;
    for (int dist = 1; dist < p; dist *= 2, step++) {
        int n = dist < p - dist ? dist : p - dist;
        int s = gcl_s_send(r, (me - dist + p) % p, step, tmp, (size_t)n * bytes, pr, -1);
        pr = gcl_s_recv(r, (me + dist) % p, step, tmp + (size_t)dist * bytes, (size_t)n * bytes, pr, -1);
        last_send = s;
    }
    /* recv[(me + i) % p] = tmp[i] (in place: out's block me is read by the first copy only) */
    gcl_s_copy(r, out + (size_t)me * bytes, tmp, (size_t)(p - me) * bytes, pr, last_send);
    gcl_s_copy(r, out, tmp + (size_t)(p - me) * bytes, (size_t)me * bytes, pr, last_send);
    return r->err;
}

gcl_status_t gcl_allgather_build(gcl_request_t *r, const gcl_args_t *a, gcl_alg_t alg)
{
    switch (alg) {
    case GCL_ALG_RECURSIVE_DOUBLING: return ag_recursive_doubling(r, a);
    case GCL_ALG_BRUCK:              return ag_bruck(r, a);
    default:                         r->algo = "ring"; return ag_ring(r, a);
    }
}
