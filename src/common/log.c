#include "common/log.h"

#include "common/settings.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ipu_log_level_current = IPU_LOG_WARN;
static int log_rank = -1;

void ipu_log_init(int rank)
{
    log_rank = rank;
    ipu_setting_choice(IPU_SET_IPU_EXEC_LOG_LEVEL, &ipu_log_level_current); /* error..debug: IPU_LOG_* */
}

void ipu_log_emit(ipu_log_level_t level, const char *file, int line, const char *fmt, ...)
{
    static const char *tags[] = {"ERROR", "WARN", "INFO", "DEBUG"};
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    const char *base = strrchr(file, '/');
    char who[32] = "ipu-exec"; /* a rank only under MPI */
    if (log_rank >= 0)
        snprintf(who, sizeof(who), "ipu-exec:%d", log_rank);
    fprintf(stderr, "[%s] %-5s %s:%d %s\n", who, tags[level], base ? base + 1 : file, line, msg);
}
