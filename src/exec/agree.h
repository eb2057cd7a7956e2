/* Agreement steps of a pipelined run that survive a rank that dies.
 *
 * Every rank reports its status to rank 0 with point-to-point MPI; rank 0
 * answers each with the verdict (the first failing rank's status and
 * message, or the rank it lost) and, on success, a payload of its own (the
 * measured node costs). Every wait is bounded, by time and / or by the
 * peers' liveness (transport/lost.h pings), so a rank that died or hangs is
 * named instead of every other rank waiting for ever in an MPI collective
 * (MPI 4.0 without ULFM has no way to leave one whose peer died).
 *
 * Messages use tag IPU_AGREE_TAG on the caller's communicator; steps on
 * one communicator must be entered in the same order by every rank (MPI
 * keeps messages between a pair of ranks in order, MPI 4.0 section 3.5). */
#ifndef IPU_EXEC_AGREE_H
#define IPU_EXEC_AGREE_H

#include "common/status.h"

#include <mpi.h>
#include <stddef.h>

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

#endif
