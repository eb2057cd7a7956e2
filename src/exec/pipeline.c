#include "exec/pipeline.h"

#include "common/log.h"
#include "exec/agree.h"
#include "transport/lost.h"
#include "exec/measure.h"
#include "exec/watchdog.h"
#include "exec/binding.h"
#include "exec/ops/registry.h"
#include "graph/fuse.h"
#include "graph/load.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define MAX_CREDITS 16
/* seconds without any event before the ranks waited on are pinged */
#define IPU_SUSPECT_S 2.0
/* tag: [credit 1][link 15][seq 24] = 40 bits */
#define TAG(credit, link, seq) \
    (((uint64_t)(credit) << 39) | ((uint64_t)(link) << 24) | ((uint64_t)(seq) & 0xffffff))

void ipu_pipeline_params_init(ipu_pipeline_params_t *p)
{
    memset(p, 0, sizeof(*p));
    p->replicas = 1;
    p->ipus_per_rank = 1;
    p->micro_batches = 1;
    p->credits = 2;
    p->measure = 1;
    p->bind = 1;
    p->threads = 1;
    p->ipu_memory = IPU_DEFAULT_MEMORY;
    ipu_transport_params_init(&p->transport);
}

/* A value crossing from one stage to a later one (within a replica). */
typedef struct link {
    int value, src, dst;        /* value index, producing and consuming stage */
    int src_rank, dst_rank;     /* world ranks in this rank's replica */
    size_t bytes;
    /* sender side */
    uint8_t *sbuf[MAX_CREDITS];
    ipu_treq_t *sreq[MAX_CREDITS];
    int64_t credits;            /* credits returned by the receiver */
    ipu_treq_t *creq;           /* posted receive of the next credit */
    uint64_t cmsg;
    /* receiver side */
    uint8_t *rbuf[MAX_CREDITS];
    ipu_treq_t *rreq[MAX_CREDITS];
    int ready[MAX_CREDITS];     /* local links: slot filled */
    int64_t consumed;           /* micro-batches taken by the consumer */
    int64_t posted;             /* remote: receives posted up to (excl.) */
} link_t;

typedef struct lstage {
    int s;
    ipu_stage_t stage;
    ipu_device_t *dev;
    int *in_links, n_in, *out_links, n_out;
    int *graph_in, n_graph_in;  /* graph input k read by this stage (k indices) */
    int *graph_out, n_graph_out;
    int64_t next, total;        /* next sequence to start, sequences of this replica */
    int running, has_result;
    int64_t seq;                /* sequence running / whose result is pending */
    unsigned char *emitted;     /* per out link: result of seq sent */
    double run_s;
} lstage_t;

typedef struct pipe {
    const ipu_graph_t *g;
    const ipu_pipeline_params_t *p;
    ipu_transport_t *tr;
    ipu_lost_t *lost;           /* lost-rank notices (transport/lost.h) */
    double T;                   /* --timeout, seconds (default 30) */
    int rank, world, R, P, K, S, replica, C;
    int W;                      /* warm-up sequences per replica (untimed, outputs dropped) */
    link_t *links;
    int n_links;
    lstage_t *ls;
    int n_ls;
    ipu_tensor_t *ins;          /* graph inputs of the current micro-batch */
    int ins_mb;                 /* which micro-batch ins holds, -1 none */
    ipu_treq_t **credit_sends;  /* credit messages in flight */
    int n_credit_sends, cap_credit_sends;
    double t0;
    double *t_start, *t_end;    /* per sequence of this replica (stage 0 / last stage) */
    double *busy_at_w;          /* per local stage: device busy seconds when sequence W started */
} pipe_t;

static double now_s(void)
{
    return MPI_Wtime();
}

static int stage_rank(const pipe_t *pp, int s)
{
    return pp->replica * pp->P + s / pp->K;
}

/* The micro-batch of sequence seq of this replica; warm-up sequences
 * (seq < W) repeat the replica's first micro-batch. */
static int mb_of(const pipe_t *pp, int64_t seq)
{
    return (int)((seq < pp->W ? 0 : seq - pp->W) * pp->R + pp->replica);
}

static ipu_status_t build_links(pipe_t *pp, const int *node_stage)
{
    const ipu_graph_t *g = pp->g;
    int cap = 16;
    pp->links = calloc((size_t)cap, sizeof(link_t));
    if (pp->links == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    for (int v = 0; v < g->n_values; v++) {
        const ipu_value_t *val = &g->values[v];
        if (val->data || val->producer < 0 || node_stage[val->producer] < 0)
            continue;
        int src = node_stage[val->producer];
        unsigned char seen[4096] = {0};
        for (int i = 0; i < g->n_nodes; i++) {
            int dst = node_stage[i];
            if (dst < 0 || dst == src || seen[dst])
                continue;
            const ipu_node_t *n = &g->nodes[i];
            for (int k = 0; k < n->n_inputs; k++)
                if (n->inputs[k] == v) {
                    seen[dst] = 1;
                    if (pp->n_links == cap) {
                        link_t *nl = realloc(pp->links, (size_t)cap * 2 * sizeof(link_t));
                        if (nl == NULL)
                            return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
                        memset(nl + cap, 0, (size_t)cap * sizeof(link_t));
                        pp->links = nl;
                        cap *= 2;
                    }
                    link_t *l = &pp->links[pp->n_links++];
                    l->value = v;
                    l->src = src;
                    l->dst = dst;
                    l->src_rank = stage_rank(pp, src);
                    l->dst_rank = stage_rank(pp, dst);
                    l->bytes = (size_t)ipu_shape_numel(val->rank, val->dims) * ipu_dtype_size(val->dtype);
                    break;
                }
        }
    }
    if (pp->n_links >= (1 << 15))
        return ipu_error(IPU_ERR_UNSUPPORTED, "%d boundary tensors: at most 32767", pp->n_links);
    return IPU_OK;
}

static int append(int **arr, int *n, int v)
{
    int *na = realloc(*arr, (size_t)(*n + 1) * sizeof(int));
    if (na == NULL)
        return -1;
    na[(*n)++] = v;
    *arr = na;
    return 0;
}

static int has(const int *list, int n, int v)
{
    for (int i = 0; i < n; i++)
        if (list[i] == v)
            return 1;
    return 0;
}

static void *alloc_buf(size_t n)
{
    return aligned_alloc(64, (n + 63) / 64 * 64 + 64);
}

/* Build this rank's stages (nodes, boundary lists), devices and buffers. */
static ipu_status_t build_local(pipe_t *pp, const int *node_stage, const ipu_binding_t *bind)
{
    const ipu_graph_t *g = pp->g;
    const ipu_pipeline_params_t *p = pp->p;
    pp->ls = calloc((size_t)pp->K, sizeof(lstage_t));
    if (pp->ls == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    int64_t total = pp->W + (p->micro_batches - pp->replica + pp->R - 1) / pp->R;
    ipu_status_t st = IPU_OK;
    for (int i = 0; i < pp->K && st == IPU_OK; i++) {
        lstage_t *ls = &pp->ls[pp->n_ls++];
        ls->s = (pp->rank % pp->P) * pp->K + i;
        ls->total = total;
        unsigned flags = (ls->s == 0 ? IPU_STAGE_FIRST : 0) | (ls->s == pp->S - 1 ? IPU_STAGE_LAST : 0);
        if ((st = ipu_stage_build_of(g, node_stage, ls->s, flags, &ls->stage)) != IPU_OK)
            break;
        for (int l = 0; l < pp->n_links; l++) {
            if (pp->links[l].dst == ls->s && append(&ls->in_links, &ls->n_in, l))
                st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
            if (pp->links[l].src == ls->s && append(&ls->out_links, &ls->n_out, l))
                st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
        }
        /* the graph inputs it is fed and the graph outputs it gives, as
         * ipu_stage_build_of() listed them */
        const ipu_stage_t *sg = &ls->stage;
        for (int k = 0; k < g->n_inputs && st == IPU_OK; k++)
            if (has(sg->inputs, sg->n_inputs, g->inputs[k]) && append(&ls->graph_in, &ls->n_graph_in, k))
                st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
        for (int k = 0; k < g->n_outputs && st == IPU_OK; k++)
            if (has(sg->outputs, sg->n_outputs, g->outputs[k]) &&
                append(&ls->graph_out, &ls->n_graph_out, k))
                st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
        if (st == IPU_OK && (ls->emitted = calloc((size_t)ls->n_out + 1, 1)) == NULL)
            st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
        if (st == IPU_OK) {
            ipu_device_params_t dp = {.index = i, .capacity = p->ipu_memory, .threads = p->threads,
                                      .core = bind ? bind->pu[i] : -1};
            st = ipu_device_open(&dp, &ls->dev);
        }
        if (st == IPU_OK && (st = ipu_device_load(ls->dev, &ls->stage)) != IPU_OK)
            st = ipu_error(st, "rank %d, stage %d: %s", pp->rank, ls->s, ipu_error_message());
    }
    /* buffers of the links this rank sends or receives */
    for (int l = 0; l < pp->n_links && st == IPU_OK; l++) {
        link_t *lk = &pp->links[l];
        for (int c = 0; c < pp->C; c++) {
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

/* 1 if sequence seq of link lk has arrived at this rank. */
static ipu_status_t arrived(pipe_t *pp, link_t *lk, int64_t seq, int *yes)
{
    int c = (int)(seq % pp->C);
    *yes = 0;
    if (lk->src_rank == pp->rank) {
        *yes = lk->ready[c];
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

/* The consumer took sequence seq: free its slot, return a credit. */
static ipu_status_t consumed(pipe_t *pp, link_t *lk, int64_t total)
{
    lk->ready[lk->consumed % pp->C] = 0;
    lk->consumed++;
    if (lk->src_rank == pp->rank)
        return IPU_OK;
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

static ipu_status_t try_start(pipe_t *pp, lstage_t *ls)
{
    int64_t seq = ls->next;
    for (int i = 0; i < ls->n_in; i++) {
        int yes;
        ipu_status_t st = arrived(pp, &pp->links[ls->in_links[i]], seq, &yes);
        if (st != IPU_OK || !yes)
            return st;
    }
    ipu_status_t st;
    int mb = mb_of(pp, seq);
    if (ls->n_graph_in > 0 && pp->ins_mb != mb) {
        if ((st = pp->p->make_inputs(pp->p->arg, mb, pp->ins)) != IPU_OK)
            return st;
        pp->ins_mb = mb;
    }
    for (int i = 0; i < ls->n_graph_in; i++) {
        int k = ls->graph_in[i];
        ipu_tensor_t slot = ipu_device_tensor(ls->dev, pp->g->inputs[k]);
        if (!ipu_shape_equal(slot.rank, slot.dims, pp->ins[k].rank, pp->ins[k].dims) ||
            slot.dtype != pp->ins[k].dtype)
            return ipu_error(IPU_ERR_INPUT, "micro-batch %d: input '%s' differs in shape or dtype "
                             "from micro-batch 0; every micro-batch must have the same shapes",
                             mb, pp->g->values[pp->g->inputs[k]].name);
        if ((st = ipu_device_write(ls->dev, pp->g->inputs[k], pp->ins[k].data,
                                   ipu_tensor_nbytes(&pp->ins[k]))) != IPU_OK)
            return st;
    }
    for (int i = 0; i < ls->n_in; i++) {
        link_t *lk = &pp->links[ls->in_links[i]];
        if ((st = ipu_device_write(ls->dev, lk->value, lk->rbuf[seq % pp->C], lk->bytes)) != IPU_OK ||
            (st = consumed(pp, lk, ls->total)) != IPU_OK)
            return st;
    }
    if (ls->s == 0)
        pp->t_start[seq] = now_s() - pp->t0;
    if (seq == pp->W)
        pp->busy_at_w[ls - pp->ls] = ipu_device_busy_s(ls->dev);
    if ((st = ipu_device_start(ls->dev)) != IPU_OK)
        return st;
    ls->running = 1;
    ls->seq = seq;
    ls->next++;
    return IPU_OK;
}

/* Hand the finished sequence's outputs on; returns with has_result still set
 * when a link has no room yet. */
static ipu_status_t try_emit(pipe_t *pp, lstage_t *ls)
{
    int64_t seq = ls->seq;
    int c = (int)(seq % pp->C);
    ipu_status_t st;
    for (int i = 0; i < ls->n_out; i++) {
        if (ls->emitted[i])
            continue;
        link_t *lk = &pp->links[ls->out_links[i]];
        if (lk->dst_rank == pp->rank) { /* local: copy into the consumer's slot */
            if (seq >= lk->consumed + pp->C)
                continue;
            if ((st = ipu_device_read(ls->dev, lk->value, lk->rbuf[c], lk->bytes)) != IPU_OK)
                return st;
            lk->ready[c] = 1;
        } else {
            if (seq >= lk->credits + pp->C)
                continue;
            if (lk->sreq[c]) { /* the slot's previous send must be done */
                int done;
                if ((st = ipu_transport_test(pp->tr, lk->sreq[c], &done)) != IPU_OK) {
                    lk->sreq[c] = NULL;
                    return st;
                }
                if (!done)
                    continue;
                lk->sreq[c] = NULL;
            }
            if ((st = ipu_device_read(ls->dev, lk->value, lk->sbuf[c], lk->bytes)) != IPU_OK ||
                (st = ipu_transport_isend(pp->tr, lk->dst_rank, TAG(0, lk - pp->links, seq),
                                          lk->sbuf[c], lk->bytes, &lk->sreq[c])) != IPU_OK)
                return st;
        }
        ls->emitted[i] = 1;
    }
    for (int i = 0; i < ls->n_out; i++)
        if (!ls->emitted[i])
            return IPU_OK;
    for (int i = 0; i < ls->n_graph_out && seq >= pp->W; i++) {
        int k = ls->graph_out[i];
        ipu_tensor_t t = ipu_device_tensor(ls->dev, pp->g->outputs[k]);
        if ((st = pp->p->take_output(pp->p->arg, mb_of(pp, seq), k, &t)) != IPU_OK)
            return st;
    }
    if (ls->s == pp->S - 1)
        pp->t_end[seq] = now_s() - pp->t0;
    memset(ls->emitted, 0, (size_t)ls->n_out);
    ls->has_result = 0;
    return IPU_OK;
}

static ipu_status_t poll_credits(pipe_t *pp, int *events)
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

/* Nothing happened for a while: is every rank this one waits on still
 * there? Pings them (transport/lost.h); a rank that stopped answering is lost. */
static ipu_status_t check_peers(pipe_t *pp)
{
    for (int i = 0; i < pp->n_ls; i++) {
        lstage_t *ls = &pp->ls[i];
        for (int k = 0; k < ls->n_in + ls->n_out; k++) {
            int in = k < ls->n_in;
            link_t *lk = &pp->links[in ? ls->in_links[k] : ls->out_links[k - ls->n_in]];
            int peer = in ? lk->src_rank : lk->dst_rank;
            if (peer == pp->rank || (in && ls->next >= ls->total))
                continue;
            if (ipu_lost_alive(pp->lost, peer) < 0)
                return ipu_error(IPU_ERR_TRANSPORT, "lost rank %d on host %s (stage %d): it stopped "
                                 "answering; the job cannot continue", peer,
                                 ipu_transport_host(pp->tr, peer), in ? lk->src : lk->dst);
        }
    }
    return IPU_OK;
}

/* The scheduler: run until every local stage has run and emitted all its
 * sequences and every send has completed. */
static ipu_status_t schedule(pipe_t *pp)
{
    double last_event = now_s();
    long idle_us = 1;
    for (;;) {
        int events = 0, busy = 0;
        ipu_transport_progress(pp->tr);
        ipu_status_t st = poll_credits(pp, &events);
        if (st == IPU_OK)
            st = ipu_lost_poll(pp->lost);
        for (int i = 0; i < pp->n_ls && st == IPU_OK; i++) {
            lstage_t *ls = &pp->ls[i];
            if (ls->running) {
                int done;
                if ((st = ipu_device_poll(ls->dev, &done)) != IPU_OK)
                    break;
                if (done) {
                    ls->running = 0;
                    ls->has_result = 1;
                    events = 1;
                }
            }
            if (ls->has_result) {
                int64_t before = ls->seq;
                if ((st = try_emit(pp, ls)) != IPU_OK)
                    break;
                events |= !ls->has_result || before != ls->seq;
            }
            if (!ls->running && !ls->has_result && ls->next < ls->total) {
                int64_t before = ls->next;
                if ((st = try_start(pp, ls)) != IPU_OK)
                    break;
                events |= ls->next != before;
            }
            busy |= ls->running || ls->has_result || ls->next < ls->total;
        }
        if (st != IPU_OK)
            return st;
        /* outstanding data sends */
        int sending = 0;
        for (int l = 0; l < pp->n_links; l++) {
            link_t *lk = &pp->links[l];
            if (lk->src_rank != pp->rank || lk->dst_rank == pp->rank)
                continue;
            for (int c = 0; c < pp->C; c++) {
                if (lk->sreq[c] == NULL)
                    continue;
                int done;
                if ((st = ipu_transport_test(pp->tr, lk->sreq[c], &done)) != IPU_OK) {
                    lk->sreq[c] = NULL;
                    return st;
                }
                if (done) {
                    lk->sreq[c] = NULL;
                    events = 1;
                } else {
                    sending = 1;
                }
            }
        }
        if (!busy && !sending && pp->n_credit_sends == 0)
            return IPU_OK;
        double t = now_s();
        lstage_t *run = NULL; /* a local stage computing */
        for (int i = 0; i < pp->n_ls && !run; i++)
            if (pp->ls[i].running)
                run = &pp->ls[i];
        if (events)
            idle_us = 1;
        if (events || run) {
            last_event = t; /* a running stage is progress */
        } else if (t - last_event > IPU_SUSPECT_S && (st = check_peers(pp)) != IPU_OK) {
            return st;
        } else if (t - last_event > pp->p->transport.timeout_s) {
            /* name what we wait for */
            for (int i = 0; i < pp->n_ls; i++) {
                lstage_t *ls = &pp->ls[i];
                for (int k = 0; k < ls->n_in; k++) {
                    link_t *lk = &pp->links[ls->in_links[k]];
                    if (lk->src_rank != pp->rank && ls->next < ls->total)
                        return ipu_error(IPU_ERR_TIMED_OUT, "rank %d, stage %d: no data from rank %d "
                                         "(host %s, stage %d) for %.0f s; it may have died or hung",
                                         pp->rank, ls->s, lk->src_rank,
                                         ipu_transport_host(pp->tr, lk->src_rank), lk->src,
                                         pp->p->transport.timeout_s);
                }
                for (int k = 0; k < ls->n_out; k++) {
                    link_t *lk = &pp->links[ls->out_links[k]];
                    if (lk->dst_rank != pp->rank)
                        return ipu_error(IPU_ERR_TIMED_OUT, "rank %d, stage %d: rank %d (host %s, "
                                         "stage %d) took nothing for %.0f s; it may have died or hung",
                                         pp->rank, ls->s, lk->dst_rank,
                                         ipu_transport_host(pp->tr, lk->dst_rank), lk->dst,
                                         pp->p->transport.timeout_s);
                }
            }
            return ipu_error(IPU_ERR_TIMED_OUT, "rank %d: the pipeline made no progress for %.0f s",
                             pp->rank, pp->p->transport.timeout_s);
        }
        if (!events) {
            /* back off so the IPU workers get the cores: while a local stage
             * computes, sleep until it finishes (the network is progressed
             * every 2 ms: transfers in flight keep moving, and nothing they
             * bring is needed before the stage ends); otherwise poll the
             * network with a back-off of at most 256 us */
            if (run) {
                ipu_device_wait(run->dev, 2e-3);
            } else {
                if (idle_us > 256)
                    idle_us = 256;
                struct timespec ts = {0, idle_us * 1000};
                nanosleep(&ts, NULL);
                if (idle_us < 256)
                    idle_us *= 2;
            }
        }
    }
}

static void pipe_free(pipe_t *pp)
{
    for (int l = 0; pp->links && l < pp->n_links; l++) {
        link_t *lk = &pp->links[l];
        for (int c = 0; c < MAX_CREDITS; c++) {
            if (pp->tr) {
                ipu_transport_cancel(pp->tr, lk->sreq[c]);
                ipu_transport_cancel(pp->tr, lk->rreq[c]);
            }
            free(lk->sbuf[c]);
            free(lk->rbuf[c]);
        }
        if (pp->tr)
            ipu_transport_cancel(pp->tr, lk->creq);
    }
    for (int i = 0; pp->tr && i < pp->n_credit_sends; i++)
        ipu_transport_cancel(pp->tr, pp->credit_sends[i]);
    free(pp->credit_sends);
    for (int i = 0; pp->ls && i < pp->n_ls; i++) {
        lstage_t *ls = &pp->ls[i];
        ipu_device_close(ls->dev);
        ipu_stage_free(&ls->stage);
        free(ls->in_links);
        free(ls->out_links);
        free(ls->graph_in);
        free(ls->graph_out);
        free(ls->emitted);
    }
    free(pp->ls);
    free(pp->links);
    free(pp->t_start);
    free(pp->t_end);
    free(pp->busy_at_w);
    ipu_lost_close(pp->lost);
    ipu_transport_close(pp->tr);
}

/* Free constants that none of this rank's stages read. */
static void drop_foreign_constants(ipu_graph_t *g, const int *node_stage, const pipe_t *pp)
{
    unsigned char *keep = calloc((size_t)g->n_values + 1, 1);
    if (keep == NULL)
        return;
    for (int i = 0; i < g->n_nodes; i++) {
        int s = node_stage[i];
        if (s < 0 || stage_rank(pp, s) != pp->rank)
            continue;
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] >= 0)
                keep[g->nodes[i].inputs[k]] = 1;
    }
    for (int k = 0; k < g->n_outputs; k++)
        keep[g->outputs[k]] = 1;
    for (int v = 0; v < g->n_values; v++) {
        ipu_value_t *val = &g->values[v];
        if (!keep[v] && (val->producer < 0 || (val->flags & IPU_VALUE_FOLDED)) &&
            (val->data_kind == IPU_CONST_OWNED || val->data_kind == IPU_CONST_DEFERRED)) {
            if (val->data_kind == IPU_CONST_OWNED)
                free(val->data);
            val->data = NULL;
            val->data_kind = IPU_CONST_NONE;
        }
    }
    free(keep);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Liveness callbacks of the agreement steps (exec/agree.h). */
static ipu_status_t agree_poll(void *arg)
{
    pipe_t *pp = arg;
    if (pp->tr)
        ipu_transport_progress(pp->tr);
    return ipu_lost_poll(pp->lost);
}
static int agree_alive(void *arg, int peer)
{
    pipe_t *pp = arg;
    return pp->lost ? ipu_lost_alive(pp->lost, peer) : 0;
}

/* Every rank agrees on st of a step, so that no rank waits on one that
 * failed, died or hangs; *lost: a rank is gone (no collective may follow).
 * The waits are bounded by pings once the transport is up, and by
 * --timeout x `timeouts` (0: none), rank 0's by --timeout x root_timeouts
 * more for the others. */
static ipu_status_t agree(pipe_t *pp, MPI_Comm comm, ipu_status_t st, const char *step,
                          int timeouts, int root_timeouts, void *payload, size_t bytes,
                          int *host_ids, int *lost)
{
    ipu_agree_params_t a = {.step = step, .timeout_s = pp->T * timeouts,
                            .root_extra_s = pp->T * root_timeouts, .poll = agree_poll, .arg = pp};
    if (pp->lost)
        a.alive = agree_alive;
    return ipu_agree(comm, st, &a, payload, bytes, host_ids, lost);
}

ipu_status_t ipu_pipeline_run(ipu_graph_t *g, MPI_Comm comm, const ipu_pipeline_params_t *p,
                              const ipu_partition_params_t *ppar, ipu_partition_t *plan_out,
                              ipu_pipeline_report_t *rep)
{
    pipe_t pp = {.g = g, .p = p, .ins_mb = -1,
                 .T = p->transport.timeout_s > 0 ? p->transport.timeout_s : 30};
    ipu_partition_t plan = {0};
    ipu_status_t st = IPU_OK;
    MPI_Comm_rank(comm, &pp.rank);
    MPI_Comm_size(comm, &pp.world);
    rep->setup_failed = 1; /* until the transfers start */
    pp.R = p->replicas;
    pp.K = p->ipus_per_rank;
    pp.C = p->credits < 1 ? 1 : p->credits > MAX_CREDITS ? MAX_CREDITS : p->credits;
    if (pp.R < 1 || pp.world % pp.R != 0)
        return ipu_error(IPU_ERR_INVALID_ARG, "%d ranks do not divide into %d replicas; run with a "
                         "multiple of %d ranks (-np)", pp.world, pp.R, pp.R);
    pp.P = pp.world / pp.R;
    pp.S = pp.P * pp.K;
    pp.replica = pp.rank / pp.P;
    if (p->micro_batches < pp.R)
        return ipu_error(IPU_ERR_INVALID_ARG, "%d micro-batch%s for %d replicas: give at least one "
                         "per replica (--batches)", p->micro_batches, p->micro_batches == 1 ? "" : "es",
                         pp.R);
    pp.ins = calloc((size_t)g->n_inputs + 1, sizeof(ipu_tensor_t));
    if (pp.ins == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    /* shapes of micro-batch 0, then the plan (identical on every rank) */
    st = p->make_inputs(p->arg, 0, pp.ins);
    for (int k = 0; st == IPU_OK && k < g->n_inputs; k++)
        ipu_value_set_shape(&g->values[g->inputs[k]], pp.ins[k].dtype, pp.ins[k].rank, pp.ins[k].dims);
    if (st == IPU_OK)
        st = ipu_graph_infer(g);
    if (st == IPU_OK) /* as the single-rank session does: the same kernels, the same bits */
        st = ipu_graph_fuse(g, ipu_op_lookup, NULL);
    pp.ins_mb = 0;
    ipu_partition_params_t part = *ppar;
    part.stages = pp.S;
    part.ipus_per_rank = pp.K;
    part.ipu_memory = p->ipu_memory;
    /* measured costs of the GEMM-like nodes, from rank 0 so that every
     * rank computes the same plan */
    double *node_ms = NULL;
    if (st == IPU_OK && p->measure && !part.node_ms && pp.S > 1) {
        if ((node_ms = malloc(((size_t)g->n_nodes + 1) * sizeof(double))) == NULL)
            st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
        if (st == IPU_OK && pp.rank == 0)
            st = ipu_measure_nodes(g, node_ms);
    }
    int lost = 0;
    int *host_ids = calloc((size_t)pp.world, sizeof(int));
    if (host_ids == NULL && st == IPU_OK)
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    {   /* every rank reaches this: agree, with rank 0's measured costs;
         * the others also wait for rank 0's measuring */
        int measured = p->measure && !ppar->node_ms && pp.S > 1;
        size_t bytes = measured && node_ms ? (size_t)g->n_nodes * sizeof(double) : 0;
        st = agree(&pp, comm, st, "the model and the plan's costs", 1, measured ? 2 : 0, node_ms,
                   bytes, host_ids, &lost);
        if (measured)
            part.node_ms = node_ms;
    }
    /* the ranks of this host, from the agreement (no collective: one that
     * a rank dies in would never return) */
    int local_rank = 0, local_size = 0;
    for (int r = 0; host_ids && r < pp.world; r++)
        if (host_ids[r] == host_ids[pp.rank]) {
            local_rank += r < pp.rank;
            local_size++;
        }
    free(host_ids);
    if (lost) {
        free(node_ms);
        rep->setup_failed = 0; /* a rank is gone: no collective after this */
        goto out;
    }
    if (st == IPU_OK)
        st = ipu_partition_make(g, &part, &plan);
    free(node_ms);
    if (st == IPU_OK && plan.n_stages != pp.S)
        st = ipu_error(IPU_ERR_INVALID_ARG, "the model is annotated with %d pipeline stages but %d "
                       "ranks x %d IPU%s per rank / %d replica%s give %d; run with -np %d (or change "
                       "--ipus-per-rank / --replicas)", plan.n_stages, pp.world, pp.K, pp.K > 1 ? "s" : "",
                       pp.R, pp.R > 1 ? "s" : "", pp.S, (plan.n_stages + pp.K - 1) / pp.K * pp.R);
    pp.W = p->warmup > 0 ? p->warmup : 0;
    pp.t_start = calloc((size_t)p->micro_batches + (size_t)pp.W + 1, sizeof(double));
    pp.t_end = calloc((size_t)p->micro_batches + (size_t)pp.W + 1, sizeof(double));
    pp.busy_at_w = calloc((size_t)pp.K, sizeof(double));
    if (st == IPU_OK && (!pp.t_start || !pp.t_end || !pp.busy_at_w))
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    if (st == IPU_OK)
        st = build_links(&pp, plan.node_stage);
    if (st == IPU_OK) {
        drop_foreign_constants(g, plan.node_stage, &pp);
        st = ipu_graph_materialise(g); /* this rank's weights out of the model file */
    }
    if (st == IPU_OK) {
        ipu_binding_t bind;
        /* the ranks of this host share its cores */
        int bound = p->bind && ipu_binding_plan(local_rank, local_size, pp.K, &bind) == IPU_OK;
        st = build_local(&pp, plan.node_stage, bound ? &bind : NULL);
    }
    /* every rank reaches here: fail together before any transfer */
    if ((st = agree(&pp, comm, st, "the stages' set-up", 1, 0, NULL, 0, NULL, &lost)) == IPU_OK) {
        ipu_watchdog_arm(pp.T, pp.rank, "the transport's set-up (its MPI bootstrap)");
        st = ipu_transport_open(comm, &p->transport, &pp.tr);
        ipu_watchdog_disarm();
    }
    for (int l = 0; l < pp.n_links && st == IPU_OK; l++) {
        link_t *lk = &pp.links[l];
        if (lk->dst_rank == pp.rank && lk->src_rank != pp.rank)
            st = post_receives(&pp, lk, pp.ls[lk->dst % pp.K].total);
        if (st == IPU_OK && lk->src_rank == pp.rank && lk->dst_rank != pp.rank)
            st = post_credit_recv(&pp, lk);
    }
    if (st == IPU_OK && pp.world > 1)
        st = ipu_lost_open(pp.tr, pp.T / 4, &pp.lost);
    if (!lost) /* and the start of the run, all together */
        st = agree(&pp, comm, st, "the start of the run", 1, 0, NULL, 0, NULL, &lost);
    if (st != IPU_OK) {
        rep->setup_failed = !lost;
        goto out;
    }
    rep->setup_failed = 0;
    pp.t0 = now_s();
    st = schedule(&pp);
    double t_done = now_s() - pp.t0;
    /* every rank finished its stages (a rank that did waits for the others
     * answering pings, so the loss of one still running is found) */
    if (st == IPU_OK)
        st = agree(&pp, comm, st, "the end of the run", 0, 0, NULL, 0, NULL, &lost);
    if (st != IPU_OK) /* a lost peer: tell the others, or name the rank lost first */
        st = ipu_lost_tell(pp.lost, st);
    if (st != IPU_OK)
        goto out;
    /* the report, gathered on rank 0: the timed window runs from the first
     * start of a timed sequence (after the warm-up) to the last finish */
    double wall = 0, t_first = 1e300, first = 0;
    for (int i = 0; i < pp.n_ls; i++)
        if (pp.ls[i].s == 0)
            t_first = pp.t_start[pp.W];
    ipu_watchdog_arm(pp.T, pp.rank, "gathering the run's report");
    MPI_Reduce(&t_done, &wall, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    MPI_Reduce(&t_first, &first, 1, MPI_DOUBLE, MPI_MIN, 0, comm);
    wall -= first;
    int N = p->micro_batches;
    double *starts = calloc((size_t)N + 1, sizeof(double)), *ends = calloc((size_t)N + 1, sizeof(double));
    double *mine_s = calloc((size_t)N + 1, sizeof(double)), *mine_e = calloc((size_t)N + 1, sizeof(double));
    double busy[2 * 64] = {0}, allbusy[2 * 64] = {0};
    for (int i = 0; i < pp.n_ls; i++)
        if (pp.replica == 0 && pp.ls[i].s < 64) {
            busy[pp.ls[i].s] = ipu_device_busy_s(pp.ls[i].dev) - pp.busy_at_w[i];
            busy[64 + pp.ls[i].s] = (double)(pp.ls[i].total - pp.W);
        }
    for (int64_t q = pp.W; q < pp.ls[0].total; q++) {
        int mb = mb_of(&pp, q);
        if (mine_s && mine_e && mb < N) {
            mine_s[mb] = pp.t_start[q];
            mine_e[mb] = pp.t_end[q];
        }
    }
    if (starts && ends && mine_s && mine_e) {
        MPI_Reduce(mine_s, starts, N, MPI_DOUBLE, MPI_MAX, 0, comm);
        MPI_Reduce(mine_e, ends, N, MPI_DOUBLE, MPI_MAX, 0, comm);
    }
    MPI_Reduce(busy, allbusy, 128, MPI_DOUBLE, MPI_SUM, 0, comm);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double rss = ru.ru_maxrss / 1024.0;
    double *rsses = pp.rank == 0 ? calloc((size_t)pp.world, sizeof(double)) : NULL;
    MPI_Gather(&rss, 1, MPI_DOUBLE, rsses, 1, MPI_DOUBLE, 0, comm);
    ipu_watchdog_disarm();
    if (pp.rank == 0 && starts && ends) {
        ipu_pipeline_report_t r = {.world = pp.world, .replicas = pp.R, .ranks_per_replica = pp.P,
                                   .stages = pp.S, .wall_s = wall};
        int64_t batch = g->n_inputs > 0 && pp.ins[0].rank > 0 ? pp.ins[0].dims[0] : 1;
        r.samples_per_s = wall > 0 ? (double)N * (double)batch / wall : 0;
        for (int m = 0; m < N; m++)
            ends[m] = (ends[m] - starts[m]) * 1e3;
        qsort(ends, (size_t)N, sizeof(double), cmp_double);
        r.latency_min_ms = ends[0];
        r.latency_max_ms = ends[N - 1];
        r.latency_med_ms = N % 2 ? ends[N / 2] : 0.5 * (ends[N / 2 - 1] + ends[N / 2]);
        r.stage_busy = calloc((size_t)pp.S, sizeof(double));
        r.stage_ms = calloc((size_t)pp.S, sizeof(double));
        for (int s = 0; s < pp.S && s < 64 && r.stage_busy && r.stage_ms; s++) {
            r.stage_busy[s] = wall > 0 ? allbusy[s] / wall : 0;
            r.stage_ms[s] = allbusy[64 + s] > 0 ? allbusy[s] * 1e3 / allbusy[64 + s] : 0;
        }
        r.rank_rss_mib = rsses;
        r.setup_failed = 0;
        rsses = NULL;
        for (int i = 0; i < pp.world && r.rank_rss_mib; i++)
            if (r.rank_rss_mib[i] > r.peak_rss_mib_max)
                r.peak_rss_mib_max = r.rank_rss_mib[i];
        *rep = r;
    }
    free(rsses);
    free(starts); free(ends); free(mine_s); free(mine_e);
out:
    pipe_free(&pp);
    free(pp.ins);
    if (st == IPU_OK && plan_out)
        *plan_out = plan;
    else
        ipu_partition_free(&plan);
    return st;
}

void ipu_pipeline_report_free(ipu_pipeline_report_t *r)
{
    if (r == NULL)
        return;
    free(r->stage_busy);
    free(r->stage_ms);
    free(r->rank_rss_mib);
    memset(r, 0, sizeof(*r));
}
