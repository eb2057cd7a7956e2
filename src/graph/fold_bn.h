/* BatchNormalization folded into the Conv or Gemm before it, at load.
 *
 * A BatchNormalization in inference mode (BatchNormalization-7..15:
 * running mean and variance, no training outputs) whose input X is the
 * output of a Conv (Conv-1/11) or of a Gemm (Gemm-7..13: constant B, beta
 * 1, C absent, a scalar or one value per column) read by no other
 * node and not a graph output, and whose Scale, B, mean and var are all
 * constant, is a per-output-channel affine map of that output: with
 * f = scale / sqrt(var + epsilon),
 *     W'[m, ...] = W[m, ...] * f[m]     (Gemm: column m of B, by transB)
 *     b'[m] = (b[m] - mean[m]) * f[m] + B[m]   (b = 0 when absent).
 * W' and b' become new constants owned by the graph (named
 * "<node>.bn_folded.W" / ".B"), read by the Conv or Gemm in place of W and
 * its bias; the BatchNormalization node becomes an Identity of the Conv's
 * output (aliased away by the buffer planner; graph/fuse.c looks through it,
 * so Conv + BatchNormalization + Relu still fuses the Relu). Constants that
 * nothing reads any more are released. f and b' are computed in double.
 *
 * Run after ipu_graph_infer() and before ipu_graph_fuse(), on every path
 * that executes the graph. */
#ifndef IPU_GRAPH_FOLD_BN_H
#define IPU_GRAPH_FOLD_BN_H

#include "graph/op.h"

/* Fold in place (see above); node indices do not change. lookup binds the
 * rewritten nodes to Identity; the Conv or Gemm is re-inferred. At debug
 * log level each fold is logged ("folded BatchNormalization 'BN' into Conv
 * 'C'"). The number of folds into *count (may be NULL). Errors:
 * IPU_ERR_NO_MEMORY, IPU_ERR_IO (a deferred weight could not be read), an
 * error of the re-inferred node. */
ipu_status_t ipu_graph_fold_bn(ipu_graph_t *g, ipu_op_lookup_fn lookup, int *count);

#endif
