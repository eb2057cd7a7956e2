/* Registered memory (gcl_mem_alloc, gcl.h): gcl_test's matrix on buffers
 * from gcl_mem_alloc, where libgcl's allreduce reads and writes the
 * members' buffers directly (one host); the same with only the even ranks'
 * buffers registered, where every member must go through staging together;
 * gcl_mem_alloc on a split communicator, and world's memory used on a split
 * one (not registered there); argument errors, and an allocation that fails
 * at one member failing at all of them; a direct allreduce the last rank
 * never joins timing out at the others. -q: the argument checks, one
 * dtype/op per mode and count 100003; -b: >= 16 MiB allreduces too. That
 * the direct path ran is seen in GCL_LOG=info's count at finalize
 * (tests/mpi/gcl.sh). */
#include "gcl_test.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void api_checks(void)
{
    void *p = (void *)1;
    int x = 0;
    gexpect(gcl_mem_alloc(world, 0, &p), GCL_ERR_INVALID_ARG, "gcl_mem_alloc of 0 bytes");
    CHECK(p == NULL, "gcl_mem_alloc of 0 bytes left *ptr set");
    CHECK(strstr(gcl_last_error(), "gcl_mem_alloc: 0 bytes") != NULL, "gcl_mem_alloc of 0 bytes: "
          "gcl_last_error() says \"%s\"", gcl_last_error());
    gexpect(gcl_mem_alloc(NULL, 64, &p), GCL_ERR_INVALID_ARG, "gcl_mem_alloc on NULL");
    gexpect(gcl_mem_alloc(world, 64, NULL), GCL_ERR_INVALID_ARG, "gcl_mem_alloc into NULL");
    gexpect(gcl_mem_free(world, &x), GCL_ERR_INVALID_ARG, "gcl_mem_free of a stack address");
    CHECK(strstr(gcl_last_error(), "was not allocated by gcl_mem_alloc") != NULL, "gcl_mem_free of a "
          "stack address: gcl_last_error() says \"%s\"", gcl_last_error());
    gok(gcl_mem_free(world, NULL), "gcl_mem_free(NULL)");

    /* each member its own size; page aligned, writable */
    size_t bytes = 4096 * (size_t)(rank + 1) + 3;
    if (gok(gcl_mem_alloc(world, bytes, &p), "gcl_mem_alloc")) {
        CHECK((uintptr_t)p % 4096 == 0, "gcl_mem_alloc: %p not page aligned", p);
        memset(p, 0x5a, bytes);
        gok(gcl_mem_free(world, p), "gcl_mem_free");
        gexpect(gcl_mem_free(world, p), GCL_ERR_INVALID_ARG, "gcl_mem_free twice");
    }
    /* rank 0 asks for more than any machine has: every member fails, and
     * the communicator works on */
    p = (void *)1;
    gcl_status_t st = gcl_mem_alloc(world, rank == 0 ? (size_t)1 << 50 : 4096, &p);
    gexpect(st, GCL_ERR_NO_MEMORY, "gcl_mem_alloc of 1 PiB at rank 0");
    CHECK(p == NULL, "failed gcl_mem_alloc left *ptr set");
    CHECK(strstr(gcl_last_error(), "gcl_mem_alloc: ") != NULL, "gcl_mem_alloc of 1 PiB at rank 0: "
          "gcl_last_error() says \"%s\"", gcl_last_error());
    if (st == GCL_OK)
        gcl_mem_free(world, p);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "gcl-m-%d-", (int)getpid());
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        CHECK(strncmp(e->d_name, prefix, strlen(prefix)) != 0, "/dev/shm/%s left behind", e->d_name);
    if (d)
        closedir(d);
    float in[3] = {1, 2, (float)rank}, out[3];
    if (gok(gcl_allreduce(in, out, 3, GCL_FLOAT32, GCL_SUM, world), "allreduce after a failed gcl_mem_alloc"))
        CHECK(out[0] == (float)size && out[2] == (float)(size * (size - 1) / 2),
              "allreduce after a failed gcl_mem_alloc: got %g %g", out[0], out[2]);
}

/* The last rank never joins a direct allreduce: the others get
 * GCL_ERR_TIMED_OUT, no sooner than the timeout and within 5 s after it. */
static void direct_timeout(void)
{
    const double T = 0.5;
    enum { N = 65536 };
    gcl_comm_t *c = NULL;
    float *b = NULL;
    if (size < 2 || !gok(gcl_comm_split(world, 0, rank, &c), "split") ||
        !gok(gcl_comm_set_timeout(c, T), "set timeout"))
        return;
    if (gok(gcl_mem_alloc(c, 2 * N * sizeof(float), (void **)&b), "gcl_mem_alloc")) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank != size - 1) {
            double t0 = now_s();
            gcl_status_t st = gcl_allreduce(b, b + N, N, GCL_FLOAT32, GCL_SUM, c);
            double el = now_s() - t0;
            gexpect(st, GCL_ERR_TIMED_OUT, "direct allreduce, the last rank absent");
            CHECK(el >= 0.9 * T && el <= T + 5, "direct allreduce, the last rank absent: returned after "
                  "%.3f s (timeout %.1f s)", el, T);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        gcl_mem_free(c, b);
    }
    gcl_comm_destroy(c);
}

static void matrix(int quick, int big)
{
    size_t counts[] = {1, 7, (size_t)size + 1, 100003, 300007};
    const int nc = (int)(sizeof counts / sizeof counts[0]);
    uint64_t seed = 5000;
    for (int dt = 0; dt < GCL_DTYPE_COUNT; dt++) {
        if (quick && dt != GCL_FLOAT32 && dt != GCL_INT8)
            continue;
        for (int k = 0; k < nc; k++) {
            if (quick && counts[k] != 100003)
                continue;
            if (k == 3)
                test_movement(world, MPI_COMM_WORLD, (gcl_dtype_t)dt, counts[k], seed++, COLL_ALL);
            for (int op = 0; op < GCL_OP_COUNT; op++)
                if (!quick || op == dt % GCL_OP_COUNT)
                    test_reductions(world, MPI_COMM_WORLD, (gcl_dtype_t)dt, (gcl_op_t)op, counts[k], seed++,
                                    COLL_ALLREDUCE | (k == 3 ? COLL_REDUCE | COLL_REDUCE_SCATTER : 0));
        }
        if (big)
            test_reductions(world, MPI_COMM_WORLD, (gcl_dtype_t)dt, (gcl_op_t)(dt % GCL_OP_COUNT),
                            (16u << 20) / ref_dsize((gcl_dtype_t)dt) + 5, seed++, COLL_ALLREDUCE);
    }
}

void suite_reg(int big)
{
    api_checks();

    reg_comm = world; /* every member registered: direct allreduces */
    matrix(opt_quick, big);

    reg_plain = rank % 2; /* odd ranks' buffers not registered: staging */
    for (int dt = 0; dt < GCL_DTYPE_COUNT; dt += opt_quick ? 7 : 3)
        for (int op = 0; op < GCL_OP_COUNT; op += opt_quick ? 4 : 1)
            test_reductions(world, MPI_COMM_WORLD, (gcl_dtype_t)dt, (gcl_op_t)op, 100003, 7000 + dt * 8 + op,
                            COLL_ALLREDUCE);
    reg_plain = 0;

    /* a split communicator: its own registered memory, then world's */
    int color = size > 1 ? rank % 2 : 0;
    gcl_comm_t *sub = NULL;
    MPI_Comm msub;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &msub);
    if (gok(gcl_comm_split(world, color, rank, &sub), "gcl_comm_split")) {
        reg_comm = sub;
        test_reductions(sub, msub, GCL_FLOAT32, GCL_SUM, 100003, 7100, COLL_ALLREDUCE);
        test_reductions(sub, msub, GCL_BFLOAT16, GCL_AVG, 300007, 7101, COLL_ALLREDUCE);
        reg_comm = world;
        test_reductions(sub, msub, GCL_INT32, GCL_MAX, 100003, 7102, COLL_ALLREDUCE);
        gcl_comm_destroy(sub);
    }
    MPI_Comm_free(&msub);
    reg_comm = NULL;
    direct_timeout();
}
