/* ONNX external data (onnx.proto TensorProto.external_data, IR version >= 6;
 * docs/ExternalData.md of the ONNX repository): keys "location" (a path
 * relative to the model's folder), "offset" and "length" (decimal byte
 * counts), "checksum" (ignored). The bytes are memory-mapped read-only, so a
 * rank touches only the pages of the weights it uses.
 *
 * Paths are confined to the model's folder: absolute paths and ".."
 * components are refused, and the resolved path (symlinks followed, with
 * realpath) must lie inside the resolved folder. */
#include "graph/load_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Parse a non-negative decimal int64; 0 on success. */
static int parse_u63(const char *s, int64_t *out)
{
    if (s == NULL || *s == '\0')
        return -1;
    int64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        if (v > (INT64_MAX - (*p - '0')) / 10)
            return -1;
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return 0;
}

/* 1 if location has a ".." path component. */
static int has_dotdot(const char *loc)
{
    const char *p = loc;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 2 && p[0] == '.' && p[1] == '.')
            return 1;
        if (e == NULL)
            break;
        p = e + 1;
    }
    return 0;
}

ipu_status_t ipu_graph_keep_mapping(ipu_graph_t *g, void *addr, size_t len)
{
    ipu_mapping_t *nm = realloc(g->maps, (size_t)(g->n_maps + 1) * sizeof(*nm));
    if (nm == NULL) {
        munmap(addr, len);
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory recording a mapping");
    }
    g->maps = nm;
    g->maps[g->n_maps].addr = addr;
    g->maps[g->n_maps].len = len;
    g->n_maps++;
    return IPU_OK;
}

/* Resolve dir/loc and check it stays inside dir. *resolved is malloc'd. */
static ipu_status_t resolve_confined(const ipu_tp_ctx_t *c, const char *what,
                                     const char *loc, char **resolved)
{
    const char *hint = "external data must be a file inside the model's folder; "
                       "save the model with its data next to it";
    if (loc[0] == '/')
        return ipu_error(IPU_ERR_INVALID_MODEL,
                         "%s: %s: external data path '%s' is absolute, outside the model folder; %s",
                         c->file, what, loc, hint);
    if (has_dotdot(loc))
        return ipu_error(IPU_ERR_INVALID_MODEL,
                         "%s: %s: external data path '%s' contains '..', outside the model folder; %s",
                         c->file, what, loc, hint);
    size_t n = strlen(c->dir) + strlen(loc) + 2;
    char *full = malloc(n);
    if (full == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    snprintf(full, n, "%s/%s", c->dir, loc);
    char *rdir = realpath(c->dir, NULL);
    char *rfile = realpath(full, NULL);
    int err = errno;
    ipu_status_t st = IPU_OK;
    if (rdir == NULL) {
        st = ipu_error(IPU_ERR_IO, "%s: cannot resolve the model folder '%s': %s",
                       c->file, c->dir, strerror(errno));
    } else if (rfile == NULL) {
        st = ipu_error(IPU_ERR_IO, "%s: %s: cannot open external data file '%s': %s; "
                       "copy the data file next to the model",
                       c->file, what, full, strerror(err));
    } else {
        size_t dl = strlen(rdir);
        int inside = strncmp(rfile, rdir, dl) == 0 &&
                     (rfile[dl] == '/' || (dl == 1 && rdir[0] == '/'));
        if (!inside)
            st = ipu_error(IPU_ERR_INVALID_MODEL,
                           "%s: %s: external data path '%s' resolves to '%s', outside the model folder; %s",
                           c->file, what, loc, rfile, hint);
    }
    free(full);
    free(rdir);
    if (st != IPU_OK) {
        free(rfile);
        return st;
    }
    *resolved = rfile;
    return IPU_OK;
}

static ipu_status_t read_copy(const ipu_tp_ctx_t *c, const char *what, int fd,
                              const char *path, int64_t offset, size_t nbytes, void **data)
{
    ipu_tensor_t t = {.dtype = IPU_DTYPE_UINT8, .rank = 1, .dims = {(int64_t)nbytes}};
    ipu_status_t st = ipu_tensor_alloc(&t);
    if (st != IPU_OK)
        return st;
    size_t done = 0;
    while (done < nbytes) {
        ssize_t r = pread(fd, (char *)t.data + done, nbytes - done, (off_t)(offset + (int64_t)done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            free(t.data);
            return ipu_error(IPU_ERR_IO, "%s: %s: cannot read external data file '%s': %s",
                             c->file, what, path, r < 0 ? strerror(errno) : "unexpected end of file");
        }
        done += (size_t)r;
    }
    *data = t.data;
    return IPU_OK;
}

ipu_status_t ipu_extdata_load(const ipu_tp_ctx_t *c, const Onnx__TensorProto *tp,
                              const char *what, size_t nbytes, size_t align,
                              void **data, int *kind)
{
    const char *loc = NULL;
    int64_t offset = 0, length = -1;
    for (size_t k = 0; k < tp->n_external_data; k++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[k];
        const char *key = ipu_pbstr(e->key), *val = ipu_pbstr(e->value);
        if (strcmp(key, "location") == 0) {
            loc = val;
        } else if (strcmp(key, "offset") == 0 || strcmp(key, "length") == 0) {
            int64_t *dst = key[0] == 'o' ? &offset : &length;
            if (parse_u63(val, dst) != 0)
                return ipu_error(c->bad, "%s: %s: external data %s '%s' is not a byte count",
                                 c->file, what, key, val);
        }
    }
    if (loc == NULL || loc[0] == '\0')
        return ipu_error(c->bad, "%s: %s: external data without a 'location'", c->file, what);
    if (length >= 0 && (uint64_t)length != nbytes)
        return ipu_error(c->bad, "%s: %s: external data length %lld does not match its "
                         "dims and dtype (%zu bytes); the model is inconsistent",
                         c->file, what, (long long)length, nbytes);

    char *path = NULL;
    ipu_status_t st = resolve_confined(c, what, loc, &path);
    if (st != IPU_OK)
        return st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        st = ipu_error(IPU_ERR_IO, "%s: %s: cannot open external data file '%s': %s",
                       c->file, what, path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = ipu_error(c->bad, "%s: %s: external data '%s' is not a regular file",
                       c->file, what, path);
        goto out;
    }
    if ((uint64_t)offset > (uint64_t)sb.st_size || (uint64_t)sb.st_size - (uint64_t)offset < nbytes) {
        st = ipu_error(c->bad, "%s: %s: external data file '%s' is shorter than declared "
                       "(%lld bytes, needs offset %lld + %zu bytes); the data file is "
                       "incomplete or belongs to another model",
                       c->file, what, loc, (long long)sb.st_size, (long long)offset, nbytes);
        goto out;
    }
    if (nbytes == 0) {
        ipu_tensor_t t = {.dtype = IPU_DTYPE_UINT8, .rank = 1, .dims = {0}};
        st = ipu_tensor_alloc(&t);
        if (st == IPU_OK) {
            *data = t.data;
            *kind = IPU_CONST_OWNED;
        }
        goto out;
    }
    if (c->g == NULL || align == 0 || offset % (int64_t)align != 0) {
        /* a misaligned element pointer is undefined behaviour: copy */
        void *p = NULL;
        st = read_copy(c, what, fd, path, offset, nbytes, &p);
        if (st == IPU_OK) {
            *data = p;
            *kind = IPU_CONST_OWNED;
        }
        goto out;
    }
    long page = sysconf(_SC_PAGESIZE);
    int64_t base = offset - offset % (page > 0 ? page : 4096);
    size_t delta = (size_t)(offset - base), maplen = nbytes + delta;
    void *addr = mmap(NULL, maplen, PROT_READ, MAP_PRIVATE, fd, (off_t)base);
    if (addr == MAP_FAILED) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "%s: %s: cannot map external data file '%s': %s",
                       c->file, what, path, strerror(errno));
        goto out;
    }
    st = ipu_graph_keep_mapping(c->g, addr, maplen);
    if (st == IPU_OK) {
        *data = (char *)addr + delta;
        *kind = IPU_CONST_MAPPED;
    }
out:
    if (fd >= 0)
        close(fd);
    free(path);
    return st;
}
