/* ipu-exec status codes: one type for the whole project (UCX's ucs_status_t
 * convention): 0 is success, errors are negative. MPI and UCX codes are
 * translated only in transport/. */
#ifndef IPU_COMMON_STATUS_H
#define IPU_COMMON_STATUS_H

typedef enum {
    IPU_OK               =  0,
    IPU_ERR_INVALID_ARG  = -1, /* a caller passed a bad value (usage error) */
    IPU_ERR_NO_MEMORY    = -2, /* malloc/mmap failed or device capacity exceeded */
    IPU_ERR_IO           = -3, /* a file could not be opened, read or written */
    IPU_ERR_INVALID_MODEL= -4, /* model file is malformed or inconsistent */
    IPU_ERR_UNSUPPORTED  = -5, /* op, opset, dtype or attribute not implemented */
    IPU_ERR_SHAPE        = -6, /* shapes or dtypes do not agree */
    IPU_ERR_INPUT        = -7, /* a user-supplied input tensor is wrong */
    IPU_ERR_MISMATCH     = -8, /* --check: outputs differ from the reference */
    IPU_ERR_INTERNAL     = -9, /* a bug: should never happen */
    IPU_ERR_TRANSPORT    = -10,/* a peer or the network failed */
    IPU_ERR_TIMED_OUT    = -11,
    IPU_ERR_MESSAGE_SIZE = -12,/* a message received is longer or shorter than
                                * the receive expected (transport) */
} ipu_status_t;

/* A constant, static string naming the status (never NULL). */
const char *ipu_status_string(ipu_status_t status);

/* Record the message describing the error just detected and return status.
 * The message is kept per thread until the next call; it is written once,
 * where the error is detected, and printed once, by the command line tool.
 * Usage: return ipu_error(IPU_ERR_IO, "%s: %s", path, strerror(errno));
 * An argument may be ipu_error_message() (to put context before it). The
 * message is one line: a control byte in it (a newline in a name read from
 * a model file) is recorded as \xNN. */
ipu_status_t ipu_error(ipu_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Put "prefix: " before the message recorded last (naming the file an error
 * came from where the code that found it did not know it); returns status. */
ipu_status_t ipu_error_prefix(ipu_status_t status, const char *prefix);

/* bytes for a message, readable at any size: "40.6 MiB", "1.0 KiB", "100 B";
 * writes buf (IPU_BYTES_STR_LEN chars suffice) and returns it. */
#define IPU_BYTES_STR_LEN 32
const char *ipu_bytes_str(unsigned long long bytes, char *buf);

/* The last message recorded by ipu_error() in this thread ("" if none). */
const char *ipu_error_message(void);

/* Exit code for a status, as the command line tool uses it: 0 for IPU_OK,
 * 1 for IPU_ERR_MISMATCH (numerical check failed), 2 for bad input or usage
 * (model, input, unsupported), 3 for internal/transport failures. */
int ipu_status_exit_code(ipu_status_t status);

#endif
