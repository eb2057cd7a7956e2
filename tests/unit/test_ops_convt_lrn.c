/* ConvTranspose and LRN against PyTorch (torch.nn.functional.conv_transpose*
 * and torch.nn.LocalResponseNorm; even LRN sizes against the formula of
 * Operators.md in numpy, where PyTorch's window differs from ONNX's).
 *
 * The reference data is written by tests/unit/ref_dense.py (the cases
 * convt_* and lrn_*: seeded inputs and the expected outputs as raw float32
 * files); each case here declares the same shapes and ONNX attributes,
 * checks the file sizes, runs the node through the harness, and again with
 * its weights prepared by load(), a larger dirty scratch and two threads,
 * as a stage runs it. */
#include "harness.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "refcase.h"
#include "refdir.h"

#include "exec/ops/registry.h"

static char g_dir[256];

#define NONE SCALAR /* attribute absent */

static int setup(void **state)
{
    (void)state;
    return refdir_make("ipu_convt_lrn", "ref_dense.py", g_dir, sizeof(g_dir));
}

static int teardown(void **state)
{
    (void)state;
    refdir_remove(g_dir);
    return 0;
}

/* Run, check, then run the kernel again as a loaded stage does, on two
 * threads, and check again. */
static void run_and_check(op_case_t *c, const char *cs, shape_t y)
{
    refcase_run_ok(c, cs);
    refcase_check(c, g_dir, cs, 0, y);
    refcase_rerun(c, 2);
    refcase_check(c, g_dir, cs, 0, y);
    oc_free(c);
}

/* ---- ConvTranspose --------------------------------------------------------- */

typedef struct {
    const char *cs; /* the case of ref_dense.py */
    shape_t x, w, b, y;
    shape_t strides, dilations, pads, output_padding, output_shape;
    int64_t group;
    const char *auto_pad;
} convt_t;

static const convt_t convt_cases[] = {
    {"convt_pads_op", S(1, 3, 5, 4), S(3, 4, 3, 3), S(4), S(1, 4, 10, 8), .strides = S(2, 2),
     .pads = S(1, 1, 1, 1), .output_padding = S(1, 1)},
    {"convt_group_dil_asym", S(2, 4, 5, 6), S(4, 3, 3, 2), ABSENT, S(2, 6, 7, 11),
     .strides = S(1, 2), .dilations = S(2, 1), .pads = S(0, 1, 2, 0), .group = 2},
    {"convt1d", S(2, 3, 7), S(3, 2, 4), S(2), S(2, 2, 21), .strides = S(3), .pads = S(1, 2),
     .output_padding = S(2)},
    {"convt3d_depthwise", S(1, 4, 3, 4, 3), S(4, 1, 2, 3, 3), S(4), S(1, 4, 5, 7, 7),
     .strides = S(2, 1, 2), .dilations = S(1, 2, 1), .pads = S(1, 0, 1, 1, 1, 0),
     .output_padding = S(1, 0, 1), .group = 4},
    {"convt_same_upper", S(1, 2, 4, 5), S(2, 3, 3, 4), S(3), S(1, 3, 8, 15), .strides = S(2, 3),
     .auto_pad = "SAME_UPPER"},
    {"convt_same_lower", S(1, 2, 4, 5), S(2, 3, 3, 4), S(3), S(1, 3, 8, 15), .strides = S(2, 3),
     .auto_pad = "SAME_LOWER"},
    {"convt_valid", S(1, 2, 3, 4), S(2, 2, 2, 3), S(2), S(1, 2, 6, 6), .strides = S(2, 1),
     .auto_pad = "VALID", .pads = S(1, 1, 1, 1)}, /* VALID ignores pads */
    {"convt_output_shape", S(1, 2, 4, 4), S(2, 2, 3, 3), S(2), S(1, 2, 10, 9),
     .strides = S(2, 2), .output_shape = S(10, 9), .pads = S(3, 3, 3, 3)}, /* pads ignored */
    /* output_shape with N and M first, as some exporters write it */
    {"convt_output_shape", S(1, 2, 4, 4), S(2, 2, 3, 3), S(2), S(1, 2, 10, 9),
     .strides = S(2, 2), .output_shape = S(1, 2, 10, 9)},
    {"convt_upsample", S(2, 16, 7, 7), S(16, 8, 3, 3), S(16), S(2, 16, 14, 14),
     .strides = S(2, 2), .pads = S(1, 1, 1, 1), .output_padding = S(1, 1), .group = 2},
};

static op_case_t *convt_new(const convt_t *t, int all_const)
{
    shape_t in[3] = {t->x, t->w, t->b};
    op_case_t *c = refcase_new(g_dir, t->cs, "ConvTranspose", 13, t->b.rank < 0 ? 2 : 3, in, 1, all_const);
    refcase_ints(c, "strides", t->strides);
    refcase_ints(c, "dilations", t->dilations);
    refcase_ints(c, "pads", t->pads);
    refcase_ints(c, "output_padding", t->output_padding);
    refcase_ints(c, "output_shape", t->output_shape);
    if (t->group)
        ipu_node_add_attr_int(oc_node(c), "group", t->group);
    if (t->auto_pad)
        ipu_node_add_attr_string(oc_node(c), "auto_pad", t->auto_pad);
    return c;
}

static void test_convt(void **state)
{
    for (size_t i = 0; i < sizeof(convt_cases) / sizeof(convt_cases[0]); i++)
        run_and_check(convt_new(&convt_cases[i], 0), convt_cases[i].cs, convt_cases[i].y);
}

/* kernel_shape equal to W's is accepted */
static void test_convt_kernel_shape(void **state)
{
    op_case_t *c = convt_new(&convt_cases[0], 0);
    refcase_ints(c, "kernel_shape", S(3, 3));
    run_and_check(c, convt_cases[0].cs, convt_cases[0].y);
}

/* all inputs constant: the node folds at inference through the same kernel */
static void test_convt_folded(void **state)
{
    const convt_t *t = &convt_cases[2];
    op_case_t *c = convt_new(t, 1);
    assert_int_equal(oc_run(c), IPU_OK);
    assert_true(oc_node(c)->folded);
    refcase_check(c, g_dir, t->cs, 0, t->y);
    oc_free(c);
}

static op_case_t *convt_zeros(ipu_dtype_t dt, shape_t x, shape_t w, shape_t b)
{
    static const float z[256];
    op_case_t *c = oc_new("ConvTranspose", 13, b.rank < 0 ? 2 : 3, 1);
    oc_input(c, 0, dt, x.rank, x.d, z);
    oc_const(c, 1, IPU_DTYPE_FLOAT, w.rank, w.d, z);
    if (b.rank >= 0)
        oc_const(c, 2, IPU_DTYPE_FLOAT, b.rank, b.d, z);
    return c;
}

static void test_convt_errors(void **state)
{
    const shape_t x = S(1, 2, 4, 4), w = S(2, 3, 3, 3);
    op_case_t *c;
    oc_expect_error(convt_zeros(IPU_DTYPE_INT64, x, w, ABSENT), IPU_ERR_UNSUPPORTED, "int64");
    /* X has 2 channels, W's first dim 3 */
    oc_expect_error(convt_zeros(IPU_DTYPE_FLOAT, x, S(3, 3, 3, 3), ABSENT), IPU_ERR_SHAPE,
                 "channels");
    /* B of the wrong length (M = 3) */
    oc_expect_error(convt_zeros(IPU_DTYPE_FLOAT, x, w, S(2)), IPU_ERR_SHAPE, "B");
    /* group does not divide C */
    c = convt_zeros(IPU_DTYPE_FLOAT, x, w, ABSENT);
    ipu_node_add_attr_int(oc_node(c), "group", 4);
    oc_expect_error(c, IPU_ERR_SHAPE, "group");
    c = convt_zeros(IPU_DTYPE_FLOAT, x, w, ABSENT);
    ipu_node_add_attr_string(oc_node(c), "auto_pad", "SAME");
    oc_expect_error(c, IPU_ERR_INVALID_MODEL, "auto_pad");
    c = convt_zeros(IPU_DTYPE_FLOAT, x, w, ABSENT);
    refcase_ints(c, "output_padding", S(1));
    oc_expect_error(c, IPU_ERR_INVALID_MODEL, "output_padding");
    c = convt_zeros(IPU_DTYPE_FLOAT, x, w, ABSENT);
    refcase_ints(c, "output_shape", S(5, 5, 5));
    oc_expect_error(c, IPU_ERR_INVALID_MODEL, "output_shape");
    c = convt_zeros(IPU_DTYPE_FLOAT, x, w, ABSENT);
    refcase_ints(c, "output_shape", S(2, 3, 6, 6)); /* N is 1 */
    oc_expect_error(c, IPU_ERR_SHAPE, "output_shape");
    c = convt_zeros(IPU_DTYPE_FLOAT, x, w, ABSENT);
    refcase_ints(c, "kernel_shape", S(2, 2));
    oc_expect_error(c, IPU_ERR_SHAPE, "kernel_shape");
    /* pads cutting the whole output */
    c = convt_zeros(IPU_DTYPE_FLOAT, x, w, ABSENT);
    refcase_ints(c, "pads", S(3, 3, 3, 3));
    oc_expect_error(c, IPU_ERR_SHAPE, "empty output");
    /* output_padding of a stride-1 deconvolution: outputs no tap reaches */
    c = convt_zeros(IPU_DTYPE_FLOAT, x, w, ABSENT);
    refcase_ints(c, "output_padding", S(1, 0));
    oc_expect_error(c, IPU_ERR_UNSUPPORTED, "output_padding");
    /* output_shape needing padding before the first output */
    c = convt_zeros(IPU_DTYPE_FLOAT, x, w, ABSENT);
    ipu_node_add_attr_string(oc_node(c), "auto_pad", "SAME_UPPER");
    refcase_ints(c, "output_shape", S(8, 6));
    oc_expect_error(c, IPU_ERR_UNSUPPORTED, "output_shape");
}

/* ---- LRN --------------------------------------------------------------------- */

typedef struct {
    const char *cs;
    shape_t x;
    int64_t size;
    float alpha, beta, bias;
} lrn_t;

static const lrn_t lrn_cases[] = {
    {"lrn_size5", S(2, 8, 4, 5), 5, 0.5f, 0.75f, 1.5f},
    {"lrn_size3_5d", S(1, 6, 3, 4, 2), 3, 0.2f, 0.5f, 2.0f},
    {"lrn_size1_3d", S(2, 7, 9), 1, 0.3f, 1.0f, 1.0f},
    {"lrn_size7_wide", S(1, 4, 5, 5), 7, 0.4f, 0.6f, 0.5f},
    {"lrn_size2", S(2, 5, 3, 4), 2, 0.5f, 0.75f, 1.0f},
    {"lrn_size4", S(1, 9, 6, 5), 4, 0.8f, 0.9f, 1.2f},
};

static void test_lrn(void **state)
{
    for (size_t i = 0; i < sizeof(lrn_cases) / sizeof(lrn_cases[0]); i++) {
        const lrn_t *t = &lrn_cases[i];
        op_case_t *c = refcase_new(g_dir, t->cs, "LRN", 13, 1, &t->x, 1, 0);
        ipu_node_t *n = oc_node(c);
        ipu_node_add_attr_int(n, "size", t->size);
        ipu_node_add_attr_float(n, "alpha", t->alpha);
        ipu_node_add_attr_float(n, "beta", t->beta);
        ipu_node_add_attr_float(n, "bias", t->bias);
        run_and_check(c, t->cs, t->x);
    }
}

static void test_lrn_errors(void **state)
{
    static const float z[64];
    op_case_t *c = oc_new("LRN", 13, 1, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 4, S(1, 2, 2, 2).d, z);
    oc_expect_error(c, IPU_ERR_INVALID_MODEL, "size");
    c = oc_new("LRN", 13, 1, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 4, S(1, 2, 2, 2).d, z);
    ipu_node_add_attr_int(oc_node(c), "size", 0);
    oc_expect_error(c, IPU_ERR_INVALID_MODEL, "size");
    c = oc_new("LRN", 13, 1, 1);
    oc_input(c, 0, IPU_DTYPE_DOUBLE, 4, S(1, 2, 2, 2).d, z);
    ipu_node_add_attr_int(oc_node(c), "size", 3);
    oc_expect_error(c, IPU_ERR_UNSUPPORTED, "double");
    c = oc_new("LRN", 13, 1, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 1, S(8).d, z);
    ipu_node_add_attr_int(oc_node(c), "size", 3);
    oc_expect_error(c, IPU_ERR_SHAPE, "rank");
}

static void test_opset_coverage(void **state)
{
    static const char *ops[] = {"ConvTranspose", "LRN"};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        for (int v = 1; v <= 21; v++)
            if (ipu_op_lookup("", ops[i], v) == NULL)
                fail_msg("%s-%d not registered", ops[i], v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_convt),
        cmocka_unit_test(test_convt_kernel_shape),
        cmocka_unit_test(test_convt_folded),
        cmocka_unit_test(test_convt_errors),
        cmocka_unit_test(test_lrn),
        cmocka_unit_test(test_lrn_errors),
        cmocka_unit_test(test_opset_coverage),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
