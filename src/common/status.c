#include "common/status.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[1024];

const char *ipu_status_string(ipu_status_t status)
{
    switch (status) {
    case IPU_OK:                return "success";
    case IPU_ERR_INVALID_ARG:   return "invalid argument";
    case IPU_ERR_NO_MEMORY:     return "out of memory";
    case IPU_ERR_IO:            return "input/output error";
    case IPU_ERR_INVALID_MODEL: return "invalid model";
    case IPU_ERR_UNSUPPORTED:   return "unsupported";
    case IPU_ERR_SHAPE:         return "shape or dtype mismatch";
    case IPU_ERR_INPUT:         return "invalid input tensor";
    case IPU_ERR_MISMATCH:      return "output mismatch";
    case IPU_ERR_INTERNAL:      return "internal error";
    case IPU_ERR_TRANSPORT:     return "transport error";
    case IPU_ERR_TIMED_OUT:     return "timed out";
    }
    return "unknown status";
}

ipu_status_t ipu_error(ipu_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return status;
}

ipu_status_t ipu_error_prefix(ipu_status_t status, const char *prefix)
{
    char msg[sizeof(last_error)];
    snprintf(msg, sizeof(msg), "%s", last_error);
    return ipu_error(status, "%s: %s", prefix, msg);
}

const char *ipu_error_message(void)
{
    return last_error;
}

int ipu_status_exit_code(ipu_status_t status)
{
    switch (status) {
    case IPU_OK:              return 0;
    case IPU_ERR_MISMATCH:    return 1;
    case IPU_ERR_INTERNAL:
    case IPU_ERR_TRANSPORT:
    case IPU_ERR_TIMED_OUT:   return 3;
    default:                  return 2;
    }
}
