/* The prepare step shared by the session and the pipeline (prepare.h). */
#include "exec/prepare.h"

#include "common/log.h"
#include "exec/ops/dnn_chain.h"
#include "exec/ops/registry.h"
#include "graph/fold_bn.h"
#include "graph/fuse.h"

ipu_status_t ipu_prepare_shapes(ipu_graph_t *g, const ipu_tensor_t *inputs)
{
    ipu_status_t st;
    for (int k = 0; k < g->n_inputs; k++)
        ipu_value_set_shape(&g->values[g->inputs[k]], inputs[k].dtype, inputs[k].rank, inputs[k].dims);
    if ((st = ipu_graph_infer(g)) != IPU_OK)
        return st;
    return ipu_prepare_graph(g);
}

ipu_status_t ipu_prepare_graph(ipu_graph_t *g)
{
    ipu_status_t st;
    if ((st = ipu_graph_fold_bn(g, ipu_op_lookup, NULL)) != IPU_OK ||
        (st = ipu_graph_fuse(g, ipu_op_lookup, NULL)) != IPU_OK)
        return st;
    return ipu_dnn_chain(g);
}

size_t ipu_prepare_release_end(ipu_release_t *r)
{
    size_t freed = ipu_release_end(r);
    char b[IPU_BYTES_STR_LEN];
    if (freed)
        ipu_info("freed %s of weights that their nodes hold in oneDNN's layouts (%zu bytes)",
                 ipu_bytes_str(freed, b), freed);
    return freed;
}

ipu_status_t ipu_prepare_stage(const ipu_graph_t *g, const ipu_prepare_params_t *p, ipu_device_t *dev,
                               ipu_stage_t *out)
{
    ipu_status_t st = p->node_stage
                          ? ipu_stage_build_of(g, p->node_stage, p->stage, p->flags, out)
                          : ipu_stage_build(g, g->order, g->n_nodes, g->inputs, g->n_inputs, g->outputs,
                                            g->n_outputs, out);
    if (st == IPU_OK && p->profile)
        st = ipu_stage_profile(out);
    out->release = p->release; /* for the load only */
    if (st == IPU_OK && (st = ipu_device_load(dev, out)) != IPU_OK && p->where)
        st = ipu_error(st, "%s: %s", p->where, ipu_error_message());
    out->release = NULL;
    return st;
}
