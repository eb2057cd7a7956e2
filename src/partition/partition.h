/* Partitioning a graph into pipeline stages and placing them on (rank, IPU).
 *
 * Manual: when the model's nodes carry the attributes `__pipeline_stage`
 * and/or `__ipu_number` (the names PopART and PopRT use; without a stage,
 * the IPU number is the stage, as in PopART), those placements win. Every
 * node that runs must be annotated, and no tensor may flow from a later stage
 * to an earlier one.
 * Auto: the exact min-bottleneck contiguous split of the topological order
 * (partition/split.h) under the IPU memory capacity, with per-node costs
 * from partition/cost.h. Either way a stage's memory is what its IPU will be
 * charged at setup (ipu_stage_mem of the stage ipu_stage_build_of() builds
 * for the pipeline: weights + activation arena + scratch), so a plan that is made passes
 * the device's check.
 * Stage s of a replica runs on rank s / ipus_per_rank, IPU s % ipus_per_rank. */
#ifndef IPU_PARTITION_PARTITION_H
#define IPU_PARTITION_PARTITION_H

#include "exec/stage.h"
#include "partition/cost.h"

#include <stdio.h>

typedef struct ipu_partition_params {
    int stages;             /* S; ignored for a manually annotated model */
    int ipus_per_rank;      /* K >= 1 */
    size_t ipu_memory;      /* bytes per IPU */
    ipu_cost_params_t cost;
    const double *node_ms;  /* optional, per node index: measured ms that
                               replaces the estimate where >= 0 */
    int mpi_replicas;       /* under mpirun: the replicas R, where stages is
                               -np / R x ipus_per_rank (the advice of an error
                               names -np then); 0 when stages was given */
} ipu_partition_params_t;

void ipu_partition_params_init(ipu_partition_params_t *p);

typedef struct ipu_stage_info {
    int rank, ipu;          /* placement within a replica */
    int n_nodes;            /* nodes that run (folded excluded) */
    double gflop;
    /* memory its IPU is charged (exec/stage.h, ipu_stage_mem: the device's
     * check; total at most the IPU memory) */
    ipu_stage_mem_t mem;
    size_t in_bytes;        /* boundary bytes received per micro-batch */
    size_t out_bytes;       /* boundary bytes sent per micro-batch */
    double est_ms;          /* compute + boundary transfers */
} ipu_stage_info_t;

typedef struct ipu_partition {
    int n_stages;
    int manual;             /* 1 if taken from the model's annotations */
    int annotated_stages;   /* manual: the stages annotated (0..max over every
                               node), more than n_stages where only nodes
                               folded at load were on a stage: it is dropped
                               and the later ones are numbered down */
    int *node_stage;        /* per node index: its stage, -1 for folded nodes */
    ipu_stage_info_t *stages;
    double bottleneck_ms, imbalance; /* slowest stage, slowest / mean */
} ipu_partition_t;

/* Partition g (shapes inferred). Errors: IPU_ERR_INVALID_MODEL (partial or
 * inconsistent annotations: the message names nodes), IPU_ERR_INVALID_ARG
 * (more stages than nodes), IPU_ERR_NO_MEMORY (no split fits: the message
 * says which stage needs how much and what to change). */
ipu_status_t ipu_partition_make(const ipu_graph_t *g, const ipu_partition_params_t *p,
                                ipu_partition_t *out);
void ipu_partition_free(ipu_partition_t *pt);
/* The stages g's annotations give to run: the largest stage from 0 to
 * 4096, plus 1, over every node, less those on which only nodes folded at
 * load are (their count in *emptied unless NULL); 0 if none is annotated. */
int ipu_partition_annotated_stages(const ipu_graph_t *g, int *emptied);
/* "S stages", and when constant folding emptied annotated stages, how many
 * were annotated; into buf, returned. */
const char *ipu_partition_stages_str(const ipu_partition_t *pt, char *buf, size_t len);
/* The table `ipu-exec plan` prints: one row per stage, then the imbalance. */
void ipu_partition_print(const ipu_partition_t *pt, FILE *f);

#endif
