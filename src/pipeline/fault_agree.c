/* Agreement steps that survive a rank that dies (fault.h): rank 0 collects
 * every rank's report and answers with the verdict, each wait bounded by
 * time and by the peers' liveness. */
#include "pipeline/fault.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    int32_t status;
    char msg[IPU_AGREE_MSG];
    char host[MPI_MAX_PROCESSOR_NAME];
} report_t;

typedef struct {
    int32_t status, lost; /* lost: the rank lost (-1: none) */
    char msg[IPU_AGREE_MSG];
} verdict_t;

static void nap(void)
{
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
}

static void drop(MPI_Request *r, int cancel)
{
    if (*r == MPI_REQUEST_NULL)
        return;
    if (cancel)
        MPI_Cancel(r);
    MPI_Request_free(r);
}

/* The verdict's status and message become this rank's. */
static ipu_status_t apply(const verdict_t *v, int from_root, int *lost)
{
    if (v->status == IPU_OK)
        return IPU_OK;
    if (v->lost >= 0)
        *lost = 1;
    char msg[IPU_AGREE_MSG + 32];
    snprintf(msg, sizeof msg, "%.*s%s", IPU_AGREE_MSG - 1, v->msg,
             from_root && v->lost >= 0 ? " (reported by rank 0)" : "");
    return ipu_error((ipu_status_t)v->status, "%s", msg);
}

/* Rank 0 waits for every rank's report (rq[r]); a rank found lost, or
 * silent past the timeout, sets v's verdict. Returns poll's error, else
 * IPU_OK. */
static ipu_status_t root_wait(int size, const ipu_agree_params_t *p, MPI_Request *rq, verdict_t *v)
{
    ipu_status_t pst = IPU_OK;
    double t0 = MPI_Wtime();
    for (;;) {
        int missing = -1;
        for (int r = 1; r < size; r++) {
            int flag = 1;
            if (rq[r] != MPI_REQUEST_NULL)
                MPI_Test(&rq[r], &flag, MPI_STATUS_IGNORE);
            if (!flag && missing < 0)
                missing = r;
        }
        if (missing < 0)
            break;
        if (p->poll && (pst = p->poll(p->arg)) != IPU_OK)
            break;
        double waited = MPI_Wtime() - t0;
        int gone = -1;
        for (int r = missing; p->alive && r < size && gone < 0; r++)
            if (rq[r] != MPI_REQUEST_NULL && p->alive(p->arg, r) < 0)
                gone = r;
        if (gone >= 0) {
            v->status = IPU_ERR_TRANSPORT;
            v->lost = gone;
            snprintf(v->msg, sizeof v->msg, "lost rank %d: it stopped answering while the ranks "
                     "agreed on %s; the job cannot continue", gone, p->step);
            break;
        }
        if (p->timeout_s > 0 && waited > p->timeout_s) {
            v->status = IPU_ERR_TIMED_OUT;
            v->lost = missing;
            snprintf(v->msg, sizeof v->msg, "lost rank %d: it did not report on %s within %g s; "
                     "it died or hangs (if it is only slow, raise --timeout)", missing, p->step,
                     p->timeout_s);
            break;
        }
        nap();
    }
    return pst;
}

/* The ranks' hosts from their reports: for each, the lowest rank on the
 * same one (rank 0's own name is filled in here). */
static void root_hosts(int size, char *reps, size_t rsz, int32_t *hid)
{
    int len = 0;
    MPI_Get_processor_name(((report_t *)(void *)reps)->host, &len);
    for (int r = 0; r < size; r++) {
        const report_t *rr = (const report_t *)(const void *)(reps + (size_t)r * rsz);
        hid[r] = r;
        for (int q = 0; q < r && hid[r] == r; q++)
            if (strncmp(((const report_t *)(const void *)(reps + (size_t)q * rsz))->host, rr->host,
                        sizeof rr->host) == 0)
                hid[r] = q;
    }
}

/* A report's bytes: the report, then the rank's values. */
static size_t report_bytes(const ipu_agree_params_t *p)
{
    return sizeof(report_t) + p->n_values * sizeof(uint32_t);
}

/* Answer every rank that reported with vbuf[0..vbytes); the sends may
 * outlive a dead receiver, so they are left to complete in the background
 * after 2 s. Returns 1 if one is still pending (vbuf must then stay). */
static int root_answer(MPI_Comm comm, int size, const ipu_agree_params_t *p, MPI_Request *rq,
                       char *vbuf, size_t vbytes)
{
    for (int r = 1; r < size; r++) {
        if (rq[r] != MPI_REQUEST_NULL) { /* never reported */
            drop(&rq[r], 1);
            continue;
        }
        MPI_Isend(vbuf, (int)vbytes, MPI_BYTE, r, IPU_AGREE_TAG, comm, &rq[r]);
    }
    for (double end = MPI_Wtime() + 2.0; MPI_Wtime() < end;) {
        int all = 1;
        for (int r = 1; r < size; r++) {
            int flag = 1;
            if (rq[r] != MPI_REQUEST_NULL)
                MPI_Test(&rq[r], &flag, MPI_STATUS_IGNORE);
            all &= flag;
        }
        if (all)
            break;
        if (p->poll)
            (void)p->poll(p->arg); /* answer pings while they take it */
        nap();
    }
    int pending = 0;
    for (int r = 1; r < size; r++) {
        pending |= rq[r] != MPI_REQUEST_NULL;
        drop(&rq[r], 0);
    }
    return pending;
}

static ipu_status_t root(MPI_Comm comm, int size, ipu_status_t st, const ipu_agree_params_t *p,
                         void *payload, size_t payload_bytes, int *host_ids, int *lost)
{
    size_t rsz = report_bytes(p), abytes = (size_t)size * p->n_values * sizeof(uint32_t);
    char *reps = calloc((size_t)size, rsz);
#define REP(r) ((report_t *)(void *)(reps + (size_t)(r) * rsz))
    MPI_Request *rq = calloc((size_t)size, sizeof(MPI_Request));
    size_t hbytes = (size_t)size * sizeof(int32_t);
    char *vbuf = calloc(1, sizeof(verdict_t) + hbytes + abytes + payload_bytes);
    if (!reps || !rq || !vbuf) {
        free(reps); free(rq); free(vbuf);
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    }
    if (p->n_values)
        memcpy(REP(0) + 1, p->values, p->n_values * sizeof(uint32_t));
    /* "rank 0 is here": the others time rank 0's verdict from this */
    static const int32_t here = 1;
    for (int r = 1; r < size; r++) {
        MPI_Request nq;
        MPI_Isend(&here, 1, MPI_INT32_T, r, IPU_AGREE_TAG, comm, &nq);
        MPI_Request_free(&nq);
        MPI_Irecv(REP(r), (int)rsz, MPI_BYTE, r, IPU_AGREE_TAG, comm, &rq[r]);
    }
    verdict_t *v = (verdict_t *)(void *)vbuf;
    v->status = IPU_OK;
    v->lost = -1;
    ipu_status_t pst = root_wait(size, p, rq, v);
    if (pst != IPU_OK) { /* a notice: the caller stops; the others hear it too */
        for (int r = 1; r < size; r++)
            drop(&rq[r], 1);
        free(reps); free(rq); free(vbuf);
        *lost = 1;
        return pst;
    }
    /* the lowest failing rank speaks for all */
    if (v->lost < 0 && st != IPU_OK) {
        v->status = st;
        snprintf(v->msg, sizeof v->msg, "%s", ipu_error_message());
    }
    for (int r = 1; r < size && v->lost < 0 && v->status == IPU_OK; r++)
        if (REP(r)->status != IPU_OK) {
            v->status = REP(r)->status;
            memcpy(v->msg, REP(r)->msg, sizeof v->msg);
            v->msg[sizeof v->msg - 1] = '\0';
        }
    int32_t *hid = (int32_t *)(void *)(vbuf + sizeof(verdict_t));
    root_hosts(size, reps, rsz, hid);
    if (host_ids)
        memcpy(host_ids, hid, hbytes);
    /* every rank's values, then rank 0's payload */
    char *vals = vbuf + sizeof(verdict_t) + hbytes;
    for (int r = 0; r < size && p->n_values; r++)
        memcpy(vals + (size_t)r * p->n_values * sizeof(uint32_t), REP(r) + 1,
               p->n_values * sizeof(uint32_t));
    if (v->status == IPU_OK && p->n_values && p->all)
        memcpy(p->all, vals, abytes);
    size_t vbytes = sizeof(verdict_t) + hbytes + abytes + (v->status == IPU_OK ? payload_bytes : 0);
    if (v->status == IPU_OK && payload_bytes)
        memcpy(vals + abytes, payload, payload_bytes);
    int pending = root_answer(comm, size, p, rq, vbuf, vbytes);
    ipu_status_t out = st != IPU_OK && v->lost < 0 ? st : apply(v, 0, lost);
#undef REP
    free(reps); free(rq);
    if (!pending) /* else a stalled rank may still take it: the buffer stays */
        free(vbuf);
    return out;
}

static ipu_status_t member(MPI_Comm comm, int size, ipu_status_t st, const ipu_agree_params_t *p,
                           void *payload, size_t payload_bytes, int *host_ids, int *lost)
{
    /* on the heap: a send or receive given up on may still complete, so
     * its buffers then stay allocated */
    size_t hbytes = (size_t)size * sizeof(int32_t);
    size_t rsz = report_bytes(p), abytes = (size_t)size * p->n_values * sizeof(uint32_t);
    report_t *rep = calloc(1, rsz);
    int32_t *here = calloc(1, sizeof(int32_t));
    char *vbuf = calloc(1, sizeof(verdict_t) + hbytes + abytes + payload_bytes);
    if (!rep || !here || !vbuf) {
        free(rep); free(here); free(vbuf);
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    }
    rep->status = st;
    if (st != IPU_OK)
        snprintf(rep->msg, sizeof rep->msg, "%s", ipu_error_message());
    int len = 0;
    MPI_Get_processor_name(rep->host, &len);
    if (p->n_values)
        memcpy(rep + 1, p->values, p->n_values * sizeof(uint32_t));
    MPI_Request sq, hq, rq;
    MPI_Isend(rep, (int)rsz, MPI_BYTE, 0, IPU_AGREE_TAG, comm, &sq);
    MPI_Irecv(here, 1, MPI_INT32_T, 0, IPU_AGREE_TAG, comm, &hq);
    MPI_Irecv(vbuf, (int)(sizeof(verdict_t) + hbytes + abytes + payload_bytes), MPI_BYTE, 0,
              IPU_AGREE_TAG, comm, &rq);
    /* until rank 0 is here: timeout + its own work before the step; then
     * timeout + a margin for its verdict (it waits timeout for the last) */
    double t0 = MPI_Wtime(), limit = p->timeout_s > 0 ? p->timeout_s + p->root_extra_s : 0;
    ipu_status_t out = IPU_OK;
    for (;;) {
        int flag = 0;
        if (hq != MPI_REQUEST_NULL) {
            MPI_Test(&hq, &flag, MPI_STATUS_IGNORE);
            if (flag) { /* MPI_Test set hq to MPI_REQUEST_NULL */
                t0 = MPI_Wtime();
                limit = p->timeout_s > 0 ? p->timeout_s + 5 : 0;
            }
        }
        flag = 0;
        MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
        if (flag)
            break;
        if (p->poll && (out = p->poll(p->arg)) != IPU_OK) {
            *lost = 1;
            break;
        }
        if (p->alive && p->alive(p->arg, 0) < 0) {
            *lost = 1;
            out = ipu_error(IPU_ERR_TRANSPORT, "lost rank 0: it stopped answering while the ranks "
                            "agreed on %s; the job cannot continue", p->step);
            break;
        }
        if (limit > 0 && MPI_Wtime() - t0 > limit) {
            *lost = 1;
            out = ipu_error(IPU_ERR_TIMED_OUT, "lost rank 0: it did not answer on %s within %g s "
                            "(--timeout %g s and a margin for its own part); it died or hangs (if it is "
                            "only slow, raise --timeout)", p->step, limit, p->timeout_s);
            break;
        }
        nap();
    }
    if (*lost) { /* cancelled receives may still have matched: buffers stay */
        drop(&hq, 1);
        drop(&rq, 1);
        drop(&sq, 0);
        return out;
    }
    MPI_Wait(&sq, MPI_STATUS_IGNORE); /* rank 0 took it: it answered */
    MPI_Wait(&hq, MPI_STATUS_IGNORE); /* sent before the verdict: here */
    free(rep);
    free(here);
    const verdict_t *v = (const verdict_t *)(const void *)vbuf;
    if (host_ids)
        memcpy(host_ids, vbuf + sizeof(verdict_t), hbytes);
    if (v->status == IPU_OK && p->n_values && p->all)
        memcpy(p->all, vbuf + sizeof(verdict_t) + hbytes, abytes);
    if (v->status == IPU_OK && payload_bytes)
        memcpy(payload, vbuf + sizeof(verdict_t) + hbytes + abytes, payload_bytes);
    out = st != IPU_OK && v->lost < 0 ? st : apply(v, 1, lost);
    free(vbuf);
    return out;
}

ipu_status_t ipu_agree(MPI_Comm comm, ipu_status_t st, const ipu_agree_params_t *p, void *payload,
                       size_t payload_bytes, int *host_ids, int *lost)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    *lost = 0;
    if (host_ids)
        host_ids[0] = 0;
    if (size == 1) {
        if (st == IPU_OK && p->n_values && p->all)
            memcpy(p->all, p->values, p->n_values * sizeof(uint32_t));
        return st;
    }
    return rank == 0 ? root(comm, size, st, p, payload, payload_bytes, host_ids, lost)
                     : member(comm, size, st, p, payload, payload_bytes, host_ids, lost);
}
