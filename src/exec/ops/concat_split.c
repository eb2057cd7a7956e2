/* Concat-4/11/13 and Split-2/11/13 (Operators.md): Concat joins one or more
 * inputs along axis (negative from 11; empty inputs allowed); Split cuts along
 * axis into the sizes of the 'split' attribute (before 13) or the optional
 * 'split' input (from 13), equal parts by default. Dtype-generic: each of the
 * outer(axis) blocks is one memcpy per input/output.
 *
 * A float32 Concat on the channels (axis 1) of 3-D to 5-D tensors also
 * takes part in the layout pass (dnn_chain.h): once a source is kept in
 * oneDNN's layout by its producer, the node runs on oneDNN's concat
 * (exec/onednn.h), which reads every source in the layout it is in and
 * writes Y in such a layout too, for its readers to take as it is. With
 * every source in ours it runs the copies below; with every source and Y
 * channels-last (a DenseNet feature the pass keeps so for the Concats that
 * read it), the channels-last copies below (oneDNN's concat there copies
 * each short run on its own and is slower). */
#include "exec/ops/dnn_chain.h"
#include "exec/ops/ew.h"
#include "exec/ops/movement.h"
#include "exec/ops/registry.h"

#include <stdlib.h>
#include <string.h>

/* Copy the blocks of parts[] (along axis) into / out of the whole tensor.
 * to_whole: Concat (parts -> whole), else Split (whole -> parts). */
static void join_or_cut(ipu_tensor_t *whole, ipu_tensor_t *parts, int np, int axis, int to_whole)
{
    size_t es = ipu_dtype_size(whole->dtype);
    int64_t outer = ipu_shape_numel(axis, whole->dims);
    int64_t inner = ipu_shape_numel(whole->rank - axis - 1, whole->dims + axis + 1) * (int64_t)es;
    int64_t wrow = whole->dims[axis] * inner;
    int64_t off = 0;
    for (int p = 0; p < np; p++) {
        int64_t prow = parts[p].dims[axis] * inner;
        char *w = (char *)whole->data + off;
        char *b = parts[p].data;
        for (int64_t o = 0; o < outer && prow > 0 && b != NULL; o++) {
            if (to_whole)
                memcpy(w + o * wrow, b + o * prow, (size_t)prow);
            else
                memcpy(b + o * prow, w + o * wrow, (size_t)prow);
        }
        off += prow;
    }
}

/* --- Concat ----------------------------------------------------------------- */

/* Concat on the channels of float tensors kept channels-last (the layout
 * pass's): each source's rows of C_k channels, one per batch item and
 * position, into the output's rows of C. The runs are short (a DenseNet
 * feature's 32 channels): a loop, not a memcpy call per run. */
typedef struct cl_concat {
    float *y;
    const ipu_tensor_t *in;
    int np;
    int64_t C;
} cl_concat_t;

IPU_EW_HOT static void concat_channels_last(void *arg, int64_t r0, int64_t r1)
{
    const cl_concat_t *a = arg;
    const int64_t C = a->C;
    int64_t off = 0;
    for (int k = 0; k < a->np; k++) {
        const int64_t ck = a->in[k].dims[1];
        const float *restrict x = a->in[k].data;
        for (int64_t r = r0; r < r1 && x; r++) {
            float *restrict d = a->y + r * C + off;
            const float *restrict s = x + r * ck;
#pragma GCC unroll 4
            for (int64_t i = 0; i < ck; i++)
                d[i] = s[i];
        }
        off += ck;
    }
}

/* Concat on the channels of float tensors in oneDNN's channel-blocked
 * layout, every source in whole blocks of bs channels (the layout pass's,
 * ipu_dnn_concat_blocked_io): a block of an image is run floats (its
 * spatial positions x bs) in one piece in its source and in the output;
 * row r is the output's block r % nb of image r / nb. */
typedef struct blk_concat {
    float *y;
    const ipu_tensor_t *in;
    int np;
    int64_t nb, run, bs;
} blk_concat_t;

IPU_EW_HOT static void concat_blocks(void *arg, int64_t r0, int64_t r1)
{
    const blk_concat_t *a = arg;
    for (int64_t r = r0; r < r1; r++) {
        int64_t n = r / a->nb, b = r % a->nb, k = 0, kb;
        while ((kb = a->in[k].dims[1] / a->bs) <= b) { /* the source of block b */
            b -= kb;
            k++;
        }
        memcpy(a->y + r * a->run, (const float *)a->in[k].data + (n * kb + b) * a->run,
               (size_t)a->run * sizeof(float));
    }
}

typedef struct concat_state {
    ipu_dnn_node_t dnn;      /* first (IPU_OP_DNN); its p NULL: no oneDNN */
    ipu_dnn_concat_desc_t d; /* d.C: the channels array below */
    int64_t C[];
} concat_state_t;

static void concat_fini(ipu_node_t *n)
{
    concat_state_t *s = n->state;
    if (s)
        ipu_dnn_free(s->dnn.p);
    free(s);
    n->state = NULL;
}

/* Remake the primitive to read each source that the layout pass keeps in
 * its producer's layout so (a no-op when every one is in ours). */
static ipu_status_t concat_adopt_sources(const ipu_graph_t *g, ipu_node_t *n)
{
    concat_state_t *s = n->state;
    const ipu_dnn_t **like = calloc((size_t)n->n_inputs, sizeof(*like));
    ipu_dnn_t *made = NULL;
    int any = 0;
    if (like == NULL)
        return ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory");
    for (int k = 0; k < n->n_inputs; k++)
        any |= (like[k] = ipu_dnn_chain_source(g, n->inputs[k])) != NULL;
    ipu_status_t st = any ? ipu_dnn_concat(n, &s->d, like, &made) : IPU_OK;
    if (made) {
        ipu_dnn_free(s->dnn.p);
        s->dnn.p = made;
    }
    free(like);
    return st;
}

/* The primitive for a float32 Concat on the channels of x0's rank (3 to
 * 5), every source with channels: in n->state; none otherwise, or where
 * oneDNN has none. */
static ipu_status_t concat_dnn(const ipu_graph_t *g, ipu_node_t *n, const ipu_value_t *x0,
                               int axis, const int64_t *dims)
{
    if (x0->dtype != IPU_DTYPE_FLOAT || axis != 1 || x0->rank < 3 || x0->rank > 5 ||
        ipu_shape_numel(x0->rank, dims) == 0)
        return IPU_OK;
    for (int k = 0; k < n->n_inputs; k++)
        if (ipu_node_input(g, n, k)->dims[1] < 1)
            return IPU_OK;
    concat_state_t *s = calloc(1, sizeof(*s) + (size_t)n->n_inputs * sizeof(int64_t));
    if (s == NULL)
        return ipu_op_error(IPU_ERR_NO_MEMORY, n, "out of memory");
    s->d = (ipu_dnn_concat_desc_t){.nd = x0->rank - 2, .n_src = n->n_inputs, .N = dims[0],
                                   .C = s->C};
    for (int j = 0; j < s->d.nd; j++)
        s->d.sp[j] = dims[2 + j];
    for (int k = 0; k < n->n_inputs; k++)
        s->C[k] = ipu_node_input(g, n, k)->dims[1];
    s->dnn.res_slot = -1;
    s->dnn.adopt_sources = concat_adopt_sources;
    n->state = s;
    ipu_status_t st = ipu_dnn_concat(n, &s->d, NULL, &s->dnn.p);
    return st == IPU_ERR_UNSUPPORTED ? IPU_OK : st; /* no oneDNN concat: the copies */
}

static size_t concat_scratch(const ipu_graph_t *g, const ipu_node_t *n)
{
    const concat_state_t *s = n->state;
    /* the primitive's, then the sources' addresses */
    return s && s->dnn.p ? (ipu_dnn_scratch(s->dnn.p) + 63) / 64 * 64 +
                               (size_t)n->n_inputs * sizeof(float *)
                         : 0;
}

static ipu_status_t concat_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x0 = ipu_node_input(g, n, 0);
    int64_t dims[IPU_MAX_RANK];
    int axis;
    size_t es;
    ipu_status_t st;
    if (x0 == NULL)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "needs at least one input");
    if (ipu_attr_find(n, "axis") == NULL)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "attribute 'axis' is required");
    if ((st = ipu_mv_esize(n, x0->dtype, &es)) != IPU_OK ||
        (st = ipu_op_axis(n, ipu_attr_int(n, "axis", 0), x0->rank, &axis)) != IPU_OK)
        return st;
    if (x0->rank == 0)
        return ipu_op_error(IPU_ERR_SHAPE, n, "cannot concatenate scalars");
    memcpy(dims, x0->dims, sizeof(int64_t) * (size_t)x0->rank);
    dims[axis] = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        const ipu_value_t *x;
        if ((st = ipu_op_input(g, n, i, &x)) != IPU_OK)
            return st;
        if (x->dtype != x0->dtype)
            return ipu_op_error(IPU_ERR_SHAPE, n, "input %d ('%s') is %s, input 0 is %s", i,
                                x->name, ipu_dtype_name(x->dtype), ipu_dtype_name(x0->dtype));
        if (x->rank != x0->rank)
            return ipu_op_error(IPU_ERR_SHAPE, n, "input %d ('%s') has rank %d, input 0 has "
                                "rank %d", i, x->name, x->rank, x0->rank);
        for (int d = 0; d < x->rank; d++)
            if (d != axis && x->dims[d] != x0->dims[d])
                return ipu_op_error(IPU_ERR_SHAPE, n, "input %d ('%s') dimension %d is %lld, "
                                    "input 0's is %lld", i, x->name, d, (long long)x->dims[d],
                                    (long long)x0->dims[d]);
        dims[axis] += x->dims[axis];
    }
    if ((st = ipu_mv_set_output(g, n, 0, x0->dtype, x0->rank, dims)) != IPU_OK)
        return st;
    return concat_dnn(g, n, x0, axis, dims);
}

static ipu_status_t concat_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                               ipu_kernel_ctx_t *ctx)
{
    const concat_state_t *s = n->state;
    if (s && ipu_dnn_channels_last_io(s->dnn.p)) {
        cl_concat_t a = {out[0].data, in, n->n_inputs, out[0].dims[1]};
        ipu_par_rows(ctx->threads, ipu_tensor_numel(&out[0]) / out[0].dims[1],
                     2 * ipu_tensor_nbytes(&out[0]), concat_channels_last, &a);
        return IPU_OK;
    }
    const int bs = s ? ipu_dnn_concat_blocked_io(s->dnn.p) : 0;
    if (bs > 0) {
        int64_t N = out[0].dims[0];
        blk_concat_t a = {out[0].data, in, n->n_inputs, out[0].dims[1] / bs,
                          ipu_tensor_numel(&out[0]) / N / out[0].dims[1] * bs, bs};
        ipu_par_rows(ctx->threads, N * a.nb, 2 * ipu_tensor_nbytes(&out[0]), concat_blocks, &a);
        return IPU_OK;
    }
    if (s && s->dnn.p && !ipu_dnn_plain(s->dnn.p)) {
        size_t at = (ipu_dnn_scratch(s->dnn.p) + 63) / 64 * 64;
        const float **src = (const float **)(void *)((char *)ctx->scratch + at);
        if (ctx->scratch_bytes < at + (size_t)n->n_inputs * sizeof(float *))
            return ipu_op_error(IPU_ERR_INTERNAL, n, "scratch too small");
        for (int k = 0; k < n->n_inputs; k++)
            src[k] = in[k].data;
        return ipu_dnn_concat_run(n, s->dnn.p, src, out[0].data, ctx);
    }
    int axis = (int)ipu_attr_int(n, "axis", 0);
    if (axis < 0)
        axis += out[0].rank;
    join_or_cut(&out[0], (ipu_tensor_t *)in, n->n_inputs, axis, 1);
    return IPU_OK;
}

/* --- Split -------------------------------------------------------------------- */

#define SPLIT_MAX 64

static ipu_status_t split_infer(ipu_graph_t *g, ipu_node_t *n)
{
    const ipu_value_t *x;
    int64_t sizes[SPLIT_MAX], dims[IPU_MAX_RANK], total = 0;
    int axis, cnt = 0;
    size_t es;
    ipu_status_t st;
    if ((st = ipu_mv_data_input(g, n, &x, &es)) != IPU_OK ||
        (st = ipu_op_axis(n, ipu_attr_int(n, "axis", 0), x->rank, &axis)) != IPU_OK)
        return st;
    if (x->rank == 0)
        return ipu_op_error(IPU_ERR_SHAPE, n, "cannot split a scalar");
    if (n->n_outputs > SPLIT_MAX)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "%d outputs, at most %d supported",
                            n->n_outputs, SPLIT_MAX);
    if (n->opset < 13) {
        size_t c;
        const int64_t *a = ipu_attr_ints(n, "split", &c);
        if (a) {
            cnt = (int)(c < SPLIT_MAX ? c : SPLIT_MAX);
            memcpy(sizes, a, (size_t)cnt * sizeof(int64_t));
            if (c != (size_t)n->n_outputs)
                cnt = -1;
        }
    } else if (ipu_node_input(g, n, 1) != NULL) {
        if ((st = ipu_mv_input_ints(g, n, 1, "split", sizes, SPLIT_MAX, &cnt)) != IPU_OK)
            return st;
        if (cnt != n->n_outputs)
            cnt = -1;
    }
    if (cnt < 0)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "'split' must have one size per output (%d)",
                            n->n_outputs);
    if (cnt == 0) { /* equal parts */
        if (x->dims[axis] % n->n_outputs != 0)
            return ipu_op_error(IPU_ERR_SHAPE, n, "dimension %d (%lld) does not split into %d "
                                "equal parts", axis, (long long)x->dims[axis], n->n_outputs);
        for (int i = 0; i < n->n_outputs; i++)
            sizes[i] = x->dims[axis] / n->n_outputs;
    }
    for (int i = 0; i < n->n_outputs; i++) {
        if (n->outputs[i] < 0)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "output %d is absent", i);
        if (sizes[i] < 0)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "split size %d is negative (%lld)",
                                i, (long long)sizes[i]);
        total += sizes[i];
    }
    if (total != x->dims[axis])
        return ipu_op_error(IPU_ERR_SHAPE, n, "split sizes add up to %lld, dimension %d is %lld",
                            (long long)total, axis, (long long)x->dims[axis]);
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    for (int i = 0; i < n->n_outputs; i++) {
        dims[axis] = sizes[i];
        if ((st = ipu_mv_set_output(g, n, i, x->dtype, x->rank, dims)) != IPU_OK)
            return st;
    }
    return IPU_OK;
}

static ipu_status_t split_run(const ipu_node_t *n, const ipu_tensor_t *in, ipu_tensor_t *out,
                              ipu_kernel_ctx_t *ctx)
{
    int axis = (int)ipu_attr_int(n, "axis", 0);
    if (axis < 0)
        axis += in[0].rank;
    ipu_tensor_t whole = in[0];
    join_or_cut(&whole, out, n->n_outputs, axis, 0);
    return IPU_OK;
}

IPU_MV_OP(Concat, 4, 17, IPU_OP_DNN, concat_infer, concat_scratch, concat_run, concat_fini)
IPU_MV_OP(Split, 2, 17, 0, split_infer, NULL, split_run, NULL)

const ipu_op_t *const ipu_ops_concat_split[] = {&op_Concat, &op_Split, NULL};
