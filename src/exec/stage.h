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
    size_t scratch_bytes;   /* largest ipu_node_scratch() of its nodes */
    size_t weight_bytes;    /* bytes of the constants its nodes read, and of
                             * what their load() keeps beside them (op->held) */
    size_t winograd_bytes;  /* of those, what Winograd convolutions hold beyond
                             * direct ones (ipu_dnn_winograd_bytes) */
    size_t scratch_direct;  /* scratch_bytes were its Winograd convolutions on
                             * direct kernels (ipu_dnn_scratch_direct) */
    double *node_ms;        /* per node, accumulated run time if profiling, else NULL */
    struct ipu_release *release; /* NULL, or told of each node ipu_stage_load() loads */
} ipu_stage_t;

/* Build the stage of g running nodes[0..n) (topological order; folded nodes
 * are skipped), fed with inputs[] and producing outputs[] (value indices).
 * Errors: IPU_ERR_NO_MEMORY. */
ipu_status_t ipu_stage_build(const ipu_graph_t *g, const int *nodes, int n,
                             const int *inputs, int n_inputs,
                             const int *outputs, int n_outputs, ipu_stage_t *out);

/* Build stage s of a partition of g: stage_of[node] is the stage of every
 * node (-1 for folded ones). The stage runs its nodes in g->order, is fed
 * with the activations they read that none of them produces (graph inputs
 * included), and keeps the activations they produce that a node of another
 * stage reads or that are graph outputs; with IPU_STAGE_FIRST it also gives
 * the graph outputs that are graph inputs, with IPU_STAGE_LAST those that
 * are constants. Each list holds a value once, in order of first use.
 * The pipeline builds its stages with this (exec/prepare.h) and the
 * partitioner (partition/partition.c) measures every candidate stage with
 * it, so the memory a plan reports is the memory the run is charged.
 * Errors: IPU_ERR_NO_MEMORY. */
enum { IPU_STAGE_FIRST = 1, IPU_STAGE_LAST = 2 };
ipu_status_t ipu_stage_build_of(const ipu_graph_t *g, const int *stage_of, int s, unsigned flags,
                                ipu_stage_t *out);
void ipu_stage_free(ipu_stage_t *s);
/* Start accumulating per-node run times in s->node_ms (zeroed). */
ipu_status_t ipu_stage_profile(ipu_stage_t *s);
/* The profile of a stage that ran runs times (> 0): one line per op type
 * (nodes, ms per run, share of the stage's time), slowest first, then the
 * top_nodes slowest nodes (name, op type, ms per run, share). Each line
 * starts with "profile: ", or "profile (WHERE): " when where is not NULL.
 * Returns a malloc'd string (the caller frees it), NULL when s has no
 * profile or memory ran out. */
char *ipu_stage_profile_text(const ipu_stage_t *s, int runs, const char *where, int top_nodes);

/* Scratch bytes node n's kernel needs (its op's scratch()), 0 for none; a
 * stage holds the largest of its nodes'. */
size_t ipu_node_scratch(const ipu_graph_t *g, const ipu_node_t *n);
/* Bytes node n keeps beside its constants once loaded (its op's held(): a
 * copy of its weights in another layout), 0 for none; a stage's
 * weight_bytes counts them. */
size_t ipu_node_held(const ipu_graph_t *g, const ipu_node_t *n);
/* 1 when node n's held copy replaces its constant input slot (its op's
 * IPU_OP_HELD_REPLACES_INPUT1 for slot 1, and the copy exists): a stage charges that constant only for
 * its other readers. */
int ipu_node_replaces(const ipu_graph_t *g, const ipu_node_t *n, int slot);

/* The memory an IPU is charged for a stage: ipu_device_load() checks it
 * against the capacity, and the partitioner (partition/partition.c) checks
 * every stage it considers with it, on the stage ipu_stage_build_of() builds
 * for the pipeline, so a plan that fits passes the device's check. */
typedef struct ipu_stage_mem {
    size_t weights;         /* weight_bytes */
    size_t winograd;        /* winograd_bytes, part of weights */
    size_t scratch_direct;  /* scratch_direct: scratch without Winograd */
    size_t activations;     /* plan.arena_bytes */
    size_t scratch;         /* scratch_bytes */
    size_t total;
} ipu_stage_mem_t;
ipu_stage_mem_t ipu_stage_mem(const ipu_stage_t *s);
/* "needs 40.6 MiB (weights 36.5 MiB + activations 2.3 MiB + scratch 1.7 MiB)
 * but an IPU has 40.0 MiB" into buf (exact bytes added where the rounded
 * sizes would read the same), and where Winograd's transformed weights are
 * part of it, how much IPU_EXEC_WINOGRAD=0 saves. */
void ipu_stage_mem_str(const ipu_stage_mem_t *m, size_t capacity, char *buf, size_t len);

/* Call the load() hook of every node of the stage that has one (the device
 * does at ipu_device_load), telling s->release of each node loaded. Errors:
 * the hook's. */
ipu_status_t ipu_stage_load(const ipu_stage_t *s);

/* Freeing the weights that loaded nodes hold copies of, while a process
 * loads its stages: a constant (malloc'd: IPU_CONST_OWNED) that every node
 * of g reading it, folded ones aside, reads as the input its held copy
 * replaces (ipu_node_replaces: a Conv's, ConvTranspose's, Gemm's or
 * MatMul's weights in oneDNN's layout), each of them a node this process
 * loads, and that is no graph input or output, is freed as soon as the
 * last of them has loaded: it becomes IPU_CONST_HELD (data NULL) and its
 * readers run on their copies. The process then keeps such weights once,
 * as the IPU is charged for them, and holds both copies only of the node
 * loading. From ipu_release_new on, g must not be inferred again (a stage
 * built later reads nothing freed: a freed value has no reader left). */
typedef struct ipu_release ipu_release_t;
/* local[i] != 0 for each node i of a stage this process will load (NULL:
 * every node). NULL when out of memory: nothing is freed then. */
ipu_release_t *ipu_release_new(ipu_graph_t *g, const unsigned char *local);
/* Node i has loaded its copies (ipu_stage_load does this when the stage's
 * release is set): free the constants all of whose readers now have. */
void ipu_release_loaded(ipu_release_t *r, int node);
/* The bytes freed; frees r (NULL: 0). */
size_t ipu_release_end(ipu_release_t *r);

/* Run the stage's kernels on arena (plan.arena_bytes) with scratch
 * (scratch_bytes); inputs must already be in the arena. threads: for kernels.
 * Errors: the failing kernel's status (message names the node). */
ipu_status_t ipu_stage_run(const ipu_stage_t *s, uint8_t *arena, void *scratch, int threads);

#endif
