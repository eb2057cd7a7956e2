/* libgcl's errors: the thread's last error message (gcl_last_error), the
 * status names, the one translation of a transport status into libgcl's
 * (gcl_from_ipu), and the version. Needs nothing else of libgcl, so the
 * shared-memory path's own test links it alone. */
#include "collectives/errors.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[1024];

gcl_status_t gcl_set_error(gcl_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return st;
}

const char *gcl_last_error(void)
{
    return last_error;
}

gcl_status_t gcl_from_ipu(ipu_status_t st, const char *what)
{
    gcl_status_t g;
    switch (st) {
    case IPU_OK:              return GCL_OK;
    case IPU_ERR_INVALID_ARG: g = GCL_ERR_INVALID_ARG; break;
    case IPU_ERR_NO_MEMORY:   g = GCL_ERR_NO_MEMORY; break;
    case IPU_ERR_TIMED_OUT:   g = GCL_ERR_TIMED_OUT; break;
    case IPU_ERR_UNSUPPORTED: g = GCL_ERR_UNSUPPORTED; break;
    case IPU_ERR_MESSAGE_SIZE: g = GCL_ERR_MESSAGE_SIZE; break;
    default:                  g = GCL_ERR_TRANSPORT; break;
    }
    char msg[900];
    snprintf(msg, sizeof(msg), "%s", ipu_error_message());
    return gcl_set_error(g, "gcl_%s: %s", what, msg);
}

const char *gcl_status_string(gcl_status_t status)
{
    switch (status) {
    case GCL_OK:              return "success";
    case GCL_IN_PROGRESS:     return "in progress";
    case GCL_ERR_INVALID_ARG: return "invalid argument";
    case GCL_ERR_NO_MEMORY:   return "out of memory";
    case GCL_ERR_TRANSPORT:   return "transport error";
    case GCL_ERR_TIMED_OUT:   return "timed out";
    case GCL_ERR_MISMATCH:    return "collective arguments differ between members";
    case GCL_ERR_UNSUPPORTED: return "unsupported";
    case GCL_ERR_NOT_MEMBER:  return "not a member";
    case GCL_ERR_MESSAGE_SIZE: return "message size differs from the receive count";
    }
    return "unknown status";
}

int gcl_version(void) { return GCL_VERSION; }

#define GCL_STR2(x) #x
#define GCL_STR(x) GCL_STR2(x)
const char *gcl_version_string(void)
{
    return GCL_STR(GCL_VERSION_MAJOR) "." GCL_STR(GCL_VERSION_MINOR) "." GCL_STR(GCL_VERSION_PATCH);
}
