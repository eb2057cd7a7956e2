/* The state of one pipelined run, shared by the files of src/pipeline/:
 * links (links.c), the local stages (setup.c) and the scheduler
 * (schedule.c), the report (report.c). Not part of the interface
 * (pipeline.h). */
#ifndef IPU_PIPELINE_INTERNAL_H
#define IPU_PIPELINE_INTERNAL_H

#include "pipeline/fault.h"
#include "exec/binding.h"
#include "pipeline/pipeline.h"

#include <stdint.h>

#define MAX_CREDITS 16
/* tag: [credit 1][link 15][seq 24] = 40 bits */
#define TAG(credit, link, seq) \
    (((uint64_t)(credit) << 39) | ((uint64_t)(link) << 24) | ((uint64_t)(seq) & 0xffffff))

/* A value crossing from one stage to a later one (within a replica). */
typedef struct link {
    int value, src, dst;        /* value index, producing and consuming stage */
    int src_rank, dst_rank;     /* world ranks in this rank's replica */
    size_t bytes;
    /* sender side */
    uint8_t *sbuf[MAX_CREDITS];
    ipu_treq_t *sreq[MAX_CREDITS];
    int64_t credits;            /* credits returned by the receiver */
    ipu_treq_t *creq;           /* posted receive of the next credit */
    uint64_t cmsg;
    /* receiver side */
    uint8_t *rbuf[MAX_CREDITS];
    ipu_treq_t *rreq[MAX_CREDITS];
    int ready[MAX_CREDITS];     /* local links: slot filled */
    int64_t consumed;           /* micro-batches taken by the consumer */
    int64_t posted;             /* remote: receives posted up to (excl.) */
    /* a link between two ranks of one host, through the sender's shared
     * segment (links_shm.c): its control lines, its C slots after them
     * (sbuf or rbuf point there); NULL: through the transport */
    struct link_ctl *shm;
} link_t;

/* The control lines of a link through shared memory: the sender stores
 * published (sequences written) after it wrote a slot, the receiver
 * consumed (sequences read) after it read one. Release stores and acquire
 * loads order a slot's bytes before the count that hands it over. */
typedef struct link_ctl {
    int64_t published;
    char pad0[56];
    int64_t consumed;
    char pad1[56];
} link_ctl_t;

static inline int64_t pipe_shm_load(const int64_t *v)
{
    return __atomic_load_n(v, __ATOMIC_ACQUIRE);
}

static inline void pipe_shm_store(int64_t *v, int64_t x)
{
    __atomic_store_n(v, x, __ATOMIC_RELEASE);
}

/* This rank's shared segments for the links of its host (links_shm.c). */
typedef struct pipe_shm {
    int fd;                         /* its own segment's descriptor (+1; 0: none, or closed) */
    uint64_t nonce;                 /* in its own segment's header, and gathered with its pid and fd */
    void *base;                     /* its own: the slots of the links it sends */
    size_t bytes;
    struct pipe_shm_map {
        void *base;
        size_t bytes;
    } *peer;                        /* [world]: the segments of the ranks it reads from */
} pipe_shm_t;

/* A stage of this rank, on its own IPU. */
typedef struct lstage {
    int s;
    ipu_stage_t stage;
    ipu_device_t *dev;
    int *in_links, n_in, *out_links, n_out;
    int *graph_in, n_graph_in;  /* graph input k read by this stage (k indices) */
    int *graph_out, n_graph_out;
    int64_t next, total;        /* next sequence to start, sequences of this replica */
    int running, has_result;
    int64_t seq;                /* sequence running / whose result is pending */
    unsigned char *emitted;     /* per out link: result of seq sent */
    double run_s;
} lstage_t;

typedef struct pipe {
    const ipu_graph_t *g;
    const ipu_pipeline_params_t *p;
    ipu_transport_t *tr;
    ipu_fault_t fault;          /* lost-rank notices, agreements (fault.h) */
    double T;                   /* --timeout, seconds (default 30) */
    int rank, world, R, P, K, S, replica, C;
    int W;                      /* warm-up sequences per replica (untimed, outputs dropped) */
    link_t *links;
    int n_links;
    lstage_t *ls;
    int n_ls;
    int *host_ids;              /* [world]: the lowest rank of each rank's host (set-up's agreement) */
    pipe_shm_t shm;
    ipu_tensor_t *ins;          /* graph inputs of the current micro-batch */
    int ins_mb;                 /* which micro-batch ins holds, -1 none */
    ipu_treq_t **credit_sends;  /* credit messages in flight */
    int n_credit_sends, cap_credit_sends;
    double t0;
    double t_first;             /* start of this replica's sequence W on stage 0, else 1e300 */
    /* The latency record (pipe_lat_slot): start (stage 0) and end (last
     * stage) times of every lat_stride-th timed micro-batch, at most
     * PIPE_LAT_MAX of them, written in place from setup on: a run's memory
     * does not grow with its length, nor while it runs */
    double *t_start, *t_end;    /* [n_lat], -1 where not recorded here */
    int lat_stride, n_lat;
    double *busy_at_w;          /* per local stage: device busy seconds when sequence W started */
} pipe_t;

static inline double pipe_now_s(void)
{
    return MPI_Wtime();
}

/* The world rank of stage s of this rank's replica. */
static inline int pipe_stage_rank(const pipe_t *pp, int s)
{
    return pp->replica * pp->P + s / pp->K;
}

/* The micro-batch of sequence seq of this replica; warm-up sequences
 * (seq < W) repeat the replica's first micro-batch. */
static inline int pipe_mb_of(const pipe_t *pp, int64_t seq)
{
    return (int)((seq < pp->W ? 0 : seq - pp->W) * pp->R + pp->replica);
}

/* At most this many micro-batches' latencies are recorded (16 bytes each on
 * the first and last stages' ranks): every micro-batch of shorter runs,
 * every k-th of longer ones, k = ceil(micro-batches / PIPE_LAT_MAX). */
enum { PIPE_LAT_MAX = 1 << 16 };

/* The latency record's slot of timed sequence seq (>= W) of this replica,
 * or -1 when its micro-batch is not among those recorded. */
static inline int pipe_lat_slot(const pipe_t *pp, int64_t seq)
{
    int mb = pipe_mb_of(pp, seq);
    return seq >= pp->W && mb % pp->lat_stride == 0 && mb / pp->lat_stride < pp->n_lat ? mb / pp->lat_stride
                                                                                        : -1;
}

/* links.c: the links between stages and their credit flow. */
ipu_status_t pipe_build_links(pipe_t *pp, const int *node_stage);
ipu_status_t pipe_alloc_link_buffers(pipe_t *pp);
ipu_status_t pipe_post_links(pipe_t *pp);
ipu_status_t pipe_arrived(pipe_t *pp, link_t *lk, int64_t seq, int *yes);
ipu_status_t pipe_consumed(pipe_t *pp, link_t *lk, int64_t total);
ipu_status_t pipe_poll_credits(pipe_t *pp, int *events);
ipu_status_t pipe_poll_sends(pipe_t *pp, int *events, int *sending);
void pipe_free_links(pipe_t *pp);

/* links_shm.c: the links between ranks of one host through shared memory
 * (unless the sending rank has IPU_EXEC_SHM_LINKS=0).
 * pipe_shm_create: this rank's segment for the links it sends to ranks of
 * its host; when it cannot be made, a warning, and they go through the
 * transport. pipe_shm_id: its pid, descriptor and nonce in PIPE_SHM_WORDS
 * values for the set-up's gather (all zero: none). pipe_shm_agree, from
 * every rank's (rank r's at all[r * stride + at]), when there is any:
 * attach the segments of the senders of this rank's links and give those
 * links their control lines (lk->shm); agree (collective over comm, an
 * agreement of fault.h) that every rank could, else every link goes
 * through the transport (the rank that could not warns why); then close
 * this rank's descriptor. Errors: those of the agreement (*lost).
 * pipe_shm_close: unmap (the links' buffers there go with it). */
enum { PIPE_SHM_WORDS = 4 };
void pipe_shm_create(pipe_t *pp);
void pipe_shm_id(const pipe_t *pp, uint32_t *v);
ipu_status_t pipe_shm_agree(pipe_t *pp, MPI_Comm comm, const uint32_t *all, size_t stride, size_t at,
                            int *lost);
void pipe_shm_close(pipe_t *pp);

/* setup.c: the set-up steps of ipu_pipeline_run, in order; each takes the
 * status so far and every rank makes each agreement (fault.h). */
typedef struct pipe_hosts {
    int local_rank, local_size;  /* this rank among the ranks of its host */
} pipe_hosts_t;
/* oneDNN's instruction set (the highest all ranks have, set before any
 * primitive is made), shapes of micro-batch 0, rank 0's measured costs,
 * the plan (the same on every rank); *lost: a rank is gone, no collective
 * may follow. */
ipu_status_t pipe_agree_plan(pipe_t *pp, ipu_graph_t *g, MPI_Comm comm, const ipu_partition_params_t *ppar,
                             ipu_partition_t *plan, pipe_hosts_t *hosts, int *lost);
/* This rank's links, weights (others' constants freed) and stages. */
ipu_status_t pipe_set_up(pipe_t *pp, ipu_graph_t *g, const ipu_partition_t *plan, const pipe_hosts_t *hosts,
                         ipu_status_t st);
/* Agree on the set-up (and that ranks holding the same stage made the same
 * oneDNN implementation for each of its nodes, node_stage the plan's, may
 * be NULL when the plan failed), open the transport, post the links'
 * receives, open the notices, agree on the start. */
ipu_status_t pipe_start(pipe_t *pp, MPI_Comm comm, const int *node_stage, ipu_status_t st, int *lost);
/* This rank's stages on their IPUs (bind: cores, may be NULL); g is pp->g,
 * whose weights the stages hold copies of are freed as they load
 * (exec/stage.h: ipu_release_new). */
ipu_status_t pipe_build_local(pipe_t *pp, const int *node_stage, const ipu_binding_t *bind,
                              ipu_graph_t *g);
void pipe_free_local(pipe_t *pp);

/* schedule.c: run until every local stage has run and emitted all its
 * sequences and every send has completed. */
ipu_status_t pipe_schedule(pipe_t *pp);

/* report.c: gather what the run measured on rank 0 (collective over comm);
 * t_done: this rank's end of the run, seconds from t0. */
/* Set pp->t0, the base of every rank's t_start/t_end, to rank 0's start
 * read on this rank's clock, so that times taken on different ranks (a
 * micro-batch's latency: its start on stage 0, its end on the last stage)
 * subtract: MPI_Wtime is not global (MPI_WTIME_IS_GLOBAL), and separate
 * bases made latencies come out negative. The offset of each rank's clock
 * from rank 0's is Cristian's estimate (F. Cristian, "Probabilistic clock
 * synchronization", Distributed Computing 3(3), 1989): of 8 ping-pongs with
 * rank 0, the one with the shortest round trip, rank 0's reading taken at
 * its midpoint. Collective over comm; bounded by the watchdog. */
void pipe_sync_clocks(pipe_t *pp, MPI_Comm comm);
void pipe_report(pipe_t *pp, MPI_Comm comm, double t_done, ipu_pipeline_report_t *rep);

#endif
