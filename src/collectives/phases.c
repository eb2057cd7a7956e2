/* libgcl's shared phases of the algorithms (gcl_internal.h, "Shared
 * phases"): even blocks and pipelining segments, the ring reduce-scatter
 * and allgather, recursive halving and doubling among a power of two, the
 * k-nomial tree. Each adds ops to a request's schedule. */
#include "collectives/gcl_internal.h"

int gcl_blocks_even(gcl_request_t *r, gcl_blocks_t *b, size_t count, int n)
{
    b->off = gcl_req_alloc(r, 2 * (size_t)n * sizeof(size_t));
    if (b->off == NULL)
        return -1;
    b->cnt = b->off + n;
    b->n = n;
    size_t q = count / (size_t)n, rem = count % (size_t)n, o = 0;
    for (int i = 0; i < n; i++) {
        b->cnt[i] = q + ((size_t)i < rem);
        b->off[i] = o;
        o += b->cnt[i];
    }
    b->maxcnt = q + (rem > 0);
    return 0;
}

int gcl_nseg(const gcl_request_t *r, size_t maxcnt)
{
    size_t bytes = maxcnt * r->esz, seg = r->comm->ctx->seg_bytes;
    size_t n = (bytes + seg - 1) / seg;
    return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

void gcl_seg(const gcl_blocks_t *b, int i, int j, size_t se, size_t *off, size_t *cnt)
{
    size_t lo = (size_t)j * se, c = b->cnt[i];
    lo = lo < c ? lo : c;
    size_t hi = lo + se < c ? lo + se : c;
    *off = b->off[i] + lo;
    *cnt = hi - lo;
}

int gcl_ring_rs_phase(gcl_request_t *r, const char *in, char *out_full, char *final_r, const gcl_blocks_t *b,
                      unsigned step0, int dep0, int *red, int *sends, int *nseg_out)
{
    gcl_comm_t *c = r->comm;
    int p = c->size, me = c->rank, left = (me - 1 + p) % p, right = (me + 1) % p;
    size_t esz = r->esz;
    int nseg = *nseg_out > 0 ? *nseg_out : gcl_nseg(r, b->maxcnt);
    size_t se = (b->maxcnt + (size_t)nseg - 1) / (size_t)nseg;
    se = se ? se : 1;
    int nslot = nseg == 1 ? 2 : (2 * nseg < 16 ? 2 * nseg : 16);
    char *tmp = gcl_req_alloc(r, (size_t)nslot * se * esz);
    char *work = out_full ? NULL : gcl_req_alloc(r, 2 * (b->maxcnt ? b->maxcnt : 1) * esz);
    int *pred = gcl_req_alloc(r, (2 * (size_t)nseg + (size_t)nslot) * sizeof(int));
    if (r->err)
        return 0;
    int *psend = pred + nseg, *slot_red = psend + nseg;
    for (int s = 0; s < p - 1; s++) {
        int sb = (me - s - 1 + 2 * p) % p, rb = (me - s - 2 + 2 * p) % p, last = s == p - 2;
        for (int j = 0; j < nseg; j++) {
            int k = s * nseg + j, slot = k % nslot;
            size_t so, sn, ro, rn;
            gcl_seg(b, sb, j, se, &so, &sn);
            gcl_seg(b, rb, j, se, &ro, &rn);
            const char *src = s == 0 ? in + so * esz
                              : out_full ? out_full + so * esz
                                         : work + ((size_t)((s - 1) % 2) * b->maxcnt + so - b->off[sb]) * esz;
            int snd = gcl_s_send(r, right, step0 + (unsigned)k, src, sn * esz, s ? pred[j] : dep0, -1);
            char *t = tmp + (size_t)slot * se * esz;
            int rcv = gcl_s_recv(r, left, step0 + (unsigned)k, t, rn * esz, k >= nslot ? slot_red[slot] : -1, -1);
            char *dst = out_full ? out_full + ro * esz
                        : last    ? final_r + (ro - b->off[rb]) * esz
                                  : work + ((size_t)(s % 2) * b->maxcnt + ro - b->off[rb]) * esz;
            int rd = gcl_s_reduce(r, dst, in + ro * esz, t, rn, rcv, (!out_full && s >= 2) ? psend[j] : -1);
            gcl_s_dep(r, rd, dep0);
            slot_red[slot] = pred[j] = rd;
            psend[j] = snd;
            if (sends)
                sends[k] = snd;
        }
    }
    for (int j = 0; j < nseg; j++)
        red[j] = pred[j];
    *nseg_out = nseg;
    return (p - 1) * nseg;
}

int gcl_rh_phase(gcl_request_t *r, char *acc, const gcl_blocks_t *b, int vrank, int pof2, const int *vmap,
                 unsigned step0, int dep)
{
    size_t esz = r->esz;
    char *tmp = gcl_req_alloc(r, ((size_t)(pof2 / 2) * b->maxcnt + 1) * esz);
    if (tmp == NULL)
        return -1;
    int lo = 0, hi = pof2, prev = dep;
    unsigned step = step0;
    for (int mask = pof2 / 2; mask >= 1; mask /= 2, step++) {
        int partner = vmap[vrank ^ mask], mid = lo + mask;
        int klo = (vrank & mask) ? mid : lo, khi = (vrank & mask) ? hi : mid;
        int slo = (vrank & mask) ? lo : mid, shi = (vrank & mask) ? mid : hi;
        size_t so = b->off[slo], sn = b->off[shi - 1] + b->cnt[shi - 1] - so;
        size_t ko = b->off[klo], kn = b->off[khi - 1] + b->cnt[khi - 1] - ko;
        int snd = gcl_s_send(r, partner, step, acc + so * esz, sn * esz, prev, -1);
        int rcv = gcl_s_recv(r, partner, step, tmp, kn * esz, prev, -1);
        prev = gcl_s_reduce(r, acc + ko * esz, acc + ko * esz, tmp, kn, rcv, snd);
        lo = klo;
        hi = khi;
    }
    return prev;
}

int gcl_ring_ag_phase(gcl_request_t *r, char *buf, const gcl_blocks_t *b, unsigned step0, const int *first,
                      const int *recv_after, int nseg)
{
    gcl_comm_t *c = r->comm;
    int p = c->size, me = c->rank, left = (me - 1 + p) % p, right = (me + 1) % p;
    size_t esz = r->esz, se = (b->maxcnt + (size_t)nseg - 1) / (size_t)nseg;
    se = se ? se : 1;
    int *prev = gcl_req_alloc(r, (size_t)nseg * sizeof(int));
    if (prev == NULL)
        return 0;
    for (int j = 0; j < nseg; j++)
        prev[j] = first ? first[j] : -1;
    for (int s = 0; s < p - 1; s++) {
        int sb = (me - s + p) % p, rb = (me - s - 1 + p) % p;
        for (int j = 0; j < nseg; j++) {
            int k = s * nseg + j;
            size_t so, sn, ro, rn;
            gcl_seg(b, sb, j, se, &so, &sn);
            gcl_seg(b, rb, j, se, &ro, &rn);
            gcl_s_send(r, right, step0 + (unsigned)k, buf + so * esz, sn * esz, prev[j], -1);
            prev[j] = gcl_s_recv(r, left, step0 + (unsigned)k, buf + ro * esz, rn * esz,
                                 recv_after ? recv_after[k] : -1, -1);
        }
    }
    return (p - 1) * nseg;
}

int gcl_rd_ag_phase(gcl_request_t *r, char *buf, const gcl_blocks_t *b, int vrank, int pof2, const int *vmap,
                    unsigned step0, int dep)
{
    size_t esz = r->esz;
    int ps = dep, pr = dep;
    unsigned step = step0;
    for (int mask = 1; mask < pof2; mask <<= 1, step++) {
        int lo = vrank & ~(mask - 1), plo = (vrank ^ mask) & ~(mask - 1);
        size_t mo = b->off[lo], mn = b->off[lo + mask - 1] + b->cnt[lo + mask - 1] - mo;
        size_t po = b->off[plo], pn = b->off[plo + mask - 1] + b->cnt[plo + mask - 1] - po;
        int s = gcl_s_send(r, vmap[vrank ^ mask], step, buf + mo * esz, mn * esz, ps, pr);
        pr = gcl_s_recv(r, vmap[vrank ^ mask], step, buf + po * esz, pn * esz, ps, pr);
        ps = s;
    }
    return pr;
}

/* The k-nomial tree of virtual rank v (root 0) among p: parent (-1 for the
 * root) and children in the order their subtrees complete (smallest
 * first). Returns the number of children. UCC's ucc_knomial_pattern. */
int gcl_knomial_tree(int v, int p, int radix, int *parent, int *children)
{
    int mask = 1;
    *parent = -1;
    while (mask < p) {
        if (v % (mask * radix)) {
            *parent = v - v % (mask * radix);
            break;
        }
        mask *= radix;
    }
    int n = 0;
    for (int m = 1; m < mask; m *= radix)
        for (int j = 1; j < radix; j++)
            if (v + j * m < p)
                children[n++] = v + j * m;
    return n;
}

int gcl_knomial_radix(size_t bytes)
{
    return bytes <= (16u << 10) ? 4 : 2;
}
