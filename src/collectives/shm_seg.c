/* libgcl's shared-memory segment: open (create or attach, agree), close,
 * and its registered memory (shm.h). */
#include "collectives/shm_impl.h"
#include "common/settings.h"
#include "transport/shmseg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ------------------------------------------------------- open / close */

typedef struct {
    char name[IPU_SHMSEG_NAME_MAX];
    uint64_t bytes;
    uint64_t oneshot_max, direct_min; /* local rank 0's, which every member takes */
    int32_t ok;
    int32_t pad;
} name_msg_t;

/* Create (a fresh name into name) or attach name, at s->base. */
static gcl_status_t attach(gcl_shm_t *s, char *name, int create, size_t bytes)
{
    void *p = NULL;
    ipu_status_t st = create ? ipu_shmseg_create("gcl", bytes, name, &p) : ipu_shmseg_attach(name, bytes, &p);
    if (st != IPU_OK)
        return gcl_from_ipu(st, "shm_open");
    s->base = p;
    return GCL_OK;
}

gcl_status_t gcl_shm_open(int local_rank, int local_size, size_t slot_bytes,
                          gcl_shm_allgather_fn allgather, void *arg, gcl_shm_t **out)
{
    if (out == NULL || local_size < 1 || local_rank < 0 || local_rank >= local_size ||
        (local_size > 1 && allgather == NULL))
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_shm_open: bad arguments (local rank %d of %d, allgather %s)", local_rank,
                    local_size, allgather ? "set" : "NULL");
    *out = NULL;
    gcl_shm_t *s = calloc(1, sizeof(*s));
    uint64_t *seen = calloc(6 * (size_t)local_size, sizeof(uint64_t));
    void *blk = NULL;
    if (s == NULL || seen == NULL || posix_memalign(&blk, 64, SUB_BYTES) != 0) {
        free(s);
        free(seen);
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_shm_open: out of memory");
    }
    s->blk = blk;
    s->rank = local_rank;
    s->size = local_size;
    s->seen_in = seen;
    s->seen_red = seen + local_size;
    s->seen_rd = seen + 2 * local_size;
    s->srcs = (const char **)(void *)(seen + 3 * local_size);
    s->din = (char **)(void *)(seen + 4 * local_size);
    s->dout = (char **)(void *)(seen + 5 * local_size);
    s->allgather = allgather;
    s->allgather_arg = arg;
    s->next_g = 1;
    s->lost_rank = -1;
    if (slot_bytes == 0)
        slot_bytes = GCL_SHM_SLOT_BYTES;
    s->slot = round_up(slot_bytes < (size_t)64 * 2 * local_size ? (size_t)64 * 2 * local_size
                                                                 : slot_bytes, 4096);
    ipu_setting_size(IPU_SET_GCL_SHM_ONESHOT_MAX, &s->oneshot_max);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    s->direct_min = cpus > 0 && local_size > cpus ? (size_t)ONESHOT_MAX_DEFAULT + 1 : DIRECT_MIN_DEFAULT;
    ipu_setting_size(IPU_SET_GCL_SHM_DIRECT_MIN, &s->direct_min);
    if (s->direct_min <= INL_BYTES) /* (inline messages are never direct) */
        s->direct_min = INL_BYTES + 1;
    /* streaming stores once the send and receive buffers of all members
     * exceed the last-level cache (2 ranks: a quarter of it) */
    s->stream_min = shm_llc_bytes() / (2 * (size_t)local_size);
    ipu_setting_size(IPU_SET_GCL_SHM_STREAM_BYTES, &s->stream_min);
    ipu_setting_bool(IPU_SET_GCL_SHM_STAGE_NT, &s->stage_nt); /* -1: auto */
    s->stage_nt_min = NT_MIN_BYTES;
    s->stage_nt_min_red = NT_MIN_RED_BYTES;
    if (ipu_setting_size(IPU_SET_GCL_SHM_STAGE_NT_MIN, &s->stage_nt_min) > 0)
        s->stage_nt_min_red = s->stage_nt_min;
    size_t ctl = round_up(LINE + (size_t)local_size * 3 * LINE, 4096);
    int nbuf = 3;
    ipu_setting_int(IPU_SET_GCL_SHM_NBUF, &nbuf); /* 3..NBUF */
    s->nbuf = (size_t)nbuf;
    s->bytes = ctl + (size_t)local_size * s->nbuf * s->slot;

    gcl_status_t st = GCL_OK;
    if (local_size == 1) {
        void *p = mmap(NULL, s->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            st = gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_shm_open: mmap of %zu bytes: %s",
                      s->bytes, strerror(errno));
        else
            s->base = p;
    } else {
        name_msg_t msg, *all = calloc((size_t)local_size, sizeof(name_msg_t));
        memset(&msg, 0, sizeof(msg));
        int ok = 0;
        if (all == NULL) {
            st = gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_shm_open: out of memory");
        } else if (local_rank == 0) {
            st = attach(s, msg.name, 1, s->bytes);
            if (st == GCL_OK) {
                header_t *h = (header_t *)(void *)s->base;
                h->magic = SHM_MAGIC;
                h->bytes = s->bytes;
                h->slot = s->slot;
                h->size = local_size;
            }
            msg.bytes = s->bytes;
            msg.oneshot_max = s->oneshot_max;
            msg.direct_min = s->direct_min;
            msg.ok = st == GCL_OK;
        }
        /* 1: rank 0 publishes the name (or its failure) */
        if (all != NULL && allgather(&msg, all, sizeof(msg), arg) != 0)
            st = gcl_set_error(GCL_ERR_TRANSPORT, "gcl_shm_open: allgather failed");
        else if (all != NULL && local_rank != 0) {
            if (!all[0].ok)
                st = gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_shm_open: local rank 0 could not create the segment");
            else if (all[0].bytes != s->bytes)
                st = gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_shm_open: segment sizes differ (%zu here, %zu at local rank 0): "
                          "slot_bytes and GCL_SHM_NBUF must agree", s->bytes, (size_t)all[0].bytes);
            else {
                /* one-step, direct or segmented: every member must run
                 * the same (a member that differs would wait for, or read,
                 * flags the others never write) */
                s->oneshot_max = (size_t)all[0].oneshot_max;
                s->direct_min = (size_t)all[0].direct_min;
                all[0].name[sizeof(all[0].name) - 1] = 0;
                st = attach(s, all[0].name, 0, s->bytes);
                if (st == GCL_OK && ((header_t *)(void *)s->base)->magic != SHM_MAGIC)
                    st = gcl_set_error(GCL_ERR_TRANSPORT, "gcl_shm_open: %s is not a libgcl segment", all[0].name);
                else if (st == GCL_OK && ((header_t *)(void *)s->base)->slot != s->slot)
                    st = gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_shm_open: staging slots differ (%zu bytes here, %zu at local "
                              "rank 0): slot_bytes and GCL_SHM_NBUF must agree", s->slot,
                              (size_t)((header_t *)(void *)s->base)->slot);
            }
        }
        if (st == GCL_OK)
            shm_publish_identity(s);
        /* 2: everyone attached (or not): unlink, agree on the outcome */
        ok = st == GCL_OK;
        int32_t *oks = all ? (int32_t *)(void *)all : NULL;
        int32_t mine = ok;
        if (all != NULL && allgather(&mine, oks, sizeof(mine), arg) != 0) {
            if (st == GCL_OK)
                st = gcl_set_error(GCL_ERR_TRANSPORT, "gcl_shm_open: allgather failed");
        } else if (all != NULL && st == GCL_OK) {
            for (int j = 0; j < local_size; j++)
                if (!oks[j]) {
                    st = gcl_set_error(GCL_ERR_TRANSPORT, "gcl_shm_open: local rank %d could not attach the segment", j);
                    break;
                }
        }
        if (local_rank == 0 && msg.ok)
            shm_unlink(msg.name);
        free(all);
    }
    if (st != GCL_OK) {
        if (s->base)
            munmap(s->base, s->bytes);
        free(seen);
        free(s->blk);
        free(s);
        return st;
    }
    s->data = s->base + ctl;
    /* first touch of this member's own buffers here (NUMA placement, and no
     * page faults inside collectives) */
    memset(s->data + (size_t)local_rank * s->nbuf * s->slot, 0, s->nbuf * s->slot);
    *out = s;
    return GCL_OK;
}

gcl_status_t gcl_shm_mem_alloc(gcl_shm_t *s, size_t bytes, void **ptr)
{
    return gcl_shm_regions_alloc(&s->mem, s->rank, s->size, bytes, s->allgather, s->allgather_arg,
                                 ptr);
}

int gcl_shm_mem_free(gcl_shm_t *s, void *ptr)
{
    return s != NULL && gcl_shm_regions_free(&s->mem, s->rank, ptr);
}

uint64_t gcl_shm_direct_ops(const gcl_shm_t *s)
{
    return s ? s->direct_ops : 0;
}

void gcl_shm_close(gcl_shm_t *s)
{
    if (s == NULL)
        return;
    gcl_shm_regions_clear(&s->mem);
    while (s->free_ops) {
        gcl_shm_op_t *o = s->free_ops;
        s->free_ops = o->next;
        free(o);
    }
    /* ops still queued belong to their callers, who must have cancelled or
     * completed them */
    if (s->base)
        munmap(s->base, s->bytes);
    free(s->seen_in);
    free(s->blk);
    free(s);
}

