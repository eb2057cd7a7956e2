#include "cli/io.h"

#include "common/hash.h"
#include "common/npy.h"
#include "graph/load.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* xorshift64* (S. Vigna, "An experimental exploration of Marsaglia's
 * xorshift generators, scrambled", ACM TOMS 42(4), 2016): reproducible
 * synthetic data. step() is the state's transition, rnd() one output. */
static uint64_t step(uint64_t s)
{
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s;
}

static uint64_t rnd(uint64_t *s)
{
    *s = step(*s);
    return *s * 2685821657736338717ull;
}

/* The transition is linear over GF(2) (G. Marsaglia, "Xorshift RNGs", J.
 * Stat. Softw. 8(14), 2003), so the state k steps ahead is T^k s: jump()
 * applies the powers T^(2^b) of k's set bits, each kept as its 64 columns
 * (T^(2^b) of each unit vector) in pow2[b], made once. */
enum { JUMP_BITS = 63 };
static uint64_t pow2[JUMP_BITS][64];
static pthread_once_t pow2_once = PTHREAD_ONCE_INIT;

static uint64_t mat_vec(const uint64_t *cols, uint64_t v)
{
    uint64_t r = 0;
    for (int j = 0; v; j++, v >>= 1)
        if (v & 1)
            r ^= cols[j];
    return r;
}

static void make_pow2(void)
{
    for (int j = 0; j < 64; j++)
        pow2[0][j] = step(UINT64_C(1) << j);
    for (int b = 1; b < JUMP_BITS; b++)
        for (int j = 0; j < 64; j++)
            pow2[b][j] = mat_vec(pow2[b - 1], pow2[b - 1][j]);
}

static uint64_t jump(uint64_t s, uint64_t k)
{
    pthread_once(&pow2_once, make_pow2);
    for (int b = 0; k; b++, k >>= 1)
        if (k & 1)
            s = mat_vec(pow2[b], s);
    return s;
}

/* A float in [-1, 1) from r's top 53 bits. */
static double uniform(uint64_t r)
{
    return (double)(r >> 11) / 9007199254740992.0 * 2 - 1;
}

/* f[0..n) = the next n values of the stream at *s, as floats in [-1, 1);
 * *s advanced past them. The same values as one rnd() after another, made
 * in STREAMS interleaved runs that start where jump() puts them: the serial
 * chain of shifts was a pipeline's first stage's main cost between its
 * runs. */
enum { STREAMS = 4 };
static void fill_uniform(float *f, int64_t n, uint64_t *s)
{
    int64_t len = (n + STREAMS - 1) / STREAMS;
    uint64_t st[STREAMS];
    for (int j = 0; j < STREAMS; j++)
        st[j] = jump(*s, (uint64_t)(j * len));
    for (int64_t i = 0; i < len; i++)
        for (int j = 0; j < STREAMS; j++)
            if (j * len + i < n)
                f[j * len + i] = (float)uniform(rnd(&st[j]));
    *s = jump(*s, (uint64_t)n);
}

/* Bound for integer input v: the gathered dimension if v indexes a Gather. */
static int64_t int_bound(const ipu_graph_t *g, int v)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const ipu_node_t *n = &g->nodes[i];
        if (strcmp(n->op_type, "Gather") == 0 && n->n_inputs == 2 && n->inputs[1] == v &&
            n->inputs[0] >= 0) {
            const ipu_value_t *d = &g->values[n->inputs[0]];
            int64_t axis = ipu_attr_int(n, "axis", 0);
            if (d->rank > 0) {
                if (axis < 0)
                    axis += d->rank;
                if (axis >= 0 && axis < d->rank && d->dims[axis] > 0)
                    return d->dims[axis];
            }
        }
    }
    return 10;
}

ipu_status_t cli_synth_check(const ipu_graph_t *g)
{
    for (int k = 0; k < g->n_inputs; k++) {
        const ipu_value_t *v = &g->values[g->inputs[k]];
        if (v->rank < 0)
            return ipu_error(IPU_ERR_INPUT, "input %d '%s': the model does not declare its shape, so "
                             "no synthetic data can be made for it; give its data with --inputs DIR "
                             "(input_%d.pb, input_%d.npy, %s.pb or %s.npy there)", k, v->name, k, k,
                             v->name, v->name);
    }
    return IPU_OK;
}

ipu_status_t cli_synth_inputs(const ipu_graph_t *g, unsigned seed, int batch, ipu_tensor_t *ins)
{
    uint64_t s = 0x9E3779B97F4A7C15ull ^ seed;
    ipu_status_t st = cli_synth_check(g);
    if (st != IPU_OK)
        return st;
    for (int k = 0; k < g->n_inputs; k++) {
        const ipu_value_t *v = &g->values[g->inputs[k]];
        ipu_tensor_t *t = &ins[k];
        memset(t, 0, sizeof(*t));
        t->dtype = v->dtype;
        t->rank = v->rank;
        for (int d = 0; d < t->rank; d++)
            t->dims[d] = v->dims[d] >= 0 ? v->dims[d] : d == 0 ? batch : 1;
        if (ipu_dtype_size(t->dtype) == 0)
            return ipu_error(IPU_ERR_UNSUPPORTED, "input '%s': cannot make synthetic data of "
                             "dtype %s", v->name, ipu_dtype_name(t->dtype));
        if ((st = ipu_tensor_alloc(t)) != IPU_OK)
            return st;
        int64_t n = ipu_tensor_numel(t), bound = int_bound(g, g->inputs[k]);
        if (t->dtype == IPU_DTYPE_FLOAT) {
            fill_uniform(t->data, n, &s);
            continue;
        }
        for (int64_t i = 0; i < n; i++) {
            uint64_t r = rnd(&s);
            if (ipu_dtype_is_float(t->dtype))
                ipu_dtype_set_f64(t->dtype, t->data, (size_t)i, uniform(r));
            else if (t->dtype == IPU_DTYPE_BOOL)
                ipu_dtype_set_i64(t->dtype, t->data, (size_t)i, (int64_t)(r >> 63));
            else
                ipu_dtype_set_i64(t->dtype, t->data, (size_t)i, (int64_t)((r >> 1) % (uint64_t)bound));
        }
    }
    return IPU_OK;
}

static void index_string(const ipu_tensor_t *t, int64_t flat, char *buf, size_t len)
{
    int64_t idx[IPU_MAX_RANK];
    for (int d = t->rank - 1; d >= 0; d--) {
        idx[d] = t->dims[d] ? flat % t->dims[d] : 0;
        flat = t->dims[d] ? flat / t->dims[d] : 0;
    }
    size_t off = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < t->rank && off < len; d++)
        off += (size_t)snprintf(buf + off, len - off, d ? ",%lld" : "%lld", (long long)idx[d]);
    if (off < len)
        snprintf(buf + off, len - off, "]");
}

ipu_status_t cli_check_output(FILE *out, const char *name, int k, int mb, int verbose,
                              const ipu_tensor_t *got, const ipu_tensor_t *ref, const char *ref_path,
                              double rtol, double atol, double *max_abs_out)
{
    char a[256], b[256];
    if (!ipu_shape_equal(got->rank, got->dims, ref->rank, ref->dims)) {
        fprintf(out, "check: micro-batch %d output %d '%s': shape %s, reference %s: MISMATCH (%s)\n", mb,
                k, name, ipu_tensor_describe(got, a, sizeof(a)), ipu_tensor_describe(ref, b, sizeof(b)),
                ref_path);
        return IPU_ERR_MISMATCH;
    }
    int64_t n = ipu_tensor_numel(got), worst = -1, bad = 0;
    double worst_excess = -INFINITY, max_abs = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = ipu_dtype_get_f64(got->dtype, got->data, (size_t)i);
        double y = ipu_dtype_get_f64(ref->dtype, ref->data, (size_t)i);
        /* numpy.isclose, but NaN matches NaN: an infinity (or NaN) matches
         * only the same (the tolerance of an infinite y is infinite) */
        int special = !isfinite(x) || !isfinite(y);
        if (special && (x == y || (isnan(x) && isnan(y))))
            continue;
        double d = fabs(x - y);
        if (special || !(d <= atol + rtol * fabs(y)))
            bad++;
        double excess = special || isnan(d) ? INFINITY : d - (atol + rtol * fabs(y));
        if (excess > worst_excess) {
            worst_excess = excess;
            worst = i;
        }
        if (d > max_abs || isnan(d))
            max_abs = d;
    }
    if (max_abs_out && (max_abs > *max_abs_out || isnan(max_abs)))
        *max_abs_out = max_abs;
    if (bad == 0) {
        if (verbose)
            fprintf(out, "check: output %d '%s' %s: ok (max abs err %.3g)\n", k, name,
                    ipu_tensor_describe(got, a, sizeof(a)), max_abs);
        return IPU_OK;
    }
    index_string(got, worst, b, sizeof(b));
    fprintf(out, "check: micro-batch %d output %d '%s' %s: MISMATCH in %lld of %lld elements; worst at %s: "
            "got %.9g, want %.9g (rtol %g, atol %g; reference %s)\n", mb, k, name,
            ipu_tensor_describe(got, a, sizeof(a)), (long long)bad, (long long)n, b,
            ipu_dtype_get_f64(got->dtype, got->data, (size_t)worst),
            ipu_dtype_get_f64(ref->dtype, ref->data, (size_t)worst), rtol, atol, ref_path);
    return IPU_ERR_MISMATCH;
}

static uint64_t fnv1a_i64(uint64_t h, int64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)((uint64_t)v >> (8 * i));
    return ipu_fnv1a64(h, b, sizeof(b));
}

uint64_t cli_output_digest(int mb, int k, const ipu_tensor_t *t)
{
    uint64_t h = fnv1a_i64(fnv1a_i64(fnv1a_i64(IPU_FNV64_BASIS, mb), k), t->rank);
    for (int d = 0; d < t->rank; d++)
        h = fnv1a_i64(h, t->dims[d]);
    h = ipu_fnv1a64(h, t->data, t->data ? ipu_tensor_nbytes(t) : 0);
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}

/* mkdir -p */
static ipu_status_t make_dir(const char *opt, const char *dir)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s", dir);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return ipu_error(IPU_ERR_IO, "%s %s: %s: %s", opt, dir, path, strerror(errno));
        *p = '/';
    }
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        return ipu_error(IPU_ERR_IO, "%s %s: %s", opt, dir, strerror(errno));
    return IPU_OK;
}

ipu_status_t cli_check_output_dir(const char *opt, const char *dir)
{
    struct stat sb;
    ipu_status_t st = make_dir(opt, dir);
    if (st != IPU_OK)
        return st;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return ipu_error(IPU_ERR_IO, "%s %s: not a directory", opt, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return ipu_error(IPU_ERR_IO, "%s %s: %s", opt, dir, strerror(errno));
    return IPU_OK;
}

ipu_status_t cli_write_tensor(const char *opt, const char *dir, cli_format_t fmt, int n_batches, int mb,
                              const char *kind, int k, const char *name, const ipu_tensor_t *t)
{
    char sub[4096], path[4200];
    ipu_status_t st = make_dir(opt, dir);
    if (st != IPU_OK)
        return st;
    if (n_batches > 1) {
        snprintf(sub, sizeof(sub), "%s/test_data_set_%d", dir, mb);
        if ((st = make_dir(opt, sub)) != IPU_OK)
            return st;
    } else {
        snprintf(sub, sizeof(sub), "%s", dir);
    }
    snprintf(path, sizeof(path), "%s/%s_%d.%s", sub, kind, k, fmt == CLI_FORMAT_NPY ? "npy" : "pb");
    if (fmt == CLI_FORMAT_PB)
        return ipu_tensorproto_write(path, t, name);
    st = ipu_npy_write(path, t);
    if (st == IPU_ERR_UNSUPPORTED)
        return ipu_error(st, "%s: %s; use --format pb", opt, ipu_error_message());
    return st;
}
