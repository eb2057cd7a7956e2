/* Private helpers of the shape / data-movement op families (shape.c,
 * transpose.c, concat_split.c, slice.c, gather.c, expand.c, constant.c,
 * pad.c): strided byte copies, fills, reading index/shape inputs. Not part of
 * the op interface. */
#ifndef IPU_EXEC_OPS_MOVEMENT_H
#define IPU_EXEC_OPS_MOVEMENT_H

#include "graph/op.h"

#include <stddef.h>
#include <stdint.h>

/* A registry entry op_<Type> of the default domain. */
#define IPU_MV_OP(type, since, until, flags, infer, scratch, run, fini) \
    static const ipu_op_t op_##type = {"", #type, since, until, flags, infer, scratch, run, fini, NULL, NULL, NULL};

/* Most dimensions a strided copy takes (Tile views its output as 2 x rank). */
#define IPU_MV_MAX_DIMS (2 * IPU_MAX_RANK)

/* Copy the rank-dimensional box dims from src to dst; dstr/sstr are the
 * strides in BYTES of each dimension (a source stride may be 0 to broadcast
 * or negative to reverse). Runs of contiguous bytes become memcpy; a box
 * whose source is contiguous along another dimension than the destination
 * (a transpose) is copied in cache blocks. rank <= IPU_MV_MAX_DIMS. The box
 * is split along its first dimension of more than one over threads (the
 * IPU's team, ipu_par_rows) when it moves IPU_TEAM_MIN_BYTES or more;
 * dst must not overlap src. */
void ipu_mv_copy(int threads, void *dst, const int64_t *dstr, const void *src, const int64_t *sstr,
                 int rank, const int64_t *dims, size_t esize);

/* Row-major strides in bytes of a dense tensor of the given dims. */
void ipu_mv_dense_strides(int rank, const int64_t *dims, size_t esize, int64_t *strides);

/* Fill count elements of esize bytes at dst with the element at elem. */
void ipu_mv_fill(void *dst, size_t count, const void *elem, size_t esize);

/* Element size of dt, or IPU_ERR_UNSUPPORTED naming the node (string/undefined). */
ipu_status_t ipu_mv_esize(const ipu_node_t *n, ipu_dtype_t dt, size_t *esize);

/* The data input of most movement ops: *x = input 0 of n (ipu_op_input():
 * IPU_ERR_INVALID_MODEL when absent) and *esize its element size
 * (ipu_mv_esize()). */
ipu_status_t ipu_mv_data_input(const ipu_graph_t *g, const ipu_node_t *n, const ipu_value_t **x,
                               size_t *esize);

/* Read the int64/int32 scalar or 1-D tensor t (an input called `what`) into
 * out[max]; *cnt gets the element count. Errors name the node: data absent
 * (the input is not a constant at inference) -> IPU_ERR_UNSUPPORTED; wrong
 * dtype or rank -> IPU_ERR_SHAPE; more than max elements -> IPU_ERR_UNSUPPORTED. */
ipu_status_t ipu_mv_ints(const ipu_node_t *n, const ipu_tensor_t *t, const char *what,
                         int64_t *out, int max, int *cnt);

/* The same for input slot `slot` of node n in graph g (the message names the value). */
ipu_status_t ipu_mv_input_ints(const ipu_graph_t *g, const ipu_node_t *n, int slot,
                               const char *what, int64_t *out, int max, int *cnt);

/* Set output slot `slot` of n to dtype dt and shape (rank, dims), checking
 * rank <= IPU_MAX_RANK (IPU_ERR_UNSUPPORTED otherwise). */
ipu_status_t ipu_mv_set_output(ipu_graph_t *g, const ipu_node_t *n, int slot,
                               ipu_dtype_t dt, int rank, const int64_t *dims);

/* Normalise a list of axes for rank r (negative allowed) into out; rejects
 * out of range and repeated axes (IPU_ERR_INVALID_MODEL naming the node). */
ipu_status_t ipu_mv_axes(const ipu_node_t *n, const int64_t *axes, int cnt, int rank, int *out);

#endif
