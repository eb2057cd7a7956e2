/* UCX back end: one ucp context and worker per transport, one endpoint per
 * peer created from worker addresses exchanged over MPI, tag-matched
 * messages with the source rank in the upper tag bits. Endpoints use
 * UCP_ERR_HANDLING_MODE_PEER so a failed peer completes its requests with an
 * error (UCX 1.13, ucp.h "ucp_ep_params_t"). */
#include "transport/impl.h"

#include <stdlib.h>
#include <string.h>

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
    int mylen = (int)alen, *lens = calloc((size_t)t->size, sizeof(int)),
        *displs = calloc((size_t)t->size, sizeof(int));
    t->refs = calloc((size_t)t->size, sizeof(*t->refs));
    t->eps = calloc((size_t)t->size, sizeof(ucp_ep_h));
    ipu_status_t st = IPU_OK;
    char *all = NULL;
    if (!lens || !displs || !t->refs || !t->eps) {
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
    for (int i = 0; i < t->size; i++)
        displs[i] = i * maxlen;
    for (int i = 0; i < t->size; i++) {
        t->refs[i].t = t;
        t->refs[i].peer = i;
        ucp_ep_params_t ep = {
            .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                          UCP_EP_PARAM_FIELD_ERR_HANDLER,
            .address = (const ucp_address_t *)(all + displs[i]),
            .err_mode = UCP_ERR_HANDLING_MODE_PEER,
            .err_handler = {.cb = on_peer_error, .arg = &t->refs[i]},
        };
        if ((s = ucp_ep_create(t->worker, &ep, &t->eps[i])) != UCS_OK) {
            st = ucx_error("endpoint creation", s);
            goto out;
        }
    }
out:
    ucp_worker_release_address(t->worker, addr);
    free(all);
    free(lens);
    free(displs);
    return st;
}

static void ucx_close(ipu_transport_t *t)
{
    if (t->eps) {
        for (int i = 0; i < t->size; i++) {
            if (t->eps[i] == NULL)
                continue;
            ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                     .flags = t->failed[i] || t->force_close[i]
                                                  ? UCP_EP_CLOSE_FLAG_FORCE : 0};
            void *r = ucp_ep_close_nbx(t->eps[i], &p);
            /* bounded: a peer that vanished must not hold us */
            for (int spin = 0; UCS_PTR_IS_PTR(r) && spin < 2000000; spin++) {
                ucp_worker_progress(t->worker);
                if (ucp_request_check_status(r) != UCS_INPROGRESS)
                    break;
            }
            if (UCS_PTR_IS_PTR(r))
                ucp_request_free(r);
        }
        free(t->eps);
    }
    free(t->refs);
    if (t->worker)
        ucp_worker_destroy(t->worker);
    if (t->ctx)
        ucp_cleanup(t->ctx);
}

static ipu_status_t check_length(const ipu_treq_t *r)
{
    if (r->is_recv && r->info.length != r->len)
        return ipu_error(IPU_ERR_TRANSPORT, "message from rank %d has %zu bytes, expected %zu",
                         r->peer, r->info.length, r->len);
    return IPU_OK;
}

static ipu_status_t started(ipu_treq_t *r, ucs_status_ptr_t p, const char *what)
{
    if (p == NULL) { /* a send completed at once */
        r->done = 1;
        return IPU_OK;
    }
    if (UCS_PTR_IS_ERR(p))
        return ucx_error(what, UCS_PTR_STATUS(p));
    r->ucx = p;
    return IPU_OK;
}

static ipu_status_t ucx_isend(ipu_transport_t *t, ipu_treq_t *r, uint64_t tag, const void *buf)
{
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE, .datatype = ucp_dt_make_contig(1)};
    uint64_t utag = ((uint64_t)t->rank << SRC_SHIFT) | tag;
    return started(r, ucp_tag_send_nbx(t->eps[r->peer], buf, r->len, utag, &p), "send");
}

static ipu_status_t ucx_irecv(ipu_transport_t *t, ipu_treq_t *r, uint64_t tag, void *buf)
{
    /* always a request, so ucp_tag_recv_request_test reports the length
     * (UCX 1.13 leaves recv_info unset on immediate completion) */
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
                             .datatype = ucp_dt_make_contig(1)};
    uint64_t utag = ((uint64_t)r->peer << SRC_SHIFT) | tag;
    return started(r, ucp_tag_recv_nbx(t->worker, buf, r->len, utag, FULL_MASK, &p), "receive");
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
    if (s == UCS_OK)
        return check_length(r);
    if (s != UCS_OK) {
        t->failed[r->peer] = 1;
        t->fail_reason[r->peer] = s;
        return ipu_error(IPU_ERR_TRANSPORT, "lost rank %d on host %s (%s); the job cannot continue",
                         r->peer, t->hosts[r->peer], ucs_status_string(s));
    }
    return IPU_OK;
}

static void ucx_cancel(ipu_transport_t *t, ipu_treq_t *r)
{
    if (r->ucx == NULL)
        return;
    /* an unmatched receive ends at once (UCS_ERR_CANCELED), one whose data
     * is arriving when that ends; UCX cannot cancel a send */
    ucp_request_cancel(t->worker, r->ucx);
    int spins = r->is_recv ? 1000000 : 10000;
    for (int spin = 0; spin < spins && ucp_request_check_status(r->ucx) == UCS_INPROGRESS; spin++)
        ucp_worker_progress(t->worker);
    if (ucp_request_check_status(r->ucx) == UCS_INPROGRESS)
        /* still in flight to a peer that does not take it: its endpoint is
         * closed by force at ucx_close, which ends the request (a graceful
         * close would wait for it, and destroying the worker with it
         * pending fails UCX's assertion ucp_ep.c "proto_reqs"). The peer
         * is not marked failed: a libgcl communicator that timed out is
         * destroyed, and the others go on with that peer */
        t->force_close[r->peer] = 1;
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
