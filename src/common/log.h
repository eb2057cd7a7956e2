/* Logging: level, file:line and rank on every line (UCX LoggingStyle).
 * The level comes from IPU_EXEC_LOG_LEVEL (error, warn, info, debug; default
 * warn). Errors returned to callers are not logged here: see ipu_error(). */
#ifndef IPU_COMMON_LOG_H
#define IPU_COMMON_LOG_H

typedef enum { IPU_LOG_ERROR = 0, IPU_LOG_WARN, IPU_LOG_INFO, IPU_LOG_DEBUG } ipu_log_level_t;

extern int ipu_log_level_current; /* initialised from the environment */
void ipu_log_init(int rank);       /* reads IPU_EXEC_LOG_LEVEL; rank -1 if none */
void ipu_log_emit(ipu_log_level_t level, const char *file, int line,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#define ipu_log(level, ...) \
    do { if ((int)(level) <= ipu_log_level_current) \
             ipu_log_emit(level, __FILE__, __LINE__, __VA_ARGS__); } while (0)
#define ipu_warn(...)  ipu_log(IPU_LOG_WARN, __VA_ARGS__)
#define ipu_info(...)  ipu_log(IPU_LOG_INFO, __VA_ARGS__)
#define ipu_debug(...) ipu_log(IPU_LOG_DEBUG, __VA_ARGS__)

#endif
