/* Internal: the transport object and the back-end interface. */
#ifndef IPU_TRANSPORT_IMPL_H
#define IPU_TRANSPORT_IMPL_H

#include "transport/transport.h"

#include <ucp/api/ucp.h>

struct ipu_treq {
    int peer;
    int is_recv;
    size_t len;
    void *ucx;            /* UCX request, or NULL once complete */
    MPI_Request mpi;
    int done;
    uint64_t tag;
    size_t received;      /* receive: the length of the message matched, once
                           * known (SIZE_MAX: longer than len, by how much
                           * the back end cannot tell) */
    ucp_tag_recv_info_t info; /* received tag and length (UCX) */
};

typedef struct ipu_transport_ops {
    ipu_status_t (*open)(ipu_transport_t *t);
    void (*close)(ipu_transport_t *t);
    ipu_status_t (*isend)(ipu_transport_t *t, ipu_treq_t *r, uint64_t tag, const void *buf);
    ipu_status_t (*irecv)(ipu_transport_t *t, ipu_treq_t *r, uint64_t tag, void *buf);
    /* progress and update r->done; error if r failed */
    ipu_status_t (*test)(ipu_transport_t *t, ipu_treq_t *r);
    void (*cancel)(ipu_transport_t *t, ipu_treq_t *r);
    void (*progress)(ipu_transport_t *t);
    const char *name;
} ipu_transport_ops_t;

struct ipu_transport {
    MPI_Comm comm;            /* MPI_COMM_NULL when opened from a bootstrap */
    ipu_bootstrap_t boot;
    int rank, size;
    ipu_transport_params_t params;
    const ipu_transport_ops_t *ops;
    char (*hosts)[64];
    int *failed;              /* per peer: 1 once reported failed */
    ucs_status_t *fail_reason;
    int *resets;              /* per peer: times its endpoint was closed by
                               * force to end a cancelled transfer (UCX) */
    /* UCX */
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucp_ep_h *eps;            /* NULL after a reset, until the next send */
    char *addrs;              /* worker addresses, addr_len bytes each */
    size_t addr_len;
    struct ipu_peer_ref { struct ipu_transport *t; int peer; } *refs; /* err handler args */
    ucs_status_t *ep_err;     /* per peer: its endpoint's error, not yet told
                               * apart (lost peer, or a reset by the peer) */
    int ep_errs;              /* peers with an ep_err pending */
    int *peer_reset;          /* per peer: its notices that it closed its
                               * connection to this rank by force, not yet
                               * matched to a failure of that connection */
    double *closed_at;        /* per peer: when it was seen to have closed its
                               * transport (its close notice), 0 if not */
};

extern const ipu_transport_ops_t ipu_transport_ucx_ops;
extern const ipu_transport_ops_t ipu_transport_mpi_ops;

#endif
