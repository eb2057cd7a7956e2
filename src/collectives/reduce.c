/* gcl_reduce: send[count] -> recv[count] at root (in place at the root:
 * send = GCL_IN_PLACE). Algorithms:
 *  - knomial: a k-nomial tree (radix 4 up to 16 KiB, binomial above), the
 *    message cut into segments so a parent reduces segment j while its
 *    children send segment j+1 (a pipelined tree). UCC
 *    src/components/tl/ucp/reduce/reduce_knomial.c; Open MPI
 *    ompi/mca/coll/base/coll_base_reduce.c (binomial, pipelined generic).
 *  - reduce_scatter_gather (large): Rabenseifner's reduce = reduce-scatter
 *    then gather to the root (Thakur, Rabenseifner, Gropp 2005 §4.5; Open MPI
 *    ompi_coll_base_reduce_intra_redscat_gather); here a ring reduce-scatter
 *    (any size) and a direct gather. */
#include "collectives/gcl_internal.h"

static gcl_status_t reduce_knomial(gcl_request_t *r, const gcl_args_t *a)
{
    gcl_comm_t *c = r->comm;
    int p = c->size, root = a->root, v = (c->rank - root + p) % p, parent, *ch;
    size_t esz = r->esz, count = a->count;
    int radix = gcl_knomial_radix(count * esz);
    ch = gcl_req_alloc(r, (size_t)p * sizeof(int) * 2);
    if (ch == NULL)
        return r->err;
    int nch = gcl_knomial_tree(v, p, radix, &parent, ch);
    const char *in = a->send == GCL_IN_PLACE ? a->recv : a->send;
    char *acc = parent < 0 ? a->recv : nch ? gcl_req_alloc(r, count * esz) : NULL;
    int nseg = gcl_nseg(r, count), nslot = nch * 2;
    size_t se = (count + (size_t)nseg - 1) / (size_t)nseg;
    char *tmp = nch ? gcl_req_alloc(r, (size_t)nslot * se * esz) : NULL;
    int *slot_red = nch ? gcl_req_alloc(r, (size_t)nslot * sizeof(int)) : NULL;
    if (r->err)
        return r->err;
    for (int j = 0; j < nseg; j++) {
        size_t o = (size_t)j * se < count ? (size_t)j * se : count, n = o + se <= count ? se : count - o;
        int cur = -1;
        for (int ci = 0; ci < nch; ci++) {
            int k = j * nch + ci, slot = k % nslot;
            char *t = tmp + (size_t)slot * se * esz;
            int rcv = gcl_s_recv(r, (ch[ci] + root) % p, (unsigned)j, t, n * esz, k >= nslot ? slot_red[slot] : -1,
                                 -1);
            cur = gcl_s_reduce(r, acc + o * esz, (ci ? acc : in) + o * esz, t, n, rcv, cur);
            slot_red[slot] = cur;
        }
        if (parent >= 0)
            gcl_s_send(r, (parent + root) % p, (unsigned)j, (nch ? acc : in) + o * esz, n * esz, cur, -1);
    }
    return r->err;
}

static gcl_status_t reduce_rs_gather(gcl_request_t *r, const gcl_args_t *a)
{
    gcl_comm_t *c = r->comm;
    int p = c->size, me = c->rank, root = a->root;
    size_t esz = r->esz;
    gcl_blocks_t b;
    if (gcl_blocks_even(r, &b, a->count, p) < 0)
        return r->err;
    const char *in = a->send;
    char *out = a->recv;
    int dep0 = -1;
    if (a->send == GCL_IN_PLACE) { /* the gather overwrites recv: reduce from a copy */
        char *copy = gcl_req_alloc(r, a->count * esz);
        if (copy == NULL)
            return r->err;
        dep0 = gcl_s_copy(r, copy, out, a->count * esz, -1, -1);
        in = copy;
    }
    char *mine = me == root ? out + b.off[me] * esz : gcl_req_alloc(r, (b.maxcnt ? b.maxcnt : 1) * esz);
    int red[256], nseg = 0;
    if (r->err)
        return r->err;
    unsigned steps = (unsigned)gcl_ring_rs_phase(r, in, NULL, mine, &b, 0, dep0, red, NULL, &nseg);
    if (me != root) {
        /* join the segments, then one message to the root */
        int dep = red[0];
        for (int j = 1; j < nseg; j++) {
            int jn = gcl_s_copy(r, mine, mine, 0, dep, red[j]);
            dep = jn;
        }
        gcl_s_send(r, root, steps, mine, b.cnt[me] * esz, dep, -1);
    } else {
        for (int i = 0; i < p; i++)
            if (i != root)
                gcl_s_recv(r, i, steps, out + b.off[i] * esz, b.cnt[i] * esz, dep0, -1);
    }
    return r->err;
}

/* Two members (a binomial tree of one edge), the non-root's input beside
 * the call check's header (check.c's bulk message) into the root's
 * workspace, reduced into recv after the verdict: no round of the check's
 * own. */
static gcl_status_t reduce_exchange_checked(gcl_request_t *r, const gcl_args_t *a)
{
    size_t bytes = a->count * r->esz;
    int root = r->comm->rank == a->root;
    gcl_check_t *k = gcl_check_new(r, a, 0);
    char *tmp = root ? gcl_req_alloc(r, bytes) : NULL;
    if (r->err)
        return r->err;
    const void *in = a->send == GCL_IN_PLACE ? a->recv : a->send;
    int s = -1, v = -1;
    gcl_check_round_bulk(r, k, -1, in, root ? 0 : bytes, tmp, root ? bytes : 0, &s, &v);
    int end = gcl_check_end(r, k, root ? v : s);
    if (root)
        gcl_s_reduce(r, a->recv, in, tmp, a->count, end, -1);
    return r->err;
}

gcl_status_t gcl_reduce_build(gcl_request_t *r, const gcl_args_t *a, gcl_alg_t alg)
{
    if (alg == GCL_ALG_KNOMIAL && r->check && r->comm->size == 2)
        return reduce_exchange_checked(r, a);
    if (alg == GCL_ALG_RS_GATHER)
        return reduce_rs_gather(r, a);
    r->algo = "knomial";
    return reduce_knomial(r, a);
}
