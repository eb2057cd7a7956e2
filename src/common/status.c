#include "common/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
    case IPU_ERR_MESSAGE_SIZE:  return "message size mismatch";
    }
    return "unknown status";
}

ipu_status_t ipu_error(ipu_status_t status, const char *fmt, ...)
{
    /* format aside first: an argument may be ipu_error_message() itself
     * (prefixing the last message), and vsnprintf into the buffer it reads
     * from wrote the prefix over the message's start ("rank 2, stage 2:
     * rank 2, stage 2: needs ...") */
    char msg[sizeof(last_error)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* names come from the files read (a node named "a\nb"): control bytes
     * are written as \xNN, so the message stays one line */
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)msg; *p && o + 1 < sizeof(last_error); p++) {
        if (*p >= 0x20 && *p != 0x7f) {
            last_error[o++] = (char)*p;
        } else if (o + 4 < sizeof(last_error)) {
            snprintf(last_error + o, 5, "\\x%02x", *p);
            o += 4;
        } else {
            break;
        }
    }
    last_error[o] = '\0';
    return status;
}

ipu_status_t ipu_error_prefix(ipu_status_t status, const char *prefix)
{
    return ipu_error(status, "%s: %s", prefix, last_error);
}

const char *ipu_bytes_str(unsigned long long bytes, char *buf)
{
    if (bytes >= (1ull << 20))
        snprintf(buf, IPU_BYTES_STR_LEN, "%.1f MiB", (double)bytes / (1 << 20));
    else if (bytes >= 1024)
        snprintf(buf, IPU_BYTES_STR_LEN, "%.1f KiB", (double)bytes / 1024);
    else
        snprintf(buf, IPU_BYTES_STR_LEN, "%llu B", bytes);
    return buf;
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
    case IPU_ERR_TIMED_OUT:
    case IPU_ERR_MESSAGE_SIZE: return 3;
    default:                  return 2;
    }
}
