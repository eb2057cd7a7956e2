/* Registered memory of a shared-memory segment's members (gcl_mem_alloc in
 * gcl.h): each allocation is one POSIX shared-memory object per member,
 * mapped by every member of the host, so a collective whose buffers all lie
 * in such memory can read the peers' inputs and write their outputs
 * directly instead of through staging (the zero-copy of NCCL's user buffer
 * registration or of XPMEM / KNEM in MPI's shared-memory transports).
 *
 * An allocation is collective over the members (the same order everywhere,
 * each its own size) and gets the same id on all of them, so a member names
 * a buffer to the others as (id, offset). */
#ifndef GCL_SHM_MEM_H
#define GCL_SHM_MEM_H

#include "collectives/shm.h"

#include <stddef.h>
#include <stdint.h>

typedef struct gcl_shm_region gcl_shm_region_t;
typedef struct {
    gcl_shm_region_t *head;
    uint32_t next_id; /* the id of the next allocation (the same on all members) */
} gcl_shm_regions_t;

/* Collective over the size members (this one is rank): allocate bytes (> 0)
 * of shared memory, page aligned, mapped by every member; *ptr is this
 * member's. On any member's failure every member returns the error
 * (GCL_ERR_NO_MEMORY: shm_open / ftruncate / mmap, the message says which
 * and how much; GCL_ERR_TRANSPORT: allgather failed) and maps nothing. */
gcl_status_t gcl_shm_regions_alloc(gcl_shm_regions_t *r, int rank, int size, size_t bytes,
                                   gcl_shm_allgather_fn allgather, void *arg, void **ptr);
/* Unmap the allocation whose own part starts at ptr (all members' views):
 * 1, or 0 when ptr is not one. Local; gcl.h asks every member to call it. */
int gcl_shm_regions_free(gcl_shm_regions_t *r, int rank, void *ptr);
/* Unmap everything (segment close). */
void gcl_shm_regions_clear(gcl_shm_regions_t *r);
/* Is [p, p + n) inside this member's part of an allocation: 1 with its id
 * and offset, else 0. */
int gcl_shm_regions_find(const gcl_shm_regions_t *r, int rank, const void *p, size_t n,
                         uint32_t *id, uint64_t *off);
/* Member j's bytes [off, off + n) of allocation id in this process; NULL if
 * there is no such allocation or it is shorter. */
char *gcl_shm_regions_addr(const gcl_shm_regions_t *r, uint32_t id, int j, uint64_t off, size_t n);

#endif
