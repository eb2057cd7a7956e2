/* The partitioner's exact split against brute force over every contiguous
 * split of small random cost profiles, with and without memory caps. */
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
    size_t live[NMAX], cbytes[8];
    int cstart[NMAX + 1], cids[NMAX * 3];
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
        pr->cstart[i] = k;
        int m = rand() % 3; /* constants shared between items, as tied weights are */
        for (int j = 0; j < m; j++)
            pr->cids[k++] = rand() % pr->nc;
    }
    pr->cstart[pr->n] = k;
    pr->cut[0] = pr->cut[pr->n] = 0;
    for (int i = 1; i < pr->n; i++)
        pr->cut[i] = (rand() % 100) / 10.0;
}

static ipu_split_problem_t problem(const profile_t *pr, int S, size_t cap)
{
    ipu_split_problem_t p = {.n = pr->n, .stages = S, .ms = pr->ms, .cut_ms = pr->cut,
                             .live_bytes = pr->live, .const_start = pr->cstart,
                             .const_ids = pr->cids, .const_bytes = pr->cbytes,
                             .n_consts = pr->nc, .capacity = cap};
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
    int used[8] = {0};
    size_t w = 0, live = 0;
    for (int i = a; i < b; i++) {
        live = pr->live[i] > live ? pr->live[i] : live;
        for (int k = pr->cstart[i]; k < pr->cstart[i + 1]; k++)
            used[pr->cids[k]] = 1;
    }
    for (int c = 0; c < pr->nc; c++)
        w += used[c] ? pr->cbytes[c] : 0;
    return w + live;
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
    int infeasible = 0, capped = 0;
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
