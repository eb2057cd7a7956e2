/* Every algorithm of libgcl exercised (docs/libgcl.md lists them): for each,
 * GCL_<COLL>_ALGO=name is set and a world made with gcl_init_mpi (the
 * variables are read at init), gcl_algorithm() must name the forced
 * algorithm at every size where it applies (shm: more than one member on
 * one host; hierarchical: several hosts, pretended with GCL_TOPO_PPN=2;
 * recursive_halving and allgather's recursive_doubling: a power-of-two
 * group), and the collective runs its part of the matrix: four dtype/op
 * pairs x counts {0, 1, 7, size-1, size+1, 100003}, blocking / non-blocking /
 * in-place (with -b also >= 16 MiB; with -q counts 1, size-1 and 100003 for
 * two of the pairs). An unknown name makes gcl_init fail
 * with GCL_ERR_INVALID_ARG. */
#include "gcl_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const ENV[GCL_COLL_COUNT] = {
    "GCL_ALLREDUCE_ALGO", "GCL_REDUCE_ALGO", "GCL_REDUCE_SCATTER_ALGO", "GCL_ALLGATHER_ALGO",
    "GCL_BROADCAST_ALGO", "GCL_ALLTOALL_ALGO", "GCL_BARRIER_ALGO",
};
static const unsigned MASK[GCL_COLL_COUNT] = {COLL_ALLREDUCE, COLL_REDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER,
                                              COLL_BROADCAST, COLL_ALLTOALL, COLL_BARRIER};

static const struct {
    gcl_coll_t coll;
    const char *name;
} ALGOS[] = {
    {GCL_COLL_ALLREDUCE, "recursive_doubling"}, {GCL_COLL_ALLREDUCE, "rabenseifner"},
    {GCL_COLL_ALLREDUCE, "ring"}, {GCL_COLL_ALLREDUCE, "hierarchical"}, {GCL_COLL_ALLREDUCE, "shm"},
    {GCL_COLL_REDUCE, "knomial"}, {GCL_COLL_REDUCE, "reduce_scatter_gather"}, {GCL_COLL_REDUCE, "shm"},
    {GCL_COLL_REDUCE_SCATTER, "ring"}, {GCL_COLL_REDUCE_SCATTER, "recursive_halving"},
    {GCL_COLL_REDUCE_SCATTER, "pairwise"}, {GCL_COLL_REDUCE_SCATTER, "shm"},
    {GCL_COLL_ALLGATHER, "ring"}, {GCL_COLL_ALLGATHER, "recursive_doubling"}, {GCL_COLL_ALLGATHER, "bruck"},
    {GCL_COLL_ALLGATHER, "shm"},
    {GCL_COLL_BROADCAST, "knomial"}, {GCL_COLL_BROADCAST, "scatter_allgather"}, {GCL_COLL_BROADCAST, "shm"},
    {GCL_COLL_ALLTOALL, "pairwise"},
    {GCL_COLL_ALLREDUCE, "dissemination"}, {GCL_COLL_REDUCE, "dissemination"},
    {GCL_COLL_REDUCE_SCATTER, "dissemination"}, {GCL_COLL_ALLGATHER, "dissemination"},
    {GCL_COLL_BROADCAST, "dissemination"}, {GCL_COLL_ALLTOALL, "dissemination"},
    {GCL_COLL_BARRIER, "dissemination"}, {GCL_COLL_BARRIER, "shm"},
};

/* whether the forced algorithm runs a call of bytes (the whole array, as
 * gcl_algorithm takes it) */
static int applies(gcl_coll_t coll, const char *name, size_t bytes)
{
    int pow2 = (size & (size - 1)) == 0;
    /* dissemination gathers every member's input to every member (the
     * input alone for allgather and broadcast), up to 1 GiB */
    if (!strcmp(name, "dissemination") && coll != GCL_COLL_BARRIER)
        return (coll == GCL_COLL_ALLGATHER || coll == GCL_COLL_BROADCAST ? bytes : bytes * (size_t)size) <=
               ((size_t)1 << 30);
    if (!strcmp(name, "shm"))
        return size > 1 && getenv("GCL_NO_SHM") == NULL;
    if (!strcmp(name, "hierarchical"))
        return size > 2;
    if (!strcmp(name, "recursive_halving") || (coll == GCL_COLL_ALLGATHER && !strcmp(name, "recursive_doubling")))
        return pow2;
    return 1;
}

static void run_forced(gcl_comm_t *w, gcl_coll_t coll, const char *name, int big, uint64_t *seed)
{
    static const struct { gcl_dtype_t dt; gcl_op_t op; } PAIRS[] = {
        {GCL_FLOAT32, GCL_SUM}, {GCL_BFLOAT16, GCL_AVG}, {GCL_INT32, GCL_MAX}, {GCL_FLOAT64, GCL_PROD}};
    size_t counts[] = {0, 1, 7, (size_t)size - 1, (size_t)size + 1, 100003};
    for (size_t b = 0; b <= (1u << 28); b = b ? b << 2 : 1)
        if (applies(coll, name, b)) {
            const char *got = gcl_algorithm(w, coll, b);
            CHECK(got && !strcmp(got, name), "%s=%s: gcl_algorithm(%zu bytes) says %s", ENV[coll], name, b,
                  got ? got : "NULL");
        }
    if (coll == GCL_COLL_BARRIER) {
        test_barrier(w, MPI_COMM_WORLD);
        return;
    }
    int red = coll == GCL_COLL_ALLREDUCE || coll == GCL_COLL_REDUCE || coll == GCL_COLL_REDUCE_SCATTER;
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
        for (size_t p = 0; p < sizeof PAIRS / sizeof PAIRS[0]; p++) {
            if ((k > 0 && counts[k] == counts[k - 1]) || (opt_quick && (k % 2 == 0 || p % 2 == 1)))
                continue;
            if (red)
                test_reductions(w, MPI_COMM_WORLD, PAIRS[p].dt, PAIRS[p].op, counts[k], (*seed)++, MASK[coll]);
            else
                test_movement(w, MPI_COMM_WORLD, PAIRS[p].dt, counts[k], (*seed)++,
                              MASK[coll] | (coll == GCL_COLL_BROADCAST ? COLL_P2P : 0));
        }
    /* dissemination gathers p copies of a call: a small-call algorithm,
     * run at 100003 elements above but not at 16 MiB */
    if (big && strcmp(name, "dissemination") != 0) {
        int per_rank = coll == GCL_COLL_REDUCE_SCATTER || coll == GCL_COLL_ALLGATHER || coll == GCL_COLL_ALLTOALL;
        size_t n = (16u << 20) / 4 / (per_rank ? (size_t)size : 1) + 3;
        if (red)
            test_reductions(w, MPI_COMM_WORLD, GCL_FLOAT32, GCL_SUM, n, (*seed)++, MASK[coll]);
        else
            test_movement(w, MPI_COMM_WORLD, GCL_FLOAT32, n, (*seed)++, MASK[coll]);
    }
}

void suite_algo(int big)
{
    uint64_t seed = 3000;
    MPI_Comm mc = MPI_COMM_WORLD;
    const char *only = getenv("GCL_TEST_ALGO");   /* "coll:name" to run one (debugging) */
    for (size_t i = 0; i < sizeof ALGOS / sizeof ALGOS[0]; i++) {
        gcl_coll_t coll = ALGOS[i].coll;
        const char *name = ALGOS[i].name;
        char tag[96];
        snprintf(tag, sizeof tag, "%s=%s", ENV[coll], name);
        if (only && !strstr(tag, only))
            continue;
        setenv(ENV[coll], name, 1);
        int hier = !strcmp(name, "hierarchical");
        if (hier)
            setenv("GCL_TOPO_PPN", "2", 1);
        gcl_comm_t *w = NULL;
        double t0 = now_s();
        if (gok(gcl_init_mpi(&mc, NULL, &w), tag)) {
            run_forced(w, coll, name, big, &seed);
            gcl_finalize(w);
        }
        unsetenv(ENV[coll]);
        if (hier)
            unsetenv("GCL_TOPO_PPN");
        if (rank == 0 && getenv("GCL_TEST_VERBOSE"))
            printf("  %s: %.2f s\n", tag, now_s() - t0);
    }
    /* an unknown name is an error of gcl_init, which names the valid ones */
    setenv("GCL_ALLREDUCE_ALGO", "no_such_algorithm", 1);
    gcl_comm_t *w = NULL;
    gexpect(gcl_init_mpi(&mc, NULL, &w), GCL_ERR_INVALID_ARG, "GCL_ALLREDUCE_ALGO=no_such_algorithm");
    CHECK(w == NULL, "gcl_init_mpi failed but set *world");
    CHECK(strstr(gcl_last_error(), "ring") != NULL, "the error does not list the algorithms: %s", gcl_last_error());
    unsetenv("GCL_ALLREDUCE_ALGO");
    MPI_Barrier(MPI_COMM_WORLD);
}
