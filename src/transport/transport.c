/* Transport front end: argument checks, deadlines, peer-failure reporting. */
#include "transport/impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>

void ipu_transport_params_init(ipu_transport_params_t *p)
{
    p->kind = IPU_TRANSPORT_UCX;
    p->timeout_s = 30;
}

static int mpi_allgather(const void *send, void *recv, size_t len, void *arg)
{
    return MPI_Allgather(send, (int)len, MPI_BYTE, recv, (int)len, MPI_BYTE, *(MPI_Comm *)arg) ==
                   MPI_SUCCESS ? 0 : -1;
}

static ipu_status_t open_common(ipu_transport_t *t, ipu_transport_t **out)
{
    t->rank = t->boot.rank;
    t->size = t->boot.size;
    t->hosts = calloc((size_t)t->size, sizeof(*t->hosts));
    t->failed = calloc((size_t)t->size, sizeof(int));
    t->fail_reason = calloc((size_t)t->size, sizeof(ucs_status_t));
    t->resets = calloc((size_t)t->size, sizeof(int));
    if (!t->hosts || !t->failed || !t->fail_reason || !t->resets) {
        ipu_transport_close(t);
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory opening the transport");
    }
    char host[64] = {0};
    gethostname(host, sizeof(host) - 1);
    if (t->boot.allgather(host, t->hosts, 64, t->boot.arg) != 0) {
        ipu_transport_close(t);
        return ipu_error(IPU_ERR_TRANSPORT, "the bootstrap allgather failed");
    }
    ipu_status_t st = t->ops->open(t);
    if (st != IPU_OK) {
        ipu_transport_close(t);
        return st;
    }
    *out = t;
    return IPU_OK;
}

ipu_status_t ipu_transport_open(MPI_Comm comm, const ipu_transport_params_t *p, ipu_transport_t **out)
{
    ipu_transport_t *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory opening the transport");
    t->params = *p;
    if (t->params.timeout_s <= 0)
        t->params.timeout_s = 30;
    t->ops = p->kind == IPU_TRANSPORT_MPI ? &ipu_transport_mpi_ops : &ipu_transport_ucx_ops;
    MPI_Comm_dup(comm, &t->comm);
    MPI_Comm_rank(t->comm, &t->boot.rank);
    MPI_Comm_size(t->comm, &t->boot.size);
    t->boot.allgather = mpi_allgather;
    t->boot.arg = &t->comm;
    return open_common(t, out);
}

ipu_status_t ipu_transport_open_oob(const ipu_bootstrap_t *b, const ipu_transport_params_t *p,
                                    ipu_transport_t **out)
{
    if (p->kind != IPU_TRANSPORT_UCX)
        return ipu_error(IPU_ERR_INVALID_ARG, "the MPI transport needs an MPI communicator");
    ipu_transport_t *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory opening the transport");
    t->params = *p;
    if (t->params.timeout_s <= 0)
        t->params.timeout_s = 30;
    t->ops = &ipu_transport_ucx_ops;
    t->comm = MPI_COMM_NULL;
    t->boot = *b;
    return open_common(t, out);
}

void ipu_transport_close(ipu_transport_t *t)
{
    if (t == NULL)
        return;
    if (t->ops)
        t->ops->close(t);
    if (t->comm != MPI_COMM_NULL && t->comm != 0)
        MPI_Comm_free(&t->comm);
    t->comm = MPI_COMM_NULL;
    free(t->hosts);
    free(t->failed);
    free(t->fail_reason);
    free(t->resets);
    free(t);
}

int ipu_transport_rank(const ipu_transport_t *t) { return t->rank; }
int ipu_transport_size(const ipu_transport_t *t) { return t->size; }
const char *ipu_transport_kind_name(const ipu_transport_t *t) { return t->ops->name; }

const char *ipu_transport_host(const ipu_transport_t *t, int rank)
{
    return rank >= 0 && rank < t->size ? t->hosts[rank] : "?";
}

int ipu_transport_peer_failed(const ipu_transport_t *t, int peer)
{
    return peer >= 0 && peer < t->size && t->failed[peer];
}

static ipu_status_t peer_error(const ipu_transport_t *t, int peer)
{
    return ipu_error(IPU_ERR_TRANSPORT, "lost rank %d on host %s (%s); the job cannot continue",
                     peer, t->hosts[peer],
                     t->fail_reason[peer] != UCS_OK ? ucs_status_string(t->fail_reason[peer])
                                                    : "connection failed");
}

static ipu_status_t post(ipu_transport_t *t, int peer, uint64_t tag, size_t len, int is_recv,
                         ipu_treq_t **req)
{
    if (peer < 0 || peer >= t->size || tag > IPU_TRANSPORT_TAG_MAX)
        return ipu_error(IPU_ERR_INVALID_ARG, "transport: bad peer %d or tag %llu", peer,
                         (unsigned long long)tag);
    if (t->failed[peer])
        return peer_error(t, peer);
    ipu_treq_t *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory posting a transfer");
    r->peer = peer;
    r->is_recv = is_recv;
    r->len = len;
    r->tag = tag;
    r->mpi = MPI_REQUEST_NULL;
    *req = r;
    return IPU_OK;
}

ipu_status_t ipu_transport_isend(ipu_transport_t *t, int peer, uint64_t tag,
                                 const void *buf, size_t len, ipu_treq_t **req)
{
    ipu_status_t st = post(t, peer, tag, len, 0, req);
    if (st == IPU_OK && (st = t->ops->isend(t, *req, tag, buf)) != IPU_OK) {
        free(*req);
        *req = NULL;
    }
    return st;
}

ipu_status_t ipu_transport_irecv(ipu_transport_t *t, int peer, uint64_t tag,
                                 void *buf, size_t len, ipu_treq_t **req)
{
    ipu_status_t st = post(t, peer, tag, len, 1, req);
    if (st == IPU_OK && (st = t->ops->irecv(t, *req, tag, buf)) != IPU_OK) {
        free(*req);
        *req = NULL;
    }
    return st;
}

ipu_status_t ipu_transport_test(ipu_transport_t *t, ipu_treq_t *r, int *done)
{
    return ipu_transport_test_len(t, r, done, NULL);
}

ipu_status_t ipu_transport_test_len(ipu_transport_t *t, ipu_treq_t *r, int *done, size_t *received)
{
    ipu_status_t st = t->ops->test(t, r);
    *done = 0;
    if (received)
        *received = r->received;
    if (st == IPU_OK && !r->done && t->failed[r->peer])
        st = peer_error(t, r->peer);
    if (st != IPU_OK) {
        ipu_transport_cancel(t, r);
        return st;
    }
    if (r->done) {
        *done = 1;
        free(r);
    }
    return IPU_OK;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

ipu_status_t ipu_transport_wait(ipu_transport_t *t, ipu_treq_t *r)
{
    double deadline = now_s() + t->params.timeout_s;
    int peer = r->peer, is_recv = r->is_recv;
    for (unsigned spin = 0;; spin++) {
        int done;
        ipu_status_t st = ipu_transport_test(t, r, &done);
        if (st != IPU_OK || done)
            return st;
        if ((spin & 1023) == 1023) {
            if (now_s() > deadline) {
                ipu_transport_cancel(t, r);
                return ipu_error(IPU_ERR_TIMED_OUT, "no %s rank %d on host %s for %g s; "
                                 "it may have died or be stuck",
                                 is_recv ? "data from" : "progress sending to", peer,
                                 t->hosts[peer], t->params.timeout_s);
            }
            sched_yield();
        }
    }
}

void ipu_transport_cancel(ipu_transport_t *t, ipu_treq_t *r)
{
    if (r == NULL)
        return;
    if (!r->done)
        t->ops->cancel(t, r);
    free(r);
}

void ipu_transport_progress(ipu_transport_t *t)
{
    t->ops->progress(t);
}

void ipu_transport_peer_info(const ipu_transport_t *t, int peer, char *buf, size_t len)
{
    buf[0] = '\0';
    if (t->ops != &ipu_transport_ucx_ops || peer < 0 || peer >= t->size || t->eps == NULL) {
        snprintf(buf, len, "%s", t->ops->name);
        return;
    }
    /* UCX prints each lane as "lane[i]:  k:tl/dev md[..] ...": keep tl/dev */
    char *text = NULL;
    size_t tlen = 0;
    FILE *f = open_memstream(&text, &tlen);
    if (f == NULL)
        return;
    ucp_ep_print_info(t->eps[peer], f);
    fclose(f);
    size_t off = 0;
    for (char *p = text; p && (p = strstr(p, "lane[")) != NULL; p++) {
        char *colon = strstr(p, ":  ");
        if (colon == NULL)
            break;
        char name[64];
        if (sscanf(colon + 3, "%*d:%63s", name) != 1)
            continue;
        if (strstr(buf, name) == NULL && off < len)
            off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "," : "", name);
    }
    free(text);
}
