/* The graph IR: values (tensors by name), nodes (ONNX operators) and the
 * graph that owns them. Built by the ONNX loader (graph/load.c) or by hand
 * (tests); independent of protobuf: nothing here points into a parsed model.
 *
 * Ownership: the graph owns every string, array and constant buffer in it.
 * Values and nodes are referred to by index (stable while the graph lives). */
#ifndef IPU_GRAPH_IR_H
#define IPU_GRAPH_IR_H

#include "common/status.h"
#include "common/tensor.h"

#include <stddef.h>
#include <stdint.h>

struct ipu_op;

/* Value flags */
enum {
    IPU_VALUE_INPUT       = 1u << 0, /* graph input fed by the user */
    IPU_VALUE_OUTPUT      = 1u << 1, /* graph output */
    IPU_VALUE_INITIALIZER = 1u << 2, /* initializer (weight) from the model */
    IPU_VALUE_FOLDED      = 1u << 3, /* constant computed by constant folding */
};

/* Where a constant's bytes live. */
enum {
    IPU_CONST_NONE = 0,   /* not a constant (activation) */
    IPU_CONST_OWNED,      /* malloc'd by the graph, freed with it */
    IPU_CONST_MAPPED,     /* inside an mmap'd external data file (read-only) */
    IPU_CONST_DEFERRED,   /* still inside the model file's mapping, maybe not
                           * element-aligned: no kernel may read it before
                           * ipu_graph_materialise() (graph/load.h) */
    IPU_CONST_HELD,       /* freed (data NULL) once every node reading it held
                           * a copy of its own, made at load (exec/stage.h:
                           * ipu_release_new); no kernel reads it */
};

typedef struct ipu_value {
    char *name;
    ipu_dtype_t dtype;            /* IPU_DTYPE_UNDEFINED until known */
    int rank;                     /* -1 until known */
    int64_t dims[IPU_MAX_RANK];   /* -1 for a symbolic/unknown dimension */
    char *dim_param[IPU_MAX_RANK];/* symbolic name from the model, or NULL */
    void *data;                   /* constant bytes (initializer/folded), else NULL */
    int data_kind;                /* IPU_CONST_* */
    int producer;                 /* index of the producing node, -1 if none */
    int n_consumers;              /* number of node input slots reading it */
    unsigned flags;               /* IPU_VALUE_* */
    size_t layout_bytes;          /* bytes its buffer needs where the layout pass
                                   * (exec/ops/dnn_chain.h) keeps it in a layout
                                   * larger than its elements (oneDNN's
                                   * channel-blocked one pads the last block); 0:
                                   * its elements' */
} ipu_value_t;

typedef enum {
    IPU_ATTR_UNDEFINED = 0,
    IPU_ATTR_FLOAT = 1, IPU_ATTR_INT = 2, IPU_ATTR_STRING = 3, IPU_ATTR_TENSOR = 4,
    IPU_ATTR_GRAPH = 5, IPU_ATTR_FLOATS = 6, IPU_ATTR_INTS = 7, IPU_ATTR_STRINGS = 8,
    IPU_ATTR_TENSORS = 9, IPU_ATTR_GRAPHS = 10, IPU_ATTR_SPARSE_TENSOR = 11,
    IPU_ATTR_SPARSE_TENSORS = 12, IPU_ATTR_TYPE_PROTO = 13, IPU_ATTR_TYPE_PROTOS = 14,
} ipu_attr_type_t; /* values of onnx.AttributeProto.AttributeType */

typedef struct ipu_attr {
    char *name;
    ipu_attr_type_t type;
    float f;                      /* FLOAT */
    int64_t i;                    /* INT */
    char *s;                      /* STRING (NUL-terminated copy) */
    size_t s_len;                 /* STRING length in bytes */
    float *floats;                /* FLOATS */
    int64_t *ints;                /* INTS */
    char **strings;               /* STRINGS */
    size_t n;                     /* element count of FLOATS/INTS/STRINGS/TENSORS */
    ipu_tensor_t *tensors;        /* TENSOR (n = 1) or TENSORS; data owned */
} ipu_attr_t;

typedef struct ipu_node {
    char *name;                   /* never NULL: "<op_type>_<index>" if unnamed */
    char *op_type;
    char *domain;                 /* "" for the default ONNX domain */
    int n_inputs, n_outputs;
    int *inputs;                  /* value indices; -1 for an absent optional */
    int *outputs;                 /* value indices; -1 for an absent optional */
    int n_attrs;
    ipu_attr_t *attrs;
    int opset;                    /* opset of the node's domain in this model */
    const struct ipu_op *op;      /* bound by ipu_graph_bind_ops() */
    void *state;                  /* op-private, set by op->infer, freed by op->fini */
    int folded;                   /* 1 if constant folding computed its outputs */
} ipu_node_t;

typedef struct ipu_opset_import { char *domain; int64_t version; } ipu_opset_import_t;

typedef struct ipu_mapping { void *addr; size_t len; } ipu_mapping_t;

typedef struct ipu_graph {
    char *name;
    char *dir;                    /* folder of the model file (external data root) */
    int64_t opset;                /* opset of the default domain ("" / ai.onnx) */
    ipu_opset_import_t *opsets; int n_opsets;
    ipu_value_t *values; int n_values, cap_values;
    int *names; size_t cap_names; /* values by name (graph/names.h) */
    ipu_node_t *nodes;   int n_nodes, cap_nodes;
    int *inputs;  int n_inputs;   /* user-fed graph inputs (not initializers), in order */
    int *defaults; int n_defaults;/* graph inputs that have an initializer: inputs
                                   * with a default (the ONNX IR; IR < 4 lists every
                                   * initializer so), in graph.input order; a constant
                                   * unless ipu_graph_feed_default made it an input */
    int *outputs; int n_outputs;  /* graph outputs, in order */
    int *order;                   /* topological order of node indices (n_nodes), or NULL */
    ipu_mapping_t *maps; int n_maps; /* external data mappings, unmapped on free */
    /* the model file (graph/load.h): while IPU_CONST_DEFERRED values point
     * into its mapping, the mapping's base and a descriptor they are read
     * from (-1: none; closed on free); its path for messages (NULL: a graph
     * built in memory) */
    const uint8_t *src_base; int src_fd; char *src_path;
} ipu_graph_t;

/* --- building (loader, tests) ------------------------------------------- */

/* New empty graph (opset 13 unless changed). Returns NULL on ENOMEM. */
ipu_graph_t *ipu_graph_new(const char *name);
/* Free everything the graph owns (accepts NULL). */
void ipu_graph_free(ipu_graph_t *g);
/* Unmap the external data files (constants in them become invalid). */
void ipu_graph_unmap(ipu_graph_t *g);
/* Index of the value called name, or -1. */
int ipu_graph_find_value(const ipu_graph_t *g, const char *name);
/* Index of the value called name, created (unknown shape) if missing; -1 on
 * ENOMEM. The empty name "" denotes an absent optional: returns -1 without
 * creating anything, so check name[0] before treating -1 as an error.
 * Creating one may move g->values: pointers into it are stale after. */
int ipu_graph_value(ipu_graph_t *g, const char *name);
/* Set a value's dtype and shape. */
void ipu_value_set_shape(ipu_value_t *v, ipu_dtype_t dt, int rank, const int64_t *dims);
/* Whether tensor t may feed graph input v as the model declares it: the same
 * dtype (any when v's is undefined) and, when v's rank is known (>= 0), the
 * same rank with every fixed dimension equal (symbolic ones take t's). */
int ipu_value_accepts(const ipu_value_t *v, const ipu_tensor_t *t);
/* v's declared dtype and shape for messages, as "float[1,N,?]" (a symbolic
 * dimension by its name, else ?), or "float[any shape]" when its rank is
 * unknown; returns buf. */
char *ipu_value_describe(const ipu_value_t *v, char *buf, size_t len);
/* Make value v a constant holding a copy of data (dtype, rank, dims given). */
ipu_status_t ipu_value_set_const(ipu_value_t *v, ipu_dtype_t dt, int rank,
                                 const int64_t *dims, const void *data);
/* Add a node; input/output names "" are absent optionals. Returns the node
 * index or -1 on ENOMEM. Attributes are added with ipu_node_add_attr_*(). */
int ipu_graph_add_node(ipu_graph_t *g, const char *op_type, const char *name,
                       int n_in, const char *const *inputs,
                       int n_out, const char *const *outputs);
ipu_status_t ipu_node_add_attr_int(ipu_node_t *n, const char *name, int64_t v);
ipu_status_t ipu_node_add_attr_float(ipu_node_t *n, const char *name, float v);
ipu_status_t ipu_node_add_attr_ints(ipu_node_t *n, const char *name, size_t cnt, const int64_t *v);
ipu_status_t ipu_node_add_attr_floats(ipu_node_t *n, const char *name, size_t cnt, const float *v);
ipu_status_t ipu_node_add_attr_string(ipu_node_t *n, const char *name, const char *v);
/* TENSOR attribute holding a copy of t (t->data copied). */
ipu_status_t ipu_node_add_attr_tensor(ipu_node_t *n, const char *name, const ipu_tensor_t *t);
/* Mark graph inputs/outputs by value name (appends in call order). */
ipu_status_t ipu_graph_add_input(ipu_graph_t *g, const char *name);
ipu_status_t ipu_graph_add_output(ipu_graph_t *g, const char *name);
/* Mark the initializer called name as a graph input with a default
 * (appended to g->defaults). */
ipu_status_t ipu_graph_add_default(ipu_graph_t *g, const char *name);
/* Make g->defaults[j], still a constant, an input fed by the user, appended
 * to g->inputs: its default bytes are dropped; its declared dtype and shape
 * are the initializer's. Call before shapes are inferred. */
ipu_status_t ipu_graph_feed_default(ipu_graph_t *g, int j);

/* --- attribute access (ops) --------------------------------------------- */

const ipu_attr_t *ipu_attr_find(const ipu_node_t *n, const char *name);
/* The one reader of the pipeline annotations (partition/partition.h): node
 * n's stage from its __pipeline_stage, else __ipu_number (as PopART: the
 * IPU is then the stage), into *stage; returns 1, or 0 when it has neither.
 * The loader rejects either attribute of a type other than INT. */
int ipu_node_stage(const ipu_node_t *n, int64_t *stage);
/* ONNX's name of an attribute type ("INT", "FLOATS", ...; "UNDEFINED"). */
const char *ipu_attr_type_name(ipu_attr_type_t type);
int64_t ipu_attr_int(const ipu_node_t *n, const char *name, int64_t dflt);
float ipu_attr_float(const ipu_node_t *n, const char *name, float dflt);
/* STRING attribute or dflt. */
const char *ipu_attr_string(const ipu_node_t *n, const char *name, const char *dflt);
/* INTS attribute: pointer to the elements and *cnt, or NULL and *cnt = 0. */
const int64_t *ipu_attr_ints(const ipu_node_t *n, const char *name, size_t *cnt);
const float *ipu_attr_floats(const ipu_node_t *n, const char *name, size_t *cnt);

/* --- views --------------------------------------------------------------- */

/* The tensor view of value idx (dtype, shape, data = constant bytes or NULL). */
ipu_tensor_t ipu_value_tensor(const ipu_graph_t *g, int idx);
/* Bytes of v's buffer: its elements', or its layout_bytes where larger. */
size_t ipu_value_buffer_bytes(const ipu_value_t *v);
/* Input slot i of node n as a value (NULL if absent or i >= n_inputs). */
ipu_value_t *ipu_node_input(const ipu_graph_t *g, const ipu_node_t *n, int i);
/* Value v (-1: an absent optional input) is an activation: computed or fed
 * at run time, not a constant. */
static inline int ipu_value_is_act(const ipu_graph_t *g, int v)
{
    return v >= 0 && g->values[v].data == NULL && g->values[v].data_kind != IPU_CONST_HELD;
}
ipu_value_t *ipu_node_output(const ipu_graph_t *g, const ipu_node_t *n, int i);

/* --- passes --------------------------------------------------------------- */

/* Compute g->order (Kahn's algorithm, stable by node index) and producer /
 * consumer links. Errors (IPU_ERR_INVALID_MODEL, message names the value or
 * node): a value produced twice, an input that nothing produces and that is
 * neither a graph input nor an initializer (dangling), a cycle. */
ipu_status_t ipu_graph_toposort(ipu_graph_t *g);

#endif
