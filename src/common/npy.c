/* placeholder: .npy I/O lands with the loader */
#include "common/npy.h"
ipu_status_t ipu_npy_read(const char *path, ipu_tensor_t *t)
{
    (void)t;
    return ipu_error(IPU_ERR_UNSUPPORTED, "%s: .npy reading is not built yet", path);
}
ipu_status_t ipu_npy_write(const char *path, const ipu_tensor_t *t)
{
    (void)t;
    return ipu_error(IPU_ERR_UNSUPPORTED, "%s: .npy writing is not built yet", path);
}
