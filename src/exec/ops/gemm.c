/* Gemm-7, Gemm-9, Gemm-11, Gemm-13 and MatMul-1, MatMul-9, MatMul-13
 * (Operators.md), float32, through OpenBLAS.
 *
 * Gemm: Y = alpha * op(A) @ op(B) + beta * C, C unidirectionally broadcast to
 * [M, N]; C is optional from Gemm-11 and accepted absent at every opset.
 * Versions 9 and 13 only added dtypes, so one entry serves opsets 7..21.
 *
 * MatMul: numpy.matmul semantics: 1-D operands are promoted (and the added
 * dimension removed from the result), batch dimensions broadcast. When B has
 * no batch (e.g. [B, T, C] @ [C, N]) A's batch is folded into the rows of a
 * single sgemm; otherwise one sgemm per batch matrix. */
#include "exec/ops/registry.h"
#include "exec/ops/window.h"

#include <cblas.h>
#include <string.h>

/* C[M, N] = alpha * op(A) @ op(B) + beta * C, row-major with leading
 * dimensions; vectors (M == 1 or N == 1) go to sgemv. beta == 0 ignores C's
 * previous contents. */
static void sgemm_rm(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                     const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                     float *C, int64_t ldc)
{
    if (M == 0 || N == 0)
        return;
    if (K == 0 || (M == 1 || N == 1)) {
        if (beta == 0.0f)
            for (int64_t i = 0; i < M; i++)
                memset(C + i * ldc, 0, (size_t)N * sizeof(float));
        else if (beta != 1.0f)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++)
                    C[i * ldc + j] *= beta;
        if (K == 0)
            return;
        beta = 1.0f;
    }
    if (M == 1) { /* C[0, :] += alpha * op(B)^T x, x = op(A)[0, :] */
        blasint incx = ta ? (blasint)lda : 1;
        if (tb) /* B is [N, K] */
            cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)N, (blasint)K, alpha, B,
                        (blasint)ldb, A, incx, beta, C, 1);
        else    /* B is [K, N] */
            cblas_sgemv(CblasRowMajor, CblasTrans, (blasint)K, (blasint)N, alpha, B,
                        (blasint)ldb, A, incx, beta, C, 1);
        return;
    }
    if (N == 1) { /* C[:, 0] += alpha * op(A) x, x = op(B)[:, 0] */
        blasint incx = tb ? 1 : (blasint)ldb;
        if (ta) /* A is [K, M] */
            cblas_sgemv(CblasRowMajor, CblasTrans, (blasint)K, (blasint)M, alpha, A,
                        (blasint)lda, B, incx, beta, C, (blasint)ldc);
        else    /* A is [M, K] */
            cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)M, (blasint)K, alpha, A,
                        (blasint)lda, B, incx, beta, C, (blasint)ldc);
        return;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (blasint)M, (blasint)N, (blasint)K, alpha, A, (blasint)lda, B, (blasint)ldb,
                beta, C, (blasint)ldc);
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
    return IPU_OK;
}

static ipu_status_t gemm_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                             ipu_kernel_ctx_t *ctx)
{
    const ipu_tensor_t *a = &in[0], *b = &in[1];
    const ipu_tensor_t *c = n->n_inputs > 2 && in[2].data ? &in[2] : NULL;
    int ta = ipu_attr_int(n, "transA", 0) != 0, tb = ipu_attr_int(n, "transB", 0) != 0;
    float alpha = ipu_attr_float(n, "alpha", 1.0f), beta = ipu_attr_float(n, "beta", 1.0f);
    int64_t M = out[0].dims[0], N = out[0].dims[1], K = a->dims[!ta];
    float *y = out[0].data;
    if (c == NULL || beta == 0.0f) {
        beta = 0.0f;
    } else { /* Y = broadcast(C), then sgemm scales it by beta */
        const float *cd = c->data;
        int64_t cr = c->rank == 2 ? c->dims[0] : 1, cc = c->rank >= 1 ? c->dims[c->rank - 1] : 1;
        for (int64_t i = 0; i < M; i++) {
            const float *crow = cd + (cr == 1 ? 0 : i) * cc;
            float *yrow = y + i * N;
            if (cc == N)
                memcpy(yrow, crow, (size_t)N * sizeof(float));
            else
                for (int64_t j = 0; j < N; j++)
                    yrow[j] = crow[0];
        }
    }
    sgemm_rm(ta, tb, M, N, K, alpha, a->data, a->dims[1], b->data, b->dims[1], beta, y, N);
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
    return IPU_OK;
}

static ipu_status_t matmul_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                               ipu_kernel_ctx_t *ctx)
{
    mm_geom_t m;
    ipu_status_t st = mm_geometry(n, in[0].rank, in[0].dims, in[1].rank, in[1].dims, &m);
    if (st != IPU_OK)
        return st;
    const float *a = in[0].data, *b = in[1].data;
    float *y = out[0].data;
    if (m.b_batch == 1) { /* B shared: fold A's batch into the rows, one sgemm */
        sgemm_rm(0, 0, m.a_batch * m.M, m.N, m.K, 1.0f, a, m.K, b, m.N, 0.0f, y, m.N);
        return IPU_OK;
    }
    int64_t idx[IPU_MAX_RANK] = {0}, aoff = 0, boff = 0;
    for (int64_t t = 0; t < m.batch; t++) {
        sgemm_rm(0, 0, m.M, m.N, m.K, 1.0f, a + aoff, m.K, b + boff, m.N, 0.0f,
                 y + t * m.M * m.N, m.N);
        for (int i = m.rank - 1; i >= 0; i--) { /* next batch index */
            aoff += m.astride[i];
            boff += m.bstride[i];
            if (++idx[i] < m.dims[i])
                break;
            aoff -= m.astride[i] * m.dims[i];
            boff -= m.bstride[i] * m.dims[i];
            idx[i] = 0;
        }
    }
    return IPU_OK;
}

static const ipu_op_t gemm_op = {
    .domain = "", .op_type = "Gemm", .since_version = 7, .until_version = 21,
    .infer = gemm_infer, .run = gemm_run,
};
static const ipu_op_t matmul_op = {
    .domain = "", .op_type = "MatMul", .since_version = 1, .until_version = 21,
    .infer = matmul_infer, .run = matmul_run,
};

const ipu_op_t *const ipu_ops_gemm[] = {&gemm_op, &matmul_op, NULL};
