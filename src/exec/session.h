/* A session runs one model on one IPU of this rank: load, bind ops, infer
 * shapes for the given inputs, plan buffers, load the device, run.
 *
 *   ipu_session_t *s;
 *   ipu_session_open("model.onnx", &opts, &s);
 *   ipu_session_prepare(s, inputs, n);   // shapes from these tensors
 *   ipu_session_run(s, inputs, n, outputs);  // outputs: views, valid until next run
 *   ipu_session_close(s);
 */
#ifndef IPU_EXEC_SESSION_H
#define IPU_EXEC_SESSION_H

#include "exec/device.h"

typedef struct ipu_session_opts {
    int threads;          /* kernel threads (oneDNN's OpenMP team), >= 1 */
    size_t ipu_memory;    /* IPU capacity in bytes (0: IPU_DEFAULT_MEMORY) */
    int core;             /* CPU to pin the IPU worker to, -1 for none */
    int n_cpus;           /* > 0: its team's CPUs (ipu_device_params_t) */
    int cpus[IPU_DEVICE_MAX_CPUS];
    int profile;          /* 1: time every node (ipu_stage_t.node_ms) */
} ipu_session_opts_t;

void ipu_session_opts_init(ipu_session_opts_t *o);

typedef struct ipu_session {
    ipu_graph_t *g;
    ipu_session_opts_t opts;
    ipu_stage_t stage;
    ipu_device_t *dev;
    ipu_value_t *declared; /* graph inputs as the model declares them (copied
                            * at the first prepare) */
    int prepared;
    int released; /* weights freed for their loaded copies: no second prepare */
} ipu_session_t;

/* Load the model and bind every node to a kernel (before any shape is known:
 * unsupported ops are reported here, all of them). Errors as ipu_model_load()
 * and ipu_graph_bind_ops(). */
ipu_status_t ipu_session_open(const char *path, const ipu_session_opts_t *opts, ipu_session_t **out);
void ipu_session_close(ipu_session_t *s);

/* Check inputs[0..n) against the graph inputs (n must equal g->n_inputs;
 * dtype must match; fixed dimensions must match, symbolic ones take the
 * tensor's), infer every shape, fold constants, plan buffers and load the
 * device. Errors: IPU_ERR_INPUT (message names the input, expected and given
 * shapes), the inference errors, IPU_ERR_NO_MEMORY (does not fit the IPU).
 * The weights that nodes hold copies of in their own layout are freed as
 * they load (exec/stage.h: ipu_release_new); a session that freed some is
 * prepared once: a second call gives IPU_ERR_INVALID_ARG. */
ipu_status_t ipu_session_prepare(ipu_session_t *s, const ipu_tensor_t *inputs, int n);

/* Copy inputs in, run, and return views of the outputs in outputs[0..n_out)
 * (g->n_outputs entries; data valid until the next run or close). Inputs
 * must have the shapes given to prepare. */
ipu_status_t ipu_session_run(ipu_session_t *s, const ipu_tensor_t *inputs, int n,
                             ipu_tensor_t *outputs);

#endif
