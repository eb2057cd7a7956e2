/* Pad-2 (pads, value attributes) and Pad-11/13 (pads input, optional
 * constant_value input), modes constant, reflect and edge, per Operators.md.
 * Negative pads crop. The pads must be constant at inference. Constant mode
 * fills the output and copies the interior as one strided copy; reflect and
 * edge map each output index to its source index per axis (maps in scratch).
 * Dtype-generic. */
#include "exec/ops/movement.h"
#include "exec/ops/registry.h"

#include <stdlib.h>
#include <string.h>

enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE };

typedef struct pad_state {
    int mode;
    int64_t begin[IPU_MAX_RANK], end[IPU_MAX_RANK];
} pad_state_t;

static ipu_status_t pad_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x;
    int64_t pads[2 * IPU_MAX_RANK], dims[IPU_MAX_RANK];
    int cnt = 0, mode;
    size_t es;
    ipu_status_t st;
    if ((st = ipu_mv_data_input(g, n, &x, &es)) != IPU_OK)
        return st;
    const char *m = ipu_attr_string(n, "mode", "constant");
    if (strcmp(m, "constant") == 0)
        mode = PAD_CONSTANT;
    else if (strcmp(m, "reflect") == 0)
        mode = PAD_REFLECT;
    else if (strcmp(m, "edge") == 0)
        mode = PAD_EDGE;
    else
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "mode '%s' is not supported", m);
    if (n->opset < 11) {
        size_t c;
        const int64_t *a = ipu_attr_ints(n, "pads", &c);
        if (a == NULL)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "attribute 'pads' is required");
        cnt = (int)(c <= 2 * IPU_MAX_RANK ? c : 2 * IPU_MAX_RANK + 1);
        memcpy(pads, a, (size_t)(cnt <= 2 * IPU_MAX_RANK ? cnt : 0) * sizeof(int64_t));
    } else {
        const ipu_value_t *cv = ipu_node_input(g, n, 2);
        if ((st = ipu_mv_input_ints(g, n, 1, "pads", pads, 2 * IPU_MAX_RANK, &cnt)) != IPU_OK)
            return st;
        if (cv && (cv->dtype != x->dtype || ipu_shape_numel(cv->rank, cv->dims) != 1))
            return ipu_op_error(IPU_ERR_SHAPE, n, "constant_value must be one %s element",
                                ipu_dtype_name(x->dtype));
    }
    if (cnt != 2 * x->rank)
        return ipu_op_error(IPU_ERR_SHAPE, n, "pads has %d entries for an input of rank %d", cnt,
                            x->rank);
    for (int d = 0; d < x->rank; d++) {
        dims[d] = x->dims[d] + pads[d] + pads[d + x->rank];
        if (dims[d] < 0)
            return ipu_op_error(IPU_ERR_SHAPE, n, "pads make dimension %d negative", d);
        if (mode != PAD_CONSTANT && x->dims[d] == 0 && dims[d] > 0)
            return ipu_op_error(IPU_ERR_SHAPE, n, "cannot %s-pad the empty dimension %d", m, d);
    }
    pad_state_t *s = malloc(sizeof(*s));
    if (s == NULL)
        return ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory");
    s->mode = mode;
    for (int d = 0; d < x->rank; d++) {
        s->begin[d] = pads[d];
        s->end[d] = pads[d + x->rank];
    }
    n->state = s;
    return ipu_mv_set_output(g, n, 0, x->dtype, x->rank, dims);
}

/* Bytes of the per-axis index maps of reflect/edge. */
static size_t pad_scratch_bytes(int rank, const int64_t *dims)
{
    int64_t total = 0;
    for (int d = 0; d < rank; d++)
        total += dims[d];
    return (size_t)total * sizeof(int64_t);
}

static size_t pad_scratch(const ipu_graph_t *g, const ipu_node_t *n)
{
    const pad_state_t *s = n->state;
    const ipu_value_t *y = ipu_node_output(g, n, 0);
    if (s == NULL || s->mode == PAD_CONSTANT || y == NULL)
        return 0;
    return pad_scratch_bytes(y->rank, y->dims);
}

static ipu_status_t pad_constant(const ipu_node_t *n, const pad_state_t *s, const ipu_tensor_t *in,
                                 ipu_tensor_t *out)
{
    const ipu_tensor_t *x = &in[0];
    size_t es = ipu_dtype_size(x->dtype);
    unsigned char value[16] = {0};
    int64_t xs[IPU_MAX_RANK], ys[IPU_MAX_RANK], cnt[IPU_MAX_RANK];
    char *dst = out[0].data;
    const char *src = x->data;
    if (n->opset < 11)
        ipu_dtype_set_f64(x->dtype, value, 0, ipu_attr_float(n, "value", 0.0f));
    else if (n->n_inputs > 2 && in[2].data)
        memcpy(value, in[2].data, es);
    ipu_mv_fill(dst, (size_t)ipu_tensor_numel(&out[0]), value, es);
    ipu_mv_dense_strides(x->rank, x->dims, es, xs);
    ipu_mv_dense_strides(out[0].rank, out[0].dims, es, ys);
    for (int d = 0; d < x->rank; d++) {
        int64_t b = s->begin[d], e = s->end[d];
        cnt[d] = x->dims[d] + (b < 0 ? b : 0) + (e < 0 ? e : 0);
        if (cnt[d] <= 0)
            return IPU_OK;
        if (b < 0)
            src -= b * xs[d];
        else
            dst += b * ys[d];
    }
    ipu_mv_copy(1, dst, ys, src, xs, x->rank, cnt, es);
    return IPU_OK;
}

/* Source index of output index o along an axis of size dim padded by b. */
static int64_t map_index(int mode, int64_t o, int64_t b, int64_t dim)
{
    int64_t i = o - b;
    if (mode == PAD_EDGE || dim == 1)
        return i < 0 ? 0 : i >= dim ? dim - 1 : i;
    int64_t p = 2 * (dim - 1); /* reflect, repeated as numpy.pad does */
    i %= p;
    if (i < 0)
        i += p;
    return i < dim ? i : p - i;
}

static ipu_status_t pad_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                            ipu_kernel_ctx_t *ctx)
{
    const pad_state_t *s = n->state;
    const ipu_tensor_t *x = &in[0], *y = &out[0];
    if (s == NULL)
        return ipu_op_error(IPU_ERR_INTERNAL, n, "run before infer");
    if (s->mode == PAD_CONSTANT)
        return pad_constant(n, s, in, out);
    int r = y->rank;
    size_t es = ipu_dtype_size(x->dtype);
    int64_t *map[IPU_MAX_RANK], xs[IPU_MAX_RANK], pos[IPU_MAX_RANK] = {0};
    int64_t *m = ctx->scratch;
    if (ipu_tensor_numel(y) == 0)
        return IPU_OK;
    if (r == 0) {
        memcpy(y->data, x->data, es);
        return IPU_OK;
    }
    if (m == NULL || ctx->scratch_bytes < pad_scratch_bytes(r, y->dims))
        return ipu_op_error(IPU_ERR_INTERNAL, n, "scratch buffer missing");
    ipu_mv_dense_strides(r, x->dims, es, xs);
    for (int d = 0; d < r; d++) { /* byte offset into x of each output index */
        map[d] = m;
        for (int64_t o = 0; o < y->dims[d]; o++)
            m[o] = map_index(s->mode, o, s->begin[d], x->dims[d]) * xs[d];
        m += y->dims[d];
    }
    char *dst = y->data;
    const char *src = x->data;
    int64_t last = y->dims[r - 1];
    for (;;) {
        int64_t off = 0;
        for (int d = 0; d < r - 1; d++)
            off += map[d][pos[d]];
        for (int64_t o = 0; o < last; o++, dst += es)
            memcpy(dst, src + off + map[r - 1][o], es);
        int d = r - 2;
        for (; d >= 0; d--) {
            if (++pos[d] < y->dims[d])
                break;
            pos[d] = 0;
        }
        if (d < 0)
            return IPU_OK;
    }
}

IPU_MV_OP(Pad, 2, 17, 0, pad_infer, pad_scratch, pad_run, ipu_op_free_state)

const ipu_op_t *const ipu_ops_pad[] = {&op_Pad, NULL};
