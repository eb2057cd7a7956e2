/* libgcl communicators: split by color/key (MPI_Comm_split semantics,
 * collective through an allgather over the parent, as UCC's team create),
 * GCL-style groups, a communicator id agreed at creation (the lowest ids
 * free on every member: the AND of the members' bitmaps of used ids, as
 * UCC's team id pool), the host topology (host-local members, host leaders)
 * and the internal host-local / leader communicators of the hierarchical
 * algorithms, and the shared-memory segment of a host. */
#include "collectives/gcl_internal.h"
#include "common/settings.h"

#include <stdlib.h>
#include <string.h>

gcl_comm_t *gcl_comm_new(gcl_ctx_t *ctx, int size, const int *world, int my_rank)
{
    gcl_comm_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->world = malloc((size_t)size * sizeof(int));
    if (c->world == NULL) {
        free(c);
        return NULL;
    }
    memcpy(c->world, world, (size_t)size * sizeof(int));
    c->ctx = ctx;
    c->size = size;
    c->rank = my_rank;
    c->timeout_s = ctx->timeout_s;
    c->leader_rank = -1;
    return c;
}

gcl_status_t gcl_comm_topology(gcl_comm_t *c)
{
    const int *host = c->ctx->host_of;
    int me = host[c->world[c->rank]];
    c->local = malloc((size_t)c->size * sizeof(int));
    c->leaders = malloc((size_t)c->size * sizeof(int));
    if (!c->local || !c->leaders)
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl: out of memory for a communicator");
    c->local_size = c->nleaders = 0;
    for (int i = 0; i < c->size; i++) {
        int h = host[c->world[i]], first = 1;
        if (h == me) {
            if (i == c->rank)
                c->local_rank = c->local_size;
            c->local[c->local_size++] = i;
        }
        for (int j = 0; j < i && first; j++)
            first = host[c->world[j]] != h;
        if (first) {
            if (i == c->rank)
                c->leader_rank = c->nleaders;
            c->leaders[c->nleaders++] = i;
        }
    }
    c->nhosts = c->nleaders;
    return GCL_OK;
}

int gcl_comm_rank(const gcl_comm_t *comm) { return comm ? comm->rank : -1; }
int gcl_comm_size(const gcl_comm_t *comm) { return comm ? comm->size : 0; }

gcl_status_t gcl_comm_set_timeout(gcl_comm_t *comm, double timeout_s)
{
    if (comm == NULL)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_comm_set_timeout: NULL communicator");
    comm->timeout_s = timeout_s;
    if (comm->local_comm && comm->local_comm != comm)
        comm->local_comm->timeout_s = timeout_s;
    if (comm->leader_comm)
        comm->leader_comm->timeout_s = timeout_s;
    return GCL_OK;
}

static void release_id(gcl_ctx_t *ctx, unsigned id)
{
    ctx->used_ids[id / 64] &= ~(UINT64_C(1) << (id % 64));
}

static void comm_free(gcl_comm_t *c)
{
    if (c->local_comm && c->local_comm != c)
        comm_free(c->local_comm);
    if (c->leader_comm)
        comm_free(c->leader_comm);
    if (gcl_shm_direct_ops(c->shm) > 0)
        gcl_log(c, GCL_LOG_INFO, "%llu allreduce calls ran on registered memory (gcl_mem_alloc)",
                (unsigned long long)gcl_shm_direct_ops(c->shm));
    gcl_shm_close(c->shm);
    gcl_mem_free_plain_all(c);
    free(c->world);
    free(c->local);
    free(c->leaders);
    free(c);
}

void gcl_comm_destroy(gcl_comm_t *comm)
{
    if (comm == NULL)
        return;
    if (comm->is_world) { /* the world goes with its context */
        gcl_finalize(comm);
        return;
    }
    gcl_req_untrack_comm(comm);
    if (!comm->internal) {
        release_id(comm->ctx, comm->id);
        release_id(comm->ctx, comm->sub_id);
    }
    comm_free(comm);
}

/* An internal communicator of the members listed (comm ranks of c). */
static gcl_comm_t *sub_comm(gcl_comm_t *c, const int *members, int n, int my)
{
    int *w = malloc((size_t)n * sizeof(int));
    if (w == NULL)
        return NULL;
    for (int i = 0; i < n; i++)
        w[i] = c->world[members[i]];
    gcl_comm_t *s = gcl_comm_new(c->ctx, n, w, my);
    free(w);
    if (s == NULL)
        return NULL;
    s->internal = 1;
    s->id = s->sub_id = c->sub_id; /* host-local and leader pairs never overlap */
    s->timeout_s = c->timeout_s;
    if (gcl_comm_topology(s) != GCL_OK) {
        comm_free(s);
        return NULL;
    }
    return s;
}

gcl_comm_t *gcl_comm_local(gcl_comm_t *c)
{
    if (c->nhosts == 1)
        return c;
    if (c->local_comm == NULL)
        c->local_comm = sub_comm(c, c->local, c->local_size, c->local_rank);
    return c->local_comm;
}

gcl_comm_t *gcl_comm_leaders(gcl_comm_t *c)
{
    if (c->leader_rank < 0)
        return NULL;
    if (c->leader_comm == NULL)
        c->leader_comm = sub_comm(c, c->leaders, c->nleaders, c->leader_rank);
    return c->leader_comm;
}

gcl_status_t gcl_comm_allgather_internal(gcl_comm_t *c, int scope, const void *send, void *recv, size_t len)
{
    gcl_request_t *r = gcl_req_new(c, GCL_COLL_ALLGATHER, "allgather", scope, GCL_UINT8, GCL_SUM);
    if (r == NULL)
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl: out of memory");
    gcl_args_t a = {.coll = GCL_COLL_ALLGATHER, .send = send, .recv = recv, .count = len, .dtype = GCL_UINT8};
    r->algo = "bruck";
    gcl_status_t st = gcl_allgather_build(r, &a, GCL_ALG_BRUCK);
    if (st == GCL_OK && r->err)
        st = r->err;
    if (st != GCL_OK) {
        gcl_req_free(r);
        return st;
    }
    if (c->timeout_s > 0)
        r->timed = 1;
    return gcl_req_wait(r);
}

static int shm_allgather_cb(const void *send, void *recv, size_t len, void *arg)
{
    return gcl_comm_allgather_internal(arg, GCL_SCOPE_INTERNAL, send, recv, len) == GCL_OK ? 0 : -1;
}

void gcl_comm_shm_eager(gcl_comm_t *c)
{
    /* now, while every member is here: set up lazily, the first
     * non-blocking collectives started in different orders on two
     * communicators would wait on each other (tests/mpi/gcl_split.c,
     * crossed_starts) */
    if (c->ctx->no_shm)
        return;
    if (c->nhosts == 1) {
        (void)gcl_comm_shm(c);
        return;
    }
    gcl_comm_t *l = c->local_size > 1 ? gcl_comm_local(c) : NULL;
    if (l) /* the hierarchical path's host-local communicator */
        (void)gcl_comm_shm(l);
}

int gcl_comm_shm(gcl_comm_t *c)
{
    if (c->shm_state != 0)
        return c->shm_state > 0;
    if (c->nhosts != 1 || c->size < 2) {
        c->shm_state = -1;
        return 0;
    }
    gcl_status_t st = gcl_shm_open(c->rank, c->size, c->ctx->shm_slot, shm_allgather_cb, c, &c->shm);
    int ok = st == GCL_OK, *all = malloc((size_t)c->size * sizeof(int));
    int agreed = all != NULL &&
                 gcl_comm_allgather_internal(c, GCL_SCOPE_INTERNAL, &ok, all, sizeof(int)) == GCL_OK;
    for (int i = 0; agreed && i < c->size; i++)
        agreed = all[i];
    free(all);
    if (!agreed) {
        gcl_log(c, GCL_LOG_INFO, "shared memory unavailable (%s); using the transport", gcl_last_error());
        gcl_shm_close(c->shm);
        c->shm = NULL;
        c->shm_state = -1;
        return 0;
    }
    c->shm_state = 1;
    return 1;
}

gcl_status_t gcl_comm_shm_error(gcl_comm_t *c, const char *name, gcl_status_t st)
{
    if (c->ctx->heard) /* a loss known already (this rank's segment was then abandoned): name it */
        return gcl_ctx_notice(c->ctx, name);
    /* a host-local step's communicator is internal: its ranks mean nothing
     * to the caller, so name ranks in the job */
    char where[96], who[64] = "", msg[900];
    if (c->internal)
        snprintf(where, sizeof(where), "(shm, a host-local step)");
    else
        snprintf(where, sizeof(where), "(shm) on communicator %u (rank %d of %d)", c->id, c->rank, c->size);
    int pid = 0, j = gcl_shm_lost(c->shm, &pid);
    if (j >= 0 && j < c->size) {
        if (c->internal)
            snprintf(who, sizeof(who), "rank %d of the job", c->world[j]);
        else
            snprintf(who, sizeof(who), "rank %d (world rank %d)", j, c->world[j]);
    }
    const char *host = j >= 0 && j < c->size ? ipu_transport_host(c->ctx->tp, c->world[j]) : "";
    if (*who && gcl_shm_gave_up(c->shm) == j) {
        /* a member that gave up over a lost rank told of it first: name that */
        for (double end = gcl_now() + 0.1; gcl_now() < end;) {
            gcl_status_t nst = gcl_ctx_notice(c->ctx, name);
            if (nst != GCL_OK)
                return nst;
        }
        return gcl_set_error(GCL_ERR_TRANSPORT,
                             "gcl_%s %s: %s on host %s gave up on this collective after an error of "
                             "its own (its message says which); the job cannot continue", name, where,
                             who, host);
    }
    if (*who) {
        gcl_ctx_tell(c->ctx, c->world[j]); /* the others, elsewhere, wait on us */
        return gcl_set_error(GCL_ERR_TRANSPORT,
                             "gcl_%s %s: lost %s on host %s (its process, pid %d, is gone); the job "
                             "cannot continue", name, where, who, host, pid);
    }
    snprintf(msg, sizeof(msg), "%s", gcl_last_error()); /* the segment's message */
    return gcl_set_error(st, "gcl_%s %s: %s", name, where, msg);
}

/* ------------------------------------------------------------- splits */

typedef struct split_rec {
    int color, key;
    int next;          /* where this member's next id search starts */
    uint64_t used[GCL_MAX_IDS / 64];
} split_rec_t;

/* The first id not in used from `from` on, wrapping around; -1: none.
 * Ids are taken in turn, not the lowest free one: a message left over from
 * a destroyed communicator (a late member's call that the others gave up
 * on) then meets a communicator of the same id only after thousands of
 * splits, not in the next one. */
static int first_free(const uint64_t *used, int from)
{
    for (int k = 0; k < GCL_MAX_IDS; k++) {
        int id = (from + k) % GCL_MAX_IDS;
        if (!(used[id / 64] & (UINT64_C(1) << (id % 64))))
            return id;
    }
    return -1;
}

gcl_status_t gcl_comm_split(gcl_comm_t *comm, int color, int key, gcl_comm_t **out)
{
    if (comm == NULL || out == NULL)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_comm_split: NULL communicator or output");
    *out = NULL;
    if (color < 0 && color != GCL_UNDEFINED)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_comm_split: color %d is negative", color);
    gcl_ctx_t *ctx = comm->ctx;
    split_rec_t mine = {.color = color, .key = key, .next = ctx->next_id}, *all = malloc((size_t)comm->size * sizeof(split_rec_t));
    if (all == NULL)
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_comm_split: out of memory");
    memcpy(mine.used, ctx->used_ids, sizeof(mine.used));
    gcl_status_t st = gcl_comm_allgather_internal(comm, GCL_SCOPE_INTERNAL, &mine, all, sizeof(mine));
    if (st != GCL_OK) {
        free(all);
        /* the exchange's own message names its algorithm and may name a
         * relaying member that is present */
        if (st == GCL_ERR_TIMED_OUT)
            return gcl_set_error(st, "gcl_comm_split on communicator %u (rank %d of %d) timed out "
                                 "after %.3g s: a member has not called gcl_comm_split (every "
                                 "member of the communicator must)", comm->id, comm->rank,
                                 comm->size, comm->timeout_s);
        char msg[900];
        snprintf(msg, sizeof(msg), "%s", gcl_last_error());
        return gcl_set_error(st, "gcl_comm_split on communicator %u (rank %d of %d): %s", comm->id,
                             comm->rank, comm->size, msg);
    }
    uint64_t used[GCL_MAX_IDS / 64] = {0};
    int from = 0;
    for (int i = 0; i < comm->size; i++) {
        for (int k = 0; k < GCL_MAX_IDS / 64; k++)
            used[k] |= all[i].used[k];
        from = all[i].next > from ? all[i].next : from;
    }
    int id = first_free(used, from), sub = id >= 0 ? first_free(used, id + 1) : -1;
    if (sub == id)
        sub = -1;
    if (sub >= 0)
        ctx->next_id = (sub + 1) % GCL_MAX_IDS;
    if (color == GCL_UNDEFINED) {
        free(all);
        *out = NULL;
        return GCL_OK;
    }
    if (sub < 0) {
        free(all);
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_comm_split: no free communicator id (%d in use)",
                             GCL_MAX_IDS);
    }
    /* members of my color, by (key, parent rank): insertion sort */
    int *m = malloc((size_t)comm->size * sizeof(int)), n = 0, me = -1;
    if (m == NULL) {
        free(all);
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_comm_split: out of memory");
    }
    for (int i = 0; i < comm->size; i++) {
        if (all[i].color != color)
            continue;
        int j = n++;
        while (j > 0 && all[m[j - 1]].key > all[i].key)
            m[j] = m[j - 1], j--;
        m[j] = i;
    }
    for (int i = 0; i < n; i++) {
        if (m[i] == comm->rank)
            me = i;
        m[i] = comm->world[m[i]];
    }
    free(all);
    gcl_comm_t *c = gcl_comm_new(ctx, n, m, me);
    free(m);
    if (c == NULL)
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_comm_split: out of memory");
    c->id = (unsigned)id;
    c->sub_id = (unsigned)sub;
    c->timeout_s = comm->timeout_s;
    ctx->used_ids[id / 64] |= UINT64_C(1) << (id % 64);
    ctx->used_ids[sub / 64] |= UINT64_C(1) << (sub % 64);
    if ((st = gcl_comm_topology(c)) != GCL_OK) {
        gcl_comm_destroy(c);
        return st;
    }
    gcl_comm_shm_eager(c);
    gcl_log(c, GCL_LOG_INFO, "split from comm %u (color %d, key %d): %d member%s on %d host%s", comm->id,
            color, key, n, n == 1 ? "" : "s", c->nhosts, c->nhosts == 1 ? "" : "s");
    *out = c;
    return GCL_OK;
}

gcl_status_t gcl_comm_split_group(gcl_comm_t *comm, gcl_group_t kind, int group_size, gcl_comm_t **out)
{
    if (comm == NULL || out == NULL)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_comm_split_group: NULL communicator or output");
    int r = comm->rank, color;
    switch (kind) {
    case GCL_GROUP_ALL:
        color = 0;
        break;
    case GCL_GROUP_CONSECUTIVE:
    case GCL_GROUP_ORTHOGONAL:
        if (group_size <= 0 || comm->size % group_size != 0)
            return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_comm_split_group: group size %d does not divide "
                                 "the communicator size %d", group_size, comm->size);
        color = kind == GCL_GROUP_CONSECUTIVE ? r / group_size : r % group_size;
        break;
    default:
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_comm_split_group: unknown group kind %d", (int)kind);
    }
    return gcl_comm_split(comm, color, r, out);
}
