/* The pipeline: one model split into S stages, run by R replicas of P ranks
 * each (world size R x P), each rank owning K IPUs (S = P x K). Stage s of
 * replica q runs on rank q*P + s/K, IPU s%K.
 *
 * Micro-batches (one model input each) are dealt to replicas round robin
 * (micro-batch m to replica m % R) and flow fill -> steady -> drain through
 * the stages. Every tensor crossing a stage boundary is copied out of the
 * producing IPU as soon as its stage finishes and sent non-blocking (or, to
 * an IPU of the same rank, copied in memory); receives are posted ahead. Each
 * link holds at most `credits` micro-batches in flight: a receiver returns a
 * credit when it has consumed one, so memory stays flat however many
 * micro-batches stream through (the credit scheme of, e.g., PopART's
 * pipelining with bounded inter-IPU buffers).
 *
 * Inputs and outputs go through callbacks on the ranks that need them: the
 * stage that reads a graph input asks for micro-batch m's inputs; the stage
 * that produces a graph output hands it over.
 *
 * The files of src/pipeline/: run.c (the phases in order), setup.c (set-up
 * and plan agreement), links.c (links and credit flow), schedule.c (the
 * micro-batch schedule), report.c (the report), fault.h (fault handling). */
#ifndef IPU_PIPELINE_PIPELINE_H
#define IPU_PIPELINE_PIPELINE_H

#include "exec/device.h"
#include "partition/partition.h"
#include "transport/transport.h"

typedef struct ipu_pipeline_params {
    int replicas;             /* R >= 1; the world size must be a multiple */
    int ipus_per_rank;        /* K >= 1 */
    int micro_batches;        /* N >= 1, over all replicas */
    int warmup;               /* untimed micro-batches per replica streamed first
                                 (each replica's first input again; outputs
                                 dropped), default 0 */
    int credits;              /* micro-batches in flight per link (default 2) */
    int bind;                 /* 1 (default): bind IPU workers to cores (exec/binding.h) */
    int measure;              /* 1 (default): time the GEMM-like nodes (exec/measure.h) on
                                 rank 0 and partition with those times */
    int threads;              /* kernel threads per IPU */
    int profile;              /* > 0: time every node; the report's profile
                                 lists that many slowest nodes per stage */
    size_t ipu_memory;        /* bytes per IPU */
    ipu_transport_params_t transport;
    /* Fill ins[k] (dtype, shape, data: caller-owned, valid until the next
     * call) with graph input k of micro-batch mb; called on every rank whose
     * stages read graph inputs, and once for mb 0 on every rank (shapes). */
    ipu_status_t (*make_inputs)(void *arg, int mb, ipu_tensor_t *ins);
    /* Take graph output k of micro-batch mb (t valid during the call). */
    ipu_status_t (*take_output)(void *arg, int mb, int k, const ipu_tensor_t *t);
    void *arg;
} ipu_pipeline_params_t;

void ipu_pipeline_params_init(ipu_pipeline_params_t *p);

/* What a run measured, on rank 0 (gathered from every rank). */
typedef struct ipu_pipeline_report {
    int world, replicas, ranks_per_replica, stages;
    double wall_s;            /* first start of a timed micro-batch (after the
                                 warm-up) to the last finish, all ranks */
    double samples_per_s;     /* micro-batches x micro-batch size / wall_s */
    double latency_med_ms, latency_min_ms, latency_max_ms; /* per micro-batch, in -> out */
    int latency_samples;      /* micro-batches whose latency was recorded: all, or
                                 every k-th of a run of more than 65536 */
    double *stage_busy;       /* [stages]: busy fraction of replica 0's stages */
    double *stage_ms;         /* [stages]: mean run time per micro-batch */
    double *replica_s;        /* [replicas]: seconds from the window's start
                                 to the last end on that replica's ranks; the
                                 largest is wall_s (the slowest replica paces
                                 the throughput) */
    double peak_rss_mib_max;  /* largest peak RSS over the ranks */
    double *rank_rss_mib;     /* [world] */
    char *profile;            /* with params.profile: every stage's profile
                                 (exec/stage.h), in rank order, lines tagged
                                 "profile (rank R, stage S): "; else NULL */
    int setup_failed;         /* set on every rank when the run failed before
                                 any transfer (all ranks return an error) */
} ipu_pipeline_report_t;

/* Run graph g (ops bound, loaded from path for messages) as a pipeline over
 * comm. Collective over comm. Partitions with pp (stages = ranks per replica
 * x K unless the model is annotated), prints nothing; the report is filled on
 * rank 0. The graph's constants not read by this rank's stages are freed.
 * Errors: IPU_ERR_INVALID_ARG (world size not a multiple of replicas; stage
 * count does not match), partition errors, IPU_ERR_TRANSPORT /
 * IPU_ERR_TIMED_OUT (a peer died: the message names the rank and host),
 * kernel errors. On error only rep->setup_failed is set. */
ipu_status_t ipu_pipeline_run(ipu_graph_t *g, MPI_Comm comm, const ipu_pipeline_params_t *p,
                              const ipu_partition_params_t *pp, ipu_partition_t *plan_out,
                              ipu_pipeline_report_t *rep);
void ipu_pipeline_report_free(ipu_pipeline_report_t *r);

#endif
