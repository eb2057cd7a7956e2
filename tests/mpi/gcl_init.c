/* libgcl's entry and exit (issue 21, bug 6): gcl_init_mpi_comm() of
 * <gcl/gcl_mpi.h> takes an MPI_Comm; gcl_init_mpi() given the communicator
 * itself instead of a pointer to it is refused, not a crash; a second
 * gcl_finalize() of the same world (and one of a sub-communicator) is
 * refused with a message, not a crash. The allreduce in between is
 * checked against MPI_Allreduce. Prints "gcl_init: ok (N ranks)". */
#include <gcl/gcl_mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, fails;

#define CHECK(cond, ...)                                    \
    do {                                                    \
        if (!(cond)) {                                      \
            fprintf(stderr, "rank %d: FAIL: ", rank);      \
            fprintf(stderr, __VA_ARGS__);                   \
            fprintf(stderr, "\n");                          \
            fails++;                                        \
        }                                                   \
    } while (0)

int main(int argc, char **argv)
{
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gcl_comm_t *world = NULL, *sub = NULL;

    /* the communicator passed by value to the pointer entry point */
    gcl_status_t st = gcl_init_mpi((const void *)MPI_COMM_WORLD, NULL, &world);
    CHECK(st == GCL_ERR_INVALID_ARG && strstr(gcl_last_error(), "gcl_init_mpi_comm"),
          "gcl_init_mpi(MPI_COMM_WORLD): %s: %s", gcl_status_string(st), gcl_last_error());

    st = gcl_init_mpi_comm(MPI_COMM_WORLD, NULL, &world);
    CHECK(st == GCL_OK, "gcl_init_mpi_comm: %s: %s", gcl_status_string(st), gcl_last_error());
    if (st != GCL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    int x = rank * 3 + 1, y = 0, want = 0;
    MPI_Allreduce(&x, &want, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    st = gcl_allreduce(&x, &y, 1, GCL_INT32, GCL_SUM, world);
    CHECK(st == GCL_OK && y == want, "allreduce: %s, got %d want %d", gcl_status_string(st), y, want);

    st = gcl_comm_split(world, 0, rank, &sub);
    CHECK(st == GCL_OK && sub, "split: %s", gcl_status_string(st));
    gcl_finalize(sub); /* not a world: refused */
    CHECK(strstr(gcl_last_error(), "not a live world communicator") != NULL,
          "gcl_finalize(sub-communicator): '%s'", gcl_last_error());
    gcl_comm_destroy(sub);

    gcl_finalize(world);
    gcl_finalize(world); /* a second time: refused, not a crash */
    CHECK(strstr(gcl_last_error(), "finalized already") != NULL, "second gcl_finalize: '%s'",
          gcl_last_error());
    gcl_finalize(NULL);

    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("gcl_init: ok (%d ranks)\n", size);
    MPI_Finalize();
    return all ? 1 : 0;
}
