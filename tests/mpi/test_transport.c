/* Transport under mpirun: every rank sends a distinct pattern to every other
 * rank with many tags in flight, over UCX and over MPI, and checks every
 * byte; messages of 0 B to 4 MiB. Then a size-mismatch error, and a
 * message taken after its sender closed (UCX). Prints
 * "transport: ok" on rank 0. */
#include "transport/transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails;

#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "rank %d: ", rank); \
    fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); fails++; } } while (0)

static unsigned char pattern(int src, int dst, uint64_t tag, size_t i)
{
    return (unsigned char)(src * 31 + dst * 7 + tag * 13 + i * 3);
}

static void exchange(ipu_transport_t *t, int rank, int size, size_t len)
{
    enum { TAGS = 3 };
    int n = size * TAGS;
    unsigned char **sb = calloc((size_t)n, sizeof(*sb)), **rb = calloc((size_t)n, sizeof(*rb));
    ipu_treq_t **sr = calloc((size_t)n, sizeof(*sr)), **rr = calloc((size_t)n, sizeof(*rr));
    /* receives posted first for half the tags, after the sends for the rest */
    for (int p = 0; p < size; p++)
        for (int k = 0; k < TAGS; k++) {
            int i = p * TAGS + k;
            rb[i] = malloc(len + 1);
            sb[i] = malloc(len + 1);
            for (size_t b = 0; b < len; b++)
                sb[i][b] = pattern(rank, p, (uint64_t)k, b);
            if (k % 2 == 0)
                CHECK(ipu_transport_irecv(t, p, (uint64_t)k << 20 | len, rb[i], len, &rr[i]) == IPU_OK, "irecv: %s", ipu_error_message());
        }
    for (int p = 0; p < size; p++)
        for (int k = 0; k < TAGS; k++) {
            int i = p * TAGS + k;
            CHECK(ipu_transport_isend(t, p, (uint64_t)k << 20 | len, sb[i], len, &sr[i]) == IPU_OK, "isend");
        }
    for (int p = 0; p < size; p++)
        for (int k = 1; k < TAGS; k += 2) {
            int i = p * TAGS + k;
            CHECK(ipu_transport_irecv(t, p, (uint64_t)k << 20 | len, rb[i], len, &rr[i]) == IPU_OK, "irecv: %s", ipu_error_message());
        }
    for (int i = 0; i < n; i++) {
        CHECK(ipu_transport_wait(t, rr[i]) == IPU_OK, "wait recv: %s", ipu_error_message());
        CHECK(ipu_transport_wait(t, sr[i]) == IPU_OK, "wait send: %s", ipu_error_message());
        int p = i / TAGS, k = i % TAGS;
        for (size_t b = 0; b < len; b++)
            if (rb[i][b] != pattern(p, rank, (uint64_t)k, b)) {
                CHECK(0, "byte %zu of %zu from rank %d tag %d wrong", b, len, p, k);
                break;
            }
        free(rb[i]);
        free(sb[i]);
    }
    free(sb); free(rb); free(sr); free(rr);
}

/* Send slen bytes to peer and receive rlen from it with tag; the receive's
 * status (the send's in *sst). */
static ipu_status_t xfer(ipu_transport_t *t, int peer, uint64_t tag, const void *sbuf, size_t slen, void *rbuf,
                         size_t rlen, ipu_status_t *sst)
{
    ipu_treq_t *s = NULL, *r = NULL;
    *sst = ipu_transport_isend(t, peer, tag, sbuf, slen, &s);
    ipu_status_t rst = ipu_transport_irecv(t, peer, tag, rbuf, rlen, &r);
    if (rst == IPU_OK)
        rst = ipu_transport_wait(t, r);
    char msg[256];
    snprintf(msg, sizeof msg, "%s", ipu_error_message());
    if (*sst == IPU_OK)
        *sst = ipu_transport_wait(t, s);
    ipu_error(rst, "%s", msg); /* the receive's message */
    return rst;
}

/* Closing is not collective: rank 1 sends rank 0 a message and closes;
 * rank 0 sees the connection close (it progresses a while after) and only
 * then posts its receive, which gets the message: the peer is not taken for
 * lost. A receive of a message rank 1 never sent then fails within about a
 * second (rank 1 lost). Returns the transport still open (NULL on rank 1). */
static ipu_transport_t *closed_early(ipu_transport_t *t, int rank)
{
    enum { LEN = 64, TAG = 96 };
    unsigned char buf[LEN];
    if (rank == 1) {
        for (int b = 0; b < LEN; b++)
            buf[b] = pattern(1, 0, TAG, (size_t)b);
        ipu_treq_t *s = NULL;
        ipu_status_t st = ipu_transport_isend(t, 0, TAG, buf, LEN, &s);
        CHECK(st == IPU_OK && ipu_transport_wait(t, s) == IPU_OK, "send before the close: %s",
              ipu_error_message());
        ipu_transport_close(t);
        t = NULL;
    }
    MPI_Barrier(MPI_COMM_WORLD); /* rank 1 has closed */
    if (rank == 0) {
        for (double t0 = MPI_Wtime(); MPI_Wtime() - t0 < 0.3;)
            ipu_transport_progress(t);
        CHECK(!ipu_transport_peer_failed(t, 1), "ucx: rank 1 taken for lost when it closed");
        ipu_treq_t *r = NULL;
        memset(buf, 0, sizeof buf);
        ipu_status_t st = ipu_transport_irecv(t, 1, TAG, buf, LEN, &r);
        if (st == IPU_OK)
            st = ipu_transport_wait(t, r);
        int bad = 0;
        for (int b = 0; b < LEN; b++)
            bad += buf[b] != pattern(1, 0, TAG, (size_t)b);
        CHECK(st == IPU_OK && bad == 0, "ucx: the message rank 1 sent before it closed: %s, %d bytes wrong",
              st == IPU_OK ? "received" : ipu_error_message(), bad);
        /* one it never sent: rank 1 is lost, in about a second (not after
         * the 20 s timeout) */
        double t0 = MPI_Wtime();
        st = ipu_transport_irecv(t, 1, TAG + 1, buf, LEN, &r);
        if (st == IPU_OK)
            st = ipu_transport_wait(t, r);
        double el = MPI_Wtime() - t0;
        CHECK(st == IPU_ERR_TRANSPORT && strstr(ipu_error_message(), "closed its connections") && el < 5,
              "ucx: a receive rank 1 never sent before it closed: status %d after %.2f s: %s", st, el,
              ipu_error_message());
        CHECK(ipu_transport_peer_failed(t, 1), "ucx: rank 1 not lost after a receive from it failed");
    }
    return t;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    static const size_t lens[] = {0, 1, 7, 4096, 65537, 4 << 20};
    for (int kind = 0; kind < 2; kind++) {
        ipu_transport_params_t p;
        ipu_transport_params_init(&p);
        p.kind = kind ? IPU_TRANSPORT_MPI : IPU_TRANSPORT_UCX;
        p.timeout_s = 20;
        ipu_transport_t *t;
        if (ipu_transport_open(MPI_COMM_WORLD, &p, &t) != IPU_OK) {
            fprintf(stderr, "rank %d: open: %s\n", rank, ipu_error_message());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
            exchange(t, rank, size, lens[l]);
        /* a receive expecting more bytes than sent, or fewer, is its own
         * error (IPU_ERR_MESSAGE_SIZE), not a hang, and the peer stays good:
         * a correct exchange with it follows (UCX: 64 KiB, a rendezvous) */
        if (size > 1) {
            int peer = rank ^ 1;
            if (peer < size) {
                const char *how = kind ? "mpi" : "ucx";
                char small[8] = {0}, big[16] = {0};
                static char a[1 << 16], b[1 << 16];
                ipu_status_t sst, st = xfer(t, peer, 99, small, sizeof small, big, sizeof big, &sst);
                CHECK(st == IPU_ERR_MESSAGE_SIZE && strstr(ipu_error_message(), "has 8 bytes"),
                      "%s: shorter message gave %d: %s", how, st, ipu_error_message());
                CHECK(sst == IPU_OK, "%s: send of a shorter message gave %d", how, sst);
                st = xfer(t, peer, 98, big, sizeof big, small, sizeof small, &sst);
                CHECK(st == IPU_ERR_MESSAGE_SIZE && strstr(ipu_error_message(), "expects 8"),
                      "%s: longer message gave %d: %s", how, st, ipu_error_message());
                CHECK(sst == IPU_OK, "%s: send of a longer message gave %d", how, sst);
                CHECK(!ipu_transport_peer_failed(t, peer), "%s: peer marked failed after a size mismatch", how);
                memset(a, rank + 1, sizeof a);
                st = xfer(t, peer, 97, a, sizeof a, b, sizeof b, &sst);
                CHECK(st == IPU_OK && sst == IPU_OK && b[0] == (char)(peer + 1) &&
                          b[sizeof b - 1] == (char)(peer + 1),
                      "%s: exchange after the size mismatches: %d/%d %s", how, st, sst, ipu_error_message());
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (kind == 0 && size > 1)
            t = closed_early(t, rank);
        ipu_transport_close(t);
    }
    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("transport: %s (%d ranks)\n", all ? "FAILED" : "ok", size);
    MPI_Finalize();
    return all ? 1 : 0;
}
