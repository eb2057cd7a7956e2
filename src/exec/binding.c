#include "exec/binding.h"

#include "common/log.h"

#include <hwloc.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

ipu_status_t ipu_binding_plan(int local_rank, int local_size, int ipus_per_rank, int threads,
                              ipu_binding_t *out)
{
    if (ipus_per_rank < 1 || ipus_per_rank > 64 || local_size < 1)
        return ipu_error(IPU_ERR_INVALID_ARG, "binding: %d IPUs per rank (1..64)", ipus_per_rank);
    if (threads < 1)
        return ipu_error(IPU_ERR_INVALID_ARG, "binding: --threads %d (at least 1)", threads);
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0)
        return ipu_error(IPU_ERR_INTERNAL, "hwloc cannot read this host's topology");
    /* a team larger than IPU_BIND_MAX_TEAM wraps over that many cores */
    int tc = threads < IPU_BIND_MAX_TEAM ? threads : IPU_BIND_MAX_TEAM;
    ipu_binding_t b = {.numa = -1, .n_ipus = ipus_per_rank, .threads = tc};
    int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    int nnuma = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    if (ncores <= 0) /* some VMs expose PUs only */
        ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    b.n_cores = ncores;
    if (nnuma > 0)
        b.numa = (int)((long)local_rank * nnuma / local_size);
    /* the cores of the rank's NUMA domain (all cores without NUMA info),
     * dealt to the workers of the ranks sharing that domain */
    int dom_cores[1024], nd = 0;
    hwloc_obj_t numa = b.numa >= 0 ? hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)b.numa) : NULL;
    hwloc_obj_type_t ctype = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
    for (int c = 0; c < ncores && nd < 1024; c++) {
        hwloc_obj_t core = hwloc_get_obj_by_type(topo, ctype, (unsigned)c);
        if (core && (numa == NULL || hwloc_bitmap_intersects(core->cpuset, numa->cpuset)))
            dom_cores[nd++] = c;
    }
    if (nd == 0) /* a memory-only NUMA node: use every core */
        for (int c = 0; c < ncores && nd < 1024; c++)
            dom_cores[nd++] = c;
    int before = 0, in_domain = 0; /* ranks of this domain before this one, in all */
    for (int r = 0; r < local_size; r++) {
        int same = (nnuma > 0 ? (int)((long)r * nnuma / local_size) : -1) == b.numa;
        in_domain += same;
        before += same && r < local_rank;
    }
    int need = ipus_per_rank * threads; /* cores of this rank's teams */
    /* a launcher or taskset that gave this process a core per worker is
     * respected: the workers take those cores */
    int mine[1024], nm = 0;
    hwloc_cpuset_t allowed = hwloc_bitmap_alloc();
    if (allowed && hwloc_get_cpubind(topo, allowed, HWLOC_CPUBIND_PROCESS) == 0)
        for (int k = 0; k < nd; k++) {
            hwloc_obj_t core = hwloc_get_obj_by_type(topo, ctype, (unsigned)dom_cores[k]);
            if (core && hwloc_bitmap_isincluded(core->cpuset, allowed))
                mine[nm++] = dom_cores[k];
        }
    hwloc_bitmap_free(allowed);
    /* the process binding when it holds the teams' cores; when it holds
     * fewer but the rank's share of the domain has them (an mpirun binding
     * to one core per rank by default), the share, said on stderr; else
     * the binding, shared by the threads */
    int share_fits = in_domain * need <= nd;
    int use_mine = nm >= ipus_per_rank && nm < nd && (nm >= need || !share_fits);
    int widened = nm >= ipus_per_rank && nm < nd && !use_mine;
    /* the cores this rank may use, from the first slot of its own */
    const int *pool = use_mine ? mine : dom_cores;
    int npool = use_mine ? nm : nd, first = use_mine ? 0 : before * need;
    int have = use_mine ? nm : nd / (in_domain > 0 ? in_domain : 1);
    b.shared = (use_mine ? nm < need : in_domain * need > nd) || tc < threads;
    for (int i = 0; i < ipus_per_rank && npool > 0; i++)
        for (int t = 0; t < tc; t++) {
            int c = pool[(first + i * tc + t) % npool];
            hwloc_obj_t core = hwloc_get_obj_by_type(topo, ctype, (unsigned)c);
            int pu = core && core->cpuset ? hwloc_bitmap_first(core->cpuset) : -1;
            if (t == 0) {
                b.core[i] = c;
                b.pu[i] = pu;
            }
            b.team[i][t] = pu;
        }
    hwloc_topology_destroy(topo);
    if (widened) {
        char used[256];
        ipu_binding_team(&b, 0, used, sizeof used);
        ipu_warn("binding: this process is bound to %d core%s, fewer than the %d that %d IPU%s x "
                 "--threads %d need: its teams use the rank's share of the host instead (IPU 0 on "
                 "cpus %s); under mpirun give each rank the cores (--map-by slot:PE=%d, or "
                 "--bind-to none)", nm, nm > 1 ? "s" : "", need, ipus_per_rank,
                 ipus_per_rank > 1 ? "s" : "", threads, used, need);
    }
    if (b.shared && threads > 1) {
        char used[256];
        ipu_binding_team(&b, 0, used, sizeof used);
        ipu_warn("binding: %d IPU%s x --threads %d need %d cores on this rank, which has %d%s: the "
                 "threads share cores (IPU 0 runs on cpus %s); lower --threads or --ipus-per-rank, "
                 "or give the rank more cores", ipus_per_rank, ipus_per_rank > 1 ? "s" : "", threads,
                 need, have, use_mine ? " (its process binding)" : "", used);
    }
    *out = b;
    return IPU_OK;
}

int ipu_binding_cpus(const ipu_binding_t *b, int i, int *cpus, int max)
{
    int n = 0;
    for (int t = 0; t < b->threads && n < max; t++)
        cpus[n++] = b->team[i][t];
    return n;
}

void ipu_binding_team(const ipu_binding_t *b, int i, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int t = 0; t < b->threads && off < len; t++)
        off += (size_t)snprintf(buf + off, len - off, t ? ",%d" : "%d", b->team[i][t]);
}

void ipu_binding_allowed(char *buf, size_t len)
{
    cpu_set_t set;
    size_t off = 0;
    buf[0] = '\0';
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return;
    for (int c = 0; c < CPU_SETSIZE && off < len; c++)
        if (CPU_ISSET(c, &set))
            off += (size_t)snprintf(buf + off, len - off, off ? ",%d" : "%d", c);
}
