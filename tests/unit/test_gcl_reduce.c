/* libgcl's local reduction kernels (src/collectives/reduce_local.h): every
 * dtype x op against tests/unit/ref_gcl_reduce.py (numpy / torch, run once by
 * the group setup with $PYTHON_REF), at every length from 0 to 70 and the
 * full 1037 elements (vector bodies and scalar tails), with dst separate,
 * dst == a, dst == b and the two-operand form; NaN, infinities, signed
 * zeros, float16/bfloat16 rounding ties and subnormals, integer wrap-around;
 * AVG through gcl_reduce_finish_avg; hand-computed cases and bad arguments. */
#include "collectives/copy.h"
#include "collectives/reduce_local.h"
#include "collectives/types.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "refdir.h"

#define N 1037
static char g_dir[256];
static const char *OP_FILE[GCL_OP_COUNT] = {"sum", "prod", "min", "max", "avg3"};

static int setup(void **state)
{
    (void)state;
    return refdir_make("gcl_reduce", "ref_gcl_reduce.py", g_dir, sizeof(g_dir));
}

static int teardown(void **state)
{
    (void)state;
    refdir_remove(g_dir);
    return 0;
}

static void *load(const char *dt, const char *what, size_t bytes)
{
    return refdir_load(g_dir, dt, what, bytes);
}

static int is_nan(gcl_dtype_t dt, const void *p)
{
    uint64_t u = 0;
    switch (dt) {
    case GCL_FLOAT32: memcpy(&u, p, 4); return (u & 0x7fffffffu) > 0x7f800000u;
    case GCL_FLOAT64: memcpy(&u, p, 8); return (u & ~(1ull << 63)) > 0x7ff0000000000000ull;
    case GCL_FLOAT16: memcpy(&u, p, 2); return (u & 0x7fff) > 0x7c00;
    case GCL_BFLOAT16: memcpy(&u, p, 2); return (u & 0x7fff) > 0x7f80;
    default: return 0;
    }
}

/* got[0..n) against exp (bitwise, NaN matching any NaN); got[n..tot) must
 * still hold the poison byte */
static void compare(gcl_dtype_t dt, gcl_op_t op, const char *how, size_t n, size_t tot,
                    const char *got, const char *exp)
{
    size_t es = gcl_dtype_size(dt);
    for (size_t i = 0; i < n; i++) {
        const char *g = got + i * es, *e = exp + i * es;
        int ok = is_nan(dt, e) ? is_nan(dt, g) : memcmp(g, e, es) == 0;
        if (!ok) {
            uint64_t gu = 0, eu = 0;
            memcpy(&gu, g, es);
            memcpy(&eu, e, es);
            fail_msg("%s %s (%s, n=%zu): element %zu: got 0x%llx, expected 0x%llx", gcl_dtype_info(dt)->name,
                     OP_FILE[op], how, n, i, (unsigned long long)gu, (unsigned long long)eu);
        }
    }
    for (size_t i = n * es; i < tot * es; i++)
        if ((unsigned char)got[i] != 0xa5)
            fail_msg("%s %s (%s, n=%zu): byte %zu past the end written", gcl_dtype_info(dt)->name, OP_FILE[op],
                     how, n, i);
}

/* dst = a op b in every aliasing form; AVG: then divide by 3 */
static void run_case(gcl_dtype_t dt, gcl_op_t op, size_t n, const char *a, const char *b,
                     const char *exp)
{
    size_t es = gcl_dtype_size(dt), bytes = N * es;
    char *d = malloc(bytes);
    assert_non_null(d);
    for (int form = 0; form < 4; form++) {
        memset(d, 0xa5, bytes);
        const char *how;
        switch (form) {
        case 0:
            how = "dst separate";
            assert_int_equal(gcl_reduce_local3(d, a, b, n, dt, op), GCL_OK);
            break;
        case 1:
            how = "dst == a";
            memcpy(d, a, n * es);
            assert_int_equal(gcl_reduce_local3(d, d, b, n, dt, op), GCL_OK);
            break;
        case 2:
            how = "dst == b";
            memcpy(d, b, n * es);
            assert_int_equal(gcl_reduce_local3(d, a, d, n, dt, op), GCL_OK);
            break;
        default:
            how = "gcl_reduce_local";
            memcpy(d, a, n * es);
            assert_int_equal(gcl_reduce_local(d, b, n, dt, op), GCL_OK);
            break;
        }
        if (op == GCL_AVG)
            gcl_reduce_finish_avg(d, n, dt, 3);
        compare(dt, op, how, n, N, d, exp);
    }
    free(d);
}

static void test_reference(void **state)
{
    (void)state;
    for (int dt = 0; dt < GCL_DTYPE_COUNT; dt++) {
        size_t bytes = N * gcl_dtype_size(dt);
        char *a = load(gcl_dtype_info(dt)->name, "a", bytes), *b = load(gcl_dtype_info(dt)->name, "b", bytes);
        for (int op = 0; op < GCL_OP_COUNT; op++) {
            char *exp = load(gcl_dtype_info(dt)->name, OP_FILE[op], bytes);
            for (size_t n = 0; n <= 70; n++)
                run_case(dt, op, n, a, b, exp);
            run_case(dt, op, N, a, b, exp);
            /* unaligned: start one element in */
            char *e1 = exp + gcl_dtype_size(dt);
            size_t es = gcl_dtype_size(dt);
            char *d = malloc(bytes);
            memset(d, 0xa5, bytes);
            assert_int_equal(gcl_reduce_local3(d + es, a + es, b + es, N - 1, dt, op), GCL_OK);
            if (op == GCL_AVG)
                gcl_reduce_finish_avg(d + es, N - 1, dt, 3);
            compare(dt, op, "unaligned", N - 1, N - 1, d + es, e1);
            free(d);
            free(exp);
        }
        free(a);
        free(b);
    }
}

/* values worked out by hand */
static void test_by_hand(void **state)
{
    (void)state;
    int8_t i8a[3] = {127, -128, 100}, i8b[3] = {1, -1, 100};
    assert_int_equal(gcl_reduce_local(i8a, i8b, 3, GCL_INT8, GCL_SUM), GCL_OK);
    assert_int_equal(i8a[0], -128); /* 128 wraps */
    assert_int_equal(i8a[1], 127);  /* -129 wraps */
    assert_int_equal(i8a[2], -56);  /* 200 - 256 */
    uint8_t u8a[2] = {200, 255}, u8b[2] = {2, 255};
    assert_int_equal(gcl_reduce_local(u8a, u8b, 2, GCL_UINT8, GCL_PROD), GCL_OK);
    assert_int_equal(u8a[0], 144); /* 400 - 256 */
    assert_int_equal(u8a[1], 1);   /* 65025 = 254 * 256 + 1 */
    int32_t i32a[2] = {INT32_MAX, 65536}, i32b[2] = {1, 65536};
    assert_int_equal(gcl_reduce_local(i32a, i32b, 2, GCL_INT32, GCL_SUM), GCL_OK);
    assert_int_equal(i32a[0], INT32_MIN);
    assert_int_equal(i32a[1], 131072);
    int64_t i64a[1] = {INT64_MAX}, i64b[1] = {INT64_MAX};
    assert_int_equal(gcl_reduce_local(i64a, i64b, 1, GCL_INT64, GCL_SUM), GCL_OK);
    assert_true(i64a[0] == -2);
    /* MIN/MAX: NaN either side, signed zeros in both orders */
    float fa[4] = {NAN, 1.0f, 0.0f, -0.0f}, fb[4] = {1.0f, NAN, -0.0f, 0.0f}, fd[4];
    assert_int_equal(gcl_reduce_local3(fd, fa, fb, 4, GCL_FLOAT32, GCL_MIN), GCL_OK);
    assert_true(isnan(fd[0]) && isnan(fd[1]));
    assert_true(fd[2] == 0 && signbit(fd[2]) && fd[3] == 0 && signbit(fd[3]));
    assert_int_equal(gcl_reduce_local3(fd, fa, fb, 4, GCL_FLOAT32, GCL_MAX), GCL_OK);
    assert_true(isnan(fd[0]) && isnan(fd[1]));
    assert_true(fd[2] == 0 && !signbit(fd[2]) && fd[3] == 0 && !signbit(fd[3]));
    /* float16: 2048 + 1 is a tie between 2048 and 2050 -> 2048 (even);
     * 2048 + 3 -> 2052 (tie, even); 65504 + 16 -> inf */
    uint16_t ha[3] = {0x6800, 0x6800, 0x7bff}, hb[3] = {0x3c00, 0x4200, 0x4c00};
    assert_int_equal(gcl_reduce_local(ha, hb, 3, GCL_FLOAT16, GCL_SUM), GCL_OK);
    assert_int_equal(ha[0], 0x6800);
    assert_int_equal(ha[1], 0x6802);
    assert_int_equal(ha[2], 0x7c00);
    /* bfloat16: 1 + 2^-8 ties to 1; 1 + 3 * 2^-8 ties to 1 + 2^-6 */
    uint16_t ba[2] = {0x3f80, 0x3f80}, bb[2] = {0x3b80, 0x3c40};
    assert_int_equal(gcl_reduce_local(ba, bb, 2, GCL_BFLOAT16, GCL_SUM), GCL_OK);
    assert_int_equal(ba[0], 0x3f80);
    assert_int_equal(ba[1], 0x3f82);
    /* AVG: reduces as SUM, the finish divides (truncating for integers) */
    int32_t av[4] = {7, -7, 8, -9}, bv[4] = {0, 0, 0, 0};
    assert_int_equal(gcl_reduce_local(av, bv, 4, GCL_INT32, GCL_AVG), GCL_OK);
    assert_int_equal(av[0], 7);
    gcl_reduce_finish_avg(av, 4, GCL_INT32, 2);
    assert_int_equal(av[0], 3);
    assert_int_equal(av[1], -3);
    assert_int_equal(av[2], 4);
    assert_int_equal(av[3], -4);
    double dv[1] = {1.0};
    gcl_reduce_finish_avg(dv, 1, GCL_FLOAT64, 3);
    assert_true(dv[0] == 1.0 / 3.0);
}

static void test_bad_args(void **state)
{
    (void)state;
    float x[1] = {1};
    assert_int_equal(gcl_reduce_local(x, x, 1, (gcl_dtype_t)GCL_DTYPE_COUNT, GCL_SUM),
                     GCL_ERR_INVALID_ARG);
    assert_int_equal(gcl_reduce_local(x, x, 1, (gcl_dtype_t)-1, GCL_SUM), GCL_ERR_INVALID_ARG);
    assert_int_equal(gcl_reduce_local(x, x, 1, GCL_FLOAT32, (gcl_op_t)GCL_OP_COUNT),
                     GCL_ERR_INVALID_ARG);
    assert_int_equal(gcl_reduce_local3(NULL, x, x, 1, GCL_FLOAT32, GCL_SUM), GCL_ERR_INVALID_ARG);
    assert_int_equal(gcl_reduce_local(NULL, NULL, 0, GCL_FLOAT32, GCL_SUM), GCL_OK);
    assert_true(x[0] == 1);
    gcl_reduce_finish_avg(NULL, 0, GCL_FLOAT32, 2); /* no-op */
}

/* gcl_copy / gcl_copy_stream against memcpy, for sizes around the 2 KiB
 * switch and every relative alignment class of source and destination
 * (the bytes around the destination must stay untouched). */
static void test_copy(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 31, 32, 127, 2047, 2048, 2049, 4096 + 33, 70001};
    size_t cap = 70001 + 256;
    unsigned char *src = malloc(cap), *dst = malloc(cap), *ref = malloc(cap);
    assert_non_null(src);
    assert_non_null(dst);
    assert_non_null(ref);
    for (size_t i = 0; i < cap; i++)
        src[i] = (unsigned char)(i * 131u + 7u);
    for (int stream = 0; stream < 2; stream++)
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
            for (size_t so = 0; so < 64; so += 9)
                for (size_t d = 0; d < 64; d += 5) {
                    size_t n = sizes[k];
                    memset(dst, 0xa5, cap);
                    memset(ref, 0xa5, cap);
                    memcpy(ref + d, src + so, n);
                    (stream ? gcl_copy_stream : gcl_copy)(dst + d, src + so, n);
                    if (memcmp(dst, ref, cap) != 0)
                        fail_msg("gcl_copy%s of %zu bytes, source offset %zu, destination offset %zu "
                                 "differs from memcpy", stream ? "_stream" : "", n, so, d);
                }
    free(src);
    free(dst);
    free(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference),
        cmocka_unit_test(test_by_hand),
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_copy),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
