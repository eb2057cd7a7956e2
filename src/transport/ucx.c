/* UCX back end: one ucp context and worker per transport, one endpoint per
 * peer created from worker addresses exchanged over MPI, tag-matched
 * messages with the source rank in the upper tag bits. Endpoints use
 * UCP_ERR_HANDLING_MODE_PEER so a failed peer completes its requests with an
 * error (UCX 1.13, ucp.h "ucp_ep_params_t"). */
#include "transport/impl.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SRC_SHIFT IPU_TRANSPORT_TAG_BITS
#define FULL_MASK (~UINT64_C(0))

static ipu_status_t ucx_error(const char *what, ucs_status_t s)
{
    return ipu_error(IPU_ERR_TRANSPORT, "UCX %s failed: %s; try --transport mpi, or set UCX_TLS "
                     "(e.g. UCX_TLS=tcp,self,sm)", what, ucs_status_string(s));
}

/* peer's endpoint failed: a lost peer, or the peer closed its side by force
 * (ucx_cancel); told apart outside UCX's callback (settle) */
static void on_peer_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    struct ipu_peer_ref *ref = arg;
    ipu_transport_t *t = ref->t;
    if (ep != t->eps[ref->peer] || t->ep_err[ref->peer] != UCS_OK)
        return;
    t->ep_err[ref->peer] = status;
    t->ep_errs++;
}

/* The endpoint to peer, from its worker address: at open, and again for
 * the first send after a reset. */
static ipu_status_t make_ep(ipu_transport_t *t, int peer)
{
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER,
        .address = (const ucp_address_t *)(t->addrs + (size_t)peer * t->addr_len),
        .err_mode = UCP_ERR_HANDLING_MODE_PEER,
        .err_handler = {.cb = on_peer_error, .arg = &t->refs[peer]},
    };
    ucs_status_t s = ucp_ep_create(t->worker, &ep, &t->eps[peer]);
    if (s != UCS_OK) {
        t->eps[peer] = NULL;
        return ucx_error("endpoint creation", s);
    }
    return IPU_OK;
}

/* Tags of the transport's own messages: bit 63 set (user tags hold the
 * source rank in bits 40..63, and no job has 2^23 ranks). */
#define WIREUP_TAG(src) ((UINT64_C(1) << 63) | ((uint64_t)(src) << SRC_SHIFT))
/* the notice src sends ahead of closing its endpoint to a peer by force
 * (tell_reset): the connection is made again by the next send */
#define RESET_TAG(src) (WIREUP_TAG(src) | 1)
/* the notice src sends ahead of closing its transport (ucx_close) */
#define CLOSE_TAG(src) (WIREUP_TAG(src) | 2)
/* seconds a transfer with a peer that closed its transport may still take
 * to complete (what it sent before the close arriving) before the peer
 * counts as lost */
#define CLOSED_GRACE_S 0.5
/* seconds a rank whose endpoint failed waits for the peer's reset notice */
#define RESET_WAIT_S 0.05
/* seconds a rank waits for its reset notice to leave before it closes */
#define RESET_TELL_S 0.05

static double mono_s(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

static double elapsed_s(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* Connect every endpoint now, while every rank is here to answer: an empty
 * message each way between every pair (a send leaves only once its
 * endpoint's wireup handshake is done). An endpoint closed by force in the
 * middle of that handshake (ucx_cancel) leaves the peer's half of it
 * inconsistent, and UCX 1.13 aborts on it later (ucp_ep.inl "remote_id ==
 * ...remote_ep_id", ucp_request.c "got REP message"). */
static ipu_status_t wire_up(ipu_transport_t *t)
{
    int n = 2 * t->size, left = 0;
    void **reqs = calloc((size_t)n, sizeof(void *));
    if (reqs == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory opening UCX");
    static char none;
    ucs_status_t s = UCS_OK;
    for (int i = 0; i < t->size; i++) {
        ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
                                  .datatype = ucp_dt_make_contig(1)};
        reqs[2 * i] = ucp_tag_recv_nbx(t->worker, &none, 0, WIREUP_TAG(i), FULL_MASK, &rp);
        ucp_request_param_t sp = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE, .datatype = ucp_dt_make_contig(1)};
        reqs[2 * i + 1] = ucp_tag_send_sync_nbx(t->eps[i], &none, 0, WIREUP_TAG(t->rank), &sp);
    }
    for (int k = 0; k < n; k++) {
        if (UCS_PTR_IS_ERR(reqs[k])) {
            s = UCS_PTR_STATUS(reqs[k]);
            reqs[k] = NULL;
        } else if (reqs[k] != NULL) {
            left++;
        }
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned spin = 0; left > 0 && s == UCS_OK; spin++) {
        ucp_worker_progress(t->worker);
        for (int k = 0; k < n; k++) {
            if (reqs[k] == NULL || ucp_request_check_status(reqs[k]) == UCS_INPROGRESS)
                continue;
            s = ucp_request_check_status(reqs[k]);
            ucp_request_free(reqs[k]);
            reqs[k] = NULL;
            left--;
        }
        if ((spin & 1023) == 1023) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec - t0.tv_sec + (now.tv_nsec - t0.tv_nsec) * 1e-9 > t->params.timeout_s)
                s = UCS_ERR_TIMED_OUT;
            sched_yield();
        }
    }
    for (int k = 0; k < n; k++)
        if (reqs[k] != NULL) {
            ucp_request_cancel(t->worker, reqs[k]);
            ucp_request_free(reqs[k]);
        }
    free(reqs);
    return s == UCS_OK ? IPU_OK : ucx_error("connection set-up", s);
}

static ipu_status_t ucx_open(ipu_transport_t *t)
{
    ucp_config_t *cfg;
    ucs_status_t s = ucp_config_read(NULL, NULL, &cfg);
    if (s != UCS_OK)
        return ucx_error("config", s);
    ucp_params_t pp = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_TAG};
    s = ucp_init(&pp, cfg, &t->ctx);
    ucp_config_release(cfg);
    if (s != UCS_OK)
        return ucx_error("init", s);
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SINGLE};
    if ((s = ucp_worker_create(t->ctx, &wp, &t->worker)) != UCS_OK)
        return ucx_error("worker creation", s);
    ucp_address_t *addr;
    size_t alen;
    if ((s = ucp_worker_get_address(t->worker, &addr, &alen)) != UCS_OK)
        return ucx_error("worker address", s);
    int mylen = (int)alen, *lens = calloc((size_t)t->size, sizeof(int));
    t->refs = calloc((size_t)t->size, sizeof(*t->refs));
    t->eps = calloc((size_t)t->size, sizeof(ucp_ep_h));
    t->ep_err = calloc((size_t)t->size, sizeof(ucs_status_t));
    t->peer_reset = calloc((size_t)t->size, sizeof(int));
    t->closed_at = calloc((size_t)t->size, sizeof(double));
    ipu_status_t st = IPU_OK;
    char *all = NULL;
    if (!lens || !t->refs || !t->eps || !t->ep_err || !t->peer_reset || !t->closed_at) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory opening UCX");
        goto out;
    }
    if (t->boot.allgather(&mylen, lens, sizeof(int), t->boot.arg) != 0) {
        st = ipu_error(IPU_ERR_TRANSPORT, "the bootstrap allgather failed");
        goto out;
    }
    /* addresses padded to the longest, gathered in one allgather */
    int maxlen = 0;
    for (int i = 0; i < t->size; i++)
        maxlen = lens[i] > maxlen ? lens[i] : maxlen;
    all = calloc((size_t)t->size, (size_t)maxlen);
    char *mine = calloc(1, (size_t)maxlen);
    if (all == NULL || mine == NULL) {
        free(mine);
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory opening UCX");
        goto out;
    }
    memcpy(mine, addr, alen);
    int rc = t->boot.allgather(mine, all, (size_t)maxlen, t->boot.arg);
    free(mine);
    if (rc != 0) {
        st = ipu_error(IPU_ERR_TRANSPORT, "the bootstrap allgather failed");
        goto out;
    }
    /* kept for the endpoints made again after a reset (ucx_cancel) */
    t->addrs = all;
    t->addr_len = (size_t)maxlen;
    all = NULL;
    for (int i = 0; i < t->size; i++) {
        t->refs[i].t = t;
        t->refs[i].peer = i;
        if ((st = make_ep(t, i)) != IPU_OK)
            goto out;
    }
    st = wire_up(t);
out:
    ucp_worker_release_address(t->worker, addr);
    free(all);
    free(lens);
    return st;
}

/* Close peer's endpoint (by force: without the peer, and every transfer
 * still on it ends at once with UCS_ERR_CANCELED, UCX dropping its buffer).
 * Bounded: a peer that vanished must not hold us. */
static void close_ep(ipu_transport_t *t, int peer, int force)
{
    if (t->eps[peer] == NULL)
        return;
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                             .flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0};
    void *r = ucp_ep_close_nbx(t->eps[peer], &p);
    t->eps[peer] = NULL;
    for (int spin = 0; UCS_PTR_IS_PTR(r) && spin < 2000000; spin++) {
        ucp_worker_progress(t->worker);
        if (ucp_request_check_status(r) != UCS_INPROGRESS)
            break;
    }
    if (UCS_PTR_IS_PTR(r))
        ucp_request_free(r);
}

/* Tell peer, just before this rank closes its endpoint to it, that the close
 * is not a failure: a notice on the same connection, ahead of the close. A
 * reset by force (tell_reset, which flushes it first, bounded as the peer
 * may be gone) or the transport's close (ucx_close, whose own flush takes
 * it). */
static void *send_notice(ipu_transport_t *t, int peer, uint64_t tag)
{
    static char none;
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE, .datatype = ucp_dt_make_contig(1)};
    return ucp_tag_send_nbx(t->eps[peer], &none, 0, tag, &p);
}

static void tell_reset(ipu_transport_t *t, int peer)
{
    void *r = send_notice(t, peer, RESET_TAG(t->rank));
    if (UCS_PTR_IS_ERR(r))
        return;
    ucp_request_param_t fp = {.op_attr_mask = 0};
    void *f = ucp_ep_flush_nbx(t->eps[peer], &fp);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned spin = 0;; spin++) {
        int busy = (UCS_PTR_IS_PTR(r) && ucp_request_check_status(r) == UCS_INPROGRESS) ||
                   (UCS_PTR_IS_PTR(f) && ucp_request_check_status(f) == UCS_INPROGRESS);
        if (!busy || ((spin & 255) == 255 && elapsed_s(&t0) > RESET_TELL_S))
            break;
        ucp_worker_progress(t->worker);
    }
    if (UCS_PTR_IS_PTR(r)) /* released by UCX once it completes (the close ends it) */
        ucp_request_free(r);
    if (UCS_PTR_IS_PTR(f))
        ucp_request_free(f);
}

/* Take one notice of tag, waiting up to wait_s for it (0: only one that is
 * in already): 1 when taken. */
static int take_one(ipu_transport_t *t, uint64_t tag, double wait_s)
{
    static char none;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
                              .datatype = ucp_dt_make_contig(1)};
    void *r = ucp_tag_recv_nbx(t->worker, &none, 0, tag, FULL_MASK, &rp);
    if (UCS_PTR_IS_ERR(r) || r == NULL)
        return 0;
    ucs_status_t s = ucp_request_check_status(r);
    for (unsigned spin = 0; s == UCS_INPROGRESS && wait_s > 0; spin++) {
        if ((spin & 255) == 255 && elapsed_s(&t0) > wait_s)
            break;
        ucp_worker_progress(t->worker);
        s = ucp_request_check_status(r);
    }
    if (s == UCS_INPROGRESS)
        ucp_request_cancel(t->worker, r);
    ucp_request_free(r);
    return s == UCS_OK;
}

/* Take the reset notices peer sent (tell_reset) into t->peer_reset, and its
 * close notice (ucx_close) into t->closed_at. A notice travels ahead of the
 * close on the same connection, so it is in by the time the failure shows;
 * wait a moment all the same. */
static void take_notices(ipu_transport_t *t, int peer)
{
    for (int first = 1; take_one(t, RESET_TAG(peer), first && t->peer_reset[peer] == 0 ? RESET_WAIT_S : 0);
         first = 0)
        t->peer_reset[peer]++;
    if (t->peer_reset[peer] == 0 && t->closed_at[peer] == 0 && take_one(t, CLOSE_TAG(peer), 0))
        t->closed_at[peer] = mono_s();
}

/* peer's endpoint failed with s (or the error its handler kept): if the
 * peer said it closed its side by force (a notice not yet matched to a
 * failure), close ours too, and the next send makes a new one; if it said
 * it closed its transport, close ours and keep taking what it sent before;
 * else the peer is lost. 1: lost. */
static int settle(ipu_transport_t *t, int peer, ucs_status_t s)
{
    if (t->ep_err[peer] != UCS_OK) {
        s = t->ep_err[peer];
        t->ep_err[peer] = UCS_OK;
        t->ep_errs--;
    }
    if (t->failed[peer])
        return 1;
    take_notices(t, peer);
    if (t->peer_reset[peer] == 0 && t->closed_at[peer] > 0) {
        /* it closed its transport: what it sent before stays receivable
         * (closed_lost says when a transfer outlives that) */
        close_ep(t, peer, 1);
        return 0;
    }
    if (t->peer_reset[peer] == 0) {
        t->failed[peer] = 1;
        t->fail_reason[peer] = s;
        return 1;
    }
    t->peer_reset[peer]--;
    close_ep(t, peer, 1);
    t->resets[peer]++;
    return 0;
}

/* settle every endpoint whose handler reported an error */
static void settle_all(ipu_transport_t *t)
{
    for (int p = 0; t->ep_errs > 0 && p < t->size; p++)
        if (t->ep_err[p] != UCS_OK)
            settle(t, p, t->ep_err[p]);
}

/* Receive and drop the messages that arrived but were never received (a
 * ping or a notice a peer sent as the job ended): UCX warns about every one
 * still queued when the worker is destroyed. Bounded: a rendezvous message
 * whose sender is gone may never complete, and is cancelled. */
static void drain_unexpected(ipu_transport_t *t)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int n = 0; n < 4096; n++) {
        ucp_tag_recv_info_t info;
        while (ucp_worker_progress(t->worker) != 0)
            ;
        ucp_tag_message_h m = ucp_tag_probe_nb(t->worker, 0, 0, 1, &info);
        if (m == NULL)
            return;
        void *buf = malloc(info.length ? info.length : 1);
        if (buf == NULL)
            return;
        ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE,
                                  .datatype = ucp_dt_make_contig(1)};
        void *r = ucp_tag_msg_recv_nbx(t->worker, buf, info.length, m, &rp);
        int cancelled = 0;
        for (unsigned spin = 0; UCS_PTR_IS_PTR(r) && ucp_request_check_status(r) == UCS_INPROGRESS;
             spin++) {
            if ((spin & 255) == 255 && elapsed_s(&t0) > RESET_WAIT_S) {
                if (cancelled++) /* still in flight: UCX may write buf yet; keep it */
                    return;
                ucp_request_cancel(t->worker, r);
            }
            ucp_worker_progress(t->worker);
        }
        if (UCS_PTR_IS_PTR(r))
            ucp_request_free(r);
        free(buf);
    }
}

static void ucx_close(ipu_transport_t *t)
{
    if (t->eps) {
        for (int i = 0; i < t->size; i++) {
            int force = t->failed[i] || t->ep_err[i] != UCS_OK;
            /* The close is not collective: a peer still at work may yet
             * post the receive of a message this rank sent before it
             * closed. Told, it settles its endpoint's error as a close and
             * takes the message; else it would take this rank for lost at
             * once. A transfer it still waits for fails a moment later. */
            if (!force && t->eps[i] != NULL && i != t->rank) {
                void *r = send_notice(t, i, CLOSE_TAG(t->rank));
                if (UCS_PTR_IS_PTR(r)) /* released by UCX once it completes */
                    ucp_request_free(r);
            }
            close_ep(t, i, force);
        }
        free(t->eps);
    }
    free(t->ep_err);
    free(t->peer_reset);
    free(t->closed_at);
    free(t->refs);
    free(t->addrs);
    if (t->worker) {
        drain_unexpected(t);
        ucp_worker_destroy(t->worker);
    }
    if (t->ctx)
        ucp_cleanup(t->ctx);
}

/* A receive that completed (s: UCS_OK, or UCS_ERR_MESSAGE_TRUNCATED for a
 * message longer than its buffer, which UCX consumed whole): the message
 * must have its length. A mismatch is the receive's own error; the peer
 * is fine. */
static ipu_status_t check_length(ipu_transport_t *t, ipu_treq_t *r, ucs_status_t s)
{
    if (!r->is_recv)
        return IPU_OK;
    r->received = r->info.length;
    if (s == UCS_OK && r->received == r->len)
        return IPU_OK;
    if (s != UCS_OK && r->received <= r->len) /* longer, by how much unknown */
        r->received = SIZE_MAX;
    char got[48];
    if (r->received != SIZE_MAX)
        snprintf(got, sizeof got, "%zu bytes", r->received);
    else
        snprintf(got, sizeof got, "more than %zu bytes", r->len);
    return ipu_error(IPU_ERR_MESSAGE_SIZE, "the message from rank %d on host %s with tag %llu has %s, "
                     "the receive expects %zu", r->peer, t->hosts[r->peer], (unsigned long long)r->tag,
                     got, r->len);
}

/* peer's endpoint failed with s: lost for good (ipu_transport_peer_failed) */
static ipu_status_t peer_lost(ipu_transport_t *t, int peer, ucs_status_t s)
{
    t->failed[peer] = 1;
    t->fail_reason[peer] = s;
    return ipu_error(IPU_ERR_TRANSPORT, "lost rank %d on host %s (%s); the job cannot continue", peer,
                     t->hosts[peer], ucs_status_string(s));
}

/* A transfer with peer, which closed its transport: lost once it has had
 * CLOSED_GRACE_S to arrive (or at once for a new send). */
static ipu_status_t closed_lost(ipu_transport_t *t, int peer)
{
    t->failed[peer] = 1;
    t->fail_reason[peer] = UCS_ERR_CONNECTION_RESET;
    return ipu_error(IPU_ERR_TRANSPORT, "lost rank %d on host %s: it closed its connections (it "
                     "finalized or exited) while this rank still had a transfer with it; the job "
                     "cannot continue", peer, t->hosts[peer]);
}

/* a transfer with peer ended by a reset of the connection (either side's) */
static ipu_status_t aborted(ipu_transport_t *t, ipu_treq_t *r)
{
    return ipu_error(IPU_ERR_TRANSPORT, "%s rank %d on host %s was aborted: the connection "
                     "was reset to end a cancelled transfer (after a timeout)",
                     r->is_recv ? "a receive from" : "a send to", r->peer, t->hosts[r->peer]);
}

/* a send that failed at once because its endpoint failed */
static int ep_failure(ucs_status_ptr_t p)
{
    ucs_status_t s = UCS_PTR_IS_ERR(p) ? UCS_PTR_STATUS(p) : UCS_OK;
    return s == UCS_ERR_ENDPOINT_TIMEOUT || s == UCS_ERR_CONNECTION_RESET || s == UCS_ERR_UNREACHABLE;
}

static ipu_status_t started(ipu_transport_t *t, ipu_treq_t *r, ucs_status_ptr_t p, const char *what)
{
    if (p == NULL) { /* a send completed at once */
        r->done = 1;
        return IPU_OK;
    }
    ucs_status_t s = UCS_PTR_IS_ERR(p) ? UCS_PTR_STATUS(p) : UCS_OK;
    if (!r->is_recv && ep_failure(p)) {
        /* the endpoint failed before its error handler ran, as when a
         * posted request completes with the error */
        if (settle(t, r->peer, s))
            return peer_lost(t, r->peer, t->fail_reason[r->peer]);
        return t->closed_at[r->peer] > 0 ? closed_lost(t, r->peer) : aborted(t, r);
    }
    if (UCS_PTR_IS_ERR(p))
        return ucx_error(what, s);
    r->ucx = p;
    return IPU_OK;
}

static ipu_status_t ucx_isend(ipu_transport_t *t, ipu_treq_t *r, uint64_t tag, const void *buf)
{
    int peer = r->peer;
    if (t->ep_err[peer] != UCS_OK && settle(t, peer, UCS_OK))
        return peer_lost(t, peer, t->fail_reason[peer]);
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE, .datatype = ucp_dt_make_contig(1)};
    uint64_t utag = ((uint64_t)t->rank << SRC_SHIFT) | tag;
    for (int tries = 0;; tries++) {
        if (t->eps[peer] == NULL) { /* reset by ucx_cancel or by the peer, or closed */
            if (t->closed_at[peer] > 0) /* settle closed ours: the peer is gone */
                return closed_lost(t, peer);
            ipu_status_t st = make_ep(t, peer);
            if (st != IPU_OK)
                return st;
        }
        ucs_status_ptr_t sp = ucp_tag_send_nbx(t->eps[peer], buf, r->len, utag, &p);
        /* an endpoint the peer had reset: once more on a new one */
        if (tries == 0 && ep_failure(sp) && !settle(t, peer, UCS_PTR_STATUS(sp)))
            continue;
        return started(t, r, sp, "send");
    }
}

static ipu_status_t ucx_irecv(ipu_transport_t *t, ipu_treq_t *r, uint64_t tag, void *buf)
{
    /* always a request, so ucp_tag_recv_request_test reports the length
     * (UCX 1.13 leaves recv_info unset on immediate completion) */
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
                             .datatype = ucp_dt_make_contig(1)};
    uint64_t utag = ((uint64_t)r->peer << SRC_SHIFT) | tag;
    return started(t, r, ucp_tag_recv_nbx(t->worker, buf, r->len, utag, FULL_MASK, &p), "receive");
}

static ipu_status_t ucx_test(ipu_transport_t *t, ipu_treq_t *r)
{
    if (r->done)
        return IPU_OK;
    ucp_worker_progress(t->worker);
    settle_all(t);
    ucs_status_t s = r->is_recv ? ucp_tag_recv_request_test(r->ucx, &r->info)
                                : ucp_request_check_status(r->ucx);
    if (s == UCS_INPROGRESS) {
        double at = t->closed_at[r->peer];
        return at > 0 && mono_s() - at > CLOSED_GRACE_S ? closed_lost(t, r->peer) : IPU_OK;
    }
    ucp_request_free(r->ucx);
    r->ucx = NULL;
    r->done = 1;
    if (s == UCS_OK || (s == UCS_ERR_MESSAGE_TRUNCATED && r->is_recv))
        return check_length(t, r, s);
    if (t->closed_at[r->peer] > 0) /* a send its close cut short */
        return closed_lost(t, r->peer);
    if (t->ep_err[r->peer] == UCS_OK && t->resets[r->peer] > 0 && !t->failed[r->peer])
        /* ended by a reset of the connection to the peer (ucx_cancel here,
         * or there: settle): the peer is not lost */
        return aborted(t, r);
    return settle(t, r->peer, s) ? peer_lost(t, r->peer, t->fail_reason[r->peer]) : aborted(t, r);
}

static void ucx_cancel(ipu_transport_t *t, ipu_treq_t *r)
{
    if (r->ucx == NULL)
        return;
    /* an unmatched receive ends at once (UCS_ERR_CANCELED), one whose data
     * is arriving when that ends; UCX 1.13 cannot cancel a send
     * (ucp_request_cancel ends expected receives only) */
    ucp_request_cancel(t->worker, r->ucx);
    int spins = r->is_recv ? 1000000 : 10000;
    for (int spin = 0; spin < spins && ucp_request_check_status(r->ucx) == UCS_INPROGRESS; spin++)
        ucp_worker_progress(t->worker);
    if (ucp_request_check_status(r->ucx) == UCS_INPROGRESS) {
        /* Still in flight to (or from) a peer that does not take it: UCX
         * holds the buffer and would read or write it at a later progress,
         * after the caller released it (a rendezvous send waiting for the
         * peer's receive, a send queued while the connection is set up).
         * Closing the peer's endpoint by force ends every transfer on it
         * now, with UCS_ERR_CANCELED. The peer is not marked failed: the
         * next send to it makes a new endpoint. The peer sees its half of
         * the connection fail; the reset notice sent ahead of the close
         * (tell_reset) makes it close that half too rather than take this
         * rank for lost (settle), and its next send makes a new one. */
        if (t->eps[r->peer] != NULL)
            tell_reset(t, r->peer);
        close_ep(t, r->peer, 1);
        t->resets[r->peer]++;
        for (int spin = 0; spin < 100000 && ucp_request_check_status(r->ucx) == UCS_INPROGRESS; spin++)
            ucp_worker_progress(t->worker);
    }
    ucp_request_free(r->ucx); /* released by UCX once it completes */
    r->ucx = NULL;
}

static void ucx_progress(ipu_transport_t *t)
{
    ucp_worker_progress(t->worker);
    settle_all(t);
}

const ipu_transport_ops_t ipu_transport_ucx_ops = {
    ucx_open, ucx_close, ucx_isend, ucx_irecv, ucx_test, ucx_cancel, ucx_progress, "ucx",
};
