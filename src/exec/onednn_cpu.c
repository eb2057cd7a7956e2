/* The oneDNN layer (onednn.h): the OpenMP team of each IPU, the ISA oneDNN
 * dispatches to, its version and the CPU model. */
#include "exec/onednn_impl.h"

#include "common/log.h"

#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

/* "0,2" style list of the CPUs in set into buf. */
static void cpu_list(const cpu_set_t *set, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE && off < len; c++)
        if (CPU_ISSET(c, set))
            off += (size_t)snprintf(buf + off, len - off, off ? ",%d" : "%d", c);
}

void ipu_dnn_bind_threads(int index, int threads, const int *cpus, int n_cpus)
{
    cpu_set_t mine;
    int n = threads > 0 ? threads : 1;
    omp_set_num_threads(n);
    if (pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine) != 0)
        return;
    /* libgomp keeps this thread's team for its later parallel regions;
     * threads it adds later inherit the worker's affinity (all the team's
     * CPUs) */
#pragma omp parallel num_threads(n)
    {
        cpu_set_t got, one;
        const cpu_set_t *to = &mine;
        if (n_cpus > 0) { /* its own core of the team's */
            CPU_ZERO(&one);
            CPU_SET(cpus[omp_get_thread_num() % n_cpus], &one);
            to = &one;
        }
        if (pthread_setaffinity_np(pthread_self(), sizeof(*to), to) != 0)
            ipu_warn("IPU %d: cannot bind OpenMP thread %d to its worker's CPUs", index,
                     omp_get_thread_num());
        if (ipu_log_level_current >= IPU_LOG_DEBUG &&
            sched_getaffinity(0, sizeof(got), &got) == 0) {
            char l[256], w[256];
            cpu_list(&got, l, sizeof(l));
            cpu_list(&mine, w, sizeof(w));
            ipu_debug("IPU %d: OpenMP thread %d of %d on CPUs %s, the worker's %s", index,
                      omp_get_thread_num(), omp_get_num_threads(), l, w);
        }
    }
}

/* ---- what runs ---------------------------------------------------------- */

const char *ipu_dnn_isa(void)
{
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    case dnnl_cpu_isa_all: return "all";
    default: return "unknown";
    }
}

int ipu_dnn_isa_avx2(void)
{
    dnnl_cpu_isa_t i = dnnl_get_effective_cpu_isa();
    /* the ISA values are bit masks: each includes the ones below it */
    return i != dnnl_cpu_isa_all && (i & dnnl_cpu_isa_avx2) == dnnl_cpu_isa_avx2;
}

static char g_version[48];

static void version_init(void)
{
    const dnnl_version_t *d = dnnl_version();
    snprintf(g_version, sizeof(g_version), "oneDNN %d.%d.%d", d->major, d->minor, d->patch);
}

const char *ipu_dnn_version(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, version_init);
    return g_version;
}

char *ipu_cpu_model(char *buf, size_t len)
{
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(buf, len, "unknown");
    while (f && fgets(line, sizeof(line), f)) {
        char *c = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || c == NULL)
            continue;
        c++;
        while (*c == ' ' || *c == '\t')
            c++;
        c[strcspn(c, "\n")] = '\0';
        snprintf(buf, len, "%s", c);
        break;
    }
    if (f)
        fclose(f);
    return buf;
}
