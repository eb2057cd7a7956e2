/* libgcl's decision table: which algorithm runs a collective, by message
 * size and group size, kept apart from the algorithms as Open MPI's
 * coll_tuned_decision_fixed.c is. Switch points follow Open MPI tuned and
 * UCC (docs/libgcl.md, "Algorithms"): recursive doubling for
 * small allreduce, Rabenseifner for medium, ring (segmented, pipelined) for
 * large; k-nomial trees for small broadcast/reduce; the shared-memory path
 * whenever every member is on one host; hierarchical when the group spans
 * hosts with several members on a host.
 *
 * GCL_<COLL>_ALGO=name forces an algorithm (validated at init: an unknown
 * name is an error listing the valid ones); a forced algorithm that cannot
 * run on a communicator (shm across hosts, hierarchical on one host) falls
 * back to the table, logged at GCL_LOG=info. */
#include "collectives/gcl_internal.h"
#include "common/settings.h"

#include <stdlib.h>
#include <string.h>

static const char *const alg_names[GCL_ALG_COUNT] = {
    [GCL_ALG_RECURSIVE_DOUBLING] = "recursive_doubling",
    [GCL_ALG_RABENSEIFNER] = "rabenseifner",
    [GCL_ALG_RING] = "ring",
    [GCL_ALG_HIERARCHICAL] = "hierarchical",
    [GCL_ALG_SHM] = "shm",
    [GCL_ALG_KNOMIAL] = "knomial",
    [GCL_ALG_RS_GATHER] = "reduce_scatter_gather",
    [GCL_ALG_RECURSIVE_HALVING] = "recursive_halving",
    [GCL_ALG_PAIRWISE] = "pairwise",
    [GCL_ALG_BRUCK] = "bruck",
    [GCL_ALG_SCATTER_ALLGATHER] = "scatter_allgather",
    [GCL_ALG_DISSEMINATION] = "dissemination",
};

/* the algorithms of each collective, -1 terminated */
static const int coll_algs[GCL_COLL_COUNT][7] = {
    [GCL_COLL_ALLREDUCE] = {GCL_ALG_RECURSIVE_DOUBLING, GCL_ALG_RABENSEIFNER, GCL_ALG_RING,
                            GCL_ALG_HIERARCHICAL, GCL_ALG_DISSEMINATION, GCL_ALG_SHM, -1},
    [GCL_COLL_REDUCE] = {GCL_ALG_KNOMIAL, GCL_ALG_RS_GATHER, GCL_ALG_DISSEMINATION, GCL_ALG_SHM, -1},
    [GCL_COLL_REDUCE_SCATTER] = {GCL_ALG_RING, GCL_ALG_RECURSIVE_HALVING, GCL_ALG_PAIRWISE, GCL_ALG_DISSEMINATION,
                                 GCL_ALG_SHM, -1},
    [GCL_COLL_ALLGATHER] = {GCL_ALG_RING, GCL_ALG_RECURSIVE_DOUBLING, GCL_ALG_BRUCK, GCL_ALG_DISSEMINATION,
                            GCL_ALG_SHM, -1},
    [GCL_COLL_BROADCAST] = {GCL_ALG_KNOMIAL, GCL_ALG_SCATTER_ALLGATHER, GCL_ALG_DISSEMINATION, GCL_ALG_SHM, -1},
    [GCL_COLL_ALLTOALL] = {GCL_ALG_PAIRWISE, GCL_ALG_DISSEMINATION, -1},
    [GCL_COLL_BARRIER] = {GCL_ALG_DISSEMINATION, GCL_ALG_SHM, -1},
};

static const char *const coll_names[GCL_COLL_COUNT] = {
    "allreduce", "reduce", "reduce_scatter", "allgather", "broadcast", "alltoall", "barrier",
};
static const ipu_setting_id_t settings[GCL_COLL_COUNT] = {
    IPU_SET_GCL_ALLREDUCE_ALGO, IPU_SET_GCL_REDUCE_ALGO,    IPU_SET_GCL_REDUCE_SCATTER_ALGO,
    IPU_SET_GCL_ALLGATHER_ALGO, IPU_SET_GCL_BROADCAST_ALGO, IPU_SET_GCL_ALLTOALL_ALGO,
    IPU_SET_GCL_BARRIER_ALGO,
};

const char *gcl_alg_name(gcl_alg_t a) { return a >= 0 && a < GCL_ALG_COUNT ? alg_names[a] : "?"; }
const char *gcl_coll_name(gcl_coll_t c) { return c >= 0 && c < GCL_COLL_COUNT ? coll_names[c] : "?"; }

gcl_status_t gcl_decision_init(gcl_ctx_t *ctx)
{
    for (int c = 0; c < GCL_COLL_COUNT; c++) {
        ctx->forced[c] = -1;
        int choice = 0; /* the table's "auto" or a name of alg_names */
        if (ipu_setting_choice(settings[c], &choice) >= 0) {
            for (int k = 0; coll_algs[c][k] >= 0; k++)
                if (!strcmp(ipu_setting_def(settings[c])->choices[choice], alg_names[coll_algs[c][k]]))
                    ctx->forced[c] = coll_algs[c][k];
            continue;
        }
        ctx->forced[c] = GCL_FORCED_INVALID;
        char valid[256] = "";
        for (int k = 0; coll_algs[c][k] >= 0; k++) {
            strcat(valid, k ? ", " : "");
            strcat(valid, alg_names[coll_algs[c][k]]);
        }
        return gcl_set_error(GCL_ERR_INVALID_ARG, "%s=%s: unknown algorithm; valid: auto, %s",
                             ipu_setting_def(settings[c])->name, ipu_setting_env(settings[c]), valid);
    }
    return GCL_OK;
}

/* shm possible: one host, several members, not known to have failed */
int gcl_shm_possible(const gcl_comm_t *c)
{
    return c->nhosts == 1 && c->size > 1 && c->shm_state >= 0 && !c->ctx->no_shm;
}

/* A forced "dissemination" (carried.c) gathers every member's input to
 * every member: up to this many bytes of it, beyond which it falls back. */
#define CARRIED_FORCED_MAX ((size_t)1 << 30)

static int applicable(const gcl_comm_t *c, gcl_coll_t coll, gcl_alg_t a, size_t bytes)
{
    switch (a) {
    case GCL_ALG_DISSEMINATION:
        return gcl_carried_bytes(c, coll, bytes) <= CARRIED_FORCED_MAX;
    case GCL_ALG_SHM:
        return gcl_shm_possible(c);
    case GCL_ALG_HIERARCHICAL:
        return !c->internal && c->nhosts > 1 && c->nhosts < c->size;
    case GCL_ALG_RECURSIVE_DOUBLING:
        return coll != GCL_COLL_ALLGATHER || gcl_is_pow2(c->size);
    case GCL_ALG_RECURSIVE_HALVING:
        return gcl_is_pow2(c->size);
    default:
        return 1;
    }
}

/* The fixed table. bytes: the whole array (see gcl_algorithm). */
static gcl_alg_t table(const gcl_comm_t *c, gcl_coll_t coll, size_t bytes)
{
    int p = c->size, shm = gcl_shm_possible(c), pow2 = gcl_is_pow2(p);
    /* small calls off shared memory: their data in the call check's rounds
     * (carried.c) rather than a round of the check's own before the
     * algorithm's messages; a power-of-two allreduce carries it in
     * recursive doubling, whose messages do not grow with p */
    int carried = !shm && coll != GCL_COLL_BARRIER && gcl_carried_bytes(c, coll, bytes) <= GCL_CHECK_CARRY_MAX &&
                  !(coll == GCL_COLL_ALLREDUCE && (pow2 || applicable(c, coll, GCL_ALG_HIERARCHICAL, bytes)));
    if (carried)
        return GCL_ALG_DISSEMINATION;
    switch (coll) {
    case GCL_COLL_ALLREDUCE:
        if (shm)
            return GCL_ALG_SHM;
        if (applicable(c, coll, GCL_ALG_HIERARCHICAL, bytes))
            return GCL_ALG_HIERARCHICAL;
        /* 2 ranks: one exchange (recursive doubling) against the ring's two
         * rounds for the same bytes; over UCX/TCP (libgcl's only transport
         * between hosts, docs/libgcl.md) the round costs more than the ring's
         * halved reduction up to 4 MiB (bench/results/libgcl-tuning.md) */
        if (p == 2)
            return bytes <= (4u << 20) ? GCL_ALG_RECURSIVE_DOUBLING : GCL_ALG_RING;
        if (bytes <= 8192)
            return GCL_ALG_RECURSIVE_DOUBLING;
        return bytes <= (1u << 20) ? GCL_ALG_RABENSEIFNER : GCL_ALG_RING;
    case GCL_COLL_REDUCE:
        if (shm)
            return GCL_ALG_SHM;
        return bytes <= (512u << 10) || p == 2 ? GCL_ALG_KNOMIAL : GCL_ALG_RS_GATHER;
    case GCL_COLL_REDUCE_SCATTER:
        if (shm)
            return GCL_ALG_SHM;
        if (bytes <= (64u << 10))
            return pow2 ? GCL_ALG_RECURSIVE_HALVING : GCL_ALG_PAIRWISE;
        return GCL_ALG_RING;
    case GCL_COLL_ALLGATHER:
        if (shm)
            return GCL_ALG_SHM;
        if (bytes <= (64u << 10))
            return pow2 ? GCL_ALG_RECURSIVE_DOUBLING : GCL_ALG_BRUCK;
        return GCL_ALG_RING;
    case GCL_COLL_BROADCAST:
        if (shm)
            return GCL_ALG_SHM;
        return bytes <= (256u << 10) || p <= 2 ? GCL_ALG_KNOMIAL : GCL_ALG_SCATTER_ALLGATHER;
    case GCL_COLL_ALLTOALL:
        return GCL_ALG_PAIRWISE;
    case GCL_COLL_BARRIER:
        return shm ? GCL_ALG_SHM : GCL_ALG_DISSEMINATION;
    default:
        return GCL_ALG_RING;
    }
}

gcl_alg_t gcl_decide(const gcl_comm_t *c, gcl_coll_t coll, size_t bytes)
{
    int f = c->ctx->forced[coll];
    if (f >= 0) {
        if (applicable(c, coll, (gcl_alg_t)f, bytes))
            return (gcl_alg_t)f;
        gcl_log(c, GCL_LOG_INFO, "%s=%s does not apply here; using the table",
                ipu_setting_def(settings[coll])->name, alg_names[f]);
    }
    return table(c, coll, bytes);
}

const char *gcl_algorithm(const gcl_comm_t *comm, gcl_coll_t coll, size_t bytes)
{
    if (comm == NULL || coll < 0 || coll >= GCL_COLL_COUNT)
        return "?";
    return alg_names[gcl_decide(comm, coll, bytes)];
}
