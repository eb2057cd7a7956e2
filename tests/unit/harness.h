/* Unit-test harness: run one ONNX operator through the real path (graph,
 * registry lookup, shape inference, constant folding or the kernel).
 *
 *   op_case_t *c = oc_new("Conv", 13, 3, 1);      // 3 input slots, 1 output
 *   oc_input(c, 0, IPU_DTYPE_FLOAT, 4, (int64_t[]){1,1,3,3}, x);  // fed at run
 *   oc_const(c, 1, IPU_DTYPE_FLOAT, 4, dims_w, w);  // initializer
 *   oc_absent(c, 2);
 *   ipu_node_add_attr_ints(oc_node(c), "pads", 4, (int64_t[]){1,1,1,1});
 *   assert_int_equal(oc_run(c), IPU_OK);
 *   const ipu_tensor_t *y = oc_output(c, 0);
 *   oc_free(c);
 *
 * All inputs given with oc_const() make the node fold at inference: both
 * paths run the same kernel. */
#ifndef IPU_TESTS_HARNESS_H
#define IPU_TESTS_HARNESS_H

#include "graph/op.h"

#include <stddef.h>

typedef struct op_case {
    ipu_graph_t *g;
    int node;
    ipu_tensor_t out[8];  /* results of oc_run (owned by the case) */
    int n_out;
} op_case_t;

op_case_t *oc_new(const char *op_type, int opset, int n_in, int n_out);
ipu_node_t *oc_node(op_case_t *c);
void oc_input(op_case_t *c, int i, ipu_dtype_t dt, int rank, const int64_t *dims, const void *data);
void oc_const(op_case_t *c, int i, ipu_dtype_t dt, int rank, const int64_t *dims, const void *data);
void oc_absent(op_case_t *c, int i);
/* Bind, infer and run; returns the first error status (message in
 * ipu_error_message()). */
ipu_status_t oc_run(op_case_t *c);
/* The kernel threads oc_run gives the op (ipu_kernel_ctx_t.threads; 1 unless set). */
extern int oc_threads;
const ipu_tensor_t *oc_output(op_case_t *c, int i);
void oc_free(op_case_t *c);
/* oc_run must fail with st and a one-line message naming the node
 * ("node 'node' (OpType)") and holding needle (unless NULL); frees c. */
void oc_expect_error(op_case_t *c, ipu_status_t st, const char *needle);

/* Elementwise |got - want| <= atol + rtol * |want| (numpy.allclose) on n
 * floats; fails the cmocka test naming the first bad index. */
void assert_allclose_f32(const float *got, const float *want, size_t n, double rtol, double atol);
/* Exact equality of n int64 values. */
void assert_equal_i64(const int64_t *got, const int64_t *want, size_t n);
/* Shape equality. */
void assert_shape(const ipu_tensor_t *t, int rank, const int64_t *dims);

#endif
