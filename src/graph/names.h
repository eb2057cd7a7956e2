/* The graph's index of values by name, kept by graph/ir.c: an open-
 * addressing hash table of value indices (not pointers: adding a value may
 * move g->values), so that ipu_graph_find_value is O(1) amortised; a scan
 * of every value made loading a model of n values O(n^2).
 * Values are never renamed; a pass that renamed one would have to rebuild
 * the index (ipu_names_rebuild). Private to graph/. */
#ifndef IPU_GRAPH_NAMES_H
#define IPU_GRAPH_NAMES_H

#include "graph/ir.h"

/* Index of the value called name, or -1. */
int ipu_names_find(const ipu_graph_t *g, const char *name);
/* Enter value idx (just added) under its name. Returns 0, or -1 on ENOMEM. */
int ipu_names_insert(ipu_graph_t *g, int idx);
/* Rebuild the index from g->values. Returns 0, or -1 on ENOMEM. */
int ipu_names_rebuild(ipu_graph_t *g);

#endif
