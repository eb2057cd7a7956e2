/* Gemm-7, Gemm-9, Gemm-11, Gemm-13 and MatMul-1, MatMul-9, MatMul-13
 * (Operators.md), float32, on oneDNN's matmul primitive (exec/onednn.h),
 * made once at infer for the node's shapes.
 *
 * Gemm: Y = alpha * op(A) @ op(B) + beta * C, C unidirectionally broadcast to
 * [M, N]; C is optional from Gemm-11 and accepted absent at every opset.
 * Versions 9 and 13 only added dtypes, so one entry serves opsets 7..21.
 * op(A), op(B) are strided views (no transposed copy); with alpha = beta = 1
 * C is the primitive's bias, otherwise Y is filled with C and the primitive
 * computes alpha * op(A) @ op(B) + beta * Y (output scale and sum post-op).
 *
 * MatMul: numpy.matmul semantics: 1-D operands are promoted (and the added
 * dimension removed from the result), batch dimensions broadcast. When B has
 * no batch (e.g. [B, T, C] @ [C, N]) A's batch is folded into the rows of a
 * single 2-D matmul; otherwise one batched matmul whose broadcast batch
 * dimensions have size 1. Empty products (M, N or K = 0) need no primitive.
 *
 * Both: a constant B is taken in the layout the primitive prefers,
 * reordered when a device loads the stage (load()), a copy kept beside the
 * constant and charged to the stage's weights (held()). graph/fuse.c may
 * fold the element-wise work after the node into it (graph/fuse.h, read by
 * fused.h): post-ops of the primitive, a fused residual copied into Y
 * before the run and added by a sum post-op. */
#include "exec/ops/fused.h"
#include "exec/ops/registry.h"
#include "exec/onednn.h"

#include <stdlib.h>
#include <string.h>

typedef struct mm_state {
    ipu_dnn_t *p;    /* NULL when the product is empty */
    int fill_c;      /* Gemm: Y = broadcast(C) before the primitive */
    int c_bias;      /* Gemm: C is the primitive's bias */
    float beta;      /* Gemm, empty K: Y = beta * C */
} mm_state_t;

static void mm_fini(ipu_node_t *n)
{
    mm_state_t *s = n->state;
    if (s)
        ipu_dnn_free(s->p);
    free(s);
    n->state = NULL;
}

static size_t mm_scratch(const ipu_graph_t *g, const ipu_node_t *n)
{
    const mm_state_t *s = n->state;
    return s ? ipu_dnn_scratch(s->p) : 0;
}

static ipu_status_t mm_load(const ipu_graph_t *g, const ipu_node_t *n)
{
    const mm_state_t *s = n->state;
    const ipu_value_t *b = ipu_node_input(g, n, 1);
    return s && b && b->data ? ipu_dnn_load_weights(n, s->p, b->data) : IPU_OK;
}

static size_t mm_held(const ipu_graph_t *g, const ipu_node_t *n)
{
    const mm_state_t *s = n->state;
    return s ? ipu_dnn_weights_held(s->p) : 0;
}

static int mm_inplace(const ipu_node_t *n)
{
    const mm_state_t *s = n->state;
    return s && !s->fill_c && ipu_dnn_sums_in_place(s->p) ? ipu_fused_residual_input(n) : -1;
}

/* Run the primitive with the node's fused operands. */
static ipu_status_t mm_run_dnn(const ipu_node_t *n, const mm_state_t *s, const ipu_tensor_t *in,
                               const float *bias, float *y, const ipu_kernel_ctx_t *ctx)
{
    return ipu_fused_run(n, s->p, in, bias, y, ctx);
}

static void shape2(ipu_dnn_shape_t *s, int64_t r, int64_t c, int trans)
{
    s->rank = 2;
    s->dims[0] = r;
    s->dims[1] = c;
    s->strides[0] = trans ? 1 : c;
    s->strides[1] = trans ? r : 1;
}

static ipu_status_t check_float(const ipu_node_t *n, const ipu_value_t *v, const char *what)
{
    if (v->dtype != IPU_DTYPE_FLOAT)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "%s has dtype %s, not supported (float only)",
                            what, ipu_dtype_name(v->dtype));
    return IPU_OK;
}

/* ---- Gemm ---------------------------------------------------------------- */

static ipu_status_t gemm_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *a = ipu_node_input(g, n, 0), *b = ipu_node_input(g, n, 1);
    const ipu_value_t *c = ipu_node_input(g, n, 2);
    ipu_value_t *y = ipu_node_output(g, n, 0);
    ipu_status_t st;
    if (a == NULL || b == NULL || y == NULL)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "needs inputs A, B and output Y");
    if ((st = check_float(n, a, "A")) != IPU_OK || (st = check_float(n, b, "B")) != IPU_OK ||
        (c && (st = check_float(n, c, "C")) != IPU_OK))
        return st;
    if (a->rank != 2 || b->rank != 2)
        return ipu_op_error(IPU_ERR_SHAPE, n, "A and B must be matrices (ranks %d, %d)",
                            a->rank, b->rank);
    int ta = ipu_attr_int(n, "transA", 0) != 0, tb = ipu_attr_int(n, "transB", 0) != 0;
    int64_t M = a->dims[ta], K = a->dims[!ta], Kb = b->dims[tb], N = b->dims[!tb];
    if (K != Kb)
        return ipu_op_error(IPU_ERR_SHAPE, n, "inner dimensions differ: op(A) is [%lld,%lld],"
                            " op(B) is [%lld,%lld]", (long long)M, (long long)K,
                            (long long)Kb, (long long)N);
    if (c) {
        int ok = c->rank <= 2;
        const int64_t want[2] = {M, N};
        for (int i = 0; ok && i < c->rank; i++) {
            int64_t d = c->dims[i], t = want[2 - c->rank + i];
            ok = d == t || d == 1;
        }
        if (!ok)
            return ipu_op_error(IPU_ERR_SHAPE, n, "C (rank %d) does not broadcast to "
                                "[%lld,%lld]", c->rank, (long long)M, (long long)N);
    }
    ipu_value_set_shape(y, IPU_DTYPE_FLOAT, 2, (int64_t[]){M, N});
    mm_state_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory");
    n->state = s;
    float alpha = ipu_attr_float(n, "alpha", 1.0f), beta = ipu_attr_float(n, "beta", 1.0f);
    int use_c = c != NULL && beta != 0.0f;
    s->beta = use_c ? beta : 0.0f;
    if (M == 0 || N == 0 || K == 0)
        return IPU_OK;
    ipu_dnn_matmul_desc_t d = {.alpha = alpha, .const_b = b->data != NULL};
    if ((st = ipu_fused_post(g, n, y, 1, 2, 1, &d.post)) != IPU_OK)
        return st;
    shape2(&d.a, M, K, ta);
    shape2(&d.b, K, N, tb);
    shape2(&d.y, M, N, 0);
    if (use_c && alpha == 1.0f && beta == 1.0f) { /* C as the bias, if oneDNN takes it */
        d.has_bias = 1;
        shape2(&d.bias, c->rank == 2 ? c->dims[0] : 1, c->rank >= 1 ? c->dims[c->rank - 1] : 1, 0);
        if ((st = ipu_dnn_matmul(n, &d, &s->p)) == IPU_OK) {
            s->c_bias = 1;
            return IPU_OK;
        }
        if (ipu_fused_residual_input(n) >= 0) /* Y cannot hold both C and the residual */
            return st;
        d.has_bias = 0;
    }
    s->fill_c = use_c;
    d.sum = use_c ? beta : 0.0f;
    return ipu_dnn_matmul(n, &d, &s->p);
}

static ipu_status_t gemm_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                             ipu_kernel_ctx_t *ctx)
{
    const mm_state_t *s = n->state;
    const ipu_tensor_t *c = n->n_inputs > 2 && n->inputs[2] >= 0 && in[2].data ? &in[2] : NULL;
    int64_t M = out[0].dims[0], N = out[0].dims[1];
    float *y = out[0].data;
    if (s->c_bias)
        return mm_run_dnn(n, s, in, c->data, y, ctx);
    if (s->fill_c || (s->p == NULL && s->beta != 0.0f)) { /* Y = broadcast(C) */
        const float *cd = c->data;
        int64_t cr = c->rank == 2 ? c->dims[0] : 1, cc = c->rank >= 1 ? c->dims[c->rank - 1] : 1;
        for (int64_t i = 0; i < M; i++) {
            const float *crow = cd + (cr == 1 ? 0 : i) * cc;
            float *yrow = y + i * N;
            for (int64_t j = 0; j < N; j++)
                yrow[j] = crow[cc == N ? j : 0];
        }
    }
    if (s->p)
        return mm_run_dnn(n, s, in, NULL, y, ctx);
    /* an empty product: Y = beta * C, or 0 */
    for (int64_t i = 0; i < M * N; i++)
        y[i] = s->beta != 0.0f ? s->beta * y[i] : 0.0f;
    return IPU_OK;
}

/* ---- MatMul -------------------------------------------------------------- */

typedef struct mm_geom {
    int64_t M, N, K;
    int rank;                        /* output batch rank */
    int64_t dims[IPU_MAX_RANK];      /* output batch dims */
    int64_t astride[IPU_MAX_RANK];   /* A/B matrix offsets per batch index (0: broadcast) */
    int64_t bstride[IPU_MAX_RANK];
    int64_t batch, a_batch, b_batch; /* element counts of the batch shapes */
} mm_geom_t;

static ipu_status_t mm_geometry(const ipu_node_t *n, int ra, const int64_t *a, int rb,
                                const int64_t *b, mm_geom_t *m)
{
    if (ra < 1 || rb < 1)
        return ipu_op_error(IPU_ERR_SHAPE, n, "operands must have rank >= 1 (got %d, %d)",
                            ra, rb);
    int ba = ra >= 2 ? ra - 2 : 0, bb = rb >= 2 ? rb - 2 : 0;
    m->M = ra >= 2 ? a[ra - 2] : 1;
    m->K = a[ra - 1];
    int64_t kb = rb >= 2 ? b[rb - 2] : b[0];
    m->N = rb >= 2 ? b[rb - 1] : 1;
    if (m->K != kb)
        return ipu_op_error(IPU_ERR_SHAPE, n, "inner dimensions differ: A has %lld columns, "
                            "B has %lld rows", (long long)m->K, (long long)kb);
    ipu_status_t st = ipu_op_broadcast(n, ba, a, bb, b, &m->rank, m->dims);
    if (st != IPU_OK)
        return st;
    m->a_batch = ipu_shape_numel(ba, a);
    m->b_batch = ipu_shape_numel(bb, b);
    m->batch = ipu_shape_numel(m->rank, m->dims);
    int64_t sa = m->M * m->K, sb = m->K * m->N;
    for (int i = m->rank - 1; i >= 0; i--) {
        int ia = i - (m->rank - ba), ib = i - (m->rank - bb);
        m->astride[i] = ia >= 0 && a[ia] != 1 ? sa : 0;
        m->bstride[i] = ib >= 0 && b[ib] != 1 ? sb : 0;
        if (ia >= 0)
            sa *= a[ia];
        if (ib >= 0)
            sb *= b[ib];
    }
    return IPU_OK;
}

static ipu_status_t matmul_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *a = ipu_node_input(g, n, 0), *b = ipu_node_input(g, n, 1);
    ipu_value_t *y = ipu_node_output(g, n, 0);
    ipu_status_t st;
    mm_geom_t m;
    if (a == NULL || b == NULL || y == NULL)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "needs inputs A, B and output Y");
    if ((st = check_float(n, a, "A")) != IPU_OK || (st = check_float(n, b, "B")) != IPU_OK ||
        (st = mm_geometry(n, a->rank, a->dims, b->rank, b->dims, &m)) != IPU_OK)
        return st;
    int64_t dims[IPU_MAX_RANK];
    int r = m.rank;
    memcpy(dims, m.dims, (size_t)r * sizeof(int64_t));
    if (a->rank >= 2)
        dims[r++] = m.M;
    if (b->rank >= 2)
        dims[r++] = m.N;
    ipu_value_set_shape(y, IPU_DTYPE_FLOAT, r, dims);
    mm_state_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory");
    n->state = s;
    if (m.M == 0 || m.N == 0 || m.K == 0 || m.batch == 0)
        return IPU_OK;
    ipu_dnn_matmul_desc_t d = {.alpha = 1.0f, .const_b = b->data != NULL};
    int fold = m.b_batch == 1, rk = m.rank + 2;
    /* fused post-ops are along Y's last axis; the destination is Y folded
     * to 2-D or Y with its batch dims */
    if ((st = ipu_fused_post(g, n, y, y->rank - 1, fold ? 2 : rk, fold ? 1 : rk - 1, &d.post)) !=
        IPU_OK)
        return st;
    if (fold) { /* B shared: A's batch folded into the rows */
        shape2(&d.a, m.a_batch * m.M, m.K, 0);
        shape2(&d.b, m.K, m.N, 0);
        shape2(&d.y, m.a_batch * m.M, m.N, 0);
        return ipu_dnn_matmul(n, &d, &s->p);
    }
    d.a.rank = d.b.rank = d.y.rank = rk;
    for (int i = 0; i < m.rank; i++) {
        d.a.dims[i] = m.astride[i] ? m.dims[i] : 1;
        d.b.dims[i] = m.bstride[i] ? m.dims[i] : 1;
        d.y.dims[i] = m.dims[i];
    }
    d.a.dims[rk - 2] = d.y.dims[rk - 2] = m.M;
    d.a.dims[rk - 1] = d.b.dims[rk - 2] = m.K;
    d.b.dims[rk - 1] = d.y.dims[rk - 1] = m.N;
    ipu_dnn_shape_dense(&d.a);
    ipu_dnn_shape_dense(&d.b);
    ipu_dnn_shape_dense(&d.y);
    return ipu_dnn_matmul(n, &d, &s->p);
}

static ipu_status_t matmul_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                               ipu_kernel_ctx_t *ctx)
{
    const mm_state_t *s = n->state;
    if (s->p)
        return mm_run_dnn(n, s, in, NULL, out[0].data, ctx);
    size_t bytes = (size_t)ipu_shape_numel(out[0].rank, out[0].dims) * sizeof(float);
    if (bytes)
        memset(out[0].data, 0, bytes);
    return IPU_OK;
}

static const ipu_op_t gemm_op = {
    .domain = "", .op_type = "Gemm", .since_version = 7, .until_version = 21,
    .flags = IPU_OP_HELD_REPLACES_INPUT1, .infer = gemm_infer, .scratch = mm_scratch, .run = gemm_run, .load = mm_load,
    .held = mm_held, .fini = mm_fini, .inplace = mm_inplace,
};
static const ipu_op_t matmul_op = {
    .domain = "", .op_type = "MatMul", .since_version = 1, .until_version = 21,
    .flags = IPU_OP_HELD_REPLACES_INPUT1, .infer = matmul_infer, .scratch = mm_scratch, .run = matmul_run, .load = mm_load,
    .held = mm_held, .fini = mm_fini, .inplace = mm_inplace,
};

const ipu_op_t *const ipu_ops_gemm[] = {&gemm_op, &matmul_op, NULL};
