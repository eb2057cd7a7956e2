/* GCL_CLONES: the target_clones attribute list of libgcl's hot kernels
 * (reduce_local.c, copy.c): an AVX2 (x86-64-v3) clone and the default
 * target, picked at load time by the CPU, as IPU_EW_HOT in
 * src/exec/ops/ew.h does for the executor's kernels. Use it as
 * __attribute__((optimize("O3") GCL_CLONES)). */
#ifndef GCL_CLONES_H
#define GCL_CLONES_H

#if defined(__x86_64__) && !defined(IPU_EW_NO_CLONES) && __GNUC__ >= 12
#define GCL_CLONES , target_clones("arch=x86-64-v3", "default")
#elif defined(__x86_64__) && !defined(IPU_EW_NO_CLONES)
#define GCL_CLONES , target_clones("avx2", "default")
#else
#define GCL_CLONES
#endif

#endif
