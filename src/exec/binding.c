#include "exec/binding.h"

#include <hwloc.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

ipu_status_t ipu_binding_plan(int local_rank, int local_size, int ipus_per_rank, ipu_binding_t *out)
{
    if (ipus_per_rank < 1 || ipus_per_rank > 64 || local_size < 1)
        return ipu_error(IPU_ERR_INVALID_ARG, "binding: %d IPUs per rank (1..64)", ipus_per_rank);
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0)
        return ipu_error(IPU_ERR_INTERNAL, "hwloc cannot read this host's topology");
    ipu_binding_t b = {.numa = -1, .n_ipus = ipus_per_rank};
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
    b.shared = in_domain * ipus_per_rank > nd;
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
    int use_mine = nm >= ipus_per_rank && nm < nd;
    for (int i = 0; i < ipus_per_rank && nd > 0; i++) {
        int c = use_mine ? mine[i] : dom_cores[(before * ipus_per_rank + i) % nd];
        hwloc_obj_t core = hwloc_get_obj_by_type(topo, ctype, (unsigned)c);
        b.core[i] = c;
        b.pu[i] = core && core->cpuset ? hwloc_bitmap_first(core->cpuset) : -1;
    }
    hwloc_topology_destroy(topo);
    *out = b;
    return IPU_OK;
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
