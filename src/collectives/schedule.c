/* libgcl's progress engine: a request is a schedule of ops (send, receive,
 * local reduce, copy, a child request on a sub-communicator, a shared-memory
 * op) with dependencies, as UCC's schedules and NCCL's proxy steps: ops
 * whose dependencies completed are started (communication first, so
 * transfers are in flight while the local reductions run), active ones are
 * tested. Segmented algorithms thus pipeline: the reduction of segment j
 * overlaps the transfer of segment j+1. Also the waits' policy (gcl_idle)
 * and timeouts. */
#include "collectives/gcl_internal.h"
#include "collectives/reduce_local.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

gcl_request_t *gcl_req_new(gcl_comm_t *c, gcl_coll_t coll, const char *name, int scope, gcl_dtype_t dtype,
                           gcl_op_t op)
{
    gcl_request_t *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return NULL;
    r->comm = c;
    r->coll = coll;
    r->name = name;
    r->algo = "";
    r->scope = scope;
    r->seq = scope == GCL_SCOPE_DEBUG ? c->dbg_seq++ : scope == GCL_SCOPE_INTERNAL ? c->int_seq++
                                                                                   : c->seq++;
    r->dtype = dtype;
    r->op = op == GCL_AVG ? GCL_SUM : op;
    r->esz = gcl_dtype_size(dtype);
    return r;
}

void *gcl_req_alloc(gcl_request_t *r, size_t bytes)
{
    gcl_alloc_t *a = malloc(sizeof(gcl_alloc_t) + 64 + bytes);
    if (a == NULL) {
        r->err = GCL_ERR_NO_MEMORY;
        gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_%s: out of memory for %zu bytes of scratch", r->name, bytes);
        return NULL;
    }
    a->next = r->allocs;
    r->allocs = a;
    return (char *)a + 64; /* aligned for any dtype and vector loads */
}

/* Cancel the request's transfers and shm ops; after an error of this
 * member's own (tell: not a timeout) its shm ops tell the segment's other
 * members, who would otherwise wait for it until their timeout. */
static void cancel_active(gcl_request_t *r, int tell)
{
    for (int i = 0; i < r->nops; i++) {
        gcl_sop_t *o = &r->ops[i];
        if (o->sub) /* started or not: its held ops would block the segment */
            cancel_active(o->sub, tell);
        if (o->state != 1 && !(o->state == 0 && o->shm_op)) /* active, or held on a segment */
            continue;
        if (o->treq)
            ipu_transport_cancel(r->comm->ctx->tp, o->treq);
        o->treq = NULL;
        if (o->shm_op && tell)
            gcl_shm_abandon(o->shm_op);
        else if (o->shm_op)
            gcl_shm_cancel(o->shm_op);
        o->shm_op = NULL;
    }
}

void gcl_req_track(gcl_request_t *r)
{
    gcl_ctx_t *ctx = r->comm->ctx;
    r->tracked = 1;
    r->live_next = NULL;
    r->live_prev = ctx->live_tail;
    if (ctx->live_tail)
        ctx->live_tail->live_next = r;
    else
        ctx->live = r;
    ctx->live_tail = r;
}

static void untrack(gcl_request_t *r)
{
    if (!r->tracked)
        return;
    gcl_ctx_t *ctx = r->comm->ctx;
    if (r->live_prev)
        r->live_prev->live_next = r->live_next;
    else
        ctx->live = r->live_next;
    if (r->live_next)
        r->live_next->live_prev = r->live_prev;
    else
        ctx->live_tail = r->live_prev;
    r->tracked = 0;
}

void gcl_req_untrack_comm(gcl_comm_t *c)
{
    for (gcl_request_t *r = c->ctx->live, *next; r; r = next) {
        next = r->live_next;
        if (r->comm == c)
            untrack(r);
    }
}

void gcl_progress_live(gcl_ctx_t *ctx, const gcl_request_t *skip)
{
    for (gcl_request_t *r = ctx->live; r; r = r->live_next)
        if (r != skip && !r->err && (!r->started || r->ndone < r->nops))
            (void)gcl_req_progress(r);
}

void gcl_req_free(gcl_request_t *r)
{
    if (r == NULL)
        return;
    untrack(r);
    cancel_active(r, 0);
    for (int i = 0; i < r->nops; i++) {
        gcl_req_free(r->ops[i].sub);
    }
    while (r->allocs) {
        gcl_alloc_t *n = r->allocs->next;
        free(r->allocs);
        r->allocs = n;
    }
    free(r->ops);
    free(r->succ);
    free(r->ready_comm);
    free(r->ready_local);
    free(r->active);
    free(r);
}

static int add(gcl_request_t *r, gcl_op_kind_t kind, int d0, int d1)
{
    if (r->err)
        return -1;
    if (r->nops == r->cap) {
        int cap = r->cap ? r->cap * 2 : 32;
        gcl_sop_t *ops = realloc(r->ops, (size_t)cap * sizeof(*ops));
        if (ops == NULL) {
            r->err = gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_%s: out of memory for the schedule", r->name);
            return -1;
        }
        r->ops = ops;
        r->cap = cap;
    }
    int i = r->nops++;
    gcl_sop_t *o = &r->ops[i];
    memset(o, 0, sizeof(*o));
    o->kind = (uint8_t)kind;
    o->peer = -1;
    gcl_s_dep(r, i, d0);
    gcl_s_dep(r, i, d1);
    return i;
}

gcl_status_t gcl_s_first_of(gcl_request_t *r, int n, int first)
{
    for (int i = 0; i < n && !r->err; i++)
        if (i != first && r->ops[i].ndeps == 0)
            gcl_s_dep(r, i, first);
    return r->err;
}

void gcl_s_dep(gcl_request_t *r, int op, int dep)
{
    if (op < 0 || dep < 0 || r->err)
        return;
    gcl_sop_t *o = &r->ops[op];
    for (int k = 0; k < o->ndeps; k++)
        if (o->deps[k] == dep)
            return;
    if (o->ndeps == GCL_MAX_DEPS) {
        r->err = gcl_set_error(GCL_ERR_UNSUPPORTED, "gcl_%s: internal: too many dependencies", r->name);
        return;
    }
    o->deps[o->ndeps++] = dep;
}

static int comm_op(gcl_request_t *r, gcl_op_kind_t kind, int peer, unsigned step, const void *buf,
                   size_t bytes, int d0, int d1)
{
    int i = add(r, kind, d0, d1);
    if (i < 0)
        return i;
    gcl_sop_t *o = &r->ops[i];
    o->peer = peer;
    o->tag = GCL_TAG(r->scope, r->comm->id, r->seq, step);
    o->dst = (void *)buf;
    o->n = o->got = bytes;
    return i;
}

void gcl_s_any_length(gcl_request_t *r, int op)
{
    if (op >= 0 && !r->err)
        r->ops[op].any_length = 1;
}

size_t gcl_s_received(const gcl_request_t *r, int op)
{
    return r->ops[op].got;
}

void gcl_s_call_continue(gcl_request_t *r, gcl_request_t *child)
{
    gcl_sop_t *o = &r->ops[r->running];
    child->is_child = 1;
    o->sub = child;
    o->kind = GOP_SUB;
}

int gcl_s_send(gcl_request_t *r, int peer, unsigned step, const void *buf, size_t bytes, int d0, int d1)
{
    return comm_op(r, GOP_SEND, peer, step, buf, bytes, d0, d1);
}

int gcl_s_recv(gcl_request_t *r, int peer, unsigned step, void *buf, size_t bytes, int d0, int d1)
{
    return comm_op(r, GOP_RECV, peer, step, buf, bytes, d0, d1);
}

int gcl_s_reduce(gcl_request_t *r, void *dst, const void *a, const void *b, size_t count, int d0, int d1)
{
    int i = add(r, GOP_REDUCE, d0, d1);
    if (i >= 0) {
        r->ops[i].dst = dst;
        r->ops[i].a = a;
        r->ops[i].b = b;
        r->ops[i].n = count;
    }
    return i;
}

int gcl_s_copy(gcl_request_t *r, void *dst, const void *src, size_t bytes, int d0, int d1)
{
    int i = add(r, GOP_COPY, d0, d1);
    if (i >= 0) {
        r->ops[i].dst = dst;
        r->ops[i].a = src;
        r->ops[i].n = bytes;
    }
    return i;
}

int gcl_s_sub(gcl_request_t *r, gcl_request_t *child, int d0, int d1)
{
    int i = add(r, GOP_SUB, d0, d1);
    if (i < 0) {
        gcl_req_free(child);
        return i;
    }
    child->is_child = 1;
    r->ops[i].sub = child;
    return i;
}

int gcl_s_shm(gcl_request_t *r, const gcl_args_t *a, int d0, int d1)
{
    int i = add(r, GOP_SHM, d0, d1);
    if (i < 0)
        return i;
    /* started now and held until posted: the op's place on the segment is
     * its collective's start, the same on every member, whenever the steps
     * before it (another communicator's, for a hierarchical call) end */
    gcl_status_t st = gcl_shm_start_args(r->comm->shm, a, &r->ops[i].shm_op);
    if (st != GCL_OK) {
        r->ops[i].shm_op = NULL;
        r->err = gcl_comm_shm_error(r->comm, r->name, st);
        return -1;
    }
    gcl_shm_hold(r->ops[i].shm_op);
    return i;
}

int gcl_s_call(gcl_request_t *r, gcl_status_t (*fn)(gcl_request_t *r, void *arg), void *arg, int d0, int d1)
{
    int i = add(r, GOP_CALL, d0, d1);
    if (i >= 0) {
        r->ops[i].fn = fn;
        r->ops[i].dst = arg;
    }
    return i;
}

/* ------------------------------------------------------------ engine */

static int is_comm(const gcl_sop_t *o)
{
    return o->kind == GOP_SEND || o->kind == GOP_RECV || o->kind == GOP_SUB || o->kind == GOP_SHM;
}

static void make_ready(gcl_request_t *r, int i)
{
    if (is_comm(&r->ops[i]))
        r->ready_comm[r->nready_comm++] = i;
    else
        r->ready_local[r->nready_local++] = i;
}

static gcl_status_t start(gcl_request_t *r)
{
    int n = r->nops;
    r->succ = malloc(((size_t)n * GCL_MAX_DEPS + 1) * sizeof(int));
    r->ready_comm = malloc(((size_t)n + 1) * sizeof(int));
    r->ready_local = malloc(((size_t)n + 1) * sizeof(int));
    r->active = malloc(((size_t)n + 1) * sizeof(int));
    if (!r->succ || !r->ready_comm || !r->ready_local || !r->active)
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_%s: out of memory starting", r->name);
    /* successor lists (CSR) */
    for (int i = 0; i < n; i++)
        r->ops[i].nsucc = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < r->ops[i].ndeps; k++)
            r->ops[r->ops[i].deps[k]].nsucc++;
    int off = 0;
    for (int i = 0; i < n; i++) {
        r->ops[i].succ_off = off;
        off += r->ops[i].nsucc;
        r->ops[i].nsucc = 0;
        r->ops[i].nwait = r->ops[i].ndeps;
    }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < r->ops[i].ndeps; k++) {
            gcl_sop_t *d = &r->ops[r->ops[i].deps[k]];
            r->succ[d->succ_off + d->nsucc++] = i;
        }
    /* ready in reverse so the stacks pop in program order */
    for (int i = n - 1; i >= 0; i--)
        if (r->ops[i].nwait == 0)
            make_ready(r, i);
    r->started = 1;
    return GCL_OK;
}

static void complete(gcl_request_t *r, int i)
{
    gcl_sop_t *o = &r->ops[i];
    o->state = 2;
    r->ndone++;
    r->comm->moved++;
    for (int k = o->nsucc - 1; k >= 0; k--) {
        int s = r->succ[o->succ_off + k];
        if (--r->ops[s].nwait == 0)
            make_ready(r, s);
    }
}

static gcl_status_t post(gcl_request_t *r, int i)
{
    gcl_sop_t *o = &r->ops[i];
    gcl_comm_t *c = r->comm;
    ipu_status_t st = IPU_OK;
    o->state = 1;
    switch (o->kind) {
    case GOP_SEND:
        st = ipu_transport_isend(c->ctx->tp, c->world[o->peer], o->tag, o->dst, o->n, &o->treq);
        break;
    case GOP_RECV:
        st = ipu_transport_irecv(c->ctx->tp, c->world[o->peer], o->tag, o->dst, o->n, &o->treq);
        break;
    case GOP_SUB:
        o->sub->timed = r->timed;
        break;
    case GOP_SHM:
        gcl_shm_release(o->shm_op);
        break;
    default:
        break;
    }
    if (st != IPU_OK) {
        o->state = 2;
        o->treq = NULL;
        return gcl_from_ipu(st, r->name);
    }
    r->active[r->nactive++] = i;
    return GCL_OK;
}

/* The receive o matched a message of another size (got bytes; SIZE_MAX:
 * more than o->n). A point-to-point receive's own error, naming the peer,
 * the tag and both sizes; in a collective, the members' arguments differ. */
static gcl_status_t size_error(const gcl_request_t *r, const gcl_sop_t *o, size_t got)
{
    const gcl_comm_t *c = r->comm;
    char sz[64];
    if (got != SIZE_MAX)
        snprintf(sz, sizeof sz, "%zu bytes", got);
    else
        snprintf(sz, sizeof sz, "more than %zu bytes", o->n);
    if (r->coll == GCL_COLL_COUNT)
        return gcl_set_error(GCL_ERR_MESSAGE_SIZE, "gcl_recv: the message from rank %d with tag %llu on "
                             "communicator %u has %s, the receive expects %zu bytes (count %zu)", o->peer,
                             (unsigned long long)(o->tag & ((UINT64_C(1) << GCL_P2P_TAG_BITS) - 1)), c->id,
                             sz, o->n, r->esz ? o->n / r->esz : 0);
    return gcl_set_error(GCL_ERR_MISMATCH, "gcl_%s (%s) on communicator %u (rank %d of %d): rank %d sent %s "
                         "where %zu were expected: the members called with different arguments "
                         "(GCL_DEBUG=1 names them)", r->name, r->algo, c->id, c->rank, c->size, o->peer, sz,
                         o->n);
}

/* 1 if op i is done; an error status if it failed */
static gcl_status_t test_op(gcl_request_t *r, int i, int *done)
{
    gcl_sop_t *o = &r->ops[i];
    *done = 0;
    if (o->kind == GOP_SEND || o->kind == GOP_RECV) {
        size_t got = 0;
        ipu_status_t st = ipu_transport_test_len(r->comm->ctx->tp, o->treq, done, &got);
        if (st != IPU_OK || *done)
            o->treq = NULL;
        if (st == IPU_ERR_MESSAGE_SIZE && o->any_length) {
            o->got = got;
            *done = 1;
            return GCL_OK;
        }
        if (st == IPU_ERR_MESSAGE_SIZE)
            return size_error(r, o, got);
        if (st != IPU_OK)
            return gcl_from_ipu(st, r->name);
        return GCL_OK;
    }
    if (o->kind == GOP_SUB) {
        gcl_status_t st = gcl_req_progress(o->sub);
        if (st == GCL_IN_PROGRESS)
            return GCL_OK;
        gcl_req_free(o->sub);
        o->sub = NULL;
        *done = st == GCL_OK;
        return st;
    }
    gcl_status_t st = gcl_shm_progress(o->shm_op);
    if (st == GCL_IN_PROGRESS)
        return GCL_OK;
    o->shm_op = NULL; /* freed by gcl_shm_progress */
    *done = st == GCL_OK;
    return st == GCL_OK ? st : gcl_comm_shm_error(r->comm, r->name, st);
}

static gcl_status_t run_local(gcl_request_t *r, int i)
{
    gcl_sop_t *o = &r->ops[i];
    o->state = 1;
    if (o->kind == GOP_CALL) {
        r->running = i;
        return o->fn(r, o->dst);
    }
    if (o->kind == GOP_COPY) {
        if (o->n && o->dst != o->a)
            memmove(o->dst, o->a, o->n);
        return GCL_OK;
    }
    if (o->n == 0)
        return GCL_OK;
    if (o->dst == o->a)
        return gcl_reduce_local(o->dst, o->b, o->n, r->dtype, r->op);
    return gcl_reduce_local3(o->dst, o->a, o->b, o->n, r->dtype, r->op);
}

/* r failed with st; the message just set is kept for its own test/wait
 * (another request's wait may have progressed r to its failure). */
static gcl_status_t fail(gcl_request_t *r, gcl_status_t st)
{
    char msg[sizeof(r->errmsg)];
    snprintf(msg, sizeof(msg), "%s", gcl_last_error());
    if (st == GCL_ERR_TRANSPORT)
        gcl_ctx_tell(r->comm->ctx, -1); /* a peer lost: tell the others first */
    gcl_set_error(st, "%s", msg);
    /* a mismatch is every member's: none tells the others */
    cancel_active(r, st != GCL_ERR_TIMED_OUT && st != GCL_ERR_MISMATCH);
    r->err = st;
    snprintf(r->errmsg, sizeof(r->errmsg), "%s", gcl_last_error());
    return st;
}

gcl_status_t gcl_req_progress(gcl_request_t *r)
{
    if (r->err)
        return r->errmsg[0] ? gcl_set_error(r->err, "%s", r->errmsg) : r->err;
    if (!r->started) {
        gcl_status_t st = start(r);
        if (st != GCL_OK)
            return fail(r, st);
    }
    for (int iter = 0; iter < 64 && r->ndone < r->nops; iter++) {
        int moved = 0;
        while (r->nready_comm) {
            gcl_status_t st = post(r, r->ready_comm[--r->nready_comm]);
            if (st != GCL_OK)
                return fail(r, st);
            moved = 1;
        }
        for (int k = 0; k < r->nactive; k++) /* the network only when waited on */
            if (r->ops[r->active[k]].kind == GOP_SEND || r->ops[r->active[k]].kind == GOP_RECV) {
                ipu_transport_progress(r->comm->ctx->tp);
                break;
            }
        for (int k = 0; k < r->nactive;) {
            int i = r->active[k], done;
            gcl_status_t st = test_op(r, i, &done);
            if (st != GCL_OK)
                return fail(r, st);
            if (done) {
                r->active[k] = r->active[--r->nactive];
                complete(r, i);
                moved = 1;
            } else {
                k++;
            }
        }
        if (r->nready_local) {
            int i = r->ready_local[--r->nready_local];
            gcl_status_t st = run_local(r, i);
            if (st == GCL_OK && r->ops[i].kind == GOP_SUB) /* continued (gcl_s_call_continue) */
                st = post(r, i);
            if (st != GCL_OK)
                return fail(r, st);
            if (r->ops[i].kind != GOP_SUB)
                complete(r, i);
            moved = 1;
        }
        if (!moved)
            break;
    }
    if (r->ndone < r->nops)
        return GCL_IN_PROGRESS;
    if (r->avg_buf && r->avg_count) {
        gcl_reduce_finish_avg(r->avg_buf, r->avg_count, r->dtype, r->avg_n);
        r->avg_buf = NULL;
    }
    return GCL_OK;
}

/* The peer (world rank) an unfinished request waits for, or -1. */
static int waited_peer(const gcl_request_t *r, const char **what)
{
    for (int i = 0; i < r->nactive; i++) {
        const gcl_sop_t *o = &r->ops[r->active[i]];
        if (o->kind == GOP_RECV || o->kind == GOP_SEND) {
            *what = o->kind == GOP_RECV ? "data from" : "sending to";
            return r->comm->world[o->peer];
        }
        if (o->kind == GOP_SHM && o->shm_op) {
            int j = gcl_shm_waited(r->comm->shm);
            if (j >= 0 && j < r->comm->size) {
                *what = "shared memory from";
                return r->comm->world[j];
            }
        }
        if (o->kind == GOP_SUB && o->sub) {
            int p = waited_peer(o->sub, what);
            if (p >= 0)
                return p;
        }
    }
    return -1;
}

static gcl_status_t timed_out(gcl_request_t *r)
{
    const char *what = "";
    int w = waited_peer(r, &what), p = -1;
    gcl_comm_t *c = r->comm;
    for (int i = 0; w >= 0 && i < c->size; i++)
        if (c->world[i] == w)
            p = i;
    double t = c->timeout_s;
    if (w < 0)
        gcl_set_error(GCL_ERR_TIMED_OUT, "gcl_%s (%s) on communicator %u (rank %d of %d) timed out after "
                      "%.3g s waiting for the other members", r->name, r->algo, c->id, c->rank, c->size, t);
    else
        gcl_set_error(GCL_ERR_TIMED_OUT, "gcl_%s (%s) on communicator %u (rank %d of %d) timed out after "
                      "%.3g s waiting for %s rank %d (world rank %d, host %s)", r->name, r->algo, c->id,
                      c->rank, c->size, t, what, p, w, ipu_transport_host(c->ctx->tp, w));
    fail(r, GCL_ERR_TIMED_OUT);
    return GCL_ERR_TIMED_OUT;
}

/* Steps completed on c and on the host-local and leader communicators its
 * hierarchical calls use. */
static uint64_t comm_moved(const gcl_comm_t *c)
{
    return c->moved + (c->local_comm ? c->local_comm->moved : 0) + (c->leader_comm ? c->leader_comm->moved : 0);
}

/* Progress r (others: the other live requests first, oldest first).
 * The timeout bounds how long r's communicator goes without progress while
 * the caller waits on r: the deadline restarts at the first test or wait of
 * r and whenever a step of a call on the communicator has completed since
 * (a call queued behind others is not stuck), so neither a late gcl_wait
 * (compute overlapped with the call) nor a long call that keeps moving
 * times out. */
gcl_status_t gcl_req_test(gcl_request_t *r, int others)
{
    if (others && (r->comm->ctx->live != r || r->live_next))
        gcl_progress_live(r->comm->ctx, r);
    gcl_status_t st = gcl_req_progress(r);
    if (st != GCL_IN_PROGRESS)
        return st;
    if ((st = gcl_ctx_notice(r->comm->ctx, r->name)) != GCL_OK)
        return fail(r, st); /* a rank lost elsewhere */
    st = GCL_IN_PROGRESS;
    if (!r->timed || r->comm->timeout_s <= 0)
        return st;
    double now = gcl_now();
    uint64_t moved = comm_moved(r->comm);
    if (!r->waited || moved != r->seen_moved) {
        r->waited = 1;
        r->seen_moved = moved;
        r->deadline = now + r->comm->timeout_s;
    } else if (now > r->deadline) {
        return timed_out(r);
    }
    return st;
}

void gcl_idle(const gcl_ctx_t *ctx, unsigned spin)
{
    if (ctx->yield_always || (spin & 255) == 255)
        sched_yield();
#if defined(__x86_64__) || defined(__i386__)
    else
        __builtin_ia32_pause(); /* leave the core's pipeline to an SMT sibling */
#endif
}

gcl_status_t gcl_req_wait(gcl_request_t *r)
{
    gcl_status_t st;
    for (unsigned spin = 0; (st = gcl_req_test(r, 1)) == GCL_IN_PROGRESS; spin++)
        gcl_idle(r->comm->ctx, spin);
    gcl_req_free(r);
    return st;
}
