/* ONNX model loading: ModelProto (onnx.proto of libonnx-dev, compiled with
 * protoc-c at build time) -> the graph IR. Everything the graph keeps is
 * copied out (or mmap'd, for external data); the parsed protobuf is freed
 * before returning.
 *
 * Bad files fail with one message naming the file, what is wrong, and what to
 * do: missing/unreadable (IPU_ERR_IO), not a protobuf, truncated, no graph,
 * missing initializer / dangling input, cycle, bad tensor data
 * (IPU_ERR_INVALID_MODEL), opset outside 7..17 or unsupported types
 * (IPU_ERR_UNSUPPORTED). */
#include "graph/load.h"
#include "graph/load_internal.h"

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>


typedef struct load_ctx {
    const char *path;
    ipu_graph_t *g;
    ipu_tp_ctx_t tp;
    const uint8_t *file;       /* the model file's mapping */
    const ipu_rawref_t *refs;  /* raw_data left out of the parse (rawskip.c) */
    size_t n_refs;
} load_ctx_t;

/* Initializers from this size on stay in the file until materialised. */
#define DEFER_MIN_BYTES ((size_t)64 * 1024) /* weights; not the small
                                            * tensors shape inference reads */

#define NOMEM(c) ipu_error(IPU_ERR_NO_MEMORY, "%s: out of memory loading the model", (c)->path)

/* --- before parsing: tell garbage from a truncated model ----------------- */

/* Walk the top-level fields of a ModelProto. Returns 0 if they are well
 * formed, 1 if the bytes are not a protobuf ModelProto, 2 if a field runs
 * past the end of the file; why describes it. */
static int scan_model_bytes(const uint8_t *p, size_t n, char *why, size_t whylen)
{
    /* field number -> wire type of ModelProto (onnx.proto); -1 unknown */
    static const signed char wire[26] = {
        [1] = 0, [2] = 2, [3] = 2, [4] = 2, [5] = 0, [6] = 2, [7] = 2, [8] = 2,
        [14] = 2, [20] = 2, [25] = 2,
    };
    static const unsigned char known[26] = {
        [1] = 1, [2] = 1, [3] = 1, [4] = 1, [5] = 1, [6] = 1, [7] = 1, [8] = 1,
        [14] = 1, [20] = 1, [25] = 1,
    };
    size_t off = 0;
    int seen_core = 0;
    while (off < n) {
        size_t start = off;
        uint64_t key = 0, val = 0;
        int shift = 0;
        /* key varint */
        for (;;) {
            if (off >= n) {
                snprintf(why, whylen, "a field key at byte %zu is cut off", start);
                return 2;
            }
            if (shift > 63) {
                snprintf(why, whylen, "an over-long varint at byte %zu", start);
                return 1;
            }
            uint8_t b = p[off++];
            key |= (uint64_t)(b & 0x7f) << shift;
            shift += 7;
            if (!(b & 0x80))
                break;
        }
        uint64_t field = key >> 3;
        unsigned wt = (unsigned)(key & 7);
        if (field == 0 || field > 0x1fffffff || wt == 3 || wt == 4 || wt > 5) {
            snprintf(why, whylen, "invalid field key 0x%llx at byte %zu",
                     (unsigned long long)key, start);
            return 1;
        }
        if (field < 26 && known[field] && (unsigned)wire[field] != wt) {
            snprintf(why, whylen, "field %llu has wire type %u at byte %zu",
                     (unsigned long long)field, wt, start);
            return 1;
        }
        if (field == 1 || field == 7 || field == 8)
            seen_core = 1;
        switch (wt) {
        case 0:
        case 2:
            shift = 0;
            for (;;) {
                if (off >= n) {
                    snprintf(why, whylen, "field %llu at byte %zu is cut off",
                             (unsigned long long)field, start);
                    return 2;
                }
                if (shift > 63) {
                    snprintf(why, whylen, "an over-long varint at byte %zu", start);
                    return 1;
                }
                uint8_t b = p[off++];
                val |= (uint64_t)(b & 0x7f) << shift;
                shift += 7;
                if (!(b & 0x80))
                    break;
            }
            if (wt == 2) {
                if (val > n - off) {
                    snprintf(why, whylen, "field %llu at byte %zu needs %llu bytes, "
                             "the file ends after %zu", (unsigned long long)field, start,
                             (unsigned long long)val, n - off);
                    return 2;
                }
                off += (size_t)val;
            }
            break;
        case 1:
        case 5: {
            size_t w = wt == 1 ? 8 : 4;
            if (w > n - off) {
                snprintf(why, whylen, "field %llu at byte %zu is cut off",
                         (unsigned long long)field, start);
                return 2;
            }
            off += w;
            break;
        }
        }
    }
    if (!seen_core) {
        snprintf(why, whylen, "no ir_version, graph or opset_import field");
        return 1;
    }
    return 0;
}

/* --- opsets -------------------------------------------------------------- */

static int is_default_domain(const char *d)
{
    return d == NULL || d[0] == '\0' || strcmp(d, "ai.onnx") == 0;
}

static ipu_status_t load_opsets(load_ctx_t *c, const Onnx__ModelProto *m)
{
    ipu_graph_t *g = c->g;
    int have_default = 0;
    if (m->n_opset_import > 0) {
        g->opsets = calloc(m->n_opset_import, sizeof(*g->opsets));
        if (g->opsets == NULL)
            return NOMEM(c);
    }
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        const char *dom = is_default_domain(o->domain) ? "" : o->domain;
        g->opsets[i].domain = strdup(dom);
        if (g->opsets[i].domain == NULL)
            return NOMEM(c);
        g->opsets[i].version = o->has_version ? o->version : 1;
        g->n_opsets++;
        if (dom[0] != '\0')
            continue;
        int64_t v = g->opsets[i].version;
        if (have_default && v != g->opset)
            return ipu_error(IPU_ERR_INVALID_MODEL, "%s: the model imports the default ONNX "
                             "domain twice, as opset %lld and %lld", c->path,
                             (long long)g->opset, (long long)v);
        if (v < IPU_OPSET_MIN || v > IPU_OPSET_MAX)
            return ipu_error(IPU_ERR_UNSUPPORTED, "%s: ONNX opset %lld is not supported "
                             "(supported: opsets %d to %d of the default domain); re-export "
                             "the model with an opset in that range, e.g. "
                             "torch.onnx.export(..., opset_version=13)",
                             c->path, (long long)v, IPU_OPSET_MIN, IPU_OPSET_MAX);
        g->opset = v;
        have_default = 1;
    }
    if (!have_default)
        return ipu_error(IPU_ERR_INVALID_MODEL, "%s: the model has no opset_import for the "
                         "default ONNX domain (truncated or damaged file?); re-export it",
                         c->path);
    return IPU_OK;
}

static int domain_opset(const ipu_graph_t *g, const char *dom)
{
    for (int i = 0; i < g->n_opsets; i++)
        if (strcmp(g->opsets[i].domain, dom) == 0)
            return (int)g->opsets[i].version;
    return 1;
}

/* --- inputs, outputs ------------------------------------------------------ */

/* Set v's declared dtype and shape from a ValueInfoProto. */
static ipu_status_t apply_value_info(load_ctx_t *c, const Onnx__ValueInfoProto *vi,
                                     ipu_value_t *v, const char *role)
{
    const Onnx__TypeProto *tp = vi->type;
    if (tp == NULL || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET)
        return IPU_OK; /* undeclared: left to inference */
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || tp->tensor_type == NULL)
        return ipu_error(IPU_ERR_UNSUPPORTED, "%s: graph %s '%s' is not a tensor "
                         "(sequence, map, optional and sparse types are not supported)",
                         c->path, role, v->name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    ipu_dtype_t dt = tt->has_elem_type ? (ipu_dtype_t)tt->elem_type : IPU_DTYPE_UNDEFINED;
    if (dt != IPU_DTYPE_UNDEFINED && ipu_dtype_size(dt) == 0)
        return ipu_error(IPU_ERR_UNSUPPORTED, "%s: graph %s '%s' has element type %d (%s), "
                         "which is not supported (numeric tensors only)", c->path, role,
                         v->name, (int)dt, dt == IPU_DTYPE_STRING ? "string" : "complex or unknown");
    v->dtype = dt;
    if (tt->shape == NULL)
        return IPU_OK;
    if (tt->shape->n_dim > IPU_MAX_RANK)
        return ipu_error(IPU_ERR_UNSUPPORTED, "%s: graph %s '%s' has rank %zu; at most %d "
                         "is supported", c->path, role, v->name, tt->shape->n_dim, IPU_MAX_RANK);
    int rank = (int)tt->shape->n_dim;
    for (int d = 0; d < rank; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
        v->dims[d] = -1;
        free(v->dim_param[d]);
        v->dim_param[d] = NULL;
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            dim->dim_value >= 0) {
            v->dims[d] = dim->dim_value;
        } else if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   dim->dim_param && dim->dim_param[0]) {
            if ((v->dim_param[d] = strdup(dim->dim_param)) == NULL)
                return NOMEM(c);
        }
    }
    v->rank = rank;
    return IPU_OK;
}

static ipu_status_t load_initializers(load_ctx_t *c, const Onnx__GraphProto *gp)
{
    ipu_graph_t *g = c->g;
    if (gp->n_sparse_initializer > 0)
        return ipu_error(IPU_ERR_UNSUPPORTED, "%s: sparse initializer '%s' is not supported; "
                         "store it dense", c->path, ipu_pbstr(gp->sparse_initializer[0]->values ?
                         gp->sparse_initializer[0]->values->name : NULL));
    size_t r = 0;
    for (size_t i = 0; i < gp->n_initializer; i++) {
        Onnx__TensorProto *tp = gp->initializer[i];
        const char *name = ipu_pbstr(tp->name);
        if (name[0] == '\0')
            return ipu_error(IPU_ERR_INVALID_MODEL, "%s: initializer #%zu has no name",
                             c->path, i);
        int idx = ipu_graph_value(g, name);
        if (idx < 0)
            return NOMEM(c);
        if (g->values[idx].flags & IPU_VALUE_INITIALIZER)
            return ipu_error(IPU_ERR_INVALID_MODEL, "%s: initializer '%s' is given twice",
                             c->path, name);
        char what[300];
        snprintf(what, sizeof(what), "initializer '%s'", name);
        ipu_tensor_t t;
        int kind;
        /* raw_data left in the file: point at it there (refs are in
         * initializer order) */
        int deferred = r < c->n_refs && c->refs[r].init_index == i;
        if (deferred) {
            tp->has_raw_data = 1;
            tp->raw_data.data = (uint8_t *)(uintptr_t)(c->file + c->refs[r].offset);
            tp->raw_data.len = c->refs[r].len;
            r++;
        }
        c->tp.defer_raw = deferred;
        ipu_status_t st = ipu_tp_decode(&c->tp, tp, what, &t, &kind);
        c->tp.defer_raw = 0;
        if (deferred) { /* not protobuf-c's to free */
            tp->has_raw_data = 0;
            tp->raw_data.data = NULL;
            tp->raw_data.len = 0;
        }
        if (st != IPU_OK)
            return st;
        /* copied: give the parsed values back now (typed fields too) */
#define GIVE_BACK(f) do { free(tp->f##_data); tp->f##_data = NULL; tp->n_##f##_data = 0; } while (0)
        GIVE_BACK(float);
        GIVE_BACK(int32);
        GIVE_BACK(int64);
        GIVE_BACK(double);
        GIVE_BACK(uint64);
#undef GIVE_BACK
        if (tp->has_raw_data && tp->raw_data.data != NULL) {
            /* copied: give the parsed bytes back now, so a 2 GiB model
             * needs about 2 GiB, not twice that */
            free(tp->raw_data.data);
            tp->raw_data.data = NULL;
            tp->raw_data.len = 0;
        }
        ipu_value_t *v = &g->values[idx];
        ipu_value_set_shape(v, t.dtype, t.rank, t.dims);
        v->data = t.data;
        v->data_kind = kind;
        v->flags |= IPU_VALUE_INITIALIZER;
    }
    return IPU_OK;
}

static ipu_status_t load_inputs(load_ctx_t *c, const Onnx__GraphProto *gp)
{
    ipu_graph_t *g = c->g;
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        const char *name = ipu_pbstr(vi->name);
        if (name[0] == '\0')
            return ipu_error(IPU_ERR_INVALID_MODEL, "%s: graph input #%zu has no name", c->path, i);
        int idx = ipu_graph_find_value(g, name);
        if (idx >= 0 && (g->values[idx].flags & IPU_VALUE_INITIALIZER)) {
            /* an input with a default (IR < 4 lists every initializer so):
             * a constant unless the user feeds it (ipu_graph_feed_default) */
            ipu_status_t st = ipu_graph_add_default(g, name);
            if (st != IPU_OK)
                return st;
            continue;
        }
        if (idx >= 0 && (g->values[idx].flags & IPU_VALUE_INPUT))
            return ipu_error(IPU_ERR_INVALID_MODEL, "%s: graph input '%s' is listed twice",
                             c->path, name);
        ipu_status_t st = ipu_graph_add_input(g, name);
        if (st != IPU_OK)
            return st;
        idx = ipu_graph_find_value(g, name);
        if ((st = apply_value_info(c, vi, &g->values[idx], "input")) != IPU_OK)
            return st;
    }
    return IPU_OK;
}

static ipu_status_t load_outputs(load_ctx_t *c, const Onnx__GraphProto *gp)
{
    ipu_graph_t *g = c->g;
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        const char *name = ipu_pbstr(vi->name);
        if (name[0] == '\0')
            return ipu_error(IPU_ERR_INVALID_MODEL, "%s: graph output #%zu has no name", c->path, i);
        ipu_status_t st = ipu_graph_add_output(g, name);
        if (st != IPU_OK)
            return st;
        ipu_value_t *v = &g->values[ipu_graph_find_value(g, name)];
        if (v->flags & (IPU_VALUE_INPUT | IPU_VALUE_INITIALIZER))
            continue; /* keep the input's / constant's own shape */
        if ((st = apply_value_info(c, vi, v, "output")) != IPU_OK)
            return st;
    }
    return IPU_OK;
}

/* --- nodes and attributes ------------------------------------------------ */

static ipu_attr_type_t guess_attr_type(const Onnx__AttributeProto *a)
{
    if (a->n_floats) return IPU_ATTR_FLOATS;
    if (a->n_ints) return IPU_ATTR_INTS;
    if (a->n_strings) return IPU_ATTR_STRINGS;
    if (a->n_tensors) return IPU_ATTR_TENSORS;
    if (a->n_graphs) return IPU_ATTR_GRAPHS;
    if (a->t) return IPU_ATTR_TENSOR;
    if (a->g) return IPU_ATTR_GRAPH;
    if (a->has_s) return IPU_ATTR_STRING;
    if (a->has_f) return IPU_ATTR_FLOAT;
    if (a->has_i) return IPU_ATTR_INT;
    return IPU_ATTR_UNDEFINED;
}

static char *dup_bytes(const ProtobufCBinaryData *b)
{
    char *s = malloc(b->len + 1);
    if (s == NULL)
        return NULL;
    if (b->len)
        memcpy(s, b->data, b->len);
    s[b->len] = '\0';
    return s;
}

static ipu_status_t decode_attr_tensors(load_ctx_t *c, const ipu_node_t *n, ipu_attr_t *a,
                                        Onnx__TensorProto *const *tps, size_t cnt)
{
    if ((a->tensors = calloc(cnt ? cnt : 1, sizeof(ipu_tensor_t))) == NULL)
        return NOMEM(c);
    a->n = cnt;
    ipu_tp_ctx_t tc = c->tp;
    tc.g = NULL; /* attribute tensors are owned copies */
    for (size_t k = 0; k < cnt; k++) {
        char what[600];
        snprintf(what, sizeof(what), "attribute '%s' of node '%s' (%s)", a->name, n->name, n->op_type);
        int kind;
        ipu_status_t st = ipu_tp_decode(&tc, tps[k], what, &a->tensors[k], &kind);
        if (st != IPU_OK)
            return st;
    }
    return IPU_OK;
}

/* Fill a (zeroed, already counted in n->n_attrs) from ap. */
static ipu_status_t load_attr(load_ctx_t *c, const ipu_node_t *n, const Onnx__AttributeProto *ap,
                              ipu_attr_t *a)
{
    if ((a->name = strdup(ipu_pbstr(ap->name))) == NULL)
        return NOMEM(c);
    ipu_attr_type_t type = ap->has_type ? (ipu_attr_type_t)ap->type : guess_attr_type(ap);
    a->type = type;
    switch (type) {
    case IPU_ATTR_FLOAT:
        a->f = ap->f;
        return IPU_OK;
    case IPU_ATTR_INT:
        a->i = ap->i;
        return IPU_OK;
    case IPU_ATTR_STRING:
        if ((a->s = dup_bytes(&ap->s)) == NULL)
            return NOMEM(c);
        a->s_len = ap->s.len;
        return IPU_OK;
    case IPU_ATTR_TENSOR:
        if (ap->t == NULL)
            return ipu_error(IPU_ERR_INVALID_MODEL, "%s: TENSOR attribute '%s' of node '%s' (%s) "
                             "has no tensor", c->path, a->name, n->name, n->op_type);
        return decode_attr_tensors(c, n, a, &ap->t, 1);
    case IPU_ATTR_FLOATS:
        if ((a->floats = malloc((ap->n_floats ? ap->n_floats : 1) * sizeof(float))) == NULL)
            return NOMEM(c);
        if (ap->n_floats)
            memcpy(a->floats, ap->floats, ap->n_floats * sizeof(float));
        a->n = ap->n_floats;
        return IPU_OK;
    case IPU_ATTR_INTS:
        if ((a->ints = malloc((ap->n_ints ? ap->n_ints : 1) * sizeof(int64_t))) == NULL)
            return NOMEM(c);
        if (ap->n_ints)
            memcpy(a->ints, ap->ints, ap->n_ints * sizeof(int64_t));
        a->n = ap->n_ints;
        return IPU_OK;
    case IPU_ATTR_STRINGS:
        if ((a->strings = calloc(ap->n_strings ? ap->n_strings : 1, sizeof(char *))) == NULL)
            return NOMEM(c);
        a->n = ap->n_strings;
        for (size_t k = 0; k < ap->n_strings; k++)
            if ((a->strings[k] = dup_bytes(&ap->strings[k])) == NULL)
                return NOMEM(c);
        return IPU_OK;
    case IPU_ATTR_TENSORS:
        return decode_attr_tensors(c, n, a, ap->tensors, ap->n_tensors);
    case IPU_ATTR_GRAPHS:
        a->n = ap->n_graphs; /* the bodies are not kept */
        return IPU_OK;
    case IPU_ATTR_GRAPH:
    case IPU_ATTR_SPARSE_TENSOR:
    case IPU_ATTR_SPARSE_TENSORS:
    case IPU_ATTR_TYPE_PROTO:
    case IPU_ATTR_TYPE_PROTOS:
        return IPU_OK; /* kept with its type only */
    case IPU_ATTR_UNDEFINED:
        break;
    }
    return ipu_error(IPU_ERR_INVALID_MODEL, "%s: attribute '%s' of node '%s' (%s) has an "
                     "unknown type %d", c->path, a->name, n->name, n->op_type, (int)type);
}

/* A pipeline annotation (__pipeline_stage, __ipu_number) must be an INT, as
 * PopART reads it: one of another type would otherwise be ignored and the
 * model partitioned as if it had none. */
static ipu_status_t check_annotation(load_ctx_t *c, const ipu_node_t *n, const ipu_attr_t *a)
{
    if (a->type == IPU_ATTR_INT ||
        (strcmp(a->name, "__pipeline_stage") != 0 && strcmp(a->name, "__ipu_number") != 0))
        return IPU_OK;
    return ipu_error(IPU_ERR_INVALID_MODEL, "%s: node '%s' (%s): attribute %s has type %s; it must be an "
                     "INT, as PopART reads it", c->path, n->name, n->op_type, a->name, ipu_attr_type_name(a->type));
}

static ipu_status_t load_nodes(load_ctx_t *c, const Onnx__GraphProto *gp)
{
    ipu_graph_t *g = c->g;
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        const char *op_type = ipu_pbstr(np->op_type);
        if (op_type[0] == '\0')
            return ipu_error(IPU_ERR_INVALID_MODEL, "%s: node #%zu ('%s') has no op_type",
                             c->path, i, ipu_pbstr(np->name));
        if (np->n_input > INT_MAX || np->n_output > INT_MAX || np->n_attribute > INT_MAX)
            return ipu_error(IPU_ERR_INVALID_MODEL, "%s: node #%zu has too many inputs, "
                             "outputs or attributes", c->path, i);
        /* protobuf-c gives NULL-free string arrays; "" is an absent optional */
        int idx = ipu_graph_add_node(g, op_type, ipu_pbstr(np->name),
                                     (int)np->n_input, (const char *const *)np->input,
                                     (int)np->n_output, (const char *const *)np->output);
        if (idx < 0)
            return NOMEM(c);
        ipu_node_t *n = &g->nodes[idx];
        const char *dom = is_default_domain(np->domain) ? "" : np->domain;
        free(n->domain);
        if ((n->domain = strdup(dom)) == NULL)
            return NOMEM(c);
        n->opset = dom[0] ? domain_opset(g, dom) : (int)g->opset;
        if (np->n_attribute == 0)
            continue;
        if ((n->attrs = calloc(np->n_attribute, sizeof(ipu_attr_t))) == NULL)
            return NOMEM(c);
        for (size_t k = 0; k < np->n_attribute; k++) {
            n->n_attrs++; /* freed with the graph even if half-filled */
            ipu_status_t st = load_attr(c, n, np->attribute[k], &n->attrs[k]);
            if (st == IPU_OK)
                st = check_annotation(c, n, &n->attrs[k]);
            if (st != IPU_OK)
                return st;
        }
    }
    return IPU_OK;
}

/* A node input that no node produces and that is neither a graph input nor
 * an initializer. ipu_graph_toposort() finds it too; this names both usual
 * causes. */
static ipu_status_t check_missing(load_ctx_t *c)
{
    ipu_graph_t *g = c->g;
    unsigned char *produced = calloc((size_t)g->n_values + 1, 1);
    if (produced == NULL)
        return NOMEM(c);
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_outputs; k++)
            if (g->nodes[i].outputs[k] >= 0)
                produced[g->nodes[i].outputs[k]] = 1;
    ipu_status_t st = IPU_OK;
    for (int i = 0; i < g->n_nodes && st == IPU_OK; i++) {
        const ipu_node_t *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k];
            if (v < 0 || produced[v] ||
                (g->values[v].flags & (IPU_VALUE_INPUT | IPU_VALUE_INITIALIZER)))
                continue;
            st = ipu_error(IPU_ERR_INVALID_MODEL,
                           "%s: input '%s' of node '%s' (%s) is missing: no initializer, "
                           "graph input or node output has that name (missing initializer "
                           "or dangling input); add the initializer or fix the name",
                           c->path, g->values[v].name, n->name, n->op_type);
            break;
        }
    }
    free(produced);
    return st;
}

ipu_status_t ipu_value_materialise(ipu_graph_t *g, int v)
{
    ipu_value_t *val = &g->values[v];
    if (val->data_kind != IPU_CONST_DEFERRED)
        return IPU_OK;
    ipu_tensor_t t = ipu_value_tensor(g, v);
    size_t n = ipu_tensor_nbytes(&t), off = (size_t)((const uint8_t *)t.data - g->src_base);
    t.data = NULL;
    if (ipu_tensor_alloc(&t) != IPU_OK)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory copying initializer '%s' (%zu bytes) "
                         "out of the model file", val->name, n);
    /* read, not copied from the mapping: the file's pages never enter this
     * process, and a file truncated meanwhile is an error, not SIGBUS */
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(g->src_fd, (char *)t.data + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = r < 0 ? errno : 0;
            free(t.data);
            return ipu_error(IPU_ERR_IO, "%s: initializer '%s': %s reading %zu bytes at offset %zu; "
                             "the model file changed while it was loaded: do not replace or "
                             "truncate a model while ipu-exec runs", g->src_path ? g->src_path : "model",
                             val->name, e ? strerror(e) : "end of file", n, off);
        }
        got += (size_t)r;
    }
    val->data = t.data;
    val->data_kind = IPU_CONST_OWNED;
    return IPU_OK;
}

ipu_status_t ipu_graph_materialise(ipu_graph_t *g)
{
    for (int v = 0; v < g->n_values; v++) {
        ipu_status_t st = ipu_value_materialise(g, v);
        if (st != IPU_OK)
            return st;
    }
    if (g->src_fd >= 0) { /* nothing deferred is left */
        close(g->src_fd);
        g->src_fd = -1;
    }
    return IPU_OK;
}

ipu_status_t ipu_model_load(const char *path, ipu_graph_t **out)
{
    ipu_status_t st = ipu_model_load_deferred(path, out);
    if (st == IPU_OK && (st = ipu_graph_materialise(*out)) != IPU_OK) {
        ipu_graph_free(*out);
        *out = NULL;
    }
    return st;
}

ipu_status_t ipu_model_load_deferred(const char *path, ipu_graph_t **out)
{
    const uint8_t *buf = NULL;
    size_t len = 0;
    int fd = -1; /* the file the mapping came from: deferred bytes are read from it */
    ipu_status_t st = ipu_file_slurp(path, "model", IPU_MAX_PROTO_BYTES, IPU_ERR_INVALID_MODEL,
                                     &buf, &len, &fd);
    if (st != IPU_OK)
        return st;
    if (len == 0) {
        close(fd);
        return ipu_error(IPU_ERR_INVALID_MODEL, "%s: the model file is empty; "
                         "export the model again", path);
    }
    char why[256];
    int bad = scan_model_bytes(buf, len, why, sizeof(why));
    if (bad) {
        ipu_file_release(buf, len);
        close(fd);
        if (bad == 2)
            return ipu_error(IPU_ERR_INVALID_MODEL, "%s: truncated model file (%s); the file "
                             "is incomplete, copy or export it again", path, why);
        return ipu_error(IPU_ERR_INVALID_MODEL, "%s: not an ONNX model (not a ModelProto "
                         "protobuf: %s); pass an .onnx file", path, why);
    }
    /* large raw_data stays in the file: protobuf-c would copy it all */
    uint8_t *stripped = NULL;
    size_t slen = 0, n_refs = 0;
    ipu_rawref_t *refs = NULL;
    int strip = ipu_rawskip_strip(buf, len, DEFER_MIN_BYTES, &stripped, &slen, &refs, &n_refs) == 0;
    Onnx__ModelProto *m = strip ? onnx__model_proto__unpack(NULL, slen, stripped)
                                : onnx__model_proto__unpack(NULL, len, buf);
    free(stripped);
    if (!strip || m == NULL) {
        ipu_file_release(buf, len);
        buf = NULL;
        close(fd);
        fd = -1;
        free(refs);
        refs = NULL;
        n_refs = 0;
    }
    if (m == NULL)
        return ipu_error(IPU_ERR_INVALID_MODEL, "%s: not a valid ONNX model (the protobuf "
                         "is damaged or truncated inside); export or copy it again", path);

    ipu_graph_t *g = NULL;
    char *dirbuf = NULL;
    int kept = 0; /* buf is in g->maps */
    const Onnx__GraphProto *gp = m->graph;
    if (gp == NULL) {
        st = ipu_error(IPU_ERR_INVALID_MODEL, "%s: the model has no graph; it is empty, "
                       "truncated or not an ONNX model, export it again", path);
        goto out;
    }
    g = ipu_graph_new(ipu_pbstr(gp->name));
    dirbuf = strdup(path);
    if (g == NULL || dirbuf == NULL) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "%s: out of memory loading the model", path);
        goto out;
    }
    free(g->dir);
    if ((g->dir = strdup(dirname(dirbuf))) == NULL) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "%s: out of memory loading the model", path);
        goto out;
    }
    if (buf != NULL) { /* deferred initializers point into it: the graph keeps it */
        kept = 1;         /* (unmapped by the call when it fails) */
        if ((st = ipu_graph_keep_mapping(g, (void *)(uintptr_t)buf, len)) != IPU_OK)
            goto out;
        g->src_base = buf;
        g->src_fd = fd; /* the graph's now */
        fd = -1;
    }
    if ((g->src_path = strdup(path)) == NULL) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "%s: out of memory loading the model", path);
        goto out;
    }
    load_ctx_t c = {
        .path = path, .g = g,
        .tp = {.file = path, .dir = g->dir, .g = g, .bad = IPU_ERR_INVALID_MODEL, .steal_raw = 1},
        .file = buf, .refs = refs, .n_refs = n_refs,
    };
    if ((st = load_opsets(&c, m)) != IPU_OK ||
        (st = load_initializers(&c, gp)) != IPU_OK ||
        (st = load_inputs(&c, gp)) != IPU_OK ||
        (st = load_nodes(&c, gp)) != IPU_OK ||
        (st = load_outputs(&c, gp)) != IPU_OK ||
        (st = check_missing(&c)) != IPU_OK)
        goto out;
    if ((st = ipu_graph_toposort(g)) != IPU_OK) {
        st = ipu_error_prefix(st, path);
        goto out;
    }
out:
    onnx__model_proto__free_unpacked(m, NULL);
    if (buf != NULL && !kept)
        ipu_file_release(buf, len);
    if (fd >= 0)
        close(fd);
    free(refs);
    free(dirbuf);
    if (st != IPU_OK) {
        ipu_graph_free(g);
        return st;
    }
    *out = g;
    return IPU_OK;
}
