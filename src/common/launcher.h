/* Which launcher started this process, from the environment it gives its
 * ranks: Open MPI's mpirun (OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_RANK) or a
 * PMIx launcher (PMIX_RANK). The one place in src/ that reads a launcher's
 * variables; settings of ipu-exec and libgcl are read by common/settings. */
#ifndef IPU_COMMON_LAUNCHER_H
#define IPU_COMMON_LAUNCHER_H

typedef struct ipu_launcher {
    int launched; /* 1 under a launcher (MPI_Init joins its job), 0 bare */
    int rank;     /* this process's rank, -1 when the launcher does not say */
} ipu_launcher_t;

/* The launcher of this process (never fails). */
ipu_launcher_t ipu_launcher(void);

#endif
