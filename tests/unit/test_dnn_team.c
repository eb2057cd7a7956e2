/* The OpenMP team oneDNN's primitives run on is the IPU's (--threads), on
 * whichever thread made them: oneDNN fixes some kernels' work split (the
 * 1x1 and direct convolutions' nthr) from the creating thread's OpenMP
 * maximum and runs them with that many threads whatever the runner's team.
 * A primitive made on a thread whose maximum is the machine's core count
 * and run with a team of one put a second, spinning thread on the IPU's one
 * core (each call then waited for a scheduler time slice). Observable: the
 * process's thread count, which a parallel region of more threads raises
 * (libgomp keeps its team's threads). Reference: a run with --threads 1
 * starts no thread; with 2, at most one more. And with a team of 2, a
 * primitive too small to be worth waking the team for (exec/onednn.c:
 * IPU_TEAM_MIN_BYTES of source, weights and destination) is made for and run
 * by one thread: it starts none, while a larger one starts the second.
 * The host thread's own team (a load's weight reorders run there) ends with
 * ipu_dnn_end_host_team(): libgomp would otherwise count its threads with
 * the IPUs' teams and throttle their spinning. Our own row loops
 * (ipu_par_rows) split their rows over the team by the same size rule. */
#include "exec/onednn.h"
#include "exec/ops/ew.h"
#include "harness.h"

#include <math.h>
#include <omp.h>
#include <stdatomic.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

static int process_threads(void)
{
    char line[256];
    int n = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    fclose(f);
    return n;
}

/* Conv C -> C on H x H with a k x k kernel, every value 0.01: the output
 * is k*k*C*0.01*0.01 inside the padding-free interior (pads 0). */
static void run_conv(int64_t C, int64_t H, int64_t k)
{
    int64_t xd[4] = {1, C, H, H}, wd[4] = {C, C, k, k};
    size_t nx = (size_t)(C * H * H), nw = (size_t)(C * C * k * k);
    float *x = malloc(nx * sizeof(float)), *w = malloc(nw * sizeof(float));
    assert_non_null(x);
    assert_non_null(w);
    for (size_t i = 0; i < nx; i++)
        x[i] = 0.01f;
    for (size_t i = 0; i < nw; i++)
        w[i] = 0.01f;
    op_case_t *c = oc_new("Conv", 13, 3, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 4, xd, x);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 4, wd, w);
    oc_absent(c, 2);
    assert_int_equal(oc_run(c), IPU_OK);
    const ipu_tensor_t *y = oc_output(c, 0);
    int64_t o = H - k + 1;
    assert_shape(y, 4, (int64_t[]){1, C, o, o});
    float want = (float)(k * k * C) * 1e-4f;
    const float *yd = y->data;
    for (int64_t i = 0; i < C * o * o; i++)
        assert_true(yd[i] > want * 0.999f && yd[i] < want * 1.001f);
    oc_free(c);
    free(x);
    free(w);
}

static void test_team_of_one(void **state)
{
    (void)state;
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
        skip(); /* one core: every maximum is 1 */
    int before = process_threads();
    assert_true(before >= 1);
    ipu_dnn_set_threads(1);
    run_conv(256, 14, 1); /* oneDNN's 1x1 kernels */
    run_conv(64, 16, 3);
    assert_int_equal(process_threads(), before);
}

static void test_small_on_one(void **state)
{
    (void)state;
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
        skip();
    int before = process_threads();
    ipu_dnn_set_threads(2);
    oc_threads = 2;
    run_conv(8, 8, 1); /* 2 + 0.25 + 2 KiB */
    run_conv(8, 10, 3); /* direct: Winograd's weight reorder fixes its team when made */
    assert_int_equal(process_threads(), before);
    run_conv(256, 14, 1); /* 196 + 256 + 196 KiB */
    assert_int_equal(process_threads(), before + 1);
    oc_threads = 1;
    ipu_dnn_set_threads(1);
}

/* The process's thread count once it is n (n < 0: once two reads 20 ms
 * apart agree), or after 2 s what it is: a joined thread leaves /proc's
 * count a moment after pthread_join returns. */
static int threads_settled(int n)
{
    int got = process_threads();
    for (int i = 0; i < 100; i++) {
        usleep(20000);
        int now = process_threads();
        if (n >= 0 ? now == n : now == got) {
            got = now;
            break;
        }
        got = now;
    }
    return got;
}

static int team_teardown(void **state)
{
    (void)state;
    ipu_dnn_end_host_team();
    oc_threads = 1;
    ipu_dnn_set_threads(1);
    return 0;
}

static void test_end_host_team(void **state)
{
    (void)state;
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
        skip();
    ipu_dnn_end_host_team(); /* whatever the tests before left */
    int before = threads_settled(-1);
    ipu_dnn_set_threads(2);
    oc_threads = 2;
    run_conv(256, 14, 1);
    assert_int_equal(process_threads(), before + 1);
    ipu_dnn_end_host_team();
    assert_int_equal(threads_settled(before), before);
    run_conv(256, 14, 1); /* a later region starts its team again */
    assert_int_equal(process_threads(), before + 1);
    ipu_dnn_end_host_team();
    assert_int_equal(threads_settled(before), before);
}

/* the chunks ipu_par_rows handed out */
typedef struct chunks {
    atomic_int n;
    int64_t r0[8], r1[8];
    int thread[8];
} chunks_t;

static void record(void *arg, int64_t r0, int64_t r1)
{
    chunks_t *c = arg;
    int i = atomic_fetch_add(&c->n, 1);
    if (i < 8) {
        c->r0[i] = r0;
        c->r1[i] = r1;
        c->thread[i] = omp_get_thread_num();
    }
}

/* rows covered once each, in order of r0 */
static void assert_cover(chunks_t *c, int64_t rows, int want_chunks)
{
    int n = atomic_load(&c->n);
    assert_int_equal(n, want_chunks);
    int64_t at = 0;
    for (int k = 0; k < n; k++) {
        int j = -1;
        for (int i = 0; i < n; i++)
            if (c->r0[i] == at)
                j = i;
        assert_true(j >= 0);
        assert_true(c->r1[j] > at);
        at = c->r1[j];
    }
    assert_true(at == rows);
}

static void test_par_rows(void **state)
{
    (void)state;
    chunks_t c = {0};
    ipu_par_rows(2, 1001, IPU_TEAM_MIN_BYTES, record, &c); /* two threads */
    assert_cover(&c, 1001, 2);
    assert_int_not_equal(c.thread[0], c.thread[1]);
    memset(&c, 0, sizeof c);
    ipu_par_rows(2, 1001, IPU_TEAM_MIN_BYTES - 1, record, &c); /* too small to wake the team */
    assert_cover(&c, 1001, 1);
    memset(&c, 0, sizeof c);
    ipu_par_rows(4, 3, IPU_TEAM_MIN_BYTES, record, &c); /* fewer rows than threads */
    assert_cover(&c, 3, 3);
    memset(&c, 0, sizeof c);
    ipu_par_rows(1, 1001, (size_t)1 << 30, record, &c);
    assert_cover(&c, 1001, 1);
    memset(&c, 0, sizeof c);
    ipu_par_rows(2, 0, (size_t)1 << 30, record, &c);
    assert_int_equal(atomic_load(&c.n), 0);
    ipu_dnn_end_host_team();
    threads_settled(-1);
}

/* One op on [1, C, H, W] operands (b NULL: unary) on a team of threads;
 * returns a malloc'd copy of output 0. */
static float *run_ew(const char *op, int threads, const float *a, const int64_t *ad, const float *b,
                     const int64_t *bd, size_t n_out)
{
    op_case_t *c = oc_new(op, 13, b ? 2 : 1, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 4, ad, a);
    if (b)
        oc_input(c, 1, IPU_DTYPE_FLOAT, 4, bd, b);
    oc_threads = threads;
    assert_int_equal(oc_run(c), IPU_OK);
    oc_threads = 1;
    float *y = malloc(n_out * sizeof(float));
    assert_non_null(y);
    memcpy(y, oc_output(c, 0)->data, n_out * sizeof(float));
    oc_free(c);
    return y;
}

/* The element-wise ops split their rows (or their one row's elements) over
 * the team, as do the strided copies and Softmax: each result is the
 * one-thread result, bit for bit, and the reference's (one float operation
 * each, rounded alike; Tanh and Softmax within 1e-6 of double precision).
 * W is odd, so chunks start off the vector width; the first 2-thread op
 * must start the team's second thread (the parallel path ran). */
static void test_par_ew(void **state)
{
    (void)state;
    ipu_dnn_end_host_team();
    const int before = threads_settled(-1);
    enum { C = 48, H = 40, W = 41 };
    const int64_t n = (int64_t)C * H * W, hw = (int64_t)H * W; /* 308 KiB a tensor */
    int64_t xd[4] = {1, C, H, W}, x2d[4] = {2, C, H, W}, sd[4] = {1, C, 1, 1};
    float *x = malloc(2 * (size_t)n * sizeof(float)), *z = malloc((size_t)n * sizeof(float));
    float s[C];
    assert_non_null(x);
    assert_non_null(z);
    for (int64_t i = 0; i < 2 * n; i++)
        x[i] = (float)((i * 7919) % 2001 - 1000) / 97.0f;
    for (int64_t i = 0; i < n; i++)
        z[i] = (float)((i * 104729) % 1999 - 999) / 89.0f;
    for (int c = 0; c < C; c++)
        s[c] = 0.25f + (float)c / 7.0f;
    /* per-channel Mul (the squeeze-and-excitation scale): C rows of H*W */
    float *m1 = run_ew("Mul", 1, x, xd, s, sd, (size_t)n), *m2 = run_ew("Mul", 2, x, xd, s, sd, (size_t)n);
    assert_int_equal(process_threads(), before + 1);
    for (int64_t i = 0; i < n; i++)
        assert_true(m2[i] == x[i] * s[i / hw]);
    assert_memory_equal(m1, m2, (size_t)n * sizeof(float));
    /* the same on a batch of 2: two outer dimensions to unravel */
    float *b1 = run_ew("Mul", 1, x, x2d, s, sd, 2 * (size_t)n), *b2 = run_ew("Mul", 2, x, x2d, s, sd, 2 * (size_t)n);
    for (int64_t i = 0; i < 2 * n; i++)
        assert_true(b2[i] == x[i] * s[i / hw % C]);
    assert_memory_equal(b1, b2, 2 * (size_t)n * sizeof(float));
    /* equal shapes: one row, split by elements */
    float *a1 = run_ew("Sub", 1, x, xd, z, xd, (size_t)n), *a2 = run_ew("Sub", 2, x, xd, z, xd, (size_t)n);
    for (int64_t i = 0; i < n; i++)
        assert_true(a2[i] == x[i] - z[i]);
    assert_memory_equal(a1, a2, (size_t)n * sizeof(float));
    /* a Sum of three: the second input added in place into the output */
    op_case_t *c = oc_new("Sum", 13, 3, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 4, xd, x);
    oc_input(c, 1, IPU_DTYPE_FLOAT, 4, xd, z);
    oc_input(c, 2, IPU_DTYPE_FLOAT, 4, sd, s);
    oc_threads = 2;
    assert_int_equal(oc_run(c), IPU_OK);
    oc_threads = 1;
    const float *sum = oc_output(c, 0)->data;
    for (int64_t i = 0; i < n; i++)
        assert_true(sum[i] == (x[i] + z[i]) + s[i / hw]);
    oc_free(c);
    /* unary maps */
    float *t1 = run_ew("Tanh", 1, x, xd, NULL, NULL, (size_t)n), *t2 = run_ew("Tanh", 2, x, xd, NULL, NULL, (size_t)n);
    assert_memory_equal(t1, t2, (size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i += 997)
        assert_true(fabs(t2[i] - tanh(x[i])) <= 1e-6);
    /* a Transpose to channels-last (ipu_mv_copy's cache blocks, split along H) */
    c = oc_new("Transpose", 13, 1, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 4, xd, x);
    ipu_node_add_attr_ints(oc_node(c), "perm", 4, (int64_t[]){0, 2, 3, 1});
    oc_threads = 2;
    assert_int_equal(oc_run(c), IPU_OK);
    oc_threads = 1;
    const float *tr = oc_output(c, 0)->data;
    for (int64_t ch = 0; ch < C; ch++)
        for (int64_t p = 0; p < hw; p++)
            assert_true(tr[p * C + ch] == x[ch * hw + p]);
    oc_free(c);
    /* a Slice reversing W (a negative source stride), split along C */
    c = oc_new("Slice", 13, 5, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 4, xd, x);
    oc_const(c, 1, IPU_DTYPE_INT64, 1, (int64_t[]){1}, (int64_t[]){-1});
    oc_const(c, 2, IPU_DTYPE_INT64, 1, (int64_t[]){1}, (int64_t[]){INT64_MIN});
    oc_const(c, 3, IPU_DTYPE_INT64, 1, (int64_t[]){1}, (int64_t[]){3});
    oc_const(c, 4, IPU_DTYPE_INT64, 1, (int64_t[]){1}, (int64_t[]){-1});
    oc_threads = 2;
    assert_int_equal(oc_run(c), IPU_OK);
    oc_threads = 1;
    const float *rev = oc_output(c, 0)->data;
    for (int64_t r = 0; r < (int64_t)C * H; r++)
        for (int64_t w = 0; w < W; w++)
            assert_true(rev[r * W + w] == x[r * W + W - 1 - w]);
    oc_free(c);
    /* an Expand of [1, 1, H, W] over C (a zero source stride, split along C) */
    c = oc_new("Expand", 13, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 4, (int64_t[]){1, 1, H, W}, z);
    oc_const(c, 1, IPU_DTYPE_INT64, 1, (int64_t[]){4}, xd);
    oc_threads = 2;
    assert_int_equal(oc_run(c), IPU_OK);
    oc_threads = 1;
    const float *ex = oc_output(c, 0)->data;
    for (int64_t i = 0; i < n; i++)
        assert_true(ex[i] == z[i % hw]);
    oc_free(c);
    /* Softmax and LogSoftmax over the last axis: rows of W split over the team */
    float *s1 = run_ew("Softmax", 1, x, xd, NULL, NULL, (size_t)n), *s2 = run_ew("Softmax", 2, x, xd, NULL, NULL, (size_t)n);
    float *l1 = run_ew("LogSoftmax", 1, x, xd, NULL, NULL, (size_t)n), *l2 = run_ew("LogSoftmax", 2, x, xd, NULL, NULL, (size_t)n);
    assert_memory_equal(s1, s2, (size_t)n * sizeof(float));
    assert_memory_equal(l1, l2, (size_t)n * sizeof(float));
    for (int64_t r = 0; r < (int64_t)C * H; r += 97) { /* rows of both chunks against double math */
        double mx = -INFINITY, sm = 0;
        for (int64_t i = 0; i < W; i++)
            mx = fmax(mx, x[r * W + i]);
        for (int64_t i = 0; i < W; i++)
            sm += exp(x[r * W + i] - mx);
        for (int64_t i = 0; i < W; i++) {
            assert_true(fabs(s2[r * W + i] - exp(x[r * W + i] - mx) / sm) <= 1e-6);
            assert_true(fabs(l2[r * W + i] - (x[r * W + i] - mx - log(sm))) <= 1e-5);
        }
    }
    free(m1), free(m2), free(b1), free(b2), free(a1), free(a2), free(t1), free(t2);
    free(s1), free(s2), free(l1), free(l2), free(x), free(z);
    ipu_dnn_end_host_team();
    assert_int_equal(threads_settled(before), before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_end_host_team, team_teardown),
        cmocka_unit_test(test_par_rows),
        cmocka_unit_test(test_par_ew),
        cmocka_unit_test(test_small_on_one),
        cmocka_unit_test(test_team_of_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
