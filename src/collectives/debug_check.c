/* GCL_DEBUG=1: before every collective the members allgather what they were
 * called with (collective, count, dtype, op, root, sequence number) in their
 * own tag scope, and every member returns GCL_ERR_MISMATCH naming the first
 * rank and field that differ from rank 0's, instead of hanging (the check
 * NCCL/PyTorch users ask for: TORCH_DISTRIBUTED_DEBUG=DETAIL does the same). */
#include "collectives/gcl_internal.h"

#include <stdlib.h>

typedef struct desc {
    int32_t coll, dtype, op, root;
    uint64_t count;
    uint32_t seq, bad; /* bad: the member's own argument check failed */
} desc_t;

static const char *dtype_name(int d)
{
    const gcl_dtype_info_t *t = gcl_dtype_info((gcl_dtype_t)d);
    return t ? t->long_name : "?";
}

static const char *op_name(int o)
{
    const char *n = gcl_op_name((gcl_op_t)o);
    return n ? n : "-";
}

gcl_status_t gcl_debug_check(gcl_comm_t *c, const gcl_args_t *a, gcl_status_t local)
{
    if (c->size == 1)
        return local;
    char mine[512];
    snprintf(mine, sizeof(mine), "%s", gcl_last_error());
    int red = a->coll == GCL_COLL_ALLREDUCE || a->coll == GCL_COLL_REDUCE || a->coll == GCL_COLL_REDUCE_SCATTER;
    int rooted = a->coll == GCL_COLL_REDUCE || a->coll == GCL_COLL_BROADCAST;
    int data = a->coll != GCL_COLL_BARRIER;
    desc_t me = {.coll = a->coll, .dtype = data ? (int32_t)a->dtype : -1, .op = red ? (int32_t)a->op : -1,
                 .root = rooted ? a->root : -1, .count = data ? a->count : 0, .seq = c->seq,
                 .bad = local != GCL_OK};
    desc_t *all = malloc((size_t)c->size * sizeof(desc_t));
    if (all == NULL)
        return gcl_set_error(GCL_ERR_NO_MEMORY, "gcl_%s: out of memory (GCL_DEBUG)", gcl_coll_name(a->coll));
    gcl_status_t st = gcl_comm_allgather_internal(c, GCL_SCOPE_DEBUG, &me, all, sizeof(desc_t));
    if (st != GCL_OK) {
        free(all);
        return st;
    }
    const char *what = gcl_coll_name(a->coll);
    const desc_t *z = &all[0];
    for (int i = 1; i < c->size && st == GCL_OK; i++) {
        const desc_t *d = &all[i];
        char head[160];
        snprintf(head, sizeof(head), "GCL_DEBUG: collective #%u on communicator %u (this is rank %d, in gcl_%s): "
                 "rank %d", z->seq, c->id, c->rank, what, i);
        if (d->bad)
            st = gcl_set_error(GCL_ERR_MISMATCH, "%s passed invalid arguments (its own error says which)", head);
        else if (d->coll != z->coll)
            st = gcl_set_error(GCL_ERR_MISMATCH, "%s called gcl_%s, rank 0 gcl_%s", head,
                               gcl_coll_name((gcl_coll_t)d->coll), gcl_coll_name((gcl_coll_t)z->coll));
        else if (d->seq != z->seq)
            st = gcl_set_error(GCL_ERR_MISMATCH, "%s is at collective #%u, rank 0 at #%u", head, d->seq, z->seq);
        else if (d->count != z->count)
            st = gcl_set_error(GCL_ERR_MISMATCH, "%s passed count %llu, rank 0 count %llu", head,
                               (unsigned long long)d->count, (unsigned long long)z->count);
        else if (d->dtype != z->dtype)
            st = gcl_set_error(GCL_ERR_MISMATCH, "%s passed dtype %s, rank 0 %s", head, dtype_name(d->dtype),
                               dtype_name(z->dtype));
        else if (d->op != z->op)
            st = gcl_set_error(GCL_ERR_MISMATCH, "%s passed op %s, rank 0 %s", head, op_name(d->op),
                               op_name(z->op));
        else if (d->root != z->root)
            st = gcl_set_error(GCL_ERR_MISMATCH, "%s passed root %d, rank 0 root %d", head, d->root, z->root);
    }
    if (st == GCL_OK && z->bad)
        st = gcl_set_error(GCL_ERR_MISMATCH, "GCL_DEBUG: collective #%u on communicator %u (this is rank %d, in "
                           "gcl_%s): rank 0 passed invalid arguments (its own error says which)", z->seq, c->id,
                           c->rank, what);
    free(all);
    if (local != GCL_OK)
        st = gcl_set_error(local, "%s", mine); /* this member's own error */
    if (st != GCL_OK)
        c->seq++; /* the collective counts as called, so later ones stay aligned */
    return st;
}
