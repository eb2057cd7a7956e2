/* MaxPool-8, MaxPool-10, MaxPool-11, MaxPool-12, AveragePool-7,
 * AveragePool-10, AveragePool-11 (plus AveragePool-19's dilations),
 * GlobalAveragePool-1, GlobalMaxPool-1 (Operators.md), float32, 1-D to 3-D.
 *
 * kernel_shape, strides, dilations, pads, auto_pad and ceil_mode as in
 * window.h (a ceil-mode window that would start in the end padding is
 * dropped, as in PyTorch and onnxruntime). AveragePool divides by the taps
 * inside the input, or with count_include_pad by the taps inside the padded
 * input (the explicit or auto pads, not ceil_mode's overhang past them, as
 * in PyTorch). The opset differences (ceil_mode from 10, dilations from
 * 10/19, Indices from 8) are all optional attributes/outputs, so one entry
 * per op serves every opset up to 21.
 *
 * Runs on oneDNN's pooling (exec/onednn.h), made at infer for the node's
 * shapes, with X and Y reordered to and from oneDNN's layout inside the op
 * unless the layout pass (dnn_chain.h) keeps them in it: a pool reading a
 * Conv's output is remade (adopt) to read it in the Conv's layout. A plain
 * loop over each window computes what oneDNN does not, or only with its
 * reference kernel (dilations; orders of magnitude slower): MaxPool's optional
 * Indices output (int64, flattened over N, C and the spatial dims;
 * storage_order 1 = column-major spatial, 1-D/2-D only), pads as wide as a
 * window, and count_include_pad where a ceil-mode window overhangs the end
 * padding (oneDNN would count the overhang). */
#include "exec/ops/dnn_chain.h"
#include "exec/ops/registry.h"
#include "exec/ops/window.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { POOL_MAX, POOL_AVG, POOL_GLOBAL_MAX, POOL_GLOBAL_AVG };

/* The taps of a window along one dim at one output position: [lo, hi)
 * inside the input (contiguous: the tap's input index grows with it), and
 * how many lie inside the padded input. */
typedef struct tap_range {
    int64_t lo, hi, padded;
} tap_range_t;

typedef struct pool_state {
    ipu_dnn_node_t dnn;   /* first (IPU_OP_DNN); its p NULL: pool_loop() runs */
    tap_range_t *taps[IPU_WINDOW_MAX_DIMS]; /* per dim, per output position (pool_loop) */
    ipu_dnn_pool_desc_t d; /* what the primitive was made from (adopt) */
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

/* s->d for oneDNN from s->w (X [N, C, ...]); 0 when oneDNN would not give
 * ONNX's result: a pad as wide as a window (a window wholly in padding), a
 * dilation past the input, or count_include_pad where the last window
 * overhangs the end padding. */
static int pool_dnn_desc(pool_state_t *s, int64_t N, int64_t C)
{
    const ipu_window_t *w = &s->w;
    ipu_dnn_pool_desc_t *d = &s->d;
    int avg = s->kind == POOL_AVG || s->kind == POOL_GLOBAL_AVG;
    d->nd = w->nd;
    d->N = N;
    d->C = C;
    d->alg = !avg ? IPU_DNN_POOL_MAX
             : s->include_pad ? IPU_DNN_POOL_AVG_INCLUDE_PAD : IPU_DNN_POOL_AVG_EXCLUDE_PAD;
    for (int j = 0; j < w->nd; j++) {
        int i = IPU_WINDOW_MAX_DIMS - w->nd + j; /* w holds the nd dims right-aligned */
        int64_t eff = (w->k[i] - 1) * w->d[i] + 1;
        /* the end padding the last window reaches: more than pe in ceil mode */
        int64_t reach = (w->out[i] - 1) * w->s[i] + eff - w->in[i] - w->pb[i];
        d->in[j] = w->in[i];
        d->k[j] = w->k[i];
        d->s[j] = w->s[i];
        d->d[j] = w->d[i];
        d->pb[j] = w->pb[i];
        d->pe[j] = reach > w->pe[i] ? reach : w->pe[i];
        d->out[j] = w->out[i];
        if (w->pb[i] >= eff || d->pe[j] >= eff || w->d[i] > w->in[i] ||
            (s->include_pad && reach > w->pe[i]))
            return 0;
    }
    return 1;
}

static ipu_status_t pool_adopt(const ipu_node_t *n, const ipu_dnn_t *like, ipu_dnn_t **out)
{
    const pool_state_t *s = n->state;
    return ipu_dnn_pool(n, &s->d, like, out);
}

static void pool_free(pool_state_t *s)
{
    if (s == NULL)
        return;
    ipu_dnn_free(s->dnn.p);
    free(s->taps[0]); /* one block for every dim */
    free(s);
}

static void pool_fini(ipu_node_t *n)
{
    pool_free(n->state);
    n->state = NULL;
}

/* s->taps from s->w: one block, out[0] + out[1] + out[2] ranges. */
static int pool_tap_ranges(pool_state_t *s)
{
    const ipu_window_t *w = &s->w;
    tap_range_t *r = malloc((size_t)(w->out[0] + w->out[1] + w->out[2]) * sizeof(*r));
    if (r == NULL)
        return 0;
    for (int i = 0; i < IPU_WINDOW_MAX_DIMS; i++) {
        s->taps[i] = r;
        for (int64_t o = 0; o < w->out[i]; o++, r++) {
            *r = (tap_range_t){0, 0, 0};
            for (int64_t t = 0, found = 0; t < w->k[i]; t++) {
                int64_t q = o * w->s[i] + t * w->d[i] - w->pb[i];
                if (q >= 0 && q < w->in[i]) {
                    r->lo = found++ ? r->lo : t;
                    r->hi = t + 1;
                }
                r->padded += q >= -w->pb[i] && q < w->in[i] + w->pe[i];
            }
        }
    }
    return 1;
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
    if (global) { /* a window of the whole plane */
        for (int i = 0; i < IPU_WINDOW_MAX_DIMS; i++) {
            s->w.in[i] = s->w.k[i] = s->w.s[i] = s->w.d[i] = s->w.out[i] = 1;
            s->w.pb[i] = s->w.pe[i] = 0;
        }
        for (int j = 0; j < nd; j++) {
            s->w.in[IPU_WINDOW_MAX_DIMS - nd + j] = s->w.k[IPU_WINDOW_MAX_DIMS - nd + j] =
                x->dims[2 + j];
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
    if (st == IPU_OK && !pool_tap_ranges(s))
        st = ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory");
    if (st != IPU_OK) {
        pool_free(s);
        return st;
    }
    s->planes = x->dims[0] * x->dims[1];
    s->isz = ipu_window_in_size(&s->w);
    s->osz = ipu_window_out_size(&s->w);
    s->dnn.res_slot = -1;
    s->dnn.adopt = pool_adopt;
    n->state = s;
    int64_t dims[IPU_MAX_RANK];
    dims[0] = x->dims[0];
    dims[1] = x->dims[1];
    for (int j = 0; j < nd; j++)
        dims[2 + j] = s->w.out[IPU_WINDOW_MAX_DIMS - nd + j];
    ipu_value_set_shape(y, IPU_DTYPE_FLOAT, x->rank, dims);
    if (ind)
        ipu_value_set_shape(ind, IPU_DTYPE_INT64, x->rank, dims);
    if (ind || s->planes == 0 || !pool_dnn_desc(s, x->dims[0], x->dims[1]))
        return IPU_OK; /* pool_loop() */
    st = ipu_dnn_pool(n, &s->d, NULL, &s->dnn.p);
    return st == IPU_ERR_UNSUPPORTED ? IPU_OK : st; /* no oneDNN kernel: pool_loop() */
}

static size_t pool_scratch(const ipu_graph_t *g, const ipu_node_t *n)
{
    const pool_state_t *s = n->state;
    return s ? ipu_dnn_scratch(s->dnn.p) : 0;
}

/* The pools as a plain loop over each output's window (what oneDNN does not
 * compute, or computes only with its reference kernel): MaxPool's first
 * maximum wins (as in PyTorch); ind (NULL for none) gets its flattened
 * index, -1 for a window wholly in padding. Taps outside the input are
 * skipped by s->taps' ranges, not tested one by one. */
static void pool_loop(const pool_state_t *s, const float *x, float *y, int64_t *ind)
{
    const ipu_window_t *w = &s->w;
    const int avg = s->kind == POOL_AVG || s->kind == POOL_GLOBAL_AVG;
    const int64_t in1 = w->in[1], in2 = w->in[2];
    for (int64_t p = 0; p < s->planes; p++) {
        const float *xp = x + p * s->isz;
        int64_t o = p * s->osz;
        for (int64_t o0 = 0; o0 < w->out[0]; o0++) {
            const tap_range_t *r0 = &s->taps[0][o0];
            for (int64_t o1 = 0; o1 < w->out[1]; o1++) {
                const tap_range_t *r1 = &s->taps[1][o1];
                for (int64_t o2 = 0; o2 < w->out[2]; o2++, o++) {
                    const tap_range_t *r2 = &s->taps[2][o2];
                    float best = -INFINITY, sum = 0.0f;
                    int64_t bi = -1;
                    for (int64_t t0 = r0->lo; t0 < r0->hi; t0++) {
                        int64_t q0 = o0 * w->s[0] + t0 * w->d[0] - w->pb[0];
                        for (int64_t t1 = r1->lo; t1 < r1->hi; t1++) {
                            int64_t row = (q0 * in1 + o1 * w->s[1] + t1 * w->d[1] - w->pb[1]) * in2;
                            for (int64_t t2 = r2->lo; t2 < r2->hi; t2++) {
                                int64_t at = row + o2 * w->s[2] + t2 * w->d[2] - w->pb[2];
                                float v = xp[at];
                                sum += v;
                                if (bi < 0 || v > best) {
                                    best = v;
                                    bi = at;
                                }
                            }
                        }
                    }
                    if (avg) {
                        int64_t c = s->include_pad ? r0->padded * r1->padded * r2->padded
                                                   : (r0->hi - r0->lo) * (r1->hi - r1->lo) *
                                                         (r2->hi - r2->lo);
                        y[o] = c > 0 ? sum / (float)c : 0.0f;
                    } else {
                        y[o] = best;
                    }
                    if (ind) { /* storage_order 1: 1-D/2-D, so at = ih * W + iw */
                        if (bi >= 0 && s->storage_order)
                            bi = bi % w->in[2] * w->in[1] + bi / w->in[2];
                        ind[o] = bi < 0 ? -1 : p * s->isz + bi;
                    }
                }
            }
        }
    }
}

static ipu_status_t pool_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                             ipu_kernel_ctx_t *ctx)
{
    const pool_state_t *s = n->state;
    if (s->dnn.p)
        return ipu_dnn_exec(n, s->dnn.p, in[0].data, NULL, out[0].data, ctx);
    pool_loop(s, in[0].data, out[0].data, n->n_outputs > 1 ? out[1].data : NULL);
    return IPU_OK;
}

#define POOL_OP(var, name, since)                                                    \
    static const ipu_op_t var = {                                                   \
        .domain = "", .op_type = name, .since_version = since, .until_version = 21, \
        .flags = IPU_OP_DNN, .infer = pool_infer, .scratch = pool_scratch,          \
        .run = pool_run, .fini = pool_fini,                                         \
    }
POOL_OP(maxpool_op, "MaxPool", 1);
POOL_OP(avgpool_op, "AveragePool", 1);
POOL_OP(gmaxpool_op, "GlobalMaxPool", 1);
POOL_OP(gavgpool_op, "GlobalAveragePool", 1);

const ipu_op_t *const ipu_ops_pool[] = {&maxpool_op, &avgpool_op, &gmaxpool_op, &gavgpool_op,
                                        NULL};
