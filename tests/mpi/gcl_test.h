/* Shared by the parts of tests/mpi/gcl_test (gcl_test.c: driver, API checks
 * and the collective x dtype x op x count matrix; gcl_split.c: split
 * communicators used concurrently; gcl_faults.c: timeouts and GCL_DEBUG
 * mismatches; gcl_algo.c: every algorithm forced). */
#ifndef GCL_TEST_H
#define GCL_TEST_H

#include "gcl_ref.h"

extern int rank, size;           /* in MPI_COMM_WORLD */
extern gcl_comm_t *world;
extern long fails, checks;
extern int opt_quick;            /* -q: a smaller matrix for large groups */

void fail_at(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define CHECK(cond, ...) do { checks++; if (!(cond)) fail_at(__VA_ARGS__); } while (0)
/* st must be GCL_OK; else a failure naming what, the status and
 * gcl_last_error(). Returns st == GCL_OK. */
int gok(gcl_status_t st, const char *what);
/* st must be `want`; else a failure. Returns st == want. */
int gexpect(gcl_status_t st, gcl_status_t want, const char *what);

/* Complete a non-blocking call that returned st (with gcl_test polling or
 * gcl_wait, alternately) and check that *req is NULL afterwards. */
gcl_status_t complete(gcl_status_t st, gcl_request_t **req);

/* Buffers with a guard zone after `bytes` that must stay untouched. */
void *balloc(size_t bytes);
/* The same for the collectives' own send and receive buffers: from
 * gcl_mem_alloc on reg_comm when it is set (collective over it; reg_plain:
 * this member takes malloc memory all the same), else balloc; freed with
 * rfree. */
extern gcl_comm_t *reg_comm;
extern int reg_plain;
void *ralloc(size_t bytes);
void rfree(void *p);
int guard_ok(const void *buf, size_t bytes);
double now_s(void);

/* Reference for an allreduce of in[count] on the MPI communicator mc (the
 * members of the gcl communicator, same order): gathers every member's input
 * and checks got. Collective over mc. */
void check_allreduce_on(MPI_Comm mc, const char *what, const void *in, const void *got, size_t count,
                        gcl_dtype_t dt, gcl_op_t op);

/* Suites: each collective over world; rank 0 prints the verdict. */
void suite_split(void);
void suite_timeout(void);
void suite_mismatch(void);
/* gcl_mismatch.c: the same without GCL_DEBUG, on each path (part of suite_mismatch) */
void suite_mismatch_checked(void);
void suite_algo(int big);
void suite_reg(int big);
/* The matrix of gcl_test.c for the members of one communicator (used by
 * suite_algo on a forced algorithm). mask: COLL_* bits. */
enum { COLL_ALLREDUCE = 1, COLL_REDUCE = 2, COLL_REDUCE_SCATTER = 4, COLL_ALLGATHER = 8,
       COLL_BROADCAST = 16, COLL_ALLTOALL = 32, COLL_P2P = 64, COLL_BARRIER = 128, COLL_ALL = 255 };
void test_reductions(gcl_comm_t *c, MPI_Comm mc, gcl_dtype_t dt, gcl_op_t op, size_t count, uint64_t seed,
                     unsigned mask);
void test_movement(gcl_comm_t *c, MPI_Comm mc, gcl_dtype_t dt, size_t count, uint64_t seed, unsigned mask);
void test_barrier(gcl_comm_t *c, MPI_Comm mc);

#endif
