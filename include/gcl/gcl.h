/**
 * libgcl: collectives over UCX for the ranks of a job.
 *
 * A communicator is made from an MPI communicator (gcl_init_mpi) or from an
 * out-of-band allgather callback (gcl_init_oob, as UCC's context does), so
 * libgcl also works without MPI. Communicators split by color/key or into
 * GCL-style groups; every collective exists blocking and non-blocking
 * (request + test/wait), in place where it makes sense, for the dtypes and
 * reduction ops below. Algorithms (ring, recursive doubling, Rabenseifner,
 * k-nomial trees, pairwise exchange, hierarchical intra-/inter-host, a
 * shared-memory path within a host) are chosen by message size and group
 * size; GCL_<COLL>_ALGO overrides the choice (docs/libgcl.md).
 *
 * Conventions (as UCX's and hwloc's headers state theirs):
 *  - Every function that can fail returns gcl_status_t: GCL_OK (0) or a
 *    negative error; gcl_status_string() names it. The queries return their
 *    answer (gcl_comm_rank / gcl_comm_size: -1 / 0 for NULL, gcl_algorithm
 *    and the string functions: a constant string) and the destroy functions
 *    return void. After an error the output buffers (and an in-place input)
 *    may be partly written.
 *  - Counts are element counts (not bytes) of the given dtype; buffers are
 *    host memory owned by the caller and must stay valid until the
 *    collective completes (for non-blocking calls: until test/wait reports
 *    completion).
 *  - Once a call returned an error (GCL_ERR_TIMED_OUT included), libgcl no
 *    longer reads or writes its buffers: they may be freed or reused at
 *    once. On the UCX transport a send the peer had not taken is ended by
 *    closing the connection to that peer (docs/libgcl.md "Timeouts").
 *  - Collective calls on one communicator must be made by all its members in
 *    the same order with matching arguments. Every call checks it: where
 *    the collective, count, dtype, op or root differ, the call returns
 *    GCL_ERR_MISMATCH on every member, its message naming the member and
 *    the field. On the network path nothing has moved and the communicator
 *    stays usable; on shared memory every later call on the communicator
 *    returns GCL_ERR_MISMATCH too (destroy it). A call with count 0 is
 *    checked too (it waits for the other members, as a barrier)
 *    (docs/libgcl.md "Mismatched calls"). GCL_DEBUG=1 also reports one
 *    member's argument error to the others.
 *  - A context (the communicators of one gcl_init_* and their splits) is
 *    used by one thread at a time: they share one transport worker.
 *  - Destroy/finalize functions accept NULL and return void.
 *
 * Progress: there is no progress thread. Every gcl_test, gcl_wait,
 * gcl_wait_all and blocking call progresses all the outstanding
 * non-blocking calls of its context, not only its own (the progress rule of
 * MPI 4.0 section 3.7.4), so ranks may complete calls on different
 * communicators in different orders.
 */
#ifndef GCL_GCL_H
#define GCL_GCL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- version */

#define GCL_VERSION_MAJOR 0
#define GCL_VERSION_MINOR 1
#define GCL_VERSION_PATCH 0
/** Version as one number: major * 10000 + minor * 100 + patch. */
#define GCL_VERSION (GCL_VERSION_MAJOR * 10000 + GCL_VERSION_MINOR * 100 + GCL_VERSION_PATCH)

/** The library's version (GCL_VERSION of the library actually linked). */
int gcl_version(void);
/** "0.1.0": constant string. */
const char *gcl_version_string(void);

/* ----------------------------------------------------------------- status */

typedef enum {
    GCL_OK                = 0,
    GCL_IN_PROGRESS       = 1,   /**< gcl_test: not complete yet (not an error) */
    GCL_ERR_INVALID_ARG   = -1,  /**< a bad argument (NULL buffer, bad root, dtype, op) */
    GCL_ERR_NO_MEMORY     = -2,
    GCL_ERR_TRANSPORT     = -3,  /**< a peer failed or the network did */
    GCL_ERR_TIMED_OUT     = -4,  /**< the communicator's/call's timeout expired */
    GCL_ERR_MISMATCH      = -5,  /**< members called different collectives or with other arguments */
    GCL_ERR_UNSUPPORTED   = -6,  /**< combination not implemented (e.g. op on dtype) */
    GCL_ERR_NOT_MEMBER    = -7,  /**< a split gave this rank no communicator (color GCL_UNDEFINED) */
    GCL_ERR_MESSAGE_SIZE  = -8,  /**< gcl_recv/irecv: the message matched is longer (as MPI_ERR_TRUNCATE)
                                  *   or shorter than count; only that receive fails */
} gcl_status_t;

/** Constant string naming the status (never NULL). */
const char *gcl_status_string(gcl_status_t status);
/** The detailed message of the last error of this thread ("" if none):
 *  names the collective, the communicator, the peer. */
const char *gcl_last_error(void);

/* ------------------------------------------------------------ dtypes, ops */

typedef enum {
    GCL_FLOAT32 = 0, GCL_FLOAT64, GCL_FLOAT16, GCL_BFLOAT16,
    GCL_INT8, GCL_UINT8, GCL_INT32, GCL_INT64,
    GCL_DTYPE_COUNT
} gcl_dtype_t;

/** Bytes per element, 0 for an unknown dtype. */
size_t gcl_dtype_size(gcl_dtype_t dtype);

/** Reductions. float16/bfloat16 are reduced in float32 arithmetic, each
 *  partial result rounded to the dtype (nearest even). GCL_AVG is the sum divided by the group size
 *  (integer division, truncating, for integer dtypes); the sum is taken in the dtype, so it wraps
 *  (integers) or overflows to inf (float16) before the division, as a SUM would. */
typedef enum { GCL_SUM = 0, GCL_PROD, GCL_MIN, GCL_MAX, GCL_AVG, GCL_OP_COUNT } gcl_op_t;

/** Pass as the send buffer to work in place on the receive buffer. */
#define GCL_IN_PLACE ((const void *)1)

/* --------------------------------------------------------- communicators */

typedef struct gcl_comm gcl_comm_t;
typedef struct gcl_request gcl_request_t;

/** Options of gcl_init_*: set field_mask bits for the fields you set (as
 *  ucp_params_t does), so fields can be added without breaking callers. */
enum {
    GCL_INIT_FIELD_TIMEOUT   = 1u << 0,
    GCL_INIT_FIELD_TRANSPORT = 1u << 1,
};
typedef enum { GCL_TRANSPORT_UCX = 0, GCL_TRANSPORT_MPI = 1 } gcl_transport_t;
typedef struct gcl_init_params {
    uint64_t field_mask;
    double timeout_s;         /**< default per-call timeout (seconds); default 60; <= 0: none */
    gcl_transport_t transport;/**< between hosts and for point-to-point (default UCX) */
} gcl_init_params_t;

/** Out-of-band allgather (as UCC's oob): gather `len` bytes from every rank
 *  into `recv` (size * len bytes, in rank order). Blocking, collective over
 *  the job; returns 0 on success. */
typedef struct gcl_oob {
    int (*allgather)(const void *send, void *recv, size_t len, void *arg);
    void *arg;
    int rank;                 /**< this process's rank in [0, size) */
    int size;
} gcl_oob_t;

/** The world communicator of the job described by an MPI communicator
 *  (pass a pointer to an MPI_Comm as `mpi_comm`, so this header needs no
 *  mpi.h). MPI must be initialised; libgcl duplicates the communicator for
 *  its bootstrap and leaves the caller's alone. Collective. params may be
 *  NULL. Errors: GCL_ERR_TRANSPORT (UCX could not start; the message says
 *  why), GCL_ERR_NO_MEMORY, GCL_ERR_INVALID_ARG, GCL_ERR_MISMATCH (on every
 *  rank: the GCL_* variables that choose how collectives run differ between
 *  ranks; the message names one and a rank). */
gcl_status_t gcl_init_mpi(const void *mpi_comm, const gcl_init_params_t *params, gcl_comm_t **world);
/** The same from an out-of-band allgather, without MPI. */
gcl_status_t gcl_init_oob(const gcl_oob_t *oob, const gcl_init_params_t *params, gcl_comm_t **world);
/** Destroy the world communicator and its context (transport, buffers).
 *  The sub-communicators split from it are not destroyed with it: destroy
 *  them first (gcl_comm_destroy). Not collective (the other ranks still
 *  receive what this rank sent before it; a call of theirs still waiting
 *  for this rank over the network fails with GCL_ERR_TRANSPORT, a lost
 *  rank, about 0.5 s later); call it before MPI_Finalize. Accepts NULL;
 *  a second call, or one given a sub-communicator, does nothing but set
 *  gcl_last_error(). */
void gcl_finalize(gcl_comm_t *world);

/** This member's rank in comm (0 .. size-1), or -1 when comm is NULL. */
int gcl_comm_rank(const gcl_comm_t *comm);
/** The number of members of comm, or 0 when comm is NULL. */
int gcl_comm_size(const gcl_comm_t *comm);

/** Split comm as MPI_Comm_split: members with the same color form a new
 *  communicator, ordered by key then by rank in comm. color GCL_UNDEFINED:
 *  *out = NULL and GCL_OK. Collective over comm. */
#define GCL_UNDEFINED (-1)
gcl_status_t gcl_comm_split(gcl_comm_t *comm, int color, int key, gcl_comm_t **out);

/** GCL/PopART-style replica groups of comm (Graphcore's CommGroup):
 *  GCL_GROUP_ALL: one group of everyone;
 *  GCL_GROUP_CONSECUTIVE(k): {0..k-1}, {k..2k-1}, ...;
 *  GCL_GROUP_ORTHOGONAL(k): {i, i+k, i+2k, ...} for i in [0, k): the groups
 *  orthogonal to CONSECUTIVE(k), as Graphcore's CommGroupType::Orthogonal
 *  (so k groups of size/k members: group_size is the CONSECUTIVE size).
 *  group_size must divide the communicator size (else GCL_ERR_INVALID_ARG). */
typedef enum { GCL_GROUP_ALL = 0, GCL_GROUP_CONSECUTIVE, GCL_GROUP_ORTHOGONAL } gcl_group_t;
gcl_status_t gcl_comm_split_group(gcl_comm_t *comm, gcl_group_t kind, int group_size, gcl_comm_t **out);

/** Per-communicator timeout for every call on it (seconds, <= 0: none). */
gcl_status_t gcl_comm_set_timeout(gcl_comm_t *comm, double timeout_s);
/** Destroy a communicator made by a split (not collective). Accepts NULL.
 *  Complete its non-blocking calls first: requests still outstanding on it
 *  are no longer progressed, and waiting on them afterwards is undefined. */
void gcl_comm_destroy(gcl_comm_t *comm);

/** Registered memory: bytes (> 0) for this member's buffers on comm, page
 *  aligned, in *ptr (NULL on error). Collective over comm (every member
 *  calls it, each with its own size, in the same order relative to the
 *  other calls on comm). Where comm's members share a host and its shared-
 *  memory path, every member maps the others' memory, and an allreduce
 *  whose send and recv lie in it on every member reads the inputs and
 *  writes the outputs of all members directly instead of copying through
 *  staging (as NCCL's user buffer registration; docs/libgcl.md, "Registered
 *  memory"); other calls and buffers work as before. Elsewhere it is
 *  ordinary memory. Errors: GCL_ERR_INVALID_ARG (NULL comm or ptr, 0 bytes),
 *  GCL_ERR_NO_MEMORY (any member could not allocate or map: every member
 *  gets the error and nothing is allocated; the message says which). */
gcl_status_t gcl_mem_alloc(gcl_comm_t *comm, size_t bytes, void **ptr);
/** Free ptr from gcl_mem_alloc on comm (NULL: nothing). Every member frees
 *  its own allocation, in the same order relative to the other calls on
 *  comm, once no call in flight uses it; not blocking. Destroying comm frees
 *  what is left. GCL_ERR_INVALID_ARG: ptr is not from gcl_mem_alloc on comm
 *  (nothing is freed). */
gcl_status_t gcl_mem_free(gcl_comm_t *comm, void *ptr);

/* ------------------------------------------------------------ requests */

/** Progress req; GCL_OK when it completed (req is then freed and *req is
 *  set to NULL), GCL_IN_PROGRESS if not yet, or the error it failed with
 *  (req freed, *req NULL). */
gcl_status_t gcl_test(gcl_request_t **req);
/** Wait for req (bounded by the timeout); frees it and sets *req to NULL. */
gcl_status_t gcl_wait(gcl_request_t **req);
/** Wait for all n requests; returns the first error (all are freed). */
gcl_status_t gcl_wait_all(int n, gcl_request_t **reqs);

/* ---------------------------------------------------------- collectives
 * Blocking form, then the non-blocking form ending in *req. Buffers:
 *  allreduce     send[count] -> recv[count]                   (in place: send = GCL_IN_PLACE)
 *  reduce        send[count] -> recv[count] at root           (recv ignored elsewhere)
 *  reduce_scatter send[count * size] -> recv[count]: block r of the reduction goes to rank r
 *  allgather     send[count] -> recv[count * size]            (in place: block rank of recv holds the input)
 *  broadcast     buf[count] from root to all
 *  alltoall      send[count * size] -> recv[count * size]: block j of rank i goes to block i of rank j
 *  send / recv   buf[count] to / from peer with tag >= 0 (point-to-point on the communicator).
 *                A message of another size than the recv's count: GCL_ERR_MESSAGE_SIZE at the
 *                receiver (the message is consumed, its first bytes may be in buf; the sender gets
 *                GCL_OK; later calls with the peer are unaffected)
 *  barrier       no data
 */
gcl_status_t gcl_allreduce(const void *send, void *recv, size_t count, gcl_dtype_t dtype, gcl_op_t op, gcl_comm_t *comm);
gcl_status_t gcl_iallreduce(const void *send, void *recv, size_t count, gcl_dtype_t dtype, gcl_op_t op, gcl_comm_t *comm, gcl_request_t **req);
gcl_status_t gcl_reduce(const void *send, void *recv, size_t count, gcl_dtype_t dtype, gcl_op_t op, int root, gcl_comm_t *comm);
gcl_status_t gcl_ireduce(const void *send, void *recv, size_t count, gcl_dtype_t dtype, gcl_op_t op, int root, gcl_comm_t *comm, gcl_request_t **req);
gcl_status_t gcl_reduce_scatter(const void *send, void *recv, size_t count, gcl_dtype_t dtype, gcl_op_t op, gcl_comm_t *comm);
gcl_status_t gcl_ireduce_scatter(const void *send, void *recv, size_t count, gcl_dtype_t dtype, gcl_op_t op, gcl_comm_t *comm, gcl_request_t **req);
gcl_status_t gcl_allgather(const void *send, void *recv, size_t count, gcl_dtype_t dtype, gcl_comm_t *comm);
gcl_status_t gcl_iallgather(const void *send, void *recv, size_t count, gcl_dtype_t dtype, gcl_comm_t *comm, gcl_request_t **req);
gcl_status_t gcl_broadcast(void *buf, size_t count, gcl_dtype_t dtype, int root, gcl_comm_t *comm);
gcl_status_t gcl_ibroadcast(void *buf, size_t count, gcl_dtype_t dtype, int root, gcl_comm_t *comm, gcl_request_t **req);
gcl_status_t gcl_alltoall(const void *send, void *recv, size_t count, gcl_dtype_t dtype, gcl_comm_t *comm);
gcl_status_t gcl_ialltoall(const void *send, void *recv, size_t count, gcl_dtype_t dtype, gcl_comm_t *comm, gcl_request_t **req);
gcl_status_t gcl_send(const void *buf, size_t count, gcl_dtype_t dtype, int peer, int tag, gcl_comm_t *comm);
gcl_status_t gcl_isend(const void *buf, size_t count, gcl_dtype_t dtype, int peer, int tag, gcl_comm_t *comm, gcl_request_t **req);
gcl_status_t gcl_recv(void *buf, size_t count, gcl_dtype_t dtype, int peer, int tag, gcl_comm_t *comm);
gcl_status_t gcl_irecv(void *buf, size_t count, gcl_dtype_t dtype, int peer, int tag, gcl_comm_t *comm, gcl_request_t **req);
gcl_status_t gcl_barrier(gcl_comm_t *comm);
gcl_status_t gcl_ibarrier(gcl_comm_t *comm, gcl_request_t **req);

/* ------------------------------------------------------------ algorithms */

typedef enum {
    GCL_COLL_ALLREDUCE = 0, GCL_COLL_REDUCE, GCL_COLL_REDUCE_SCATTER, GCL_COLL_ALLGATHER,
    GCL_COLL_BROADCAST, GCL_COLL_ALLTOALL, GCL_COLL_BARRIER, GCL_COLL_COUNT
} gcl_coll_t;

/** The algorithm libgcl would use for coll on comm with `bytes` of data
 *  (the whole array: count * dtype size, times the size for reduce_scatter
 *  input / allgather output / alltoall input): a constant string such as
 *  "ring", "recursive_doubling", "rabenseifner", "knomial", "pairwise",
 *  "hierarchical", "dissemination", "shm". GCL_<COLL>_ALGO=name (e.g. GCL_ALLREDUCE_ALGO=ring)
 *  forces one. "?" for a NULL comm or an unknown coll. */
const char *gcl_algorithm(const gcl_comm_t *comm, gcl_coll_t coll, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
