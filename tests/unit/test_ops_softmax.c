/* Softmax and LogSoftmax against PyTorch: every axis of a rank-3 and a
 * rank-4 input under both opset conventions (opset 11 coerces X to 2-D at
 * the axis, opset 13 normalises along it), with -inf elements (0, or -inf
 * for LogSoftmax) and rows that are all -inf (NaN, as PyTorch gives); then
 * inputs large enough to be split over two threads, on oneDNN's kernel and
 * on ours as softmax.c picks them; a scalar, an empty tensor and a dtype
 * other than float.
 *
 * The reference data is written by tests/unit/ref_softmax.py (seeded
 * inputs and the expected outputs as raw float32 files); each case runs
 * through the harness (fed and folded), then again as a loaded stage runs
 * it (dirty scratch and output). */
#include "harness.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "refcase.h"
#include "refdir.h"

#include "exec/onednn.h"

static char g_dir[256];

static int setup(void **state)
{
    (void)state;
    return refdir_make("ipu_softmax", "ref_softmax.py", g_dir, sizeof(g_dir));
}

static int teardown(void **state)
{
    (void)state;
    refdir_remove(g_dir);
    return 0;
}

/* Output 0 against <cs>.out0.bin: NaN where it is NaN, infinities exactly,
 * numpy.allclose(rtol 1e-5, atol 1e-6) elsewhere. */
static void check(op_case_t *c, const char *cs, shape_t x)
{
    const size_t n = shape_numel(x);
    const ipu_tensor_t *y = oc_output(c, 0);
    assert_shape(y, x.rank, x.d);
    float *want = refdir_load(g_dir, cs, "out0", n * sizeof(float));
    const float *got = y->data;
    for (size_t i = 0; i < n; i++) {
        int ok = isnan(want[i]) ? isnan(got[i])
                 : isinf(want[i]) ? got[i] == want[i]
                                  : fabs(got[i] - want[i]) <= 1e-6 + 1e-5 * fabs(want[i]);
        if (!ok)
            fail_msg("%s: element %zu: got %.9g, want %.9g", cs, i, got[i], want[i]);
    }
    free(want);
}

/* Case cs of op (opset) along axis: fed, rerun as a stage runs it with
 * threads, and folded. */
static void run_case(const char *cs, const char *op, int opset, int64_t axis, shape_t x,
                     int threads)
{
    for (int folded = 0; folded < 2; folded++) {
        op_case_t *c = refcase_new(g_dir, cs, op, opset, 1, &x, 1, folded);
        ipu_node_add_attr_int(oc_node(c), "axis", axis);
        oc_threads = threads;
        refcase_run_ok(c, cs);
        check(c, cs, x);
        if (!folded) {
            refcase_rerun(c, threads);
            check(c, cs, x);
        }
        oc_threads = 1;
        oc_free(c);
    }
}

static void test_every_axis(void **state)
{
    (void)state;
    const shape_t xs[] = {S(3, 4, 5), S(2, 3, 4, 5)};
    const char *ops[][2] = {{"sm", "Softmax"}, {"lsm", "LogSoftmax"}};
    char cs[64];
    for (int k = 0; k < 2; k++)
        for (int o = 0; o < 2; o++)
            for (int opset = 11; opset <= 13; opset += 2)
                for (int a = 0; a < xs[k].rank; a++) {
                    snprintf(cs, sizeof(cs), "%s_r%d_a%d_o%d", ops[o][0], xs[k].rank, a, opset);
                    run_case(cs, ops[o][1], opset, a, xs[k], 1);
                    /* the same axis counted from the end */
                    run_case(cs, ops[o][1], opset, a - xs[k].rank, xs[k], 1);
                }
}

/* Above IPU_TEAM_MIN_BYTES, on a team of two (the primitives made for it)
 * and of one: the last axis (rows split over the team) and axis 1 of
 * [4, 2048, 8] (oneDNN's kernel on the axis made innermost). */
static void test_two_threads(void **state)
{
    (void)state;
    const char *ops[][2] = {{"sm", "Softmax"}, {"lsm", "LogSoftmax"}};
    char cs[64];
    for (int threads = 2; threads >= 1; threads--) {
        ipu_dnn_set_threads(threads);
        for (int o = 0; o < 2; o++) {
            snprintf(cs, sizeof(cs), "big_%s_last", ops[o][0]);
            run_case(cs, ops[o][1], 13, -1, S(2, 4, 64, 128), threads);
            snprintf(cs, sizeof(cs), "big_%s_narrow", ops[o][0]);
            run_case(cs, ops[o][1], 13, 1, S(4, 2048, 8), threads);
        }
    }
    ipu_dnn_end_host_team();
}

/* A scalar is a softmax of one element; an empty tensor has an empty
 * result; float only. */
static void test_edges(void **state)
{
    (void)state;
    const int64_t one[1] = {1};
    float x = -3.5f;
    for (int opset = 11; opset <= 13; opset += 2)
        for (int log = 0; log < 2; log++) {
            op_case_t *c = oc_new(log ? "LogSoftmax" : "Softmax", opset, 1, 1);
            oc_input(c, 0, IPU_DTYPE_FLOAT, 0, one, &x);
            ipu_node_add_attr_int(oc_node(c), "axis", opset < 13 ? 0 : -1);
            refcase_run_ok(c, "scalar");
            assert_int_equal(oc_output(c, 0)->rank, 0);
            assert_true(*(const float *)oc_output(c, 0)->data == (log ? 0.0f : 1.0f));
            oc_free(c);
        }
    const int64_t empty[3] = {2, 0, 3};
    for (int64_t axis = 0; axis < 3; axis++) {
        op_case_t *c = oc_new("Softmax", 13, 1, 1);
        oc_input(c, 0, IPU_DTYPE_FLOAT, 3, empty, NULL);
        ipu_node_add_attr_int(oc_node(c), "axis", axis);
        refcase_run_ok(c, "empty");
        assert_shape(oc_output(c, 0), 3, empty);
        oc_free(c);
    }
    int64_t xi[2] = {1, 2};
    op_case_t *c = oc_new("Softmax", 13, 1, 1);
    oc_input(c, 0, IPU_DTYPE_INT64, 1, (int64_t[]){2}, xi);
    oc_expect_error(c, IPU_ERR_UNSUPPORTED, "dtype int64 not supported");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_axis),
        cmocka_unit_test(test_two_threads),
        cmocka_unit_test(test_edges),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
