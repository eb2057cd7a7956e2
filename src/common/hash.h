/* FNV-1a, 64-bit (Fowler, Noll and Vo; IETF draft-eastlake-fnv): a fast,
 * non-cryptographic hash for names, digests of outputs and of model files. */
#ifndef IPU_COMMON_HASH_H
#define IPU_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>

#define IPU_FNV64_BASIS 14695981039346656037ULL

/* h folded with the n bytes at p; start from IPU_FNV64_BASIS. */
static inline uint64_t ipu_fnv1a64(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

#endif
