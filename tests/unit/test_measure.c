/* The partitioner's measured node costs (exec/measure.h) time a node as a
 * loaded stage runs it:
 * - with ipu_dnn_timing() on, a Conv whose primitive reads and writes a
 *   blocked layout runs that primitive only: no reorder of X from ours, none
 *   of Y back (the layout pass chains a stage's oneDNN nodes), so our Y is
 *   left as it was; off again, the same call computes Y;
 * - a node whose weights take longer to stream from memory than its kernel
 *   takes with them in cache costs the streaming time (a roofline, not the
 *   sum of the two);
 * - the cost model charges nothing for a view (IPU_OP_ALIAS_INPUT0: the
 *   buffer planner aliases it and it does not run). */
#include "exec/measure.h"
#include "exec/onednn.h"
#include "exec/onednn_impl.h"
#include "exec/ops/dnn_chain.h"
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

static void test_timing_runs_the_primitive_only(void **state)
{
    (void)state;
    enum { C = 64, H = 28 };
    int64_t xd[4] = {1, C, H, H}, wd[4] = {C, C, 3, 3};
    size_t nx = (size_t)C * H * H, nw = (size_t)C * C * 9, ny = (size_t)C * (H - 2) * (H - 2);
    float *x = filled(nx, 0.01f), *w = filled(nw, 0.01f);
    op_case_t *c = oc_new("Conv", 13, 3, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 4, xd, x);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 4, wd, w);
    oc_absent(c, 2);
    assert_int_equal(oc_run(c), IPU_OK);
    const ipu_node_t *n = oc_node(c);
    const ipu_dnn_node_t *d = n->state;
    if (d == NULL || d->p == NULL || d->p->src_in == NULL || d->p->dst_out == NULL)
        skip(); /* oneDNN runs this Conv in our layout here: nothing to skip */
    ipu_kernel_ctx_t ctx = {.threads = 1, .scratch_bytes = n->op->scratch(c->g, n)};
    ctx.scratch = aligned_alloc(64, (ctx.scratch_bytes + 63) / 64 * 64);
    assert_non_null(ctx.scratch);
    memset(ctx.scratch, 0, ctx.scratch_bytes);
    ipu_tensor_t in[3] = {{0}}, out[1] = {{0}};
    in[0] = ipu_value_tensor(c->g, n->inputs[0]);
    in[0].data = x;
    in[1] = ipu_value_tensor(c->g, n->inputs[1]);
    out[0] = ipu_value_tensor(c->g, n->outputs[0]);
    float *y = filled(ny, NAN);
    out[0].data = y;
    ipu_dnn_timing(1);
    assert_int_equal(n->op->run(n, in, out, &ctx), IPU_OK);
    assert_int_equal(n->op->run(n, in, out, &ctx), IPU_OK); /* the weights kept */
    for (size_t i = 0; i < ny; i++)
        assert_true(isnan(y[i]));
    ipu_dnn_timing(0);
    assert_int_equal(n->op->run(n, in, out, &ctx), IPU_OK);
    float want = 9 * C * 1e-4f; /* every output: 3 x 3 x C products of 0.01 */
    for (size_t i = 0; i < ny; i++)
        assert_true(fabsf(y[i] - want) <= 1e-3f * want);
    free(y);
    free(ctx.scratch);
    oc_free(c);
    free(x);
    free(w);
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
    const char *ops[] = {"Identity", "Relu"};
    for (int k = 0; k < 2; k++) {
        op_case_t *c = oc_new(ops[k], 13, 1, 1);
        oc_input(c, 0, IPU_DTYPE_FLOAT, 2, (int64_t[]){8, 8}, x);
        assert_int_equal(oc_run(c), IPU_OK);
        ipu_cost_params_t p;
        ipu_cost_params_init(&p);
        ipu_node_cost_t cost[2];
        assert_int_equal(ipu_cost_nodes(c->g, &p, cost), IPU_OK);
        /* Relu: 512 bytes moved at 10 GB/s (longer than 64 elements at 4
         * GFLOP/s) */
        assert_true(fabs(cost[c->node].est_ms - (k == 0 ? 0 : 512 / (p.mem_gbps * 1e6))) < 1e-12);
        oc_free(c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timing_runs_the_primitive_only),
        cmocka_unit_test(test_weights_stream_as_a_roofline),
        cmocka_unit_test(test_views_cost_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
