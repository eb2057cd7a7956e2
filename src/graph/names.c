/* The index of values by name (graph/names.h): linear probing over a power-
 * of-two table of value indices (-1 empty), at most half full. */
#include "graph/names.h"

#include "common/hash.h"

#include <stdlib.h>
#include <string.h>

static size_t hash_name(const char *s)
{
    uint64_t h = ipu_fnv1a64(IPU_FNV64_BASIS, s, strlen(s));
    return (size_t)(h ^ (h >> 32));
}

/* The slot holding name, or the empty slot where it would go. */
static size_t probe(const ipu_graph_t *g, const char *name)
{
    size_t mask = g->cap_names - 1, k = hash_name(name) & mask;
    while (g->names[k] >= 0 && strcmp(g->values[g->names[k]].name, name) != 0)
        k = (k + 1) & mask;
    return k;
}

int ipu_names_find(const ipu_graph_t *g, const char *name)
{
    return g->cap_names ? g->names[probe(g, name)] : -1;
}

int ipu_names_rebuild(ipu_graph_t *g)
{
    size_t cap = 64;
    while (cap < 2 * (size_t)g->n_values + 2)
        cap *= 2;
    int *t = malloc(cap * sizeof(int));
    if (t == NULL)
        return -1;
    memset(t, 0xff, cap * sizeof(int)); /* every slot -1 */
    free(g->names);
    g->names = t;
    g->cap_names = cap;
    for (int i = 0; i < g->n_values; i++)
        g->names[probe(g, g->values[i].name)] = i;
    return 0;
}

int ipu_names_insert(ipu_graph_t *g, int idx)
{
    if (2 * (size_t)(idx + 1) >= g->cap_names)
        return ipu_names_rebuild(g); /* enters every value, idx too */
    g->names[probe(g, g->values[idx].name)] = idx;
    return 0;
}
