/* libgcl's public calls (gcl.h) of collectives, point-to-point and
 * requests. Each collective is described once (gcl_args_t) and goes down
 * one path, gcl_coll_post (coll.c): checked, decided, then run on shared
 * memory directly or as a request, waited for here when blocking. */
#include "collectives/gcl_internal.h"

#include <stdio.h>

/* Describe the call, post it, and (blocking, req NULL) wait for it. */
static gcl_status_t coll(gcl_coll_t coll, const void *send, void *recv, size_t count, gcl_dtype_t dtype,
                         gcl_op_t op, int root, gcl_comm_t *comm, int blocking, gcl_request_t **req)
{
    gcl_args_t a = {coll, send, recv, count, dtype, op, root};
    if (!blocking && req == NULL)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_i%s: NULL request", gcl_coll_name(coll));
    return gcl_coll_post(comm, &a, blocking ? NULL : req);
}

#define BLOCKING 1, NULL
#define NONBLOCKING(req) 0, req

gcl_status_t gcl_allreduce(const void *send, void *recv, size_t count, gcl_dtype_t dtype, gcl_op_t op,
                           gcl_comm_t *comm)
{
    return coll(GCL_COLL_ALLREDUCE, send, recv, count, dtype, op, 0, comm, BLOCKING);
}

gcl_status_t gcl_iallreduce(const void *send, void *recv, size_t count, gcl_dtype_t dtype, gcl_op_t op,
                            gcl_comm_t *comm, gcl_request_t **req)
{
    return coll(GCL_COLL_ALLREDUCE, send, recv, count, dtype, op, 0, comm, NONBLOCKING(req));
}

gcl_status_t gcl_reduce(const void *send, void *recv, size_t count, gcl_dtype_t dtype, gcl_op_t op, int root,
                        gcl_comm_t *comm)
{
    return coll(GCL_COLL_REDUCE, send, recv, count, dtype, op, root, comm, BLOCKING);
}

gcl_status_t gcl_ireduce(const void *send, void *recv, size_t count, gcl_dtype_t dtype, gcl_op_t op, int root,
                         gcl_comm_t *comm, gcl_request_t **req)
{
    return coll(GCL_COLL_REDUCE, send, recv, count, dtype, op, root, comm, NONBLOCKING(req));
}

gcl_status_t gcl_reduce_scatter(const void *send, void *recv, size_t count, gcl_dtype_t dtype, gcl_op_t op,
                                gcl_comm_t *comm)
{
    return coll(GCL_COLL_REDUCE_SCATTER, send, recv, count, dtype, op, 0, comm, BLOCKING);
}

gcl_status_t gcl_ireduce_scatter(const void *send, void *recv, size_t count, gcl_dtype_t dtype, gcl_op_t op,
                                 gcl_comm_t *comm, gcl_request_t **req)
{
    return coll(GCL_COLL_REDUCE_SCATTER, send, recv, count, dtype, op, 0, comm, NONBLOCKING(req));
}

gcl_status_t gcl_allgather(const void *send, void *recv, size_t count, gcl_dtype_t dtype, gcl_comm_t *comm)
{
    return coll(GCL_COLL_ALLGATHER, send, recv, count, dtype, GCL_SUM, 0, comm, BLOCKING);
}

gcl_status_t gcl_iallgather(const void *send, void *recv, size_t count, gcl_dtype_t dtype, gcl_comm_t *comm,
                            gcl_request_t **req)
{
    return coll(GCL_COLL_ALLGATHER, send, recv, count, dtype, GCL_SUM, 0, comm, NONBLOCKING(req));
}

gcl_status_t gcl_broadcast(void *buf, size_t count, gcl_dtype_t dtype, int root, gcl_comm_t *comm)
{
    return coll(GCL_COLL_BROADCAST, buf, buf, count, dtype, GCL_SUM, root, comm, BLOCKING);
}

gcl_status_t gcl_ibroadcast(void *buf, size_t count, gcl_dtype_t dtype, int root, gcl_comm_t *comm,
                            gcl_request_t **req)
{
    return coll(GCL_COLL_BROADCAST, buf, buf, count, dtype, GCL_SUM, root, comm, NONBLOCKING(req));
}

gcl_status_t gcl_alltoall(const void *send, void *recv, size_t count, gcl_dtype_t dtype, gcl_comm_t *comm)
{
    return coll(GCL_COLL_ALLTOALL, send, recv, count, dtype, GCL_SUM, 0, comm, BLOCKING);
}

gcl_status_t gcl_ialltoall(const void *send, void *recv, size_t count, gcl_dtype_t dtype, gcl_comm_t *comm,
                           gcl_request_t **req)
{
    return coll(GCL_COLL_ALLTOALL, send, recv, count, dtype, GCL_SUM, 0, comm, NONBLOCKING(req));
}

gcl_status_t gcl_barrier(gcl_comm_t *comm)
{
    return coll(GCL_COLL_BARRIER, NULL, NULL, 0, (gcl_dtype_t)0, (gcl_op_t)0, 0, comm, BLOCKING);
}

gcl_status_t gcl_ibarrier(gcl_comm_t *comm, gcl_request_t **req)
{
    return coll(GCL_COLL_BARRIER, NULL, NULL, 0, (gcl_dtype_t)0, (gcl_op_t)0, 0, comm, NONBLOCKING(req));
}

/* ------------------------------------------------------ point-to-point */

/* Post a send or receive (p2p.c) and (blocking) wait for it. */
static gcl_status_t p2p(int is_send, const void *buf, size_t count, gcl_dtype_t dtype, int peer, int tag,
                        gcl_comm_t *comm, int blocking, gcl_request_t **req)
{
    gcl_request_t *r;
    gcl_status_t st = gcl_p2p_start(is_send, buf, count, dtype, peer, tag, comm, blocking ? &r : req);
    return st == GCL_OK && blocking ? gcl_wait(&r) : st;
}

gcl_status_t gcl_isend(const void *buf, size_t count, gcl_dtype_t dtype, int peer, int tag, gcl_comm_t *comm,
                       gcl_request_t **req)
{
    return p2p(1, buf, count, dtype, peer, tag, comm, NONBLOCKING(req));
}

gcl_status_t gcl_irecv(void *buf, size_t count, gcl_dtype_t dtype, int peer, int tag, gcl_comm_t *comm,
                       gcl_request_t **req)
{
    return p2p(0, buf, count, dtype, peer, tag, comm, NONBLOCKING(req));
}

gcl_status_t gcl_send(const void *buf, size_t count, gcl_dtype_t dtype, int peer, int tag, gcl_comm_t *comm)
{
    return p2p(1, buf, count, dtype, peer, tag, comm, BLOCKING);
}

gcl_status_t gcl_recv(void *buf, size_t count, gcl_dtype_t dtype, int peer, int tag, gcl_comm_t *comm)
{
    return p2p(0, buf, count, dtype, peer, tag, comm, BLOCKING);
}

/* ------------------------------------------------------------ requests */

gcl_status_t gcl_test(gcl_request_t **req)
{
    if (req == NULL || *req == NULL)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_test: NULL request");
    gcl_status_t st = gcl_req_test(*req, 1);
    if (st != GCL_IN_PROGRESS) {
        gcl_req_free(*req);
        *req = NULL;
    }
    return st;
}

gcl_status_t gcl_wait(gcl_request_t **req)
{
    if (req == NULL || *req == NULL)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_wait: NULL request");
    gcl_status_t st = gcl_req_wait(*req);
    *req = NULL;
    return st;
}

gcl_status_t gcl_wait_all(int n, gcl_request_t **reqs)
{
    if (n < 0 || (n > 0 && reqs == NULL))
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_wait_all: bad request array");
    gcl_status_t first = GCL_OK;
    int left = n;
    char msg[512] = "";
    gcl_ctx_t *ctx = NULL;
    for (unsigned spin = 0; left > 0; spin++) {
        left = 0;
        if (ctx && ctx->live) /* once per sweep: every live call, then reqs tested */
            gcl_progress_live(ctx, NULL);
        for (int i = 0; i < n; i++) {
            if (reqs[i] == NULL)
                continue;
            gcl_status_t st = gcl_req_test(reqs[i], 0);
            if (st == GCL_IN_PROGRESS) {
                ctx = reqs[i]->comm->ctx;
                left++;
                continue;
            }
            if (st != GCL_OK && first == GCL_OK) {
                first = st;
                snprintf(msg, sizeof(msg), "%s", gcl_last_error());
            }
            gcl_req_free(reqs[i]);
            reqs[i] = NULL;
        }
        if (left > 0)
            gcl_idle(ctx, spin);
    }
    if (first != GCL_OK)
        gcl_set_error(first, "%s", msg);
    return first;
}
