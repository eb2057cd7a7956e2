/* Conv's pass over a prepared graph (private to exec/): which activations
 * stay in oneDNN's layout between two convolutions. */
#ifndef IPU_EXEC_OPS_CONV_H
#define IPU_EXEC_OPS_CONV_H

#include "graph/op.h"

/* For every Conv output whose every reader (through Identity nodes) is a
 * Conv reading it as X or as its fused residual (graph/fuse.h), and that is no graph output: when oneDNN's layouts
 * of the two sides agree (ipu_dnn_can_chain), the producer writes it in that
 * layout and the readers take it as it is, with no reorder in between. The
 * layout is a property of the value on every rank, so a pipeline boundary
 * carries the same bytes a single rank keeps. Run after ipu_graph_fuse() on
 * every path that executes the graph; again after any re-infer. */
void ipu_conv_chain(ipu_graph_t *g);

#endif
