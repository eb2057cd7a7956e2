/* Binary and variadic elementwise operators with NumPy multidirectional
 * broadcasting (Operators.md): Add-7/13/14, Sub-7/13/14, Mul-7/13/14,
 * Div-7/13/14, Pow-7/12/13/15, Mod-10/13, Equal-7/11/13, Less-7/9/13,
 * Greater-7/9/13, LessOrEqual-12/16, GreaterOrEqual-12/16, And-7, Or-7,
 * Xor-7, Where-9/16, Sum-8/13, Max-8/12/13, Min-8/12/13, Mean-8/13 (the
 * opset-7 variadic forms without broadcasting are a special case).
 *
 * dtypes: float, int64, int32 for arithmetic and comparisons (plus bool for
 * Equal), bool for And/Or/Xor, any fixed-size type for Where's X/Y. Integer
 * Div/Mod by zero give 0 rather than trapping.
 *
 * Add, Sub, Mul and Div of float32 activations (rank 3 to 5) whose one
 * input has the output's shape (A: input 0, or either input of Add and
 * Mul) and whose other (B) is a scalar, per channel ([N or 1, C, 1...]) or
 * of the output's shape join the layout pass (dnn_chain.h) as lazy readers
 * with A as their source: where the pass keeps A, a Conv's (or pool's)
 * output, in oneDNN's layout, the node is made (adopt) a oneDNN binary
 * primitive (exec/onednn.h) that reads A in that layout and writes Y in it,
 * so an activation stays in oneDNN's layout through Conv -> Mul(scale) ->
 * Conv (EfficientNet's squeeze-and-excitation). Elsewhere the kernels
 * below run: on our layout they are as fast as oneDNN's or faster, and no
 * primitive is made. */
#include "exec/ops/dnn_chain.h"
#include "exec/ops/ew.h"
#include "exec/ops/registry.h"

#include <math.h>
#include <stdlib.h>

enum { K_ARITH, K_CMP, K_LOGIC, K_VARIADIC, K_WHERE, K_POW, K_MOD };

typedef struct bin_op {
    ipu_op_t op;
    int kind;
    int dnn_alg;  /* ipu_dnn_binary_alg_t of Add/Sub/Mul/Div, -1 for none */
    ipu_ew_row_fn k[4]; /* by ipu_ew_type_index(): f32, i64, i32, bool */
    ipu_ew_row_fn alt[4]; /* Mod with fmod=1 */
} bin_op_t;

#define BIN_OP(o) ((const bin_op_t *)(o)->op)

/* ---- kernels --------------------------------------------------------- */

/* One row of out = EXPR(x, y), with x from a and y from b; branches on the
 * steps once per row so the four loops stay contiguous. */
#define BIN_FN(NAME, TA, TB, TO, EXPR)                                                        \
    IPU_EW_HOT static void NAME(void *o_, const void *const *in, const int64_t *step,      \
                                int64_t n, const void *arg)                                   \
    {                                                                                         \
        TO *restrict o = o_;                                                                  \
        const TA *restrict a = in[0];                                                         \
        const TB *restrict b = in[1];                                                         \
        if (step[0] && step[1]) {                                                             \
            for (int64_t i = 0; i < n; i++) {                                                 \
                TA x = a[i]; TB y = b[i]; o[i] = (TO)(EXPR);                                  \
            }                                                                                 \
        } else if (step[0]) {                                                                 \
            const TB y = b[0];                                                                \
            for (int64_t i = 0; i < n; i++) {                                                 \
                TA x = a[i]; o[i] = (TO)(EXPR);                                               \
            }                                                                                 \
        } else if (step[1]) {                                                                 \
            const TA x = a[0];                                                                \
            for (int64_t i = 0; i < n; i++) {                                                 \
                TB y = b[i]; o[i] = (TO)(EXPR);                                               \
            }                                                                                 \
        } else {                                                                              \
            const TA x = a[0]; const TB y = b[0]; const TO v = (TO)(EXPR);                    \
            for (int64_t i = 0; i < n; i++)                                                   \
                o[i] = v;                                                                     \
        }                                                                                     \
    }

/* integer helpers: wrap instead of overflowing, never trap */
#define WRAP(T, UT, op) ((T)((UT)x op (UT)y))
#define IDIV(T, UT) (y == 0 ? (T)0 : y == -1 ? (T)(0 - (UT)x) : (T)(x / y))
#define IMOD(T) (y == 0 || y == -1 ? (T)0 : (T)(x % y))
/* Python/numpy sign rule: result has the divisor's sign */
#define IPYMOD(T) (y == 0 || y == -1 ? (T)0 : (T)((x % y) != 0 && ((x % y) < 0) != (y < 0) ? x % y + y : x % y))

static inline float fpymod(float x, float y)
{
    float m = fmodf(x, y);
    return (m != 0.0f && ((m < 0.0f) != (y < 0.0f))) ? m + y : m;
}

static inline int64_t int_pow(int64_t x, int64_t y)
{
    if (y < 0)
        return x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)x;
    while (y) {
        if (y & 1)
            r *= b;
        b *= b;
        y >>= 1;
    }
    return (int64_t)r;
}

#define ARITH_SET(NAME, EXPR_F, EXPR_I64, EXPR_I32)                   \
    BIN_FN(NAME##_f32, float, float, float, EXPR_F)                    \
    BIN_FN(NAME##_i64, int64_t, int64_t, int64_t, EXPR_I64)            \
    BIN_FN(NAME##_i32, int32_t, int32_t, int32_t, EXPR_I32)

ARITH_SET(add, x + y, WRAP(int64_t, uint64_t, +), WRAP(int32_t, uint32_t, +))
ARITH_SET(sub, x - y, WRAP(int64_t, uint64_t, -), WRAP(int32_t, uint32_t, -))
ARITH_SET(mul, x * y, WRAP(int64_t, uint64_t, *), WRAP(int32_t, uint32_t, *))
ARITH_SET(div, x / y, IDIV(int64_t, uint64_t), IDIV(int32_t, uint32_t))
ARITH_SET(max, x > y || x != x ? x : y, x > y ? x : y, x > y ? x : y)
ARITH_SET(min, x < y || x != x ? x : y, x < y ? x : y, x < y ? x : y)
ARITH_SET(fmod, fmodf(x, y), IMOD(int64_t), IMOD(int32_t))
ARITH_SET(pymod, fpymod(x, y), IPYMOD(int64_t), IPYMOD(int32_t))
ARITH_SET(ipow, powf(x, y), int_pow(x, y), (int32_t)int_pow(x, y))
BIN_FN(pow_f32_i64, float, int64_t, float, powf(x, (float)y))
BIN_FN(pow_f32_i32, float, int32_t, float, powf(x, (float)y))

#define CMP_SET(NAME, EXPR)                                  \
    BIN_FN(NAME##_f32, float, float, uint8_t, EXPR)           \
    BIN_FN(NAME##_i64, int64_t, int64_t, uint8_t, EXPR)       \
    BIN_FN(NAME##_i32, int32_t, int32_t, uint8_t, EXPR)       \
    BIN_FN(NAME##_b8, uint8_t, uint8_t, uint8_t, EXPR)

CMP_SET(eq, x == y)
CMP_SET(lt, x < y)
CMP_SET(gt, x > y)
CMP_SET(le, x <= y)
CMP_SET(ge, x >= y)
BIN_FN(and_b8, uint8_t, uint8_t, uint8_t, (x != 0) & (y != 0))
BIN_FN(or_b8, uint8_t, uint8_t, uint8_t, (x != 0) | (y != 0))
BIN_FN(xor_b8, uint8_t, uint8_t, uint8_t, (x != 0) ^ (y != 0))

/* Pow with a float base: the common exponents 2, 3, 0.5 and 1 become
 * multiplications / sqrt when the exponent is broadcast along the row. */
IPU_EW_HOT static void pow_f32(void *o_, const void *const *in, const int64_t *step, int64_t n,
                    const void *arg)
{
    if (step[0] && !step[1]) {
        float y = *(const float *)in[1], *restrict o = o_;
        const float *restrict a = in[0];
        if (y == 2.0f) {
            for (int64_t i = 0; i < n; i++)
                o[i] = a[i] * a[i];
            return;
        }
        if (y == 3.0f) {
            for (int64_t i = 0; i < n; i++)
                o[i] = a[i] * a[i] * a[i];
            return;
        }
        if (y == 1.0f) {
            for (int64_t i = 0; i < n; i++)
                o[i] = a[i];
            return;
        }
        if (y == 0.5f) {
            for (int64_t i = 0; i < n; i++)
                o[i] = sqrtf(a[i]);
            return;
        }
    }
    ipow_f32(o_, in, step, n, arg);
}

#define WHERE_FN(NAME, T)                                                                     \
    IPU_EW_HOT static void NAME(void *o_, const void *const *in, const int64_t *step,      \
                                int64_t n, const void *arg)                                   \
    {                                                                                         \
        T *restrict o = o_;                                                                   \
        const uint8_t *restrict c = in[0];                                                    \
        const T *restrict x = in[1], *restrict y = in[2];                                     \
        if (step[0] && step[1] && step[2]) {                                                  \
            for (int64_t i = 0; i < n; i++)                                                   \
                o[i] = c[i] ? x[i] : y[i];                                                    \
        } else if (step[0] && step[1]) {                                                      \
            const T yv = y[0];                                                                \
            for (int64_t i = 0; i < n; i++)                                                   \
                o[i] = c[i] ? x[i] : yv;                                                      \
        } else if (step[0] && step[2]) {                                                      \
            const T xv = x[0];                                                                \
            for (int64_t i = 0; i < n; i++)                                                   \
                o[i] = c[i] ? xv : y[i];                                                      \
        } else {                                                                              \
            int64_t sc = step[0], sx = step[1], sy = step[2];                                 \
            for (int64_t i = 0; i < n; i++)                                                   \
                o[i] = c[i * sc] ? x[i * sx] : y[i * sy];                                     \
        }                                                                                     \
    }
WHERE_FN(where_1, uint8_t)
WHERE_FN(where_2, uint16_t)
WHERE_FN(where_4, uint32_t)
WHERE_FN(where_8, uint64_t)

static ipu_ew_row_fn pick(const ipu_node_t *n, ipu_dtype_t ta, ipu_dtype_t tb)
{
    const bin_op_t *b = BIN_OP(n);
    int ti = ipu_ew_type_index(ta);
    if (b->kind == K_WHERE) {
        switch (ipu_dtype_size(tb)) {
        case 1: return where_1;
        case 2: return where_2;
        case 4: return where_4;
        case 8: return where_8;
        default: return NULL;
        }
    }
    if (ti < 0)
        return NULL;
    if (b->kind == K_POW && ta == IPU_DTYPE_FLOAT) {
        if (tb == IPU_DTYPE_INT64) return pow_f32_i64;
        if (tb == IPU_DTYPE_INT32) return pow_f32_i32;
    }
    if (ta != tb)
        return NULL;
    if (b->kind == K_MOD && ipu_attr_int(n, "fmod", 0))
        return b->alt[ti];
    return b->k[ti];
}

/* ---- oneDNN's binary primitive (Add, Sub, Mul, Div) -------------------- */

typedef struct bin_state {
    ipu_dnn_node_t dnn;        /* first (IPU_OP_DNN); dnn.src_slot: A */
    ipu_dnn_binary_desc_t d;   /* what the primitive was made from (adopt) */
} bin_state_t;

static ipu_status_t bin_adopt(const ipu_node_t *n, const ipu_dnn_t *like, ipu_dnn_t **out)
{
    const bin_state_t *s = n->state;
    return ipu_dnn_binary(n, &s->d, like, out);
}

static void bin_fini(ipu_node_t *n)
{
    bin_state_t *s = n->state;
    if (s)
        ipu_dnn_free(s->dnn.p);
    free(s);
    n->state = NULL;
}

/* Whether v (rank <= r) broadcast to dims (rank r) is a scalar, per
 * channel (1 everywhere but along axes 0 and 1) or of dims itself; its dims
 * padded to rank r into b. */
static int b_fits(const ipu_value_t *v, int r, const int64_t *dims, int64_t *b)
{
    int same = v->rank == r, per_channel = 1;
    if (v->rank > r)
        return 0;
    for (int i = 0; i < r; i++) {
        int j = i - (r - v->rank);
        b[i] = j < 0 ? 1 : v->dims[j];
        if (b[i] != 1 && b[i] != dims[i])
            return 0;
        same &= b[i] == dims[i];
        per_channel &= i < 2 || b[i] == 1;
    }
    return same || per_channel;
}

/* n->state where n qualifies (see the top of the file): a lazy reader of
 * the layout pass. */
static ipu_status_t bin_dnn_setup(ipu_graph_t *g, ipu_node_t *n, int rank, const int64_t *dims)
{
    const bin_op_t *b = BIN_OP(n);
    const ipu_value_t *in[2] = {ipu_node_input(g, n, 0), ipu_node_input(g, n, 1)};
    ipu_dnn_binary_desc_t d = {.alg = (ipu_dnn_binary_alg_t)b->dnn_alg, .rank = rank};
    int commutes = d.alg == IPU_DNN_BINARY_ADD || d.alg == IPU_DNN_BINARY_MUL, a = -1;
    if (b->dnn_alg < 0 || rank < 3 || rank > 5 || in[0]->dtype != IPU_DTYPE_FLOAT ||
        ipu_shape_numel(rank, dims) == 0 || (in[0]->data && in[1]->data))
        return IPU_OK;
    for (int k = 0; k < (commutes ? 2 : 1) && a < 0; k++)
        if (in[k]->rank == rank && memcmp(in[k]->dims, dims, (size_t)rank * sizeof(int64_t)) == 0 &&
            b_fits(in[1 - k], rank, dims, d.b))
            a = k;
    if (a < 0)
        return IPU_OK;
    memcpy(d.a, dims, (size_t)rank * sizeof(int64_t));
    bin_state_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory");
    s->d = d;
    s->dnn.src_slot = a;
    s->dnn.res_slot = -1;
    s->dnn.adopt = bin_adopt;
    s->dnn.lazy = 1;
    n->state = s;
    return IPU_OK;
}

static size_t bin_scratch(const ipu_graph_t *g, const ipu_node_t *n)
{
    const bin_state_t *s = n->state;
    return s ? ipu_dnn_scratch(s->dnn.p) : 0;
}

/* ---- infer / run ------------------------------------------------------ */

static ipu_status_t bin_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const bin_op_t *b = BIN_OP(n);
    int rank, nin = b->kind == K_WHERE ? 3 : b->kind == K_VARIADIC ? n->n_inputs : 2;
    int64_t dims[IPU_MAX_RANK];
    ipu_status_t st = b->kind == K_VARIADIC ? ipu_ew_check_arity(n, 1, 64, n->n_inputs, 1)
                                            : ipu_ew_check_arity(n, nin, nin, nin, 1);
    if (st != IPU_OK)
        return st;
    int first = b->kind == K_WHERE ? 1 : 0;
    ipu_dtype_t ta = ipu_node_input(g, n, first)->dtype;
    ipu_dtype_t tb = ipu_node_input(g, n, first + 1 < nin ? first + 1 : first)->dtype;
    if (b->kind == K_WHERE && (st = ipu_ew_check_dtype(g, n, 0, IPU_DTYPE_BOOL)) != IPU_OK)
        return st;
    if ((b->kind == K_WHERE || b->kind == K_VARIADIC) && ta != tb)
        return ipu_op_error(IPU_ERR_SHAPE, n, "inputs have different dtypes (%s, %s)",
                            ipu_dtype_name(ta), ipu_dtype_name(tb));
    for (int i = 2; b->kind == K_VARIADIC && i < nin; i++)
        if ((st = ipu_ew_check_dtype(g, n, i, ta)) != IPU_OK)
            return st;
    if (pick(n, ta, tb) == NULL ||
        (strcmp(n->op_type, "Mean") == 0 && ta != IPU_DTYPE_FLOAT))
        return ipu_op_error(ta == tb || b->kind == K_POW ? IPU_ERR_UNSUPPORTED : IPU_ERR_SHAPE, n,
                            "dtypes %s, %s not supported", ipu_dtype_name(ta),
                            ipu_dtype_name(tb));
    if ((st = ipu_ew_infer_broadcast(g, n, 0, nin, &rank, dims)) != IPU_OK)
        return st;
    ipu_dtype_t to = b->kind == K_CMP || b->kind == K_LOGIC ? IPU_DTYPE_BOOL : ta;
    ipu_value_set_shape(ipu_node_output(g, n, 0), to, rank, dims);
    return bin_dnn_setup(g, n, rank, dims);
}

static ipu_status_t bin_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                            ipu_kernel_ctx_t *ctx)
{
    const bin_op_t *b = BIN_OP(n);
    if (b->kind == K_WHERE) {
        ipu_ew_apply(ctx->threads, 3, in, out, pick(n, in[1].dtype, in[2].dtype), NULL);
        return IPU_OK;
    }
    const bin_state_t *s = n->state;
    if (s && s->dnn.p) { /* made by the layout pass: A in oneDNN's layout */
        int a = s->dnn.src_slot;
        const void *bop[1] = {in[1 - a].data};
        return ipu_dnn_exec(n, s->dnn.p, in[a].data, bop, out[0].data, ctx);
    }
    if (b->kind != K_VARIADIC) {
        ipu_ew_apply(ctx->threads, 2, in, out, pick(n, in[0].dtype, in[1].dtype), NULL);
        return IPU_OK;
    }
    if (n->n_inputs == 1) {
        size_t esz = ipu_dtype_size(in[0].dtype);
        ipu_ew_apply(ctx->threads, 1, in, out, ipu_ew_copy_row, &esz);
        return IPU_OK;
    }
    ipu_ew_row_fn fn = pick(n, in[0].dtype, in[0].dtype);
    ipu_ew_apply(ctx->threads, 2, in, out, fn, NULL);
    for (int i = 2; i < n->n_inputs; i++) {
        ipu_tensor_t pair[2] = {*out, in[i]};
        ipu_ew_apply(ctx->threads, 2, pair, out, fn, NULL);
    }
    if (strcmp(n->op_type, "Mean") == 0) {
        float *o = out->data, s = 1.0f / (float)n->n_inputs;
        int64_t cnt = ipu_tensor_numel(out);
        for (int64_t i = 0; i < cnt; i++)
            o[i] *= s;
    }
    return IPU_OK;
}

#define ENTRY(NAME, SINCE, KIND, ...) \
    {{"", NAME, SINCE, 17, 0, bin_infer, NULL, bin_run, NULL, NULL, NULL, NULL}, KIND, -1, __VA_ARGS__}
#define ENTRY_DNN(NAME, ALG, ...)                                                            \
    {{"", NAME, 7, 17, IPU_OP_DNN, bin_infer, bin_scratch, bin_run, bin_fini, NULL, NULL, NULL},   \
     K_ARITH, ALG, __VA_ARGS__}
#define ARITH_K(p) {p##_f32, p##_i64, p##_i32, NULL}
#define CMP_K(p) {p##_f32, p##_i64, p##_i32, p##_b8}

static const bin_op_t ops[] = {
    ENTRY_DNN("Add", IPU_DNN_BINARY_ADD, ARITH_K(add), {0}),
    ENTRY_DNN("Sub", IPU_DNN_BINARY_SUB, ARITH_K(sub), {0}),
    ENTRY_DNN("Mul", IPU_DNN_BINARY_MUL, ARITH_K(mul), {0}),
    ENTRY_DNN("Div", IPU_DNN_BINARY_DIV, ARITH_K(div), {0}),
    ENTRY("Pow", 7, K_POW, {pow_f32, ipow_i64, ipow_i32, NULL}, {0}),
    ENTRY("Mod", 10, K_MOD, ARITH_K(pymod), ARITH_K(fmod)),
    ENTRY("Equal", 7, K_CMP, CMP_K(eq), {0}),
    ENTRY("Less", 7, K_CMP, CMP_K(lt), {0}),
    ENTRY("Greater", 7, K_CMP, CMP_K(gt), {0}),
    ENTRY("LessOrEqual", 12, K_CMP, CMP_K(le), {0}),
    ENTRY("GreaterOrEqual", 12, K_CMP, CMP_K(ge), {0}),
    ENTRY("And", 7, K_LOGIC, {NULL, NULL, NULL, and_b8}, {0}),
    ENTRY("Or", 7, K_LOGIC, {NULL, NULL, NULL, or_b8}, {0}),
    ENTRY("Xor", 7, K_LOGIC, {NULL, NULL, NULL, xor_b8}, {0}),
    ENTRY("Where", 9, K_WHERE, {0}, {0}),
    ENTRY("Sum", 7, K_VARIADIC, ARITH_K(add), {0}),
    ENTRY("Max", 7, K_VARIADIC, ARITH_K(max), {0}),
    ENTRY("Min", 7, K_VARIADIC, ARITH_K(min), {0}),
    ENTRY("Mean", 7, K_VARIADIC, ARITH_K(add), {0}),
};

const ipu_op_t *const ipu_ops_binary[] = {
    &ops[0].op,  &ops[1].op,  &ops[2].op,  &ops[3].op,  &ops[4].op,  &ops[5].op,
    &ops[6].op,  &ops[7].op,  &ops[8].op,  &ops[9].op,  &ops[10].op, &ops[11].op,
    &ops[12].op, &ops[13].op, &ops[14].op, &ops[15].op, &ops[16].op, &ops[17].op,
    &ops[18].op, NULL,
};
