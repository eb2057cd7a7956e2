/* Private helpers shared by the elementwise-style op families (unary,
 * binary, cast, softmax, norm, reduce): node error messages, input checks,
 * the NumPy broadcasting iterator and a vectorisable expf. */
#ifndef IPU_EXEC_OPS_EW_H
#define IPU_EXEC_OPS_EW_H

#include "graph/op.h"

#include <stdint.h>
#include <string.h>

#define IPU_EW_MAX_IN 4

/* Hot loops: vectorised with -O3's cost model (-O2 vectorises only loops
 * without an epilogue) and cloned for AVX2+FMA, chosen at load time. */
#if defined(__x86_64__) && !defined(IPU_EW_NO_CLONES)
#define IPU_EW_HOT __attribute__((optimize("O3", "no-math-errno"), target_clones("arch=haswell", "default")))
#else
#define IPU_EW_HOT __attribute__((optimize("O3", "no-math-errno")))
#endif

/* ipu_error() with the "node 'X' (Op): " prefix. */
ipu_status_t ipu_ew_error(ipu_status_t st, const ipu_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

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
 * H*W with a scalar second operand. */
void ipu_ew_apply(int n_in, const ipu_tensor_t *in, const ipu_tensor_t *out,
                  ipu_ew_row_fn fn, const void *arg);

/* Copy row kernel for elements of arg == (size_t *) bytes (broadcasting). */
void ipu_ew_copy_row(void *out, const void *const *in, const int64_t *step, int64_t len,
                     const void *arg);

/* exp(x) for float, branch-free so that loops calling it vectorise; within
 * 2 ulp of expf; exactly 0 for x < -87.3 (so exp(-inf) == 0), +inf above
 * 88.37 (a little early: expf overflows at 88.72), NaN for NaN. */
static inline float ipu_ew_expf(float x)
{
    const float hi = 88.37f, lo = -87.3365f;
    float xc = x > hi ? hi : x;
    xc = xc < lo ? lo : xc;
    /* n = round(x / ln2) by the 1.5 * 2^23 trick; r = x - n ln2 */
    const float shifter = 12582912.0f;
    float t = xc * 1.44269504088896341f + shifter;
    int32_t tb;
    memcpy(&tb, &t, 4);
    float fn = t - shifter;
    float r = xc - fn * 0.693359375f;
    r = r - fn * -2.12194440e-4f;
    float p = 1.9875691500E-4f;
    p = p * r + 1.3981999507E-3f;
    p = p * r + 8.3334519073E-3f;
    p = p * r + 4.1665795894E-2f;
    p = p * r + 1.6666665459E-1f;
    p = p * r + 5.0000001201E-1f;
    p = p * r * r + r + 1.0f;
    int32_t eb = (int32_t)((uint32_t)(tb - 0x4B400000 + 127) << 23);
    float scale;
    memcpy(&scale, &eb, 4);
    float y = p * scale;
    y = x < lo ? 0.0f : y;
    y = x > hi ? __builtin_inff() : y;
    return x != x ? x : y;
}



/* Sum / maximum of n contiguous floats with 8 partial accumulators (so the
 * loop vectorises without -ffast-math); max of nothing is -inf. */
float ipu_ew_sum_f32(const float *x, int64_t n);
float ipu_ew_max_f32(const float *x, int64_t n);
/* Dot product of n contiguous floats (8 partial sums). */
float ipu_ew_dot_f32(const float *x, const float *y, int64_t n);

#endif
