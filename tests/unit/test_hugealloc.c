/* The weights pool (common/hugealloc): 64-byte alignment, small buffers
 * packed into shared chunks in order and written without overlap, large
 * ones on huge-page boundaries, a chunk released (and its space given out
 * again) with its last buffer, the kernel told (the mappings' VmFlags),
 * and many threads at once. */
#include "common/hugealloc.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static void test_small_share_a_chunk(void **state)
{
    (void)state;
    char *a = ipu_alloc_pooled(100), *b = ipu_alloc_pooled(1), *c = ipu_alloc_pooled(4096);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_int_equal((uintptr_t)a % 64, 0);
    assert_int_equal((uintptr_t)b % 64, 0);
    /* one after the other in the same chunk: 100 rounds up to 128 */
    assert_ptr_equal(b, a + 128);
    assert_ptr_equal(c, b + 64);
    memset(a, 1, 100);
    memset(b, 2, 1);
    memset(c, 3, 4096);
    assert_int_equal(a[99], 1);
    assert_int_equal(b[0], 2);
    assert_int_equal(c[0], 3);
    ipu_free_pooled(a);
    ipu_free_pooled(b);
    ipu_free_pooled(c);
    ipu_free_pooled(NULL);
    assert_null(ipu_alloc_pooled(SIZE_MAX)); /* not a wrapped small size */
    assert_null(ipu_alloc_pooled(SIZE_MAX - 10));
}

static void test_large_on_huge_pages(void **state)
{
    (void)state;
    size_t n = IPU_POOL_CHUNK / 4 + 12345;
    char *p = ipu_alloc_pooled(n);
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % IPU_HUGE_PAGE, 0);
    memset(p, 7, n);
    assert_int_equal(p[n - 1], 7);
    ipu_free_pooled(p);
}

/* a chunk's space comes back once all its buffers are freed: the next
 * buffer is carved from a new chunk's start */
static void test_chunk_released(void **state)
{
    (void)state;
    size_t big = IPU_POOL_CHUNK / 4 - 64; /* the largest pooled size */
    char *a = ipu_alloc_pooled(big);
    assert_non_null(a);
    assert_int_equal((uintptr_t)a % IPU_HUGE_PAGE, 0); /* a new chunk's start */
    char *b = ipu_alloc_pooled(big);
    assert_ptr_equal(b, a + big);
    ipu_free_pooled(a);
    char *c = ipu_alloc_pooled(64); /* a still holds its place: after b */
    assert_ptr_equal(c, b + big);
    ipu_free_pooled(b);
    ipu_free_pooled(c); /* the chunk is gone */
    char *d = ipu_alloc_pooled(64);
    assert_non_null(d);
    assert_int_equal((uintptr_t)d % IPU_HUGE_PAGE, 0);
    ipu_free_pooled(d);
}

/* The VmFlags of the mapping holding p (/proc/self/smaps) into flags. */
static int vm_flags(const void *p, char *flags, size_t len)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int in = 0, found = 0;
    while (f && !found && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, ':') != NULL &&
            line[strspn(line, "0123456789abcdef-")] == ' ')
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        else if (in && strncmp(line, "VmFlags:", 8) == 0) {
            size_t n = strlen(line + 8) < len ? strlen(line + 8) : len - 1;
            memcpy(flags, line + 8, n);
            flags[n] = '\0';
            found = 1;
        }
    }
    if (f)
        fclose(f);
    return found;
}

/* the kernel is told: the huge pages of a large buffer and of a chunk are
 * advised (VmFlags "hg", MADV_HUGEPAGE), whatever it then gives */
static void test_kernel_told(void **state)
{
    (void)state;
    char flags[256];
    char *large = ipu_alloc_pooled(4 * IPU_HUGE_PAGE), *small = ipu_alloc_pooled(1000);
    assert_non_null(large);
    assert_non_null(small);
    if (!vm_flags(large, flags, sizeof flags))
        skip(); /* no /proc/self/smaps here */
    assert_non_null(strstr(flags, " hg"));
    assert_true(vm_flags(small, flags, sizeof flags));
    assert_non_null(strstr(flags, " hg"));
    ipu_free_pooled(large);
    ipu_free_pooled(small);
}

enum { THREADS = 8, PER_THREAD = 200 };

/* byte value of buffer i of thread t */
static char mark(unsigned t, int i)
{
    return (char)(1 + (t * PER_THREAD + (unsigned)i) % 251);
}

static void *churn(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg, seed = t;
    char *mine[PER_THREAD];
    size_t size[PER_THREAD];
    void *bad = NULL;
    for (int i = 0; i < PER_THREAD; i++) {
        size[i] = 1 + (size_t)(rand_r(&seed) % 300000);
        if ((mine[i] = ipu_alloc_pooled(size[i])) == NULL)
            return (void *)1;
        memset(mine[i], mark(t, i), size[i]);
    }
    for (int i = 0; i < PER_THREAD; i++) { /* every byte still ours */
        for (size_t k = 0; k < size[i] && bad == NULL; k++)
            if (mine[i][k] != mark(t, i))
                bad = (void *)1;
        ipu_free_pooled(mine[i]);
    }
    return bad;
}

/* threads allocate, fill and free at once: no buffer overlaps another's */
static void test_threads(void **state)
{
    (void)state;
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        assert_int_equal(pthread_create(&th[t], NULL, churn, (void *)(uintptr_t)(t + 1)), 0);
    for (int t = 0; t < THREADS; t++) {
        void *r;
        assert_int_equal(pthread_join(th[t], &r), 0);
        assert_null(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_share_a_chunk),
        cmocka_unit_test(test_large_on_huge_pages),
        cmocka_unit_test(test_chunk_released),
        cmocka_unit_test(test_kernel_told),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
