/* Reference side of libgcl's multi-rank tests (tests/mpi/gcl_test.c): dtype
 * access (float16/bfloat16 converted here, independently of libgcl), seeded
 * inputs chosen per op so that nothing overflows, the sequential reduction of
 * every rank's inputs in long double / int64 (stored as double / int64) with
 * its error bound, and the checks. The inputs of a reduction are either
 * gathered, or drawn again from the fill pattern (element i of rank r is a
 * function of seed, r and i), so that no member needs the others' buffers;
 * members on one host then share one reference, each computing a slice.
 * Uses only the public gcl.h. */
#ifndef GCL_TEST_REF_H
#define GCL_TEST_REF_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "gcl/gcl.h"

size_t ref_dsize(gcl_dtype_t dt);
const char *ref_dtype_name(gcl_dtype_t dt);
const char *ref_op_name(gcl_op_t op);
int ref_is_float(gcl_dtype_t dt);
/* Machine epsilon of the dtype (2^-23 for f32 ...); 0 for integers. */
double ref_eps(gcl_dtype_t dt);

/* Store v (rounded to nearest even for the float dtypes; integers must be in
 * range). */
void ref_set(void *buf, size_t i, gcl_dtype_t dt, long double v);
/* float <-> float16 / bfloat16 bits, round to nearest even. */
uint16_t ref_f32_to_f16(float f);
float ref_f16_to_f32(uint16_t h);
uint16_t ref_f32_to_bf16(float f);
float ref_bf16_to_f32(uint16_t h);

/* n inputs of rank `rank` for op (element i depends on seed, rank, i):
 * sums of up to 64 ranks fit every integer dtype, products of up to 8 ranks
 * do, floats stay far from overflow. */
void ref_fill(void *buf, size_t n, gcl_dtype_t dt, gcl_op_t op, uint64_t seed, int rank);
/* n bytes of a pattern unlike any input (what outputs start as). */
void ref_poison(void *buf, size_t bytes);

/* MPI's name for dtype / op, or MPI_DATATYPE_NULL / MPI_OP_NULL where MPI
 * has none (float16, bfloat16, AVG). */
MPI_Datatype ref_mpi_type(gcl_dtype_t dt);
MPI_Op ref_mpi_op(gcl_op_t op);

/* Check got[0..n) against the reduction over nranks of element off + k of
 * every rank's input (rank r's input is all + r * stride elements): exact for
 * integers and MIN/MAX, else within the reduction-order bound
 * (n-1) * eps * sum|x| (products: (n-1) * eps * |prod|). Reports the first
 * bad element on stderr under `what`; returns the number of bad elements. */
size_t ref_check_reduced(const char *what, const void *got, const void *all, size_t stride,
                         size_t off, size_t n, int nranks, gcl_dtype_t dt, gcl_op_t op);
/* The same in two steps, to check several outputs against one reference:
 * the expected elements off .. off+n-1 and their bounds, then a check. */
typedef struct {
    double *want, *tol; /* floats: the reference rounded to double, its bound
                         * (which includes that rounding); NULL for integers */
    int64_t *iwant;     /* integers: the exact result; NULL for floats */
    size_t n;
    MPI_Win win;        /* the shared window holding the arrays, or MPI_WIN_NULL */
} ref_expect_t;
/* From gathered inputs (rank r's input at all + r * stride elements). */
void ref_expect(ref_expect_t *e, const void *all, size_t stride, size_t off, size_t n, int nranks,
                gcl_dtype_t dt, gcl_op_t op);
/* From the fill pattern: the members of mc (rank r filled its input with
 * ref_fill(seed_r, r), for dt and op; seed is this member's seed_r, and the
 * members' seeds are gathered). Collective over mc: where its members
 * share a host and the reference is large, one array in shared memory that
 * each member computes a slice of; else each computes it all. */
void ref_expect_seeded(ref_expect_t *e, MPI_Comm mc, uint64_t seed, size_t off, size_t n, gcl_dtype_t dt,
                       gcl_op_t op);
/* Entries off .. off+n-1 of e, pointing into it (not to be freed; valid
 * while e is). */
ref_expect_t ref_expect_part(const ref_expect_t *e, size_t off, size_t n);
size_t ref_check_expect(const char *what, const void *got, const ref_expect_t *e, gcl_dtype_t dt);
/* Collective over mc where e came from ref_expect_seeded. */
void ref_expect_free(ref_expect_t *e);
/* got and want byte for byte (n elements); returns the number of bad ones. */
size_t ref_check_equal(const char *what, const void *got, const void *want, size_t n, gcl_dtype_t dt);

#endif
