/* LD_PRELOADed on one rank by tests/mpi/isa.sh: that rank's oneDNN reports
 * another implementation for every primitive but its reference ones (which
 * ipu-exec refuses for some ops by that name), as a host whose oneDNN
 * build or CPU picks other kernels would. The kernels that run are the same;
 * what is tested is that ranks holding the same stage compare what they
 * made and refuse the run when it differs. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <dnnl.h>
#include <string.h>

typedef dnnl_status_t (*query_fn)(const_dnnl_primitive_desc_t, dnnl_query_t, int, void *);

dnnl_status_t dnnl_primitive_desc_query(const_dnnl_primitive_desc_t pd, dnnl_query_t what, int index,
                                        void *result)
{
    static query_fn real;
    if (real == NULL)
        real = (query_fn)dlsym(RTLD_NEXT, "dnnl_primitive_desc_query");
    if (real == NULL)
        return dnnl_runtime_error;
    dnnl_status_t st = real(pd, what, index, result);
    if (st == dnnl_success && what == dnnl_query_impl_info_str && *(const char **)result &&
        strncmp(*(const char **)result, "ref", 3) != 0)
        *(const char **)result = "jit:another_host";
    return st;
}
