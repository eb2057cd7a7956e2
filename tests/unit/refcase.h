/* One-node cases against reference files (refdir.h): the shapes a case
 * declares, its inputs read from <case>.in<i>.bin, its outputs checked
 * against <case>.out<k>.bin, and the rerun a loaded stage does. Shared by
 * the unit tests whose references tests/unit/ref_dense.py writes. */
#ifndef IPU_TESTS_REFCASE_H
#define IPU_TESTS_REFCASE_H

#include "harness.h"

#include <stddef.h>

typedef struct { int rank; int64_t d[IPU_MAX_RANK]; } shape_t;
#define S(...) ((shape_t){(int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), {__VA_ARGS__}})
#define SCALAR ((shape_t){0, {0}}) /* a rank-0 tensor; as an attribute: absent */
#define ABSENT ((shape_t){-1, {0}}) /* input absent */

size_t shape_numel(shape_t s);

/* A node of op (opset) with n_in inputs of shapes in[] read from
 * dir/<cs>.in<i>.bin (float32): input 0 fed at run time, or constant like
 * the others when all_const; ABSENT ones left out. */
op_case_t *refcase_new(const char *dir, const char *cs, const char *op, int opset, int n_in,
                       const shape_t *in, int n_out, int all_const);
/* Output k has shape want and the values of dir/<cs>.out<k>.bin: int64
 * exactly, float32 with numpy.allclose(rtol 1e-4, atol 1e-4). */
void refcase_check(op_case_t *c, const char *dir, const char *cs, int k, shape_t want);
/* Attribute name = v's values (nothing when v has none). */
void refcase_ints(op_case_t *c, const char *name, shape_t v);
/* oc_run, failing the test with the status and message unless IPU_OK. */
void refcase_run_ok(op_case_t *c, const char *cs);
/* Run the kernel again as a loaded stage does: its load() hook first, a
 * scratch larger than it asked for and dirty, output 0 dirty, threads
 * threads. */
void refcase_rerun(op_case_t *c, int threads);

#endif
