/* Unary elementwise operators (Operators.md): Relu-6/13/14, Sigmoid-6/13,
 * Tanh-6/13, Erf-9/13, Sqrt-6/13, Exp-6/13, Log-6/13, Neg-6/13, Abs-6/13,
 * Reciprocal-6/13, Floor-6/13, Ceil-6/13, Sin-7, Cos-7, LeakyRelu-6/16,
 * Elu-6, Selu-6, HardSigmoid-6, HardSwish-14, Softplus-1, Softsign-1,
 * Not-1, Sign-9/13, Round-11, Identity-1/13/14/16, Dropout-7/10/12/13
 * (inference only), Clip-6 (min/max attributes) and Clip-11/12/13 (min/max
 * optional inputs), PRelu-7/9/16 (slope broadcast to X).
 *
 * dtypes: float; also int64/int32 for Neg, Abs, Sign, Relu and Clip; bool
 * for Not; any type for Identity and Dropout. */
#include "exec/ops/ew.h"
#include "exec/ops/registry.h"

#include <float.h>
#include <math.h>

typedef struct un_param {
    float alpha, beta, gamma;
    int64_t ilo, ihi; /* Clip bounds for integer types */
} un_param_t;

typedef void (*un_fn)(void *o, const void *x, int64_t n, const un_param_t *p);

enum { U_MAP, U_COPY, U_DROPOUT, U_CLIP6, U_CLIP11, U_PRELU };

typedef struct un_op {
    ipu_op_t op;
    int kind;
    un_fn k[4]; /* by ipu_ew_type_index(): f32, i64, i32, bool */
    float alpha, beta, gamma; /* attribute defaults */
} un_op_t;

#define UN_OP(n) ((const un_op_t *)(n)->op)

#define UN_FN(NAME, TI, TO, EXPR)                                                         \
    IPU_EW_HOT static void NAME(void *o_, const void *x_, int64_t n, const un_param_t *p) \
    {                                                                                     \
        TO *restrict o = o_;                                                              \
        const TI *restrict xp = x_;                                                       \
        const float alpha = p->alpha, beta = p->beta, gamma = p->gamma;                   \
        (void)alpha, (void)beta, (void)gamma;                                             \
        for (int64_t i = 0; i < n; i++) {                                                 \
            TI x = xp[i];                                                                 \
            o[i] = (TO)(EXPR);                                                            \
        }                                                                                 \
    }
#define UN_F(NAME, EXPR) UN_FN(NAME, float, float, EXPR)
#define UN_I(NAME, EXPR) UN_FN(NAME##_i64, int64_t, int64_t, EXPR) UN_FN(NAME##_i32, int32_t, int32_t, EXPR)

UN_F(relu_f32, x < 0.0f ? 0.0f : x)
UN_I(relu, x < 0 ? 0 : x)
UN_F(sigmoid_f32, ipu_ew_sigmoidf(x))
UN_F(tanh_f32, ipu_ew_tanhf(x))
UN_F(erf_f32, ipu_ew_erff(x))
UN_F(sqrt_f32, sqrtf(x))
UN_F(exp_f32, ipu_ew_expf(x))
UN_F(log_f32, logf(x))
UN_F(neg_f32, -x)
UN_I(neg, 0 - x)
UN_F(abs_f32, fabsf(x))
UN_I(abs, x < 0 ? 0 - x : x)
UN_F(recip_f32, 1.0f / x)
UN_F(floor_f32, floorf(x))
UN_F(ceil_f32, ceilf(x))
UN_F(sin_f32, sinf(x))
UN_F(cos_f32, cosf(x))
UN_F(leaky_f32, x < 0.0f ? alpha * x : x)
UN_F(elu_f32, x < 0.0f ? alpha * (ipu_ew_expf(x) - 1.0f) : x)
UN_F(selu_f32, x <= 0.0f ? gamma * (alpha * ipu_ew_expf(x) - alpha) : gamma * x)
UN_F(hsig_f32, fminf(1.0f, fmaxf(0.0f, alpha * x + beta)))
UN_F(hswish_f32, x * fminf(1.0f, fmaxf(0.0f, x * (1.0f / 6.0f) + 0.5f)))
UN_F(softplus_f32, (x > 0.0f ? x : 0.0f) + log1pf(ipu_ew_expf(-fabsf(x))))
UN_F(softsign_f32, x / (1.0f + fabsf(x)))
UN_F(sign_f32, (float)((x > 0.0f) - (x < 0.0f)))
UN_I(sign, (x > 0) - (x < 0))
UN_F(round_f32, rintf(x))
UN_FN(not_b8, uint8_t, uint8_t, !x)
/* Clip = Min(max, Max(x, min)) (Operators.md): max everywhere when min >
 * max; a NaN bound gives NaN, as torch.clamp (numpy 1.24 ignores it) */
IPU_EW_INLINE float clip1(float x, float lo, float hi)
{
    float t = x < lo || lo != lo ? lo : x;
    return t > hi || hi != hi ? hi : t;
}
IPU_EW_INLINE int64_t clip1_i(int64_t x, int64_t lo, int64_t hi)
{
    int64_t t = x < lo ? lo : x;
    return t > hi ? hi : t;
}
UN_F(clip_f32, clip1(x, alpha, beta))
UN_FN(clip_i64, int64_t, int64_t, clip1_i(x, p->ilo, p->ihi))
UN_FN(clip_i32, int32_t, int32_t, clip1_i(x, p->ilo, p->ihi))

IPU_EW_HOT static void prelu_row(void *o_, const void *const *in, const int64_t *step,
                                 int64_t n, const void *arg)
{
    float *restrict o = o_;
    const float *restrict x = in[0], *restrict s = in[1];
    if (step[1]) {
        for (int64_t i = 0; i < n; i++)
            o[i] = x[i] < 0.0f ? s[i] * x[i] : x[i];
    } else {
        const float a = s[0];
        for (int64_t i = 0; i < n; i++)
            o[i] = x[i] < 0.0f ? a * x[i] : x[i];
    }
}

/* ---- infer / run ------------------------------------------------------ */

static ipu_status_t un_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const un_op_t *u = UN_OP(n);
    ipu_status_t st;
    switch (u->kind) {
    case U_CLIP11: st = ipu_ew_check_arity(n, 1, 3, 1, 1); break;
    case U_PRELU: st = ipu_ew_check_arity(n, 2, 2, 2, 1); break;
    case U_DROPOUT: st = ipu_ew_check_arity(n, 1, 3, 1, 2); break;
    default: st = ipu_ew_check_arity(n, 1, 1, 1, 1); break;
    }
    if (st != IPU_OK)
        return st;
    const ipu_value_t *x = ipu_node_input(g, n, 0);
    int ti = ipu_ew_type_index(x->dtype);
    if (u->kind == U_MAP || u->kind == U_CLIP6 || u->kind == U_CLIP11) {
        if (ti < 0 || u->k[ti] == NULL)
            return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "dtype %s not supported",
                                ipu_dtype_name(x->dtype));
    }
    if (u->kind == U_CLIP11)
        for (int i = 1; i < n->n_inputs; i++) {
            const ipu_value_t *b = ipu_node_input(g, n, i);
            if (b && (ipu_shape_numel(b->rank, b->dims) != 1 || b->dtype != x->dtype))
                return ipu_op_error(IPU_ERR_SHAPE, n, "%s must be a %s scalar",
                                    i == 1 ? "min" : "max", ipu_dtype_name(x->dtype));
        }
    if (u->kind == U_PRELU) {
        const ipu_value_t *s = ipu_node_input(g, n, 1);
        int r;
        int64_t dims[IPU_MAX_RANK];
        if (x->dtype != IPU_DTYPE_FLOAT || s->dtype != IPU_DTYPE_FLOAT)
            return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "dtypes %s, %s not supported",
                                ipu_dtype_name(x->dtype), ipu_dtype_name(s->dtype));
        if ((st = ipu_op_broadcast(n, x->rank, x->dims, s->rank, s->dims, &r, dims)) != IPU_OK)
            return st;
        if (!ipu_shape_equal(r, dims, x->rank, x->dims))
            return ipu_op_error(IPU_ERR_SHAPE, n, "slope does not broadcast to X's shape");
    }
    if (u->kind == U_DROPOUT) {
        const ipu_value_t *tm = ipu_node_input(g, n, 2);
        if (ipu_attr_int(n, "training_mode", 0) != 0 ||
            (tm && tm->data && tm->dtype == IPU_DTYPE_BOOL && *(const uint8_t *)tm->data))
            return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "training mode is not supported");
        ipu_value_t *mask = ipu_node_output(g, n, 1);
        if (mask)
            ipu_value_set_shape(mask, IPU_DTYPE_BOOL, x->rank, x->dims);
    }
    ipu_value_set_shape(ipu_node_output(g, n, 0), x->dtype, x->rank, x->dims);
    return IPU_OK;
}

static int64_t clip_bound_i(const ipu_tensor_t *t, int64_t dflt)
{
    if (t->data == NULL)
        return dflt;
    return t->dtype == IPU_DTYPE_INT64 ? *(const int64_t *)t->data : *(const int32_t *)t->data;
}

/* a map's elements [r0, r1) (ipu_par_rows) */
typedef struct un_rows {
    un_fn k;
    char *o;
    const char *x;
    size_t isz, osz;
    const un_param_t *p;
} un_rows_t;

static void un_rows(void *arg, int64_t r0, int64_t r1)
{
    const un_rows_t *r = arg;
    r->k(r->o + (size_t)r0 * r->osz, r->x + (size_t)r0 * r->isz, r1 - r0, r->p);
}

static ipu_status_t un_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                           ipu_kernel_ctx_t *ctx)
{
    const un_op_t *u = UN_OP(n);
    un_param_t p = {ipu_attr_float(n, "alpha", u->alpha), ipu_attr_float(n, "beta", u->beta),
                    ipu_attr_float(n, "gamma", u->gamma), INT64_MIN, INT64_MAX};
    int64_t cnt = ipu_tensor_numel(&in[0]);
    switch (u->kind) {
    case U_DROPOUT:
        if (n->n_inputs > 2 && in[2].data && *(const uint8_t *)in[2].data)
            return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "training mode is not supported");
        if (n->n_outputs > 1 && out[1].data)
            memset(out[1].data, 1, (size_t)cnt);
        /* fall through */
    case U_COPY:
        if (out[0].data != in[0].data)
            memcpy(out[0].data, in[0].data, ipu_tensor_nbytes(&in[0]));
        return IPU_OK;
    case U_PRELU:
        ipu_ew_apply(ctx->threads, 2, in, out, prelu_row, NULL);
        return IPU_OK;
    case U_CLIP6:
        p.alpha = ipu_attr_float(n, "min", -FLT_MAX);
        p.beta = ipu_attr_float(n, "max", FLT_MAX);
        break;
    case U_CLIP11:
        p.alpha = n->n_inputs > 1 && in[1].data && in[1].dtype == IPU_DTYPE_FLOAT
                      ? *(const float *)in[1].data : -INFINITY;
        p.beta = n->n_inputs > 2 && in[2].data && in[2].dtype == IPU_DTYPE_FLOAT
                     ? *(const float *)in[2].data : INFINITY;
        if (in[0].dtype != IPU_DTYPE_FLOAT) {
            p.ilo = n->n_inputs > 1 ? clip_bound_i(&in[1], INT64_MIN) : INT64_MIN;
            p.ihi = n->n_inputs > 2 ? clip_bound_i(&in[2], INT64_MAX) : INT64_MAX;
            if (in[0].dtype == IPU_DTYPE_INT32) {
                p.ilo = p.ilo < INT32_MIN ? INT32_MIN : p.ilo;
                p.ihi = p.ihi > INT32_MAX ? INT32_MAX : p.ihi;
            }
        }
        break;
    default:
        break;
    }
    un_rows_t r = {u->k[ipu_ew_type_index(in[0].dtype)], out[0].data, in[0].data,
                   ipu_dtype_size(in[0].dtype), ipu_dtype_size(out[0].dtype), &p};
    ipu_par_rows(ctx->threads, cnt, (size_t)cnt * (r.isz + r.osz), un_rows, &r);
    return IPU_OK;
}

#define ENTRY(NAME, SINCE, UNTIL, KIND, A, B, G, ...)                                   \
    {{"", NAME, SINCE, UNTIL, KIND == U_COPY || KIND == U_DROPOUT ? IPU_OP_ALIAS_INPUT0 : 0, \
      un_infer, NULL, un_run, NULL, NULL, NULL, NULL},                                                 \
     KIND, {__VA_ARGS__}, A, B, G}
#define MAP(NAME, SINCE, ...) ENTRY(NAME, SINCE, 17, U_MAP, 0, 0, 0, __VA_ARGS__)
#define F32I(p) p##_f32, p##_i64, p##_i32

static const un_op_t ops[] = {
    MAP("Relu", 6, F32I(relu)),
    MAP("Sigmoid", 6, sigmoid_f32),
    MAP("Tanh", 6, tanh_f32),
    MAP("Erf", 9, erf_f32),
    MAP("Sqrt", 6, sqrt_f32),
    MAP("Exp", 6, exp_f32),
    MAP("Log", 6, log_f32),
    MAP("Neg", 6, F32I(neg)),
    MAP("Abs", 6, F32I(abs)),
    MAP("Reciprocal", 6, recip_f32),
    MAP("Floor", 6, floor_f32),
    MAP("Ceil", 6, ceil_f32),
    MAP("Sin", 7, sin_f32),
    MAP("Cos", 7, cos_f32),
    ENTRY("LeakyRelu", 6, 17, U_MAP, 0.01f, 0, 0, leaky_f32),
    ENTRY("Elu", 6, 17, U_MAP, 1.0f, 0, 0, elu_f32),
    ENTRY("Selu", 6, 17, U_MAP, 1.67326319217681884765625f, 0, 1.05070102214813232421875f,
          selu_f32),
    ENTRY("HardSigmoid", 6, 17, U_MAP, 0.2f, 0.5f, 0, hsig_f32),
    MAP("HardSwish", 14, hswish_f32),
    MAP("Softplus", 1, softplus_f32),
    MAP("Softsign", 1, softsign_f32),
    MAP("Not", 1, NULL, NULL, NULL, not_b8),
    MAP("Sign", 9, F32I(sign)),
    MAP("Round", 11, round_f32),
    ENTRY("Identity", 1, 17, U_COPY, 0, 0, 0, NULL),
    ENTRY("Dropout", 7, 17, U_DROPOUT, 0, 0, 0, NULL),
    ENTRY("Clip", 6, 10, U_CLIP6, 0, 0, 0, clip_f32),
    ENTRY("Clip", 11, 17, U_CLIP11, 0, 0, 0, F32I(clip)),
    ENTRY("PRelu", 7, 17, U_PRELU, 0, 0, 0, NULL),
};

#define N_OPS (sizeof(ops) / sizeof(ops[0]))
const ipu_op_t *const ipu_ops_unary[] = {
    &ops[0].op,  &ops[1].op,  &ops[2].op,  &ops[3].op,  &ops[4].op,  &ops[5].op,
    &ops[6].op,  &ops[7].op,  &ops[8].op,  &ops[9].op,  &ops[10].op, &ops[11].op,
    &ops[12].op, &ops[13].op, &ops[14].op, &ops[15].op, &ops[16].op, &ops[17].op,
    &ops[18].op, &ops[19].op, &ops[20].op, &ops[21].op, &ops[22].op, &ops[23].op,
    &ops[24].op, &ops[25].op, &ops[26].op, &ops[27].op, &ops[28].op, NULL,
};
_Static_assert(sizeof(ipu_ops_unary) / sizeof(ipu_ops_unary[0]) == N_OPS + 1,
               "ipu_ops_unary lists every entry");
