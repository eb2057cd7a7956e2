/* The links of a pipelined run (internal.h): every value crossing from one
 * stage to a later one, its boundary buffers, and the credit flow that
 * bounds it to C micro-batches in flight (a receiver returns a credit when
 * its stage has consumed one). */
#include "pipeline/internal.h"

#include <stdlib.h>
#include <string.h>

/* Add link (v, src -> dst) to pp->links (grown by doubling from *cap). */
static ipu_status_t add_link(pipe_t *pp, int *cap, int v, int src, int dst)
{
    const ipu_value_t *val = &pp->g->values[v];
    if (pp->n_links == *cap) {
        link_t *nl = realloc(pp->links, (size_t)*cap * 2 * sizeof(link_t));
        if (nl == NULL)
            return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
        memset(nl + *cap, 0, (size_t)*cap * sizeof(link_t));
        pp->links = nl;
        *cap *= 2;
    }
    link_t *l = &pp->links[pp->n_links++];
    l->value = v;
    l->src = src;
    l->dst = dst;
    l->src_rank = pipe_stage_rank(pp, src);
    l->dst_rank = pipe_stage_rank(pp, dst);
    l->bytes = ipu_value_buffer_bytes(val); /* maybe in a larger layout (exec/ops/dnn_chain.h) */
    return IPU_OK;
}

ipu_status_t pipe_build_links(pipe_t *pp, const int *node_stage)
{
    const ipu_graph_t *g = pp->g;
    int cap = 16;
    pp->links = calloc((size_t)cap, sizeof(link_t));
    unsigned char *seen = calloc((size_t)pp->S + 1, 1); /* per stage: linked already */
    if (pp->links == NULL || seen == NULL) {
        free(seen);
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    }
    ipu_status_t st = IPU_OK;
    for (int v = 0; v < g->n_values && st == IPU_OK; v++) {
        const ipu_value_t *val = &g->values[v];
        if (val->data || val->producer < 0 || node_stage[val->producer] < 0)
            continue;
        int src = node_stage[val->producer];
        memset(seen, 0, (size_t)pp->S + 1);
        for (int i = 0; i < g->n_nodes && st == IPU_OK; i++) {
            int dst = node_stage[i];
            if (dst < 0 || dst == src || seen[dst])
                continue;
            const ipu_node_t *n = &g->nodes[i];
            for (int k = 0; k < n->n_inputs; k++)
                if (n->inputs[k] == v) {
                    seen[dst] = 1;
                    st = add_link(pp, &cap, v, src, dst);
                    break;
                }
        }
    }
    free(seen);
    if (st != IPU_OK)
        return st;
    if (pp->n_links >= (1 << 15))
        return ipu_error(IPU_ERR_UNSUPPORTED, "%d boundary tensors: at most 32767", pp->n_links);
    return IPU_OK;
}

static void *alloc_buf(size_t n)
{
    return aligned_alloc(64, (n + 63) / 64 * 64 + 64);
}

ipu_status_t pipe_alloc_link_buffers(pipe_t *pp)
{
    ipu_status_t st = IPU_OK;
    for (int l = 0; l < pp->n_links && st == IPU_OK; l++) {
        link_t *lk = &pp->links[l];
        for (int c = 0; c < pp->C && lk->shm == NULL; c++) {
            if (lk->src_rank == pp->rank && lk->dst_rank != pp->rank &&
                (lk->sbuf[c] = alloc_buf(lk->bytes)) == NULL)
                st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory for boundary buffers");
            if (lk->dst_rank == pp->rank && (lk->rbuf[c] = alloc_buf(lk->bytes)) == NULL)
                st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory for boundary buffers");
        }
    }
    return st;
}

/* Post receives for the remote links into this rank, up to C ahead. */
static ipu_status_t post_receives(pipe_t *pp, link_t *lk, int64_t total)
{
    while (lk->posted < total && lk->posted < lk->consumed + pp->C) {
        int c = (int)(lk->posted % pp->C);
        ipu_status_t st = ipu_transport_irecv(pp->tr, lk->src_rank, TAG(0, lk - pp->links, lk->posted),
                                              lk->rbuf[c], lk->bytes, &lk->rreq[c]);
        if (st != IPU_OK)
            return st;
        lk->posted++;
    }
    return IPU_OK;
}

static ipu_status_t post_credit_recv(pipe_t *pp, link_t *lk)
{
    return ipu_transport_irecv(pp->tr, lk->dst_rank, TAG(1, lk - pp->links, 0), &lk->cmsg,
                               sizeof(lk->cmsg), &lk->creq);
}

ipu_status_t pipe_post_links(pipe_t *pp)
{
    ipu_status_t st = IPU_OK;
    for (int l = 0; l < pp->n_links && st == IPU_OK; l++) {
        link_t *lk = &pp->links[l];
        if (lk->shm)
            continue;
        if (lk->dst_rank == pp->rank && lk->src_rank != pp->rank)
            st = post_receives(pp, lk, pp->ls[lk->dst % pp->K].total);
        if (st == IPU_OK && lk->src_rank == pp->rank && lk->dst_rank != pp->rank)
            st = post_credit_recv(pp, lk);
    }
    return st;
}

ipu_status_t pipe_arrived(pipe_t *pp, link_t *lk, int64_t seq, int *yes)
{
    int c = (int)(seq % pp->C);
    *yes = 0;
    if (lk->src_rank == pp->rank) {
        *yes = lk->ready[c];
        return IPU_OK;
    }
    if (lk->shm) {
        *yes = pipe_shm_load(&lk->shm->published) > seq;
        return IPU_OK;
    }
    if (seq >= lk->posted)
        return IPU_OK;
    if (lk->rreq[c] == NULL) { /* completed earlier */
        *yes = 1;
        return IPU_OK;
    }
    int done;
    ipu_status_t st = ipu_transport_test(pp->tr, lk->rreq[c], &done);
    if (st != IPU_OK) {
        lk->rreq[c] = NULL;
        return st;
    }
    if (done)
        lk->rreq[c] = NULL;
    *yes = done;
    return IPU_OK;
}

ipu_status_t pipe_consumed(pipe_t *pp, link_t *lk, int64_t total)
{
    lk->ready[lk->consumed % pp->C] = 0;
    lk->consumed++;
    if (lk->src_rank == pp->rank)
        return IPU_OK;
    if (lk->shm) { /* the slot is the sender's again */
        pipe_shm_store(&lk->shm->consumed, lk->consumed);
        return IPU_OK;
    }
    ipu_status_t st = post_receives(pp, lk, total);
    /* the sender needs the credit of sequence k only to send k + C: none is
     * sent for the last C, so no message is left in flight at the end */
    if (st != IPU_OK || lk->consumed - 1 + pp->C >= total)
        return st;
    if (pp->n_credit_sends == pp->cap_credit_sends) {
        int cap = pp->cap_credit_sends ? 2 * pp->cap_credit_sends : 16;
        ipu_treq_t **n = realloc(pp->credit_sends, (size_t)cap * sizeof(*n));
        if (n == NULL)
            return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
        pp->credit_sends = n;
        pp->cap_credit_sends = cap;
    }
    static const uint64_t one = 1;
    st = ipu_transport_isend(pp->tr, lk->src_rank, TAG(1, lk - pp->links, 0), &one,
                             sizeof(one), &pp->credit_sends[pp->n_credit_sends]);
    if (st == IPU_OK)
        pp->n_credit_sends++;
    return st;
}

ipu_status_t pipe_poll_credits(pipe_t *pp, int *events)
{
    for (int l = 0; l < pp->n_links; l++) {
        link_t *lk = &pp->links[l];
        if (lk->creq == NULL)
            continue;
        int done;
        ipu_status_t st = ipu_transport_test(pp->tr, lk->creq, &done);
        if (st != IPU_OK) {
            lk->creq = NULL;
            return st;
        }
        if (done) {
            lk->credits++;
            lk->creq = NULL;
            *events = 1;
            if ((st = post_credit_recv(pp, lk)) != IPU_OK)
                return st;
        }
    }
    for (int i = 0; i < pp->n_credit_sends; i++) {
        int done;
        ipu_status_t st = ipu_transport_test(pp->tr, pp->credit_sends[i], &done);
        if (st != IPU_OK) {
            pp->credit_sends[i] = pp->credit_sends[--pp->n_credit_sends];
            return st;
        }
        if (done) {
            pp->credit_sends[i--] = pp->credit_sends[--pp->n_credit_sends];
        }
    }
    return IPU_OK;
}

ipu_status_t pipe_poll_sends(pipe_t *pp, int *events, int *sending)
{
    *sending = 0;
    for (int l = 0; l < pp->n_links; l++) {
        link_t *lk = &pp->links[l];
        if (lk->src_rank != pp->rank || lk->dst_rank == pp->rank)
            continue;
        for (int c = 0; c < pp->C; c++) {
            if (lk->sreq[c] == NULL)
                continue;
            int done;
            ipu_status_t st = ipu_transport_test(pp->tr, lk->sreq[c], &done);
            if (st != IPU_OK) {
                lk->sreq[c] = NULL;
                return st;
            }
            if (done) {
                lk->sreq[c] = NULL;
                *events = 1;
            } else {
                *sending = 1;
            }
        }
    }
    return IPU_OK;
}

void pipe_free_links(pipe_t *pp)
{
    for (int l = 0; pp->links && l < pp->n_links; l++) {
        link_t *lk = &pp->links[l];
        for (int c = 0; c < MAX_CREDITS; c++) {
            if (pp->tr) {
                ipu_transport_cancel(pp->tr, lk->sreq[c]);
                ipu_transport_cancel(pp->tr, lk->rreq[c]);
            }
            if (lk->shm == NULL) { /* else in a shared segment (pipe_shm_close) */
                free(lk->sbuf[c]);
                free(lk->rbuf[c]);
            }
        }
        if (pp->tr)
            ipu_transport_cancel(pp->tr, lk->creq);
    }
    for (int i = 0; pp->tr && i < pp->n_credit_sends; i++)
        ipu_transport_cancel(pp->tr, pp->credit_sends[i]);
    free(pp->credit_sends);
    free(pp->links);
}
