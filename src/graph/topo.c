/* Topological order (Kahn's algorithm) and producer/consumer links, with the
 * structural checks a loaded model needs: values produced twice, dangling
 * inputs, cycles. */
#include "graph/ir.h"

#include <stdlib.h>
#include <string.h>

ipu_status_t ipu_graph_toposort(ipu_graph_t *g)
{
    ipu_status_t st = IPU_OK;
    int *indeg = calloc((size_t)g->n_nodes + 1, sizeof(int));
    int *order = malloc(((size_t)g->n_nodes + 1) * sizeof(int));
    int *cons_start = calloc((size_t)g->n_values + 1, sizeof(int));
    int *cons = NULL;
    if (!indeg || !order || !cons_start) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory sorting the graph");
        goto out;
    }
    for (int v = 0; v < g->n_values; v++) {
        g->values[v].producer = -1;
        g->values[v].n_consumers = 0;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const ipu_node_t *n = &g->nodes[i];
        for (int k = 0; k < n->n_outputs; k++) {
            int v = n->outputs[k];
            if (v < 0)
                continue;
            ipu_value_t *val = &g->values[v];
            if (val->producer >= 0 || (val->flags & (IPU_VALUE_INPUT | IPU_VALUE_INITIALIZER))) {
                st = ipu_error(IPU_ERR_INVALID_MODEL,
                               "value '%s' is produced by node '%s' (%s) but also %s; "
                               "every value must have one producer",
                               val->name, n->name, n->op_type,
                               val->producer >= 0 ? g->nodes[val->producer].name
                                                  : "a graph input or initializer");
                goto out;
            }
            val->producer = i;
        }
    }
    /* consumers as CSR, counting each (node, value) edge once per slot */
    for (int i = 0; i < g->n_nodes; i++) {
        const ipu_node_t *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k];
            if (v < 0)
                continue;
            ipu_value_t *val = &g->values[v];
            val->n_consumers++;
            if (val->producer < 0 && !(val->flags & (IPU_VALUE_INPUT | IPU_VALUE_INITIALIZER)) &&
                val->data == NULL) {
                st = ipu_error(IPU_ERR_INVALID_MODEL,
                               "input '%s' of node '%s' (%s) is not produced by any node, "
                               "nor a graph input or initializer (dangling input)",
                               val->name, n->name, n->op_type);
                goto out;
            }
            if (val->producer >= 0)
                indeg[i]++;
            cons_start[v + 1]++;
        }
    }
    for (int v = 0; v < g->n_values; v++)
        cons_start[v + 1] += cons_start[v];
    cons = malloc(((size_t)cons_start[g->n_values] + 1) * sizeof(int));
    int *fill = calloc((size_t)g->n_values + 1, sizeof(int));
    if (!cons || !fill) {
        free(fill);
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory sorting the graph");
        goto out;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const ipu_node_t *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k];
            if (v >= 0)
                cons[cons_start[v] + fill[v]++] = i;
        }
    }
    free(fill);
    /* Kahn with a FIFO seeded in node order keeps the model's order when it
     * is already topological (as ONNX requires). */
    int head = 0, tail = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (indeg[i] == 0)
            order[tail++] = i;
    while (head < tail) {
        const ipu_node_t *n = &g->nodes[order[head++]];
        for (int k = 0; k < n->n_outputs; k++) {
            int v = n->outputs[k];
            if (v < 0)
                continue;
            for (int c = cons_start[v]; c < cons_start[v + 1]; c++)
                if (--indeg[cons[c]] == 0)
                    order[tail++] = cons[c];
        }
    }
    if (tail != g->n_nodes) {
        for (int i = 0; i < g->n_nodes; i++)
            if (indeg[i] > 0) {
                st = ipu_error(IPU_ERR_INVALID_MODEL,
                               "the graph has a cycle through node '%s' (%s); "
                               "ONNX graphs must be acyclic",
                               g->nodes[i].name, g->nodes[i].op_type);
                break;
            }
        goto out;
    }
    for (int k = 0; k < g->n_outputs; k++) {
        const ipu_value_t *val = &g->values[g->outputs[k]];
        if (val->producer < 0 && !(val->flags & (IPU_VALUE_INPUT | IPU_VALUE_INITIALIZER)) &&
            val->data == NULL) {
            st = ipu_error(IPU_ERR_INVALID_MODEL,
                           "graph output '%s' is not produced by any node", val->name);
            goto out;
        }
    }
    free(g->order);
    g->order = order;
    order = NULL;
out:
    free(cons);
    free(cons_start);
    free(order);
    free(indeg);
    return st;
}
