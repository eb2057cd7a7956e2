/* Dense op families: Conv, Gemm, MatMul, MaxPool, AveragePool, global pools.
 *
 * Reference data comes from tests/unit/ref_dense.py (PyTorch / numpy, run
 * once by the group setup with $PYTHON_REF into a temporary folder): for each
 * case it writes the seeded inputs and the expected outputs as raw float32
 * files. Each test here declares the same shapes and ONNX attributes, checks
 * the file sizes, runs the op through the harness and compares. */
#include "harness.h"

#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "refcase.h"
#include "refdir.h"

#include "exec/ops/registry.h"
#include "graph/fuse.h"

static char g_dir[256];

static int setup(void **state)
{
    (void)state;
    return refdir_make("ipu_dense", "ref_dense.py", g_dir, sizeof(g_dir));
}

static int teardown(void **state)
{
    (void)state;
    refdir_remove(g_dir);
    return 0;
}

/* Contents of <case>.<slot>.bin, which must hold exactly bytes bytes. */
static void *load(const char *cs, const char *slot, size_t bytes)
{
    return refdir_load(g_dir, cs, slot, bytes);
}

/* A one-node case: input 0 fed at run time, the others as initializers. */
static op_case_t *load_case(const char *cs, const char *op, int opset, int n_in,
                            const shape_t *in, int n_out)
{
    return refcase_new(g_dir, cs, op, opset, n_in, in, n_out, 0);
}

static void check_out(op_case_t *c, const char *cs, int k, shape_t want)
{
    refcase_check(c, g_dir, cs, k, want);
}

/* ---- Conv ------------------------------------------------------------------ */

/* Conv with X, W (and B unless ABSENT); attributes applied by the caller's
 * block between CONV_BEGIN and CONV_END. */
#define CONV_BEGIN(cs, opset, x, w, b)                                           \
    do {                                                                         \
        shape_t in_[3] = {x, w, b};                                              \
        op_case_t *c = load_case(cs, "Conv", opset, in_[2].rank < 0 ? 2 : 3, in_, 1);
#define CONV_END(cs, y)                                                          \
        refcase_run_ok(c, cs);                                                   \
        check_out(c, cs, 0, y);                                                  \
        refcase_rerun(c, 1);                                                     \
        check_out(c, cs, 0, y);                                                  \
        oc_free(c);                                                              \
    } while (0)

static void test_conv_pads_strides(void **state)
{
    CONV_BEGIN("conv_pads_strides", 11, S(1, 3, 7, 8), S(4, 3, 3, 3), S(4));
    refcase_ints(c, "pads", S(1, 2, 1, 0));
    refcase_ints(c, "strides", S(2, 1));
    refcase_ints(c, "kernel_shape", S(3, 3));
    CONV_END("conv_pads_strides", S(1, 4, 4, 8));
}

static void test_conv_dilation_nobias(void **state)
{
    CONV_BEGIN("conv_dilation_nobias", 13, S(1, 2, 9, 9), S(3, 2, 3, 3), ABSENT);
    refcase_ints(c, "pads", S(2, 2, 2, 2));
    refcase_ints(c, "dilations", S(2, 2));
    CONV_END("conv_dilation_nobias", S(1, 3, 9, 9));
}

static void test_conv_group_batch2(void **state)
{
    CONV_BEGIN("conv_group_batch2", 7, S(2, 4, 6, 6), S(6, 2, 3, 3), S(6));
    refcase_ints(c, "pads", S(1, 1, 1, 1));
    ipu_node_add_attr_int(oc_node(c), "group", 2);
    CONV_END("conv_group_batch2", S(2, 6, 6, 6));
}

static void test_conv_depthwise_mult2(void **state)
{
    CONV_BEGIN("conv_depthwise_mult2", 13, S(2, 4, 7, 7), S(8, 1, 3, 3), S(8));
    refcase_ints(c, "pads", S(1, 1, 1, 1));
    ipu_node_add_attr_int(oc_node(c), "group", 4);
    CONV_END("conv_depthwise_mult2", S(2, 8, 7, 7));
}

static void test_conv_depthwise_stride2(void **state)
{
    CONV_BEGIN("conv_depthwise_s2", 17, S(1, 5, 8, 9), S(5, 1, 5, 5), S(5));
    refcase_ints(c, "pads", S(2, 2, 1, 2));
    refcase_ints(c, "strides", S(2, 2));
    ipu_node_add_attr_int(oc_node(c), "group", 5);
    CONV_END("conv_depthwise_s2", S(1, 5, 4, 5));
}

static void test_conv_depthwise_dilation(void **state)
{
    CONV_BEGIN("conv_depthwise_dil", 13, S(1, 3, 6, 7), S(3, 1, 3, 2), S(3));
    refcase_ints(c, "pads", S(2, 0, 1, 1));
    refcase_ints(c, "dilations", S(2, 1));
    ipu_node_add_attr_int(oc_node(c), "group", 3);
    CONV_END("conv_depthwise_dil", S(1, 3, 5, 7));
}

static void test_conv_1x1_batch2(void **state)
{
    CONV_BEGIN("conv_1x1_batch2", 13, S(2, 8, 5, 5), S(6, 8, 1, 1), S(6));
    CONV_END("conv_1x1_batch2", S(2, 6, 5, 5));
}

static void test_conv_1x1_stride2(void **state)
{
    CONV_BEGIN("conv_1x1_stride2", 13, S(1, 8, 6, 6), S(4, 8, 1, 1), S(4));
    refcase_ints(c, "strides", S(2, 2));
    CONV_END("conv_1x1_stride2", S(1, 4, 3, 3));
}

static void test_conv_same_upper(void **state)
{
    CONV_BEGIN("conv_same_upper", 11, S(1, 2, 7, 6), S(3, 2, 4, 3), S(3));
    refcase_ints(c, "strides", S(2, 2));
    ipu_node_add_attr_string(oc_node(c), "auto_pad", "SAME_UPPER");
    CONV_END("conv_same_upper", S(1, 3, 4, 3));
}

static void test_conv_same_lower(void **state)
{
    CONV_BEGIN("conv_same_lower", 11, S(1, 2, 7, 6), S(3, 2, 4, 3), S(3));
    refcase_ints(c, "strides", S(2, 2));
    ipu_node_add_attr_string(oc_node(c), "auto_pad", "SAME_LOWER");
    CONV_END("conv_same_lower", S(1, 3, 4, 3));
}

static void test_conv_valid(void **state)
{
    CONV_BEGIN("conv_valid", 11, S(1, 2, 7, 8), S(3, 2, 3, 3), S(3));
    refcase_ints(c, "strides", S(2, 3));
    ipu_node_add_attr_string(oc_node(c), "auto_pad", "VALID");
    CONV_END("conv_valid", S(1, 3, 3, 2));
}

static void test_conv1d(void **state)
{
    CONV_BEGIN("conv1d", 13, S(2, 3, 10), S(4, 3, 3), S(4));
    refcase_ints(c, "pads", S(1, 2));
    refcase_ints(c, "strides", S(2));
    refcase_ints(c, "dilations", S(2));
    CONV_END("conv1d", S(2, 4, 5));
}

static void test_conv3d(void **state)
{
    CONV_BEGIN("conv3d", 13, S(1, 2, 5, 5, 4), S(3, 2, 3, 3, 2), S(3));
    refcase_ints(c, "pads", S(1, 1, 0, 1, 1, 1));
    refcase_ints(c, "strides", S(2, 1, 1));
    CONV_END("conv3d", S(1, 3, 3, 5, 4));
}

/* The post-ops graph/fuse.c sets: kinds k[0..n) with alpha a and beta b. */
static void set_post(ipu_node_t *nd, int n, const int64_t *k, const float *a, const float *b)
{
    assert_int_equal(ipu_node_add_attr_ints(nd, IPU_FUSED_OPS, (size_t)n, k), IPU_OK);
    assert_int_equal(ipu_node_add_attr_floats(nd, IPU_FUSED_ALPHA, (size_t)n, a), IPU_OK);
    assert_int_equal(ipu_node_add_attr_floats(nd, IPU_FUSED_BETA, (size_t)n, b), IPU_OK);
}

/* the fused activation graph/fuse.c sets (Clip bounds -0.5, 0.75 as in ref_dense.py) */
static void fused(op_case_t *c, const char *act)
{
    int64_t k = strcmp(act, "SiLU") == 0      ? IPU_FUSED_SILU
                : strcmp(act, "Sigmoid") == 0 ? IPU_FUSED_SIGMOID
                : strcmp(act, "Relu") == 0    ? IPU_FUSED_RELU
                                              : IPU_FUSED_CLIP;
    set_post(oc_node(c), 1, &k, (const float[]){k == IPU_FUSED_CLIP ? -0.5f : 0.0f},
             (const float[]){k == IPU_FUSED_CLIP ? 0.75f : 0.0f});
}

/* node nd's fused post-op kinds are want[0..n) */
static void assert_post(const ipu_node_t *nd, int n, const int64_t *want)
{
    size_t cnt = 0;
    const int64_t *k = ipu_attr_ints(nd, IPU_FUSED_OPS, &cnt);
    assert_int_equal(cnt, n);
    for (int i = 0; i < n; i++)
        assert_int_equal(k[i], want[i]);
}

/* depthwise fast path: three row phases, two column phases, dilation */
static void test_conv_depthwise_phases(void **state)
{
    CONV_BEGIN("conv_depthwise_s3_dil", 13, S(1, 4, 11, 10), S(4, 1, 3, 3), S(4));
    refcase_ints(c, "pads", S(1, 2, 2, 0));
    refcase_ints(c, "strides", S(3, 2));
    refcase_ints(c, "dilations", S(1, 2));
    ipu_node_add_attr_int(oc_node(c), "group", 4);
    CONV_END("conv_depthwise_s3_dil", S(1, 4, 4, 4));
}

/* fused activations on every path: depthwise fast and row-by-row (3-D),
 * im2col in several bands, pointwise, grouped im2col */
static void test_conv_fused(void **state)
{
    CONV_BEGIN("conv_depthwise_silu", 13, S(1, 2, 20, 71), S(2, 1, 5, 5), S(2));
    refcase_ints(c, "pads", S(2, 2, 2, 2));
    refcase_ints(c, "strides", S(2, 2));
    ipu_node_add_attr_int(oc_node(c), "group", 2);
    fused(c, "SiLU");
    CONV_END("conv_depthwise_silu", S(1, 2, 10, 36));

    CONV_BEGIN("conv_depthwise3d_sigmoid", 13, S(1, 3, 4, 5, 6), S(3, 1, 2, 3, 3), S(3));
    refcase_ints(c, "pads", S(0, 1, 1, 1, 1, 1));
    ipu_node_add_attr_int(oc_node(c), "group", 3);
    fused(c, "Sigmoid");
    CONV_END("conv_depthwise3d_sigmoid", S(1, 3, 4, 5, 6));

    CONV_BEGIN("conv_im2col_bands_relu", 13, S(1, 48, 20, 20), S(4, 48, 3, 3), S(4));
    refcase_ints(c, "pads", S(1, 1, 1, 1));
    fused(c, "Relu");
    CONV_END("conv_im2col_bands_relu", S(1, 4, 20, 20));

    CONV_BEGIN("conv_1x1_clip", 13, S(1, 8, 5, 5), S(6, 8, 1, 1), S(6));
    fused(c, "Clip");
    CONV_END("conv_1x1_clip", S(1, 6, 5, 5));

    CONV_BEGIN("conv_1x1_plane1_sigmoid", 13, S(2, 6, 1, 1), S(5, 6, 1, 1), S(5));
    fused(c, "Sigmoid");
    CONV_END("conv_1x1_plane1_sigmoid", S(2, 5, 1, 1));

    CONV_BEGIN("conv_group_clip", 13, S(1, 4, 6, 6), S(6, 2, 3, 3), S(6));
    refcase_ints(c, "pads", S(1, 1, 1, 1));
    ipu_node_add_attr_int(oc_node(c), "group", 2);
    fused(c, "Clip");
    CONV_END("conv_group_clip", S(1, 6, 6, 6));
}

/* 3-D im2col bands whose boundary falls inside an out[0] slice */
static void test_conv3d_bands(void **state)
{
    CONV_BEGIN("conv3d_bands", 13, S(1, 24, 8, 8, 6), S(2, 24, 3, 3, 3), ABSENT);
    refcase_ints(c, "pads", S(1, 1, 1, 1, 1, 1));
    CONV_END("conv3d_bands", S(1, 2, 8, 8, 6));
}

/* The fusion tests' graph: x [1, 2, 5, 5] fed, w [2, 2, 3, 3] constant,
 * "out" its output; binds, infers and fuses it. Returns the fusions made. */
static int fuse_graph(ipu_graph_t *g, const float *w)
{
    assert_int_equal(ipu_graph_add_input(g, "x"), IPU_OK);
    assert_int_equal(ipu_graph_add_output(g, "out"), IPU_OK);
    ipu_value_set_shape(&g->values[ipu_graph_find_value(g, "x")], IPU_DTYPE_FLOAT, 4,
                        S(1, 2, 5, 5).d);
    assert_int_equal(ipu_value_set_const(&g->values[ipu_graph_find_value(g, "w")],
                                         IPU_DTYPE_FLOAT, 4, S(2, 2, 3, 3).d, w), IPU_OK);
    int count = -1;
    assert_int_equal(ipu_graph_toposort(g), IPU_OK);
    assert_int_equal(ipu_graph_bind_ops(g, ipu_op_lookup), IPU_OK);
    assert_int_equal(ipu_graph_infer(g), IPU_OK);
    assert_int_equal(ipu_graph_fuse(g, ipu_op_lookup, &count), IPU_OK);
    return count;
}

/* A second inference (new input shapes) and fusion keep the graph valid and
 * fuse nothing more; frees g. */
static void refuse_free(ipu_graph_t *g)
{
    int count = -1;
    assert_int_equal(ipu_graph_infer(g), IPU_OK);
    assert_int_equal(ipu_graph_fuse(g, ipu_op_lookup, &count), IPU_OK);
    assert_int_equal(count, 0);
    ipu_graph_free(g);
}

/* graph/fuse.c: Conv -> Sigmoid, Mul(s, y) (SiLU) and Conv -> Clip-13 fuse;
 * a Conv whose output also feeds an Add keeps its Relu. */
static void test_conv_fusion_pass(void **state)
{
    static const float w[36], lo = -1.0f, hi = 6.0f;
    ipu_graph_t *g = ipu_graph_new("fuse");
    assert_non_null(g);
    const char *conv_in[3][2] = {{"x", "w"}, {"z1", "w"}, {"z2", "w"}};
    const char *conv_out[3] = {"y1", "y2", "y3"};
    int conv[3];
    for (int i = 0; i < 3; i++)
        conv[i] = ipu_graph_add_node(g, "Conv", conv_out[i], 2, conv_in[i], 1, &conv_out[i]);
    int sig = ipu_graph_add_node(g, "Sigmoid", "sig", 1, (const char *[]){"y1"}, 1,
                                 (const char *[]){"s1"});
    int mul = ipu_graph_add_node(g, "Mul", "mul", 2, (const char *[]){"s1", "y1"}, 1,
                                 (const char *[]){"z1"});
    int clip = ipu_graph_add_node(g, "Clip", "clip", 3, (const char *[]){"y2", "lo", "hi"}, 1,
                                  (const char *[]){"z2"});
    int relu = ipu_graph_add_node(g, "Relu", "relu", 1, (const char *[]){"y3"}, 1,
                                  (const char *[]){"r3"});
    int add = ipu_graph_add_node(g, "Add", "add", 2, (const char *[]){"r3", "y3"}, 1,
                                 (const char *[]){"out"});
    assert_true(conv[0] >= 0 && conv[1] >= 0 && conv[2] >= 0 && sig >= 0 && mul >= 0 &&
                clip >= 0 && relu >= 0 && add >= 0);
    refcase_ints(&(op_case_t){.g = g, .node = conv[0]}, "pads", S(1, 1, 1, 1));
    /* the 3x3 kernel with pads 1 keeps 5x5 for the next convs: they reuse w */
    for (int i = 1; i < 3; i++)
        refcase_ints(&(op_case_t){.g = g, .node = conv[i]}, "pads", S(1, 1, 1, 1));
    assert_int_equal(ipu_value_set_const(&g->values[ipu_graph_find_value(g, "lo")],
                                         IPU_DTYPE_FLOAT, 0, NULL, &lo), IPU_OK);
    assert_int_equal(ipu_value_set_const(&g->values[ipu_graph_find_value(g, "hi")],
                                         IPU_DTYPE_FLOAT, 0, NULL, &hi), IPU_OK);
    assert_int_equal(fuse_graph(g, w), 2);
    size_t na = 0, nb = 0;
    assert_post(&g->nodes[conv[0]], 1, (const int64_t[]){IPU_FUSED_SILU});
    assert_post(&g->nodes[conv[1]], 1, (const int64_t[]){IPU_FUSED_CLIP});
    assert_true(ipu_attr_floats(&g->nodes[conv[1]], IPU_FUSED_ALPHA, &na)[0] == lo && na == 1);
    assert_true(ipu_attr_floats(&g->nodes[conv[1]], IPU_FUSED_BETA, &nb)[0] == hi && nb == 1);
    assert_null(ipu_attr_find(&g->nodes[conv[2]], IPU_FUSED_OPS));
    assert_string_equal(g->nodes[sig].op_type, "Identity");
    assert_string_equal(g->nodes[mul].op_type, "Identity");
    assert_string_equal(g->nodes[clip].op_type, "Identity");
    assert_string_equal(g->nodes[relu].op_type, "Relu");
    assert_int_equal(g->nodes[mul].n_inputs, 1);
    assert_int_equal(g->nodes[mul].inputs[0], ipu_graph_find_value(g, "y1"));
    refuse_free(g);
}

/* graph/fuse.c on a MatMul: + bias (a per-channel constant), the exported
 * Erf GELU in the form form (0: Div by sqrt 2, Erf, Add 1, Mul by x, Mul by
 * 0.5; 1: the 0.5 on (1 + Erf) first; 2: x * 0.5 first, Mul by 1/sqrt 2)
 * and a scalar Mul fuse into it (ADD, GELU_ERF, LINEAR); with split_stage
 * the chain after the MatMul is annotated on a later __pipeline_stage and
 * fuses all the same (a fused node's work moves to its stage). */
static void matmul_gelu_graph(int form, int split_stage)
{
    static const float w[20], bias[5], r2 = 1.41421356f, one = 1.0f, half = 0.5f, three = 3.0f,
                              ir2 = 0.70710678f;
    ipu_graph_t *g = ipu_graph_new("gelu");
    assert_non_null(g);
    const char *forms[3][6][4] = {
        {{"Div", "yb", "r2", "d"}, {"Erf", "d", "", "e"}, {"Add", "one", "e", "p"},
         {"Mul", "yb", "p", "m"}, {"Mul", "m", "half", "h"}, {"Mul", "three", "h", "out"}},
        {{"Div", "yb", "r2", "d"}, {"Erf", "d", "", "e"}, {"Add", "e", "one", "p"},
         {"Mul", "p", "half", "m"}, {"Mul", "yb", "m", "h"}, {"Mul", "h", "three", "out"}},
        {{"Mul", "half", "yb", "m"}, {"Mul", "yb", "ir2", "d"}, {"Erf", "d", "", "e"},
         {"Add", "one", "e", "p"}, {"Mul", "m", "p", "h"}, {"Mul", "three", "h", "out"}},
    };
    const char *head[2][4] = {{"MatMul", "x", "w", "y"}, {"Add", "y", "bias", "yb"}};
    int id[8];
    for (int i = 0; i < 8; i++) {
        const char *const *nd = i < 2 ? head[i] : forms[form][i - 2];
        int n_in = nd[2][0] ? 2 : 1;
        id[i] = ipu_graph_add_node(g, nd[0], nd[3], n_in, &nd[1], 1, &nd[3]);
        assert_true(id[i] >= 0);
        if (split_stage)
            ipu_node_add_attr_int(&g->nodes[id[i]], "__pipeline_stage", i > 0);
    }
    const struct { const char *name; int rank; int64_t d; const float *v; } consts[] = {
        {"w", 2, 0, w}, {"bias", 1, 5, bias}, {"r2", 0, 0, &r2}, {"one", 0, 0, &one},
        {"half", 0, 0, &half}, {"three", 0, 0, &three}, {"ir2", 0, 0, &ir2}};
    for (int i = 0; i < 7; i++)
        assert_int_equal(ipu_value_set_const(&g->values[ipu_graph_value(g, consts[i].name)],
                                             IPU_DTYPE_FLOAT, consts[i].rank,
                                             i == 0 ? S(4, 5).d : &consts[i].d, consts[i].v),
                         IPU_OK);
    assert_int_equal(ipu_graph_add_input(g, "x"), IPU_OK);
    assert_int_equal(ipu_graph_add_output(g, "out"), IPU_OK);
    ipu_value_set_shape(&g->values[ipu_graph_find_value(g, "x")], IPU_DTYPE_FLOAT, 3,
                        S(2, 3, 4).d);
    int count = -1;
    assert_int_equal(ipu_graph_toposort(g), IPU_OK);
    assert_int_equal(ipu_graph_bind_ops(g, ipu_op_lookup), IPU_OK);
    assert_int_equal(ipu_graph_infer(g), IPU_OK);
    assert_int_equal(ipu_graph_fuse(g, ipu_op_lookup, &count), IPU_OK);
    const ipu_node_t *mm = &g->nodes[id[0]];
    assert_int_equal(count, 1);
    assert_post(mm, 3, (const int64_t[]){IPU_FUSED_ADD, IPU_FUSED_GELU_ERF, IPU_FUSED_LINEAR});
    size_t na = 0;
    assert_true(ipu_attr_floats(mm, IPU_FUSED_ALPHA, &na)[2] == three && na == 3);
    assert_int_equal(mm->n_inputs, 4);
    assert_int_equal(mm->inputs[2], -1);
    assert_int_equal(mm->inputs[3], ipu_graph_find_value(g, "bias"));
    for (int i = 1; i < 8; i++)
        assert_string_equal(g->nodes[id[i]].op_type, "Identity");
    refuse_free(g);
}

/* graph/fuse.c: MatMul -> Add(y, r), r = Relu(x): the residual fuses
 * (SUM), unless r is made on a later __pipeline_stage than the MatMul. */
static void residual_stage_graph(int r_stage)
{
    static const float w[20];
    ipu_graph_t *g = ipu_graph_new("stages");
    assert_non_null(g);
    int mm = ipu_graph_add_node(g, "MatMul", "mm", 2, (const char *[]){"x", "w"}, 1,
                                (const char *[]){"y"});
    int relu = ipu_graph_add_node(g, "Relu", "relu", 1, (const char *[]){"x2"}, 1,
                                  (const char *[]){"r"});
    int add = ipu_graph_add_node(g, "Add", "add", 2, (const char *[]){"y", "r"}, 1,
                                 (const char *[]){"out"});
    assert_true(mm >= 0 && relu >= 0 && add >= 0);
    ipu_node_add_attr_int(&g->nodes[mm], "__pipeline_stage", 0);
    ipu_node_add_attr_int(&g->nodes[relu], "__pipeline_stage", r_stage);
    ipu_node_add_attr_int(&g->nodes[add], "__pipeline_stage", 1);
    assert_int_equal(ipu_value_set_const(&g->values[ipu_graph_value(g, "w")], IPU_DTYPE_FLOAT, 2,
                                         S(4, 5).d, w), IPU_OK);
    assert_int_equal(ipu_graph_add_input(g, "x"), IPU_OK);
    assert_int_equal(ipu_graph_add_input(g, "x2"), IPU_OK);
    assert_int_equal(ipu_graph_add_output(g, "out"), IPU_OK);
    ipu_value_set_shape(&g->values[ipu_graph_find_value(g, "x")], IPU_DTYPE_FLOAT, 2, S(3, 4).d);
    ipu_value_set_shape(&g->values[ipu_graph_find_value(g, "x2")], IPU_DTYPE_FLOAT, 2, S(3, 5).d);
    int count = -1;
    assert_int_equal(ipu_graph_toposort(g), IPU_OK);
    assert_int_equal(ipu_graph_bind_ops(g, ipu_op_lookup), IPU_OK);
    assert_int_equal(ipu_graph_infer(g), IPU_OK);
    assert_int_equal(ipu_graph_fuse(g, ipu_op_lookup, &count), IPU_OK);
    assert_int_equal(count, r_stage == 0);
    if (r_stage == 0)
        assert_post(&g->nodes[mm], 1, (const int64_t[]){IPU_FUSED_SUM});
    assert_string_equal(g->nodes[add].op_type, r_stage == 0 ? "Identity" : "Add");
    refuse_free(g);
}

static void test_matmul_fusion_pass(void **state)
{
    residual_stage_graph(0);
    residual_stage_graph(1);
    for (int form = 0; form < 3; form++)
        matmul_gelu_graph(form, 0);
    matmul_gelu_graph(0, 1);
}

/* graph/fuse.c: Conv -> Add(y, r) -> Relu fuses into the Conv (r its input
 * 3, no bias: input 2 absent); the Add and Relu become Identity nodes. */
static void test_conv_residual_fusion_pass(void **state)
{
    static const float w[36];
    ipu_graph_t *g = ipu_graph_new("residual");
    assert_non_null(g);
    int conv = ipu_graph_add_node(g, "Conv", "conv", 2, (const char *[]){"x", "w"}, 1,
                                  (const char *[]){"y"});
    int add = ipu_graph_add_node(g, "Add", "add", 2, (const char *[]){"x", "y"}, 1,
                                 (const char *[]){"z"});
    int relu = ipu_graph_add_node(g, "Relu", "relu", 1, (const char *[]){"z"}, 1,
                                  (const char *[]){"out"});
    assert_true(conv >= 0 && add >= 0 && relu >= 0);
    refcase_ints(&(op_case_t){.g = g, .node = conv}, "pads", S(1, 1, 1, 1));
    assert_int_equal(fuse_graph(g, w), 1);
    const ipu_node_t *c = &g->nodes[conv];
    assert_post(c, 2, (const int64_t[]){IPU_FUSED_SUM, IPU_FUSED_RELU});
    assert_int_equal(c->n_inputs, 4);
    assert_int_equal(c->inputs[2], -1);
    assert_int_equal(c->inputs[3], ipu_graph_find_value(g, "x"));
    assert_string_equal(g->nodes[add].op_type, "Identity");
    assert_string_equal(g->nodes[relu].op_type, "Identity");
    assert_int_equal(g->nodes[relu].inputs[0], ipu_graph_find_value(g, "y"));
    refuse_free(g);
}

/* The fused residual: Relu(Conv(X, W, B) + R) equals the unfused Conv plus
 * R, then Relu, in our layout (R reordered inside the op). */
static void test_conv_residual(void **state)
{
    enum { N = 1 * 4 * 6 * 6 };
    shape_t xs = S(1, 3, 6, 6), ws = S(4, 3, 3, 3), ys = S(1, 4, 6, 6);
    float x[3 * 36], w[4 * 27], b[4], r[N], want[N];
    for (int i = 0; i < 3 * 36; i++)
        x[i] = (float)(i % 11) * 0.1f - 0.5f;
    for (int i = 0; i < 4 * 27; i++)
        w[i] = (float)(i % 7) * 0.05f - 0.15f;
    for (int i = 0; i < 4; i++)
        b[i] = 0.1f * (float)i - 0.2f;
    for (int i = 0; i < N; i++)
        r[i] = (float)(i % 5) * 0.2f - 0.4f;
    for (int fused = 0; fused < 2; fused++) {
        op_case_t *c = oc_new("Conv", 13, fused ? 4 : 3, 1);
        oc_input(c, 0, IPU_DTYPE_FLOAT, xs.rank, xs.d, x);
        oc_const(c, 1, IPU_DTYPE_FLOAT, ws.rank, ws.d, w);
        oc_const(c, 2, IPU_DTYPE_FLOAT, 1, S(4).d, b);
        if (fused) {
            oc_const(c, 3, IPU_DTYPE_FLOAT, ys.rank, ys.d, r);
            set_post(oc_node(c), 2, (const int64_t[]){IPU_FUSED_SUM, IPU_FUSED_RELU},
                     (const float[]){1, 0}, (const float[]){0, 0});
        }
        refcase_ints(c, "pads", S(1, 1, 1, 1));
        refcase_run_ok(c, "");
        const ipu_tensor_t *y = oc_output(c, 0);
        assert_shape(y, ys.rank, ys.d);
        if (!fused)
            for (int i = 0; i < N; i++)
                want[i] = fmaxf(((const float *)y->data)[i] + r[i], 0.0f);
        else
            assert_allclose_f32(y->data, want, N, 1e-6, 1e-6);
        oc_free(c);
    }
}

/* all inputs constant: the node folds at inference through the same kernel */
static void test_conv_folded(void **state)
{
    shape_t in[3] = {S(1, 3, 7, 8), S(4, 3, 3, 3), S(4)};
    op_case_t *c = oc_new("Conv", 13, 3, 1);
    for (int i = 0; i < 3; i++) {
        char slot[8];
        snprintf(slot, sizeof(slot), "in%d", i);
        float *data = load("conv_pads_strides", slot, shape_numel(in[i]) * sizeof(float));
        oc_const(c, i, IPU_DTYPE_FLOAT, in[i].rank, in[i].d, data);
        free(data);
    }
    refcase_ints(c, "pads", S(1, 2, 1, 0));
    refcase_ints(c, "strides", S(2, 1));
    refcase_run_ok(c, "");
    assert_true(oc_node(c)->folded);
    check_out(c, "conv_pads_strides", 0, S(1, 4, 4, 8));
    oc_free(c);
}

static void test_conv_errors(void **state)
{
    static const float z[200];
    op_case_t *c;
    /* X has 3 channels, W expects 4 */
    c = oc_new("Conv", 13, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 4, S(1, 3, 5, 5).d, z);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 4, S(2, 4, 3, 3).d, z);
    oc_expect_error(c, IPU_ERR_SHAPE, "channels");
    /* kernel larger than the input */
    c = oc_new("Conv", 13, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 4, S(1, 1, 2, 2).d, z);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 4, S(1, 1, 3, 3).d, z);
    oc_expect_error(c, IPU_ERR_SHAPE, NULL);
    /* bias of the wrong length */
    c = oc_new("Conv", 13, 3, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 4, S(1, 1, 4, 4).d, z);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 4, S(2, 1, 3, 3).d, z);
    oc_const(c, 2, IPU_DTYPE_FLOAT, 1, S(3).d, z);
    oc_expect_error(c, IPU_ERR_SHAPE, "B");
    /* bad auto_pad, wrong pads count */
    c = oc_new("Conv", 13, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 4, S(1, 1, 4, 4).d, z);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 4, S(1, 1, 3, 3).d, z);
    ipu_node_add_attr_string(oc_node(c), "auto_pad", "SAME");
    oc_expect_error(c, IPU_ERR_INVALID_MODEL, "auto_pad");
    /* an unknown fused post-op */
    c = oc_new("Conv", 13, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 4, S(1, 1, 4, 4).d, z);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 4, S(1, 1, 3, 3).d, z);
    set_post(oc_node(c), 1, (const int64_t[]){99}, (const float[]){0}, (const float[]){0});
    oc_expect_error(c, IPU_ERR_INVALID_MODEL, "unknown fused post-op");
    c = oc_new("Conv", 13, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 4, S(1, 1, 4, 4).d, z);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 4, S(1, 1, 3, 3).d, z);
    refcase_ints(c, "pads", S(1, 1));
    oc_expect_error(c, IPU_ERR_INVALID_MODEL, "pads");
    /* group does not divide the output channels */
    c = oc_new("Conv", 13, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 4, S(1, 4, 4, 4).d, z);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 4, S(3, 2, 3, 3).d, z);
    ipu_node_add_attr_int(oc_node(c), "group", 2);
    oc_expect_error(c, IPU_ERR_SHAPE, "group");
    /* int64 input */
    c = oc_new("Conv", 13, 2, 1);
    oc_input(c, 0, IPU_DTYPE_INT64, 4, S(1, 1, 4, 4).d, z);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 4, S(1, 1, 3, 3).d, z);
    oc_expect_error(c, IPU_ERR_UNSUPPORTED, "int64");
}

/* ---- Gemm / MatMul ------------------------------------------------------------ */

static void gemm_case(const char *cs, int opset, shape_t a, shape_t b, shape_t cc, int ta, int tb,
                      float alpha, float beta, shape_t y)
{
    shape_t in[3] = {a, b, cc};
    op_case_t *c = load_case(cs, "Gemm", opset, cc.rank < 0 ? 2 : 3, in, 1);
    ipu_node_t *n = oc_node(c);
    if (ta)
        ipu_node_add_attr_int(n, "transA", 1);
    if (tb)
        ipu_node_add_attr_int(n, "transB", 1);
    if (alpha != 1.0f)
        ipu_node_add_attr_float(n, "alpha", alpha);
    if (beta != 1.0f)
        ipu_node_add_attr_float(n, "beta", beta);
    refcase_run_ok(c, "");
    check_out(c, cs, 0, y);
    oc_free(c);
}

static void test_gemm(void **state)
{
    gemm_case("gemm_full_c", 7, S(3, 4), S(4, 5), S(3, 5), 0, 0, 0.5f, 2.0f, S(3, 5));
    gemm_case("gemm_trans_row_c", 9, S(4, 3), S(5, 4), S(5), 1, 1, 1.5f, 0.5f, S(3, 5));
    gemm_case("gemm_col_c", 11, S(3, 4), S(4, 5), S(3, 1), 0, 0, 1.0f, 1.0f, S(3, 5));
    gemm_case("gemm_scalar_c", 13, S(3, 4), S(5, 4), SCALAR, 0, 1, 1.0f, -1.0f, S(3, 5));
    gemm_case("gemm_no_c", 13, S(3, 4), S(4, 5), ABSENT, 0, 0, 2.0f, 1.0f, S(3, 5));
}

static void test_gemm_vectors(void **state)
{
    gemm_case("gemm_m1_transb", 13, S(1, 6), S(5, 6), S(5), 0, 1, 1.0f, 1.0f, S(1, 5));
    gemm_case("gemm_m1_transa", 13, S(6, 1), S(6, 5), S(1, 5), 1, 0, 0.7f, 0.3f, S(1, 5));
    gemm_case("gemm_n1", 13, S(4, 6), S(6, 1), S(4, 1), 0, 0, 1.0f, 1.0f, S(4, 1));
    gemm_case("gemm_n1_trans", 11, S(6, 4), S(1, 6), ABSENT, 1, 1, 1.0f, 1.0f, S(4, 1));
}

static void mm_case(const char *cs, int opset, shape_t a, shape_t b, shape_t y)
{
    shape_t in[2] = {a, b};
    op_case_t *c = load_case(cs, "MatMul", opset, 2, in, 1);
    refcase_run_ok(c, "");
    check_out(c, cs, 0, y);
    oc_free(c);
}

static void test_matmul(void **state)
{
    mm_case("mm_2d", 7, S(3, 4), S(4, 5), S(3, 5));
    mm_case("mm_shared_b", 13, S(2, 3, 4, 5), S(5, 6), S(2, 3, 4, 6));
    mm_case("mm_attention", 17, S(2, 3, 4, 5), S(2, 3, 5, 4), S(2, 3, 4, 4));
    mm_case("mm_broadcast", 13, S(2, 1, 3, 4), S(3, 4, 2), S(2, 3, 3, 2));
    mm_case("mm_a_2d", 9, S(3, 4), S(2, 4, 5), S(2, 3, 5));
    mm_case("mm_m1_batch", 13, S(2, 3, 1, 4), S(2, 3, 4, 5), S(2, 3, 1, 5));
}

static void test_matmul_1d(void **state)
{
    mm_case("mm_1d_a", 13, S(4), S(2, 4, 5), S(2, 5));
    mm_case("mm_1d_b", 13, S(2, 3, 4), S(4), S(2, 3));
    mm_case("mm_1d_both", 13, S(4), S(4), SCALAR);
}

static void test_gemm_errors(void **state)
{
    static const float z[64];
    op_case_t *c = oc_new("Gemm", 13, 3, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 2, S(3, 4).d, z);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 2, S(5, 6).d, z);
    oc_const(c, 2, IPU_DTYPE_FLOAT, 1, S(6).d, z);
    oc_expect_error(c, IPU_ERR_SHAPE, "inner");
    c = oc_new("Gemm", 13, 3, 1); /* C [2, 5] cannot broadcast to [3, 5] */
    oc_input(c, 0, IPU_DTYPE_FLOAT, 2, S(3, 4).d, z);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 2, S(4, 5).d, z);
    oc_const(c, 2, IPU_DTYPE_FLOAT, 2, S(2, 5).d, z);
    oc_expect_error(c, IPU_ERR_SHAPE, "broadcast");
    c = oc_new("MatMul", 13, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 3, S(2, 3, 4).d, z);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 3, S(3, 4, 5).d, z);
    oc_expect_error(c, IPU_ERR_SHAPE, "broadcast");
    c = oc_new("MatMul", 13, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 2, S(3, 4).d, z);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 1, S(5).d, z);
    oc_expect_error(c, IPU_ERR_SHAPE, "inner");
}

/* ---- pools ----------------------------------------------------------------- */

static op_case_t *pool_case(const char *cs, const char *op, int opset, shape_t x, int n_out)
{
    return load_case(cs, op, opset, 1, &x, n_out);
}

static void pool_check(op_case_t *c, const char *cs, shape_t y)
{
    refcase_run_ok(c, "");
    check_out(c, cs, 0, y);
    oc_free(c);
}

static void test_maxpool(void **state)
{
    op_case_t *c = pool_case("maxpool_ceil", "MaxPool", 12, S(1, 2, 8, 8), 1);
    refcase_ints(c, "kernel_shape", S(3, 3));
    refcase_ints(c, "strides", S(2, 2));
    ipu_node_add_attr_int(oc_node(c), "ceil_mode", 1);
    pool_check(c, "maxpool_ceil", S(1, 2, 4, 4));

    c = pool_case("maxpool_ceil_pad", "MaxPool", 10, S(1, 2, 9, 9), 1);
    refcase_ints(c, "kernel_shape", S(3, 3));
    refcase_ints(c, "strides", S(2, 2));
    refcase_ints(c, "pads", S(1, 1, 1, 1));
    ipu_node_add_attr_int(oc_node(c), "ceil_mode", 1);
    pool_check(c, "maxpool_ceil_pad", S(1, 2, 5, 5));

    c = pool_case("maxpool_ceil_drop", "MaxPool", 11, S(1, 1, 5, 5), 1);
    refcase_ints(c, "kernel_shape", S(2, 2));
    refcase_ints(c, "strides", S(2, 2));
    refcase_ints(c, "pads", S(1, 1, 1, 1));
    ipu_node_add_attr_int(oc_node(c), "ceil_mode", 1);
    pool_check(c, "maxpool_ceil_drop", S(1, 1, 3, 3));

    c = pool_case("maxpool_pads_dil", "MaxPool", 12, S(1, 3, 7, 8), 1);
    refcase_ints(c, "kernel_shape", S(3, 2));
    refcase_ints(c, "strides", S(1, 2));
    refcase_ints(c, "pads", S(1, 0, 1, 1));
    refcase_ints(c, "dilations", S(2, 1));
    pool_check(c, "maxpool_pads_dil", S(1, 3, 5, 4));

    c = pool_case("maxpool_same_upper", "MaxPool", 8, S(1, 2, 7, 6), 1);
    refcase_ints(c, "kernel_shape", S(3, 3));
    refcase_ints(c, "strides", S(2, 2));
    ipu_node_add_attr_string(oc_node(c), "auto_pad", "SAME_UPPER");
    pool_check(c, "maxpool_same_upper", S(1, 2, 4, 3));

    c = pool_case("maxpool1d", "MaxPool", 13, S(1, 2, 9), 1);
    refcase_ints(c, "kernel_shape", S(3));
    refcase_ints(c, "strides", S(2));
    refcase_ints(c, "pads", S(1, 1));
    pool_check(c, "maxpool1d", S(1, 2, 5));
}

static void test_maxpool_indices(void **state)
{
    op_case_t *c = pool_case("maxpool_indices", "MaxPool", 12, S(2, 2, 5, 5), 2);
    refcase_ints(c, "kernel_shape", S(2, 2));
    refcase_ints(c, "strides", S(2, 2));
    refcase_run_ok(c, "");
    check_out(c, "maxpool_indices", 0, S(2, 2, 2, 2));
    check_out(c, "maxpool_indices", 1, S(2, 2, 2, 2));
    oc_free(c);
}

static void test_avgpool(void **state)
{
    op_case_t *c = pool_case("avgpool_include_ceil", "AveragePool", 11, S(1, 2, 6, 6), 1);
    refcase_ints(c, "kernel_shape", S(3, 3));
    refcase_ints(c, "strides", S(2, 2));
    refcase_ints(c, "pads", S(1, 1, 1, 1));
    ipu_node_add_attr_int(oc_node(c), "ceil_mode", 1);
    ipu_node_add_attr_int(oc_node(c), "count_include_pad", 1);
    pool_check(c, "avgpool_include_ceil", S(1, 2, 4, 4));

    c = pool_case("avgpool_exclude_ceil", "AveragePool", 10, S(1, 2, 6, 6), 1);
    refcase_ints(c, "kernel_shape", S(3, 3));
    refcase_ints(c, "strides", S(2, 2));
    refcase_ints(c, "pads", S(1, 1, 1, 1));
    ipu_node_add_attr_int(oc_node(c), "ceil_mode", 1);
    pool_check(c, "avgpool_exclude_ceil", S(1, 2, 4, 4));

    c = pool_case("avgpool_exclude", "AveragePool", 7, S(2, 3, 6, 7), 1);
    refcase_ints(c, "kernel_shape", S(3, 2));
    refcase_ints(c, "strides", S(2, 1));
    refcase_ints(c, "pads", S(1, 1, 1, 1));
    pool_check(c, "avgpool_exclude", S(2, 3, 3, 8));

    c = pool_case("avgpool3d", "AveragePool", 13, S(1, 2, 5, 6, 4), 1);
    refcase_ints(c, "kernel_shape", S(2, 2, 2));
    refcase_ints(c, "strides", S(1, 2, 2));
    refcase_ints(c, "pads", S(1, 1, 1, 1, 1, 1));
    ipu_node_add_attr_int(oc_node(c), "count_include_pad", 1);
    pool_check(c, "avgpool3d", S(1, 2, 6, 4, 3));
}

/* cases oneDNN's pooling runs (more channels, 3-D, ceil_mode with
 * dilations, AveragePool-19's dilations) */
static void test_pools_dnn(void **state)
{
    op_case_t *c = pool_case("maxpool_ceil_dil", "MaxPool", 12, S(2, 32, 13, 12), 1);
    refcase_ints(c, "kernel_shape", S(3, 3));
    refcase_ints(c, "strides", S(2, 2));
    refcase_ints(c, "pads", S(1, 1, 1, 1));
    refcase_ints(c, "dilations", S(2, 2));
    ipu_node_add_attr_int(oc_node(c), "ceil_mode", 1);
    pool_check(c, "maxpool_ceil_dil", S(2, 32, 6, 6));

    c = pool_case("maxpool3d_ceil", "MaxPool", 12, S(1, 2, 7, 9, 8), 1);
    refcase_ints(c, "kernel_shape", S(2, 2, 2));
    refcase_ints(c, "strides", S(2, 2, 2));
    ipu_node_add_attr_int(oc_node(c), "ceil_mode", 1);
    pool_check(c, "maxpool3d_ceil", S(1, 2, 4, 5, 4));

    c = pool_case("avgpool_include_ceil_fit", "AveragePool", 11, S(1, 32, 7, 7), 1);
    refcase_ints(c, "kernel_shape", S(3, 3));
    refcase_ints(c, "strides", S(2, 2));
    refcase_ints(c, "pads", S(1, 1, 1, 1));
    ipu_node_add_attr_int(oc_node(c), "ceil_mode", 1);
    ipu_node_add_attr_int(oc_node(c), "count_include_pad", 1);
    pool_check(c, "avgpool_include_ceil_fit", S(1, 32, 4, 4));

    for (int include = 0; include <= 1; include++) {
        const char *cs = include ? "avgpool_dil_include" : "avgpool_dil_exclude";
        c = pool_case(cs, "AveragePool", 19, S(1, 4, 9, 10), 1);
        refcase_ints(c, "kernel_shape", S(3, 3));
        refcase_ints(c, "strides", S(2, 1));
        refcase_ints(c, "dilations", S(2, 3));
        refcase_ints(c, "pads", S(1, 2, 1, 0));
        ipu_node_add_attr_int(oc_node(c), "count_include_pad", include);
        pool_check(c, cs, S(1, 4, 4, 6));
    }

    pool_check(pool_case("global_avg_32", "GlobalAveragePool", 13, S(1, 32, 7, 7), 1),
               "global_avg_32", S(1, 32, 1, 1));
    pool_check(pool_case("global_max_32", "GlobalMaxPool", 13, S(1, 32, 7, 7), 1),
               "global_max_32", S(1, 32, 1, 1));
}

static void test_global_pools(void **state)
{
    pool_check(pool_case("global_avg", "GlobalAveragePool", 13, S(2, 3, 5, 4), 1), "global_avg",
               S(2, 3, 1, 1));
    pool_check(pool_case("global_max", "GlobalMaxPool", 7, S(2, 3, 5, 4), 1), "global_max",
               S(2, 3, 1, 1));
    pool_check(pool_case("global_avg_63", "GlobalAveragePool", 1, S(1, 3, 9, 7), 1),
               "global_avg_63", S(1, 3, 1, 1));
    pool_check(pool_case("global_max_63", "GlobalMaxPool", 1, S(1, 3, 9, 7), 1),
               "global_max_63", S(1, 3, 1, 1));
}

static void test_pool_errors(void **state)
{
    static const float z[64];
    op_case_t *c = oc_new("MaxPool", 13, 1, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 4, S(1, 1, 4, 4).d, z);
    oc_expect_error(c, IPU_ERR_INVALID_MODEL, "kernel_shape");
    c = oc_new("AveragePool", 13, 1, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 4, S(1, 1, 4, 4).d, z);
    refcase_ints(c, "kernel_shape", S(2, 2));
    refcase_ints(c, "strides", S(0, 1));
    oc_expect_error(c, IPU_ERR_INVALID_MODEL, "strides");
    c = oc_new("GlobalAveragePool", 13, 1, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 2, S(4, 4).d, z);
    oc_expect_error(c, IPU_ERR_SHAPE, "rank");
}

/* every op of the family is registered for opsets 7..17 */
static void test_opset_coverage(void **state)
{
    static const char *ops[] = {"Conv", "Gemm", "MatMul", "MaxPool", "AveragePool",
                                "GlobalAveragePool", "GlobalMaxPool"};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        for (int v = 7; v <= 17; v++)
            if (ipu_op_lookup("", ops[i], v) == NULL)
                fail_msg("%s-%d not registered", ops[i], v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_pads_strides),
        cmocka_unit_test(test_conv_dilation_nobias),
        cmocka_unit_test(test_conv_group_batch2),
        cmocka_unit_test(test_conv_depthwise_mult2),
        cmocka_unit_test(test_conv_depthwise_stride2),
        cmocka_unit_test(test_conv_depthwise_dilation),
        cmocka_unit_test(test_conv_1x1_batch2),
        cmocka_unit_test(test_conv_1x1_stride2),
        cmocka_unit_test(test_conv_same_upper),
        cmocka_unit_test(test_conv_same_lower),
        cmocka_unit_test(test_conv_valid),
        cmocka_unit_test(test_conv1d),
        cmocka_unit_test(test_conv3d),
        cmocka_unit_test(test_conv_depthwise_phases),
        cmocka_unit_test(test_conv_fused),
        cmocka_unit_test(test_matmul_fusion_pass),
        cmocka_unit_test(test_conv3d_bands),
        cmocka_unit_test(test_conv_fusion_pass),
        cmocka_unit_test(test_conv_residual_fusion_pass),
        cmocka_unit_test(test_conv_residual),
        cmocka_unit_test(test_conv_folded),
        cmocka_unit_test(test_conv_errors),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_gemm_vectors),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_matmul_1d),
        cmocka_unit_test(test_gemm_errors),
        cmocka_unit_test(test_maxpool),
        cmocka_unit_test(test_maxpool_indices),
        cmocka_unit_test(test_avgpool),
        cmocka_unit_test(test_global_pools),
        cmocka_unit_test(test_pools_dnn),
        cmocka_unit_test(test_pool_errors),
        cmocka_unit_test(test_opset_coverage),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
