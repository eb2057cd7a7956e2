/* gcl_barrier. Algorithm:
 *  - dissemination: ceil(lg p) rounds; in round k rank r signals r + 2^k and
 *    waits for r - 2^k (Hensgen, Finkel, Manber, "Two algorithms for barrier
 *    synchronization", IJPP 1988; Open MPI ompi/mca/coll/base/
 *    coll_base_barrier.c ompi_coll_base_barrier_intra_bruck). A checked
 *    call (coll.c) is the call check's rounds alone (check.c). */
#include "collectives/gcl_internal.h"

static gcl_status_t barrier_dissemination(gcl_request_t *r)
{
    static char token; /* zero-byte messages */
    gcl_comm_t *c = r->comm;
    int p = c->size, me = c->rank, prev = -1;
    unsigned step = 0;
    for (int d = 1; d < p; d *= 2, step++) {
        gcl_s_send(r, (me + d) % p, step, &token, 0, prev, -1);
        prev = gcl_s_recv(r, (me - d + p) % p, step, &token, 0, prev, -1);
    }
    return r->err;
}

gcl_status_t gcl_barrier_build(gcl_request_t *r, const gcl_args_t *a, gcl_alg_t alg)
{
    (void)alg;
    /* the call check's rounds are a dissemination barrier themselves (a
     * butterfly one for a power of two: Brooks, "The butterfly barrier",
     * IJPP 1986): no member's last round ends before every member started */
    if (r->check)
        return gcl_s_call_check(r, a);
    return barrier_dissemination(r);
}
