/* libgcl's lost-rank notices (gcl_internal.h, gcl_ctx_notice): once a rank
 * is known lost, every later call of the context fails with that loss. */
#include "collectives/gcl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
