/* BatchNormalization folded into the Conv or Gemm before it; see
 * fold_bn.h. */
#include "graph/fold_bn.h"

#include "common/log.h"
#include "graph/fuse.h"
#include "graph/load.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_SRC = 8 };

/* The constants a fold reads, with where their bytes were before they were
 * read (a deferred weight is read into memory for the fold only). */
typedef struct sources {
    int v[MAX_SRC];
    void *data[MAX_SRC];
    int kind[MAX_SRC];
    int n;
} sources_t;

static int is_op(const ipu_node_t *n, const char *type)
{
    return n && !n->folded && n->op && n->domain[0] == '\0' && strcmp(n->op_type, type) == 0;
}

/* Value v (-1: absent) is a float constant of numel elements (any shape
 * when numel < 0). */
static int float_const(const ipu_graph_t *g, int v, int64_t numel)
{
    if (v < 0)
        return 0;
    const ipu_value_t *val = &g->values[v];
    return val->data && val->dtype == IPU_DTYPE_FLOAT && val->producer < 0 &&
           (numel < 0 || ipu_shape_numel(val->rank, val->dims) == numel);
}

/* The floats of constant v, read into memory when deferred (recorded in s
 * to be put back by release()). */
static ipu_status_t read_const(ipu_graph_t *g, sources_t *s, int v, const float **out)
{
    int seen = 0;
    for (int i = 0; i < s->n; i++)
        seen |= s->v[i] == v;
    if (!seen && s->n < MAX_SRC) {
        s->v[s->n] = v;
        s->data[s->n] = g->values[v].data;
        s->kind[s->n++] = g->values[v].data_kind;
    }
    ipu_status_t st = ipu_value_materialise(g, v);
    *out = g->values[v].data;
    return st;
}

/* After the toposort that follows the folds: constants that nothing reads
 * any more are freed; those still read go back to where they were. */
static void release(ipu_graph_t *g, const sources_t *s)
{
    for (int i = 0; i < s->n; i++) {
        ipu_value_t *val = &g->values[s->v[i]];
        int unused = val->n_consumers == 0 && !(val->flags & IPU_VALUE_OUTPUT);
        if (val->data_kind == IPU_CONST_OWNED && (unused || val->data != s->data[i])) {
            if (unused || s->kind[i] == IPU_CONST_DEFERRED)
                free(val->data);
            if (unused) {
                val->data = NULL;
                val->data_kind = IPU_CONST_NONE;
            } else {
                val->data = s->data[i];
                val->data_kind = s->kind[i];
            }
        } else if (unused && val->data_kind != IPU_CONST_OWNED) { /* mapped or deferred */
            val->data = NULL;
            val->data_kind = IPU_CONST_NONE;
        }
    }
}

/* A new constant "<node>.bn_folded.<what>" of shape dims holding data;
 * its index, or -1 (out of memory, or the name is taken). dims may point
 * into g->values, which adding the value can move: copied first. */
static int new_const(ipu_graph_t *g, const char *node, const char *what, int rank,
                     const int64_t *dims, const float *data)
{
    char name[512];
    int64_t d[IPU_MAX_RANK];
    if (rank < 0 || rank > IPU_MAX_RANK)
        return -1;
    memcpy(d, dims, (size_t)rank * sizeof(d[0]));
    snprintf(name, sizeof name, "%s.bn_folded.%s", node, what);
    if (ipu_graph_find_value(g, name) >= 0)
        return -1;
    int v = ipu_graph_value(g, name);
    if (v < 0 || ipu_value_set_const(&g->values[v], IPU_DTYPE_FLOAT, rank, d, data) != IPU_OK)
        return -1;
    g->values[v].flags |= IPU_VALUE_INITIALIZER;
    return v;
}

/* Whether node p (Conv or Gemm) can take bn, which reads its output, over
 * (see fold_bn.h); *m: the output channels. */
static int foldable(const ipu_graph_t *g, const ipu_node_t *p, const ipu_node_t *bn, int64_t *m)
{
    if (bn->n_inputs != 5 || ipu_attr_int(bn, "training_mode", 0) != 0 ||
        (bn->opset < 9 && ipu_attr_int(bn, "spatial", 1) != 1))
        return 0;
    for (int k = 1; k < bn->n_outputs; k++)
        if (bn->outputs[k] >= 0)
            return 0;
    int y = bn->inputs[0];
    if (y < 0 || g->values[y].n_consumers != 1 || (g->values[y].flags & IPU_VALUE_OUTPUT) ||
        g->values[y].rank < 2 || p->n_outputs != 1 || p->outputs[0] != y)
        return 0;
    *m = g->values[y].dims[1];
    for (int k = 1; k < 5; k++)
        if (!float_const(g, bn->inputs[k], *m))
            return 0;
    const ipu_value_t *w = p->n_inputs > 1 && p->inputs[1] >= 0 ? &g->values[p->inputs[1]] : NULL;
    int b = p->n_inputs > 2 ? p->inputs[2] : -1;
    if (w == NULL || !float_const(g, p->inputs[1], -1))
        return 0;
    if (is_op(p, "Conv"))
        return p->n_inputs <= 3 && w->dims[0] == *m && (b < 0 || float_const(g, b, *m));
    /* Gemm: Y = alpha * A' B' + beta * C, column m of B' scaled; beta 1,
     * since the folded bias becomes C */
    return is_op(p, "Gemm") && w->rank == 2 && g->values[y].rank == 2 &&
           ipu_attr_float(p, "beta", 1.0f) == 1.0f &&
           (b < 0 || float_const(g, b, 1) ||
            (float_const(g, b, *m) && g->values[b].dims[g->values[b].rank - 1] == *m));
}

/* p (Conv or Gemm, output channels m) takes bn over: new W and bias. */
static ipu_status_t fold(ipu_graph_t *g, ipu_node_t *p, ipu_node_t *bn, int64_t m,
                         sources_t *src)
{
    const float *w, *b = NULL, *bp[4];
    ipu_status_t st;
    for (int k = 0; k < 4; k++)
        if ((st = read_const(g, src, bn->inputs[1 + k], &bp[k])) != IPU_OK)
            return st;
    if ((st = read_const(g, src, p->inputs[1], &w)) != IPU_OK)
        return st;
    int bi = p->n_inputs > 2 ? p->inputs[2] : -1;
    int64_t bn1 = bi >= 0 ? ipu_shape_numel(g->values[bi].rank, g->values[bi].dims) : 0;
    if (bi >= 0 && (st = read_const(g, src, bi, &b)) != IPU_OK)
        return st;
    const ipu_value_t *wv = &g->values[p->inputs[1]];
    int64_t nw = ipu_shape_numel(wv->rank, wv->dims);
    float *nwd = malloc((size_t)nw * sizeof(float)), *nb = malloc((size_t)m * sizeof(float));
    double *f = malloc((size_t)m * sizeof(double));
    if (nwd == NULL || nb == NULL || f == NULL) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory folding node '%s'", bn->name);
        goto out;
    }
    double eps = ipu_attr_float(bn, "epsilon", 1e-5f);
    for (int64_t c = 0; c < m; c++) {
        f[c] = bp[0][c] / sqrt((double)bp[3][c] + eps);
        double b0 = b == NULL ? 0.0 : b[bn1 == 1 ? 0 : c];
        nb[c] = (float)((b0 - bp[2][c]) * f[c] + bp[1][c]);
    }
    int gemm_cols = strcmp(p->op_type, "Gemm") == 0 && !ipu_attr_int(p, "transB", 0);
    for (int64_t i = 0; i < nw; i++) /* Conv / Gemm transB: rows of W; Gemm: columns */
        nwd[i] = (float)(w[i] * f[gemm_cols ? i % m : i / (nw / m)]);
    int vw = new_const(g, p->name, "W", wv->rank, wv->dims, nwd);
    int vb = vw < 0 ? -1 : new_const(g, p->name, "B", 1, &m, nb);
    if (vb < 0) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory folding node '%s' (or its folded "
                       "constants' names are taken)", bn->name);
        goto out;
    }
    if (p->n_inputs < 3) {
        int *in = realloc(p->inputs, 3 * sizeof(int));
        if (in == NULL) {
            st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory folding node '%s'", bn->name);
            goto out;
        }
        p->inputs = in;
        p->n_inputs = 3;
    }
    p->inputs[1] = vw;
    p->inputs[2] = vb;
out:
    free(nwd);
    free(nb);
    free(f);
    return st;
}

ipu_status_t ipu_graph_fold_bn(ipu_graph_t *g, ipu_op_lookup_fn lookup, int *count)
{
    ipu_status_t st = IPU_OK;
    sources_t src = {.n = 0};
    int folded = 0;
    for (int i = 0; i < g->n_nodes && st == IPU_OK; i++) {
        ipu_node_t *bn = &g->nodes[i];
        int64_t m;
        if (!is_op(bn, "BatchNormalization") || bn->inputs[0] < 0 ||
            g->values[bn->inputs[0]].producer < 0)
            continue;
        ipu_node_t *p = &g->nodes[g->values[bn->inputs[0]].producer];
        const ipu_op_t *id = lookup("", "Identity", bn->opset);
        if (id == NULL || !foldable(g, p, bn, &m))
            continue;
        src.n = 0;
        if ((st = fold(g, p, bn, m, &src)) != IPU_OK)
            break;
        int y = p->outputs[0];
        /* the producer made anew for its new inputs, then BN passes y on */
        if (p->op->fini)
            p->op->fini(p);
        p->state = NULL;
        if ((st = p->op->infer(g, p)) != IPU_OK ||
            (st = ipu_graph_node_to_identity(g, bn, id, y)) != IPU_OK)
            break;
        ipu_debug("folded BatchNormalization '%s' into %s '%s'", bn->name, p->op_type, p->name);
        folded++;
        if ((st = ipu_graph_toposort(g)) == IPU_OK)
            release(g, &src);
    }
    if (count)
        *count = folded;
    return st;
}
