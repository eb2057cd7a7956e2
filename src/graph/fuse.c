/* Post-op fusion into Conv, MatMul and Gemm; see fuse.h. The operators'
 * parameters are read as their kernels read them: Clip-6 (attributes,
 * default -FLT_MAX / FLT_MAX) and Clip-11 (optional constant float inputs,
 * default -inf / +inf), LeakyRelu-6 (alpha 0.01), Elu-6 (alpha 1),
 * HardSigmoid-6 (alpha 0.2, beta 0.5), HardSwish-14; GELU as
 * Hendrycks & Gimpel, "Gaussian Error Linear Units" (2016), exact form. */
#include "graph/fuse.h"

#include "common/log.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_USES = 2, MAX_DEAD = 5 * IPU_FUSED_MAX };

/* The first MAX_USES reader slots of each value: node indices. */
typedef struct uses {
    int node[MAX_USES];
    int count; /* input slots reading the value (all of them) */
} uses_t;

/* What is being fused into one node. */
typedef struct fusion {
    ipu_graph_t *g;
    const uses_t *u;
    const ipu_node_t *host; /* the Conv, MatMul or Gemm */
    int axis;               /* its output's channel axis */
    int sum_ok;             /* a residual may still be fused */
    int n;
    int64_t kind[IPU_FUSED_MAX];
    float alpha[IPU_FUSED_MAX], beta[IPU_FUSED_MAX];
    int seg; /* the first post-op after a depthwise Conv (0: none fused) */
    int n_extra, extra[IPU_FUSED_MAX];
    int n_dead, dead[MAX_DEAD]; /* nodes that become Identity */
} fusion_t;

static int is_op(const ipu_node_t *n, const char *type)
{
    return !n->folded && n->op && n->domain[0] == '\0' && strcmp(n->op_type, type) == 0;
}

/* Node n's pipeline stage annotation (graph/ir.h), or -1 when none. */
static int64_t stage_of(const ipu_node_t *n)
{
    int64_t s;
    return ipu_node_stage(n, &s) ? s : -1;
}

/* Whether node n reads value v. */
static int reads(const ipu_node_t *n, int v)
{
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] == v)
            return 1;
    return 0;
}

/* The single reader of value v (v no graph output), a node of one output,
 * or NULL. The readers were listed before any fusion: a node an earlier
 * host fused (now an Identity of that host's output) no longer reads v, and
 * v's one reader is then that host, as a residual or operand: none. */
static ipu_node_t *only_use(const fusion_t *f, int v)
{
    if (v < 0 || f->u[v].count != 1 || (f->g->values[v].flags & IPU_VALUE_OUTPUT))
        return NULL;
    ipu_node_t *n = &f->g->nodes[f->u[v].node[0]];
    return n->n_outputs == 1 && n->outputs[0] >= 0 && reads(n, v) ? n : NULL;
}

/* The other input of a two-input node that reads v, or -1. */
static int other_input(const ipu_node_t *n, int v)
{
    if (n->n_inputs != 2 || n->inputs[0] == n->inputs[1])
        return -1;
    return n->inputs[0] == v ? n->inputs[1] : n->inputs[1] == v ? n->inputs[0] : -1;
}

/* 1 when value v is a constant float scalar (one element), into *x. */
static int scalar_const(const ipu_graph_t *g, int v, float *x)
{
    const ipu_value_t *c = v >= 0 ? &g->values[v] : NULL;
    if (c == NULL || c->data == NULL || c->dtype != IPU_DTYPE_FLOAT || c->rank < 0 ||
        ipu_shape_numel(c->rank, c->dims) != 1)
        return 0;
    *x = *(const float *)c->data;
    return 1;
}

/* n is op type(a, c) or type(c, a) with the scalar constant c == want
 * (within tol), a the value it reads from the chain. */
static int op_with_scalar(const ipu_graph_t *g, const ipu_node_t *n, const char *type, int a,
                          float want, float tol)
{
    float c;
    int o = n ? other_input(n, a) : -1;
    if (o < 0 || !is_op(n, type) || !scalar_const(g, o, &c) || fabsf(c - want) > tol)
        return 0;
    return strcmp(type, "Div") != 0 || n->inputs[0] == a; /* a / c, not c / a */
}

/* Clip bounds from attributes or constant inputs; 0 when not constant,
 * or when oneDNN's clip cannot take them: min above max (the output is then
 * max everywhere) or a NaN bound (NaN everywhere); the Clip runs alone. */
static int clip_bounds(const ipu_graph_t *g, const ipu_node_t *c, float *lo, float *hi)
{
    if (c->opset < 11) {
        *lo = ipu_attr_float(c, "min", -FLT_MAX);
        *hi = ipu_attr_float(c, "max", FLT_MAX);
    } else {
        *lo = -INFINITY;
        *hi = INFINITY;
        for (int i = 1; i < c->n_inputs && i < 3; i++)
            if (c->inputs[i] >= 0 && !scalar_const(g, c->inputs[i], i == 1 ? lo : hi))
                return 0;
    }
    return *lo <= *hi; /* false for a NaN too */
}

/* oneDNN's element-wise algorithms a post-op kind runs as (bit 1 << kind;
 * HardSigmoid is an affine map, then a clip). */
static unsigned algs(ipu_fused_kind_t k)
{
    return k == IPU_FUSED_HARD_SIGMOID ? 1u << IPU_FUSED_LINEAR | 1u << IPU_FUSED_CLIP : 1u << k;
}

/* Append a post-op (extra: its operand's value, -1 for none); 0 when the
 * chain is full or already runs one of its algorithms: with oneDNN 2.6 a
 * second affine post-op ran with the first one's parameters (in
 * tests/fusion), so no algorithm is used twice in one kernel's post-ops
 * (those after a depthwise Conv are its kernel's), and an affine map after
 * another is composed into it. */
static int push(fusion_t *f, ipu_fused_kind_t kind, float alpha, float beta, int extra)
{
    unsigned used = 0;
    for (int i = f->seg; i < f->n; i++)
        used |= algs((ipu_fused_kind_t)f->kind[i]);
    if (kind == IPU_FUSED_LINEAR && f->n > f->seg && f->kind[f->n - 1] == IPU_FUSED_LINEAR) {
        /* alpha * (a * x + b) + beta */
        f->beta[f->n - 1] = alpha * f->beta[f->n - 1] + beta;
        f->alpha[f->n - 1] *= alpha;
        return 1;
    }
    if (f->n == IPU_FUSED_MAX || (used & algs(kind)) != 0)
        return 0;
    f->kind[f->n] = kind;
    f->alpha[f->n] = alpha;
    f->beta[f->n++] = beta;
    if (extra >= 0)
        f->extra[f->n_extra++] = extra;
    return 1;
}

/* The count nodes become Identity (NULL entries ignored). */
static void kill(fusion_t *f, ipu_node_t *const *nodes, int count)
{
    for (int i = 0; i < count && f->n_dead < MAX_DEAD; i++)
        if (nodes[i])
            f->dead[f->n_dead++] = (int)(nodes[i] - f->g->nodes);
}

/* An activation node reading y: its kind and parameters, 0 if none. */
static int activation(const fusion_t *f, const ipu_node_t *a, int y, ipu_fused_kind_t *k,
                      float *alpha, float *beta)
{
    *alpha = *beta = 0.0f;
    if (a->inputs[0] != y)
        return 0;
    if (is_op(a, "Clip")) {
        *k = IPU_FUSED_CLIP;
        return clip_bounds(f->g, a, alpha, beta);
    }
    if (a->n_inputs != 1)
        return 0;
    if (is_op(a, "Relu")) {
        *k = IPU_FUSED_RELU;
    } else if (is_op(a, "LeakyRelu")) {
        *k = IPU_FUSED_RELU;
        *alpha = ipu_attr_float(a, "alpha", 0.01f);
    } else if (is_op(a, "Sigmoid")) {
        *k = IPU_FUSED_SIGMOID;
    } else if (is_op(a, "Tanh")) {
        *k = IPU_FUSED_TANH;
    } else if (is_op(a, "Elu")) {
        *k = IPU_FUSED_ELU;
        *alpha = ipu_attr_float(a, "alpha", 1.0f);
    } else if (is_op(a, "HardSigmoid")) {
        *k = IPU_FUSED_HARD_SIGMOID;
        *alpha = ipu_attr_float(a, "alpha", 0.2f);
        *beta = ipu_attr_float(a, "beta", 0.5f);
    } else if (is_op(a, "HardSwish")) {
        *k = IPU_FUSED_HARD_SWISH;
    } else {
        return 0;
    }
    return 1;
}

/* Mul or Add of y and a constant, or Add of y and a residual: the post-op
 * pushed, 0 if n is none of these (or a depthwise Conv was fused). */
static int binary(fusion_t *f, const ipu_node_t *n, int y)
{
    int mul = is_op(n, "Mul"), o = other_input(n, y);
    if ((!mul && !is_op(n, "Add")) || o < 0 || f->seg > 0)
        return 0;
    const ipu_value_t *c = &f->g->values[o], *yv = &f->g->values[y];
    if (c->dtype != IPU_DTYPE_FLOAT || c->rank < 0 || c->rank > yv->rank)
        return 0;
    if (c->data == NULL) { /* a residual: Y's shape, made no later in the pipeline */
        const ipu_node_t *from = c->producer >= 0 ? &f->g->nodes[c->producer] : NULL;
        if (mul || !f->sum_ok || c->rank != yv->rank ||
            memcmp(c->dims, yv->dims, (size_t)yv->rank * sizeof(yv->dims[0])) != 0 ||
            (from && stage_of(from) > stage_of(f->host) && stage_of(f->host) >= 0))
            return 0;
        f->sum_ok = 0;
        return push(f, IPU_FUSED_SUM, 1.0f, 0.0f, o);
    }
    float s;
    if (scalar_const(f->g, o, &s))
        return push(f, IPU_FUSED_LINEAR, mul ? s : 1.0f, mul ? 0.0f : s, -1);
    for (int i = 0; i < c->rank; i++) { /* 1 everywhere but the channel axis */
        int yi = yv->rank - c->rank + i;
        if (c->dims[i] != 1 && (yi != f->axis || c->dims[i] != yv->dims[yi]))
            return 0;
    }
    return push(f, mul ? IPU_FUSED_MUL : IPU_FUSED_ADD, 0.0f, 0.0f, o);
}

/* The value of every element of node n's INTS attribute name, dflt when
 * it is absent, -1 when it has not cnt elements or they differ. */
static int64_t attr_all(const ipu_node_t *n, const char *name, size_t cnt, int64_t dflt)
{
    size_t c = 0;
    const int64_t *v = ipu_attr_ints(n, name, &c);
    if (v == NULL)
        return dflt;
    if (c != cnt)
        return -1;
    for (size_t i = 1; i < c; i++)
        if (v[i] != v[0])
            return -1;
    return v[0];
}

/* Whether a depthwise Conv may fuse into f's host (fuse.h): a 2-D
 * pointwise Conv of whole channel blocks, an output of
 * IPU_FUSED_DW_MIN_BYTES or more, only piecewise-linear activations
 * fused so far. */
static int dw_host(const fusion_t *f)
{
    const ipu_graph_t *g = f->g;
    for (int i = 0; i < f->n; i++)
        if (!ipu_fused_before_dw((ipu_fused_kind_t)f->kind[i]))
            return 0;
    const ipu_node_t *h = f->host;
    const ipu_value_t *x = ipu_node_input(g, h, 0), *w = ipu_node_input(g, h, 1),
                      *y = ipu_node_output(g, h, 0);
    if (!is_op(h, "Conv") || f->seg > 0 || f->n_extra > 0 || !x || !w || !y || x->rank != 4 ||
        w->rank != 4 || y->rank != 4 || w->dims[2] != 1 || w->dims[3] != 1 ||
        ipu_attr_int(h, "group", 1) != 1 || attr_all(h, "strides", 2, 1) != 1 ||
        attr_all(h, "pads", 4, 0) != 0 || attr_all(h, "dilations", 2, 1) != 1 ||
        x->dims[1] <= 0 || x->dims[1] % 16 != 0 || w->dims[0] % 16 != 0)
        return 0;
    int64_t numel = ipu_shape_numel(4, y->dims);
    return numel > 0 && (uint64_t)numel * sizeof(float) >= IPU_FUSED_DW_MIN_BYTES;
}

/* A depthwise Conv a reading y that fuses (fuse.h): IPU_FUSED_DW pushed
 * with its weights and bias as extra inputs; 0 otherwise. */
static int depthwise(fusion_t *f, const ipu_node_t *a, int y)
{
    const ipu_graph_t *g = f->g;
    if (!is_op(a, "Conv") || a->inputs[0] != y || a->n_inputs < 2 || a->n_inputs > 3 ||
        !dw_host(f) || f->n + 1 > IPU_FUSED_MAX || f->n_extra + 2 > IPU_FUSED_MAX)
        return 0;
    const ipu_value_t *yv = &g->values[y], *w = ipu_node_input(g, a, 1), *b = ipu_node_input(g, a, 2),
                      *o = ipu_node_output(g, a, 0);
    const int64_t C = yv->dims[1], s = attr_all(a, "strides", 2, 1);
    if (w == NULL || w->data == NULL || w->dtype != IPU_DTYPE_FLOAT || w->rank != 4 ||
        w->dims[0] != C || w->dims[1] != 1 || w->dims[2] != 3 || w->dims[3] != 3 ||
        (b && (b->data == NULL || b->dtype != IPU_DTYPE_FLOAT)) || ipu_attr_int(a, "group", 1) != C ||
        (s != 1 && s != 2) || attr_all(a, "pads", 4, 0) != 1 || attr_all(a, "dilations", 2, 1) != 1 ||
        strcmp(ipu_attr_string(a, "auto_pad", "NOTSET"), "NOTSET") != 0 || o == NULL ||
        o->rank != 4 || o->dims[2] != (yv->dims[2] + s - 1) / s || o->dims[3] != (yv->dims[3] + s - 1) / s)
        return 0;
    f->kind[f->n] = IPU_FUSED_DW;
    f->alpha[f->n] = (float)s;
    f->beta[f->n++] = 0.0f;
    f->extra[f->n_extra++] = a->inputs[1];
    f->extra[f->n_extra++] = b ? a->inputs[2] : -1;
    f->seg = f->n;
    f->sum_ok = 0;
    return 1;
}

/* y has two readers: Sigmoid(y) and Mul(y, that) (either order); the output
 * of the Mul, or -1. */
static int silu(fusion_t *f, int y)
{
    ipu_node_t *a = &f->g->nodes[f->u[y].node[0]], *b = &f->g->nodes[f->u[y].node[1]];
    ipu_node_t *sig = is_op(a, "Sigmoid") ? a : is_op(b, "Sigmoid") ? b : NULL;
    ipu_node_t *mul = sig == a ? b : a;
    if (sig == NULL || sig->inputs[0] != y || sig->n_outputs != 1 ||
        only_use(f, sig->outputs[0]) != mul || !is_op(mul, "Mul") ||
        other_input(mul, y) != sig->outputs[0] || !push(f, IPU_FUSED_SILU, 1.0f, 0.0f, -1))
        return -1;
    kill(f, (ipu_node_t *[]){sig, mul}, 2);
    return mul->outputs[0];
}

/* y has two readers forming the Erf GELU (fuse.h); the output of its last
 * node, or -1. */
static int gelu(fusion_t *f, int y)
{
    const ipu_graph_t *g = f->g;
    ipu_node_t *r0 = &f->g->nodes[f->u[y].node[0]], *r1 = &f->g->nodes[f->u[y].node[1]];
    ipu_node_t *div = NULL, *erf, *one, *last, *mid, *half = NULL;
    for (int i = 0; i < 2 && div == NULL; i++) {
        ipu_node_t *n = i == 0 ? r0 : r1;
        if (op_with_scalar(g, n, "Div", y, (float)M_SQRT2, 1e-4f) ||
            op_with_scalar(g, n, "Mul", y, (float)M_SQRT1_2, 1e-4f))
            div = n;
    }
    if (div == NULL || (erf = only_use(f, div->outputs[0])) == NULL ||
        !is_op(erf, "Erf") || (one = only_use(f, erf->outputs[0])) == NULL ||
        !op_with_scalar(g, one, "Add", erf->outputs[0], 1.0f, 0.0f) ||
        (mid = only_use(f, one->outputs[0])) == NULL || !is_op(mid, "Mul"))
        return -1;
    ipu_node_t *other = div == r0 ? r1 : r0; /* y's second reader */
    int p = one->outputs[0], o = other_input(mid, p);
    if (o == y) { /* (x * (1 + erf)) * 0.5 */
        last = only_use(f, mid->outputs[0]);
        if (last == NULL || !op_with_scalar(g, last, "Mul", mid->outputs[0], 0.5f, 0.0f))
            return -1;
    } else if (op_with_scalar(g, mid, "Mul", p, 0.5f, 0.0f)) { /* x * ((1 + erf) * 0.5) */
        last = only_use(f, mid->outputs[0]);
        if (last == NULL || !is_op(last, "Mul") || other_input(last, mid->outputs[0]) != y)
            return -1;
    } else { /* (x * 0.5) * (1 + erf) */
        half = other;
        if (o < 0 || half->n_outputs != 1 || half->outputs[0] != o || !op_with_scalar(g, half, "Mul", y, 0.5f, 0.0f) ||
            only_use(f, o) != mid)
            return -1;
        last = mid;
    }
    if (other != (half ? half : o == y ? mid : last) || !push(f, IPU_FUSED_GELU_ERF, 0.0f, 0.0f, -1))
        return -1;
    kill(f, (ipu_node_t *[]){div, erf, one, mid, last == mid ? NULL : last, half}, 6);
    return last->outputs[0];
}

/* One more step of the chain from y; its output, or -1 when none fuses. */
static int step(fusion_t *f, int y)
{
    if (f->g->values[y].flags & IPU_VALUE_OUTPUT)
        return -1;
    ipu_node_t *a = only_use(f, y);
    if (a == NULL) { /* the patterns that read y twice */
        int r = f->u[y].count == 2 ? silu(f, y) : -1;
        return r >= 0 || f->u[y].count != 2 ? r : gelu(f, y);
    }
    if (is_op(a, "Identity")) { /* e.g. a BatchNormalization folded into the host */
        kill(f, &a, 1);
        return a->outputs[0];
    }
    ipu_fused_kind_t k;
    float alpha, beta;
    if (activation(f, a, y, &k, &alpha, &beta)) {
        if (!push(f, k, alpha, beta, -1))
            return -1;
    } else if (!binary(f, a, y) && !depthwise(f, a, y)) {
        return -1;
    }
    kill(f, &a, 1);
    return a->outputs[0];
}

/* The channel axis of host's output, or -1 when host takes no post-ops. */
static int host_axis(const ipu_graph_t *g, const ipu_node_t *n)
{
    if (n->n_outputs != 1 || n->outputs[0] < 0 || ipu_attr_find(n, IPU_FUSED_OPS) != NULL)
        return -1;
    const ipu_value_t *y = &g->values[n->outputs[0]];
    if (y->dtype != IPU_DTYPE_FLOAT || y->rank < 1)
        return -1;
    if (is_op(n, "Conv") && n->n_inputs <= 3)
        return 1;
    if (is_op(n, "Gemm") && n->n_inputs <= 3)
        return 1;
    if (is_op(n, "MatMul") && n->n_inputs == 2 && ipu_node_input(g, n, 0)->rank >= 2 &&
        ipu_node_input(g, n, 1)->rank >= 2)
        return y->rank - 1;
    return -1;
}

/* A Gemm that scales C (Y is filled with it and a sum post-op adds it)
 * cannot take a residual too. */
static int host_sum_ok(const ipu_graph_t *g, const ipu_node_t *n)
{
    if (!is_op(n, "Gemm") || ipu_node_input(g, n, 2) == NULL)
        return 1;
    float alpha = ipu_attr_float(n, "alpha", 1.0f), beta = ipu_attr_float(n, "beta", 1.0f);
    return beta == 0.0f || (alpha == 1.0f && beta == 1.0f);
}

/* Re-run infer of node n after its attributes or op changed. */
static ipu_status_t reinfer(ipu_graph_t *g, ipu_node_t *n)
{
    if (n->op->fini)
        n->op->fini(n);
    n->state = NULL;
    return n->op->infer(g, n);
}

int ipu_fused_before_dw(ipu_fused_kind_t k)
{
    return k == IPU_FUSED_RELU || k == IPU_FUSED_CLIP || k == IPU_FUSED_LINEAR ||
           k == IPU_FUSED_HARD_SIGMOID || k == IPU_FUSED_HARD_SWISH;
}

int ipu_fused_dw_stride(const ipu_node_t *n)
{
    size_t nk = 0, na = 0;
    const int64_t *kind = ipu_attr_ints(n, IPU_FUSED_OPS, &nk);
    const float *alpha = ipu_attr_floats(n, IPU_FUSED_ALPHA, &na);
    for (size_t i = 0; i < nk && i < na; i++)
        if (kind[i] == IPU_FUSED_DW) /* another stride: ipu ops refuse the node */
            return alpha[i] == 1.0f || alpha[i] == 2.0f ? (int)alpha[i] : 0;
    return 0;
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

/* The host takes f's post-ops: attributes, extra inputs, re-infer; the
 * fused nodes pass its output through. */
static ipu_status_t apply(fusion_t *f, ipu_node_t *host, const ipu_op_t *id)
{
    ipu_status_t st;
    int n_in = IPU_FUSED_INPUT0 + f->n_extra;
    int *in = realloc(host->inputs, (size_t)n_in * sizeof(int));
    if (in == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory fusing node '%s'", host->name);
    for (int k = host->n_inputs; k < IPU_FUSED_INPUT0; k++)
        in[k] = -1;
    memcpy(in + IPU_FUSED_INPUT0, f->extra, (size_t)f->n_extra * sizeof(int));
    host->inputs = in;
    host->n_inputs = n_in;
    if ((st = ipu_node_add_attr_ints(host, IPU_FUSED_OPS, (size_t)f->n, f->kind)) != IPU_OK ||
        (st = ipu_node_add_attr_floats(host, IPU_FUSED_ALPHA, (size_t)f->n, f->alpha)) != IPU_OK ||
        (st = ipu_node_add_attr_floats(host, IPU_FUSED_BETA, (size_t)f->n, f->beta)) != IPU_OK ||
        (st = reinfer(f->g, host)) != IPU_OK)
        return st;
    for (int i = 0; i < f->n_dead; i++)
        if ((st = ipu_graph_node_to_identity(f->g, &f->g->nodes[f->dead[i]], id,
                                              host->outputs[0])) != IPU_OK)
            return st;
    return IPU_OK;
}

/* At debug log level: "fused into node 'X' (Conv): Relu, Mul (3 nodes)". */
static void log_fusion(const fusion_t *f)
{
    static const char *const names[] = {"?", "Relu", "Clip", "Sigmoid", "Tanh", "Elu",
                                        "HardSigmoid", "HardSwish", "SiLU", "Gelu", "Linear",
                                        "Mul", "Add", "Sum", "Depthwise"};
    char buf[256];
    size_t off = 0;
    if (ipu_log_level_current < IPU_LOG_DEBUG)
        return;
    buf[0] = '\0';
    for (int i = 0; i < f->n && off < sizeof(buf); i++)
        off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s", i ? ", " : "",
                                names[f->kind[i] < IPU_FUSED_RELU || f->kind[i] > IPU_FUSED_DW
                                          ? 0 : f->kind[i]]);
    ipu_debug("fused into node '%s' (%s): %s (%d nodes)", f->host->name, f->host->op_type, buf,
              f->n_dead);
}

/* BatchNormalization then Relu (through Identity nodes): the Relu becomes
 * an eltwise step of the normalisation (IPU_NORM_RELU_ATTR); 1 in *fused
 * when it does. */
static ipu_status_t fuse_norm_relu(fusion_t *f, ipu_node_t *bn, const ipu_op_t *id, int *fused)
{
    ipu_status_t st;
    *fused = 0;
    if (bn->n_outputs < 1 || bn->outputs[0] < 0 || ipu_attr_find(bn, IPU_NORM_RELU_ATTR))
        return IPU_OK;
    for (int k = 1; k < bn->n_outputs; k++)
        if (bn->outputs[k] >= 0) /* training outputs: not run */
            return IPU_OK;
    int y = bn->outputs[0];
    ipu_node_t *act = only_use(f, y);
    for (int depth = 0; depth < 8 && act && is_op(act, "Identity"); depth++)
        act = only_use(f, act->outputs[0]);
    if (act == NULL || !is_op(act, "Relu"))
        return IPU_OK;
    if ((st = ipu_node_add_attr_int(bn, IPU_NORM_RELU_ATTR, 1)) != IPU_OK ||
        (st = reinfer(f->g, bn)) != IPU_OK ||
        (st = ipu_graph_node_to_identity(f->g, act, id, y)) != IPU_OK)
        return st;
    *fused = 1;
    return IPU_OK;
}

/* Whether n is a Pad that pads nothing: its pads (Pad-2's attribute, or
 * the constant int64 input of Pad-11 and later) all zero, whatever its mode
 * and value (a DenseNet transition's AvgPool exports one). */
static int pads_nothing(const ipu_graph_t *g, const ipu_node_t *n)
{
    if (!is_op(n, "Pad") || n->n_inputs < 1 || n->n_outputs < 1)
        return 0;
    size_t cnt = 0;
    const int64_t *pads = ipu_attr_ints(n, "pads", &cnt);
    const ipu_value_t *p = ipu_node_input(g, n, 1);
    if (p != NULL) {
        if (p->data == NULL || p->dtype != IPU_DTYPE_INT64)
            return 0;
        pads = p->data;
        cnt = (size_t)ipu_shape_numel(p->rank, p->dims);
    }
    if (pads == NULL)
        return 0;
    for (size_t i = 0; i < cnt; i++)
        if (pads[i] != 0)
            return 0;
    return 1;
}

ipu_status_t ipu_graph_fuse(ipu_graph_t *g, ipu_op_lookup_fn lookup, int *count)
{
    int fused = 0;
    ipu_status_t st = IPU_OK;
    uses_t *u = calloc((size_t)g->n_values + 1, sizeof(*u));
    if (u == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++) {
            int v = g->nodes[i].inputs[k];
            if (v < 0)
                continue;
            if (u[v].count < MAX_USES)
                u[v].node[u[v].count] = i;
            u[v].count++;
        }
    for (int i = 0; i < g->n_nodes && st == IPU_OK; i++) { /* first, so a chain passes it */
        ipu_node_t *n = &g->nodes[i];
        const ipu_op_t *id = pads_nothing(g, n) ? lookup(n->domain, "Identity", n->opset) : NULL;
        if (id && (st = ipu_graph_node_to_identity(g, n, id, n->inputs[0])) == IPU_OK)
            ipu_debug("node '%s' (Pad) pads nothing: an Identity", n->name);
    }
    for (int i = 0; i < g->n_nodes && st == IPU_OK; i++) {
        ipu_node_t *host = &g->nodes[i];
        if (is_op(host, "BatchNormalization")) {
            fusion_t f = {.g = g, .u = u, .host = host};
            const ipu_op_t *id = lookup(host->domain, "Identity", host->opset);
            int one = 0;
            if (id && (st = fuse_norm_relu(&f, host, id, &one)) == IPU_OK)
                fused += one;
            continue;
        }
        fusion_t f = {.g = g, .u = u, .host = host, .axis = host_axis(g, host)};
        const ipu_op_t *id = f.axis >= 0 ? lookup(host->domain, "Identity", host->opset) : NULL;
        if (id == NULL)
            continue;
        f.sum_ok = host_sum_ok(g, host);
        for (int y = host->outputs[0]; y >= 0 && f.n < IPU_FUSED_MAX;)
            y = step(&f, y);
        if (f.n == 0)
            continue;
        if ((st = apply(&f, host, id)) == IPU_OK)
            log_fusion(&f);
        fused++;
    }
    free(u);
    if (st == IPU_OK && fused > 0)
        st = ipu_graph_toposort(g);
    if (count)
        *count = fused;
    return st;
}
