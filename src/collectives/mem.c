/* gcl_mem_alloc / gcl_mem_free (gcl.h): registered memory through the
 * communicator's shared-memory segment (shm_mem.c), or ordinary memory
 * where the communicator has none. */
#include "collectives/gcl_internal.h"

#include <stdio.h>
#include <stdlib.h>

struct gcl_plain_mem {
    struct gcl_plain_mem *next;
    void *p;
};

gcl_status_t gcl_mem_alloc(gcl_comm_t *comm, size_t bytes, void **ptr)
{
    if (ptr)
        *ptr = NULL;
    if (comm == NULL || ptr == NULL || bytes == 0) {
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_mem_alloc: %s",
                             comm == NULL ? "NULL communicator" : ptr == NULL ? "NULL ptr" : "0 bytes");
    }
    if (gcl_comm_shm(comm)) {
        return gcl_shm_mem_alloc(comm->shm, bytes, ptr); /* (its message as is) */
    }
    struct gcl_plain_mem *m = malloc(sizeof(*m));
    if (m == NULL || posix_memalign(&m->p, 4096, bytes) != 0) {
        free(m);
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_mem_alloc: out of memory for %zu bytes", bytes);
    }
    m->next = comm->plain_mem;
    comm->plain_mem = m;
    *ptr = m->p;
    return GCL_OK;
}

gcl_status_t gcl_mem_free(gcl_comm_t *comm, void *ptr)
{
    if (ptr == NULL)
        return GCL_OK;
    if (comm == NULL)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_mem_free: NULL communicator");
    if (gcl_shm_mem_free(comm->shm, ptr))
        return GCL_OK;
    for (struct gcl_plain_mem **pm = &comm->plain_mem; *pm; pm = &(*pm)->next)
        if ((*pm)->p == ptr) {
            struct gcl_plain_mem *m = *pm;
            *pm = m->next;
            free(m->p);
            free(m);
            return GCL_OK;
        }
    return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_mem_free: %p was not allocated by gcl_mem_alloc on "
                         "communicator %u", ptr, comm->id);
}

void gcl_mem_free_plain_all(gcl_comm_t *c)
{
    while (c->plain_mem) {
        struct gcl_plain_mem *m = c->plain_mem;
        c->plain_mem = m->next;
        free(m->p);
        free(m);
    }
}
