/* An IPU: a device with a memory capacity that runs stages. The first backend
 * is "cpu", an IPU Model in the sense of Poplar's: the stage's kernels run on
 * the host, on one worker thread per IPU (pinned to a core), and every byte
 * the stage needs (weights, activation arena, scratch) is counted against the
 * device capacity (default 900 MiB, an IPU Mk2's In-Processor Memory).
 *
 * The interface is narrow on purpose (open, load a stage, write/read a
 * tensor, run, capacity) so another backend can be added without touching
 * the partitioner or the pipeline. All functions are called from one host
 * thread; run() executes on the device's worker and blocks until done. */
#ifndef IPU_EXEC_DEVICE_H
#define IPU_EXEC_DEVICE_H

#include "exec/stage.h"

#define IPU_DEFAULT_MEMORY ((size_t)900 << 20)

typedef struct ipu_device ipu_device_t;

enum { IPU_DEVICE_MAX_CPUS = 32 };

typedef struct ipu_device_params {
    int index;        /* IPU number on this rank, for messages */
    size_t capacity;  /* bytes; 0 means IPU_DEFAULT_MEMORY */
    int threads;      /* threads for the kernels (>= 1) */
    int core;         /* CPU to pin the worker to, or -1 for no pinning */
    /* when n_cpus > 0: the CPUs of the worker's team instead (thread t of
     * its OpenMP team on cpus[t % n_cpus]; cpus[0] is the worker's own) */
    int n_cpus;
    int cpus[IPU_DEVICE_MAX_CPUS];
} ipu_device_params_t;

/* Open a CPU IPU. Errors: IPU_ERR_NO_MEMORY, IPU_ERR_INTERNAL (thread). */
ipu_status_t ipu_device_open(const ipu_device_params_t *params, ipu_device_t **out);
/* Stop the worker and free everything (accepts NULL). */
void ipu_device_close(ipu_device_t *dev);

/* Make the device run stage (borrowed; must outlive the device or the next
 * load): allocates its arena and scratch and accounts its weights. Errors:
 * IPU_ERR_NO_MEMORY when ipu_stage_mem(stage) (weights + arena + scratch, the
 * partitioner's measure too) exceeds the capacity (the message gives each
 * part and the capacity). */
ipu_status_t ipu_device_load(ipu_device_t *dev, const ipu_stage_t *stage);

/* Bytes in use (weights + arena + scratch of the loaded stage) and capacity. */
size_t ipu_device_used(const ipu_device_t *dev);
size_t ipu_device_capacity(const ipu_device_t *dev);

/* The device tensor of value v of the loaded stage (data points into device
 * memory, valid until the next load/close), or data NULL if v has no slot. */
ipu_tensor_t ipu_device_tensor(const ipu_device_t *dev, int v);

/* Copy a host tensor into value v's slot / v's slot out to host memory;
 * bytes must equal the slot's size, ipu_value_buffer_bytes() (a value the
 * layout pass keeps in a larger layout has that). Errors: IPU_ERR_INVALID_ARG. */
ipu_status_t ipu_device_write(ipu_device_t *dev, int v, const void *src, size_t bytes);
ipu_status_t ipu_device_read(const ipu_device_t *dev, int v, void *dst, size_t bytes);

/* Run the loaded stage once on the worker thread and wait for it. */
ipu_status_t ipu_device_run(ipu_device_t *dev);

/* Start a run and return at once; ipu_device_poll() sets *done when it has
 * finished and returns its status. No write/read/start while running. */
ipu_status_t ipu_device_start(ipu_device_t *dev);
ipu_status_t ipu_device_poll(ipu_device_t *dev, int *done);
/* Block until a started run finishes or timeout_s (< 1 s) passes, whichever
 * is first (at once when nothing runs); ipu_device_poll() then tells. */
void ipu_device_wait(ipu_device_t *dev, double timeout_s);
/* Accumulated seconds the worker spent running stages. */
double ipu_device_busy_s(const ipu_device_t *dev);

#endif
