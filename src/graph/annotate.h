/* Writing a model copy with integer node attributes set. */
#ifndef IPU_GRAPH_ANNOTATE_H
#define IPU_GRAPH_ANNOTATE_H

#include "common/status.h"

#include <stdint.h>

/* Copy the model at in_path to out_path with, on node i (the graph's i-th
 * NodeProto, which is node index i of the IR loaded from it), every
 * attribute attr_names[a] set to values[i * n_attrs + a] (INT); a negative
 * value leaves the node's attribute as it is. External data files are
 * referenced by the same relative paths, so write next to the original.
 * Errors: IPU_ERR_IO, IPU_ERR_INVALID_MODEL, IPU_ERR_INVALID_ARG (node count
 * differs). */
ipu_status_t ipu_model_write_annotated(const char *in_path, const char *out_path, int n_nodes,
                                       const char *const *attr_names, int n_attrs,
                                       const int64_t *values);

#endif
