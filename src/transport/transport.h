/* Point-to-point transport between the ranks of an MPI job: tagged,
 * non-blocking sends and receives of byte buffers.
 *
 * Two back-ends: UCX (ucp tag matching; default) bootstrapped over MPI
 * (worker addresses exchanged with MPI_Allgather/MPI_Allgatherv), and MPI
 * itself (MPI_Isend/MPI_Irecv) as a fallback. UCX endpoints use the peer
 * error-handling mode: when a peer dies or becomes unreachable its requests
 * complete with an error and every later wait on it fails at once, naming the
 * rank and its host. Every wait is also bounded by a deadline, so no call
 * hangs. MPI and UCX status codes are translated here and nowhere else.
 *
 * Threading: one thread per transport (the caller's). */
#ifndef IPU_TRANSPORT_TRANSPORT_H
#define IPU_TRANSPORT_TRANSPORT_H

#include "common/status.h"

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* Tags are user-chosen 40-bit values; the source rank is added inside. */
#define IPU_TRANSPORT_TAG_BITS 40
#define IPU_TRANSPORT_TAG_MAX ((UINT64_C(1) << IPU_TRANSPORT_TAG_BITS) - 1)
/* The top tags (IPU_TRANSPORT_TAG_MAX - k, k < this) are control tags
 * (transport/lost.h): no back end folds another tag onto one of them. */
#define IPU_TRANSPORT_TAG_CONTROL 3

typedef enum { IPU_TRANSPORT_UCX = 0, IPU_TRANSPORT_MPI = 1 } ipu_transport_kind_t;

typedef struct ipu_transport_params {
    ipu_transport_kind_t kind;
    double timeout_s;      /* bound of every wait (default 30 s); <= 0: default */
} ipu_transport_params_t;

void ipu_transport_params_init(ipu_transport_params_t *p);

typedef struct ipu_transport ipu_transport_t;
typedef struct ipu_treq ipu_treq_t;

/* A bootstrap: this process's rank and the job size, and an allgather of
 * len bytes from every rank into recv (size * len, rank order); 0 = ok.
 * ipu_transport_open() uses MPI_Allgather on a duplicate of its comm. */
typedef struct ipu_bootstrap {
    int rank, size;
    int (*allgather)(const void *send, void *recv, size_t len, void *arg);
    void *arg;
} ipu_bootstrap_t;

/* Open from a bootstrap, without MPI (the MPI back end is not available:
 * p->kind must be IPU_TRANSPORT_UCX). Collective over the bootstrap's job.
 * Errors as ipu_transport_open(). */
ipu_status_t ipu_transport_open_oob(const ipu_bootstrap_t *b, const ipu_transport_params_t *p,
                                    ipu_transport_t **out);

/* Open over comm (duplicated; the caller keeps comm). Collective over comm;
 * UCX connects every pair of ranks before it returns (an empty message each
 * way), so that no endpoint is cut later in the middle of its handshake.
 * Errors: IPU_ERR_TRANSPORT (UCX init or endpoint creation failed; message
 * gives UCX's reason and suggests --transport mpi or UCX_TLS). */
ipu_status_t ipu_transport_open(MPI_Comm comm, const ipu_transport_params_t *p, ipu_transport_t **out);
/* Flush and close (accepts NULL). Not collective: safe after a peer failed. */
void ipu_transport_close(ipu_transport_t *t);

int ipu_transport_rank(const ipu_transport_t *t);
int ipu_transport_size(const ipu_transport_t *t);
const char *ipu_transport_kind_name(const ipu_transport_t *t);
/* Host name of a rank (exchanged at open). */
const char *ipu_transport_host(const ipu_transport_t *t, int rank);

/* Post a send of len bytes at buf to peer with tag (<= IPU_TRANSPORT_TAG_MAX).
 * buf must stay valid until the request completes. *req is freed by a
 * successful test/wait. Errors: IPU_ERR_TRANSPORT (peer known dead),
 * IPU_ERR_INVALID_ARG. */
ipu_status_t ipu_transport_isend(ipu_transport_t *t, int peer, uint64_t tag,
                                 const void *buf, size_t len, ipu_treq_t **req);
/* Post a receive of exactly len bytes from peer with tag into buf (a
 * message of another length is IPU_ERR_MESSAGE_SIZE at test/wait). */
ipu_status_t ipu_transport_irecv(ipu_transport_t *t, int peer, uint64_t tag,
                                 void *buf, size_t len, ipu_treq_t **req);
/* Progress, then *done = 1 if req completed (req is then freed). Errors
 * (req freed): IPU_ERR_TRANSPORT when the peer failed; IPU_ERR_MESSAGE_SIZE
 * when a receive matched a message longer or shorter than its len (the
 * message is consumed, the first bytes of it written; the peer is fine). */
ipu_status_t ipu_transport_test(ipu_transport_t *t, ipu_treq_t *req, int *done);
/* The same; *received (if not NULL) is then the length of the message a
 * receive matched (SIZE_MAX: longer than len, by how much unknown). */
ipu_status_t ipu_transport_test_len(ipu_transport_t *t, ipu_treq_t *req, int *done, size_t *received);
/* Wait for req, at most timeout_s. Errors: IPU_ERR_TRANSPORT (peer failed),
 * IPU_ERR_TIMED_OUT (message names the peer), IPU_ERR_MESSAGE_SIZE. req is
 * freed in every case. */
ipu_status_t ipu_transport_wait(ipu_transport_t *t, ipu_treq_t *req);
/* Cancel and free a request that has not completed (accepts NULL). On
 * return the transport no longer reads or writes the request's buffer: a
 * transfer UCX cannot cancel (a send the peer has not taken, a receive whose
 * data stopped coming) is ended by closing the endpoint to the peer by
 * force, which ends that peer's other transfers too (IPU_ERR_TRANSPORT,
 * "aborted"); the next send to the peer opens a new endpoint. */
void ipu_transport_cancel(ipu_transport_t *t, ipu_treq_t *req);
/* Drive communication without waiting. */
void ipu_transport_progress(ipu_transport_t *t);
/* The transports (e.g. "tcp/lo", "posix/memory") used to reach peer, comma
 * separated, into buf; "mpi" for the MPI back end. */
void ipu_transport_peer_info(const ipu_transport_t *t, int peer, char *buf, size_t len);
/* 1 if the peer was reported failed. */
int ipu_transport_peer_failed(const ipu_transport_t *t, int peer);

#endif
