/* Sliding-window geometry shared by Conv and the pools; see window.h.
 * Output sizes follow Conv-11 / MaxPool-12 / AveragePool-11 (Operators.md):
 * explicit pads, or auto_pad SAME_UPPER / SAME_LOWER / VALID. */
#include "exec/ops/window.h"

#include <stdint.h>
#include <string.h>

ipu_status_t ipu_window_ints(const ipu_node_t *n, const char *name, size_t want, int64_t min,
                             int64_t dflt, int64_t *dst)
{
    size_t cnt;
    const int64_t *v = ipu_attr_ints(n, name, &cnt);
    for (size_t i = 0; i < want; i++)
        dst[i] = dflt;
    if (v == NULL)
        return IPU_OK;
    if (cnt != want)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "attribute %s has %zu values, "
                            "expected %zu", name, cnt, want);
    for (size_t i = 0; i < want; i++) {
        if (v[i] < min)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "attribute %s[%zu] = %lld, "
                                "must be >= %lld", name, i, (long long)v[i], (long long)min);
        if (v[i] > INT32_MAX) /* oneDNN's descriptors refuse larger ones */
            return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "attribute %s[%zu] = %lld: values above "
                                "2^31 - 1 are not supported", name, i, (long long)v[i]);
        dst[i] = v[i];
    }
    return IPU_OK;
}

ipu_status_t ipu_window_auto_pad(const ipu_node_t *n, ipu_auto_pad_t *mode)
{
    const char *ap = ipu_attr_string(n, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") == 0 || ap[0] == '\0')
        *mode = IPU_AUTO_PAD_NOTSET;
    else if (strcmp(ap, "SAME_UPPER") == 0)
        *mode = IPU_AUTO_PAD_SAME_UPPER;
    else if (strcmp(ap, "SAME_LOWER") == 0)
        *mode = IPU_AUTO_PAD_SAME_LOWER;
    else if (strcmp(ap, "VALID") == 0)
        *mode = IPU_AUTO_PAD_VALID;
    else
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "unknown auto_pad '%s' (NOTSET, "
                            "SAME_UPPER, SAME_LOWER or VALID)", ap);
    return IPU_OK;
}

ipu_status_t ipu_window_init(const ipu_node_t *n, int nd, const int64_t *in, const int64_t *k,
                             int ceil_mode, ipu_window_t *w)
{
    int64_t s[3], d[3], pads[6];
    ipu_status_t st;
    if (nd < 1 || nd > IPU_WINDOW_MAX_DIMS)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "%d spatial dimensions (1 to 3 supported)",
                            nd);
    if ((st = ipu_window_ints(n, "strides", (size_t)nd, 1, 1, s)) != IPU_OK ||
        (st = ipu_window_ints(n, "dilations", (size_t)nd, 1, 1, d)) != IPU_OK ||
        (st = ipu_window_ints(n, "pads", 2 * (size_t)nd, 0, 0, pads)) != IPU_OK)
        return st;
    ipu_auto_pad_t mode;
    if ((st = ipu_window_auto_pad(n, &mode)) != IPU_OK)
        return st;

    int off = IPU_WINDOW_MAX_DIMS - nd;
    w->nd = nd;
    for (int i = 0; i < IPU_WINDOW_MAX_DIMS; i++) {
        w->in[i] = w->k[i] = w->s[i] = w->d[i] = w->out[i] = 1;
        w->pb[i] = w->pe[i] = 0;
    }
    for (int j = 0; j < nd; j++) {
        int i = off + j;
        if (k[j] < 1)
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "kernel dimension %d is %lld", j,
                                (long long)k[j]);
        w->in[i] = in[j];
        w->k[i] = k[j];
        w->s[i] = s[j];
        w->d[i] = d[j];
        int64_t eff = (k[j] - 1) * d[j] + 1;
        if (mode == IPU_AUTO_PAD_SAME_UPPER || mode == IPU_AUTO_PAD_SAME_LOWER) {
            int64_t o = (in[j] + s[j] - 1) / s[j];
            int64_t total = (o - 1) * s[j] + eff - in[j];
            if (total < 0)
                total = 0;
            w->pb[i] = mode == IPU_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
            w->pe[i] = total - w->pb[i];
            w->out[i] = o;
        } else {
            if (mode == IPU_AUTO_PAD_NOTSET) {
                w->pb[i] = pads[j];
                w->pe[i] = pads[j + nd];
            }
            int64_t span = in[j] + w->pb[i] + w->pe[i] - eff;
            if (span < 0)
                return ipu_op_error(IPU_ERR_SHAPE, n, "window %lld (kernel %lld, dilation "
                                    "%lld) is larger than spatial dimension %d of size %lld "
                                    "plus padding %lld+%lld", (long long)eff, (long long)k[j],
                                    (long long)d[j], j, (long long)in[j],
                                    (long long)w->pb[i], (long long)w->pe[i]);
            int64_t o = (ceil_mode ? span + s[j] - 1 : span) / s[j] + 1;
            /* the last window must start inside the input or the leading padding */
            if (ceil_mode && (o - 1) * s[j] >= in[j] + w->pb[i])
                o--;
            w->out[i] = o;
        }
        if (w->out[i] < 1 || in[j] < 1)
            return ipu_op_error(IPU_ERR_SHAPE, n, "empty output along spatial dimension %d "
                                "(input %lld)", j, (long long)in[j]);
    }
    return IPU_OK;
}

ipu_status_t ipu_window_conv_operands(ipu_graph_t *g, const ipu_node_t *n, const ipu_value_t **x,
                                      const ipu_value_t **w, const ipu_value_t **b,
                                      ipu_value_t **y)
{
    *x = ipu_node_input(g, n, 0);
    *w = ipu_node_input(g, n, 1);
    *b = ipu_node_input(g, n, 2);
    *y = ipu_node_output(g, n, 0);
    if (*x == NULL || *w == NULL || *y == NULL)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "needs inputs X, W and output Y");
    const ipu_value_t *bad = (*x)->dtype != IPU_DTYPE_FLOAT   ? *x
                             : (*w)->dtype != IPU_DTYPE_FLOAT ? *w
                             : *b && (*b)->dtype != IPU_DTYPE_FLOAT ? *b
                                                                 : NULL;
    if (bad)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "dtype %s is not supported (float only)",
                            ipu_dtype_name(bad->dtype));
    if ((*x)->rank < 3 || (*x)->rank > 5)
        return ipu_op_error((*x)->rank < 3 ? IPU_ERR_SHAPE : IPU_ERR_UNSUPPORTED, n,
                            "X has rank %d (3 to 5 supported: N, C, 1 to 3 spatial dims)",
                            (*x)->rank);
    if ((*w)->rank != (*x)->rank)
        return ipu_op_error(IPU_ERR_SHAPE, n, "W has rank %d, X has rank %d", (*w)->rank,
                            (*x)->rank);
    return IPU_OK;
}
