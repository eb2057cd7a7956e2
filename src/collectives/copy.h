/* libgcl's bulk copy: memcpy semantics (no overlap), for the staging copies
 * of the shared-memory path and the schedules.
 *
 * Why not memcpy: glibc 2.36 copies 2 KiB .. 512 KiB with `rep movsb`
 * (FSRM), and on AMD Zen 3 that runs many times slower than a vector copy
 * (bench/results/libgcl-tuning.md) whenever the destination sits
 * 1-31 bytes past the source modulo 64 -- as it does between a malloc'd user
 * buffer (16-byte aligned) and a page-aligned staging buffer. gcl_copy uses
 * 32-byte vector moves with aligned stores for those sizes, whatever the
 * alignment. */
#ifndef GCL_COPY_H
#define GCL_COPY_H

#include <stddef.h>

/* Copy n bytes from src to dst (they must not overlap; dst == src is a
 * no-op). Never fails. */
void gcl_copy(void *dst, const void *src, size_t n);
/* The same with non-temporal (streaming) stores from 2 KiB: for outputs
 * larger than the cache, which are not read again soon; the writes skip the
 * read-for-ownership. Ends with a store fence. */
void gcl_copy_stream(void *dst, const void *src, size_t n);

#endif
