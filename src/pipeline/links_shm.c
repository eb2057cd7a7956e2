/* The links between two ranks of one host, through shared memory
 * (internal.h): the sender's segment holds, for each link it sends to a rank
 * of its host (in link order), two control lines (link_ctl_t) and the link's
 * C slots. The sender writes the stage's result straight into a slot and
 * the receiver's stage reads it from there: one copy each, no message, no
 * socket (UCX drops its shared-memory transports in the peer error mode the
 * transport needs, so these links went over TCP on loopback before). A peer
 * that dies is found as over the transport: by the liveness pings of a
 * scheduler that sees nothing move (fault.h). */
#include "pipeline/internal.h"
#include "common/log.h"
#include "common/settings.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static size_t round_up(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

/* Whether link lk joins two ranks of one host. */
static int same_host(const pipe_t *pp, const link_t *lk)
{
    return pp->host_ids && lk->src_rank != lk->dst_rank &&
           pp->host_ids[lk->src_rank] == pp->host_ids[lk->dst_rank];
}

static size_t slot_bytes(const link_t *lk)
{
    return round_up(lk->bytes, 64);
}

/* Bytes of link lk's area in its sender's segment: control lines, slots. */
static size_t area_bytes(const pipe_t *pp, const link_t *lk)
{
    return sizeof(link_ctl_t) + (size_t)pp->C * slot_bytes(lk);
}

/* Bytes of src_rank's segment: the areas of its links to the ranks of its
 * host, in link order (the links are the replica's, in one order on every
 * rank, so that sender and receiver place them alike). */
static size_t layout(const pipe_t *pp, int src_rank)
{
    size_t at = 0;
    for (int l = 0; l < pp->n_links; l++)
        if (pp->links[l].src_rank == src_rank && same_host(pp, &pp->links[l]))
            at += area_bytes(pp, &pp->links[l]);
    return round_up(at, 4096);
}

void pipe_shm_create(pipe_t *pp)
{
    int on = 1;
    ipu_setting_bool(IPU_SET_IPU_EXEC_SHM_LINKS, &on);
    size_t bytes = layout(pp, pp->rank);
    if (!on || bytes == 0)
        return;
    void *base = NULL;
    if (ipu_shmseg_create("ipu-exec", bytes, pp->shm.name, &base) != IPU_OK) {
        pp->shm.name[0] = 0;
        ipu_warn("rank %d: the links to the ranks of its host go through the transport: no shared "
                 "memory for them (%s)", pp->rank, ipu_error_message());
        return;
    }
    pp->shm.base = base;
    pp->shm.bytes = bytes;
}

void pipe_shm_name(const pipe_t *pp, uint32_t *v)
{
    memcpy(v, pp->shm.name, sizeof(pp->shm.name));
}

/* Give link lk its control lines and slots at base + off. */
static void place(pipe_t *pp, link_t *lk, uint8_t *base, size_t off)
{
    lk->shm = (link_ctl_t *)(void *)(base + off);
    uint8_t *slot = base + off + sizeof(link_ctl_t);
    for (int c = 0; c < pp->C; c++, slot += slot_bytes(lk))
        if (lk->src_rank == pp->rank)
            lk->sbuf[c] = slot;
        else
            lk->rbuf[c] = slot;
}

ipu_status_t pipe_shm_attach(pipe_t *pp, const uint32_t *all, size_t stride, size_t at)
{
    size_t *at_rank = calloc((size_t)pp->world, sizeof(size_t)); /* per sender: next area's offset */
    pp->shm.peer = calloc((size_t)pp->world, sizeof(*pp->shm.peer));
    if (at_rank == NULL || pp->shm.peer == NULL) {
        free(at_rank);
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    }
    ipu_status_t st = IPU_OK;
    for (int l = 0; l < pp->n_links && st == IPU_OK; l++) {
        link_t *lk = &pp->links[l];
        if (!same_host(pp, lk))
            continue;
        size_t off = at_rank[lk->src_rank];
        at_rank[lk->src_rank] += area_bytes(pp, lk);
        if (lk->src_rank != pp->rank && lk->dst_rank != pp->rank)
            continue;
        char name[IPU_SHMSEG_NAME_MAX];
        memcpy(name, all + (size_t)lk->src_rank * stride + at, sizeof(name));
        name[sizeof(name) - 1] = 0;
        if (name[0] == 0) /* the sender has none: the transport */
            continue;
        struct pipe_shm_map *m = lk->src_rank == pp->rank ? NULL : &pp->shm.peer[lk->src_rank];
        if (m && m->base == NULL) {
            size_t bytes = layout(pp, lk->src_rank);
            void *base = NULL;
            if ((st = ipu_shmseg_attach(name, bytes, &base)) != IPU_OK) {
                st = ipu_error(st, "rank %d: the shared memory of its links from rank %d: %s; run with "
                               "IPU_EXEC_SHM_LINKS=0 (links through the transport)", pp->rank,
                               lk->src_rank, ipu_error_message());
                break;
            }
            m->base = base;
            m->bytes = bytes;
        }
        place(pp, lk, m ? m->base : pp->shm.base, off);
        ipu_debug("link %d (stage %d -> %d, %zu bytes): through shared memory", l, lk->src, lk->dst,
                  lk->bytes);
    }
    free(at_rank);
    return st;
}

void pipe_shm_unlink(pipe_t *pp)
{
    if (pp->shm.name[0])
        shm_unlink(pp->shm.name);
    pp->shm.name[0] = 0;
}

void pipe_shm_close(pipe_t *pp)
{
    pipe_shm_unlink(pp);
    if (pp->shm.base)
        munmap(pp->shm.base, pp->shm.bytes);
    for (int r = 0; pp->shm.peer && r < pp->world; r++)
        if (pp->shm.peer[r].base)
            munmap(pp->shm.peer[r].base, pp->shm.peer[r].bytes);
    free(pp->shm.peer);
    memset(&pp->shm, 0, sizeof(pp->shm));
}
