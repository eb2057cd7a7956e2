/* Mismatched calls without GCL_DEBUG (the always-on call check), part of
 * the mismatch suite: the last rank calls differently (another count,
 * collective, dtype; 1 M against 1 M + 1000 floats: the cases of issue 21),
 * on the shared-memory path (the default on one host) and on the network
 * path (a world made with GCL_NO_SHM=1). Every rank must get
 * GCL_ERR_MISMATCH from that very call, with a message naming the field,
 * in bounded time. Afterwards (docs/libgcl.md, "Mismatched calls"): on the
 * network path the communicator still gives the right sum; on shared memory
 * it refuses every later call with GCL_ERR_MISMATCH. */
#include "gcl_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { AC_COUNT, AC_COLL, AC_DTYPE, AC_BIG, AC_OP, AC_ROOT, AC_NB_COUNT, AC_BIG_COLL, AC_BIG_SMALL, AC_BARRIER,
       AC_AG_COUNT, AC_REDUCE_ROOT, AC_RS_DTYPE, AC_BCAST_SIZES, AC_A2A_COLL, AC_A2A_COUNT, AC_BIG_RS_COLL,
       AC_BIG_REDUCE_ROOT, AC_ZERO, AC_CASES };
/* The network path's check rides in small calls' messages (recursive
 * doubling's, carried.c's) and beside a 2-member large allreduce's
 * (check.c): the cases mix these with each other and with calls checked in
 * rounds of their own (a 16 KiB broadcast against a 4 KiB one). A call with
 * count 0 is a call too (against count 1: not a hang until the timeout). */
static const char *const AC_NAME[AC_CASES] = {
    "allreduce, count 64 vs 65", "allreduce vs broadcast", "allreduce, float32 vs int32",
    "allreduce, 1 M vs 1 M + 1000 floats", "allreduce, sum vs max", "broadcast, another root",
    "iallreduce + gcl_wait, another count", "allreduce vs broadcast, 1 M floats", "allreduce, 1 M vs 64 floats",
    "allreduce vs barrier", "allgather, count 16 vs 17", "reduce, another root",
    "reduce_scatter, float32 vs int32", "broadcast, 1024 vs 4096 floats", "alltoall vs allgather",
    "alltoall, count 16 vs 17", "reduce vs reduce_scatter, 1 M floats", "reduce, 1 M floats, another root",
    "allgather, count 1 vs 0"};
/* what the message must name */
static const char *const AC_FIELD[AC_CASES] = {"count", "gcl_broadcast", "dtype", "count", "op", "root",
                                               "count", "gcl_broadcast", "count", "gcl_barrier", "count", "root",
                                               "dtype", "count", "gcl_alltoall", "count", "gcl_reduce_scatter",
                                               "root", "count"};
#define BIG ((size_t)1 << 20)

static gcl_status_t call(int c, int odd, float *x, float *y, gcl_comm_t *comm)
{
    gcl_request_t *req = NULL;
    gcl_status_t st;
    switch (c) {
    case AC_COUNT: return gcl_allreduce(x, y, 64 + (size_t)odd, GCL_FLOAT32, GCL_SUM, comm);
    case AC_COLL:
        return odd ? gcl_broadcast(x, 64, GCL_FLOAT32, 0, comm) : gcl_allreduce(x, y, 64, GCL_FLOAT32, GCL_SUM, comm);
    case AC_DTYPE: return gcl_allreduce(x, y, 64, odd ? GCL_INT32 : GCL_FLOAT32, GCL_SUM, comm);
    case AC_BIG:   return gcl_allreduce(x, y, BIG + (odd ? 1000 : 0), GCL_FLOAT32, GCL_SUM, comm);
    case AC_OP:    return gcl_allreduce(x, y, 64, GCL_FLOAT32, odd ? GCL_MAX : GCL_SUM, comm);
    case AC_ROOT:  return gcl_broadcast(x, 64, GCL_FLOAT32, odd, comm);
    case AC_BIG_COLL:
        return odd ? gcl_broadcast(x, BIG, GCL_FLOAT32, 0, comm) : gcl_allreduce(x, y, BIG, GCL_FLOAT32, GCL_SUM, comm);
    case AC_BIG_SMALL: return gcl_allreduce(x, y, odd ? 64 : BIG, GCL_FLOAT32, GCL_SUM, comm);
    case AC_BARRIER:   return odd ? gcl_barrier(comm) : gcl_allreduce(x, y, 64, GCL_FLOAT32, GCL_SUM, comm);
    case AC_AG_COUNT:  return gcl_allgather(x, y, 16 + (size_t)odd, GCL_FLOAT32, comm);
    case AC_REDUCE_ROOT: return gcl_reduce(x, y, 64, GCL_FLOAT32, GCL_SUM, odd, comm);
    case AC_RS_DTYPE:  return gcl_reduce_scatter(x, y, 16, odd ? GCL_INT32 : GCL_FLOAT32, GCL_SUM, comm);
    case AC_BCAST_SIZES: return gcl_broadcast(x, odd ? 4096 : 1024, GCL_FLOAT32, 0, comm);
    /* an alltoall (its data always on the network path) against a call on
     * the shared-memory segment */
    case AC_A2A_COLL:
        return odd ? gcl_alltoall(x, y, 16, GCL_FLOAT32, comm) : gcl_allgather(x, y, 16, GCL_FLOAT32, comm);
    case AC_A2A_COUNT: return gcl_alltoall(x, y, 16 + (size_t)odd, GCL_FLOAT32, comm);
    /* 2 members beside the check's header: a reduce's one-way message, a
     * reduce_scatter's exchange */
    case AC_BIG_RS_COLL:
        return odd ? gcl_reduce(x, y, BIG, GCL_FLOAT32, GCL_SUM, 0, comm)
                   : gcl_reduce_scatter(x, y, BIG / (size_t)size, GCL_FLOAT32, GCL_SUM, comm);
    case AC_BIG_REDUCE_ROOT: return gcl_reduce(x, y, BIG, GCL_FLOAT32, GCL_SUM, odd, comm);
    case AC_ZERO:      return gcl_allgather(x, y, odd ? 0 : 1, GCL_FLOAT32, comm);
    default:
        st = gcl_iallreduce(x, y, 64 + (size_t)odd, GCL_FLOAT32, GCL_SUM, comm, &req);
        return st == GCL_OK ? gcl_wait(&req) : st;
    }
}

/* a correct allreduce of rank + 1 on comm: the sum, or the status */
static gcl_status_t sum_after(gcl_comm_t *comm, const char *what)
{
    int32_t a = rank + 1, b = -1;
    gcl_status_t st = gcl_allreduce(&a, &b, 1, GCL_INT32, GCL_SUM, comm);
    if (st == GCL_OK)
        CHECK(b == size * (size + 1) / 2, "%s: allreduce after the mismatch gave %d, want %d", what, (int)b,
              size * (size + 1) / 2);
    return st;
}

static void run_world(int no_shm)
{
    const char *path = no_shm ? "network" : "shm";
    const char *was = getenv("GCL_NO_SHM");
    char *saved = was ? strdup(was) : NULL;
    if (no_shm)
        setenv("GCL_NO_SHM", "1", 1);
    else
        unsetenv("GCL_NO_SHM");
    MPI_Comm mc = MPI_COMM_WORLD;
    gcl_comm_t *w = NULL;
    gcl_status_t st = gcl_init_mpi(&mc, NULL, &w);
    if (saved)
        setenv("GCL_NO_SHM", saved, 1);
    else
        unsetenv("GCL_NO_SHM");
    free(saved);
    if (!gok(st, "gcl_init_mpi for the mismatch cases"))
        return;
    int odd = rank == size - 1;
    float *x = calloc(BIG + 1000, sizeof(float)), *y = calloc(BIG + 1000, sizeof(float));
    for (size_t i = 0; i < BIG + 1000; i++)
        x[i] = 1.0f;
    for (int c = 0; c < AC_CASES; c++) {
        char what[160];
        snprintf(what, sizeof what, "%s (%s path, no GCL_DEBUG)", AC_NAME[c], path);
        gcl_comm_t *comm = NULL;
        if (!gok(gcl_comm_split(w, 0, rank, &comm), "split"))
            continue;
        gok(gcl_comm_set_timeout(comm, 20), "gcl_comm_set_timeout");
        double t0 = now_s();
        st = call(c, odd, x, y, comm);
        double el = now_s() - t0;
        if (gexpect(st, GCL_ERR_MISMATCH, what))
            CHECK(strstr(gcl_last_error(), AC_FIELD[c]) != NULL, "%s: the message does not name the %s: %s",
                  what, AC_FIELD[c], gcl_last_error());
        CHECK(el < 15, "%s: returned after %.3f s", what, el);
        /* afterwards: the network path's communicator is whole; the shared
         * memory's refuses every call, saying why */
        char after[200];
        snprintf(after, sizeof after, "%s, the next call", what);
        st = sum_after(comm, after);
        if (no_shm)
            gok(st, after);
        else if (gexpect(st, GCL_ERR_MISMATCH, after))
            CHECK(strstr(gcl_last_error(), "unusable") != NULL, "%s: %s", after, gcl_last_error());
        gcl_comm_destroy(comm);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(x);
    free(y);
    /* the world itself is unharmed */
    gok(sum_after(w, "the world after the mismatches"), "the world after the mismatches");
    gcl_finalize(w);
}

/* Ranks set up differently: the last one sets a variable that chooses
 * how the collectives run (GCL_ALLREDUCE_ALGO=ring, GCL_NO_SHM=1,
 * GCL_SEGMENT_BYTES) where the others do not. gcl_init_mpi must fail on
 * every rank with GCL_ERR_MISMATCH naming the variable and the rank, in
 * bounded time, not leave them to hang or to mismatch on their first
 * collective; and an init with alike settings afterwards works. An unknown
 * algorithm name on the last rank only fails init on every rank with
 * GCL_ERR_INVALID_ARG (not that rank alone, before the bootstrap the others
 * wait in). */
static void run_set_up_differently(void)
{
    static const char *const VARS[][2] = {{"GCL_ALLREDUCE_ALGO", "ring"},
                                          {"GCL_NO_SHM", "1"},
                                          {"GCL_SEGMENT_BYTES", "8192"},
                                          {"GCL_SHM_SLOT_BYTES", "65536"},
                                          {"GCL_SHM_NBUF", "4"},
                                          {"GCL_ALLGATHER_ALGO", "no_such_algorithm"}};
    int odd = rank == size - 1;
    MPI_Comm mc = MPI_COMM_WORLD;
    for (size_t v = 0; v < sizeof VARS / sizeof VARS[0]; v++) {
        char what[160], want[64];
        snprintf(what, sizeof what, "gcl_init_mpi with %s=%s on rank %d only", VARS[v][0], VARS[v][1], size - 1);
        snprintf(want, sizeof want, "on rank %d", size - 1);
        /* the others unset (the suite may run with the variable set) */
        const char *was = getenv(VARS[v][0]);
        char *saved = was ? strdup(was) : NULL;
        if (odd)
            setenv(VARS[v][0], VARS[v][1], 1);
        else
            unsetenv(VARS[v][0]);
        gcl_comm_t *w = NULL;
        double t0 = now_s();
        gcl_status_t st = gcl_init_mpi(&mc, NULL, &w);
        double el = now_s() - t0;
        if (saved)
            setenv(VARS[v][0], saved, 1);
        else
            unsetenv(VARS[v][0]);
        free(saved);
        int invalid = !strcmp(VARS[v][1], "no_such_algorithm");
        if (invalid && odd)
            snprintf(want, sizeof want, "unknown algorithm");
        if (gexpect(st, invalid ? GCL_ERR_INVALID_ARG : GCL_ERR_MISMATCH, what))
            CHECK(strstr(gcl_last_error(), VARS[v][0]) && strstr(gcl_last_error(), want),
                  "%s: the message does not name the variable and the rank: %s", what, gcl_last_error());
        CHECK(w == NULL, "%s: failed but set *world", what);
        CHECK(el < 15, "%s: returned after %.3f s", what, el);
        if (w)
            gcl_finalize(w);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    gcl_comm_t *w = NULL;
    if (gok(gcl_init_mpi(&mc, NULL, &w), "gcl_init_mpi alike after the refused ones")) {
        gok(sum_after(w, "the world made after the refused ones"), "the world made after the refused ones");
        gcl_finalize(w);
    }
}

/* The shared-memory tuning variables that choose how an op runs
 * (GCL_SHM_ONESHOT_MAX: one step or segmented; GCL_SHM_DIRECT_MIN: direct
 * on registered memory or staged) are not compared at init: every member
 * takes local rank 0's. Set on the last rank only, they must change
 * nothing: small and registered allreduces give the right sums, not a
 * wrong one on some ranks and a timeout on the others. */
static void run_shm_tuning_differently(void)
{
    static const char *const VARS[][2] = {{"GCL_SHM_ONESHOT_MAX", "0"}, {"GCL_SHM_DIRECT_MIN", "0"},
                                          {"GCL_SHM_DIRECT_MIN", "1G"}};
    MPI_Comm mc = MPI_COMM_WORLD;
    for (size_t v = 0; v < sizeof VARS / sizeof VARS[0]; v++) {
        char what[160];
        snprintf(what, sizeof what, "%s=%s on rank %d only", VARS[v][0], VARS[v][1], size - 1);
        if (rank == size - 1)
            setenv(VARS[v][0], VARS[v][1], 1);
        gcl_comm_t *w = NULL;
        gcl_status_t st = gcl_init_mpi(&mc, NULL, &w);
        unsetenv(VARS[v][0]);
        if (!gok(st, what))
            continue;
        gok(gcl_comm_set_timeout(w, 10), "gcl_comm_set_timeout");
        enum { N = 4096 }; /* 16 KiB: registered, past the default GCL_SHM_DIRECT_MIN */
        int32_t *x = NULL, *y = NULL;
        if (gok(gcl_mem_alloc(w, N * sizeof(int32_t), (void **)&x), what) &&
            gok(gcl_mem_alloc(w, N * sizeof(int32_t), (void **)&y), what)) {
            for (size_t n = 1; n <= N; n *= 64) {
                for (size_t i = 0; i < n; i++)
                    x[i] = rank + (int32_t)i;
                if (gok(gcl_allreduce(x, y, n, GCL_INT32, GCL_SUM, w), what))
                    for (size_t i = 0; i < n; i++)
                        CHECK(y[i] == size * (size - 1) / 2 + size * (int32_t)i, "%s: %zu int32: [%zu] = %d", what,
                              n, i, (int)y[i]);
            }
        }
        gcl_mem_free(w, x);
        gcl_mem_free(w, y);
        gcl_finalize(w);
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

void suite_mismatch_checked(void)
{
    if (size < 2)
        return;
    run_world(0);
    run_world(1);
    run_set_up_differently();
    run_shm_tuning_differently();
}
