#include "common/hugealloc.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

/* bytes rounded up to a multiple of 64 (64 for 0), 0 when that overflows */
static size_t round64(size_t bytes)
{
    return bytes > SIZE_MAX - 63 ? 0 : bytes ? (bytes + 63) / 64 * 64 : 64;
}

/* padded (a multiple of 64) bytes 64-byte aligned; from IPU_HUGE_PAGE up,
 * aligned to it and its whole huge pages advised (a tail in one would make
 * all of it resident). */
static void *alloc_hot(size_t padded)
{
    if (padded < IPU_HUGE_PAGE)
        return aligned_alloc(64, padded);
    void *p = NULL;
    if (posix_memalign(&p, IPU_HUGE_PAGE, padded) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, padded / IPU_HUGE_PAGE * IPU_HUGE_PAGE, MADV_HUGEPAGE);
#endif
    return p;
}

/* The pool's chunks: [base, base + IPU_POOL_CHUNK), used bytes bumped from
 * the start (a buffer goes to the first chunk with room), live buffers
 * counted; at most MAX_CHUNKS at once (more buffers go to aligned_alloc). */
enum { MAX_CHUNKS = 256 };
static struct chunk {
    char *base;
    size_t used;
    size_t live;
} g_chunks[MAX_CHUNKS];
static int g_n_chunks;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

void *ipu_alloc_pooled(size_t bytes)
{
    size_t need = round64(bytes);
    if (need == 0)
        return NULL;
    if (need >= IPU_POOL_CHUNK / 4) /* large: its own */
        return alloc_hot(need);
    void *p = NULL;
    pthread_mutex_lock(&g_mu);
    struct chunk *c = NULL; /* the first with room: the tails fill up */
    for (int i = 0; i < g_n_chunks && c == NULL; i++)
        if (g_chunks[i].used + need <= IPU_POOL_CHUNK)
            c = &g_chunks[i];
    if (c == NULL && g_n_chunks < MAX_CHUNKS) {
        char *base = alloc_hot(IPU_POOL_CHUNK);
        c = base ? &g_chunks[g_n_chunks++] : NULL;
        if (c)
            *c = (struct chunk){.base = base};
    }
    if (c && c->used + need <= IPU_POOL_CHUNK) {
        p = c->base + c->used;
        c->used += need;
        c->live++;
    }
    pthread_mutex_unlock(&g_mu);
    return p ? p : aligned_alloc(64, need);
}

void ipu_free_pooled(void *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_n_chunks; i++) {
        struct chunk *c = &g_chunks[i];
        if ((char *)p >= c->base && (char *)p < c->base + IPU_POOL_CHUNK) {
            if (--c->live == 0) { /* the last of its buffers: the chunk goes */
                free(c->base);
                g_chunks[i] = g_chunks[--g_n_chunks];
            }
            pthread_mutex_unlock(&g_mu);
            return;
        }
    }
    pthread_mutex_unlock(&g_mu);
    free(p); /* one of its own (large, or no chunk left) */
}
