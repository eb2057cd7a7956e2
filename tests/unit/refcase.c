/* One-node cases against reference files (refcase.h). */
#include "refcase.h"

#include "refdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

size_t shape_numel(shape_t s)
{
    return (size_t)ipu_shape_numel(s.rank, s.d);
}

op_case_t *refcase_new(const char *dir, const char *cs, const char *op, int opset, int n_in,
                       const shape_t *in, int n_out, int all_const)
{
    op_case_t *c = oc_new(op, opset, n_in, n_out);
    for (int i = 0; i < n_in; i++) {
        char slot[16];
        if (in[i].rank < 0) {
            oc_absent(c, i);
            continue;
        }
        snprintf(slot, sizeof(slot), "in%d", i);
        float *data = refdir_load(dir, cs, slot, shape_numel(in[i]) * sizeof(float));
        if (i == 0 && !all_const)
            oc_input(c, i, IPU_DTYPE_FLOAT, in[i].rank, in[i].d, data);
        else
            oc_const(c, i, IPU_DTYPE_FLOAT, in[i].rank, in[i].d, data);
        free(data);
    }
    return c;
}

void refcase_check(op_case_t *c, const char *dir, const char *cs, int k, shape_t want)
{
    char slot[16];
    const ipu_tensor_t *y = oc_output(c, k);
    assert_shape(y, want.rank, want.d);
    snprintf(slot, sizeof(slot), "out%d", k);
    size_t n = shape_numel(want);
    if (y->dtype == IPU_DTYPE_INT64) {
        int64_t *r = refdir_load(dir, cs, slot, n * sizeof(int64_t));
        assert_equal_i64(y->data, r, n);
        free(r);
    } else {
        float *r = refdir_load(dir, cs, slot, n * sizeof(float));
        assert_allclose_f32(y->data, r, n, 1e-4, 1e-4);
        free(r);
    }
}

void refcase_ints(op_case_t *c, const char *name, shape_t v)
{
    if (v.rank > 0)
        assert_int_equal(ipu_node_add_attr_ints(oc_node(c), name, (size_t)v.rank, v.d), IPU_OK);
}

void refcase_run_ok(op_case_t *c, const char *cs)
{
    ipu_status_t st = oc_run(c);
    if (st != IPU_OK)
        fail_msg("%s: oc_run: %s: %s", cs, ipu_status_string(st), ipu_error_message());
}

void refcase_rerun(op_case_t *c, int threads)
{
    ipu_node_t *n = oc_node(c);
    ipu_tensor_t in[8];
    static float scratch[1 << 18];
    assert_true(n->n_inputs <= 8);
    for (int i = 0; i < n->n_inputs; i++)
        in[i] = ipu_value_tensor(c->g, n->inputs[i]);
    assert_non_null(in[0].data); /* oc_run gave the fed input its bytes back */
    if (n->op->load)
        assert_int_equal(n->op->load(c->g, n), IPU_OK);
    for (size_t i = 0; i < sizeof(scratch) / sizeof(scratch[0]); i++)
        scratch[i] = 1e30f;
    memset(c->out[0].data, 0xff, ipu_tensor_nbytes(&c->out[0]));
    ipu_kernel_ctx_t ctx = {.threads = threads, .scratch = scratch, .scratch_bytes = sizeof(scratch)};
    assert_true(n->op->scratch == NULL || n->op->scratch(c->g, n) <= sizeof(scratch));
    assert_int_equal(n->op->run(n, in, c->out, &ctx), IPU_OK);
}
