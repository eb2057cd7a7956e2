/* Shared-memory segments between the processes of one host, two kinds:
 *
 *  - named (shm_open(3)): one process creates and sizes a segment under a
 *    fresh name, the others attach by that name, and the creator unlinks
 *    the name once every member has attached, so that the memory goes with
 *    the last unmap and nothing is left in /dev/shm (unless a process dies
 *    in between). libgcl's segment (collectives/shm_seg.c) uses them.
 *  - anonymous (memfd_create(2)): the creator keeps the segment's fd open
 *    while the others open it through /proc/PID/fd/FD (the access that
 *    process_vm_readv needs too: the same user, ptrace read access), then
 *    closes it; nothing is ever named, so nothing is left whatever happens
 *    to the processes. The pipeline's stage links (pipeline/links_shm.c)
 *    use them. */
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

/* Create an anonymous segment of bytes (label: its name in /proc/PID/maps),
 * reserved as above, mapped read-write at *base; *fd: its descriptor, for
 * ipu_shmseg_attach_fd in the other processes until the creator closes it.
 * Errors: IPU_ERR_NO_MEMORY (memfd_create, the reservation or mmap failed;
 * the message says which and why). On error nothing is left open. */
ipu_status_t ipu_shmseg_create_anon(const char *label, size_t bytes, int *fd, void **base);

/* Attach the anonymous segment that process pid (in this PID namespace)
 * holds open as fd, which must hold at least bytes, mapped read-write at
 * *base. Errors: IPU_ERR_TRANSPORT (no such process or descriptor here, or
 * no access to it), IPU_ERR_NO_MEMORY (the segment is smaller, mmap
 * failed); the message says which. */
ipu_status_t ipu_shmseg_attach_fd(int pid, int fd, size_t bytes, void **base);

#endif
