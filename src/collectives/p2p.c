/* libgcl's point-to-point requests (gcl_isend / gcl_irecv in api.c): one
 * send or receive op in the point-to-point tag scope, with the user's tag
 * in place of sequence and step. */
#include "collectives/gcl_internal.h"

#include <stdlib.h>

gcl_status_t gcl_p2p_start(int is_send, const void *buf, size_t count, gcl_dtype_t dtype, int peer, int tag,
                        gcl_comm_t *comm, gcl_request_t **req)
{
    const char *name = is_send ? "send" : "recv";
    if (comm == NULL || req == NULL)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_%s: NULL communicator or request", name);
    if (gcl_dtype_size(dtype) == 0)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_%s: unknown dtype %d", name, (int)dtype);
    if (peer < 0 || peer >= comm->size)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_%s: peer %d not in [0, %d)", name, peer, comm->size);
    if (tag < 0 || (uint64_t)tag >= (UINT64_C(1) << GCL_P2P_TAG_BITS))
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_%s: tag %d not in [0, 2^%d)", name, tag,
                             GCL_P2P_TAG_BITS);
    if (count > 0 && (buf == NULL || buf == GCL_IN_PLACE))
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_%s: %s buffer", name, buf ? "GCL_IN_PLACE as a" : "NULL");
    if (count > ((size_t)1 << 60) / gcl_dtype_size(dtype))
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_%s: count %zu too large", name, count);
    gcl_request_t *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_%s: out of memory", name);
    r->comm = comm;
    r->coll = GCL_COLL_COUNT;
    r->name = name;
    r->algo = "p2p";
    r->scope = GCL_SCOPE_P2P;
    r->dtype = dtype;
    r->esz = gcl_dtype_size(dtype);
    static char dummy;
    void *b = count ? (void *)buf : &dummy;
    int i = is_send ? gcl_s_send(r, peer, 0, b, count * r->esz, -1, -1)
                    : gcl_s_recv(r, peer, 0, b, count * r->esz, -1, -1);
    if (i < 0) {
        gcl_req_free(r);
        return GCL_ERR_NO_MEMORY;
    }
    r->ops[i].tag = GCL_TAG(GCL_SCOPE_P2P, comm->id, 0, 0) | (uint64_t)tag;
    if (comm->timeout_s > 0)
        r->timed = 1;
    gcl_status_t st = gcl_ctx_notice(comm->ctx, name);
    if (st != GCL_OK) {
        gcl_req_free(r);
        return st;
    }
    st = gcl_req_progress(r);
    if (st != GCL_OK && st != GCL_IN_PROGRESS) {
        gcl_req_free(r);
        return st;
    }
    gcl_req_track(r);
    *req = r;
    return GCL_OK;
}
