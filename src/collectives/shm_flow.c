/* libgcl's shared-memory op queue: ops taken and given back, numbered and
 * queued in the order the members start them, progressed head first, held,
 * cancelled or abandoned (shm.h). */
#include "collectives/shm_impl.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ op queue */

void shm_op_release(gcl_shm_op_t *o)
{
    gcl_shm_t *s = o->shm;
    o->next = s->free_ops;
    s->free_ops = o;
}

gcl_status_t shm_op_new(gcl_shm_t *s, int kind, const char *what, gcl_shm_op_t **out,
                           gcl_shm_op_t **op)
{
    if (out == NULL)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_shm_%s: NULL op pointer", what);
    *out = NULL;
    if (s == NULL)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_shm_%s: NULL segment", what);
    if (s->broken)
        return shm_broken_error(s, what);
    gcl_shm_op_t *o = s->free_ops;
    if (o != NULL)
        s->free_ops = o->next;
    else if ((o = malloc(sizeof(*o))) == NULL)
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_shm_%s: out of memory", what);
    memset(o, 0, sizeof(*o));
    o->shm = s;
    o->kind = kind;
    *op = o;
    return GCL_OK;
}

/* Number the op's segments, queue it, and try a first step. */
gcl_status_t shm_op_post(gcl_shm_op_t *o, size_t nseg, gcl_shm_op_t **out)
{
    gcl_shm_t *s = o->shm;
    /* nothing to move among several members: still a call, whose word the
     * others compare with theirs (a member called with a count would
     * otherwise pair its op with this one's next), published with a
     * barrier's flag */
    if (nseg == 0 && s->size > 1) {
        o->empty = 1;
        nseg = 1;
    }
    o->bytes = o->count * o->es * (o->kind == K_ALLGATHER ? (size_t)s->size : 1);
    o->nt = o->bytes > 0 && o->bytes >= s->stream_min;
    o->nseg = nseg;
    shm_stage_nt_choose(o);
    o->g0 = s->next_g;
    s->next_g += nseg;
    *out = o;
    if (nseg == 0 && s->head == NULL) { /* nothing to wait for */
        o->done = 1;
        return GCL_OK;
    }
    if (s->tail)
        s->tail->next = o;
    else
        s->head = o;
    s->tail = o;
    o->next = NULL;
    return GCL_OK;
}

const char *shm_kind_name(int kind)
{
    static const char *const name[K_COUNT] = {"allreduce", "reduce", "reduce_scatter", "allgather",
                                              "broadcast", "barrier", "alltoall"};
    return kind >= 0 && kind < K_COUNT ? name[kind] : "?";
}

gcl_status_t gcl_shm_progress(gcl_shm_op_t *op)
{
    if (op == NULL)
        return gcl_set_error(GCL_ERR_INVALID_ARG, "gcl_shm_progress: NULL op");
    gcl_shm_t *s = op->shm;
    while (!op->done) {
        gcl_shm_op_t *h = s->head;
        if (s->broken) {
            op->done = 1;
            op->status = shm_broken_error(s, shm_kind_name(op->kind));
            break;
        }
        if (h->held)
            return GCL_IN_PROGRESS;
        if (!h->started) {
            h->started = 1;
            shm_call_post(h);
            if (h->nt_key >= 0)
                h->t0 = gcl_now();
        }
        if (!h->stepped && (h->nseg == 0 || shm_step(h)))
            h->stepped = 1;
        if (s->call_pend) /* (no flag written by the step yet) */
            shm_call_flush(s);
        /* after the step, whose flag reads bring the others' lines (read
         * earlier, a line would be taken from a member about to write it) */
        if (!h->checked && shm_call_check(h) < 0)
            continue; /* the calls differ: op fails above */
        if (!h->stepped || !h->checked) {
            if ((++s->idle_polls & (LOST_POLLS - 1)) != 0 || !shm_lost_check(s, h))
                return GCL_IN_PROGRESS;
            continue; /* a member is lost: op fails above */
        }
        shm_stage_nt_update(h);
        h->done = 1;
        s->head = h->next;
        if (s->head == NULL)
            s->tail = NULL;
    }
    /* (a done op is no longer in the queue) */
    gcl_status_t st = op->status;
    shm_op_release(op);
    return st;
}

void gcl_shm_hold(gcl_shm_op_t *op)
{
    if (op != NULL && !op->done)
        op->held = 1;
}

void gcl_shm_release(gcl_shm_op_t *op)
{
    if (op != NULL)
        op->held = 0;
}

void gcl_shm_cancel(gcl_shm_op_t *op)
{
    if (op == NULL)
        return;
    gcl_shm_t *s = op->shm;
    if (!op->done) {
        s->broken = 1;
        gcl_shm_op_t **pp = &s->head, *prev = NULL;
        while (*pp && *pp != op) {
            prev = *pp;
            pp = &(*pp)->next;
        }
        if (*pp == op) {
            *pp = op->next;
            if (s->tail == op)
                s->tail = prev;
        }
    }
    shm_op_release(op);
}

void gcl_shm_abandon(gcl_shm_op_t *op)
{
    if (op == NULL)
        return;
    gcl_shm_t *s = op->shm;
    if (!op->done && !s->broken) { /* (broken: by a timeout, or by another's loss) */
        header_t *hd = (header_t *)(void *)s->base;
        int32_t none = 0;
        atomic_compare_exchange_strong(&hd->gave_up, &none, s->rank + 1);
    }
    gcl_shm_cancel(op);
}

int gcl_shm_gave_up(const gcl_shm_t *s)
{
    return s != NULL && s->broken == 3 ? s->lost_rank : -1;
}

