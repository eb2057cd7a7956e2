/* Host-side tensors for the command line tool: reading inputs (ONNX
 * test-data directories, .npy), synthesising them, writing outputs and
 * comparing them with references. */
#ifndef IPU_CLI_IO_H
#define IPU_CLI_IO_H

#include "graph/ir.h"

#include <stdint.h>
#include <stdio.h>

/* Formats of the files written by --output-dir and --save-inputs. */
typedef enum { CLI_FORMAT_PB, CLI_FORMAT_NPY } cli_format_t;

/* The test data of a run (cli/testdata.c): the file of each input and
 * reference output of each set. Input positions: the model's inputs
 * without a default, then those with one (graph inputs that have an
 * initializer, g->defaults), each in graph.input order. A directory holds
 * the tensor of position k as KIND_k.pb (onnx.TensorProto), KIND_k.npy,
 * NAME.pb or NAME.npy (KIND: input or output; NAME: the graph input's or
 * output's name); when several exist the first of that order is used and a
 * warning names them all. An input with a default needs no file: without
 * one its initializer is used. Micro-batch m reads set m % n_sets. */
typedef struct cli_data {
    int n_sets;      /* 1 when the directory itself holds the files */
    int sets;        /* the sets are DIR/test_data_set_0 .. n_sets-1 */
    int n_in, n_out; /* n_in: input positions */
    int n_required;  /* positions [0, n_required): inputs without a default */
    int *value;      /* [p]: the graph value of position p */
    int *slot;       /* [p]: its index in g->inputs; -1: a default not given */
    char **in;       /* [set * n_in + p]: the file of position p (NULL: a default not given) */
    char **ref;      /* [set * n_out + k]: the file of output k's reference (refs) */
    int *reorder;    /* [set]: every input given is input_k.pb: TensorProto names
                      * that are the graph inputs' place them */
} cli_data_t;

/* Resolve the files of DIR (--inputs, or the model's folder for --check's
 * default): DIR's own files when it holds a file of some input (and sets
 * is 0), else DIR/test_data_set_0, _1, ... up to the first missing one
 * or max_sets of them (> 0; sets past the micro-batches are not read).
 * The inputs with a default that the files give become fed inputs of g
 * (ipu_graph_feed_default; every set must give the same ones), appended to
 * g->inputs: call it before the inputs are allocated or shapes inferred.
 * refs: also the reference outputs. warn: print the warnings (several files
 * for one tensor; a .pb/.npy file that is no input or output) and, for test
 * data sets, one "inputs:" line naming them. Errors: IPU_ERR_IO naming the
 * missing file and the names it may have. */
ipu_status_t cli_data_open(ipu_graph_t *g, const char *dir, int sets, int max_sets, int refs, int warn,
                           cli_data_t *d);
/* IPU_ERR_INVALID_ARG when writing the outputs of n_batches micro-batches
 * to dir (as cli_write_tensor does: dir itself for one, dir/test_data_set_M
 * for several) would put them in a folder d's reference outputs are read
 * from (the same directory, links followed): they would replace or shadow
 * the references being checked. opt names the option in the message. */
ipu_status_t cli_data_check_out_dir(const cli_data_t *d, const char *opt, const char *dir, int n_batches);
void cli_data_free(cli_data_t *d);
/* Read the inputs of micro-batch mb into ins[0..n_inputs) (data malloc'd). */
ipu_status_t cli_data_inputs(const ipu_graph_t *g, const cli_data_t *d, int mb, ipu_tensor_t *ins);
/* The position of g->inputs[k] (k where d has no files), and its file for
 * micro-batch mb. */
int cli_data_position(const cli_data_t *d, int k);
const char *cli_data_file(const cli_data_t *d, int mb, int k);
/* Check the inputs ins of micro-batch mb (as cli_data_inputs read them)
 * against the model's declared inputs (ipu_value_accepts; call it before
 * the graph's input shapes are set): IPU_ERR_INPUT naming the file, its
 * dtype and shape and the model's. */
ipu_status_t cli_data_check(const ipu_graph_t *g, const cli_data_t *d, int mb, const ipu_tensor_t *ins);
/* Read the reference of output k of micro-batch mb (data malloc'd); its path. */
ipu_status_t cli_data_ref(const cli_data_t *d, int mb, int k, ipu_tensor_t *ref);
const char *cli_data_ref_path(const cli_data_t *d, int mb, int k);
/* Read a .npy (by its extension) or onnx.TensorProto file; *name (malloc'd,
 * NULL for .npy) is the TensorProto's name when name is not NULL. */
ipu_status_t cli_read_tensor(const char *path, ipu_tensor_t *t, char **name);
/* The inputs of DIR's first set (see cli_data_open) into ins (plan; room
 * for g->n_inputs + g->n_defaults), checked (cli_data_check). */
ipu_status_t cli_read_inputs(ipu_graph_t *g, const char *dir, ipu_tensor_t *ins);

/* Make seeded synthetic inputs of the declared shapes (a symbolic first
 * dimension -> batch, other symbolic dimensions -> 1):
 * floats ~ U(-1, 1); integer inputs used as Gather indices are drawn within
 * the gathered dimension, other integers in [0, 10). */
ipu_status_t cli_synth_inputs(const ipu_graph_t *g, unsigned seed, int batch, ipu_tensor_t *ins);
/* Whether synthetic inputs can be made: IPU_ERR_INPUT naming the first
 * input whose rank the model leaves unknown (its data must be given). */
ipu_status_t cli_synth_check(const ipu_graph_t *g);

/* Compare output k of micro-batch mb with ref (read from ref_path) as
 * numpy.allclose(rtol, atol). Prints one line to out when verbose or on a
 * mismatch (the count of bad elements, the worst one, the reference file);
 * raises *max_abs to the largest |got - want|. Returns IPU_ERR_MISMATCH on
 * a mismatch (no message recorded). */
ipu_status_t cli_check_output(FILE *out, const char *name, int k, int mb, int verbose,
                              const ipu_tensor_t *got, const ipu_tensor_t *ref, const char *ref_path,
                              double rtol, double atol, double *max_abs);

/* --digest: the digest of output k of micro-batch mb, splitmix64's
 * finaliser of FNV-1a 64 over mb, k, rank and dims[0..rank) (each an int64,
 * little-endian), then the t->data bytes (ipu_tensor_nbytes). A run's digest
 * is the sum of these over its outputs, mod 2^64: it does not depend on
 * which rank took which output, so one rank and a pipeline of the same
 * micro-batches print the same digest exactly when every output is the
 * same byte for byte (but for a 2^-64 chance). FNV-1a: Fowler, Noll, Vo,
 * draft-eastlake-fnv; splitmix64: Steele, Lea, Flood, OOPSLA 2014. */
uint64_t cli_output_digest(int mb, int k, const ipu_tensor_t *t);

/* Make the directory DIR of option opt (--output-dir, --save-inputs;
 * mkdir -p) and check that it is writable, before any work: IPU_ERR_IO
 * naming both otherwise. */
ipu_status_t cli_check_output_dir(const char *opt, const char *dir);
/* Write tensor k of micro-batch mb (kind "input" or "output", graph name
 * name) for option opt as DIR/KIND_<k>.pb (or .npy: fmt) for one
 * micro-batch, or DIR/test_data_set_<mb>/KIND_<k>.pb for several: the
 * layout that --inputs and --check read. */
ipu_status_t cli_write_tensor(const char *opt, const char *dir, cli_format_t fmt, int n_batches, int mb,
                              const char *kind, int k, const char *name, const ipu_tensor_t *t);

#endif
