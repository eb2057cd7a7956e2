/* Numbers on the command line and in the launcher's environment: integers
 * in a range and sizes with a K/M/G suffix (cli.h). */
#include "cli/cli.h"
#include "common/settings.h"

#include <stdint.h>
#include <stdlib.h>

int cli_parse_size(const char *s, size_t *out)
{
    unsigned long long v;
    if (ipu_parse_size(s, &v) != 0 || v < 1 || v > SIZE_MAX)
        return -1; /* at least a byte */
    *out = (size_t)v;
    return 0;
}

int cli_parse_int(const char *s, int lo, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > 1000000000)
        return -1;
    *out = (int)v;
    return 0;
}
