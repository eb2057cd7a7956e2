/* Graph fusion: a Conv whose output feeds only an Add with another float
 * operand of the same shape (a residual) takes the Add over: the residual
 * becomes its input 3 (input 2, B, absent (-1) when there was none) and it
 * gets IPU_CONV_SUM_ATTR. A Conv whose output (or its Add's output) feeds
 * only an activation (Relu, Clip with constant bounds, Sigmoid, or the
 * x * Sigmoid(x) pair of SiLU/Swish) takes the activation over, after the
 * sum: the Conv node gets the private attributes below. The Conv writes the
 * last fused node's output; the Add and activation nodes become Identity
 * nodes of its output that the buffer planner aliases away (no copy, no
 * run). Identity nodes between the Conv and the Add or activation (a
 * BatchNormalization folded into the Conv, graph/fold_bn.h) are looked
 * through. A BatchNormalization whose output feeds only a Relu takes the
 * Relu over the same way (IPU_NORM_RELU_ATTR).
 *
 * Run after ipu_graph_infer() on every path that executes the graph (the
 * single-rank session and the pipeline), so both compute the same bits. */
#ifndef IPU_GRAPH_FUSE_H
#define IPU_GRAPH_FUSE_H

#include "graph/op.h"

/* STRING attribute: "Relu", "Clip", "Sigmoid" or "SiLU" */
#define IPU_CONV_ACT_ATTR "ipu.fused_activation"
/* FLOAT attributes: Clip bounds (default -inf / +inf) */
#define IPU_CONV_ACT_MIN "ipu.fused_min"
#define IPU_CONV_ACT_MAX "ipu.fused_max"
/* INT attribute: 1 when input 3 is a residual added before the activation */
#define IPU_CONV_SUM_ATTR "ipu.fused_sum"
/* INT attribute of a BatchNormalization: 1 when the Relu reading its
 * output was folded into it */
#define IPU_NORM_RELU_ATTR "ipu.fused_relu"

/* Fuse in place (see above); node indices do not change. lookup binds the
 * rewritten nodes to Identity. The fused nodes' ops are re-inferred. Returns
 * the number of fusions in *count (may be NULL). */
ipu_status_t ipu_graph_fuse(ipu_graph_t *g, ipu_op_lookup_fn lookup, int *count);

/* Node n becomes Identity(src) (op id) with its own output 0, its state
 * freed and its shape re-inferred; the node's name is kept. Errors:
 * IPU_ERR_NO_MEMORY, Identity's infer errors. */
ipu_status_t ipu_graph_node_to_identity(ipu_graph_t *g, ipu_node_t *n, const ipu_op_t *id, int src);

#endif
