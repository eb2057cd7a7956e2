/* Shape and data-movement ops (shape.c, transpose.c, concat_split.c,
 * slice.c, gather.c, expand.c, constant.c, pad.c) and the folding of a
 * PyTorch-style shape chain.
 *
 * Expected values come from numpy: expect() writes the inputs as .npy files,
 * evaluates the given numpy expression with $PYTHON_REF (make check exports
 * it; /usr/bin/python3 otherwise) on them (a[i] is input slot i) and compares
 * the op's output bytes exactly (these ops move data; nothing is computed).
 * Each case runs twice: with the non-constant inputs fed at run time (the
 * kernel path) and with every input constant (the folding path). */
#include "harness.h"

#include "exec/ops/registry.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#define D(...) ((const int64_t[]){__VA_ARGS__})
#define I64 IPU_DTYPE_INT64
#define F32 IPU_DTYPE_FLOAT

/* --- inputs and the numpy reference -------------------------------------------- */

/* A tensor of dtype dt and shape dims filled with distinct values. */
static ipu_tensor_t mk(ipu_dtype_t dt, int rank, const int64_t *dims)
{
    ipu_tensor_t t = {.dtype = dt, .rank = rank};
    memcpy(t.dims, dims, (size_t)rank * sizeof(int64_t));
    assert_int_equal(ipu_tensor_alloc(&t), IPU_OK);
    for (int64_t i = 0; i < ipu_tensor_numel(&t); i++) {
        if (dt == F32)
            ((float *)t.data)[i] = (float)i * 0.5f - 3.0f;
        else
            ipu_dtype_set_i64(dt, t.data, (size_t)i, i * 3 - 5);
    }
    return t;
}

/* A tensor holding the given values (copied). */
static ipu_tensor_t vals(ipu_dtype_t dt, int rank, const int64_t *dims, const void *v)
{
    ipu_tensor_t t = mk(dt, rank, dims);
    memcpy(t.data, v, ipu_tensor_nbytes(&t));
    return t;
}

static const ipu_tensor_t ABSENT = {0};

static const char *python(void)
{
    const char *p = getenv("PYTHON_REF");
    if (p && p[0])
        return p;
    return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : NULL;
}

/* Raw exchange with Python: a<i>.bin holds input i's bytes (its dtype and
 * shape go into the script); the script writes r<k>.bin and r<k>.txt
 * ("<numpy dtype str> rank dims..."). */
static void read_result(const char *dir, int k, ipu_tensor_t *t)
{
    char path[512], descr[16];
    snprintf(path, sizeof(path), "%s/r%d.txt", dir, k);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    memset(t, 0, sizeof(*t));
    assert_int_equal(fscanf(f, "%15s %d", descr, &t->rank), 2);
    assert_true(t->rank >= 0 && t->rank <= IPU_MAX_RANK);
    for (int d = 0; d < t->rank; d++)
        assert_int_equal(fscanf(f, "%" SCNd64, &t->dims[d]), 1);
    fclose(f);
    unlink(path);
    t->dtype = ipu_dtype_from_npy_descr(descr);
    assert_int_not_equal(t->dtype, IPU_DTYPE_UNDEFINED);
    assert_int_equal(ipu_tensor_alloc(t), IPU_OK);
    snprintf(path, sizeof(path), "%s/r%d.bin", dir, k);
    f = fopen(path, "rb");
    assert_non_null(f);
    size_t nb = ipu_tensor_nbytes(t);
    assert_int_equal(fread(t->data, 1, nb, f), nb);
    fclose(f);
    unlink(path);
}

/* Evaluate expr (a numpy expression of a[0..nin-1]; a list or tuple for
 * several outputs) into want[0..nout-1]. Skips the test without Python. */
static void ref(const char *expr, int nin, const ipu_tensor_t *in, int nout, ipu_tensor_t *want)
{
    const char *py = python();
    if (py == NULL)
        skip();
    char dir[] = "/tmp/ipu_test_shape_XXXXXX", path[512], cmd[1024];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/ref.py", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "import numpy as np\nD = '%s'\na = [None] * %d\n", dir, nin);
    for (int i = 0; i < nin; i++) {
        if (in[i].data == NULL)
            continue;
        char bin[512];
        snprintf(bin, sizeof(bin), "%s/a%d.bin", dir, i);
        FILE *b = fopen(bin, "wb");
        assert_non_null(b);
        assert_int_equal(fwrite(in[i].data, 1, ipu_tensor_nbytes(&in[i]), b), ipu_tensor_nbytes(&in[i]));
        fclose(b);
        fprintf(f, "a[%d] = np.fromfile('%s', '%s').reshape((", i, bin,
                ipu_dtype_npy_descr(in[i].dtype));
        for (int d = 0; d < in[i].rank; d++)
            fprintf(f, "%lld,", (long long)in[i].dims[d]);
        fprintf(f, "))\n");
    }
    fprintf(f, "r = %s\n"
               "r = list(r) if isinstance(r, (list, tuple)) else [r]\n"
               "for k, x in enumerate(r):\n"
               "    x = np.array(x, order='C')\n"
               "    x.tofile('%%s/r%%d.bin' %% (D, k))\n"
               "    open('%%s/r%%d.txt' %% (D, k), 'w').write(' '.join([x.dtype.str, str(x.ndim)]"
               " + [str(d) for d in x.shape]))\n", expr);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "'%s' '%s'", py, path);
    int rc = system(cmd);
    if (rc != 0)
        fail_msg("numpy reference failed (%d) for: %s", rc, expr);
    for (int k = 0; k < nout; k++)
        read_result(dir, k, &want[k]);
    for (int i = 0; i < nin; i++) {
        snprintf(path, sizeof(path), "%s/a%d.bin", dir, i);
        unlink(path);
    }
    snprintf(path, sizeof(path), "%s/ref.py", dir);
    unlink(path);
    rmdir(dir);
}

/* Exact equality of dtype, shape and bytes. */
static void assert_same(const ipu_tensor_t *got, const ipu_tensor_t *want, const char *what)
{
    char g[96], w[96];
    if (got->dtype != want->dtype || !ipu_shape_equal(got->rank, got->dims, want->rank, want->dims))
        fail_msg("%s: got %s, want %s", what, ipu_tensor_describe(got, g, sizeof(g)),
                 ipu_tensor_describe(want, w, sizeof(w)));
    size_t es = ipu_dtype_size(got->dtype);
    for (int64_t i = 0; i < ipu_tensor_numel(got); i++)
        if (memcmp((const char *)got->data + i * es, (const char *)want->data + i * es, es) != 0)
            fail_msg("%s: element %lld differs (got %g, want %g)", what, (long long)i,
                     ipu_dtype_get_f64(got->dtype, got->data, (size_t)i),
                     ipu_dtype_get_f64(want->dtype, want->data, (size_t)i));
}

typedef void (*attrs_fn)(ipu_node_t *n);

/* Run op (opset) on in[] (data NULL: absent; bit i of const_mask: slot i is a
 * constant, else fed at run time), then again with every input constant, and
 * compare the nout outputs with the numpy expression. Frees in[]. */
static void expect(const char *op, int opset, int nin, ipu_tensor_t *in, unsigned const_mask,
                   attrs_fn attrs, int nout, const char *expr)
{
    ipu_tensor_t want[8];
    ref(expr, nin, in, nout, want);
    for (int pass = 0; pass < 2; pass++) {
        unsigned mask = pass == 0 ? const_mask : ~0u;
        op_case_t *c = oc_new(op, opset, nin, nout);
        for (int i = 0; i < nin; i++) {
            if (in[i].data == NULL)
                oc_absent(c, i);
            else if (mask & (1u << i))
                oc_const(c, i, in[i].dtype, in[i].rank, in[i].dims, in[i].data);
            else
                oc_input(c, i, in[i].dtype, in[i].rank, in[i].dims, in[i].data);
        }
        if (attrs)
            attrs(oc_node(c));
        ipu_status_t st = oc_run(c);
        if (st != IPU_OK)
            fail_msg("%s-%d: %s (%s)", op, opset, ipu_status_string(st), ipu_error_message());
        if (pass == 1)
            assert_true(oc_node(c)->folded);
        for (int k = 0; k < nout; k++)
            assert_same(oc_output(c, k), &want[k], pass ? "folded" : "run");
        oc_free(c);
    }
    for (int k = 0; k < nout; k++)
        free(want[k].data);
    for (int i = 0; i < nin; i++)
        free(in[i].data);
}

/* Run a case expected to fail with st and a message naming the node. */
static void expect_error(op_case_t *c, ipu_status_t st, const char *needle)
{
    assert_int_equal(oc_run(c), st);
    const char *msg = ipu_error_message();
    if (strstr(msg, "node 'node'") == NULL || (needle && strstr(msg, needle) == NULL))
        fail_msg("unexpected message: %s", msg);
    oc_free(c);
}

/* --- Transpose ----------------------------------------------------------------------- */

static void perm_0213(ipu_node_t *n) { ipu_node_add_attr_ints(n, "perm", 4, D(0, 2, 1, 3)); }
static void perm_0132(ipu_node_t *n) { ipu_node_add_attr_ints(n, "perm", 4, D(0, 1, 3, 2)); }
static void perm_rank6(ipu_node_t *n) { ipu_node_add_attr_ints(n, "perm", 6, D(5, 2, 0, 4, 1, 3)); }

static void test_transpose(void **state)
{
    (void)state;
    /* attention [B,T,H,D] -> [B,H,T,D]: rows of D copied whole */
    ipu_tensor_t a[] = {mk(F32, 4, D(2, 5, 3, 4))};
    expect("Transpose", 13, 1, a, 0, perm_0213, 1, "a[0].transpose(0, 2, 1, 3)");
    /* [B,H,T,D] -> [B,H,D,T]: blocked, with partial blocks (37, 40 > 32) */
    ipu_tensor_t b[] = {mk(F32, 4, D(2, 3, 37, 40))};
    expect("Transpose", 13, 1, b, 0, perm_0132, 1, "a[0].transpose(0, 1, 3, 2)");
    /* default perm reverses; int64 */
    ipu_tensor_t c[] = {mk(I64, 3, D(3, 4, 5))};
    expect("Transpose", 1, 1, c, 0, NULL, 1, "a[0].T");
    /* 1- and 2-byte elements, rank 6 */
    ipu_tensor_t d[] = {mk(IPU_DTYPE_UINT8, 6, D(2, 3, 1, 4, 5, 6))};
    expect("Transpose", 13, 1, d, 0, perm_rank6, 1, "a[0].transpose(5, 2, 0, 4, 1, 3)");
    ipu_tensor_t e[] = {mk(IPU_DTYPE_INT16, 4, D(1, 33, 2, 35))};
    expect("Transpose", 13, 1, e, 0, perm_0132, 1, "a[0].transpose(0, 1, 3, 2)");
}

/* --- Concat, Split -------------------------------------------------------------------- */

static void axis_1(ipu_node_t *n) { ipu_node_add_attr_int(n, "axis", 1); }
static void axis_m1(ipu_node_t *n) { ipu_node_add_attr_int(n, "axis", -1); }
static void axis_0(ipu_node_t *n) { ipu_node_add_attr_int(n, "axis", 0); }

static void test_concat(void **state)
{
    (void)state;
    ipu_tensor_t a[] = {mk(F32, 3, D(2, 1, 3)), mk(F32, 3, D(2, 4, 3)), mk(F32, 3, D(2, 0, 3)),
                        mk(F32, 3, D(2, 2, 3))};
    expect("Concat", 13, 4, a, 0x2, axis_1, 1, "np.concatenate(a, axis=1)");
    ipu_tensor_t b[] = {mk(I64, 2, D(3, 2)), mk(I64, 2, D(3, 5))};
    expect("Concat", 11, 2, b, 0, axis_m1, 1, "np.concatenate(a, axis=-1)");
    ipu_tensor_t c[] = {mk(I64, 1, D(4))};
    expect("Concat", 4, 1, c, 0, axis_0, 1, "np.concatenate(a, axis=0)");
    /* float 4-D and 3-D on the channels: the node makes oneDNN's concat (for
     * the layout pass) and, with its sources in ours, runs the copies */
    ipu_tensor_t f[] = {mk(F32, 4, D(2, 3, 4, 5)), mk(F32, 4, D(2, 16, 4, 5)),
                        mk(F32, 4, D(2, 5, 4, 5))};
    expect("Concat", 13, 3, f, 0x4, axis_1, 1, "np.concatenate(a, axis=1)");
    ipu_tensor_t h[] = {mk(F32, 3, D(1, 7, 9)), mk(F32, 3, D(1, 2, 9))};
    expect("Concat", 13, 2, h, 0, axis_1, 1, "np.concatenate(a, axis=1)");

    op_case_t *e = oc_new("Concat", 13, 2, 1);
    ipu_tensor_t x = mk(F32, 2, D(2, 3)), y = mk(F32, 3, D(1, 2, 3));
    oc_input(e, 0, F32, 2, x.dims, x.data);
    oc_input(e, 1, F32, 3, y.dims, y.data);
    axis_0(oc_node(e));
    expect_error(e, IPU_ERR_SHAPE, "rank");
    e = oc_new("Concat", 13, 2, 1);
    oc_input(e, 0, F32, 2, x.dims, x.data);
    oc_input(e, 1, F32, 2, D(2, 2), y.data);
    axis_0(oc_node(e));
    expect_error(e, IPU_ERR_SHAPE, "dimension 1");
    free(x.data);
    free(y.data);
}

static void split_attr(ipu_node_t *n)
{
    ipu_node_add_attr_int(n, "axis", 1);
    ipu_node_add_attr_ints(n, "split", 3, D(1, 3, 1));
}

static void test_split(void **state)
{
    (void)state;
    ipu_tensor_t a[] = {mk(F32, 3, D(2, 5, 3))};
    expect("Split", 11, 1, a, 0, split_attr, 3, "np.split(a[0], [1, 4], axis=1)");
    ipu_tensor_t b[] = {mk(F32, 3, D(2, 6, 4)), vals(I64, 1, D(2), D(3, 1))};
    expect("Split", 13, 2, b, 0x2, axis_m1, 2, "np.split(a[0], [3], axis=-1)");
    ipu_tensor_t c[] = {mk(I64, 2, D(6, 2))};
    expect("Split", 2, 1, c, 0, NULL, 3, "np.split(a[0], 3, axis=0)");
    ipu_tensor_t d[] = {mk(F32, 2, D(3, 4)), ABSENT};
    expect("Split", 13, 2, d, 0, axis_m1, 2, "np.split(a[0], 2, axis=-1)");

    op_case_t *e = oc_new("Split", 13, 1, 2); /* 5 does not split in 2 */
    ipu_tensor_t x = mk(F32, 1, D(5));
    oc_input(e, 0, F32, 1, x.dims, x.data);
    expect_error(e, IPU_ERR_SHAPE, "equal");
    free(x.data);
}

/* --- Slice --------------------------------------------------------------------------------- */

static void slice1_attrs(ipu_node_t *n)
{
    ipu_node_add_attr_ints(n, "starts", 2, D(1, -3));
    ipu_node_add_attr_ints(n, "ends", 2, D(1000, -1));
    ipu_node_add_attr_ints(n, "axes", 2, D(0, 2));
}

static void test_slice(void **state)
{
    (void)state;
    const int64_t big = INT64_MAX, small = INT64_MIN;
    /* steps, negative start, INT64_MAX end */
    ipu_tensor_t a[] = {mk(F32, 3, D(4, 6, 5)), vals(I64, 1, D(2), D(-5, 1)),
                        vals(I64, 1, D(2), ((int64_t[]){big, 5})), vals(I64, 1, D(2), D(1, 2)),
                        vals(I64, 1, D(2), D(2, 3))};
    expect("Slice", 13, 5, a, 0x1e, NULL, 1, "a[0][:, -5::2, 1:5:3]");
    /* negative steps to the beginning (INT64_MIN end), negative axes */
    ipu_tensor_t b[] = {mk(I64, 2, D(5, 7)), vals(I64, 1, D(2), D(-1, 10)),
                        vals(I64, 1, D(2), ((int64_t[]){small, 1})), vals(I64, 1, D(2), D(-1, 0)),
                        vals(I64, 1, D(2), D(-1, -2))};
    expect("Slice", 13, 5, b, 0x1e, NULL, 1,
           "a[0][10:1:-2, -1:-9223372036854775808:-1]");
    /* defaults: no axes, no steps; int32 starts/ends; empty result */
    int32_t s32[] = {2, 0}, e32[] = {1, 3};
    ipu_tensor_t c[] = {mk(F32, 2, D(4, 3)), vals(IPU_DTYPE_INT32, 1, D(2), s32),
                        vals(IPU_DTYPE_INT32, 1, D(2), e32), ABSENT, ABSENT};
    expect("Slice", 10, 5, c, 0x6, NULL, 1, "a[0][2:1, 0:3]");
    /* Slice-1: attributes */
    ipu_tensor_t d[] = {mk(F32, 3, D(3, 2, 5))};
    expect("Slice", 1, 1, d, 0, slice1_attrs, 1, "a[0][1:1000, :, -3:-1]");

    op_case_t *e = oc_new("Slice", 13, 3, 1); /* starts fed at run: not constant */
    ipu_tensor_t x = mk(F32, 1, D(5)), s = vals(I64, 1, D(1), D(1)), t = vals(I64, 1, D(1), D(3));
    oc_input(e, 0, F32, 1, x.dims, x.data);
    oc_input(e, 1, I64, 1, s.dims, s.data);
    oc_const(e, 2, I64, 1, t.dims, t.data);
    expect_error(e, IPU_ERR_UNSUPPORTED, "constant");
    free(x.data);
    free(s.data);
    free(t.data);
}

/* --- Gather, GatherElements ----------------------------------------------------------------- */

static void test_gather(void **state)
{
    (void)state;
    /* embedding lookup [V,C] by [B,T] ids, negative ids allowed */
    ipu_tensor_t a[] = {mk(F32, 2, D(10, 6)), vals(I64, 2, D(2, 3), D(3, 0, -1, 9, 3, -10))};
    expect("Gather", 13, 2, a, 0x1, NULL, 1, "np.take(a[0], a[1], axis=0)");
    /* axis 1, int32 indices */
    int32_t i32[] = {2, -1, 0, 2};
    ipu_tensor_t b[] = {mk(I64, 3, D(2, 3, 4)), vals(IPU_DTYPE_INT32, 2, D(2, 2), i32)};
    expect("Gather", 11, 2, b, 0, axis_1, 1, "np.take(a[0], a[1], axis=1)");
    /* scalar index: rank reduction (as PyTorch's x.shape[1] exports) */
    ipu_tensor_t c[] = {mk(F32, 3, D(2, 3, 4)), vals(I64, 0, D(0), D(-2))};
    expect("Gather", 13, 2, c, 0x2, axis_m1, 1, "np.take(a[0], -2, axis=-1)");

    /* an index out of range is found at run time */
    op_case_t *e = oc_new("Gather", 13, 2, 1);
    ipu_tensor_t x = mk(F32, 2, D(4, 2)), i = vals(I64, 1, D(3), D(1, 4, 0));
    oc_const(e, 0, F32, 2, x.dims, x.data);
    oc_input(e, 1, I64, 1, i.dims, i.data);
    expect_error(e, IPU_ERR_INPUT, "index 4");
    free(x.data);
    free(i.data);
}

static void test_gather_elements(void **state)
{
    (void)state;
    ipu_tensor_t a[] = {mk(F32, 2, D(3, 4)), vals(I64, 2, D(2, 4), D(0, 2, 1, -1, 2, 0, 0, 1))};
    expect("GatherElements", 13, 2, a, 0, NULL, 1, "np.take_along_axis(a[0], a[1] % 3, axis=0)");
    ipu_tensor_t b[] = {mk(I64, 3, D(2, 3, 4)), vals(I64, 3, D(2, 3, 2), D(3, 0, 1, 1, 2, 3,
                                                                           0, 0, -1, 2, 1, 3))};
    expect("GatherElements", 11, 2, b, 0, axis_m1, 1,
           "np.take_along_axis(a[0], a[1] % 4, axis=-1)");
}

/* --- Expand, Tile --------------------------------------------------------------------------- */

static void test_expand_tile(void **state)
{
    (void)state;
    ipu_tensor_t a[] = {mk(F32, 3, D(1, 3, 1)), vals(I64, 1, D(3), D(2, 1, 4))};
    expect("Expand", 13, 2, a, 0x2, NULL, 1, "a[0] * np.ones((2, 1, 4), a[0].dtype)");
    ipu_tensor_t b[] = {mk(I64, 1, D(3)), vals(I64, 1, D(3), D(2, 4, 1))};
    expect("Expand", 8, 2, b, 0x2, NULL, 1, "np.broadcast_to(a[0], (2, 4, 3))");
    ipu_tensor_t c[] = {mk(F32, 0, D(0)), vals(I64, 1, D(2), D(2, 3))};
    expect("Expand", 13, 2, c, 0x2, NULL, 1, "np.broadcast_to(a[0], (2, 3))");
    ipu_tensor_t d[] = {mk(F32, 2, D(2, 3)), vals(I64, 1, D(2), D(2, 3))};
    expect("Tile", 13, 2, d, 0x2, NULL, 1, "np.tile(a[0], (2, 3))");
    ipu_tensor_t e[] = {mk(IPU_DTYPE_UINT8, 3, D(2, 1, 3)), vals(I64, 1, D(3), D(1, 4, 2))};
    expect("Tile", 6, 2, e, 0x2, NULL, 1, "np.tile(a[0], (1, 4, 2))");
}

/* --- Pad ------------------------------------------------------------------------------------- */

static void mode_reflect(ipu_node_t *n) { ipu_node_add_attr_string(n, "mode", "reflect"); }
static void mode_edge(ipu_node_t *n) { ipu_node_add_attr_string(n, "mode", "edge"); }
static void pad2_attrs(ipu_node_t *n)
{
    ipu_node_add_attr_ints(n, "pads", 4, D(0, 2, 1, 1));
    ipu_node_add_attr_float(n, "value", 1.5f);
}

static void test_pad(void **state)
{
    (void)state;
    float cv = -7.25f;
    ipu_tensor_t a[] = {mk(F32, 3, D(2, 3, 4)), vals(I64, 1, D(6), D(0, 1, 2, 1, 0, 3)),
                        vals(F32, 0, D(0), &cv)};
    expect("Pad", 13, 3, a, 0x2, NULL, 1,
           "np.pad(a[0], ((0, 1), (1, 0), (2, 3)), constant_values=-7.25)");
    /* negative pads crop; no constant_value: 0 */
    ipu_tensor_t b[] = {mk(I64, 2, D(4, 5)), vals(I64, 1, D(4), D(-1, 2, 1, -2)), ABSENT};
    expect("Pad", 11, 3, b, 0x2, NULL, 1, "np.pad(a[0][1:, :-2], ((0, 1), (2, 0)))");
    ipu_tensor_t c[] = {mk(F32, 2, D(3, 4)), vals(I64, 1, D(4), D(2, 3, 2, 1))};
    expect("Pad", 13, 2, c, 0x2, mode_reflect, 1, "np.pad(a[0], ((2, 2), (3, 1)), 'reflect')");
    ipu_tensor_t d[] = {mk(F32, 3, D(2, 3, 2)), vals(I64, 1, D(6), D(1, 0, 2, 0, 2, 1))};
    expect("Pad", 13, 2, d, 0x2, mode_edge, 1, "np.pad(a[0], ((1, 0), (0, 2), (2, 1)), 'edge')");
    ipu_tensor_t e[] = {mk(F32, 2, D(3, 2))};
    expect("Pad", 2, 1, e, 0, pad2_attrs, 1, "np.pad(a[0], ((0, 1), (2, 1)), constant_values=1.5)");
}

/* --- Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze ------------------------------------- */

static void shape_range(ipu_node_t *n)
{
    ipu_node_add_attr_int(n, "start", 1);
    ipu_node_add_attr_int(n, "end", -1);
}
static void allowzero(ipu_node_t *n) { ipu_node_add_attr_int(n, "allowzero", 1); }
static void axes_0_m1(ipu_node_t *n) { ipu_node_add_attr_ints(n, "axes", 2, D(0, -1)); }

static void test_shape_size(void **state)
{
    (void)state;
    ipu_tensor_t a[] = {mk(F32, 4, D(2, 3, 4, 5))};
    expect("Shape", 13, 1, a, 0, NULL, 1, "np.array(a[0].shape, np.int64)");
    ipu_tensor_t b[] = {mk(F32, 4, D(2, 3, 4, 5))};
    expect("Shape", 15, 1, b, 0, shape_range, 1, "np.array(a[0].shape[1:-1], np.int64)");
    ipu_tensor_t c[] = {mk(F32, 3, D(2, 3, 4))};
    expect("Size", 13, 1, c, 0, NULL, 1, "np.int64(a[0].size)");
}

static void test_views(void **state)
{
    (void)state;
    ipu_tensor_t a[] = {mk(F32, 3, D(2, 3, 4)), vals(I64, 1, D(3), D(0, -1, 2))};
    expect("Reshape", 13, 2, a, 0x2, NULL, 1, "a[0].reshape(2, -1, 2)");
    ipu_tensor_t b[] = {mk(F32, 2, D(0, 3)), vals(I64, 1, D(2), D(3, 0))};
    expect("Reshape", 14, 2, b, 0x2, allowzero, 1, "a[0].reshape(3, 0)");
    ipu_tensor_t c[] = {mk(I64, 4, D(2, 3, 4, 5))};
    expect("Flatten", 13, 1, c, 0, axis_m1, 1, "a[0].reshape(24, 5)");
    ipu_tensor_t d[] = {mk(I64, 3, D(2, 3, 4))};
    expect("Flatten", 11, 1, d, 0, axis_0, 1, "a[0].reshape(1, 24)");
    ipu_tensor_t e[] = {mk(F32, 4, D(1, 3, 1, 1)), vals(I64, 1, D(2), D(0, -1))};
    expect("Squeeze", 13, 2, e, 0x2, NULL, 1, "np.squeeze(a[0], axis=(0, 3))");
    ipu_tensor_t f[] = {mk(F32, 4, D(1, 3, 1, 1))};
    expect("Squeeze", 11, 1, f, 0, NULL, 1, "np.squeeze(a[0])");
    ipu_tensor_t g[] = {mk(F32, 2, D(3, 4)), vals(I64, 1, D(2), D(-1, 1))};
    expect("Unsqueeze", 13, 2, g, 0x2, NULL, 1, "a[0].reshape(3, 1, 4, 1)");
    ipu_tensor_t h[] = {mk(F32, 2, D(3, 4))};
    expect("Unsqueeze", 11, 1, h, 0, axes_0_m1, 1, "a[0][None, :, :, None]");

    /* 24 elements do not make 5 x 5 */
    op_case_t *e1 = oc_new("Reshape", 13, 2, 1);
    ipu_tensor_t x = mk(F32, 2, D(4, 6)), s = vals(I64, 1, D(2), D(5, 5));
    oc_input(e1, 0, F32, 2, x.dims, x.data);
    oc_const(e1, 1, I64, 1, s.dims, s.data);
    expect_error(e1, IPU_ERR_SHAPE, "24 elements");
    /* a shape that is not constant */
    op_case_t *e2 = oc_new("Reshape", 13, 2, 1);
    oc_input(e2, 0, F32, 2, x.dims, x.data);
    oc_input(e2, 1, I64, 1, s.dims, s.data);
    expect_error(e2, IPU_ERR_UNSUPPORTED, "constant");
    /* squeezing a dimension that is not 1 */
    op_case_t *e3 = oc_new("Squeeze", 11, 1, 1);
    oc_input(e3, 0, F32, 2, x.dims, x.data);
    ipu_node_add_attr_ints(oc_node(e3), "axes", 1, D(1));
    expect_error(e3, IPU_ERR_SHAPE, "squeeze");
    free(x.data);
    free(s.data);
    /* the view ops may alias their input */
    const char *views[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze"};
    for (int i = 0; i < 4; i++) {
        op_case_t *oc = oc_new(views[i], 13, 1, 1);
        assert_int_equal(ipu_graph_bind_ops(oc->g, ipu_op_lookup), IPU_OK);
        assert_true(oc_node(oc)->op->flags & IPU_OP_ALIAS_INPUT0);
        oc_free(oc);
    }
}

/* --- Constant, ConstantOfShape, Range, Trilu ------------------------------------------------ */

static void value_ints(ipu_node_t *n) { ipu_node_add_attr_ints(n, "value_ints", 3, D(4, -2, 9)); }
static void value_float(ipu_node_t *n) { ipu_node_add_attr_float(n, "value_float", 2.5f); }
static void value_tensor(ipu_node_t *n)
{
    int64_t v[] = {1, 2, 3, 4, 5, 6};
    ipu_tensor_t t = {.dtype = I64, .rank = 2, .dims = {2, 3}, .data = v};
    ipu_node_add_attr_tensor(n, "value", &t);
}
static void fill_int(ipu_node_t *n)
{
    int64_t v = 7;
    ipu_tensor_t t = {.dtype = I64, .rank = 1, .dims = {1}, .data = &v};
    ipu_node_add_attr_tensor(n, "value", &t);
}
static void lower(ipu_node_t *n) { ipu_node_add_attr_int(n, "upper", 0); }

static void test_constants(void **state)
{
    (void)state;
    expect("Constant", 13, 0, NULL, 0, value_ints, 1, "np.array([4, -2, 9], np.int64)");
    expect("Constant", 13, 0, NULL, 0, value_float, 1, "np.float32(2.5)");
    expect("Constant", 11, 0, NULL, 0, value_tensor, 1, "np.arange(1, 7).reshape(2, 3)");
    ipu_tensor_t a[] = {vals(I64, 1, D(3), D(2, 0, 3))};
    expect("ConstantOfShape", 13, 1, a, 0x1, NULL, 1, "np.zeros((2, 0, 3), np.float32)");
    ipu_tensor_t b[] = {vals(I64, 1, D(2), D(2, 3))};
    expect("ConstantOfShape", 13, 1, b, 0x1, fill_int, 1, "np.full((2, 3), 7, np.int64)");
    ipu_tensor_t c[] = {vals(I64, 0, D(0), D(10)), vals(I64, 0, D(0), D(-3)),
                        vals(I64, 0, D(0), D(-4))};
    expect("Range", 13, 3, c, 0x7, NULL, 1, "np.arange(10, -3, -4, dtype=np.int64)");
    float fs = 0.5f, fl = 3.0f, fd = 0.75f;
    ipu_tensor_t d[] = {vals(F32, 0, D(0), &fs), vals(F32, 0, D(0), &fl), vals(F32, 0, D(0), &fd)};
    expect("Range", 11, 3, d, 0x7, NULL, 1, "np.arange(0.5, 3.0, 0.75, dtype=np.float32)");
    ipu_tensor_t e[] = {mk(F32, 3, D(2, 4, 5)), vals(I64, 0, D(0), D(1))};
    expect("Trilu", 14, 2, e, 0x2, NULL, 1, "np.triu(a[0], 1)");
    ipu_tensor_t f[] = {mk(I64, 2, D(5, 3)), vals(I64, 0, D(0), D(-1))};
    expect("Trilu", 14, 2, f, 0x2, lower, 1, "np.tril(a[0], -1)");
    ipu_tensor_t g[] = {mk(F32, 2, D(3, 3)), ABSENT};
    expect("Trilu", 14, 2, g, 0, NULL, 1, "np.triu(a[0])");
}

/* --- a PyTorch-style shape chain folds ----------------------------------------------------- */

/* x -> Shape -> Gather(0) -> Unsqueeze -> Concat([.., -1]) -> Reshape(x, ..);
 * Shape -> Gather(1) -> Range(0, .., 1) as position ids. */
static void chain(int opset)
{
    ipu_graph_t *g = ipu_graph_new("chain");
    g->opset = opset;
    int64_t zero = 0, one = 1, minus1 = -1;
    ipu_graph_add_node(g, "Shape", "shape", 1, (const char *[]){"x"}, 1, (const char *[]){"s"});
    ipu_graph_add_node(g, "Gather", "g0", 2, (const char *[]){"s", "i0"}, 1, (const char *[]){"s0"});
    if (opset >= 13) {
        ipu_graph_add_node(g, "Unsqueeze", "unsq", 2, (const char *[]){"s0", "ax"}, 1,
                           (const char *[]){"s0u"});
        ipu_value_set_const(&g->values[ipu_graph_value(g, "ax")], I64, 1, D(1), &zero);
    } else {
        int k = ipu_graph_add_node(g, "Unsqueeze", "unsq", 1, (const char *[]){"s0"}, 1,
                                   (const char *[]){"s0u"});
        ipu_node_add_attr_ints(&g->nodes[k], "axes", 1, D(0));
    }
    int k = ipu_graph_add_node(g, "Concat", "cat", 2, (const char *[]){"s0u", "m1"}, 1,
                               (const char *[]){"shp"});
    ipu_node_add_attr_int(&g->nodes[k], "axis", 0);
    ipu_graph_add_node(g, "Reshape", "reshape", 2, (const char *[]){"x", "shp"}, 1,
                       (const char *[]){"y"});
    ipu_graph_add_node(g, "Gather", "g1", 2, (const char *[]){"s", "i1"}, 1, (const char *[]){"t"});
    ipu_graph_add_node(g, "Range", "range", 3, (const char *[]){"zero", "t", "one"}, 1,
                       (const char *[]){"pos"});
    ipu_value_set_const(&g->values[ipu_graph_value(g, "i0")], I64, 0, D(0), &zero);
    ipu_value_set_const(&g->values[ipu_graph_value(g, "i1")], I64, 0, D(0), &one);
    ipu_value_set_const(&g->values[ipu_graph_value(g, "m1")], I64, 1, D(1), &minus1);
    ipu_value_set_const(&g->values[ipu_graph_value(g, "zero")], I64, 0, D(0), &zero);
    ipu_value_set_const(&g->values[ipu_graph_value(g, "one")], I64, 0, D(0), &one);
    const char *consts[] = {"i0", "i1", "m1", "zero", "one", "ax"};
    for (int i = 0; i < 6; i++) {
        int v = ipu_graph_find_value(g, consts[i]);
        if (v >= 0)
            g->values[v].flags |= IPU_VALUE_INITIALIZER;
    }
    ipu_graph_add_input(g, "x");
    ipu_value_set_shape(&g->values[ipu_graph_find_value(g, "x")], F32, 3, D(2, 5, 4));
    ipu_graph_add_output(g, "y");
    ipu_graph_add_output(g, "pos");

    assert_int_equal(ipu_graph_toposort(g), IPU_OK);
    assert_int_equal(ipu_graph_bind_ops(g, ipu_op_lookup), IPU_OK);
    ipu_status_t st = ipu_graph_infer(g);
    if (st != IPU_OK)
        fail_msg("infer: %s", ipu_error_message());
    for (int i = 0; i < g->n_nodes; i++) {
        const ipu_node_t *n = &g->nodes[i];
        int want = strcmp(n->name, "reshape") != 0;
        if (n->folded != want)
            fail_msg("node %s: folded %d, want %d", n->name, n->folded, want);
    }
    const ipu_value_t *shp = &g->values[ipu_graph_find_value(g, "shp")];
    assert_non_null(shp->data);
    assert_equal_i64(shp->data, D(2, -1), 2);
    const ipu_value_t *y = &g->values[ipu_graph_find_value(g, "y")];
    assert_null(y->data);
    ipu_tensor_t yt = ipu_value_tensor(g, ipu_graph_find_value(g, "y"));
    assert_shape(&yt, 2, D(2, 20));
    const ipu_value_t *pos = &g->values[ipu_graph_find_value(g, "pos")];
    assert_int_equal(pos->rank, 1);
    assert_int_equal(pos->dims[0], 5);
    assert_equal_i64(pos->data, D(0, 1, 2, 3, 4), 5);
    /* new input shapes: inference again folds to the new values */
    ipu_value_set_shape(&g->values[ipu_graph_find_value(g, "x")], F32, 3, D(3, 2, 4));
    assert_int_equal(ipu_graph_infer(g), IPU_OK);
    yt = ipu_value_tensor(g, ipu_graph_find_value(g, "y"));
    assert_shape(&yt, 2, D(3, 8));
    ipu_graph_free(g);
}

static void test_shape_chain_folds(void **state)
{
    (void)state;
    chain(13);
    chain(11);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_concat),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_slice),
        cmocka_unit_test(test_gather),
        cmocka_unit_test(test_gather_elements),
        cmocka_unit_test(test_expand_tile),
        cmocka_unit_test(test_pad),
        cmocka_unit_test(test_shape_size),
        cmocka_unit_test(test_views),
        cmocka_unit_test(test_constants),
        cmocka_unit_test(test_shape_chain_folds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
