/* Weights an IPU reads on every run (its weights in oneDNN's layouts) in
 * transparent huge pages: a run streams them all, and in 4 KiB pages every
 * page of them costs a TLB miss per run (bench/results/models.md). */
#ifndef IPU_COMMON_HUGEALLOC_H
#define IPU_COMMON_HUGEALLOC_H

#include <stddef.h>

/* Huge page size asked for (x86-64's 2 MiB), and the chunks small buffers
 * share. */
#define IPU_HUGE_PAGE ((size_t)2 << 20)
#define IPU_POOL_CHUNK ((size_t)8 << 20)

/* bytes (at least 1) of uninitialised memory, 64-byte aligned, that lives
 * until ipu_free_pooled(). From IPU_POOL_CHUNK / 4 bytes up a buffer is its
 * own allocation, aligned to IPU_HUGE_PAGE; smaller ones are carved out of
 * shared chunks of IPU_POOL_CHUNK bytes (the first with room), so that many
 * small weights share huge pages too; a chunk is released with its last
 * buffer. The whole huge pages of both are advised as such before their
 * first touch (madvise MADV_HUGEPAGE: taken where the kernel's transparent
 * huge pages are "always" or "madvise", a hint only). Thread-safe. NULL
 * when out of memory. */
void *ipu_alloc_pooled(size_t bytes);
/* Release p from ipu_alloc_pooled() (NULL: nothing). */
void ipu_free_pooled(void *p);

#endif
