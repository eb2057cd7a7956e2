/* The cpu backend of the IPU device: a worker thread per IPU runs the stage;
 * the host thread hands it work through a mutex/condition pair. */
#include "exec/device.h"

#include "common/log.h"
#include "exec/onednn.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

struct ipu_device {
    ipu_device_params_t params;
    const ipu_stage_t *stage;
    uint8_t *arena;
    void *scratch;
    size_t used;

    pthread_t worker;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int pending;     /* 1 while a run is requested and not finished */
    int quit;
    int started;     /* a run was started and not yet collected */
    double busy_s;
    ipu_status_t result;
    char error[1024];
};

static void *worker_main(void *arg)
{
    ipu_device_t *dev = arg;
    const ipu_device_params_t *p = &dev->params;
    if (p->core >= 0 || p->n_cpus > 0) { /* the worker on its team's CPUs */
        cpu_set_t set;
        CPU_ZERO(&set);
        if (p->n_cpus > 0)
            for (int i = 0; i < p->n_cpus; i++)
                CPU_SET(p->cpus[i], &set);
        else
            CPU_SET(p->core, &set);
        if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0)
            ipu_warn("IPU %d: cannot pin worker to CPU %d", p->index, p->n_cpus > 0 ? p->cpus[0] : p->core);
    }
    ipu_dnn_bind_threads(p->index, p->threads, p->cpus, p->n_cpus);
    pthread_mutex_lock(&dev->mu);
    for (;;) {
        while (!dev->pending && !dev->quit)
            pthread_cond_wait(&dev->cv, &dev->mu);
        if (dev->quit)
            break;
        pthread_mutex_unlock(&dev->mu);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        ipu_status_t st = ipu_stage_run(dev->stage, dev->arena, dev->scratch, dev->params.threads);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        pthread_mutex_lock(&dev->mu);
        dev->busy_s += (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
        dev->result = st;
        if (st != IPU_OK) /* the message is per thread: hand it over */
            snprintf(dev->error, sizeof(dev->error), "%s", ipu_error_message());
        dev->pending = 0;
        pthread_cond_broadcast(&dev->cv);
    }
    pthread_mutex_unlock(&dev->mu);
    return NULL;
}

ipu_status_t ipu_device_open(const ipu_device_params_t *params, ipu_device_t **out)
{
    ipu_device_t *dev = calloc(1, sizeof(*dev));
    if (dev == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory opening IPU %d", params->index);
    dev->params = *params;
    if (dev->params.capacity == 0)
        dev->params.capacity = IPU_DEFAULT_MEMORY;
    if (dev->params.threads < 1)
        dev->params.threads = 1;
    ipu_dnn_set_threads(dev->params.threads); /* the primitives made for it */
    pthread_mutex_init(&dev->mu, NULL);
    pthread_cond_init(&dev->cv, NULL);
    if (pthread_create(&dev->worker, NULL, worker_main, dev) != 0) {
        pthread_mutex_destroy(&dev->mu);
        pthread_cond_destroy(&dev->cv);
        free(dev);
        return ipu_error(IPU_ERR_INTERNAL, "cannot start the worker thread of IPU %d", params->index);
    }
    *out = dev;
    return IPU_OK;
}

void ipu_device_close(ipu_device_t *dev)
{
    if (dev == NULL)
        return;
    pthread_mutex_lock(&dev->mu);
    dev->quit = 1;
    pthread_cond_broadcast(&dev->cv);
    pthread_mutex_unlock(&dev->mu);
    pthread_join(dev->worker, NULL);
    pthread_mutex_destroy(&dev->mu);
    pthread_cond_destroy(&dev->cv);
    free(dev->arena);
    free(dev->scratch);
    free(dev);
}

static void *alloc64(size_t n)
{
    size_t padded = (n + 63) / 64 * 64;
    return aligned_alloc(64, padded ? padded : 64);
}

ipu_status_t ipu_device_load(ipu_device_t *dev, const ipu_stage_t *stage)
{
    ipu_stage_mem_t m = ipu_stage_mem(stage);
    size_t need = m.total;
    if (need > dev->params.capacity) {
        char msg[512];
        ipu_stage_mem_str(&m, dev->params.capacity, msg, sizeof(msg));
        /* oneDNN's scratchpads grow with the team: say so where they
         * are most of what does not fit */
        int threads_help = dev->params.threads > 1 && m.scratch > need - dev->params.capacity;
        return ipu_error(IPU_ERR_NO_MEMORY, "IPU %d: the stage %s; raise --ipu-memory%s or split the "
                         "model over more IPUs", dev->params.index, msg,
                         threads_help ? ", lower --threads (the scratch grows with it)" : "");
    }
    ipu_status_t st = ipu_stage_load(stage);
    ipu_dnn_end_host_team(); /* the load's weight reorders ran here */
    if (st != IPU_OK)
        return st;
    uint8_t *arena = alloc64(stage->plan.arena_bytes);
    void *scratch = stage->scratch_bytes ? alloc64(stage->scratch_bytes) : NULL;
    if (arena == NULL || (stage->scratch_bytes && scratch == NULL)) {
        free(arena);
        free(scratch);
        char b[IPU_BYTES_STR_LEN];
        return ipu_error(IPU_ERR_NO_MEMORY, "IPU %d: cannot allocate %s of host memory",
                         dev->params.index, ipu_bytes_str(need, b));
    }
    /* touch the arena now so the first run is not slower than the rest */
    memset(arena, 0, stage->plan.arena_bytes);
    free(dev->arena);
    free(dev->scratch);
    dev->arena = arena;
    dev->scratch = scratch;
    dev->stage = stage;
    dev->used = need;
    return IPU_OK;
}

size_t ipu_device_used(const ipu_device_t *dev)
{
    return dev->used;
}

size_t ipu_device_capacity(const ipu_device_t *dev)
{
    return dev->params.capacity;
}

ipu_tensor_t ipu_device_tensor(const ipu_device_t *dev, int v)
{
    ipu_tensor_t t = ipu_value_tensor(dev->stage->g, v);
    if (t.data == NULL && v >= 0 && dev->stage->plan.offset[v] != IPU_PLAN_NONE)
        t.data = dev->arena + dev->stage->plan.offset[v];
    return t;
}

static ipu_status_t slot(const ipu_device_t *dev, int v, size_t bytes, uint8_t **p)
{
    if (dev->stage == NULL || v < 0 || v >= dev->stage->g->n_values)
        return ipu_error(IPU_ERR_INVALID_ARG, "IPU %d: no such tensor", dev->params.index);
    ipu_tensor_t t = ipu_device_tensor(dev, v);
    if (t.data == NULL || ipu_value_buffer_bytes(&dev->stage->g->values[v]) != bytes)
        return ipu_error(IPU_ERR_INVALID_ARG, "IPU %d: tensor '%s' has no slot of %zu bytes",
                         dev->params.index, dev->stage->g->values[v].name, bytes);
    *p = t.data;
    return IPU_OK;
}

ipu_status_t ipu_device_write(ipu_device_t *dev, int v, const void *src, size_t bytes)
{
    uint8_t *p;
    ipu_status_t st = slot(dev, v, bytes, &p);
    if (st == IPU_OK)
        memcpy(p, src, bytes);
    return st;
}

ipu_status_t ipu_device_read(const ipu_device_t *dev, int v, void *dst, size_t bytes)
{
    uint8_t *p;
    ipu_status_t st = slot(dev, v, bytes, &p);
    if (st == IPU_OK)
        memcpy(dst, p, bytes);
    return st;
}

ipu_status_t ipu_device_start(ipu_device_t *dev)
{
    if (dev->stage == NULL || dev->started)
        return ipu_error(IPU_ERR_INVALID_ARG, "IPU %d: no stage loaded or already running",
                         dev->params.index);
    pthread_mutex_lock(&dev->mu);
    dev->pending = 1;
    dev->started = 1;
    pthread_cond_broadcast(&dev->cv);
    pthread_mutex_unlock(&dev->mu);
    return IPU_OK;
}

ipu_status_t ipu_device_poll(ipu_device_t *dev, int *done)
{
    pthread_mutex_lock(&dev->mu);
    *done = dev->started && !dev->pending;
    ipu_status_t st = *done ? dev->result : IPU_OK;
    if (*done)
        dev->started = 0;
    pthread_mutex_unlock(&dev->mu);
    if (st != IPU_OK)
        ipu_error(st, "%s", dev->error);
    return st;
}

ipu_status_t ipu_device_run(ipu_device_t *dev)
{
    ipu_status_t st = ipu_device_start(dev);
    if (st != IPU_OK)
        return st;
    pthread_mutex_lock(&dev->mu);
    while (dev->pending)
        pthread_cond_wait(&dev->cv, &dev->mu);
    pthread_mutex_unlock(&dev->mu);
    int done;
    return ipu_device_poll(dev, &done);
}

void ipu_device_wait(ipu_device_t *dev, double timeout_s)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until); /* the condition variable's clock */
    long ns = until.tv_nsec + (long)(timeout_s * 1e9);
    until.tv_sec += ns / 1000000000L;
    until.tv_nsec = ns % 1000000000L;
    pthread_mutex_lock(&dev->mu);
    while (dev->pending && pthread_cond_timedwait(&dev->cv, &dev->mu, &until) == 0) {
    }
    pthread_mutex_unlock(&dev->mu);
}

double ipu_device_busy_s(const ipu_device_t *dev)
{
    return dev->busy_s;
}
