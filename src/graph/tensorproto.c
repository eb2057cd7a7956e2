/* onnx.TensorProto decoding (initializers, TENSOR attributes, input_N.pb /
 * output_N.pb files of the ONNX test-data layout) and writing.
 *
 * Data rules (onnx.proto, TensorProto): raw_data holds the elements
 * little-endian, row-major; otherwise the typed field of the dtype:
 *   float_data   FLOAT
 *   int32_data   INT32, INT16, INT8, UINT16, UINT8, BOOL, and FLOAT16 /
 *                BFLOAT16 as their 16-bit patterns
 *   int64_data   INT64
 *   double_data  DOUBLE
 *   uint64_data  UINT32, UINT64
 * or external data (extdata.c). STRING and COMPLEX tensors are unsupported. */
#include "graph/load.h"
#include "graph/load_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

ipu_status_t ipu_file_slurp(const char *path, const char *what, size_t max_bytes,
                            ipu_status_t too_big, const uint8_t **data, size_t *len, int *keep_fd)
{
    if (keep_fd)
        *keep_fd = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ipu_error(IPU_ERR_IO, "%s: cannot open %s: %s", path, what, strerror(errno));
    struct stat sb;
    ipu_status_t st = IPU_OK;
    if (fstat(fd, &sb) != 0) {
        st = ipu_error(IPU_ERR_IO, "%s: cannot read %s: %s", path, what, strerror(errno));
    } else if (!S_ISREG(sb.st_mode)) {
        st = ipu_error(IPU_ERR_IO, "%s: cannot read %s: not a regular file", path, what);
    } else if ((uint64_t)sb.st_size > max_bytes) {
        st = ipu_error(too_big, "%s: %s is %lld bytes, over the %zu-byte protobuf limit; "
                       "save large weights as external data "
                       "(onnx.save_model(..., save_as_external_data=True))",
                       path, what, (long long)sb.st_size, max_bytes);
    } else if (sb.st_size == 0) {
        *data = NULL;
        *len = 0;
    } else {
        void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            st = ipu_error(IPU_ERR_IO, "%s: cannot map %s: %s", path, what, strerror(errno));
        } else {
            *data = p;
            *len = (size_t)sb.st_size;
        }
    }
    if (keep_fd && st == IPU_OK)
        *keep_fd = fd;
    else
        close(fd);
    return st;
}

void ipu_file_release(const uint8_t *data, size_t len)
{
    if (data != NULL && len > 0)
        munmap((void *)data, len);
}

/* Typed-field element count for dtype dt, and the field's name. */
static size_t typed_count(const Onnx__TensorProto *tp, ipu_dtype_t dt, const char **field)
{
    switch (dt) {
    case IPU_DTYPE_FLOAT:   *field = "float_data";  return tp->n_float_data;
    case IPU_DTYPE_DOUBLE:  *field = "double_data"; return tp->n_double_data;
    case IPU_DTYPE_INT64:   *field = "int64_data";  return tp->n_int64_data;
    case IPU_DTYPE_UINT32:
    case IPU_DTYPE_UINT64:  *field = "uint64_data"; return tp->n_uint64_data;
    default:                *field = "int32_data";  return tp->n_int32_data;
    }
}

static void typed_copy(const Onnx__TensorProto *tp, ipu_dtype_t dt, void *dst, size_t n)
{
    if (n == 0)
        return;
    switch (dt) {
    case IPU_DTYPE_FLOAT:  memcpy(dst, tp->float_data, n * sizeof(float)); break;
    case IPU_DTYPE_DOUBLE: memcpy(dst, tp->double_data, n * sizeof(double)); break;
    case IPU_DTYPE_INT64:  memcpy(dst, tp->int64_data, n * sizeof(int64_t)); break;
    case IPU_DTYPE_UINT64: memcpy(dst, tp->uint64_data, n * sizeof(uint64_t)); break;
    case IPU_DTYPE_UINT32:
        for (size_t i = 0; i < n; i++)
            ((uint32_t *)dst)[i] = (uint32_t)tp->uint64_data[i];
        break;
    case IPU_DTYPE_FLOAT16:
    case IPU_DTYPE_BFLOAT16: /* the 16-bit pattern in the low bits */
        for (size_t i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = (uint16_t)tp->int32_data[i];
        break;
    default: /* INT32, INT16, INT8, UINT16, UINT8, BOOL */
        for (size_t i = 0; i < n; i++)
            ipu_dtype_set_i64(dt, dst, i, tp->int32_data[i]);
        break;
    }
}

ipu_status_t ipu_tp_decode(const ipu_tp_ctx_t *c, const Onnx__TensorProto *tp,
                           const char *what, ipu_tensor_t *t, int *kind)
{
    ipu_dtype_t dt = tp->has_data_type ? (ipu_dtype_t)tp->data_type : IPU_DTYPE_UNDEFINED;
    size_t esize = ipu_dtype_size(dt);
    if (dt == IPU_DTYPE_UNDEFINED)
        return ipu_error(c->bad, "%s: %s has no data_type", c->file, what);
    if (esize == 0)
        return ipu_error(IPU_ERR_UNSUPPORTED, "%s: %s has element type %d (%s), which is not "
                         "supported (numeric tensors only)", c->file, what, (int)dt,
                         dt == IPU_DTYPE_STRING ? "string" : "complex or unknown");
    if (tp->n_dims > IPU_MAX_RANK)
        return ipu_error(IPU_ERR_UNSUPPORTED, "%s: %s has rank %zu; at most %d is supported",
                         c->file, what, tp->n_dims, IPU_MAX_RANK);
    if (tp->segment != NULL)
        return ipu_error(IPU_ERR_UNSUPPORTED, "%s: %s is segmented; segmented tensors are "
                         "not supported", c->file, what);
    ipu_tensor_t r = {.dtype = dt, .rank = (int)tp->n_dims};
    int64_t numel = 1;
    for (size_t d = 0; d < tp->n_dims; d++) {
        if (tp->dims[d] < 0)
            return ipu_error(c->bad, "%s: %s has a negative dimension %lld",
                             c->file, what, (long long)tp->dims[d]);
        if (__builtin_mul_overflow(numel, tp->dims[d], &numel))
            return ipu_error(c->bad, "%s: %s has dims whose product overflows", c->file, what);
        r.dims[d] = tp->dims[d];
    }
    size_t nbytes;
    if (numel > (int64_t)(SIZE_MAX / 2 / esize))
        return ipu_error(c->bad, "%s: %s is too large (%lld elements)",
                         c->file, what, (long long)numel);
    nbytes = (size_t)numel * esize;
    char shape[128];
    ipu_tensor_describe(&r, shape, sizeof(shape));

    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        void *p = NULL;
        int k = IPU_CONST_OWNED;
        ipu_status_t st = ipu_extdata_load(c, tp, what, nbytes, esize, &p, &k);
        if (st != IPU_OK)
            return st;
        r.data = p;
        *t = r;
        *kind = k;
        return IPU_OK;
    }
    if (tp->has_data_location && tp->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT)
        return ipu_error(c->bad, "%s: %s has an unknown data_location %d",
                         c->file, what, (int)tp->data_location);

    const char *field = "raw_data";
    size_t have;
    if (tp->has_raw_data) {
        if (tp->raw_data.len != nbytes)
            return ipu_error(c->bad, "%s: %s has %zu bytes of raw_data but %s needs %zu; "
                             "the tensor data does not match its dims",
                             c->file, what, tp->raw_data.len, shape, nbytes);
    } else if ((have = typed_count(tp, dt, &field)) != (size_t)numel) {
        return ipu_error(c->bad, "%s: %s has %zu values in %s but %s needs %lld; "
                         "the tensor data does not match its dims",
                         c->file, what, have, field, shape, (long long)numel);
    }
    if (c->defer_raw && tp->has_raw_data && nbytes > 0) {
        r.data = tp->raw_data.data; /* the file's mapping (load.c) */
        *t = r;
        *kind = IPU_CONST_DEFERRED;
        return IPU_OK;
    }
    if (c->steal_raw && tp->has_raw_data && nbytes > 0 && ((uintptr_t)tp->raw_data.data % 16) == 0) {
        /* protobuf-c malloc'd these bytes for us: keep them, no copy */
        Onnx__TensorProto *mtp = (Onnx__TensorProto *)tp;
        r.data = mtp->raw_data.data;
        mtp->raw_data.data = NULL;
        mtp->raw_data.len = 0;
        *t = r;
        *kind = IPU_CONST_OWNED;
        return IPU_OK;
    }
    ipu_status_t st = ipu_tensor_alloc(&r);
    if (st != IPU_OK)
        return st;
    if (tp->has_raw_data) {
        if (nbytes)
            memcpy(r.data, tp->raw_data.data, nbytes);
    } else {
        typed_copy(tp, dt, r.data, (size_t)numel);
    }
    *t = r;
    *kind = IPU_CONST_OWNED;
    return IPU_OK;
}

ipu_status_t ipu_tensorproto_read(const char *path, ipu_tensor_t *t, char **name)
{
    const uint8_t *buf = NULL;
    size_t len = 0;
    ipu_status_t st = ipu_file_slurp(path, "tensor file", IPU_MAX_PROTO_BYTES, IPU_ERR_INPUT,
                                     &buf, &len, NULL);
    if (st != IPU_OK)
        return st;
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, buf);
    ipu_file_release(buf, len);
    if (tp == NULL)
        return ipu_error(IPU_ERR_INPUT, "%s: not a serialized onnx.TensorProto (damaged, "
                         "truncated or another format); write it with "
                         "onnx.numpy_helper.from_array(...).SerializeToString()", path);
    char *dirbuf = strdup(path);
    char *nm = NULL;
    if (dirbuf == NULL || (name != NULL && (nm = strdup(ipu_pbstr(tp->name))) == NULL)) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory reading %s", path);
        goto out;
    }
    ipu_tp_ctx_t c = {.file = path, .dir = dirname(dirbuf), .g = NULL, .bad = IPU_ERR_INPUT};
    ipu_tensor_t r;
    int kind;
    char what[300];
    snprintf(what, sizeof(what), "tensor '%s'", ipu_pbstr(tp->name));
    st = ipu_tp_decode(&c, tp, what, &r, &kind);
    if (st != IPU_OK)
        goto out;
    *t = r;
    if (name != NULL) {
        *name = nm;
        nm = NULL;
    }
out:
    free(nm);
    free(dirbuf);
    onnx__tensor_proto__free_unpacked(tp, NULL);
    return st;
}

ipu_status_t ipu_tensorproto_write(const char *path, const ipu_tensor_t *t, const char *name)
{
    size_t esize = ipu_dtype_size(t->dtype);
    if (esize == 0)
        return ipu_error(IPU_ERR_UNSUPPORTED, "%s: cannot write a tensor of dtype %s",
                         path, ipu_dtype_name(t->dtype));
    if (t->rank < 0 || t->rank > IPU_MAX_RANK)
        return ipu_error(IPU_ERR_INVALID_ARG, "%s: bad tensor rank %d", path, t->rank);
    int64_t dims[IPU_MAX_RANK];
    memcpy(dims, t->dims, sizeof(dims));
    Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
    tp.n_dims = (size_t)t->rank;
    tp.dims = dims;
    tp.has_data_type = 1;
    tp.data_type = (int32_t)t->dtype;
    tp.name = name ? (char *)name : NULL;
    tp.has_raw_data = 1;
    tp.raw_data.len = ipu_tensor_nbytes(t);
    tp.raw_data.data = t->data;
    size_t n = onnx__tensor_proto__get_packed_size(&tp);
    uint8_t *buf = malloc(n ? n : 1);
    if (buf == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory writing %s", path);
    onnx__tensor_proto__pack(&tp, buf);
    ipu_status_t st = IPU_OK;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        st = ipu_error(IPU_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
        goto out;
    }
    for (size_t done = 0; done < n;) {
        ssize_t w = write(fd, buf + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            st = ipu_error(IPU_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
            break;
        }
        done += (size_t)w;
    }
    if (close(fd) != 0 && st == IPU_OK)
        st = ipu_error(IPU_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
out:
    free(buf);
    return st;
}
