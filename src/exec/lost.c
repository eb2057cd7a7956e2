#include "exec/lost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ipu_lost {
    ipu_transport_t *t;
    int rank, size;
    int32_t *in;         /* size: the rank each peer says was lost */
    ipu_treq_t **rreq;   /* size: receives still posted (NULL: done or dropped) */
    int heard, lost, from; /* a notice: rank lost, rank that sent it */
    int next_peer;       /* ipu_lost_poll tests a few receives per call, from here */
    double next_poll;
};

ipu_status_t ipu_lost_open(ipu_transport_t *t, ipu_lost_t **out)
{
    *out = NULL;
    /* the MPI back end folds tags into MPI_TAG_UB, where the reserved tag
     * would meet data tags; a lost rank ends an MPI job anyway */
    if (strcmp(ipu_transport_kind_name(t), "mpi") == 0)
        return IPU_OK;
    ipu_lost_t *l = calloc(1, sizeof(*l));
    int n = ipu_transport_size(t);
    if (l == NULL || (l->in = calloc((size_t)n, sizeof(int32_t))) == NULL ||
        (l->rreq = calloc((size_t)n, sizeof(ipu_treq_t *))) == NULL) {
        ipu_lost_close(l);
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    }
    l->t = t;
    l->rank = ipu_transport_rank(t);
    l->size = n;
    for (int p = 0; p < n; p++) {
        if (p == l->rank)
            continue;
        ipu_status_t st = ipu_transport_irecv(t, p, IPU_LOST_TAG, &l->in[p], sizeof(int32_t), &l->rreq[p]);
        if (st != IPU_OK) {
            ipu_lost_close(l);
            return st;
        }
    }
    *out = l;
    return IPU_OK;
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
    double t = MPI_Wtime();
    if (!l->heard && t < l->next_poll)
        return IPU_OK;
    l->next_poll = t + 0.01;
    if (!check(l, 8)) /* a notice is seen within size / 8 x 10 ms */
        return IPU_OK;
    return ipu_error(IPU_ERR_TRANSPORT, "lost rank %d on host %s (reported by rank %d); the job cannot "
                     "continue", l->lost, ipu_transport_host(l->t, l->lost), l->from);
}

ipu_status_t ipu_lost_tell(ipu_lost_t *l, ipu_status_t st)
{
    if (l == NULL || st != IPU_ERR_TRANSPORT)
        return st;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ipu_error_message());
    int failed = -1;
    for (int p = 0; p < l->size && failed < 0; p++)
        if (p != l->rank && ipu_transport_peer_failed(l->t, p))
            failed = p;
    if (failed < 0 && !l->heard)
        return st; /* not a lost peer */
    /* the peer that failed may have told of an earlier loss: give its
     * notice a moment to be seen */
    for (double end = MPI_Wtime() + 0.05; failed >= 0 && !check(l, l->size) && MPI_Wtime() < end;)
        ipu_transport_progress(l->t);
    int32_t lost = l->heard ? l->lost : failed;
    if (l->heard && failed >= 0 && failed != l->lost)
        snprintf(msg, sizeof msg, "lost rank %d on host %s (reported by rank %d; rank %d is gone too); "
                 "the job cannot continue", l->lost, ipu_transport_host(l->t, l->lost), l->from, failed);
    ipu_treq_t **sreq = calloc((size_t)l->size, sizeof(ipu_treq_t *));
    int left = 0;
    for (int p = 0; sreq && p < l->size; p++)
        if (p != l->rank && p != lost && !ipu_transport_peer_failed(l->t, p) &&
            ipu_transport_isend(l->t, p, IPU_LOST_TAG, &lost, sizeof lost, &sreq[p]) == IPU_OK)
            left++;
    /* stay reachable a while: the others poll for notices every 10 ms while
     * they run, and a peer that closed its connections at once could leave
     * its notice unread behind the reset */
    for (double end = MPI_Wtime() + IPU_LOST_LINGER_S; MPI_Wtime() < end;) {
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
    return ipu_error(st, "%s", msg);
}

void ipu_lost_close(ipu_lost_t *l)
{
    if (l == NULL)
        return;
    for (int p = 0; l->rreq && p < l->size; p++)
        ipu_transport_cancel(l->t, l->rreq[p]);
    free(l->rreq);
    free(l->in);
    free(l);
}
