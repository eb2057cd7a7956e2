/* NumPy .npy files (format version 1.0/2.0, C order, little-endian). */
#ifndef IPU_COMMON_NPY_H
#define IPU_COMMON_NPY_H

#include "common/tensor.h"

/* Read path into t (t->data malloc'd, caller frees). Errors: IPU_ERR_IO,
 * IPU_ERR_INPUT (bad header, Fortran order, big-endian, unknown dtype,
 * truncated data). */
ipu_status_t ipu_npy_read(const char *path, ipu_tensor_t *t);
/* Write t to path. Errors: IPU_ERR_IO, IPU_ERR_UNSUPPORTED (dtype). */
ipu_status_t ipu_npy_write(const char *path, const ipu_tensor_t *t);

#endif
