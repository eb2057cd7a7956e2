/* placeholder until the family lands */
#include "exec/ops/registry.h"

const ipu_op_t *const ipu_ops_concat_split[] = {NULL};
