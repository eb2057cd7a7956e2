/* libgcl with MPI types (includes mpi.h; gcl.h itself does not).
 *
 * gcl_init_mpi() takes a pointer to an MPI_Comm as `const void *`, so that
 * gcl.h needs no mpi.h; passing the communicator itself (MPI_COMM_WORLD
 * instead of &comm) then compiles. gcl_init_mpi_comm() takes the MPI_Comm
 * by value: that mistake does not compile. */
#ifndef GCL_GCL_MPI_H
#define GCL_GCL_MPI_H

#include <gcl/gcl.h>
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The world communicator of the job described by comm, as gcl_init_mpi()
 *  (MPI initialised; comm is duplicated for the bootstrap and left alone;
 *  collective over comm; params may be NULL). Errors: GCL_ERR_TRANSPORT,
 *  GCL_ERR_NO_MEMORY, GCL_ERR_INVALID_ARG. */
gcl_status_t gcl_init_mpi_comm(MPI_Comm comm, const gcl_init_params_t *params, gcl_comm_t **world);

#ifdef __cplusplus
}
#endif

#endif
