/* A tensor view: dtype, shape and a data pointer. The view does not own its
 * data; whoever allocated the buffer frees it. Layout is dense row-major
 * (C order), as in ONNX TensorProto raw_data. */
#ifndef IPU_COMMON_TENSOR_H
#define IPU_COMMON_TENSOR_H

#include "common/dtype.h"
#include "common/status.h"

#include <stddef.h>
#include <stdint.h>

#define IPU_MAX_RANK 8

typedef struct ipu_tensor {
    ipu_dtype_t dtype;
    int rank;                     /* 0 for a scalar */
    int64_t dims[IPU_MAX_RANK];
    void *data;                   /* NULL for an absent optional input */
} ipu_tensor_t;

/* Number of elements (1 for a scalar). */
int64_t ipu_tensor_numel(const ipu_tensor_t *t);
/* Bytes of the dense data. */
size_t ipu_tensor_nbytes(const ipu_tensor_t *t);
/* Strides in elements, row-major, into strides[rank]. */
void ipu_tensor_strides(const ipu_tensor_t *t, int64_t *strides);
/* Format "float[1,3,224,224]" into buf (always NUL-terminated); returns buf. */
char *ipu_tensor_describe(const ipu_tensor_t *t, char *buf, size_t len);
/* Shape helpers on bare (rank, dims). */
int64_t ipu_shape_numel(int rank, const int64_t *dims);
int ipu_shape_equal(int ra, const int64_t *a, int rb, const int64_t *b);

/* Allocate a tensor's data with malloc (64-byte aligned, zeroed); the caller
 * frees t->data with free(). Returns IPU_ERR_NO_MEMORY on failure. */
ipu_status_t ipu_tensor_alloc(ipu_tensor_t *t);
/* The same with at least min_bytes (a layout larger than the elements). */
ipu_status_t ipu_tensor_alloc_bytes(ipu_tensor_t *t, size_t min_bytes);

#endif
