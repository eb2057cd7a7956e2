/* The one layer of exec/ that calls oneDNN (the C API of version 2.x,
 * <dnnl.h>): every other file describes its work with the plain structs
 * below, so a move to oneDNN 3.x changes onednn.c only.
 *
 * It owns the process's CPU engine, a stream per calling thread, the memory
 * descriptors made from our shapes, the primitives (made once per node, when
 * its shapes are known, with the scratchpad in user mode: the caller's
 * op->scratch() reports ipu_dnn_scratch() and run() hands that buffer back),
 * the weights reordered once into the layout a primitive prefers, the
 * OpenMP team of each IPU worker (its size, its threads bound to the
 * worker's CPUs), and the translation of oneDNN's
 * statuses into ipu_status_t with a message naming the node.
 *
 * Tensors at this boundary are dense float32 in our layouts (row-major;
 * Conv activations NCHW-like, weights [M, C/group, kernel...]). */
#ifndef IPU_EXEC_ONEDNN_H
#define IPU_EXEC_ONEDNN_H

#include "graph/fuse.h"
#include "graph/op.h"

#include <stddef.h>

/* The post-ops of a primitive (graph/fuse.h's kinds and parameters), in
 * the order applied to its output. A MUL or ADD operand has the
 * destination's rank (rank) and is 1 everywhere but along axis, where it
 * has channels elements; a SUM adds the residual the run is given. */
typedef struct ipu_dnn_post {
    int n;
    ipu_fused_kind_t kind[IPU_FUSED_MAX];
    float alpha[IPU_FUSED_MAX], beta[IPU_FUSED_MAX];
    int rank, axis;
    int64_t channels;
} ipu_dnn_post_t;

/* A float32 operand: rank dims and their strides in elements. */
typedef struct ipu_dnn_shape {
    int rank;
    int64_t dims[IPU_MAX_RANK];
    int64_t strides[IPU_MAX_RANK];
} ipu_dnn_shape_t;

/* Row-major (dense) strides for dims: fills s->strides. */
void ipu_dnn_shape_dense(ipu_dnn_shape_t *s);

/* Y = alpha * A @ B (+ bias) (+ sum * Y's previous contents), then post.
 * a [..., M, K], b [..., K, N], y [..., M, N] have one rank (2 to 8); a
 * batch dim of a or b may be 1 where y's is larger (broadcast). bias (rank
 * of y, every dim 1 or y's) is optional: has_bias. A SUM in post needs
 * sum == 0 (the caller fills Y itself otherwise). const_b: B is a constant
 * that the primitive may take in the layout it prefers, reordered by
 * ipu_dnn_load_weights() (else it reads b as described). */
typedef struct ipu_dnn_matmul_desc {
    ipu_dnn_shape_t a, b, y, bias;
    int has_bias, const_b;
    float alpha, sum;
    ipu_dnn_post_t post;
} ipu_dnn_matmul_desc_t;

/* Y = post(conv(X, W) + bias): X [N, C, in...], W [M, C/group, k...], Y
 * and the residual R of a SUM [N, M, out...] dense; nd spatial dims (1 to
 * 3); pads at the beginning (pb) and end (pe); dilations d >= 1 as in
 * ONNX. */
typedef struct ipu_dnn_conv_desc {
    int nd;
    int64_t N, C, M, group;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], out[3];
    int has_bias;
    ipu_dnn_post_t post;
} ipu_dnn_conv_desc_t;

/* One primitive made for a node, with what running it needs. */
typedef struct ipu_dnn ipu_dnn_t;

/* Make the primitive for node n. Errors (message names the node and
 * oneDNN's status): IPU_ERR_UNSUPPORTED when oneDNN has no implementation,
 * IPU_ERR_NO_MEMORY, IPU_ERR_INTERNAL. At debug log level the
 * implementation chosen is logged with the node's name. */
ipu_status_t ipu_dnn_matmul(const ipu_node_t *n, const ipu_dnn_matmul_desc_t *d, ipu_dnn_t **out);
ipu_status_t ipu_dnn_conv(const ipu_node_t *n, const ipu_dnn_conv_desc_t *d, ipu_dnn_t **out);

/* Scratch bytes a run needs (oneDNN's scratchpad and any reorder buffers);
 * 0 for NULL. */
size_t ipu_dnn_scratch(const ipu_dnn_t *p);

/* Reorder constant weights (at the address runs will pass) once into the
 * layout p prefers, into a copy p keeps until the next call with another
 * address or ipu_dnn_free(); a no-op when p takes ours as they are or has
 * them already. Thread-safe. Errors: IPU_ERR_NO_MEMORY, a oneDNN failure. */
ipu_status_t ipu_dnn_load_weights(const ipu_node_t *n, ipu_dnn_t *p, const float *weights);
/* Bytes of the copy ipu_dnn_load_weights() keeps (the size of the weights
 * in the primitive's layout, 64-byte aligned), known without reordering; 0
 * when p takes ours as they are, or for NULL. */
size_t ipu_dnn_weights_held(const ipu_dnn_t *p);

/* Run p: src (A or X), weights (B or W), bias (or NULL), res (the
 * residual R of a SUM post-op, or NULL without one), post (the operands of
 * the MUL and ADD post-ops in their order, per channel; NULL without
 * any), dst (Y) in the layouts of the desc; ctx->scratch holds
 * ipu_dnn_scratch(p) bytes and ctx->threads sizes the OpenMP team. Weights that ipu_dnn_load_weights()
 * has not prepared at this address are reordered into a temporary copy for
 * this run only (the partitioner's timing, constant folding). Errors name
 * the node. */
ipu_status_t ipu_dnn_run(const ipu_node_t *n, ipu_dnn_t *p, const float *src, const float *weights,
                         const float *bias, const float *res, const void *const *post,
                         float *dst, const ipu_kernel_ctx_t *ctx);

/* Run a primitive of one source and one destination (pooling, softmax,
 * normalizations, LRN, deconvolution: their makers say which further
 * operands they take, extra[i] in that order; NULL when none), src and dst
 * in our layout unless chained, scratch and threads as ipu_dnn_run(). */
ipu_status_t ipu_dnn_exec(const ipu_node_t *n, ipu_dnn_t *p, const float *src,
                          const void *const *extra, float *dst, const ipu_kernel_ctx_t *ctx);

void ipu_dnn_free(ipu_dnn_t *p);

/* Called once by an IPU's worker thread, after it is pinned: its OpenMP
 * team (the threads oneDNN runs its primitives on when called from it) is
 * threads (>= 1) threads, each bound to the worker's CPUs, so the team of
 * one IPU never runs on another's cores. At debug log level each thread of
 * the team logs "IPU index: OpenMP thread i of n on CPUs L, the worker's
 * W" (L and W lists like "0,2"). */
void ipu_dnn_bind_threads(int index, int threads);

/* Activations kept in oneDNN's layout between two convolutions: 1 when
 * producer's output layout is the layout consumer reads it in (its input
 * X, or as_residual its residual R, which is its output's layout), blocked,
 * and of the plain tensor's byte size (so the buffer planned for it holds
 * it). */
int ipu_dnn_can_chain(const ipu_dnn_t *producer, const ipu_dnn_t *consumer, int as_residual);
/* From now on p reads its input (src_blocked), its residual (res_blocked)
 * and/or writes its output (dst_blocked) in its own layout instead of ours:
 * no reorder. Set only on pairs ipu_dnn_can_chain() accepted, before any
 * run. */
void ipu_dnn_set_chain(ipu_dnn_t *p, int src_blocked, int dst_blocked, int res_blocked);

/* The instruction set oneDNN dispatches to on this CPU, e.g. "avx512_core",
 * "avx2" (static string). */
const char *ipu_dnn_isa(void);
/* 1 if that ISA is at least AVX2. */
int ipu_dnn_isa_avx2(void);
/* "oneDNN 2.6.3" (static string). */
const char *ipu_dnn_version(void);
/* The CPU model ("model name" of /proc/cpuinfo) into buf; "unknown" when
 * it cannot be read. Returns buf. */
char *ipu_cpu_model(char *buf, size_t len);

#endif
