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
 * of floats, a residual not of y's shape, more than one residual, a
 * depthwise Conv's weights or bias of other shapes (graph/fuse.h), or
 * more than one. */
ipu_status_t ipu_fused_post(const ipu_graph_t *g, const ipu_node_t *n, const ipu_value_t *y,
                            int axis, int dst_rank, int dst_axis, ipu_dnn_post_t *post);

/* The input index of node n's fused residual (the operand of its SUM), or
 * -1 when it has none. */
int ipu_fused_residual_input(const ipu_node_t *n);

/* At run or load: *res the residual's data (NULL without a SUM; res may
 * be NULL) and ops[0..] the other post-ops' operands in their order, from
 * the node's inputs in: a MUL's or ADD's, a depthwise Conv's weights and
 * its bias where it has one; at most IPU_FUSED_MAX + 1. */
void ipu_fused_operands(const ipu_node_t *n, const ipu_tensor_t *in, const float **res,
                        const void **ops);

/* At load: the weights of node n's fused depthwise Conv reordered for
 * its primitive p (ipu_dnn_load_post_weights); a no-op without one. */
ipu_status_t ipu_fused_load(const ipu_graph_t *g, const ipu_node_t *n, ipu_dnn_t *p);

/* Run node n's primitive p (a Conv's, Gemm's or MatMul's: ipu_dnn_run)
 * on input 0 as the source, input 1 as the weights, bias (or NULL) and the
 * node's fused operands, into y; then the SiLU p leaves to us
 * (ipu_dnn_silu_after), on the kernel's threads. ipu_dnn_run's errors. */
ipu_status_t ipu_fused_run(const ipu_node_t *n, ipu_dnn_t *p, const ipu_tensor_t *in,
                           const float *bias, float *y, const ipu_kernel_ctx_t *ctx);

#endif
