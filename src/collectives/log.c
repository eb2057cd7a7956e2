/* libgcl's log lines (GCL_LOG=info|debug, on stderr). */
#include "collectives/gcl_internal.h"

#include <stdarg.h>
#include <stdio.h>

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
