/* libFuzzer target: bytes -> the tensor file readers of --inputs and
 * --check (cli_read_tensor in src/cli/testdata.c dispatches on the
 * extension to these two).
 *
 * Feeds each input, as a file, to ipu_tensorproto_read (tensor.pb: an
 * onnx.TensorProto, as input_0.pb / output_0.pb of the ONNX test-data
 * layout) and to ipu_npy_read (tensor.npy: a NumPy .npy file). Where a
 * read succeeds, reads every byte of the tensor it returns (its dims and
 * dtype must describe the buffer it allocated: ASan catches a short one).
 *
 * Checks, on every input: no crash, leak, ASan/UBSan report or hang, and
 * every error is a user error with a one-line message (fuzz_check_error). */
#include "common/npy.h"
#include "graph/load.h"
#include "fuzz_file.h"

#include <stdlib.h>

/* Touch every byte of t->data (a short buffer is an ASan report). */
static void read_through(const ipu_tensor_t *t)
{
    size_t n = ipu_tensor_nbytes(t);
    volatile unsigned char sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += ((const unsigned char *)t->data)[i];
    (void)sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ipu_tensor_t t = {0};
    char *name = NULL;
    ipu_status_t st = ipu_tensorproto_read(fuzz_file("tensor.pb", data, size), &t, &name);
    fuzz_check_error(st, "ipu_tensorproto_read");
    if (st == IPU_OK)
        read_through(&t);
    free(t.data);
    free(name);

    ipu_tensor_t u = {0};
    st = ipu_npy_read(fuzz_file("tensor.npy", data, size), &u);
    fuzz_check_error(st, "ipu_npy_read");
    if (st == IPU_OK)
        read_through(&u);
    free(u.data);
    return 0;
}
