#include "transport/lost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* seconds, monotonic (libgcl opens this without MPI: gcl_init_oob) */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct ipu_lost {
    ipu_transport_t *t;
    int rank, size;
    int32_t *in;         /* size: the rank each peer says was lost */
    ipu_treq_t **rreq;   /* size: receives still posted (NULL: done or dropped) */
    int heard, lost, from; /* a notice: rank lost, rank that sent it */
    int next_peer;       /* ipu_lost_poll tests a few receives per call, from here */
    double next_poll;
    /* liveness (ipu_lost_alive): per peer */
    int32_t *ping_in, *pong_in; /* receive buffers */
    ipu_treq_t **ping_rreq;     /* posted receive of the peer's pings */
    ipu_treq_t **pong_rreq;     /* receive of its answer to our ping */
    ipu_treq_t **ping_sreq, **pong_sreq;
    double *ping_at;            /* our ping in flight since (0: none) */
    double *alive_at;           /* its last answer */
    int32_t token;              /* what pings and pongs carry */
    int dead;                   /* a peer that stopped answering (-1: none) */
    double ping_s;              /* an unanswered ping this old: lost */
    int no_pings;               /* notices only (ipu_lost_open's ping_s < 0) */
};

ipu_status_t ipu_lost_open(ipu_transport_t *t, double ping_s, ipu_lost_t **out)
{
    *out = NULL;
    ipu_lost_t *l = calloc(1, sizeof(*l));
    int n = ipu_transport_size(t);
    size_t ni = (size_t)n * sizeof(int32_t), nr = (size_t)n * sizeof(ipu_treq_t *);
    if (l == NULL || !(l->in = calloc(1, ni)) || !(l->ping_in = calloc(1, ni)) ||
        !(l->pong_in = calloc(1, ni)) || !(l->rreq = calloc(1, nr)) || !(l->ping_rreq = calloc(1, nr)) ||
        !(l->pong_rreq = calloc(1, nr)) || !(l->ping_sreq = calloc(1, nr)) ||
        !(l->pong_sreq = calloc(1, nr)) || !(l->ping_at = calloc((size_t)n, sizeof(double))) ||
        !(l->alive_at = calloc((size_t)n, sizeof(double)))) {
        ipu_lost_close(l);
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    }
    l->t = t;
    l->rank = ipu_transport_rank(t);
    l->size = n;
    l->dead = -1;
    l->ping_s = ping_s > 0 ? ping_s : IPU_LOST_PING_S;
    l->no_pings = ping_s < 0;
    for (int p = 0; p < n; p++) {
        if (p == l->rank)
            continue;
        ipu_status_t st = ipu_transport_irecv(t, p, IPU_LOST_TAG, &l->in[p], sizeof(int32_t), &l->rreq[p]);
        if (st == IPU_OK && !l->no_pings)
            st = ipu_transport_irecv(t, p, IPU_PING_TAG, &l->ping_in[p], sizeof(int32_t), &l->ping_rreq[p]);
        if (st != IPU_OK) {
            ipu_lost_close(l);
            return st;
        }
    }
    *out = l;
    return IPU_OK;
}

/* A send still in flight is tested; 1 when it is done (or failed). */
static int send_done(ipu_lost_t *l, ipu_treq_t **r)
{
    int done = 1;
    if (*r && ipu_transport_test(l->t, *r, &done) != IPU_OK)
        done = 1;
    if (done)
        *r = NULL;
    return done;
}

/* A 4-byte send (recv 0) or receive (recv 1) of buf with peer p on tag;
 * *r NULL when it could not be posted (the peer failed). */
static int post(ipu_lost_t *l, int recv, int p, uint64_t tag, int32_t *buf, ipu_treq_t **r)
{
    ipu_status_t st = recv ? ipu_transport_irecv(l->t, p, tag, buf, sizeof(int32_t), r)
                           : ipu_transport_isend(l->t, p, tag, buf, sizeof(int32_t), r);
    if (st != IPU_OK)
        *r = NULL;
    return st == IPU_OK;
}

/* Answer the pings that came (one answer in flight per peer). */
static void answer_pings(ipu_lost_t *l)
{
    for (int p = 0; p < l->size; p++) {
        int done = 0;
        if (l->ping_rreq[p] == NULL || !send_done(l, &l->pong_sreq[p]))
            continue;
        if (ipu_transport_test(l->t, l->ping_rreq[p], &done) != IPU_OK) {
            l->ping_rreq[p] = NULL; /* that peer failed */
            continue;
        }
        if (!done)
            continue;
        l->ping_rreq[p] = NULL;
        post(l, 0, p, IPU_PONG_TAG, &l->token, &l->pong_sreq[p]);
        post(l, 1, p, IPU_PING_TAG, &l->ping_in[p], &l->ping_rreq[p]);
    }
}

int ipu_lost_alive(ipu_lost_t *l, int peer)
{
    if (l == NULL || l->no_pings || peer == l->rank || peer < 0 || peer >= l->size)
        return 1;
    if (ipu_transport_peer_failed(l->t, peer) || peer == l->dead)
        return -1;
    double t = now_s();
    answer_pings(l);
    if (l->ping_at[peer] == 0) {
        if (t - l->alive_at[peer] < IPU_LOST_PING_EVERY_S)
            return 1; /* answered a moment ago */
        if (!send_done(l, &l->ping_sreq[peer]) || l->pong_rreq[peer] != NULL)
            return 0; /* the previous ping is still on its way */
        if (!post(l, 1, peer, IPU_PONG_TAG, &l->pong_in[peer], &l->pong_rreq[peer]) ||
            !post(l, 0, peer, IPU_PING_TAG, &l->token, &l->ping_sreq[peer])) {
            l->dead = peer;
            return -1;
        }
        l->ping_at[peer] = t;
        return 0;
    }
    int done = 0;
    if (ipu_transport_test(l->t, l->pong_rreq[peer], &done) != IPU_OK) {
        l->pong_rreq[peer] = NULL;
        l->dead = peer;
        return -1;
    }
    if (done) {
        l->pong_rreq[peer] = NULL;
        l->ping_at[peer] = 0;
        l->alive_at[peer] = t;
        return 1;
    }
    if (t - l->ping_at[peer] > l->ping_s) {
        l->dead = peer;
        return -1;
    }
    return 0;
}

/* Test n of the receives (each test progresses the transport), going round
 * from l->next_peer; 1 when a notice is known. */
static int check(ipu_lost_t *l, int n)
{
    for (int i = 0; i < n && !l->heard; i++) {
        int p = l->next_peer;
        l->next_peer = (l->next_peer + 1) % l->size;
        if (l->rreq[p] == NULL)
            continue;
        int done = 0;
        if (ipu_transport_test(l->t, l->rreq[p], &done) != IPU_OK) {
            l->rreq[p] = NULL; /* that peer failed: its notice will not come */
            continue;
        }
        if (done) {
            l->rreq[p] = NULL;
            if (l->in[p] >= 0 && l->in[p] < l->size && l->in[p] != l->rank) {
                l->heard = 1;
                l->lost = l->in[p];
                l->from = p;
            }
        }
    }
    return l->heard;
}

ipu_status_t ipu_lost_poll(ipu_lost_t *l)
{
    if (l == NULL)
        return IPU_OK;
    double t = now_s();
    if (!l->heard && t < l->next_poll)
        return IPU_OK;
    l->next_poll = t + 0.01;
    answer_pings(l);
    if (!check(l, 8)) /* a notice is seen within size / 8 x 10 ms */
        return IPU_OK;
    return ipu_error(IPU_ERR_TRANSPORT, "lost rank %d on host %s (reported by rank %d); the job cannot "
                     "continue", l->lost, ipu_transport_host(l->t, l->lost), l->from);
}

/* Tell every other rank not known failed that rank lost was lost, and stay
 * reachable for IPU_LOST_LINGER_S. */
static void tell(ipu_lost_t *l, int32_t lost)
{
    ipu_treq_t **sreq = calloc((size_t)l->size, sizeof(ipu_treq_t *));
    int left = 0;
    for (int p = 0; sreq && p < l->size; p++)
        if (p != l->rank && p != lost && p != l->dead && !ipu_transport_peer_failed(l->t, p) &&
            ipu_transport_isend(l->t, p, IPU_LOST_TAG, &lost, sizeof lost, &sreq[p]) == IPU_OK)
            left++;
    /* stay reachable a while: the others poll for notices every 10 ms while
     * they run, and a peer that closed its connections at once could leave
     * its notice unread behind the reset */
    for (double end = now_s() + IPU_LOST_LINGER_S; now_s() < end;) {
        ipu_transport_progress(l->t);
        for (int p = 0; left > 0 && p < l->size; p++) {
            int done = 0;
            if (sreq[p] && (ipu_transport_test(l->t, sreq[p], &done) != IPU_OK || done)) {
                sreq[p] = NULL;
                left--;
            }
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    for (int p = 0; sreq && p < l->size; p++)
        ipu_transport_cancel(l->t, sreq[p]);
    free(sreq);
}

ipu_status_t ipu_lost_tell(ipu_lost_t *l, ipu_status_t st)
{
    if (l == NULL || st != IPU_ERR_TRANSPORT)
        return st;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ipu_error_message());
    int failed = -1;
    for (int p = 0; p < l->size && failed < 0; p++)
        if (p != l->rank && (ipu_transport_peer_failed(l->t, p) || p == l->dead))
            failed = p;
    if (failed < 0 && !l->heard)
        return st; /* not a lost peer */
    /* the peer that failed may have told of an earlier loss: give its
     * notice a moment to be seen */
    for (double end = now_s() + 0.05; failed >= 0 && !check(l, l->size) && now_s() < end;)
        ipu_transport_progress(l->t);
    int32_t lost = l->heard ? l->lost : failed;
    if (l->heard && failed >= 0 && failed != l->lost)
        snprintf(msg, sizeof msg, "lost rank %d on host %s (reported by rank %d; rank %d is gone too); "
                 "the job cannot continue", l->lost, ipu_transport_host(l->t, l->lost), l->from, failed);
    tell(l, lost);
    return ipu_error(st, "%s", msg);
}

void ipu_lost_tell_of(ipu_lost_t *l, int rank)
{
    if (l == NULL || rank < 0 || rank >= l->size || rank == l->rank)
        return;
    tell(l, (int32_t)(l->heard ? l->lost : rank));
}

void ipu_lost_close(ipu_lost_t *l)
{
    if (l == NULL)
        return;
    ipu_treq_t **all[] = {l->rreq, l->ping_rreq, l->pong_rreq, l->ping_sreq, l->pong_sreq};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        for (int p = 0; all[k] && p < l->size; p++)
            ipu_transport_cancel(l->t, all[k][p]);
        free(all[k]);
    }
    free(l->in);
    free(l->ping_in);
    free(l->pong_in);
    free(l->ping_at);
    free(l->alive_at);
    free(l);
}
