/* Buffer planner: places every activation of a stage in one arena so that
 * buffers whose lifetimes do not overlap share memory. Greedy by size, as in
 * TensorFlow Lite's arena planner ("Efficient Memory Management for Deep
 * Neural Net Inference", Pisarchyk & Lee, 2020, greedy-by-size offsets):
 * buffers are placed largest first at the lowest offset that does not collide
 * with an already placed buffer live at the same time. Peak memory is then
 * close to the largest set of simultaneously live activations. */
#ifndef IPU_EXEC_PLAN_H
#define IPU_EXEC_PLAN_H

#include "graph/op.h"

#define IPU_PLAN_NONE ((size_t)-1)

typedef struct ipu_buffer_plan {
    size_t arena_bytes;   /* size of the arena (64-byte aligned offsets) */
    size_t *offset;       /* per value index: offset in the arena, or IPU_PLAN_NONE
                             (constants, absent values, values of other stages) */
    unsigned char *alias; /* per node index: 1 if its output 0 shares input 0's
                             buffer and run() is skipped */
    size_t live_bytes;    /* sum of all planned buffers (without reuse), for reports */
} ipu_buffer_plan_t;

/* Plan the buffers of the nodes nodes[0..n) (in execution order, folded nodes
 * excluded by the caller) of g, whose shapes are inferred. Values fed from
 * outside the stage (graph inputs or boundary tensors, listed in extern_in)
 * live from the start; values in keep (graph outputs, boundary outputs) live
 * to the end. Two values share one buffer (one offset, counted once in
 * live_bytes) when:
 *  - a view (ipu_plan_is_view) aliases its input, and the node is not run;
 *  - a node sums input k into its output (ipu_op_t.inplace gives k) and no
 *    later node reads that input, which is not fed from outside, and the
 *    node reads it in no other slot: the output is written over it.
 * Errors: IPU_ERR_NO_MEMORY. */
ipu_status_t ipu_plan_buffers(const ipu_graph_t *g, const int *nodes, int n,
                              const int *extern_in, int n_extern_in,
                              const int *keep, int n_keep, ipu_buffer_plan_t *out);
void ipu_plan_free(ipu_buffer_plan_t *p);

/* Whether node n is a view the planner aliases and does not run: an op
 * flagged IPU_OP_ALIAS_INPUT0 with no second output, from an activation to
 * an activation of the same bytes. */
int ipu_plan_is_view(const ipu_graph_t *g, const ipu_node_t *n);

#endif
