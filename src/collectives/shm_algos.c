/* libgcl's shared-memory collectives (shm_impl.h, "Algorithms"): each
 * kind's start (argument checks, segment sizes) and its step, which moves
 * the head op as far as the flags allow. */
#include "collectives/shm_impl.h"

#include "collectives/reduce_local.h"

#include <stdlib.h>
#include <string.h>

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
        if (o->direct > 0) /* it writes into the others' buffers: only once the calls agree */
            return o->checked && ar_direct(o);
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

/* the barrier, and the call word of an alltoall (K_ALLTOALL) */
static int ba_step(gcl_shm_op_t *o)
{
    if (o->k_in == 0) {
        publish_in(o->shm, o->g0);
        o->k_in = 1;
    }
    return all_in(o->shm, o->g0);
}

int shm_step(gcl_shm_op_t *o)
{
    if (o->empty)
        return ba_step(o);
    switch (o->kind) {
    case K_ALLREDUCE:
    case K_REDUCE: return ar_step(o);
    case K_REDUCE_SCATTER: return rs_step(o);
    case K_ALLGATHER: return ag_step(o);
    case K_BROADCAST: return bc_step(o);
    default: return ba_step(o);
    }
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
    gcl_status_t st = shm_op_new(s, kind, what, out, &o);
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
        shm_op_release(o);
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
    return shm_op_post(o, nseg, out);
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
    gcl_status_t st = shm_op_new(s, K_REDUCE_SCATTER, "reduce_scatter", out, &o);
    if (st != GCL_OK)
        return st;
    st = check_common(s, "reduce_scatter", count, dt, (int)op, -1);
    if (st == GCL_OK && count > 0 && (send == NULL || recv == NULL))
        st = NULLBUF(send == NULL ? "send" : "receive", "reduce_scatter");
    if (st != GCL_OK) {
        shm_op_release(o);
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
    return shm_op_post(o, nseg, out);
}

gcl_status_t gcl_shm_allgather_start(gcl_shm_t *s, const void *send, void *recv, size_t count,
                                     gcl_dtype_t dt, gcl_shm_op_t **out)
{
    gcl_shm_op_t *o;
    gcl_status_t st = shm_op_new(s, K_ALLGATHER, "allgather", out, &o);
    if (st != GCL_OK)
        return st;
    st = check_common(s, "allgather", count, dt, -1, -1);
    if (st == GCL_OK && count > 0 && (send == NULL || recv == NULL))
        st = NULLBUF(send == NULL ? "send" : "receive", "allgather");
    if (st != GCL_OK) {
        shm_op_release(o);
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
    return shm_op_post(o, nseg, out);
}

gcl_status_t gcl_shm_broadcast_start(gcl_shm_t *s, void *b, size_t count, gcl_dtype_t dt,
                                     int root, gcl_shm_op_t **out)
{
    gcl_shm_op_t *o;
    gcl_status_t st = shm_op_new(s, K_BROADCAST, "broadcast", out, &o);
    if (st != GCL_OK)
        return st;
    st = check_common(s, "broadcast", count, dt, -1, root);
    if (st == GCL_OK && root < 0)
        st = gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_shm_broadcast: root %d", root);
    if (st == GCL_OK && count > 0 && (b == NULL || b == GCL_IN_PLACE))
        st = NULLBUF("data", "broadcast");
    if (st != GCL_OK) {
        shm_op_release(o);
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
    return shm_op_post(o, nseg, out);
}

gcl_status_t gcl_shm_alltoall_word_start(gcl_shm_t *s, size_t count, gcl_dtype_t dt, gcl_shm_op_t **out)
{
    gcl_shm_op_t *o;
    gcl_status_t st = shm_op_new(s, K_ALLTOALL, "alltoall", out, &o);
    if (st != GCL_OK)
        return st;
    if ((st = check_common(s, "alltoall", count, dt, -1, -1)) != GCL_OK) {
        shm_op_release(o);
        return st;
    }
    o->count = count;
    o->dt = dt;
    o->root = -1;
    return shm_op_post(o, s->size > 1 && count > 0, out);
}

gcl_status_t gcl_shm_barrier_start(gcl_shm_t *s, gcl_shm_op_t **out)
{
    gcl_shm_op_t *o;
    gcl_status_t st = shm_op_new(s, K_BARRIER, "barrier", out, &o);
    if (st != GCL_OK)
        return st;
    return shm_op_post(o, s->size > 1, out);
}

