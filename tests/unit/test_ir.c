/* IR and graph passes: toposort, structural errors, folding. */
#include "harness.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_toposort_reorders), cmocka_unit_test(test_cycle_detected),
        cmocka_unit_test(test_dangling_input),    cmocka_unit_test(test_produced_twice),
        cmocka_unit_test(test_attrs),             cmocka_unit_test(test_unsupported_lists_all),
        cmocka_unit_test(test_error_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
