/* libgcl's shared-memory path (shm.h).
 *
 * Segment layout (one POSIX shm object per communicator, page aligned):
 *   header line | per member: "in" line, "red" line, "desc" line (128 B
 *   apart, so no two members' flags share a line or an adjacent-line
 *   prefetch pair) |
 *   per member: B staging buffers of slot_bytes each (B = 3 unless
 *   GCL_SHM_NBUF says up to NBUF = 7).
 * An "in" line holds the member's in counter, B inline areas of 16
 * bytes, so a message of up to 16 bytes travels in the line its flag is in
 * (one cache-line transfer per peer), and its rd counter. A "red" line holds the red counter
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
 * and a broadcast root runs up to B segments ahead of its slowest reader,
 * across ops (as an MPI root's eager sends do).
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
 *     per byte for n = 2, the physical limit (notes/collectives.md).
 *   allreduce on registered memory (every member's buffers from
 *     gcl_shm_mem_alloc, above oneshot_max): no staging; member j reduces
 *     chunk j of every member's input into every member's output
 *     (ar_direct below).
 *   reduce_scatter: the same without the copy-out (result straight to recv).
 *   allgather: each member stages its piece, all copy every piece out.
 *   broadcast: the root stages, the others copy out (root runs B ahead).
 *   barrier: publish, wait for everyone.
 * Waiting never spins here: a step whose flag is not ready returns
 * GCL_IN_PROGRESS and the caller polls (yielding when oversubscribed). */
#include "collectives/shm.h"

#include "collectives/clock.h"
#include "collectives/copy.h"
#include "collectives/errors.h"
#include "collectives/reduce_local.h"
#include "collectives/shm_mem.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define LINE 128
#define NBUF 7 /* most staging buffers per member (in line: 8 + 7 * 16 + 8 <= LINE) */
#define INL_BYTES 16
#define SHM_MAGIC 0x67636c73686d3033ull /* "gclshm03" */
#define SUB_BYTES 8192                  /* reduce sub-block (stays in L1) */
#define ONESHOT_MAX_DEFAULT (16 * 1024)
/* Allreduces on registered memory run direct from 2 KiB (2 ranks: 2 KiB
 * 1.05 -> 0.94 us, 4 KiB 1.47 -> 0.88, 1 KiB 0.79 -> 0.90), or, with more
 * members than cores, above ONESHOT_MAX_DEFAULT: direct waits twice (for
 * the others' buffers, then their results) where a one-shot waits once,
 * and each wait costs a turn of the core there (4 ranks on 2 cores: 4 KiB
 * 12.9 -> 18.7 us, 16 KiB 19.1 -> 19.9, 32 KiB 23.9 -> 20.0). */
#define DIRECT_MIN_DEFAULT 2048

typedef struct {
    _Atomic uint64_t in;
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

enum { K_ALLREDUCE, K_REDUCE, K_REDUCE_SCATTER, K_ALLGATHER, K_BROADCAST, K_BARRIER, K_COUNT };

/* Streaming stores into staging, chosen per op by measurement (stage_nt_*
 * below): per (kind, size class) the moving average of seconds per byte
 * with and without them. */
/* smaller ops: ordinary stores (GCL_SHM_STAGE_NT_MIN sets both). Reductions
 * from 2 KiB (slow state: 4-8 KiB allreduce 3.6-8.6 us -> 2.2-5.9, 2 KiB
 * 2.03 -> 1.38 us; fast state +3-10%; 1 KiB gains nothing); broadcast and
 * allgather from 16 KiB (at 8 KiB mixed). */
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
                        * 3: a member abandoned an op (lost_rank: which) */
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

/* ------------------------------------------------------------- helpers */

static gcl_status_t broken_error(const gcl_shm_t *s, const char *what);

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
static inline void publish_in(gcl_shm_t *s, uint64_t g)
{
    atomic_store_explicit(&in_line(s, s->rank)->in, g, memory_order_release);
}
static inline void publish_red(gcl_shm_t *s, uint64_t g)
{
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
static int all_in(gcl_shm_t *s, uint64_t g)
{
    for (int j = 0; j < s->size; j++)
        if (j != s->rank && !in_ready(s, j, g))
            return 0;
    return 1;
}
static inline void publish_rd(gcl_shm_t *s, uint64_t g)
{
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

/* dst[0, k) = element-wise reduction of src[j] + off (bytes) over the n
 * sources in rank order, AVG divided; dst may equal src[0] + off only. */
static void reduce_into(const gcl_shm_op_t *o, char *dst, const char *const *src, int n, size_t off,
                        size_t k)
{
    if (n == 1)
        gcl_copy(dst, src[0] + off, k * o->es);
    else
        gcl_reduce_local3(dst, src[0] + off, src[1] + off, k, o->dt, o->op);
    for (int j = 2; j < n; j++)
        gcl_reduce_local(dst, src[j] + off, k, o->dt, o->op);
    if (o->op == GCL_AVG)
        gcl_reduce_finish_avg(dst, k, o->dt, n);
}

/* Reduce n sources (src[j], rank order) of m elements into dst (which may
 * equal src[0] only; staging when to_stage, then written as stage_copy
 * does), through L1-sized blocks, each then also copied to copy_to (if not
 * NULL); AVG divides at the end. */
static void reduce_sources(const gcl_shm_op_t *o, char *dst, int to_stage,
                           const char *const *src, int n, size_t m, char *copy_to)
{
    size_t blk = SUB_BYTES / o->es;
    for (size_t i = 0; i < m; i += blk) {
        size_t k = min_sz(blk, m - i), off = i * o->es;
        int via_blk = to_stage && o->snt;
        char *d = via_blk ? o->shm->blk : dst + off;
        reduce_into(o, d, src, n, off, k);
        if (via_blk)
            stage_copy(o, dst + off, d, k * o->es);
        if (copy_to)
            out_copy(o, copy_to + off, d, k * o->es);
    }
}

/* ---------------------------------------------------- allreduce / reduce */

/* Chunk c of segment k (allreduce / reduce streaming): element range
 * [*lo, *hi) relative to the segment start; *stride = chunk stride. */
static void ar_chunk(const gcl_shm_op_t *o, size_t k, int c, size_t *lo, size_t *hi,
                     size_t *stride)
{
    int n = o->shm->size;
    size_t len = min_sz(o->seg, o->count - k * o->seg);
    size_t le = o->es >= 64 ? 1 : 64 / o->es;
    size_t C = round_up((len + (size_t)n - 1) / (size_t)n, le);
    *stride = C;
    *lo = min_sz((size_t)c * C, len);
    *hi = min_sz((size_t)(c + 1) * C, len);
}

static int ar_oneshot(gcl_shm_op_t *o)
{
    gcl_shm_t *s = o->shm;
    uint64_t g = o->g0;
    size_t bytes = o->count * o->es;
    if (o->k_in == 0) {
        if (!can_write(s, g))
            return 0;
        stage_copy(o, buf(s, s->rank, g, o->inl), o->in, bytes);
        publish_in(s, g);
        o->k_in = 1;
    }
    if (o->kind == K_REDUCE && s->rank != o->root)
        return 1;
    if (!all_in(s, g))
        return 0;
    for (int j = 0; j < s->size; j++)
        s->srcs[j] = buf(s, j, g, o->inl);
    reduce_into(o, o->out, s->srcs, s->size, 0, o->count);
    return 1;
}

static void ar_copyin(gcl_shm_op_t *o, size_t k)
{
    gcl_shm_t *s = o->shm;
    size_t lo, hi, C, base = k * o->seg, len = min_sz(o->seg, o->count - base);
    ar_chunk(o, k, s->rank, &lo, &hi, &C);
    char *b = buf(s, s->rank, o->g0 + k, 0);
    const char *in = o->in + base * o->es;
    stage_copy(o, b, in, lo * o->es); /* chunks before mine, then after */
    stage_copy(o, b + hi * o->es, in + hi * o->es, (len - hi) * o->es);
}

static void ar_reduce(gcl_shm_op_t *o, size_t k)
{
    gcl_shm_t *s = o->shm;
    uint64_t g = o->g0 + k;
    size_t lo, hi, C;
    ar_chunk(o, k, s->rank, &lo, &hi, &C);
    if (hi == lo)
        return;
    const char **sp = s->srcs;
    size_t off = lo * o->es;
    for (int j = 0; j < s->size; j++)
        sp[j] = j == s->rank ? o->in + (k * o->seg) * o->es + off : buf(s, j, g, 0) + off;
    int want_out = o->kind == K_ALLREDUCE || s->rank == o->root;
    char *out = want_out ? o->out + (k * o->seg) * o->es + off : NULL;
    /* in place, the own input may be read after dst's first block: dst is
     * the staging hole, never the input */
    reduce_sources(o, buf(s, s->rank, g, 0) + off, 1, sp, s->size, hi - lo, out);
}

/* Copy out the other members' reduced chunks of segment k (as they become
 * ready); 1 when all are done. */
static int ar_copyout(gcl_shm_op_t *o, size_t k)
{
    gcl_shm_t *s = o->shm;
    uint64_t g = o->g0 + k;
    if (o->kind == K_REDUCE && s->rank != o->root)
        return 1;
    for (; o->sub < s->size - 1; o->sub++) {
        int j = (s->rank + 1 + o->sub) % s->size;
        if (!red_ready(s, j, g))
            return 0;
        size_t lo, hi, C;
        ar_chunk(o, k, j, &lo, &hi, &C);
        out_copy(o, o->out + (k * o->seg + lo) * o->es, buf(s, j, g, 0) + lo * o->es,
               (hi - lo) * o->es);
    }
    o->sub = 0;
    return 1;
}

/* ----------------------------------- allreduce on registered buffers */

/* Does the allreduce run direct: every member's input and output lie in
 * registered memory (gcl_shm_mem_alloc). Each member posts where its
 * buffers are in its desc line; one whose buffers are not registered goes
 * through staging at once, the others wait for every desc line and go
 * direct only if all are registered (so all members choose alike: those
 * not registered never wait). 0: not known yet. */
static int ar_direct_decide(gcl_shm_op_t *o)
{
    gcl_shm_t *s = o->shm;
    size_t bytes = o->count * o->es;
    if (!o->posted) {
        desc_line_t *d = desc_line(s, s->rank);
        d->direct = gcl_shm_regions_find(&s->mem, s->rank, o->in, bytes, &d->in_id, &d->in_off) &&
                    gcl_shm_regions_find(&s->mem, s->rank, o->out, bytes, &d->out_id, &d->out_off);
        atomic_store_explicit(&d->g, o->g0, memory_order_release);
        if (!d->direct)
            o->direct = -1;
        o->posted = 1;
    }
    if (o->direct != 0)
        return 1;
    for (int j = 0; j < s->size; j++) {
        desc_line_t *d = desc_line(s, j);
        if (atomic_load_explicit(&d->g, memory_order_acquire) != o->g0)
            return 0;
        s->din[j] = d->direct ? gcl_shm_regions_addr(&s->mem, d->in_id, j, d->in_off, bytes) : NULL;
        s->dout[j] = d->direct ? gcl_shm_regions_addr(&s->mem, d->out_id, j, d->out_off, bytes) : NULL;
        if (s->din[j] == NULL || s->dout[j] == NULL)
            o->direct = -1; /* (keeps reading: all members decide from all lines) */
    }
    if (o->direct == 0)
        o->direct = 1;
    return 1;
}

/* Allreduce on registered buffers: member r reduces chunk r of every
 * member's input (L1-sized blocks) and writes it into every member's
 * output, then waits until all have done so. Per member (n members, N
 * bytes) it reads N and writes N, (n-1)/n of each in the others' memory:
 * no staging, half the traffic of the staged path. In place is safe:
 * only member r reads or writes chunk r of anyone's buffer. */
static int ar_direct(gcl_shm_op_t *o)
{
    gcl_shm_t *s = o->shm;
    uint64_t last = o->g0 + o->nseg - 1;
    if (o->k_red == 0) {
        size_t le = o->es >= 64 ? 1 : 64 / o->es;
        size_t C = round_up((o->count + (size_t)s->size - 1) / (size_t)s->size, le);
        size_t lo = min_sz((size_t)s->rank * C, o->count), hi = min_sz(lo + C, o->count);
        size_t blk = SUB_BYTES / o->es;
        for (size_t i = lo; i < hi; i += blk) {
            size_t k = min_sz(blk, hi - i), off = i * o->es;
            reduce_into(o, s->blk, (const char *const *)s->din, s->size, off, k);
            for (int j = 0; j < s->size; j++)
                out_copy(o, s->dout[(s->rank + j) % s->size] + off, s->blk, k * o->es);
        }
        publish_red(s, last);
        publish_in(s, last); /* (no staging was used: later ops may write theirs) */
        o->k_in = o->k_red = o->nseg;
    }
    for (int j = 0; j < s->size; j++)
        if (j != s->rank && !red_ready(s, j, last))
            return 0;
    o->k_out = o->nseg;
    s->direct_ops++;
    return 1;
}

static int ar_step(gcl_shm_op_t *o)
{
    gcl_shm_t *s = o->shm;
    if (o->kind == K_ALLREDUCE && o->direct >= 0 && o->count * o->es >= s->direct_min) {
        if (!ar_direct_decide(o))
            return 0;
        if (o->direct > 0)
            return ar_direct(o);
    }
    if (o->oneshot)
        return ar_oneshot(o);
    for (;;) {
        if (o->k_in < o->nseg && o->k_in == o->k_red && o->k_out + s->nbuf - 2 >= o->k_in &&
            can_write(s, o->g0 + o->k_in)) {
            ar_copyin(o, o->k_in);
            publish_in(s, o->g0 + o->k_in);
            o->k_in++;
        } else if (o->k_red < o->k_in && all_in(s, o->g0 + o->k_red)) {
            ar_reduce(o, o->k_red);
            publish_red(s, o->g0 + o->k_red);
            o->k_red++;
        } else if (o->k_out < o->k_red && ar_copyout(o, o->k_out)) {
            o->k_out++;
        } else {
            break;
        }
    }
    return o->k_out == o->nseg;
}

/* -------------------------------------------------------- reduce_scatter */

static int rs_step(gcl_shm_op_t *o)
{
    gcl_shm_t *s = o->shm;
    int n = s->size;
    for (;;) {
        size_t P = o->seg;
        if (o->k_in < o->nseg && o->k_in == o->k_red && can_write(s, o->g0 + o->k_in)) {
            size_t k = o->k_in, len = min_sz(P, o->count - k * P);
            char *b = buf(s, s->rank, o->g0 + k, o->inl);
            for (int c = 0; c < n; c++)
                if (c != s->rank)
                    stage_copy(o, b + (size_t)c * P * o->es,
                               o->in + ((size_t)c * o->count + k * P) * o->es, len * o->es);
            publish_in(s, o->g0 + k);
            o->k_in++;
        } else if (o->k_red < o->k_in && all_in(s, o->g0 + o->k_red)) {
            size_t k = o->k_red, len = min_sz(P, o->count - k * P);
            const char **sp = s->srcs;
            for (int j = 0; j < n; j++)
                sp[j] = j == s->rank
                            ? o->in + ((size_t)j * o->count + k * P) * o->es
                            : buf(s, j, o->g0 + k, o->inl) + (size_t)s->rank * P * o->es;
            /* dst may equal src[0] only (in place, rank 0) */
            reduce_sources(o, o->out + k * P * o->es, 0, sp, n, len, NULL);
            o->k_red++;
        } else {
            break;
        }
    }
    return o->k_red == o->nseg;
}

/* ------------------------------------------------------------- allgather */

static int ag_step(gcl_shm_op_t *o)
{
    gcl_shm_t *s = o->shm;
    int n = s->size;
    size_t E = o->seg;
    for (;;) {
        if (o->k_in < o->nseg && o->k_out + s->nbuf - 2 >= o->k_in &&
            can_write(s, o->g0 + o->k_in)) {
            size_t k = o->k_in, len = min_sz(E, o->count - k * E) * o->es;
            const char *src = o->in + k * E * o->es;
            stage_copy(o, buf(s, s->rank, o->g0 + k, o->inl), src, len);
            char *mine = o->out + ((size_t)s->rank * o->count + k * E) * o->es;
            if (mine != src)
                gcl_copy(mine, src, len);
            publish_in(s, o->g0 + k);
            o->k_in++;
            continue;
        }
        if (o->k_out < o->k_in) {
            size_t k = o->k_out, len = min_sz(E, o->count - k * E) * o->es;
            for (; o->sub < n - 1; o->sub++) {
                int j = (s->rank + 1 + o->sub) % n;
                if (!in_ready(s, j, o->g0 + k))
                    break;
                out_copy(o, o->out + ((size_t)j * o->count + k * E) * o->es,
                       buf(s, j, o->g0 + k, o->inl), len);
            }
            if (o->sub == n - 1) {
                o->sub = 0;
                o->k_out++;
                continue;
            }
        }
        break;
    }
    return o->k_out == o->nseg;
}

/* ------------------------------------------------------------- broadcast */

static int bc_step(gcl_shm_op_t *o)
{
    gcl_shm_t *s = o->shm;
    size_t E = o->seg;
    uint64_t last = o->g0 + o->nseg - 1;
    if (s->rank == o->root) {
        while (o->k_in < o->nseg && can_write(s, o->g0 + o->k_in)) {
            size_t k = o->k_in;
            stage_copy(o, buf(s, s->rank, o->g0 + k, o->inl), o->out + k * E * o->es,
                       min_sz(E, o->count - k * E) * o->es);
            publish_in(s, o->g0 + k);
            o->k_in++;
        }
        return o->k_in == o->nseg;
    }
    if (o->k_in == 0) { /* nothing before g0 is read any more */
        publish_rd(s, o->g0 - 1);
        o->k_in = 1;
    }
    while (o->k_out < o->nseg && in_ready(s, o->root, o->g0 + o->k_out)) {
        size_t k = o->k_out;
        out_copy(o, o->out + k * E * o->es, buf(s, o->root, o->g0 + k, o->inl),
               min_sz(E, o->count - k * E) * o->es);
        o->k_out++;
        /* read up to k: the root may stage up to k + nbuf, into later ops */
        publish_rd(s, o->g0 + k);
    }
    if (o->k_out < o->nseg)
        return 0;
    publish_in(s, last);
    return 1;
}

/* --------------------------------------------------------------- barrier */

static int ba_step(gcl_shm_op_t *o)
{
    if (o->k_in == 0) {
        publish_in(o->shm, o->g0);
        o->k_in = 1;
    }
    return all_in(o->shm, o->g0);
}

static int step(gcl_shm_op_t *o)
{
    switch (o->kind) {
    case K_ALLREDUCE:
    case K_REDUCE: return ar_step(o);
    case K_REDUCE_SCATTER: return rs_step(o);
    case K_ALLGATHER: return ag_step(o);
    case K_BROADCAST: return bc_step(o);
    default: return ba_step(o);
    }
}

/* ------------------------------------------------------------ op queue */

static void op_release(gcl_shm_op_t *o)
{
    gcl_shm_t *s = o->shm;
    o->next = s->free_ops;
    s->free_ops = o;
}

static gcl_status_t op_new(gcl_shm_t *s, int kind, const char *what, gcl_shm_op_t **out,
                           gcl_shm_op_t **op)
{
    if (out == NULL)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_shm_%s: NULL op pointer", what);
    *out = NULL;
    if (s == NULL)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_shm_%s: NULL segment", what);
    if (s->broken)
        return broken_error(s, what);
    gcl_shm_op_t *o = s->free_ops;
    if (o != NULL)
        s->free_ops = o->next;
    else if ((o = malloc(sizeof(*o))) == NULL)
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_shm_%s: out of memory", what);
    memset(o, 0, sizeof(*o));
    o->shm = s;
    o->kind = kind;
    *op = o;
    return GCL_OK;
}

/* ------------------------------------- streaming stores into staging */

/* A member's staging is read by the others. Where two cores share a cache,
 * ordinary stores leave it there for them (fastest); where they do not (on
 * this project's VM the host places the vCPUs so from time to time, for
 * seconds or a whole process: docs/libgcl.md), every line the reader takes
 * is a dirty line in the writer's cache, and streaming stores, which send
 * it to memory, were 4-5x faster (2 ranks, 2-16 MiB) while costing 1.3-2x
 * when the cache is shared. So each member times its own ops and picks, per
 * (kind, size class), the faster way by a moving average, trying the other
 * way one op in NT_EXPLORE (a bandit; every member counts the same ops, so
 * all try it in the same op). Correctness does not depend on the choice:
 * it changes how a member writes its staging, not what or when. */

static void stage_nt_choose(gcl_shm_op_t *o)
{
    size_t bytes = o->bytes;
    gcl_shm_t *s = o->shm;
    o->nt_key = -1;
    o->snt = 0;
    int red = o->kind == K_ALLREDUCE || o->kind == K_REDUCE || o->kind == K_REDUCE_SCATTER;
    if (bytes < (red ? s->stage_nt_min_red : s->stage_nt_min) || o->inl || o->nseg == 0 ||
        o->kind == K_BARRIER)
        return;
    if (s->stage_nt >= 0) {
        o->snt = s->stage_nt;
        return;
    }
    int c = 0;
    while (c < NT_CLASSES - 1 && (NT_BASE << (c + 1)) <= bytes)
        c++;
    o->nt_key = o->kind * NT_CLASSES + c;
    nt_stat_t *t = &s->ntst[o->nt_key];
    uint64_t k = t->n++;
    if (k < 2 * NT_WARM) { /* both ways, in turn (every member counts the same ops) */
        o->snt = (int)(k & 1);
        o->nt_warm = 1;
        return;
    }
    if (t->ema[0] == 0 || t->ema[1] == 0) { /* (a warm op not timed) */
        o->snt = t->ema[0] != 0;
        return;
    }
    int best = t->ema[1] < t->ema[0];
    o->snt = k % NT_EXPLORE == NT_EXPLORE - 1 ? !best : best;
}

/* A timed op is done: fold its seconds per byte into its mode's average
 * (the mode it tried against the other's average replaces it outright).
 * The first ops of a class keep each mode's best: one op slowed by page
 * faults or a neighbour must not settle the choice for the next 32. */
static void stage_nt_update(gcl_shm_op_t *o)
{
    if (o->nt_key < 0 || !o->started)
        return;
    nt_stat_t *t = &o->shm->ntst[o->nt_key];
    double v = (gcl_now() - o->t0) / (double)o->bytes;
    double *e = &t->ema[o->snt], other = t->ema[!o->snt];
    if (o->nt_warm)
        *e = *e == 0 || v < *e ? v : *e;
    else if (*e == 0 || (other != 0 && *e > other))
        *e = v;
    else
        *e = 0.75 * *e + 0.25 * v;
}

/* Number the op's segments, queue it, and try a first step. */
static gcl_status_t op_post(gcl_shm_op_t *o, size_t nseg, gcl_shm_op_t **out)
{
    gcl_shm_t *s = o->shm;
    o->bytes = o->count * o->es * (o->kind == K_ALLGATHER ? (size_t)s->size : 1);
    o->nt = o->bytes > 0 && o->bytes >= s->stream_min;
    o->nseg = nseg;
    stage_nt_choose(o);
    o->g0 = s->next_g;
    s->next_g += nseg;
    *out = o;
    if (nseg == 0 && s->head == NULL) { /* nothing to wait for */
        o->done = 1;
        return GCL_OK;
    }
    if (s->tail)
        s->tail->next = o;
    else
        s->head = o;
    s->tail = o;
    o->next = NULL;
    return GCL_OK;
}

static gcl_status_t check_common(gcl_shm_t *s, const char *what, size_t count, gcl_dtype_t dt,
                                 int op, int root)
{
    if ((unsigned)dt >= GCL_DTYPE_COUNT)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_shm_%s: bad dtype %d", what,
                    (int)dt);
    if (op >= 0 && (unsigned)op >= GCL_OP_COUNT)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_shm_%s: bad op %d", what, op);
    if (root < -1 || root >= s->size)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_shm_%s: root %d out of range [0, %d)", what, root, s->size);
    (void)count;
    return GCL_OK;
}

#define NULLBUF(p, what)                                                        \
    gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_shm_%s: NULL %s buffer", what, p)

/* allreduce and reduce */
static gcl_status_t reduce_start(gcl_shm_t *s, int kind, const char *what, const void *send,
                                 void *recv, size_t count, gcl_dtype_t dt, gcl_op_t op, int root,
                                 gcl_shm_op_t **out)
{
    gcl_shm_op_t *o;
    gcl_status_t st = op_new(s, kind, what, out, &o);
    if (st != GCL_OK)
        return st;
    st = check_common(s, what, count, dt, (int)op, root);
    int has_out = kind == K_ALLREDUCE || s->rank == root;
    if (st == GCL_OK && count > 0) {
        if (send == NULL || (send == GCL_IN_PLACE && !has_out))
            st = NULLBUF("send", what);
        else if (has_out && recv == NULL)
            st = NULLBUF("receive", what);
    }
    if (st != GCL_OK) {
        op_release(o);
        return st;
    }
    o->in = send == GCL_IN_PLACE ? recv : send;
    o->out = has_out ? recv : NULL;
    o->count = count;
    o->dt = dt;
    o->op = op;
    o->root = root;
    o->es = gcl_dtype_size(dt);
    size_t bytes = count * o->es, nseg;
    if (s->size == 1) { /* local copy, no segments */
        if (count > 0 && o->out != o->in)
            gcl_copy(o->out, o->in, bytes);
        nseg = 0;
    } else if (bytes <= s->oneshot_max && bytes <= s->slot) {
        o->oneshot = 1;
        o->inl = bytes <= INL_BYTES;
        nseg = count > 0;
    } else {
        size_t le = o->es >= 64 ? 1 : 64 / o->es;
        size_t C = s->slot / o->es / (size_t)s->size / le * le;
        o->seg = C * (size_t)s->size;
        nseg = (count + o->seg - 1) / o->seg;
    }
    return op_post(o, nseg, out);
}

gcl_status_t gcl_shm_allreduce_start(gcl_shm_t *shm, const void *send, void *recv, size_t count,
                                     gcl_dtype_t dtype, gcl_op_t op, gcl_shm_op_t **out)
{
    return reduce_start(shm, K_ALLREDUCE, "allreduce", send, recv, count, dtype, op, -1, out);
}

gcl_status_t gcl_shm_reduce_start(gcl_shm_t *shm, const void *send, void *recv, size_t count,
                                  gcl_dtype_t dtype, gcl_op_t op, int root, gcl_shm_op_t **out)
{
    if (shm != NULL && (root < 0 || root >= shm->size)) {
        if (out)
            *out = NULL;
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_shm_reduce: root %d out of range [0, %d)", root, shm->size);
    }
    return reduce_start(shm, K_REDUCE, "reduce", send, recv, count, dtype, op, root, out);
}

gcl_status_t gcl_shm_reduce_scatter_start(gcl_shm_t *s, const void *send, void *recv,
                                          size_t count, gcl_dtype_t dt, gcl_op_t op,
                                          gcl_shm_op_t **out)
{
    gcl_shm_op_t *o;
    gcl_status_t st = op_new(s, K_REDUCE_SCATTER, "reduce_scatter", out, &o);
    if (st != GCL_OK)
        return st;
    st = check_common(s, "reduce_scatter", count, dt, (int)op, -1);
    if (st == GCL_OK && count > 0 && (send == NULL || recv == NULL))
        st = NULLBUF(send == NULL ? "send" : "receive", "reduce_scatter");
    if (st != GCL_OK) {
        op_release(o);
        return st;
    }
    /* in place (as MPI_Reduce_scatter_block): recv holds count * size */
    o->in = send == GCL_IN_PLACE ? recv : send;
    o->out = recv;
    o->count = count;
    o->dt = dt;
    o->op = op;
    o->root = -1;
    o->es = gcl_dtype_size(dt);
    size_t nseg = 0;
    if (s->size == 1) {
        if (count > 0 && o->out != o->in)
            gcl_copy(o->out, o->in, count * o->es);
    } else {
        size_t le = o->es >= 64 ? 1 : 64 / o->es;
        size_t P = s->slot / o->es / (size_t)s->size;
        o->seg = P > le ? P / le * le : P;
        if (count * (size_t)s->size * o->es <= INL_BYTES) {
            o->inl = 1;
            o->seg = count;
        }
        nseg = count == 0 ? 0 : (count + o->seg - 1) / o->seg;
    }
    return op_post(o, nseg, out);
}

gcl_status_t gcl_shm_allgather_start(gcl_shm_t *s, const void *send, void *recv, size_t count,
                                     gcl_dtype_t dt, gcl_shm_op_t **out)
{
    gcl_shm_op_t *o;
    gcl_status_t st = op_new(s, K_ALLGATHER, "allgather", out, &o);
    if (st != GCL_OK)
        return st;
    st = check_common(s, "allgather", count, dt, -1, -1);
    if (st == GCL_OK && count > 0 && (send == NULL || recv == NULL))
        st = NULLBUF(send == NULL ? "send" : "receive", "allgather");
    if (st != GCL_OK) {
        op_release(o);
        return st;
    }
    o->es = gcl_dtype_size(dt);
    o->in = send == GCL_IN_PLACE ? (const char *)recv + (size_t)s->rank * count * o->es : send;
    o->out = recv;
    o->count = count;
    o->dt = dt;
    o->root = -1;
    size_t nseg = 0;
    if (s->size == 1) {
        if (count > 0 && o->out != o->in)
            gcl_copy(o->out, o->in, count * o->es);
    } else {
        o->inl = count * o->es <= INL_BYTES;
        o->seg = o->inl ? count : s->slot / o->es;
        nseg = count == 0 ? 0 : (count + o->seg - 1) / o->seg;
    }
    return op_post(o, nseg, out);
}

gcl_status_t gcl_shm_broadcast_start(gcl_shm_t *s, void *b, size_t count, gcl_dtype_t dt,
                                     int root, gcl_shm_op_t **out)
{
    gcl_shm_op_t *o;
    gcl_status_t st = op_new(s, K_BROADCAST, "broadcast", out, &o);
    if (st != GCL_OK)
        return st;
    st = check_common(s, "broadcast", count, dt, -1, root);
    if (st == GCL_OK && root < 0)
        st = gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_shm_broadcast: root %d", root);
    if (st == GCL_OK && count > 0 && (b == NULL || b == GCL_IN_PLACE))
        st = NULLBUF("data", "broadcast");
    if (st != GCL_OK) {
        op_release(o);
        return st;
    }
    o->es = gcl_dtype_size(dt);
    o->out = b;
    o->count = count;
    o->dt = dt;
    o->root = root;
    size_t nseg = 0;
    if (s->size > 1 && count > 0) {
        o->inl = count * o->es <= INL_BYTES;
        o->seg = o->inl ? count : s->slot / o->es;
        nseg = (count + o->seg - 1) / o->seg;
    }
    return op_post(o, nseg, out);
}

gcl_status_t gcl_shm_barrier_start(gcl_shm_t *s, gcl_shm_op_t **out)
{
    gcl_shm_op_t *o;
    gcl_status_t st = op_new(s, K_BARRIER, "barrier", out, &o);
    if (st != GCL_OK)
        return st;
    return op_post(o, s->size > 1, out);
}

/* -------------------------------------------------------- lost members */

/* A member killed mid-collective never publishes again, and the others
 * would wait for it until their timeout (for ever without one). So a member
 * whose head op has made no progress for LOST_IDLE_S looks at the others'
 * processes, again every LOST_RECHECK_S while that lasts. A member whose
 * process is gone (kill(pid, 0) says ESRCH, or /proc says it is a zombie or
 * its pid is now another process's) and whose counters show it had not
 * done its part of the op is lost: the finder writes it into the header,
 * so that every member waiting (perhaps on the finder, which stops) takes
 * it at its next look, and every op of the segment, pending or later,
 * fails with GCL_ERR_TRANSPORT naming it. A member that finished its part
 * before it exited is not lost for this op (a broadcast's root, a reduce's
 * other members may leave first). A member stopped (SIGSTOP), slow or
 * descheduled is alive: its peers wait until their timeout. Members whose
 * pid means nothing here (another pid namespace, or either side could not
 * tell its namespace) are never looked at: they end in the timeout, as
 * before. Nothing of this runs while data moves: a poll that finds nothing
 * ready counts, and every LOST_POLLS-th reads the clock. */
#define LOST_POLLS 16 /* a power of 2 */
#define LOST_IDLE_S 0.2
#define LOST_RECHECK_S 0.1

/* Fields 1 (pid), 3 (state) and 22 (start time) of a /proc/<pid>/stat; 0 ok. */
static int read_stat(const char *path, long *pid, char *state, uint64_t *start)
{
    char b[1024];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, b, sizeof(b) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    b[n] = 0;
    char *e, *p = strrchr(b, ')'); /* the end of field 2, (comm) */
    *pid = strtol(b, &e, 10);
    if (p == NULL || e == b || p[1] != ' ' || p[2] == 0)
        return -1;
    p += 2;
    *state = *p;
    for (int f = 3; f < 22; f++)
        if ((p = strchr(p, ' ')) == NULL)
            return -1;
        else
            p++;
    unsigned long long v = strtoull(p, &e, 10);
    if (e == p)
        return -1;
    *start = v;
    return 0;
}

/* Write who this member is into its red line (at open). */
static void publish_identity(gcl_shm_t *s)
{
    red_line_t *me = red_line(s, s->rank);
    long pid = (long)getpid(), spid = 0;
    char state;
    uint64_t start = 0;
    struct stat ns;
    me->start = 0;
    me->ns_dev = me->ns_ino = 0;
    /* /proc shows this process under its own pid: /proc is of this pid
     * namespace, and its entries and the namespace link can be trusted */
    if (read_stat("/proc/self/stat", &spid, &state, &start) == 0 && spid == pid &&
        stat("/proc/self/ns/pid", &ns) == 0 && ns.st_ino != 0) {
        me->start = start;
        me->ns_dev = (uint64_t)ns.st_dev;
        me->ns_ino = (uint64_t)ns.st_ino;
    }
    atomic_store_explicit(&me->pid, (int32_t)pid, memory_order_release);
}

/* 1 if member j's process is gone; 0 if it lives, or cannot be told. */
static int peer_gone(const gcl_shm_t *s, int j)
{
    red_line_t *me = red_line(s, s->rank), *p = red_line(s, j);
    long pid = atomic_load_explicit(&p->pid, memory_order_acquire);
    /* its pid means something here only in this pid namespace */
    if (pid <= 0 || pid == (long)getpid() || me->ns_ino == 0 || p->ns_ino != me->ns_ino ||
        p->ns_dev != me->ns_dev)
        return 0;
    if (kill((pid_t)pid, 0) != 0)
        return errno == ESRCH; /* EPERM: it exists */
    /* it exists: not yet reaped, or its pid given to another process */
    char path[48], state;
    long spid;
    uint64_t start;
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if (me->start == 0 || p->start == 0 || read_stat(path, &spid, &state, &start) != 0 ||
        spid != pid)
        return 0; /* (gone since, or hidden: kill says so next time) */
    return start != p->start || state == 'Z' || state == 'X';
}

/* Does op h still need something from member j (its counters are final
 * once its process is gone)? */
/* The first segment a broadcast reader j keeps its root from writing
 * (can_write's rule, from the counters as they are now). */
static uint64_t root_stop(const gcl_shm_t *s, int j)
{
    uint64_t in = atomic_load_explicit(&in_line(s, j)->in, memory_order_acquire);
    uint64_t rd = atomic_load_explicit(&in_line(s, j)->rd, memory_order_acquire);
    return in + 2 > rd + s->nbuf + 1 ? in + 2 : rd + s->nbuf + 1;
}

static int needs(const gcl_shm_t *s, const gcl_shm_op_t *h, int j)
{
    uint64_t last = h->g0 + h->nseg - 1;
    uint64_t in = atomic_load_explicit(&in_line(s, j)->in, memory_order_acquire);
    if (h->kind == K_BROADCAST && s->rank != h->root) /* a reader: the root's data */
        return j == h->root && in < last;
    if (h->kind == K_BROADCAST) /* the root: a reader that may hold a buffer */
        return root_stop(s, j) <= last;
    if (in < last)
        return 1;
    int red = !h->oneshot &&
              (h->kind == K_ALLREDUCE || (h->kind == K_REDUCE && s->rank == h->root));
    return red && atomic_load_explicit(red_ctr(s, j), memory_order_acquire) < last;
}

/* The head op h found nothing to do, again: 1 when a member is now known
 * lost (s->broken = 2), else 0. */
static __attribute__((noinline)) int lost_check(gcl_shm_t *s, const gcl_shm_op_t *h)
{
    uint64_t mark[5] = {h->g0, h->k_in, h->k_red, h->k_out, (uint64_t)h->sub};
    double now = gcl_now();
    if (memcmp(mark, s->idle_mark, sizeof(mark)) != 0) { /* it moved since */
        memcpy(s->idle_mark, mark, sizeof(mark));
        s->idle_next = now + LOST_IDLE_S;
        return 0;
    }
    if (now < s->idle_next)
        return 0;
    s->idle_next = now + LOST_RECHECK_S;
    header_t *hd = (header_t *)(void *)s->base;
    int gave_up = atomic_load_explicit(&hd->gave_up, memory_order_acquire) - 1;
    if (gave_up >= 0 && gave_up < s->size && gave_up != s->rank) {
        s->broken = 3;
        s->lost_rank = gave_up;
        s->lost_pid = atomic_load_explicit(&red_line(s, gave_up)->pid, memory_order_acquire);
        return 1;
    }
    int lost = atomic_load_explicit(&hd->lost, memory_order_acquire) - 1;
    for (int j = 0; lost < 0 && j < s->size; j++)
        /* (needs again once it is gone: it may have done its part just
         * before it exited) */
        if (j != s->rank && needs(s, h, j) && peer_gone(s, j) && needs(s, h, j)) {
            int32_t none = 0;
            lost = atomic_compare_exchange_strong(&hd->lost, &none, j + 1) ? j : none - 1;
        }
    if (lost < 0 || lost >= s->size)
        return 0;
    s->broken = 2;
    s->lost_rank = lost;
    s->lost_pid = atomic_load_explicit(&red_line(s, lost)->pid, memory_order_acquire);
    return 1;
}

int gcl_shm_lost(const gcl_shm_t *s, int *pid)
{
    if (s == NULL || (s->broken != 2 && s->broken != 3))
        return -1;
    if (pid)
        *pid = s->lost_pid;
    return s->lost_rank;
}

/* The member the head op waits for: of those it still needs something
 * from, the one furthest behind, or -1. Behind: the lowest in counter; for
 * a broadcast root, the lowest root_stop (readers raise rd, not in, while
 * they read). */
int gcl_shm_waited(const gcl_shm_t *s)
{
    const gcl_shm_op_t *h = s ? s->head : NULL;
    if (h == NULL || h->nseg == 0)
        return -1;
    int who = -1, root = h->kind == K_BROADCAST && s->rank == h->root;
    uint64_t low = UINT64_MAX;
    for (int j = 0; j < s->size; j++) {
        uint64_t v = root ? root_stop(s, j) : atomic_load_explicit(&in_line(s, j)->in, memory_order_acquire);
        if (j != s->rank && needs(s, h, j) && v < low) {
            low = v;
            who = j;
        }
    }
    return who;
}

/* The error of every op of a broken segment. */
static gcl_status_t broken_error(const gcl_shm_t *s, const char *what)
{
    if (s->broken == 2)
        return gcl_set_error(GCL_ERR_TRANSPORT, "gcl_shm_%s: lost rank %d of %d on this host (pid %d): its process is gone; "
                    "the job cannot continue", what, s->lost_rank, s->size, s->lost_pid);
    if (s->broken == 3)
        return gcl_set_error(GCL_ERR_TRANSPORT, "gcl_shm_%s: rank %d of %d on this host gave up on the segment after an error "
                    "of its own (its message says which); the job cannot continue", what,
                    s->lost_rank, s->size);
    return gcl_set_error(GCL_ERR_TRANSPORT, "gcl_shm_%s: the shared-memory segment was abandoned after a cancelled operation",
                what);
}

static const char *const kind_name[K_COUNT] = {"allreduce", "reduce", "reduce_scatter",
                                               "allgather", "broadcast", "barrier"};

gcl_status_t gcl_shm_progress(gcl_shm_op_t *op)
{
    if (op == NULL)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_shm_progress: NULL op");
    gcl_shm_t *s = op->shm;
    while (!op->done) {
        gcl_shm_op_t *h = s->head;
        if (s->broken) {
            op->done = 1;
            op->status = broken_error(s, kind_name[op->kind]);
            break;
        }
        if (h->held)
            return GCL_IN_PROGRESS;
        if (!h->started) {
            h->started = 1;
            if (h->nt_key >= 0)
                h->t0 = gcl_now();
        }
        if (h->nseg > 0 && !step(h)) {
            if ((++s->idle_polls & (LOST_POLLS - 1)) != 0 || !lost_check(s, h))
                return GCL_IN_PROGRESS;
            continue; /* a member is lost: op fails above */
        }
        stage_nt_update(h);
        h->done = 1;
        s->head = h->next;
        if (s->head == NULL)
            s->tail = NULL;
    }
    /* (a done op is no longer in the queue) */
    gcl_status_t st = op->status;
    op_release(op);
    return st;
}

void gcl_shm_hold(gcl_shm_op_t *op)
{
    if (op != NULL && !op->done)
        op->held = 1;
}

void gcl_shm_release(gcl_shm_op_t *op)
{
    if (op != NULL)
        op->held = 0;
}

void gcl_shm_cancel(gcl_shm_op_t *op)
{
    if (op == NULL)
        return;
    gcl_shm_t *s = op->shm;
    if (!op->done) {
        s->broken = 1;
        gcl_shm_op_t **pp = &s->head, *prev = NULL;
        while (*pp && *pp != op) {
            prev = *pp;
            pp = &(*pp)->next;
        }
        if (*pp == op) {
            *pp = op->next;
            if (s->tail == op)
                s->tail = prev;
        }
    }
    op_release(op);
}

void gcl_shm_abandon(gcl_shm_op_t *op)
{
    if (op == NULL)
        return;
    gcl_shm_t *s = op->shm;
    if (!op->done && !s->broken) { /* (broken: by a timeout, or by another's loss) */
        header_t *hd = (header_t *)(void *)s->base;
        int32_t none = 0;
        atomic_compare_exchange_strong(&hd->gave_up, &none, s->rank + 1);
    }
    gcl_shm_cancel(op);
}

int gcl_shm_gave_up(const gcl_shm_t *s)
{
    return s != NULL && s->broken == 3 ? s->lost_rank : -1;
}

/* ------------------------------------------------------- open / close */

static unsigned g_counter;

typedef struct {
    char name[48];
    uint64_t bytes;
    int32_t ok;
    int32_t pad;
} name_msg_t;

static gcl_status_t attach(gcl_shm_t *s, const char *name, int create, size_t bytes)
{
    int fd = shm_open(name, create ? O_CREAT | O_EXCL | O_RDWR : O_RDWR, 0600);
    if (fd < 0)
        return gcl_set_error(errno == EEXIST ? GCL_ERR_TRANSPORT : GCL_ERR_NO_MEMORY, "gcl_shm_open: shm_open(%s): %s", name, strerror(errno));
    if (create) {
        int rc = ftruncate(fd, (off_t)bytes) != 0 ? errno : posix_fallocate(fd, 0, (off_t)bytes);
        if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) {
            close(fd);
            shm_unlink(name);
            return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_shm_open: reserving %zu bytes of shared memory (%s): %s", bytes,
                        name, strerror(rc));
        }
    } else {
        struct stat st;
        if (fstat(fd, &st) != 0 || (size_t)st.st_size < bytes) {
            close(fd);
            return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_shm_open: %s holds fewer than the %zu bytes expected", name, bytes);
        }
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) {
        if (create)
            shm_unlink(name);
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_shm_open: mmap of %zu bytes (%s): %s",
                    bytes, name, strerror(e));
    }
    s->base = p;
    return GCL_OK;
}

/* The size of the last-level cache in bytes, as the kernel's cacheinfo
 * gives it in sysfs (Documentation/ABI/testing/sysfs-devices-system-cpu,
 * what lscpu reads) for CPU 0. Without it (some VMs have no
 * /sys/devices/system/cpu/cpu0/cache), LLC_GUESS: what CPUID says there
 * cannot be trusted. glibc's sysconf(_SC_LEVEL3_CACHE_SIZE) said 320 MiB on
 * a VM of this project whose sysfs said 32 MiB; on one without sysfs cache
 * information sysconf and hwloc said 508 MiB per core, so streaming stores
 * were never used, while a 2-rank direct allreduce took 4x longer per byte
 * at 8 MiB than at 4 MiB (32 and 16 MiB of buffers: a 32 MiB cache). There,
 * 6 interleaved launches each, median µs without / with streaming stores:
 * 2 ranks 8 MiB 465 / 522, 16 MiB 1700 / 1290; 4 ranks 8 MiB 2360 / 1890,
 * 16 MiB 5360 / 4440. */
#define LLC_GUESS ((size_t)32 << 20)
static size_t llc_bytes(void)
{
    size_t best = 0;
    for (int i = 0, best_level = 0; i < 16; i++) {
        char path[80];
        int level = 0;
        unsigned long long v = 0;
        char unit = 0;
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            break;
        int ok = fscanf(f, "%d", &level) == 1;
        fclose(f);
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (!ok || level < best_level || (f = fopen(path, "r")) == NULL)
            continue;
        ok = fscanf(f, "%llu%c", &v, &unit) >= 1;
        fclose(f);
        if (ok) {
            best_level = level;
            best = (size_t)v << (unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0);
        }
    }
    return best > 0 ? best : LLC_GUESS;
}

gcl_status_t gcl_shm_open(int local_rank, int local_size, size_t slot_bytes,
                          gcl_shm_allgather_fn allgather, void *arg, gcl_shm_t **out)
{
    if (out == NULL || local_size < 1 || local_rank < 0 || local_rank >= local_size ||
        (local_size > 1 && allgather == NULL))
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_shm_open: bad arguments (local rank %d of %d, allgather %s)", local_rank,
                    local_size, allgather ? "set" : "NULL");
    *out = NULL;
    gcl_shm_t *s = calloc(1, sizeof(*s));
    uint64_t *seen = calloc(6 * (size_t)local_size, sizeof(uint64_t));
    void *blk = NULL;
    if (s == NULL || seen == NULL || posix_memalign(&blk, 64, SUB_BYTES) != 0) {
        free(s);
        free(seen);
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_shm_open: out of memory");
    }
    s->blk = blk;
    s->rank = local_rank;
    s->size = local_size;
    s->seen_in = seen;
    s->seen_red = seen + local_size;
    s->seen_rd = seen + 2 * local_size;
    s->srcs = (const char **)(void *)(seen + 3 * local_size);
    s->din = (char **)(void *)(seen + 4 * local_size);
    s->dout = (char **)(void *)(seen + 5 * local_size);
    s->allgather = allgather;
    s->allgather_arg = arg;
    s->next_g = 1;
    s->lost_rank = -1;
    if (slot_bytes == 0)
        slot_bytes = GCL_SHM_SLOT_BYTES;
    s->slot = round_up(slot_bytes < (size_t)64 * 2 * local_size ? (size_t)64 * 2 * local_size
                                                                 : slot_bytes, 4096);
    const char *env = getenv("GCL_SHM_ONESHOT_MAX");
    s->oneshot_max = env && *env ? strtoull(env, NULL, 0) : ONESHOT_MAX_DEFAULT;
    env = getenv("GCL_SHM_DIRECT_MIN");
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    s->direct_min = env && *env                      ? strtoull(env, NULL, 0)
                    : cpus > 0 && local_size > cpus ? (size_t)ONESHOT_MAX_DEFAULT + 1
                                                     : DIRECT_MIN_DEFAULT;
    if (s->direct_min <= INL_BYTES) /* (inline messages are never direct) */
        s->direct_min = INL_BYTES + 1;
    /* streaming stores once the send and receive buffers of all members
     * exceed the last-level cache (2 ranks: a quarter of it) */
    env = getenv("GCL_SHM_STREAM_BYTES");
    size_t llc = llc_bytes();
    s->stream_min = env && *env ? strtoull(env, NULL, 0) : llc / (2 * (size_t)local_size);
    env = getenv("GCL_SHM_STAGE_NT");
    s->stage_nt = env && *env && strcmp(env, "auto") != 0 ? atoi(env) != 0 : -1;
    env = getenv("GCL_SHM_STAGE_NT_MIN");
    s->stage_nt_min = env && *env ? strtoull(env, NULL, 0) : NT_MIN_BYTES;
    s->stage_nt_min_red = env && *env ? s->stage_nt_min : NT_MIN_RED_BYTES;
    size_t ctl = round_up(LINE + (size_t)local_size * 3 * LINE, 4096);
    env = getenv("GCL_SHM_NBUF");
    s->nbuf = env && *env ? strtoull(env, NULL, 0) : 3;
    s->nbuf = s->nbuf < 3 ? 3 : s->nbuf > NBUF ? NBUF : s->nbuf;
    s->bytes = ctl + (size_t)local_size * s->nbuf * s->slot;

    gcl_status_t st = GCL_OK;
    if (local_size == 1) {
        void *p = mmap(NULL, s->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            st = gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_shm_open: mmap of %zu bytes: %s",
                      s->bytes, strerror(errno));
        else
            s->base = p;
    } else {
        name_msg_t msg, *all = calloc((size_t)local_size, sizeof(name_msg_t));
        memset(&msg, 0, sizeof(msg));
        int ok = 0;
        if (all == NULL) {
            st = gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_shm_open: out of memory");
        } else if (local_rank == 0) {
            for (int tries = 0; tries < 16; tries++) {
                snprintf(msg.name, sizeof(msg.name), "/gcl-%d-%u", (int)getpid(),
                         __atomic_fetch_add(&g_counter, 1, __ATOMIC_RELAXED));
                st = attach(s, msg.name, 1, s->bytes);
                if (st != GCL_ERR_TRANSPORT) /* EEXIST: a stale name, try the next */
                    break;
            }
            if (st == GCL_OK) {
                header_t *h = (header_t *)(void *)s->base;
                h->magic = SHM_MAGIC;
                h->bytes = s->bytes;
                h->slot = s->slot;
                h->size = local_size;
            }
            msg.bytes = s->bytes;
            msg.ok = st == GCL_OK;
        }
        /* 1: rank 0 publishes the name (or its failure) */
        if (all != NULL && allgather(&msg, all, sizeof(msg), arg) != 0)
            st = gcl_set_error(GCL_ERR_TRANSPORT, "gcl_shm_open: allgather failed");
        else if (all != NULL && local_rank != 0) {
            if (!all[0].ok)
                st = gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_shm_open: local rank 0 could not create the segment");
            else if (all[0].bytes != s->bytes)
                st = gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_shm_open: segment sizes differ (%zu here, %zu at local rank 0): "
                          "slot_bytes and GCL_SHM_NBUF must agree", s->bytes, (size_t)all[0].bytes);
            else {
                all[0].name[sizeof(all[0].name) - 1] = 0;
                st = attach(s, all[0].name, 0, s->bytes);
                if (st == GCL_OK && ((header_t *)(void *)s->base)->magic != SHM_MAGIC)
                    st = gcl_set_error(GCL_ERR_TRANSPORT, "gcl_shm_open: %s is not a libgcl segment", all[0].name);
                else if (st == GCL_OK && ((header_t *)(void *)s->base)->slot != s->slot)
                    st = gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_shm_open: staging slots differ (%zu bytes here, %zu at local "
                              "rank 0): slot_bytes and GCL_SHM_NBUF must agree", s->slot,
                              (size_t)((header_t *)(void *)s->base)->slot);
            }
        }
        if (st == GCL_OK)
            publish_identity(s);
        /* 2: everyone attached (or not): unlink, agree on the outcome */
        ok = st == GCL_OK;
        int32_t *oks = all ? (int32_t *)(void *)all : NULL;
        int32_t mine = ok;
        if (all != NULL && allgather(&mine, oks, sizeof(mine), arg) != 0) {
            if (st == GCL_OK)
                st = gcl_set_error(GCL_ERR_TRANSPORT, "gcl_shm_open: allgather failed");
        } else if (all != NULL && st == GCL_OK) {
            for (int j = 0; j < local_size; j++)
                if (!oks[j]) {
                    st = gcl_set_error(GCL_ERR_TRANSPORT, "gcl_shm_open: local rank %d could not attach the segment", j);
                    break;
                }
        }
        if (local_rank == 0 && msg.ok)
            shm_unlink(msg.name);
        free(all);
    }
    if (st != GCL_OK) {
        if (s->base)
            munmap(s->base, s->bytes);
        free(seen);
        free(s->blk);
        free(s);
        return st;
    }
    s->data = s->base + ctl;
    /* first touch of this member's own buffers here (NUMA placement, and no
     * page faults inside collectives) */
    memset(s->data + (size_t)local_rank * s->nbuf * s->slot, 0, s->nbuf * s->slot);
    *out = s;
    return GCL_OK;
}

gcl_status_t gcl_shm_mem_alloc(gcl_shm_t *s, size_t bytes, void **ptr)
{
    return gcl_shm_regions_alloc(&s->mem, s->rank, s->size, bytes, s->allgather, s->allgather_arg,
                                 ptr);
}

int gcl_shm_mem_free(gcl_shm_t *s, void *ptr)
{
    return s != NULL && gcl_shm_regions_free(&s->mem, s->rank, ptr);
}

uint64_t gcl_shm_direct_ops(const gcl_shm_t *s)
{
    return s ? s->direct_ops : 0;
}

void gcl_shm_close(gcl_shm_t *s)
{
    if (s == NULL)
        return;
    gcl_shm_regions_clear(&s->mem);
    while (s->free_ops) {
        gcl_shm_op_t *o = s->free_ops;
        s->free_ops = o->next;
        free(o);
    }
    /* ops still queued belong to their callers, who must have cancelled or
     * completed them */
    if (s->base)
        munmap(s->base, s->bytes);
    free(s->seen_in);
    free(s->blk);
    free(s);
}
