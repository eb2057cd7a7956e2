#include "harness.h"

#include "exec/ops/registry.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

op_case_t *oc_new(const char *op_type, int opset, int n_in, int n_out)
{
    op_case_t *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    c->g = ipu_graph_new("unit");
    assert_non_null(c->g);
    c->g->opset = opset;
    const char *in[8], *out[8];
    char inb[8][16], outb[8][16];
    for (int i = 0; i < n_in; i++) {
        snprintf(inb[i], sizeof(inb[i]), "in%d", i);
        in[i] = inb[i];
    }
    for (int i = 0; i < n_out; i++) {
        snprintf(outb[i], sizeof(outb[i]), "out%d", i);
        out[i] = outb[i];
    }
    c->node = ipu_graph_add_node(c->g, op_type, "node", n_in, in, n_out, out);
    assert_true(c->node >= 0);
    c->n_out = n_out;
    for (int i = 0; i < n_out; i++)
        assert_int_equal(ipu_graph_add_output(c->g, out[i]), IPU_OK);
    return c;
}

ipu_node_t *oc_node(op_case_t *c)
{
    return &c->g->nodes[c->node];
}

void oc_input(op_case_t *c, int i, ipu_dtype_t dt, int rank, const int64_t *dims, const void *data)
{
    ipu_node_t *n = oc_node(c);
    ipu_value_t *v = &c->g->values[n->inputs[i]];
    assert_int_equal(ipu_value_set_const(v, dt, rank, dims, data), IPU_OK);
    /* keep the bytes as the run-time feed, but not as a constant */
    v->flags |= IPU_VALUE_INPUT;
    int *na = realloc(c->g->inputs, (size_t)(c->g->n_inputs + 1) * sizeof(int));
    assert_non_null(na);
    c->g->inputs = na;
    c->g->inputs[c->g->n_inputs++] = n->inputs[i];
}

void oc_const(op_case_t *c, int i, ipu_dtype_t dt, int rank, const int64_t *dims, const void *data)
{
    ipu_node_t *n = oc_node(c);
    ipu_value_t *v = &c->g->values[n->inputs[i]];
    assert_int_equal(ipu_value_set_const(v, dt, rank, dims, data), IPU_OK);
    v->flags |= IPU_VALUE_INITIALIZER;
}

void oc_absent(op_case_t *c, int i)
{
    oc_node(c)->inputs[i] = -1;
}

int oc_threads = 1;

ipu_status_t oc_run(op_case_t *c)
{
    ipu_graph_t *g = c->g;
    ipu_node_t *n = oc_node(c);
    /* hide fed inputs' bytes during inference so they are not folded */
    void *feeds[8] = {0};
    for (int i = 0; i < n->n_inputs; i++) {
        ipu_value_t *v = ipu_node_input(g, n, i);
        if (v && (v->flags & IPU_VALUE_INPUT)) {
            feeds[i] = v->data;
            v->data = NULL;
            v->data_kind = IPU_CONST_NONE;
        }
    }
    ipu_status_t st = ipu_graph_toposort(g);
    if (st == IPU_OK)
        st = ipu_graph_bind_ops(g, ipu_op_lookup);
    if (st == IPU_OK)
        st = ipu_graph_infer(g);
    ipu_tensor_t in[8];
    for (int i = 0; i < n->n_inputs; i++) {
        in[i] = ipu_value_tensor(g, n->inputs[i]);
        if (feeds[i])
            in[i].data = feeds[i];
    }
    for (int k = 0; k < n->n_outputs && st == IPU_OK; k++) {
        c->out[k] = ipu_value_tensor(g, n->outputs[k]);
        if (n->folded) { /* copy so that ownership is uniform */
            void *src = c->out[k].data;
            c->out[k].data = NULL;
            st = ipu_tensor_alloc(&c->out[k]);
            if (st == IPU_OK)
                memcpy(c->out[k].data, src, ipu_tensor_nbytes(&c->out[k]));
        } else {
            c->out[k].data = NULL;
            st = ipu_tensor_alloc(&c->out[k]);
        }
    }
    if (st == IPU_OK && !n->folded) {
        ipu_kernel_ctx_t ctx = {.threads = oc_threads};
        if (n->op->scratch && (ctx.scratch_bytes = n->op->scratch(g, n)) > 0)
            ctx.scratch = aligned_alloc(64, (ctx.scratch_bytes + 63) / 64 * 64);
        st = n->op->run(n, in, c->out, &ctx);
        free(ctx.scratch);
    }
    for (int i = 0; i < n->n_inputs; i++)
        if (feeds[i]) {
            ipu_value_t *v = ipu_node_input(g, n, i);
            v->data = feeds[i];
            v->data_kind = IPU_CONST_OWNED;
        }
    return st;
}

const ipu_tensor_t *oc_output(op_case_t *c, int i)
{
    return &c->out[i];
}

void oc_free(op_case_t *c)
{
    if (c == NULL)
        return;
    for (int k = 0; k < c->n_out; k++)
        free(c->out[k].data);
    ipu_graph_free(c->g);
    free(c);
}

void oc_expect_error(op_case_t *c, ipu_status_t st, const char *needle)
{
    assert_int_equal(oc_run(c), st);
    const char *msg = ipu_error_message();
    char want[64];
    snprintf(want, sizeof(want), "node 'node' (%s)", oc_node(c)->op_type);
    if (strstr(msg, want) == NULL || (needle && strstr(msg, needle) == NULL))
        fail_msg("message '%s' lacks '%s' / '%s'", msg, want, needle ? needle : "");
    if (strchr(msg, '\n'))
        fail_msg("message '%s' is more than one line", msg);
    oc_free(c);
}

void assert_allclose_f32(const float *got, const float *want, size_t n, double rtol, double atol)
{
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        if ((isnan(want[i]) && isnan(got[i])) || got[i] == want[i])
            continue;
        if (!(d <= atol + rtol * fabs((double)want[i])))
            fail_msg("element %zu: got %.9g, want %.9g (|diff| %.3g)", i, got[i], want[i], d);
    }
}

void assert_equal_i64(const int64_t *got, const int64_t *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("element %zu: got %lld, want %lld", i, (long long)got[i], (long long)want[i]);
}

void assert_shape(const ipu_tensor_t *t, int rank, const int64_t *dims)
{
    assert_int_equal(t->rank, rank);
    for (int i = 0; i < rank; i++)
        if (t->dims[i] != dims[i])
            fail_msg("dimension %d: got %lld, want %lld", i, (long long)t->dims[i], (long long)dims[i]);
}
