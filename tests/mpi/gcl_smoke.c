/* libgcl smoke test: every collective (blocking, non-blocking, in place)
 * on the world and on split communicators, counts around the decision
 * table's switch points, values with exact float sums checked against
 * closed forms; point-to-point; GCL_DEBUG mismatch and timeout checks
 * ("mismatch" / "timeout" argument). The full comparison against MPI is
 * tests/mpi/gcl_*. Prints "gcl_smoke: ok (N ranks)". */
#include <gcl/gcl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, fails;

#define CHECK(cond, ...) do { if (!(cond)) { fails++; if (fails < 20) { fprintf(stderr, "rank %d: FAIL ", rank); \
    fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); } } } while (0)
#define OK(call) do { gcl_status_t st_ = (call); CHECK(st_ == GCL_OK, "%s: %s: %s", #call, \
    gcl_status_string(st_), gcl_last_error()); } while (0)

static float val(int r, size_t i) { return (float)((r + 1) * (int)(i % 13 + 1)); }

static void check_f(const char *what, size_t count, const float *got, const float *exp, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != exp[i]) {
            CHECK(0, "%s count %zu [%zu]: got %g expected %g", what, count, i, got[i], exp[i]);
            return;
        }
}

static void finish(gcl_request_t **req, int nb)
{
    if (nb)
        OK(gcl_wait(req));
}

static void test_comm(gcl_comm_t *c, const int *members)
{
    int p = gcl_comm_size(c), me = gcl_comm_rank(c);
    size_t counts[] = {0, 1, 7, (size_t)p + 1, 1000, 70001, 300007};
    long msum = 0, mmax = 0; /* members' (world rank + 1): sums and max of val() */
    for (int i = 0; i < p; i++) {
        msum += members[i] + 1;
        mmax = members[i] + 1 > mmax ? members[i] + 1 : mmax;
    }
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
        size_t n = counts[ci];
        float *a = malloc((n * p + 1) * sizeof(float)), *b = malloc((n * p + 1) * sizeof(float)),
              *e = malloc((n * p + 1) * sizeof(float));
        for (int mode = 0; mode < 3; mode++) { /* blocking, non-blocking, in place */
            int nb = mode == 1, ip = mode == 2;
            gcl_request_t *req = NULL;
            /* allreduce sum / max / avg */
            gcl_op_t ops[] = {GCL_SUM, GCL_MAX, GCL_AVG};
            for (int oi = 0; oi < 3; oi++) {
                for (size_t i = 0; i < n; i++) {
                    a[i] = val(members[me], i);
                    b[i] = ip ? a[i] : -1;
                    float k = (float)(i % 13 + 1);
                    e[i] = ops[oi] == GCL_MAX ? k * mmax : ops[oi] == GCL_SUM ? k * msum : k * msum / p;
                }
                const void *s = ip ? GCL_IN_PLACE : a;
                if (nb)
                    OK(gcl_iallreduce(s, b, n, GCL_FLOAT32, ops[oi], c, &req));
                else
                    OK(gcl_allreduce(s, b, n, GCL_FLOAT32, ops[oi], c));
                finish(&req, nb);
                check_f(ops[oi] == GCL_SUM ? "allreduce sum" : ops[oi] == GCL_MAX ? "allreduce max" : "allreduce avg",
                        n, b, e, n);
            }
            /* reduce to root p-1 */
            int root = (p - 1 + mode) % p;
            for (size_t i = 0; i < n; i++) {
                a[i] = val(members[me], i);
                b[i] = ip && me == root ? a[i] : -1;
                e[i] = (float)(i % 13 + 1) * msum;
            }
            const void *s = ip && me == root ? GCL_IN_PLACE : a;
            if (nb)
                OK(gcl_ireduce(s, b, n, GCL_FLOAT32, GCL_SUM, root, c, &req));
            else
                OK(gcl_reduce(s, b, n, GCL_FLOAT32, GCL_SUM, root, c));
            finish(&req, nb);
            if (me == root)
                check_f("reduce", n, b, e, n);
            /* reduce_scatter */
            for (size_t i = 0; i < n * p; i++)
                a[i] = val(members[me], i);
            for (size_t i = 0; i < n; i++)
                e[i] = (float)((me * n + i) % 13 + 1) * msum;
            if (ip)
                memcpy(b, a, n * p * sizeof(float));
            s = ip ? GCL_IN_PLACE : a;
            if (nb)
                OK(gcl_ireduce_scatter(s, b, n, GCL_FLOAT32, GCL_SUM, c, &req));
            else
                OK(gcl_reduce_scatter(s, b, n, GCL_FLOAT32, GCL_SUM, c));
            finish(&req, nb);
            check_f("reduce_scatter", n, b, e, n);
            /* allgather */
            for (size_t i = 0; i < n; i++)
                a[i] = val(members[me], i);
            for (int r = 0; r < p; r++)
                for (size_t i = 0; i < n; i++) {
                    e[r * n + i] = val(members[r], i);
                    b[r * n + i] = ip && r == me ? a[i] : -1;
                }
            s = ip ? GCL_IN_PLACE : a;
            if (nb)
                OK(gcl_iallgather(s, b, n, GCL_FLOAT32, c, &req));
            else
                OK(gcl_allgather(s, b, n, GCL_FLOAT32, c));
            finish(&req, nb);
            check_f("allgather", n, b, e, n * p);
            /* broadcast from p/2 */
            root = (p / 2 + mode) % p;
            for (size_t i = 0; i < n; i++) {
                e[i] = val(members[root], i);
                b[i] = me == root ? e[i] : -1;
            }
            if (nb)
                OK(gcl_ibroadcast(b, n, GCL_FLOAT32, root, c, &req));
            else
                OK(gcl_broadcast(b, n, GCL_FLOAT32, root, c));
            finish(&req, nb);
            check_f("broadcast", n, b, e, n);
            /* alltoall (no in place) */
            for (int r = 0; r < p; r++)
                for (size_t i = 0; i < n; i++) {
                    a[r * n + i] = (float)(me * 100 + r) + (float)(i % 5);
                    e[r * n + i] = (float)(r * 100 + me) + (float)(i % 5);
                    b[r * n + i] = -1;
                }
            if (nb)
                OK(gcl_ialltoall(a, b, n, GCL_FLOAT32, c, &req));
            else
                OK(gcl_alltoall(a, b, n, GCL_FLOAT32, c));
            finish(&req, nb);
            check_f("alltoall", n, b, e, n * p);
            if (nb)
                OK(gcl_ibarrier(c, &req));
            else
                OK(gcl_barrier(c));
            finish(&req, nb);
        }
        free(a);
        free(b);
        free(e);
    }
    /* int32 sum / prod, f64 min */
    int32_t ia[5] = {me + 1, 2, -(me + 1), 3, 7}, ib[5];
    OK(gcl_allreduce(ia, ib, 5, GCL_INT32, GCL_SUM, c));
    CHECK(ib[0] == (int32_t)(p * (p + 1) / 2) && ib[1] == 2 * p && ib[2] == -(int32_t)(p * (p + 1) / 2),
          "int32 allreduce sum: %d %d %d", ib[0], ib[1], ib[2]);
    OK(gcl_allreduce(ia + 1, ib, 1, GCL_INT32, GCL_PROD, c));
    CHECK(ib[0] == 1 << p, "int32 allreduce prod: %d", ib[0]);
    double da = -(double)me, db;
    OK(gcl_allreduce(&da, &db, 1, GCL_FLOAT64, GCL_MIN, c));
    CHECK(db == -(double)(p - 1), "f64 allreduce min: %g", db);
    /* point-to-point around the ring */
    int to = (me + 1) % p, from = (me - 1 + p) % p, got = -1, mine = me;
    gcl_request_t *rr;
    OK(gcl_irecv(&got, 1, GCL_INT32, from, 42, c, &rr));
    OK(gcl_send(&mine, 1, GCL_INT32, to, 42, c));
    OK(gcl_wait(&rr));
    CHECK(got == from, "p2p: got %d from %d", got, from);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm mc = MPI_COMM_WORLD;
    gcl_comm_t *world;
    gcl_init_params_t prm = {.field_mask = GCL_INIT_FIELD_TIMEOUT, .timeout_s = getenv("GCL_SMOKE_TIMEOUT") ? atof(getenv("GCL_SMOKE_TIMEOUT")) : 30};
    gcl_status_t st = gcl_init_mpi(&mc, &prm, &world);
    if (st != GCL_OK) {
        fprintf(stderr, "rank %d: gcl_init_mpi: %s: %s\n", rank, gcl_status_string(st), gcl_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "mismatch")) { /* run with GCL_DEBUG=1 */
        float x[8] = {0}, y[8];
        st = gcl_allreduce(x, y, rank == size - 1 ? 7 : 8, GCL_FLOAT32, GCL_SUM, world);
        CHECK(st == GCL_ERR_MISMATCH && strstr(gcl_last_error(), "count"), "mismatch: %s: %s",
              gcl_status_string(st), gcl_last_error());
        OK(gcl_barrier(world));
    } else if (!strcmp(mode, "timeout")) {
        if (rank != 0) {
            OK(gcl_comm_set_timeout(world, 1));
            float x = 1, y;
            st = gcl_allreduce(&x, &y, 1, GCL_FLOAT32, GCL_SUM, world);
            CHECK(st == GCL_ERR_TIMED_OUT && strstr(gcl_last_error(), "allreduce"), "timeout: %s: %s",
                  gcl_status_string(st), gcl_last_error());
        }
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        int *all = malloc((size_t)size * sizeof(int));
        for (int i = 0; i < size; i++)
            all[i] = i;
        test_comm(world, all);
        /* split by parity, keys reversed; and consecutive groups of 2 */
        gcl_comm_t *sub = NULL, *grp = NULL;
        OK(gcl_comm_split(world, rank % 2, -rank, &sub));
        int n = 0;
        for (int i = size - 1; i >= 0; i--)
            if (i % 2 == rank % 2)
                all[n++] = i;
        CHECK(sub && gcl_comm_size(sub) == n, "split size");
        if (sub)
            test_comm(sub, all);
        if (size % 2 == 0) {
            OK(gcl_comm_split_group(world, GCL_GROUP_ORTHOGONAL, 2, &grp));
            /* concurrent non-blocking collectives on two communicators */
            float x = (float)rank, y = -1, z = -1;
            gcl_request_t *reqs[2];
            OK(gcl_iallreduce(&x, &y, 1, GCL_FLOAT32, GCL_SUM, world, &reqs[0]));
            OK(gcl_iallreduce(&x, &z, 1, GCL_FLOAT32, GCL_SUM, grp, &reqs[1]));
            OK(gcl_wait_all(2, reqs));
            float ez = 0;
            for (int i = rank % 2; i < size; i += 2)
                ez += (float)i;
            CHECK(y == (float)(size * (size - 1) / 2) && z == ez, "concurrent: %g %g (expected %g)", y, z, ez);
        }
        CHECK(gcl_comm_split_group(world, GCL_GROUP_CONSECUTIVE, size + 1, &grp) == GCL_ERR_INVALID_ARG || size == 1,
              "split_group with a group size not dividing the size");
        gcl_comm_destroy(grp);
        gcl_comm_destroy(sub);
        free(all);
        if (rank == 0)
            printf("algorithms at %d ranks: allreduce 64 B %s, 64 KiB %s, 16 MiB %s\n", size,
                   gcl_algorithm(world, GCL_COLL_ALLREDUCE, 64), gcl_algorithm(world, GCL_COLL_ALLREDUCE, 65536),
                   gcl_algorithm(world, GCL_COLL_ALLREDUCE, 16u << 20));
    }
    gcl_finalize(world);
    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total == 0)
        printf("gcl_smoke: ok (%d ranks)\n", size);
    MPI_Finalize();
    return total != 0;
}
