/* Registered memory of a shared-memory segment's members (shm_mem.h). */
#include "collectives/shm_mem.h"

#include "collectives/errors.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct gcl_shm_region {
    gcl_shm_region_t *next;
    uint32_t id;
    int size;
    char **base;  /* size entries: member j's part, mapped here */
    size_t *len;  /* its length in bytes (a whole number of pages) */
};

typedef struct {
    char name[48];
    uint64_t len;
    int32_t ok;
    int32_t pad;
} region_msg_t;

static unsigned g_counter;

static gcl_status_t no_memory(const char *what, const char *name, size_t len, int e)
{
    gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_mem_alloc: %s of %zu bytes of shared memory (%s): %s", what,
              len, name, strerror(e));
    return GCL_ERR_NO_MEMORY;
}

/* Create (create != 0) or open the object name of len bytes and map it. */
static gcl_status_t map_object(const char *name, int create, size_t len, char **out)
{
    int fd = shm_open(name, create ? O_CREAT | O_EXCL | O_RDWR : O_RDWR, 0600);
    if (fd < 0)
        return no_memory("shm_open", name, len, errno);
    int rc = 0;
    if (create) { /* reserved now: a full /dev/shm fails here, not as SIGBUS later */
        rc = ftruncate(fd, (off_t)len) != 0 ? errno : posix_fallocate(fd, 0, (off_t)len);
        if (rc == EOPNOTSUPP || rc == EINVAL)
            rc = 0;
    } else {
        struct stat st;
        rc = fstat(fd, &st) != 0 ? errno : (size_t)st.st_size < len ? ERANGE : 0;
    }
    void *p = rc == 0 ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (rc == 0 && p == MAP_FAILED)
        rc = errno;
    close(fd);
    if (rc != 0 && create)
        shm_unlink(name); /* (nothing of a failed allocation is left in /dev/shm) */
    if (rc != 0)
        return no_memory(create ? "reserving" : "mapping", name, len, rc);
    *out = p;
    return GCL_OK;
}

static void region_unmap(gcl_shm_region_t *g)
{
    for (int j = 0; j < g->size; j++)
        if (g->base[j])
            munmap(g->base[j], g->len[j]);
    free(g->base);
    free(g->len);
    free(g);
}

gcl_status_t gcl_shm_regions_alloc(gcl_shm_regions_t *r, int rank, int size, size_t bytes,
                                   gcl_shm_allgather_fn allgather, void *arg, void **ptr)
{
    *ptr = NULL;
    uint32_t id = r->next_id++; /* on every member, whatever the outcome */
    gcl_shm_region_t *g = calloc(1, sizeof(*g));
    region_msg_t msg, *all = calloc((size_t)size, sizeof(*all));
    if (g) {
        g->base = calloc((size_t)size, sizeof(char *));
        g->len = calloc((size_t)size, sizeof(size_t));
    }
    memset(&msg, 0, sizeof(msg));
    gcl_status_t st = GCL_OK;
    msg.len = (bytes + 4095) / 4096 * 4096;
    if (g == NULL || g->base == NULL || g->len == NULL || all == NULL) {
        gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_mem_alloc: out of memory");
        st = GCL_ERR_NO_MEMORY;
    } else {
        g->id = id;
        g->size = size;
        snprintf(msg.name, sizeof(msg.name), "/gcl-m-%d-%u", (int)getpid(),
                 __atomic_fetch_add(&g_counter, 1, __ATOMIC_RELAXED));
        st = map_object(msg.name, 1, msg.len, &g->base[rank]);
        if (st == GCL_OK)
            g->len[rank] = msg.len;
        msg.ok = st == GCL_OK;
    }
    /* 1: every member's name (or failure); 2: everyone mapped everyone's */
    int32_t ok = 0;
    if (all == NULL || allgather(&msg, all, sizeof(msg), arg) != 0) {
        if (st == GCL_OK) {
            gcl_set_error(GCL_ERR_TRANSPORT, "gcl_mem_alloc: allgather failed");
            st = GCL_ERR_TRANSPORT;
        }
    } else {
        for (int j = 0; j < size && st == GCL_OK; j++) {
            all[j].name[sizeof(all[j].name) - 1] = 0;
            if (!all[j].ok) {
                gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_mem_alloc: local rank %d could not allocate", j);
                st = GCL_ERR_NO_MEMORY;
            } else if (j != rank && (st = map_object(all[j].name, 0, all[j].len, &g->base[j])) == GCL_OK)
                g->len[j] = all[j].len;
        }
        ok = st == GCL_OK;
        int32_t *oks = (int32_t *)(void *)all;
        if (allgather(&ok, oks, sizeof(ok), arg) != 0) {
            if (st == GCL_OK) {
                gcl_set_error(GCL_ERR_TRANSPORT, "gcl_mem_alloc: allgather failed");
                st = GCL_ERR_TRANSPORT;
            }
        } else
            for (int j = 0; j < size && st == GCL_OK; j++)
                if (!oks[j]) {
                    gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_mem_alloc: local rank %d could not map the "
                              "others' memory", j);
                    st = GCL_ERR_NO_MEMORY;
                }
    }
    if (msg.ok)
        shm_unlink(msg.name); /* the mappings keep the objects */
    free(all);
    if (st != GCL_OK) {
        if (g)
            region_unmap(g);
        return st;
    }
    g->next = r->head;
    r->head = g;
    *ptr = g->base[rank];
    return GCL_OK;
}

int gcl_shm_regions_free(gcl_shm_regions_t *r, int rank, void *ptr)
{
    for (gcl_shm_region_t **pg = &r->head; *pg; pg = &(*pg)->next)
        if ((*pg)->base[rank] == ptr) {
            gcl_shm_region_t *g = *pg;
            *pg = g->next;
            region_unmap(g);
            return 1;
        }
    return 0;
}

void gcl_shm_regions_clear(gcl_shm_regions_t *r)
{
    while (r->head) {
        gcl_shm_region_t *g = r->head;
        r->head = g->next;
        region_unmap(g);
    }
}

int gcl_shm_regions_find(const gcl_shm_regions_t *r, int rank, const void *p, size_t n,
                         uint32_t *id, uint64_t *off)
{
    const char *c = p;
    for (const gcl_shm_region_t *g = r->head; g; g = g->next) {
        const char *b = g->base[rank];
        if (c >= b && c <= b + g->len[rank] && n <= (size_t)(b + g->len[rank] - c)) {
            *id = g->id;
            *off = (uint64_t)(c - b);
            return 1;
        }
    }
    return 0;
}

char *gcl_shm_regions_addr(const gcl_shm_regions_t *r, uint32_t id, int j, uint64_t off, size_t n)
{
    for (const gcl_shm_region_t *g = r->head; g; g = g->next)
        if (g->id == id)
            return j < g->size && off <= g->len[j] && n <= g->len[j] - off ? g->base[j] + off
                                                                           : NULL;
    return NULL;
}
