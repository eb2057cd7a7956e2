/* The report of a pipelined run (pipeline.h, internal.h): every rank's
 * timings, busy times and peak RSS gathered on rank 0 (bounded by the
 * watchdog, fault.h), and the figures made of them. */
#include "pipeline/internal.h"

#include "common/log.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Latency of every recorded micro-batch (ends[m] - starts[m], ms; ends is
 * overwritten and sorted): median, min and max into r. */
static void latencies(ipu_pipeline_report_t *r, double *starts, double *ends, int N)
{
    for (int m = 0; m < N; m++)
        ends[m] = (ends[m] - starts[m]) * 1e3;
    r->latency_samples = N;
    qsort(ends, (size_t)N, sizeof(double), cmp_double);
    r->latency_min_ms = ends[0];
    r->latency_max_ms = ends[N - 1];
    r->latency_med_ms = N % 2 ? ends[N / 2] : 0.5 * (ends[N / 2 - 1] + ends[N / 2]);
}

/* Per replica (ranks rep*P .. rep*P + P - 1): its ranks' latest end
 * (dones[world], on the common clock) less the window's start; NULL when
 * out of memory (the report then leaves it out). */
static double *replica_times(const pipe_t *pp, const double *dones, double first)
{
    double *t = dones ? malloc((size_t)pp->R * sizeof(double)) : NULL;
    for (int rep = 0; t && rep < pp->R; rep++) {
        t[rep] = 0;
        for (int k = 0; k < pp->P; k++)
            if (dones[rep * pp->P + k] - first > t[rep])
                t[rep] = dones[rep * pp->P + k] - first;
    }
    return t;
}

/* Per stage of replica 0, summed over the ranks on rank 0 (comm): busy
 * seconds in [0, S) and timed sequences in [S, 2S) of *all (allocated on
 * rank 0, NULL elsewhere). Collective; sized by the stage count. */
static void gather_busy(const pipe_t *pp, MPI_Comm comm, double **all)
{
    size_t n = 2 * (size_t)pp->S;
    double *busy = calloc(n, sizeof(double));
    *all = pp->rank == 0 ? calloc(n, sizeof(double)) : NULL;
    for (int i = 0; busy && i < pp->n_ls; i++)
        if (pp->replica == 0) {
            busy[pp->ls[i].s] = ipu_device_busy_s(pp->ls[i].dev) - pp->busy_at_w[i];
            busy[pp->S + pp->ls[i].s] = (double)(pp->ls[i].total - pp->W);
        }
    if (busy && (pp->rank != 0 || *all))
        MPI_Reduce(busy, *all, (int)n, MPI_DOUBLE, MPI_SUM, 0, comm);
    free(busy);
}

/* With --profile: every rank's stage profiles, concatenated in rank order
 * on rank 0 (NULL elsewhere, or without a profile). Collective over comm. */
static char *gather_profile(const pipe_t *pp, MPI_Comm comm)
{
    if (pp->p->profile <= 0)
        return NULL;
    char *mine = NULL, *all = NULL;
    size_t len = 0;
    for (int i = 0; i < pp->n_ls; i++) {
        char where[64];
        snprintf(where, sizeof where, "rank %d, stage %d", pp->rank, pp->ls[i].s);
        char *t = ipu_stage_profile_text(&pp->ls[i].stage, (int)pp->ls[i].total, where, pp->p->profile);
        size_t n = t ? strlen(t) : 0;
        char *m = n ? realloc(mine, len + n + 1) : mine;
        if (m) {
            memcpy(m + len, t, n);
            len += n;
            m[len] = '\0';
            mine = m;
        }
        free(t);
    }
    int n = (int)len, *counts = NULL, *displs = NULL, total = 0, ok = 1;
    if (pp->rank == 0) {
        counts = calloc((size_t)pp->world, sizeof(int));
        displs = calloc((size_t)pp->world, sizeof(int));
        ok = counts && displs;
    }
    /* rank 0 says whether it can receive before each gather: a gather into
     * a buffer it could not allocate would crash it */
    MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
    if (ok) {
        MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, comm);
        for (int r = 0; pp->rank == 0 && r < pp->world; r++) {
            displs[r] = total;
            total += counts[r];
        }
        if (pp->rank == 0)
            ok = (all = malloc((size_t)total + 1)) != NULL;
        MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
    }
    if (ok) {
        MPI_Gatherv(mine ? mine : "", n, MPI_CHAR, all, counts, displs, MPI_CHAR, 0, comm);
        if (all)
            all[total] = '\0';
    } else if (pp->rank == 0)
        ipu_warn("--profile: out of memory gathering the ranks' profiles; none is printed");
    free(mine);
    free(counts);
    free(displs);
    return all;
}

void pipe_sync_clocks(pipe_t *pp, MPI_Comm comm)
{
    enum { PINGS = 8, TAG = IPU_AGREE_TAG + 1 };
    double t0 = pipe_now_s();
    ipu_watchdog_arm(pp->T, pp->rank, "synchronising the ranks' clocks");
    if (pp->rank == 0) {
        for (int r = 1; r < pp->world; r++) {
            double best_rtt = 1e300, off = 0, msg[2];
            for (int k = 0; k < PINGS; k++) {
                double t1 = pipe_now_s(), tr;
                MPI_Send(&t1, 1, MPI_DOUBLE, r, TAG, comm);
                MPI_Recv(&tr, 1, MPI_DOUBLE, r, TAG, comm, MPI_STATUS_IGNORE);
                double t2 = pipe_now_s();
                if (t2 - t1 < best_rtt) { /* its reading at our midpoint */
                    best_rtt = t2 - t1;
                    off = tr - (t1 + t2) / 2;
                }
            }
            msg[0] = off;
            msg[1] = t0;
            MPI_Send(msg, 2, MPI_DOUBLE, r, TAG, comm);
        }
    } else {
        double msg[2];
        for (int k = 0; k < PINGS; k++) {
            double t1, tr;
            MPI_Recv(&t1, 1, MPI_DOUBLE, 0, TAG, comm, MPI_STATUS_IGNORE);
            tr = pipe_now_s();
            MPI_Send(&tr, 1, MPI_DOUBLE, 0, TAG, comm);
        }
        MPI_Recv(msg, 2, MPI_DOUBLE, 0, TAG, comm, MPI_STATUS_IGNORE);
        t0 = msg[1] + msg[0]; /* rank 0's start, read on this rank's clock */
    }
    ipu_watchdog_disarm();
    pp->t0 = t0;
}

void pipe_report(pipe_t *pp, MPI_Comm comm, double t_done, ipu_pipeline_report_t *rep)
{
    const ipu_pipeline_params_t *p = pp->p;
    /* the timed window runs from the first start of a timed sequence
     * (after the warm-up) to the last finish */
    double wall = 0, t_first = pp->t_first, first = 0;
    ipu_watchdog_arm(pp->T, pp->rank, "gathering the run's report");
    MPI_Reduce(&t_done, &wall, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    MPI_Reduce(&t_first, &first, 1, MPI_DOUBLE, MPI_MIN, 0, comm);
    wall -= first;
    int N = p->micro_batches, L = pp->n_lat;
    /* each recorded slot was written by one rank (its replica's first or
     * last stage); the others hold -1 */
    double *starts = calloc((size_t)L + 1, sizeof(double)), *ends = calloc((size_t)L + 1, sizeof(double));
    if (starts && ends) {
        MPI_Reduce(pp->t_start, starts, L, MPI_DOUBLE, MPI_MAX, 0, comm);
        MPI_Reduce(pp->t_end, ends, L, MPI_DOUBLE, MPI_MAX, 0, comm);
    }
    double *allbusy;
    gather_busy(pp, comm, &allbusy);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double rss = ru.ru_maxrss / 1024.0;
    double *rsses = pp->rank == 0 ? calloc((size_t)pp->world, sizeof(double)) : NULL;
    MPI_Gather(&rss, 1, MPI_DOUBLE, rsses, 1, MPI_DOUBLE, 0, comm);
    double *dones = pp->rank == 0 ? calloc((size_t)pp->world, sizeof(double)) : NULL;
    MPI_Gather(&t_done, 1, MPI_DOUBLE, dones, 1, MPI_DOUBLE, 0, comm);
    char *prof = gather_profile(pp, comm);
    ipu_watchdog_disarm();
    if (pp->rank == 0 && starts && ends) {
        ipu_pipeline_report_t r = {.world = pp->world, .replicas = pp->R, .ranks_per_replica = pp->P,
                                   .stages = pp->S, .wall_s = wall};
        int64_t batch = pp->g->n_inputs > 0 && pp->ins[0].rank > 0 ? pp->ins[0].dims[0] : 1;
        r.samples_per_s = wall > 0 ? (double)N * (double)batch / wall : 0;
        latencies(&r, starts, ends, L);
        r.stage_busy = calloc((size_t)pp->S, sizeof(double));
        r.stage_ms = calloc((size_t)pp->S, sizeof(double));
        for (int s = 0; s < pp->S && allbusy && r.stage_busy && r.stage_ms; s++) {
            r.stage_busy[s] = wall > 0 ? allbusy[s] / wall : 0;
            r.stage_ms[s] = allbusy[pp->S + s] > 0 ? allbusy[s] * 1e3 / allbusy[pp->S + s] : 0;
        }
        r.replica_s = replica_times(pp, dones, first);
        r.rank_rss_mib = rsses;
        r.profile = prof;
        prof = NULL;
        r.setup_failed = 0;
        rsses = NULL;
        for (int i = 0; i < pp->world && r.rank_rss_mib; i++)
            if (r.rank_rss_mib[i] > r.peak_rss_mib_max)
                r.peak_rss_mib_max = r.rank_rss_mib[i];
        *rep = r;
    }
    free(allbusy);
    free(prof);
    free(rsses);
    free(dones);
    free(starts); free(ends);
}

void ipu_pipeline_report_free(ipu_pipeline_report_t *r)
{
    if (r == NULL)
        return;
    free(r->stage_busy);
    free(r->stage_ms);
    free(r->replica_s);
    free(r->rank_rss_mib);
    free(r->profile);
    memset(r, 0, sizeof(*r));
}
