/* Helpers for op implementations (declared in graph/op.h): errors that name
 * the node, required inputs, freeing op state, axes and NumPy broadcasting. */
#include "graph/op.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

ipu_status_t ipu_op_error(ipu_status_t st, const ipu_node_t *n, const char *fmt, ...)
{
    /* as long as ipu_error()'s own buffer: a long message is cut where one
     * ipu_error() call with the prefix in its format would cut it */
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return ipu_error(st, "node '%s' (%s): %s", n->name, n->op_type, msg);
}

ipu_status_t ipu_op_input(const ipu_graph_t *g, const ipu_node_t *n, int i,
                          const ipu_value_t **v)
{
    *v = ipu_node_input(g, n, i);
    if (*v == NULL)
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "input %d is missing", i);
    return IPU_OK;
}

void ipu_op_free_state(ipu_node_t *n)
{
    free(n->state);
    n->state = NULL;
}

ipu_status_t ipu_op_axis(const ipu_node_t *n, int64_t axis, int rank, int *out)
{
    if (axis < -rank || axis >= (rank > 0 ? rank : 1))
        return ipu_op_error(IPU_ERR_INVALID_MODEL, n, "axis %lld out of range for rank %d",
                            (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return IPU_OK;
}

ipu_status_t ipu_op_broadcast(const ipu_node_t *n, int ra, const int64_t *a,
                              int rb, const int64_t *b, int *rout, int64_t *out)
{
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int64_t da = i < r - ra ? 1 : a[i - (r - ra)];
        int64_t db = i < r - rb ? 1 : b[i - (r - rb)];
        if (da != db && da != 1 && db != 1)
            return ipu_op_error(IPU_ERR_SHAPE, n, "shapes do not broadcast (dimension %d: "
                                "%lld vs %lld)", i, (long long)da, (long long)db);
        out[i] = da == 1 ? db : da;
    }
    *rout = r;
    return IPU_OK;
}
