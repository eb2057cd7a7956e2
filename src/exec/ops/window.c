/* Sliding-window geometry and loops shared by Conv and the pools; see
 * window.h. Output sizes follow Conv-11 / MaxPool-12 / AveragePool-11
 * (Operators.md): explicit pads, or auto_pad SAME_UPPER / SAME_LOWER / VALID. */
#include "exec/ops/window.h"
#include "exec/ops/ew.h"

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

void ipu_window_range(const ipu_window_t *w, int i, int64_t t, int64_t *lo, int64_t *hi)
{
    int64_t off = t * w->d[i] - w->pb[i]; /* input position = o * s + off */
    int64_t l = off >= 0 ? 0 : (-off + w->s[i] - 1) / w->s[i];
    int64_t last = w->in[i] - 1 - off;    /* need o * s <= last */
    int64_t h = last < 0 ? 0 : last / w->s[i] + 1;
    if (h > w->out[i])
        h = w->out[i];
    if (l > h)
        l = h;
    *lo = l;
    *hi = h;
}

int64_t ipu_window_count(const ipu_window_t *w, int i, int64_t o, int64_t lo_bound,
                         int64_t hi_bound)
{
    int64_t c = 0;
    for (int64_t t = 0; t < w->k[i]; t++) {
        int64_t p = o * w->s[i] + t * w->d[i] - w->pb[i];
        c += p >= lo_bound && p < hi_bound;
    }
    return c;
}

/* The row loops below are written with GCC/Clang vector extensions: at -O2
 * GCC 12 vectorises only loops whose trip count is a multiple of the vector
 * width, which these (row remainders, window ranges) never are. */
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));

static inline v4f ld4(const float *p)
{
    v4f v;
    memcpy(&v, p, sizeof(v));
    return v;
}
static inline void st4(float *p, v4f v)
{
    memcpy(p, &v, sizeof(v));
}
/* p[0], p[s], p[2s], p[3s] */
static inline v4f ld4s(const float *p, int64_t s)
{
    return (v4f){p[0], p[s], p[2 * s], p[3 * s]};
}
static inline v4f max4(v4f a, v4f b)
{
    v4i m = a > b;
    return (v4f)(((v4i)a & m) | ((v4i)b & ~m));
}

void ipu_row_fill(float *dst, int64_t n, float v)
{
    v4f v4 = {v, v, v, v};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        st4(dst + i, v4);
    for (; i < n; i++)
        dst[i] = v;
}

/* dst[o] op= src[o * s] for o in [0, cnt): the innermost loops */
static void row_mac(float *restrict dst, const float *restrict src, int64_t cnt, int64_t s,
                    float wv)
{
    v4f w4 = {wv, wv, wv, wv};
    int64_t o = 0;
    if (s == 1)
        for (; o + 4 <= cnt; o += 4)
            st4(dst + o, ld4(dst + o) + w4 * ld4(src + o));
    else
        for (; o + 4 <= cnt; o += 4)
            st4(dst + o, ld4(dst + o) + w4 * ld4s(src + o * s, s));
    for (; o < cnt; o++)
        dst[o] += wv * src[o * s];
}

static void row_max(float *restrict dst, const float *restrict src, int64_t cnt, int64_t s)
{
    int64_t o = 0;
    if (s == 1)
        for (; o + 4 <= cnt; o += 4)
            st4(dst + o, max4(ld4(src + o), ld4(dst + o)));
    else
        for (; o + 4 <= cnt; o += 4)
            st4(dst + o, max4(ld4s(src + o * s, s), ld4(dst + o)));
    for (; o < cnt; o++)
        dst[o] = src[o * s] > dst[o] ? src[o * s] : dst[o];
}

static void row_sum(float *restrict dst, const float *restrict src, int64_t cnt, int64_t s)
{
    int64_t o = 0;
    if (s == 1)
        for (; o + 4 <= cnt; o += 4)
            st4(dst + o, ld4(dst + o) + ld4(src + o));
    else
        for (; o + 4 <= cnt; o += 4)
            st4(dst + o, ld4(dst + o) + ld4s(src + o * s, s));
    for (; o < cnt; o++)
        dst[o] += src[o * s];
}

void ipu_window_plane(const ipu_window_t *w, ipu_window_mode_t mode, const float *weights,
                      const float *in, float *out)
{
    const int64_t D = w->in[0], H = w->in[1], W = w->in[2];
    const int64_t oH = w->out[1], oW = w->out[2];
    const int64_t kH = w->k[1], kW = w->k[2];
    /* in-bounds outputs of each tap along W (computed once per plane) */
    enum { RANGES = 32 };
    int64_t los[RANGES], his[RANGES];
    for (int64_t tw = 0; tw < kW && tw < RANGES; tw++)
        ipu_window_range(w, 2, tw, &los[tw], &his[tw]);
    for (int64_t od = 0; od < w->out[0]; od++)
        for (int64_t oh = 0; oh < oH; oh++) {
            float *dst = out + (od * oH + oh) * oW;
            for (int64_t td = 0; td < w->k[0]; td++) {
                int64_t id = od * w->s[0] + td * w->d[0] - w->pb[0];
                if (id < 0 || id >= D)
                    continue;
                for (int64_t th = 0; th < kH; th++) {
                    int64_t ih = oh * w->s[1] + th * w->d[1] - w->pb[1];
                    if (ih < 0 || ih >= H)
                        continue;
                    const float *row = in + (id * H + ih) * W;
                    for (int64_t tw = 0; tw < kW; tw++) {
                        int64_t lo, hi;
                        if (tw < RANGES) {
                            lo = los[tw];
                            hi = his[tw];
                        } else {
                            ipu_window_range(w, 2, tw, &lo, &hi);
                        }
                        if (lo >= hi)
                            continue;
                        /* first in-bounds input of this tap: lo * s + tw * d - pb >= 0 */
                        const float *src = row + lo * w->s[2] + tw * w->d[2] - w->pb[2];
                        if (mode == IPU_WINDOW_MAC)
                            row_mac(dst + lo, src, hi - lo, w->s[2],
                                    weights[(td * kH + th) * kW + tw]);
                        else if (mode == IPU_WINDOW_MAX)
                            row_max(dst + lo, src, hi - lo, w->s[2]);
                        else
                            row_sum(dst + lo, src, hi - lo, w->s[2]);
                    }
                }
            }
        }
}
