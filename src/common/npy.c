/* NumPy .npy files (numpy/lib/format.py, "NEP 1"): the magic "\x93NUMPY",
 * major/minor version, a little-endian header length (uint16 in 1.0, uint32
 * in 2.0 and 3.0), then a Python dict literal
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and a newline, then the C-order data. Only C order and
 * little-endian (or single-byte) dtypes are read. */
#include "common/npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAX_HEADER (1u << 20)

static ipu_status_t read_all(const char *path, unsigned char **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return ipu_error(IPU_ERR_IO, "%s: cannot open .npy file: %s", path, strerror(errno));
    ipu_status_t st = IPU_OK;
    long size = -1;
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        st = ipu_error(IPU_ERR_IO, "%s: cannot read .npy file: %s", path, strerror(errno));
        goto out;
    }
    *buf = malloc((size_t)size + 1);
    if (*buf == NULL) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "%s: out of memory reading the .npy file", path);
        goto out;
    }
    if (fread(*buf, 1, (size_t)size, f) != (size_t)size) {
        free(*buf);
        st = ipu_error(IPU_ERR_IO, "%s: cannot read .npy file: %s", path,
                       ferror(f) ? strerror(errno) : "short read");
        goto out;
    }
    *len = (size_t)size;
out:
    fclose(f);
    return st;
}

/* Pointer just after "'key':" (or "\"key\":") in the header, or NULL. */
static const char *find_key(const char *h, const char *key)
{
    char pat[32];
    for (int q = 0; q < 2; q++) {
        snprintf(pat, sizeof(pat), "%c%s%c", q ? '"' : '\'', key, q ? '"' : '\'');
        const char *p = strstr(h, pat);
        if (p == NULL)
            continue;
        p += strlen(pat);
        while (*p == ' ')
            p++;
        if (*p != ':')
            return NULL;
        p++;
        while (*p == ' ')
            p++;
        return p;
    }
    return NULL;
}

static ipu_status_t parse_header(const char *path, const char *h, ipu_tensor_t *t)
{
    const char *p = find_key(h, "descr");
    char descr[16];
    if (p == NULL || (*p != '\'' && *p != '"'))
        return ipu_error(IPU_ERR_INPUT, "%s: .npy header has no 'descr'", path);
    char quote = *p++;
    size_t n = 0;
    while (p[n] && p[n] != quote && n < sizeof(descr) - 1)
        n++;
    if (p[n] != quote)
        return ipu_error(IPU_ERR_INPUT, "%s: .npy header has a bad 'descr'", path);
    memcpy(descr, p, n);
    descr[n] = '\0';
    if (descr[0] == '>' && !(descr[1] && descr[2] == '1' && descr[3] == '\0'))
        return ipu_error(IPU_ERR_INPUT, "%s: .npy dtype '%s' is big-endian; save it "
                         "little-endian (array.astype(array.dtype.newbyteorder('<')))",
                         path, descr);
    if (descr[0] == '=' || descr[0] == '>' || descr[0] == '<' || descr[0] == '|') {
        /* single-byte types are '|', others '<' in the dtype table */
        descr[0] = descr[1] && descr[2] == '1' && descr[3] == '\0' ? '|' : '<';
    }
    ipu_dtype_t dt = ipu_dtype_from_npy_descr(descr);
    if (dt == IPU_DTYPE_UNDEFINED)
        return ipu_error(IPU_ERR_INPUT, "%s: .npy dtype '%s' is not supported (use float32, "
                         "float64, float16, int64, int32, int8, uint8 or bool)", path, descr);

    p = find_key(h, "fortran_order");
    if (p == NULL)
        return ipu_error(IPU_ERR_INPUT, "%s: .npy header has no 'fortran_order'", path);
    if (strncmp(p, "True", 4) == 0)
        return ipu_error(IPU_ERR_INPUT, "%s: .npy array is in Fortran order; save a C-order "
                         "array (numpy.ascontiguousarray)", path);
    if (strncmp(p, "False", 5) != 0)
        return ipu_error(IPU_ERR_INPUT, "%s: .npy header has a bad 'fortran_order'", path);

    p = find_key(h, "shape");
    if (p == NULL || *p != '(')
        return ipu_error(IPU_ERR_INPUT, "%s: .npy header has no 'shape' tuple", path);
    p++;
    int rank = 0;
    for (;;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == ')')
            break;
        if (*p < '0' || *p > '9')
            return ipu_error(IPU_ERR_INPUT, "%s: .npy header has a bad 'shape'", path);
        if (rank == IPU_MAX_RANK)
            return ipu_error(IPU_ERR_INPUT, "%s: .npy array has more than %d dimensions",
                             path, IPU_MAX_RANK);
        char *end;
        errno = 0;
        long long d = strtoll(p, &end, 10);
        if (errno != 0 || d < 0)
            return ipu_error(IPU_ERR_INPUT, "%s: .npy header has a bad 'shape'", path);
        t->dims[rank++] = d;
        p = end;
    }
    t->dtype = dt;
    t->rank = rank;
    return IPU_OK;
}

ipu_status_t ipu_npy_read(const char *path, ipu_tensor_t *t)
{
    unsigned char *buf = NULL;
    size_t len = 0;
    ipu_status_t st = read_all(path, &buf, &len);
    if (st != IPU_OK)
        return st;
    char *hdr = NULL;
    ipu_tensor_t r = {0};
    if (len < 10 || memcmp(buf, NPY_MAGIC, 6) != 0) {
        st = ipu_error(IPU_ERR_INPUT, "%s: not a .npy file (no \\x93NUMPY magic)", path);
        goto out;
    }
    unsigned major = buf[6];
    size_t hlen, hstart;
    if (major == 1) {
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
        hstart = 10;
    } else if ((major == 2 || major == 3) && len >= 12) {
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        hstart = 12;
    } else {
        st = ipu_error(IPU_ERR_INPUT, "%s: .npy format version %u.%u is not supported",
                       path, major, (unsigned)buf[7]);
        goto out;
    }
    if (hlen > NPY_MAX_HEADER || hlen > len - hstart) {
        st = ipu_error(IPU_ERR_INPUT, "%s: truncated .npy header", path);
        goto out;
    }
    if ((hdr = malloc(hlen + 1)) == NULL) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "%s: out of memory", path);
        goto out;
    }
    memcpy(hdr, buf + hstart, hlen);
    hdr[hlen] = '\0';
    if ((st = parse_header(path, hdr, &r)) != IPU_OK)
        goto out;
    size_t esize = ipu_dtype_size(r.dtype), have = len - hstart - hlen;
    int64_t numel = 1;
    for (int d = 0; d < r.rank; d++)
        if (__builtin_mul_overflow(numel, r.dims[d], &numel) || numel > (int64_t)(SIZE_MAX / 16)) {
            st = ipu_error(IPU_ERR_INPUT, "%s: .npy shape is too large", path);
            goto out;
        }
    size_t want = (size_t)numel * esize;
    if (have != want) {
        char desc[128];
        st = ipu_error(IPU_ERR_INPUT, "%s: .npy data is %zu bytes but %s needs %zu (%s)",
                       path, have, ipu_tensor_describe(&r, desc, sizeof(desc)), want,
                       have < want ? "truncated file" : "trailing bytes");
        goto out;
    }
    if ((st = ipu_tensor_alloc(&r)) != IPU_OK)
        goto out;
    if (want)
        memcpy(r.data, buf + hstart + hlen, want);
    *t = r;
out:
    free(hdr);
    free(buf);
    return st;
}

ipu_status_t ipu_npy_write(const char *path, const ipu_tensor_t *t)
{
    const char *descr = ipu_dtype_npy_descr(t->dtype);
    if (descr == NULL)
        return ipu_error(IPU_ERR_UNSUPPORTED, "%s: dtype %s has no .npy equivalent",
                         path, ipu_dtype_name(t->dtype));
    if (t->rank < 0 || t->rank > IPU_MAX_RANK)
        return ipu_error(IPU_ERR_INVALID_ARG, "%s: bad tensor rank %d", path, t->rank);
    char dict[512];
    size_t n = (size_t)snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, "
                                "'shape': (", descr);
    for (int d = 0; d < t->rank; d++)
        n += (size_t)snprintf(dict + n, sizeof(dict) - n, "%s%lld", d ? ", " : "",
                              (long long)t->dims[d]);
    n += (size_t)snprintf(dict + n, sizeof(dict) - n, "%s), }", t->rank == 1 ? "," : "");
    /* pad so that magic + version + length + dict + '\n' is a multiple of 64 */
    size_t total = (10 + n + 1 + 63) / 64 * 64;
    char header[640];
    memcpy(header, NPY_MAGIC "\x01\x00", 8);
    size_t hlen = total - 10;
    header[8] = (char)(hlen & 0xff);
    header[9] = (char)(hlen >> 8);
    memcpy(header + 10, dict, n);
    memset(header + 10 + n, ' ', total - 10 - n - 1);
    header[total - 1] = '\n';

    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return ipu_error(IPU_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    size_t nbytes = ipu_tensor_nbytes(t);
    int ok = fwrite(header, 1, total, f) == total &&
             (nbytes == 0 || fwrite(t->data, 1, nbytes, f) == nbytes);
    int err = errno;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    if (!ok)
        return ipu_error(IPU_ERR_IO, "%s: cannot write: %s", path, strerror(err));
    return IPU_OK;
}
