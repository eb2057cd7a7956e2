/* Private helpers shared by the elementwise-style op families (unary,
 * binary, cast, softmax, norm, reduce): input checks, the NumPy broadcasting
 * iterator, vectorisable exp, sigmoid, tanh and erf, and ipu_par_rows,
 * which the other row loops of our own (movement.h's copies, the
 * channels-last Concat) use too. */
#ifndef IPU_EXEC_OPS_EW_H
#define IPU_EXEC_OPS_EW_H

#include "graph/op.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define IPU_EW_MAX_IN 4

/* Hot loops: vectorised with -O3's cost model (-O2 vectorises only loops
 * without an epilogue) and cloned for x86-64-v3 (AVX2 + FMA), chosen at load
 * time by CPU feature. (A clone for "arch=haswell" would be chosen only on
 * Haswell itself: its resolver tests the CPU model, so AMD and later Intel
 * cores would get the SSE2 default.) */
#if defined(__x86_64__) && !defined(IPU_EW_NO_CLONES) && __GNUC__ >= 12
#define IPU_EW_CLONES , target_clones("arch=x86-64-v3", "default")
#elif defined(__x86_64__) && !defined(IPU_EW_NO_CLONES)
#define IPU_EW_CLONES , target_clones("avx2", "default")
#else
#define IPU_EW_CLONES
#endif
#define IPU_EW_HOT __attribute__((optimize("O3", "no-math-errno", "no-trapping-math") IPU_EW_CLONES))

/* Check the node has between min_in and max_in input slots, that the first
 * n_required are present, and between 1 and max_out outputs. */
ipu_status_t ipu_ew_check_arity(const ipu_node_t *n, int min_in, int max_in,
                                int n_required, int max_out);

/* Error unless input slot i (present) has dtype dt. */
ipu_status_t ipu_ew_check_dtype(const ipu_graph_t *g, const ipu_node_t *n, int i, ipu_dtype_t dt);

/* Index into per-dtype kernel tables: f32 0, i64 1, i32 2, bool 3, else -1. */
static inline int ipu_ew_type_index(ipu_dtype_t dt)
{
    switch (dt) {
    case IPU_DTYPE_FLOAT: return 0;
    case IPU_DTYPE_INT64: return 1;
    case IPU_DTYPE_INT32: return 2;
    case IPU_DTYPE_BOOL:  return 3;
    default: return -1;
    }
}

/* Broadcast the shapes of input slots [first, first + count) of n (absent
 * ones skipped) into rank/dims; IPU_ERR_SHAPE naming the node otherwise. */
ipu_status_t ipu_ew_infer_broadcast(const ipu_graph_t *g, const ipu_node_t *n, int first,
                                    int count, int *rank, int64_t *dims);

/* A row kernel: out[i] = f(in[0][i * step[0]], in[1][i * step[1]], ...) for
 * i < len; each step is 0 (broadcast scalar along the row) or 1. */
typedef void (*ipu_ew_row_fn)(void *out, const void *const *in, const int64_t *step,
                              int64_t len, const void *arg);

/* Apply fn over out's shape, broadcasting the n_in (<= IPU_EW_MAX_IN) inputs
 * to it NumPy-style. Dimensions are coalesced first, so equal shapes make
 * one call over the whole tensor and [N,C,H,W] x [C,1,1] makes N*C calls of
 * H*W with a scalar second operand. The calls (or the one call's elements)
 * are split over threads (the IPU's team, ipu_par_rows) when what they
 * read and write reaches IPU_TEAM_MIN_BYTES; out may be an input of out's
 * own shape (each element is then read before it is written, by the same
 * thread), no other overlap. */
void ipu_ew_apply(int threads, int n_in, const ipu_tensor_t *in, const ipu_tensor_t *out,
                  ipu_ew_row_fn fn, const void *arg);

/* Copy row kernel for elements of arg == (size_t *) bytes (broadcasting). */
void ipu_ew_copy_row(void *out, const void *const *in, const int64_t *step, int64_t len,
                     const void *arg);

/* ---- vectorisable float math -------------------------------------------
 * Branch-free, so that loops calling them (in IPU_EW_HOT functions)
 * vectorise; NaN in gives NaN out. Relative error bounds in units of
 * FLT_EPSILON (2^-23) where the result is a normal float, with or without
 * FMA, checked against double-precision libm over dense sweeps by
 * tests/unit/test_ops_elementwise.c: exp 1.5, sigmoid 2, tanh 3.5, erf 1. */
#define IPU_EW_INLINE static inline __attribute__((always_inline))

IPU_EW_INLINE float ipu_ew_bits_f(uint32_t i)
{
    float f;
    memcpy(&f, &i, 4);
    return f;
}

/* exp(r) for |r| <= ln2 / 2: degree-6 minimax polynomial, relative error
 * 2e-9 before rounding. */
IPU_EW_INLINE float ipu_ew_exp_poly(float r)
{
    /* Estrin's scheme: a shorter dependency chain than Horner's */
    float r2 = r * r;
    float a = 0x1.126782p-7f + r * 0x1.6ae730p-10f;
    float b = 0x1.55541ap-3f + r * 0x1.555822p-5f;
    float c = 1.0f + r * 0x1.fffffcp-2f;
    float p = b + r2 * a;
    return 1.0f + r * (c + r2 * p);
}

/* exp(x) = 2^n exp(r) with n = round(x / ln2) (by adding 1.5 * 2^23) and
 * r = x - n ln2 (Cody-Waite: ln2 in two parts). */
#define IPU_EW_LOG2E 1.44269504088896341f
#define IPU_EW_LN2_HI 0.693359375f
#define IPU_EW_LN2_LO -2.12194440e-4f

/* exp(x): +inf from 88.7228 (where expf overflows), gradual underflow to
 * denormals and then 0 below -87.34; exp(-inf) == 0. 2^n is applied as
 * 2^(n/2) * 2^(n - n/2), so n in [-150, 128] needs no special case. */
IPU_EW_INLINE float ipu_ew_expf(float x)
{
    float xc = x > 88.8f ? 88.8f : x;       /* keep NaN */
    xc = xc < -104.0f ? -104.0f : xc;
    const float shifter = 12582912.0f;      /* 1.5 * 2^23 */
    float t = xc * IPU_EW_LOG2E + shifter;
    float fn = t - shifter;
    float r = xc - fn * IPU_EW_LN2_HI;
    r = r - fn * IPU_EW_LN2_LO;
    float p = ipu_ew_exp_poly(r);
    uint32_t tb;
    memcpy(&tb, &t, 4);
    uint32_t n = tb - 0x4B400000u, h = (uint32_t)((int32_t)n >> 1); /* n = fn */
    return p * ipu_ew_bits_f((h + 127u) << 23) * ipu_ew_bits_f((n - h + 127u) << 23);
}

/* exp(x) for x <= 0 (softmax, sigmoid, erf): cheaper, as 2^n is built
 * directly (the shift constant carries the exponent bias); results below
 * FLT_MIN (x < -87.3365) flush to 0. Wrong for x > 0. */
IPU_EW_INLINE float ipu_ew_expf_nonpos(float x)
{
    const float shifter = 12583039.0f;      /* 1.5 * 2^23 + 127 */
    float t = x * IPU_EW_LOG2E + shifter;
    float fn = t - shifter;                 /* n; t's low bits hold n + 127 */
    float r = x - fn * IPU_EW_LN2_HI;
    r = r - fn * IPU_EW_LN2_LO;
    uint32_t tb;
    memcpy(&tb, &t, 4);
    float y = ipu_ew_exp_poly(r) * ipu_ew_bits_f(tb << 23);
    return x < -87.33654f ? 0.0f : y;
}

/* 1 / (1 + exp(-x)) as f = e / (1 + e) with e = exp(-|x|) (no overflow,
 * and the tail x < 0 keeps its relative accuracy), 1 - f for x > 0. */
IPU_EW_INLINE float ipu_ew_sigmoidf(float x)
{
    float e = ipu_ew_expf_nonpos(-fabsf(x));
    float f = e / (1.0f + e);
    return x > 0.0f ? 1.0f - f : f;
}

/* tanh(x) = x P(x^2) / Q(x^2) on [-9, 9] (Eigen's / MLAS's rational
 * approximation; tanh rounds to +-1 beyond). */
IPU_EW_INLINE float ipu_ew_tanhf(float x)
{
    float c = x > 9.0f ? 9.0f : x;           /* keep NaN */
    c = c < -9.0f ? -9.0f : c;
    float s = c * c;
    float p = -2.76076847742355e-16f;
    p = p * s + 2.00018790482477e-13f;
    p = p * s + -8.60467152213735e-11f;
    p = p * s + 5.12229709037114e-08f;
    p = p * s + 1.48572235717979e-05f;
    p = p * s + 6.37261928875436e-04f;
    p = p * s + 4.89352455891786e-03f;
    float q = 1.19825839466702e-06f;
    q = q * s + 1.18534705686654e-04f;
    q = q * s + 2.26843463243900e-03f;
    q = q * s + 4.89352518554385e-03f;
    return c * (p / q);                     /* not (c * p) / q: denormal c */
}

/* erf(x): x + x P(x^2) for |x| <= 0.921875, else 1 - exp(-(t + t Q(t)))
 * with t = |x| (the coefficients of N. Juffa's faithfully rounded erff,
 * also used by MLAS); 1 from |x| = 3.925, where erff rounds to 1. */
IPU_EW_INLINE float ipu_ew_erff(float x)
{
    float t = fabsf(x), s = x * x;
    float p = -5.99104969e-4f;
    p = p * s + 4.99339588e-3f;
    p = p * s + -2.67667342e-2f;
    p = p * s + 1.12818025e-1f;
    p = p * s + -3.76124859e-1f;
    p = p * s + 1.28379151e-1f;
    float small = p * t + t;
    float u = t > 3.925f ? 3.925f : t;       /* keep NaN */
    float u2 = u * u;
    float q0 = 1.28717512e-1f + u * 6.34846687e-1f;
    float q1 = 1.06777847e-1f + u * -2.42545605e-2f;
    float q2 = 3.88393435e-3f + u * -3.83208680e-4f;
    float q = q0 + u2 * (q1 + u2 * (q2 + u2 * 1.72948930e-5f));
    float big = 1.0f - ipu_ew_expf_nonpos(-(q * u + u));
    big = t >= 3.925f ? 1.0f : big;
    return copysignf(t > 0.921875f ? big : small, x);
}

/* fn(arg, r0, r1) over the rows [0, rows) in contiguous chunks, one per
 * thread of the calling IPU's team of threads (>= 1; a thread whose chunk
 * is empty skips it), when bytes (what the whole loop reads and writes)
 * reach IPU_TEAM_MIN_BYTES and there are 2 rows or more; else
 * fn(arg, 0, rows) on this thread. For loops whose rows are independent:
 * the result does not depend on the split. Used by the element-wise ops
 * here and by movement.h's copies, Softmax, the channels-last Concat and
 * BatchNormalization. */
typedef void (*ipu_par_rows_fn)(void *arg, int64_t r0, int64_t r1);
void ipu_par_rows(int threads, int64_t rows, size_t bytes, ipu_par_rows_fn fn, void *arg);

/* y[i] = y[i] * sigmoid(y[i]) for i < n, in place, split over threads
 * (the IPU's team) as ipu_par_rows does. On a CPU with AVX-512 (x86-64-v4)
 * with 512-bit vectors: the per-element cost of the exp and the division
 * bounds this loop, and gcc's x86-64-v4 clones prefer 256-bit ones. The
 * result is the same on every path with FMA (ipu_ew_sigmoidf's error). */
void ipu_ew_silu_f32(int threads, float *y, int64_t n);

/* Sum / maximum of n contiguous floats with 8 partial accumulators (so the
 * loop vectorises without -ffast-math); max of nothing is -inf. */
float ipu_ew_sum_f32(const float *x, int64_t n);
float ipu_ew_max_f32(const float *x, int64_t n);
/* Whether any of n contiguous floats is NaN. */
int ipu_ew_any_nan_f32(const float *x, int64_t n);
/* Dot product of n contiguous floats (8 partial sums). */
float ipu_ew_dot_f32(const float *x, const float *y, int64_t n);

#endif
