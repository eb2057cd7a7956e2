/* Slice-1 (starts/ends/axes attributes) and Slice-10/11/13 (inputs starts,
 * ends, axes, steps), per Operators.md: negative indices count from the end,
 * starts/ends are clamped (so INT64_MAX / INT64_MIN style ends work), negative
 * steps walk backwards. Starts/ends/axes/steps must be constant at inference.
 * Dtype-generic: one strided copy (ipu_mv_copy) from the computed view. */
#include "exec/ops/movement.h"
#include "exec/ops/registry.h"

#include <stdlib.h>

typedef struct slice_state {
    int64_t start[IPU_MAX_RANK]; /* first element per axis */
    int64_t step[IPU_MAX_RANK];
} slice_state_t;

/* Parameters list (starts, ends, axes, steps) as given by the node. */
static ipu_status_t read_params(const ipu_graph_t *g, const ipu_node_t *n, int64_t p[4][IPU_MAX_RANK],
                                int cnt[4])
{
    static const char *const names[4] = {"starts", "ends", "axes", "steps"};
    ipu_status_t st;
    for (int k = 0; k < 4; k++) {
        cnt[k] = -1; /* absent */
        if (n->opset < 10) {
            size_t c;
            const int64_t *a = k < 3 ? ipu_attr_ints(n, names[k], &c) : NULL;
            if (a == NULL)
                continue;
            if (c > IPU_MAX_RANK)
                return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "'%s' has %zu entries, at most %d "
                                    "supported", names[k], c, IPU_MAX_RANK);
            for (size_t i = 0; i < c; i++)
                p[k][i] = a[i];
            cnt[k] = (int)c;
        } else if (ipu_node_input(g, n, k + 1) != NULL) {
            if ((st = ipu_mv_input_ints(g, n, k + 1, names[k], p[k], IPU_MAX_RANK, &cnt[k])) != IPU_OK)
                return st;
        }
    }
    if (cnt[0] < 0 || cnt[1] < 0)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "'starts' and 'ends' are required");
    for (int k = 1; k < 4; k++)
        if (cnt[k] >= 0 && cnt[k] != cnt[0])
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "'%s' has %d entries, 'starts' has %d",
                                names[k], cnt[k], cnt[0]);
    return IPU_OK;
}

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static ipu_status_t slice_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x;
    int64_t p[4][IPU_MAX_RANK], dims[IPU_MAX_RANK];
    int cnt[4], ax[IPU_MAX_RANK];
    size_t es;
    ipu_status_t st;
    if ((st = ipu_mv_data_input(g, n, &x, &es)) != IPU_OK ||
        (st = read_params(g, n, p, cnt)) != IPU_OK)
        return st;
    if (cnt[2] < 0) { /* default axes 0 .. len-1 */
        if (cnt[0] > x->rank)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "%d starts for rank %d", cnt[0], x->rank);
        for (int i = 0; i < cnt[0]; i++)
            p[2][i] = i;
    }
    if ((st = ipu_mv_axes(n, p[2], cnt[0], x->rank, ax)) != IPU_OK)
        return st;
    slice_state_t *s = malloc(sizeof(*s));
    if (s == NULL)
        return ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory");
    for (int d = 0; d < x->rank; d++) {
        s->start[d] = 0;
        s->step[d] = 1;
        dims[d] = x->dims[d];
    }
    for (int i = 0; i < cnt[0]; i++) {
        int d = ax[i];
        int64_t dim = x->dims[d], start = p[0][i], end = p[1][i];
        int64_t step = cnt[3] >= 0 ? p[3][i] : 1;
        if (step == 0) {
            free(s);
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "step of axis %d is 0", d);
        }
        if (start < 0)
            start += dim;
        if (end < 0)
            end += dim;
        if (step > 0) {
            start = clamp(start, 0, dim);
            end = clamp(end, 0, dim);
            dims[d] = end > start ? (end - start + step - 1) / step : 0;
        } else {
            start = clamp(start, 0, dim - 1);
            end = clamp(end, -1, dim - 1);
            dims[d] = start > end ? (start - end - step - 1) / -step : 0;
        }
        s->start[d] = start;
        s->step[d] = step;
    }
    n->state = s;
    return ipu_mv_set_output(g, n, 0, x->dtype, x->rank, dims);
}

static ipu_status_t slice_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                              ipu_kernel_ctx_t *ctx)
{
    const slice_state_t *s = n->state;
    size_t es = ipu_dtype_size(in[0].dtype);
    int64_t istr[IPU_MAX_RANK], sstr[IPU_MAX_RANK], dstr[IPU_MAX_RANK];
    if (s == NULL)
        return ipu_op_error(IPU_ERR_INTERNAL, n, "run before infer");
    if (ipu_tensor_numel(&out[0]) == 0)
        return IPU_OK;
    ipu_mv_dense_strides(in[0].rank, in[0].dims, es, istr);
    ipu_mv_dense_strides(out[0].rank, out[0].dims, es, dstr);
    const char *src = in[0].data;
    for (int d = 0; d < in[0].rank; d++) {
        src += s->start[d] * istr[d];
        sstr[d] = istr[d] * s->step[d];
    }
    ipu_mv_copy(ctx->threads, out[0].data, dstr, src, sstr, out[0].rank, out[0].dims, es);
    return IPU_OK;
}

IPU_MV_OP(Slice, 1, 17, 0, slice_infer, NULL, slice_run, ipu_op_free_state)

const ipu_op_t *const ipu_ops_slice[] = {&op_Slice, NULL};
