/* Helpers shared by the elementwise-style op families: see ew.h. */
#include "exec/ops/ew.h"

#include <math.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <omp.h>

ipu_status_t ipu_ew_check_arity(const ipu_node_t *n, int min_in, int max_in,
                                int n_required, int max_out)
{
    if (n->n_inputs < min_in || n->n_inputs > max_in)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "expects %d to %d inputs, has %d",
                            min_in, max_in, n->n_inputs);
    for (int i = 0; i < n_required && i < n->n_inputs; i++)
        if (n->inputs[i] < 0)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "required input %d is absent", i);
    if (n->n_outputs < 1 || n->n_outputs > max_out || n->outputs[0] < 0)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "expects 1 to %d outputs, has %d",
                            max_out, n->n_outputs);
    return IPU_OK;
}

ipu_status_t ipu_ew_check_dtype(const ipu_graph_t *g, const ipu_node_t *n, int i, ipu_dtype_t dt)
{
    const ipu_value_t *v = ipu_node_input(g, n, i);
    if (v && v->dtype != dt)
        return ipu_op_error(IPU_ERR_SHAPE, n, "input %d ('%s') is %s, expected %s", i, v->name,
                            ipu_dtype_name(v->dtype), ipu_dtype_name(dt));
    return IPU_OK;
}

ipu_status_t ipu_ew_infer_broadcast(const ipu_graph_t *g, const ipu_node_t *n, int first,
                                    int count, int *rank, int64_t *dims)
{
    *rank = 0;
    for (int i = first; i < first + count; i++) {
        const ipu_value_t *v = ipu_node_input(g, n, i);
        if (v == NULL)
            continue;
        int64_t tmp[IPU_MAX_RANK];
        int r;
        ipu_status_t st = ipu_op_broadcast(n, *rank, dims, v->rank, v->dims, &r, tmp);
        if (st != IPU_OK)
            return st;
        *rank = r;
        memcpy(dims, tmp, (size_t)r * sizeof(int64_t));
    }
    return IPU_OK;
}

/* ipu_ew_apply's coalesced loop: nd dimensions dims (the last the rows'
 * length), the inputs' strides st in elements (0: broadcast) */
typedef struct apply_plan {
    int n_in, nd;
    int64_t dims[IPU_MAX_RANK], st[IPU_EW_MAX_IN][IPU_MAX_RANK];
    size_t esz[IPU_EW_MAX_IN], osz;
    const void *base[IPU_EW_MAX_IN];
    int64_t step[IPU_EW_MAX_IN];
    char *out;
    ipu_ew_row_fn fn;
    const void *arg;
} apply_plan_t;

/* rows [r0, r1) of the plan: elements of its one row when nd <= 1, else
 * rows of dims[nd - 1] elements */
static void apply_rows(void *arg, int64_t r0, int64_t r1)
{
    const apply_plan_t *a = arg;
    const char *p[IPU_EW_MAX_IN];
    if (a->nd <= 1) {
        for (int k = 0; k < a->n_in; k++)
            p[k] = (const char *)a->base[k] + (size_t)(r0 * a->step[k]) * a->esz[k];
        a->fn(a->out + (size_t)r0 * a->osz, (const void *const *)p, a->step, r1 - r0, a->arg);
        return;
    }
    const int nd = a->nd;
    int64_t inner = a->dims[nd - 1], idx[IPU_MAX_RANK] = {0}, rem = r0;
    for (int d = nd - 2; d >= 0; d--) {
        idx[d] = rem % a->dims[d];
        rem /= a->dims[d];
    }
    for (int k = 0; k < a->n_in; k++) {
        int64_t at = 0;
        for (int d = 0; d < nd - 1; d++)
            at += idx[d] * a->st[k][d];
        p[k] = (const char *)a->base[k] + (size_t)at * a->esz[k];
    }
    for (int64_t it = r0; it < r1; it++) {
        a->fn(a->out + (size_t)(it * inner) * a->osz, (const void *const *)p, a->step, inner, a->arg);
        for (int d = nd - 2; d >= 0; d--) {
            if (++idx[d] < a->dims[d]) {
                for (int k = 0; k < a->n_in; k++)
                    p[k] += (size_t)a->st[k][d] * a->esz[k];
                break;
            }
            idx[d] = 0;
            for (int k = 0; k < a->n_in; k++)
                p[k] -= (size_t)(a->st[k][d] * (a->dims[d] - 1)) * a->esz[k];
        }
    }
}

void ipu_ew_apply(int threads, int n_in, const ipu_tensor_t *in, const ipu_tensor_t *out,
                  ipu_ew_row_fn fn, const void *arg)
{
    apply_plan_t a = {.n_in = n_in, .out = out->data, .fn = fn, .arg = arg};
    int nd = 0, r = out->rank;
    int64_t numel = ipu_tensor_numel(out);
    if (numel == 0)
        return;
    a.osz = ipu_dtype_size(out->dtype);
    size_t bytes = (size_t)numel * a.osz;
    for (int k = 0; k < n_in; k++) {
        a.esz[k] = ipu_dtype_size(in[k].dtype);
        a.base[k] = in[k].data;
        bytes += (size_t)ipu_tensor_numel(&in[k]) * a.esz[k];
    }
    for (int d = 0; d < r; d++) {
        int64_t s[IPU_EW_MAX_IN];
        if (out->dims[d] == 1)
            continue;
        for (int k = 0; k < n_in; k++) {
            int kd = d - (r - in[k].rank);
            s[k] = 0;
            if (kd >= 0 && in[k].dims[kd] != 1) {
                s[k] = 1;
                for (int j = kd + 1; j < in[k].rank; j++)
                    s[k] *= in[k].dims[j];
            }
        }
        int merge = nd > 0;
        for (int k = 0; k < n_in && merge; k++)
            merge = a.st[k][nd - 1] == s[k] * out->dims[d];
        if (merge) {
            a.dims[nd - 1] *= out->dims[d];
        } else {
            a.dims[nd] = out->dims[d];
            nd++;
        }
        for (int k = 0; k < n_in; k++)
            a.st[k][nd - 1] = s[k];
    }
    a.nd = nd;
    for (int k = 0; k < n_in; k++)
        a.step[k] = nd ? a.st[k][nd - 1] : 0;
    int64_t rows = nd == 0 ? 1 : nd == 1 ? a.dims[0] : numel / a.dims[nd - 1];
    ipu_par_rows(threads, rows, bytes, apply_rows, &a);
}

void ipu_ew_copy_row(void *out, const void *const *in, const int64_t *step, int64_t len,
                     const void *arg)
{
    size_t esz = *(const size_t *)arg;
    if (step[0]) {
        if (out != in[0])
            memmove(out, in[0], (size_t)len * esz);
        return;
    }
    char *o = out;
    for (int64_t i = 0; i < len; i++)
        memcpy(o + (size_t)i * esz, in[0], esz);
}

IPU_EW_HOT static void silu_hot(float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = y[i] * ipu_ew_sigmoidf(y[i]);
}

#if defined(__x86_64__) && !defined(__clang__) && !defined(IPU_EW_NO_CLONES) && __GNUC__ >= 12
#define W512 __attribute__((target("arch=x86-64-v4")))

/* exp(x) for x in [-104, +inf) (NaN for +inf), 16 at a time: ipu_ew_expf's
 * reduction and polynomial, with 2^n applied by vscalefps (which overflows
 * to +inf and underflows gradually by itself). */
W512 static inline __m512 exp_w512(__m512 x)
{
    const __m512 sh = _mm512_set1_ps(12582912.0f); /* 1.5 * 2^23: round to integer */
    __m512 fn = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(IPU_EW_LOG2E), sh), sh);
    __m512 r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(IPU_EW_LN2_HI), x);
    r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(IPU_EW_LN2_LO), r);
    /* ipu_ew_exp_poly, term by term */
    __m512 r2 = _mm512_mul_ps(r, r);
    __m512 a = _mm512_fmadd_ps(r, _mm512_set1_ps(0x1.6ae730p-10f), _mm512_set1_ps(0x1.126782p-7f));
    __m512 b = _mm512_fmadd_ps(r, _mm512_set1_ps(0x1.555822p-5f), _mm512_set1_ps(0x1.55541ap-3f));
    __m512 c = _mm512_fmadd_ps(r, _mm512_set1_ps(0x1.fffffcp-2f), _mm512_set1_ps(1.0f));
    __m512 p = _mm512_fmadd_ps(r2, a, b);
    p = _mm512_fmadd_ps(r, _mm512_fmadd_ps(r2, p, c), _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, fn);
}

/* silu_hot for x86-64-v4, 512 bits at a time, as x / (1 + exp(-x)): fewer
 * operations than x * ipu_ew_sigmoidf(x) (no |x|, no select, one
 * division), within the same bound (test_ops_elementwise). exp(-x) is
 * taken from -x >= -104 (x = +inf gives +inf, NaN stays NaN through x) and
 * overflows to +inf below x = -88.72, where the result is -0 for about
 * -1e-37; x = -inf gives NaN, as -inf * sigmoid(-inf) does. */
W512 static inline __m512 silu16(__m512 x)
{
    __m512 e = exp_w512(_mm512_max_ps(_mm512_sub_ps(_mm512_setzero_ps(), x), _mm512_set1_ps(-104.0f)));
    return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

W512 static void silu_w512(float *y, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, silu16(_mm512_loadu_ps(y + i)));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, silu16(_mm512_maskz_loadu_ps(m, y + i)));
    }
}

/* every feature target("arch=x86-64-v4") lets gcc use (BMI2 and the rest
 * of x86-64-v3 too, not only the AVX-512 subsets), and the OS saving the
 * AVX-512 registers */
static int has_x86_64_v4(void)
{
    static int known = -1; /* a benign race: every thread finds the same */
    if (known < 0)
        known = __builtin_cpu_supports("x86-64-v4");
    return known;
}
#else
static void silu_w512(float *y, int64_t n)
{
    silu_hot(y, n);
}

static int has_x86_64_v4(void)
{
    return 0;
}
#endif

enum { SILU_ROW = 4096 }; /* floats per row of ipu_par_rows */

typedef struct {
    float *y;
    int64_t n;
    void (*fn)(float *, int64_t);
} silu_job_t;

static void silu_rows(void *arg, int64_t r0, int64_t r1)
{
    const silu_job_t *j = arg;
    int64_t a = r0 * SILU_ROW, b = r1 * SILU_ROW < j->n ? r1 * SILU_ROW : j->n;
    j->fn(j->y + a, b - a);
}

void ipu_ew_silu_f32(int threads, float *y, int64_t n)
{
    silu_job_t j = {y, n, has_x86_64_v4() ? silu_w512 : silu_hot};
    ipu_par_rows(threads, (n + SILU_ROW - 1) / SILU_ROW, 2 * sizeof(float) * (size_t)n, silu_rows, &j);
}

IPU_EW_HOT float ipu_ew_sum_f32(const float *x, int64_t n)
{
    float p[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            p[k] += x[i + k];
    float s = ((p[0] + p[4]) + (p[1] + p[5])) + ((p[2] + p[6]) + (p[3] + p[7]));
    for (; i < n; i++)
        s += x[i];
    return s;
}

IPU_EW_HOT float ipu_ew_max_f32(const float *x, int64_t n)
{
    float p[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                  -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            p[k] = x[i + k] > p[k] ? x[i + k] : p[k];
    float m = p[0];
    for (int k = 1; k < 8; k++)
        m = p[k] > m ? p[k] : m;
    for (; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

IPU_EW_HOT int ipu_ew_any_nan_f32(const float *x, int64_t n)
{
    int any = 0;
    for (int64_t i = 0; i < n; i++)
        any |= x[i] != x[i];
    return any;
}

IPU_EW_HOT float ipu_ew_dot_f32(const float *x, const float *y, int64_t n)
{
    float p[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            p[k] += x[i + k] * y[i + k];
    float s = ((p[0] + p[4]) + (p[1] + p[5])) + ((p[2] + p[6]) + (p[3] + p[7]));
    for (; i < n; i++)
        s += x[i] * y[i];
    return s;
}

void ipu_par_rows(int threads, int64_t rows, size_t bytes, ipu_par_rows_fn fn, void *arg)
{
    if (threads < 2 || rows < 2 || bytes < IPU_TEAM_MIN_BYTES) {
        if (rows > 0)
            fn(arg, 0, rows);
        return;
    }
    /* the whole team, even with fewer rows than threads: a smaller region
     * makes libgomp end the threads it leaves out, and the ones it starts
     * again for the next full one inherit the worker's single CPU instead
     * of their own (onednn_cpu.c binds each thread once) */
#pragma omp parallel num_threads(threads)
    {
        int64_t i = omp_get_thread_num(), n = omp_get_num_threads();
        int64_t r0 = rows * i / n, r1 = rows * (i + 1) / n;
        if (r1 > r0)
            fn(arg, r0, r1);
    }
}
