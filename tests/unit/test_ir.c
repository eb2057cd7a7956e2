/* IR and graph passes: toposort, structural errors, folding. */
#include "exec/ops/registry.h"
#include "graph/fold_bn.h"
#include "harness.h"

#include <stdio.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

/* Conv -> BatchNormalization with the graph's value array full when the
 * fold adds its constants (64 values: adding one moves the array): the
 * folded W keeps W's shape, read before the move (the ASan build catches a
 * read after it), and Y = BN(Conv(x)) by hand: x = 1, W = 1 over 2
 * channels, B = 0; BN scale 2, bias 1, mean 0.5, var 3 (eps 1): per output
 * channel (2 - 0.5) / 2 * 2 + 1 = 2.5. */
static void test_fold_bn_moves_values(void **state)
{
    (void)state;
    static const float w[2 * 2] = {1, 1, 1, 1}, scale[2] = {2, 2}, bias[2] = {1, 1},
                       mean[2] = {0.5f, 0.5f}, var[2] = {3, 3};
    ipu_graph_t *g = ipu_graph_new("fold");
    ipu_graph_add_node(g, "Conv", "conv", 2, (const char *[]){"x", "w"}, 1, (const char *[]){"c"});
    ipu_graph_add_node(g, "BatchNormalization", "bn", 5,
                       (const char *[]){"c", "scale", "bias", "mean", "var"}, 1, (const char *[]){"y"});
    const char *pn[4] = {"scale", "bias", "mean", "var"};
    const float *pd[4] = {scale, bias, mean, var};
    assert_int_equal(ipu_value_set_const(&g->values[ipu_graph_find_value(g, "w")], IPU_DTYPE_FLOAT, 4,
                                         (int64_t[]){2, 2, 1, 1}, w),
                     IPU_OK);
    for (int k = 0; k < 4; k++)
        assert_int_equal(ipu_value_set_const(&g->values[ipu_graph_find_value(g, pn[k])], IPU_DTYPE_FLOAT, 1,
                                             (int64_t[]){2}, pd[k]),
                         IPU_OK);
    ipu_node_add_attr_float(&g->nodes[1], "epsilon", 1.0f);
    ipu_graph_add_input(g, "x");
    ipu_graph_add_output(g, "y");
    char name[32];
    for (int i = 0; g->n_values < g->cap_values; i++) { /* unused values up to the capacity */
        snprintf(name, sizeof name, "pad%d", i);
        assert_true(ipu_graph_value(g, name) >= 0);
    }
    assert_int_equal(g->n_values, g->cap_values); /* the next value moves the array */
    int x = ipu_graph_find_value(g, "x");
    ipu_value_set_shape(&g->values[x], IPU_DTYPE_FLOAT, 4, (int64_t[]){1, 2, 1, 1});
    assert_int_equal(ipu_graph_toposort(g), IPU_OK);
    assert_int_equal(ipu_graph_bind_ops(g, ipu_op_lookup), IPU_OK);
    assert_int_equal(ipu_graph_infer(g), IPU_OK);
    int folded = 0;
    assert_int_equal(ipu_graph_fold_bn(g, ipu_op_lookup, &folded), IPU_OK);
    assert_int_equal(folded, 1);
    const ipu_value_t *fw = &g->values[g->nodes[0].inputs[1]];
    assert_string_equal(fw->name, "conv.bn_folded.W");
    assert_int_equal(fw->rank, 4);
    const int64_t want[4] = {2, 2, 1, 1};
    for (int d = 0; d < 4; d++)
        assert_int_equal(fw->dims[d], want[d]);
    /* the folded Conv alone gives BN(Conv(x)): W' = W * 2 / 2, B' = (0 - 0.5) + 1 */
    const float *wd = fw->data, *bd = g->values[g->nodes[0].inputs[2]].data;
    for (int i = 0; i < 4; i++)
        assert_float_equal(wd[i], 1.0f, 1e-6);
    for (int c = 0; c < 2; c++)
        assert_float_equal(2 * wd[2 * c] + bd[c], 2.5f, 1e-6);
    ipu_graph_free(g);
}

static void test_toposort_reorders(void **state)
{
    (void)state;
    ipu_graph_t *g = ipu_graph_new("t");
    /* nodes given out of order: b consumes a's output */
    ipu_graph_add_node(g, "Relu", "b", 1, (const char *[]){"y"}, 1, (const char *[]){"z"});
    ipu_graph_add_node(g, "Relu", "a", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    ipu_graph_add_input(g, "x");
    ipu_graph_add_output(g, "z");
    assert_int_equal(ipu_graph_toposort(g), IPU_OK);
    assert_int_equal(g->order[0], 1);
    assert_int_equal(g->order[1], 0);
    ipu_graph_free(g);
}

static void test_cycle_detected(void **state)
{
    (void)state;
    ipu_graph_t *g = ipu_graph_new("t");
    ipu_graph_add_node(g, "Add", "a", 2, (const char *[]){"x", "z"}, 1, (const char *[]){"y"});
    ipu_graph_add_node(g, "Relu", "b", 1, (const char *[]){"y"}, 1, (const char *[]){"z"});
    ipu_graph_add_input(g, "x");
    ipu_graph_add_output(g, "z");
    assert_int_equal(ipu_graph_toposort(g), IPU_ERR_INVALID_MODEL);
    assert_non_null(strstr(ipu_error_message(), "cycle"));
    ipu_graph_free(g);
}

static void test_dangling_input(void **state)
{
    (void)state;
    ipu_graph_t *g = ipu_graph_new("t");
    ipu_graph_add_node(g, "Add", "a", 2, (const char *[]){"x", "w"}, 1, (const char *[]){"y"});
    ipu_graph_add_input(g, "x");
    ipu_graph_add_output(g, "y");
    assert_int_equal(ipu_graph_toposort(g), IPU_ERR_INVALID_MODEL);
    assert_non_null(strstr(ipu_error_message(), "'w'"));
    assert_non_null(strstr(ipu_error_message(), "dangling"));
    ipu_graph_free(g);
}

static void test_produced_twice(void **state)
{
    (void)state;
    ipu_graph_t *g = ipu_graph_new("t");
    ipu_graph_add_node(g, "Relu", "a", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    ipu_graph_add_node(g, "Relu", "b", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    ipu_graph_add_input(g, "x");
    ipu_graph_add_output(g, "y");
    assert_int_equal(ipu_graph_toposort(g), IPU_ERR_INVALID_MODEL);
    ipu_graph_free(g);
}

static void test_attrs(void **state)
{
    (void)state;
    ipu_graph_t *g = ipu_graph_new("t");
    int k = ipu_graph_add_node(g, "Conv", "", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    ipu_node_t *n = &g->nodes[k];
    assert_string_equal(n->name, "Conv_0");
    ipu_node_add_attr_int(n, "group", 2);
    ipu_node_add_attr_ints(n, "pads", 4, (const int64_t[]){1, 2, 3, 4});
    ipu_node_add_attr_string(n, "auto_pad", "NOTSET");
    assert_int_equal(ipu_attr_int(n, "group", 1), 2);
    assert_int_equal(ipu_attr_int(n, "missing", 7), 7);
    size_t cnt;
    const int64_t *p = ipu_attr_ints(n, "pads", &cnt);
    assert_int_equal(cnt, 4);
    assert_int_equal(p[3], 4);
    assert_string_equal(ipu_attr_string(n, "auto_pad", ""), "NOTSET");
    ipu_graph_free(g);
}

static const ipu_op_t *lookup_none(const char *d, const char *o, int v)
{
    (void)d; (void)o; (void)v;
    return NULL;
}

static void test_unsupported_lists_all(void **state)
{
    (void)state;
    ipu_graph_t *g = ipu_graph_new("t");
    ipu_graph_add_node(g, "NoSuchOp", "first", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    ipu_graph_add_node(g, "AlsoMissing", "second", 1, (const char *[]){"y"}, 1, (const char *[]){"z"});
    ipu_graph_add_input(g, "x");
    ipu_graph_add_output(g, "z");
    assert_int_equal(ipu_graph_bind_ops(g, lookup_none), IPU_ERR_UNSUPPORTED);
    assert_non_null(strstr(ipu_error_message(), "'first' (NoSuchOp-13)"));
    assert_non_null(strstr(ipu_error_message(), "'second' (AlsoMissing-13)"));
    ipu_graph_free(g);
}

/* Context put before the last message, as pipeline/ does with a
 * device's ("rank 2, stage 2: " once, not twice); sizes in messages. */
static void test_error_messages(void **state)
{
    (void)state;
    ipu_error(IPU_ERR_NO_MEMORY, "IPU 0: the stage needs 40.6 MiB");
    ipu_error(IPU_ERR_NO_MEMORY, "rank 2, stage 2: %s", ipu_error_message());
    assert_string_equal(ipu_error_message(), "rank 2, stage 2: IPU 0: the stage needs 40.6 MiB");
    assert_int_equal(ipu_error_prefix(IPU_ERR_IO, "m.onnx"), IPU_ERR_IO);
    assert_string_equal(ipu_error_message(), "m.onnx: rank 2, stage 2: IPU 0: the stage needs 40.6 MiB");
    char b[IPU_BYTES_STR_LEN];
    assert_string_equal(ipu_bytes_str(0, b), "0 B");
    assert_string_equal(ipu_bytes_str(1023, b), "1023 B");
    assert_string_equal(ipu_bytes_str(1024, b), "1.0 KiB");
    assert_string_equal(ipu_bytes_str(1536, b), "1.5 KiB");
    assert_string_equal(ipu_bytes_str(42u << 20, b), "42.0 MiB");
}

/* Values by name (graph/names.c): 20000 values added one by one (the
 * array and the index grow and move many times), by nodes and directly,
 * each found at its index afterwards; names that differ only at the end,
 * prefixes and absent names are not confused; adding a name again returns
 * its value without adding one. */
static void test_value_index(void **state)
{
    (void)state;
    enum { N = 20000 };
    ipu_graph_t *g = ipu_graph_new("names");
    char a[32], b[32];
    for (int i = 0; i < N; i += 2) {
        snprintf(a, sizeof a, "t%d", i);
        snprintf(b, sizeof b, "t%d", i + 1);
        assert_true(ipu_graph_add_node(g, "Relu", NULL, 1, (const char *[]){a}, 1, (const char *[]){b}) >= 0);
    }
    assert_int_equal(g->n_values, N);
    for (int i = 0; i < N; i++) {
        snprintf(a, sizeof a, "t%d", i);
        assert_int_equal(ipu_graph_find_value(g, a), i);
        assert_string_equal(g->values[i].name, a);
        assert_int_equal(ipu_graph_value(g, a), i);
    }
    assert_int_equal(g->n_values, N);
    assert_int_equal(ipu_graph_find_value(g, "t"), -1);
    assert_int_equal(ipu_graph_find_value(g, "t20000"), -1);
    assert_int_equal(ipu_graph_find_value(g, ""), -1);
    assert_int_equal(ipu_graph_value(g, "t20000"), N);
    assert_int_equal(ipu_graph_find_value(g, "t20000"), N);
    assert_int_equal(g->nodes[N / 2 - 1].inputs[0], N - 2);
    assert_int_equal(g->nodes[N / 2 - 1].outputs[0], N - 1);
    ipu_graph_free(g);
    g = ipu_graph_new("empty");
    assert_int_equal(ipu_graph_find_value(g, "x"), -1);
    ipu_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_toposort_reorders), cmocka_unit_test(test_cycle_detected),
        cmocka_unit_test(test_dangling_input),    cmocka_unit_test(test_produced_twice),
        cmocka_unit_test(test_attrs),             cmocka_unit_test(test_unsupported_lists_all),
        cmocka_unit_test(test_error_messages),    cmocka_unit_test(test_fold_bn_moves_values),
        cmocka_unit_test(test_value_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
