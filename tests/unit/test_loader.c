/* ONNX loader, TensorProto and .npy I/O. The models and the expected bytes
 * are written at test time by make_loader_models.py (onnx.helper + numpy, the
 * independent reference) into a temporary folder; files this test writes are
 * checked back by the same script (--verify). */
#include "common/npy.h"
#include "graph/load.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

static char dir[256];
static const char *python;
static char script[1024];

static const char *path_of(const char *rel)
{
    static char buf[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, rel);
    return buf[k];
}

static int setup(void **state)
{
    (void)state;
    python = getenv("PYTHON_REF") ? getenv("PYTHON_REF") : "/usr/bin/python3";
    const char *src = getenv("top_srcdir") ? getenv("top_srcdir") : ".";
    snprintf(script, sizeof(script), "%s/tests/unit/make_loader_models.py", src);
    snprintf(dir, sizeof(dir), "%s/ipu_loader_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(dir) == NULL)
        return -1;
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "'%s' '%s' '%s'", python, script, dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "failed: %s\n", cmd);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Bytes of expect/NAME.bin (numpy's tobytes()). */
static void *expected(const char *name, size_t *len)
{
    char rel[256];
    snprintf(rel, sizeof(rel), "expect/%s.bin", name);
    FILE *f = fopen(path_of(rel), "rb");
    assert_non_null(f);
    static unsigned char buf[1 << 16];
    *len = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    return buf;
}

static void assert_bytes(const void *got, const char *name, size_t nbytes)
{
    size_t len;
    const void *want = expected(name, &len);
    if (len != nbytes)
        fail_msg("%s: %zu bytes, numpy has %zu", name, nbytes, len);
    if (len && memcmp(got, want, len) != 0)
        fail_msg("%s: bytes differ from numpy's", name);
}

static void assert_msg_has(const char *what)
{
    if (strstr(ipu_error_message(), what) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", ipu_error_message(), what);
}

static ipu_graph_t *load_ok(const char *rel)
{
    ipu_graph_t *g = NULL;
    ipu_status_t st = ipu_model_load(path_of(rel), &g);
    if (st != IPU_OK)
        fail_msg("%s: %s", rel, ipu_error_message());
    assert_non_null(g);
    return g;
}

static const ipu_value_t *value(const ipu_graph_t *g, const char *name)
{
    int idx = ipu_graph_find_value(g, name);
    if (idx < 0)
        fail_msg("no value '%s'", name);
    return &g->values[idx];
}

/* --- attributes, names, domains, opsets, symbolic dims ------------------- */

static void test_attributes(void **state)
{
    (void)state;
    ipu_graph_t *g = load_ok("attrs.onnx");
    assert_string_equal(g->name, "attrs_graph");
    assert_string_equal(g->dir, dir);
    assert_int_equal(g->opset, 13);
    assert_int_equal(g->n_nodes, 2);
    assert_non_null(g->order);

    const ipu_node_t *n = &g->nodes[0];
    assert_string_equal(n->name, "all_attrs");
    assert_string_equal(n->op_type, "AllAttrs");
    assert_string_equal(n->domain, "com.test");
    assert_int_equal(n->opset, 2);
    assert_int_equal(n->n_attrs, 10);

    assert_true(ipu_attr_float(n, "f", 0) == 1.5f);
    assert_int_equal(ipu_attr_int(n, "i", 0), -7);
    assert_string_equal(ipu_attr_string(n, "s", ""), "hello");
    assert_int_equal(ipu_attr_find(n, "s")->s_len, 5);

    size_t cnt;
    const float *fl = ipu_attr_floats(n, "floats", &cnt);
    assert_int_equal(cnt, 2);
    assert_true(fl[0] == 0.5f && fl[1] == -2.25f);
    const int64_t *in = ipu_attr_ints(n, "ints", &cnt);
    assert_int_equal(cnt, 3);
    assert_true(in[0] == 1 && in[1] == -2 && in[2] == 3);

    const ipu_attr_t *a = ipu_attr_find(n, "strings");
    assert_int_equal(a->type, IPU_ATTR_STRINGS);
    assert_int_equal(a->n, 3);
    assert_string_equal(a->strings[0], "ab");
    assert_string_equal(a->strings[1], "");
    assert_string_equal(a->strings[2], "cde");

    a = ipu_attr_find(n, "t");
    assert_int_equal(a->type, IPU_ATTR_TENSOR);
    assert_int_equal(a->tensors[0].dtype, IPU_DTYPE_INT64);
    assert_int_equal(a->tensors[0].rank, 2);
    assert_true(a->tensors[0].dims[0] == 2 && a->tensors[0].dims[1] == 2);
    const int64_t *tv = a->tensors[0].data;
    assert_true(tv[0] == 1 && tv[1] == 2 && tv[2] == 3 && tv[3] == -4);

    a = ipu_attr_find(n, "tensors");
    assert_int_equal(a->type, IPU_ATTR_TENSORS);
    assert_int_equal(a->n, 2);
    assert_int_equal(a->tensors[0].dtype, IPU_DTYPE_FLOAT);
    assert_int_equal(a->tensors[0].dims[0], 2);
    assert_true(((float *)a->tensors[0].data)[0] == 1.0f && ((float *)a->tensors[0].data)[1] == 2.5f);
    assert_int_equal(a->tensors[1].dtype, IPU_DTYPE_INT32);
    assert_int_equal(((int32_t *)a->tensors[1].data)[0], 7);

    assert_int_equal(ipu_attr_find(n, "g")->type, IPU_ATTR_GRAPH);
    a = ipu_attr_find(n, "graphs");
    assert_int_equal(a->type, IPU_ATTR_GRAPHS);
    assert_int_equal(a->n, 2);

    /* unnamed node: the IR's default name; default domain */
    n = &g->nodes[1];
    assert_string_equal(n->name, "Relu_1");
    assert_string_equal(n->domain, "");
    assert_int_equal(n->opset, 13);

    /* symbolic and unknown dims */
    assert_int_equal(g->n_inputs, 1);
    const ipu_value_t *x = &g->values[g->inputs[0]];
    assert_string_equal(x->name, "x");
    assert_true(x->flags & IPU_VALUE_INPUT);
    assert_int_equal(x->dtype, IPU_DTYPE_FLOAT);
    assert_int_equal(x->rank, 3);
    assert_true(x->dims[0] == -1 && x->dims[1] == 3 && x->dims[2] == -1);
    assert_string_equal(x->dim_param[0], "batch");
    assert_null(x->dim_param[1]);
    assert_null(x->dim_param[2]);
    assert_int_equal(g->n_outputs, 1);
    const ipu_value_t *y = &g->values[g->outputs[0]];
    assert_true(y->rank == 3 && y->dims[0] == -1 && y->dims[2] == 5);
    assert_string_equal(y->dim_param[0], "batch");
    ipu_graph_free(g);
}

/* --- initializers: every dtype, raw and typed fields ---------------------- */

static void test_initializers(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        ipu_dtype_t dt;
        int rank;
        int64_t dims[2];
    } cases[] = {
        {"f32_raw", IPU_DTYPE_FLOAT, 2, {2, 3}},    {"f32_typed", IPU_DTYPE_FLOAT, 2, {2, 3}},
        {"f64_typed", IPU_DTYPE_DOUBLE, 1, {3}},    {"i64_raw", IPU_DTYPE_INT64, 2, {2, 2}},
        {"i64_typed", IPU_DTYPE_INT64, 1, {3}},     {"i32_typed", IPU_DTYPE_INT32, 1, {3}},
        {"i16_typed", IPU_DTYPE_INT16, 1, {2}},     {"u16_typed", IPU_DTYPE_UINT16, 1, {2}},
        {"i8_typed", IPU_DTYPE_INT8, 1, {4}},       {"u8_typed", IPU_DTYPE_UINT8, 2, {2, 2}},
        {"bool_typed", IPU_DTYPE_BOOL, 1, {3}},     {"u32_typed", IPU_DTYPE_UINT32, 1, {2}},
        {"u64_typed", IPU_DTYPE_UINT64, 1, {2}},    {"f16_typed", IPU_DTYPE_FLOAT16, 1, {4}},
        {"f16_raw", IPU_DTYPE_FLOAT16, 2, {1, 2}},  {"bf16_typed", IPU_DTYPE_BFLOAT16, 1, {3}},
        {"scalar", IPU_DTYPE_FLOAT, 0, {0}},        {"empty", IPU_DTYPE_FLOAT, 2, {0, 3}},
    };
    ipu_graph_t *g = load_ok("inits.onnx");
    assert_int_equal(g->opset, 17);
    /* f32_raw is also listed as a graph input (IR 3): an input with a
     * default, a constant until fed */
    assert_int_equal(g->n_inputs, 1);
    assert_string_equal(g->values[g->inputs[0]].name, "x");
    assert_int_equal(g->n_defaults, 1);
    assert_string_equal(g->values[g->defaults[0]].name, "f32_raw");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const ipu_value_t *v = value(g, cases[i].name);
        ipu_tensor_t t = ipu_value_tensor(g, (int)(v - g->values));
        assert_true(v->flags & IPU_VALUE_INITIALIZER);
        assert_false(v->flags & IPU_VALUE_INPUT);
        assert_int_equal(v->data_kind, IPU_CONST_OWNED);
        assert_non_null(v->data);
        if (v->dtype != cases[i].dt || !ipu_shape_equal(v->rank, v->dims, cases[i].rank, cases[i].dims))
            fail_msg("%s: got %s rank %d", cases[i].name, ipu_dtype_name(v->dtype), v->rank);
        assert_bytes(v->data, cases[i].name, ipu_tensor_nbytes(&t));
    }
    /* fed: an input of the initializer's dtype and shape, no constant */
    assert_int_equal(ipu_graph_feed_default(g, 0), IPU_OK);
    const ipu_value_t *f = &g->values[g->defaults[0]];
    assert_int_equal(g->n_inputs, 2);
    assert_int_equal(g->inputs[1], g->defaults[0]);
    assert_true((f->flags & IPU_VALUE_INPUT) && !(f->flags & IPU_VALUE_INITIALIZER));
    assert_null(f->data);
    assert_int_equal(f->data_kind, IPU_CONST_NONE);
    assert_true(f->dtype == IPU_DTYPE_FLOAT && f->rank == 2 && f->dims[0] == 2 && f->dims[1] == 3);
    ipu_graph_free(g);
}

/* --- external data -------------------------------------------------------- */

static void test_external_data(void **state)
{
    (void)state;
    static const struct { const char *name; int kind; } cases[] = {
        {"w1", IPU_CONST_MAPPED},  /* offset 0 */
        {"w2", IPU_CONST_MAPPED},  /* int8 at 80 */
        {"w3", IPU_CONST_OWNED},   /* float at 83: misaligned, copied */
        {"w4", IPU_CONST_MAPPED},  /* double at 4112: not page-aligned */
        {"w5", IPU_CONST_MAPPED},  /* sub/more.bin */
    };
    ipu_graph_t *g = load_ok("ext.onnx");
    assert_int_equal(g->n_maps, 4);
    for (size_t i = 0; i < 5; i++) {
        const ipu_value_t *v = value(g, cases[i].name);
        ipu_tensor_t t = ipu_value_tensor(g, (int)(v - g->values));
        assert_int_equal(v->data_kind, cases[i].kind);
        assert_true((uintptr_t)v->data % ipu_dtype_size(v->dtype) == 0);
        assert_bytes(v->data, cases[i].name, ipu_tensor_nbytes(&t));
    }
    assert_int_equal(value(g, "w4")->dtype, IPU_DTYPE_DOUBLE);
    assert_int_equal(value(g, "w5")->dims[1], 3);
    ipu_graph_free(g);
}

/* --- bad models ----------------------------------------------------------- */

static void test_bad_models(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        ipu_status_t st;
        const char *words[3];
    } cases[] = {
        {"errors/nothere.onnx", IPU_ERR_IO, {"No such file"}},
        {"errors/garbage.onnx", IPU_ERR_INVALID_MODEL, {"not an ONNX model"}},
        {"errors/random.onnx", IPU_ERR_INVALID_MODEL, {"not an ONNX model"}},
        {"errors/truncated.onnx", IPU_ERR_INVALID_MODEL, {"truncated"}},
        {"errors/empty.onnx", IPU_ERR_INVALID_MODEL, {"empty"}},
        {"errors/nograph.onnx", IPU_ERR_INVALID_MODEL, {"no graph"}},
        {"errors/opset5.onnx", IPU_ERR_UNSUPPORTED, {"opset 5 ", "7 to 17"}},
        {"errors/opset99.onnx", IPU_ERR_UNSUPPORTED, {"opset 99 ", "7 to 17"}},
        {"errors/noopset.onnx", IPU_ERR_INVALID_MODEL, {"no opset_import"}},
        {"errors/missing_init.onnx", IPU_ERR_INVALID_MODEL,
         {"'conv1.weight'", "'conv1' (Conv)", "missing initializer"}},
        {"errors/dangling.onnx", IPU_ERR_INVALID_MODEL, {"'hiden_state'", "'add0'", "dangling"}},
        {"errors/cycle.onnx", IPU_ERR_INVALID_MODEL, {"cycle", "'loop_"}},
        {"errors/raw_size.onnx", IPU_ERR_INVALID_MODEL, {"'w_raw'", "20 bytes of raw_data", "24"}},
        {"errors/typed_count.onnx", IPU_ERR_INVALID_MODEL, {"'w_typed'", "3 values in float_data"}},
        {"errors/string_init.onnx", IPU_ERR_UNSUPPORTED, {"'w_str'", "string"}},
        {"errors/ext_dotdot.onnx", IPU_ERR_INVALID_MODEL, {"'w'", "../outside.bin", "outside the model folder"}},
        {"errors/ext_abs.onnx", IPU_ERR_INVALID_MODEL, {"'w'", "absolute", "outside the model folder"}},
        {"errors/ext_symlink.onnx", IPU_ERR_INVALID_MODEL, {"'w'", "link.bin", "outside the model folder"}},
        {"errors/ext_short.onnx", IPU_ERR_INVALID_MODEL, {"'w'", "short.bin", "shorter than declared"}},
        {"errors/ext_offset.onnx", IPU_ERR_INVALID_MODEL, {"'w'", "full.bin", "shorter than declared"}},
        {"errors/ext_length.onnx", IPU_ERR_INVALID_MODEL, {"'w'", "length 40", "80 bytes"}},
        {"errors/ext_missing.onnx", IPU_ERR_IO, {"'w'", "nothere.bin", "No such file"}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ipu_graph_t *g = NULL;
        const char *p = path_of(cases[i].file);
        ipu_status_t st = ipu_model_load(p, &g);
        if (st != cases[i].st)
            fail_msg("%s: status %d (%s), want %d", cases[i].file, st, ipu_error_message(), cases[i].st);
        assert_null(g);
        assert_msg_has(p); /* names the file */
        assert_null(strchr(ipu_error_message(), '\n')); /* one line */
        for (int k = 0; k < 3 && cases[i].words[k]; k++)
            assert_msg_has(cases[i].words[k]);
    }
}

/* --- never crash: truncations and bit flips ------------------------------- */

static void fuzz_one(const char *src_rel, int flips)
{
    FILE *f = fopen(path_of(src_rel), "rb");
    assert_non_null(f);
    static unsigned char orig[1 << 16], buf[1 << 16];
    size_t len = fread(orig, 1, sizeof(orig), f);
    fclose(f);
    assert_true(len > 0 && len < sizeof(orig));
    const char *fz = path_of("fuzz.onnx");
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    int loaded = 0;
    for (size_t it = 0; it < len + (size_t)flips; it++) {
        size_t n = len;
        memcpy(buf, orig, len);
        if (it < len) {
            n = it; /* every strict prefix */
        } else {
            int nb = 1 + (int)(rng % 3);
            for (int b = 0; b < nb; b++) {
                rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                size_t bit = (size_t)(rng >> 33) % (len * 8);
                buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
            }
        }
        f = fopen(fz, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(buf, 1, n, f), n);
        fclose(f);
        ipu_graph_t *g = NULL;
        ipu_status_t st = ipu_model_load(fz, &g);
        if (st == IPU_OK) {
            assert_non_null(g);
            loaded++;
            ipu_graph_free(g);
        } else {
            assert_null(g);
            if (strstr(ipu_error_message(), fz) == NULL)
                fail_msg("%s mutation %zu: message without the file: %s", src_rel, it,
                         ipu_error_message());
        }
    }
    assert_true(loaded > 0); /* bit flips in float data still load */
    if (getenv("IPU_TEST_VERBOSE"))
        printf("%s: %d of %zu mutations loaded\n", src_rel, loaded, len + (size_t)flips);
}

static void test_fuzz(void **state)
{
    (void)state;
    fuzz_one("attrs.onnx", 1500);
    fuzz_one("inits.onnx", 1500);
    fuzz_one("ext.onnx", 800);
}

/* --- TensorProto files ---------------------------------------------------- */

static void test_tensorproto_read(void **state)
{
    (void)state;
    ipu_tensor_t t;
    char *name = NULL;
    assert_int_equal(ipu_tensorproto_read(path_of("tensors/input_0.pb"), &t, &name), IPU_OK);
    assert_string_equal(name, "pixels");
    assert_int_equal(t.dtype, IPU_DTYPE_FLOAT);
    assert_true(ipu_shape_equal(t.rank, t.dims, 4, (int64_t[]){1, 3, 2, 2}));
    assert_bytes(t.data, "tp_f32", ipu_tensor_nbytes(&t));
    free(t.data);
    free(name);

    assert_int_equal(ipu_tensorproto_read(path_of("tensors/input_1.pb"), &t, NULL), IPU_OK);
    assert_int_equal(t.dtype, IPU_DTYPE_INT64);
    assert_true(ipu_shape_equal(t.rank, t.dims, 2, (int64_t[]){1, 3}));
    assert_bytes(t.data, "tp_i64", ipu_tensor_nbytes(&t));
    free(t.data);

    assert_int_equal(ipu_tensorproto_read(path_of("tensors/scalar.pb"), &t, NULL), IPU_OK);
    assert_int_equal(t.dtype, IPU_DTYPE_DOUBLE);
    assert_int_equal(t.rank, 0);
    assert_bytes(t.data, "tp_scalar", 8);
    free(t.data);

    assert_int_equal(ipu_tensorproto_read(path_of("tensors/garbage.pb"), &t, NULL), IPU_ERR_INPUT);
    assert_msg_has("garbage.pb");
    assert_int_equal(ipu_tensorproto_read(path_of("tensors/short.pb"), &t, NULL), IPU_ERR_INPUT);
    assert_msg_has("'short'");
    assert_msg_has("8 bytes of raw_data");
    assert_int_equal(ipu_tensorproto_read(path_of("tensors/none.pb"), &t, NULL), IPU_ERR_IO);
    assert_msg_has("none.pb");
}

/* --- .npy files ----------------------------------------------------------- */

static const struct {
    const char *name;
    ipu_dtype_t dt;
    int rank;
    int64_t dims[3];
} npy_cases[] = {
    {"f4", IPU_DTYPE_FLOAT, 3, {2, 3, 4}}, {"f8", IPU_DTYPE_DOUBLE, 1, {5}},
    {"i8", IPU_DTYPE_INT64, 2, {2, 2}},    {"i4", IPU_DTYPE_INT32, 1, {3}},
    {"b1", IPU_DTYPE_BOOL, 2, {1, 3}},     {"u1", IPU_DTYPE_UINT8, 1, {3}},
    {"i1", IPU_DTYPE_INT8, 1, {2}},        {"f2", IPU_DTYPE_FLOAT16, 1, {3}},
    {"scalar", IPU_DTYPE_FLOAT, 0, {0}},   {"empty", IPU_DTYPE_FLOAT, 2, {0, 2}},
};
#define N_NPY (sizeof(npy_cases) / sizeof(npy_cases[0]))

static void read_npy_case(size_t i, const char *rel, ipu_tensor_t *t)
{
    if (ipu_npy_read(path_of(rel), t) != IPU_OK)
        fail_msg("%s: %s", rel, ipu_error_message());
    if (t->dtype != npy_cases[i].dt || !ipu_shape_equal(t->rank, t->dims, npy_cases[i].rank, npy_cases[i].dims))
        fail_msg("%s: got %s rank %d", rel, ipu_dtype_name(t->dtype), t->rank);
    char exp[64];
    snprintf(exp, sizeof(exp), "npy_%s", npy_cases[i].name);
    assert_bytes(t->data, exp, ipu_tensor_nbytes(t));
}

static void test_npy_read(void **state)
{
    (void)state;
    char rel[128];
    ipu_tensor_t t;
    for (size_t i = 0; i < N_NPY; i++) {
        snprintf(rel, sizeof(rel), "npy/%s.npy", npy_cases[i].name);
        read_npy_case(i, rel, &t);
        free(t.data);
    }
    read_npy_case(0, "npy/v2.npy", &t); /* format 2.0 header */
    free(t.data);
    assert_int_equal(ipu_npy_read(path_of("npy/fortran.npy"), &t), IPU_ERR_INPUT);
    assert_msg_has("Fortran");
    assert_int_equal(ipu_npy_read(path_of("npy/bigendian.npy"), &t), IPU_ERR_INPUT);
    assert_msg_has("big-endian");
    assert_int_equal(ipu_npy_read(path_of("npy/complex.npy"), &t), IPU_ERR_INPUT);
    assert_msg_has("<c8");
    assert_int_equal(ipu_npy_read(path_of("npy/truncated.npy"), &t), IPU_ERR_INPUT);
    assert_msg_has("truncated");
    assert_int_equal(ipu_npy_read(path_of("tensors/input_0.pb"), &t), IPU_ERR_INPUT);
    assert_int_equal(ipu_npy_read(path_of("npy/none.npy"), &t), IPU_ERR_IO);
}

/* --- writing: numpy / onnx read back what we wrote ------------------------ */

static void test_write_roundtrip(void **state)
{
    (void)state;
    assert_int_equal(mkdir(path_of("out"), 0755), 0);
    char rel[128], nm[64];
    for (size_t i = 0; i < N_NPY; i++) {
        ipu_tensor_t t, back;
        snprintf(rel, sizeof(rel), "npy/%s.npy", npy_cases[i].name);
        read_npy_case(i, rel, &t);
        snprintf(rel, sizeof(rel), "out/%s.npy", npy_cases[i].name);
        assert_int_equal(ipu_npy_write(path_of(rel), &t), IPU_OK);
        read_npy_case(i, rel, &back);
        free(back.data);
        snprintf(rel, sizeof(rel), "out/%s.pb", npy_cases[i].name);
        snprintf(nm, sizeof(nm), "t_%s", npy_cases[i].name);
        assert_int_equal(ipu_tensorproto_write(path_of(rel), &t, nm), IPU_OK);
        char *name = NULL;
        assert_int_equal(ipu_tensorproto_read(path_of(rel), &back, &name), IPU_OK);
        assert_string_equal(name, nm);
        assert_true(ipu_shape_equal(back.rank, back.dims, t.rank, t.dims));
        assert_memory_equal(back.data, t.data, ipu_tensor_nbytes(&t));
        free(name);
        free(back.data);
        free(t.data);
    }
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "'%s' '%s' --verify '%s'", python, script, dir);
    assert_int_equal(system(cmd), 0);

    ipu_tensor_t bf = {.dtype = IPU_DTYPE_BFLOAT16, .rank = 1, .dims = {1}, .data = (uint16_t[]){0}};
    assert_int_equal(ipu_npy_write(path_of("out/bf.npy"), &bf), IPU_ERR_UNSUPPORTED);
    ipu_tensor_t s = {.dtype = IPU_DTYPE_STRING, .rank = 0, .data = NULL};
    assert_int_equal(ipu_tensorproto_write(path_of("out/s.pb"), &s, NULL), IPU_ERR_UNSUPPORTED);
    assert_int_equal(ipu_npy_write(path_of("nodir/x.npy"), &bf), IPU_ERR_UNSUPPORTED);
    ipu_tensor_t f = {.dtype = IPU_DTYPE_FLOAT, .rank = 1, .dims = {1}, .data = (float[]){1}};
    assert_int_equal(ipu_npy_write(path_of("nodir/x.npy"), &f), IPU_ERR_IO);
    assert_int_equal(ipu_tensorproto_write(path_of("nodir/x.pb"), &f, NULL), IPU_ERR_IO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attributes),
        cmocka_unit_test(test_initializers),
        cmocka_unit_test(test_external_data),
        cmocka_unit_test(test_bad_models),
        cmocka_unit_test(test_fuzz),
        cmocka_unit_test(test_tensorproto_read),
        cmocka_unit_test(test_npy_read),
        cmocka_unit_test(test_write_roundtrip),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
