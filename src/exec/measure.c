#include "exec/measure.h"
#include "exec/onednn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* memory bandwidth one core sees while the others run (GB/s) */
#define IPU_MEASURE_MEM_GBPS 8.0
/* interleaved timing rounds over the distinct shapes (best of each kept) */
#define IPU_MEASURE_ROUNDS 3

static int is_dense(const ipu_node_t *n)
{
    return strcmp(n->op_type, "Conv") == 0 || strcmp(n->op_type, "ConvTranspose") == 0 ||
           strcmp(n->op_type, "Gemm") == 0 || strcmp(n->op_type, "MatMul") == 0;
}

/* A key naming what decides the node's speed: op, input shapes, attributes. */
static void node_key(const ipu_graph_t *g, const ipu_node_t *n, char *key, size_t len)
{
    size_t off = (size_t)snprintf(key, len, "%s", n->op_type);
    for (int k = 0; k < n->n_inputs && off < len; k++) {
        const ipu_value_t *v = ipu_node_input(g, n, k);
        off += (size_t)snprintf(key + off, len - off, "|");
        for (int d = 0; v && d < v->rank && off < len; d++)
            off += (size_t)snprintf(key + off, len - off, "%lld,", (long long)v->dims[d]);
    }
    for (int a = 0; a < n->n_attrs && off < len; a++) {
        const ipu_attr_t *at = &n->attrs[a];
        off += (size_t)snprintf(key + off, len - off, "|%s=", at->name);
        if (at->type == IPU_ATTR_INT)
            off += (size_t)snprintf(key + off, len - off, "%lld", (long long)at->i);
        for (size_t i = 0; at->type == IPU_ATTR_INTS && i < at->n && off < len; i++)
            off += (size_t)snprintf(key + off, len - off, "%lld,", (long long)at->ints[i]);
        if (at->type == IPU_ATTR_FLOAT && off < len)
            off += (size_t)snprintf(key + off, len - off, "%g", at->f);
        if (at->type == IPU_ATTR_STRING && off < len)
            off += (size_t)snprintf(key + off, len - off, "%s", at->s);
    }
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static ipu_status_t time_node(const ipu_graph_t *g, const ipu_node_t *n, double *ms)
{
    ipu_tensor_t in[n->n_inputs + 1], out[n->n_outputs + 1];
    ipu_kernel_ctx_t ctx = {.threads = ipu_dnn_threads()}; /* as its IPU runs it */
    ipu_status_t st = IPU_OK;
    memset(in, 0, sizeof(in));
    memset(out, 0, sizeof(out));
    unsigned char owned[n->n_inputs + 1];
    memset(owned, 0, sizeof(owned));
    for (int k = 0; k < n->n_inputs && st == IPU_OK; k++) {
        in[k] = ipu_value_tensor(g, n->inputs[k]);
        if (n->inputs[k] < 0 ||
            (in[k].data && g->values[n->inputs[k]].data_kind != IPU_CONST_DEFERRED))
            continue; /* absent, or a weight: the real bytes (one still in
                       * the model file, maybe unaligned: made up below) */
        in[k].data = NULL;
        if ((st = ipu_tensor_alloc_bytes(&in[k], ipu_value_buffer_bytes(&g->values[n->inputs[k]]))) != IPU_OK)
            break;
        owned[k] = 1;
        if (in[k].dtype == IPU_DTYPE_FLOAT) /* plain values, no denormals */
            for (int64_t i = 0; i < ipu_tensor_numel(&in[k]); i++)
                ((float *)in[k].data)[i] = (float)(i % 13) * 0.01f;
    }
    for (int k = 0; k < n->n_outputs && st == IPU_OK; k++) {
        out[k] = ipu_value_tensor(g, n->outputs[k]);
        out[k].data = NULL;
        if (n->outputs[k] >= 0)
            st = ipu_tensor_alloc_bytes(&out[k], ipu_value_buffer_bytes(&g->values[n->outputs[k]]));
    }
    if (st == IPU_OK && n->op->scratch && (ctx.scratch_bytes = n->op->scratch(g, n)) > 0 &&
        (ctx.scratch = aligned_alloc(64, (ctx.scratch_bytes + 63) / 64 * 64)) == NULL)
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory measuring node '%s'", n->name);
    /* a residual summed in place, as the buffer planner has it where no
     * later node reads the residual (exec/plan.h): Y is the residual */
    int res = n->op->inplace ? n->op->inplace(n) : -1;
    void *res_own = NULL; /* its own buffer, freed below */
    size_t res_bytes = res >= 0 && res < n->n_inputs && n->inputs[res] >= 0
                           ? ipu_value_buffer_bytes(&g->values[n->inputs[res]])
                           : 0;
    if (st == IPU_OK && res_bytes > 0 && owned[res] && out[0].data &&
        res_bytes == ipu_value_buffer_bytes(&g->values[n->outputs[0]])) {
        memcpy(out[0].data, in[res].data, res_bytes); /* its stand-in values */
        res_own = in[res].data;
        in[res].data = out[0].data;
    }
    double best = -1;
    /* the weights reordered once, in the first (untimed) run, as a loaded
     * stage has them; the activations in the layouts the layout pass chose
     * (the graph is prepared: exec/prepare.h) */
    ipu_dnn_keep_weights(1);
    for (int r = 0; r < 3 && st == IPU_OK; r++) {
        double t0 = now_ms();
        st = n->op->run(n, in, out, &ctx);
        double t = now_ms() - t0;
        if (r > 0 && (best < 0 || t < best))
            best = t;
    }
    ipu_dnn_keep_weights(0);
    if (res_own)
        in[res].data = res_own;
    free(ctx.scratch);
    for (int k = 0; k < n->n_inputs; k++)
        if (owned[k])
            free(in[k].data);
    for (int k = 0; k < n->n_outputs; k++)
        free(out[k].data);
    *ms = best;
    return st;
}

ipu_status_t ipu_measure_nodes(const ipu_graph_t *g, double *node_ms)
{
    enum { KEYLEN = 512 };
    char (*keys)[KEYLEN] = calloc((size_t)g->n_nodes + 1, KEYLEN);
    double *best = calloc((size_t)g->n_nodes + 1, sizeof(double));
    int *rep = calloc((size_t)g->n_nodes + 1, sizeof(int)), *key_of = calloc((size_t)g->n_nodes + 1, sizeof(int));
    int nk = 0;
    ipu_status_t st = IPU_OK;
    if (keys == NULL || best == NULL || rep == NULL || key_of == NULL) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory measuring nodes");
        goto out;
    }
    for (int i = 0; i < g->n_nodes; i++) { /* the distinct shapes */
        const ipu_node_t *n = &g->nodes[i];
        node_ms[i] = -1;
        key_of[i] = -1;
        if (n->folded || !is_dense(n))
            continue;
        char key[KEYLEN];
        node_key(g, n, key, sizeof(key));
        int k = 0;
        while (k < nk && strcmp(keys[k], key) != 0)
            k++;
        if (k == nk) {
            memcpy(keys[nk++], key, KEYLEN);
            rep[k] = i;
            best[k] = -1;
        }
        key_of[i] = k;
    }
    /* rounds over all shapes, the best of each kept: a phase in which this
     * machine runs slower (a neighbour's load) then slows every shape of a
     * round alike instead of the shapes timed during it, which would move
     * the cut from run to run */
    for (int r = 0; r < IPU_MEASURE_ROUNDS && st == IPU_OK; r++)
        for (int k = 0; k < nk && st == IPU_OK; k++) {
            double t;
            if ((st = time_node(g, &g->nodes[rep[k]], &t)) == IPU_OK && (best[k] < 0 || t < best[k]))
                best[k] = t;
        }
    for (int i = 0; i < g->n_nodes && st == IPU_OK; i++) {
        const ipu_node_t *n = &g->nodes[i];
        if (key_of[i] < 0)
            continue;
        /* the timing loop runs with the weights in cache; in a pipeline
         * they stream from memory every micro-batch, while the kernel
         * computes: the node takes the longer of the two (a roofline) */
        double wbytes = 0;
        for (int q = 0; q < n->n_inputs; q++) {
            const ipu_value_t *v = ipu_node_input(g, n, q);
            if (v && v->data)
                wbytes += (double)ipu_shape_numel(v->rank, v->dims) * (double)ipu_dtype_size(v->dtype);
        }
        double stream_ms = wbytes / (IPU_MEASURE_MEM_GBPS * 1e6);
        node_ms[i] = best[key_of[i]] > stream_ms ? best[key_of[i]] : stream_ms;
    }
out:
    free(keys);
    free(best);
    free(rep);
    free(key_of);
    return st;
}
