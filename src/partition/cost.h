/* Cost model for partitioning: per node, the work (FLOPs), the bytes it
 * moves and writes (activations), its kernel's scratch, and an estimated run
 * time on the cpu IPU. Needs inferred shapes. */
#ifndef IPU_PARTITION_COST_H
#define IPU_PARTITION_COST_H

#include "graph/ir.h"

typedef struct ipu_node_cost {
    double flops;          /* floating-point operations (a multiply-add is 2) */
    double bytes_moved;    /* bytes read and written (activations and weights) */
    size_t out_bytes;      /* bytes of its outputs */
    size_t scratch_bytes;  /* its kernel's scratch: ipu_node_scratch() (exec/stage.h) */
    double est_ms;         /* roofline estimate: max(flops / peak, bytes / bandwidth);
                              0 for a view (ipu_plan_is_view, exec/plan.h: the
                              buffer planner aliases it, it does not run) */
} ipu_node_cost_t;

typedef struct ipu_cost_params {
    double gflops;         /* sustained GFLOP/s of GEMM-like kernels (default 40) */
    double other_gflops;   /* GFLOP/s of elementwise/reduction kernels (default 4) */
    double mem_gbps;       /* memory bandwidth, GB/s (default 10) */
    double link_gbps;      /* bandwidth between IPUs, GB/s (default 5) */
    double link_us;        /* latency of one transfer, microseconds (default 5) */
} ipu_cost_params_t;

void ipu_cost_params_init(ipu_cost_params_t *p);

/* Fill costs[i] for every node index i of g (folded nodes cost 0, views
 * take no time).
 * Errors: none besides IPU_ERR_INVALID_ARG for an uninferred graph. */
ipu_status_t ipu_cost_nodes(const ipu_graph_t *g, const ipu_cost_params_t *p, ipu_node_cost_t *costs);

/* Time (ms) to send bytes over one link. */
double ipu_cost_transfer_ms(const ipu_cost_params_t *p, double bytes);

#endif
