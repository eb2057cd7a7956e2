/* Binding the IPU workers of the ranks of one host to cores (hwloc).
 *
 * The ranks on a host (local rank r of L, each with K IPUs) share its cores:
 * rank r takes the NUMA domain r * D / L of the host's D domains, and its
 * workers take distinct cores, worker slots being dealt over the host's
 * cores in NUMA order (r * K + i), so no two workers of the host share a
 * core while cores suffice (more workers than cores wrap around). When the
 * process is already bound (mpirun --bind-to, taskset) to fewer cores than
 * the domain has but at least K, its workers take those cores instead. */
#ifndef IPU_EXEC_BINDING_H
#define IPU_EXEC_BINDING_H

#include "common/status.h"

#include <stddef.h>

typedef struct ipu_binding {
    int numa;               /* NUMA node (logical index) of the rank, -1 if none */
    int n_cores;            /* cores of the host */
    int n_ipus;
    int pu[64];             /* per local IPU: OS index of the PU (first of its core) */
    int core[64];           /* per local IPU: logical index of the core */
    int shared;             /* 1 if some core carries two workers of the host */
} ipu_binding_t;

/* Compute the binding of local rank local_rank of local_size, K ipus each.
 * Errors: IPU_ERR_INTERNAL (hwloc could not read the topology),
 * IPU_ERR_INVALID_ARG (K > 64). */
ipu_status_t ipu_binding_plan(int local_rank, int local_size, int ipus_per_rank, ipu_binding_t *out);

/* "0,1" style list of the OS indexes of the PUs this process may run on. */
void ipu_binding_allowed(char *buf, size_t len);

#endif
