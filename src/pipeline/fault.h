/* Fault handling of a pipelined run, the one interface the pipeline and the
 * command line use for it:
 *
 *  - agreements (fault_agree.c): steps every rank reports on, so that no
 *    rank waits on one that failed, died or hangs;
 *  - the watchdog (fault_watchdog.c): a bound on the MPI collectives that
 *    remain;
 *  - lost-rank notices and liveness pings (fault.c, over the low-level
 *    notices of transport/lost.h, which libgcl shares);
 *  - the exit of a rank that failed alone, with its grace period for the
 *    launcher (fault.c, IPU_EXEC_ABORT_GRACE).
 *
 * MPI 4.0 without ULFM has no way to leave a collective whose peer died, so
 * every wait here is bounded by time and / or by the peers' liveness and a
 * lost rank is named instead of every other rank waiting for ever. */
#ifndef IPU_PIPELINE_FAULT_H
#define IPU_PIPELINE_FAULT_H

#include "common/status.h"
#include "transport/transport.h"

#include <mpi.h>
#include <stddef.h>

/* --- agreements --------------------------------------------------------
 *
 * Every rank reports its status to rank 0 with point-to-point MPI; rank 0
 * answers each with the verdict (the first failing rank's status and
 * message, or the rank it lost) and, on success, a payload of its own (the
 * measured node costs). Every wait is bounded, by time and / or by the
 * peers' liveness (the pings below).
 *
 * Messages use tag IPU_AGREE_TAG on the caller's communicator; steps on
 * one communicator must be entered in the same order by every rank (MPI
 * keeps messages between a pair of ranks in order, MPI 4.0 section 3.5). */

#define IPU_AGREE_TAG 0x1a9e
#define IPU_AGREE_MSG 480 /* bytes of a failing rank's message carried along */

typedef struct {
    const char *step;   /* what the ranks agree on, for messages ("the plan") */
    double timeout_s;   /* longest wait for a rank (<= 0: none; liveness only) */
    double root_extra_s; /* ranks other than 0 wait this much longer for rank 0
                            (its own work before the step, e.g. measuring) */
    /* Called every millisecond or so while waiting (may be NULL): IPU_OK to
     * go on, an error (a lost-rank notice) to stop with. */
    ipu_status_t (*poll)(void *arg);
    /* Liveness of peer (may be NULL): 1 alive, 0 not known yet, -1 lost
     * (it stopped answering). */
    int (*alive)(void *arg, int peer);
    void *arg;
    /* Optional: n_values values of this rank (the same count on every
     * rank), gathered: on IPU_OK all[r * n_values + i] is rank r's value i
     * on every rank (all: comm's size x n_values, the caller's). */
    const uint32_t *values;
    size_t n_values;
    uint32_t *all;
} ipu_agree_params_t;

/* Agree on st (this rank's status of the step). Returns:
 *  - st itself if it is an error (this rank's message stays);
 *  - IPU_OK when every rank reported IPU_OK; then rank 0's payload
 *    (payload_bytes, may be 0) has been copied into payload on every rank;
 *  - the status and message of the lowest failing rank, on every rank (so
 *    that they can print it once);
 *  - IPU_ERR_TIMED_OUT or IPU_ERR_TRANSPORT naming the rank lost (or that
 *    did not answer within timeout_s), with *lost set to 1: no collective
 *    may follow (a peer is gone);
 *  - an error of poll (*lost set to 1).
 * host_ids (may be NULL; comm's size entries): unless a rank was lost, for
 * every rank the lowest rank on the same host (MPI_Get_processor_name), so
 * that no MPI_Comm_split_type is needed. Ownership: payload and host_ids
 * stay the caller's. */
ipu_status_t ipu_agree(MPI_Comm comm, ipu_status_t st, const ipu_agree_params_t *p, void *payload,
                       size_t payload_bytes, int *host_ids, int *lost);

/* --- a run's faults: notices, liveness and its agreements ------------- */

typedef struct ipu_lost ipu_lost_t;

/* The fault state of one pipelined run (zero-initialise, then set
 * timeout_s). */
typedef struct ipu_fault {
    double timeout_s;       /* --timeout, seconds (> 0) */
    ipu_transport_t *tr;    /* borrowed, NULL until the transport is up:
                               progressed while waiting */
    ipu_lost_t *lost;       /* owned; NULL until ipu_fault_open_notices */
} ipu_fault_t;

/* seconds without any event before a waiting rank pings the ranks it waits
 * on (less for a short --timeout: ipu_fault_suspect_s) */
#define IPU_FAULT_SUSPECT_S 2.0
/* How long a ping may stay unanswered before its peer is lost, for a
 * --timeout of timeout_s: timeout_s / 4, at least IPU_LOST_PING_S or
 * timeout_s / 2.5 where that is less; and how long a rank waits without
 * any event before it pings (IPU_FAULT_SUSPECT_S, at most timeout_s / 5).
 * Together under 0.6 x timeout_s, so that a rank that stops is named by its
 * peers (and their notices) before --timeout makes a live rank that waits
 * on it look hung. */
double ipu_fault_ping_s(double timeout_s);
double ipu_fault_suspect_s(double timeout_s);
/* Lost-rank notices and pings over tr (transport/lost.h), pings lost after
 * ipu_fault_ping_s(timeout_s). Errors: IPU_ERR_NO_MEMORY, the transport's. */
ipu_status_t ipu_fault_open_notices(ipu_fault_t *f, ipu_transport_t *tr);
/* A notice arrived: IPU_ERR_TRANSPORT naming the rank lost, else IPU_OK
 * (IPU_OK without notices). */
ipu_status_t ipu_fault_poll(ipu_fault_t *f);
/* Is peer alive? 1 yes (or no notices), 0 a ping is on its way, -1 lost. */
int ipu_fault_alive(ipu_fault_t *f, int peer);
/* After the run failed with st: name the rank lost first and tell the other
 * ranks (ipu_lost_tell). Returns st, or the status naming that rank. */
ipu_status_t ipu_fault_tell(ipu_fault_t *f, ipu_status_t st);
/* Cancel the notices' receives and free them (the transport stays). */
void ipu_fault_close(ipu_fault_t *f);

/* One agreement step of the run (ipu_agree): its waits are bounded by
 * pings once notices are open, and by timeout_s x timeouts (0: none), rank
 * 0's by timeout_s x root_timeouts more for the others; *lost: a rank is
 * gone (no collective may follow). */
ipu_status_t ipu_fault_agree(ipu_fault_t *f, MPI_Comm comm, ipu_status_t st, const char *step,
                             int timeouts, int root_timeouts, void *payload, size_t bytes,
                             int *host_ids, int *lost);
/* The same, gathering n values of every rank into all (comm's size x n,
 * rank r's from all[r * n]) instead of a payload. */
ipu_status_t ipu_fault_gather(ipu_fault_t *f, MPI_Comm comm, ipu_status_t st, const char *step,
                              int timeouts, const uint32_t *mine, size_t n, uint32_t *all, int *lost);

/* --- the watchdog ------------------------------------------------------
 *
 * A bound on the MPI collectives a pipelined run still makes (the
 * transport's bootstrap, the report gathered at the end, MPI_Finalize): a
 * thread ends this process if one does not return in time. The agreements
 * name a lost rank; this only bounds the short windows between them.
 *
 * From now on, if ipu_watchdog_disarm is not called within seconds (> 0),
 * print "ipu-exec (rank RANK): WHAT did not finish within S s: a rank died
 * or hangs (see the other ranks' messages)" on stderr and _exit(3)
 * (IPU_ERR_TIMED_OUT's exit code). what is copied. Re-arming replaces the
 * previous bound. The first call starts the thread; if it cannot, nothing
 * is bounded. */
void ipu_watchdog_arm(double seconds, int rank, const char *what);
void ipu_watchdog_disarm(void);

/* --- the exit of a rank that failed alone -------------------------------
 *
 * The other ranks may wait on this one: leave now with the error (the
 * launcher ends the job; MPI_Abort can hang on an unreachable host). For a
 * lost peer (st IPU_ERR_TRANSPORT) first give the launcher
 * IPU_EXEC_ABORT_GRACE seconds (default 10) to notice the lost host itself
 * (mpirun stops handling a lost host once a rank has exited, and would wait
 * for it); always half a second. Flushes stderr, then _exit(code). */
void ipu_fault_exit(ipu_status_t st, int code) __attribute__((noreturn));

#endif
