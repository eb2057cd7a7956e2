/* Shared-memory segments, named and anonymous (shmseg.h). */
#include "transport/shmseg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned g_counter;

/* Reserve bytes of the new segment fd (what: its name, for messages). */
static ipu_status_t reserve(int fd, size_t bytes, const char *what)
{
    int rc = ftruncate(fd, (off_t)bytes) != 0 ? errno : posix_fallocate(fd, 0, (off_t)bytes);
    if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL)
        return ipu_error(IPU_ERR_NO_MEMORY, "reserving %zu bytes of shared memory (%s): %s", bytes, what,
                         strerror(rc));
    return IPU_OK;
}

/* Map bytes of segment fd, which (unless created here) must hold them; fd
 * is closed either way. */
static ipu_status_t map_fd(int fd, int created, size_t bytes, const char *what, void **base)
{
    struct stat st;
    if (!created && (fstat(fd, &st) != 0 || (size_t)st.st_size < bytes)) {
        close(fd);
        return ipu_error(IPU_ERR_NO_MEMORY, "%s holds fewer than the %zu bytes expected", what, bytes);
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED)
        return ipu_error(IPU_ERR_NO_MEMORY, "mmap of %zu bytes (%s): %s", bytes, what, strerror(e));
    *base = p;
    return IPU_OK;
}

/* Open (create: exclusively, and reserve bytes) and map name. EEXIST gives
 * IPU_ERR_TRANSPORT, for the caller to try another name. */
static ipu_status_t open_map(const char *name, int create, size_t bytes, void **base)
{
    int fd = shm_open(name, create ? O_CREAT | O_EXCL | O_RDWR : O_RDWR, 0600);
    if (fd < 0)
        return ipu_error(errno == EEXIST ? IPU_ERR_TRANSPORT : IPU_ERR_NO_MEMORY, "shm_open(%s): %s", name,
                         strerror(errno));
    ipu_status_t st = create ? reserve(fd, bytes, name) : IPU_OK;
    if (st != IPU_OK)
        close(fd);
    else
        st = map_fd(fd, create, bytes, name, base);
    if (st != IPU_OK && create)
        shm_unlink(name);
    return st;
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

ipu_status_t ipu_shmseg_create_anon(const char *label, size_t bytes, int *fd, void **base)
{
    int f = memfd_create(label, MFD_CLOEXEC);
    if (f < 0)
        return ipu_error(IPU_ERR_NO_MEMORY, "memfd_create(%s): %s", label, strerror(errno));
    ipu_status_t st = reserve(f, bytes, label);
    int keep = st == IPU_OK ? fcntl(f, F_DUPFD_CLOEXEC, 0) : -1; /* map_fd closes the one it maps */
    if (st == IPU_OK && keep < 0)
        st = ipu_error(IPU_ERR_NO_MEMORY, "dup of the segment %s: %s", label, strerror(errno));
    if (st != IPU_OK) {
        close(f);
        return st;
    }
    if ((st = map_fd(f, 1, bytes, label, base)) != IPU_OK) {
        close(keep);
        return st;
    }
    *fd = keep;
    return IPU_OK;
}

ipu_status_t ipu_shmseg_attach_fd(int pid, int fd, size_t bytes, void **base)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, fd);
    int f = open(path, O_RDWR | O_CLOEXEC);
    if (f < 0)
        return ipu_error(IPU_ERR_TRANSPORT, "open(%s): %s", path, strerror(errno));
    return map_fd(f, 0, bytes, path, base);
}
