/* Exact min-bottleneck contiguous split of a topological order into S
 * pipeline stages under a per-IPU memory capacity.
 *
 * Items are nodes in topological order. Stage s runs items [start[s],
 * start[s+1]). Its time is the sum of its items' times plus the transfers at
 * its two cuts; its memory is the distinct constants its items read plus the
 * largest live_bytes and the largest scratch_bytes of its items, or, when
 * the problem has a need() function, what need() says (then the first sum is
 * only a lower bound of it). The throughput of a pipeline is set by its
 * slowest stage, so the split minimises max_s time(s) subject to memory(s)
 * <= capacity for every s: the linear-partition dynamic programme (as in
 * Skiena, The Algorithm Design Manual, 8.5, with max for sum), O(S n^2),
 * where each range's lower bound is kept incrementally and the scan stops
 * once it no longer fits; need() is asked only about ranges under it and
 * over the upper bound (the act_* arrays) if there is one. */
#ifndef IPU_PARTITION_SPLIT_H
#define IPU_PARTITION_SPLIT_H

#include "common/status.h"

#include <stddef.h>

typedef struct ipu_split_problem {
    int n;                     /* items */
    int stages;                /* S >= 1; each stage gets at least one item */
    const double *ms;          /* [n] time of item i */
    const double *cut_ms;      /* [n+1] transfer time of a cut before item i; 0 at 0 and n */
    const size_t *live_bytes;  /* [n] activation bytes live while item i runs */
    const int *const_start;    /* [n+1] CSR: constants read by item i are */
    const int *const_ids;      /*   const_ids[const_start[i] .. const_start[i+1]) */
    const size_t *const_bytes; /* [n_consts] */
    int n_consts;
    size_t capacity;           /* bytes per IPU; 0 for unlimited */
    const size_t *scratch_bytes; /* [n] scratch of item i, or NULL for none */
    /* Optional: the memory of the stage of items [a, b) (SIZE_MAX when it
     * cannot be told, which does not fit); it must not be below the sum
     * above. Asked only when capacity is set, and for range_mem(). */
    size_t (*need)(void *arg, int a, int b);
    void *need_arg;
    /* Optional, with need(): the activations item i touches, as the constants
     * above; need() must not exceed the range's weights + largest scratch +
     * its distinct activations' bytes, and a range under the capacity by
     * that sum fits without asking need(). */
    const int *act_start, *act_ids;
    const size_t *act_bytes;
    int n_acts;
} ipu_split_problem_t;

typedef struct ipu_split {
    int stages;
    int *start;                /* [stages+1]; start[0] = 0, start[stages] = n */
    double *stage_ms;          /* [stages] */
    size_t *stage_mem;         /* [stages] */
    double bottleneck_ms;      /* max of stage_ms */
} ipu_split_t;

/* Solve p. Errors: IPU_ERR_INVALID_ARG (stages < 1 or > n), IPU_ERR_NO_MEMORY
 * when no split fits the capacity (the message says which item alone
 * exceeds it if one does), or malloc failure. */
ipu_status_t ipu_split_solve(const ipu_split_problem_t *p, ipu_split_t *out);
/* Time and memory of items [a, b) as the solver counts them. */
double ipu_split_range_ms(const ipu_split_problem_t *p, int a, int b);
size_t ipu_split_range_mem(const ipu_split_problem_t *p, int a, int b);
void ipu_split_free(ipu_split_t *s);

#endif
