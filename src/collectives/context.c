/* libgcl context: bootstrap (gcl_init_mpi over an MPI communicator,
 * gcl_init_oob over an allgather callback, as UCC's context), one shared
 * transport, the host topology from the transport's host names, the world
 * communicator; errors, version, logging. */
#include "collectives/gcl_internal.h"
#include "common/settings.h"

#include <stdarg.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

static _Thread_local char last_error[1024];

gcl_status_t gcl_set_error(gcl_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return st;
}

const char *gcl_last_error(void)
{
    return last_error;
}

gcl_status_t gcl_from_ipu(ipu_status_t st, const char *what)
{
    gcl_status_t g;
    switch (st) {
    case IPU_OK:              return GCL_OK;
    case IPU_ERR_INVALID_ARG: g = GCL_ERR_INVALID_ARG; break;
    case IPU_ERR_NO_MEMORY:   g = GCL_ERR_NO_MEMORY; break;
    case IPU_ERR_TIMED_OUT:   g = GCL_ERR_TIMED_OUT; break;
    case IPU_ERR_UNSUPPORTED: g = GCL_ERR_UNSUPPORTED; break;
    case IPU_ERR_MESSAGE_SIZE: g = GCL_ERR_MESSAGE_SIZE; break;
    default:                  g = GCL_ERR_TRANSPORT; break;
    }
    char msg[900];
    snprintf(msg, sizeof(msg), "%s", ipu_error_message());
    return gcl_set_error(g, "gcl_%s: %s", what, msg);
}

const char *gcl_status_string(gcl_status_t status)
{
    switch (status) {
    case GCL_OK:              return "success";
    case GCL_IN_PROGRESS:     return "in progress";
    case GCL_ERR_INVALID_ARG: return "invalid argument";
    case GCL_ERR_NO_MEMORY:   return "out of memory";
    case GCL_ERR_TRANSPORT:   return "transport error";
    case GCL_ERR_TIMED_OUT:   return "timed out";
    case GCL_ERR_MISMATCH:    return "collective arguments differ between members";
    case GCL_ERR_UNSUPPORTED: return "unsupported";
    case GCL_ERR_NOT_MEMBER:  return "not a member";
    case GCL_ERR_MESSAGE_SIZE: return "message size differs from the receive count";
    }
    return "unknown status";
}

int gcl_version(void) { return GCL_VERSION; }

#define GCL_STR2(x) #x
#define GCL_STR(x) GCL_STR2(x)
const char *gcl_version_string(void)
{
    return GCL_STR(GCL_VERSION_MAJOR) "." GCL_STR(GCL_VERSION_MINOR) "." GCL_STR(GCL_VERSION_PATCH);
}

size_t gcl_dtype_size(gcl_dtype_t dtype)
{
    switch (dtype) {
    case GCL_FLOAT32: case GCL_INT32: return 4;
    case GCL_FLOAT64: case GCL_INT64: return 8;
    case GCL_FLOAT16: case GCL_BFLOAT16: return 2;
    case GCL_INT8: case GCL_UINT8: return 1;
    default: return 0;
    }
}

void gcl_log(const gcl_comm_t *c, int level, const char *fmt, ...)
{
    if (c == NULL || level > c->ctx->log_level)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "[gcl %s rank %d] comm %u rank %d/%d: %s\n", level == GCL_LOG_DEBUG ? "debug" : "info",
            c->ctx->rank, c->id, c->rank, c->size, msg);
}

void gcl_idle(const gcl_ctx_t *ctx, unsigned spin)
{
    if (ctx->yield_always || (spin & 255) == 255)
        sched_yield();
#if defined(__x86_64__) || defined(__i386__)
    else
        __builtin_ia32_pause(); /* leave the core's pipeline to an SMT sibling */
#endif
}

static int read_env(gcl_ctx_t *ctx)
{
    ipu_setting_choice(IPU_SET_GCL_LOG, &ctx->log_level); /* quiet, info, debug: GCL_LOG_* */
    ipu_setting_bool(IPU_SET_GCL_DEBUG, &ctx->debug);
    ipu_setting_size(IPU_SET_GCL_SEGMENT_BYTES, &ctx->seg_bytes);
    ipu_setting_bool(IPU_SET_GCL_NO_SHM, &ctx->no_shm);
    return gcl_decision_init(ctx);
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

gcl_status_t gcl_ctx_notice(gcl_ctx_t *ctx, const char *what)
{
    if (ctx->heard == NULL) {
        if (ctx->lost == NULL || (++ctx->notice_polls & 63) != 0 || ipu_lost_poll(ctx->lost) == IPU_OK)
            return GCL_OK;
        ctx->heard = strdup(ipu_error_message());
        if (ctx->heard == NULL)
            return gcl_set_error(GCL_ERR_TRANSPORT, "gcl_%s: a rank was lost; the job cannot continue", what);
    }
    return gcl_set_error(GCL_ERR_TRANSPORT, "gcl_%s: %s", what, ctx->heard);
}

void gcl_ctx_tell(gcl_ctx_t *ctx, int world_rank)
{
    if (ctx->lost == NULL || ctx->told)
        return;
    for (int p = 0; world_rank < 0 && p < ctx->size; p++)
        if (p != ctx->rank && ipu_transport_peer_failed(ctx->tp, p))
            world_rank = p;
    if (world_rank < 0 || world_rank >= ctx->size || world_rank == ctx->rank)
        return; /* not a lost peer (a timeout, a reset connection) */
    ctx->told = 1;
    ipu_lost_tell_of(ctx->lost, world_rank);
    if (ctx->heard == NULL) {
        char m[300];
        snprintf(m, sizeof(m), "lost rank %d on host %s; the job cannot continue", world_rank,
                 ipu_transport_host(ctx->tp, world_rank));
        ctx->heard = strdup(m);
    }
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
    if (st != GCL_OK) {
        gcl_finalize(c);
        return st;
    }
    /* GCL_YIELD_WHEN_IDLE=1 / 0 forces; by default waits yield on every
     * poll only when this host runs more ranks than it has cores */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    ipu_setting_bool(IPU_SET_GCL_YIELD_WHEN_IDLE, &ctx->yield_always); /* -1: auto */
    ctx->yield_always = ctx->yield_always >= 0 ? ctx->yield_always : cpus > 0 && c->local_size > cpus;
    gcl_comm_shm_eager(c);
    gcl_log(c, GCL_LOG_INFO, "libgcl %s: %d ranks on %d hosts, transport %s", gcl_version_string(), ctx->size,
            ctx->nhosts, ipu_transport_kind_name(ctx->tp));
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
    gcl_status_t st = read_env(ctx);
    if (st != GCL_OK) {
        free(ctx);
        return st;
    }
    *out = ctx;
    return GCL_OK;
}

gcl_status_t gcl_init_mpi(const void *mpi_comm, const gcl_init_params_t *params, gcl_comm_t **world)
{
    if (mpi_comm == NULL || world == NULL)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_init_mpi: NULL communicator or output");
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
    gcl_ctx_t *ctx = world->ctx;
    world->is_world = 0;
    gcl_comm_destroy(world);
    ctx_free(ctx);
}
