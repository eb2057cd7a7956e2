/* Numbers on the command line and in the launcher's environment: integers
 * in a range and sizes with a K/M/G suffix (cli.h). */
#include "cli/cli.h"

#include <stdlib.h>

int cli_parse_size(const char *s, size_t *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v <= 0)
        return -1;
    switch (*end) {
    case 'k': case 'K': v *= 1024; end++; break;
    case 'm': case 'M': v *= 1024 * 1024; end++; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
    default: break;
    }
    if (*end == 'i')
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    /* at least a byte, and below 2^64: converting a larger double to size_t
     * is undefined (17179869184G came out as 0, the default) */
    if (*end != '\0' || v < 1 || v >= 18446744073709551616.0)
        return -1;
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
