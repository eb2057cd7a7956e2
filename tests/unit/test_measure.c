/* The partitioner's measured node costs (exec/measure.h):
 * - a Conv that sums a residual in place (the buffer planner gives Y the
 *   residual's buffer) is timed so, on the prepared graph (the layout pass
 *   run: its residual in its Y's layout), and its buffers are freed once
 *   each (the ASan build runs this);
 * - a node whose weights take longer to stream from memory than its kernel
 *   takes with them in cache costs the streaming time (a roofline, not the
 *   sum of the two);
 * - the cost model charges nothing for a view (IPU_OP_ALIAS_INPUT0 of one
 *   output: the buffer planner aliases it and it does not run), but its
 *   bytes for a Dropout that writes its mask too; a Gather is charged the
 *   rows it reads, not its whole table. */
#include "exec/measure.h"
#include "exec/ops/registry.h"
#include "exec/prepare.h"
#include "harness.h"
#include "partition/cost.h"

#include <math.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static float *filled(size_t n, float v)
{
    float *p = malloc(n * sizeof(float));
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = v;
    return p;
}

/* x [1, 16, 12, 12] -> y = Conv0(x) + Conv1(x): Conv0, first in node order,
 * fuses the Add and sums Conv1's output c, which the layout pass keeps in
 * Conv0's Y layout for it. */
static void test_residual_timed_in_place(void **state)
{
    (void)state;
    enum { C = 16, H = 12 };
    static float w[2][C * C * 9];
    for (int i = 0; i < C * C * 9; i++)
        w[0][i] = w[1][i] = 0.01f * (float)(i % 7);
    ipu_graph_t *g = ipu_graph_new("res");
    const char *wn[2] = {"w0", "w1"};
    int nd[2];
    nd[0] = ipu_graph_add_node(g, "Conv", "conv0", 2, (const char *[]){"x", "w0"}, 1, (const char *[]){"r"});
    nd[1] = ipu_graph_add_node(g, "Conv", "conv1", 2, (const char *[]){"x", "w1"}, 1, (const char *[]){"c"});
    int add = ipu_graph_add_node(g, "Add", "add", 2, (const char *[]){"c", "r"}, 1, (const char *[]){"y"});
    for (int k = 0; k < 2; k++) {
        assert_int_equal(ipu_node_add_attr_ints(&g->nodes[nd[k]], "pads", 4, (int64_t[]){1, 1, 1, 1}), IPU_OK);
        assert_int_equal(ipu_value_set_const(&g->values[ipu_graph_find_value(g, wn[k])], IPU_DTYPE_FLOAT, 4,
                                             (int64_t[]){C, C, 3, 3}, w[k]),
                         IPU_OK);
    }
    ipu_graph_add_input(g, "x");
    ipu_graph_add_output(g, "y");
    assert_int_equal(ipu_graph_toposort(g), IPU_OK);
    assert_int_equal(ipu_graph_bind_ops(g, ipu_op_lookup), IPU_OK);
    ipu_tensor_t x = {.dtype = IPU_DTYPE_FLOAT, .rank = 4, .dims = {1, C, H, H}};
    assert_int_equal(ipu_prepare_shapes(g, &x), IPU_OK);
    const ipu_node_t *c0 = &g->nodes[nd[0]];
    assert_non_null(c0->op->inplace);
    int res = c0->op->inplace(c0);
    assert_true(res >= 0); /* the sum fused, c in Y's layout */
    assert_int_equal(c0->inputs[res], ipu_graph_find_value(g, "c"));
    double ms[4] = {0};
    assert_int_equal(ipu_measure_nodes(g, ms), IPU_OK);
    assert_true(ms[nd[0]] > 0 && ms[nd[1]] > 0);
    assert_true(ms[add] < 0); /* the Add, fused: the cost model's */
    ipu_graph_free(g);
}

/* Gemm 1 x 1024 by 1024 x 1024: 4 MiB of weights for 2 MFLOP. */
static void test_weights_stream_as_a_roofline(void **state)
{
    (void)state;
    enum { K = 1024, N = 1024 };
    float *a = filled(K, 0.5f), *b = filled((size_t)K * N, 0.25f);
    op_case_t *c = oc_new("Gemm", 13, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 2, (int64_t[]){1, K}, a);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 2, (int64_t[]){K, N}, b);
    assert_int_equal(oc_run(c), IPU_OK);
    assert_true(fabsf(((const float *)oc_output(c, 0)->data)[0] - 0.125f * K) < 1e-3f);
    double *ms = calloc((size_t)c->g->n_nodes, sizeof(double));
    assert_non_null(ms);
    assert_int_equal(ipu_measure_nodes(c->g, ms), IPU_OK);
    /* B's 4 MiB and A's 4 KiB (the harness keeps A's feed on its value, as
     * a constant's bytes) at 8 GB/s take 0.525 ms, far longer than the
     * product with them in cache: a sum would be more, a roofline is that */
    double stream_ms = (double)(K * N + K) * sizeof(float) / 8e6;
    assert_true(fabs(ms[c->node] - stream_ms) < 1e-9);
    free(ms);
    oc_free(c);
    free(a);
    free(b);
}

static void test_views_cost_nothing(void **state)
{
    (void)state;
    float x[64];
    for (int i = 0; i < 64; i++)
        x[i] = (float)i;
    /* x -> Relu -> r -> Identity -> y: the Identity a view of r */
    ipu_graph_t *g = ipu_graph_new("view");
    int relu = ipu_graph_add_node(g, "Relu", "relu", 1, (const char *[]){"x"}, 1, (const char *[]){"r"});
    int id = ipu_graph_add_node(g, "Identity", "id", 1, (const char *[]){"r"}, 1, (const char *[]){"y"});
    ipu_graph_add_input(g, "x");
    ipu_graph_add_output(g, "y");
    ipu_value_set_shape(&g->values[ipu_graph_find_value(g, "x")], IPU_DTYPE_FLOAT, 2, (int64_t[]){8, 8});
    assert_int_equal(ipu_graph_toposort(g), IPU_OK);
    assert_int_equal(ipu_graph_bind_ops(g, ipu_op_lookup), IPU_OK);
    assert_int_equal(ipu_graph_infer(g), IPU_OK);
    ipu_cost_params_t p;
    ipu_cost_params_init(&p);
    ipu_node_cost_t cost[2];
    assert_int_equal(ipu_cost_nodes(g, &p, cost), IPU_OK);
    /* Relu: 512 bytes moved at 10 GB/s (longer than 64 elements at 4
     * GFLOP/s); the Identity nothing */
    assert_true(fabs(cost[relu].est_ms - 512 / (p.mem_gbps * 1e6)) < 1e-12);
    assert_true(cost[id].est_ms == 0);
    ipu_graph_free(g);
    /* a Dropout with its mask runs (the planner does not alias it): 256
     * bytes in, 256 + 64 (the bool mask) out */
    op_case_t *c = oc_new("Dropout", 13, 1, 2);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 2, (int64_t[]){8, 8}, x);
    assert_int_equal(oc_run(c), IPU_OK);
    assert_int_equal(ipu_cost_nodes(c->g, &p, cost), IPU_OK);
    assert_true(fabs(cost[c->node].est_ms - 576 / (p.mem_gbps * 1e6)) < 1e-12);
    oc_free(c);
}

/* A Gather of 4 rows of a [1000, 64] table (an embedding) reads those
 * rows, not the table: 4 x 64 floats in and out and 4 int64 indices,
 * 2080 bytes at 10 GB/s (the whole table would be 256 000 bytes). */
static void test_gather_reads_its_rows(void **state)
{
    (void)state;
    static float table[1000 * 64];
    int64_t idx[4] = {7, 0, 999, 7};
    op_case_t *c = oc_new("Gather", 13, 2, 1);
    oc_const(c, 0, IPU_DTYPE_FLOAT, 2, (int64_t[]){1000, 64}, table);
    oc_input(c, 1, IPU_DTYPE_INT64, 1, (int64_t[]){4}, idx);
    assert_int_equal(oc_run(c), IPU_OK);
    ipu_cost_params_t p;
    ipu_cost_params_init(&p);
    ipu_node_cost_t cost[2];
    assert_int_equal(ipu_cost_nodes(c->g, &p, cost), IPU_OK);
    assert_true(fabs(cost[c->node].est_ms - 2080 / (p.mem_gbps * 1e6)) < 1e-12);
    oc_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_residual_timed_in_place),
        cmocka_unit_test(test_weights_stream_as_a_roofline),
        cmocka_unit_test(test_views_cost_nothing),
        cmocka_unit_test(test_gather_reads_its_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
