/* MPI back end (--transport mpi): MPI_Isend/MPI_Irecv on a duplicated
 * communicator. MPI tags are at most MPI_TAG_UB (>= 32767); the 40-bit user
 * tag is folded into that range, whose top IPU_TRANSPORT_TAG_CONTROL tags
 * only the control tags map to (one each). Messages between a pair of ranks on one
 * communicator do not overtake each other (MPI 4.0, 3.5), so tags that
 * collide only after the fold belong to transfers that are far apart in
 * the stream and match in order. */
#include "transport/impl.h"

#include <stdlib.h>

static int tag_ub = 32767;

static int fold(uint64_t tag)
{
    uint64_t top = IPU_TRANSPORT_TAG_MAX - tag;
    if (top < IPU_TRANSPORT_TAG_CONTROL)
        return tag_ub - (int)top;
    return (int)(tag % (uint64_t)(tag_ub - IPU_TRANSPORT_TAG_CONTROL + 1));
}

static ipu_status_t mpi_error(const char *what, int rc)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return ipu_error(IPU_ERR_TRANSPORT, "MPI %s failed: %s", what, msg);
}

static ipu_status_t mpi_open(ipu_transport_t *t)
{
    int *ub, flag;
    MPI_Comm_set_errhandler(t->comm, MPI_ERRORS_RETURN);
    MPI_Comm_get_attr(t->comm, MPI_TAG_UB, &ub, &flag);
    if (flag && *ub > 0)
        tag_ub = *ub;
    return IPU_OK;
}

static void mpi_close(ipu_transport_t *t)
{
    (void)t;
}

static ipu_status_t mpi_isend(ipu_transport_t *t, ipu_treq_t *r, uint64_t tag, const void *buf)
{
    int rc = MPI_Isend(buf, (int)r->len, MPI_BYTE, r->peer, fold(tag), t->comm, &r->mpi);
    return rc == MPI_SUCCESS ? IPU_OK : mpi_error("send", rc);
}

static ipu_status_t mpi_irecv(ipu_transport_t *t, ipu_treq_t *r, uint64_t tag, void *buf)
{
    int rc = MPI_Irecv(buf, (int)r->len, MPI_BYTE, r->peer, fold(tag), t->comm, &r->mpi);
    return rc == MPI_SUCCESS ? IPU_OK : mpi_error("receive", rc);
}

static ipu_status_t mpi_test(ipu_transport_t *t, ipu_treq_t *r)
{
    (void)t;
    if (r->done)
        return IPU_OK;
    int flag = 0;
    MPI_Status status;
    int rc = MPI_Test(&r->mpi, &flag, &status);
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    if (rc != MPI_SUCCESS && !(r->is_recv && cls == MPI_ERR_TRUNCATE)) {
        r->done = 1;
        return mpi_error(r->is_recv ? "receive" : "send", rc);
    }
    if (flag || rc != MPI_SUCCESS) {
        r->done = 1;
        int count = 0;
        if (r->is_recv && cls == MPI_ERR_TRUNCATE) {
            r->received = SIZE_MAX;
            return ipu_error(IPU_ERR_MESSAGE_SIZE, "the message from rank %d with tag %llu has more than "
                             "%zu bytes, the receive expects %zu", r->peer, (unsigned long long)r->tag,
                             r->len, r->len);
        }
        if (r->is_recv && MPI_Get_count(&status, MPI_BYTE, &count) == MPI_SUCCESS) {
            r->received = (size_t)count;
            if (r->received != r->len)
                return ipu_error(IPU_ERR_MESSAGE_SIZE, "the message from rank %d with tag %llu has %zu "
                                 "bytes, the receive expects %zu", r->peer, (unsigned long long)r->tag,
                                 r->received, r->len);
        }
    }
    return IPU_OK;
}

static void mpi_cancel(ipu_transport_t *t, ipu_treq_t *r)
{
    (void)t;
    if (r->mpi != MPI_REQUEST_NULL) {
        MPI_Cancel(&r->mpi);
        MPI_Request_free(&r->mpi);
    }
}

static void mpi_progress(ipu_transport_t *t)
{
    int flag;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, t->comm, &flag, MPI_STATUS_IGNORE);
}

const ipu_transport_ops_t ipu_transport_mpi_ops = {
    mpi_open, mpi_close, mpi_isend, mpi_irecv, mpi_test, mpi_cancel, mpi_progress, "mpi",
};
