/* Graph fusion: the element-wise work after a Conv, MatMul or Gemm becomes
 * post-ops of that node (exec/onednn.h runs them inside the primitive).
 * From the node's output y, step after step, the next piece of work is
 * fused while every value it reads from the chain has only that work as
 * its readers and is no graph output. Fusion runs before the partitioner,
 * so a fused node is one item of the plan and never spans a stage
 * boundary. In a model annotated with pipeline stages (__pipeline_stage /
 * __ipu_number) a chain annotated on a later stage than the node still
 * fuses (its work moves to the node's stage and the same value crosses the
 * boundary, so every path computes the same bits), but not a residual
 * made on a later stage than the node (a pipeline flows forward only):
 *  - an activation of y: Relu, LeakyRelu, Clip (constant bounds), Sigmoid,
 *    Tanh, Elu, HardSigmoid, HardSwish, x * Sigmoid(x) (SiLU, either
 *    order), or the Erf form of GELU as exporters write it:
 *    x * 0.5 * (1 + Erf(x / sqrt(2))) with Div by sqrt(2) or Mul by
 *    1/sqrt(2), the 0.5 applied to x, to (1 + Erf) or last;
 *  - Mul or Add of y and a float constant that broadcasts to y without
 *    changing its shape: a scalar (an affine post-op) or a constant that
 *    is 1 everywhere but along the channel axis (Conv: axis 1; MatMul and
 *    Gemm: the last axis of Y), a binary post-op whose operand becomes an
 *    extra input of the node;
 *  - Add of y and another float tensor of y's shape (a residual; one per
 *    node, not on a Gemm that scales its C): a sum post-op, the residual
 *    an extra input that the op copies into its output before the run.
 *  - a depthwise Conv of y (an inverted residual block: MobileNetV2,
 *    EfficientNet) when the node is a 2-D pointwise Conv (1x1 kernel,
 *    stride 1, no pads, group 1) whose input and output channels are
 *    multiples of 16 (whole channel blocks for oneDNN's kernels; a padded
 *    block made the fused kernel slower than the two apart), y of
 *    IPU_FUSED_DW_MIN_BYTES or more, and only piecewise-linear
 *    activations before it (Relu, LeakyRelu, Clip, affine, HardSigmoid,
 *    HardSwish; the fused kernel evaluates the others, SiLU among them,
 *    on oneDNN's slower loop, which cost EfficientNet-B0 more than the
 *    fusion saved); the
 *    depthwise Conv has a constant float 3x3 kernel, group equal to the
 *    channels, stride 1 or 2 both ways, pads 1 on every side, no
 *    dilation, constant bias or none. Only activations follow it in the
 *    chain. A rule from shapes alone, so every rank fuses alike; oneDNN
 *    runs the pair as one primitive where its fused kernel pays here
 *    (dnnl_post_ops_append_dw), else as its two primitives.
 * No oneDNN element-wise algorithm is used twice in one chain (an affine
 * map after another is composed into it), but for once before and once
 * after a depthwise Conv (two kernels, each with its own).
 * MatMul fuses only with operands of rank 2 or more (its Y then keeps the
 * operands' batch dims), at most IPU_FUSED_MAX post-ops per node.
 *
 * Identity nodes in the chain (a BatchNormalization folded into the node,
 * graph/fold_bn.h) are looked through. A BatchNormalization whose output
 * feeds only a Relu takes the Relu over (IPU_NORM_RELU_ATTR). A Pad that
 * pads nothing (every pad 0) becomes an Identity first, so that the layout
 * pass keeps oneDNN's layout through it.
 *
 * The node gets the private attributes below; the fused nodes become
 * Identity nodes of its output that the buffer planner aliases away (no
 * copy, no run). Run after ipu_graph_infer() on every path that executes
 * the graph (the single-rank session, the pipeline, plan's measuring), so
 * every path computes the same bits. */
#ifndef IPU_GRAPH_FUSE_H
#define IPU_GRAPH_FUSE_H

#include "graph/op.h"

/* Post-op kinds (the INTS of IPU_FUSED_OPS) and their parameters
 * (IPU_FUSED_ALPHA / IPU_FUSED_BETA, one float each per post-op). */
typedef enum {
    IPU_FUSED_RELU = 1,     /* alpha: the slope below 0 (LeakyRelu), 0 for Relu */
    IPU_FUSED_CLIP,         /* min(max(x, alpha), beta); bounds may be +-inf */
    IPU_FUSED_SIGMOID,
    IPU_FUSED_TANH,
    IPU_FUSED_ELU,          /* alpha */
    IPU_FUSED_HARD_SIGMOID, /* max(0, min(1, alpha * x + beta)) */
    IPU_FUSED_HARD_SWISH,   /* x * max(0, min(1, x / 6 + 0.5)) */
    IPU_FUSED_SILU,         /* x * sigmoid(x) */
    IPU_FUSED_GELU_ERF,     /* 0.5 * x * (1 + erf(x / sqrt(2))) */
    IPU_FUSED_LINEAR,       /* alpha * x + beta */
    IPU_FUSED_MUL,          /* x * the next extra input (per channel) */
    IPU_FUSED_ADD,          /* x + the next extra input (per channel) */
    IPU_FUSED_SUM,          /* x + alpha * the next extra input (Y's shape) */
    IPU_FUSED_DW,           /* a depthwise 3x3 convolution of x, pads 1, stride
                             * alpha (1 or 2): its weights [C, 1, 3, 3] and
                             * bias [C] are the next two extra inputs (the
                             * bias -1 when it has none); Y is then
                             * [N, C, ceil(H / alpha), ceil(W / alpha)] */
} ipu_fused_kind_t;

#define IPU_FUSED_OPS "ipu.fused_ops"     /* INTS: the kinds, in the order applied */
#define IPU_FUSED_ALPHA "ipu.fused_alpha" /* FLOATS: one per kind */
#define IPU_FUSED_BETA "ipu.fused_beta"   /* FLOATS: one per kind */
/* The extra inputs (MUL, ADD and SUM operands, in the order of the kinds
 * that read them) start at this input index; absent optional inputs
 * before it (Conv's B, Gemm's C, MatMul's 2) are -1. */
#define IPU_FUSED_INPUT0 3
#define IPU_FUSED_MAX 8
/* Whether a post-op of kind k may come before an IPU_FUSED_DW (the
 * piecewise-linear activations, see above); after it come only the
 * activations (no MUL, ADD or SUM). */
int ipu_fused_before_dw(ipu_fused_kind_t k);
/* The stride of node n's IPU_FUSED_DW post-op, 0 when it has none (or one
 * of a stride other than 1 or 2). */
int ipu_fused_dw_stride(const ipu_node_t *n);
/* The bytes of a pointwise Conv's output from which a depthwise Conv
 * reading it fuses (IPU_FUSED_DW): more than a core's L2 on x86 server
 * CPUs (1 to 2 MiB), so that the two Convs apart send it through L3 or
 * memory and back, where the fused kernel keeps a few rows of it in L1. */
#define IPU_FUSED_DW_MIN_BYTES (4u << 20)

/* INT attribute of a BatchNormalization: 1 when the Relu reading its
 * output (through Identity nodes) was folded into it */
#define IPU_NORM_RELU_ATTR "ipu.fused_relu"

/* Fuse in place (see above); node indices do not change. lookup binds the
 * rewritten nodes to Identity. The fused nodes' ops are re-inferred.
 * Returns the number of nodes that took post-ops in *count (may be NULL).
 * Errors: IPU_ERR_NO_MEMORY, or the re-infer's error. */
ipu_status_t ipu_graph_fuse(ipu_graph_t *g, ipu_op_lookup_fn lookup, int *count);

/* Node n becomes Identity(src) (op id) with its own output 0, its state
 * freed and its shape re-inferred; the node's name is kept. Errors:
 * IPU_ERR_NO_MEMORY, Identity's infer errors. */
ipu_status_t ipu_graph_node_to_identity(ipu_graph_t *g, ipu_node_t *n, const ipu_op_t *id, int src);

#endif
