/* The operator interface between graph/ (shape inference, constant folding)
 * and exec/ops/ (the implementations). A registry of ipu_op_t entries is
 * looked up by (domain, op_type, opset); graph passes take the lookup as a
 * function so graph/ does not depend on exec/.
 *
 * An op entry implements one ONNX operator for the opset range
 * [since_version, until_version] of its domain; the source file names the
 * ONNX spec version (Operators.md, "OpName-N") it follows. */
#ifndef IPU_GRAPH_OP_H
#define IPU_GRAPH_OP_H

#include "graph/ir.h"

/* Below this many bytes read and written, a kernel runs on one thread of
 * the IPU's team: waking the others (OpenMP's fork and join) costs more
 * than their share of the work (exec/onednn.c's small primitives, the
 * row loops of exec/ops/ew.h's ipu_par_rows). */
#define IPU_TEAM_MIN_BYTES ((size_t)256 << 10)

typedef struct ipu_kernel_ctx {
    int threads;          /* threads the kernel may use (>= 1) */
    void *scratch;        /* op->scratch() bytes, 64-byte aligned, or NULL */
    size_t scratch_bytes;
} ipu_kernel_ctx_t;

enum {
    /* Output 0 is input 0's bytes unchanged (Reshape, Flatten, Squeeze,
     * Unsqueeze, Identity, Dropout): when the node has no other output, the
     * planner may alias the buffers and skip run(); run() must still work
     * (it copies) for non-aliased use. */
    IPU_OP_ALIAS_INPUT0 = 1u << 0,
    /* What held() keeps replaces constant input 1 (the weights in another
     * layout): a stage whose other nodes do not read that constant is
     * charged the copy alone (exec/stage.h, ipu_node_replaces). */
    IPU_OP_HELD_REPLACES_INPUT1 = 1u << 1,
    /* n->state, when set, starts with the executing layer's record of the
     * library primitive the node runs on (exec/ops/dnn_chain.h), which its
     * pass over the prepared graph reads to keep activations in the
     * library's layout between such nodes. */
    IPU_OP_DNN = 1u << 2,
};

typedef struct ipu_op {
    const char *domain;          /* "" for the default ONNX domain */
    const char *op_type;
    int since_version;           /* first opset this entry implements */
    int until_version;           /* last opset this entry implements */
    unsigned flags;              /* IPU_OP_* */

    /* Validate attributes and input dtypes/shapes (all inputs' shapes are
     * known; constant inputs have value->data) and set every output's dtype
     * and shape with ipu_value_set_shape(). May set n->state. An op whose
     * output is known without running (Shape, Size) may also set the output
     * constant with ipu_value_set_const(). Errors: IPU_ERR_SHAPE for
     * inconsistent shapes/dtypes, IPU_ERR_UNSUPPORTED for an attribute value
     * or dtype not implemented, IPU_ERR_INVALID_MODEL for missing/invalid
     * attributes or a needed input that is not constant; the message (set
     * with ipu_error) names the node: "node 'X' (Conv): ...". */
    ipu_status_t (*infer)(ipu_graph_t *g, ipu_node_t *n);

    /* Scratch bytes run() needs (im2col buffers ...), or NULL for none.
     * Called after infer, shapes known. */
    size_t (*scratch)(const ipu_graph_t *g, const ipu_node_t *n);

    /* Compute outputs from inputs. in[i] is a view of input slot i (data NULL
     * for an absent optional); out[i] views preallocated output buffers of the
     * inferred shapes (data NULL for an absent optional output). Must not
     * allocate on the hot path: use ctx->scratch. Errors: IPU_ERR_INPUT for a
     * data-dependent failure (index out of range ...). */
    ipu_status_t (*run)(const ipu_node_t *n, const ipu_tensor_t *in,
                        ipu_tensor_t *out, ipu_kernel_ctx_t *ctx);

    /* Free n->state (may be NULL if the op keeps none). */
    void (*fini)(ipu_node_t *n);

    /* Optional: called when a device loads a stage holding n, after the
     * stage's constants are final (their data stays at the same address
     * while the stage is loaded), on the loading thread; may prepare state
     * from constant inputs (a weights layout). Called again for every load
     * (another device, the same stage): must be idempotent and thread-safe.
     * Errors: IPU_ERR_NO_MEMORY, IPU_ERR_INTERNAL (message names the node). */
    ipu_status_t (*load)(const ipu_graph_t *g, const ipu_node_t *n);

    /* Optional: bytes that load() keeps beside the constants (a copy of the
     * weights in another layout), known after infer without loading, so a
     * stage is charged for them before it is loaded; NULL for none. */
    size_t (*held)(const ipu_graph_t *g, const ipu_node_t *n);

    /* Optional: the input slot whose buffer output 0 may take over (the
     * buffer planner, exec/plan.h, gives them one buffer when no later node
     * reads that input), because run() reads that input only as output 0's
     * starting contents, as they are (a residual its primitive sums into
     * Y), or -1; NULL for none. Called after infer and the layout pass. */
    int (*inplace)(const ipu_node_t *n);
} ipu_op_t;

/* Lookup function: the entry implementing (domain, op_type) at opset, or NULL. */
typedef const ipu_op_t *(*ipu_op_lookup_fn)(const char *domain, const char *op_type, int opset);

/* Bind every node to its op. An error (IPU_ERR_UNSUPPORTED) lists every
 * unsupported node by name and op type (and opset), not just the first. */
ipu_status_t ipu_graph_bind_ops(ipu_graph_t *g, ipu_op_lookup_fn lookup);

/* Infer dtypes/shapes of every value in topological order and fold
 * constants: a node whose inputs are all constant is run now (op->run on
 * malloc'd outputs), its outputs become IPU_VALUE_FOLDED constants and the
 * node is marked folded; not when an output is over 1 GiB (the node then
 * runs with its stage). Graph inputs must have concrete shapes (set them from
 * the user's tensors first). Requires ipu_graph_toposort() and bind_ops().
 * Errors: the ops' infer() errors (model file named); IPU_ERR_INPUT for a
 * graph input without a concrete shape or over 4 PiB; IPU_ERR_INVALID_MODEL
 * for a node output the op does not produce; IPU_ERR_SHAPE for an output
 * over 4 PiB; a fold's error. */
ipu_status_t ipu_graph_infer(ipu_graph_t *g);

/* Helpers for op implementations (graph/op.c) -------------------------- */

/* Record the message "node 'NAME' (OpType): " followed by fmt's text with
 * ipu_error() and return st: every error an op reports names its node. */
ipu_status_t ipu_op_error(ipu_status_t st, const ipu_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* *v = input slot i of n, which must be present: IPU_ERR_INVALID_MODEL
 * ("input I is missing", naming the node) when it is absent or i is past the
 * node's inputs. For optional inputs use ipu_node_input() (NULL if absent). */
ipu_status_t ipu_op_input(const ipu_graph_t *g, const ipu_node_t *n, int i,
                          const ipu_value_t **v);

/* fini() of an op whose n->state is one malloc'd block (or NULL): frees it
 * and sets n->state to NULL. */
void ipu_op_free_state(ipu_node_t *n);

/* Normalise a possibly negative axis for a tensor of rank r into [0, r);
 * returns IPU_ERR_INVALID_MODEL (message names the node) when out of range. */
ipu_status_t ipu_op_axis(const ipu_node_t *n, int64_t axis, int rank, int *out);
/* NumPy multidirectional broadcasting of two shapes into out (rank, dims);
 * IPU_ERR_SHAPE (message names the node) when they do not broadcast. */
ipu_status_t ipu_op_broadcast(const ipu_node_t *n, int ra, const int64_t *a,
                              int rb, const int64_t *b, int *rout, int64_t *out);

#endif
