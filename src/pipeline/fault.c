/* A pipelined run's lost-rank notices, liveness pings and agreement steps
 * (over transport/lost.h and fault_agree.c), and the exit of a rank that
 * failed alone (fault.h). */
#include "pipeline/fault.h"

#include "common/settings.h"
#include "transport/lost.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

double ipu_fault_ping_s(double timeout_s)
{
    double floor_s = timeout_s / 2.5 < IPU_LOST_PING_S ? timeout_s / 2.5 : IPU_LOST_PING_S;
    return timeout_s / 4 > floor_s ? timeout_s / 4 : floor_s;
}

double ipu_fault_suspect_s(double timeout_s)
{
    return timeout_s / 5 < IPU_FAULT_SUSPECT_S ? timeout_s / 5 : IPU_FAULT_SUSPECT_S;
}

ipu_status_t ipu_fault_open_notices(ipu_fault_t *f, ipu_transport_t *tr)
{
    return ipu_lost_open(tr, ipu_fault_ping_s(f->timeout_s), &f->lost);
}

ipu_status_t ipu_fault_poll(ipu_fault_t *f)
{
    return ipu_lost_poll(f->lost);
}

int ipu_fault_alive(ipu_fault_t *f, int peer)
{
    return ipu_lost_alive(f->lost, peer);
}

ipu_status_t ipu_fault_tell(ipu_fault_t *f, ipu_status_t st)
{
    return ipu_lost_tell(f->lost, st);
}

void ipu_fault_close(ipu_fault_t *f)
{
    ipu_lost_close(f->lost);
    f->lost = NULL;
}

/* Liveness callbacks of the agreement steps. */
static ipu_status_t agree_poll(void *arg)
{
    ipu_fault_t *f = arg;
    if (f->tr)
        ipu_transport_progress(f->tr);
    return ipu_lost_poll(f->lost);
}

static int agree_alive(void *arg, int peer)
{
    ipu_fault_t *f = arg;
    return f->lost ? ipu_lost_alive(f->lost, peer) : 0;
}

ipu_status_t ipu_fault_agree(ipu_fault_t *f, MPI_Comm comm, ipu_status_t st, const char *step,
                             int timeouts, int root_timeouts, void *payload, size_t bytes,
                             int *host_ids, int *lost)
{
    ipu_agree_params_t a = {.step = step, .timeout_s = f->timeout_s * timeouts,
                            .root_extra_s = f->timeout_s * root_timeouts, .poll = agree_poll, .arg = f};
    if (f->lost)
        a.alive = agree_alive;
    return ipu_agree(comm, st, &a, payload, bytes, host_ids, lost);
}

ipu_status_t ipu_fault_gather(ipu_fault_t *f, MPI_Comm comm, ipu_status_t st, const char *step,
                              int timeouts, const uint32_t *mine, size_t n, uint32_t *all, int *lost)
{
    ipu_agree_params_t a = {.step = step, .timeout_s = f->timeout_s * timeouts, .poll = agree_poll,
                            .arg = f, .values = mine, .n_values = n, .all = all};
    if (f->lost)
        a.alive = agree_alive;
    return ipu_agree(comm, st, &a, NULL, 0, NULL, lost);
}

/* IPU_EXEC_ABORT_GRACE: seconds a rank that lost a peer waits before it
 * exits (default 10; an integer from 0 to 1000000000). */
static int abort_grace_s(void)
{
    int v = 10;
    ipu_setting_int(IPU_SET_IPU_EXEC_ABORT_GRACE, &v);
    return v;
}

void ipu_fault_exit(ipu_status_t st, int code)
{
    fflush(stderr);
    int grace = st == IPU_ERR_TRANSPORT ? abort_grace_s() : 0; /* a timeout waited already */
    usleep(500 * 1000 + (useconds_t)grace * 1000000u);
    _exit(code);
}
