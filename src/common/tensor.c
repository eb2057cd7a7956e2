#include "common/tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t ipu_shape_numel(int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    return n;
}

int ipu_shape_equal(int ra, const int64_t *a, int rb, const int64_t *b)
{
    if (ra != rb)
        return 0;
    for (int i = 0; i < ra; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

int64_t ipu_tensor_numel(const ipu_tensor_t *t)
{
    return ipu_shape_numel(t->rank, t->dims);
}

size_t ipu_tensor_nbytes(const ipu_tensor_t *t)
{
    return (size_t)ipu_tensor_numel(t) * ipu_dtype_size(t->dtype);
}

void ipu_tensor_strides(const ipu_tensor_t *t, int64_t *strides)
{
    int64_t s = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= t->dims[i];
    }
}

char *ipu_tensor_describe(const ipu_tensor_t *t, char *buf, size_t len)
{
    size_t off = (size_t)snprintf(buf, len, "%s[", ipu_dtype_name(t->dtype));
    for (int i = 0; i < t->rank && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, i ? ",%lld" : "%lld", (long long)t->dims[i]);
    if (off < len)
        snprintf(buf + off, len - off, "]");
    return buf;
}

ipu_status_t ipu_tensor_alloc(ipu_tensor_t *t)
{
    return ipu_tensor_alloc_bytes(t, 0);
}

ipu_status_t ipu_tensor_alloc_bytes(ipu_tensor_t *t, size_t min_bytes)
{
    size_t n = ipu_tensor_nbytes(t);
    n = n > min_bytes ? n : min_bytes;
    size_t padded = (n + 63) / 64 * 64;
    void *p = aligned_alloc(64, padded ? padded : 64);
    if (p == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "cannot allocate %zu bytes for a tensor", n);
    memset(p, 0, padded ? padded : 64);
    t->data = p;
    return IPU_OK;
}
