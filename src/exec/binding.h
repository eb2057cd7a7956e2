/* Binding the IPU workers of the ranks of one host to cores (hwloc).
 *
 * The ranks on a host (local rank r of L, each with K IPUs) share its cores:
 * rank r takes the NUMA domain r * D / L of the host's D domains, and its
 * workers take distinct cores: with T threads per IPU (--threads), worker
 * i of rank r takes the T cores of slots (r * K + i) * T + t, dealt over the
 * host's cores in NUMA order, so no two workers (nor two threads of one
 * team) of the host share a core while cores suffice; more threads than
 * cores wrap around, and the plan says so (shared, and a warning naming the
 * cores used). When the process is already bound (mpirun --bind-to,
 * taskset) to fewer cores than the domain has but at least K, its workers
 * take those cores instead. */
#ifndef IPU_EXEC_BINDING_H
#define IPU_EXEC_BINDING_H

#include "common/status.h"

#include <stddef.h>

enum { IPU_BIND_MAX_TEAM = 32 }; /* cores one IPU's team is bound to, at most */

typedef struct ipu_binding {
    int numa;               /* NUMA node (logical index) of the rank, -1 if none */
    int n_cores;            /* cores of the host */
    int n_ipus;
    int pu[64];             /* per local IPU: OS index of the PU (first of its core) */
    int core[64];           /* per local IPU: logical index of the core */
    int threads;            /* cores per IPU: T, at most IPU_BIND_MAX_TEAM */
    /* per local IPU: the OS indexes of the PUs (first of each core) of its
     * T cores, team[i][0] == pu[i]; thread t of its team runs on team[i][t] */
    int team[64][IPU_BIND_MAX_TEAM];
    int shared;             /* 1 if some core carries two threads of the host's teams */
} ipu_binding_t;

/* Compute the binding of local rank local_rank of local_size, K ipus each
 * with threads (T) cores. When the rank's share of the host has fewer than
 * K x T cores, the cores wrap around (shared) and a warning says what is
 * used. Errors: IPU_ERR_INTERNAL (hwloc could not read the topology),
 * IPU_ERR_INVALID_ARG (K > 64, T < 1). */
ipu_status_t ipu_binding_plan(int local_rank, int local_size, int ipus_per_rank, int threads,
                              ipu_binding_t *out);
/* IPU i's team's PUs (team[i][0..threads)) into cpus (at most max);
 * returns how many. */
int ipu_binding_cpus(const ipu_binding_t *b, int i, int *cpus, int max);
/* "0,1" style list of IPU i's team's PUs into buf. */
void ipu_binding_team(const ipu_binding_t *b, int i, char *buf, size_t len);

/* "0,1" style list of the OS indexes of the PUs this process may run on. */
void ipu_binding_allowed(char *buf, size_t len);

#endif
