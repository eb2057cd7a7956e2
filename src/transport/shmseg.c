/* Named shared-memory segments (shmseg.h). */
#include "transport/shmseg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned g_counter;

/* Open (create: exclusively, and reserve bytes) and map name. EEXIST gives
 * IPU_ERR_TRANSPORT, for the caller to try another name. */
static ipu_status_t open_map(const char *name, int create, size_t bytes, void **base)
{
    int fd = shm_open(name, create ? O_CREAT | O_EXCL | O_RDWR : O_RDWR, 0600);
    if (fd < 0)
        return ipu_error(errno == EEXIST ? IPU_ERR_TRANSPORT : IPU_ERR_NO_MEMORY, "shm_open(%s): %s", name,
                         strerror(errno));
    if (create) {
        int rc = ftruncate(fd, (off_t)bytes) != 0 ? errno : posix_fallocate(fd, 0, (off_t)bytes);
        if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) {
            close(fd);
            shm_unlink(name);
            return ipu_error(IPU_ERR_NO_MEMORY, "reserving %zu bytes of shared memory (%s): %s", bytes, name,
                             strerror(rc));
        }
    } else {
        struct stat st;
        if (fstat(fd, &st) != 0 || (size_t)st.st_size < bytes) {
            close(fd);
            return ipu_error(IPU_ERR_NO_MEMORY, "%s holds fewer than the %zu bytes expected", name, bytes);
        }
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) {
        if (create)
            shm_unlink(name);
        return ipu_error(IPU_ERR_NO_MEMORY, "mmap of %zu bytes (%s): %s", bytes, name, strerror(e));
    }
    *base = p;
    return IPU_OK;
}

ipu_status_t ipu_shmseg_create(const char *prefix, size_t bytes, char *name, void **base)
{
    ipu_status_t st = IPU_ERR_TRANSPORT;
    for (int tries = 0; tries < 16 && st == IPU_ERR_TRANSPORT; tries++) {
        snprintf(name, IPU_SHMSEG_NAME_MAX, "/%s-%d-%u", prefix, (int)getpid(),
                 __atomic_fetch_add(&g_counter, 1, __ATOMIC_RELAXED));
        st = open_map(name, 1, bytes, base);
    }
    return st;
}

ipu_status_t ipu_shmseg_attach(const char *name, size_t bytes, void **base)
{
    return open_map(name, 0, bytes, base);
}
