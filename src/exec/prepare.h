/* The prepare step that the single-rank session (exec/session.c) and the
 * pipeline (pipeline/) share: set the graph inputs' shapes, infer every
 * shape, fold and fuse (ipu_prepare_shapes); then build a stage, the whole
 * graph or one stage of a partition, and load it onto its IPU
 * (ipu_prepare_stage). The pipeline partitions between the two, on the
 * shapes the first gives; a single rank calls one after the other. The
 * same calls give the same kernels and so the same bits either way. */
#ifndef IPU_EXEC_PREPARE_H
#define IPU_EXEC_PREPARE_H

#include "exec/device.h"

/* Give graph input k the dtype and shape of inputs[k] (g->n_inputs
 * entries; data not read), infer every shape, fold BatchNormalization into
 * the Conv or Gemm before it (graph/fold_bn.h), fuse with the op registry
 * and choose which activations stay in oneDNN's layouts (ipu_dnn_chain,
 * ops/dnn_chain.h). Errors: the inference's, the folding's, the fusion's
 * and the layout pass's. */
ipu_status_t ipu_prepare_shapes(ipu_graph_t *g, const ipu_tensor_t *inputs);
/* The part of ipu_prepare_shapes after the inference, on a graph whose
 * shapes are inferred (plan --measure times the nodes so, as a run has
 * them): fold, fuse, the layout pass. Errors: as ipu_prepare_shapes. */
ipu_status_t ipu_prepare_graph(ipu_graph_t *g);

/* Which stage ipu_prepare_stage builds. */
typedef struct ipu_prepare_params {
    const int *node_stage;  /* per node, its stage (ipu_stage_build_of); NULL:
                               the whole graph in g->order as one stage */
    int stage;              /* the stage of node_stage */
    unsigned flags;         /* IPU_STAGE_FIRST / IPU_STAGE_LAST of node_stage */
    int profile;            /* 1: time every node (ipu_stage_profile) */
    const char *where;      /* prefixed to a load error ("WHERE: message");
                               NULL: the message as the device gives it */
    struct ipu_release *release; /* NULL, or frees the weights the stage's
                               nodes hold copies of as they load (stage.h) */
} ipu_prepare_params_t;

/* Build the stage p describes into *out (the caller frees it with
 * ipu_stage_free, also on error) and load it onto dev. Errors:
 * IPU_ERR_NO_MEMORY (building; or the stage does not fit the IPU, the
 * device's message), ipu_device_load's. */
ipu_status_t ipu_prepare_stage(const ipu_graph_t *g, const ipu_prepare_params_t *p, ipu_device_t *dev,
                               ipu_stage_t *out);

/* Once every stage is loaded: ipu_release_end(r) (r from ipu_release_new,
 * exec/stage.h), with an info line of what was freed; returns the bytes
 * freed. */
size_t ipu_prepare_release_end(struct ipu_release *r);

#endif
