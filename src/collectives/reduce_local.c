/* Local reduction kernels of libgcl (reduce_local.h).
 *
 * Every kernel is written with GCC vector extensions over 32-byte vectors
 * (the tail goes through one zero-padded vector, so there is no separate
 * scalar path) and the dispatcher is cloned for x86-64-v3 (AVX2) and the
 * default target, as IPU_EW_HOT in src/exec/ops/ew.h does.
 *
 * Semantics:
 *  - integers: SUM and PROD wrap modulo 2^bits (computed unsigned);
 *  - floats: IEEE arithmetic; MIN and MAX propagate NaN (if either operand
 *    is NaN the result is NaN) and are exactly commutative: equal operands
 *    give the bitwise OR (MIN: -0 wins over +0) or AND (MAX: +0 wins), two
 *    NaNs give their bitwise OR;
 *  - float16 / bfloat16: converted to float32, computed, rounded to nearest
 *    even (NaN becomes the quiet NaN 0x7e00 / x|0x40, as src/common/dtype.c);
 *  - AVG reduces as SUM; gcl_reduce_finish_avg divides (floats: IEEE
 *    division; integers: truncating, exact for group sizes below 2^22). */
#include "collectives/reduce_local.h"
#include "collectives/clones.h"

#include "common/dtype.h"
#include "collectives/errors.h"

#include <stdint.h>
#include <string.h>

#define GCL_HOT __attribute__((optimize("O3", "no-math-errno", "no-trapping-math") GCL_CLONES))
#define INLINE static inline __attribute__((always_inline))

/* 32-byte vectors passed between always_inline helpers never cross an ABI
 * boundary. */
#pragma GCC diagnostic ignored "-Wpsabi"

typedef float    v8sf __attribute__((vector_size(32)));
typedef double   v4df __attribute__((vector_size(32)));
typedef int32_t  v8si __attribute__((vector_size(32)));
typedef uint32_t v8su __attribute__((vector_size(32)));
typedef int64_t  v4di __attribute__((vector_size(32)));
typedef uint64_t v4du __attribute__((vector_size(32)));
typedef int8_t   v32qi __attribute__((vector_size(32)));
typedef uint8_t  v32qu __attribute__((vector_size(32)));
typedef uint16_t v8hu __attribute__((vector_size(16)));
typedef uint16_t v16hu __attribute__((vector_size(32)));
typedef int32_t  v4si __attribute__((vector_size(16)));

/* ------------------------------------------------ element-wise vector ops */

/* NaN-propagating, commutative min / max (see the file comment). MI is the
 * integer vector type of the float vector type of a and b. */
#define FMIN_BODY(MI)                                                          \
    MI lt = (MI)(a < b), gt = (MI)(b < a), ai = (MI)a, bi = (MI)b;            \
    return (__typeof__(a))((lt & ai) | (gt & bi) | (~(lt | gt) & (ai | bi)));
#define FMAX_BODY(MI)                                                          \
    MI gt = (MI)(a > b), lt = (MI)(a < b), eq = (MI)(a == b), ai = (MI)a, bi = (MI)b; \
    return (__typeof__(a))((gt & ai) | (lt & bi) | (eq & ai & bi) |             \
                           (~(gt | lt | eq) & (ai | bi)));
INLINE v8sf min_v8sf(v8sf a, v8sf b) { FMIN_BODY(v8si) }
INLINE v8sf max_v8sf(v8sf a, v8sf b) { FMAX_BODY(v8si) }
INLINE v4df min_v4df(v4df a, v4df b) { FMIN_BODY(v4di) }
INLINE v4df max_v4df(v4df a, v4df b) { FMAX_BODY(v4di) }
#define SUM(T, a, b) ((a) + (b))
#define PROD(T, a, b) ((a) * (b))
#define IMIN(T, a, b) ({ T m_ = (T)((a) < (b)); (T)((m_ & (a)) | (~m_ & (b))); })
#define IMAX(T, a, b) ({ T m_ = (T)((a) > (b)); (T)((m_ & (a)) | (~m_ & (b))); })

/* float16 <-> float32 (F. Giesen's branch-free conversions, rounding to
 * nearest even; bit-identical to ipu_f16_to_f32 / ipu_f32_to_f16). */
/* low 16 bits of each lane (a truncating __builtin_convertvector would be
 * scalarised) */
INLINE v8hu narrow16(v8su x)
{
    v16hu h = (v16hu)x;
    return __builtin_shufflevector(h, h, 0, 2, 4, 6, 8, 10, 12, 14);
}
INLINE v8sf f16_to_f32(v8hu h)
{
    v8su x = __builtin_convertvector(h, v8su);
    v8su o = (x & 0x7fff) << 13, e = o & 0x0f800000u;
    o += 112u << 23;
    v8su inf = o + (112u << 23);
    v8su den = (v8su)((v8sf)(o + (1u << 23)) - 0x1p-14f);
    v8su isinf = (v8su)(e == 0x0f800000u), isden = (v8su)(e == 0);
    o = (isinf & inf) | (isden & den) | (~(isinf | isden) & o);
    return (v8sf)(o | ((x & 0x8000) << 16));
}
INLINE v8hu f32_to_f16(v8sf v)
{
    const uint32_t magic = ((127 - 15) + (23 - 10) + 1) << 23;
    v8su f = (v8su)v, sign = f & 0x80000000u;
    f ^= sign;
    v8su big = (v8su)(f > 0x7f800000u), nanv = (big & 0x7e00u) | (~big & 0x7c00u);
    v8su den = (v8su)((v8sf)f + (v8sf)((v8su){0} + magic)) - magic;
    v8su nrm = (f + ((uint32_t)(15 - 127) << 23) + 0xfffu + ((f >> 13) & 1)) >> 13;
    v8su isbig = (v8su)(f >= ((127u + 16) << 23)), isden = (v8su)(f < (113u << 23));
    v8su o = (isbig & nanv) | (~isbig & ((isden & den) | (~isden & nrm)));
    return narrow16(o | (sign >> 16));
}
INLINE v8sf bf16_to_f32(v8hu h) { return (v8sf)(__builtin_convertvector(h, v8su) << 16); }
INLINE v8hu f32_to_bf16(v8sf v)
{
    v8su x = (v8su)v;
    v8su nan = (v8su)((x & 0x7fffffffu) > 0x7f800000u);
    v8su r = (nan & ((x >> 16) | 0x40)) | (~nan & ((x + 0x7fffu + ((x >> 16) & 1)) >> 16));
    return narrow16(r);
}

/* scalar versions (the tails) */
INLINE float fmin_s(float a, float b)
{
    union { float f; uint32_t u; } x = {a}, y = {b}, r;
    r.u = x.u | y.u;
    return a < b ? a : b < a ? b : r.f;
}
INLINE float fmax_s(float a, float b)
{
    union { float f; uint32_t u; } x = {a}, y = {b}, r;
    r.u = a == b ? x.u & y.u : x.u | y.u;
    return a > b ? a : b > a ? b : r.f;
}
INLINE double dmin_s(double a, double b)
{
    union { double f; uint64_t u; } x = {a}, y = {b}, r;
    r.u = x.u | y.u;
    return a < b ? a : b < a ? b : r.f;
}
INLINE double dmax_s(double a, double b)
{
    union { double f; uint64_t u; } x = {a}, y = {b}, r;
    r.u = a == b ? x.u & y.u : x.u | y.u;
    return a > b ? a : b > a ? b : r.f;
}
#define S_F32_SUM(x, y) ((x) + (y))
#define S_F32_PROD(x, y) ((x) * (y))
#define S_min_v8sf fmin_s
#define S_max_v8sf fmax_s
#define S_min_v4df dmin_s
#define S_max_v4df dmax_s
#define S_HALF(TO, FROM, F, x, y) FROM(F(TO(x), TO(y)))
#define S_H_SUM(x, y) S_HALF(ipu_f16_to_f32, ipu_f32_to_f16, S_F32_SUM, x, y)
#define S_H_PROD(x, y) S_HALF(ipu_f16_to_f32, ipu_f32_to_f16, S_F32_PROD, x, y)
#define S_H_MIN(x, y) S_HALF(ipu_f16_to_f32, ipu_f32_to_f16, fmin_s, x, y)
#define S_H_MAX(x, y) S_HALF(ipu_f16_to_f32, ipu_f32_to_f16, fmax_s, x, y)
#define S_B_SUM(x, y) S_HALF(ipu_bf16_to_f32, ipu_f32_to_bf16, S_F32_SUM, x, y)
#define S_B_PROD(x, y) S_HALF(ipu_bf16_to_f32, ipu_f32_to_bf16, S_F32_PROD, x, y)
#define S_B_MIN(x, y) S_HALF(ipu_bf16_to_f32, ipu_f32_to_bf16, fmin_s, x, y)
#define S_B_MAX(x, y) S_HALF(ipu_bf16_to_f32, ipu_f32_to_bf16, fmax_s, x, y)
#define S_USUM(UT, x, y) ((__typeof__(x))((UT)(x) + (UT)(y)))
#define S_UPROD(UT, x, y) ((__typeof__(x))((UT)(x) * (UT)(y)))
#define S_IMIN(x, y) ((x) < (y) ? (x) : (y))
#define S_IMAX(x, y) ((x) > (y) ? (x) : (y))
#define S_I8_SUM(x, y) S_USUM(uint8_t, x, y)
#define S_I8_PROD(x, y) S_UPROD(unsigned, x, y)
#define S_I8_MIN S_IMIN
#define S_I8_MAX S_IMAX
#define S_U8_MIN S_IMIN
#define S_U8_MAX S_IMAX
#define S_I32_SUM(x, y) S_USUM(uint32_t, x, y)
#define S_I32_PROD(x, y) S_UPROD(uint32_t, x, y)
#define S_I32_MIN S_IMIN
#define S_I32_MAX S_IMAX
#define S_I64_SUM(x, y) S_USUM(uint64_t, x, y)
#define S_I64_PROD(x, y) S_UPROD(uint64_t, x, y)
#define S_I64_MIN S_IMIN
#define S_I64_MAX S_IMAX

/* ------------------------------------------------------------- kernels
 * KERNEL(name, VT, ET, EXPR, SEXPR): dst[i] = EXPR(x, y) over vectors
 * x = a[..], y = b[..] of type VT holding elements of type ET; SEXPR is the
 * same on scalars (the tail). dst may equal a or b:
 * each vector is loaded before the store that may overwrite it. */
#define KERNEL(name, VT, ET, EXPR, SEXPR)                                           \
    INLINE void name(void *dst, const void *a, const void *b, size_t n)       \
    {                                                                          \
        enum { W = sizeof(VT) / sizeof(ET) };                                  \
        char *d = dst;                                                         \
        const char *pa = a, *pb = b;                                           \
        size_t i = 0;                                                          \
        for (; i + 2 * W <= n; i += 2 * W) {                                   \
            VT x0, y0, x1, y1;                                                 \
            memcpy(&x0, pa + i * sizeof(ET), sizeof(VT));                      \
            memcpy(&x1, pa + (i + W) * sizeof(ET), sizeof(VT));                \
            memcpy(&y0, pb + i * sizeof(ET), sizeof(VT));                      \
            memcpy(&y1, pb + (i + W) * sizeof(ET), sizeof(VT));                \
            VT r0 = EXPR(x0, y0), r1 = EXPR(x1, y1);                           \
            memcpy(d + i * sizeof(ET), &r0, sizeof(VT));                       \
            memcpy(d + (i + W) * sizeof(ET), &r1, sizeof(VT));                 \
        }                                                                      \
        for (; i + W <= n; i += W) {                                           \
            VT x, y;                                                           \
            memcpy(&x, pa + i * sizeof(ET), sizeof(VT));                       \
            memcpy(&y, pb + i * sizeof(ET), sizeof(VT));                       \
            VT r = EXPR(x, y);                                                 \
            memcpy(d + i * sizeof(ET), &r, sizeof(VT));                        \
        }                                                                      \
        for (; i < n; i++) { /* scalar tail: short calls stay cheap */         \
            ET x, y;                                                           \
            memcpy(&x, pa + i * sizeof(ET), sizeof(ET));                       \
            memcpy(&y, pb + i * sizeof(ET), sizeof(ET));                       \
            ET r = SEXPR(x, y);                                                \
            memcpy(d + i * sizeof(ET), &r, sizeof(ET));                        \
        }                                                                      \
    }

/* floats */
#define F32_SUM(x, y) ((x) + (y))
#define F32_PROD(x, y) ((x) * (y))
KERNEL(k_f32_sum, v8sf, float, F32_SUM, S_F32_SUM)
KERNEL(k_f32_prod, v8sf, float, F32_PROD, S_F32_PROD)
KERNEL(k_f32_min, v8sf, float, min_v8sf, S_min_v8sf)
KERNEL(k_f32_max, v8sf, float, max_v8sf, S_max_v8sf)
KERNEL(k_f64_sum, v4df, double, F32_SUM, S_F32_SUM)
KERNEL(k_f64_prod, v4df, double, F32_PROD, S_F32_PROD)
KERNEL(k_f64_min, v4df, double, min_v4df, S_min_v4df)
KERNEL(k_f64_max, v4df, double, max_v4df, S_max_v4df)

/* float16 / bfloat16: 8 elements (16 bytes) per vector, computed in f32 */
#define HALF(CV, BACK, F, x, y) BACK(F(CV(x), CV(y)))
#define H_SUM(x, y) HALF(f16_to_f32, f32_to_f16, F32_SUM, x, y)
#define H_PROD(x, y) HALF(f16_to_f32, f32_to_f16, F32_PROD, x, y)
#define H_MIN(x, y) HALF(f16_to_f32, f32_to_f16, min_v8sf, x, y)
#define H_MAX(x, y) HALF(f16_to_f32, f32_to_f16, max_v8sf, x, y)
#define B_SUM(x, y) HALF(bf16_to_f32, f32_to_bf16, F32_SUM, x, y)
#define B_PROD(x, y) HALF(bf16_to_f32, f32_to_bf16, F32_PROD, x, y)
#define B_MIN(x, y) HALF(bf16_to_f32, f32_to_bf16, min_v8sf, x, y)
#define B_MAX(x, y) HALF(bf16_to_f32, f32_to_bf16, max_v8sf, x, y)
KERNEL(k_f16_sum, v8hu, uint16_t, H_SUM, S_H_SUM)
KERNEL(k_f16_prod, v8hu, uint16_t, H_PROD, S_H_PROD)
KERNEL(k_f16_min, v8hu, uint16_t, H_MIN, S_H_MIN)
KERNEL(k_f16_max, v8hu, uint16_t, H_MAX, S_H_MAX)
KERNEL(k_bf16_sum, v8hu, uint16_t, B_SUM, S_B_SUM)
KERNEL(k_bf16_prod, v8hu, uint16_t, B_PROD, S_B_PROD)
KERNEL(k_bf16_min, v8hu, uint16_t, B_MIN, S_B_MIN)
KERNEL(k_bf16_max, v8hu, uint16_t, B_MAX, S_B_MAX)

/* integers: SUM / PROD in the unsigned type (wrapping), MIN / MAX signed
 * or unsigned as the dtype is */
#define U_SUM(UV, x, y) ((__typeof__(x))((UV)(x) + (UV)(y)))
#define U_PROD(UV, x, y) ((__typeof__(x))((UV)(x) * (UV)(y)))
#define I8_SUM(x, y) U_SUM(v32qu, x, y)
#define I8_PROD(x, y) U_PROD(v32qu, x, y)
#define I8_MIN(x, y) IMIN(v32qi, x, y)
#define I8_MAX(x, y) IMAX(v32qi, x, y)
#define U8_MIN(x, y) IMIN(v32qu, x, y)
#define U8_MAX(x, y) IMAX(v32qu, x, y)
#define I32_SUM(x, y) U_SUM(v8su, x, y)
#define I32_PROD(x, y) U_PROD(v8su, x, y)
#define I32_MIN(x, y) IMIN(v8si, x, y)
#define I32_MAX(x, y) IMAX(v8si, x, y)
#define I64_SUM(x, y) U_SUM(v4du, x, y)
#define I64_PROD(x, y) U_PROD(v4du, x, y)
#define I64_MIN(x, y) IMIN(v4di, x, y)
#define I64_MAX(x, y) IMAX(v4di, x, y)
KERNEL(k_i8_sum, v32qi, int8_t, I8_SUM, S_I8_SUM)
KERNEL(k_i8_prod, v32qi, int8_t, I8_PROD, S_I8_PROD)
KERNEL(k_i8_min, v32qi, int8_t, I8_MIN, S_I8_MIN)
KERNEL(k_i8_max, v32qi, int8_t, I8_MAX, S_I8_MAX)
KERNEL(k_u8_sum, v32qu, uint8_t, I8_SUM, S_I8_SUM)
KERNEL(k_u8_prod, v32qu, uint8_t, I8_PROD, S_I8_PROD)
KERNEL(k_u8_min, v32qu, uint8_t, U8_MIN, S_U8_MIN)
KERNEL(k_u8_max, v32qu, uint8_t, U8_MAX, S_U8_MAX)
KERNEL(k_i32_sum, v8si, int32_t, I32_SUM, S_I32_SUM)
KERNEL(k_i32_prod, v8si, int32_t, I32_PROD, S_I32_PROD)
KERNEL(k_i32_min, v8si, int32_t, I32_MIN, S_I32_MIN)
KERNEL(k_i32_max, v8si, int32_t, I32_MAX, S_I32_MAX)
KERNEL(k_i64_sum, v4di, int64_t, I64_SUM, S_I64_SUM)
KERNEL(k_i64_prod, v4di, int64_t, I64_PROD, S_I64_PROD)
KERNEL(k_i64_min, v4di, int64_t, I64_MIN, S_I64_MIN)
KERNEL(k_i64_max, v4di, int64_t, I64_MAX, S_I64_MAX)

/* One cloned dispatcher, so the kernels inline into both targets and a call
 * costs one indirect jump. op is SUM, PROD, MIN or MAX here. */
#define CASE4(DT, p)                                                           \
    case DT:                                                                   \
        switch (op) {                                                          \
        case GCL_SUM: k_##p##_sum(dst, a, b, n); return;                       \
        case GCL_PROD: k_##p##_prod(dst, a, b, n); return;                     \
        case GCL_MIN: k_##p##_min(dst, a, b, n); return;                       \
        default: k_##p##_max(dst, a, b, n); return;                            \
        }
static void GCL_HOT reduce3(void *dst, const void *a, const void *b, size_t n, gcl_dtype_t dt,
                            gcl_op_t op)
{
    switch (dt) {
    CASE4(GCL_FLOAT32, f32)
    CASE4(GCL_FLOAT64, f64)
    CASE4(GCL_FLOAT16, f16)
    CASE4(GCL_BFLOAT16, bf16)
    CASE4(GCL_INT8, i8)
    CASE4(GCL_UINT8, u8)
    CASE4(GCL_INT32, i32)
    default: /* GCL_INT64 */
        switch (op) {
        case GCL_SUM: k_i64_sum(dst, a, b, n); return;
        case GCL_PROD: k_i64_prod(dst, a, b, n); return;
        case GCL_MIN: k_i64_min(dst, a, b, n); return;
        default: k_i64_max(dst, a, b, n); return;
        }
    }
}

static gcl_status_t check(const void *dst, const void *a, const void *b, size_t count,
                          gcl_dtype_t dtype, gcl_op_t op)
{
    if ((unsigned)dtype >= GCL_DTYPE_COUNT || (unsigned)op >= GCL_OP_COUNT)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_reduce_local: dtype %d or op %d out of range",
                             (int)dtype, (int)op);
    if (count > 0 && (dst == NULL || a == NULL || b == NULL))
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_reduce_local: NULL buffer");
    return GCL_OK;
}

gcl_status_t gcl_reduce_local3(void *dst, const void *a, const void *b, size_t count,
                               gcl_dtype_t dtype, gcl_op_t op)
{
    gcl_status_t st = check(dst, a, b, count, dtype, op);
    if (st != GCL_OK || count == 0)
        return st;
    reduce3(dst, a, b, count, dtype, op == GCL_AVG ? GCL_SUM : op);
    return GCL_OK;
}

gcl_status_t gcl_reduce_local(void *dst, const void *src, size_t count, gcl_dtype_t dtype,
                              gcl_op_t op)
{
    return gcl_reduce_local3(dst, dst, src, count, dtype, op);
}

/* ------------------------------------------------------------------ AVG */

#define DIVK(name, VT, ET, EXPR)                                               \
    INLINE void name(void *buf, size_t n, int div)                             \
    {                                                                          \
        enum { W = sizeof(VT) / sizeof(ET) };                                  \
        char *p = buf;                                                         \
        for (size_t i = 0; i < n; i += W) {                                    \
            size_t k = n - i < W ? n - i : W;                                  \
            VT x = {0};                                                        \
            memcpy(&x, p + i * sizeof(ET), k * sizeof(ET));                    \
            VT r = EXPR;                                                       \
            memcpy(p + i * sizeof(ET), &r, k * sizeof(ET));                    \
        }                                                                      \
    }
/* integers through double: trunc(x / n) is exact for |x| < 2^32, n < 2^22 */
typedef int8_t v4qi __attribute__((vector_size(4)));
typedef uint8_t v4qu __attribute__((vector_size(4)));
#define IDIV(IT, x)                                                            \
    __builtin_convertvector(__builtin_convertvector(x, v4df) / (double)div, IT)
DIVK(d_f32, v8sf, float, x / (float)div)
DIVK(d_f64, v4df, double, x / (double)div)
DIVK(d_f16, v8hu, uint16_t, f32_to_f16(f16_to_f32(x) / (float)div))
DIVK(d_bf16, v8hu, uint16_t, f32_to_bf16(bf16_to_f32(x) / (float)div))
DIVK(d_i8, v4qi, int8_t, IDIV(v4qi, x))
DIVK(d_u8, v4qu, uint8_t, IDIV(v4qu, x))
DIVK(d_i32, v4si, int32_t, IDIV(v4si, x))

static void GCL_HOT finish_avg(void *buf, size_t n, gcl_dtype_t dt, int div)
{
    switch (dt) {
    case GCL_FLOAT32: d_f32(buf, n, div); break;
    case GCL_FLOAT64: d_f64(buf, n, div); break;
    case GCL_FLOAT16: d_f16(buf, n, div); break;
    case GCL_BFLOAT16: d_bf16(buf, n, div); break;
    case GCL_INT8: d_i8(buf, n, div); break;
    case GCL_UINT8: d_u8(buf, n, div); break;
    case GCL_INT32: d_i32(buf, n, div); break;
    case GCL_INT64:
        for (size_t i = 0; i < n; i++)
            ((int64_t *)buf)[i] /= div;
        break;
    default: break;
    }
}

void gcl_reduce_finish_avg(void *buf, size_t count, gcl_dtype_t dtype, int n)
{
    if (buf == NULL || count == 0 || n <= 1 || (unsigned)dtype >= GCL_DTYPE_COUNT)
        return;
    finish_avg(buf, count, dtype, n);
}
