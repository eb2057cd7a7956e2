#include "partition/cost.h"

#include "exec/plan.h"
#include "exec/stage.h"
#include "graph/fuse.h"

#include <string.h>

void ipu_cost_params_init(ipu_cost_params_t *p)
{
    p->gflops = 40;
    p->other_gflops = 4;
    p->mem_gbps = 10;
    p->link_gbps = 5;
    p->link_us = 5;
}

static double numel(const ipu_value_t *v)
{
    return v ? (double)ipu_shape_numel(v->rank, v->dims) : 0;
}

static double bytes(const ipu_value_t *v)
{
    return v ? numel(v) * (double)ipu_dtype_size(v->dtype) : 0;
}

/* GEMM-like FLOPs (2 per multiply-add), or -1 if the op is not GEMM-like. */
static double dense_flops(const ipu_graph_t *g, const ipu_node_t *n)
{
    const ipu_value_t *a = ipu_node_input(g, n, 0), *b = ipu_node_input(g, n, 1);
    const ipu_value_t *y = ipu_node_output(g, n, 0);
    if (!a || !b || !y)
        return -1;
    if (strcmp(n->op_type, "Conv") == 0 && b->rank >= 3) {
        /* every output element: Cin/group * prod(kernel) multiply-adds */
        double per = 1;
        for (int d = 1; d < b->rank; d++)
            per *= (double)b->dims[d];
        /* y of a fused depthwise Conv (graph/fuse.h): about s * s times
         * fewer elements than the Conv's own output, 9 more multiply-adds
         * each */
        int s = ipu_fused_dw_stride(n);
        return s > 0 ? 2 * numel(y) * (per * s * s + 9) : 2 * numel(y) * per;
    }
    if (strcmp(n->op_type, "ConvTranspose") == 0 && b->rank >= 3) {
        /* every input element: M/group * prod(kernel) multiply-adds (W is
         * [C, M/group, k...]) */
        double per = 1;
        for (int d = 1; d < b->rank; d++)
            per *= (double)b->dims[d];
        return 2 * numel(a) * per;
    }
    if (strcmp(n->op_type, "MatMul") == 0 || strcmp(n->op_type, "Gemm") == 0) {
        int64_t k = a->rank >= 1 ? a->dims[a->rank - 1] : 1;
        if (strcmp(n->op_type, "Gemm") == 0 && ipu_attr_int(n, "transA", 0) && a->rank == 2)
            k = a->dims[0];
        return 2 * numel(y) * (double)k;
    }
    return -1;
}

/* Ops that read only the part of input 0 they write (an embedding table's
 * rows, a slice): charged for that, not for the whole input. */
static int gathers(const ipu_node_t *n)
{
    static const char *const ops[] = {"Gather", "GatherElements", "GatherND", "Slice"};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (n->domain[0] == '\0' && strcmp(n->op_type, ops[i]) == 0)
            return n->n_inputs >= 1;
    return 0;
}

ipu_status_t ipu_cost_nodes(const ipu_graph_t *g, const ipu_cost_params_t *p, ipu_node_cost_t *costs)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const ipu_node_t *n = &g->nodes[i];
        ipu_node_cost_t c = {0};
        if (!n->folded) {
            double in = 0, out = 0;
            for (int k = 0; k < n->n_inputs; k++)
                in += bytes(ipu_node_input(g, n, k));
            for (int k = 0; k < n->n_outputs; k++) {
                const ipu_value_t *v = ipu_node_output(g, n, k);
                if (v && v->rank < 0)
                    return ipu_error(IPU_ERR_INVALID_ARG, "cost model: node '%s' has no inferred shapes",
                                     n->name);
                out += bytes(v);
            }
            double f = dense_flops(g, n);
            double rate = p->gflops;
            if (gathers(n)) { /* reads what it writes of its data input, not all of it */
                const ipu_value_t *data = ipu_node_input(g, n, 0);
                in -= bytes(data);
                in += out < bytes(data) ? out : bytes(data);
                f = numel(ipu_node_output(g, n, 0));
                rate = p->other_gflops;
            } else if (f < 0) { /* elementwise, reductions, data movement: per element */
                f = 0;
                for (int k = 0; k < n->n_inputs; k++)
                    f += numel(ipu_node_input(g, n, k));
                rate = p->other_gflops;
            }
            c.flops = f;
            c.bytes_moved = in + out;
            c.out_bytes = (size_t)out;
            c.scratch_bytes = ipu_node_scratch(g, n);
            double t_compute = f / (rate * 1e6), t_mem = (in + out) / (p->mem_gbps * 1e6);
            /* a view of its input (Reshape, Identity: what fusion and
             * folding leave) shares the input's buffer and does not run */
            c.est_ms = ipu_plan_is_view(g, n) ? 0 : t_compute > t_mem ? t_compute : t_mem;
        }
        costs[i] = c;
    }
    return IPU_OK;
}

double ipu_cost_transfer_ms(const ipu_cost_params_t *p, double b)
{
    return b > 0 ? p->link_us * 1e-3 + b / (p->link_gbps * 1e6) : 0;
}
