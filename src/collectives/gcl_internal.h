/* libgcl internals: the context (one transport shared by every
 * communicator), communicators with their host topology, the tag layout, and
 * the schedule engine that drives every request.
 *
 * Tag layout (40 bits, after UCC's ucc_tl_ucp tag: scope | team id | seq |
 * step; the source rank is added by the transport):
 *   scope (2) | communicator id (12) | sequence (10) | step (16)
 * Point-to-point messages use scope GCL_SCOPE_P2P and put the 26-bit user tag
 * in place of sequence and step. Scopes keep collectives, point-to-point,
 * GCL_DEBUG checks and internal bootstrap traffic (split, shm setup) apart;
 * the id keeps communicators apart; the sequence keeps concurrent
 * non-blocking collectives apart (1024 may be in flight per communicator). */
#ifndef GCL_INTERNAL_H
#define GCL_INTERNAL_H

#include "gcl/gcl.h"
#include "collectives/clock.h"
#include "collectives/errors.h"
#include "collectives/shm.h"
#include "collectives/types.h"
#include "common/status.h"
#include "transport/lost.h"
#include "transport/transport.h"

#include <stdint.h>
#include <stdio.h>

enum { GCL_SCOPE_COLL = 0, GCL_SCOPE_P2P = 1, GCL_SCOPE_DEBUG = 2, GCL_SCOPE_INTERNAL = 3 };
#define GCL_ID_BITS 12
#define GCL_MAX_IDS (1 << GCL_ID_BITS)
#define GCL_SEQ_BITS 10
#define GCL_STEP_BITS 16
#define GCL_P2P_TAG_BITS (GCL_SEQ_BITS + GCL_STEP_BITS)
#define GCL_TAG(scope, id, seq, step)                                                           \
    (((uint64_t)(scope) << (GCL_ID_BITS + GCL_SEQ_BITS + GCL_STEP_BITS)) |                      \
     ((uint64_t)((id) & (GCL_MAX_IDS - 1)) << (GCL_SEQ_BITS + GCL_STEP_BITS)) |                 \
     ((uint64_t)((seq) & ((1u << GCL_SEQ_BITS) - 1)) << GCL_STEP_BITS) |                         \
     ((uint64_t)(step) & ((1u << GCL_STEP_BITS) - 1)))

/* Algorithms (names in decision.c). */
typedef enum {
    GCL_ALG_RECURSIVE_DOUBLING = 0, GCL_ALG_RABENSEIFNER, GCL_ALG_RING, GCL_ALG_HIERARCHICAL,
    GCL_ALG_SHM, GCL_ALG_KNOMIAL, GCL_ALG_RS_GATHER, GCL_ALG_RECURSIVE_HALVING,
    GCL_ALG_PAIRWISE, GCL_ALG_BRUCK, GCL_ALG_SCATTER_ALLGATHER, GCL_ALG_DISSEMINATION,
    GCL_ALG_COUNT
} gcl_alg_t;

#define GCL_FORCED_INVALID (-2)

enum { GCL_LOG_QUIET = 0, GCL_LOG_INFO = 1, GCL_LOG_DEBUG = 2 };

typedef struct gcl_ctx {
    ipu_transport_t *tp;
    int rank, size;            /* in the job */
    int *host_of;              /* world rank -> host index */
    int nhosts;
    double timeout_s;
    int debug, log_level;
    int forced[GCL_COLL_COUNT];/* gcl_alg_t or -1; GCL_FORCED_INVALID: an unknown name */
    gcl_status_t env_err;      /* a setting this rank could not read (init.c) */
    char env_msg[320];         /* and its message */
    size_t seg_bytes;          /* pipelining segment */
    size_t shm_slot;           /* GCL_SHM_SLOT_BYTES: staging slot of a shared-memory segment */
    int no_shm;                /* GCL_NO_SHM set */
    int yield_always;          /* waits yield the core on every poll (oversubscribed) */
    uint64_t used_ids[GCL_MAX_IDS / 64];
    int next_id;               /* where a split's id search starts (comm.c) */
    struct gcl_request *live, *live_tail; /* the user's outstanding requests, oldest first */
    ipu_lost_t *lost;          /* lost-rank notices (transport/lost.h); NULL: none */
    unsigned notice_polls;     /* gcl_ctx_notice calls (it looks every 64th) */
    int told;                  /* this rank told the others of a loss */
    char *heard;               /* the loss a notice (or this rank) found: every
                                * later call fails with it; NULL: none */
} gcl_ctx_t;

struct gcl_comm {
    gcl_ctx_t *ctx;
    int rank, size;
    int *world;                /* comm rank -> world rank */
    unsigned id, sub_id;       /* tag ids: this comm; its host-local and leader comms */
    uint32_t seq, dbg_seq, int_seq;
    uint64_t moved;            /* steps of its calls completed so far (timeouts) */
    double timeout_s;
    int is_world, internal;
    /* host topology */
    int nhosts;                /* hosts spanned */
    int local_rank, local_size;
    int *local;                /* comm ranks on my host, in order */
    int nleaders, leader_rank; /* leader_rank: my rank among leaders, -1 if not a leader */
    int *leaders;              /* comm rank of each host's first member */
    gcl_comm_t *local_comm, *leader_comm; /* internal; local_comm made with c when c
                                           * spans hosts (gcl_comm_shm_eager), leader_comm
                                           * on first use */
    gcl_shm_t *shm;
    int shm_state;             /* 0 untried, 1 open, -1 unavailable */
    struct gcl_plain_mem *plain_mem; /* gcl_mem_alloc without shared memory (mem.c) */
};

/* ---------------------------------------------------------- schedules */

typedef enum { GOP_SEND, GOP_RECV, GOP_REDUCE, GOP_COPY, GOP_SUB, GOP_SHM, GOP_CALL } gcl_op_kind_t;

/* A collective's arguments (also those of a shared-memory op). */
typedef struct gcl_args {
    gcl_coll_t coll;
    const void *send;
    void *recv;
    size_t count;
    gcl_dtype_t dtype;
    gcl_op_t op;
    int root;
} gcl_args_t;

#define GCL_MAX_DEPS 4
typedef struct gcl_sop {
    uint8_t kind, state;       /* state: 0 waiting, 1 active, 2 done */
    uint8_t any_length;        /* GOP_RECV: a message of another length completes it (gcl_s_any_length) */
    int peer;                  /* comm rank */
    uint64_t tag;
    void *dst;
    const void *a, *b;
    size_t n;                  /* bytes (send/recv/copy), elements (reduce) */
    size_t got;                /* GOP_RECV: the message's bytes (gcl_s_received) */
    ipu_treq_t *treq;
    gcl_request_t *sub;
    gcl_shm_op_t *shm_op;      /* GOP_SHM: started (held) when added */
    gcl_status_t (*fn)(gcl_request_t *r, void *arg); /* GOP_CALL: fn(r, dst) */
    int ndeps, deps[GCL_MAX_DEPS];
    int nwait, succ_off, nsucc;
} gcl_sop_t;

typedef struct gcl_alloc { struct gcl_alloc *next; } gcl_alloc_t;

struct gcl_request {
    gcl_comm_t *comm;
    gcl_coll_t coll;           /* GCL_COLL_COUNT for point-to-point */
    const char *name;          /* "allreduce", "send", ... */
    const char *algo;
    int scope;
    uint32_t seq;
    gcl_dtype_t dtype;
    gcl_op_t op;               /* reduction op (SUM for AVG) */
    size_t esz;
    gcl_sop_t *ops;
    int nops, cap;
    int *succ, *ready_comm, *ready_local, *active;
    int nready_comm, nready_local, nactive, ndone;
    int started, err;          /* err: a build error (status) */
    int check;                 /* the call check is to run; cleared by the builder that carries it (check.c) */
    int running;               /* the GOP_CALL being run (gcl_s_call_continue) */
    int timed;                 /* bounded by the timeout (test_once in schedule.c) */
    double deadline;           /* set by test_once */
    int waited;                /* tested or waited on yet */
    uint64_t seen_moved;       /* comm_moved() then */
    void *avg_buf;             /* AVG: divide avg_count elements by avg_n at the end */
    size_t avg_count;
    int avg_n;
    gcl_alloc_t *allocs;
    int is_child;
    int tracked;               /* on ctx->live */
    gcl_request_t *live_prev, *live_next;
    char errmsg[256];          /* the message of err, for a later test or wait */
};

/* Lost-rank notices (transport/lost.h), one set per context. Once a loss is
 * known (a notice came, or this rank found one) every call of the context
 * fails with GCL_ERR_TRANSPORT, "gcl_<what>: lost rank X on host H ...; the
 * job cannot continue"; until then gcl_ctx_notice looks for a notice every
 * 64th call (waits call it while idle, every call start) and returns
 * GCL_OK when there is none. gcl_ctx_tell: this rank found a loss (world
 * rank, or -1: the peer the transport reports failed, if any); the first
 * time, every other rank is told and this rank lingers IPU_LOST_LINGER_S
 * so that they read it. */
gcl_status_t gcl_ctx_notice(gcl_ctx_t *ctx, const char *what);
void gcl_ctx_tell(gcl_ctx_t *ctx, int world_rank);
void gcl_log(const gcl_comm_t *c, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* requests */
gcl_request_t *gcl_req_new(gcl_comm_t *c, gcl_coll_t coll, const char *name, int scope, gcl_dtype_t dtype,
                           gcl_op_t op);
void gcl_req_free(gcl_request_t *r);
/* Put a request handed to the user on its context's live list, so that
 * every wait and test progresses it (the MPI progress rule, MPI 4.0 §3.7.4:
 * two ranks waiting on non-blocking calls of two communicators in opposite
 * orders must both complete). gcl_req_free takes it off. */
void gcl_req_track(gcl_request_t *r);
/* Take c's requests off the live list (c is being destroyed with calls
 * still outstanding, which gcl.h forbids: they are no longer progressed). */
void gcl_req_untrack_comm(gcl_comm_t *c);
/* Advance the live requests of ctx but skip (NULL: none; the caller's own
 * wait progresses it), oldest first. The order does not matter for
 * correctness: every op a call puts on a shared-memory segment takes its
 * place there when the call starts (gcl_s_shm). Outcomes stay in the
 * requests for their own test or wait. */
void gcl_progress_live(gcl_ctx_t *ctx, const gcl_request_t *skip);
void *gcl_req_alloc(gcl_request_t *r, size_t bytes);
/* Add ops; deps < 0 are ignored; each returns the op's index (or -1 after
 * an allocation failure, recorded in r->err). */
int gcl_s_send(gcl_request_t *r, int peer, unsigned step, const void *buf, size_t bytes, int d0, int d1);
int gcl_s_recv(gcl_request_t *r, int peer, unsigned step, void *buf, size_t bytes, int d0, int d1);
int gcl_s_reduce(gcl_request_t *r, void *dst, const void *a, const void *b, size_t count, int d0, int d1);
int gcl_s_copy(gcl_request_t *r, void *dst, const void *src, size_t bytes, int d0, int d1);
int gcl_s_sub(gcl_request_t *r, gcl_request_t *child, int d0, int d1);
int gcl_s_shm(gcl_request_t *r, const gcl_args_t *a, int d0, int d1);
/* A local step: fn(r, arg); an error it returns fails r. */
int gcl_s_call(gcl_request_t *r, gcl_status_t (*fn)(gcl_request_t *r, void *arg), void *arg, int d0, int d1);
void gcl_s_dep(gcl_request_t *r, int op, int dep);
/* Every op of r among the first n without a dependency starts after op
 * first (a check that must come before them). Returns r->err. */
gcl_status_t gcl_s_first_of(gcl_request_t *r, int n, int first);
/* The receive op completes on a message of any length (one longer than its
 * buffer is consumed unread); gcl_s_received then says how long it was
 * (SIZE_MAX: longer than the buffer by an unknown amount). */
void gcl_s_any_length(gcl_request_t *r, int op);
size_t gcl_s_received(const gcl_request_t *r, int op);
/* From the fn of a GOP_CALL being run: the op completes when child (a
 * request on r's communicator, built, not started; r owns it) does, failing
 * r with its error, instead of now. */
void gcl_s_call_continue(gcl_request_t *r, gcl_request_t *child);
/* Progress; GCL_OK when complete, GCL_IN_PROGRESS, or an error. */
gcl_status_t gcl_req_progress(gcl_request_t *r);
/* One test of r (others: the context's other live requests progressed
 * first) with its timeout and lost-rank checks; GCL_OK, GCL_IN_PROGRESS or
 * an error (r is not freed). */
gcl_status_t gcl_req_test(gcl_request_t *r, int others);
/* Blocking wait for an internal request (frees it). */
gcl_status_t gcl_req_wait(gcl_request_t *r);

/* communicators */
gcl_comm_t *gcl_comm_new(gcl_ctx_t *ctx, int size, const int *world, int my_rank);
gcl_status_t gcl_comm_topology(gcl_comm_t *c);
gcl_comm_t *gcl_comm_local(gcl_comm_t *c);   /* host-local members (c itself on one host) */
gcl_comm_t *gcl_comm_leaders(gcl_comm_t *c); /* NULL if this rank is not a leader */
/* Set up the shared-memory segment a communicator will use (its own, or
 * its host-local communicator's when it spans hosts) while every member is
 * in the call that makes it (init, split). */
void gcl_comm_shm_eager(gcl_comm_t *c);
/* Open the shm segment of c's host (c must be on one host); collective over
 * c. 1 if usable, 0 if not (agreed by all members). */
int gcl_comm_shm(gcl_comm_t *c);
/* Free what gcl_mem_alloc gave on c without shared memory (comm_free). */
void gcl_mem_free_plain_all(gcl_comm_t *c);
/* The status st (not GCL_OK) of a shm op of c's segment that failed to
 * start or run, as gcl_last_error() gives it: a member lost names its rank
 * in c, world rank and host, as the transport does (GCL_ERR_TRANSPORT);
 * otherwise the segment's message. Returns st. */
gcl_status_t gcl_comm_shm_error(gcl_comm_t *c, const char *name, gcl_status_t st);
/* Blocking allgather of len bytes over c in the internal scope. */
gcl_status_t gcl_comm_allgather_internal(gcl_comm_t *c, int scope, const void *send, void *recv, size_t len);

/* decision */
gcl_status_t gcl_decision_init(gcl_ctx_t *ctx);
gcl_alg_t gcl_decide(const gcl_comm_t *c, gcl_coll_t coll, size_t bytes);
const char *gcl_alg_name(gcl_alg_t a);
const char *gcl_coll_name(gcl_coll_t c);
int gcl_shm_possible(const gcl_comm_t *c);

/* collectives (coll.c) */
/* The one path of every public collective call: validate, check
 * (GCL_DEBUG), choose the algorithm, then run it: req NULL (blocking) on
 * shared memory directly where it can (gcl_shm_direct), else as a request
 * waited for; req set: the request started, in *req. Each step once. */
gcl_status_t gcl_coll_post(gcl_comm_t *c, const gcl_args_t *a, gcl_request_t **req);
/* Point-to-point (p2p.c): validate, build and post a send or receive
 * request (the user's tag in the point-to-point scope); *req on success. */
gcl_status_t gcl_p2p_start(int is_send, const void *buf, size_t count, gcl_dtype_t dtype, int peer, int tag,
                           gcl_comm_t *comm, gcl_request_t **req);
/* GCL_DEBUG: allgather every member's call (and whether its own argument
 * check, local, failed); GCL_ERR_MISMATCH where they differ or another
 * member's arguments were invalid, local (with its message) where this
 * member's were. */
gcl_status_t gcl_debug_check(gcl_comm_t *c, const gcl_args_t *a, gcl_status_t local);

/* Call check (check.c): on the network path the members of every
 * collective exchange what they were called with (collective, count,
 * dtype, op, root, sequence number) in ceil(log2 size) rounds in the
 * GCL_SCOPE_DEBUG scope: partner rank ^ 2^i in round i when size is a
 * power of two, else dissemination (to rank + 2^i, from rank - 2^i). Where
 * any member's call differs, r fails on every member with GCL_ERR_MISMATCH
 * naming the lowest such rank and the field, before any data reached the
 * user's buffers; every message is matched, so the communicator stays
 * usable. coll.c sets r->check where it is to run; a builder whose messages
 * follow the rounds' pattern carries it (gcl_check_new, each round's
 * payload after the header), else coll.c adds it before the collective's
 * ops (gcl_s_call_check). */
typedef struct gcl_check gcl_check_t;
/* The most payload bytes a round carries: beyond, the copies into and out
 * of the check's areas cost more than a round of the check's own
 * (bench/results/libgcl-tuning.md). */
#define GCL_CHECK_CARRY_MAX 8192
/* The check of r's call a, carrying payload bytes in each round (clears
 * r->check); NULL after an allocation failure (r->err). */
gcl_check_t *gcl_check_new(gcl_request_t *r, const gcl_args_t *a, size_t payload);
int gcl_check_rounds(const gcl_comm_t *c);
/* Round i's partners: the member this one sends to and the one it
 * receives from (the same one when size is a power of two). */
void gcl_check_peers(const gcl_comm_t *c, int i, int *to, int *from);
/* The payload areas (payload bytes each, aligned for any dtype): what the
 * next round sends, and what it received. */
void *gcl_check_out(gcl_check_t *k);
void *gcl_check_in(gcl_check_t *k);
/* Add the next round after op dep: send the header and the out area,
 * receive into the in area, merge. Returns the merge op; after it the in
 * area holds the partner's payload (garbage where the calls differ) and
 * the out area may be rewritten. */
int gcl_check_round(gcl_request_t *r, gcl_check_t *k, int dep);
/* The same, with messages beside the header for payloads too large to
 * copy (size a power of two: the partner is rank ^ 2^i): bulk bytes from
 * src to the partner (bulk > 0) and expect bytes from it into dst (expect >
 * 0); *send_op, *recv_op: their ops, -1 where none (dst is garbage where
 * the calls differ). */
int gcl_check_round_bulk(gcl_request_t *r, gcl_check_t *k, int dep, const void *src, size_t bulk, void *dst,
                         size_t expect, int *send_op, int *recv_op);
/* The same with payloads of their own lengths this round: send_n bytes of
 * the out area go, recv_n are expected (both at most the payload given to
 * gcl_check_new; a message of another length means the calls differ). */
int gcl_check_round_n(gcl_request_t *r, gcl_check_t *k, int dep, size_t send_n, size_t recv_n);
/* The verdict after the last round and op dep: fails r where the calls
 * differ; the payloads may be used after it. Every round's messages must
 * be among its dependencies (a transfer still in flight when r fails would
 * be cancelled, which costs the peer's endpoint). */
int gcl_check_end(gcl_request_t *r, gcl_check_t *k, int dep);
/* The check with no payload, before every op of r so far. Returns r->err. */
gcl_status_t gcl_s_call_check(gcl_request_t *r, const gcl_args_t *a);

/* Small calls of every collective but the barrier carried by the call
 * check's rounds (carried.c, the "dissemination" algorithm): the bytes of
 * the area every member gathers for a call of the given bytes (the whole
 * array, as gcl_decide takes it; SIZE_MAX where that overflows), and the
 * builder. */
size_t gcl_carried_bytes(const gcl_comm_t *c, gcl_coll_t coll, size_t bytes);
gcl_status_t gcl_carried_build(gcl_request_t *r, const gcl_args_t *a);

/* builders, one per collective; alg already decided and applicable */
gcl_status_t gcl_allreduce_build(gcl_request_t *r, const gcl_args_t *a, gcl_alg_t alg);
gcl_status_t gcl_reduce_build(gcl_request_t *r, const gcl_args_t *a, gcl_alg_t alg);
gcl_status_t gcl_reduce_scatter_build(gcl_request_t *r, const gcl_args_t *a, gcl_alg_t alg);
gcl_status_t gcl_allgather_build(gcl_request_t *r, const gcl_args_t *a, gcl_alg_t alg);
gcl_status_t gcl_broadcast_build(gcl_request_t *r, const gcl_args_t *a, gcl_alg_t alg);
gcl_status_t gcl_alltoall_build(gcl_request_t *r, const gcl_args_t *a, gcl_alg_t alg);
gcl_status_t gcl_barrier_build(gcl_request_t *r, const gcl_args_t *a, gcl_alg_t alg);

/* Shared phases (phases.c; blocks: off[i], cnt[i] elements of block i, size blocks). */
typedef struct gcl_blocks {
    size_t *off, *cnt, maxcnt;
    int n;
} gcl_blocks_t;
int gcl_blocks_even(gcl_request_t *r, gcl_blocks_t *b, size_t count, int n);
/* Ring reduce-scatter: rank r ends with block r reduced,
 * in out_full + off[r] if out_full, else in final_r (intermediate blocks in
 * a workspace). in: each rank's full input. red[j] (nseg entries) receive
 * the final reduce op of each segment of block r; sends[] (nsteps * nseg,
 * may be NULL) the send ops, for callers that overwrite out_full. Every op
 * reading in waits for dep0. *nseg_out: segments (in: > 0 to impose). */
int gcl_ring_rs_phase(gcl_request_t *r, const char *in, char *out_full, char *final_r,
                      const gcl_blocks_t *b, unsigned step0, int dep0, int *red, int *sends, int *nseg_out);
/* Ring allgather of blocks in buf, rank r's block ready after
 * ops first[j] (per segment j; may be NULL); recv_after[s*nseg+j] (may be
 * NULL) is a dependency for the receive of step s, segment j. */
int gcl_ring_ag_phase(gcl_request_t *r, char *buf, const gcl_blocks_t *b, unsigned step0,
                      const int *first, const int *recv_after, int nseg);
/* Recursive halving reduce-scatter among pof2 virtual ranks (vmap[v] =
 * comm rank) over b (pof2 blocks) in acc: virtual rank v ends with block v
 * of acc reduced. Recursive doubling allgather, its mirror. Both start after
 * op dep and return their last op. */
int gcl_rh_phase(gcl_request_t *r, char *acc, const gcl_blocks_t *b, int vrank, int pof2, const int *vmap,
                 unsigned step0, int dep);
int gcl_rd_ag_phase(gcl_request_t *r, char *buf, const gcl_blocks_t *b, int vrank, int pof2, const int *vmap,
                    unsigned step0, int dep);
/* Segment j of block i (nseg segments of se elements): offset, count. */
void gcl_seg(const gcl_blocks_t *b, int i, int j, size_t se, size_t *off, size_t *cnt);
/* k-nomial tree: parent (-1 at the root) and children of
 * virtual rank v (root 0); returns the number of children. */
int gcl_knomial_tree(int v, int p, int radix, int *parent, int *children);
int gcl_knomial_radix(size_t bytes);
/* A child collective on sub (internal) after op dep; returns its op. */
int gcl_s_child(gcl_request_t *r, gcl_comm_t *sub, const gcl_args_t *a, int dep);
/* Number of pipelining segments for blocks of up to maxcnt elements. */
int gcl_nseg(const gcl_request_t *r, size_t maxcnt);
/* shm_coll.c: the "shm" algorithm as one op of r's schedule; the shm op a
 * describes started on shm; a blocking call run on c's segment without a
 * request (c's segment open; same results and errors as the request path). */
gcl_status_t gcl_shm_build(gcl_request_t *r, const gcl_args_t *a);
gcl_status_t gcl_shm_start_args(gcl_shm_t *shm, const gcl_args_t *a, gcl_shm_op_t **op);
gcl_status_t gcl_shm_direct(gcl_comm_t *c, const gcl_args_t *a);
/* Called by every wait loop on each unsuccessful poll (spin counts them):
 * yields the core every time when ranks outnumber cores (as Open MPI's
 * mpi_yield_when_idle), else every 256th poll. */
void gcl_idle(const gcl_ctx_t *ctx, unsigned spin);

static inline int gcl_is_pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }
static inline int gcl_pof2_below(int n) { int p = 1; while (p * 2 <= n) p *= 2; return p; }

#endif
