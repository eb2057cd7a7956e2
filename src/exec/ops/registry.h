/* The op registry: every implemented ONNX operator, by family (one file per
 * family under src/exec/ops/). Each family file defines a NULL-terminated
 * array of entries named ipu_ops_<family>. */
#ifndef IPU_EXEC_OPS_REGISTRY_H
#define IPU_EXEC_OPS_REGISTRY_H

#include "graph/op.h"

/* The entry implementing (domain, op_type) at the given opset of that domain
 * (domain "" and "ai.onnx" are the same), or NULL. Matches ipu_op_lookup_fn. */
const ipu_op_t *ipu_op_lookup(const char *domain, const char *op_type, int opset);

/* Iterate over all entries: returns entry i, or NULL past the end. */
const ipu_op_t *ipu_op_registry_entry(int i);

#define IPU_OP_FAMILIES(X) \
    X(unary) X(binary) X(cast) X(softmax) X(norm) X(reduce) \
    X(conv) X(conv_transpose) X(lrn) X(gemm) X(pool) \
    X(shape) X(transpose) X(concat_split) X(slice) X(gather) X(expand) X(constant) X(pad)

#define IPU_OP_DECLARE_FAMILY(name) extern const ipu_op_t *const ipu_ops_##name[];
IPU_OP_FAMILIES(IPU_OP_DECLARE_FAMILY)

#endif
