/* Reference side of libgcl's multi-rank tests: see gcl_ref.h. */
#include "gcl_ref.h"

#include "collectives/types.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t ref_dsize(gcl_dtype_t dt) { return gcl_dtype_info(dt)->size; }
const char *ref_dtype_name(gcl_dtype_t dt) { return gcl_dtype_info(dt)->name; }
double ref_eps(gcl_dtype_t dt) { return gcl_dtype_info(dt)->eps; }
int ref_is_float(gcl_dtype_t dt) { return gcl_dtype_info(dt)->is_float; }
const char *ref_op_name(gcl_op_t op) { return gcl_op_name(op); }

/* ------------------------------------------------ float16 / bfloat16 bits */

uint16_t ref_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)
        return sign | 0x7e00;                       /* NaN */
    if (ax >= 0x47800000u)
        return sign | 0x7c00;                       /* >= 2^16: infinity */
    if (ax < 0x38800000u) {                         /* < 2^-14: subnormal half */
        float v;
        memcpy(&v, &ax, 4);
        return sign | (uint16_t)lrintf(v * 0x1p24f); /* exact scaling, rint is RNE */
    }
    uint32_t mant = ax & 0x7fffffu;
    uint32_t h = ((ax >> 23) - 112) << 10 | mant >> 13;
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++;                                        /* carries into the exponent correctly */
    return sign | (uint16_t)h;
}

float ref_f16_to_f32(uint16_t h)
{
    int exp = (h >> 10) & 0x1f;
    unsigned mant = h & 0x3ffu;
    float v;
    if (exp == 0)
        v = ldexpf((float)mant, -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexpf((float)(mant | 0x400u), exp - 25);
    return (h & 0x8000) ? -v : v;
}

uint16_t ref_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

float ref_bf16_to_f32(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* --------------------------------------------------------- element access */

/* Element i of an integer buffer. */
static inline int64_t iget(const void *buf, size_t i, gcl_dtype_t dt)
{
    switch (dt) {
    case GCL_INT8:  return ((const int8_t *)buf)[i];
    case GCL_UINT8: return ((const uint8_t *)buf)[i];
    case GCL_INT32: return ((const int32_t *)buf)[i];
    default:        return ((const int64_t *)buf)[i];
    }
}

/* Element i of a buffer as a long double (exact for every dtype). */
static inline long double get(const void *buf, size_t i, gcl_dtype_t dt)
{
    switch (dt) {
    case GCL_FLOAT32:  return ((const float *)buf)[i];
    case GCL_FLOAT64:  return ((const double *)buf)[i];
    case GCL_FLOAT16:  return ref_f16_to_f32(((const uint16_t *)buf)[i]);
    case GCL_BFLOAT16: return ref_bf16_to_f32(((const uint16_t *)buf)[i]);
    default:           return iget(buf, i, dt);
    }
}

void ref_set(void *buf, size_t i, gcl_dtype_t dt, long double v)
{
    switch (dt) {
    case GCL_FLOAT32:  ((float *)buf)[i] = (float)v; break;
    case GCL_FLOAT64:  ((double *)buf)[i] = (double)v; break;
    case GCL_FLOAT16:  ((uint16_t *)buf)[i] = ref_f32_to_f16((float)v); break;
    case GCL_BFLOAT16: ((uint16_t *)buf)[i] = ref_f32_to_bf16((float)v); break;
    case GCL_INT8:     ((int8_t *)buf)[i] = (int8_t)v; break;
    case GCL_UINT8:    ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case GCL_INT32:    ((int32_t *)buf)[i] = (int32_t)v; break;
    case GCL_INT64:    ((int64_t *)buf)[i] = (int64_t)v; break;
    default: break;
    }
}

/* ----------------------------------------------------------------- inputs */

static uint64_t splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Integer inputs: sums of 8 ranks fit (i8 in [-16, 15], u8 in [0, 31], i32
 * below 2^27, i64 below 2^59 in magnitude); products of 8 ranks fit (i8/u8:
 * at most 6 factors 2, i32: factors up to 3, i64: up to 100). */
static int64_t int_input(uint64_t h, gcl_dtype_t dt, gcl_op_t op, int rank)
{
    int neg = (h >> 40) & 1;
    switch (op) {
    case GCL_SUM: case GCL_AVG:
        switch (dt) {
        case GCL_INT8:  return (int64_t)(h % 32) - 16;
        case GCL_UINT8: return (int64_t)(h % 32);
        case GCL_INT32: return (int64_t)(h % (1u << 28)) - (1 << 27);
        default:        return (int64_t)(h % (1ull << 60)) - (int64_t)(1ull << 59);
        }
    case GCL_PROD: {
        int64_t v;
        switch (dt) {
        case GCL_INT8: case GCL_UINT8: v = rank < 6 ? 1 + (int64_t)(h & 1) : 1; break;
        case GCL_INT32: v = 1 + (int64_t)(h % 3); break;
        default:        v = 1 + (int64_t)(h % 100); break;
        }
        return (neg && dt != GCL_UINT8) ? -v : v;
    }
    default: /* MIN, MAX: the whole range */
        switch (dt) {
        case GCL_INT8:  return (int8_t)h;
        case GCL_UINT8: return (uint8_t)h;
        case GCL_INT32: return (int32_t)h;
        default:        return (int64_t)h;
        }
    }
}

/* Float inputs in [0, 1) scaled per op: sums and averages in [-4, 4),
 * products +-[0.5, 2), MIN / MAX in [-100, 100). */
static double float_input(uint64_t h, gcl_op_t op)
{
    double u = (double)(h >> 11) * 0x1p-53;  /* [0, 1) */
    switch (op) {
    case GCL_SUM: case GCL_AVG: return -4 + 8 * u;
    case GCL_PROD:              return ((h & 1) ? -1 : 1) * (0.5 + 1.5 * u);
    default:                    return -100 + 200 * u;
    }
}

/* The hash of rank `rank`'s inputs: element i is drawn from splitmix(h0 ^ i). */
static uint64_t rank_hash(uint64_t seed, int rank)
{
    return splitmix(splitmix(seed) ^ (uint64_t)rank);
}

void ref_fill(void *buf, size_t n, gcl_dtype_t dt, gcl_op_t op, uint64_t seed, int rank)
{
    uint64_t h0 = rank_hash(seed, rank);
    for (size_t i = 0; i < n; i++) {
        uint64_t h = splitmix(h0 ^ i);
        if (!ref_is_float(dt)) {
            int64_t v = int_input(h, dt, op, rank);
            switch (dt) {
            case GCL_INT8:  ((int8_t *)buf)[i] = (int8_t)v; break;
            case GCL_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
            case GCL_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
            default:        ((int64_t *)buf)[i] = v; break;
            }
            continue;
        }
        ref_set(buf, i, dt, float_input(h, op));
    }
}

void ref_poison(void *buf, size_t bytes)
{
    memset(buf, 0xa5, bytes);
}

MPI_Datatype ref_mpi_type(gcl_dtype_t dt)
{
    switch (dt) {
    case GCL_FLOAT32: return MPI_FLOAT;
    case GCL_FLOAT64: return MPI_DOUBLE;
    case GCL_INT8:    return MPI_INT8_T;
    case GCL_UINT8:   return MPI_UINT8_T;
    case GCL_INT32:   return MPI_INT32_T;
    case GCL_INT64:   return MPI_INT64_T;
    default:          return MPI_DATATYPE_NULL;
    }
}

MPI_Op ref_mpi_op(gcl_op_t op)
{
    switch (op) {
    case GCL_SUM:  return MPI_SUM;
    case GCL_PROD: return MPI_PROD;
    case GCL_MIN:  return MPI_MIN;
    case GCL_MAX:  return MPI_MAX;
    default:       return MPI_OP_NULL;
    }
}

/* ----------------------------------------------------------------- checks */

static int world_rank(void)
{
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

/* Where a reduction's inputs come from: gathered (rank r's input at all + r *
 * stride elements), or drawn from the fill pattern (h0: rank_hash of each
 * rank), which needs no communication. */
typedef struct {
    const void *all;
    size_t stride;
    const uint64_t *h0;
    gcl_dtype_t dt;
    gcl_op_t op;
} src_t;

/* Element i of rank r's input (integers), as ref_fill stores it. */
static inline int64_t src_int(const src_t *s, int r, size_t i)
{
    if (!s->h0)
        return iget(s->all, (size_t)r * s->stride + i, s->dt);
    int64_t v = int_input(splitmix(s->h0[r] ^ i), s->dt, s->op, r);
    switch (s->dt) {
    case GCL_INT8:  return (int8_t)v;
    case GCL_UINT8: return (uint8_t)v;
    case GCL_INT32: return (int32_t)v;
    default:        return v;
    }
}

/* The same for floats: the input rounded to the dtype as ref_set does (exact). */
static inline long double src_float(const src_t *s, int r, size_t i)
{
    if (!s->h0)
        return get(s->all, (size_t)r * s->stride + i, s->dt);
    double v = float_input(splitmix(s->h0[r] ^ i), s->op);
    switch (s->dt) {
    case GCL_FLOAT32:  return (float)v;
    case GCL_FLOAT64:  return v;
    case GCL_FLOAT16:  return ref_f16_to_f32(ref_f32_to_f16((float)v));
    default:           return ref_bf16_to_f32(ref_f32_to_bf16((float)v));
    }
}

/* The exact reduction of element i over nranks inputs (integers). */
static int64_t int_reduce(const src_t *s, size_t i, int nranks)
{
    int64_t acc = src_int(s, 0, i);
    for (int r = 1; r < nranks; r++) {
        int64_t x = src_int(s, r, i);
        switch (s->op) {
        case GCL_SUM: case GCL_AVG: acc += x; break;
        case GCL_PROD: acc *= x; break;
        case GCL_MIN: acc = x < acc ? x : acc; break;
        default:      acc = x > acc ? x : acc; break;
        }
    }
    return s->op == GCL_AVG ? acc / nranks : acc;   /* C division truncates */
}

/* The reduction of element i in long double and its error bound (floats). */
static long double float_reduce(const src_t *s, size_t i, int nranks, long double *tol)
{
    long double acc = src_float(s, 0, i), mag = fabsl(acc);
    for (int r = 1; r < nranks; r++) {
        long double x = src_float(s, r, i);
        switch (s->op) {
        case GCL_SUM: case GCL_AVG: acc += x; mag += fabsl(x); break;
        case GCL_PROD: acc *= x; break;
        case GCL_MIN: acc = x < acc ? x : acc; break;
        default:      acc = x > acc ? x : acc; break;
        }
    }
    long double eps = ref_eps(s->dt), k = nranks - 1;
    switch (s->op) {
    case GCL_SUM:  *tol = k * eps * mag; break;
    case GCL_PROD: *tol = k * eps * fabsl(acc); break;
    case GCL_AVG:  /* the sum's bound / n, plus the rounding of the division */
        acc /= nranks;
        *tol = nranks > 1 ? k * eps * mag / nranks + eps * fabsl(acc) : 0;
        break;
    default:       *tol = 0; break;
    }
    return acc;
}

/* One array of n elements of `size` bytes, or an abort naming the reference. */
static void *ref_array(size_t n, size_t size)
{
    void *p = malloc(size * (n + 1));
    if (!p) {
        fprintf(stderr, "rank %d: out of memory for a reference of %zu elements\n", world_rank(), n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* Entries [lo, hi) of e (elements off + lo .. off + hi - 1 of the inputs). */
static void expect_range(ref_expect_t *e, const src_t *s, size_t off, int nranks, size_t lo, size_t hi)
{
    if (e->iwant) {
        for (size_t k = lo; k < hi; k++)
            e->iwant[k] = int_reduce(s, off + k, nranks);
        return;
    }
    for (size_t k = lo; k < hi; k++) {
        long double tol, want = float_reduce(s, off + k, nranks, &tol);
        e->want[k] = (double)want;
        /* where the result is rounded at all (tol > 0), the bound also
         * covers storing the reference as a double (half an ulp) */
        e->tol[k] = tol > 0 ? (double)(tol + fabsl(want - (long double)e->want[k])) * (1 + 0x1p-50) : 0;
    }
}

/* Point e's arrays into base (n entries). */
static void expect_arrays(ref_expect_t *e, void *base, size_t n, gcl_dtype_t dt)
{
    e->n = n;
    e->want = e->tol = NULL;
    e->iwant = NULL;
    if (ref_is_float(dt)) {
        e->want = base;
        e->tol = e->want + n;
    } else {
        e->iwant = base;
    }
}

static size_t expect_bytes(size_t n, gcl_dtype_t dt)
{
    return (n + 1) * (ref_is_float(dt) ? 2 * sizeof(double) : sizeof(int64_t));
}

void ref_expect(ref_expect_t *e, const void *all, size_t stride, size_t off, size_t n, int nranks,
                gcl_dtype_t dt, gcl_op_t op)
{
    src_t s = {all, stride, NULL, dt, op};
    expect_arrays(e, ref_array(expect_bytes(n, dt), 1), n, dt);
    e->win = MPI_WIN_NULL;
    expect_range(e, &s, off, nranks, 0, n);
}

/* Below this many input elements (n x members) each member computes the
 * whole reference itself. */
enum { SHARE_MIN = 1 << 16 };

void ref_expect_seeded(ref_expect_t *e, MPI_Comm mc, uint64_t seed, size_t off, size_t n, gcl_dtype_t dt,
                       gcl_op_t op)
{
    int nranks = 1, nn = 1, me = 0;
    MPI_Comm_size(mc, &nranks);
    /* each member's seed (callers may have drawn different ones) */
    uint64_t *h0 = ref_array((size_t)nranks, sizeof(uint64_t));
    MPI_Allgather(&seed, 1, MPI_UINT64_T, h0, 1, MPI_UINT64_T, mc);
    for (int r = 0; r < nranks; r++)
        h0[r] = rank_hash(h0[r], r);
    src_t s = {NULL, 0, h0, dt, op};
    e->win = MPI_WIN_NULL;
    if (nranks > 1 && n * (size_t)nranks >= SHARE_MIN) {
        /* the members share the work where they share a host (all or none
         * of them see a node communicator as large as mc) */
        MPI_Comm node;
        MPI_Comm_split_type(mc, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        MPI_Comm_size(node, &nn);
        MPI_Comm_rank(node, &me);
        if (nn == nranks) {
            void *base = NULL;
            MPI_Aint bytes = me == 0 ? (MPI_Aint)expect_bytes(n, dt) : 0, got;
            int unit;
            MPI_Win_allocate_shared(bytes, 8, MPI_INFO_NULL, node, &base, &e->win);
            MPI_Win_shared_query(e->win, 0, &got, &unit, &base);
            expect_arrays(e, base, n, dt);
            MPI_Win_fence(0, e->win);
        } else {
            nn = 1;
            me = 0;
        }
        MPI_Comm_free(&node);
    }
    if (e->win == MPI_WIN_NULL)
        expect_arrays(e, ref_array(expect_bytes(n, dt), 1), n, dt);
    expect_range(e, &s, off, nranks, n * (size_t)me / (size_t)nn, n * (size_t)(me + 1) / (size_t)nn);
    if (e->win != MPI_WIN_NULL)
        MPI_Win_fence(0, e->win);
    free(h0);
}

ref_expect_t ref_expect_part(const ref_expect_t *e, size_t off, size_t n)
{
    ref_expect_t p = {NULL, NULL, NULL, n, MPI_WIN_NULL};
    if (e->iwant)
        p.iwant = e->iwant + off;
    else {
        p.want = e->want + off;
        p.tol = e->tol + off;
    }
    return p;
}

void ref_expect_free(ref_expect_t *e)
{
    if (e->win != MPI_WIN_NULL)
        MPI_Win_free(&e->win);
    else
        free(e->iwant ? (void *)e->iwant : (void *)e->want);
    e->want = e->tol = NULL;
    e->iwant = NULL;
}

size_t ref_check_expect(const char *what, const void *got, const ref_expect_t *e, gcl_dtype_t dt)
{
    size_t bad = 0;
    for (size_t k = 0; k < e->n; k++) {
        if (e->iwant) {
            int64_t g = iget(got, k, dt);
            if (g != e->iwant[k] && bad++ == 0)
                fprintf(stderr, "rank %d: %s: element %zu of %zu: got %lld, want %lld\n", world_rank(), what, k,
                        e->n, (long long)g, (long long)e->iwant[k]);
            continue;
        }
        long double g = get(got, k, dt); /* exact */
        if (!(fabsl(g - e->want[k]) <= e->tol[k]) && bad++ == 0) {
            fprintf(stderr, "rank %d: %s: element %zu of %zu: got %.17Lg, want %.17g (tolerance %.3g)\n",
                    world_rank(), what, k, e->n, g, e->want[k], e->tol[k]);
        }
    }
    if (bad > 1)
        fprintf(stderr, "rank %d: %s: %zu of %zu elements wrong\n", world_rank(), what, bad, e->n);
    return bad;
}

size_t ref_check_reduced(const char *what, const void *got, const void *all, size_t stride,
                         size_t off, size_t n, int nranks, gcl_dtype_t dt, gcl_op_t op)
{
    ref_expect_t e;
    ref_expect(&e, all, stride, off, n, nranks, dt, op);
    size_t bad = ref_check_expect(what, got, &e, dt);
    ref_expect_free(&e);
    return bad;
}

size_t ref_check_equal(const char *what, const void *got, const void *want, size_t n, gcl_dtype_t dt)
{
    size_t es = ref_dsize(dt);
    if (memcmp(got, want, n * es) == 0)
        return 0;
    size_t bad = 0;
    for (size_t k = 0; k < n; k++)
        if (memcmp((const char *)got + k * es, (const char *)want + k * es, es) != 0 && bad++ == 0)
            fprintf(stderr, "rank %d: %s: element %zu of %zu: got %.10Lg, want %.10Lg\n", world_rank(), what, k,
                    n, get(got, k, dt), get(want, k, dt));
    if (bad > 1)
        fprintf(stderr, "rank %d: %s: %zu of %zu elements wrong\n", world_rank(), what, bad, n);
    return bad;
}
