/* Faults of libgcl's callers, in bounded time:
 *  - timeout: the last rank never joins; every rank that called gets
 *    GCL_ERR_TIMED_OUT no sooner than the timeout and within 5 s after it
 *    (per-communicator timeout: blocking allreduce, non-blocking allgather
 *    with gcl_wait, non-blocking barrier polled with gcl_test, a recv from
 *    the silent rank, a split; the default timeout of gcl_init_params:
 *    barrier); on shared memory the message names the absent rank;
 *  - mismatch (a world made with GCL_DEBUG=1): the last rank calls with
 *    another count, dtype, op, root or collective; every rank gets
 *    GCL_ERR_MISMATCH; one rank's argument error is GCL_ERR_MISMATCH at the
 *    others. Calls that match still succeed with GCL_DEBUG=1. The same
 *    without GCL_DEBUG on each path: gcl_mismatch.c.
 *  - late wait and sequence window (every rank): late_wait_and_window.
 *  - a late rank gets nothing of the calls that timed out on the others,
 *    whose buffers are reused at once: late_peer_data; and it gets its
 *    own timeout, not a report that they gave up: late_after_timeouts.
 * Each case runs on a communicator of its own, split off while all ranks
 * took part. */
#include "gcl_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void timed(const char *what, gcl_status_t st, double t0, double timeout, gcl_status_t want)
{
    double el = now_s() - t0;
    gexpect(st, want, what);
    if (want == GCL_ERR_TIMED_OUT)
        CHECK(el >= 0.9 * timeout, "%s: returned after %.3f s, before the timeout of %.3f s", what, el, timeout);
    CHECK(el <= timeout + 5, "%s: returned after %.3f s (timeout %.3f s)", what, el, timeout);
}

/* Every rank takes part. A non-blocking allreduce waited on 3 timeouts
 * after every rank started it (compute overlapped with the call) still
 * succeeds: the timeout bounds time without progress while waited on.
 * And the sequence window: with 1024 calls outstanding on a communicator
 * the 1025th is refused on every rank, and the 1024 then complete with
 * the right sums (a call 1024 ahead would otherwise take another's data). */
static void late_wait_and_window(gcl_comm_t *w, double T)
{
    enum { BIG = 1 << 20, WINDOW = 1024 };
    gcl_comm_t *c = NULL;
    if (!gok(gcl_comm_split(w, 0, rank, &c), "split") || !gok(gcl_comm_set_timeout(c, T), "set timeout"))
        return;
    int32_t *x = malloc(BIG * sizeof(int32_t)), *y = calloc(BIG, sizeof(int32_t));
    int32_t want = size * (size + 1) / 2; /* x = rank + 1 everywhere */
    for (size_t i = 0; i < BIG; i++)
        x[i] = rank + 1;
    gcl_request_t *req = NULL;
    gcl_status_t st = gcl_iallreduce(x, y, BIG, GCL_INT32, GCL_SUM, c, &req);
    MPI_Barrier(MPI_COMM_WORLD);
    usleep((useconds_t)(3 * T * 1e6));
    if (st == GCL_OK)
        st = gcl_wait(&req);
    gok(st, "iallreduce of 4 MiB waited on 3 timeouts after every rank started it");
    size_t bad = 0;
    for (size_t i = 0; i < BIG; i++)
        bad += y[i] != want;
    CHECK(bad == 0, "late-waited iallreduce: %zu of %d elements wrong", bad, BIG);

    /* the window tests the sequence window, not the timeout: 1024
     * hierarchical calls on an oversubscribed host (GCL_TOPO_PPN=2, other
     * tests beside) can go longer than T without progress */
    gok(gcl_comm_set_timeout(c, 20 * T), "set timeout");
    gcl_request_t **reqs = calloc(WINDOW, sizeof(*reqs));
    int32_t *out = calloc(WINDOW, sizeof(int32_t)), one = rank + 1, *ins = malloc(WINDOW * sizeof(int32_t));
    int started = 0;
    for (int i = 0; i < WINDOW; i++) {
        ins[i] = (rank + 1) * (i + 1);
        started += gok(gcl_iallreduce(&ins[i], &out[i], 1, GCL_INT32, GCL_SUM, c, &reqs[i]), "iallreduce in the window");
    }
    gcl_request_t *extra = NULL;
    gexpect(gcl_iallreduce(&one, y, 1, GCL_INT32, GCL_SUM, c, &extra), GCL_ERR_INVALID_ARG,
            "the 1025th outstanding iallreduce on one communicator");
    CHECK(extra == NULL && strstr(gcl_last_error(), "outstanding") != NULL,
          "the refused call: request %p, message \"%s\"", (void *)extra, gcl_last_error());
    if (started == WINDOW && gok(gcl_wait_all(WINDOW, reqs), "gcl_wait_all of the window")) {
        bad = 0;
        for (int i = 0; i < WINDOW; i++)
            bad += out[i] != want * (i + 1);
        CHECK(bad == 0, "window of %d iallreduces: %zu results wrong", WINDOW, bad);
    }
    gok(gcl_allreduce(&one, y, 1, GCL_INT32, GCL_SUM, c), "allreduce after the window");
    CHECK(y[0] == want, "allreduce after the window: %d, want %d", (int)y[0], (int)want);
    free(reqs);
    free(out);
    free(ins);
    free(x);
    free(y);
    gcl_comm_destroy(c);
}

/* Once a call timed out, libgcl leaves its buffers alone: a rank whose
 * send (to a rank not there yet) timed out may free or reuse the buffer at
 * once. Here they fill it with POISON instead, and the last rank comes
 * late: its receive from rank 0 and its alltoall must not get POISON
 * (UCX's rendezvous reads a send buffer only when the receiver comes, so
 * a send not ended at the timeout sent whatever the buffer then held), and
 * the receive buffers of the timed-out calls must not be written after
 * they returned. The ranks stay in libgcl meanwhile (waiting for the late
 * rank's report), so that any transfer left running would go on. */
static void late_peer_data(gcl_comm_t *w, double T)
{
    enum { M = 1 << 18 }; /* floats per block: 1 MiB, UCX's rendezvous */
    const float POISON = -9, UNSET = -7;
    int last = size - 1;
    gcl_comm_t *c = NULL;
    if (!gok(gcl_comm_split(w, 0, rank, &c), "split") || !gok(gcl_barrier(c), "barrier") ||
        !gok(gcl_comm_set_timeout(c, T), "set timeout"))
        return;
    size_t n = (size_t)M * (size_t)size;
    float *s = malloc(n * sizeof(float)), *r = malloc(n * sizeof(float));
    int32_t rep[2] = {-1, -1}; /* the late rank's count of POISON received: recv, alltoall */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != last) {
        for (size_t i = 0; i < n; i++)
            s[i] = (float)(rank + 1);
        double t0 = now_s();
        if (rank == 0)
            timed("send of 1 MiB to a rank not there yet", gcl_send(s, M, GCL_FLOAT32, last, 21, c), t0, T,
                  GCL_ERR_TIMED_OUT);
        t0 = now_s();
        timed("alltoall of 1 MiB blocks, one rank not there yet", gcl_alltoall(s, r, M, GCL_FLOAT32, c), t0, T,
              GCL_ERR_TIMED_OUT);
        for (size_t i = 0; i < n; i++) {
            s[i] = POISON; /* as if freed and reused */
            r[i] = UNSET;
        }
        int go = 1;
        MPI_Send(&go, 1, MPI_INT, last, 23, MPI_COMM_WORLD);
        gok(gcl_comm_set_timeout(c, 60), "set timeout");
        gok(gcl_recv(rep, 2, GCL_INT32, last, 22, c), "the late rank's report");
        if (rank == 0) {
            CHECK(rep[0] == 0, "the late rank received %d elements of POISON from rank 0: its send went on "
                  "after gcl_send had timed out", (int)rep[0]);
            CHECK(rep[1] == 0, "the late rank's alltoall received %d elements of POISON: sends went on after "
                  "the alltoall had timed out", (int)rep[1]);
        }
        size_t written = 0;
        for (size_t i = 0; i < n; i++)
            written += r[i] != UNSET;
        CHECK(written == 0, "%zu elements of the receive buffer of a timed-out alltoall written after it returned",
              written);
    } else {
        for (int j = 0; j < last; j++) { /* every other rank timed out and poisoned */
            int go;
            MPI_Recv(&go, 1, MPI_INT, j, 23, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        for (size_t i = 0; i < n; i++) {
            s[i] = (float)(rank + 1);
            r[i] = UNSET;
        }
        gcl_status_t st = gcl_recv(r, M, GCL_FLOAT32, 0, 21, c);
        rep[0] = 0;
        size_t written = 0;
        for (size_t i = 0; i < M; i++) {
            rep[0] += r[i] == POISON;
            written += r[i] != UNSET;
        }
        CHECK(st != GCL_OK && written == 0, "late recv from rank 0, whose send timed out: %s, %zu of %d elements "
              "written (%d POISON)", gcl_status_string(st), written, M, (int)rep[0]);
        for (size_t i = 0; i < n; i++)
            r[i] = UNSET;
        st = gcl_alltoall(s, r, M, GCL_FLOAT32, c);
        rep[1] = 0;
        for (size_t i = 0; i < n; i++)
            rep[1] += r[i] == POISON;
        CHECK(st != GCL_OK, "late alltoall, the others' timed out: %s", gcl_status_string(st));
        for (int j = 0; j < last; j++)
            gok(gcl_send(rep, 2, GCL_INT32, j, 22, c), "report to a rank that timed out");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(s);
    free(r);
    gcl_comm_destroy(c);
}

/* A rank late for calls the others gave up on by timeout gets its own
 * timeout (or, on one host, the result of their staged parts), not "gave
 * up after an error of its own" from their pending calls
 * (which fail once the first one's timeout abandoned the shared-memory
 * segment: that is no error of their own to tell). */
static void late_after_timeouts(gcl_comm_t *w, double T)
{
    int last = size - 1;
    gcl_comm_t *c = NULL;
    if (!gok(gcl_comm_split(w, 0, rank, &c), "split") || !gok(gcl_barrier(c), "barrier") ||
        !gok(gcl_comm_set_timeout(c, T), "set timeout"))
        return;
    enum { N = 4096 };
    float *x = calloc(N, sizeof(float)), *y = calloc(N, sizeof(float)), *z = calloc(N, sizeof(float));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != last) {
        gcl_request_t *a = NULL, *b = NULL;
        double t0 = now_s();
        gcl_status_t sa = gcl_iallreduce(x, y, N, GCL_FLOAT32, GCL_SUM, c, &a);
        gcl_status_t sb = gcl_iallreduce(x, z, N, GCL_FLOAT32, GCL_SUM, c, &b);
        if (sa == GCL_OK)
            sa = gcl_wait(&a);
        timed("iallreduce, one rank late", sa, t0, T, GCL_ERR_TIMED_OUT);
        if (sb == GCL_OK)
            sb = gcl_wait(&b);
        CHECK(sb != GCL_OK, "the second iallreduce, one rank late: succeeded");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == last) { /* success where the others' parts were all staged (one host) */
        double t0 = now_s();
        gcl_status_t st = gcl_allreduce(x, y, N, GCL_FLOAT32, GCL_SUM, c);
        if (st != GCL_OK)
            timed("allreduce, late for the calls the others timed out on", st, t0, T, GCL_ERR_TIMED_OUT);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(x);
    free(y);
    free(z);
    gcl_comm_destroy(c);
}

void suite_timeout(void)
{
    if (size < 2)
        return;
    const double T = 0.5, T_INIT = 1.0;
    enum { N = 1000, SUBS = 6, NB = 1 << 19 };
    int late = rank == size - 1;
    MPI_Comm mc = MPI_COMM_WORLD;
    gcl_init_params_t p = {.field_mask = GCL_INIT_FIELD_TIMEOUT, .timeout_s = T_INIT};
    gcl_comm_t *w = NULL, *s[SUBS] = {NULL};
    if (!gok(gcl_init_mpi(&mc, &p, &w), "gcl_init_mpi with a timeout"))
        return;
    for (int i = 0; i < SUBS; i++) {
        gok(gcl_comm_split(w, 0, rank, &s[i]), "split");
        gok(gcl_barrier(s[i]), "barrier on a fresh communicator");
        gok(gcl_comm_set_timeout(s[i], T), "gcl_comm_set_timeout");
    }
    late_wait_and_window(w, T);
    float *x = calloc((size_t)N * (size_t)size, sizeof(float)), *y = calloc((size_t)N * (size_t)size, sizeof(float));
    if (!late && s[0] && s[1] && s[2] && s[3] && s[4] && s[5]) {
        gcl_request_t *req = NULL;
        double t0 = now_s();
        timed("allreduce, blocking, one rank absent", gcl_allreduce(x, y, N, GCL_FLOAT32, GCL_SUM, s[0]), t0, T,
              GCL_ERR_TIMED_OUT);
        /* on shared memory the member waited for is the absent one (every
         * other has published its part); elsewhere it may be a relay */
        char who[48];
        snprintf(who, sizeof(who), "rank %d (world rank %d", size - 1, size - 1);
        if (strcmp(gcl_algorithm(s[0], GCL_COLL_ALLREDUCE, N * sizeof(float)), "shm") == 0)
            CHECK(strstr(gcl_last_error(), who) != NULL, "shm timeout does not name the absent %s): %s", who,
                  gcl_last_error());
        /* a broadcast from the absent rank: the readers wait for the root
         * alone (not for each other) */
        t0 = now_s();
        timed("broadcast from the absent rank", gcl_broadcast(x, N, GCL_FLOAT32, size - 1, s[4]), t0, T,
              GCL_ERR_TIMED_OUT);
        if (strcmp(gcl_algorithm(s[4], GCL_COLL_BROADCAST, N * sizeof(float)), "shm") == 0)
            CHECK(strstr(gcl_last_error(), who) != NULL, "shm broadcast timeout does not name the absent "
                  "root %s): %s", who, gcl_last_error());
        /* 2 MiB from rank 0 (several segments): the root names the absent
         * reader, not a present one that read what it could */
        float *b = calloc(NB, sizeof(float));
        t0 = now_s();
        timed("broadcast of 2 MiB, one reader absent", gcl_broadcast(b, NB, GCL_FLOAT32, 0, s[5]), t0, T,
              GCL_ERR_TIMED_OUT);
        if (rank == 0 && strcmp(gcl_algorithm(s[5], GCL_COLL_BROADCAST, NB * sizeof(float)), "shm") == 0)
            CHECK(strstr(gcl_last_error(), who) != NULL, "shm broadcast root's timeout does not name the "
                  "absent reader %s): %s", who, gcl_last_error());
        free(b);
        t0 = now_s();
        gcl_status_t st = gcl_iallgather(x, y, N, GCL_FLOAT32, s[1], &req);
        if (st == GCL_OK)
            st = gcl_wait(&req);
        timed("iallgather + gcl_wait, one rank absent", st, t0, T, GCL_ERR_TIMED_OUT);
        CHECK(req == NULL, "gcl_wait after a timeout left the request");
        t0 = now_s();
        st = gcl_ibarrier(s[2], &req);
        if (st == GCL_OK)
            do
                st = gcl_test(&req);
            while (st == GCL_IN_PROGRESS);
        timed("ibarrier polled with gcl_test, one rank absent", st, t0, T, GCL_ERR_TIMED_OUT);
        t0 = now_s();
        timed("recv from a rank that never sends", gcl_recv(y, N, GCL_FLOAT32, size - 1, 5, s[3]), t0, T,
              GCL_ERR_TIMED_OUT);
        CHECK(*gcl_last_error() != '\0', "gcl_last_error() empty after a timeout");
        /* a split the absent rank never calls: its own message, not the
         * exchange's (s[3] is not used again) */
        gcl_comm_t *never = NULL;
        t0 = now_s();
        timed("gcl_comm_split, one rank absent", gcl_comm_split(s[3], 0, rank, &never), t0, T, GCL_ERR_TIMED_OUT);
        CHECK(never == NULL && strstr(gcl_last_error(), "gcl_comm_split") != NULL &&
                  strstr(gcl_last_error(), "has not called") != NULL,
              "timed-out split: communicator %p, message \"%s\"", (void *)never, gcl_last_error());
        t0 = now_s();
        timed("barrier, timeout of gcl_init_params, one rank absent", gcl_barrier(w), t0, T_INIT,
              GCL_ERR_TIMED_OUT);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    late_peer_data(w, T);
    late_after_timeouts(w, T);
    for (int i = 0; i < SUBS; i++)
        gcl_comm_destroy(s[i]);
    gcl_finalize(w);
    free(x);
    free(y);
}

enum { MM_COUNT, MM_DTYPE, MM_OP, MM_ROOT, MM_COLL, MM_NB_COUNT, MM_RS_COUNT, MM_CASES };
static const char *const MM_NAME[MM_CASES] = {
    "allreduce, another count", "allreduce, another dtype", "allreduce, another op",
    "broadcast, another root", "allreduce vs allgather", "iallreduce + gcl_wait, another count",
    "reduce_scatter, another count"};

static gcl_status_t mismatch_call(int c, int odd, float *x, float *y, gcl_comm_t *comm)
{
    const size_t n = 64;
    gcl_request_t *req = NULL;
    gcl_status_t st;
    switch (c) {
    case MM_COUNT: return gcl_allreduce(x, y, n + (size_t)odd, GCL_FLOAT32, GCL_SUM, comm);
    case MM_DTYPE: return gcl_allreduce(x, y, n, odd ? GCL_INT32 : GCL_FLOAT32, GCL_SUM, comm);
    case MM_OP:    return gcl_allreduce(x, y, n, GCL_FLOAT32, odd ? GCL_MAX : GCL_SUM, comm);
    case MM_ROOT:  return gcl_broadcast(x, n, GCL_FLOAT32, odd, comm);
    case MM_COLL:
        return odd ? gcl_allgather(x, y, n, GCL_FLOAT32, comm) : gcl_allreduce(x, y, n, GCL_FLOAT32, GCL_SUM, comm);
    case MM_NB_COUNT:
        st = gcl_iallreduce(x, y, n + (size_t)odd, GCL_FLOAT32, GCL_SUM, comm, &req);
        return st == GCL_OK ? gcl_wait(&req) : st;
    default:       return gcl_reduce_scatter(x, y, n - (size_t)odd, GCL_FLOAT32, GCL_SUM, comm);
    }
}

void suite_mismatch(void)
{
    if (size < 2)
        return;
    /* a world of its own with GCL_DEBUG=1 (read by gcl_init) */
    const char *was = getenv("GCL_DEBUG");
    char *saved = was ? strdup(was) : NULL;
    setenv("GCL_DEBUG", "1", 1);
    MPI_Comm mc = MPI_COMM_WORLD;
    gcl_comm_t *dw = NULL;
    gcl_status_t st = gcl_init_mpi(&mc, NULL, &dw);
    if (saved)
        setenv("GCL_DEBUG", saved, 1);
    else
        unsetenv("GCL_DEBUG");
    free(saved);
    if (!gok(st, "gcl_init_mpi with GCL_DEBUG=1"))
        return;
    /* matching calls pass */
    test_reductions(dw, MPI_COMM_WORLD, GCL_FLOAT32, GCL_SUM, 100, 2000, COLL_ALL);
    test_reductions(dw, MPI_COMM_WORLD, GCL_BFLOAT16, GCL_AVG, 100003, 2003, COLL_ALLREDUCE | COLL_REDUCE);
    test_movement(dw, MPI_COMM_WORLD, GCL_INT64, 33, 2001, COLL_ALL);
    test_barrier(dw, MPI_COMM_WORLD);
    int odd = rank == size - 1;
    float *x = calloc(128 * (size_t)size, sizeof(float)), *y = calloc(128 * (size_t)size, sizeof(float));
    for (int c = 0; c < MM_CASES; c++) {
        gcl_comm_t *comm = NULL;
        if (!gok(gcl_comm_split(dw, 0, rank, &comm), "split"))
            continue;
        gok(gcl_comm_set_timeout(comm, 20), "gcl_comm_set_timeout");
        double t0 = now_s();
        st = mismatch_call(c, odd, x, y, comm);
        timed(MM_NAME[c], st, t0, 0, GCL_ERR_MISMATCH);
        if (st == GCL_ERR_MISMATCH)
            CHECK(*gcl_last_error() != '\0', "%s: gcl_last_error() empty", MM_NAME[c]);
        gcl_comm_destroy(comm);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* an argument error at one member (the root of a reduce passes a NULL
     * receive buffer) reaches every member, and the next, correct reduce
     * gives the right sum at the root */
    gcl_comm_t *comm = NULL;
    if (gok(gcl_comm_split(dw, 0, rank, &comm), "split")) {
        int root = size - 1;
        int32_t a = rank + 1, b = 0;
        st = gcl_reduce(&a, rank == root ? NULL : &b, 1, GCL_INT32, GCL_SUM, root, comm);
        gexpect(st, rank == root ? GCL_ERR_INVALID_ARG : GCL_ERR_MISMATCH, "reduce, NULL receive buffer at the root");
        CHECK(rank != root || strstr(gcl_last_error(), "NULL") != NULL, "the root's error lost its own message: %s",
              gcl_last_error());
        gok(gcl_reduce(&a, &b, 1, GCL_INT32, GCL_SUM, root, comm), "reduce after an argument error");
        CHECK(rank != root || b == size * (size + 1) / 2, "reduce after an argument error: %d, want %d", (int)b,
              size * (size + 1) / 2);
        gcl_comm_destroy(comm);
    }
    free(x);
    free(y);
    /* the debug world is unharmed */
    test_reductions(dw, MPI_COMM_WORLD, GCL_INT32, GCL_SUM, 7, 2002, COLL_ALLREDUCE);
    gcl_finalize(dw);
    suite_mismatch_checked();
}
