/* Running a model: on one IPU of this process (cli_run_single) or as a
 * pipeline over the MPI job (cli_run_pipeline). Both take micro-batch m's
 * inputs from --inputs DIR (its test_data_set_<m mod sets> when it holds
 * such sets) or synthesise them with seed + m, save them for --save-inputs,
 * and hand every output to --output-dir, to --check (against the
 * reference of the same set) and to --digest. */
#include "cli/cli.h"
#include "cli/io.h"
#include "common/log.h"
#include "exec/ops/registry.h"
#include "pipeline/pipeline.h"
#include "exec/binding.h"
#include "pipeline/fault.h"
#include "graph/load.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --profile: the slowest nodes listed after the op types */
enum { PROFILE_NODES = 10 };

typedef struct data {
    const cli_opts_t *o;
    ipu_graph_t *g;
    cli_data_t files;        /* --inputs / --check files (n_sets 0: none) */
    ipu_tensor_t *ins;       /* inputs of the current micro-batch (owned) */
    ipu_tensor_t *first;     /* dtypes and shapes of the first inputs made (no data) */
    int have_first;
    int ins_set;             /* the set of files ins holds, -1: none */
    ipu_tensor_t *refs;      /* --check references (owned) */
    int *ref_set;            /* [k]: the set of files refs[k] holds, -1: none */
    long mismatches, checked;
    uint64_t digest;         /* --digest: the sum of this rank's outputs' digests */
    long digested;           /* outputs in it */
    double max_abs;
    int pipelined;           /* under the pipeline: no per-output "ok" line, and
                              * the mismatch lines go to held, printed after
                              * rank 0's plan and report */
    FILE *held;              /* open_memstream on held_buf, or NULL */
    char *held_buf;
    size_t held_len;
    int rank, ranks_per_replica, replicas; /* who saves micro-batch m's inputs:
                              * the first rank of its replica */
} data_t;

static void data_free(data_t *d)
{
    for (int k = 0; d->ins && k < d->g->n_inputs; k++)
        free(d->ins[k].data);
    for (int k = 0; d->refs && k < d->g->n_outputs; k++)
        free(d->refs[k].data);
    free(d->ins);
    free(d->first);
    free(d->refs);
    free(d->ref_set);
    cli_data_free(&d->files);
    if (d->held)
        fclose(d->held);
    free(d->held_buf);
}

static void free_inputs(data_t *d)
{
    for (int k = 0; k < d->g->n_inputs; k++) {
        free(d->ins[k].data);
        d->ins[k].data = NULL;
    }
}

/* Micro-batch 0's inputs fit the model's declared inputs (the graph's
 * shapes are still the declared ones then), and every later micro-batch's
 * have the dtypes and shapes of micro-batch 0's: a file that differs is
 * named. */
static ipu_status_t same_shapes(data_t *d, int mb)
{
    char a[128], b[128];
    if (!d->have_first) {
        ipu_status_t st = cli_data_check(d->g, &d->files, mb, d->ins);
        for (int k = 0; k < d->g->n_inputs && st == IPU_OK; k++)
            d->first[k] = (ipu_tensor_t){.dtype = d->ins[k].dtype, .rank = d->ins[k].rank};
        for (int k = 0; k < d->g->n_inputs && st == IPU_OK; k++)
            memcpy(d->first[k].dims, d->ins[k].dims, sizeof(d->ins[k].dims));
        d->have_first = st == IPU_OK;
        return st;
    }
    for (int k = 0; k < d->g->n_inputs; k++) {
        const ipu_tensor_t *t = &d->ins[k], *f = &d->first[k];
        if (t->dtype != f->dtype || !ipu_shape_equal(t->rank, t->dims, f->rank, f->dims))
            return ipu_error(IPU_ERR_INPUT, "%s: input %d '%s' is %s but micro-batch 0's is %s; every "
                             "micro-batch's inputs must have the same shapes and dtypes",
                             cli_data_file(&d->files, mb, k), cli_data_position(&d->files, k),
                             d->g->values[d->g->inputs[k]].name, ipu_tensor_describe(t, a, sizeof(a)),
                             ipu_tensor_describe(f, b, sizeof(b)));
    }
    return IPU_OK;
}

/* warn: this rank says the warnings about the files (rank 0). The inputs
 * with a default that --inputs gives become inputs of g (cli_data_open). */
static ipu_status_t data_init(data_t *d, const cli_opts_t *o, ipu_graph_t *g, int warn)
{
    memset(d, 0, sizeof(*d));
    d->o = o;
    d->g = g;
    d->ins_set = -1;
    d->ranks_per_replica = d->replicas = 1;
    ipu_status_t st = o->inputs ? cli_data_open(g, o->inputs, o->inputs_sets, o->batches, o->check, warn,
                                                &d->files)
                                : cli_synth_check(g); /* synthetic inputs: every input needs a shape */
    if (st != IPU_OK)
        return st;
    d->ins = calloc((size_t)g->n_inputs + 1, sizeof(ipu_tensor_t));
    d->first = calloc((size_t)g->n_inputs + 1, sizeof(ipu_tensor_t));
    d->refs = calloc((size_t)g->n_outputs + 1, sizeof(ipu_tensor_t));
    d->ref_set = malloc(((size_t)g->n_outputs + 1) * sizeof(int));
    if (!d->ins || !d->first || !d->refs || !d->ref_set)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    for (int k = 0; k < g->n_outputs; k++)
        d->ref_set[k] = -1;
    /* files that do not fit the model, or sets of other shapes, are found
     * before any work (by rank 0: the start-up agreement says it); the
     * last set read is kept for its micro-batches */
    for (int s = 0; o->inputs && warn && s < d->files.n_sets; s++) {
        free_inputs(d);
        d->ins_set = -1;
        if ((st = cli_data_inputs(g, &d->files, s, d->ins)) != IPU_OK || (st = same_shapes(d, s)) != IPU_OK)
            return st;
        d->ins_set = s;
    }
    return IPU_OK;
}

static ipu_status_t make_inputs(void *arg, int mb, ipu_tensor_t *out)
{
    data_t *d = arg;
    ipu_status_t st = IPU_OK;
    if (d->o->inputs) {
        int set = mb % d->files.n_sets;
        if (set != d->ins_set) {
            free_inputs(d);
            d->ins_set = -1;
            if ((st = cli_data_inputs(d->g, &d->files, mb, d->ins)) == IPU_OK &&
                (st = same_shapes(d, mb)) == IPU_OK)
                d->ins_set = set;
        }
    } else {
        free_inputs(d);
        st = cli_synth_inputs(d->g, d->o->seed + (unsigned)mb, d->o->micro_batch, d->ins);
    }
    /* --save-inputs: micro-batch mb's inputs, by the first rank of its
     * replica, which feeds them (every rank makes micro-batch 0's for the
     * shapes; only rank 0 saves those) */
    if (st == IPU_OK && d->o->save_inputs && d->rank == (mb % d->replicas) * d->ranks_per_replica)
        for (int k = 0; k < d->g->n_inputs && st == IPU_OK; k++)
            st = cli_write_tensor("--save-inputs", d->o->save_inputs, d->o->format, d->o->batches, mb, "input",
                                  cli_data_position(&d->files, k), d->g->values[d->g->inputs[k]].name, &d->ins[k]);
    if (st == IPU_OK)
        memcpy(out, d->ins, (size_t)d->g->n_inputs * sizeof(ipu_tensor_t));
    return st;
}

static ipu_status_t take_output(void *arg, int mb, int k, const ipu_tensor_t *t)
{
    data_t *d = arg;
    const char *name = d->g->values[d->g->outputs[k]].name;
    if (d->o->output_dir) {
        ipu_status_t st = cli_write_tensor("--output-dir", d->o->output_dir, d->o->format, d->o->batches, mb,
                                           "output", k, name, t);
        if (st != IPU_OK)
            return st;
    }
    if (d->o->digest) {
        d->digest += cli_output_digest(mb, k, t);
        d->digested++;
    }
    if (d->o->check) {
        int set = mb % d->files.n_sets;
        if (d->ref_set[k] != set) {
            free(d->refs[k].data);
            d->refs[k].data = NULL;
            d->ref_set[k] = -1;
            ipu_status_t st = cli_data_ref(&d->files, mb, k, &d->refs[k]);
            if (st != IPU_OK)
                return st;
            d->ref_set[k] = set;
        }
        d->checked++;
        if (d->pipelined && !d->held && !(d->held = open_memstream(&d->held_buf, &d->held_len)))
            return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
        if (cli_check_output(d->pipelined ? d->held : stdout, name, k, mb, mb == 0 && !d->pipelined, t,
                             &d->refs[k], cli_data_ref_path(&d->files, mb, k), d->o->rtol, d->o->atol,
                             &d->max_abs) != IPU_OK)
            d->mismatches++;
    }
    return IPU_OK;
}

/* The --check verdict over all micro-batches. */
static ipu_status_t check_summary(const cli_opts_t *o, long checked, long mismatches, double max_abs)
{
    if (!o->check)
        return IPU_OK;
    if (mismatches)
        return ipu_error(IPU_ERR_MISMATCH, "--check: %ld of %ld outputs differ from the reference "
                         "in %s", mismatches, checked, o->inputs);
    printf("check: %ld output%s of %d micro-batch%s ok (max abs err %.3g)\n", checked,
           checked == 1 ? "" : "s", o->batches, o->batches == 1 ? "" : "es", max_abs);
    return IPU_OK;
}

/* --digest's line: the sum of every output's digest (io.h). */
static void print_digest(const cli_opts_t *o, uint64_t digest, long outputs)
{
    if (o->digest)
        printf("digest: %016llx (%ld output%s of %d micro-batch%s)\n", (unsigned long long)digest, outputs,
               outputs == 1 ? "" : "s", o->batches, o->batches == 1 ? "" : "es");
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* --micro-batch M sizes the symbolic batch dimension of synthetic inputs: a
 * model whose inputs all have a fixed one takes only that size, an error
 * rather than micro-batches of another size than asked for. */
static ipu_status_t check_micro_batch(const cli_opts_t *o, const ipu_graph_t *g)
{
    if (!o->micro_batch_set || o->inputs || g->n_inputs == 0)
        return IPU_OK;
    for (int k = 0; k < g->n_inputs; k++) {
        const ipu_value_t *v = &g->values[g->inputs[k]];
        if (v->rank < 0 || (v->rank > 0 && v->dims[0] < 0))
            return IPU_OK; /* a symbolic batch dimension: M sets it (no shape: cli_synth_check) */
    }
    const ipu_value_t *v = &g->values[g->inputs[0]];
    char shape[256];
    ipu_value_describe(v, shape, sizeof(shape));
    if (v->rank <= 0)
        return ipu_error(IPU_ERR_INVALID_ARG, "--micro-batch %d: %s: input '%s' is a scalar, the model "
                         "has no batch dimension; leave out --micro-batch", o->micro_batch, o->model,
                         v->name);
    if (v->dims[0] == o->micro_batch)
        return IPU_OK;
    return ipu_error(IPU_ERR_INVALID_ARG, "--micro-batch %d: %s: input '%s' %s has a fixed batch "
                     "dimension of %lld; leave out --micro-batch, or export the model with a symbolic "
                     "batch dimension (e.g. dynamic_axes in torch.onnx.export)", o->micro_batch,
                     o->model, v->name, shape, (long long)v->dims[0]);
}

/* On a single rank a model annotated with stages runs whole: one line says
 * so, with the -np that would use them (the stages constant folding left
 * without a node to run are not counted). */
static void note_annotations(const char *model, const ipu_graph_t *g)
{
    int emptied, n_ann = ipu_partition_annotated_stages(g, &emptied);
    char folded[96] = "";
    if (emptied)
        snprintf(folded, sizeof(folded), "; constant folding left %d without a node to run, so %d run",
                 emptied, n_ann);
    if (n_ann > 1 && ipu_log_level_current >= IPU_LOG_WARN)
        cli_err_line("ipu-exec: note: %s: its %d-stage pipeline annotations (__pipeline_stage/"
                     "__ipu_number%s) are not used on a single rank, which runs the model whole (run "
                     "with mpirun -np %d to use them)", model, n_ann + emptied, folded, n_ann);
}

ipu_status_t cli_run_single(const cli_opts_t *o)
{
    ipu_session_t *s = NULL;
    data_t d = {0};
    double *times = NULL;
    ipu_session_opts_t so = o->sopts;
    ipu_binding_t b;
    if (o->bind && ipu_binding_plan(0, 1, 1, o->threads, &b) == IPU_OK) {
        so.core = b.pu[0];
        so.n_cpus = ipu_binding_cpus(&b, 0, so.cpus, IPU_DEVICE_MAX_CPUS);
    }
    ipu_status_t st = o->output_dir ? cli_check_output_dir("--output-dir", o->output_dir) : IPU_OK;
    if (st == IPU_OK && o->save_inputs)
        st = cli_check_output_dir("--save-inputs", o->save_inputs);
    if (st == IPU_OK)
        st = ipu_session_open(o->model, &so, &s);
    if (st != IPU_OK)
        return st;
    ipu_graph_t *g = s->g;
    if ((st = check_micro_batch(o, g)) != IPU_OK) {
        ipu_session_close(s);
        return st;
    }
    ipu_tensor_t *ins = NULL, *outs = NULL;
    if ((st = data_init(&d, o, g, 1)) != IPU_OK) /* g's inputs as the files give them */
        goto out;
    if (o->check && o->output_dir &&
        (st = cli_data_check_out_dir(&d.files, "--output-dir", o->output_dir, o->batches)) != IPU_OK)
        goto out;
    ins = calloc((size_t)g->n_inputs + 1, sizeof(*ins));
    outs = calloc((size_t)g->n_outputs + 1, sizeof(*outs));
    times = calloc((size_t)o->batches, sizeof(double));
    if (!ins || !outs || !times) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
        goto out;
    }
    if ((st = make_inputs(&d, 0, ins)) != IPU_OK ||
        (st = ipu_session_prepare(s, ins, g->n_inputs)) != IPU_OK)
        goto out;
    note_annotations(o->model, g); /* after prepare, which folds what the inputs' shapes make constant */
    int folded = 0;
    for (int i = 0; i < g->n_nodes; i++)
        folded += g->nodes[i].folded;
    char wb[IPU_BYTES_STR_LEN], ab[IPU_BYTES_STR_LEN], lb[IPU_BYTES_STR_LEN], ub[IPU_BYTES_STR_LEN],
        cb[IPU_BYTES_STR_LEN];
    printf("ipu-exec: %s: %d node%s (%d folded), 1 IPU (cpu): weights %s, activations %s "
           "(%s without reuse), %s of %s used\n", o->model, g->n_nodes, g->n_nodes == 1 ? "" : "s",
           folded, ipu_bytes_str(s->stage.weight_bytes, wb), ipu_bytes_str(s->stage.plan.arena_bytes, ab),
           ipu_bytes_str(s->stage.plan.live_bytes, lb), ipu_bytes_str(ipu_device_used(s->dev), ub),
           ipu_bytes_str(ipu_device_capacity(s->dev), cb));
    for (int r = 0; r < o->warmup && st == IPU_OK; r++)
        st = ipu_session_run(s, ins, g->n_inputs, outs);
    double loop0 = now_ms();
    for (int m = 0; m < o->batches && st == IPU_OK; m++) {
        if (m > 0 && (st = make_inputs(&d, m, ins)) != IPU_OK)
            break;
        double t0 = now_ms();
        st = ipu_session_run(s, ins, g->n_inputs, outs);
        times[m] = now_ms() - t0;
        for (int k = 0; k < g->n_outputs && st == IPU_OK; k++)
            st = take_output(&d, m, k, &outs[k]);
    }
    double loop_ms = now_ms() - loop0;
    if (st != IPU_OK)
        goto out;
    qsort(times, (size_t)o->batches, sizeof(double), cmp_double);
    double median = o->batches % 2 ? times[o->batches / 2]
                                   : 0.5 * (times[o->batches / 2 - 1] + times[o->batches / 2]);
    int64_t batch = g->n_inputs > 0 && ins[0].rank > 0 ? ins[0].dims[0] : 1;
    printf("latency ms: median %.3f min %.3f (%d run%s)\n", median, times[0], o->batches,
           o->batches == 1 ? "" : "s");
    /* as the pipeline reports it: samples over the wall time of the timed
     * micro-batches (inputs and outputs included) */
    printf("throughput: %.1f samples/s (%.3f s for %d micro-batch%s of %lld)\n",
           loop_ms > 0 ? 1e3 * (double)o->batches * (double)batch / loop_ms : 0.0, loop_ms / 1e3,
           o->batches, o->batches == 1 ? "" : "es", (long long)batch);
    char *prof = ipu_stage_profile_text(&s->stage, o->batches + o->warmup, NULL, PROFILE_NODES);
    if (prof)
        fputs(prof, stdout);
    free(prof);
    print_digest(o, d.digest, d.digested);
    st = check_summary(o, d.checked, d.mismatches, d.max_abs);
out:
    data_free(&d);
    free(ins);
    free(outs);
    free(times);
    ipu_session_close(s);
    return st;
}

static unsigned hash_str(const char *s)
{
    unsigned h = 2166136261u;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

/* When the replicas were done (report's replica_s): the first, the median
 * and the last, which paces the throughput; a last one far behind the
 * median (by a fifth and 50 ms) is said to be so (a slow core or host). */
static void print_replicas(const ipu_pipeline_report_t *r)
{
    int n = r->replicas, slow = 0;
    double *t = malloc((size_t)n * sizeof(double));
    if (t == NULL)
        return;
    for (int i = 0; i < n; i++) {
        t[i] = r->replica_s[i];
        if (t[i] > t[slow])
            slow = i;
    }
    qsort(t, (size_t)n, sizeof(double), cmp_double);
    double med = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    int P = r->ranks_per_replica;
    char ranks[64];
    snprintf(ranks, sizeof ranks, P > 1 ? "ranks %d-%d" : "rank %d", slow * P, slow * P + P - 1);
    printf("replicas: done after %.3f s (first), %.3f (median), %.3f (last: replica %d, %s)", t[0], med,
           t[n - 1], slow, ranks);
    if (med > 0 && t[n - 1] > 1.2 * med && t[n - 1] - med > 0.05)
        printf("; it took %.0f%% longer than the median: its cores or host were slower or busy",
               100 * (t[n - 1] / med - 1));
    printf("\n");
    free(t);
}

static void print_report(const cli_opts_t *o, const ipu_pipeline_report_t *r, int64_t batch)
{
    const char *mbs = o->batches == 1 ? "micro-batch" : "micro-batches";
    printf("pipeline: %d rank%s = %d replica%s x %d rank%s, %d stage%s, %d %s of %lld\n",
           r->world, r->world > 1 ? "s" : "", r->replicas, r->replicas > 1 ? "s" : "",
           r->ranks_per_replica, r->ranks_per_replica > 1 ? "s" : "", r->stages,
           r->stages > 1 ? "s" : "", o->batches, mbs, (long long)batch);
    printf("throughput: %.1f samples/s (%.3f s for %d %s)\n", r->samples_per_s, r->wall_s, o->batches, mbs);
    printf("latency ms per micro-batch: median %.3f min %.3f max %.3f", r->latency_med_ms, r->latency_min_ms,
           r->latency_max_ms);
    if (r->latency_samples < o->batches)
        printf(" (of %d micro-batches, every %d%s)", r->latency_samples,
               (o->batches + r->latency_samples - 1) / r->latency_samples,
               (o->batches + r->latency_samples - 1) / r->latency_samples == 2 ? "nd" : "th");
    printf("\n");
    for (int s = 0; s < r->stages && r->stage_busy; s++)
        printf("stage %d%s: busy %.1f%%, %.3f ms per micro-batch\n", s, r->replicas > 1 ? " (replica 0)" : "",
               100 * r->stage_busy[s], r->stage_ms[s]);
    if (r->replicas > 1 && r->replica_s)
        print_replicas(r);
    printf("peak RSS per rank MiB:");
    for (int i = 0; i < r->world && r->rank_rss_mib; i++)
        printf(" %.0f", r->rank_rss_mib[i]);
    printf("\n");
}

/* The mismatch lines of every rank that took outputs, gathered to rank 0 and
 * printed there after its plan and report (ranks' own stdout would reach
 * mpirun's in any order). Collective over MPI_COMM_WORLD. */
static void print_held(data_t *d, int rank)
{
    int world, len = d->held && fflush(d->held) == 0 ? (int)d->held_len : 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    int *lens = rank == 0 ? calloc((size_t)world, sizeof(int)) : NULL;
    int *offs = rank == 0 ? calloc((size_t)world, sizeof(int)) : NULL;
    MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
    char *all = NULL;
    int total = 0;
    for (int r = 0; rank == 0 && lens && offs && r < world; r++) {
        offs[r] = total;
        total += lens[r];
    }
    if (rank == 0)
        all = malloc((size_t)total + 1);
    MPI_Gatherv(d->held_buf, len, MPI_CHAR, all, lens, offs, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0 && all)
        fwrite(all, 1, (size_t)total, stdout);
    free(all);
    free(lens);
    free(offs);
}

ipu_status_t cli_run_pipeline(cli_opts_t *o, int rank)
{
    ipu_graph_t *g = NULL;
    data_t d = {0};
    ipu_pipeline_report_t rep = {0};
    ipu_partition_t plan = {0};
    ipu_status_t st = ipu_model_load_deferred(o->model, &g); /* weights copied after the plan */
    if (st == IPU_OK && (st = ipu_graph_bind_ops(g, ipu_op_lookup)) != IPU_OK)
        st = ipu_error_prefix(st, o->model);
    if (st == IPU_OK)
        st = check_micro_batch(o, g);
    if (st == IPU_OK)
        st = data_init(&d, o, g, rank == 0);
    if (st == IPU_OK && o->output_dir)
        st = cli_check_output_dir("--output-dir", o->output_dir);
    if (st == IPU_OK && o->check && o->output_dir)
        st = cli_data_check_out_dir(&d.files, "--output-dir", o->output_dir, o->batches);
    if (st == IPU_OK && o->save_inputs)
        st = cli_check_output_dir("--save-inputs", o->save_inputs);
    int world = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    d.rank = rank;
    d.replicas = o->replicas;
    d.ranks_per_replica = world / (o->replicas > 0 ? o->replicas : 1);
    if ((st = cli_agree_startup(o, rank, st, 0)) != IPU_OK)
        goto out;
    ipu_pipeline_params_t pp;
    ipu_pipeline_params_init(&pp);
    pp.replicas = o->replicas;
    pp.ipus_per_rank = o->ipus_per_rank;
    pp.micro_batches = o->batches;
    pp.warmup = o->warmup;
    pp.credits = o->credits;
    pp.threads = o->threads;
    pp.profile = o->sopts.profile ? PROFILE_NODES : 0;
    pp.ipu_memory = o->sopts.ipu_memory;
    pp.transport.kind = o->transport;
    pp.transport.timeout_s = o->timeout_s;
    pp.make_inputs = make_inputs;
    pp.take_output = take_output;
    d.pipelined = 1; /* rank 0 prints the verdict after the plan */
    pp.bind = o->bind;
    pp.arg = &d;
    ipu_partition_params_t part;
    ipu_partition_params_init(&part);
    st = ipu_pipeline_run(g, MPI_COMM_WORLD, &pp, &part, &plan, &rep);
    if (st != IPU_OK && rep.setup_failed) {
        /* every rank failed before any transfer: print an error once */
        unsigned h = hash_str(ipu_error_message()), lo, hi;
        ipu_watchdog_arm(o->timeout_s, rank, "agreeing on the set-up error");
        MPI_Allreduce(&h, &lo, 1, MPI_UNSIGNED, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&h, &hi, 1, MPI_UNSIGNED, MPI_MAX, MPI_COMM_WORLD);
        ipu_watchdog_disarm();
        o->failed_together = 1;
        if (lo == hi && rank != 0)
            ipu_error(st, "%s", "");
        goto out;
    }
    /* a failure during the run: no collective (a peer may be gone); main
     * aborts the job */
    if (st != IPU_OK)
        goto out;
    /* every rank finished its stages: agree on --check */
    long cnt[2] = {d.checked, d.mismatches}, all[2];
    double mx = d.max_abs, allmx;
    ipu_watchdog_arm(o->timeout_s, rank, "agreeing on --check");
    MPI_Allreduce(cnt, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&mx, &allmx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    uint64_t digest = 0; /* a sum mod 2^64: any rank may have taken any output */
    long digested = 0;
    if (o->digest) {
        MPI_Allreduce(&d.digest, &digest, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(&d.digested, &digested, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    }
    o->failed_together = 1;
    if (rank == 0) {
        ipu_partition_print(&plan, stdout);
        int64_t batch = g->n_inputs > 0 && g->values[g->inputs[0]].rank > 0 ? g->values[g->inputs[0]].dims[0] : 1;
        print_report(o, &rep, batch);
        if (rep.profile)
            fputs(rep.profile, stdout);
    }
    print_held(&d, rank);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    ipu_watchdog_disarm();
    if (rank == 0)
        print_digest(o, digest, digested);
    if (rank == 0)
        st = check_summary(o, all[0], all[1], allmx);
    else if (o->check && all[1])
        st = ipu_error(IPU_ERR_MISMATCH, "%s", ""); /* rank 0 says it */
out:
    ipu_pipeline_report_free(&rep);
    ipu_partition_free(&plan);
    data_free(&d);
    ipu_graph_free(g);
    return st;
}
