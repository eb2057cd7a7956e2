/* gcl_broadcast: buf[count] from root to all. Algorithms:
 *  - knomial: a k-nomial tree (radix 4 up to 16 KiB, binomial above), the
 *    message cut into segments forwarded as soon as they arrive (a pipelined
 *    tree). UCC src/components/tl/ucp/bcast/bcast_knomial.c; Open MPI
 *    ompi/mca/coll/base/coll_base_bcast.c ompi_coll_base_bcast_intra_binomial.
 *  - scatter_allgather (large): Van de Geijn's broadcast, scatter then ring
 *    allgather (Barnett, Payne, van de Geijn, Watts 1996; Thakur et al. 2005
 *    §4.3; Open MPI ompi_coll_base_bcast_intra_scatter_allgather_ring); the
 *    root scatters directly (p - 1 messages). */
#include "collectives/gcl_internal.h"

static gcl_status_t bcast_knomial(gcl_request_t *r, const gcl_args_t *a)
{
    gcl_comm_t *c = r->comm;
    int p = c->size, root = a->root, v = (c->rank - root + p) % p, parent;
    size_t esz = r->esz, count = a->count;
    int *ch = gcl_req_alloc(r, (size_t)p * sizeof(int));
    if (ch == NULL)
        return r->err;
    int nch = gcl_knomial_tree(v, p, gcl_knomial_radix(count * esz), &parent, ch);
    int nseg = gcl_nseg(r, count);
    size_t se = (count + (size_t)nseg - 1) / (size_t)nseg;
    char *buf = a->recv;
    for (int j = 0; j < nseg; j++) {
        size_t o = (size_t)j * se < count ? (size_t)j * se : count, n = o + se <= count ? se : count - o;
        int rcv = parent >= 0 ? gcl_s_recv(r, (parent + root) % p, (unsigned)j, buf + o * esz, n * esz, -1, -1)
                              : -1;
        for (int ci = nch - 1; ci >= 0; ci--) /* the largest subtree first */
            gcl_s_send(r, (ch[ci] + root) % p, (unsigned)j, buf + o * esz, n * esz, rcv, -1);
    }
    return r->err;
}

static gcl_status_t bcast_scatter_allgather(gcl_request_t *r, const gcl_args_t *a)
{
    gcl_comm_t *c = r->comm;
    int p = c->size, me = c->rank, root = a->root;
    size_t esz = r->esz;
    char *buf = a->recv;
    gcl_blocks_t b;
    if (gcl_blocks_even(r, &b, a->count, p) < 0)
        return r->err;
    int nseg = gcl_nseg(r, b.maxcnt);
    int *first = gcl_req_alloc(r, (size_t)nseg * sizeof(int));
    int *after = me == root ? gcl_req_alloc(r, (size_t)(p - 1) * (size_t)nseg * sizeof(int)) : NULL;
    int *scat = gcl_req_alloc(r, (size_t)p * sizeof(int));
    if (r->err)
        return r->err;
    int got = -1;
    if (me == root) {
        for (int i = 0; i < p; i++)
            scat[i] = i == root ? -1 : gcl_s_send(r, i, 0, buf + b.off[i] * esz, b.cnt[i] * esz, -1, -1);
        /* the root receives what it has: not before that block was scattered */
        for (int s = 0; s < p - 1; s++)
            for (int j = 0; j < nseg; j++)
                after[s * nseg + j] = scat[(me - s - 1 + p) % p];
    } else {
        got = gcl_s_recv(r, root, 0, buf + b.off[me] * esz, b.cnt[me] * esz, -1, -1);
    }
    for (int j = 0; j < nseg; j++)
        first[j] = got;
    gcl_ring_ag_phase(r, buf, &b, 1, first, after, nseg);
    return r->err;
}

gcl_status_t gcl_broadcast_build(gcl_request_t *r, const gcl_args_t *a, gcl_alg_t alg)
{
    if (alg == GCL_ALG_SCATTER_ALLGATHER)
        return bcast_scatter_allgather(r, a);
    r->algo = "knomial";
    return bcast_knomial(r, a);
}
