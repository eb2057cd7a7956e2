/* libgcl's shared-memory path among the members of a communicator that live
 * on one host: a POSIX shared-memory segment with one staging slot per
 * member and flags, through which collectives run without the network stack
 * (the small-message path is a flag write and a read per member; large
 * messages stream in cache-sized segments, so staging stays in the shared
 * L3 while each member reduces its share).
 *
 * Operations are non-blocking state machines: *_start() returns an op,
 * gcl_shm_progress() advances it. Ops on one gcl_shm_t complete in the order
 * they were started (all members start them in the same order, as
 * collectives require); starting one while another runs queues it. No call
 * blocks; the caller bounds waiting with its timeout. */
#ifndef GCL_SHM_H
#define GCL_SHM_H

#include "gcl/gcl.h"

/* Recommended slot_bytes: the streaming segment per member (3 are kept). */
#define GCL_SHM_SLOT_BYTES ((size_t)256 * 1024)

typedef struct gcl_shm gcl_shm_t;
typedef struct gcl_shm_op gcl_shm_op_t;

/* Allgather of len bytes among the host-local members (rank order); 0 ok. */
typedef int (*gcl_shm_allgather_fn)(const void *send, void *recv, size_t len, void *arg);

/* Create (local rank 0) or attach (the others) the segment of local_size
 * members with staging slots of slot_bytes each; the segment's name is
 * shared with allgather. Collective over the local members. The name is
 * unlinked once all have attached, so nothing is left in /dev/shm.
 * Errors: GCL_ERR_NO_MEMORY (shm_open/ftruncate/mmap failed: the message
 * says which and how much), GCL_ERR_TRANSPORT (allgather failed). */
gcl_status_t gcl_shm_open(int local_rank, int local_size, size_t slot_bytes,
                          gcl_shm_allgather_fn allgather, void *arg, gcl_shm_t **out);
void gcl_shm_close(gcl_shm_t *shm);

/* Collectives among the local members (argument rules as in gcl.h, ranks
 * are local ranks; send may be GCL_IN_PLACE where gcl.h allows it). */
gcl_status_t gcl_shm_allreduce_start(gcl_shm_t *shm, const void *send, void *recv, size_t count,
                                     gcl_dtype_t dtype, gcl_op_t op, gcl_shm_op_t **out);
gcl_status_t gcl_shm_reduce_start(gcl_shm_t *shm, const void *send, void *recv, size_t count,
                                  gcl_dtype_t dtype, gcl_op_t op, int root, gcl_shm_op_t **out);
gcl_status_t gcl_shm_reduce_scatter_start(gcl_shm_t *shm, const void *send, void *recv, size_t count,
                                          gcl_dtype_t dtype, gcl_op_t op, gcl_shm_op_t **out);
gcl_status_t gcl_shm_allgather_start(gcl_shm_t *shm, const void *send, void *recv, size_t count,
                                     gcl_dtype_t dtype, gcl_shm_op_t **out);
gcl_status_t gcl_shm_broadcast_start(gcl_shm_t *shm, void *buf, size_t count, gcl_dtype_t dtype,
                                     int root, gcl_shm_op_t **out);
gcl_status_t gcl_shm_barrier_start(gcl_shm_t *shm, gcl_shm_op_t **out);
/* An alltoall's call word alone, checked against the other members' like
 * every op's (a barrier): an alltoall moves its data on the network path,
 * and this puts it in the segment's order of calls, so that one member's
 * alltoall against another's collective on the segment is a mismatch, not a
 * wait. */
gcl_status_t gcl_shm_alltoall_word_start(gcl_shm_t *shm, size_t count, gcl_dtype_t dtype, gcl_shm_op_t **out);

/* Registered memory (gcl_mem_alloc in gcl.h; shm_mem.h): collective over
 * the members, bytes > 0; errors as gcl_shm_regions_alloc. An allreduce
 * whose input and output lie in it on every member runs without staging. */
gcl_status_t gcl_shm_mem_alloc(gcl_shm_t *shm, size_t bytes, void **ptr);
/* 1 when ptr was allocated so (now unmapped), else 0. */
int gcl_shm_mem_free(gcl_shm_t *shm, void *ptr);
/* How many allreduce calls have run on registered buffers so far. */
uint64_t gcl_shm_direct_ops(const gcl_shm_t *shm);

/* Advance op: GCL_OK when it completed (op freed), GCL_IN_PROGRESS, or an
 * error (op freed). */
gcl_status_t gcl_shm_progress(gcl_shm_op_t *op);
/* Keep a started op's place in the segment's order without running it: a
 * held op, and every op started after it, waits until gcl_shm_release(op).
 * A step whose input is not ready yet (the host-local broadcast after a
 * hierarchical call's inter-host step) so takes its place when its
 * collective starts, in the order every member starts collectives. Only for
 * ops of a segment of several members (one member's ops finish at start). */
void gcl_shm_hold(gcl_shm_op_t *op);
void gcl_shm_release(gcl_shm_op_t *op);
/* Abandon an op (after a timeout); the segment is unusable afterwards. */
void gcl_shm_cancel(gcl_shm_op_t *op);
/* The same after an error of this member's own (a lost network peer, say:
 * the leader's step of a hierarchical collective): it also tells the
 * others, so that every member waiting on this one fails within about a
 * second (GCL_ERR_TRANSPORT, "rank j ... gave up"), not at its timeout. A
 * timeout cancels without telling: the others end in their own. */
void gcl_shm_abandon(gcl_shm_op_t *op);

/* A member killed mid-collective: once an op has waited about 0.2 s
 * without progress, the waiting member checks the other members' processes
 * (shm_lost.c); when one that the op still needs is gone, that
 * op and every other op of the segment, pending or started later, fail with
 * GCL_ERR_TRANSPORT ("lost rank j of n on this host (pid p) ..."), on every
 * member within about a second, with or without a timeout. A member merely
 * stopped or slow is not lost (the caller's timeout ends the wait).
 * gcl_shm_lost: that member's local rank (and *pid, if not NULL), or -1. */
int gcl_shm_lost(const gcl_shm_t *shm, int *pid);
/* The local rank of the member that abandoned an op this member waited on
 * (gcl_shm_abandon; gcl_shm_lost gives it too), or -1. */
int gcl_shm_gave_up(const gcl_shm_t *shm);

/* For a timeout's message: the local rank of the member the segment's
 * oldest unfinished op still waits for (the one furthest behind), or -1. */
int gcl_shm_waited(const gcl_shm_t *shm);

#endif
