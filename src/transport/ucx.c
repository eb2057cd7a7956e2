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

static void on_peer_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    struct ipu_peer_ref *ref = arg;
    ref->t->failed[ref->peer] = 1;
    ref->t->fail_reason[ref->peer] = status;
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
    ipu_status_t st = IPU_OK;
    char *all = NULL;
    if (!lens || !t->refs || !t->eps) {
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

static void ucx_close(ipu_transport_t *t)
{
    if (t->eps) {
        for (int i = 0; i < t->size; i++)
            close_ep(t, i, t->failed[i]);
        free(t->eps);
    }
    free(t->refs);
    free(t->addrs);
    if (t->worker)
        ucp_worker_destroy(t->worker);
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

static ipu_status_t started(ipu_transport_t *t, ipu_treq_t *r, ucs_status_ptr_t p, const char *what)
{
    if (p == NULL) { /* a send completed at once */
        r->done = 1;
        return IPU_OK;
    }
    ucs_status_t s = UCS_PTR_IS_ERR(p) ? UCS_PTR_STATUS(p) : UCS_OK;
    if (!r->is_recv && (s == UCS_ERR_ENDPOINT_TIMEOUT || s == UCS_ERR_CONNECTION_RESET ||
                        s == UCS_ERR_UNREACHABLE)) {
        /* the endpoint failed before its error handler ran: the peer is
         * lost, as when a posted request completes with the error */
        return peer_lost(t, r->peer, s);
    }
    if (UCS_PTR_IS_ERR(p))
        return ucx_error(what, s);
    r->ucx = p;
    return IPU_OK;
}

static ipu_status_t ucx_isend(ipu_transport_t *t, ipu_treq_t *r, uint64_t tag, const void *buf)
{
    if (t->eps[r->peer] == NULL) { /* reset by ucx_cancel */
        ipu_status_t st = make_ep(t, r->peer);
        if (st != IPU_OK)
            return st;
    }
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE, .datatype = ucp_dt_make_contig(1)};
    uint64_t utag = ((uint64_t)t->rank << SRC_SHIFT) | tag;
    return started(t, r, ucp_tag_send_nbx(t->eps[r->peer], buf, r->len, utag, &p), "send");
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
    ucs_status_t s = r->is_recv ? ucp_tag_recv_request_test(r->ucx, &r->info)
                                : ucp_request_check_status(r->ucx);
    if (s == UCS_INPROGRESS)
        return IPU_OK;
    ucp_request_free(r->ucx);
    r->ucx = NULL;
    r->done = 1;
    if (s == UCS_OK || (s == UCS_ERR_MESSAGE_TRUNCATED && r->is_recv))
        return check_length(t, r, s);
    if (s == UCS_ERR_CANCELED && t->resets[r->peer] > 0)
        /* ended by the reset of the peer's endpoint (ucx_cancel of another
         * transfer to it): the peer is not lost */
        return ipu_error(IPU_ERR_TRANSPORT, "%s rank %d on host %s was aborted: the connection "
                         "was reset to end a cancelled transfer (after a timeout)",
                         r->is_recv ? "a receive from" : "a send to", r->peer, t->hosts[r->peer]);
    return peer_lost(t, r->peer, s);
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
         * next send to it makes a new endpoint. The peer's half of the old
         * one stays until its own call ends the same way (a late rank's
         * matching call times out too); meanwhile its rendezvous messages
         * to this rank fail, and UCX's keepalive may report this rank lost
         * to it. */
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
}

const ipu_transport_ops_t ipu_transport_ucx_ops = {
    ucx_open, ucx_close, ucx_isend, ucx_irecv, ucx_test, ucx_cancel, ucx_progress, "ucx",
};
