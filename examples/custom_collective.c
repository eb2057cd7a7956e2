/* A user's program on libgcl: custom collectives built from its collectives
 * and its point-to-point calls, compiled against the installed library:
 *
 *   cc custom_collective.c $(pkg-config --cflags --libs gcl ompi-c) -o custom_collective
 *   mpirun -np 4 ./custom_collective
 *
 * 1. "Allreduce, then broadcast a decision": every rank scores K candidate
 *    settings on its own data shard; the scores are averaged over the ranks
 *    (gcl_allreduce with GCL_AVG); rank 0 picks the best and broadcasts its
 *    choice (gcl_broadcast), so every rank goes on with the same one.
 * 2. A collective libgcl does not have, ring_allgatherv: every rank
 *    contributes a different number of elements; the counts travel first
 *    (gcl_allgather), then the blocks go round the ring in p - 1 steps with
 *    gcl_isend / gcl_irecv.
 * 3. Both again inside replica groups of two (GCL_GROUP_CONSECUTIVE), while
 *    a non-blocking allreduce on the whole job is in flight.
 * 4. A gradient-sized allreduce (4 MiB, in place) on registered memory from
 *    gcl_mem_alloc, which libgcl reads and writes directly on one host.
 * Rank 0 prints "custom_collective: ok"; any error exits non-zero. */
#include <gcl/gcl_mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRY(call) do { gcl_status_t st_ = (call); if (st_ != GCL_OK) { \
    fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call, gcl_status_string(st_), gcl_last_error()); \
    MPI_Abort(MPI_COMM_WORLD, 1); } } while (0)

enum { K = 16 };

/* The score of candidate k on the shard of rank r (lower is better). */
static float score(int r, int k)
{
    return (float)(((r + 1) * (k + 3) * 7) % 23) / 4.0f;
}

/* 1. allreduce the scores, rank 0 decides, everyone learns the decision */
static int choose(gcl_comm_t *comm)
{
    int me = gcl_comm_rank(comm);
    float s[K];
    for (int k = 0; k < K; k++)
        s[k] = score(me, k);
    TRY(gcl_allreduce(GCL_IN_PLACE, s, K, GCL_FLOAT32, GCL_AVG, comm));
    int32_t best = 0;
    if (me == 0)
        for (int k = 1; k < K; k++)
            if (s[k] < s[best])
                best = k;
    TRY(gcl_broadcast(&best, 1, GCL_INT32, 0, comm));
    return best;
}

/* 2. allgatherv round a ring: rank r contributes counts[r] int32s */
static int32_t *ring_allgatherv(const int32_t *mine, int32_t n_mine, int32_t *counts, gcl_comm_t *comm)
{
    int p = gcl_comm_size(comm), me = gcl_comm_rank(comm);
    int next = (me + 1) % p, prev = (me + p - 1) % p;
    TRY(gcl_allgather(&n_mine, counts, 1, GCL_INT32, comm));
    size_t *off = malloc(sizeof(size_t) * ((size_t)p + 1));
    off[0] = 0;
    for (int r = 0; r < p; r++)
        off[r + 1] = off[r] + (size_t)counts[r];
    int32_t *all = malloc(sizeof(int32_t) * (off[p] + 1));
    memcpy(all + off[me], mine, sizeof(int32_t) * (size_t)n_mine);
    for (int s = 0; s < p - 1; s++) {
        int out = (me - s + p) % p, in = (me - s - 1 + p) % p;   /* blocks leaving / arriving */
        gcl_request_t *req[2];
        TRY(gcl_irecv(all + off[in], (size_t)counts[in], GCL_INT32, prev, s, comm, &req[0]));
        TRY(gcl_isend(all + off[out], (size_t)counts[out], GCL_INT32, next, s, comm, &req[1]));
        TRY(gcl_wait_all(2, req));
    }
    free(off);
    return all;
}

/* Run 1 and 2 on comm and check them against what every rank can compute. */
static int run(gcl_comm_t *comm, const char *name)
{
    int p = gcl_comm_size(comm), me = gcl_comm_rank(comm), errors = 0;
    int best = choose(comm);
    float avg_best = 0, avg_k;
    for (int r = 0; r < p; r++)
        avg_best += score(r, best);
    for (int k = 0; k < K; k++) {
        avg_k = 0;
        for (int r = 0; r < p; r++)
            avg_k += score(r, k);
        if (avg_k < avg_best - 1e-3f)
            errors++;
    }
    int32_t n_mine = 3 + 5 * me, *mine = malloc(sizeof(int32_t) * (size_t)n_mine);
    int32_t *counts = malloc(sizeof(int32_t) * (size_t)p);
    for (int i = 0; i < n_mine; i++)
        mine[i] = me * 1000 + i;
    int32_t *all = ring_allgatherv(mine, n_mine, counts, comm);
    size_t at = 0;
    for (int r = 0; r < p; r++)
        for (int i = 0; i < 3 + 5 * r; i++)
            errors += counts[r] != 3 + 5 * r || all[at++] != r * 1000 + i;
    if (me == 0)
        printf("%s (%d ranks): chose candidate %d; ring_allgatherv of %zu elements\n", name, p, best, at);
    free(mine);
    free(counts);
    free(all);
    return errors;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0)
        printf("libgcl %s (header %d, library %d)\n", gcl_version_string(), GCL_VERSION, gcl_version());

    gcl_init_params_t params = {.field_mask = GCL_INIT_FIELD_TIMEOUT, .timeout_s = 30};
    gcl_comm_t *world;
    TRY(gcl_init_mpi_comm(MPI_COMM_WORLD, &params, &world));
    int errors = run(world, "world");

    /* 3. in replica groups of two (or one), with an allreduce on the whole
     *    job in flight meanwhile */
    gcl_comm_t *pair;
    TRY(gcl_comm_split_group(world, GCL_GROUP_CONSECUTIVE, size % 2 ? 1 : 2, &pair));
    double step = rank + 1, total = 0;
    gcl_request_t *req;
    TRY(gcl_iallreduce(&step, &total, 1, GCL_FLOAT64, GCL_SUM, world, &req));
    errors += run(pair, "pairs");
    TRY(gcl_wait(&req));
    errors += total != size * (size + 1) / 2.0;
    gcl_comm_destroy(pair);

    /* 4. registered memory: allocated (and freed) by every rank together */
    enum { G = 1 << 20 };
    float *grad;
    TRY(gcl_mem_alloc(world, G * sizeof(float), (void **)&grad));
    for (size_t i = 0; i < G; i++)
        grad[i] = (float)((rank + 1) * (int)(i % 7));
    TRY(gcl_allreduce(GCL_IN_PLACE, grad, G, GCL_FLOAT32, GCL_SUM, world));
    for (size_t i = 0; i < G; i++)
        errors += grad[i] != (float)(size * (size + 1) / 2 * (int)(i % 7));
    TRY(gcl_mem_free(world, grad));

    int all_errors = 0;
    MPI_Allreduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("custom_collective: %s\n", all_errors ? "FAILED" : "ok");
    gcl_finalize(world);
    MPI_Finalize();
    return all_errors != 0;
}
