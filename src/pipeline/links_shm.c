/* The links between two ranks of one host, through shared memory
 * (internal.h): the sender's segment holds, for each link it sends to a rank
 * of its host (in link order), two control lines (link_ctl_t) and the link's
 * C slots. The sender writes the stage's result straight into a slot and
 * the receiver's stage reads it from there: one copy each, no message, no
 * socket (UCX drops its shared-memory transports in the peer error mode the
 * transport needs, so these links went over TCP on loopback before). A peer
 * that dies is found as over the transport: by the liveness pings of a
 * scheduler that sees nothing move (fault.h).
 *
 * The segment is anonymous (transport/shmseg.h): the receivers open the
 * sender's descriptor through /proc during the set-up, so nothing is named
 * and nothing is left behind, whichever rank dies when. It starts with a
 * header naming its creator (rank and a random nonce, gathered with its pid
 * and descriptor): ranks that report one host name but cannot reach each
 * other's processes (containers with the host's network and their own PID
 * namespace) find no such process, or another process of that pid, and then
 * every link of the run goes through the transport. */
#include "pipeline/internal.h"
#include "common/log.h"
#include "common/settings.h"
#include "transport/shmseg.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define SEG_MAGIC UINT64_C(0x6970752d6c696e6b) /* "ipu-link" */

/* The first line of a segment. */
typedef struct {
    uint64_t magic, nonce;
    int32_t rank;
    char pad[44];
} seg_head_t;

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
    size_t at = sizeof(seg_head_t);
    for (int l = 0; l < pp->n_links; l++)
        if (pp->links[l].src_rank == src_rank && same_host(pp, &pp->links[l]))
            at += area_bytes(pp, &pp->links[l]);
    return at > sizeof(seg_head_t) ? round_up(at, 4096) : 0;
}

/* A random 64-bit value (the time and pid where getrandom has none). */
static uint64_t make_nonce(void)
{
    uint64_t x = 0;
    if (getrandom(&x, sizeof(x), GRND_NONBLOCK) != (ssize_t)sizeof(x)) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        x = ((uint64_t)getpid() << 32) ^ (uint64_t)t.tv_sec * 1000000000u ^ (uint64_t)t.tv_nsec;
    }
    return x;
}

void pipe_shm_create(pipe_t *pp)
{
    int on = 1;
    ipu_setting_bool(IPU_SET_IPU_EXEC_SHM_LINKS, &on);
    size_t bytes = layout(pp, pp->rank);
    if (!on || bytes == 0)
        return;
    void *base = NULL;
    int fd = -1;
    if (ipu_shmseg_create_anon("ipu-exec-links", bytes, &fd, &base) != IPU_OK) {
        ipu_warn("rank %d: the links to the ranks of its host go through the transport: no shared "
                 "memory for them (%s)", pp->rank, ipu_error_message());
        return;
    }
    pp->shm.fd = fd + 1;
    pp->shm.base = base;
    pp->shm.bytes = bytes;
    seg_head_t *h = base;
    h->magic = SEG_MAGIC;
    h->nonce = pp->shm.nonce = make_nonce();
    h->rank = pp->rank;
}

void pipe_shm_id(const pipe_t *pp, uint32_t *v)
{
    memset(v, 0, PIPE_SHM_WORDS * sizeof(uint32_t));
    if (pp->shm.fd == 0)
        return;
    v[0] = (uint32_t)getpid();
    v[1] = (uint32_t)(pp->shm.fd - 1);
    memcpy(v + 2, &pp->shm.nonce, sizeof(pp->shm.nonce));
}

/* The segment of src_rank, given by v (its PIPE_SHM_WORDS values), at m. */
static ipu_status_t attach(const pipe_t *pp, int src_rank, const uint32_t *v, struct pipe_shm_map *m)
{
    uint64_t nonce;
    memcpy(&nonce, v + 2, sizeof(nonce));
    size_t bytes = layout(pp, src_rank);
    void *base = NULL;
    ipu_status_t st = ipu_shmseg_attach_fd((int)v[0], (int)v[1], bytes, &base);
    if (st != IPU_OK)
        return st;
    const seg_head_t *h = base;
    if (h->magic != SEG_MAGIC || h->nonce != nonce || h->rank != src_rank) {
        munmap(base, bytes);
        return ipu_error(IPU_ERR_TRANSPORT, "process %u's descriptor %u is not rank %d's segment: another "
                         "process of that pid (not in this PID namespace)", v[0], v[1], src_rank);
    }
    m->base = base;
    m->bytes = bytes;
    return IPU_OK;
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

/* Attach the segments of the senders of this rank's links and place those
 * links; on an error, the message names the sender, and the links placed
 * so far stay so (pipe_shm_agree takes them back). */
static ipu_status_t attach_all(pipe_t *pp, const uint32_t *all, size_t stride, size_t at)
{
    size_t *at_rank = calloc((size_t)pp->world, sizeof(size_t)); /* per sender: next area's offset */
    pp->shm.peer = calloc((size_t)pp->world, sizeof(*pp->shm.peer));
    if (at_rank == NULL || pp->shm.peer == NULL) {
        free(at_rank);
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    }
    for (int r = 0; r < pp->world; r++)
        at_rank[r] = sizeof(seg_head_t);
    ipu_status_t st = IPU_OK;
    for (int l = 0; l < pp->n_links && st == IPU_OK; l++) {
        link_t *lk = &pp->links[l];
        if (!same_host(pp, lk))
            continue;
        size_t off = at_rank[lk->src_rank];
        at_rank[lk->src_rank] += area_bytes(pp, lk);
        const uint32_t *v = all + (size_t)lk->src_rank * stride + at;
        if ((lk->src_rank != pp->rank && lk->dst_rank != pp->rank) || v[0] == 0) /* no pid: none, the transport */
            continue;
        struct pipe_shm_map *m = lk->src_rank == pp->rank ? NULL : &pp->shm.peer[lk->src_rank];
        if (m && m->base == NULL && (st = attach(pp, lk->src_rank, v, m)) != IPU_OK)
            st = ipu_error(st, "rank %d's shared memory: %s", lk->src_rank, ipu_error_message());
        else
            place(pp, lk, m ? m->base : pp->shm.base, off);
    }
    free(at_rank);
    return st;
}

/* Close this rank's descriptor of its segment (its mapping stays). */
static void release_fd(pipe_t *pp)
{
    if (pp->shm.fd)
        close(pp->shm.fd - 1);
    pp->shm.fd = 0;
}

/* Every link back to the transport, every segment unmapped. */
static void unplace_all(pipe_t *pp)
{
    for (int l = 0; l < pp->n_links; l++) {
        link_t *lk = &pp->links[l];
        if (lk->shm == NULL)
            continue;
        lk->shm = NULL;
        memset(lk->sbuf, 0, sizeof(lk->sbuf));
        memset(lk->rbuf, 0, sizeof(lk->rbuf));
    }
    pipe_shm_close(pp);
}

ipu_status_t pipe_shm_agree(pipe_t *pp, MPI_Comm comm, const uint32_t *all, size_t stride, size_t at, int *lost)
{
    int any = 0; /* a segment anywhere: the same answer on every rank */
    for (int r = 0; r < pp->world; r++)
        any |= all[(size_t)r * stride + at] != 0;
    if (!any)
        return IPU_OK;
    ipu_status_t mine = attach_all(pp, all, stride, at);
    if (mine != IPU_OK)
        ipu_warn("rank %d: every stage link goes through the transport: %s", pp->rank, ipu_error_message());
    uint32_t ok = mine == IPU_OK, *oks = calloc((size_t)pp->world, sizeof(uint32_t));
    ipu_status_t st = oks ? IPU_OK : ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    st = ipu_fault_gather(&pp->fault, comm, st, "the links' shared memory", 1, &ok, oks ? 1 : 0, oks, lost);
    release_fd(pp); /* every rank attached (or gave up) */
    int all_ok = st == IPU_OK;
    for (int r = 0; all_ok && r < pp->world; r++)
        all_ok = oks[r] != 0;
    free(oks);
    if (!all_ok)
        unplace_all(pp);
    for (int l = 0; l < pp->n_links; l++)
        if (pp->links[l].shm)
            ipu_debug("link %d (stage %d -> %d, %zu bytes): through shared memory", l, pp->links[l].src,
                      pp->links[l].dst, pp->links[l].bytes);
    return st;
}

void pipe_shm_close(pipe_t *pp)
{
    release_fd(pp);
    if (pp->shm.base)
        munmap(pp->shm.base, pp->shm.bytes);
    for (int r = 0; pp->shm.peer && r < pp->world; r++)
        if (pp->shm.peer[r].base)
            munmap(pp->shm.peer[r].base, pp->shm.peer[r].bytes);
    free(pp->shm.peer);
    memset(&pp->shm, 0, sizeof(pp->shm));
}
