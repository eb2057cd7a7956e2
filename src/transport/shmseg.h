/* Named POSIX shared-memory segments between the processes of one host
 * (shm_open(3), mmap(2)): one process creates and sizes a segment under a
 * fresh name, the others attach by that name, and the creator unlinks the
 * name once every member has attached, so that the memory goes with the
 * last unmap and nothing is left in /dev/shm (unless a process dies in
 * between). libgcl's segment (collectives/shm_seg.c) and the pipeline's
 * stage links (pipeline/links_shm.c) use it. */
#ifndef IPU_TRANSPORT_SHMSEG_H
#define IPU_TRANSPORT_SHMSEG_H

#include "common/status.h"

#include <stddef.h>

#define IPU_SHMSEG_NAME_MAX 48 /* bytes of a name, its terminating NUL included */

/* Create a segment of bytes, mapped read-write at *base, named
 * "/PREFIX-PID-N" (N counts this process's segments; a name that exists
 * already, a stale one, is skipped, 16 tries) and its name written to name
 * (IPU_SHMSEG_NAME_MAX bytes). The pages are reserved (posix_fallocate), so
 * that a full /dev/shm fails here and not with SIGBUS at first touch.
 * Errors: IPU_ERR_NO_MEMORY (shm_open, the reservation or mmap failed; the
 * message names the call, the segment and the reason), IPU_ERR_TRANSPORT
 * (16 names in a row existed). On error nothing is left mapped or named. */
ipu_status_t ipu_shmseg_create(const char *prefix, size_t bytes, char *name, void **base);

/* Attach segment name, which must hold at least bytes, mapped read-write at
 * *base. Errors: IPU_ERR_NO_MEMORY (shm_open or mmap failed, or the segment
 * is smaller; the message says which). */
ipu_status_t ipu_shmseg_attach(const char *name, size_t bytes, void **base);

#endif
