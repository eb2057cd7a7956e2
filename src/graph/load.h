/* ONNX model loading with protobuf-c (onnx.proto of libonnx-dev, compiled at
 * build time), and TensorProto files (input_N.pb / output_N.pb of the ONNX
 * test-data layout). The parsed protobuf is freed before returning: the graph
 * keeps its own copies (or mmaps of external data). */
#ifndef IPU_GRAPH_LOAD_H
#define IPU_GRAPH_LOAD_H

#include "graph/ir.h"

/* Opsets of the default ONNX domain that models may import. */
#define IPU_OPSET_MIN 7
#define IPU_OPSET_MAX 17

/* Load the model at path into a new graph (*out, free with ipu_graph_free()).
 * Reads opset imports (default domain opsets 7..17 accepted), graph inputs
 * that are not initializers (with their declared dtype/shape; symbolic dims
 * -1 with dim_param), outputs, initializers (raw_data or typed fields;
 * external data memory-mapped, paths confined to the model's folder), nodes
 * and attributes of every type. Runs ipu_graph_toposort(). Models up to 2 GiB.
 * Errors (message names the file and what is wrong):
 *   IPU_ERR_IO            missing/unreadable file
 *   IPU_ERR_INVALID_MODEL not a protobuf, truncated, no graph, missing
 *                         initializer, dangling input, cycle, external data
 *                         outside the folder or shorter than declared
 *   IPU_ERR_UNSUPPORTED   opset out of range, unsupported tensor dtype */
ipu_status_t ipu_model_load(const char *path, ipu_graph_t **out);

/* ipu_model_load() that leaves the raw_data of initializers of 64 KiB and
 * more in the model file (kind IPU_CONST_DEFERRED: data points into the
 * file's mapping, which is never read; the bytes are read with pread from
 * the descriptor the graph keeps): a pipeline rank then reads only the
 * weights of its own stages (ipu_graph_materialise() after dropping the
 * others), instead of all of them. Same errors. Constant folding
 * (ipu_graph_infer) reads what it folds and defers it again after. */
ipu_status_t ipu_model_load_deferred(const char *path, ipu_graph_t **out);

/* Read every IPU_CONST_DEFERRED value into owned, aligned memory (then
 * IPU_CONST_OWNED), and close the model file. ipu_value_materialise() does
 * one value (a no-op for other kinds). Errors: IPU_ERR_NO_MEMORY, IPU_ERR_IO
 * (the model file was truncated or changed since it was loaded). */
ipu_status_t ipu_graph_materialise(ipu_graph_t *g);
ipu_status_t ipu_value_materialise(ipu_graph_t *g, int v);

/* Read a serialized onnx.TensorProto file into t (t->data malloc'd, caller
 * frees) and its name (*name malloc'd or NULL if name is NULL). */
ipu_status_t ipu_tensorproto_read(const char *path, ipu_tensor_t *t, char **name);
/* Write t as a serialized onnx.TensorProto (raw_data) named name. */
ipu_status_t ipu_tensorproto_write(const char *path, const ipu_tensor_t *t, const char *name);

#endif
