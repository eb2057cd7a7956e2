/* Host-side tensors for the command line tool: reading inputs (ONNX
 * test-data directories, .npy), synthesising them, writing outputs and
 * comparing them with references. */
#ifndef IPU_CLI_IO_H
#define IPU_CLI_IO_H

#include "graph/ir.h"

/* Read DIR/input_<k>.pb (or .npy) for each graph input k into ins[k]
 * (data malloc'd). A TensorProto whose name matches a graph input goes to
 * that input; otherwise files are taken in order. Errors: IPU_ERR_IO (missing
 * file), IPU_ERR_INPUT. */
ipu_status_t cli_read_inputs(const ipu_graph_t *g, const char *dir, ipu_tensor_t *ins);

/* Make seeded synthetic inputs of the declared shapes (symbolic dims -> 1):
 * floats ~ U(-1, 1); integer inputs used as Gather indices are drawn within
 * the gathered dimension, other integers in [0, 10). */
ipu_status_t cli_synth_inputs(const ipu_graph_t *g, unsigned seed, ipu_tensor_t *ins);

/* Compare outputs[0..n) with DIR/output_<k>.pb as numpy.allclose(rtol, atol);
 * prints one line per output and the worst element of a failing one.
 * Returns IPU_ERR_MISMATCH on a mismatch, IPU_ERR_IO if a reference is
 * missing. */
ipu_status_t cli_check_outputs(const ipu_graph_t *g, const ipu_tensor_t *outs, const char *dir,
                               double rtol, double atol);

/* Write outputs as DIR/output_<k>.pb (TensorProto named as the graph output). */
ipu_status_t cli_write_outputs(const ipu_graph_t *g, const ipu_tensor_t *outs, const char *dir);

#endif
