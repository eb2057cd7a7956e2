/* placeholder: TensorProto I/O lands with the loader */
#include "graph/load.h"
ipu_status_t ipu_tensorproto_read(const char *path, ipu_tensor_t *t, char **name)
{
    (void)t; (void)name;
    return ipu_error(IPU_ERR_UNSUPPORTED, "%s: TensorProto reading is not built yet", path);
}
ipu_status_t ipu_tensorproto_write(const char *path, const ipu_tensor_t *t, const char *name)
{
    (void)t; (void)name;
    return ipu_error(IPU_ERR_UNSUPPORTED, "%s: TensorProto writing is not built yet", path);
}
