/* Element types. Values are those of onnx.TensorProto.DataType (onnx.proto),
 * so a TensorProto's data_type converts by cast. */
#ifndef IPU_COMMON_DTYPE_H
#define IPU_COMMON_DTYPE_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    IPU_DTYPE_UNDEFINED = 0,
    IPU_DTYPE_FLOAT     = 1,
    IPU_DTYPE_UINT8     = 2,
    IPU_DTYPE_INT8      = 3,
    IPU_DTYPE_UINT16    = 4,
    IPU_DTYPE_INT16     = 5,
    IPU_DTYPE_INT32     = 6,
    IPU_DTYPE_INT64     = 7,
    IPU_DTYPE_STRING    = 8,
    IPU_DTYPE_BOOL      = 9,
    IPU_DTYPE_FLOAT16   = 10,
    IPU_DTYPE_DOUBLE    = 11,
    IPU_DTYPE_UINT32    = 12,
    IPU_DTYPE_UINT64    = 13,
    IPU_DTYPE_BFLOAT16  = 16,
} ipu_dtype_t;

/* Bytes per element; 0 for UNDEFINED, STRING and unknown values. */
size_t ipu_dtype_size(ipu_dtype_t dt);
/* ONNX name ("float", "int64", ...); "undefined" for unknown values. */
const char *ipu_dtype_name(ipu_dtype_t dt);
/* numpy dtype descriptor ("<f4", "<i8", "|b1", ...) or NULL if none. */
const char *ipu_dtype_npy_descr(ipu_dtype_t dt);
/* Inverse of ipu_dtype_npy_descr(); IPU_DTYPE_UNDEFINED if unknown. */
ipu_dtype_t ipu_dtype_from_npy_descr(const char *descr);

/* Read element i of a buffer of dtype dt as double / int64 (any numeric dtype). */
double  ipu_dtype_get_f64(ipu_dtype_t dt, const void *buf, size_t i);
int64_t ipu_dtype_get_i64(ipu_dtype_t dt, const void *buf, size_t i);
/* Write element i of a buffer of dtype dt from double / int64 (C conversion
 * rules; float16/bfloat16 round to nearest even). */
void ipu_dtype_set_f64(ipu_dtype_t dt, void *buf, size_t i, double v);
void ipu_dtype_set_i64(ipu_dtype_t dt, void *buf, size_t i, int64_t v);

float    ipu_f16_to_f32(uint16_t h);
uint16_t ipu_f32_to_f16(float f);
float    ipu_bf16_to_f32(uint16_t h);
uint16_t ipu_f32_to_bf16(float f);

static inline int ipu_dtype_is_float(ipu_dtype_t dt)
{
    return dt == IPU_DTYPE_FLOAT || dt == IPU_DTYPE_DOUBLE ||
           dt == IPU_DTYPE_FLOAT16 || dt == IPU_DTYPE_BFLOAT16;
}

#endif
