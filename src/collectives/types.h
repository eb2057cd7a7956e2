/* libgcl's one dtype and op table: per gcl_dtype_t its short name ("f32",
 * as gcl-bench's -d and the tests' messages spell it), its long name
 * ("float32", as GCL_DEBUG's messages do), its size in bytes, the unit
 * roundoff of a float type (0 for integers) and the project's ipu_dtype_t
 * of the same layout; per gcl_op_t its name ("sum"). The library,
 * bench/gcl-bench.c and the tests read it; nothing else spells these. */
#ifndef GCL_TYPES_H
#define GCL_TYPES_H

#include "gcl/gcl.h"
#include "common/dtype.h"

#include <stddef.h>

typedef struct gcl_dtype_info {
    const char *name;      /* "f32", "bf16", "i8", ... */
    const char *long_name; /* "float32", "bfloat16", "int8", ... */
    size_t size;           /* bytes per element */
    double eps;            /* float types: unit roundoff 2^-mantissa bits; integers: 0 */
    int is_float;
    ipu_dtype_t ipu;       /* the same layout in common/dtype.h */
} gcl_dtype_info_t;

/* The row of dt; NULL when dt is not a gcl_dtype_t. */
const gcl_dtype_info_t *gcl_dtype_info(gcl_dtype_t dt);
/* "sum", "prod", "min", "max", "avg"; NULL when op is not a gcl_op_t. */
const char *gcl_op_name(gcl_op_t op);

#endif
