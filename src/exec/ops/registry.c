#include "exec/ops/registry.h"

#include <string.h>

#define IPU_OP_LIST_FAMILY(name) ipu_ops_##name,
static const ipu_op_t *const *const families[] = {IPU_OP_FAMILIES(IPU_OP_LIST_FAMILY) NULL};

static int same_domain(const char *a, const char *b)
{
    if (strcmp(a, "ai.onnx") == 0)
        a = "";
    if (strcmp(b, "ai.onnx") == 0)
        b = "";
    return strcmp(a, b) == 0;
}

const ipu_op_t *ipu_op_registry_entry(int i)
{
    for (int f = 0; families[f]; f++)
        for (int k = 0; families[f][k]; k++)
            if (i-- == 0)
                return families[f][k];
    return NULL;
}

const ipu_op_t *ipu_op_lookup(const char *domain, const char *op_type, int opset)
{
    for (int f = 0; families[f]; f++)
        for (int k = 0; families[f][k]; k++) {
            const ipu_op_t *op = families[f][k];
            if (strcmp(op->op_type, op_type) == 0 && same_domain(op->domain, domain) &&
                opset >= op->since_version && opset <= op->until_version)
                return op;
        }
    return NULL;
}
