/* libgcl's clock: seconds on CLOCK_MONOTONIC, for timeouts and for the
 * shared-memory path's timing of its own ops. Never fails. */
#ifndef GCL_CLOCK_H
#define GCL_CLOCK_H

#include <time.h>

static inline double gcl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
