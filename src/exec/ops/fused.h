/* The post-ops graph/fuse.c fused into a Conv, MatMul or Gemm node (the
 * private attributes of graph/fuse.h), read the same way by all three ops
 * (private to exec/ops). */
#ifndef IPU_EXEC_OPS_FUSED_H
#define IPU_EXEC_OPS_FUSED_H

#include "exec/onednn.h"
#include "graph/op.h"

/* Node n's post-ops into *post (post->n = 0 when it has none). y is its
 * output (shape known), axis y's channel axis; the MUL / ADD operands are
 * described for the primitive's destination of rank dst_rank, channel axis
 * dst_axis. Checks the attributes and the extra inputs (graph/fuse.h):
 * IPU_ERR_INVALID_MODEL naming the node for an unknown kind, missing
 * parameters or inputs, a MUL / ADD operand that is not y's channel count
 * of floats, a residual not of y's shape, more than one residual. */
ipu_status_t ipu_fused_post(const ipu_graph_t *g, const ipu_node_t *n, const ipu_value_t *y,
                            int axis, int dst_rank, int dst_axis, ipu_dnn_post_t *post);

/* The input index of node n's fused residual (the operand of its SUM), or
 * -1 when it has none. */
int ipu_fused_residual_input(const ipu_node_t *n);

/* At run: *res is the residual's data (NULL without a SUM) and ops[0..]
 * the MUL / ADD operands' data in their order (at most IPU_FUSED_MAX),
 * from the node's inputs in. */
void ipu_fused_operands(const ipu_node_t *n, const ipu_tensor_t *in, const float **res,
                        const void **ops);

#endif
