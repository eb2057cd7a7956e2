/* Add, Sub, Mul and Div on oneDNN's binary primitive (exec/onednn.h,
 * ipu_dnn_binary): A [2, 32, 7, 5] op B, B per channel ([2, 32, 1, 1] and
 * [1, 32, 1, 1]), a scalar ([1, 1, 1, 1]) or of A's shape; on our layout,
 * and with A read in a Conv primitive's output layout as the layout pass
 * (ops/dnn_chain.h) keeps it (the only way ops/binary.c runs it).
 *
 * Reference data comes from tests/unit/ref_binary.py (numpy, run once by
 * the group setup with $PYTHON_REF into a temporary folder). The Conv whose
 * layout A is read in is 1x1 with identity weights and no bias, so its
 * output is its input exactly and the reference of A op B still holds. */
#include "exec/onednn.h"
#include "harness.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "refdir.h"

static char g_dir[256];

enum { N = 2, C = 32, H = 7, W = 5, NA = N * C * H * W };

static const char *const g_ops[] = {"add", "sub", "mul", "div"};
static const ipu_dnn_binary_alg_t g_algs[] = {IPU_DNN_BINARY_ADD, IPU_DNN_BINARY_SUB,
                                              IPU_DNN_BINARY_MUL, IPU_DNN_BINARY_DIV};
static const struct {
    const char *name;
    int64_t dims[4];
} g_kinds[] = {
    {"pc", {N, C, 1, 1}}, {"c", {1, C, 1, 1}}, {"scalar", {1, 1, 1, 1}}, {"eq", {N, C, H, W}},
};
#define N_KINDS (sizeof(g_kinds) / sizeof(g_kinds[0]))

static int setup(void **state)
{
    (void)state;
    ipu_dnn_set_threads(1);
    return refdir_make("ipu_binary", "ref_binary.py", g_dir, sizeof(g_dir));
}

static int teardown(void **state)
{
    (void)state;
    refdir_remove(g_dir);
    return 0;
}

static size_t numel(const int64_t *d)
{
    return (size_t)(d[0] * d[1] * d[2] * d[3]);
}

static ipu_dnn_binary_desc_t desc(int op, size_t kind)
{
    ipu_dnn_binary_desc_t d = {.alg = g_algs[op], .rank = 4, .a = {N, C, H, W}};
    memcpy(d.b, g_kinds[kind].dims, sizeof(d.b[0]) * 4);
    return d;
}

/* Run p on a (in the layout p reads, see the caller) and b into y. */
static void exec(const ipu_node_t *n, ipu_dnn_t *p, const float *a, const float *b, float *y)
{
    size_t bytes = ipu_dnn_scratch(p);
    void *scratch = bytes ? aligned_alloc(64, (bytes + 63) / 64 * 64) : NULL;
    ipu_kernel_ctx_t ctx = {.threads = 1, .scratch = scratch, .scratch_bytes = bytes};
    const void *extra[1] = {b};
    ipu_status_t st = ipu_dnn_exec(n, p, a, extra, y, &ctx);
    if (st != IPU_OK)
        fail_msg("ipu_dnn_exec: %s", ipu_error_message());
    free(scratch);
}

/* Every op and kind of B on our layout. */
static void test_binary_plain(void **state)
{
    (void)state;
    op_case_t *c = oc_new("Mul", 14, 2, 1);
    const ipu_node_t *n = oc_node(c);
    float *y = malloc(NA * sizeof(float));
    assert_non_null(y);
    for (int op = 0; op < 4; op++)
        for (size_t k = 0; k < N_KINDS; k++) {
            char cs[32];
            snprintf(cs, sizeof cs, "%s_%s", g_ops[op], g_kinds[k].name);
            ipu_dnn_binary_desc_t d = desc(op, k);
            ipu_dnn_t *p = NULL;
            if (ipu_dnn_binary(n, &d, NULL, &p) != IPU_OK)
                fail_msg("%s: %s", cs, ipu_error_message());
            float *a = refdir_load(g_dir, cs, "in0", NA * sizeof(float));
            float *b = refdir_load(g_dir, cs, "in1", numel(g_kinds[k].dims) * sizeof(float));
            float *want = refdir_load(g_dir, cs, "out0", NA * sizeof(float));
            memset(y, 0xff, NA * sizeof(float));
            exec(n, p, a, b, y);
            assert_allclose_f32(y, want, NA, 1e-6, 1e-6);
            ipu_dnn_free(p);
            free(a);
            free(b);
            free(want);
        }
    free(y);
    oc_free(c);
}

/* A 1x1 Conv C -> C with identity weights: Y = X, in the layout the
 * primitive picks for Y. */
static ipu_dnn_t *identity_conv(const ipu_node_t *n, float **w)
{
    ipu_dnn_conv_desc_t d = {.nd = 2, .N = N, .C = C, .M = C, .group = 1,
                             .in = {H, W}, .k = {1, 1}, .s = {1, 1}, .d = {1, 1},
                             .out = {H, W}};
    ipu_dnn_t *p = NULL;
    if (ipu_dnn_conv(n, &d, &p) != IPU_OK)
        fail_msg("ipu_dnn_conv: %s", ipu_error_message());
    *w = calloc(C * C, sizeof(float));
    assert_non_null(*w);
    for (int i = 0; i < C; i++)
        (*w)[i * C + i] = 1.0f;
    return p;
}

/* A read in the Conv's output layout, as it is (chained): Y, in our layout,
 * is A op B. B of A's dims is not read so (it would be read across A's
 * layout). Skipped where the Conv writes our layout (no layout to keep). */
static void test_binary_in_conv_layout(void **state)
{
    (void)state;
    op_case_t *c = oc_new("Mul", 14, 2, 1);
    const ipu_node_t *n = oc_node(c);
    float *w, *ya = aligned_alloc(64, NA * sizeof(float)), *y = malloc(NA * sizeof(float));
    assert_non_null(ya);
    assert_non_null(y);
    ipu_dnn_t *conv = identity_conv(n, &w);
    ipu_dnn_set_chain(conv, 0, 1, 0); /* writes its own layout */
    size_t bytes = ipu_dnn_scratch(conv);
    void *scratch = bytes ? aligned_alloc(64, (bytes + 63) / 64 * 64) : NULL;
    ipu_kernel_ctx_t ctx = {.threads = 1, .scratch = scratch, .scratch_bytes = bytes};
    int checked = 0;
    for (int op = 0; op < 4; op++)
        for (size_t k = 0; k < N_KINDS; k++) {
            char cs[32];
            snprintf(cs, sizeof cs, "%s_%s", g_ops[op], g_kinds[k].name);
            ipu_dnn_binary_desc_t d = desc(op, k);
            ipu_dnn_t *p = NULL;
            ipu_status_t st = ipu_dnn_binary(n, &d, conv, &p);
            if (st == IPU_ERR_UNSUPPORTED)
                continue; /* B of A's dims, or a layout with blocks */
            if (st != IPU_OK)
                fail_msg("%s: %s", cs, ipu_error_message());
            int how = ipu_dnn_can_chain(conv, p, 0);
            if (k == N_KINDS - 1)
                assert_int_not_equal(how, IPU_DNN_CHAIN_AS_IS);
            if (how != IPU_DNN_CHAIN_AS_IS) { /* the Conv writes our layout here */
                ipu_dnn_free(p);
                continue;
            }
            float *a = refdir_load(g_dir, cs, "in0", NA * sizeof(float));
            float *b = refdir_load(g_dir, cs, "in1", numel(g_kinds[k].dims) * sizeof(float));
            float *want = refdir_load(g_dir, cs, "out0", NA * sizeof(float));
            if (ipu_dnn_run(n, conv, a, w, NULL, NULL, NULL, ya, &ctx) != IPU_OK)
                fail_msg("conv: %s", ipu_error_message());
            ipu_dnn_set_chain(p, 1, 0, 0); /* reads A in the Conv's layout */
            memset(y, 0xff, NA * sizeof(float));
            exec(n, p, ya, b, y);
            assert_allclose_f32(y, want, NA, 1e-6, 1e-6);
            checked++;
            ipu_dnn_free(p);
            free(a);
            free(b);
            free(want);
        }
    ipu_dnn_free(conv);
    free(scratch);
    free(w);
    free(ya);
    free(y);
    oc_free(c);
    if (checked == 0)
        skip();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binary_plain),
        cmocka_unit_test(test_binary_in_conv_layout),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
