/* libgcl across hosts: on a job spread over several hosts with several
 * ranks each, allreduce must choose the hierarchical algorithm by itself
 * and agree with MPI_Allreduce (f32 and i64 sums, several sizes, also in
 * place and non-blocking). Prints "gcl_hosts: ok (ALGO)" on rank 0. */
#include <gcl/gcl.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, fails = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm world = MPI_COMM_WORLD;
    gcl_comm_t *comm;
    gcl_status_t st = gcl_init_mpi(&world, NULL, &comm);
    if (st != GCL_OK) {
        fprintf(stderr, "rank %d: gcl_init_mpi: %s\n", rank, gcl_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    static const size_t counts[] = {1, 7, 1000, 100003, 1 << 20};
    const char *algo = gcl_algorithm(comm, GCL_COLL_ALLREDUCE, 4096 * sizeof(float));
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        size_t n = counts[c];
        float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float)), *ref = malloc(n * sizeof(float));
        int64_t *a = malloc(n * sizeof(int64_t)), *b = malloc(n * sizeof(int64_t)), *bref = malloc(n * sizeof(int64_t));
        for (size_t i = 0; i < n; i++) {
            x[i] = (float)((rank + 1) * 0.25 + (double)(i % 97) * 0.01);
            a[i] = (int64_t)(rank * 1000003 + (int64_t)i);
        }
        MPI_Allreduce(x, ref, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(a, bref, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        gcl_request_t *req;
        if (gcl_allreduce(x, y, n, GCL_FLOAT32, GCL_SUM, comm) != GCL_OK ||
            gcl_iallreduce(a, b, n, GCL_INT64, GCL_SUM, comm, &req) != GCL_OK || gcl_wait(&req) != GCL_OK) {
            fprintf(stderr, "rank %d: allreduce of %zu: %s\n", rank, n, gcl_last_error());
            fails++;
        }
        for (size_t i = 0; i < n; i++) {
            /* reduction order differs: bound by size * eps * sum |x| */
            double tol = size * 1.2e-7 * fabs((double)ref[i]) * 2 + 1e-6;
            if (fabs((double)y[i] - (double)ref[i]) > tol || b[i] != bref[i]) {
                fprintf(stderr, "rank %d: n=%zu element %zu: %g vs %g, %lld vs %lld\n", rank, n, i,
                        y[i], ref[i], (long long)b[i], (long long)bref[i]);
                fails++;
                break;
            }
        }
        /* in place */
        memcpy(y, x, n * sizeof(float));
        if (gcl_allreduce(GCL_IN_PLACE, y, n, GCL_FLOAT32, GCL_SUM, comm) != GCL_OK)
            fails++;
        for (size_t i = 0; i < n; i++)
            if (fabs((double)y[i] - (double)ref[i]) > size * 2.4e-7 * fabs((double)ref[i]) + 1e-6) {
                fails++;
                break;
            }
        free(x); free(y); free(ref); free(a); free(b); free(bref);
    }
    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("gcl_hosts: %s (%s, %d ranks)\n", all ? "FAILED" : "ok", algo, size);
    gcl_finalize(comm);
    MPI_Finalize();
    return all != 0;
}
