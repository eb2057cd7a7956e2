/* The layout pass over a prepared graph; see dnn_chain.h. */
#include "exec/ops/dnn_chain.h"

#include "common/log.h"

#include <string.h>

enum { MAX_READERS = 64 }; /* a DenseNet block's features feed each later Concat */

/* The record of node n's primitive, or NULL when it runs without one. */
static ipu_dnn_node_t *dnn_node(const ipu_node_t *n)
{
    ipu_dnn_node_t *r = n->state;
    return !n->folded && n->op && (n->op->flags & IPU_OP_DNN) && r && r->p ? r : NULL;
}

/* The record of node n as a reader: with a primitive, or lazy (its
 * primitive made only by adopt()); else NULL. */
static ipu_dnn_node_t *dnn_reader(const ipu_node_t *n)
{
    ipu_dnn_node_t *r = n->state;
    if (!n->folded && n->op && (n->op->flags & IPU_OP_DNN) && r && !r->p && r->lazy && r->adopt)
        return r;
    return dnn_node(n);
}

/* The readers of value v, directly or through Identity nodes: their node
 * indices into readers and the slot read into slots (*n of them, at most
 * MAX_READERS); 0 when a reader is not a node with a primitive (or a lazy
 * one) reading it as its source or residual, or v (or an Identity's output) is a graph output. */
static int chain_readers(const ipu_graph_t *g, int v, int *readers, int *slots, int *n, int depth)
{
    if (depth > 8 || (g->values[v].flags & IPU_VALUE_OUTPUT))
        return 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const ipu_node_t *r = &g->nodes[i];
        for (int k = 0; k < r->n_inputs; k++) {
            if (r->inputs[k] != v)
                continue;
            const ipu_dnn_node_t *d = dnn_reader(r);
            if (r->folded)
                return 0;
            if (strcmp(r->op_type, "Identity") == 0 && r->n_outputs == 1 && r->outputs[0] >= 0) {
                if (!chain_readers(g, r->outputs[0], readers, slots, n, depth + 1))
                    return 0;
            } else if (d && (k == d->src_slot || k == d->res_slot || d->adopt_sources) &&
                       *n < MAX_READERS) {
                slots[*n] = k;
                readers[(*n)++] = i;
            } else {
                return 0;
            }
        }
    }
    return 1;
}

/* Value v, and the outputs of the Identity nodes that read it (as
 * chain_readers walks them), need bytes for their buffers: the layout v is
 * kept in, where larger than its elements. */
static void set_layout_bytes(ipu_graph_t *g, int v, size_t bytes, int depth)
{
    ipu_value_t *val = &g->values[v];
    size_t own = (size_t)ipu_shape_numel(val->rank, val->dims) * ipu_dtype_size(val->dtype);
    if (depth > 8 || bytes <= own)
        return;
    val->layout_bytes = bytes;
    ipu_debug("value '%s': a buffer of %zu bytes for its layout (%zu for its elements)",
              val->name, bytes, own);
    for (int i = 0; i < g->n_nodes; i++) {
        const ipu_node_t *r = &g->nodes[i];
        if (!r->folded && strcmp(r->op_type, "Identity") == 0 && r->n_inputs >= 1 &&
            r->inputs[0] == v && r->n_outputs == 1 && r->outputs[0] >= 0)
            set_layout_bytes(g, r->outputs[0], bytes, depth + 1);
    }
}

/* Whether every one of the n readers is a Concat (a node with
 * adopt_sources). */
static int all_concats(const ipu_graph_t *g, const int *readers, int n)
{
    for (int j = 0; j < n; j++)
        if (!dnn_reader(&g->nodes[readers[j]])->adopt_sources)
            return 0;
    return 1;
}

/* Keep the output of node c in its primitive's layout when every reader can
 * take it so, as it is (readers reading it as their source remade to, where
 * they can) or through one reorder of its own. */
static ipu_status_t chain_output(ipu_graph_t *g, const ipu_node_t *c, const ipu_dnn_node_t *pc)
{
    int readers[MAX_READERS], slots[MAX_READERS], how[MAX_READERS], n = 0, ok = 1;
    ipu_dnn_t *made[MAX_READERS] = {NULL};
    ipu_status_t st = IPU_OK;
    if (c->n_outputs < 1 || c->outputs[0] < 0 ||
        !chain_readers(g, c->outputs[0], readers, slots, &n, 0) || n == 0)
        return IPU_OK;
    /* a value that several Concats read and nothing else (a DenseNet
     * feature, read by every later Concat of its block): converted once,
     * channels-last, or channel-blocked where convolutions ask for that and
     * its channels fill whole blocks, which each Concat copies as runs of
     * channels or of blocks and writes for the pointwise Conv after it to
     * read as it is; one already blocked so is kept as it is, below */
    const int concats = n > 1 && all_concats(g, readers, n),
              as_is = ipu_dnn_layout() == IPU_DNN_LAYOUT_BLOCKED && ipu_dnn_out_channel_blocked(pc->p);
    if (concats && !as_is) {
        int blocked = 0;
        if (ipu_dnn_relayout_for_concats(c, pc->p, &blocked) == IPU_OK) {
            ipu_debug("node '%s' (%s): output kept %s for %d Concats", c->name, c->op_type,
                      blocked ? "channel-blocked" : "channels-last", n);
            return IPU_OK;
        } /* p unchanged: converted into ours, as below */
        ipu_debug("node '%s' (%s): output not kept for its Concats (%s)", c->name, c->op_type,
                  ipu_error_message());
    }
    for (int j = 0; j < n && ok; j++) {
        ipu_node_t *r = &g->nodes[readers[j]];
        ipu_dnn_node_t *pr = dnn_reader(r);
        int as_res = slots[j] == pr->res_slot;
        /* a lazy reader: only as remade to read pc's layout as it is */
        how[j] = pr->p ? ipu_dnn_can_chain(pc->p, pr->p, as_res) : IPU_DNN_CHAIN_REORDER;
        /* a value that a Concat reads along with other readers, not only
         * Concats, is converted once into ours and copied from there, not
         * converted by each */
        if (pr->adopt_sources && n > 1 && !(concats && as_is))
            how[j] = 0;
        /* 0: the producer writes ours, which a remade reader could not change */
        if (how[j] == IPU_DNN_CHAIN_REORDER && !as_res && pr->adopt &&
            pr->adopt(r, pc->p, &made[j]) == IPU_OK) {
            if (ipu_dnn_can_chain(pc->p, made[j], 0) == IPU_DNN_CHAIN_AS_IS) {
                how[j] = IPU_DNN_CHAIN_AS_IS;
            } else {
                ipu_dnn_free(made[j]);
                made[j] = NULL;
            }
        }
        if (!pr->p && how[j] != IPU_DNN_CHAIN_AS_IS)
            how[j] = 0;
        ok = how[j] != 0;
    }
    for (int j = 0; j < n; j++) {
        ipu_node_t *r = &g->nodes[readers[j]];
        ipu_dnn_node_t *pr = dnn_reader(r);
        int as_res = slots[j] == pr->res_slot;
        if (ok && made[j]) {
            ipu_dnn_free(pr->p);
            pr->p = made[j];
        } else {
            ipu_dnn_free(made[j]);
        }
        if (!ok || st != IPU_OK)
            continue;
        if (how[j] == IPU_DNN_CHAIN_AS_IS)
            ipu_dnn_set_chain(pr->p, !as_res, 0, as_res);
        else
            st = ipu_dnn_chain_reorder(r, pr->p, pc->p, as_res);
    }
    if (ok && st == IPU_OK) {
        ipu_dnn_set_chain(pc->p, 0, 1, 0);
        set_layout_bytes(g, c->outputs[0], ipu_dnn_out_bytes(pc->p), 0);
        ipu_debug("node '%s' (%s): output kept in oneDNN's layout for %d reader(s)", c->name,
                  c->op_type, n);
    }
    return st;
}

ipu_status_t ipu_dnn_chain(ipu_graph_t *g)
{
    ipu_status_t st = IPU_OK;
    for (int v = 0; v < g->n_values; v++)
        g->values[v].layout_bytes = 0;
    for (int k = 0; k < g->n_nodes && st == IPU_OK; k++) {
        ipu_node_t *c = &g->nodes[g->order ? g->order[k] : k];
        const ipu_dnn_node_t *pc = dnn_node(c);
        if (pc && pc->adopt_sources)
            st = pc->adopt_sources(g, c);
        if (st == IPU_OK && (pc = dnn_node(c)) != NULL)
            st = chain_output(g, c, pc);
    }
    return st;
}

const ipu_dnn_t *ipu_dnn_chain_source(const ipu_graph_t *g, int v)
{
    for (int depth = 0; depth < 8 && v >= 0 && v < g->n_values; depth++) {
        int i = g->values[v].producer;
        const ipu_node_t *p = i >= 0 && i < g->n_nodes ? &g->nodes[i] : NULL;
        if (p == NULL || p->folded)
            return NULL;
        if (strcmp(p->op_type, "Identity") == 0 && p->n_inputs >= 1) {
            v = p->inputs[0];
            continue;
        }
        const ipu_dnn_node_t *d = dnn_node(p);
        return d && p->n_outputs >= 1 && p->outputs[0] == v && ipu_dnn_chained_dst(d->p) ? d->p
                                                                                          : NULL;
    }
    return NULL;
}
