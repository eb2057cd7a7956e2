/* The oneDNN layer (onednn.h): the OpenMP team of each IPU, the ISA oneDNN
 * dispatches to (and its cap, agreed by the ranks), its version and the CPU
 * model. */
#include "exec/onednn_impl.h"

#include "common/log.h"
#include "common/settings.h"

#include <omp.h>
#include <sched.h>
#include <stdatomic.h>
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

static atomic_int g_threads = 1;

void ipu_dnn_set_threads(int threads)
{
    atomic_store(&g_threads, threads > 0 ? threads : 1);
}

int ipu_dnn_threads(void)
{
    return atomic_load(&g_threads);
}

void dnn_team_for_create(void)
{
    int t = atomic_load(&g_threads);
    if (omp_get_max_threads() != t)
        omp_set_num_threads(t);
}

void ipu_dnn_bind_threads(int index, int threads, const int *cpus, int n_cpus)
{
    cpu_set_t mine;
    int n = threads > 0 ? threads : 1;
    omp_set_num_threads(n);
    if (pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine) != 0)
        return;
    /* libgomp keeps this thread's team for its later parallel regions.
     * A thread it starts later (after a narrower region ended some)
     * inherits the worker's affinity, which is then cpus[0] alone: so our
     * own loops always open regions of the whole team (ipu_par_rows) */
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

void ipu_dnn_end_host_team(void)
{
    /* libgomp frees the calling thread's pool of threads (OpenMP 5.0,
     * omp_pause_resource_all; nothing to do when it has none); it refuses
     * inside any parallel region, even of one thread */
    if (omp_get_level() == 0 && omp_pause_resource_all(omp_pause_soft) != 0)
        ipu_debug("cannot end the host thread's OpenMP threads");
}

/* ---- what runs ---------------------------------------------------------- */

/* oneDNN's instruction sets (each a bit mask holding the ones below it),
 * in the order of the ONEDNN_MAX_CPU_ISA setting's choices. */
static const struct {
    dnnl_cpu_isa_t isa;
    const char *name;
} g_isas[] = {
    {dnnl_cpu_isa_all, "all"},
    {dnnl_cpu_isa_sse41, "sse41"},
    {dnnl_cpu_isa_avx, "avx"},
    {dnnl_cpu_isa_avx2, "avx2"},
    {dnnl_cpu_isa_avx2_vnni, "avx2_vnni"},
    {dnnl_cpu_isa_avx512_mic, "avx512_mic"},
    {dnnl_cpu_isa_avx512_mic_4ops, "avx512_mic_4ops"},
    {dnnl_cpu_isa_avx512_core, "avx512_core"},
    {dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"},
    {dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"},
    {dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"},
};
enum { N_ISAS = sizeof g_isas / sizeof g_isas[0] };

static const char *isa_name(unsigned isa)
{
    for (int i = 0; i < N_ISAS; i++)
        if ((unsigned)g_isas[i].isa == isa)
            return g_isas[i].name;
    return "unknown";
}

const char *ipu_dnn_isa(void)
{
    return isa_name(dnnl_get_effective_cpu_isa());
}

/* Features gcc 12's __builtin_cpu_supports knows and clang 14's does not
 * (the fuzz build compiles this file with clang): absent there. */
#if defined(__clang__)
#define CPU_SUPPORTS_NEW(feature) 0
#else
#define CPU_SUPPORTS_NEW(feature) __builtin_cpu_supports(feature)
#endif

/* Whether this CPU (and its OS) has instruction set isa, by the CPU
 * features oneDNN asks for it (its cpu_isa_traits: mayiuse()). */
static int cpu_has(dnnl_cpu_isa_t isa)
{
    __builtin_cpu_init();
    int core = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    int mic = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
              __builtin_cpu_supports("avx512er") && __builtin_cpu_supports("avx512pf");
    switch (isa) {
    case dnnl_cpu_isa_sse41: return __builtin_cpu_supports("sse4.1");
    case dnnl_cpu_isa_avx: return __builtin_cpu_supports("avx");
    case dnnl_cpu_isa_avx2: return __builtin_cpu_supports("avx2");
    case dnnl_cpu_isa_avx2_vnni: return __builtin_cpu_supports("avx2") && CPU_SUPPORTS_NEW("avxvnni");
    case dnnl_cpu_isa_avx512_mic: return mic;
    case dnnl_cpu_isa_avx512_mic_4ops:
        return mic && __builtin_cpu_supports("avx5124fmaps") && __builtin_cpu_supports("avx5124vnniw");
    case dnnl_cpu_isa_avx512_core: return core;
    case dnnl_cpu_isa_avx512_core_vnni: return core && __builtin_cpu_supports("avx512vnni");
    case dnnl_cpu_isa_avx512_core_bf16:
        return core && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bf16");
    case dnnl_cpu_isa_avx512_core_amx:
        return core && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bf16") &&
               CPU_SUPPORTS_NEW("amx-tile") && CPU_SUPPORTS_NEW("amx-int8") &&
               CPU_SUPPORTS_NEW("amx-bf16");
    default: return 0;
    }
}

unsigned ipu_dnn_isa_mask(void)
{
    /* the cap oneDNN will read from its environment (ONEDNN_ first) */
    int cap = 0;
    if (!ipu_setting_choice(IPU_SET_ONEDNN_MAX_CPU_ISA, &cap))
        ipu_setting_choice(IPU_SET_DNNL_MAX_CPU_ISA, &cap);
    unsigned limit = cap > 0 && cap < N_ISAS ? (unsigned)g_isas[cap].isa : ~0u, mask = 0;
    for (int i = 1; i < N_ISAS; i++) {
        unsigned isa = (unsigned)g_isas[i].isa;
        if ((isa & limit) == isa && cpu_has(g_isas[i].isa))
            mask |= isa;
    }
    return mask;
}

/* The highest instruction set held in mask (0 when none is). */
static unsigned isa_top(unsigned mask)
{
    unsigned best = 0;
    for (int i = 1; i < N_ISAS; i++) {
        unsigned isa = (unsigned)g_isas[i].isa;
        if ((isa & mask) == isa && __builtin_popcount(isa) > __builtin_popcount(best))
            best = isa;
    }
    return best;
}

const char *ipu_dnn_isa_top(unsigned mask)
{
    return isa_name(isa_top(mask));
}

int ipu_dnn_cap_isa(unsigned mask)
{
    unsigned top = isa_top(mask);
    if (top == 0 || top == isa_top(ipu_dnn_isa_mask()))
        return 0;
    if (dnnl_set_max_cpu_isa((dnnl_cpu_isa_t)top) != dnnl_success)
        return ipu_error(IPU_ERR_INTERNAL, "cannot cap oneDNN to the instruction set %s: it fixed "
                         "its own before (a primitive was made first)", isa_name(top));
    return 1;
}

int ipu_dnn_isa_avx2(void)
{
    dnnl_cpu_isa_t i = dnnl_get_effective_cpu_isa();
    /* the ISA values are bit masks: each includes the ones below it */
    return i != dnnl_cpu_isa_all && (i & dnnl_cpu_isa_avx2) == dnnl_cpu_isa_avx2;
}

/* The choices every rank agrees on before any primitive is made (the
 * layout, Winograd): -1 until set by ipu_dnn_set_*() or, without an
 * agreement, fixed at the first read to this process's own. */
static atomic_int g_layout = -1, g_winograd = -1;

static int agreed(atomic_int *slot, int (*wanted)(void))
{
    int v = atomic_load(slot);
    if (v < 0) {
        v = wanted();
        atomic_store(slot, v);
    }
    return v;
}

static int layout_wanted(void)
{
    return (int)ipu_dnn_layout_wanted();
}

ipu_dnn_layout_t ipu_dnn_layout_wanted(void)
{
    int choice = 0;
    ipu_setting_choice(IPU_SET_IPU_EXEC_CONV_LAYOUT, &choice);
    if (choice > 0)
        return choice == 1 ? IPU_DNN_LAYOUT_BLOCKED : IPU_DNN_LAYOUT_ONEDNN;
    unsigned core = (unsigned)dnnl_cpu_isa_avx512_core;
    return (ipu_dnn_isa_mask() & core) == core && !__builtin_cpu_is("intel") ? IPU_DNN_LAYOUT_BLOCKED
                                                                              : IPU_DNN_LAYOUT_ONEDNN;
}

void ipu_dnn_set_layout(ipu_dnn_layout_t layout)
{
    atomic_store(&g_layout, (int)layout);
}

ipu_dnn_layout_t ipu_dnn_layout(void)
{
    return (ipu_dnn_layout_t)agreed(&g_layout, layout_wanted);
}

int ipu_dnn_winograd_wanted(void)
{
    int on = 1;
    ipu_setting_bool(IPU_SET_IPU_EXEC_WINOGRAD, &on);
    return on;
}

void ipu_dnn_set_winograd(int on)
{
    atomic_store(&g_winograd, on ? 1 : 0);
}

int ipu_dnn_winograd(void)
{
    return agreed(&g_winograd, ipu_dnn_winograd_wanted);
}

const char *ipu_dnn_layout_name(ipu_dnn_layout_t layout)
{
    return layout == IPU_DNN_LAYOUT_BLOCKED ? "blocked" : "onednn";
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
