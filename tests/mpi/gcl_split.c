/* Split communicators of libgcl against MPI_Comm_split: color/key (reversed
 * keys), GCL_UNDEFINED, CONSECUTIVE(k) and ORTHOGONAL(k) for every divisor k
 * of the group size, a split of a split; then non-blocking collectives in
 * flight on several communicators at once, started in a different order on
 * even and odd ranks (only the order within one communicator is common), two
 * at once on the same communicator, completed in different orders. */
#include "gcl_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void expect_comm(const char *what, gcl_comm_t *c, MPI_Comm mc)
{
    int r, n;
    MPI_Comm_rank(mc, &r);
    MPI_Comm_size(mc, &n);
    CHECK(c && gcl_comm_rank(c) == r && gcl_comm_size(c) == n, "%s: rank %d of %d, want %d of %d", what,
          c ? gcl_comm_rank(c) : -1, c ? gcl_comm_size(c) : -1, r, n);
}

static void group(gcl_group_t kind, int k, gcl_comm_t **c, MPI_Comm *mc)
{
    char what[96];
    snprintf(what, sizeof what, "split_group(%s, %d)", kind == GCL_GROUP_ALL ? "ALL"
             : kind == GCL_GROUP_CONSECUTIVE ? "CONSECUTIVE" : "ORTHOGONAL", k);
    int color = kind == GCL_GROUP_ALL ? 0 : kind == GCL_GROUP_CONSECUTIVE ? rank / k : rank % k;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, mc);
    *c = NULL;
    if (gok(gcl_comm_split_group(world, kind, k, c), what))
        expect_comm(what, *c, *mc);
}

/* One round of concurrent non-blocking collectives; 0 if one failed. */
static int concurrent(gcl_comm_t *cons, MPI_Comm mcons, gcl_comm_t *orth, MPI_Comm morth, gcl_comm_t *par,
                       MPI_Comm mpar, gcl_comm_t *un, MPI_Comm mun, uint64_t seed)
{
    enum { NA = 1000, NB = 777, NC = 333, ND = 5000, NE = 2049, NF = 100 };
    float a[NA], ao[NA];
    int32_t b[NB], bo[NB];
    uint8_t c[NC], *co = malloc((size_t)NC * (size_t)size), *cw = malloc((size_t)NC * (size_t)size);
    double d[ND], dw[ND];
    uint16_t e[NE], eo[NE];
    int64_t f[NF], fo[NF];
    int me_par = gcl_comm_rank(par), n_par = gcl_comm_size(par);
    ref_fill(a, NA, GCL_FLOAT32, GCL_SUM, seed, rank);
    ref_fill(b, NB, GCL_INT32, GCL_MAX, seed + 1, rank);
    ref_fill(c, NC, GCL_UINT8, GCL_MAX, seed + 2, rank);
    ref_fill(d, ND, GCL_FLOAT64, GCL_MAX, seed + 3, rank);
    ref_fill(e, NE, GCL_BFLOAT16, GCL_AVG, seed + 4, rank);
    ref_fill(f, NF, GCL_INT64, GCL_SUM, seed + 5, rank);
    memcpy(dw, d, sizeof d);
    MPI_Bcast(dw, ND, MPI_DOUBLE, size - 1, MPI_COMM_WORLD);
    MPI_Allgather(c, NC, MPI_UINT8_T, cw, NC, MPI_UINT8_T, mpar);

    gcl_request_t *req[6] = {NULL};
    gcl_status_t st[6];
    /* even ranks start A..F, odd ranks F..A (D before E on world on both) */
    int order_even[6] = {0, 1, 2, 3, 4, 5}, order_odd[6] = {5, 3, 4, 2, 1, 0};
    int *order = rank % 2 ? order_odd : order_even;
    for (int i = 0; i < 6; i++) {
        int k = order[i];
        switch (k) {
        case 0: st[k] = gcl_iallreduce(a, ao, NA, GCL_FLOAT32, GCL_SUM, cons, &req[k]); break;
        case 1: st[k] = gcl_iallreduce(b, bo, NB, GCL_INT32, GCL_MAX, orth, &req[k]); break;
        case 2: st[k] = gcl_iallgather(c, co, NC, GCL_UINT8, par, &req[k]); break;
        case 3: st[k] = gcl_ibroadcast(d, ND, GCL_FLOAT64, size - 1, world, &req[k]); break;
        case 4: st[k] = gcl_iallreduce(e, eo, NE, GCL_BFLOAT16, GCL_AVG, world, &req[k]); break;
        default: st[k] = un ? gcl_iallreduce(f, fo, NF, GCL_INT64, GCL_SUM, un, &req[k]) : GCL_OK; break;
        }
        gok(st[k], "start a concurrent collective");
    }
    int ok = 1;
    if (rank % 2 == 0)
        ok = gok(gcl_wait_all(6, req), "gcl_wait_all of concurrent collectives");
    else
        for (int i = 5; i >= 0; i--)
            if (req[i])
                ok &= gok(gcl_wait(&req[i]), "gcl_wait of a concurrent collective");
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all_ok) {
        free(co);
        free(cw);
        return 0;
    }
    check_allreduce_on(mcons, "concurrent allreduce f32 sum on CONSECUTIVE", a, ao, NA, GCL_FLOAT32, GCL_SUM);
    check_allreduce_on(morth, "concurrent allreduce i32 max on ORTHOGONAL", b, bo, NB, GCL_INT32, GCL_MAX);
    checks++;
    if (ref_check_equal("concurrent allgather u8 on the parity split", co, cw, (size_t)NC * (size_t)n_par,
                        GCL_UINT8))
        fails++;
    checks++;
    if (ref_check_equal("concurrent broadcast f64 on world", d, dw, ND, GCL_FLOAT64))
        fails++;
    check_allreduce_on(MPI_COMM_WORLD, "concurrent allreduce bf16 avg on world", e, eo, NE, GCL_BFLOAT16,
                       GCL_AVG);
    if (un)
        check_allreduce_on(mun, "concurrent allreduce i64 sum on the split without rank 0", f, fo, NF,
                           GCL_INT64, GCL_SUM);
    (void)me_par;
    free(co);
    free(cw);
    return 1;
}

/* The progress rule: with non-blocking collectives pending on two
 * communicators, even ranks complete them in one order and odd ranks in the
 * other (by waits, then by a blocking call on one communicator while the
 * other's call is pending). Each completes only if libgcl's waits progress
 * every outstanding call, not just the one waited for. 4 MiB per call, so
 * that each takes many steps (shm segments, or ring steps over UCX). */
static void crossed(gcl_comm_t *c1, MPI_Comm m1, gcl_comm_t *c2, MPI_Comm m2, uint64_t seed)
{
    enum { N = 1 << 20 };
    float *a = malloc(N * sizeof(float)), *ao = malloc(N * sizeof(float));
    float *b = malloc(N * sizeof(float)), *bo = malloc(N * sizeof(float));
    if (!a || !ao || !b || !bo) {
        CHECK(0, "crossed: out of memory");
        free(a), free(ao), free(b), free(bo);
        return;
    }
    ref_fill(a, N, GCL_FLOAT32, GCL_SUM, seed, rank);
    ref_fill(b, N, GCL_FLOAT32, GCL_SUM, seed + 1, rank);
    gcl_request_t *ra = NULL, *rb = NULL;
    int ok = gok(gcl_iallreduce(a, ao, N, GCL_FLOAT32, GCL_SUM, c1, &ra), "crossed: iallreduce on c1") &
             gok(gcl_iallreduce(b, bo, N, GCL_FLOAT32, GCL_SUM, c2, &rb), "crossed: iallreduce on c2");
    if (rank % 2 == 0)
        ok &= gok(gcl_wait(&ra), "crossed: wait c1 first") & gok(gcl_wait(&rb), "crossed: then c2");
    else
        ok &= gok(gcl_wait(&rb), "crossed: wait c2 first") & gok(gcl_wait(&ra), "crossed: then c1");
    if (ok) {
        check_allreduce_on(m1, "crossed waits: allreduce on c1", a, ao, N, GCL_FLOAT32, GCL_SUM);
        check_allreduce_on(m2, "crossed waits: allreduce on c2", b, bo, N, GCL_FLOAT32, GCL_SUM);
    }
    /* a blocking call on one communicator while the other's is pending */
    ref_fill(a, N, GCL_FLOAT32, GCL_SUM, seed + 2, rank);
    ref_fill(b, N, GCL_FLOAT32, GCL_SUM, seed + 3, rank);
    gcl_comm_t *nb = rank % 2 ? c2 : c1, *bl = rank % 2 ? c1 : c2;
    float *nbi = rank % 2 ? b : a, *nbo = rank % 2 ? bo : ao, *bli = rank % 2 ? a : b, *blo = rank % 2 ? ao : bo;
    gcl_request_t *r = NULL;
    ok = gok(gcl_iallreduce(nbi, nbo, N, GCL_FLOAT32, GCL_SUM, nb, &r), "crossed: iallreduce pending");
    ok &= gok(gcl_allreduce(bli, blo, N, GCL_FLOAT32, GCL_SUM, bl), "crossed: blocking allreduce meanwhile");
    ok &= gok(gcl_wait(&r), "crossed: wait the pending one");
    if (ok) {
        check_allreduce_on(m1, "crossed blocking: allreduce on c1", a, ao, N, GCL_FLOAT32, GCL_SUM);
        check_allreduce_on(m2, "crossed blocking: allreduce on c2", b, bo, N, GCL_FLOAT32, GCL_SUM);
    }
    free(a), free(ao), free(b), free(bo);
}

/* Non-blocking allreduces started in opposite orders on even and odd ranks
 * (allowed: they are on different communicators), as the first calls on
 * fresh communicators: the first call on each must not block on the other's
 * members (a hierarchical call's host-local segment is set up with the
 * communicator, not by its first call). Under GCL_TOPO_PPN=2 (tests/mpi/
 * gcl.sh) the calls are hierarchical. */
static void crossed_starts(gcl_comm_t *c1, MPI_Comm m1, gcl_comm_t *c2, MPI_Comm m2, uint64_t seed)
{
    enum { M = 4099 };
    float a[M], ao[M], b[M], bo[M];
    ref_fill(a, M, GCL_FLOAT32, GCL_SUM, seed, rank);
    ref_fill(b, M, GCL_FLOAT32, GCL_SUM, seed + 1, rank);
    gcl_request_t *rq[2] = {NULL, NULL};
    double t0 = MPI_Wtime();
    for (int i = 0; i < 2; i++) {
        if ((i == 0) == (rank % 2 == 0)) /* even ranks: c1 first */
            gok(gcl_iallreduce(a, ao, M, GCL_FLOAT32, GCL_SUM, c1, &rq[0]), "crossed start on c1");
        else
            gok(gcl_iallreduce(b, bo, M, GCL_FLOAT32, GCL_SUM, c2, &rq[1]), "crossed start on c2");
    }
    int done = gok(gcl_wait_all(2, rq), "crossed starts: wait_all");
    double took = MPI_Wtime() - t0; /* milliseconds; a set-up waiting on the
                                     * other order ends only at the timeout */
    CHECK(took < 5, "crossed starts took %.1f s: a first call waited for another communicator", took);
    if (done) {
        check_allreduce_on(m1, "crossed starts: allreduce on c1", a, ao, M, GCL_FLOAT32, GCL_SUM);
        check_allreduce_on(m2, "crossed starts: allreduce on c2", b, bo, M, GCL_FLOAT32, GCL_SUM);
    }
}

/* Calls in flight together on one communicator: a 4 MiB allreduce then a
 * small one, completed in three ways (wait_all; the later one first; the
 * earlier one first), then a blocking call while a non-blocking one is
 * pending. Under GCL_TOPO_PPN=2 they are hierarchical: the small call's
 * inter-host step ends first on the leaders, yet its host-local broadcast
 * must keep its place after the large call's on every member. */
static void same_comm(gcl_comm_t *c, MPI_Comm m, uint64_t seed)
{
    enum { N = 1 << 20, M = 4099 };
    float *a = malloc(N * sizeof(float)), *ao = malloc(N * sizeof(float)), b[M], bo[M];
    if (!a || !ao) {
        CHECK(0, "same_comm: out of memory");
        free(a), free(ao);
        return;
    }
    static const char *const how[] = {"wait_all", "later first", "earlier first", "blocking meanwhile"};
    for (int w = 0; w < 4; w++) {
        ref_fill(a, N, GCL_FLOAT32, GCL_SUM, seed + 2 * (uint64_t)w, rank);
        ref_fill(b, M, GCL_FLOAT32, GCL_SUM, seed + 2 * (uint64_t)w + 1, rank);
        gcl_request_t *rq[2] = {NULL, NULL};
        int ok = gok(gcl_iallreduce(a, ao, N, GCL_FLOAT32, GCL_SUM, c, &rq[0]), "same_comm: large iallreduce");
        if (w == 3)
            ok &= gok(gcl_allreduce(b, bo, M, GCL_FLOAT32, GCL_SUM, c), "same_comm: blocking allreduce meanwhile");
        else
            ok &= gok(gcl_iallreduce(b, bo, M, GCL_FLOAT32, GCL_SUM, c, &rq[1]), "same_comm: small iallreduce");
        if (w == 0)
            ok &= gok(gcl_wait_all(2, rq), "same_comm: wait_all");
        else if (w == 1)
            ok &= gok(gcl_wait(&rq[1]), "same_comm: wait the later") & gok(gcl_wait(&rq[0]), "then the earlier");
        else
            ok &= gok(gcl_wait(&rq[0]), "same_comm: wait the earlier") &
                  (w == 3 || gok(gcl_wait(&rq[1]), "then the later"));
        if (ok) {
            char what[80];
            snprintf(what, sizeof what, "two in flight on one communicator (%s): large", how[w]);
            check_allreduce_on(m, what, a, ao, N, GCL_FLOAT32, GCL_SUM);
            snprintf(what, sizeof what, "two in flight on one communicator (%s): small", how[w]);
            check_allreduce_on(m, what, b, bo, M, GCL_FLOAT32, GCL_SUM);
        }
    }
    free(a), free(ao);
}

void suite_split(void)
{
    uint64_t seed = 1000;
    /* color/key */
    gcl_comm_t *par = NULL;
    MPI_Comm mpar;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &mpar);
    if (gok(gcl_comm_split(world, rank % 2, size - rank, &par), "split(rank % 2, size - rank)"))
        expect_comm("split(rank % 2, size - rank)", par, mpar);
    if (!par)
        return;
    test_movement(par, mpar, GCL_INT32, 11, seed++, COLL_ALL);
    test_reductions(par, mpar, GCL_FLOAT16, GCL_SUM, 13, seed++, COLL_ALL);
    test_barrier(par, mpar);

    /* GCL_UNDEFINED: rank 0 gets no communicator */
    gcl_comm_t *un = (gcl_comm_t *)&un;
    MPI_Comm mun;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 5, rank, &mun);
    gok(gcl_comm_split(world, rank == 0 ? GCL_UNDEFINED : 5, rank, &un), "split(GCL_UNDEFINED on rank 0)");
    if (rank == 0) {
        CHECK(un == NULL, "split with GCL_UNDEFINED: communicator not NULL");
        un = NULL;
    } else {
        expect_comm("split(GCL_UNDEFINED on rank 0)", un, mun);
        if (un)
            test_reductions(un, mun, GCL_INT8, GCL_MIN, 9, seed++, COLL_ALLREDUCE | COLL_REDUCE);
    }

    /* a split of a split */
    gcl_comm_t *nest = NULL;
    MPI_Comm mnest;
    int pr = gcl_comm_rank(par);
    MPI_Comm_split(mpar, pr % 2, -pr, &mnest);
    if (gok(gcl_comm_split(par, pr % 2, -pr, &nest), "split of a split")) {
        expect_comm("split of a split", nest, mnest);
        if (nest)
            test_reductions(nest, mnest, GCL_FLOAT64, GCL_SUM, 101, seed++, COLL_ALLREDUCE | COLL_REDUCE_SCATTER);
    }
    gcl_comm_destroy(nest);
    MPI_Comm_free(&mnest);

    /* groups for every divisor k */
    for (int k = 1; k <= size; k++) {
        if (size % k)
            continue;
        for (int kind = GCL_GROUP_CONSECUTIVE; kind <= GCL_GROUP_ORTHOGONAL; kind++) {
            gcl_comm_t *g;
            MPI_Comm mg;
            group((gcl_group_t)kind, k, &g, &mg);
            if (g) {
                test_reductions(g, mg, GCL_FLOAT32, GCL_SUM, 5, seed++, COLL_ALLREDUCE | COLL_REDUCE_SCATTER);
                test_movement(g, mg, GCL_UINT8, 3, seed++, COLL_BROADCAST | COLL_P2P | COLL_ALLTOALL);
            }
            gcl_comm_destroy(g);
            MPI_Comm_free(&mg);
        }
    }
    {
        gcl_comm_t *g;
        MPI_Comm mg;
        group(GCL_GROUP_ALL, size, &g, &mg);
        gcl_comm_destroy(g);
        MPI_Comm_free(&mg);
    }

    /* concurrency: CONSECUTIVE(k) and ORTHOGONAL(k), k the least divisor > 1 */
    int k = size;
    for (int d = size; d > 1; d--)
        if (size % d == 0)
            k = d;
    gcl_comm_t *cons, *orth;
    MPI_Comm mcons, morth;
    group(GCL_GROUP_CONSECUTIVE, k, &cons, &mcons);
    group(GCL_GROUP_ORTHOGONAL, k, &orth, &morth);
    /* a wait that cannot finish (a request not progressed while another is
     * waited for) ends in GCL_ERR_TIMED_OUT rather than a hang */
    gcl_comm_t *bounded[] = {cons, orth, par, un, world};
    for (int i = 0; i < 5; i++)
        if (bounded[i])
            gok(gcl_comm_set_timeout(bounded[i], 5), "gcl_comm_set_timeout");
    if (cons && orth)
        for (int round = 0; round < 3; round++, seed += 10)
            if (!concurrent(cons, mcons, orth, morth, par, mpar, un, mun, seed))
                break;
    if (size > 1) { /* two copies of world, so both parities are in each and
                       * neither has been used yet */
        gcl_comm_t *all, *all2;
        MPI_Comm mall, mall2;
        group(GCL_GROUP_ALL, size, &all, &mall);
        group(GCL_GROUP_ALL, size, &all2, &mall2);
        if (all && all2 && gok(gcl_comm_set_timeout(all, 10), "gcl_comm_set_timeout") &&
            gok(gcl_comm_set_timeout(all2, 10), "gcl_comm_set_timeout")) {
            crossed_starts(all2, mall2, all, mall, seed);
            crossed(all2, mall2, all, mall, seed + 10);
            same_comm(all, mall, seed + 20);
        }
        gcl_comm_destroy(all);
        gcl_comm_destroy(all2);
        MPI_Comm_free(&mall);
        MPI_Comm_free(&mall2);
    }
    gok(gcl_comm_set_timeout(world, 60), "gcl_comm_set_timeout");
    gcl_comm_destroy(cons);
    gcl_comm_destroy(orth);
    gcl_comm_destroy(un);
    gcl_comm_destroy(par);
    MPI_Comm_free(&mcons);
    MPI_Comm_free(&morth);
    MPI_Comm_free(&mpar);
    if (mun != MPI_COMM_NULL)
        MPI_Comm_free(&mun);
}
