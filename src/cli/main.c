/* ipu-exec: run an ONNX model on (simulated) IPUs. The command line is thin:
 * it parses options and calls the library (exec/session.h). */
#include "cli/cli.h"
#include "cli/io.h"
#include "common/log.h"
#include "exec/ops/registry.h"
#include "exec/session.h"

#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROG "ipu-exec"

typedef struct {
    const char *model, *inputs, *output_dir;
    int check, batches, threads, warmup;
    unsigned seed;
    double rtol, atol;
    ipu_session_opts_t sopts;
} cli_opts_t;

static void usage(FILE *f)
{
    fprintf(f,
"Usage: " PROG " MODEL.onnx [OPTIONS]\n"
"       " PROG " plan MODEL.onnx [--stages S] [--write FILE]   (see plan --help)\n"
"Run an ONNX model on simulated IPUs (CPU backend, an IPU Model) and report\n"
"latency and throughput.\n"
"\n"
"Inputs and outputs:\n"
"  --inputs DIR        read input_N.pb (onnx.TensorProto) or input_N.npy from DIR\n"
"                      (an ONNX test-data directory); default: seeded synthetic\n"
"                      inputs of the model's shapes (symbolic dimensions = 1)\n"
"  --seed N            seed of the synthetic inputs (default 0)\n"
"  --output-dir DIR    write the outputs as DIR/output_N.pb\n"
"  --check             compare the outputs with output_N.pb in the --inputs DIR\n"
"                      (numpy.allclose); exit 1 and print the worst element on\n"
"                      a mismatch\n"
"  --rtol X, --atol X  tolerances of --check (default 1e-3 and 1e-4)\n"
"\n"
"Execution:\n"
"  --batches N         timed runs (default 1); latency is the median/min of them\n"
"  --warmup N          untimed runs before them (default 1 when N > 1, else 0)\n"
"  --threads T         threads per IPU for the kernels (default 1)\n"
"  --profile           time every node; print the op types and nodes that take\n"
"                      the most time\n"
"  --ipu-memory SIZE   IPU memory capacity, e.g. 900M, 2G (default 900M, an\n"
"                      IPU Mk2); a model that does not fit is an error\n"
"\n"
"Information:\n"
"  --list-ops          print the supported operators (OpType since-until) and exit\n"
"  -h, --help          this help;  -V, --version  the version\n"
"\n"
"Exit status: 0 success, 1 --check mismatch, 2 bad model/input/usage,\n"
"3 internal or transport failure. Works bare and under mpirun -np 1.\n"
"Environment: IPU_EXEC_LOG_LEVEL=error|warn|info|debug.\n"
"See the manual page ipu-exec(1) (docs/ipu-exec.1).\n");
}

int cli_parse_size(const char *s, size_t *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v <= 0)
        return -1;
    switch (*end) {
    case 'k': case 'K': v *= 1024; end++; break;
    case 'm': case 'M': v *= 1024 * 1024; end++; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
    default: break;
    }
    if (*end == 'i')
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0')
        return -1;
    *out = (size_t)v;
    return 0;
}

int cli_parse_int(const char *s, int lo, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > 1000000000)
        return -1;
    *out = (int)v;
    return 0;
}

int cli_usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, PROG ": ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "; see " PROG " --help\n");
    return 2;
}

/* Returns -1 to continue, else an exit code. */
static int parse(int argc, char **argv, cli_opts_t *o)
{
    enum { O_INPUTS = 256, O_OUTDIR, O_CHECK, O_BATCHES, O_THREADS, O_MEM, O_SEED,
           O_RTOL, O_ATOL, O_WARMUP, O_LISTOPS, O_PROFILE };
    static const struct option longopts[] = {
        {"inputs", required_argument, NULL, O_INPUTS},
        {"output-dir", required_argument, NULL, O_OUTDIR},
        {"check", no_argument, NULL, O_CHECK},
        {"batches", required_argument, NULL, O_BATCHES},
        {"warmup", required_argument, NULL, O_WARMUP},
        {"threads", required_argument, NULL, O_THREADS},
        {"ipu-memory", required_argument, NULL, O_MEM},
        {"seed", required_argument, NULL, O_SEED},
        {"rtol", required_argument, NULL, O_RTOL},
        {"atol", required_argument, NULL, O_ATOL},
        {"list-ops", no_argument, NULL, O_LISTOPS},
        {"profile", no_argument, NULL, O_PROFILE},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int c, seed;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hV", longopts, NULL)) != -1) {
        switch (c) {
        case O_INPUTS: o->inputs = optarg; break;
        case O_OUTDIR: o->output_dir = optarg; break;
        case O_CHECK: o->check = 1; break;
        case O_PROFILE: o->sopts.profile = 1; break;
        case O_BATCHES:
            if (cli_parse_int(optarg, 1, &o->batches))
                return cli_usage_error("--batches %s: expected a positive integer", optarg);
            break;
        case O_WARMUP:
            if (cli_parse_int(optarg, 0, &o->warmup))
                return cli_usage_error("--warmup %s: expected a non-negative integer", optarg);
            break;
        case O_THREADS:
            if (cli_parse_int(optarg, 1, &o->threads) || o->threads > 1024)
                return cli_usage_error("--threads %s: expected an integer from 1 to 1024", optarg);
            break;
        case O_MEM:
            if (cli_parse_size(optarg, &o->sopts.ipu_memory))
                return cli_usage_error("--ipu-memory %s: expected a size such as 900M or 2G", optarg);
            break;
        case O_SEED:
            if (cli_parse_int(optarg, 0, &seed))
                return cli_usage_error("--seed %s: expected a non-negative integer", optarg);
            o->seed = (unsigned)seed;
            break;
        case O_RTOL: case O_ATOL: {
            char *end;
            double v = strtod(optarg, &end);
            if (end == optarg || *end || v < 0)
                return cli_usage_error("tolerance %s: expected a non-negative number", optarg);
            *(c == O_RTOL ? &o->rtol : &o->atol) = v;
            break;
        }
        case O_LISTOPS:
            for (int i = 0; ipu_op_registry_entry(i); i++) {
                const ipu_op_t *op = ipu_op_registry_entry(i);
                printf("%s%s%s %d-%d\n", op->domain, op->domain[0] ? "." : "", op->op_type,
                       op->since_version, op->until_version);
            }
            return 0;
        case 'h': usage(stdout); return 0;
        case 'V': printf(PROG " %s\n", IPU_EXEC_VERSION); return 0;
        case ':': return cli_usage_error("option %s needs a value", argv[optind - 1]);
        default: return cli_usage_error("unknown option %s", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage_error("%s", "no model given (usage: " PROG " MODEL.onnx [OPTIONS])");
    if (optind + 1 < argc)
        return cli_usage_error("unexpected argument %s", argv[optind + 1]);
    o->model = argv[optind];
    if (o->check && !o->inputs)
        return cli_usage_error("%s", "--check needs --inputs DIR holding the reference output_N.pb");
    o->sopts.threads = o->threads;
    if (o->warmup < 0)
        o->warmup = o->batches > 1 ? 1 : 0;
    return -1;
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

typedef struct { const char *op; double ms; int count; } op_time_t;

static int cmp_op_time(const void *a, const void *b)
{
    double x = ((const op_time_t *)a)->ms, y = ((const op_time_t *)b)->ms;
    return (x < y) - (x > y);
}

/* Per op type: total time over the timed and warm-up runs, as a share. */
static void print_profile(const ipu_stage_t *st, int runs)
{
    const ipu_graph_t *g = st->g;
    op_time_t *t = calloc((size_t)st->n_nodes + 1, sizeof(*t));
    int nt = 0;
    double total = 0;
    if (t == NULL)
        return;
    for (int i = 0; i < st->n_nodes; i++) {
        const ipu_node_t *n = &g->nodes[st->nodes[i]];
        int k = 0;
        while (k < nt && strcmp(t[k].op, n->op_type) != 0)
            k++;
        if (k == nt)
            t[nt++].op = n->op_type;
        t[k].ms += st->node_ms[i];
        t[k].count++;
        total += st->node_ms[i];
    }
    qsort(t, (size_t)nt, sizeof(*t), cmp_op_time);
    printf("profile: %-24s %6s %10s %6s\n", "op", "nodes", "ms/run", "share");
    for (int k = 0; k < nt; k++)
        printf("profile: %-24s %6d %10.3f %5.1f%%\n", t[k].op, t[k].count, t[k].ms / runs,
               total > 0 ? 100 * t[k].ms / total : 0);
    free(t);
}

static ipu_status_t run(const cli_opts_t *o)
{
    ipu_session_t *s = NULL;
    ipu_status_t st = ipu_session_open(o->model, &o->sopts, &s);
    if (st != IPU_OK)
        return st;
    ipu_graph_t *g = s->g;
    int n_in = g->n_inputs;
    ipu_tensor_t *ins = calloc((size_t)n_in + 1, sizeof(*ins));
    ipu_tensor_t *outs = calloc((size_t)g->n_outputs + 1, sizeof(*outs));
    double *times = calloc((size_t)o->batches, sizeof(double));
    if (!ins || !outs || !times) {
        st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
        goto out;
    }
    st = o->inputs ? cli_read_inputs(g, o->inputs, ins) : cli_synth_inputs(g, o->seed, ins);
    if (st == IPU_OK)
        st = ipu_session_prepare(s, ins, n_in);
    if (st != IPU_OK)
        goto out;
    int folded = 0;
    for (int i = 0; i < g->n_nodes; i++)
        folded += g->nodes[i].folded;
    printf(PROG ": %s: %d nodes (%d folded), 1 IPU (cpu): weights %.1f MiB, activations %.1f MiB "
           "(%.1f MiB without reuse), %.1f of %.0f MiB used\n",
           o->model, g->n_nodes, folded, s->stage.weight_bytes / 1048576.0,
           s->stage.plan.arena_bytes / 1048576.0, s->stage.plan.live_bytes / 1048576.0,
           ipu_device_used(s->dev) / 1048576.0, ipu_device_capacity(s->dev) / 1048576.0);
    for (int r = 0; r < o->warmup && st == IPU_OK; r++)
        st = ipu_session_run(s, ins, n_in, outs);
    for (int r = 0; r < o->batches && st == IPU_OK; r++) {
        double t0 = now_ms();
        st = ipu_session_run(s, ins, n_in, outs);
        times[r] = now_ms() - t0;
    }
    if (st != IPU_OK)
        goto out;
    qsort(times, (size_t)o->batches, sizeof(double), cmp_double);
    double median = o->batches % 2 ? times[o->batches / 2]
                                   : 0.5 * (times[o->batches / 2 - 1] + times[o->batches / 2]);
    int64_t batch = n_in > 0 && ins[0].rank > 0 ? ins[0].dims[0] : 1;
    printf("latency ms: median %.3f min %.3f (%d run%s)\n", median, times[0], o->batches,
           o->batches == 1 ? "" : "s");
    printf("throughput: %.1f samples/s (batch %lld)\n", median > 0 ? 1e3 * (double)batch / median : 0.0,
           (long long)batch);
    if (s->stage.node_ms)
        print_profile(&s->stage, o->batches + o->warmup);
    if (o->output_dir && (st = cli_write_outputs(g, outs, o->output_dir)) != IPU_OK)
        goto out;
    if (o->check)
        st = cli_check_outputs(g, outs, o->inputs, o->rtol, o->atol);
out:
    for (int k = 0; ins && k < n_in; k++)
        free(ins[k].data);
    free(ins);
    free(outs);
    free(times);
    ipu_session_close(s);
    return st;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "plan") == 0)
        return cli_plan_main(argc - 1, argv + 1);
    cli_opts_t o = {.batches = 1, .threads = 1, .warmup = -1, .rtol = 1e-3, .atol = 1e-4};
    ipu_session_opts_init(&o.sopts);
    int rc = parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    /* under mpirun (Open MPI sets OMPI_COMM_WORLD_SIZE) join the job */
    int mpi = getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMIX_RANK") != NULL;
    int rank = -1, size = 1;
    if (mpi) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
    }
    ipu_log_init(rank);
    ipu_status_t st;
    if (size > 1)
        st = ipu_error(IPU_ERR_UNSUPPORTED, "%d ranks: the multi-rank pipeline is not built yet; "
                       "run with mpirun -np 1", size);
    else
        st = run(&o);
    if (st != IPU_OK)
        fprintf(stderr, PROG ": %s\n", ipu_error_message());
    fflush(stdout);
    if (mpi)
        MPI_Finalize();
    return ipu_status_exit_code(st);
}
