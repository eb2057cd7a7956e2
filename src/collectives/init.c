/* libgcl's init and finalize: the context's bootstrap (gcl_init_mpi over an
 * MPI communicator, gcl_init_oob over an allgather callback, as UCC's
 * context), its settings from the environment, one shared transport, the
 * host topology from the transport's host names, the world communicator. */
#include "collectives/gcl_internal.h"
#include "gcl/gcl_mpi.h"
#include "common/settings.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

static int read_env(gcl_ctx_t *ctx)
{
    ipu_setting_choice(IPU_SET_GCL_LOG, &ctx->log_level); /* quiet, info, debug: GCL_LOG_* */
    ipu_setting_bool(IPU_SET_GCL_DEBUG, &ctx->debug);
    ipu_setting_size(IPU_SET_GCL_SEGMENT_BYTES, &ctx->seg_bytes);
    ipu_setting_size(IPU_SET_GCL_SHM_SLOT_BYTES, &ctx->shm_slot);
    ipu_setting_bool(IPU_SET_GCL_NO_SHM, &ctx->no_shm);
    return gcl_decision_init(ctx);
}

/* The world communicators not finalized yet: gcl_finalize() of anything
 * else (a second call, a sub-communicator) is refused, not a crash. */
static gcl_comm_t **g_worlds;
static int g_n_worlds;
static pthread_mutex_t g_worlds_mu = PTHREAD_MUTEX_INITIALIZER;

/* Add (add = 1) or remove world from the live ones; 0 when removing one
 * that is not there (or adding without memory). */
static int live_world(gcl_comm_t *world, int add)
{
    int found = 0;
    pthread_mutex_lock(&g_worlds_mu);
    if (add) {
        gcl_comm_t **w = realloc(g_worlds, (size_t)(g_n_worlds + 1) * sizeof(*w));
        if (w) {
            g_worlds = w;
            g_worlds[g_n_worlds++] = world;
            found = 1;
        }
    } else {
        for (int i = 0; i < g_n_worlds && !found; i++)
            if (g_worlds[i] == world) {
                g_worlds[i] = g_worlds[--g_n_worlds];
                found = 1;
            }
    }
    pthread_mutex_unlock(&g_worlds_mu);
    return found;
}

static void ctx_free(gcl_ctx_t *ctx);

/* The world communicator and its context. */
static void destroy_world(gcl_comm_t *world)
{
    gcl_ctx_t *ctx = world->ctx;
    world->is_world = 0;
    gcl_comm_destroy(world);
    ctx_free(ctx);
}

/* Hosts from the transport's names; GCL_TOPO_PPN=k (testing) pretends
 * every k consecutive ranks share a host. */
static gcl_status_t topology(gcl_ctx_t *ctx)
{
    ctx->host_of = calloc((size_t)ctx->size, sizeof(int));
    if (ctx->host_of == NULL)
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_init: out of memory");
    int k = 0;
    ipu_setting_int(IPU_SET_GCL_TOPO_PPN, &k);
    ctx->nhosts = 0;
    for (int i = 0; i < ctx->size; i++) {
        int h = -1;
        if (k > 0) {
            h = i / k;
        } else {
            for (int j = 0; j < i && h < 0; j++)
                if (!strcmp(ipu_transport_host(ctx->tp, j), ipu_transport_host(ctx->tp, i)))
                    h = ctx->host_of[j];
            if (h < 0)
                h = ctx->nhosts;
        }
        ctx->host_of[i] = h;
        if (h + 1 > ctx->nhosts)
            ctx->nhosts = h + 1;
    }
    return GCL_OK;
}

static void ctx_free(gcl_ctx_t *ctx)
{
    if (ctx == NULL)
        return;
    ipu_lost_close(ctx->lost);
    free(ctx->heard);
    ipu_transport_close(ctx->tp);
    free(ctx->host_of);
    free(ctx);
}

/* The settings that choose the collectives' algorithms and messages, which
 * every rank must share: gathered once at init, before the shared-memory
 * set-up (which depends on them), so that ranks set up differently fail
 * there, on every rank, naming the setting and the ranks, instead of
 * waiting for each other's other messages later. */
typedef struct shared_settings {
    int32_t invalid; /* 1 + the GCL_<COLL>_ALGO this rank could not read; 0: none */
    int32_t no_shm, debug, topo_ppn, shm_nbuf, forced[GCL_COLL_COUNT];
    uint64_t seg_bytes, shm_slot; /* shm_*: the segment's layout, alike on a host's members */
} shared_settings_t;

static void forced_text(int f, char *buf, size_t len)
{
    snprintf(buf, len, "%s", f < 0 ? "auto" : gcl_alg_name((gcl_alg_t)f));
}

/* The first setting in which b differs from a, with both values (a and b
 * differ somewhere). */
static const char *first_difference(const shared_settings_t *a, const shared_settings_t *b, char *va, char *vb,
                                    size_t len)
{
    for (int i = 0; i < GCL_COLL_COUNT; i++)
        if (a->forced[i] != b->forced[i]) {
            forced_text(a->forced[i], va, len);
            forced_text(b->forced[i], vb, len);
            return ipu_setting_def((ipu_setting_id_t)(IPU_SET_GCL_ALLREDUCE_ALGO + i))->name;
        }
    const struct {
        ipu_setting_id_t id;
        long long a, b;
    } v[] = {{IPU_SET_GCL_NO_SHM, a->no_shm, b->no_shm},
             {IPU_SET_GCL_DEBUG, a->debug, b->debug},
             {IPU_SET_GCL_TOPO_PPN, a->topo_ppn, b->topo_ppn},
             {IPU_SET_GCL_SHM_NBUF, a->shm_nbuf, b->shm_nbuf},
             {IPU_SET_GCL_SHM_SLOT_BYTES, (long long)a->shm_slot, (long long)b->shm_slot},
             {IPU_SET_GCL_SEGMENT_BYTES, (long long)a->seg_bytes, (long long)b->seg_bytes}};
    size_t i = 0;
    while (i + 1 < sizeof v / sizeof v[0] && v[i].a == v[i].b)
        i++;
    snprintf(va, len, "%lld", v[i].a);
    snprintf(vb, len, "%lld", v[i].b);
    return ipu_setting_def(v[i].id)->name;
}

static gcl_status_t agree_settings(gcl_comm_t *c)
{
    gcl_ctx_t *ctx = c->ctx;
    shared_settings_t me, *all = calloc((size_t)c->size, sizeof(*all));
    if (all == NULL)
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_init: out of memory");
    memset(&me, 0, sizeof me);
    int ppn = 0;
    ipu_setting_int(IPU_SET_GCL_TOPO_PPN, &ppn);
    me.no_shm = ctx->no_shm;
    me.debug = ctx->debug;
    me.topo_ppn = ppn;
    for (int i = 0; i < GCL_COLL_COUNT; i++)
        me.forced[i] = ctx->forced[i];
    me.seg_bytes = ctx->seg_bytes;
    me.shm_slot = ctx->shm_slot;
    int nbuf = 0;
    ipu_setting_int(IPU_SET_GCL_SHM_NBUF, &nbuf); /* as gcl_shm_open reads it */
    me.shm_nbuf = nbuf;
    for (int i = 0; i < GCL_COLL_COUNT && ctx->env_err != GCL_OK && !me.invalid; i++)
        if (ctx->forced[i] == GCL_FORCED_INVALID)
            me.invalid = 1 + i;
    if (ctx->env_err != GCL_OK && !me.invalid)
        me.invalid = 1 + GCL_COLL_COUNT; /* not an algorithm's: named by its own rank only */
    gcl_status_t st = gcl_comm_allgather_internal(c, GCL_SCOPE_INTERNAL, &me, all, sizeof me);
    if (st == GCL_OK && me.invalid)
        st = gcl_set_error(ctx->env_err, "%s", ctx->env_msg);
    for (int j = 0; st == GCL_OK && j < c->size; j++)
        if (all[j].invalid)
            st = gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_init: %s on rank %d is not valid there (its own error "
                               "says why): set it alike, and valid, on every rank",
                               all[j].invalid <= GCL_COLL_COUNT
                                   ? ipu_setting_def((ipu_setting_id_t)(IPU_SET_GCL_ALLREDUCE_ALGO +
                                                                        all[j].invalid - 1))->name
                                   : "a GCL_ setting", j);
    for (int j = 1; st == GCL_OK && j < c->size; j++)
        if (memcmp(&all[0], &all[j], sizeof me) != 0) {
            char v0[32], vj[32];
            const char *name = first_difference(&all[0], &all[j], v0, vj, sizeof v0);
            st = gcl_set_error(GCL_ERR_MISMATCH, "gcl_init: %s is %s on rank %d but %s on rank 0: set it alike "
                               "on every rank (it chooses how the collectives run)", name, vj, j, v0);
        }
    free(all);
    return st;
}

static gcl_status_t init_common(gcl_ctx_t *ctx, const gcl_init_params_t *params, gcl_comm_t **world)
{
    ctx->rank = ipu_transport_rank(ctx->tp);
    ctx->size = ipu_transport_size(ctx->tp);
    ipu_status_t is = ipu_lost_open(ctx->tp, -1, &ctx->lost); /* notices, no pings */
    if (is != IPU_OK) {
        ctx_free(ctx);
        return gcl_from_ipu(is, "init (lost-rank notices)");
    }
    gcl_status_t st = topology(ctx);
    if (st != GCL_OK) {
        ctx_free(ctx);
        return st;
    }
    int *w = malloc((size_t)ctx->size * sizeof(int));
    gcl_comm_t *c = NULL;
    if (w) {
        for (int i = 0; i < ctx->size; i++)
            w[i] = i;
        c = gcl_comm_new(ctx, ctx->size, w, ctx->rank);
        free(w);
    }
    if (c == NULL) {
        ctx_free(ctx);
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_init: out of memory");
    }
    c->is_world = 1;
    c->id = 0;
    c->sub_id = 1;
    ctx->used_ids[0] |= 3;
    /* never a communicator's: its internal tags' top values are the
     * transport's control tags (the notices') */
    ctx->used_ids[(GCL_MAX_IDS - 1) / 64] |= UINT64_C(1) << ((GCL_MAX_IDS - 1) % 64);
    c->timeout_s = ctx->timeout_s;
    (void)params;
    st = gcl_comm_topology(c);
    if (st == GCL_OK)
        st = agree_settings(c);
    if (st != GCL_OK) {
        destroy_world(c);
        return st;
    }
    /* GCL_YIELD_WHEN_IDLE=1 / 0 forces; by default waits yield on every
     * poll only when this host runs more ranks than it has cores */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    ipu_setting_bool(IPU_SET_GCL_YIELD_WHEN_IDLE, &ctx->yield_always); /* -1: auto */
    ctx->yield_always = ctx->yield_always >= 0 ? ctx->yield_always : cpus > 0 && c->local_size > cpus;
    gcl_comm_shm_eager(c);
    gcl_log(c, GCL_LOG_INFO, "libgcl %s: %d rank%s on %d host%s, transport %s", gcl_version_string(),
            ctx->size, ctx->size == 1 ? "" : "s", ctx->nhosts, ctx->nhosts == 1 ? "" : "s",
            ipu_transport_kind_name(ctx->tp));
    if (!live_world(c, 1)) {
        destroy_world(c);
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_init: out of memory");
    }
    *world = c;
    return GCL_OK;
}

static gcl_status_t ctx_new(const gcl_init_params_t *params, gcl_ctx_t **out, ipu_transport_params_t *tp)
{
    gcl_ctx_t *ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL)
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_init: out of memory");
    ctx->timeout_s = 60;
    ipu_transport_params_init(tp);
    if (params && (params->field_mask & GCL_INIT_FIELD_TIMEOUT))
        ctx->timeout_s = params->timeout_s;
    if (params && (params->field_mask & GCL_INIT_FIELD_TRANSPORT)) {
        if (params->transport != GCL_TRANSPORT_UCX && params->transport != GCL_TRANSPORT_MPI) {
            free(ctx);
            return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_init: unknown transport %d", (int)params->transport);
        }
        tp->kind = params->transport == GCL_TRANSPORT_MPI ? IPU_TRANSPORT_MPI : IPU_TRANSPORT_UCX;
    }
    /* libgcl bounds waits itself; the transport's own bound is not used */
    tp->timeout_s = ctx->timeout_s > 0 ? ctx->timeout_s : 1e9;
    /* a setting this rank cannot read fails init on every rank, at
     * agree_settings: failing here would leave the others waiting in the
     * transport's bootstrap, or pair this rank's next init with theirs */
    gcl_status_t st = read_env(ctx);
    if (st != GCL_OK) {
        ctx->env_err = st;
        snprintf(ctx->env_msg, sizeof ctx->env_msg, "%s", gcl_last_error());
    }
    *out = ctx;
    return GCL_OK;
}

/* Whether p is a predefined communicator itself rather than a pointer to
 * one (Open MPI's MPI_Comm is a pointer, so gcl_init_mpi(MPI_COMM_WORLD,
 * ...) compiles). */
static int is_comm_value(const void *p)
{
#ifdef OMPI_MAJOR_VERSION
    return p == (const void *)MPI_COMM_WORLD || p == (const void *)MPI_COMM_SELF;
#else
    (void)p;
    return 0;
#endif
}

gcl_status_t gcl_init_mpi(const void *mpi_comm, const gcl_init_params_t *params, gcl_comm_t **world)
{
    if (mpi_comm == NULL || world == NULL)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_init_mpi: NULL communicator or output");
    if (is_comm_value(mpi_comm))
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_init_mpi: pass a pointer to the MPI_Comm "
                             "(&comm), not the communicator; or call gcl_init_mpi_comm() of "
                             "<gcl/gcl_mpi.h>");
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_init_mpi: MPI is not initialised");
    gcl_ctx_t *ctx;
    ipu_transport_params_t tp;
    gcl_status_t st = ctx_new(params, &ctx, &tp);
    if (st != GCL_OK)
        return st;
    ipu_status_t is = ipu_transport_open(*(const MPI_Comm *)mpi_comm, &tp, &ctx->tp);
    if (is != IPU_OK) {
        free(ctx);
        return gcl_from_ipu(is, "init_mpi");
    }
    return init_common(ctx, params, world);
}

gcl_status_t gcl_init_mpi_comm(MPI_Comm comm, const gcl_init_params_t *params, gcl_comm_t **world)
{
    return gcl_init_mpi(&comm, params, world);
}

gcl_status_t gcl_init_oob(const gcl_oob_t *oob, const gcl_init_params_t *params, gcl_comm_t **world)
{
    if (oob == NULL || world == NULL || oob->allgather == NULL || oob->size <= 0 || oob->rank < 0 ||
        oob->rank >= oob->size)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_init_oob: bad out-of-band description");
    gcl_ctx_t *ctx;
    ipu_transport_params_t tp;
    gcl_status_t st = ctx_new(params, &ctx, &tp);
    if (st != GCL_OK)
        return st;
    if (tp.kind != IPU_TRANSPORT_UCX) {
        free(ctx);
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_init_oob: the MPI transport needs gcl_init_mpi");
    }
    ipu_bootstrap_t b = {.rank = oob->rank, .size = oob->size, .allgather = oob->allgather, .arg = oob->arg};
    ipu_status_t is = ipu_transport_open_oob(&b, &tp, &ctx->tp);
    if (is != IPU_OK) {
        free(ctx);
        return gcl_from_ipu(is, "init_oob");
    }
    return init_common(ctx, params, world);
}

void gcl_finalize(gcl_comm_t *world)
{
    if (world == NULL)
        return;
    if (!live_world(world, 0)) {
        gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_finalize: not a live world communicator "
                      "(finalized already, or a sub-communicator: gcl_comm_destroy it)");
        return;
    }
    destroy_world(world);
}
