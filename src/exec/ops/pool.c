/* MaxPool-8, MaxPool-10, MaxPool-11, MaxPool-12, AveragePool-7,
 * AveragePool-10, AveragePool-11 (plus AveragePool-19's dilations),
 * GlobalAveragePool-1, GlobalMaxPool-1 (Operators.md), float32, 1-D to 3-D.
 *
 * kernel_shape, strides, dilations, pads, auto_pad and ceil_mode as in
 * window.h (a ceil-mode window that would start in the end padding is
 * dropped, as in PyTorch and onnxruntime). AveragePool divides by the taps
 * inside the input, or with count_include_pad by the taps inside the padded
 * input. MaxPool's optional Indices output (int64, flattened over N, C and
 * the spatial dims; storage_order 1 = column-major spatial, 1-D/2-D only) is
 * computed by a plain scalar loop; without it the pool runs row-vectorised.
 * The global pools reduce each plane with 8 partial sums / maxima (ew.c).
 * The opset differences (ceil_mode from 10, dilations from 10/19, Indices
 * from 8) are all optional attributes/outputs, so one entry per op serves
 * every opset up to 21. */
#include "exec/ops/registry.h"
#include "exec/ops/window.h"
#include "exec/ops/ew.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { POOL_MAX, POOL_AVG, POOL_GLOBAL_MAX, POOL_GLOBAL_AVG };

typedef struct pool_state {
    ipu_window_t w;
    int kind;
    int64_t planes;      /* N * C */
    int64_t isz, osz;    /* input and output plane sizes */
    int include_pad;     /* AveragePool count_include_pad */
    int storage_order;   /* MaxPool Indices layout */
} pool_state_t;

static int pool_kind(const ipu_node_t *n)
{
    if (strcmp(n->op_type, "MaxPool") == 0)
        return POOL_MAX;
    if (strcmp(n->op_type, "AveragePool") == 0)
        return POOL_AVG;
    if (strcmp(n->op_type, "GlobalMaxPool") == 0)
        return POOL_GLOBAL_MAX;
    return POOL_GLOBAL_AVG;
}

static ipu_status_t pool_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x = ipu_node_input(g, n, 0);
    ipu_value_t *y = ipu_node_output(g, n, 0), *ind = ipu_node_output(g, n, 1);
    int kind = pool_kind(n), global = kind == POOL_GLOBAL_MAX || kind == POOL_GLOBAL_AVG;
    if (x == NULL || y == NULL)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "needs input X and output Y");
    if (x->dtype != IPU_DTYPE_FLOAT)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "dtype %s is not supported (float only)",
                            ipu_dtype_name(x->dtype));
    if (x->rank < 3 || x->rank > 5)
        return ipu_op_error(x->rank < 3 ? IPU_ERR_SHAPE : IPU_ERR_UNSUPPORTED, n,
                            "X has rank %d (3 to 5 supported: N, C, 1 to 3 spatial dims)",
                            x->rank);
    int nd = x->rank - 2;
    int64_t k[3];
    if (global) {
        memcpy(k, x->dims + 2, (size_t)nd * sizeof(int64_t));
    } else {
        size_t kc;
        const int64_t *ks = ipu_attr_ints(n, "kernel_shape", &kc);
        if (ks == NULL || kc != (size_t)nd)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "kernel_shape needs %d values "
                                "(got %zu)", nd, kc);
        memcpy(k, ks, (size_t)nd * sizeof(int64_t));
    }
    pool_state_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory");
    s->kind = kind;
    s->include_pad = ipu_attr_int(n, "count_include_pad", 0) != 0;
    s->storage_order = (int)ipu_attr_int(n, "storage_order", 0);
    ipu_status_t st = IPU_OK;
    if (global) {
        for (int i = 0; i < IPU_WINDOW_MAX_DIMS; i++)
            s->w.in[i] = s->w.k[i] = s->w.s[i] = s->w.d[i] = s->w.out[i] = 1;
        for (int j = 0; j < nd; j++) {
            s->w.in[IPU_WINDOW_MAX_DIMS - nd + j] = x->dims[2 + j];
            if (x->dims[2 + j] < 1)
                st = ipu_op_error(IPU_ERR_SHAPE, n, "empty spatial dimension %d", j);
        }
        s->w.nd = nd;
    } else {
        st = ipu_window_init(n, nd, x->dims + 2, k, ipu_attr_int(n, "ceil_mode", 0) != 0, &s->w);
    }
    if (st == IPU_OK && ind && kind != POOL_MAX)
        st = ipu_op_error(IPU_ERR_INVALID_MODEL, n, "has a second output");
    if (st == IPU_OK && ind && (s->storage_order < 0 || s->storage_order > 1 ||
                                (s->storage_order == 1 && nd > 2)))
        st = ipu_op_error(IPU_ERR_UNSUPPORTED, n, "storage_order %d with %d spatial dims "
                          "(0, or 1 for 1-D/2-D, supported)", s->storage_order, nd);
    if (st != IPU_OK) {
        free(s);
        return st;
    }
    s->planes = x->dims[0] * x->dims[1];
    s->isz = ipu_window_in_size(&s->w);
    s->osz = ipu_window_out_size(&s->w);
    n->state = s;
    int64_t dims[IPU_MAX_RANK];
    dims[0] = x->dims[0];
    dims[1] = x->dims[1];
    for (int j = 0; j < nd; j++)
        dims[2 + j] = s->w.out[IPU_WINDOW_MAX_DIMS - nd + j];
    ipu_value_set_shape(y, IPU_DTYPE_FLOAT, x->rank, dims);
    if (ind)
        ipu_value_set_shape(ind, IPU_DTYPE_INT64, x->rank, dims);
    return IPU_OK;
}

static size_t pool_scratch(const ipu_graph_t *g, const ipu_node_t *n)
{
    const pool_state_t *s = n->state;
    /* AveragePool: the divisor's factor along the last dim, per output column */
    return s && s->kind == POOL_AVG ? (size_t)s->w.out[2] * sizeof(float) : 0;
}

/* MaxPool with Indices: scalar loop, first maximum wins (as PyTorch). */
static void maxpool_indices(const pool_state_t *s, const float *x, float *y, int64_t *ind)
{
    const ipu_window_t *w = &s->w;
    const int64_t D = w->in[0], H = w->in[1], W = w->in[2];
    for (int64_t p = 0; p < s->planes; p++) {
        const float *xp = x + p * s->isz;
        for (int64_t od = 0; od < w->out[0]; od++)
            for (int64_t oh = 0; oh < w->out[1]; oh++)
                for (int64_t ow = 0; ow < w->out[2]; ow++) {
                    float best = -INFINITY;
                    int64_t bi = -1;
                    for (int64_t td = 0; td < w->k[0]; td++) {
                        int64_t id = od * w->s[0] + td * w->d[0] - w->pb[0];
                        for (int64_t th = 0; th < w->k[1] && id >= 0 && id < D; th++) {
                            int64_t ih = oh * w->s[1] + th * w->d[1] - w->pb[1];
                            for (int64_t tw = 0; tw < w->k[2] && ih >= 0 && ih < H; tw++) {
                                int64_t iw = ow * w->s[2] + tw * w->d[2] - w->pb[2];
                                if (iw < 0 || iw >= W)
                                    continue;
                                int64_t at = (id * H + ih) * W + iw;
                                if (bi < 0 || xp[at] > best) {
                                    best = xp[at];
                                    bi = s->storage_order ? iw * H + ih : at;
                                }
                            }
                        }
                    }
                    *y++ = best;
                    *ind++ = bi < 0 ? -1 : p * s->isz + bi;
                }
    }
}

static void avgpool_divide(const pool_state_t *s, float *yp, float *cw)
{
    const ipu_window_t *w = &s->w;
    int64_t lo[3], hi[3];
    for (int i = 0; i < IPU_WINDOW_MAX_DIMS; i++) {
        lo[i] = s->include_pad ? -w->pb[i] : 0;
        hi[i] = s->include_pad ? w->in[i] + w->pe[i] : w->in[i];
    }
    for (int64_t ow = 0; ow < w->out[2]; ow++)
        cw[ow] = (float)ipu_window_count(w, 2, ow, lo[2], hi[2]);
    for (int64_t od = 0; od < w->out[0]; od++) {
        int64_t cd = ipu_window_count(w, 0, od, lo[0], hi[0]);
        for (int64_t oh = 0; oh < w->out[1]; oh++) {
            float cdh = (float)(cd * ipu_window_count(w, 1, oh, lo[1], hi[1]));
            float *row = yp + (od * w->out[1] + oh) * w->out[2];
            for (int64_t ow = 0; ow < w->out[2]; ow++) {
                float c = cdh * cw[ow];
                row[ow] = c > 0.0f ? row[ow] / c : 0.0f;
            }
        }
    }
}

static ipu_status_t pool_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                             ipu_kernel_ctx_t *ctx)
{
    const pool_state_t *s = n->state;
    const float *x = in[0].data;
    float *y = out[0].data;
    if (s->kind == POOL_MAX && n->n_outputs > 1 && out[1].data) {
        maxpool_indices(s, x, y, out[1].data);
        return IPU_OK;
    }
    if (s->kind == POOL_AVG && ctx->scratch_bytes < (size_t)s->w.out[2] * sizeof(float))
        return ipu_op_error(IPU_ERR_INTERNAL, n, "scratch too small");
    for (int64_t p = 0; p < s->planes; p++) {
        const float *xp = x + p * s->isz;
        float *yp = y + p * s->osz;
        switch (s->kind) {
        case POOL_GLOBAL_AVG:
            yp[0] = ipu_ew_sum_f32(xp, s->isz) / (float)s->isz;
            break;
        case POOL_GLOBAL_MAX:
            yp[0] = ipu_ew_max_f32(xp, s->isz);
            break;
        case POOL_MAX:
            ipu_row_fill(yp, s->osz, -INFINITY);
            ipu_window_plane(&s->w, IPU_WINDOW_MAX, NULL, xp, yp);
            break;
        default:
            memset(yp, 0, (size_t)s->osz * sizeof(float));
            ipu_window_plane(&s->w, IPU_WINDOW_SUM, NULL, xp, yp);
            avgpool_divide(s, yp, ctx->scratch);
            break;
        }
    }
    return IPU_OK;
}

#define POOL_OP(var, name, since)                                                    \
    static const ipu_op_t var = {                                                   \
        .domain = "", .op_type = name, .since_version = since, .until_version = 21, \
        .infer = pool_infer, .scratch = pool_scratch, .run = pool_run,              \
        .fini = ipu_op_free_state,                                                  \
    }
POOL_OP(maxpool_op, "MaxPool", 1);
POOL_OP(avgpool_op, "AveragePool", 1);
POOL_OP(gmaxpool_op, "GlobalMaxPool", 1);
POOL_OP(gavgpool_op, "GlobalAveragePool", 1);

const ipu_op_t *const ipu_ops_pool[] = {&maxpool_op, &avgpool_op, &gmaxpool_op, &gavgpool_op,
                                        NULL};
