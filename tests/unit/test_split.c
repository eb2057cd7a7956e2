/* The partitioner's exact split against brute force over every contiguous
 * split of small random cost profiles, with and without memory caps, with
 * per-item scratch, and with a need() that adds a random, not monotone,
 * amount to each range (as a stage's activation arena is). */
#include "partition/split.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <cmocka.h>

#define NMAX 11

typedef struct {
    int n, nc;
    double ms[NMAX], cut[NMAX + 1];
    size_t live[NMAX], cbytes[8], scratch[NMAX];
    int cstart[NMAX + 1], cids[NMAX * 3];
    int with_need;                      /* the problem gets need() */
    size_t extra[NMAX + 1][NMAX + 1];   /* need(a, b) - the lower bound */
    int with_acts;                      /* and activations: need() <= their upper bound */
    int astart[NMAX + 1], aids[NMAX * 2];
    size_t abytes[8];
} profile_t;

static void random_profile(profile_t *pr)
{
    pr->n = 2 + rand() % (NMAX - 1);
    pr->nc = 1 + rand() % 8;
    for (int c = 0; c < pr->nc; c++)
        pr->cbytes[c] = (size_t)(1 + rand() % 100);
    int k = 0;
    for (int i = 0; i < pr->n; i++) {
        pr->ms[i] = (rand() % 1000) / 10.0;
        pr->live[i] = (size_t)(rand() % 50);
        pr->scratch[i] = rand() % 2 ? (size_t)(rand() % 40) : 0;
        pr->cstart[i] = k;
        int m = rand() % 3; /* constants shared between items, as tied weights are */
        for (int j = 0; j < m; j++)
            pr->cids[k++] = rand() % pr->nc;
    }
    pr->cstart[pr->n] = k;
    pr->cut[0] = pr->cut[pr->n] = 0;
    for (int i = 1; i < pr->n; i++)
        pr->cut[i] = (rand() % 100) / 10.0;
    pr->with_need = rand() % 2;
    for (int a = 0; a <= pr->n; a++)
        for (int b = 0; b <= pr->n; b++)
            pr->extra[a][b] = (size_t)(rand() % 60);
    pr->with_acts = pr->with_need && rand() % 2;
    for (int c = 0; c < 8; c++)
        pr->abytes[c] = (size_t)(rand() % 40);
    for (int i = 0, k = 0; i < pr->n; i++) { /* an item's live bytes are among its activations */
        pr->astart[i] = k;
        for (int j = 1 + rand() % 2; j > 0; j--)
            pr->aids[k++] = rand() % 8;
        pr->astart[i + 1] = k;
        if (pr->with_acts)
            pr->live[i] = (size_t)rand() % (pr->abytes[pr->aids[pr->astart[i]]] + 1);
    }
}

static size_t range_mem(const profile_t *pr, int a, int b);

static size_t need(void *arg, int a, int b)
{
    const profile_t *pr = arg;
    return range_mem(pr, a, b);
}

static ipu_split_problem_t problem(const profile_t *pr, int S, size_t cap)
{
    ipu_split_problem_t p = {.n = pr->n, .stages = S, .ms = pr->ms, .cut_ms = pr->cut,
                             .live_bytes = pr->live, .const_start = pr->cstart,
                             .const_ids = pr->cids, .const_bytes = pr->cbytes,
                             .n_consts = pr->nc, .capacity = cap, .scratch_bytes = pr->scratch};
    if (pr->with_need) {
        p.need = need;
        p.need_arg = (void *)pr;
    }
    if (pr->with_acts) {
        p.act_start = pr->astart;
        p.act_ids = pr->aids;
        p.act_bytes = pr->abytes;
        p.n_acts = 8;
    }
    return p;
}

/* Brute force: every placement of S-1 cuts among n-1 gaps. Time and memory of
 * a range are recomputed here from the profile, not by the solver. */
static double range_ms(const profile_t *pr, int a, int b)
{
    double t = pr->cut[a] + pr->cut[b];
    for (int i = a; i < b; i++)
        t += pr->ms[i];
    return t;
}

static size_t range_mem(const profile_t *pr, int a, int b)
{
    int used[8] = {0}, touched[8] = {0};
    size_t w = 0, live = 0, scratch = 0, acts = 0;
    for (int i = a; i < b; i++) {
        live = pr->live[i] > live ? pr->live[i] : live;
        scratch = pr->scratch[i] > scratch ? pr->scratch[i] : scratch;
        for (int k = pr->cstart[i]; k < pr->cstart[i + 1]; k++)
            used[pr->cids[k]] = 1;
        for (int k = pr->astart[i]; k < pr->astart[i + 1]; k++)
            touched[pr->aids[k]] = 1;
    }
    for (int c = 0; c < 8; c++) {
        w += c < pr->nc && used[c] ? pr->cbytes[c] : 0;
        acts += touched[c] ? pr->abytes[c] : 0;
    }
    size_t m = w + live + scratch + (pr->with_need ? pr->extra[a][b] : 0);
    return pr->with_acts && w + scratch + acts < m ? w + scratch + acts : m;
}

static double brute(const profile_t *pr, int S, size_t cap, int s, int a, double sofar)
{
    if (s == S - 1) {
        if (cap && range_mem(pr, a, pr->n) > cap)
            return -1;
        double t = range_ms(pr, a, pr->n);
        return t > sofar ? t : sofar;
    }
    double best = -1;
    for (int b = a + 1; b <= pr->n - (S - 1 - s); b++) {
        if (cap && range_mem(pr, a, b) > cap)
            continue;
        double t = range_ms(pr, a, b);
        double r = brute(pr, S, cap, s + 1, b, t > sofar ? t : sofar);
        if (r >= 0 && (best < 0 || r < best))
            best = r;
    }
    return best;
}

static void test_matches_brute_force(void **state)
{
    (void)state;
    srand(11);
    int infeasible = 0, capped = 0, needed = 0, bounded = 0;
    for (int trial = 0; trial < 3000; trial++) {
        profile_t pr;
        random_profile(&pr);
        int S = 1 + rand() % (pr.n < 5 ? pr.n : 5);
        size_t cap = rand() % 2 ? 0 : (size_t)(60 + rand() % 300);
        ipu_split_problem_t p = problem(&pr, S, cap);
        double want = brute(&pr, S, cap, 0, 0, 0);
        ipu_split_t sp;
        ipu_status_t st = ipu_split_solve(&p, &sp);
        if (want < 0) {
            assert_int_equal(st, IPU_ERR_NO_MEMORY);
            infeasible++;
            continue;
        }
        capped += cap != 0;
        needed += cap != 0 && pr.with_need;
        bounded += cap != 0 && pr.with_acts;
        assert_int_equal(st, IPU_OK);
        assert_float_equal(sp.bottleneck_ms, want, 1e-9);
        /* the split returned is valid and achieves the value */
        assert_int_equal(sp.start[0], 0);
        assert_int_equal(sp.start[S], pr.n);
        double worst = 0;
        for (int s = 0; s < S; s++) {
            assert_true(sp.start[s] < sp.start[s + 1]);
            if (cap)
                assert_true(range_mem(&pr, sp.start[s], sp.start[s + 1]) <= cap);
            assert_int_equal(sp.stage_mem[s], range_mem(&pr, sp.start[s], sp.start[s + 1]));
            double t = range_ms(&pr, sp.start[s], sp.start[s + 1]);
            worst = t > worst ? t : worst;
        }
        assert_float_equal(worst, want, 1e-9);
        ipu_split_free(&sp);
    }
    /* the random profiles exercise both the capped and the infeasible paths */
    assert_true(infeasible > 50);
    assert_true(capped > 500);
    assert_true(needed > 250);
    assert_true(bounded > 100);
}

static void test_bad_stage_count(void **state)
{
    (void)state;
    profile_t pr;
    random_profile(&pr);
    ipu_split_problem_t p = problem(&pr, pr.n + 1, 0);
    ipu_split_t sp;
    assert_int_equal(ipu_split_solve(&p, &sp), IPU_ERR_INVALID_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_brute_force),
        cmocka_unit_test(test_bad_stage_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
