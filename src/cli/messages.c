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

int cli_usage_error(const char *fmt, const char *arg)
{
    int rank = cli_launcher_rank();
    if (rank > 0) {
        /* every rank parsed the same command line: rank 0 says it. Give it
         * time to: the launcher ends the job when the first rank exits, and
         * could stop rank 0 before it printed */
        sleep(2);
        return 2;
    }
    char msg[2048];
    snprintf(msg, sizeof(msg), fmt, arg);
    cli_err_line(CLI_PROG ": %s; see " CLI_PROG " --help", msg);
    return 2;
}

const char *cli_rank_tag(int rank)
{
    static char buf[32];
    snprintf(buf, sizeof(buf), " (rank %d)", rank);
    return buf;
}
