/* Launcher detection: what the launcher's environment says of this process. */
#include "common/launcher.h"

#include <stdlib.h>

ipu_launcher_t ipu_launcher(void)
{
    static const char *const rank_vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK"};
    ipu_launcher_t l = {getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMIX_RANK") != NULL, -1};
    for (size_t i = 0; l.rank < 0 && i < sizeof(rank_vars) / sizeof(rank_vars[0]); i++) {
        const char *e = getenv(rank_vars[i]);
        char *end;
        long r = e ? strtol(e, &end, 10) : -1;
        if (e && end != e && !*end && r >= 0 && r <= 1000000000)
            l.rank = (int)r;
    }
    return l;
}
