/* Cast-6/9/13 and CastLike-15 (Operators.md): conversions between float,
 * double, float16, bfloat16, int8/16/32/64, uint8/16/32/64 and bool (C
 * conversion rules: float to int truncates toward zero, anything to bool is
 * "!= 0"; float16/bfloat16 round to nearest even). Strings are not
 * supported. */
#include "exec/ops/ew.h"
#include "exec/ops/registry.h"

#include <stdbool.h>

typedef void (*cast_fn)(void *o, const void *x, int64_t n);

#define CAST_FN(S, SN, D, DN)                                                        \
    IPU_EW_HOT static void cast_##SN##_##DN(void *o_, const void *x_, int64_t n)     \
    {                                                                                \
        D *restrict o = o_;                                                          \
        const S *restrict x = x_;                                                    \
        for (int64_t i = 0; i < n; i++)                                              \
            o[i] = (D)x[i];                                                          \
    }

/* The plain C types, in the order of c_index(); twice, because a macro
 * cannot expand itself (outer list: source type, inner list: destination). */
#define C_TYPES(X, ...) \
    X(__VA_ARGS__, float, f32) X(__VA_ARGS__, uint8_t, u8) X(__VA_ARGS__, int8_t, i8)      \
    X(__VA_ARGS__, uint16_t, u16) X(__VA_ARGS__, int16_t, i16)                             \
    X(__VA_ARGS__, int32_t, i32) X(__VA_ARGS__, int64_t, i64) X(__VA_ARGS__, bool, b8)     \
    X(__VA_ARGS__, double, f64) X(__VA_ARGS__, uint32_t, u32) X(__VA_ARGS__, uint64_t, u64)
#define C_TYPES_INNER(X, ...) \
    X(__VA_ARGS__, float, f32) X(__VA_ARGS__, uint8_t, u8) X(__VA_ARGS__, int8_t, i8)      \
    X(__VA_ARGS__, uint16_t, u16) X(__VA_ARGS__, int16_t, i16)                             \
    X(__VA_ARGS__, int32_t, i32) X(__VA_ARGS__, int64_t, i64) X(__VA_ARGS__, bool, b8)     \
    X(__VA_ARGS__, double, f64) X(__VA_ARGS__, uint32_t, u32) X(__VA_ARGS__, uint64_t, u64)

#define CAST_TO(S, SN, D, DN) CAST_FN(S, SN, D, DN)
#define CAST_FROM(_, S, SN) C_TYPES_INNER(CAST_TO, S, SN)
C_TYPES(CAST_FROM, _)

#define ROW_ENTRY(S, SN, D, DN) cast_##SN##_##DN,
#define ROW(_, S, SN) {C_TYPES_INNER(ROW_ENTRY, S, SN)},
static const cast_fn table[11][11] = {C_TYPES(ROW, _)};

static int c_index(ipu_dtype_t dt)
{
    static const ipu_dtype_t order[11] = {
        IPU_DTYPE_FLOAT, IPU_DTYPE_UINT8, IPU_DTYPE_INT8, IPU_DTYPE_UINT16, IPU_DTYPE_INT16,
        IPU_DTYPE_INT32, IPU_DTYPE_INT64, IPU_DTYPE_BOOL, IPU_DTYPE_DOUBLE, IPU_DTYPE_UINT32,
        IPU_DTYPE_UINT64};
    for (int i = 0; i < 11; i++)
        if (order[i] == dt)
            return i;
    return -1;
}

static int is_half(ipu_dtype_t dt)
{
    return dt == IPU_DTYPE_FLOAT16 || dt == IPU_DTYPE_BFLOAT16;
}

static int castable(ipu_dtype_t dt)
{
    return c_index(dt) >= 0 || is_half(dt);
}

static ipu_status_t cast_infer(ipu_graph_t *g, ipu_node_t *n)
{
    int like = strcmp(n->op_type, "CastLike") == 0;
    ipu_status_t st = ipu_ew_check_arity(n, 1 + like, 1 + like, 1 + like, 1);
    if (st != IPU_OK)
        return st;
    const ipu_value_t *x = ipu_node_input(g, n, 0);
    ipu_dtype_t to;
    if (like) {
        to = ipu_node_input(g, n, 1)->dtype;
    } else {
        if (ipu_attr_find(n, "to") == NULL)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "missing attribute 'to'");
        to = (ipu_dtype_t)ipu_attr_int(n, "to", 0);
    }
    if (!castable(x->dtype) || !castable(to))
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "cast from %s to %s not supported",
                            ipu_dtype_name(x->dtype), ipu_dtype_name(to));
    ipu_value_set_shape(ipu_node_output(g, n, 0), to, x->rank, x->dims);
    return IPU_OK;
}

static void half_to_f32(ipu_dtype_t dt, float *o, const uint16_t *x, int64_t cnt)
{
    for (int64_t i = 0; i < cnt; i++)
        o[i] = dt == IPU_DTYPE_FLOAT16 ? ipu_f16_to_f32(x[i]) : ipu_bf16_to_f32(x[i]);
}

static void f32_to_half(ipu_dtype_t dt, uint16_t *o, const float *x, int64_t cnt)
{
    for (int64_t i = 0; i < cnt; i++)
        o[i] = dt == IPU_DTYPE_FLOAT16 ? ipu_f32_to_f16(x[i]) : ipu_f32_to_bf16(x[i]);
}

static ipu_status_t cast_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                             ipu_kernel_ctx_t *ctx)
{
    ipu_dtype_t from = in[0].dtype, to = out[0].dtype;
    int64_t cnt = ipu_tensor_numel(&in[0]);
    if (from == to) {
        if (out[0].data != in[0].data)
            memcpy(out[0].data, in[0].data, ipu_tensor_nbytes(&in[0]));
        return IPU_OK;
    }
    if (!is_half(from) && !is_half(to)) {
        table[c_index(from)][c_index(to)](out[0].data, in[0].data, cnt);
        return IPU_OK;
    }
    /* through float, a block at a time */
    float buf[256];
    size_t isz = ipu_dtype_size(from), osz = ipu_dtype_size(to);
    for (int64_t i = 0; i < cnt; i += 256) {
        int64_t m = cnt - i < 256 ? cnt - i : 256;
        const char *src = (const char *)in[0].data + (size_t)i * isz;
        char *dst = (char *)out[0].data + (size_t)i * osz;
        if (is_half(from))
            half_to_f32(from, buf, (const uint16_t *)src, m);
        else
            table[c_index(from)][0](buf, src, m);
        if (is_half(to))
            f32_to_half(to, (uint16_t *)dst, buf, m);
        else
            table[0][c_index(to)](dst, buf, m);
    }
    return IPU_OK;
}

static const ipu_op_t cast_ops[] = {
    {"", "Cast", 6, 17, 0, cast_infer, NULL, cast_run, NULL, NULL, NULL, NULL},
    {"", "CastLike", 15, 17, 0, cast_infer, NULL, cast_run, NULL, NULL, NULL, NULL},
};

const ipu_op_t *const ipu_ops_cast[] = {&cast_ops[0], &cast_ops[1], NULL};
