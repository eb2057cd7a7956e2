/* Private helpers of the data-movement ops: see movement.h. */
#include "exec/ops/movement.h"
#include "exec/ops/ew.h"

#include <stdio.h>
#include <string.h>

void ipu_mv_dense_strides(int rank, const int64_t *dims, size_t esize, int64_t *strides)
{
    int64_t s = (int64_t)esize;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

void ipu_mv_fill(void *dst, size_t count, const void *elem, size_t esize)
{
    size_t total = count * esize, done;
    const unsigned char *e = elem;
    int zero = 1;
    if (total == 0)
        return;
    for (size_t i = 0; i < esize; i++)
        zero &= e[i] == 0;
    if (zero) {
        memset(dst, 0, total);
        return;
    }
    memcpy(dst, elem, esize);
    for (done = esize; done < total; done *= 2) /* doubling copies */
        memcpy((char *)dst + done, dst, done * 2 <= total ? done : total - done);
}

/* Copy one element of esize bytes; constant sizes become plain moves. */
static inline void copy_elem(char *d, const char *s, size_t esize)
{
    switch (esize) {
    case 1: *d = *s; break;
    case 2: memcpy(d, s, 2); break;
    case 4: memcpy(d, s, 4); break;
    case 8: memcpy(d, s, 8); break;
    default: memcpy(d, s, esize); break;
    }
}

/* n elements with strides ds, ss (bytes). */
static void copy_line(char *d, int64_t ds, const char *s, int64_t ss, int64_t n, size_t esize)
{
#define LINE(T) for (int64_t i = 0; i < n; i++) { T v; memcpy(&v, s + i * ss, sizeof(T)); \
                                                  memcpy(d + i * ds, &v, sizeof(T)); } break;
    switch (esize) {
    case 1: LINE(uint8_t)
    case 2: LINE(uint16_t)
    case 4: LINE(uint32_t)
    case 8: LINE(uint64_t)
    default:
        for (int64_t i = 0; i < n; i++)
            copy_elem(d + i * ds, s + i * ss, esize);
        break;
    }
#undef LINE
}

/* 2-D transpose in blocks: dst[a*da + b*esize] = src[a*esize + b*sb]. */
static void copy_tiled(char *d, int64_t da, const char *s, int64_t sb, int64_t na, int64_t nb,
                       size_t esize)
{
    const int64_t T = 32;
    for (int64_t a0 = 0; a0 < na; a0 += T) {
        int64_t a1 = a0 + T < na ? a0 + T : na;
        for (int64_t b0 = 0; b0 < nb; b0 += T) {
            int64_t b1 = b0 + T < nb ? b0 + T : nb;
            for (int64_t a = a0; a < a1; a++)
                copy_line(d + a * da + b0 * (int64_t)esize, (int64_t)esize,
                          s + a * (int64_t)esize + b0 * sb, sb, b1 - b0, esize);
        }
    }
}

enum { K_MEMCPY, K_TILED, K_LINE };

static void mv_copy(void *dst, const int64_t *dstr, const void *src, const int64_t *sstr,
                    int rank, const int64_t *dims, size_t esize)
{
    int64_t d[IPU_MV_MAX_DIMS], ds[IPU_MV_MAX_DIMS], ss[IPU_MV_MAX_DIMS];
    int r = 0;
    const int64_t es = (int64_t)esize;
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 0)
            return;
        if (dims[i] == 1)
            continue;
        /* merge with the previous dimension when the two are one run */
        if (r > 0 && ds[r - 1] == dstr[i] * dims[i] && ss[r - 1] == sstr[i] * dims[i]) {
            d[r - 1] *= dims[i];
            ds[r - 1] = dstr[i];
            ss[r - 1] = sstr[i];
            continue;
        }
        d[r] = dims[i];
        ds[r] = dstr[i];
        ss[r] = sstr[i];
        r++;
    }
    if (r == 0) {
        copy_elem(dst, src, esize);
        return;
    }
    int kernel = K_LINE, k = -1;
    if (ds[r - 1] == es && ss[r - 1] == es) {
        kernel = K_MEMCPY;
    } else if (ds[r - 1] == es && d[r - 1] >= 4) {
        for (int i = r - 2; i >= 0; i--)
            if (ss[i] == es && d[i] >= 4) {
                k = i;
                kernel = K_TILED;
                break;
            }
    }
    /* the outer dimensions walked by the odometer */
    int od[IPU_MV_MAX_DIMS], no = 0;
    int64_t idx[IPU_MV_MAX_DIMS];
    for (int i = 0; i < r - 1; i++)
        if (i != k)
            od[no++] = i;
    memset(idx, 0, sizeof(idx));
    char *dp = dst;
    const char *sp = src;
    for (;;) {
        switch (kernel) {
        case K_MEMCPY: memcpy(dp, sp, (size_t)d[r - 1] * esize); break;
        case K_TILED:  copy_tiled(dp, ds[k], sp, ss[r - 1], d[k], d[r - 1], esize); break;
        default:       copy_line(dp, ds[r - 1], sp, ss[r - 1], d[r - 1], esize); break;
        }
        int j = no - 1;
        for (; j >= 0; j--) {
            int a = od[j];
            dp += ds[a];
            sp += ss[a];
            if (++idx[j] < d[a])
                break;
            dp -= ds[a] * d[a];
            sp -= ss[a] * d[a];
            idx[j] = 0;
        }
        if (j < 0)
            return;
    }
}

ipu_status_t ipu_mv_esize(const ipu_node_t *n, ipu_dtype_t dt, size_t *esize)
{
    *esize = ipu_dtype_size(dt);
    if (*esize == 0)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "dtype %s is not supported",
                            ipu_dtype_name(dt));
    return IPU_OK;
}

ipu_status_t ipu_mv_data_input(const ipu_graph_t *g, const ipu_node_t *n, const ipu_value_t **x,
                               size_t *esize)
{
    ipu_status_t st = ipu_op_input(g, n, 0, x);
    return st != IPU_OK ? st : ipu_mv_esize(n, (*x)->dtype, esize);
}

ipu_status_t ipu_mv_ints(const ipu_node_t *n, const ipu_tensor_t *t, const char *what,
                         int64_t *out, int max, int *cnt)
{
    if (t->data == NULL)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "input %s must be a constant at inference "
                            "(data-dependent shapes are not supported)", what);
    if (t->dtype != IPU_DTYPE_INT64 && t->dtype != IPU_DTYPE_INT32)
        return ipu_op_error(IPU_ERR_SHAPE, n, "input %s must be int64 (or int32), not %s",
                            what, ipu_dtype_name(t->dtype));
    if (t->rank > 1)
        return ipu_op_error(IPU_ERR_SHAPE, n, "input %s must be a scalar or 1-D, not rank %d",
                            what, t->rank);
    int64_t c = ipu_tensor_numel(t);
    if (c > max)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "input %s has %lld elements, at most %d "
                            "are supported", what, (long long)c, max);
    for (int64_t i = 0; i < c; i++)
        out[i] = ipu_dtype_get_i64(t->dtype, t->data, (size_t)i);
    *cnt = (int)c;
    return IPU_OK;
}

ipu_status_t ipu_mv_input_ints(const ipu_graph_t *g, const ipu_node_t *n, int slot,
                               const char *what, int64_t *out, int max, int *cnt)
{
    const ipu_value_t *v = ipu_node_input(g, n, slot);
    if (v == NULL)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "input %s is missing", what);
    char name[160];
    snprintf(name, sizeof(name), "%s ('%s')", what, v->name);
    ipu_tensor_t t = ipu_value_tensor(g, n->inputs[slot]);
    return ipu_mv_ints(n, &t, name, out, max, cnt);
}

ipu_status_t ipu_mv_set_output(ipu_graph_t *g, const ipu_node_t *n, int slot,
                               ipu_dtype_t dt, int rank, const int64_t *dims)
{
    if (rank > IPU_MAX_RANK)
        return ipu_op_error(IPU_ERR_UNSUPPORTED, n, "output rank %d exceeds the supported %d",
                            rank, IPU_MAX_RANK);
    ipu_value_t *v = ipu_node_output(g, n, slot);
    if (v)
        ipu_value_set_shape(v, dt, rank, dims);
    return IPU_OK;
}

ipu_status_t ipu_mv_axes(const ipu_node_t *n, const int64_t *axes, int cnt, int rank, int *out)
{
    unsigned seen = 0;
    for (int i = 0; i < cnt; i++) {
        ipu_status_t st = ipu_op_axis(n, axes[i], rank, &out[i]);
        if (st != IPU_OK)
            return st;
        if (seen & (1u << out[i]))
            return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "axis %lld is repeated",
                                (long long)axes[i]);
        seen |= 1u << out[i];
    }
    return IPU_OK;
}

/* a chunk of ipu_mv_copy: the box's slices [r0, r1) along dimension split */
typedef struct mv_part {
    char *dst;
    const char *src;
    const int64_t *dstr, *sstr, *dims;
    int rank, split;
    size_t esize;
} mv_part_t;

static void mv_rows(void *arg, int64_t r0, int64_t r1)
{
    const mv_part_t *m = arg;
    int64_t d[IPU_MV_MAX_DIMS];
    memcpy(d, m->dims, (size_t)m->rank * sizeof(int64_t));
    d[m->split] = r1 - r0;
    mv_copy(m->dst + r0 * m->dstr[m->split], m->dstr, m->src + r0 * m->sstr[m->split], m->sstr,
            m->rank, d, m->esize);
}

void ipu_mv_copy(int threads, void *dst, const int64_t *dstr, const void *src, const int64_t *sstr,
                 int rank, const int64_t *dims, size_t esize)
{
    int split = 0;
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    while (split < rank - 1 && dims[split] == 1)
        split++;
    if (threads <= 1 || rank == 0 || n == 0) {
        mv_copy(dst, dstr, src, sstr, rank, dims, esize);
        return;
    }
    mv_part_t m = {dst, src, dstr, sstr, dims, rank, split, esize};
    ipu_par_rows(threads, dims[split], 2 * (size_t)n * esize, mv_rows, &m);
}
