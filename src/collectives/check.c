/* The call check of every collective on the network path (gcl_internal.h,
 * "Call check"): the members' calls, merged round by round so that after
 * ceil(log2 p) rounds every member knows the lowest rank and, if any, a
 * rank whose call differs from it. The rounds go by dissemination (Hensgen,
 * Finkel and Manber, "Two algorithms for barrier synchronization", 1988),
 * as a butterfly (partner rank ^ 2^i) when p is a power of two, so that
 * recursive doubling can carry its own data in them: each message is the
 * sender's merged state (the header) followed by the algorithm's payload,
 * and a call check costs no message of its own there. A payload too large
 * to copy goes as a bulk message beside the header, which gives its size; a
 * partner that expects none takes it and answers with an empty one. The
 * verdict (gcl_check_end) comes after the last round and all these
 * messages: where it fails r nothing is left in flight.
 *
 * Every member sends and receives in every round whatever it was called
 * with, so every check message is matched. A message of another length
 * (or bulk messages not alike) means the sender's call differs: a shorter
 * one is read whole (its header tells what); a longer one is truncated and
 * read by nobody, so the receiver only records that a call differs. Either way every member ends
 * with a difference in its state, and then all of them run the check once
 * more with their own calls and header-only messages (the follow-up), whose
 * result names the member and the field alike on every member. */
#include "collectives/gcl_internal.h"

#include <stddef.h>
#include <string.h>

/* steps of the check in GCL_SCOPE_DEBUG (GCL_DEBUG's allgather uses few):
 * its rounds, their bulk messages, the follow-up's rounds */
#define CHECK_STEP 0x8000u
#define BULK_STEP 0x8040u
#define FOLLOWUP_STEP 0x8100u

typedef struct call_desc {
    int32_t rank, root;
    uint32_t seq;
    int8_t coll, dtype, op, pad; /* coll LOST: a call that differs, fields unknown */
    uint64_t count;
} call_desc_t;
#define LOST (-1)

/* What a member knows after a round: the lowest rank seen (ref) and the
 * lowest-ranked call seen that differs from ref's (diff.rank < 0: none). */
typedef struct check_state {
    call_desc_t ref, diff;
} check_state_t;

/* the header of every check message: the sender's state, the bytes of the
 * bulk message it sends beside it this round and of the one it expects
 * (0: none) */
typedef struct check_hdr {
    check_state_t st;
    uint64_t bulk, expect;
} check_hdr_t;
#define HDR 64 /* payloads start aligned for any dtype */
_Static_assert(sizeof(check_hdr_t) <= HDR, "the check's header outgrew its place");

typedef struct check_round_info {
    int recv_op;       /* the header's receive */
    int peer;
    size_t len;        /* payload bytes expected after the received header */
    uint64_t bulk;     /* bytes of this member's bulk message */
    uint64_t expect;   /* bytes of the partner's it expects */
} check_round_info_t;

struct gcl_check {
    check_state_t st;  /* merged so far */
    call_desc_t self;  /* this member's call */
    char *out, *in;    /* header + payload each */
    size_t payload;
    unsigned step0;
    int rounds, built, round, last;
    check_round_info_t *ri; /* [rounds] */
    gcl_check_t *parent;    /* the follow-up's: whose verdict it gives */
    gcl_status_t verdict;   /* GCL_OK or GCL_ERR_MISMATCH with msg */
    char msg[256];
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
                              gcl_check_t *parent)
{
    int rounds = gcl_check_rounds(r->comm);
    gcl_check_t *k = gcl_req_alloc(r, sizeof(gcl_check_t));
    char *bufs = gcl_req_alloc(r, 2 * (HDR + payload));
    check_round_info_t *ri = gcl_req_alloc(r, (size_t)(rounds + 1) * sizeof(*ri));
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
    k->last = -1;
    k->parent = parent;
    k->ri = ri;
    return k;
}

gcl_check_t *gcl_check_new(gcl_request_t *r, const gcl_args_t *a, size_t payload)
{
    const gcl_comm_t *c = r->comm;
    int red = a->coll == GCL_COLL_ALLREDUCE || a->coll == GCL_COLL_REDUCE || a->coll == GCL_COLL_REDUCE_SCATTER;
    int rooted = a->coll == GCL_COLL_REDUCE || a->coll == GCL_COLL_BROADCAST;
    int data = a->coll != GCL_COLL_BARRIER;
    call_desc_t self = {.rank = c->rank, .coll = (int8_t)a->coll, .dtype = (int8_t)(data ? (int)a->dtype : -1),
                        .op = (int8_t)(red ? (int)a->op : -1), .root = rooted ? a->root : -1, .seq = r->seq,
                        .count = data ? a->count : 0};
    r->check = 0; /* carried */
    return check_new(r, &self, payload, CHECK_STEP, NULL);
}

int gcl_check_rounds(const gcl_comm_t *c)
{
    int rounds = 0;
    while ((1 << rounds) < c->size)
        rounds++;
    return rounds;
}

void gcl_check_peers(const gcl_comm_t *c, int i, int *to, int *from)
{
    int p = c->size, d = 1 << i;
    if (gcl_is_pow2(p))
        *to = *from = c->rank ^ d;
    else
        *to = (c->rank + d) % p, *from = (c->rank - d + p) % p;
}

void *gcl_check_out(gcl_check_t *k) { return k->out + HDR; }
void *gcl_check_in(gcl_check_t *k) { return k->in + HDR; }

/* After round i's send and receive: merge the received header into the
 * state (a message of another length: the sender's call differs) and put
 * the state in the next send's header. A partner's bulk message this
 * member does not expect is taken, and a partner expecting one this member
 * does not send gets an empty one (so that every message is matched). After the last round, a difference
 * starts the follow-up (on every member: each ends with one), whose result
 * the verdict op gives; the follow-up's own last round gives it. Both in a
 * child request that this op waits for. */
static gcl_status_t check_round(gcl_request_t *r, void *arg)
{
    gcl_check_t *k = arg;
    int i = k->round++;
    const check_round_info_t *ri = &k->ri[i];
    size_t got = gcl_s_received(r, ri->recv_op);
    uint64_t peer_bulk = 0, peer_expect = 0; /* a longer message (unread) carries a payload, no bulk */
    if (got >= HDR && got <= HDR + k->payload) {
        check_hdr_t h;
        memcpy(&h, k->in, sizeof h);
        k->st = merge(&k->st, &h.st);
        peer_bulk = h.bulk;
        peer_expect = h.expect;
    }
    /* another length, or bulk messages not as expected: the calls or the
     * algorithms differ */
    if (got != HDR + ri->len || peer_bulk != ri->expect || peer_expect != ri->bulk) {
        check_state_t lost = {.ref = k->st.ref, .diff = k->self};
        lost.diff.coll = LOST;
        k->st = merge(&k->st, &lost);
    }
    int last = k->round == k->rounds;
    if (!last) {
        check_hdr_t h = {.st = k->st, .bulk = k->ri[i + 1].bulk, .expect = k->ri[i + 1].expect};
        memcpy(k->out, &h, sizeof h);
    }
    if (k->parent) { /* the follow-up (header-only rounds, nothing lost) */
        if (last) {
            k->parent->verdict = mismatch(r, &k->st);
            snprintf(k->parent->msg, sizeof k->parent->msg, "%s", gcl_last_error());
        }
        return GCL_OK;
    }
    int fix_recv = ri->expect == 0 && peer_bulk > 0, fix_send = ri->bulk == 0 && peer_expect > 0;
    int follow = last && k->st.diff.rank >= 0;
    if (!fix_recv && !fix_send && !follow)
        return GCL_OK;
    /* a child in the same tag space (this call's sequence number) */
    gcl_comm_t *c = r->comm;
    gcl_request_t *f = gcl_req_new(c, r->coll, r->name, GCL_SCOPE_DEBUG, r->dtype, r->op);
    if (f == NULL)
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_%s: out of memory for the call check", r->name);
    c->dbg_seq--; /* not a GCL_DEBUG call */
    f->seq = r->seq;
    f->algo = r->algo;
    uint64_t tag = GCL_TAG(GCL_SCOPE_DEBUG, c->id, r->seq, BULK_STEP + (unsigned)i);
    if (fix_send) {
        static char empty;
        int s = gcl_s_send(f, ri->peer, 0, &empty, 0, -1, -1);
        if (s >= 0)
            f->ops[s].tag = tag;
    }
    if (fix_recv) {
        int v = gcl_s_recv(f, ri->peer, 0, gcl_req_alloc(f, peer_bulk), peer_bulk, -1, -1);
        gcl_s_any_length(f, v);
        if (v >= 0)
            f->ops[v].tag = tag;
    }
    if (follow) {
        gcl_check_t *fk = check_new(f, &k->self, 0, FOLLOWUP_STEP, k);
        for (int j = 0, prev = -1; fk && j < fk->rounds; j++)
            prev = gcl_check_round(f, fk, prev);
    }
    if (f->err) {
        gcl_status_t st = f->err;
        gcl_req_free(f);
        return st;
    }
    gcl_s_call_continue(r, f);
    return GCL_OK;
}

static gcl_status_t check_verdict(gcl_request_t *r, void *arg)
{
    const gcl_check_t *k = arg;
    (void)r;
    return k->verdict != GCL_OK ? gcl_set_error(k->verdict, "%s", k->msg) : GCL_OK;
}

/* Round i: the header and send_n payload bytes to the partner, from it the
 * header and (expected) recv_n; beside them a bulk message of bulk bytes
 * from src where bulk > 0, and one of expect bytes into dst where expect >
 * 0. */
static int round_add(gcl_request_t *r, gcl_check_t *k, int dep, size_t send_n, size_t recv_n, const void *src,
                     void *dst, size_t bulk, size_t expect, int *send_op, int *recv_op)
{
    const gcl_comm_t *c = r->comm;
    int i = k->built++, to, from;
    gcl_check_peers(c, i, &to, &from);
    check_round_info_t *ri = &k->ri[i];
    ri->peer = from;
    ri->len = recv_n;
    ri->bulk = bulk;
    ri->expect = expect;
    if (i == 0) {
        memcpy(k->out + offsetof(check_hdr_t, bulk), &ri->bulk, sizeof ri->bulk);
        memcpy(k->out + offsetof(check_hdr_t, expect), &ri->expect, sizeof ri->expect);
    }
    uint64_t tag = GCL_TAG(GCL_SCOPE_DEBUG, c->id, r->seq, k->step0 + (unsigned)i);
    int s = gcl_s_send(r, to, 0, k->out, HDR + send_n, dep, -1);
    int v = gcl_s_recv(r, from, 0, k->in, HDR + k->payload, dep, -1);
    if (s < 0 || v < 0)
        return -1;
    r->ops[s].tag = r->ops[v].tag = tag;
    gcl_s_any_length(r, v);
    ri->recv_op = v;
    /* partners of a butterfly only (check_round answers the one whose
     * bulk messages are not as expected) */
    tag = GCL_TAG(GCL_SCOPE_DEBUG, c->id, r->seq, BULK_STEP + (unsigned)i);
    if (send_op)
        *send_op = -1;
    if (recv_op)
        *recv_op = -1;
    if (bulk > 0) {
        if ((*send_op = gcl_s_send(r, to, 0, src, bulk, dep, -1)) < 0)
            return -1;
        r->ops[*send_op].tag = tag;
    }
    if (expect > 0) {
        if ((*recv_op = gcl_s_recv(r, from, 0, dst, expect, dep, -1)) < 0)
            return -1;
        r->ops[*recv_op].tag = tag;
        gcl_s_any_length(r, *recv_op);
    }
    return k->last = gcl_s_call(r, check_round, k, s, v);
}

int gcl_check_round_bulk(gcl_request_t *r, gcl_check_t *k, int dep, const void *src, size_t bulk, void *dst,
                         size_t expect, int *send_op, int *recv_op)
{
    return round_add(r, k, dep, k->payload, k->payload, src, dst, bulk, expect, send_op, recv_op);
}

int gcl_check_round(gcl_request_t *r, gcl_check_t *k, int dep)
{
    return round_add(r, k, dep, k->payload, k->payload, NULL, NULL, 0, 0, NULL, NULL);
}

int gcl_check_round_n(gcl_request_t *r, gcl_check_t *k, int dep, size_t send_n, size_t recv_n)
{
    return round_add(r, k, dep, send_n, recv_n, NULL, NULL, 0, 0, NULL, NULL);
}

int gcl_check_end(gcl_request_t *r, gcl_check_t *k, int dep)
{
    return gcl_s_call(r, check_verdict, k, k->last, dep);
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
    if (k)
        prev = gcl_check_end(r, k, -1);
    return gcl_s_first_of(r, nops, prev);
}
