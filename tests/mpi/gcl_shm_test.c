/* libgcl's shared-memory path (src/collectives/shm.h) under mpirun, all
 * ranks on one host, MPI_Allgather as the bootstrap allgather: every
 * collective x dtype x op over counts that hit the inline, one-shot and
 * streaming paths, in place and not, against a reference computed here from
 * every rank's input (gathered with MPI_Allgather; inputs are small integers
 * so float results are exact in any order) and against MPI_Allreduce; a long
 * random sequence of mixed ops (the staging buffers rotate through every
 * state); several ops queued before progressing; the barrier; nothing left in
 * /dev/shm. Prints "gcl_shm: ok (N ranks)". */
#include "collectives/reduce_local.h"
#include "collectives/shm.h"
#include "collectives/types.h"
#include "common/dtype.h"
#include "common/status.h"

#include <mpi.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_rank, g_size, g_fails;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            if (g_fails++ < 20) {                                              \
                fprintf(stderr, "rank %d: %s:%d: ", g_rank, __FILE__, __LINE__); \
                fprintf(stderr, __VA_ARGS__);                                  \
                fprintf(stderr, "\n");                                         \
            }                                                                  \
        }                                                                      \
    } while (0)

static int mpi_allgather(const void *send, void *recv, size_t len, void *arg)
{
    MPI_Comm comm = *(MPI_Comm *)arg;
    return MPI_Allgather(send, (int)len, MPI_BYTE, recv, (int)len, MPI_BYTE, comm) != MPI_SUCCESS;
}

/* progress until done; yields when oversubscribed; bounded */
static gcl_status_t wait_op(gcl_shm_op_t *op)
{
    double t0 = MPI_Wtime();
    for (unsigned spins = 1;; spins++) {
        gcl_status_t st = gcl_shm_progress(op);
        if (st != GCL_IN_PROGRESS)
            return st;
        if (spins % 16 == 0) {
            sched_yield();
            if (MPI_Wtime() - t0 > 60) {
                gcl_shm_cancel(op);
                fprintf(stderr, "rank %d: shm op timed out\n", g_rank);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
        }
    }
}

static int is_float(gcl_dtype_t dt) { return dt <= GCL_BFLOAT16; }

static uint64_t hash3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull ^
                 c * 0x94d049bb133111ebull;
    x ^= x >> 31;
    x *= 0xd6e8feb86659fd39ull;
    return x ^ (x >> 29);
}

/* element i of rank r's input: small integers (products: +-1, +-2, and for
 * floats 0.5), so every float result is exact in any order */
static double input_value(gcl_dtype_t dt, gcl_op_t op, uint64_t seed, int r, size_t i)
{
    uint64_t h = hash3(seed, (uint64_t)r, i);
    if (op == GCL_PROD) {
        static const double fv[] = {1, -1, 2, 0.5, -2, 1, 1, -0.5};
        static const double iv[] = {1, -1, 2, 1, -2, 1, 3, -1};
        double v = is_float(dt) ? fv[h % 8] : iv[h % 8];
        return dt == GCL_UINT8 ? fabs(v) : v;
    }
    if (dt == GCL_UINT8)
        return (double)(h % 200);
    if (dt == GCL_INT8)
        return (double)((int)(h % 200) - 100); /* sums wrap */
    if (dt == GCL_FLOAT16) /* sums of 8 stay exact (< 2048) */
        return (double)((int)(h % 201) - 100);
    if (dt == GCL_BFLOAT16) /* (< 256) */
        return (double)((int)(h % 61) - 30);
    return (double)((int64_t)(h % 2001) - 1000);
}

static void fill(void *buf, gcl_dtype_t dt, gcl_op_t op, uint64_t seed, int r, size_t off, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ipu_dtype_set_f64(gcl_dtype_info(dt)->ipu, buf, i, input_value(dt, op, seed, r, off + i));
}

/* reference of element i over ranks 0..size-1 (rank order), as the dtype */
static void reference(void *out, size_t k, gcl_dtype_t dt, gcl_op_t op, uint64_t seed, size_t i)
{
    ipu_dtype_t t = gcl_dtype_info(dt)->ipu;
    if (is_float(dt)) {
        double acc = input_value(dt, op, seed, 0, i);
        for (int r = 1; r < g_size; r++) {
            double v = input_value(dt, op, seed, r, i);
            acc = op == GCL_PROD ? acc * v : op == GCL_MIN ? fmin(acc, v)
                : op == GCL_MAX ? fmax(acc, v) : acc + v;
        }
        if (op == GCL_AVG) { /* exact sum, one division in the dtype's arithmetic */
            if (dt == GCL_FLOAT64)
                acc = acc / g_size;
            else
                acc = (double)((float)acc / (float)g_size);
        }
        ipu_dtype_set_f64(t, out, k, acc);
        return;
    }
    int64_t acc = (int64_t)input_value(dt, op, seed, 0, i);
    for (int r = 1; r < g_size; r++) {
        int64_t v = (int64_t)input_value(dt, op, seed, r, i);
        acc = op == GCL_PROD ? acc * v : op == GCL_MIN ? (v < acc ? v : acc)
            : op == GCL_MAX ? (v > acc ? v : acc) : acc + v;
    }
    ipu_dtype_set_i64(t, out, k, acc); /* wraps as the dtype does */
    if (op == GCL_AVG)
        ipu_dtype_set_i64(t, out, k, ipu_dtype_get_i64(t, out, k) / g_size);
}

static size_t check_ref(const void *got, size_t n, gcl_dtype_t dt, gcl_op_t op, uint64_t seed,
                        size_t off, const char *what)
{
    size_t es = gcl_dtype_size(dt), bad = 0;
    unsigned char exp[8];
    for (size_t i = 0; i < n; i++) {
        reference(exp, 0, dt, op, seed, off + i);
        if (memcmp(exp, (const char *)got + i * es, es) != 0) {
            if (bad++ == 0)
                CHECK(0, "%s %s %s: element %zu: got %g expected %g", what, gcl_dtype_info(dt)->name,
                      gcl_op_name(op), off + i, ipu_dtype_get_f64(gcl_dtype_info(dt)->ipu, got, i),
                      ipu_dtype_get_f64(gcl_dtype_info(dt)->ipu, exp, 0));
        }
    }
    return bad;
}

static const size_t COUNTS[] = {0, 1, 3, 4, 7, 33, 1000, 4096, 4097, 65537};

static void test_reductions(gcl_shm_t *shm, int dt_step)
{
    for (int dt = 0; dt < GCL_DTYPE_COUNT; dt += dt_step)
        for (int op = 0; op < GCL_OP_COUNT; op++)
            for (size_t ci = 0; ci < sizeof(COUNTS) / sizeof(COUNTS[0]); ci++) {
                size_t n = COUNTS[ci], es = gcl_dtype_size(dt);
                uint64_t seed = (uint64_t)(dt * 100 + op * 10) + ci;
                char *in = malloc(n * es * g_size + 64), *out = malloc(n * es * g_size + 64);
                gcl_shm_op_t *o;
                int inplace = (int)(ci % 2);
                /* allreduce */
                fill(in, dt, op, seed, g_rank, 0, n);
                memset(out, 0x5a, n * es);
                if (inplace)
                    memcpy(out, in, n * es);
                CHECK(gcl_shm_allreduce_start(shm, inplace ? GCL_IN_PLACE : in, out, n, dt, op, &o) == GCL_OK, "start");
                CHECK(wait_op(o) == GCL_OK, "allreduce");
                check_ref(out, n, dt, op, seed, 0, inplace ? "allreduce in place" : "allreduce");
                /* reduce to a root that moves */
                int root = (int)(ci % (size_t)g_size);
                memset(out, 0x5a, n * es);
                CHECK(gcl_shm_reduce_start(shm, in, out, n, dt, op, root, &o) == GCL_OK, "start");
                CHECK(wait_op(o) == GCL_OK, "reduce");
                if (g_rank == root)
                    check_ref(out, n, dt, op, seed, 0, "reduce");
                /* reduce_scatter: block b of the input of rank r is element b*n + i */
                fill(in, dt, op, seed + 7, g_rank, 0, n * g_size);
                memset(out, 0x5a, n * es);
                if (inplace)
                    memcpy(out, in, n * es * g_size);
                CHECK(gcl_shm_reduce_scatter_start(shm, inplace ? GCL_IN_PLACE : in, out, n, dt, op, &o) == GCL_OK, "start");
                CHECK(wait_op(o) == GCL_OK, "reduce_scatter");
                check_ref(out, n, dt, op, seed + 7, (size_t)g_rank * n,
                          inplace ? "reduce_scatter in place" : "reduce_scatter");
                free(in);
                free(out);
            }
}

static void test_moves(gcl_shm_t *shm)
{
    static const size_t counts[] = {0, 1, 2, 5, 1000, 70001, 300001};
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
        for (int dt = 0; dt < GCL_DTYPE_COUNT; dt += 3) {
            size_t n = counts[ci], es = gcl_dtype_size(dt);
            uint64_t seed = 5000 + ci * 10 + (uint64_t)dt;
            char *in = malloc(n * es + 1), *out = malloc(n * es * g_size + 1),
                 *exp = malloc(n * es * g_size + 1);
            gcl_shm_op_t *o;
            for (int inplace = 0; inplace < 2; inplace++) {
                fill(in, dt, GCL_SUM, seed, g_rank, 0, n);
                for (int r = 0; r < g_size; r++)
                    fill(exp + (size_t)r * n * es, dt, GCL_SUM, seed, r, 0, n);
                memset(out, 0x5a, n * es * g_size);
                if (inplace)
                    memcpy(out + (size_t)g_rank * n * es, in, n * es);
                CHECK(gcl_shm_allgather_start(shm, inplace ? GCL_IN_PLACE : in, out, n, dt, &o) == GCL_OK, "start");
                CHECK(wait_op(o) == GCL_OK, "allgather");
                CHECK(memcmp(out, exp, n * es * g_size) == 0, "allgather %zu %s%s", n,
                      gcl_dtype_info(dt)->name, inplace ? " in place" : "");
            }
            for (int root = 0; root < g_size; root++) {
                if (g_rank == root)
                    fill(out, dt, GCL_SUM, seed + 1, root, 0, n);
                else
                    memset(out, 0x5a, n * es);
                CHECK(gcl_shm_broadcast_start(shm, out, n, dt, root, &o) == GCL_OK, "start");
                CHECK(wait_op(o) == GCL_OK, "broadcast");
                fill(exp, dt, GCL_SUM, seed + 1, root, 0, n);
                CHECK(memcmp(out, exp, n * es) == 0, "broadcast %zu %s root %d", n, gcl_dtype_info(dt)->name,
                      root);
            }
            free(in);
            free(out);
            free(exp);
        }
}

/* versus MPI_Allreduce itself, random floats, within the order bound */
static void test_vs_mpi(gcl_shm_t *shm)
{
    static const size_t counts[] = {2, 3000, 1 << 20};
    for (size_t ci = 0; ci < 3; ci++) {
        size_t n = counts[ci];
        float *in = malloc(n * 4), *a = malloc(n * 4), *b = malloc(n * 4);
        int32_t *ii = malloc(n * 4), *ia = malloc(n * 4), *ib = malloc(n * 4);
        for (size_t i = 0; i < n; i++) {
            uint64_t h = hash3(77, (uint64_t)g_rank, i);
            in[i] = (float)((double)(h >> 11) / 9007199254740992.0 - 0.5);
            ii[i] = (int32_t)(uint32_t)h; /* sums wrap */
        }
        gcl_shm_op_t *o;
        CHECK(gcl_shm_allreduce_start(shm, in, a, n, GCL_FLOAT32, GCL_SUM, &o) == GCL_OK, "start");
        CHECK(wait_op(o) == GCL_OK, "allreduce");
        MPI_Allreduce(in, b, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += fabsf(a[i] - b[i]) > 1e-6f * (float)g_size;
        CHECK(bad == 0, "f32 sum vs MPI_Allreduce: %zu elements differ (count %zu)", bad, n);
        CHECK(gcl_shm_allreduce_start(shm, ii, ia, n, GCL_INT32, GCL_SUM, &o) == GCL_OK, "start");
        CHECK(wait_op(o) == GCL_OK, "allreduce");
        MPI_Allreduce(ii, ib, (int)n, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
        CHECK(memcmp(ia, ib, n * 4) == 0, "i32 sum vs MPI_Allreduce differs (count %zu)", n);
        /* identical on every rank (bitwise) */
        float *all = malloc(n * 4 * (size_t)g_size);
        MPI_Allgather(a, (int)n, MPI_FLOAT, all, (int)n, MPI_FLOAT, MPI_COMM_WORLD);
        for (int r = 1; r < g_size; r++)
            CHECK(memcmp(all, all + (size_t)r * n, n * 4) == 0, "rank %d's result differs", r);
        free(all);
        free(in); free(a); free(b); free(ii); free(ia); free(ib);
    }
}

/* a long random sequence (same on every rank) of mixed ops and sizes, some
 * queued several deep before progressing, the last first */
static void test_sequence(gcl_shm_t *shm)
{
    enum { DEPTH = 4 };
    size_t maxn = 200002;
    char *in[DEPTH], *out[DEPTH];
    for (int d = 0; d < DEPTH; d++) {
        in[d] = malloc(maxn * 8 * (size_t)g_size);
        out[d] = malloc(maxn * 8 * (size_t)g_size);
    }
    for (int it = 0; it < 300; it++) {
        uint64_t h = hash3(424242, (uint64_t)it, 0);
        int depth = 1 + (int)(h % DEPTH);
        gcl_shm_op_t *ops[DEPTH];
        int kind[DEPTH];
        size_t n[DEPTH];
        gcl_dtype_t dt[DEPTH];
        for (int d = 0; d < depth; d++) {
            uint64_t x = hash3(424242, (uint64_t)it, (uint64_t)d + 1);
            kind[d] = (int)(x % 4);
            dt[d] = (gcl_dtype_t)((x >> 8) % GCL_DTYPE_COUNT);
            size_t sizes[] = {0, 4, 100, 3000, 20000, 200000};
            n[d] = sizes[(x >> 16) % 6] + (x >> 24) % 3;
            uint64_t seed = (uint64_t)it * 16 + (uint64_t)d;
            switch (kind[d]) {
            case 0:
                fill(in[d], dt[d], GCL_SUM, seed, g_rank, 0, n[d]);
                gcl_shm_allreduce_start(shm, in[d], out[d], n[d], dt[d], GCL_SUM, &ops[d]);
                break;
            case 1:
                gcl_shm_barrier_start(shm, &ops[d]);
                break;
            case 2:
                fill(in[d], dt[d], GCL_SUM, seed, g_rank, 0, n[d]);
                gcl_shm_allgather_start(shm, in[d], out[d], n[d], dt[d], &ops[d]);
                break;
            default:
                if (g_rank == it % g_size)
                    fill(out[d], dt[d], GCL_SUM, seed, it % g_size, 0, n[d]);
                gcl_shm_broadcast_start(shm, out[d], n[d], dt[d], it % g_size, &ops[d]);
                break;
            }
        }
        for (int d = depth - 1; d >= 0; d--)
            CHECK(wait_op(ops[d]) == GCL_OK, "sequence op");
        for (int d = 0; d < depth; d++) {
            uint64_t seed = (uint64_t)it * 16 + (uint64_t)d;
            size_t es = gcl_dtype_size(dt[d]);
            if (kind[d] == 0) {
                if (check_ref(out[d], n[d], dt[d], GCL_SUM, seed, 0, "sequence allreduce"))
                    CHECK(0, "iteration %d depth %d", it, d);
            } else if (kind[d] == 2) {
                for (int r = 0; r < g_size; r++) {
                    fill(in[d], dt[d], GCL_SUM, seed, r, 0, n[d]);
                    CHECK(memcmp(in[d], out[d] + (size_t)r * n[d] * es, n[d] * es) == 0,
                          "sequence allgather it %d block %d", it, r);
                }
            } else if (kind[d] == 3) {
                fill(in[d], dt[d], GCL_SUM, seed, it % g_size, 0, n[d]);
                CHECK(memcmp(in[d], out[d], n[d] * es) == 0, "sequence broadcast it %d", it);
            }
        }
    }
    for (int d = 0; d < DEPTH; d++) {
        free(in[d]);
        free(out[d]);
    }
}

/* Broadcasts back to back with readers that start late (the root's data
 * staged ahead of them; it completes each broadcast only once every reader
 * has started it, the call check of shm_impl.h), and a long run with the
 * roots in turn, sizes inline, staged and multi-segment, and an allreduce
 * now and then, delivers every value. */
static void test_bcast_ahead(gcl_shm_t *shm)
{
    gcl_shm_op_t *o;
    enum { AHEAD = 3, RUN = 1500 };
    uint32_t v[AHEAD + 1], mine = 0;
    CHECK(gcl_shm_broadcast_start(shm, &mine, 1, GCL_INT32, 0, &o) == GCL_OK, "start");
    CHECK(wait_op(o) == GCL_OK, "broadcast");
    if (g_size > 1 && g_rank != 0)
        usleep(300000);
    double t0 = MPI_Wtime();
    for (int i = 0; i <= AHEAD; i++) {
        v[i] = g_rank == 0 ? 1000u + (uint32_t)i : 0u;
        CHECK(gcl_shm_broadcast_start(shm, &v[i], 1, GCL_INT32, 0, &o) == GCL_OK, "start");
        CHECK(wait_op(o) == GCL_OK, "broadcast %d", i);
    }
    CHECK(MPI_Wtime() - t0 < 10, "%d broadcasts took %.3f s", AHEAD + 1, MPI_Wtime() - t0);
    for (int i = 0; i <= AHEAD; i++)
        CHECK(v[i] == 1000u + (uint32_t)i, "ahead: broadcast %d got %u", i, v[i]);

    size_t sizes[] = {1, 4, 37, 3000, 70001};
    size_t maxn = 70001;
    uint32_t *b = malloc(maxn * 4), *in = malloc(4), sum;
    for (int it = 0; it < RUN; it++) {
        int root = (it / 7) % g_size;
        size_t n = sizes[(it * 5 + it / 11) % 5];
        uint32_t key = (uint32_t)hash3(777, (uint64_t)it, 0);
        for (size_t i = 0; i < n; i++)
            b[i] = g_rank == root ? key + (uint32_t)i : 0u;
        CHECK(gcl_shm_broadcast_start(shm, b, n, GCL_INT32, root, &o) == GCL_OK, "start");
        CHECK(wait_op(o) == GCL_OK, "broadcast it %d", it);
        size_t bad = n;
        for (size_t i = 0; i < n && bad == n; i++)
            if (b[i] != key + (uint32_t)i)
                bad = i;
        CHECK(bad == n, "run: broadcast it %d (%zu elements, root %d): element %zu wrong", it, n,
              root, bad);
        if (it % 13 == 12) {
            in[0] = (uint32_t)(g_rank + it);
            CHECK(gcl_shm_allreduce_start(shm, in, &sum, 1, GCL_INT32, GCL_SUM, &o) == GCL_OK,
                  "start");
            CHECK(wait_op(o) == GCL_OK, "allreduce it %d", it);
            uint32_t exp = (uint32_t)(g_size * (g_size - 1) / 2 + g_size * it);
            CHECK(sum == exp, "run: allreduce it %d got %u expected %u", it, sum, exp);
        }
    }
    free(b);
    free(in);
}

/* Members that disagree on the layout get an error naming it, never a
 * segment: total sizes that differ (GCL_SHM_NBUF 4 at local rank 0, 3
 * elsewhere), and equal totals of different slots (4 x 192 KiB against
 * 3 x 256 KiB). */
static void test_layout_mismatch(MPI_Comm *comm)
{
    if (g_size < 2)
        return;
    static const size_t slot0[2] = {256 * 1024, 192 * 1024};
    static const char *const want[2] = {"segment sizes differ", "staging slots differ"};
    for (int c = 0; c < 2; c++) {
        gcl_shm_t *s = NULL;
        setenv("GCL_SHM_NBUF", g_rank == 0 ? "4" : "3", 1);
        gcl_status_t st = gcl_shm_open(g_rank, g_size, g_rank == 0 ? slot0[c] : 256 * 1024,
                                       mpi_allgather, comm, &s);
        unsetenv("GCL_SHM_NBUF");
        CHECK(st != GCL_OK && s == NULL, "layout mismatch (%s): opened", want[c]);
        if (g_rank == 1)
            CHECK(strstr(gcl_last_error(), want[c]) != NULL, "layout mismatch: \"%s\", not \"%s\"",
                  gcl_last_error(), want[c]);
        if (s)
            gcl_shm_close(s);
    }
}

/* Members whose calls differ (the last one: count 65 against 64, broadcast
 * against allreduce, int32 against float32, 1 M + 1000 against 1 M floats)
 * each get GCL_ERR_MISMATCH from that op, naming the field, after a
 * matching op; the segment then refuses every op, saying so. */
static void test_call_mismatch(MPI_Comm *comm)
{
    if (g_size < 2)
        return;
    static const char *const field[4] = {"count", "gcl_broadcast", "dtype", "count"};
    const size_t big = (size_t)1 << 20;
    int odd = g_rank == g_size - 1;
    float *x = calloc(big + 1000, sizeof(float)), *y = calloc(big + 1000, sizeof(float));
    for (int c = 0; c < 4; c++) {
        gcl_shm_t *s = NULL;
        gcl_shm_op_t *o = NULL;
        CHECK(gcl_shm_open(g_rank, g_size, GCL_SHM_SLOT_BYTES, mpi_allgather, comm, &s) == GCL_OK,
              "gcl_shm_open: %s", gcl_last_error());
        if (s == NULL)
            continue;
        CHECK(gcl_shm_allreduce_start(s, x, y, 64, GCL_FLOAT32, GCL_SUM, &o) == GCL_OK && wait_op(o) == GCL_OK,
              "call mismatch %d: the matching allreduce first", c);
        gcl_status_t st;
        if (c == 0)
            st = gcl_shm_allreduce_start(s, x, y, 64 + (size_t)odd, GCL_FLOAT32, GCL_SUM, &o);
        else if (c == 1 && odd)
            st = gcl_shm_broadcast_start(s, x, 64, GCL_FLOAT32, 0, &o);
        else if (c == 2)
            st = gcl_shm_allreduce_start(s, x, y, 64, odd ? GCL_INT32 : GCL_FLOAT32, GCL_SUM, &o);
        else
            st = gcl_shm_allreduce_start(s, x, y, c == 1 ? 64 : big + (odd ? 1000 : 0), GCL_FLOAT32, GCL_SUM, &o);
        CHECK(st == GCL_OK, "call mismatch %d: start: %s", c, gcl_last_error());
        if (st == GCL_OK) {
            st = wait_op(o);
            CHECK(st == GCL_ERR_MISMATCH && strstr(gcl_last_error(), field[c]) != NULL,
                  "call mismatch %d: status %d, \"%s\" (want the %s named)", c, (int)st, gcl_last_error(),
                  field[c]);
        }
        st = gcl_shm_barrier_start(s, &o);
        CHECK(st == GCL_ERR_MISMATCH && strstr(gcl_last_error(), "unusable") != NULL,
              "call mismatch %d: a later op: status %d, \"%s\"", c, (int)st, gcl_last_error());
        gcl_shm_close(s);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(x);
    free(y);
}

static void test_barrier(gcl_shm_t *shm)
{
    gcl_shm_op_t *o;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (g_rank == g_size - 1)
        usleep(200000);
    CHECK(gcl_shm_barrier_start(shm, &o) == GCL_OK, "barrier start");
    CHECK(wait_op(o) == GCL_OK, "barrier");
    if (g_size > 1)
        CHECK(MPI_Wtime() - t0 > 0.15, "barrier returned before the late rank arrived (%.3f s)",
              MPI_Wtime() - t0);
}

static void test_errors(gcl_shm_t *shm)
{
    gcl_shm_op_t *o = (gcl_shm_op_t *)1;
    float x = 0;
    CHECK(gcl_shm_allreduce_start(shm, &x, &x, 1, (gcl_dtype_t)99, GCL_SUM, &o) == GCL_ERR_INVALID_ARG && o == NULL, "bad dtype");
    CHECK(gcl_shm_allreduce_start(shm, &x, &x, 1, GCL_FLOAT32, (gcl_op_t)9, &o) == GCL_ERR_INVALID_ARG, "bad op");
    CHECK(gcl_shm_reduce_start(shm, &x, &x, 1, GCL_FLOAT32, GCL_SUM, g_size, &o) == GCL_ERR_INVALID_ARG, "bad root");
    CHECK(gcl_shm_broadcast_start(shm, NULL, 1, GCL_FLOAT32, 0, &o) == GCL_ERR_INVALID_ARG, "NULL buffer");
    CHECK(strstr(gcl_last_error(), "broadcast") != NULL, "message names the call: %s", gcl_last_error());
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    MPI_Comm comm = MPI_COMM_WORLD;
    int pid0 = (int)getpid();
    MPI_Bcast(&pid0, 1, MPI_INT, 0, MPI_COMM_WORLD);

    gcl_shm_t *shm = NULL, *small = NULL, *nt = NULL;
    gcl_status_t st = gcl_shm_open(g_rank, g_size, GCL_SHM_SLOT_BYTES, mpi_allgather, &comm, &shm);
    CHECK(st == GCL_OK, "gcl_shm_open: %s", gcl_last_error());
    /* a second segment with a tiny slot: many segments per op */
    st = gcl_shm_open(g_rank, g_size, 4096, mpi_allgather, &comm, &small);
    CHECK(st == GCL_OK, "gcl_shm_open (small): %s", gcl_last_error());
    /* a third with streaming stores into staging and into every output
     * forced on and 5 staging buffers per member (the default segments
     * choose staging stores per op by timing, so they run both ways too) */
    setenv("GCL_SHM_STAGE_NT", "1", 1);
    setenv("GCL_SHM_STREAM_BYTES", "1", 1);
    setenv("GCL_SHM_NBUF", "5", 1);
    st = gcl_shm_open(g_rank, g_size, 8192, mpi_allgather, &comm, &nt);
    CHECK(st == GCL_OK, "gcl_shm_open (streaming): %s", gcl_last_error());
    unsetenv("GCL_SHM_STAGE_NT");
    unsetenv("GCL_SHM_STREAM_BYTES");
    unsetenv("GCL_SHM_NBUF");
    if (shm == NULL || small == NULL || nt == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    char path[64];
    snprintf(path, sizeof(path), "/dev/shm/gcl-%d-0", pid0);
    CHECK(access(path, F_OK) != 0, "%s left in /dev/shm", path);

    test_errors(shm);
    test_reductions(shm, 1);
    test_reductions(small, 3); /* f32, f16, i32: many segments per op */
    test_moves(shm);
    test_moves(small);
    test_reductions(nt, 3);
    test_moves(nt);
    test_vs_mpi(shm);
    test_sequence(shm);
    test_sequence(small);
    test_sequence(nt);
    test_bcast_ahead(shm);
    test_bcast_ahead(small);
    test_barrier(shm);
    test_layout_mismatch(&comm);
    test_call_mismatch(&comm);

    gcl_shm_close(shm);
    gcl_shm_close(small);
    gcl_shm_close(nt);
    int fails = g_fails, total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0) {
        if (total == 0)
            printf("gcl_shm: ok (%d ranks)\n", g_size);
        else
            printf("gcl_shm: %d failures (%d ranks)\n", total, g_size);
    }
    MPI_Finalize();
    return total != 0;
}
