/* Conv + activation fusion; see fuse.h. The Clip bounds follow Clip-6
 * (attributes, default -FLT_MAX / FLT_MAX) and Clip-11 (optional constant
 * float inputs, default -inf / +inf) as the Clip kernel reads them. */
#include "graph/fuse.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Up to two consumer slots of each value: node indices, -1 for none. */
typedef struct uses {
    int node[2];
    int count; /* input slots reading the value (all of them) */
} uses_t;

static int is_op(const ipu_node_t *n, const char *type)
{
    return !n->folded && n->op && n->domain[0] == '\0' && strcmp(n->op_type, type) == 0;
}

/* the single use of value v, by a node of the given type, or NULL */
static ipu_node_t *only_use(ipu_graph_t *g, const uses_t *u, int v)
{
    if (v < 0 || u[v].count != 1 || (g->values[v].flags & IPU_VALUE_OUTPUT))
        return NULL;
    return &g->nodes[u[v].node[0]];
}

/* v, or the output of the Identity nodes that are its only use, one
 * after the other */
static int through_identity(ipu_graph_t *g, const uses_t *u, int v)
{
    ipu_node_t *id;
    for (int depth = 0; depth < 8 && (id = only_use(g, u, v)) != NULL && is_op(id, "Identity") &&
                        id->n_outputs == 1 && id->outputs[0] >= 0;
         depth++)
        v = id->outputs[0];
    return v;
}

/* Clip bounds from attributes or constant inputs; 0 when not constant. */
static int clip_bounds(const ipu_graph_t *g, const ipu_node_t *c, float *lo, float *hi)
{
    if (c->opset < 11) {
        *lo = ipu_attr_float(c, "min", -FLT_MAX);
        *hi = ipu_attr_float(c, "max", FLT_MAX);
        return 1;
    }
    *lo = -INFINITY;
    *hi = INFINITY;
    for (int i = 1; i < c->n_inputs && i < 3; i++) {
        const ipu_value_t *b = ipu_node_input(g, c, i);
        if (b == NULL)
            continue;
        if (b->data == NULL || b->dtype != IPU_DTYPE_FLOAT || ipu_shape_numel(b->rank, b->dims) != 1)
            return 0;
        *(i == 1 ? lo : hi) = *(const float *)b->data;
    }
    return 1;
}

/* The Add reading y (Conv's output) as its only use, with another operand
 * of y's shape (the residual, into *res), or NULL. */
static ipu_node_t *residual_add(ipu_graph_t *g, const uses_t *u, int y, int *res)
{
    ipu_node_t *add = only_use(g, u, y);
    if (add == NULL || !is_op(add, "Add") || add->n_inputs != 2 || add->n_outputs != 1 ||
        add->outputs[0] < 0)
        return NULL;
    int r = add->inputs[0] == y ? add->inputs[1] : add->inputs[0];
    const ipu_value_t *a = &g->values[y], *b = r >= 0 ? &g->values[r] : NULL;
    if (b == NULL || r == y || b->dtype != IPU_DTYPE_FLOAT || b->rank != a->rank ||
        memcmp(b->dims, a->dims, (size_t)a->rank * sizeof(a->dims[0])) != 0)
        return NULL;
    *res = r;
    return add;
}

/* conv takes r as its input 3 (the fused residual); inputs 2 (B) may be
 * absent (-1). */
static ipu_status_t add_residual(ipu_node_t *conv, int r)
{
    int *in = realloc(conv->inputs, 4 * sizeof(int));
    if (in == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory fusing node '%s'", conv->name);
    for (int k = conv->n_inputs; k < 3; k++)
        in[k] = -1;
    in[3] = r;
    conv->inputs = in;
    conv->n_inputs = 4;
    return ipu_node_add_attr_int(conv, IPU_CONV_SUM_ATTR, 1);
}

/* Re-run infer of node n after its attributes or op changed. */
static ipu_status_t reinfer(ipu_graph_t *g, ipu_node_t *n)
{
    if (n->op->fini)
        n->op->fini(n);
    n->state = NULL;
    return n->op->infer(g, n);
}

ipu_status_t ipu_graph_node_to_identity(ipu_graph_t *g, ipu_node_t *n, const ipu_op_t *id, int src)
{
    char *t = strdup("Identity");
    if (t == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory fusing node '%s'", n->name);
    if (n->op->fini)
        n->op->fini(n);
    n->state = NULL;
    free(n->op_type);
    n->op_type = t;
    n->op = id;
    n->inputs[0] = src;
    n->n_inputs = 1;
    return n->op->infer(g, n);
}

/* BatchNormalization then Relu: the Relu becomes an eltwise step of the
 * normalisation; 1 when fused. */
static ipu_status_t fuse_norm_relu(ipu_graph_t *g, const uses_t *u, ipu_node_t *bn,
                                   const ipu_op_t *id, int *fused)
{
    ipu_status_t st;
    *fused = 0;
    if (bn->n_outputs < 1 || bn->outputs[0] < 0 || ipu_attr_find(bn, IPU_NORM_RELU_ATTR))
        return IPU_OK;
    for (int k = 1; k < bn->n_outputs; k++)
        if (bn->outputs[k] >= 0) /* training outputs: not run */
            return IPU_OK;
    int y = bn->outputs[0];
    ipu_node_t *act = only_use(g, u, through_identity(g, u, y));
    if (act == NULL || !is_op(act, "Relu") || act->n_outputs != 1)
        return IPU_OK;
    if ((st = ipu_node_add_attr_int(bn, IPU_NORM_RELU_ATTR, 1)) != IPU_OK ||
        (st = reinfer(g, bn)) != IPU_OK || (st = ipu_graph_node_to_identity(g, act, id, y)) != IPU_OK)
        return st;
    *fused = 1;
    return IPU_OK;
}

ipu_status_t ipu_graph_fuse(ipu_graph_t *g, ipu_op_lookup_fn lookup, int *count)
{
    int fused = 0;
    ipu_status_t st = IPU_OK;
    uses_t *u = calloc((size_t)g->n_values + 1, sizeof(*u));
    if (u == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    for (int v = 0; v < g->n_values; v++)
        u[v].node[0] = u[v].node[1] = -1;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++) {
            int v = g->nodes[i].inputs[k];
            if (v < 0)
                continue;
            if (u[v].count < 2)
                u[v].node[u[v].count] = i;
            u[v].count++;
        }
    for (int i = 0; i < g->n_nodes && st == IPU_OK; i++) {
        ipu_node_t *conv = &g->nodes[i];
        if (is_op(conv, "BatchNormalization")) {
            const ipu_op_t *id = lookup(conv->domain, "Identity", conv->opset);
            int one = 0;
            if (id && (st = fuse_norm_relu(g, u, conv, id, &one)) == IPU_OK)
                fused += one;
            continue;
        }
        if (!is_op(conv, "Conv") || conv->n_outputs != 1 || conv->n_inputs > 3 ||
            ipu_attr_find(conv, IPU_CONV_ACT_ATTR) != NULL ||
            ipu_attr_find(conv, IPU_CONV_SUM_ATTR) != NULL)
            continue;
        const int y0 = conv->outputs[0];
        if (y0 < 0 || (g->values[y0].flags & IPU_VALUE_OUTPUT) ||
            g->values[y0].dtype != IPU_DTYPE_FLOAT)
            continue;
        const ipu_op_t *id = lookup(conv->domain, "Identity", conv->opset);
        if (id == NULL)
            continue;
        /* Add(y, residual) first: the activation then reads its output y */
        int y = through_identity(g, u, y0), res = -1;
        ipu_node_t *add = residual_add(g, u, y, &res);
        if (add) {
            if ((st = add_residual(conv, res)) != IPU_OK)
                break;
            y = through_identity(g, u, add->outputs[0]);
        }
        ipu_node_t *act = NULL, *sig = NULL;
        const char *kind = NULL;
        float lo = -INFINITY, hi = INFINITY;
        if ((act = only_use(g, u, y)) != NULL) {
            if (act->n_outputs != 1 || act->inputs[0] != y)
                kind = NULL;
            else if (is_op(act, "Relu"))
                kind = "Relu";
            else if (is_op(act, "Sigmoid"))
                kind = "Sigmoid";
            else if (is_op(act, "Clip") && clip_bounds(g, act, &lo, &hi))
                kind = "Clip";
        } else if (u[y].count == 2) {
            /* SiLU: Sigmoid(y) -> s, Mul(y, s) or Mul(s, y) */
            ipu_node_t *a = &g->nodes[u[y].node[0]], *b = &g->nodes[u[y].node[1]];
            sig = is_op(a, "Sigmoid") ? a : is_op(b, "Sigmoid") ? b : NULL;
            act = sig == a ? b : a;
            if (sig && sig->n_outputs == 1 && sig->inputs[0] == y && is_op(act, "Mul") &&
                act->n_inputs == 2 && act->n_outputs == 1 &&
                only_use(g, u, sig->outputs[0]) == act &&
                ((act->inputs[0] == y && act->inputs[1] == sig->outputs[0]) ||
                 (act->inputs[1] == y && act->inputs[0] == sig->outputs[0])))
                kind = "SiLU";
        }
        if (kind == NULL && add == NULL)
            continue;
        if (kind && ((st = ipu_node_add_attr_string(conv, IPU_CONV_ACT_ATTR, kind)) != IPU_OK ||
                     (st = ipu_node_add_attr_float(conv, IPU_CONV_ACT_MIN, lo)) != IPU_OK ||
                     (st = ipu_node_add_attr_float(conv, IPU_CONV_ACT_MAX, hi)) != IPU_OK))
            break;
        if ((st = reinfer(g, conv)) != IPU_OK)
            break;
        /* the Add and activation nodes pass y0 through; the planner aliases them */
        if ((add && (st = ipu_graph_node_to_identity(g, add, id, y0)) != IPU_OK) ||
            (kind && (st = ipu_graph_node_to_identity(g, act, id, y0)) != IPU_OK) ||
            (kind && sig && (st = ipu_graph_node_to_identity(g, sig, id, y0)) != IPU_OK))
            break;
        fused++;
    }
    free(u);
    if (st == IPU_OK && fused > 0)
        st = ipu_graph_toposort(g);
    if (count)
        *count = fused;
    return st;
}
