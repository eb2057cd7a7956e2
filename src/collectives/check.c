/* The call check of every collective on the network path (gcl_internal.h,
 * gcl_s_call_check): the members' calls, merged by dissemination (Hensgen,
 * Finkel and Manber, "Two algorithms for barrier synchronization", 1988)
 * so that after ceil(log2 p) rounds every member knows the lowest rank and,
 * if any, the lowest rank whose call differs from it. The collective's own
 * ops wait for it, so a mismatch fails every member before any data moved
 * and leaves nothing in flight. */
#include "collectives/gcl_internal.h"

#include <string.h>

#define CHECK_STEP 0x8000u /* steps of the check in GCL_SCOPE_DEBUG (GCL_DEBUG's allgather uses few) */

typedef struct call_desc {
    int32_t rank, coll, dtype, op, root;
    uint32_t seq;
    uint64_t count;
} call_desc_t;

/* What a member knows after a round: the lowest rank seen (ref) and the
 * lowest-ranked call seen that differs from ref's (diff.rank < 0: none). */
typedef struct check_state {
    call_desc_t ref, diff;
} check_state_t;

typedef struct check {
    check_state_t *st;  /* [k]: after round k - 1 (sent in round k); [rounds]: the last */
    check_state_t *in;  /* [k]: received in round k */
    int rounds, round;
} check_t;

static int same_call(const call_desc_t *a, const call_desc_t *b)
{
    return a->coll == b->coll && a->dtype == b->dtype && a->op == b->op && a->root == b->root &&
           a->seq == b->seq && a->count == b->count;
}

/* Merge two states: ref the lower of the refs; diff the lowest-ranked of
 * the four calls that differs from it (if any member of either side
 * differs from the new ref, one of these does). */
static check_state_t merge(const check_state_t *x, const check_state_t *y)
{
    check_state_t m = {.ref = x->ref.rank <= y->ref.rank ? x->ref : y->ref, .diff = {.rank = -1}};
    const call_desc_t *cand[4] = {&x->ref, &x->diff, &y->ref, &y->diff};
    for (int i = 0; i < 4; i++)
        if (cand[i]->rank >= 0 && !same_call(cand[i], &m.ref) && (m.diff.rank < 0 || cand[i]->rank < m.diff.rank))
            m.diff = *cand[i];
    return m;
}

static const char *dt_name(int d)
{
    const gcl_dtype_info_t *t = gcl_dtype_info((gcl_dtype_t)d);
    return t ? t->long_name : "-";
}

static const char *op_name(int o)
{
    const char *n = o >= 0 ? gcl_op_name((gcl_op_t)o) : NULL;
    return n ? n : "-";
}

static gcl_status_t check_round(gcl_request_t *r, void *arg)
{
    check_t *k = arg;
    int i = k->round++;
    k->st[i + 1] = merge(&k->st[i], &k->in[i]);
    if (k->round < k->rounds)
        return GCL_OK;
    const check_state_t *f = &k->st[k->rounds];
    if (f->diff.rank < 0)
        return GCL_OK;
    const call_desc_t *d = &f->diff, *z = &f->ref;
    const gcl_comm_t *c = r->comm;
    char field[160];
    if (d->coll != z->coll)
        snprintf(field, sizeof field, "called gcl_%s, rank %d gcl_%s", gcl_coll_name((gcl_coll_t)d->coll), z->rank,
                 gcl_coll_name((gcl_coll_t)z->coll));
    else if (d->seq != z->seq)
        snprintf(field, sizeof field, "is at collective #%u, rank %d at #%u", d->seq, z->rank, z->seq);
    else if (d->count != z->count)
        snprintf(field, sizeof field, "passed count %llu, rank %d count %llu", (unsigned long long)d->count,
                 z->rank, (unsigned long long)z->count);
    else if (d->dtype != z->dtype)
        snprintf(field, sizeof field, "passed dtype %s, rank %d dtype %s", dt_name(d->dtype), z->rank,
                 dt_name(z->dtype));
    else if (d->op != z->op)
        snprintf(field, sizeof field, "passed op %s, rank %d op %s", op_name(d->op), z->rank, op_name(z->op));
    else
        snprintf(field, sizeof field, "passed root %d, rank %d root %d", d->root, z->rank, z->root);
    return gcl_set_error(GCL_ERR_MISMATCH, "gcl_%s (%s) on communicator %u (rank %d of %d): the members' calls "
                         "differ at collective #%u: rank %d %s; no data moved", r->name, r->algo, c->id, c->rank,
                         c->size, z->seq, d->rank, field);
}

gcl_status_t gcl_s_call_check(gcl_request_t *r, const gcl_args_t *a)
{
    gcl_comm_t *c = r->comm;
    int p = c->size, nops = r->nops, rounds = 0;
    while ((1 << rounds) < p)
        rounds++;
    if (r->err || rounds == 0)
        return r->err;
    check_t *k = gcl_req_alloc(r, sizeof(check_t) + (size_t)(2 * rounds + 1) * sizeof(check_state_t));
    if (k == NULL)
        return r->err;
    memset(k, 0, sizeof(check_t) + (size_t)(2 * rounds + 1) * sizeof(check_state_t));
    k->st = (check_state_t *)(k + 1);
    k->in = k->st + rounds + 1;
    k->rounds = rounds;
    int red = a->coll == GCL_COLL_ALLREDUCE || a->coll == GCL_COLL_REDUCE || a->coll == GCL_COLL_REDUCE_SCATTER;
    int rooted = a->coll == GCL_COLL_REDUCE || a->coll == GCL_COLL_BROADCAST;
    int data = a->coll != GCL_COLL_BARRIER;
    k->st[0].ref = (call_desc_t){.rank = c->rank, .coll = a->coll, .dtype = data ? (int32_t)a->dtype : -1,
                                 .op = red ? (int32_t)a->op : -1, .root = rooted ? a->root : -1, .seq = r->seq,
                                 .count = data ? a->count : 0};
    k->st[0].diff.rank = -1;
    int prev = -1;
    for (int i = 0; i < rounds; i++) {
        int d = 1 << i, to = (c->rank + d) % p, from = (c->rank - d + p) % p;
        uint64_t tag = GCL_TAG(GCL_SCOPE_DEBUG, c->id, r->seq, CHECK_STEP + (unsigned)i);
        int s = gcl_s_send(r, to, 0, &k->st[i], sizeof(check_state_t), prev, -1);
        int v = gcl_s_recv(r, from, 0, &k->in[i], sizeof(check_state_t), -1, -1);
        if (s < 0 || v < 0)
            return r->err;
        r->ops[s].tag = r->ops[v].tag = tag;
        prev = gcl_s_call(r, check_round, k, s, v);
    }
    /* the collective's ops start after it */
    for (int i = 0; i < nops && !r->err; i++)
        if (r->ops[i].ndeps == 0)
            gcl_s_dep(r, i, prev);
    return r->err;
}
