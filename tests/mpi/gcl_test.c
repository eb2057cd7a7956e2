/* libgcl under mpirun, against MPI doing the same operation.
 *
 *   gcl_test [-s SUITES] [-b] [-q] [-A]
 *
 * SUITES (comma-separated, default api,coll,split): api (version, status
 * strings, argument errors, init from an out-of-band allgather and over the
 * MPI transport), coll (every collective x dtype x op x count {0, 1, 7,
 * size-1, size+1, 100003} x blocking / non-blocking / in-place), big (every
 * collective x dtype at >= 16 MiB, the reductions' ops in turn across the
 * dtypes; -A: every op of every dtype), split (gcl_split.c), timeout,
 * mismatch (gcl_faults.c), algo (gcl_algo.c: the algorithm named by
 * GCL_<COLL>_ALGO; -b adds a >= 16 MiB message per forced algorithm). -q
 * (quick, for large oversubscribed groups) runs two ops per dtype in coll
 * instead of five (all five over the eight dtypes), and fewer counts per
 * forced algorithm.
 *
 * Reductions are checked against the sequential reduction of every rank's
 * inputs (long double / int64, gcl_ref.c; drawn again from the fill
 * pattern, the members on one host sharing one reference): exact
 * for integers and MIN/MAX, within (n-1) eps sum|x| for float sums; where
 * MPI has the dtype and op, MPI_Allreduce's answer is checked against the
 * same reference. Data movement is compared byte for byte with MPI_Allgather,
 * MPI_Bcast, MPI_Alltoall. Rank 0 prints "gcl_test SUITE: ok (N ranks, C
 * checks)" per suite; the exit status is 1 if any check failed anywhere. */
#include "gcl_test.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int rank, size;
gcl_comm_t *world;
long fails, checks;
int opt_quick;
gcl_comm_t *reg_comm;
int reg_plain;

void fail_at(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rank %d: FAIL: ", rank);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fails++;
}

int gok(gcl_status_t st, const char *what)
{
    return gexpect(st, GCL_OK, what);
}

int gexpect(gcl_status_t st, gcl_status_t want, const char *what)
{
    checks++;
    if (st == want)
        return 1;
    fail_at("%s: got %s, want %s (%s)", what, gcl_status_string(st), gcl_status_string(want), gcl_last_error());
    return 0;
}

gcl_status_t complete(gcl_status_t st, gcl_request_t **req)
{
    static unsigned long n;
    if (st != GCL_OK)
        return st;
    if (n++ % 2)
        st = gcl_wait(req);
    else
        while ((st = gcl_test(req)) == GCL_IN_PROGRESS)
            ;
    CHECK(*req == NULL, "request not NULL after completion (%s)", gcl_status_string(st));
    return st;
}

enum { GUARD = 64 };

void *balloc(size_t bytes)
{
    unsigned char *p = malloc(bytes + GUARD);
    if (!p) {
        fprintf(stderr, "rank %d: out of memory (%zu bytes)\n", rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    ref_poison(p, bytes + GUARD);
    return p;
}

void *ralloc(size_t bytes)
{
    if (reg_comm == NULL)
        return balloc(bytes);
    void *p = NULL;
    gcl_status_t st = gcl_mem_alloc(reg_comm, bytes + GUARD, &p);
    if (st != GCL_OK) {
        fprintf(stderr, "rank %d: gcl_mem_alloc(%zu bytes): %s: %s\n", rank, bytes + GUARD,
                gcl_status_string(st), gcl_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (reg_plain) { /* (called all the same: gcl_mem_alloc is collective) */
        gcl_mem_free(reg_comm, p);
        return balloc(bytes);
    }
    ref_poison(p, bytes + GUARD);
    return p;
}

void rfree(void *p)
{
    if (reg_comm == NULL || reg_plain || gcl_mem_free(reg_comm, p) != GCL_OK)
        free(p);
}

int guard_ok(const void *buf, size_t bytes)
{
    const unsigned char *g = (const unsigned char *)buf + bytes;
    for (int i = 0; i < GUARD; i++)
        if (g[i] != 0xa5)
            return 0;
    return 1;
}

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void check_allreduce_on(MPI_Comm mc, const char *what, const void *in, const void *got, size_t count,
                        gcl_dtype_t dt, gcl_op_t op)
{
    int n;
    MPI_Comm_size(mc, &n);
    size_t bytes = count * ref_dsize(dt);
    void *all = balloc(bytes * (size_t)n);
    MPI_Allgather(in, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, mc);
    checks++;
    if (ref_check_reduced(what, got, all, count, 0, count, n, dt, op))
        fails++;
    free(all);
}

/* --------------------------------------------------------- reductions */

enum { M_BLOCK, M_NB, M_INPLACE, M_INPLACE_NB, M_COUNT };
static const char *const MODE[M_COUNT] = {"blocking", "non-blocking", "in-place", "in-place non-blocking"};

static void label(char *s, size_t n, const char *coll, gcl_dtype_t dt, int op, size_t count, int mode,
                  int nranks)
{
    snprintf(s, n, "%s %s%s%s count %zu %s (%d ranks)", coll, ref_dtype_name(dt), op >= 0 ? " " : "",
             op >= 0 ? ref_op_name((gcl_op_t)op) : "", count, MODE[mode], nranks);
}

/* got against e; cap: the elements of the buffer (its guard zone follows) */
static void check_reduced(const char *what, const void *got, size_t cap, const ref_expect_t *e, gcl_dtype_t dt)
{
    checks++;
    if (ref_check_expect(what, got, e, dt))
        fails++;
    CHECK(guard_ok(got, cap * ref_dsize(dt)), "%s: wrote past the end of the output", what);
}

void test_reductions(gcl_comm_t *c, MPI_Comm mc, gcl_dtype_t dt, gcl_op_t op, size_t count, uint64_t seed,
                     unsigned mask)
{
    int n = gcl_comm_size(c), me = gcl_comm_rank(c);
    size_t es = ref_dsize(dt);
    size_t len = (mask & COLL_REDUCE_SCATTER) ? count * (size_t)n : count;  /* input elements */
    char *in = ralloc(len * es), *out = ralloc(len * es), *orig = balloc(len * es);
    char what[160];
    gcl_request_t *req = NULL;
    ref_fill(in, len, dt, op, seed, me);
    memcpy(orig, in, len * es);
    /* the reference, from the fill pattern: elements [0, count) for
     * allreduce and reduce, this rank's block for reduce_scatter */
    ref_expect_t ref;
    ref_expect_seeded(&ref, mc, seed, 0, (mask & COLL_REDUCE_SCATTER) ? len : count, dt, op);
    ref_expect_t e0 = ref_expect_part(&ref, 0, count);
    ref_expect_t e1 = (mask & COLL_REDUCE_SCATTER) ? ref_expect_part(&ref, (size_t)me * count, count) : e0;

    /* MPI's answer, where MPI has dtype and op, agrees with the reference */
    if (ref_mpi_type(dt) != MPI_DATATYPE_NULL && ref_mpi_op(op) != MPI_OP_NULL && count) {
        MPI_Allreduce(in, out, (int)count, ref_mpi_type(dt), ref_mpi_op(op), mc);
        label(what, sizeof what, "MPI_Allreduce", dt, op, count, M_BLOCK, n);
        check_reduced(what, out, count, &e0, dt);
    }
    for (int m = 0; m < M_COUNT && (mask & COLL_ALLREDUCE); m++) {
        ref_poison(out, len * es);
        const void *send = in;
        if (m >= M_INPLACE) {
            memcpy(out, in, count * es);
            send = GCL_IN_PLACE;
        }
        label(what, sizeof what, "allreduce", dt, op, count, m, n);
        gcl_status_t st = (m == M_BLOCK || m == M_INPLACE)
            ? gcl_allreduce(send, out, count, dt, op, c)
            : complete(gcl_iallreduce(send, out, count, dt, op, c, &req), &req);
        if (gok(st, what))
            check_reduced(what, out, count, &e0, dt);
        CHECK(memcmp(in, orig, len * es) == 0, "%s: changed its input", what);
    }
    /* reduce: root 0 blocking, n-1 non-blocking (recv NULL off the root),
     * n/2 in place (MPI's convention: the root's input is in recv) */
    for (int m = 0; m < M_INPLACE_NB && (mask & COLL_REDUCE); m++) {
        int root = m == M_BLOCK ? 0 : m == M_NB ? n - 1 : n / 2;
        ref_poison(out, len * es);
        const void *send = in;
        void *recv = (m == M_NB && me != root) ? NULL : out;
        if (m == M_INPLACE && me == root) {
            memcpy(out, in, count * es);
            send = GCL_IN_PLACE;
        }
        label(what, sizeof what, "reduce", dt, op, count, m, n);
        snprintf(what + strlen(what), sizeof what - strlen(what), " root %d", root);
        gcl_status_t st = m == M_NB ? complete(gcl_ireduce(send, recv, count, dt, op, root, c, &req), &req)
                                    : gcl_reduce(send, recv, count, dt, op, root, c);
        if (gok(st, what) && me == root)
            check_reduced(what, out, count, &e0, dt);
        else if (recv && m != M_INPLACE) {
            unsigned char *p = (unsigned char *)out;
            size_t k = 0;
            while (k < count * es && p[k] == 0xa5)
                k++;
            CHECK(k == count * es, "%s: wrote into recv off the root (byte %zu)", what, k);
        }
    }
    /* reduce_scatter in place (as MPI_Reduce_scatter_block): recv holds the
     * whole input, block 0 of recv receives this rank's block */
    for (int m = 0; m < M_COUNT && (mask & COLL_REDUCE_SCATTER); m++) {
        ref_poison(out, len * es);
        const void *send = in;
        if (m >= M_INPLACE) {
            memcpy(out, in, len * es);
            send = GCL_IN_PLACE;
        }
        label(what, sizeof what, "reduce_scatter", dt, op, count, m, n);
        gcl_status_t st = (m == M_BLOCK || m == M_INPLACE)
            ? gcl_reduce_scatter(send, out, count, dt, op, c)
            : complete(gcl_ireduce_scatter(send, out, count, dt, op, c, &req), &req);
        if (gok(st, what))
            check_reduced(what, out, m >= M_INPLACE ? len : count, &e1, dt);
    }
    ref_expect_free(&ref);
    rfree(in);
    rfree(out);
    free(orig);
}

/* -------------------------------------------------------- data movement */

static void check_equal(const char *what, const void *got, const void *want, size_t count, gcl_dtype_t dt)
{
    checks++;
    if (ref_check_equal(what, got, want, count, dt))
        fails++;
    CHECK(guard_ok(got, count * ref_dsize(dt)), "%s: wrote past the end of the output", what);
}

static void test_p2p(gcl_comm_t *c, gcl_dtype_t dt, size_t count, const char *in, const char *all, int m)
{
    int n = gcl_comm_size(c), me = gcl_comm_rank(c);
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    size_t es = ref_dsize(dt), bytes = count * es;
    char what[160];
    char *out = balloc(bytes), *out2 = balloc(bytes);
    label(what, sizeof what, "send/recv ring", dt, -1, count, m, n);
    if (m == M_BLOCK) {
        /* a chain around the ring: rank 0 sends first, the others receive
         * first; one rank is its own neighbour (isend, then recv) */
        if (n == 1) {
            gcl_request_t *r = NULL;
            gok(gcl_isend(in, count, dt, me, 3, c, &r), what);
            gok(gcl_recv(out, count, dt, me, 3, c), what);
            gok(complete(GCL_OK, &r), what);
        } else if (me == 0) {
            gok(gcl_send(in, count, dt, next, 3, c), what);
            gok(gcl_recv(out, count, dt, prev, 3, c), what);
        } else {
            gok(gcl_recv(out, count, dt, prev, 3, c), what);
            gok(gcl_send(in, count, dt, next, 3, c), what);
        }
        check_equal(what, out, all + (size_t)prev * bytes, count, dt);
    } else {
        /* two tags in flight, received in the other order than sent; the
         * second message is the sender's input reversed by blocks of one */
        char *rev = balloc(bytes), *want2 = balloc(bytes);
        for (size_t i = 0; i < count; i++) {
            memcpy(rev + i * es, in + (count - 1 - i) * es, es);
            memcpy(want2 + i * es, all + (size_t)prev * bytes + (count - 1 - i) * es, es);
        }
        gcl_request_t *r[4] = {NULL, NULL, NULL, NULL};
        gok(gcl_irecv(out2, count, dt, prev, 1 << 20, c, &r[0]), what);
        gok(gcl_irecv(out, count, dt, prev, 0, c, &r[1]), what);
        gok(gcl_isend(in, count, dt, next, 0, c, &r[2]), what);
        gok(gcl_isend(rev, count, dt, next, 1 << 20, c, &r[3]), what);
        if (gok(gcl_wait_all(4, r), what)) {
            check_equal(what, out, all + (size_t)prev * bytes, count, dt);
            check_equal(what, out2, want2, count, dt);
        }
        for (int i = 0; i < 4; i++)
            CHECK(r[i] == NULL, "%s: gcl_wait_all left request %d", what, i);
        free(rev);
        free(want2);
    }
    free(out);
    free(out2);
}

void test_movement(gcl_comm_t *c, MPI_Comm mc, gcl_dtype_t dt, size_t count, uint64_t seed, unsigned mask)
{
    int n = gcl_comm_size(c), me = gcl_comm_rank(c);
    size_t es = ref_dsize(dt), bytes = count * es, total = bytes * (size_t)n;
    char *in = ralloc(total), *out = ralloc(total), *want = balloc(total);
    char what[160];
    gcl_request_t *req = NULL;
    ref_fill(in, count * (size_t)n, dt, GCL_MAX, seed, me);
    MPI_Allgather(in, (int)bytes, MPI_BYTE, want, (int)bytes, MPI_BYTE, mc);

    for (int m = 0; m < M_COUNT && (mask & COLL_ALLGATHER); m++) {
        ref_poison(out, total);
        const void *send = in;
        if (m >= M_INPLACE) {
            memcpy(out + (size_t)me * bytes, in, bytes);
            send = GCL_IN_PLACE;
        }
        label(what, sizeof what, "allgather", dt, -1, count, m, n);
        gcl_status_t st = (m == M_BLOCK || m == M_INPLACE)
            ? gcl_allgather(send, out, count, dt, c)
            : complete(gcl_iallgather(send, out, count, dt, c, &req), &req);
        if (gok(st, what))
            check_equal(what, out, want, count * (size_t)n, dt);
    }
    if (mask & COLL_P2P)
        for (int m = M_BLOCK; m <= M_NB; m++)
            test_p2p(c, dt, count, in, want, m);
    for (int m = M_BLOCK; m <= M_NB && (mask & COLL_BROADCAST); m++) {
        int root = m == M_BLOCK ? 0 : n - 1;
        char *mb = balloc(bytes);
        memcpy(mb, in, bytes);
        MPI_Bcast(mb, (int)bytes, MPI_BYTE, root, mc);
        ref_poison(out, total);
        if (me == root)
            memcpy(out, in, bytes);
        label(what, sizeof what, "broadcast", dt, -1, count, m, n);
        snprintf(what + strlen(what), sizeof what - strlen(what), " root %d", root);
        gcl_status_t st = m == M_BLOCK ? gcl_broadcast(out, count, dt, root, c)
                                       : complete(gcl_ibroadcast(out, count, dt, root, c, &req), &req);
        if (gok(st, what))
            check_equal(what, out, mb, count, dt);
        free(mb);
    }
    for (int m = M_BLOCK; m <= M_NB && (mask & COLL_ALLTOALL); m++) {
        MPI_Alltoall(in, (int)bytes, MPI_BYTE, want, (int)bytes, MPI_BYTE, mc);
        ref_poison(out, total);
        label(what, sizeof what, "alltoall", dt, -1, count, m, n);
        gcl_status_t st = m == M_BLOCK ? gcl_alltoall(in, out, count, dt, c)
                                       : complete(gcl_ialltoall(in, out, count, dt, c, &req), &req);
        if (gok(st, what))
            check_equal(what, out, want, count * (size_t)n, dt);
    }
    rfree(in);
    rfree(out);
    free(want);
}

/* Every member leaves the barrier after the last one entered it (the last
 * rank enters 20 ms late); CLOCK_MONOTONIC is one clock on one host. */
void test_barrier(gcl_comm_t *c, MPI_Comm mc)
{
    int n = gcl_comm_size(c), me = gcl_comm_rank(c);
    double *t = malloc(sizeof(double) * (size_t)n);
    for (int m = M_BLOCK; m <= M_NB; m++) {
        gcl_request_t *req = NULL;
        if (me == n - 1)
            usleep(20000);
        double in = now_s();
        gcl_status_t st = m == M_BLOCK ? gcl_barrier(c) : complete(gcl_ibarrier(c, &req), &req);
        double out = now_s();
        MPI_Allgather(&in, 1, MPI_DOUBLE, t, 1, MPI_DOUBLE, mc);
        if (gok(st, m == M_BLOCK ? "barrier" : "ibarrier"))
            for (int r = 0; r < n; r++)
                CHECK(out >= t[r], "%s: left at %.6f before rank %d entered at %.6f",
                      m == M_BLOCK ? "barrier" : "ibarrier", out, r, t[r]);
    }
    free(t);
}

/* ------------------------------------------------------------- suites */

static void suite_coll(void)
{
    size_t counts[] = {0, 1, 7, (size_t)size - 1, (size_t)size + 1, 100003};
    const int nc = (int)(sizeof counts / sizeof counts[0]);
    uint64_t seed = 1;
    for (int dt = 0; dt < GCL_DTYPE_COUNT; dt++)
        for (int k = 0; k < nc; k++) {
            int dup = 0;
            for (int j = 0; j < k; j++)
                dup |= counts[j] == counts[k];
            if (dup)
                continue;
            test_movement(world, MPI_COMM_WORLD, (gcl_dtype_t)dt, counts[k], seed++, COLL_ALL);
            for (int op = 0; op < GCL_OP_COUNT; op++) {
                if (opt_quick && op != dt % GCL_OP_COUNT && op != (dt + 2) % GCL_OP_COUNT)
                    continue;
                test_reductions(world, MPI_COMM_WORLD, (gcl_dtype_t)dt, (gcl_op_t)op, counts[k], seed++,
                                COLL_ALLREDUCE | COLL_REDUCE | COLL_REDUCE_SCATTER);
            }
        }
    test_barrier(world, MPI_COMM_WORLD);
}

/* >= 16 MiB messages (each rank's input or output), counts not divisible
 * by the group size: every collective of every dtype, each mode (blocking,
 * non-blocking, in place); for the reductions the ops in turn across the
 * dtypes, so that each collective runs each op, or (all_ops) every op of
 * every dtype. */
static void suite_big(int all_ops)
{
    const size_t M16 = 16u << 20;
    uint64_t seed = 1000;
    for (int dt = 0; dt < GCL_DTYPE_COUNT; dt++) {
        gcl_dtype_t d = (gcl_dtype_t)dt;
        size_t e = M16 / ref_dsize(d);
        for (int op = 0; op < GCL_OP_COUNT; op++) {
            if (all_ops || op == dt % GCL_OP_COUNT)
                test_reductions(world, MPI_COMM_WORLD, d, (gcl_op_t)op, e + 5, seed++, COLL_ALLREDUCE);
            if (all_ops || op == (dt + 1) % GCL_OP_COUNT)
                test_reductions(world, MPI_COMM_WORLD, d, (gcl_op_t)op, e + 1, seed++, COLL_REDUCE);
            if (all_ops || op == (dt + 2) % GCL_OP_COUNT)
                test_reductions(world, MPI_COMM_WORLD, d, (gcl_op_t)op, e / (size_t)size + 3, seed++,
                                COLL_REDUCE_SCATTER);
        }
        test_movement(world, MPI_COMM_WORLD, d, e / (size_t)size + 1, seed++,
                      COLL_ALLGATHER | COLL_ALLTOALL);
        test_movement(world, MPI_COMM_WORLD, d, e + 1, seed++, COLL_BROADCAST | COLL_P2P);
    }
    if (!all_ops) /* a float average too (f32 and bf16 are summed, halves rounded) */
        test_reductions(world, MPI_COMM_WORLD, GCL_BFLOAT16, GCL_AVG, M16 / 2 + 3, seed++, COLL_ALLREDUCE);
}

static int oob_allgather(const void *send, void *recv, size_t len, void *arg)
{
    return MPI_Allgather(send, (int)len, MPI_BYTE, recv, (int)len, MPI_BYTE, *(MPI_Comm *)arg) != MPI_SUCCESS;
}

/* Pairs (rank, rank ^ 1): a gcl_recv whose count differs from the send's
 * is GCL_ERR_MESSAGE_SIZE at the receiver alone, with a message naming the
 * peer, the tag and both sizes (shorter and longer messages, eager and 1 MiB
 * ones, an empty one), and the pair still works: a correct exchange follows (then the
 * caller's collectives). Before, a longer message marked the sender lost
 * for good ("Message truncated; the job cannot continue"). */
static void size_mismatch(gcl_comm_t *w, const char *how)
{
    enum { BIG = 1 << 18 }; /* int32: 1 MiB, a rendezvous over UCX */
    static const size_t sent_recv[][2] = {{100, 10}, {10, 100}, {BIG, BIG / 2}, {BIG / 2, BIG}, {0, 10}};
    int peer = rank ^ 1;
    if (peer >= size)
        return;
    int32_t *a = malloc(BIG * sizeof(int32_t)), *b = malloc(BIG * sizeof(int32_t));
    char what[160], want[3][64];
    for (int k = 0; k < 5; k++) {
        size_t ns = sent_recv[k][0], nr = sent_recv[k][1];
        int tag = 40 + k, sender = k % 2 ? rank > peer : rank < peer;
        snprintf(what, sizeof what, "%s: send of %zu int32, recv of %zu", how, ns, nr);
        for (size_t i = 0; i < BIG; i++) {
            a[i] = rank;
            b[i] = -1;
        }
        if (sender) {
            gok(gcl_send(a, ns, GCL_INT32, peer, tag, w), what);
            continue;
        }
        if (!gexpect(gcl_recv(b, nr, GCL_INT32, peer, tag, w), GCL_ERR_MESSAGE_SIZE, what))
            continue;
        /* a longer message's size: UCX tells it, MPI only that it is longer */
        snprintf(want[0], sizeof want[0], "from rank %d with tag %d", peer, tag);
        snprintf(want[1], sizeof want[1], "has %zu bytes", ns * sizeof(int32_t));
        snprintf(want[2], sizeof want[2], "the receive expects %zu bytes (count %zu)", nr * sizeof(int32_t),
                 nr);
        const char *m = gcl_last_error();
        CHECK(strstr(m, "gcl_recv") && strstr(m, want[0]) && strstr(m, want[2]) &&
              (strstr(m, want[1]) || (ns > nr && strstr(m, "has more than"))), "%s: message \"%s\"", what, m);
    }
    for (size_t i = 0; i < BIG; i++) {
        a[i] = rank * 7 + (int32_t)i;
        b[i] = -1;
    }
    snprintf(what, sizeof what, "%s: 1 MiB exchange after the size mismatches", how);
    int ok = rank < peer ? gok(gcl_send(a, BIG, GCL_INT32, peer, 50, w), what) &&
                               gok(gcl_recv(b, BIG, GCL_INT32, peer, 50, w), what)
                         : gok(gcl_recv(b, BIG, GCL_INT32, peer, 50, w), what) &&
                               gok(gcl_send(a, BIG, GCL_INT32, peer, 50, w), what);
    size_t bad = 0;
    for (size_t i = 0; ok && i < BIG; i++)
        bad += b[i] != peer * 7 + (int32_t)i;
    CHECK(!ok || bad == 0, "%s: %zu of %d elements wrong", what, bad, BIG);
    free(a);
    free(b);
}

/* A second world from `make`, a few collectives on it, then finalize. */
static void second_world(const char *how, gcl_status_t (*make)(gcl_comm_t **, void *), void *arg)
{
    gcl_comm_t *w = NULL;
    if (!gok(make(&w, arg), how))
        return;
    CHECK(gcl_comm_rank(w) == rank && gcl_comm_size(w) == size, "%s: rank %d size %d", how,
          gcl_comm_rank(w), gcl_comm_size(w));
    size_mismatch(w, how);
    test_reductions(w, MPI_COMM_WORLD, GCL_FLOAT32, GCL_SUM, 1000, 77, COLL_ALLREDUCE);
    test_reductions(w, MPI_COMM_WORLD, GCL_INT64, GCL_MAX, 100003, 78, COLL_ALLREDUCE | COLL_REDUCE_SCATTER);
    test_movement(w, MPI_COMM_WORLD, GCL_FLOAT16, 1001, 79, COLL_ALL);
    gcl_finalize(w);
}

static gcl_status_t make_oob(gcl_comm_t **w, void *arg)
{
    gcl_oob_t oob = {oob_allgather, arg, rank, size};
    return gcl_init_oob(&oob, NULL, w);
}

static gcl_status_t make_mpi_transport(gcl_comm_t **w, void *arg)
{
    gcl_init_params_t p = {.field_mask = GCL_INIT_FIELD_TRANSPORT | GCL_INIT_FIELD_TIMEOUT,
                           .timeout_s = 30, .transport = GCL_TRANSPORT_MPI};
    MPI_Comm mc = MPI_COMM_WORLD;
    (void)arg;
    return gcl_init_mpi(&mc, &p, w);
}

/* GCL_NO_SHM=1 (read by gcl_init): collectives over the network too */
static gcl_status_t make_no_shm(gcl_comm_t **w, void *arg)
{
    const char *was = getenv("GCL_NO_SHM");
    char *saved = was ? strdup(was) : NULL;
    MPI_Comm mc = MPI_COMM_WORLD;
    (void)arg;
    setenv("GCL_NO_SHM", "1", 1);
    gcl_status_t st = gcl_init_mpi(&mc, NULL, w);
    if (saved)
        setenv("GCL_NO_SHM", saved, 1);
    else
        unsetenv("GCL_NO_SHM");
    free(saved);
    return st;
}

static void suite_api(void)
{
    char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", GCL_VERSION_MAJOR, GCL_VERSION_MINOR, GCL_VERSION_PATCH);
    CHECK(gcl_version() == GCL_VERSION, "gcl_version() %d, header %d", gcl_version(), GCL_VERSION);
    CHECK(strcmp(gcl_version_string(), v) == 0, "gcl_version_string() \"%s\"", gcl_version_string());
    for (int s = GCL_ERR_MESSAGE_SIZE; s <= GCL_IN_PROGRESS; s++) {
        const char *a = gcl_status_string((gcl_status_t)s);
        CHECK(a && *a, "gcl_status_string(%d) empty", s);
        for (int t = GCL_ERR_MESSAGE_SIZE; t < s && a; t++)
            CHECK(strcmp(a, gcl_status_string((gcl_status_t)t)) != 0, "statuses %d and %d both \"%s\"", s, t, a);
    }
    CHECK(gcl_status_string((gcl_status_t)-99) != NULL, "gcl_status_string(-99) NULL");
    for (int dt = 0; dt < GCL_DTYPE_COUNT; dt++)
        CHECK(gcl_dtype_size((gcl_dtype_t)dt) == ref_dsize((gcl_dtype_t)dt), "gcl_dtype_size(%s) %zu",
              ref_dtype_name((gcl_dtype_t)dt), gcl_dtype_size((gcl_dtype_t)dt));
    CHECK(gcl_dtype_size(GCL_DTYPE_COUNT) == 0, "gcl_dtype_size(GCL_DTYPE_COUNT) not 0");
    CHECK(gcl_comm_rank(world) == rank && gcl_comm_size(world) == size, "world rank %d size %d",
          gcl_comm_rank(world), gcl_comm_size(world));
    for (int c = 0; c < GCL_COLL_COUNT; c++)
        for (size_t b = 1; b <= (1u << 28); b <<= 4) {
            const char *a = gcl_algorithm(world, (gcl_coll_t)c, b);
            CHECK(a && *a, "gcl_algorithm(%d, %zu) empty", c, b);
        }

    /* argument errors (every rank makes the same bad call), then the
     * communicator still works */
    float x[8] = {0}, y[8];
    gcl_request_t *req = NULL;
    gcl_comm_t *sub = NULL;
    gexpect(gcl_allreduce(NULL, y, 8, GCL_FLOAT32, GCL_SUM, world), GCL_ERR_INVALID_ARG, "allreduce send NULL");
    CHECK(*gcl_last_error() != '\0', "gcl_last_error() empty after an error");
    gexpect(gcl_allreduce(x, NULL, 8, GCL_FLOAT32, GCL_SUM, world), GCL_ERR_INVALID_ARG, "allreduce recv NULL");
    gexpect(gcl_allreduce(x, y, 8, GCL_DTYPE_COUNT, GCL_SUM, world), GCL_ERR_INVALID_ARG, "allreduce bad dtype");
    gexpect(gcl_allreduce(x, y, 8, GCL_FLOAT32, GCL_OP_COUNT, world), GCL_ERR_INVALID_ARG, "allreduce bad op");
    gexpect(gcl_allreduce(x, y, 8, GCL_FLOAT32, GCL_SUM, NULL), GCL_ERR_INVALID_ARG, "allreduce comm NULL");
    gexpect(gcl_iallreduce(x, y, 8, GCL_FLOAT32, GCL_SUM, world, NULL), GCL_ERR_INVALID_ARG, "iallreduce req NULL");
    gexpect(gcl_broadcast(x, 8, GCL_FLOAT32, size, world), GCL_ERR_INVALID_ARG, "broadcast root = size");
    gexpect(gcl_broadcast(x, 8, GCL_FLOAT32, -1, world), GCL_ERR_INVALID_ARG, "broadcast root -1");
    gexpect(gcl_reduce(x, y, 8, GCL_FLOAT32, GCL_SUM, size, world), GCL_ERR_INVALID_ARG, "reduce root = size");
    gexpect(gcl_isend(x, 8, GCL_FLOAT32, size, 0, world, &req), GCL_ERR_INVALID_ARG, "isend peer = size");
    gexpect(gcl_irecv(y, 8, GCL_FLOAT32, 0, -1, world, &req), GCL_ERR_INVALID_ARG, "irecv tag -1");
    gexpect(gcl_isend(GCL_IN_PLACE, 8, GCL_FLOAT32, 0, 0, world, &req), GCL_ERR_INVALID_ARG, "isend GCL_IN_PLACE");
    gexpect(gcl_irecv((void *)GCL_IN_PLACE, 8, GCL_FLOAT32, 0, 0, world, &req), GCL_ERR_INVALID_ARG,
            "irecv GCL_IN_PLACE");
    gexpect(gcl_isend(x, ((size_t)1 << 62) + 1, GCL_FLOAT32, 0, 0, world, &req), GCL_ERR_INVALID_ARG,
            "isend count * 4 past 2^64");
    CHECK(req == NULL, "request set by a failed call");
    gexpect(gcl_broadcast((void *)GCL_IN_PLACE, 8, GCL_FLOAT32, 0, world), GCL_ERR_INVALID_ARG,
            "broadcast GCL_IN_PLACE");
    gexpect(gcl_allreduce(x, (void *)GCL_IN_PLACE, 8, GCL_FLOAT32, GCL_SUM, world), GCL_ERR_INVALID_ARG,
            "allreduce recv GCL_IN_PLACE");
    gexpect(gcl_comm_split_group(world, GCL_GROUP_CONSECUTIVE, size + 1, &sub), GCL_ERR_INVALID_ARG,
            "split_group CONSECUTIVE(size + 1)");
    gexpect(gcl_comm_split_group(world, GCL_GROUP_ORTHOGONAL, 0, &sub), GCL_ERR_INVALID_ARG,
            "split_group ORTHOGONAL(0)");
    gexpect(gcl_init_mpi(NULL, NULL, &sub), GCL_ERR_INVALID_ARG, "gcl_init_mpi(NULL)");
    MPI_Comm wc = MPI_COMM_WORLD;   /* a working allgather, should it be called */
    gcl_oob_t bad = {oob_allgather, &wc, size, size};
    gexpect(gcl_init_oob(&bad, NULL, &sub), GCL_ERR_INVALID_ARG, "gcl_init_oob rank = size");
    gcl_finalize(NULL);
    gcl_comm_destroy(NULL);
    test_reductions(world, MPI_COMM_WORLD, GCL_FLOAT32, GCL_SUM, 8, 5, COLL_ALLREDUCE);

    /* init from an out-of-band allgather (no MPI inside libgcl), and over
     * the MPI transport */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    second_world("gcl_init_oob", make_oob, &dup);
    MPI_Comm_free(&dup);
    second_world("gcl_init_mpi transport MPI", make_mpi_transport, NULL);
    second_world("gcl_init_mpi GCL_NO_SHM=1", make_no_shm, NULL);
}

static int verdict(const char *suite, double t0)
{
    long f = 0, c = 0;
    MPI_Allreduce(&fails, &f, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&checks, &c, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (f)
            printf("gcl_test %s: FAIL (%d ranks, %ld of %ld checks failed)\n", suite, size, f, c);
        else
            printf("gcl_test %s: ok (%d ranks, %ld checks, %.1f s)\n", suite, size, c, now_s() - t0);
        fflush(stdout);
    }
    fails = checks = 0;
    return f != 0;
}

int main(int argc, char **argv)
{
    const char *suites = "api,coll,split";
    int big = 0, all_ops = 0, opt;
    while ((opt = getopt(argc, argv, "s:bqA")) != -1)
        switch (opt) {
        case 's': suites = optarg; break;
        case 'b': big = 1; break;
        case 'q': opt_quick = 1; break;
        case 'A': all_ops = 1; break;
        default:
            fprintf(stderr, "usage: gcl_test [-s api,coll,big,split,timeout,mismatch,algo,reg] [-b] [-q] [-A]\n");
            return 2;
        }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm mc = MPI_COMM_WORLD;
    gcl_status_t st = gcl_init_mpi(&mc, NULL, &world);
    if (st != GCL_OK) {
        fprintf(stderr, "rank %d: gcl_init_mpi: %s: %s\n", rank, gcl_status_string(st), gcl_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int bad = 0;
    char *list = strdup(suites), *save = NULL;
    for (char *s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
        double t0 = now_s();
        if (!strcmp(s, "api"))
            suite_api();
        else if (!strcmp(s, "coll"))
            suite_coll();
        else if (!strcmp(s, "big"))
            suite_big(all_ops);
        else if (!strcmp(s, "split"))
            suite_split();
        else if (!strcmp(s, "timeout"))
            suite_timeout();
        else if (!strcmp(s, "mismatch"))
            suite_mismatch();
        else if (!strcmp(s, "algo"))
            suite_algo(big);
        else if (!strcmp(s, "reg"))
            suite_reg(big);
        else {
            if (rank == 0)
                fprintf(stderr, "gcl_test: unknown suite '%s'\n", s);
            fails++;
        }
        bad |= verdict(s, t0);
    }
    free(list);
    gcl_finalize(world);
    MPI_Finalize();
    return bad;
}
