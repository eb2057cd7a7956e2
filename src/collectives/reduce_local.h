/* Local reduction kernels of libgcl: element-wise dst = dst op src for every
 * gcl_dtype_t x gcl_op_t, vectorised (float16/bfloat16 computed in float32,
 * rounded to nearest even). AVG reduces as SUM; the collective divides once
 * at the end with gcl_reduce_finish_avg(). */
#ifndef GCL_REDUCE_LOCAL_H
#define GCL_REDUCE_LOCAL_H

#include "gcl/gcl.h"

/* dst[i] = dst[i] op src[i] for i < count. dst and src may not overlap
 * unless equal. Errors: GCL_ERR_INVALID_ARG (dtype or op out of range). */
gcl_status_t gcl_reduce_local(void *dst, const void *src, size_t count, gcl_dtype_t dtype, gcl_op_t op);
/* dst[i] = a[i] op b[i] (dst may equal a or b). */
gcl_status_t gcl_reduce_local3(void *dst, const void *a, const void *b, size_t count,
                               gcl_dtype_t dtype, gcl_op_t op);
/* buf[i] /= n for AVG (integers: truncating division). */
void gcl_reduce_finish_avg(void *buf, size_t count, gcl_dtype_t dtype, int n);

#endif
