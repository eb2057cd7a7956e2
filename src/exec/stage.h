/* A pipeline stage: an ordered subset of a graph's nodes with its buffer
 * plan, run by one device. On one rank without pipelining the whole graph is
 * one stage. */
#ifndef IPU_EXEC_STAGE_H
#define IPU_EXEC_STAGE_H

#include "exec/plan.h"

#include <stdint.h>

typedef struct ipu_stage {
    const ipu_graph_t *g;   /* borrowed; must outlive the stage */
    int *nodes;             /* node indices in execution order (folded excluded) */
    int n_nodes;
    int *inputs;            /* values fed from outside (graph inputs, boundary) */
    int n_inputs;
    int *outputs;           /* values read from outside after a run */
    int n_outputs;
    ipu_buffer_plan_t plan;
    size_t scratch_bytes;   /* largest op->scratch() of its nodes */
    size_t weight_bytes;    /* bytes of the constants its nodes read */
    double *node_ms;        /* per node, accumulated run time if profiling, else NULL */
} ipu_stage_t;

/* Build the stage of g running nodes[0..n) (topological order; folded nodes
 * are skipped), fed with inputs[] and producing outputs[] (value indices).
 * Errors: IPU_ERR_NO_MEMORY. */
ipu_status_t ipu_stage_build(const ipu_graph_t *g, const int *nodes, int n,
                             const int *inputs, int n_inputs,
                             const int *outputs, int n_outputs, ipu_stage_t *out);
void ipu_stage_free(ipu_stage_t *s);
/* Start accumulating per-node run times in s->node_ms (zeroed). */
ipu_status_t ipu_stage_profile(ipu_stage_t *s);

/* Run the stage's kernels on arena (plan.arena_bytes) with scratch
 * (scratch_bytes); inputs must already be in the arena. threads: for kernels.
 * Errors: the failing kernel's status (message names the node). */
ipu_status_t ipu_stage_run(const ipu_stage_t *s, uint8_t *arena, void *scratch, int threads);

#endif
