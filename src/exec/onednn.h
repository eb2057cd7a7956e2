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
 * Conv activations NCHW-like, weights [M, C/group, kernel...], ConvTranspose's
 * [C, M/group, kernel...]). */
#ifndef IPU_EXEC_ONEDNN_H
#define IPU_EXEC_ONEDNN_H

#include "graph/fuse.h"
#include "graph/op.h"

#include <stddef.h>

/* The post-ops of a primitive (graph/fuse.h's kinds and parameters), in
 * the order applied to its output. A MUL or ADD operand has the
 * destination's rank (rank) and is 1 everywhere but along axis, where it
 * has channels elements; a SUM adds the residual the run is given. A DW
 * (a convolution's only: 2-D, one at most) is a 3x3 depthwise convolution
 * of the channels, pads 1, stride dw_stride, with a bias where dw_bias;
 * its weights ([channels, 1, 3, 3]) and bias are operands in the order of
 * the kinds. */
typedef struct ipu_dnn_post {
    int n;
    ipu_fused_kind_t kind[IPU_FUSED_MAX];
    float alpha[IPU_FUSED_MAX], beta[IPU_FUSED_MAX];
    int rank, axis;
    int64_t channels;
    int dw_stride, dw_bias; /* dw_stride 0: no DW */
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
 * ONNX. With a DW post-op (post.dw_stride s) Y is [N, M, ceil(out[0] / s),
 * ceil(out[1] / s)]: oneDNN runs it in one primitive where it has a
 * fused kernel for it (the convolution's output rows in cache), else as
 * two primitives inside its own (the same work, apart). */
typedef struct ipu_dnn_conv_desc {
    int nd;
    int64_t N, C, M, group;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], out[3];
    int has_bias;
    ipu_dnn_post_t post;
} ipu_dnn_conv_desc_t;

/* Y = deconv(X, W) (+ bias): ConvTranspose-11 (Operators.md), the
 * transpose of the convolution of the same geometry. X [N, C, in...], W
 * [C, M/group, k...] (ONNX's layout: input channels first), bias [M], Y
 * [N, M, out...] dense; nd spatial dims (1 to 3); s strides, d dilations
 * (>= 1, as in ONNX); pb, pe the outputs cut from the full result at the
 * beginning and the end, so out = s*(in-1) + (k-1)*d + 1 - pb - pe. pe may
 * be negative (ONNX's output_padding, outputs past the last input's reach:
 * bias only) down to 1 - s; pb >= 0. Run with ipu_dnn_run() (res NULL). */
typedef struct ipu_dnn_deconv_desc {
    int nd;
    int64_t N, C, M, group;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], out[3];
    int has_bias;
} ipu_dnn_deconv_desc_t;

/* Y = X / (bias + alpha / size * square_sum)^beta, square_sum over the
 * channels c-(size-1)/2 .. c+(size-1)/2 (clipped to [0, C)): LRN-13
 * (Operators.md) for odd sizes (oneDNN's LRN across channels centres its
 * window, which ONNX does not for even ones). X and Y dense, S the product
 * of the spatial dims: [N, C, sp[0], sp[1]] when nd is 2, else viewed as
 * [N, C, S, 1] (oneDNN's fast LRN kernels take 4-D tensors only; a
 * producer's layout, for the layout pass, is of 2-D spatial dims). Run with
 * ipu_dnn_exec() (no extra operands). */
typedef struct ipu_dnn_lrn_desc {
    int64_t N, C, S, size;
    float alpha, beta, bias;
    int nd;
    int64_t sp[2];
} ipu_dnn_lrn_desc_t;

/* Pooling (MaxPool-12, AveragePool-19, the global pools of Operators.md):
 * X [N, C, in...] -> Y [N, C, out...] dense, nd spatial dims (1 to 3),
 * kernel k, strides s, dilations d >= 1 as in ONNX, pads at the beginning
 * (pb) and end (pe) with pe reaching as far as the last window does (for
 * ceil_mode: out = (in + pb + pe - ((k - 1) * d + 1)) / s + 1 exactly, and
 * each pad less than a window, (k - 1) * d + 1). Padded taps are skipped
 * by MAX and AVG_EXCLUDE_PAD; AVG_INCLUDE_PAD divides every window by the
 * kernel's taps. */
typedef enum {
    IPU_DNN_POOL_MAX, IPU_DNN_POOL_AVG_INCLUDE_PAD, IPU_DNN_POOL_AVG_EXCLUDE_PAD,
} ipu_dnn_pool_alg_t;
typedef struct ipu_dnn_pool_desc {
    int nd;
    ipu_dnn_pool_alg_t alg;
    int64_t N, C;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], out[3];
} ipu_dnn_pool_desc_t;

/* Concat-4/11/13 (Operators.md) on axis 1 (the channels) of n_src
 * float32 sources: source k [N, C[k], sp...], Y [N, sum of C, sp...], nd
 * spatial dims (1 to 3) sp. */
typedef struct ipu_dnn_concat_desc {
    int nd, n_src;
    int64_t N, sp[3];
    const int64_t *C; /* n_src channel counts, each >= 1 */
} ipu_dnn_concat_desc_t;

/* BatchNormalization-15 (Operators.md) in inference mode: Y = (X - mean)
 * / sqrt(var + eps) * scale + B per channel, then Relu when relu (a Relu
 * graph/fuse.c folded in). X and Y [N, C, sp...], nd spatial dims (0 to
 * 3). */
typedef struct ipu_dnn_bnorm_desc {
    int nd;
    int64_t N, C, sp[3];
    float eps;
    int relu;
} ipu_dnn_bnorm_desc_t;

/* One primitive made for a node, with what running it needs. */
typedef struct ipu_dnn ipu_dnn_t;

/* Element-wise Add-14, Sub-14, Mul-14, Div-14 (Operators.md) of float32:
 * Y = A op B, A and Y of dims a (rank 1 to 6), B of A's rank with each dim
 * A's or 1 (NumPy broadcasting of B to A; an operand of lower rank is
 * padded with leading 1s first). */
typedef enum {
    IPU_DNN_BINARY_ADD, IPU_DNN_BINARY_SUB, IPU_DNN_BINARY_MUL, IPU_DNN_BINARY_DIV,
} ipu_dnn_binary_alg_t;
typedef struct ipu_dnn_binary_desc {
    ipu_dnn_binary_alg_t alg;
    int rank;
    int64_t a[IPU_MAX_RANK], b[IPU_MAX_RANK];
} ipu_dnn_binary_desc_t;

/* Make the primitive for node n. Errors (message names the node and
 * oneDNN's status): IPU_ERR_UNSUPPORTED when oneDNN has no implementation,
 * IPU_ERR_NO_MEMORY, IPU_ERR_INTERNAL. At debug log level the
 * implementation chosen is logged with the node's name. */
ipu_status_t ipu_dnn_matmul(const ipu_node_t *n, const ipu_dnn_matmul_desc_t *d, ipu_dnn_t **out);
ipu_status_t ipu_dnn_conv(const ipu_node_t *n, const ipu_dnn_conv_desc_t *d, ipu_dnn_t **out);
ipu_status_t ipu_dnn_deconv(const ipu_node_t *n, const ipu_dnn_deconv_desc_t *d, ipu_dnn_t **out);
/* d->size must be odd (IPU_ERR_UNSUPPORTED otherwise). like: NULL, or the
 * primitive of the node whose output this one reads, as for
 * ipu_dnn_pool(): X (and so Y) is then taken in like's output layout where
 * it is of X's dims and oneDNN has more than its reference kernel for it
 * (IPU_ERR_UNSUPPORTED otherwise). */
ipu_status_t ipu_dnn_lrn(const ipu_node_t *n, const ipu_dnn_lrn_desc_t *d, const ipu_dnn_t *like,
                         ipu_dnn_t **out);

/* Softmax-13 / LogSoftmax-13 (log) of a dense float tensor viewed as
 * [outer, len, inner], along len (the opset < 13 operators' 2-D view has
 * inner 1), each >= 1. X and Y in our layout; with an inner dim > 1 the
 * primitive runs on a copy with the axis innermost, reordered to and from
 * it inside the op (its scratch). Run with ipu_dnn_exec(), no further
 * operands. A row that is all -inf gives NaN; a -inf element 0 (log:
 * -inf); a NaN or +inf element NaN but the rest of its row 0 (PyTorch:
 * all NaN; ops/softmax.c computes such a tensor again). IPU_ERR_UNSUPPORTED where oneDNN has only its reference kernel. */
typedef struct ipu_dnn_softmax_desc {
    int64_t outer, len, inner;
    int log;
} ipu_dnn_softmax_desc_t;
ipu_status_t ipu_dnn_softmax(const ipu_node_t *n, const ipu_dnn_softmax_desc_t *d,
                             ipu_dnn_t **out);

/* LayerNormalization-17 of a dense float tensor viewed as [rows, len]:
 * each row's mean and (biased) variance, then scale and shift per column.
 * Further operands of ipu_dnn_exec(): scale [len], shift [len], mean (out,
 * [rows]), var (out, [rows]; InvStdDev is 1 / sqrt(var + eps)). */
ipu_status_t ipu_dnn_layernorm(const ipu_node_t *n, int64_t rows, int64_t len, float eps,
                               ipu_dnn_t **out);

/* Pooling, run with ipu_dnn_exec() (no further operands). like: NULL, or
 * the primitive of the node whose output this one reads: X is then taken in
 * like's output layout (where it is of X's dims), so that
 * ipu_dnn_can_chain(like, result) may hold; Y is in the primitive's layout
 * of X's kind. Either way X and Y are reordered from and to ours inside the
 * op unless chained. */
ipu_status_t ipu_dnn_pool(const ipu_node_t *n, const ipu_dnn_pool_desc_t *d, const ipu_dnn_t *like,
                          ipu_dnn_t **out);

/* The binary op of d, run with ipu_dnn_exec(): src A, extra[0] B (dense,
 * in our layout), dst Y. like: NULL, or the primitive of the node whose
 * output A is: A is then taken in like's output layout (where it is of A's
 * dims) and Y is in that layout too, so that ipu_dnn_can_chain(like,
 * result) may hold; as with ipu_dnn_pool(), A and Y are reordered from and
 * to ours inside the op unless chained. IPU_ERR_UNSUPPORTED where oneDNN
 * has only its reference kernel, and with like where B is of A's dims (it
 * would be read across A's layout) or like's layout has inner blocks
 * (nChw16c: B's bytes would differ from ours). */
ipu_status_t ipu_dnn_binary(const ipu_node_t *n, const ipu_dnn_binary_desc_t *d,
                            const ipu_dnn_t *like, ipu_dnn_t **out);

/* Concat, run with ipu_dnn_concat_run(). like: NULL, or n_src entries,
 * each NULL (source k in our layout) or the primitive producing source k,
 * whose output the layout pass keeps in its own layout (source k is then
 * read so). Y: ours when most channels come in ours, else the layout of
 * the first source in oneDNN's for Y's dims (channels-last when that one
 * would be padded), reordered to ours inside the op unless chained. The
 * primitive reads a source in whatever layout its producer writes:
 * ipu_dnn_can_chain(producer, p, 0) is IPU_DNN_CHAIN_AS_IS whenever the
 * producer can keep its own; the op then remakes p with like. Errors as
 * the makers above; IPU_ERR_INTERNAL when like[k] writes a tensor of
 * other dims than source k's. */
ipu_status_t ipu_dnn_concat(const ipu_node_t *n, const ipu_dnn_concat_desc_t *d,
                            const ipu_dnn_t *const *like, ipu_dnn_t **out);
/* Run a concat: src[k] source k (n_src of them) in the layouts p was made
 * for, dst Y; scratch and threads as ipu_dnn_run(). */
ipu_status_t ipu_dnn_concat_run(const ipu_node_t *n, ipu_dnn_t *p, const float *const *src,
                                float *dst, const ipu_kernel_ctx_t *ctx);

/* Batch normalization, run with ipu_dnn_exec(); further operands scale,
 * B, mean, var (each [C]). like as ipu_dnn_pool(): X taken in like's
 * output layout where it has X's dims; Y in X's layout. */
ipu_status_t ipu_dnn_batchnorm(const ipu_node_t *n, const ipu_dnn_bnorm_desc_t *d,
                               const ipu_dnn_t *like, ipu_dnn_t **out);

/* 1 when p reads its source(s) and writes its destination in our layout
 * with no reorder, as made and as the layout pass left it (an op may then
 * run a kernel of its own in its place); 0 otherwise and for NULL. */
int ipu_dnn_plain(const ipu_dnn_t *p);

/* Scratch bytes a run needs (oneDNN's scratchpad and any reorder buffers);
 * 0 for NULL. */
size_t ipu_dnn_scratch(const ipu_dnn_t *p);
/* ipu_dnn_scratch() of the same convolution on direct kernels where p runs
 * on Winograd (whose scratchpad is larger); ipu_dnn_scratch() otherwise. */
size_t ipu_dnn_scratch_direct(const ipu_dnn_t *p);

/* Reorder constant weights (at the address runs will pass) once into the
 * layout p prefers, into a copy p keeps until ipu_dnn_free() (a call with
 * another address makes the runs take a new copy; the earlier one stays,
 * as a run on another thread may still read it); a no-op when p takes ours
 * as they are or has them already. Thread-safe; the runs read the copy
 * without a lock. Errors: IPU_ERR_NO_MEMORY, a oneDNN failure. */
ipu_status_t ipu_dnn_load_weights(const ipu_node_t *n, ipu_dnn_t *p, const float *weights);
/* ipu_dnn_load_weights() for the weights of a DW post-op: post the
 * post-op operands a run is given (ipu_dnn_run); a no-op without one. */
ipu_status_t ipu_dnn_load_post_weights(const ipu_node_t *n, ipu_dnn_t *p, const void *const *post);
/* Bytes of the copies ipu_dnn_load_weights() and
 * ipu_dnn_load_post_weights() keep (the size of the weights in the
 * primitive's layout, 64-byte aligned), known without reordering; 0 when
 * p takes ours as they are, or for NULL. */
size_t ipu_dnn_weights_held(const ipu_dnn_t *p);
/* Of those, the bytes a convolution on Winograd holds beyond what the same
 * convolution on direct kernels would (the weights' transform: 16/9 of
 * their size for F(2x2, 3x3), 4x for F(4x4, 3x3), against direct's padded
 * blocks); 0 for any other primitive, or NULL. */
size_t ipu_dnn_winograd_bytes(const ipu_dnn_t *p);

/* Run p (any thread; a thread's first run makes the memory objects its
 * later runs re-point, so a run allocates nothing once weights are
 * loaded): src (A or X), weights (B or W), bias (or NULL), res (the
 * residual R of a SUM post-op, or NULL without one), post (the operands of
 * the MUL and ADD post-ops in their order, per channel; NULL without any),
 * dst (Y) in the layouts of the desc; ctx->scratch holds
 * ipu_dnn_scratch(p) bytes and ctx->threads sizes the OpenMP team. Weights
 * that ipu_dnn_load_weights()
 * has not prepared at this address are reordered into a temporary copy for
 * this run only (the partitioner's timing, constant folding); weights NULL
 * where p reorders them: the copy loaded last (the stage freed ours,
 * exec/stage.h: ipu_release_new), IPU_ERR_INTERNAL without one. Errors name the
 * node. */
ipu_status_t ipu_dnn_run(const ipu_node_t *n, ipu_dnn_t *p, const float *src, const float *weights,
                         const float *bias, const float *res, const void *const *post,
                         float *dst, const ipu_kernel_ctx_t *ctx);

/* Run a primitive of one source and one destination (pooling, softmax,
 * normalizations, LRN, deconvolution: their makers say which further
 * operands they take, extra[i] in that order; NULL when none), src and dst
 * in our layout unless chained, scratch and threads as ipu_dnn_run(). */
ipu_status_t ipu_dnn_exec(const ipu_node_t *n, ipu_dnn_t *p, const float *src,
                          const void *const *extra, float *dst, const ipu_kernel_ctx_t *ctx);

/* On (1): the calling thread keeps the weights it reorders for a run whose
 * weights were not loaded (ipu_dnn_load_weights), for its next runs of the
 * same primitive at the same address, as a loaded stage has them: the
 * partitioner's timing (exec/measure.c) then times the primitive, not the
 * reorder. Off (0): the copy is freed. One copy per thread at a time. */
void ipu_dnn_keep_weights(int on);

/* Whether p sums a residual (a fused Add) that it reads in Y's layout as it
 * is: then the residual's buffer may be Y's (ipu_dnn_run() copies nothing
 * when res == dst and Y is written there, not reordered from the
 * primitive's layout). 0 for NULL. */
int ipu_dnn_sums_in_place(const ipu_dnn_t *p);

/* The floats of Y's buffer (in the layout ipu_dnn_run() writes it: ours,
 * channels-last, or the primitive's own when chained, padding included)
 * to which the caller must apply x * sigmoid(x) after ipu_dnn_run(): a
 * SiLU ending the post-ops is left out of the primitive where oneDNN
 * dispatches AVX-512 (its swish post-op measured slower there than our
 * loop after the primitive). 0 when none is left (and for NULL). */
size_t ipu_dnn_silu_after(const ipu_dnn_t *p);

void ipu_dnn_free(ipu_dnn_t *p);

/* The size of every IPU's OpenMP team (--threads, >= 1; default 1), set
 * before the stages' primitives are made (ipu_device_open sets it). oneDNN
 * fixes the work split of some kernels (brgconv's nthr) from the creating
 * thread's OpenMP maximum and runs them with that many threads whatever the
 * runner's team: a primitive made for 2 threads and run by an IPU of 1 core
 * puts two spinning threads on that core. So every primitive is made for
 * this many threads, on whichever thread makes it, but for one where its
 * source, weights and destination are small (under 256 KiB: waking the
 * team costs more than the work), and each runs with the team it was made
 * for. Process-wide; the last call wins. */
void ipu_dnn_set_threads(int threads);
/* The team size ipu_dnn_set_threads set. */
int ipu_dnn_threads(void);

/* Called once by an IPU's worker thread, after it is pinned: its OpenMP
 * team (the threads oneDNN runs its primitives on when called from it) is
 * threads (>= 1) threads; thread t is bound to cpus[t % n_cpus] (the team's
 * cores from the binding plan, thread 0 being the worker), or with n_cpus
 * 0 to the worker's CPUs, so the team of one IPU never runs on another's
 * cores. At debug log level each thread of the team logs "IPU index:
 * OpenMP thread i of n on CPUs L, the worker's W" (L and W lists like
 * "0,2"; W as pinned before the team was bound). */
void ipu_dnn_bind_threads(int index, int threads, const int *cpus, int n_cpus);

/* Ends the OpenMP threads that the calling thread's own parallel regions
 * started (oneDNN's weight reorders at load, the constant folds before it
 * and the node measurements run on the host thread, with the IPU's team
 * size), so that only the IPUs' teams remain. While such threads live
 * libgomp counts them as managed threads, and with more managed threads
 * than the CPUs of the process's affinity mask when it started, it cuts
 * every team's spinning to its short "throttled" count (100 spins; a
 * GOMP_SPINCOUNT only lowers it): an IPU's team then sleeps between two
 * primitives and is woken by a futex for the next. ipu_device_load calls
 * it after a stage's load, the last of that work before the IPUs run; the
 * next parallel region on the host thread starts threads anew. It ends the calling thread's pool whoever started it: a
 * program of its own that calls the session API from a thread with an
 * OpenMP team loses that team's threads (they start again when needed). */
void ipu_dnn_end_host_team(void);

/* Activations kept in oneDNN's layout between two primitives: how
 * consumer can read producer's output in producer's layout (as its input
 * X, or as_residual as its residual R, which is in its output's layout):
 * IPU_DNN_CHAIN_AS_IS when that is the layout consumer reads (no reorder:
 * ipu_dnn_set_chain), IPU_DNN_CHAIN_REORDER when consumer can reorder it
 * into its own (ipu_dnn_chain_reorder: one reorder in place of two), 0
 * when producer writes ours, or a layout larger than the plain tensor
 * (padded channel blocks) for a concat. A value kept in a larger layout
 * needs a buffer of ipu_dnn_out_bytes(producer). */
enum { IPU_DNN_CHAIN_AS_IS = 1, IPU_DNN_CHAIN_REORDER = 2 };
int ipu_dnn_can_chain(const ipu_dnn_t *producer, const ipu_dnn_t *consumer, int as_residual);
/* Make consumer reorder its X (or as_residual R) from producer's layout
 * instead of ours, for a pair ipu_dnn_can_chain() said REORDER, before any
 * run; the producer then writes its layout (ipu_dnn_set_chain). Errors
 * (consumer unchanged): IPU_ERR_NO_MEMORY, IPU_ERR_INTERNAL. */
ipu_status_t ipu_dnn_chain_reorder(const ipu_node_t *n, ipu_dnn_t *consumer,
                                   const ipu_dnn_t *producer, int as_residual);
/* From now on p reads its input (src_blocked), its residual (res_blocked)
 * and/or writes its output (dst_blocked) in its own layout instead of ours:
 * no reorder. Set only on pairs ipu_dnn_can_chain() accepted, before any
 * run. */
void ipu_dnn_set_chain(ipu_dnn_t *p, int src_blocked, int dst_blocked, int res_blocked);

/* Make p write its output for several Concats (a DenseNet feature) instead
 * of in ours: in oneDNN's channel-blocked layout where convolutions ask for
 * it (ipu_dnn_layout()) and the channels fill whole blocks (*blocked set to
 * 1), else channels-last (NHWC and its 1-D / 3-D kinds; *blocked 0),
 * reordered from its own layout inside the op when that is another:
 * converted once into a layout whose channels the Concats copy as
 * contiguous runs and that pointwise convolutions read as it is. Before
 * any run; readers then take it as ipu_dnn_chain_source() says. Errors (p
 * unchanged): IPU_ERR_UNSUPPORTED for a tensor of rank below 3 or above 5,
 * IPU_ERR_NO_MEMORY, IPU_ERR_INTERNAL. */
ipu_status_t ipu_dnn_relayout_for_concats(const ipu_node_t *n, ipu_dnn_t *p, int *blocked);

/* 1 when, as the layout pass left p, the buffers it reads its source(s)
 * from and writes Y into are all channels-last (3-D to 5-D, dense): an op
 * may then compute what p would with a loop of its own over rows of
 * channels (the ones oneDNN 2.6 has there are slower than a pass over the
 * rows: batch normalization, concat). 0 otherwise and for NULL. */
int ipu_dnn_channels_last_io(const ipu_dnn_t *p);
/* The block (channels) when p is a concat that, as the layout pass left
 * it, reads every source and writes Y in one channel-blocked layout, each
 * source's channels a whole number of blocks: a block of an image is then
 * one run of memory in its source and in Y, and the concat is a copy of
 * those runs (oneDNN 2.6's concat copies such layouts element by element).
 * 0 otherwise and for NULL. */
int ipu_dnn_concat_blocked_io(const ipu_dnn_t *p);
/* 1 when p writes its output in a channel-blocked layout of whole blocks
 * (no padded channels) where the layout pass keeps it; 0 otherwise. */
int ipu_dnn_out_channel_blocked(const ipu_dnn_t *p);
/* The bytes of the layout p writes its output in where the layout pass
 * keeps it (0 for NULL). */
size_t ipu_dnn_out_bytes(const ipu_dnn_t *p);

/* 1 when the layout pass made p write its output in a layout other than
 * ours: its own (ipu_dnn_set_chain's dst_blocked) or channels-last
 * (ipu_dnn_relayout_for_concats); 0 otherwise and for NULL. */
int ipu_dnn_chained_dst(const ipu_dnn_t *p);

/* The instruction set oneDNN dispatches to on this CPU, e.g. "avx512_core",
 * "avx2" (static string). */
const char *ipu_dnn_isa(void);
/* The instruction sets oneDNN will dispatch to here, found without fixing
 * them (a oneDNN query would: oneDNN takes no cap after it): those this
 * CPU has, by the features oneDNN asks for each, under ONEDNN_MAX_CPU_ISA
 * (or DNNL_MAX_CPU_ISA). A bit mask of oneDNN's ISA codes, each holding
 * the ones below it: the AND of two ranks' masks holds what both have. */
unsigned ipu_dnn_isa_mask(void);
/* The name of the highest ISA in mask ("avx2"; "unknown" for none). */
const char *ipu_dnn_isa_top(unsigned mask);
/* Cap oneDNN to the highest ISA in mask (the AND of every rank's
 * ipu_dnn_isa_mask()), before any primitive is made. Returns 1 when a cap
 * was set (this CPU has a higher one), 0 when none is needed, or
 * IPU_ERR_INTERNAL (negative) when oneDNN had fixed its ISA already. */
int ipu_dnn_cap_isa(unsigned mask);
/* A hash of the oneDNN implementation (dnnl_query_impl_info_str) of the
 * last primitive made for node n (n->name), 0 when none was made; so that
 * ranks can compare the kernels they chose. Thread-safe. */
uint32_t ipu_dnn_node_impl(const ipu_node_t *n);
/* 1 if that ISA is at least AVX2. */
int ipu_dnn_isa_avx2(void);

/* The layout convolutions ask for their activations in (IPU_EXEC_CONV_LAYOUT):
 * ONEDNN, the one the kernel oneDNN picks prefers (channels-last for its
 * brgemm kernels on AVX-512), or BLOCKED, oneDNN's channel-blocked layout
 * (16 channels a block on AVX-512, 8 below: its jit kernels). The layout
 * pass then keeps what each convolution writes for its readers. */
typedef enum { IPU_DNN_LAYOUT_ONEDNN, IPU_DNN_LAYOUT_BLOCKED } ipu_dnn_layout_t;
/* This process's choice: the setting's, or for "auto" BLOCKED where oneDNN
 * would run brgemm kernels (AVX-512) blocked for cache sizes it guesses:
 * oneDNN 2.6 reads them from CPUID leaf 4, on Intel CPUs only. */
ipu_dnn_layout_t ipu_dnn_layout_wanted(void);
/* Set the layout every rank agreed on (before any primitive is made); the
 * default is ipu_dnn_layout_wanted(). */
void ipu_dnn_set_layout(ipu_dnn_layout_t layout);
ipu_dnn_layout_t ipu_dnn_layout(void);
/* Whether 3x3 stride-1 convolutions ask for oneDNN's Winograd kernels: this
 * process's choice (IPU_EXEC_WINOGRAD), the one every rank agreed on (set
 * before any primitive is made: Winograd's results are not bit-equal to
 * direct convolution's), and the one in force (the agreed one, else the
 * wanted one). */
int ipu_dnn_winograd_wanted(void);
void ipu_dnn_set_winograd(int on);
int ipu_dnn_winograd(void);
/* "blocked" or "onednn". */
const char *ipu_dnn_layout_name(ipu_dnn_layout_t layout);
/* "oneDNN 2.6.3" (static string). */
const char *ipu_dnn_version(void);
/* The CPU model ("model name" of /proc/cpuinfo) into buf; "unknown" when
 * it cannot be read. Returns buf. */
char *ipu_cpu_model(char *buf, size_t len);

#endif
