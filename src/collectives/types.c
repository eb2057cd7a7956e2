/* libgcl's dtype and op table (types.h) and gcl_dtype_size (gcl.h). */
#include "collectives/types.h"

static const gcl_dtype_info_t dtypes[GCL_DTYPE_COUNT] = {
    [GCL_FLOAT32] = {"f32", "float32", 4, 0x1p-23, 1, IPU_DTYPE_FLOAT},
    [GCL_FLOAT64] = {"f64", "float64", 8, 0x1p-52, 1, IPU_DTYPE_DOUBLE},
    [GCL_FLOAT16] = {"f16", "float16", 2, 0x1p-10, 1, IPU_DTYPE_FLOAT16},
    [GCL_BFLOAT16] = {"bf16", "bfloat16", 2, 0x1p-7, 1, IPU_DTYPE_BFLOAT16},
    [GCL_INT8] = {"i8", "int8", 1, 0, 0, IPU_DTYPE_INT8},
    [GCL_UINT8] = {"u8", "uint8", 1, 0, 0, IPU_DTYPE_UINT8},
    [GCL_INT32] = {"i32", "int32", 4, 0, 0, IPU_DTYPE_INT32},
    [GCL_INT64] = {"i64", "int64", 8, 0, 0, IPU_DTYPE_INT64},
};

static const char *const ops[GCL_OP_COUNT] = {"sum", "prod", "min", "max", "avg"};

const gcl_dtype_info_t *gcl_dtype_info(gcl_dtype_t dt)
{
    return (unsigned)dt < GCL_DTYPE_COUNT ? &dtypes[dt] : NULL;
}

const char *gcl_op_name(gcl_op_t op)
{
    return (unsigned)op < GCL_OP_COUNT ? ops[op] : NULL;
}

size_t gcl_dtype_size(gcl_dtype_t dtype)
{
    return (unsigned)dtype < GCL_DTYPE_COUNT ? dtypes[dtype].size : 0;
}
