/* The call check of every collective on the network path (gcl_internal.h,
 * "Call check"): the members' calls, merged round by round so that after
 * ceil(log2 p) rounds every member knows the lowest rank and, if any, a
 * rank whose call differs from it. The rounds go by dissemination (Hensgen,
 * Finkel and Manber, "Two algorithms for barrier synchronization", 1988),
 * as a butterfly (partner rank ^ 2^i) when p is a power of two, so that
 * recursive doubling can carry its own data in them: each message is the
 * sender's merged state (the header) followed by the algorithm's payload,
 * and a call check costs no message of its own there.
 *
 * Every member sends and receives in every round whatever it was called
 * with, so every check message is matched. A message of another length
 * means the sender's call differs: a shorter one is read whole (its header
 * tells what); a longer one is truncated and read by nobody, so the
 * receiver only records that a call differs. Either way every member ends
 * with a difference in its state, and then all of them run the check once
 * more with their own calls and header-only messages (the follow-up), whose
 * result names the member and the field alike on every member. */
#include "collectives/gcl_internal.h"

#include <string.h>

/* steps of the check in GCL_SCOPE_DEBUG (GCL_DEBUG's allgather uses few);
 * the follow-up's after them */
#define CHECK_STEP 0x8000u
#define FOLLOWUP_STEP 0x8100u

typedef struct call_desc {
    int32_t rank, coll, dtype, op, root; /* coll LOST: a call that differs, fields unknown */
    uint32_t seq;
    uint64_t count;
} call_desc_t;
#define LOST (-1)

/* What a member knows after a round: the lowest rank seen (ref) and the
 * lowest-ranked call seen that differs from ref's (diff.rank < 0: none). */
typedef struct check_state {
    call_desc_t ref, diff;
} check_state_t;

/* the header of every check message; payloads start aligned for any dtype */
#define HDR 64
_Static_assert(sizeof(check_state_t) <= HDR, "the check's header outgrew its place");

struct gcl_check {
    check_state_t st;  /* merged so far */
    call_desc_t self;  /* this member's call */
    char *out, *in;    /* header + payload each */
    size_t payload;
    unsigned step0;
    int rounds, built, round, followup;
    int *recv_op;      /* [rounds]: each round's receive */
};

static int same_call(const call_desc_t *a, const call_desc_t *b)
{
    return a->coll != LOST && a->coll == b->coll && a->dtype == b->dtype && a->op == b->op &&
           a->root == b->root && a->seq == b->seq && a->count == b->count;
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

/* GCL_ERR_MISMATCH naming the member and the field of f's difference (the
 * follow-up's final state: every call is there, none LOST) */
static gcl_status_t mismatch(const gcl_request_t *r, const check_state_t *f)
{
    const call_desc_t *d = &f->diff, *z = &f->ref;
    const gcl_comm_t *c = r->comm;
    char field[160];
    if (d->rank < 0) /* the follow-up found the calls alike: the messages' lengths differed */
        return gcl_set_error(GCL_ERR_MISMATCH, "gcl_%s (%s) on communicator %u (rank %d of %d): the members "
                             "called alike at collective #%u but chose different algorithms (are GCL_NO_SHM or "
                             "GCL_<COLL>_ALGO set differently?); no data moved", r->name, r->algo, c->id,
                             c->rank, c->size, z->seq);
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

static gcl_check_t *check_new(gcl_request_t *r, const call_desc_t *self, size_t payload, unsigned step0,
                              int followup)
{
    int p = r->comm->size, rounds = 0;
    while ((1 << rounds) < p)
        rounds++;
    gcl_check_t *k = gcl_req_alloc(r, sizeof(gcl_check_t));
    char *bufs = gcl_req_alloc(r, 2 * (HDR + payload));
    int *ops = gcl_req_alloc(r, (size_t)(rounds + 1) * sizeof(int));
    if (r->err)
        return NULL;
    memset(k, 0, sizeof(*k));
    k->self = *self;
    k->st.ref = *self;
    k->st.diff.rank = -1;
    k->out = bufs;
    k->in = bufs + HDR + payload;
    memset(k->out, 0, HDR);
    memcpy(k->out, &k->st, sizeof(k->st));
    k->payload = payload;
    k->step0 = step0;
    k->rounds = rounds;
    k->followup = followup;
    k->recv_op = ops;
    return k;
}

gcl_check_t *gcl_check_new(gcl_request_t *r, const gcl_args_t *a, size_t payload)
{
    const gcl_comm_t *c = r->comm;
    int red = a->coll == GCL_COLL_ALLREDUCE || a->coll == GCL_COLL_REDUCE || a->coll == GCL_COLL_REDUCE_SCATTER;
    int rooted = a->coll == GCL_COLL_REDUCE || a->coll == GCL_COLL_BROADCAST;
    int data = a->coll != GCL_COLL_BARRIER;
    call_desc_t self = {.rank = c->rank, .coll = a->coll, .dtype = data ? (int32_t)a->dtype : -1,
                        .op = red ? (int32_t)a->op : -1, .root = rooted ? a->root : -1, .seq = r->seq,
                        .count = data ? a->count : 0};
    r->check = 0; /* carried */
    return check_new(r, &self, payload, CHECK_STEP, 0);
}

int gcl_check_rounds(const gcl_comm_t *c)
{
    int rounds = 0;
    while ((1 << rounds) < c->size)
        rounds++;
    return rounds;
}

void *gcl_check_out(gcl_check_t *k) { return k->out + HDR; }
void *gcl_check_in(gcl_check_t *k) { return k->in + HDR; }

/* After round i's send and receive: merge the received header into the
 * state (a message of another length: the sender's call differs) and put
 * the state in the next send's header. After the last round, a
 * difference fails r: right away in the follow-up, which names it; else
 * after the follow-up, which r's op waits for instead. */
static gcl_status_t check_round(gcl_request_t *r, void *arg)
{
    gcl_check_t *k = arg;
    int i = k->round++;
    size_t got = gcl_s_received(r, k->recv_op[i]);
    check_state_t in;
    if (got == HDR + k->payload || (got != SIZE_MAX && got >= HDR)) {
        memcpy(&in, k->in, sizeof in);
        k->st = merge(&k->st, &in);
    }
    if (got != HDR + k->payload) { /* longer (unread) or shorter: the sender's call differs */
        check_state_t lost = {.ref = k->st.ref, .diff = k->self};
        lost.diff.coll = LOST;
        k->st = merge(&k->st, &lost);
    }
    if (k->round < k->rounds) {
        memcpy(k->out, &k->st, sizeof(k->st));
        return GCL_OK;
    }
    if (k->followup)
        return mismatch(r, &k->st);
    if (k->st.diff.rank < 0)
        return GCL_OK;
    /* the follow-up: a child request in the same tag space (this call's
     * sequence number, later steps), on every member */
    gcl_comm_t *c = r->comm;
    gcl_request_t *f = gcl_req_new(c, r->coll, r->name, GCL_SCOPE_DEBUG, r->dtype, r->op);
    if (f == NULL)
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_%s: out of memory for the call check", r->name);
    c->dbg_seq--; /* not a GCL_DEBUG call: its sequence is r's */
    f->seq = r->seq;
    f->algo = r->algo;
    gcl_check_t *fk = check_new(f, &k->self, 0, FOLLOWUP_STEP, 1);
    for (int j = 0, prev = -1; fk && j < fk->rounds; j++)
        prev = gcl_check_round(f, fk, prev);
    if (f->err) {
        gcl_status_t st = f->err;
        gcl_req_free(f);
        return st;
    }
    gcl_s_call_continue(r, f);
    return GCL_OK;
}

int gcl_check_round(gcl_request_t *r, gcl_check_t *k, int dep)
{
    const gcl_comm_t *c = r->comm;
    int p = c->size, i = k->built++, d = 1 << i, to, from;
    if (gcl_is_pow2(p))
        to = from = c->rank ^ d;
    else
        to = (c->rank + d) % p, from = (c->rank - d + p) % p;
    uint64_t tag = GCL_TAG(GCL_SCOPE_DEBUG, c->id, r->seq, k->step0 + (unsigned)i);
    int s = gcl_s_send(r, to, 0, k->out, HDR + k->payload, dep, -1);
    int v = gcl_s_recv(r, from, 0, k->in, HDR + k->payload, dep, -1);
    if (s < 0 || v < 0)
        return -1;
    r->ops[s].tag = r->ops[v].tag = tag;
    gcl_s_any_length(r, v);
    k->recv_op[i] = v;
    return gcl_s_call(r, check_round, k, s, v);
}

gcl_status_t gcl_s_call_check(gcl_request_t *r, const gcl_args_t *a)
{
    int nops = r->nops;
    if (r->err || r->comm->size < 2)
        return r->err;
    gcl_check_t *k = gcl_check_new(r, a, 0);
    int prev = -1;
    for (int i = 0; k && i < k->rounds; i++)
        prev = gcl_check_round(r, k, prev);
    /* the collective's ops start after it */
    for (int i = 0; i < nops && !r->err; i++)
        if (r->ops[i].ndeps == 0)
            gcl_s_dep(r, i, prev);
    return r->err;
}
