/* libFuzzer target: bytes -> the ONNX model loader -> shape inference.
 *
 * Feeds each input, as the file model.onnx, to what `ipu-exec MODEL` does
 * before it builds a stage: ipu_model_load_deferred (the top-level scan,
 * rawskip, protobuf-c's parse, opsets, initializers, attributes, external
 * data confined to the folder, toposort), ipu_graph_bind_ops with the op
 * registry, then ipu_prepare_shapes on inputs of the declared dtypes and
 * shapes with every symbolic dimension 1 (a batch of 1, as
 * cli_synth_inputs does; data not read): shape inference and constant
 * folding, BatchNormalization folding, fusion and the oneDNN layout pass;
 * last ipu_graph_materialise. No kernel runs but the constant folds.
 *
 * Checks, on every input: no crash, leak, ASan/UBSan report or hang (the
 * sanitizers and libFuzzer's -timeout), and every error is a user error
 * with a one-line message (fuzz_check_error). */
#include "exec/prepare.h"
#include "exec/ops/registry.h"
#include "graph/load.h"
#include "graph/op.h"
#include "fuzz_file.h"

#include <stdlib.h>
#include <string.h>

/* Inputs of g's declared dtypes and shapes, symbolic dimensions 1. */
static ipu_tensor_t *declared_inputs(const ipu_graph_t *g)
{
    ipu_tensor_t *ins = calloc((size_t)g->n_inputs + 1, sizeof(*ins));
    for (int k = 0; ins && k < g->n_inputs; k++) {
        const ipu_value_t *v = &g->values[g->inputs[k]];
        ins[k].dtype = v->dtype;
        ins[k].rank = v->rank < 0 ? 0 : v->rank;
        for (int d = 0; d < ins[k].rank; d++)
            ins[k].dims[d] = v->dims[d] >= 0 ? v->dims[d] : 1;
    }
    return ins;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file("model.onnx", data, size);
    ipu_graph_t *g = NULL;
    ipu_status_t st = ipu_model_load_deferred(path, &g);
    fuzz_check_error(st, "ipu_model_load_deferred");
    if (st != IPU_OK)
        return 0;
    st = ipu_graph_bind_ops(g, ipu_op_lookup);
    fuzz_check_error(st, "ipu_graph_bind_ops");
    ipu_tensor_t *ins = st == IPU_OK ? declared_inputs(g) : NULL;
    if (ins) {
        st = ipu_prepare_shapes(g, ins);
        fuzz_check_error(st, "ipu_prepare_shapes");
        if (st == IPU_OK)
            fuzz_check_error(ipu_graph_materialise(g), "ipu_graph_materialise");
    }
    free(ins);
    ipu_graph_free(g);
    return 0;
}
