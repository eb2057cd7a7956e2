/* How the tool speaks under a launcher: this process's rank from the
 * launcher's environment, one-write error lines that do not interleave
 * between ranks, usage errors said once, the " (rank R)" tag (cli.h). */
#include "cli/cli.h"
#include "common/launcher.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int cli_launcher_rank(void)
{
    return ipu_launcher().rank;
}

void cli_err_line(const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof(buf) - 1 ? (size_t)n : sizeof(buf) - 2;
    buf[len++] = '\n';
    fflush(stdout);
    /* one write: lines of several ranks on one stream do not interleave */
    for (size_t off = 0; off < len;) {
        ssize_t w = write(STDERR_FILENO, buf + off, len - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
}

static char g_usage[2048];

int cli_usage_error(const char *fmt, const char *arg)
{
    snprintf(g_usage, sizeof(g_usage), fmt, arg);
    /* under a launcher main says it after MPI_Init: in the start-up
     * agreement when there are other ranks (a usage error of one rank is
     * said by rank 0, with its rank), else itself */
    if (!ipu_launcher().launched)
        cli_usage_print();
    return 2;
}

const char *cli_usage_message(void)
{
    return g_usage;
}

void cli_usage_print(void)
{
    cli_err_line(CLI_PROG ": %s; see " CLI_PROG " --help", g_usage);
}

const char *cli_rank_tag(int rank)
{
    static char buf[32];
    snprintf(buf, sizeof(buf), " (rank %d)", rank);
    return buf;
}
