/* gcl_alltoall: send[count * size] -> recv[count * size], block j of rank i
 * to block i of rank j. Algorithm:
 *  - pairwise: at step s rank r sends to r+s and receives from r-s (Thakur,
 *    Rabenseifner, Gropp 2005 §4.6; Open MPI ompi/mca/coll/base/
 *    coll_base_alltoall.c ompi_coll_base_alltoall_intra_pairwise); all steps
 *    are posted at once, tags keep them apart. */
#include "collectives/gcl_internal.h"

static gcl_status_t alltoall_pairwise(gcl_request_t *r, const gcl_args_t *a)
{
    gcl_comm_t *c = r->comm;
    int p = c->size, me = c->rank;
    size_t bytes = a->count * r->esz;
    const char *in = a->send;
    char *out = a->recv;
    gcl_s_copy(r, out + (size_t)me * bytes, in + (size_t)me * bytes, bytes, -1, -1);
    for (int s = 1; s < p; s++) {
        int to = (me + s) % p, from = (me - s + p) % p;
        gcl_s_recv(r, from, (unsigned)s, out + (size_t)from * bytes, bytes, -1, -1);
        gcl_s_send(r, to, (unsigned)s, in + (size_t)to * bytes, bytes, -1, -1);
    }
    return r->err;
}

gcl_status_t gcl_alltoall_build(gcl_request_t *r, const gcl_args_t *a, gcl_alg_t alg)
{
    (void)alg;
    return alltoall_pairwise(r, a);
}
