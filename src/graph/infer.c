/* Op binding, static shape/dtype inference and constant folding.
 *
 * Inference walks the topological order once; each op's infer() sets its
 * outputs' dtype and shape. A node whose inputs are all constant is run at
 * once (constant folding), which resolves the Shape -> Gather -> Unsqueeze ->
 * Concat -> Reshape chains that PyTorch exports, so every value ends with a
 * static shape. */
#include "graph/load.h"
#include "graph/op.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Folded outputs up to this size are computed here, on the host; a bigger
 * one (ConstantOfShape of a huge shape) is left to run with its stage, where
 * the IPU's memory bounds it, rather than allocated and zeroed here. */
#define FOLD_MAX_BYTES ((uint64_t)1 << 30)
/* No tensor may be larger (its element count and byte size fit int64_t and
 * size_t with room to spare, whatever the shape arithmetic does with them). */
#define TENSOR_MAX_BYTES ((uint64_t)1 << 52)

ipu_status_t ipu_graph_bind_ops(ipu_graph_t *g, ipu_op_lookup_fn lookup)
{
    char list[900];
    size_t off = 0;
    int missing = 0;
    list[0] = '\0';
    for (int i = 0; i < g->n_nodes; i++) {
        ipu_node_t *n = &g->nodes[i];
        n->op = lookup(n->domain, n->op_type, n->opset);
        if (n->op != NULL)
            continue;
        if (missing++ < 12 && off < sizeof(list))
            off += (size_t)snprintf(list + off, sizeof(list) - off, "%s'%s' (%s%s%s-%d)",
                                    missing > 1 ? ", " : "", n->name, n->domain,
                                    n->domain[0] ? "." : "", n->op_type, n->opset);
    }
    if (missing == 0)
        return IPU_OK;
    if (missing > 12 && off < sizeof(list))
        snprintf(list + off, sizeof(list) - off, " and %d more", missing - 12);
    return ipu_error(IPU_ERR_UNSUPPORTED,
                     "%d unsupported node%s (op-opset): %s; see docs/ops.md for the supported operators",
                     missing, missing > 1 ? "s" : "", list);
}

/* v's size in bytes, or UINT64_MAX when it is over TENSOR_MAX_BYTES. */
static uint64_t value_bytes(const ipu_value_t *v)
{
    uint64_t b = ipu_dtype_size(v->dtype);
    for (int d = 0; d < v->rank; d++)
        if (v->dims[d] < 0 || __builtin_mul_overflow(b, (uint64_t)v->dims[d], &b) || b > TENSOR_MAX_BYTES)
            return UINT64_MAX;
    return b;
}

/* An error when v is too big for any tensor; what: "graph input", "output". */
static ipu_status_t check_size(const ipu_value_t *v, const char *what)
{
    char shape[256];
    if (value_bytes(v) <= TENSOR_MAX_BYTES)
        return IPU_OK;
    ipu_tensor_t t = {.dtype = v->dtype, .rank = v->rank};
    memcpy(t.dims, v->dims, sizeof(int64_t) * (size_t)v->rank);
    return ipu_error(IPU_ERR_SHAPE, "%s '%s' of shape %s is over %llu TiB, more than any memory; "
                     "check the shape", what, v->name, ipu_tensor_describe(&t, shape, sizeof(shape)),
                     (unsigned long long)(TENSOR_MAX_BYTES >> 40));
}

static int outputs_foldable(const ipu_graph_t *g, const ipu_node_t *n)
{
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0 && value_bytes(&g->values[n->outputs[k]]) > FOLD_MAX_BYTES)
            return 0;
    return 1;
}

static int all_inputs_const(const ipu_graph_t *g, const ipu_node_t *n)
{
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] >= 0 && g->values[n->inputs[k]].data == NULL)
            return 0;
    return 1;
}

static int all_outputs_const(const ipu_graph_t *g, const ipu_node_t *n)
{
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0 && g->values[n->outputs[k]].data == NULL)
            return 0;
    return 1;
}

/* Run node n on constant inputs; its outputs become owned constants. */
static ipu_status_t fold_node(ipu_graph_t *g, ipu_node_t *n)
{
    ipu_tensor_t in[n->n_inputs + 1], out[n->n_outputs + 1];
    ipu_kernel_ctx_t ctx = {.threads = 1};
    ipu_status_t st = IPU_OK;
    /* weights still in the model file: copied for the fold, and back to
     * deferred after it (a pipeline rank then holds only the folded result,
     * and the weight itself only if one of its own stages reads it) */
    void *deferred[n->n_inputs + 1];
    memset(deferred, 0, sizeof(deferred));
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k];
        deferred[k] = v >= 0 && g->values[v].data_kind == IPU_CONST_DEFERRED ? g->values[v].data : NULL;
        if (deferred[k] && (st = ipu_value_materialise(g, v)) != IPU_OK)
            goto undefer;
    }
    for (int k = 0; k < n->n_inputs; k++)
        in[k] = ipu_value_tensor(g, n->inputs[k]);
    for (int k = 0; k < n->n_outputs; k++) {
        out[k] = ipu_value_tensor(g, n->outputs[k]);
        out[k].data = NULL;
        if (n->outputs[k] >= 0 && (st = ipu_tensor_alloc(&out[k])) != IPU_OK)
            goto fail;
    }
    if (n->op->scratch) {
        ctx.scratch_bytes = n->op->scratch(g, n);
        if (ctx.scratch_bytes) {
            ctx.scratch = aligned_alloc(64, (ctx.scratch_bytes + 63) / 64 * 64);
            if (ctx.scratch == NULL) {
                st = ipu_op_error(IPU_ERR_NO_MEMORY, n, "no memory to fold constants");
                goto fail;
            }
        }
    }
    st = n->op->run(n, in, out, &ctx);
    free(ctx.scratch);
    if (st != IPU_OK)
        goto fail;
    for (int k = 0; k < n->n_outputs; k++) {
        if (n->outputs[k] < 0)
            continue;
        ipu_value_t *v = &g->values[n->outputs[k]];
        v->data = out[k].data;
        v->data_kind = IPU_CONST_OWNED;
        v->flags |= IPU_VALUE_FOLDED;
    }
    n->folded = 1;
    goto undefer;
fail:
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0)
            free(out[k].data);
undefer:
    for (int k = 0; k < n->n_inputs; k++) {
        ipu_value_t *val = deferred[k] ? &g->values[n->inputs[k]] : NULL;
        if (val && val->data_kind == IPU_CONST_OWNED && val->data != deferred[k]) {
            free(val->data);
            val->data = deferred[k];
            val->data_kind = IPU_CONST_DEFERRED;
        }
    }
    return st;
}

/* Node n's infer() refused a dtype (IPU_ERR_UNSUPPORTED naming it): a model
 * exported in that dtype (float16, say) has it at most nodes, so say how
 * many read values of that dtype known now (the model's inputs, weights and
 * the values inferred so far) rather than the first one only, and what to do. */
static ipu_status_t unsupported_dtype(const ipu_graph_t *g, const ipu_node_t *n, ipu_status_t st)
{
    int dt = -1;
    for (int k = 0; k < n->n_inputs && dt < 0; k++) {
        const ipu_value_t *v = ipu_node_input(g, n, k);
        if (v && v->dtype != IPU_DTYPE_FLOAT && strstr(ipu_error_message(), ipu_dtype_name(v->dtype)))
            dt = (int)v->dtype;
    }
    if (st != IPU_ERR_UNSUPPORTED || dt < 0)
        return st;
    int count = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const ipu_node_t *m = &g->nodes[i];
        int reads = 0;
        for (int k = 0; k < m->n_inputs && !reads; k++) {
            const ipu_value_t *v = ipu_node_input(g, m, k);
            reads = v && v->rank >= 0 && (int)v->dtype == dt;
        }
        count += reads;
    }
    return ipu_error(st, "%s; %d node%s read%s %s tensors (at least: those of the model's inputs and "
                     "weights); ipu-exec computes most ops in float32 only: export or convert the "
                     "model to float32", ipu_error_message(), count, count == 1 ? "" : "s",
                     count == 1 ? "s" : "", ipu_dtype_name((ipu_dtype_t)dt));
}

ipu_status_t ipu_graph_infer(ipu_graph_t *g)
{
    if (g->order == NULL)
        return ipu_error(IPU_ERR_INTERNAL, "ipu_graph_infer before ipu_graph_toposort");
    for (int k = 0; k < g->n_inputs; k++) {
        const ipu_value_t *v = &g->values[g->inputs[k]];
        if (v->rank < 0 || v->dtype == IPU_DTYPE_UNDEFINED)
            return ipu_error(IPU_ERR_INPUT, "graph input '%s' has no shape or dtype; "
                             "give the input a concrete tensor", v->name);
        for (int d = 0; d < v->rank; d++)
            if (v->dims[d] < 0)
                return ipu_error(IPU_ERR_INPUT, "graph input '%s' dimension %d is symbolic (%s); "
                                 "give a concrete input tensor", v->name, d,
                                 v->dim_param[d] ? v->dim_param[d] : "unknown");
        if (check_size(v, "graph input") != IPU_OK)
            return IPU_ERR_INPUT;
    }
    /* forget what an earlier inference folded (the input shapes may differ) */
    for (int v = 0; v < g->n_values; v++) {
        ipu_value_t *val = &g->values[v];
        if (!(val->flags & IPU_VALUE_FOLDED))
            continue;
        if (val->data_kind == IPU_CONST_OWNED)
            free(val->data);
        val->data = NULL;
        val->data_kind = IPU_CONST_NONE;
        val->flags &= ~(unsigned)IPU_VALUE_FOLDED;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        ipu_node_t *n = &g->nodes[g->order[i]];
        if (n->op == NULL)
            return ipu_error(IPU_ERR_INTERNAL, "node '%s' is not bound to an op", n->name);
        for (int k = 0; k < n->n_inputs; k++) {
            const ipu_value_t *v = ipu_node_input(g, n, k);
            if (v && (v->rank < 0 || v->dtype == IPU_DTYPE_UNDEFINED))
                return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "input '%s' has no known shape",
                                    v->name);
        }
        /* a node bound again (new input shapes) starts from fresh state */
        if (n->op->fini && n->state)
            n->op->fini(n);
        n->state = NULL;
        n->folded = 0;
        ipu_status_t st = n->op->infer(g, n);
        if (st != IPU_OK) { /* name the model: the op does not know it */
            st = unsupported_dtype(g, n, st);
            return g->src_path ? ipu_error_prefix(st, g->src_path) : st;
        }
        for (int k = 0; k < n->n_outputs; k++) {
            const ipu_value_t *v = ipu_node_output(g, n, k);
            /* infer() sets every output the op has: one left is past them
             * (MatMul given two outputs) or an optional one not computed */
            if (v && (v->rank < 0 || v->dtype == IPU_DTYPE_UNDEFINED)) {
                ipu_status_t e = ipu_op_error(IPU_ERR_INVALID_MODEL, n, "output #%d '%s' is not produced: "
                                              "%s-%d has fewer outputs, or ipu-exec does not compute that "
                                              "optional output; remove it from the node",
                                              k, v->name, n->op_type, n->opset);
                return g->src_path ? ipu_error_prefix(e, g->src_path) : e;
            }
            if (v && check_size(v, "output") != IPU_OK) {
                ipu_status_t e = ipu_op_error(IPU_ERR_SHAPE, n, "%s", ipu_error_message());
                return g->src_path ? ipu_error_prefix(e, g->src_path) : e;
            }
        }
        if (all_outputs_const(g, n)) { /* infer() computed them (Shape, Size) */
            for (int k = 0; k < n->n_outputs; k++)
                if (n->outputs[k] >= 0)
                    g->values[n->outputs[k]].flags |= IPU_VALUE_FOLDED;
            n->folded = 1;
        }
        else if (all_inputs_const(g, n) && outputs_foldable(g, n) && (st = fold_node(g, n)) != IPU_OK)
            return st;
    }
    return IPU_OK;
}
