/* The layout pass over a prepared graph (private to exec/): which
 * activations stay in oneDNN's layout between two nodes that run on oneDNN
 * primitives (exec/onednn.h), with no reorder to our layout in between.
 *
 * An op takes part by setting IPU_OP_DNN (graph/op.h) and starting its
 * n->state with an ipu_dnn_node_t (zeroed fields: the defaults). */
#ifndef IPU_EXEC_OPS_DNN_CHAIN_H
#define IPU_EXEC_OPS_DNN_CHAIN_H

#include "exec/onednn.h"
#include "graph/op.h"

typedef struct ipu_dnn_node {
    /* The node's primitive (source: input 0, destination: output 0), owned
     * by the state; NULL when the node runs without one (empty tensors, a
     * case the op computes itself). */
    ipu_dnn_t *p;
    /* The input slot read as the primitive's source: 0 but for an op whose
     * source may be another input (a Mul(scale, X)). */
    int src_slot;
    /* The input slot read as the primitive's residual (Conv's fused sum,
     * graph/fuse.h), in its output's layout; -1 for none. */
    int res_slot;
    /* Optional: a new primitive for n (*out; the pass swaps it in for p and
     * frees p) that reads its source in the output layout of like, the
     * primitive producing it. NULL when the op's source layout is fixed. */
    ipu_status_t (*adopt)(const ipu_node_t *n, const ipu_dnn_t *like, ipu_dnn_t **out);
    /* 1: p stays NULL (the op computes our layout itself) unless the pass
     * remakes the node with adopt() to read its producer's layout as it
     * is; such a node takes part only so. */
    int lazy;
    /* Optional, for a node whose primitive reads every input as a source
     * (Concat; ipu_dnn_can_chain accepts any producer's layout for it):
     * called once the producers of all its inputs are settled, before its
     * own output is; remakes p to read each input as
     * ipu_dnn_chain_source() says. NULL for the other ops. */
    ipu_status_t (*adopt_sources)(const ipu_graph_t *g, ipu_node_t *n);
} ipu_dnn_node_t;

/* For every output of a node with a primitive whose every reader (through
 * Identity nodes) is a node with a primitive (or a lazy one) reading it as
 * its source or residual, and that is no graph output: readers with
 * adopt() are remade to read the producer's layout (in topological order,
 * so a remade reader may in turn pass it on; a lazy reader takes part only
 * where its remade primitive reads that layout as it is; a node with
 * adopt_sources reads any of its inputs so, when it is the value's only
 * reader); then, where every reader can take it in the producer's layout
 * (ipu_dnn_can_chain), as it is or through one reorder into its own, the
 * producer writes it in that layout, with no reorder to ours in between.
 * A value that several nodes with adopt_sources read and nothing else is
 * written channels-last, or channel-blocked where convolutions ask for that
 * (ipu_dnn_relayout_for_concats), which they all read as it is; one
 * already written in whole channel blocks then stays so. Otherwise nothing
 * changes. The layout is a property of the value on
 * every rank, so a pipeline boundary carries the same bytes a single rank
 * keeps. Run after ipu_graph_fuse() on every path that executes the graph;
 * again after any re-infer. A primitive that cannot be remade leaves its
 * value as it was; errors (out of memory making a reorder:
 * IPU_ERR_NO_MEMORY, naming the node) leave the graph unfit to run. */
ipu_status_t ipu_dnn_chain(ipu_graph_t *g);

/* During the pass: the primitive that produces value v (through Identity
 * nodes) when the pass keeps v in that primitive's layout; NULL when v is
 * in ours. */
const ipu_dnn_t *ipu_dnn_chain_source(const ipu_graph_t *g, int v);

#endif
