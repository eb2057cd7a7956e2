/* libgcl's bulk copy (copy.h): below 2 KiB glibc's memcpy (vector moves)
 * is best; above, a loop of 32-byte loads and destination-aligned stores
 * (plain or non-temporal), four vectors per iteration, cloned for AVX2 as
 * reduce_local.c is. */
#include "collectives/copy.h"
#include "collectives/clones.h"

#include <stdint.h>
#include <string.h>

#pragma GCC diagnostic ignored "-Wpsabi"

typedef char v32 __attribute__((vector_size(32), aligned(32)));

#define SMALL 2048

#if defined(__SSE2__)
#include <emmintrin.h>
static inline __attribute__((always_inline)) void store_nt(char *p, v32 v)
{
    __m128i lo, hi;
    memcpy(&lo, &v, 16);
    memcpy(&hi, (char *)&v + 16, 16);
    _mm_stream_si128((__m128i *)(void *)p, lo);
    _mm_stream_si128((__m128i *)(void *)(p + 16), hi);
}
#else
static inline void store_nt(char *p, v32 v) { *(v32 *)(void *)p = v; }
#endif
#define STORE(p, v, nt)                                                        \
    do {                                                                       \
        if (nt)                                                                \
            store_nt((p), (v));                                                \
        else                                                                   \
            *(v32 *)(void *)(p) = (v);                                         \
    } while (0)

__attribute__((optimize("O3") GCL_CLONES)) static void copy_vec(char *d, const char *s, size_t n,
                                                                int nt)
{
    size_t head = (32 - ((uintptr_t)d & 31)) & 31;
    memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    size_t i = 0;
    for (; i + 128 <= n; i += 128) {
        v32 a, b, c, e;
        memcpy(&a, s + i, 32);
        memcpy(&b, s + i + 32, 32);
        memcpy(&c, s + i + 64, 32);
        memcpy(&e, s + i + 96, 32);
        STORE(d + i, a, nt);
        STORE(d + i + 32, b, nt);
        STORE(d + i + 64, c, nt);
        STORE(d + i + 96, e, nt);
    }
    for (; i + 32 <= n; i += 32) {
        v32 a;
        memcpy(&a, s + i, 32);
        STORE(d + i, a, nt);
    }
    memcpy(d + i, s + i, n - i);
}

void gcl_copy(void *dst, const void *src, size_t n)
{
    if (dst == src || n == 0)
        return;
    if (n < SMALL)
        memcpy(dst, src, n);
    else
        copy_vec(dst, src, n, 0);
}

void gcl_copy_stream(void *dst, const void *src, size_t n)
{
    if (dst == src || n == 0)
        return;
    if (n < SMALL) {
        memcpy(dst, src, n);
        return;
    }
    copy_vec(dst, src, n, 1);
#if defined(__SSE2__)
    _mm_sfence();
#endif
}
