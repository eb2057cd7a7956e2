/* What the files of the oneDNN layer (onednn.c, onednn_*.c) share; private
 * to them: nothing else includes <dnnl.h>. */
#ifndef IPU_EXEC_ONEDNN_IMPL_H
#define IPU_EXEC_ONEDNN_IMPL_H

#include "exec/onednn.h"

#include <dnnl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

enum {
    DNN_MAX_EXTRA = IPU_FUSED_MAX + 1, /* a depthwise post-op takes two */
    DNN_SLOTS = 8, /* threads that run one primitive with memory objects kept */
};

/* Weights reordered at load: buf holds the ones at from in their
 * holder's md. Never changed once published; earlier ones (prev) stay
 * until ipu_dnn_free(), as a run on another thread may still read them. */
typedef struct dnn_wei {
    const void *from;
    void *buf;
    struct dnn_wei *prev;
} dnn_wei_t;

/* Constant weights a primitive takes in a layout of its own: W, and a
 * fused depthwise convolution's (DNN_W_DW). */
typedef struct dnn_held {
    dnnl_memory_desc_t md, user; /* the primitive's layout, ours */
    int reorder;                 /* they differ: a copy is made at load */
    _Atomic(dnn_wei_t *) wei;    /* the copies made at load (NULL: none),
                                  * read without the lock by the runs */
} dnn_held_t;
enum { DNN_W, DNN_W_DW, DNN_HELD };

/* The memory objects one thread runs a primitive with (onednn.c). */
typedef struct dnn_slot dnn_slot_t;

struct ipu_dnn {
    dnnl_primitive_t prim;
    dnnl_memory_desc_t src_md, bias_md, dst_md, pad_md; /* the primitive's */
    dnnl_memory_desc_t src_user, dst_user;              /* ours */
    dnn_held_t held[DNN_HELD];
    int dw_extra; /* the extra operand that is held[DNN_W_DW]'s weights (-1: none) */
    float *zero_bias; /* the bias a run takes when given none (NULL: none) */
    dnnl_memory_desc_t res_user; /* the residual's: ours, or its producer's layout */
    dnnl_primitive_t src_in, dst_out, res_in; /* activation reorders (NULL: none) */
    dnnl_primitive_t res_copy; /* the residual from dst_md into dst_md */
    size_t pad_bytes;   /* scratchpad region (primitive's and reorders') */
    size_t reorder_pad; /* of it, the activation reorders' (dnn_plain_io, dnn_residual_io) */
    size_t src_bytes, dst_bytes; /* reordered activations after it */
    int winograd;        /* a convolution on Winograd: its weights held transformed */
    int direct_known;    /* on Winograd, what direct convolution would take is known: */
    size_t direct_wei_bytes, direct_pad_bytes; /* its weights (held or ours), its scratchpad */
    int has_res;         /* a sum post-op adds the residual, copied into Y first */
    int chain_src, chain_dst, chain_res; /* X / Y / R in the primitive's layout already */
    int relaid; /* Y reordered into dst_user, channels-last, not ours */
    int silu_after; /* the last post-op, a SiLU, is left to the caller (ipu_dnn_silu_after) */
    int threads; /* the team it was made for and runs with (1: a small one) */
    pthread_mutex_t mu; /* serialises the loads of weights */
    /* a thread's memory objects: owner[i] is the thread that claimed
     * slot[i] (its token, 0: free); claimed once, kept until the free */
    _Atomic uintptr_t owner[DNN_SLOTS];
    dnn_slot_t *slot[DNN_SLOTS];
    /* a concat's sources and memory objects (onednn_concat.c; NULL for
     * other primitives), and how many sources are in their producers'
     * layouts */
    struct dnn_concat *cat;
    int src_own;
    int n_extra; /* further operands of ipu_dnn_exec(), in the maker's order */
    int extra_arg[DNN_MAX_EXTRA];
    dnnl_memory_desc_t extra_md[DNN_MAX_EXTRA];
};

/* Set st from a failed oneDNN call (its message names node n and what was
 * being done) and jump to the function's out: label. */
#define DNN_TRY(call, what)                     \
    do {                                        \
        dnnl_status_t s_ = (call);              \
        if (s_ != dnnl_success) {               \
            st = dnn_error(n, s_, what);        \
            goto out;                           \
        }                                       \
    } while (0)

/* Whether md is dense channels-last (NWC, NHWC, NDHWC) of its dims. */
int dnn_is_channels_last(const dnnl_memory_desc_t *md);
/* Whether every source of concat c is in such a layout (onednn_concat.c). */
int dnn_concat_sources_channels_last(const struct dnn_concat *c);

/* The layout p writes its output in when the layout pass keeps it out of
 * ours (ipu_dnn_chained_dst): channels-last once relaid, else its own. */
static inline const dnnl_memory_desc_t *dnn_out_md(const ipu_dnn_t *p)
{
    return p->relaid ? &p->dst_user : &p->dst_md;
}

static inline size_t dnn_align64(size_t b)
{
    return (b + 63) / 64 * 64;
}

/* Whether md describes a tensor of rank r and dims. */
static inline int dnn_same_dims(const dnnl_memory_desc_t *md, int r, const int64_t *dims)
{
    if (md->ndims != r)
        return 0;
    for (int i = 0; i < r; i++)
        if (md->dims[i] != dims[i])
            return 0;
    return 1;
}

/* Our layout of an activation of nd spatial dims (1 to 3): ncw, nchw, ncdhw. */
static inline dnnl_format_tag_t dnn_plain_tag(int nd)
{
    return nd == 1 ? dnnl_ncw : nd == 2 ? dnnl_nchw : dnnl_ncdhw;
}

/* Channels-last for an activation of nd spatial dims (1 to 3): nwc, nhwc,
 * ndhwc. */
static inline dnnl_format_tag_t dnn_channels_last_tag(int nd)
{
    return nd == 1 ? dnnl_nwc : nd == 2 ? dnnl_nhwc : dnnl_ndhwc;
}

/* oneDNN's channel-blocked layout of an activation of nd spatial dims (1
 * to 3) in blocks of bs (16, 8 or 4) channels: aBc16b, aBcd16b, ... */
dnnl_format_tag_t dnn_blocked_tag(int nd, int bs);
/* The channels a block of oneDNN's jit kernels holds on this ISA: 16 on
 * AVX-512 (one vector), else 8. */
int dnn_channel_block(void);
/* The block (16, 8 or 4) when md is an activation (3 to 5 dims) in
 * dnn_blocked_tag()'s layout with no padded channels, else 0. */
int dnn_channel_blocked(const dnnl_memory_desc_t *md);

/* The process's CPU engine, made once (NULL when that failed:
 * dnn_engine_status() says why). */
dnnl_engine_t dnn_engine(void);

/* Set this thread's OpenMP maximum to the IPUs' team size
 * (ipu_dnn_set_threads) before a primitive descriptor is made, so the
 * primitive's work split is for the team that will run it. */
void dnn_team_for_create(void);

/* dnnl_primitive_desc_create on the CPU engine, for the IPUs' team size
 * (dnn_team_for_create). */
dnnl_status_t dnn_pd_create(dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t desc,
                            const_dnnl_primitive_attr_t attr);
/* dnn_pd_create() for a descriptor that is only queried, never made into a
 * primitive: the OpenMP team and the thread count the next dnn_finish()
 * records are left as they were. */
dnnl_status_t dnn_pd_probe(dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t desc,
                           const_dnnl_primitive_attr_t attr);
dnnl_status_t dnn_engine_status(void);
/* ipu_op_error() naming node n for oneDNN status s while doing what:
 * IPU_ERR_UNSUPPORTED, IPU_ERR_NO_MEMORY or IPU_ERR_INTERNAL. */
ipu_status_t dnn_error(const ipu_node_t *n, dnnl_status_t s, const char *what);
/* The calling thread's stream (made on first use). */
ipu_status_t dnn_stream(const ipu_node_t *n, dnnl_stream_t *out);
/* A plain (strided) float32 descriptor of s. */
dnnl_status_t dnn_md_of(const ipu_dnn_shape_t *s, dnnl_memory_desc_t *md);
/* Attributes: user-mode scratchpad, output scale alpha, then the post-ops
 * sum (when sum != 0) and post (may be NULL). p takes the operands of
 * post's MUL and ADD (dnn_add_operand) and has_res when post has a SUM. */
dnnl_status_t dnn_make_attr(float alpha, float sum, const ipu_dnn_post_t *post, ipu_dnn_t *p,
                            dnnl_primitive_attr_t *out);
/* After dnn_finish() (and dnn_plain_io()) of a primitive with a residual:
 * the reorders that put it into Y (from our layout, or as it is). */
ipu_status_t dnn_residual_io(const ipu_node_t *n, ipu_dnn_t *p);
/* Records pd's implementation as node n's (ipu_dnn_node_impl); at debug
 * log level: "node 'X' (Op): oneDNN <implementation>, scratchpad B bytes". */
void dnn_log_impl(const ipu_node_t *n, const_dnnl_primitive_desc_t pd);
/* Bytes of pd's scratchpad. */
size_t dnn_pd_scratch(const_dnnl_primitive_desc_t pd);
/* 1 when pd's implementation is oneDNN's reference kernel ("ref:..."), which
 * runs orders of magnitude slower than a jit one: the op's own loop wins
 * (its two-primitive fusion, "ref_fused_convolution", only where either
 * primitive is a reference kernel) */
int dnn_pd_is_ref(const_dnnl_primitive_desc_t pd);
/* A zeroed ipu_dnn_t (NULL when out of memory). */
/* The opening of a maker: a new record in *p and the engine made. Errors
 * (naming n): IPU_ERR_NO_MEMORY, the engine's; *p may be set then, for
 * the maker's dnn_made() to free. */
ipu_status_t dnn_start(const ipu_node_t *n, ipu_dnn_t **p);
ipu_dnn_t *dnn_new(void);
/* p->prim from pd; records the primitive's memory descriptors. */
ipu_status_t dnn_finish(const ipu_node_t *n, ipu_dnn_t *p, dnnl_primitive_desc_t pd);
/* The end of a maker: frees pd and attr; *out = p on success, else p is
 * freed. Returns st. */
ipu_status_t dnn_made(ipu_status_t st, dnnl_primitive_desc_t pd, dnnl_primitive_attr_t attr,
                      ipu_dnn_t *p, ipu_dnn_t **out);
/* A reorder primitive from -> to, with a user-mode scratchpad when
 * user_pad; *pad grows to its scratchpad's size. */
dnnl_status_t dnn_make_reorder(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                               int user_pad, size_t *pad, dnnl_primitive_t *out);
/* dnn_make_reorder for the calling thread's OpenMP maximum as it is (a
 * reorder run at once by a run's team), not the IPUs' team size. */
dnnl_status_t dnn_make_reorder_here(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                                    int user_pad, size_t *pad, dnnl_primitive_t *out);

/* The maker's further operand of ipu_dnn_exec(): extra[p->n_extra] will
 * be bound as dnnl_arg (DNNL_ARG_SCALE...) with md (at most DNN_MAX_EXTRA). */
void dnn_add_operand(ipu_dnn_t *p, int dnnl_arg, const dnnl_memory_desc_t *md);
/* After dnn_finish(): X and Y are src and dst in our layout; where the
 * primitive's differ, reorders to and from them run inside the op, through
 * the scratchpad region (p->src_bytes, p->dst_bytes). */
ipu_status_t dnn_plain_io(const ipu_node_t *n, ipu_dnn_t *p, const dnnl_memory_desc_t *src,
                          const dnnl_memory_desc_t *dst);

/* Free what a concat keeps (onednn_concat.c); NULL is a no-op. */
void dnn_concat_free(struct dnn_concat *c);

/* The arguments of one execution: memory objects made over our buffers. */
typedef struct {
    dnnl_exec_arg_t a[12];
    int n;
} dnn_args_t;
dnnl_status_t dnn_arg(dnn_args_t *args, int which, const dnnl_memory_desc_t *md, const void *data);
void dnn_args_free(dnn_args_t *args);
/* Execute prim on args (freed) and wait. */
dnnl_status_t dnn_exec(dnnl_primitive_t prim, dnnl_stream_t s, dnn_args_t *args);
/* Free what p's runs kept (onednn_run.c): the threads' memory objects and
 * the weights made at load. */
void dnn_run_free(ipu_dnn_t *p);
/* Run reorder r from (md mf) into to (md mt), scratchpad pad (or none). */
dnnl_status_t dnn_run_reorder(dnnl_primitive_t r, dnnl_stream_t s, const dnnl_memory_desc_t *mf,
                              const void *from, const dnnl_memory_desc_t *mt, void *to, void *pad);

#endif
