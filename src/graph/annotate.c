/* Writing a copy of a model with per-node integer attributes added or
 * replaced (the partitioner's __ipu_number / __pipeline_stage). The copy is
 * made at the protobuf level so that everything the runtime does not model
 * (metadata, doc strings, value_info, external data references) is kept. */
#include "graph/annotate.h"

#include "graph/load_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ipu_status_t set_int_attr(Onnx__NodeProto *n, const char *name, int64_t v)
{
    for (size_t k = 0; k < n->n_attribute; k++)
        if (n->attribute[k]->name && strcmp(n->attribute[k]->name, name) == 0) {
            n->attribute[k]->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
            n->attribute[k]->has_type = 1;
            n->attribute[k]->i = v;
            n->attribute[k]->has_i = 1;
            return IPU_OK;
        }
    Onnx__AttributeProto **na = realloc(n->attribute, (n->n_attribute + 1) * sizeof(*na));
    Onnx__AttributeProto *a = malloc(sizeof(*a));
    char *nm = strdup(name);
    if (na)
        n->attribute = na;
    if (!na || !a || !nm) {
        free(a);
        free(nm);
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory annotating the model");
    }
    onnx__attribute_proto__init(a);
    a->name = nm;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->has_type = 1;
    a->i = v;
    a->has_i = 1;
    n->attribute[n->n_attribute++] = a;
    return IPU_OK;
}

ipu_status_t ipu_model_write_annotated(const char *in_path, const char *out_path, int n_nodes,
                                       const char *const *attr_names, int n_attrs,
                                       const int64_t *values)
{
    const uint8_t *buf = NULL;
    size_t len = 0;
    ipu_status_t st = ipu_file_slurp(in_path, "model", IPU_MAX_PROTO_BYTES, IPU_ERR_INVALID_MODEL,
                                     &buf, &len, NULL);
    if (st != IPU_OK)
        return st;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    ipu_file_release(buf, len);
    if (m == NULL || m->graph == NULL) {
        if (m)
            onnx__model_proto__free_unpacked(m, NULL);
        return ipu_error(IPU_ERR_INVALID_MODEL, "%s: not a valid ONNX model", in_path);
    }
    if ((int)m->graph->n_node != n_nodes) {
        onnx__model_proto__free_unpacked(m, NULL);
        return ipu_error(IPU_ERR_INVALID_ARG, "%s: has %zu nodes, the annotation %d", in_path,
                         m->graph->n_node, n_nodes);
    }
    for (int i = 0; st == IPU_OK && i < n_nodes; i++)
        for (int a = 0; st == IPU_OK && a < n_attrs; a++)
            if (values[(size_t)i * (size_t)n_attrs + (size_t)a] >= 0)
                st = set_int_attr(m->graph->node[i], attr_names[a],
                                  values[(size_t)i * (size_t)n_attrs + (size_t)a]);
    uint8_t *out = NULL;
    size_t olen = 0;
    if (st == IPU_OK) {
        olen = onnx__model_proto__get_packed_size(m);
        if ((out = malloc(olen ? olen : 1)) == NULL)
            st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory writing %s", out_path);
        else
            onnx__model_proto__pack(m, out);
    }
    /* attributes added here were malloc'd: free_unpacked frees them too
     * (protobuf-c frees every field with the same allocator) */
    onnx__model_proto__free_unpacked(m, NULL);
    if (st == IPU_OK) {
        FILE *f = fopen(out_path, "wb");
        int ok = f != NULL && fwrite(out, 1, olen, f) == olen;
        if (f != NULL && fclose(f) != 0)
            ok = 0;
        if (!ok)
            st = ipu_error(IPU_ERR_IO, "%s: cannot write: %s", out_path, strerror(errno));
    }
    free(out);
    return st;
}
