/* libgcl's shared-memory store choice: streaming (non-temporal) or
 * ordinary stores into staging, chosen per op by timing, and the size of
 * the last-level cache, beyond which outputs are written with streaming
 * stores. */
#include "collectives/shm_impl.h"

#include <stdio.h>

/* A member's staging is read by the others. Where two cores share a cache,
 * ordinary stores leave it there for them (fastest); where they do not (on
 * this project's VM the host places the vCPUs so from time to time, for
 * seconds or a whole process: docs/libgcl.md), every line the reader takes
 * is a dirty line in the writer's cache, and streaming stores, which send
 * it to memory, were several times faster, while costing up to 2x when
 * the cache is shared (bench/results/libgcl-tuning.md). So each member times its own ops and picks, per
 * (kind, size class), the faster way by a moving average, trying the other
 * way one op in NT_EXPLORE (a bandit; every member counts the same ops, so
 * all try it in the same op). Correctness does not depend on the choice:
 * it changes how a member writes its staging, not what or when. */

void shm_stage_nt_choose(gcl_shm_op_t *o)
{
    size_t bytes = o->bytes;
    gcl_shm_t *s = o->shm;
    o->nt_key = -1;
    o->snt = 0;
    int red = o->kind == K_ALLREDUCE || o->kind == K_REDUCE || o->kind == K_REDUCE_SCATTER;
    if (bytes < (red ? s->stage_nt_min_red : s->stage_nt_min) || o->inl || o->nseg == 0 ||
        o->kind == K_BARRIER)
        return;
    if (s->stage_nt >= 0) {
        o->snt = s->stage_nt;
        return;
    }
    int c = 0;
    while (c < NT_CLASSES - 1 && (NT_BASE << (c + 1)) <= bytes)
        c++;
    o->nt_key = o->kind * NT_CLASSES + c;
    nt_stat_t *t = &s->ntst[o->nt_key];
    uint64_t k = t->n++;
    if (k < 2 * NT_WARM) { /* both ways, in turn (every member counts the same ops) */
        o->snt = (int)(k & 1);
        o->nt_warm = 1;
        return;
    }
    if (t->ema[0] == 0 || t->ema[1] == 0) { /* (a warm op not timed) */
        o->snt = t->ema[0] != 0;
        return;
    }
    int best = t->ema[1] < t->ema[0];
    o->snt = k % NT_EXPLORE == NT_EXPLORE - 1 ? !best : best;
}

/* A timed op is done: fold its seconds per byte into its mode's average
 * (the mode it tried against the other's average replaces it outright).
 * The first ops of a class keep each mode's best: one op slowed by page
 * faults or a neighbour must not settle the choice for the next 32. */
void shm_stage_nt_update(gcl_shm_op_t *o)
{
    if (o->nt_key < 0 || !o->started)
        return;
    nt_stat_t *t = &o->shm->ntst[o->nt_key];
    double v = (gcl_now() - o->t0) / (double)o->bytes;
    double *e = &t->ema[o->snt], other = t->ema[!o->snt];
    if (o->nt_warm)
        *e = *e == 0 || v < *e ? v : *e;
    else if (*e == 0 || (other != 0 && *e > other))
        *e = v;
    else
        *e = 0.75 * *e + 0.25 * v;
}

/* The size of the last-level cache in bytes, as the kernel's cacheinfo
 * gives it in sysfs (Documentation/ABI/testing/sysfs-devices-system-cpu,
 * what lscpu reads) for CPU 0. Without it (some VMs have no
 * /sys/devices/system/cpu/cpu0/cache), LLC_GUESS: what CPUID says there
 * cannot be trusted: glibc's sysconf(_SC_LEVEL3_CACHE_SIZE) and hwloc gave
 * this project's VMs ten times their cache, so streaming stores were never
 * used where they pay; the timings of those VMs fit a 32 MiB cache
 * (bench/results/libgcl-tuning.md). */
#define LLC_GUESS ((size_t)32 << 20)
size_t shm_llc_bytes(void)
{
    size_t best = 0;
    for (int i = 0, best_level = 0; i < 16; i++) {
        char path[80];
        int level = 0;
        unsigned long long v = 0;
        char unit = 0;
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            break;
        int ok = fscanf(f, "%d", &level) == 1;
        fclose(f);
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (!ok || level < best_level || (f = fopen(path, "r")) == NULL)
            continue;
        ok = fscanf(f, "%llu%c", &v, &unit) >= 1;
        fclose(f);
        if (ok) {
            best_level = level;
            best = (size_t)v << (unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0);
        }
    }
    return best > 0 ? best : LLC_GUESS;
}

