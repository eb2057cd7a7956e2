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
       AC_CASES };
/* The network path's check rides in small allreduces' messages and beside
 * a 2-member large one's (check.c): the cases mix these with each other and
 * with calls checked in rounds of their own. */
static const char *const AC_NAME[AC_CASES] = {
    "allreduce, count 64 vs 65", "allreduce vs broadcast", "allreduce, float32 vs int32",
    "allreduce, 1 M vs 1 M + 1000 floats", "allreduce, sum vs max", "broadcast, another root",
    "iallreduce + gcl_wait, another count", "allreduce vs broadcast, 1 M floats", "allreduce, 1 M vs 64 floats",
    "allreduce vs barrier"};
/* what the message must name */
static const char *const AC_FIELD[AC_CASES] = {"count", "gcl_broadcast", "dtype", "count", "op", "root",
                                               "count", "gcl_broadcast", "count", "gcl_barrier"};
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

/* Alike calls, but the last rank forces another algorithm
 * (GCL_ALLREDUCE_ALGO=ring at its init) where the others' allreduce carries
 * the network path's check (a power of two: recursive doubling up to 8 KiB;
 * 2 members: 4 MiB): the messages differ from the first round, and every
 * rank must get GCL_ERR_MISMATCH saying so, in bounded time, not a hang or
 * a wrong sum. */
static void run_other_algorithm(void)
{
    int odd = rank == size - 1;
    setenv("GCL_NO_SHM", "1", 1);
    if (odd)
        setenv("GCL_ALLREDUCE_ALGO", "ring", 1);
    MPI_Comm mc = MPI_COMM_WORLD;
    gcl_comm_t *w = NULL;
    gcl_status_t st = gcl_init_mpi(&mc, NULL, &w);
    unsetenv("GCL_NO_SHM");
    unsetenv("GCL_ALLREDUCE_ALGO");
    if (!gok(st, "gcl_init_mpi, the last rank forcing the ring"))
        return;
    gok(gcl_comm_set_timeout(w, 20), "gcl_comm_set_timeout");
    float *x = calloc(BIG, sizeof(float)), *y = calloc(BIG, sizeof(float));
    const size_t counts[] = {64, BIG};
    for (int i = 0; i < (size == 2 ? 2 : 1); i++) {
        char what[160];
        snprintf(what, sizeof what, "allreduce of %zu floats, the last rank forcing the ring (network path)",
                 counts[i]);
        double t0 = now_s();
        st = gcl_allreduce(x, y, counts[i], GCL_FLOAT32, GCL_SUM, w);
        double el = now_s() - t0;
        if (gexpect(st, GCL_ERR_MISMATCH, what))
            CHECK(strstr(gcl_last_error(), "algorithms") != NULL, "%s: the message does not say why: %s", what,
                  gcl_last_error());
        CHECK(el < 15, "%s: returned after %.3f s", what, el);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(x);
    free(y);
    gcl_finalize(w);
}

void suite_mismatch_checked(void)
{
    if (size < 2)
        return;
    run_world(0);
    run_world(1);
    if ((size & (size - 1)) == 0)
        run_other_algorithm();
}
