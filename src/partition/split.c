#include "partition/split.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

double ipu_split_range_ms(const ipu_split_problem_t *p, int a, int b)
{
    double t = p->cut_ms[a] + p->cut_ms[b];
    for (int i = a; i < b; i++)
        t += p->ms[i];
    return t;
}

size_t ipu_split_range_mem(const ipu_split_problem_t *p, int a, int b)
{
    if (p->need)
        return p->need(p->need_arg, a, b);
    unsigned char *seen = calloc((size_t)p->n_consts + 1, 1);
    size_t w = 0, live = 0, scratch = 0;
    for (int i = a; i < b; i++) {
        if (p->live_bytes[i] > live)
            live = p->live_bytes[i];
        if (p->scratch_bytes && p->scratch_bytes[i] > scratch)
            scratch = p->scratch_bytes[i];
        for (int k = p->const_start[i]; k < p->const_start[i + 1]; k++) {
            int c = p->const_ids[k];
            if (seen && !seen[c]) {
                seen[c] = 1;
                w += p->const_bytes[c];
            }
        }
    }
    free(seen);
    return w + live + scratch;
}

ipu_status_t ipu_split_solve(const ipu_split_problem_t *p, ipu_split_t *out)
{
    int n = p->n, S = p->stages;
    if (S < 1 || S > n)
        return ipu_error(IPU_ERR_INVALID_ARG, "cannot split %d nodes into %d stages", n, S);
    size_t cap = p->capacity ? p->capacity : (size_t)-1;
    ipu_status_t st = IPU_OK;
    /* best[s*(n+1)+b]: smallest bottleneck of items [0,b) in s+1 stages */
    double *best = malloc((size_t)S * (size_t)(n + 1) * sizeof(double));
    int *arg = malloc((size_t)S * (size_t)(n + 1) * sizeof(int));
    double *prefix = malloc((size_t)(n + 1) * sizeof(double));
    int *stamp = malloc((size_t)(p->n_consts + 1) * sizeof(int));
    int *astamp = malloc((size_t)(p->act_start ? p->n_acts + 1 : 1) * sizeof(int));
    double *t = malloc((size_t)(n + 1) * sizeof(double)); /* per a: time of [a, b) */
    signed char *fit = malloc((size_t)(n + 1));            /* per a: [a, b) fits */
    ipu_split_t r = {.stages = S};
    r.start = malloc((size_t)(S + 1) * sizeof(int));
    r.stage_ms = malloc((size_t)S * sizeof(double));
    r.stage_mem = malloc((size_t)S * sizeof(size_t));
    if (!best || !arg || !prefix || !stamp || !astamp || !t || !fit || !r.start || !r.stage_ms ||
        !r.stage_mem) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory partitioning");
        goto out;
    }
    prefix[0] = 0;
    for (int i = 0; i < n; i++)
        prefix[i + 1] = prefix[i] + p->ms[i];
    for (size_t i = 0; i < (size_t)S * (size_t)(n + 1); i++) {
        best[i] = DBL_MAX;
        arg[i] = -1;
    }
    for (int c = 0; c < p->n_consts; c++)
        stamp[c] = -1;
    for (int c = 0; p->act_start && c < p->n_acts; c++)
        astamp[c] = -1;
    for (int b = 1; b <= n; b++) {
        size_t w = 0, live = 0, scratch = 0, acts = 0;
        int lo = b; /* ranges [a, b) with a >= lo are under the lower bound */
        /* a decreasing: the lower bound only grows */
        for (int a = b - 1; a >= 0; a--) {
            if (p->live_bytes[a] > live)
                live = p->live_bytes[a];
            if (p->scratch_bytes && p->scratch_bytes[a] > scratch)
                scratch = p->scratch_bytes[a];
            for (int k = p->const_start[a]; k < p->const_start[a + 1]; k++) {
                int c = p->const_ids[k];
                if (stamp[c] != b) {
                    stamp[c] = b;
                    w += p->const_bytes[c];
                }
            }
            if (p->act_start)
                for (int k = p->act_start[a]; k < p->act_start[a + 1]; k++) {
                    int c = p->act_ids[k];
                    if (astamp[c] != b) {
                        astamp[c] = b;
                        acts += p->act_bytes[c];
                    }
                }
            if (w + live + scratch > cap)
                break;
            lo = a;
            t[a] = prefix[b] - prefix[a] + p->cut_ms[a] + p->cut_ms[b];
            /* 1: fits; -1: need() says, asked only if the range could be chosen */
            fit[a] = !p->need || !p->capacity || (p->act_start && w + scratch + acts <= cap) ? 1 : -1;
        }
        /* for s + 1 stages, the fitting range with the smallest bottleneck
         * (ties: the shortest); need() is asked in that order until one fits.
         * It need not grow with the range, so a longer one may fit. */
        for (int s = 0; s < S; s++) {
            for (;;) {
                int ba = -1;
                double bm = DBL_MAX;
                for (int a = s == 0 ? 0 : b - 1; a >= lo && a >= s; a--) {
                    double prev = s ? best[(size_t)(s - 1) * (size_t)(n + 1) + (size_t)a] : 0;
                    if (fit[a] == 0 || prev == DBL_MAX)
                        continue;
                    double m = prev > t[a] ? prev : t[a];
                    if (m < bm) {
                        bm = m;
                        ba = a;
                    }
                }
                if (ba < 0)
                    break;
                if (fit[ba] < 0)
                    fit[ba] = p->need(p->need_arg, ba, b) <= cap;
                if (fit[ba]) {
                    best[(size_t)s * (size_t)(n + 1) + (size_t)b] = bm;
                    arg[(size_t)s * (size_t)(n + 1) + (size_t)b] = ba;
                    break;
                }
            }
        }
    }
    size_t last = (size_t)(S - 1) * (size_t)(n + 1) + (size_t)n;
    if (best[last] == DBL_MAX) {
        for (int i = 0; i < n; i++) {
            size_t m = ipu_split_range_mem(p, i, i + 1);
            if (m > cap) {
                st = ipu_error(IPU_ERR_NO_MEMORY, "node %d alone needs %zu bytes, more than an IPU's %zu",
                               i, m, cap);
                goto out;
            }
        }
        st = ipu_error(IPU_ERR_NO_MEMORY, "no split into %d stages fits %zu bytes per IPU", S, cap);
        goto out;
    }
    r.start[S] = n;
    for (int s = S - 1, b = n; s >= 0; s--) {
        int a = arg[(size_t)s * (size_t)(n + 1) + (size_t)b];
        r.start[s] = a;
        b = a;
    }
    r.bottleneck_ms = 0;
    for (int s = 0; s < S; s++) {
        r.stage_ms[s] = ipu_split_range_ms(p, r.start[s], r.start[s + 1]);
        r.stage_mem[s] = ipu_split_range_mem(p, r.start[s], r.start[s + 1]);
        if (r.stage_ms[s] > r.bottleneck_ms)
            r.bottleneck_ms = r.stage_ms[s];
    }
    *out = r;
    memset(&r, 0, sizeof(r));
out:
    ipu_split_free(&r);
    free(fit);
    free(t);
    free(astamp);
    free(stamp);
    free(prefix);
    free(arg);
    free(best);
    return st;
}

void ipu_split_free(ipu_split_t *s)
{
    if (s == NULL)
        return;
    free(s->start);
    free(s->stage_ms);
    free(s->stage_mem);
    memset(s, 0, sizeof(*s));
}
