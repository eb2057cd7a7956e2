/* libgcl's shared-memory path (shm.h): what its files (shm_seg.c segment
 * layout and attach, shm_flow.c op queue and progress, shm_algos.c the
 * collectives, shm_store.c the choice of stores, shm_lost.c loss detection)
 * share.
 *
 * Segment layout (one POSIX shm object per communicator, page aligned):
 *   header line | per member: "in" line, "red" line, "desc" line (128 B
 *   apart, so no two members' flags share a line or an adjacent-line
 *   prefetch pair) |
 *   per member: B staging buffers of slot_bytes each (B = 3 unless
 *   GCL_SHM_NBUF says up to NBUF = 7).
 * An "in" line holds the member's in counter, B inline areas of 16
 * bytes, so a message of up to 16 bytes travels in the line its flag is in
 * (one cache-line transfer per peer), its rd counter, and its call word
 * ("call check" below; in, call word and the first 3 inline areas share
 * one 64-byte line). A "red" line holds the red counter
 * and who the member is (pid, pid namespace, start time: written at open,
 * read only to look for a lost member); the header line, the member found
 * lost, if any ("lost members" below). A "desc" line says where the
 * member's buffers of an allreduce are when they lie in registered memory
 * (shm_mem.h; ar_direct_decide below).
 *
 * Every operation consumes a range of global segment numbers g (1, 2, ...),
 * the same on every member because all start the same ops in the same order
 * with the same arguments; segment g uses buffer g % B of each member. Three
 * monotonic counters per member, each written only by that member with
 * release stores and read with acquire loads:
 *   in  = g: the member's data for segment g is in its buffer g % B, and it
 *            has finished reading every other member's buffers for all
 *            segments <= g - (B - 1);
 *   red = g: the member's reduced chunk of segment g is in its buffer;
 *   rd  = g: it has finished reading every segment <= g (set by broadcast
 *            readers, whose in cannot run past their op: in also says
 *            "my data is ready").
 * A member writes its buffer for segment g only once every member has
 * in >= g - 1 or rd >= g - B (then nobody still reads segment g - B, the
 * buffer's previous use). These rules are all the flow control there is: no
 * "done" flags, no resets, the copy-in of segment g + 1 overlaps the
 * reduction of g (a member runs up to B - 2 segments ahead of its copy-out),
 * and a broadcast root stages up to B segments ahead of its slowest reader
 * (it completes once every reader has started the op: "call check").
 *
 * Ops from 4 KiB (reductions) or 16 KiB write staging with ordinary or
 * streaming stores, chosen per op by timing (stage_nt_choose below).
 *
 * Algorithms (the caller's buffers are private; everything crosses the
 * staging buffers):
 *   allreduce, small (<= oneshot_max bytes): every member copies its input
 *     into its buffer and publishes; every member reduces all buffers in rank
 *     order (bit-identical results everywhere). One flag wait.
 *   allreduce / reduce, large: segments of n chunks; member j copies the
 *     chunks it does not own into its buffer, reduces chunk j over all
 *     members (its own part straight from its input) into the hole of its
 *     own buffer and its output, then copies the other reduced chunks out
 *     (reduce: only the root). Per member: about 2.5 bytes of memory traffic
 *     per byte for n = 2, the physical limit (docs/libgcl.md, shared memory).
 *   allreduce on registered memory (every member's buffers from
 *     gcl_shm_mem_alloc, above oneshot_max): no staging; member j reduces
 *     chunk j of every member's input into every member's output
 *     (ar_direct below).
 *   reduce_scatter: the same without the copy-out (result straight to recv).
 *   allgather: each member stages its piece, all copy every piece out.
 *   broadcast: the root stages, the others copy out (root stages B ahead).
 *   barrier: publish, wait for everyone.
 * Waiting never spins here: a step whose flag is not ready returns
 * GCL_IN_PROGRESS and the caller polls (yielding when oversubscribed).
 *
 * Call check (always on): the segment numbers above only agree while every
 * member starts the same ops with the same arguments. Each op n (numbered
 * from 1 when it becomes the head) writes a call word, its kind, dtype, op,
 * root, count and n packed (shm_call_word), into its in line with its first
 * flag (or after its first step), and completes only once it has seen every
 * other member's word of op n match (the flag reads of most ops bring the
 * line into the cache anyway), or its word of op n + 1. A word that differs
 * marks the segment broken (4) with a message naming the member and the
 * field: the op and every later one fail with GCL_ERR_MISMATCH on every
 * member, since every member finds one that differs from its own. One word
 * suffices: a member that wrote its word of op n + 1 completed op n, so it
 * saw every word of op n match its own; and it cannot write that of op
 * n + 2 before this member has completed op n. Reads of another member's
 * staging before the check stay inside the segment; the direct allreduce,
 * which writes into the others' buffers, waits for it. */
#ifndef GCL_SHM_IMPL_H
#define GCL_SHM_IMPL_H

#include "collectives/shm.h"

#include "collectives/clock.h"
#include "collectives/copy.h"
#include "collectives/errors.h"
#include "collectives/shm_mem.h"

#include <stdatomic.h>
#include <stdint.h>

#define LINE 128
#define NBUF 6 /* most staging buffers per member (in line: 2 * 8 + 6 * 16 + 8 <= LINE) */
#define INL_BYTES 16
#define SHM_MAGIC 0x67636c73686d3034ull /* "gclshm04" */
#define SUB_BYTES 8192                  /* reduce sub-block (stays in L1) */
#define ONESHOT_MAX_DEFAULT (16 * 1024)
/* Allreduces on registered memory run direct from 2 KiB (below, the
 * staged one-shot is as fast), or, with more members than cores, above
 * ONESHOT_MAX_DEFAULT: direct waits twice (for the others' buffers, then
 * their results) where a one-shot waits once, and each wait costs a turn of
 * the core there. Figures: bench/results/libgcl-tuning.md. */
#define DIRECT_MIN_DEFAULT 2048

typedef struct {
    _Atomic uint64_t in;
    _Atomic uint64_t call; /* call word of the member's latest op ("call check") */
    unsigned char inl[NBUF][INL_BYTES];
    _Atomic uint64_t rd; /* "read" counter (flow control below) */
} in_line_t;
_Static_assert(sizeof(in_line_t) <= LINE, "an in line fits its line");

/* A member's "red" line: its red counter, then who the member is (written
 * once at open, read by the others only when they look for a lost peer). */
typedef struct {
    _Atomic uint64_t red;
    _Atomic int32_t pid;     /* getpid() (0: not known) */
    int32_t pad;
    uint64_t start;          /* start time, clock ticks since boot (/proc/<pid>/stat
                              * field 22); 0: unknown */
    uint64_t ns_dev, ns_ino; /* its pid namespace (stat of /proc/self/ns/pid); 0: unknown */
} red_line_t;
_Static_assert(sizeof(red_line_t) <= LINE, "a red line fits its line");

/* A member's "desc" line: where its buffers of the allreduce that starts
 * at segment g are, when they lie in registered memory (ar_direct_decide). */
typedef struct {
    _Atomic uint64_t g;   /* the op's first segment; written last (release) */
    int32_t direct;       /* 1: both buffers registered, at (id, off) below */
    uint32_t in_id, out_id, pad;
    uint64_t in_off, out_off;
} desc_line_t;
_Static_assert(sizeof(desc_line_t) <= LINE, "a desc line fits its line");

typedef struct {
    uint64_t magic;
    uint64_t bytes;
    uint64_t slot;
    int32_t size;
    _Atomic int32_t lost;    /* 1 + the local rank a member found lost; 0: none */
    _Atomic int32_t gave_up; /* 1 + the local rank that abandoned an op after an
                              * error of its own (gcl_shm_abandon); 0: none */
} header_t;

/* op kinds; K_ALLTOALL is the call word of an alltoall alone (its data goes
 * on the network path), waited for as a barrier */
enum { K_ALLREDUCE, K_REDUCE, K_REDUCE_SCATTER, K_ALLGATHER, K_BROADCAST, K_BARRIER, K_ALLTOALL, K_COUNT };
const char *shm_kind_name(int kind);

/* Streaming stores into staging, chosen per op by measurement (stage_nt_*
 * below): per (kind, size class) the moving average of seconds per byte
 * with and without them. */
/* smaller ops: ordinary stores (GCL_SHM_STAGE_NT_MIN sets both). Reductions
 * from 2 KiB (where the cores share no cache, streaming stores pay from
 * there; 1 KiB gains nothing); broadcast and allgather from 16 KiB (at 8 KiB
 * the gain is mixed). Figures: bench/results/libgcl-tuning.md. */
#define NT_MIN_BYTES ((size_t)16 * 1024)
#define NT_MIN_RED_BYTES ((size_t)2 * 1024)
#define NT_BASE ((size_t)1024)           /* the first size class */
#define NT_CLASSES 20                    /* log2 size classes from NT_BASE */
#define NT_EXPLORE 32                    /* one op in this many tries the other way */
#define NT_WARM 3                        /* the first 2 x this ops of a class alternate */
typedef struct {
    double ema[2]; /* seconds per byte: [0] ordinary, [1] streaming; 0: none yet */
    uint64_t n;    /* ops of this class so far */
} nt_stat_t;

struct gcl_shm_op {
    gcl_shm_t *shm;
    gcl_shm_op_t *next;
    int kind, root, oneshot, inl, done;
    int held;         /* in the queue, not to run yet (gcl_shm_hold) */
    int nt;           /* outputs written with streaming stores (large) */
    int snt;          /* staging written with streaming stores (stage_nt) */
    int nt_key;       /* index into shm->ntst, -1: not timed */
    int nt_warm;      /* one of its class's first ops (stage_nt_update) */
    size_t bytes;     /* output bytes (the timing's unit) */
    int started;
    double t0;        /* first step, seconds */
    gcl_status_t status;
    const char *in;   /* this member's input */
    char *out;        /* this member's output (NULL: none) */
    size_t count, es; /* elements, element size */
    gcl_dtype_t dt;
    gcl_op_t op;
    uint64_t g0;      /* first global segment */
    size_t nseg, seg; /* segments; elements per segment (pieces for RS) */
    size_t k_in, k_red, k_out; /* next segment to copy in / reduce / copy out */
    int sub;          /* copy-out: members done within segment k_out */
    int direct;       /* allreduce: 0 undecided, 1 on registered buffers
                       * (ar_direct), -1 through staging */
    int posted;       /* its desc line is written (ar_direct_decide) */
    uint32_t num;     /* op number on the segment (from 1; "call check") */
    uint64_t word;    /* its call word */
    int empty;        /* count 0 among several: a barrier's one segment, for the call check */
    int stepped;      /* its part of the algorithm is done */
    int checked;      /* every member's call word matched */
    int ck;           /* members checked so far (in order, skipping this one) */
};

struct gcl_shm {
    int rank, size;
    size_t nbuf;      /* staging buffers per member, 3..NBUF */
    size_t slot, bytes, oneshot_max;
    size_t direct_min; /* allreduces from this size may run direct (ar_direct) */
    size_t stream_min; /* outputs from this size on bypass the cache */
    int stage_nt;      /* streaming stores into staging: -1 chosen per op, 0 no, 1 yes */
    size_t stage_nt_min, stage_nt_min_red; /* smaller ops (reductions: _red) write
                                            * staging with ordinary stores */
    nt_stat_t ntst[K_COUNT * NT_CLASSES];
    char *blk;         /* SUB_BYTES of scratch (reductions bound for staging) */
    char *base;
    char *data;
    uint64_t next_g;              /* next free global segment number */
    uint64_t *seen_in, *seen_red, *seen_rd; /* last values read from the peers */
    const char **srcs;            /* size entries: reduction sources */
    gcl_shm_op_t *head, *tail, *free_ops;
    int broken;        /* 1: an op was cancelled; 2: a member was lost (lost_*);
                        * 3: a member abandoned an op (lost_rank: which);
                        * 4: the members' calls differ (mismatch: how) */
    uint32_t nops;     /* ops started so far ("call check") */
    int call_pend;     /* call_word not written yet (shm_call_flush) */
    uint64_t call_word;
    char mismatch[320];
    /* lost members (peer_gone below): looked for only once the head op has
     * made no progress for LOST_IDLE_S */
    unsigned idle_polls;
    uint64_t idle_mark[5];        /* the head op's progress when last looked at */
    double idle_next;             /* when to look at the members next */
    int lost_rank, lost_pid;      /* the member found lost, its pid */
    gcl_shm_regions_t mem;        /* registered memory (gcl_shm_mem_alloc) */
    gcl_shm_allgather_fn allgather;
    void *allgather_arg;
    char **din, **dout;           /* size entries: the direct op's buffers */
    uint64_t direct_ops;          /* allreduce calls run direct so far */
};

#define LOST_POLLS 16 /* a power of 2 */
#define LOST_IDLE_S 0.2
#define LOST_RECHECK_S 0.1

/* ------------------------------------------------ flags and flow control */

static inline in_line_t *in_line(const gcl_shm_t *s, int j)
{
    return (in_line_t *)(void *)(s->base + LINE + (size_t)j * 3 * LINE);
}
static inline desc_line_t *desc_line(const gcl_shm_t *s, int j)
{
    return (desc_line_t *)(void *)(s->base + LINE + (size_t)j * 3 * LINE + 2 * LINE);
}
static inline red_line_t *red_line(const gcl_shm_t *s, int j)
{
    return (red_line_t *)(void *)(s->base + LINE + (size_t)j * 3 * LINE + LINE);
}
static inline _Atomic uint64_t *red_ctr(const gcl_shm_t *s, int j)
{
    return &red_line(s, j)->red;
}
static inline char *buf(const gcl_shm_t *s, int j, uint64_t g, int inl)
{
    if (inl)
        return (char *)in_line(s, j)->inl[g % s->nbuf];
    return s->data + ((size_t)j * s->nbuf + g % s->nbuf) * s->slot;
}
/* The head op's call word ("call check"), written with the op's first flag
 * (one write of the line the others poll) or after its first step. */
static inline void shm_call_flush(gcl_shm_t *s)
{
    s->call_pend = 0;
    atomic_store_explicit(&in_line(s, s->rank)->call, s->call_word, memory_order_release);
}
static inline void publish_in(gcl_shm_t *s, uint64_t g)
{
    if (s->call_pend)
        shm_call_flush(s);
    atomic_store_explicit(&in_line(s, s->rank)->in, g, memory_order_release);
}
static inline void publish_red(gcl_shm_t *s, uint64_t g)
{
    if (s->call_pend)
        shm_call_flush(s);
    atomic_store_explicit(red_ctr(s, s->rank), g, memory_order_release);
}
static inline int in_ready(gcl_shm_t *s, int j, uint64_t g)
{
    if (s->seen_in[j] >= g)
        return 1;
    s->seen_in[j] = atomic_load_explicit(&in_line(s, j)->in, memory_order_acquire);
    return s->seen_in[j] >= g;
}
static inline int red_ready(gcl_shm_t *s, int j, uint64_t g)
{
    if (s->seen_red[j] >= g)
        return 1;
    s->seen_red[j] = atomic_load_explicit(red_ctr(s, j), memory_order_acquire);
    return s->seen_red[j] >= g;
}
static inline int all_in(gcl_shm_t *s, uint64_t g)
{
    for (int j = 0; j < s->size; j++)
        if (j != s->rank && !in_ready(s, j, g))
            return 0;
    return 1;
}
static inline void publish_rd(gcl_shm_t *s, uint64_t g)
{
    if (s->call_pend)
        shm_call_flush(s);
    atomic_store_explicit(&in_line(s, s->rank)->rd, g, memory_order_release);
}
/* Has member j finished reading segment g - nbuf (the previous use of
 * segment g's buffers): in >= g - 1 or rd >= g - nbuf. */
static inline int read_before(gcl_shm_t *s, int j, uint64_t g)
{
    if (in_ready(s, j, g - 1) || s->seen_rd[j] + s->nbuf >= g)
        return 1;
    s->seen_rd[j] = atomic_load_explicit(&in_line(s, j)->rd, memory_order_acquire);
    return s->seen_rd[j] + s->nbuf >= g;
}
/* May this member overwrite its buffer for segment g? */
static inline int can_write(gcl_shm_t *s, uint64_t g)
{
    for (int j = 0; j < s->size; j++)
        if (j != s->rank && !read_before(s, j, g))
            return 0;
    return 1;
}

static inline size_t round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }

/* A copy with streaming stores or ordinary ones. */
static inline void copy_nt(int stream, void *dst, const void *src, size_t n)
{
    if (stream)
        gcl_copy_stream(dst, src, n);
    else
        gcl_copy(dst, src, n);
}
/* Into the caller's output buffer; into this member's staging. */
static inline void out_copy(const gcl_shm_op_t *o, void *dst, const void *src, size_t n)
{
    copy_nt(o->nt, dst, src, n);
}
static inline void stage_copy(const gcl_shm_op_t *o, void *dst, const void *src, size_t n)
{
    copy_nt(o->snt, dst, src, n);
}
static inline size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* ------------------------------------------------ between the shm_*.c files */

/* shm_flow.c: an op of kind taken from the segment's free list (errors:
 * GCL_ERR_INVALID_ARG for NULL out / s, the segment's own when broken,
 * GCL_ERR_NO_MEMORY); its segments numbered and queued (shm_op_post); back
 * to the free list. */
gcl_status_t shm_op_new(gcl_shm_t *s, int kind, const char *what, gcl_shm_op_t **out, gcl_shm_op_t **op);
gcl_status_t shm_op_post(gcl_shm_op_t *o, size_t nseg, gcl_shm_op_t **out);
void shm_op_release(gcl_shm_op_t *o);
/* shm_algos.c: advance the head op o; 1 when its part is done. */
int shm_step(gcl_shm_op_t *o);
/* shm_store.c: the stores op o writes staging with (o->snt), and its
 * timing once done; the last-level cache's size in bytes. */
void shm_stage_nt_choose(gcl_shm_op_t *o);
void shm_stage_nt_update(gcl_shm_op_t *o);
size_t shm_llc_bytes(void);
/* shm_check.c: the call word of op o (o->word, written with its first flag:
 * shm_call_flush; ops without segments are checked already); the check of o
 * against the other members' words: 1 all match (o->checked), 0 not all
 * there yet, -1 one differs (the segment is broken, 4). */
void shm_call_post(gcl_shm_op_t *o);
int shm_call_check(gcl_shm_op_t *o);
/* Has member j written its call word of op o (or of its next op) yet? */
int shm_call_seen(const gcl_shm_op_t *o, int j);
/* shm_lost.c: who this member is (at open); the head op h found nothing to
 * do again: 1 when a member is now known lost; the error of every op of a
 * broken segment. */
void shm_publish_identity(gcl_shm_t *s);
int shm_lost_check(gcl_shm_t *s, const gcl_shm_op_t *h);
gcl_status_t shm_broken_error(const gcl_shm_t *s, const char *what);

#endif
