/* Graph IR: construction, attribute access and views. */
#include "graph/ir.h"
#include "graph/names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static char *dup_str(const char *s)
{
    return strdup(s ? s : "");
}

ipu_graph_t *ipu_graph_new(const char *name)
{
    ipu_graph_t *g = calloc(1, sizeof(*g));
    if (g == NULL)
        return NULL;
    g->name = dup_str(name);
    g->dir = dup_str(".");
    g->opset = 13;
    g->src_fd = -1;
    if (g->name == NULL || g->dir == NULL) {
        ipu_graph_free(g);
        return NULL;
    }
    return g;
}

static void free_attr(ipu_attr_t *a)
{
    free(a->name);
    free(a->s);
    free(a->floats);
    free(a->ints);
    for (size_t k = 0; a->strings && k < a->n; k++)
        free(a->strings[k]);
    free(a->strings);
    if (a->tensors) {
        size_t nt = a->type == IPU_ATTR_TENSOR ? 1 : a->n;
        for (size_t k = 0; k < nt; k++)
            free(a->tensors[k].data);
        free(a->tensors);
    }
}

#include "graph/op.h"

void ipu_graph_unmap(ipu_graph_t *g)
{
    for (int i = 0; i < g->n_maps; i++)
        munmap(g->maps[i].addr, g->maps[i].len);
    g->n_maps = 0;
}

void ipu_graph_free(ipu_graph_t *g)
{
    if (g == NULL)
        return;
    for (int i = 0; i < g->n_nodes; i++) {
        ipu_node_t *n = &g->nodes[i];
        if (n->op && n->op->fini && n->state)
            n->op->fini(n);
        free(n->name);
        free(n->op_type);
        free(n->domain);
        free(n->inputs);
        free(n->outputs);
        for (int k = 0; k < n->n_attrs; k++)
            free_attr(&n->attrs[k]);
        free(n->attrs);
    }
    for (int i = 0; i < g->n_values; i++) {
        ipu_value_t *v = &g->values[i];
        free(v->name);
        for (int d = 0; d < IPU_MAX_RANK; d++)
            free(v->dim_param[d]);
        if (v->data_kind == IPU_CONST_OWNED)
            free(v->data);
    }
    for (int i = 0; i < g->n_opsets; i++)
        free(g->opsets[i].domain);
    ipu_graph_unmap(g);
    free(g->maps);
    if (g->src_fd >= 0)
        close(g->src_fd);
    free(g->src_path);
    free(g->opsets);
    free(g->values);
    free(g->names);
    free(g->nodes);
    free(g->inputs);
    free(g->defaults);
    free(g->outputs);
    free(g->order);
    free(g->name);
    free(g->dir);
    free(g);
}

int ipu_graph_find_value(const ipu_graph_t *g, const char *name)
{
    return ipu_names_find(g, name);
}

int ipu_graph_value(ipu_graph_t *g, const char *name)
{
    if (name == NULL || name[0] == '\0')
        return -1;
    int idx = ipu_graph_find_value(g, name);
    if (idx >= 0)
        return idx;
    if (g->n_values == g->cap_values) {
        int cap = g->cap_values ? g->cap_values * 2 : 64;
        ipu_value_t *nv = realloc(g->values, (size_t)cap * sizeof(*nv));
        if (nv == NULL)
            return -1;
        g->values = nv;
        g->cap_values = cap;
    }
    ipu_value_t *v = &g->values[g->n_values];
    memset(v, 0, sizeof(*v));
    v->name = dup_str(name);
    if (v->name == NULL)
        return -1;
    v->rank = -1;
    v->producer = -1;
    if (ipu_names_insert(g, g->n_values++) != 0) {
        free(v->name);
        g->n_values--;
        return -1;
    }
    return g->n_values - 1;
}

void ipu_value_set_shape(ipu_value_t *v, ipu_dtype_t dt, int rank, const int64_t *dims)
{
    v->dtype = dt;
    v->rank = rank;
    for (int i = 0; i < rank && i < IPU_MAX_RANK; i++)
        v->dims[i] = dims[i];
}

int ipu_value_accepts(const ipu_value_t *v, const ipu_tensor_t *t)
{
    if (v->dtype != IPU_DTYPE_UNDEFINED && t->dtype != v->dtype)
        return 0;
    if (v->rank < 0)
        return 1;
    if (t->rank != v->rank)
        return 0;
    for (int d = 0; d < v->rank; d++)
        if (v->dims[d] >= 0 && v->dims[d] != t->dims[d])
            return 0;
    return 1;
}

char *ipu_value_describe(const ipu_value_t *v, char *buf, size_t len)
{
    size_t off = (size_t)snprintf(buf, len, "%s[%s", ipu_dtype_name(v->dtype), v->rank < 0 ? "any shape" : "");
    for (int d = 0; d < v->rank && off < len; d++)
        off += v->dims[d] >= 0 ? (size_t)snprintf(buf + off, len - off, d ? ",%lld" : "%lld", (long long)v->dims[d])
                               : (size_t)snprintf(buf + off, len - off, d ? ",%s" : "%s",
                                                  v->dim_param[d] ? v->dim_param[d] : "?");
    if (off < len)
        snprintf(buf + off, len - off, "]");
    return buf;
}

ipu_status_t ipu_value_set_const(ipu_value_t *v, ipu_dtype_t dt, int rank,
                                 const int64_t *dims, const void *data)
{
    ipu_tensor_t t = {.dtype = dt, .rank = rank};
    if (rank > 0)
        memcpy(t.dims, dims, (size_t)rank * sizeof(int64_t));
    ipu_status_t st = ipu_tensor_alloc(&t);
    if (st != IPU_OK)
        return st;
    if (ipu_tensor_nbytes(&t))
        memcpy(t.data, data, ipu_tensor_nbytes(&t));
    if (v->data_kind == IPU_CONST_OWNED)
        free(v->data);
    ipu_value_set_shape(v, dt, rank, dims);
    v->data = t.data;
    v->data_kind = IPU_CONST_OWNED;
    return IPU_OK;
}

int ipu_graph_add_node(ipu_graph_t *g, const char *op_type, const char *name,
                       int n_in, const char *const *inputs,
                       int n_out, const char *const *outputs)
{
    if (g->n_nodes == g->cap_nodes) {
        int cap = g->cap_nodes ? g->cap_nodes * 2 : 64;
        ipu_node_t *nn = realloc(g->nodes, (size_t)cap * sizeof(*nn));
        if (nn == NULL)
            return -1;
        g->nodes = nn;
        g->cap_nodes = cap;
    }
    int idx = g->n_nodes;
    ipu_node_t *n = &g->nodes[idx];
    memset(n, 0, sizeof(*n));
    g->n_nodes++; /* freed with the graph from here on */
    n->op_type = dup_str(op_type);
    n->domain = dup_str("");
    n->opset = (int)g->opset;
    if (name && name[0]) {
        n->name = dup_str(name);
    } else {
        char buf[256];
        snprintf(buf, sizeof(buf), "%s_%d", op_type, idx);
        n->name = dup_str(buf);
    }
    n->inputs = calloc((size_t)(n_in > 0 ? n_in : 1), sizeof(int));
    n->outputs = calloc((size_t)(n_out > 0 ? n_out : 1), sizeof(int));
    if (!n->op_type || !n->domain || !n->name || !n->inputs || !n->outputs)
        return -1;
    n->n_inputs = n_in;
    n->n_outputs = n_out;
    for (int i = 0; i < n_in; i++) {
        n->inputs[i] = ipu_graph_value(g, inputs[i]);
        n = &g->nodes[idx];
        if (n->inputs[i] < 0 && inputs[i] && inputs[i][0])
            return -1;
    }
    for (int i = 0; i < n_out; i++) {
        n->outputs[i] = ipu_graph_value(g, outputs[i]);
        if (n->outputs[i] < 0 && outputs[i] && outputs[i][0])
            return -1;
    }
    return idx;
}

static ipu_attr_t *new_attr(ipu_node_t *n, const char *name, ipu_attr_type_t type)
{
    ipu_attr_t *na = realloc(n->attrs, (size_t)(n->n_attrs + 1) * sizeof(*na));
    if (na == NULL)
        return NULL;
    n->attrs = na;
    ipu_attr_t *a = &na[n->n_attrs];
    memset(a, 0, sizeof(*a));
    a->name = dup_str(name);
    if (a->name == NULL)
        return NULL;
    a->type = type;
    n->n_attrs++;
    return a;
}

#define NOMEM ipu_error(IPU_ERR_NO_MEMORY, "out of memory adding an attribute")

ipu_status_t ipu_node_add_attr_int(ipu_node_t *n, const char *name, int64_t v)
{
    ipu_attr_t *a = new_attr(n, name, IPU_ATTR_INT);
    if (a == NULL)
        return NOMEM;
    a->i = v;
    return IPU_OK;
}

ipu_status_t ipu_node_add_attr_float(ipu_node_t *n, const char *name, float v)
{
    ipu_attr_t *a = new_attr(n, name, IPU_ATTR_FLOAT);
    if (a == NULL)
        return NOMEM;
    a->f = v;
    return IPU_OK;
}

ipu_status_t ipu_node_add_attr_ints(ipu_node_t *n, const char *name, size_t cnt, const int64_t *v)
{
    ipu_attr_t *a = new_attr(n, name, IPU_ATTR_INTS);
    if (a == NULL || (a->ints = malloc((cnt ? cnt : 1) * sizeof(int64_t))) == NULL)
        return NOMEM;
    memcpy(a->ints, v, cnt * sizeof(int64_t));
    a->n = cnt;
    return IPU_OK;
}

ipu_status_t ipu_node_add_attr_floats(ipu_node_t *n, const char *name, size_t cnt, const float *v)
{
    ipu_attr_t *a = new_attr(n, name, IPU_ATTR_FLOATS);
    if (a == NULL || (a->floats = malloc((cnt ? cnt : 1) * sizeof(float))) == NULL)
        return NOMEM;
    memcpy(a->floats, v, cnt * sizeof(float));
    a->n = cnt;
    return IPU_OK;
}

ipu_status_t ipu_node_add_attr_string(ipu_node_t *n, const char *name, const char *v)
{
    ipu_attr_t *a = new_attr(n, name, IPU_ATTR_STRING);
    if (a == NULL || (a->s = dup_str(v)) == NULL)
        return NOMEM;
    a->s_len = strlen(v);
    return IPU_OK;
}

ipu_status_t ipu_node_add_attr_tensor(ipu_node_t *n, const char *name, const ipu_tensor_t *t)
{
    ipu_attr_t *a = new_attr(n, name, IPU_ATTR_TENSOR);
    if (a == NULL || (a->tensors = calloc(1, sizeof(ipu_tensor_t))) == NULL)
        return NOMEM;
    a->n = 1;
    a->tensors[0] = *t;
    a->tensors[0].data = NULL;
    ipu_status_t st = ipu_tensor_alloc(&a->tensors[0]);
    if (st != IPU_OK)
        return st;
    memcpy(a->tensors[0].data, t->data, ipu_tensor_nbytes(t));
    return IPU_OK;
}

static ipu_status_t append_index(int **arr, int *n, int v)
{
    int *na = realloc(*arr, (size_t)(*n + 1) * sizeof(int));
    if (na == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    na[(*n)++] = v;
    *arr = na;
    return IPU_OK;
}

ipu_status_t ipu_graph_add_input(ipu_graph_t *g, const char *name)
{
    int v = ipu_graph_value(g, name);
    if (v < 0)
        return ipu_error(IPU_ERR_INVALID_MODEL, "graph input with an empty name");
    g->values[v].flags |= IPU_VALUE_INPUT;
    return append_index(&g->inputs, &g->n_inputs, v);
}

ipu_status_t ipu_graph_add_output(ipu_graph_t *g, const char *name)
{
    int v = ipu_graph_value(g, name);
    if (v < 0)
        return ipu_error(IPU_ERR_INVALID_MODEL, "graph output with an empty name");
    g->values[v].flags |= IPU_VALUE_OUTPUT;
    return append_index(&g->outputs, &g->n_outputs, v);
}

ipu_status_t ipu_graph_add_default(ipu_graph_t *g, const char *name)
{
    int v = ipu_graph_find_value(g, name);
    if (v < 0 || !(g->values[v].flags & IPU_VALUE_INITIALIZER))
        return ipu_error(IPU_ERR_INVALID_ARG, "graph input '%s' has no initializer", name);
    for (int j = 0; j < g->n_defaults; j++)
        if (g->defaults[j] == v)
            return IPU_OK; /* listed twice: one input */
    return append_index(&g->defaults, &g->n_defaults, v);
}

ipu_status_t ipu_graph_feed_default(ipu_graph_t *g, int j)
{
    ipu_value_t *v = &g->values[g->defaults[j]];
    if (v->flags & IPU_VALUE_INPUT)
        return IPU_OK;
    if (v->data_kind == IPU_CONST_OWNED)
        free(v->data);
    v->data = NULL;
    v->data_kind = IPU_CONST_NONE;
    v->flags = (v->flags & ~(unsigned)IPU_VALUE_INITIALIZER) | IPU_VALUE_INPUT;
    return append_index(&g->inputs, &g->n_inputs, g->defaults[j]);
}

const ipu_attr_t *ipu_attr_find(const ipu_node_t *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

int ipu_node_stage(const ipu_node_t *n, int64_t *stage)
{
    const ipu_attr_t *a = ipu_attr_find(n, "__pipeline_stage");
    if (a == NULL || a->type != IPU_ATTR_INT)
        a = ipu_attr_find(n, "__ipu_number");
    if (a == NULL || a->type != IPU_ATTR_INT)
        return 0;
    *stage = a->i;
    return 1;
}

const char *ipu_attr_type_name(ipu_attr_type_t type)
{
    static const char *const names[] = {
        "UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS", "STRINGS",
        "TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
    return (unsigned)type < sizeof(names) / sizeof(names[0]) ? names[type] : "UNDEFINED";
}

int64_t ipu_attr_int(const ipu_node_t *n, const char *name, int64_t dflt)
{
    const ipu_attr_t *a = ipu_attr_find(n, name);
    return a && a->type == IPU_ATTR_INT ? a->i : dflt;
}

float ipu_attr_float(const ipu_node_t *n, const char *name, float dflt)
{
    const ipu_attr_t *a = ipu_attr_find(n, name);
    return a && a->type == IPU_ATTR_FLOAT ? a->f : dflt;
}

const char *ipu_attr_string(const ipu_node_t *n, const char *name, const char *dflt)
{
    const ipu_attr_t *a = ipu_attr_find(n, name);
    return a && a->type == IPU_ATTR_STRING ? a->s : dflt;
}

const int64_t *ipu_attr_ints(const ipu_node_t *n, const char *name, size_t *cnt)
{
    const ipu_attr_t *a = ipu_attr_find(n, name);
    if (a == NULL || a->type != IPU_ATTR_INTS) {
        *cnt = 0;
        return NULL;
    }
    *cnt = a->n;
    return a->ints;
}

const float *ipu_attr_floats(const ipu_node_t *n, const char *name, size_t *cnt)
{
    const ipu_attr_t *a = ipu_attr_find(n, name);
    if (a == NULL || a->type != IPU_ATTR_FLOATS) {
        *cnt = 0;
        return NULL;
    }
    *cnt = a->n;
    return a->floats;
}

size_t ipu_value_buffer_bytes(const ipu_value_t *v)
{
    size_t b = (size_t)ipu_shape_numel(v->rank, v->dims) * ipu_dtype_size(v->dtype);
    return v->layout_bytes > b ? v->layout_bytes : b;
}

ipu_tensor_t ipu_value_tensor(const ipu_graph_t *g, int idx)
{
    ipu_tensor_t t = {0};
    if (idx < 0)
        return t;
    const ipu_value_t *v = &g->values[idx];
    t.dtype = v->dtype;
    t.rank = v->rank < 0 ? 0 : v->rank;
    memcpy(t.dims, v->dims, sizeof(t.dims));
    t.data = v->data;
    return t;
}

ipu_value_t *ipu_node_input(const ipu_graph_t *g, const ipu_node_t *n, int i)
{
    if (i < 0 || i >= n->n_inputs || n->inputs[i] < 0)
        return NULL;
    return &g->values[n->inputs[i]];
}

ipu_value_t *ipu_node_output(const ipu_graph_t *g, const ipu_node_t *n, int i)
{
    if (i < 0 || i >= n->n_outputs || n->outputs[i] < 0)
        return NULL;
    return &g->values[n->outputs[i]];
}
