/* Host-side tensors for the command line tool: reading inputs (ONNX
 * test-data directories, .npy), synthesising them, writing outputs and
 * comparing them with references. */
#ifndef IPU_CLI_IO_H
#define IPU_CLI_IO_H

#include "graph/ir.h"

#include <stdio.h>

/* Read DIR/input_<k>.pb (or .npy) for each graph input k into ins[k]
 * (data malloc'd). A TensorProto whose name matches a graph input goes to
 * that input; otherwise files are taken in order. Errors: IPU_ERR_IO (missing
 * file), IPU_ERR_INPUT. */
ipu_status_t cli_read_inputs(const ipu_graph_t *g, const char *dir, ipu_tensor_t *ins);

/* Make seeded synthetic inputs of the declared shapes (a symbolic first
 * dimension -> batch, other symbolic dimensions -> 1):
 * floats ~ U(-1, 1); integer inputs used as Gather indices are drawn within
 * the gathered dimension, other integers in [0, 10). */
ipu_status_t cli_synth_inputs(const ipu_graph_t *g, unsigned seed, int batch, ipu_tensor_t *ins);

/* Read DIR/output_<k>.pb for every graph output into refs[k] (malloc'd). */
ipu_status_t cli_read_refs(const ipu_graph_t *g, const char *dir, ipu_tensor_t *refs);

/* Compare output k of micro-batch mb with ref as numpy.allclose(rtol, atol).
 * Prints one line to out when verbose or on a mismatch (the count of bad
 * elements and the worst one); raises *max_abs to the largest |got - want|.
 * Returns IPU_ERR_MISMATCH on a mismatch (no message recorded). */
ipu_status_t cli_check_output(FILE *out, const char *name, int k, int mb, int verbose, const ipu_tensor_t *got,
                              const ipu_tensor_t *ref, double rtol, double atol, double *max_abs);

/* Make --output-dir DIR (mkdir -p) and check that it is a writable
 * directory, before any work: IPU_ERR_IO naming it otherwise. */
ipu_status_t cli_check_output_dir(const char *dir);
/* Write output k of micro-batch mb as DIR/output_<k>.pb (one micro-batch)
 * or DIR/test_data_set_<mb>/output_<k>.pb (several). */
ipu_status_t cli_write_output(const char *dir, int n_batches, int mb, int k, const char *name,
                              const ipu_tensor_t *t);

#endif
