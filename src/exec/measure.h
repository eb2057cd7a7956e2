/* Measured per-node cost for the partitioner: the GEMM-like nodes (Conv,
 * ConvTranspose, Gemm, MatMul) dominate run time and their speed depends on their shapes
 * far more than a FLOP count says (a 1x1 convolution on a 7x7 map runs at a
 * fraction of the rate of a 3x3 one on 56x56). Each distinct (op, shapes,
 * attributes) is run on this machine's kernels, with the real weights
 * and stand-in activations, and timed as a loaded stage runs it: its
 * weights reordered once (ipu_dnn_keep_weights), its activations in the
 * layouts the layout pass chose (g is prepared: exec/prepare.h), its
 * residual summed in place (exec/plan.h). The node costs the longer of that
 * and the time to stream its weights from memory (cache-hot in the timing
 * loop, streamed in a pipeline while the kernel computes): a roofline. */
#ifndef IPU_EXEC_MEASURE_H
#define IPU_EXEC_MEASURE_H

#include "graph/op.h"

/* node_ms[i] for every node index i of g (prepared: exec/prepare.h; one
 * only inferred is timed without the layout pass): measured ms of
 * a GEMM-like node, or -1 where the cost model's estimate should be used.
 * Every distinct shape is timed in each of IPU_MEASURE_ROUNDS (3) rounds
 * over all of them (best of 2 after a warm-up each time), and its best time
 * is kept, so a slow phase of a shared machine does not move the cut.
 * Errors: IPU_ERR_NO_MEMORY, a kernel's error. */
ipu_status_t ipu_measure_nodes(const ipu_graph_t *g, double *node_ms);

#endif
