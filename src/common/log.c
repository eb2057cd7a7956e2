#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ipu_log_level_current = IPU_LOG_WARN;
static int log_rank = -1;

void ipu_log_init(int rank)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    const char *env = getenv("IPU_EXEC_LOG_LEVEL");
    log_rank = rank;
    if (env == NULL)
        return;
    for (int i = 0; i < 4; i++)
        if (strcmp(env, names[i]) == 0)
            ipu_log_level_current = i;
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
    fprintf(stderr, "[ipu-exec:%d] %-5s %s:%d %s\n", log_rank, tags[level],
            base ? base + 1 : file, line, msg);
}
