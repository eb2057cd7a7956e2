/* gcl-bench: libgcl against MPI, OSU style (osu_allreduce etc.), one run.
 *
 *   mpirun -np N bench/gcl-bench [-c COLL] [-m MIN:MAX] [-i ITERS] [-x WARMUP]
 *                                [-d DTYPE] [-o OP] [-a ALGO] [-t SECONDS] [-r ROUNDS] [-R] [-n] [-l] [-v]
 *
 *  -c  allreduce (default), reduce_scatter, allgather, broadcast, reduce,
 *      alltoall
 *  -m  message sizes in bytes, MIN:MAX doubling (default 8:268435456); the
 *      size is the whole array as in nccl-tests: the allreduce/broadcast
 *      buffer, the reduce_scatter input, the allgather output, the reduce
 *      buffer, the alltoall input
 *  -i  timed iterations per size (default 1000), -x warm-up calls (default
 *      20); both are cut for large messages so that the measurements of a
 *      size take about -t seconds (default 1.0, shared by the rounds), but
 *      never below 5 iterations
 *  -d  f32 (default) f64 f16 bf16 i8 u8 i32 i64;  -o sum (default) prod min max avg
 *  -a  force libgcl's algorithm (sets GCL_<COLL>_ALGO before gcl_init_mpi)
 *  -r  rounds per size (default 5), see below
 *  -R  every buffer (libgcl's and MPI's) from gcl_mem_alloc: registered
 *      memory, which libgcl's allreduce reads and writes directly on one
 *      host (gcl.h); default: malloc
 *  -n  libgcl only (no MPI column)
 *  -l  per-call latency, OSU style: a barrier before every timed call, whose
 *      own time is summed (the default times a loop of back-to-back calls,
 *      in which a rooted call's root may run ahead of the others)
 *  -v  every round's times on stderr (to see the machine's slow states)
 *
 * -r rounds, each over every size: a barrier, warm-up, the timed loop for
 * libgcl, then the same for the MPI counterpart (MPI_Allreduce,
 * MPI_Reduce_scatter_block, MPI_Allgather, MPI_Bcast and MPI_Reduce to and
 * from root 0, MPI_Alltoall) on the
 * same buffers, each loop taking about -t / -r seconds. Alternating loops,
 * and rounds spread over the whole run, expose both sides to the same
 * machine noise (a shared VM's neighbours come and go within seconds); the
 * table is printed at the end. Reported: the median over rounds of the average
 * time per call (max over ranks); algbw = bytes / time; busbw =
 * algbw x 2(n-1)/n (allreduce), (n-1)/n (reduce_scatter, allgather,
 * alltoall), 1 (broadcast, reduce) as nccl-tests; the libgcl/MPI busbw ratio; and a check that
 * libgcl's result equals MPI's bit for bit (the inputs are small integers,
 * so every summation order gives the same sum). Exit status 1 if a check
 * failed. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gcl/gcl.h"
#include "collectives/types.h"

enum { C_ALLREDUCE, C_REDUCE_SCATTER, C_ALLGATHER, C_BROADCAST, C_REDUCE, C_ALLTOALL, C_COUNT };
static const char *const CNAME[C_COUNT] = {"allreduce", "reduce_scatter", "allgather", "broadcast", "reduce",
                                           "alltoall"};
static const char *const CENV[C_COUNT] = {"GCL_ALLREDUCE_ALGO", "GCL_REDUCE_SCATTER_ALGO", "GCL_ALLGATHER_ALGO",
                                          "GCL_BROADCAST_ALGO", "GCL_REDUCE_ALGO", "GCL_ALLTOALL_ALGO"};
static const gcl_coll_t CGCL[C_COUNT] = {GCL_COLL_ALLREDUCE, GCL_COLL_REDUCE_SCATTER, GCL_COLL_ALLGATHER,
                                         GCL_COLL_BROADCAST, GCL_COLL_REDUCE, GCL_COLL_ALLTOALL};

static int rank, size;

static int lookup(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

/* -d and -o: the names of libgcl's table (collectives/types.h) */
static int lookup_dtype(const char *s)
{
    for (int i = 0; i < GCL_DTYPE_COUNT; i++)
        if (!strcmp(s, gcl_dtype_info((gcl_dtype_t)i)->name))
            return i;
    return -1;
}

static int lookup_op(const char *s)
{
    for (int i = 0; i < GCL_OP_COUNT; i++)
        if (!strcmp(s, gcl_op_name((gcl_op_t)i)))
            return i;
    return -1;
}

static MPI_Datatype mpi_type(gcl_dtype_t dt)
{
    switch (dt) {
    case GCL_FLOAT32: return MPI_FLOAT;
    case GCL_FLOAT64: return MPI_DOUBLE;
    case GCL_INT8:    return MPI_INT8_T;
    case GCL_UINT8:   return MPI_UINT8_T;
    case GCL_INT32:   return MPI_INT32_T;
    case GCL_INT64:   return MPI_INT64_T;
    default:          return MPI_DATATYPE_NULL;
    }
}

static MPI_Op mpi_op(gcl_op_t op)
{
    switch (op) {
    case GCL_SUM:  return MPI_SUM;
    case GCL_PROD: return MPI_PROD;
    case GCL_MIN:  return MPI_MIN;
    case GCL_MAX:  return MPI_MAX;
    default:       return MPI_OP_NULL;
    }
}

/* Small integers (0..3) in dtype: every sum of up to 16 ranks is exact. */
static void fill(void *buf, size_t n, gcl_dtype_t dt)
{
    for (size_t i = 0; i < n; i++) {
        int v = (int)((i * 7 + (size_t)rank * 3) % 4);
        switch (dt) {
        case GCL_FLOAT32: ((float *)buf)[i] = (float)v; break;
        case GCL_FLOAT64: ((double *)buf)[i] = v; break;
        case GCL_FLOAT16: ((uint16_t *)buf)[i] = v ? (uint16_t)(0x3c00 + (v >= 2) * 0x400 + (v == 3) * 0x200) : 0; break;
        case GCL_BFLOAT16: ((uint16_t *)buf)[i] = v ? (uint16_t)(0x3f80 + (v >= 2) * 0x80 + (v == 3) * 0x40) : 0; break;
        case GCL_INT8: case GCL_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
        case GCL_INT32: ((int32_t *)buf)[i] = v; break;
        default: ((int64_t *)buf)[i] = v; break;
        }
    }
}

typedef struct {
    int coll;
    gcl_dtype_t dt;
    gcl_op_t op;
    size_t count;          /* elements per call argument (see gcl.h) */
    void *send, *recv;
    gcl_comm_t *gc;
} job_t;

static int gcl_once(const job_t *j)
{
    gcl_status_t st;
    switch (j->coll) {
    case C_ALLREDUCE:      st = gcl_allreduce(j->send, j->recv, j->count, j->dt, j->op, j->gc); break;
    case C_REDUCE_SCATTER: st = gcl_reduce_scatter(j->send, j->recv, j->count, j->dt, j->op, j->gc); break;
    case C_ALLGATHER:      st = gcl_allgather(j->send, j->recv, j->count, j->dt, j->gc); break;
    case C_REDUCE:         st = gcl_reduce(j->send, j->recv, j->count, j->dt, j->op, 0, j->gc); break;
    case C_ALLTOALL:       st = gcl_alltoall(j->send, j->recv, j->count, j->dt, j->gc); break;
    default:               st = gcl_broadcast(j->recv, j->count, j->dt, 0, j->gc); break;
    }
    if (st != GCL_OK) {
        fprintf(stderr, "rank %d: gcl_%s: %s: %s\n", rank, CNAME[j->coll], gcl_status_string(st), gcl_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return 0;
}

static int mpi_once(const job_t *j)
{
    int n = (int)j->count;
    int b = (int)(j->count * gcl_dtype_size(j->dt));
    switch (j->coll) {
    case C_ALLREDUCE:
        return MPI_Allreduce(j->send, j->recv, n, mpi_type(j->dt), mpi_op(j->op), MPI_COMM_WORLD);
    case C_REDUCE_SCATTER:
        return MPI_Reduce_scatter_block(j->send, j->recv, n, mpi_type(j->dt), mpi_op(j->op), MPI_COMM_WORLD);
    case C_ALLGATHER:
        return MPI_Allgather(j->send, b, MPI_BYTE, j->recv, b, MPI_BYTE, MPI_COMM_WORLD);
    case C_REDUCE:
        return MPI_Reduce(j->send, j->recv, n, mpi_type(j->dt), mpi_op(j->op), 0, MPI_COMM_WORLD);
    case C_ALLTOALL:
        return MPI_Alltoall(j->send, b, MPI_BYTE, j->recv, b, MPI_BYTE, MPI_COMM_WORLD);
    default:
        return MPI_Bcast(j->recv, b, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
}

/* Average seconds per call, max over ranks: warm-up, a barrier, the timed
 * loop. The counts are cut (the same on every rank) so that the measurement
 * takes about `budget` seconds. */
static int lat_mode; /* -l */

static double measure(int (*once)(const job_t *), const job_t *j, int iters, int warm, double budget)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    once(j);
    t = MPI_Wtime() - t;
    double tmax;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (tmax > 0) {
        double fit = budget / tmax;
        if (fit < iters)
            iters = fit < 5 ? 5 : (int)fit;
        if (fit / 4 < warm)
            warm = (int)(fit / 4);
    }
    for (int i = 0; i < warm; i++)
        once(j);
    MPI_Barrier(MPI_COMM_WORLD);
    if (lat_mode) {
        t = 0;
        for (int i = 0; i < iters; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            once(j);
            t += MPI_Wtime() - t0;
        }
        t /= iters;
    } else {
        t = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            once(j);
        t = (MPI_Wtime() - t) / iters;
    }
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return tmax;
}

#define MAX_ROUNDS 64

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(void)
{
    fprintf(stderr, "usage: gcl-bench [-c allreduce|reduce_scatter|allgather|broadcast|reduce|alltoall]\n"
                    "                 [-m MIN:MAX] [-i ITERS] [-x WARMUP] [-d f32|f64|f16|bf16|i8|u8|i32|i64] [-o sum|prod|min|max|avg]\n"
                    "                 [-a ALGO] [-t SECONDS] [-r ROUNDS] [-R] [-n] [-l] [-v]\n");
}

static void human(char *s, size_t n, size_t b)
{
    if (b >= (1u << 20) && b % (1u << 20) == 0)
        snprintf(s, n, "%zu MiB", b >> 20);
    else if (b >= 1024 && b % 1024 == 0)
        snprintf(s, n, "%zu KiB", b >> 10);
    else
        snprintf(s, n, "%zu B", b);
}

/* A buffer of bytes: malloc, or gcl_mem_alloc (reg; collective); aborts on failure. */
static char *buffer(gcl_comm_t *gc, int reg, size_t bytes)
{
    void *p = NULL;
    if (reg)
        gcl_mem_alloc(gc, bytes, &p); /* (*p stays NULL on error) */
    else
        p = malloc(bytes);
    if (p == NULL) {
        fprintf(stderr, "rank %d: no %zu-byte buffer: %s\n", rank, bytes,
                reg ? gcl_last_error() : "out of memory");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

static void buffer_free(gcl_comm_t *gc, int reg, char *p)
{
    if (reg)
        gcl_mem_free(gc, p);
    else
        free(p);
}

int main(int argc, char **argv)
{
    int coll = C_ALLREDUCE, iters = 1000, warm = 20, no_mpi = 0, rounds = 5, trace = 0, reg = 0, opt;
    gcl_dtype_t dt = GCL_FLOAT32;
    gcl_op_t op = GCL_SUM;
    size_t lo = 8, hi = 256u << 20;
    double budget = 1.0;
    const char *algo = NULL;
    while ((opt = getopt(argc, argv, "c:m:i:x:d:o:a:t:r:Rnlvh")) != -1) {
        int k;
        switch (opt) {
        case 'c': if ((coll = lookup(optarg, CNAME, C_COUNT)) < 0) { usage(); return 2; } break;
        case 'm': if (sscanf(optarg, "%zu:%zu", &lo, &hi) != 2 || lo == 0 || hi < lo) { usage(); return 2; } break;
        case 'i': iters = atoi(optarg); break;
        case 'x': warm = atoi(optarg); break;
        case 'd': if ((k = lookup_dtype(optarg)) < 0) { usage(); return 2; } dt = (gcl_dtype_t)k; break;
        case 'o': if ((k = lookup_op(optarg)) < 0) { usage(); return 2; } op = (gcl_op_t)k; break;
        case 'a': algo = optarg; break;
        case 't': budget = atof(optarg); break;
        case 'r': rounds = atoi(optarg); break;
        case 'R': reg = 1; break;
        case 'n': no_mpi = 1; break;
        case 'l': lat_mode = 1; break;
        case 'v': trace = 1; break;
        default: usage(); return opt == 'h' ? 0 : 2;
        }
    }
    if (iters < 1 || warm < 0 || rounds < 1 || rounds > MAX_ROUNDS) {
        usage();
        return 2;
    }
    if (algo)
        setenv(CENV[coll], algo, 1);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm mc = MPI_COMM_WORLD;
    gcl_comm_t *gc = NULL;
    gcl_status_t st = gcl_init_mpi(&mc, NULL, &gc);
    if (st != GCL_OK) {
        fprintf(stderr, "rank %d: gcl_init_mpi: %s: %s\n", rank, gcl_status_string(st), gcl_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int reduction = coll == C_ALLREDUCE || coll == C_REDUCE_SCATTER || coll == C_REDUCE;
    if (reduction && (mpi_type(dt) == MPI_DATATYPE_NULL || mpi_op(op) == MPI_OP_NULL))
        no_mpi = 1;   /* MPI has no float16/bfloat16 or AVG */
    int exact = op != GCL_PROD && op != GCL_AVG;
    double factor = coll == C_ALLREDUCE ? 2.0 * (size - 1) / size
                  : coll == C_BROADCAST || coll == C_REDUCE ? 1.0 : (double)(size - 1) / size;
    size_t es = gcl_dtype_size(dt);
    /* count is a block of the array */
    int per_rank = coll == C_REDUCE_SCATTER || coll == C_ALLGATHER || coll == C_ALLTOALL;
    size_t maxcount = hi / es / (per_rank ? (size_t)size : 1);
    size_t in_elems = coll == C_REDUCE_SCATTER || coll == C_ALLTOALL ? maxcount * (size_t)size : maxcount;
    size_t out_elems = coll == C_ALLGATHER || coll == C_ALLTOALL ? maxcount * (size_t)size : maxcount;
    char *send = buffer(gc, reg, in_elems * es + 64), *recv = buffer(gc, reg, out_elems * es + 64),
         *ref = no_mpi ? NULL : buffer(gc, reg, out_elems * es + 64);
    fill(send, in_elems, dt);

    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_library_version(lib, &len);
        char *nl = strchr(lib, ',');
        if (nl)
            *nl = '\0';
        const char *pml = getenv("OMPI_MCA_pml");
        printf("# gcl-bench %s %s %s, %d ranks, libgcl %s vs %s (pml %s)%s\n", CNAME[coll], gcl_dtype_info(dt)->name,
               reduction ? gcl_op_name(op) : "", size, gcl_version_string(), lib, pml ? pml : "default",
               reg ? ", buffers from gcl_mem_alloc" : "");
        printf("# time: median over %d alternating rounds of the average per call%s, max over ranks; busbw", rounds,
               lat_mode ? " (a barrier before each)" : "");
        printf(" = algbw x %s%s\n",
               coll == C_ALLREDUCE ? "2(n-1)/n" : coll == C_BROADCAST || coll == C_REDUCE ? "1" : "(n-1)/n",
               algo ? "; algorithm forced" : "");
        printf("| %10s | %-18s | %10s | %9s | %9s | %10s | %9s | %9s | %6s | %5s |\n", "size", "libgcl algorithm",
               "libgcl us", "algbw GB/s", "busbw GB/s", "MPI us", "algbw GB/s", "busbw GB/s", "ratio", "check");
        printf("|-----------:|--------------------|-----------:|----------:|----------:|-----------:|----------:|"
               "----------:|-------:|-------|\n");
    }
    /* the sizes, then the rounds as the outer loop: each size's rounds are
     * spread over the whole run */
    enum { MAX_SIZES = 64 };
    size_t counts[MAX_SIZES];
    int nsz = 0;
    for (size_t bytes = lo; bytes <= hi && nsz < MAX_SIZES; bytes *= 2) {
        size_t count = bytes / es / (per_rank ? (size_t)size : 1);
        if (count > 0)
            counts[nsz++] = count;
        if (bytes > hi / 2)
            break;
    }
    static double tgr[MAX_SIZES][MAX_ROUNDS], tmr[MAX_SIZES][MAX_ROUNDS];
    int okk[MAX_SIZES];
    for (int k = 0; k < nsz; k++)
        okk[k] = 1;
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < nsz; k++) {
            job_t j = {coll, dt, op, counts[k], send, recv, gc};
            job_t m = j;
            m.recv = ref;
            if (coll == C_BROADCAST && rank == 0) {
                memcpy(recv, send, counts[k] * es);
                if (!no_mpi)
                    memcpy(ref, send, counts[k] * es);
            }
            tgr[k][r] = measure(gcl_once, &j, iters, warm, budget / rounds);
            tmr[k][r] = no_mpi ? 0 : measure(mpi_once, &m, iters, warm, budget / rounds);
            if (trace && rank == 0)
                fprintf(stderr, "round %d, %zu elements: libgcl %.2f us, MPI %.2f us\n", r, counts[k],
                        tgr[k][r] * 1e6, tmr[k][r] * 1e6);
            if (!no_mpi) {
                size_t outb = counts[k] * es * (coll == C_ALLGATHER || coll == C_ALLTOALL ? (size_t)size : 1);
                int mine = !exact || (coll == C_REDUCE && rank != 0) || memcmp(recv, ref, outb) == 0, all;
                MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
                okk[k] &= all;
            }
        }
    int bad = 0;
    for (int k = 0; k < nsz; k++) {
        size_t total = counts[k] * es * (per_rank ? (size_t)size : 1);
        double tg = median(tgr[k], rounds), tm = median(tmr[k], rounds);
        int ok = okk[k];
        bad |= !ok;
        if (rank == 0) {
            char hs[32];
            human(hs, sizeof hs, total);
            double ag = total / tg / 1e9, am = tm > 0 ? total / tm / 1e9 : 0;
            printf("| %10s | %-18s | %10.3f | %9.3f | %9.3f |", hs, gcl_algorithm(gc, CGCL[coll], total), tg * 1e6,
                   ag, ag * factor);
            if (no_mpi)
                printf(" %10s | %9s | %9s | %6s | %5s |\n", "-", "-", "-", "-", "-");
            else
                printf(" %10.3f | %9.3f | %9.3f | %6.2f | %5s |\n", tm * 1e6, am, am * factor, tm / tg,
                       exact ? (ok ? "ok" : "FAIL") : "-");
            fflush(stdout);
        }
    }
    buffer_free(gc, reg, send);
    buffer_free(gc, reg, recv);
    buffer_free(gc, reg, ref);
    gcl_finalize(gc);
    MPI_Finalize();
    return bad;
}
