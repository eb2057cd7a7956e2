/* libgcl's errors (errors.c): every function of libgcl returns a
 * gcl_status_t (0 ok, negative errors) and records its message with
 * gcl_set_error for gcl_last_error(). The transport's ipu_status_t is
 * translated in one place, gcl_from_ipu. */
#ifndef GCL_ERRORS_H
#define GCL_ERRORS_H

#include "gcl/gcl.h"
#include "common/status.h"

/* Record this thread's error message (printf format); returns st. */
gcl_status_t gcl_set_error(gcl_status_t st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Translate a transport status: GCL_OK for IPU_OK, else the matching
 * gcl_status_t (GCL_ERR_TRANSPORT for any other) with the message
 * "gcl_<what>: <the transport's message>". */
gcl_status_t gcl_from_ipu(ipu_status_t st, const char *what);

#endif
