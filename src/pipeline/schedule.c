/* The micro-batch schedule of a pipelined run (internal.h): one loop per
 * rank that starts each local stage on the next sequence whose inputs have
 * arrived, hands finished results on over the links (fill -> steady ->
 * drain), and names the peer waited on when nothing moves. */
#include "pipeline/internal.h"

#include <string.h>
#include <time.h>

/* Feed the graph inputs of micro-batch mb that stage ls reads. */
static ipu_status_t write_graph_inputs(pipe_t *pp, lstage_t *ls, int mb)
{
    ipu_status_t st;
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
    return IPU_OK;
}

/* Start stage ls on its next sequence if every input link has it. */
static ipu_status_t try_start(pipe_t *pp, lstage_t *ls)
{
    int64_t seq = ls->next;
    for (int i = 0; i < ls->n_in; i++) {
        int yes;
        ipu_status_t st = pipe_arrived(pp, &pp->links[ls->in_links[i]], seq, &yes);
        if (st != IPU_OK || !yes)
            return st;
    }
    ipu_status_t st;
    if ((st = write_graph_inputs(pp, ls, pipe_mb_of(pp, seq))) != IPU_OK)
        return st;
    for (int i = 0; i < ls->n_in; i++) {
        link_t *lk = &pp->links[ls->in_links[i]];
        if ((st = ipu_device_write(ls->dev, lk->value, lk->rbuf[seq % pp->C], lk->bytes)) != IPU_OK ||
            (st = pipe_consumed(pp, lk, ls->total)) != IPU_OK)
            return st;
    }
    int slot = pipe_lat_slot(pp, seq);
    if (ls->s == 0 && slot >= 0)
        pp->t_start[slot] = pipe_now_s() - pp->t0;
    if (ls->s == 0 && seq == pp->W)
        pp->t_first = pipe_now_s() - pp->t0;
    if (seq == pp->W)
        pp->busy_at_w[ls - pp->ls] = ipu_device_busy_s(ls->dev);
    if ((st = ipu_device_start(ls->dev)) != IPU_OK)
        return st;
    ls->running = 1;
    ls->seq = seq;
    ls->next++;
    return IPU_OK;
}

/* Send (or copy, to a stage of this rank) out link i of ls's result, if
 * the link has room; *sent: it went. */
static ipu_status_t emit_link(pipe_t *pp, lstage_t *ls, int i, int *sent)
{
    int64_t seq = ls->seq;
    int c = (int)(seq % pp->C);
    ipu_status_t st;
    link_t *lk = &pp->links[ls->out_links[i]];
    *sent = 0;
    if (lk->dst_rank == pp->rank) { /* local: copy into the consumer's slot */
        if (seq >= lk->consumed + pp->C)
            return IPU_OK;
        if ((st = ipu_device_read(ls->dev, lk->value, lk->rbuf[c], lk->bytes)) != IPU_OK)
            return st;
        lk->ready[c] = 1;
    } else if (lk->shm) { /* a rank of this host: straight into its slot */
        if (seq >= pipe_shm_load(&lk->shm->consumed) + pp->C)
            return IPU_OK;
        if ((st = ipu_device_read(ls->dev, lk->value, lk->sbuf[c], lk->bytes)) != IPU_OK)
            return st;
        pipe_shm_store(&lk->shm->published, seq + 1);
    } else {
        if (seq >= lk->credits + pp->C)
            return IPU_OK;
        if (lk->sreq[c]) { /* the slot's previous send must be done */
            int done;
            if ((st = ipu_transport_test(pp->tr, lk->sreq[c], &done)) != IPU_OK) {
                lk->sreq[c] = NULL;
                return st;
            }
            if (!done)
                return IPU_OK;
            lk->sreq[c] = NULL;
        }
        if ((st = ipu_device_read(ls->dev, lk->value, lk->sbuf[c], lk->bytes)) != IPU_OK ||
            (st = ipu_transport_isend(pp->tr, lk->dst_rank, TAG(0, lk - pp->links, seq),
                                      lk->sbuf[c], lk->bytes, &lk->sreq[c])) != IPU_OK)
            return st;
    }
    *sent = 1;
    return IPU_OK;
}

/* Hand the finished sequence's outputs on; returns with has_result still set
 * when a link has no room yet. */
static ipu_status_t try_emit(pipe_t *pp, lstage_t *ls)
{
    int64_t seq = ls->seq;
    ipu_status_t st;
    for (int i = 0; i < ls->n_out; i++) {
        if (ls->emitted[i])
            continue;
        int sent;
        if ((st = emit_link(pp, ls, i, &sent)) != IPU_OK)
            return st;
        if (sent)
            ls->emitted[i] = 1;
    }
    for (int i = 0; i < ls->n_out; i++)
        if (!ls->emitted[i])
            return IPU_OK;
    for (int i = 0; i < ls->n_graph_out && seq >= pp->W; i++) {
        int k = ls->graph_out[i];
        ipu_tensor_t t = ipu_device_tensor(ls->dev, pp->g->outputs[k]);
        if ((st = pp->p->take_output(pp->p->arg, pipe_mb_of(pp, seq), k, &t)) != IPU_OK)
            return st;
    }
    int slot = pipe_lat_slot(pp, seq);
    if (ls->s == pp->S - 1 && slot >= 0)
        pp->t_end[slot] = pipe_now_s() - pp->t0;
    memset(ls->emitted, 0, (size_t)ls->n_out);
    ls->has_result = 0;
    return IPU_OK;
}

/* Nothing happened for a while: is every rank this one waits on still
 * there? Pings them (fault.h); a rank that stopped answering is lost. */
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
            if (ipu_fault_alive(&pp->fault, peer) < 0)
                return ipu_error(IPU_ERR_TRANSPORT, "lost rank %d on host %s (stage %d): it stopped "
                                 "answering; the job cannot continue", peer,
                                 ipu_transport_host(pp->tr, peer), in ? lk->src : lk->dst);
        }
    }
    return IPU_OK;
}

/* No progress for --timeout: the error names what this rank waits for. */
static ipu_status_t stalled(pipe_t *pp)
{
    for (int i = 0; i < pp->n_ls; i++) {
        lstage_t *ls = &pp->ls[i];
        for (int k = 0; k < ls->n_in; k++) {
            link_t *lk = &pp->links[ls->in_links[k]];
            if (lk->src_rank != pp->rank && ls->next < ls->total)
                return ipu_error(IPU_ERR_TIMED_OUT, "rank %d, stage %d: no data from rank %d "
                                 "(host %s, stage %d) for %g s; it may have died or hung",
                                 pp->rank, ls->s, lk->src_rank,
                                 ipu_transport_host(pp->tr, lk->src_rank), lk->src,
                                 pp->p->transport.timeout_s);
        }
        for (int k = 0; k < ls->n_out; k++) {
            link_t *lk = &pp->links[ls->out_links[k]];
            if (lk->dst_rank != pp->rank)
                return ipu_error(IPU_ERR_TIMED_OUT, "rank %d, stage %d: rank %d (host %s, "
                                 "stage %d) took nothing for %g s; it may have died or hung",
                                 pp->rank, ls->s, lk->dst_rank,
                                 ipu_transport_host(pp->tr, lk->dst_rank), lk->dst,
                                 pp->p->transport.timeout_s);
        }
    }
    return ipu_error(IPU_ERR_TIMED_OUT, "rank %d: the pipeline made no progress for %g s",
                     pp->rank, pp->p->transport.timeout_s);
}

/* One pass over the local stages: collect finished runs, emit results,
 * start the next sequences. *events: something moved; *busy: a stage has
 * work left. */
static ipu_status_t step_stages(pipe_t *pp, int *events, int *busy)
{
    ipu_status_t st = IPU_OK;
    for (int i = 0; i < pp->n_ls && st == IPU_OK; i++) {
        lstage_t *ls = &pp->ls[i];
        if (ls->running) {
            int done;
            if ((st = ipu_device_poll(ls->dev, &done)) != IPU_OK)
                break;
            if (done) {
                ls->running = 0;
                ls->has_result = 1;
                *events = 1;
            }
        }
        if (ls->has_result) {
            int64_t before = ls->seq;
            if ((st = try_emit(pp, ls)) != IPU_OK)
                break;
            *events |= !ls->has_result || before != ls->seq;
        }
        if (!ls->running && !ls->has_result && ls->next < ls->total) {
            int64_t before = ls->next;
            if ((st = try_start(pp, ls)) != IPU_OK)
                break;
            *events |= ls->next != before;
        }
        *busy |= ls->running || ls->has_result || ls->next < ls->total;
    }
    return st;
}

/* Whether the loop must wake often while a stage computes: a local stage
 * has a link to or from another rank through the transport, or there are
 * several local stages (back_off waits on one of them only). Not so for a
 * replica of a 1-stage pipeline, nor for links through shared memory (they
 * need no progress). */
static int wakes_often(const pipe_t *pp)
{
    if (pp->n_ls > 1)
        return 1;
    for (int i = 0; i < pp->n_ls; i++) {
        const lstage_t *ls = &pp->ls[i];
        for (int k = 0; k < ls->n_in + ls->n_out; k++) {
            const link_t *lk = &pp->links[k < ls->n_in ? ls->in_links[k] : ls->out_links[k - ls->n_in]];
            if ((lk->src_rank != pp->rank || lk->dst_rank != pp->rank) && lk->shm == NULL)
                return 1;
        }
    }
    return 0;
}

/* Back off so the IPU workers get the cores: while a local stage (run)
 * computes, sleep until it finishes. With links to other ranks through the
 * transport (or other local stages) the loop wakes every 2 ms meanwhile
 * (transfers in flight keep moving, and nothing they bring is needed before
 * the stage ends); otherwise only every 50 ms (pings answered well
 * within IPU_FAULT_SUSPECT_S), since each wake-up takes the core from the worker.
 * Otherwise poll the network with a back-off of at most 256 us. */
static void back_off(lstage_t *run, int often, long *idle_us)
{
    if (run) {
        ipu_device_wait(run->dev, often ? 2e-3 : 50e-3);
    } else {
        if (*idle_us > 256)
            *idle_us = 256;
        struct timespec ts = {0, *idle_us * 1000};
        nanosleep(&ts, NULL);
        if (*idle_us < 256)
            *idle_us *= 2;
    }
}

ipu_status_t pipe_schedule(pipe_t *pp)
{
    double last_event = pipe_now_s();
    long idle_us = 1;
    const int often = wakes_often(pp);
    for (;;) {
        int events = 0, busy = 0, sending;
        ipu_transport_progress(pp->tr);
        ipu_status_t st = pipe_poll_credits(pp, &events);
        if (st == IPU_OK)
            st = ipu_fault_poll(&pp->fault);
        if (st == IPU_OK)
            st = step_stages(pp, &events, &busy);
        if (st != IPU_OK)
            return st;
        /* outstanding data sends */
        if ((st = pipe_poll_sends(pp, &events, &sending)) != IPU_OK)
            return st;
        if (!busy && !sending && pp->n_credit_sends == 0)
            return IPU_OK;
        double t = pipe_now_s();
        lstage_t *run = NULL; /* a local stage computing */
        for (int i = 0; i < pp->n_ls && !run; i++)
            if (pp->ls[i].running)
                run = &pp->ls[i];
        if (events)
            idle_us = 1;
        if (events || run)
            last_event = t; /* a running stage is progress */
        else if (t - last_event > ipu_fault_suspect_s(pp->p->transport.timeout_s) &&
                 (st = check_peers(pp)) != IPU_OK)
            return st;
        else if (t - last_event > pp->p->transport.timeout_s)
            return stalled(pp);
        if (!events)
            back_off(run, often, &idle_us);
    }
}
