/* Reductions (Operators.md): ReduceSum-1/11 (axes attribute) and
 * ReduceSum-13 (axes optional input, must be constant;
 * noop_with_empty_axes), ReduceMean, ReduceMax, ReduceMin, ReduceProd,
 * ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSumExp -1/11/13 (axes
 * attribute, up to opset 17), all with keepdims; ArgMax, ArgMin -1/11/12/13
 * (axis, keepdims, select_last_index).
 *
 * dtypes: float for all; int64 and int32 for Sum, Mean, Max, Min, Prod and
 * ArgMax/ArgMin. Adjacent reduced (or kept) axes are merged, so the common
 * cases run as [outer, R, inner] loops; other axis sets gather each
 * output's elements into scratch first. */
#include "exec/ops/ew.h"
#include "exec/ops/registry.h"

#include <math.h>
#include <stdlib.h>

typedef void (*red_fn)(const void *x, void *o, int64_t outer, int64_t R, int64_t inner);

enum { R_REDUCE, R_ARG };

typedef struct red_op {
    ipu_op_t op;
    int kind;
    int axes_input; /* from this opset, axes is input 1 (0: never) */
    red_fn k[3];    /* f32, i64, i32 */
} red_op_t;

#define RED_OP(n) ((const red_op_t *)(n)->op)

typedef struct red_state {
    unsigned mask;      /* reduced axes of the input */
    int keepdims, noop;
    int axis, last;     /* ArgMax/ArgMin */
} red_state_t;

/* ---- kernels: o[a, j] = FIN(COMB over r of MAP(x[a, r, j])) ------------ */

#define RED_FN(NAME, T, INIT, MAP, COMB, FIN)                                                \
    IPU_EW_HOT static void NAME(const void *x_, void *o_, int64_t outer, int64_t R,          \
                                int64_t inner)                                               \
    {                                                                                        \
        const T *restrict x = x_;                                                            \
        T *restrict o = o_;                                                                  \
        for (int64_t a = 0; a < outer; a++) {                                                \
            const T *restrict xa = x + a * R * inner;                                        \
            T *restrict oa = o + a * inner;                                                  \
            if (inner == 1) {                                                                \
                T p[8], acc = INIT, v;                                                       \
                int64_t r = 0;                                                               \
                for (int k = 0; k < 8; k++)                                                  \
                    p[k] = INIT;                                                             \
                for (; r + 8 <= R; r += 8)                                                   \
                    for (int k = 0; k < 8; k++) {                                            \
                        v = xa[r + k];                                                       \
                        p[k] = COMB(p[k], MAP(v));                                           \
                    }                                                                        \
                for (int k = 0; k < 8; k++)                                                  \
                    acc = COMB(acc, p[k]);                                                   \
                for (; r < R; r++) {                                                         \
                    v = xa[r];                                                               \
                    acc = COMB(acc, MAP(v));                                                 \
                }                                                                            \
                oa[0] = FIN(acc);                                                            \
                continue;                                                                    \
            }                                                                                \
            for (int64_t j = 0; j < inner; j++)                                              \
                oa[j] = INIT;                                                                \
            for (int64_t r = 0; r < R; r++)                                                  \
                for (int64_t j = 0; j < inner; j++) {                                        \
                    T v = xa[r * inner + j];                                                 \
                    oa[j] = COMB(oa[j], MAP(v));                                             \
                }                                                                            \
            for (int64_t j = 0; j < inner; j++)                                              \
                oa[j] = FIN(oa[j]);                                                          \
        }                                                                                    \
    }

#define M_ID(v) (v)
#define M_SQ(v) ((v) * (v))
#define M_ABS(v) fabsf(v)
#define C_ADD(a, b) ((a) + (b))
#define C_MUL(a, b) ((a) * (b))
#define C_MAX(a, b) ((b) > (a) ? (b) : (a))
#define C_MIN(a, b) ((b) < (a) ? (b) : (a))
#define F_ID(a) (a)
#define F_MEAN(a) ((a) / (R ? R : 1))
#define F_FMEAN(a) ((a) / (float)R)
#define F_SQRT(a) sqrtf(a)

#define RED_INT(NAME, INIT64, INIT32, COMB, FIN)                          \
    RED_FN(NAME##_i64, int64_t, INIT64, M_ID, COMB, FIN)                   \
    RED_FN(NAME##_i32, int32_t, INIT32, M_ID, COMB, FIN)

RED_FN(sum_f32, float, 0.0f, M_ID, C_ADD, F_ID)
RED_INT(sum, 0, 0, C_ADD, F_ID)
RED_FN(mean_f32, float, 0.0f, M_ID, C_ADD, F_FMEAN)
RED_INT(mean, 0, 0, C_ADD, F_MEAN)
RED_FN(max_f32, float, -INFINITY, M_ID, C_MAX, F_ID)
RED_INT(max, INT64_MIN, INT32_MIN, C_MAX, F_ID)
RED_FN(min_f32, float, INFINITY, M_ID, C_MIN, F_ID)
RED_INT(min, INT64_MAX, INT32_MAX, C_MIN, F_ID)
RED_FN(prod_f32, float, 1.0f, M_ID, C_MUL, F_ID)
RED_INT(prod, 1, 1, C_MUL, F_ID)
RED_FN(sumsq_f32, float, 0.0f, M_SQ, C_ADD, F_ID)
RED_FN(l1_f32, float, 0.0f, M_ABS, C_ADD, F_ID)
RED_FN(l2_f32, float, 0.0f, M_SQ, C_ADD, F_SQRT)

/* log(sum(exp(x))) with the maximum subtracted first */
static void lse_f32(const void *x_, void *o_, int64_t outer, int64_t R, int64_t inner)
{
    const float *x = x_;
    float *o = o_;
    for (int64_t a = 0; a < outer; a++)
        for (int64_t j = 0; j < inner; j++) {
            const float *xa = x + a * R * inner + j;
            float m = -INFINITY, s = 0.0f;
            for (int64_t r = 0; r < R; r++)
                m = xa[r * inner] > m ? xa[r * inner] : m;
            for (int64_t r = 0; r < R && m != -INFINITY; r++)
                s += ipu_ew_expf(xa[r * inner] - m);
            o[a * inner + j] = m == -INFINITY ? m : m + logf(s);
        }
}

/* ArgMax / ArgMin: index along R of the first extreme, or of the last one
 * (select_last_index) when called with a negative inner. */
#define ARG_FN(NAME, T, BETTER)                                                               \
    static void NAME(const void *x_, void *o_, int64_t outer, int64_t R, int64_t inner)       \
    {                                                                                         \
        const T *x = x_;                                                                      \
        int64_t *o = o_;                                                                      \
        int last = inner < 0;                                                                 \
        inner = last ? -inner : inner;                                                        \
        for (int64_t a = 0; a < outer; a++)                                                   \
            for (int64_t j = 0; j < inner; j++) {                                             \
                const T *xa = x + a * R * inner + j;                                          \
                T best = xa[0];                                                               \
                int64_t bi = 0;                                                               \
                for (int64_t r = 1; r < R; r++) {                                             \
                    T v = xa[r * inner];                                                      \
                    if ((BETTER) || (last && v == best)) {                                    \
                        best = v;                                                             \
                        bi = r;                                                               \
                    }                                                                         \
                }                                                                             \
                o[a * inner + j] = bi;                                                        \
            }                                                                                 \
    }
ARG_FN(argmax_f32, float, v > best)
ARG_FN(argmax_i64, int64_t, v > best)
ARG_FN(argmax_i32, int32_t, v > best)
ARG_FN(argmin_f32, float, v < best)
ARG_FN(argmin_i64, int64_t, v < best)
ARG_FN(argmin_i32, int32_t, v < best)

/* ---- infer --------------------------------------------------------------- */

static ipu_status_t set_mask(const ipu_node_t *n, const int64_t *axes, size_t cnt, int rank,
                             unsigned *mask)
{
    *mask = 0;
    for (size_t i = 0; i < cnt; i++) {
        int a;
        ipu_status_t st = ipu_op_axis(n, axes[i], rank, &a);
        if (st != IPU_OK)
            return st;
        if (*mask & (1u << a))
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "axis %lld repeated",
                                (long long)axes[i]);
        *mask |= 1u << a;
    }
    return IPU_OK;
}

static ipu_status_t red_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const red_op_t *op = RED_OP(n);
    int from_input = op->axes_input && n->opset >= op->axes_input;
    ipu_status_t st = ipu_ew_check_arity(n, 1, from_input ? 2 : 1, 1, 1);
    if (st != IPU_OK)
        return st;
    const ipu_value_t *x = ipu_node_input(g, n, 0);
    int ti = ipu_ew_type_index(x->dtype);
    if (ti < 0 || ti > 2 || op->k[ti] == NULL)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "dtype %s not supported",
                            ipu_dtype_name(x->dtype));
    red_state_t s = {.keepdims = ipu_attr_int(n, "keepdims", 1) != 0};
    if (op->kind == R_ARG) {
        if ((st = ipu_op_axis(n, ipu_attr_int(n, "axis", 0), x->rank, &s.axis)) != IPU_OK)
            return st;
        if (x->rank == 0 || x->dims[s.axis] == 0)
            return ipu_op_error(IPU_ERR_SHAPE, n, "cannot take %s of an empty axis",
                                n->op_type);
        s.mask = 1u << s.axis;
        s.last = ipu_attr_int(n, "select_last_index", 0) != 0;
    } else {
        const int64_t *axes = NULL;
        size_t cnt = 0;
        if (from_input) {
            const ipu_value_t *a = ipu_node_input(g, n, 1);
            if (a && a->data == NULL)
                return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "axes input '%s' is computed at run "
                                    "time (data-dependent shapes are not supported)", a->name);
            if (a && a->dtype != IPU_DTYPE_INT64)
                return ipu_op_error(IPU_ERR_SHAPE, n, "axes must be int64");
            if (a) {
                axes = a->data;
                cnt = (size_t)ipu_shape_numel(a->rank, a->dims);
            }
            s.noop = cnt == 0 && ipu_attr_int(n, "noop_with_empty_axes", 0) != 0;
        } else {
            axes = ipu_attr_ints(n, "axes", &cnt);
        }
        if ((st = set_mask(n, axes, cnt, x->rank, &s.mask)) != IPU_OK)
            return st;
        if (cnt == 0 && !s.noop)
            s.mask = (1u << x->rank) - 1;
    }
    int64_t dims[IPU_MAX_RANK];
    int r = 0;
    for (int d = 0; d < x->rank; d++) {
        if (!(s.mask & (1u << d)))
            dims[r++] = x->dims[d];
        else if (s.keepdims)
            dims[r++] = 1;
    }
    red_state_t *p = malloc(sizeof(*p));
    if (p == NULL)
        return ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory");
    *p = s;
    n->state = p;
    ipu_value_set_shape(ipu_node_output(g, n, 0), op->kind == R_ARG ? IPU_DTYPE_INT64 : x->dtype,
                        r, dims);
    return IPU_OK;
}

/* ---- run ----------------------------------------------------------------- */

/* The input's dims merged into runs of reduced / kept axes (size-1 axes
 * dropped). fast: the runs are [kept] reduced [kept]. */
typedef struct red_plan {
    int ng;
    int64_t size[IPU_MAX_RANK];
    int red[IPU_MAX_RANK];
    int64_t outer, R, inner; /* when fast */
    int fast;
} red_plan_t;

static void make_plan(const ipu_tensor_t *x, unsigned mask, red_plan_t *p)
{
    p->ng = 0;
    for (int d = 0; d < x->rank; d++) {
        int red = (mask >> d) & 1;
        if (x->dims[d] == 1)
            continue;
        if (p->ng && p->red[p->ng - 1] == red) {
            p->size[p->ng - 1] *= x->dims[d];
        } else {
            p->size[p->ng] = x->dims[d];
            p->red[p->ng++] = red;
        }
    }
    int first_red = -1, n_red = 0;
    for (int i = 0; i < p->ng; i++)
        if (p->red[i]) {
            first_red = first_red < 0 ? i : first_red;
            n_red++;
        }
    p->fast = n_red <= 1;
    p->outer = 1;
    p->R = 1;
    p->inner = 1;
    if (!p->fast)
        return;
    for (int i = 0; i < p->ng; i++) {
        if (p->red[i])
            p->R = p->size[i];
        else if (first_red < 0 || i < first_red)
            p->outer *= p->size[i];
        else
            p->inner *= p->size[i];
    }
}

static size_t red_scratch(const ipu_graph_t *g, const ipu_node_t *n)
{
    const red_state_t *s = n->state;
    ipu_tensor_t x = ipu_value_tensor(g, n->inputs[0]);
    red_plan_t p;
    make_plan(&x, s->mask, &p);
    if (p.fast)
        return 0;
    int64_t R = 1;
    for (int i = 0; i < p.ng; i++)
        R *= p.red[i] ? p.size[i] : 1;
    return (size_t)R * ipu_dtype_size(x.dtype);
}

/* General axis sets: gather each output's inputs into scratch, reduce it. */
static ipu_status_t red_gather(const ipu_node_t *n, const red_plan_t *p, red_fn fn,
                               const ipu_tensor_t *x, void *o, ipu_kernel_ctx_t *ctx)
{
    size_t esz = ipu_dtype_size(x->dtype);
    int64_t stride[IPU_MAX_RANK], kdims[IPU_MAX_RANK], kst[IPU_MAX_RANK], rdims[IPU_MAX_RANK],
        rst[IPU_MAX_RANK];
    int nk = 0, nr = 0;
    int64_t R = 1, K = 1;
    for (int i = p->ng - 1; i >= 0; i--)
        stride[i] = i == p->ng - 1 ? 1 : stride[i + 1] * p->size[i + 1];
    for (int i = 0; i < p->ng; i++) {
        if (p->red[i]) {
            rdims[nr] = p->size[i];
            rst[nr++] = stride[i];
            R *= p->size[i];
        } else {
            kdims[nk] = p->size[i];
            kst[nk++] = stride[i];
            K *= p->size[i];
        }
    }
    if (ctx->scratch_bytes < (size_t)R * esz)
        return ipu_op_error(IPU_ERR_INTERNAL, n, "scratch too small");
    const char *xb = x->data;
    char *buf = ctx->scratch;
    int64_t kidx[IPU_MAX_RANK] = {0}, koff = 0;
    for (int64_t k = 0; k < K; k++) {
        int64_t ridx[IPU_MAX_RANK] = {0}, roff = 0;
        for (int64_t r = 0; r < R; r++) {
            memcpy(buf + (size_t)r * esz, xb + (size_t)(koff + roff) * esz, esz);
            for (int d = nr - 1; d >= 0; d--) {
                roff += rst[d];
                if (++ridx[d] < rdims[d])
                    break;
                roff -= rst[d] * rdims[d];
                ridx[d] = 0;
            }
        }
        fn(buf, (char *)o + (size_t)k * esz, 1, R, 1);
        for (int d = nk - 1; d >= 0; d--) {
            koff += kst[d];
            if (++kidx[d] < kdims[d])
                break;
            koff -= kst[d] * kdims[d];
            kidx[d] = 0;
        }
    }
    return IPU_OK;
}

static ipu_status_t red_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                            ipu_kernel_ctx_t *ctx)
{
    const red_op_t *op = RED_OP(n);
    const red_state_t *s = n->state;
    if (s->noop) {
        if (out[0].data != in[0].data)
            memcpy(out[0].data, in[0].data, ipu_tensor_nbytes(&in[0]));
        return IPU_OK;
    }
    red_fn fn = op->k[ipu_ew_type_index(in[0].dtype)];
    if (op->kind == R_ARG) {
        int64_t outer = ipu_shape_numel(s->axis, in[0].dims);
        int64_t inner = ipu_shape_numel(in[0].rank - s->axis - 1, in[0].dims + s->axis + 1);
        fn(in[0].data, out[0].data, outer, in[0].dims[s->axis], s->last ? -inner : inner);
        return IPU_OK;
    }
    red_plan_t p;
    make_plan(&in[0], s->mask, &p);
    if (ipu_tensor_numel(&out[0]) == 0)
        return IPU_OK;
    if (p.fast) {
        fn(in[0].data, out[0].data, p.outer, p.R, p.inner);
        return IPU_OK;
    }
    return red_gather(n, &p, fn, &in[0], out[0].data, ctx);
}

#define ENTRY(NAME, KIND, AXES_INPUT, ...)                                                  \
    {{"", NAME, 1, 17, 0, red_infer, red_scratch, red_run, ipu_op_free_state, NULL, NULL, NULL}, KIND, \
     AXES_INPUT, {__VA_ARGS__}}
#define K3(p) p##_f32, p##_i64, p##_i32

static const red_op_t ops[] = {
    ENTRY("ReduceSum", R_REDUCE, 13, K3(sum)),
    ENTRY("ReduceMean", R_REDUCE, 0, K3(mean)),
    ENTRY("ReduceMax", R_REDUCE, 0, K3(max)),
    ENTRY("ReduceMin", R_REDUCE, 0, K3(min)),
    ENTRY("ReduceProd", R_REDUCE, 0, K3(prod)),
    ENTRY("ReduceSumSquare", R_REDUCE, 0, sumsq_f32),
    ENTRY("ReduceL1", R_REDUCE, 0, l1_f32),
    ENTRY("ReduceL2", R_REDUCE, 0, l2_f32),
    ENTRY("ReduceLogSumExp", R_REDUCE, 0, lse_f32),
    ENTRY("ArgMax", R_ARG, 0, K3(argmax)),
    ENTRY("ArgMin", R_ARG, 0, K3(argmin)),
};

const ipu_op_t *const ipu_ops_reduce[] = {
    &ops[0].op, &ops[1].op, &ops[2].op, &ops[3].op, &ops[4].op, &ops[5].op,
    &ops[6].op, &ops[7].op, &ops[8].op, &ops[9].op, &ops[10].op, NULL,
};
