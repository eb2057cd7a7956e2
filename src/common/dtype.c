#include "common/dtype.h"

#include <math.h>
#include <string.h>

static const struct {
    ipu_dtype_t dt;
    size_t size;
    const char *name;
    const char *npy;
} table[] = {
    {IPU_DTYPE_FLOAT, 4, "float", "<f4"},     {IPU_DTYPE_UINT8, 1, "uint8", "|u1"},
    {IPU_DTYPE_INT8, 1, "int8", "|i1"},       {IPU_DTYPE_UINT16, 2, "uint16", "<u2"},
    {IPU_DTYPE_INT16, 2, "int16", "<i2"},     {IPU_DTYPE_INT32, 4, "int32", "<i4"},
    {IPU_DTYPE_INT64, 8, "int64", "<i8"},     {IPU_DTYPE_STRING, 0, "string", NULL},
    {IPU_DTYPE_BOOL, 1, "bool", "|b1"},       {IPU_DTYPE_FLOAT16, 2, "float16", "<f2"},
    {IPU_DTYPE_DOUBLE, 8, "double", "<f8"},   {IPU_DTYPE_UINT32, 4, "uint32", "<u4"},
    {IPU_DTYPE_UINT64, 8, "uint64", "<u8"},   {IPU_DTYPE_BFLOAT16, 2, "bfloat16", NULL},
};

#define N_TABLE (sizeof(table) / sizeof(table[0]))

size_t ipu_dtype_size(ipu_dtype_t dt)
{
    for (size_t i = 0; i < N_TABLE; i++)
        if (table[i].dt == dt)
            return table[i].size;
    return 0;
}

const char *ipu_dtype_name(ipu_dtype_t dt)
{
    for (size_t i = 0; i < N_TABLE; i++)
        if (table[i].dt == dt)
            return table[i].name;
    return "undefined";
}

const char *ipu_dtype_npy_descr(ipu_dtype_t dt)
{
    for (size_t i = 0; i < N_TABLE; i++)
        if (table[i].dt == dt)
            return table[i].npy;
    return NULL;
}

ipu_dtype_t ipu_dtype_from_npy_descr(const char *descr)
{
    for (size_t i = 0; i < N_TABLE; i++)
        if (table[i].npy && strcmp(table[i].npy, descr) == 0)
            return table[i].dt;
    if (strcmp(descr, "|i1") == 0 || strcmp(descr, "<i1") == 0) return IPU_DTYPE_INT8;
    if (strcmp(descr, "|u1") == 0 || strcmp(descr, "<u1") == 0) return IPU_DTYPE_UINT8;
    if (strcmp(descr, "|b1") == 0 || strcmp(descr, "<b1") == 0) return IPU_DTYPE_BOOL;
    return IPU_DTYPE_UNDEFINED;
}

float ipu_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: renormalise */
            exp = 127 - 15 + 1;
            while (!(man & 0x400)) { man <<= 1; exp--; }
            bits = sign | (exp << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t ipu_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t man = x & 0x7fffff;
    if (((x >> 23) & 0xff) == 0xff) /* inf or nan */
        return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00);
    if (exp <= 0) {
        if (exp < -10)
            return (uint16_t)sign;
        man |= 0x800000;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t half = 1u << (shift - 1), rest = man & ((1u << shift) - 1);
        uint32_t r = man >> shift;
        if (rest > half || (rest == half && (r & 1)))
            r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((uint32_t)exp << 10) | (man >> 13), rest = man & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (r & 1)))
        r++; /* may carry into the exponent, giving inf: correct */
    return (uint16_t)(sign | r);
}

float ipu_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t ipu_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

double ipu_dtype_get_f64(ipu_dtype_t dt, const void *buf, size_t i)
{
    switch (dt) {
    case IPU_DTYPE_FLOAT:    return ((const float *)buf)[i];
    case IPU_DTYPE_DOUBLE:   return ((const double *)buf)[i];
    case IPU_DTYPE_FLOAT16:  return ipu_f16_to_f32(((const uint16_t *)buf)[i]);
    case IPU_DTYPE_BFLOAT16: return ipu_bf16_to_f32(((const uint16_t *)buf)[i]);
    case IPU_DTYPE_UINT64:   return (double)((const uint64_t *)buf)[i];
    default:                 return (double)ipu_dtype_get_i64(dt, buf, i);
    }
}

int64_t ipu_dtype_get_i64(ipu_dtype_t dt, const void *buf, size_t i)
{
    switch (dt) {
    case IPU_DTYPE_UINT8:  return ((const uint8_t *)buf)[i];
    case IPU_DTYPE_INT8:   return ((const int8_t *)buf)[i];
    case IPU_DTYPE_UINT16: return ((const uint16_t *)buf)[i];
    case IPU_DTYPE_INT16:  return ((const int16_t *)buf)[i];
    case IPU_DTYPE_INT32:  return ((const int32_t *)buf)[i];
    case IPU_DTYPE_INT64:  return ((const int64_t *)buf)[i];
    case IPU_DTYPE_BOOL:   return ((const uint8_t *)buf)[i] != 0;
    case IPU_DTYPE_UINT32: return ((const uint32_t *)buf)[i];
    case IPU_DTYPE_UINT64: return (int64_t)((const uint64_t *)buf)[i];
    default:               return (int64_t)ipu_dtype_get_f64(dt, buf, i);
    }
}

void ipu_dtype_set_f64(ipu_dtype_t dt, void *buf, size_t i, double v)
{
    switch (dt) {
    case IPU_DTYPE_FLOAT:    ((float *)buf)[i] = (float)v; break;
    case IPU_DTYPE_DOUBLE:   ((double *)buf)[i] = v; break;
    case IPU_DTYPE_FLOAT16:  ((uint16_t *)buf)[i] = ipu_f32_to_f16((float)v); break;
    case IPU_DTYPE_BFLOAT16: ((uint16_t *)buf)[i] = ipu_f32_to_bf16((float)v); break;
    case IPU_DTYPE_BOOL:     ((uint8_t *)buf)[i] = v != 0; break;
    default:
        if (isnan(v))
            v = 0;
        ipu_dtype_set_i64(dt, buf, i, (int64_t)v);
        break;
    }
}

void ipu_dtype_set_i64(ipu_dtype_t dt, void *buf, size_t i, int64_t v)
{
    switch (dt) {
    case IPU_DTYPE_UINT8:  ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case IPU_DTYPE_INT8:   ((int8_t *)buf)[i] = (int8_t)v; break;
    case IPU_DTYPE_UINT16: ((uint16_t *)buf)[i] = (uint16_t)v; break;
    case IPU_DTYPE_INT16:  ((int16_t *)buf)[i] = (int16_t)v; break;
    case IPU_DTYPE_INT32:  ((int32_t *)buf)[i] = (int32_t)v; break;
    case IPU_DTYPE_INT64:  ((int64_t *)buf)[i] = v; break;
    case IPU_DTYPE_BOOL:   ((uint8_t *)buf)[i] = v != 0; break;
    case IPU_DTYPE_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case IPU_DTYPE_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    default:               ipu_dtype_set_f64(dt, buf, i, (double)v); break;
    }
}
