/* The options of a run: the --help text and the parser that fills
 * cli_opts_t (cli.h). */
#include "cli/cli.h"
#include "cli/io.h"

#include "exec/ops/registry.h"
#include "graph/load.h"

#include <getopt.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void usage(FILE *f)
{
    fprintf(f,
"Usage: " CLI_PROG " MODEL.onnx [OPTIONS]\n"
"       " CLI_PROG " plan MODEL.onnx [--stages S] [--write FILE]   (see plan --help)\n"
"       " CLI_PROG " info [--ipus-per-rank K]   (under mpirun: where each rank and IPU runs)\n"
"       " CLI_PROG " info --config [--markdown]   (every setting, its value and source)\n"
"Run an ONNX model on simulated IPUs (CPU backend, an IPU Model) and report\n"
"latency and throughput.\n"
"\n"
"Inputs and outputs:\n"
"  --inputs DIR        read the inputs from DIR: input_N.pb (onnx.TensorProto),\n"
"                      input_N.npy, NAME.pb or NAME.npy (NAME: the input's\n"
"                      name) for every micro-batch; or, when DIR holds no such\n"
"                      file but test_data_set_0/, 1/, ..., micro-batch M reads\n"
"                      test_data_set_<M mod sets>/. Default: seeded synthetic\n"
"                      inputs of the model's shapes (symbolic dimensions = 1)\n"
"  --seed N            seed of the synthetic inputs (default 0); micro-batch M\n"
"                      uses seed N+M\n"
"  --micro-batch M     samples per micro-batch: the size of symbolic batch\n"
"                      dimensions of synthetic inputs (default 1); a model\n"
"                      whose batch dimension is fixed takes only that size\n"
"  --output-dir DIR    write the outputs as DIR/output_N.pb, or with --batches\n"
"                      > 1 as DIR/test_data_set_M/output_N.pb per micro-batch M\n"
"                      (with --check, not where its references are read from)\n"
"  --save-inputs DIR   write the inputs used (read or synthetic) the same way,\n"
"                      as input_N.pb: with the outputs, --inputs for a replay\n"
"  --format pb|npy     files written by --output-dir and --save-inputs:\n"
"                      onnx.TensorProto (default) or .npy\n"
"  --check             compare each micro-batch's outputs with output_N.pb (or\n"
"                      output_N.npy, NAME.pb, NAME.npy) of the files it read\n"
"                      (numpy.allclose); exit 1 and print the worst element on\n"
"                      a mismatch. Without --inputs: the test_data_set_M/ next\n"
"                      to the model (the ONNX test-data layout), if there are\n"
"                      any; micro-batch M reads test_data_set_<M mod sets>/\n"
"  --rtol X, --atol X  tolerances of --check, finite and >= 0 (default 1e-3\n"
"                      and 1e-4)\n"
"  --digest            print one digest of every micro-batch's outputs, byte\n"
"                      for byte: the same on one rank and in any pipeline or\n"
"                      replicas of the same micro-batches, and for other bytes\n"
"                      a different one (but for a 2^-64 chance); compares long\n"
"                      runs without writing their outputs\n"
"\n"
"Execution:\n"
"  --batches N         micro-batches to run (default: one per replica, so 1\n"
"                      without --replicas); on one IPU latency is the\n"
"                      median/min of these runs\n"
"  --warmup N          untimed runs before them (per replica in a pipeline;\n"
"                      default 1 when N > 1, else 0)\n"
"  --threads T         threads per IPU for the kernels (default 1)\n"
"  --profile           time every node; print the time per op type and the 10\n"
"                      slowest nodes (under mpirun: of every rank's stages)\n"
"  --ipu-memory SIZE   IPU memory capacity, e.g. 900M, 2G (default 900M, an\n"
"                      IPU Mk2); a model that does not fit is an error\n"
"\n"
"Pipeline (under mpirun: world = replicas x ranks per replica):\n"
"  --replicas R        data-parallel copies of the pipeline (default 1); micro-\n"
"                      batch M goes to replica M %% R\n"
"  --ipus-per-rank K   IPUs owned by each rank (default 1): stages = ranks per\n"
"                      replica x K, stage s on rank s / K, IPU s %% K\n"
"  --credits C         micro-batches in flight per boundary link, 1 to 16\n"
"                      (default 2)\n"
"  --transport T       ucx (default) or mpi, between ranks\n"
"  --bind cores|none   bind each IPU worker to its own core of the rank's NUMA\n"
"                      domain, dealt over the host's ranks (default cores)\n"
"  --timeout S         seconds without progress before a rank gives up and\n"
"                      names the peer it waits for (default 30)\n"
"  The model is partitioned as `ipu-exec plan` shows; models annotated with\n"
"  __pipeline_stage / __ipu_number keep their placement (a single rank runs\n"
"  such a model whole, and says so on stderr).\n"
"\n"
"Information:\n"
"  --list-ops          print the supported operators (OpType since-until) and exit\n"
"  -h, --help          this help;  -V, --version  the version\n"
"\n"
"Exit status: 0 success, 1 --check mismatch, 2 bad model/input/usage,\n"
"3 internal or transport failure. Works bare and under mpirun -np 1.\n"
"Environment: IPU_EXEC_LOG_LEVEL=error|warn|info|debug; IPU_EXEC_ABORT_GRACE=S,\n"
"seconds a rank that lost a peer waits for the launcher to end the job\n"
"(default 10) before it exits. All settings: " CLI_PROG " info --config.\n"
"See the manual page ipu-exec(1) (docs/ipu-exec.1).\n");
}

/* --list-ops: the supported operators, "[DOMAIN.]OpType since-until". */
static void list_ops(void)
{
    for (int i = 0; ipu_op_registry_entry(i); i++) {
        const ipu_op_t *op = ipu_op_registry_entry(i);
        /* the opsets a model can have here: the loader takes 7..17 */
        int lo = op->since_version < IPU_OPSET_MIN ? IPU_OPSET_MIN : op->since_version;
        int hi = op->until_version > IPU_OPSET_MAX ? IPU_OPSET_MAX : op->until_version;
        if (op->domain[0] == '\0' && lo > hi)
            continue;
        if (op->domain[0] != '\0')
            lo = op->since_version, hi = op->until_version;
        printf("%s%s%s %d-%d\n", op->domain, op->domain[0] ? "." : "", op->op_type, lo, hi);
    }
}

/* getopt_long values of the long options without a short form */
enum { O_INPUTS = 256, O_OUTDIR, O_CHECK, O_BATCHES, O_THREADS, O_MEM, O_SEED,
       O_RTOL, O_ATOL, O_WARMUP, O_LISTOPS, O_PROFILE, O_MB, O_REPLICAS, O_K,
       O_CREDITS, O_TRANSPORT, O_TIMEOUT, O_BIND, O_SAVE_INPUTS, O_FORMAT, O_DIGEST };
static const struct option longopts[] = {
    {"inputs", required_argument, NULL, O_INPUTS},
    {"output-dir", required_argument, NULL, O_OUTDIR},
    {"check", no_argument, NULL, O_CHECK},
    {"digest", no_argument, NULL, O_DIGEST},
    {"save-inputs", required_argument, NULL, O_SAVE_INPUTS},
    {"format", required_argument, NULL, O_FORMAT},
    {"batches", required_argument, NULL, O_BATCHES},
    {"warmup", required_argument, NULL, O_WARMUP},
    {"threads", required_argument, NULL, O_THREADS},
    {"ipu-memory", required_argument, NULL, O_MEM},
    {"seed", required_argument, NULL, O_SEED},
    {"rtol", required_argument, NULL, O_RTOL},
    {"atol", required_argument, NULL, O_ATOL},
    {"list-ops", no_argument, NULL, O_LISTOPS},
    {"profile", no_argument, NULL, O_PROFILE},
    {"micro-batch", required_argument, NULL, O_MB},
    {"replicas", required_argument, NULL, O_REPLICAS},
    {"ipus-per-rank", required_argument, NULL, O_K},
    {"credits", required_argument, NULL, O_CREDITS},
    {"transport", required_argument, NULL, O_TRANSPORT},
    {"timeout", required_argument, NULL, O_TIMEOUT},
    {"bind", required_argument, NULL, O_BIND},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

/* Option c (getopt_long's value, its argument in optarg). Returns -1 to go
 * on, else the exit code. */
static int option(int c, char **argv, cli_opts_t *o)
{
    int seed;
    switch (c) {
    case O_INPUTS: o->inputs = optarg; break;
    case O_OUTDIR: o->output_dir = optarg; break;
    case O_CHECK: o->check = 1; break;
    case O_DIGEST: o->digest = 1; break;
    case O_SAVE_INPUTS: o->save_inputs = optarg; break;
    case O_FORMAT:
        if (strcmp(optarg, "pb") == 0)
            o->format = CLI_FORMAT_PB;
        else if (strcmp(optarg, "npy") == 0)
            o->format = CLI_FORMAT_NPY;
        else
            return cli_usage_error("--format %s: expected pb or npy", optarg);
        break;
    case O_PROFILE: o->sopts.profile = 1; break;
    case O_MB:
        if (cli_parse_int(optarg, 1, &o->micro_batch))
            return cli_usage_error("--micro-batch %s: expected a positive integer", optarg);
        o->micro_batch_set = 1;
        break;
    case O_REPLICAS:
        if (cli_parse_int(optarg, 1, &o->replicas))
            return cli_usage_error("--replicas %s: expected a positive integer", optarg);
        break;
    case O_K:
        if (cli_parse_int(optarg, 1, &o->ipus_per_rank) || o->ipus_per_rank > 64)
            return cli_usage_error("--ipus-per-rank %s: expected an integer from 1 to 64", optarg);
        break;
    case O_CREDITS:
        if (cli_parse_int(optarg, 1, &o->credits) || o->credits > 16)
            return cli_usage_error("--credits %s: expected an integer from 1 to 16", optarg);
        break;
    case O_TRANSPORT:
        if (strcmp(optarg, "ucx") == 0)
            o->transport = IPU_TRANSPORT_UCX;
        else if (strcmp(optarg, "mpi") == 0)
            o->transport = IPU_TRANSPORT_MPI;
        else
            return cli_usage_error("--transport %s: expected ucx or mpi", optarg);
        break;
    case O_BIND:
        if (strcmp(optarg, "cores") == 0)
            o->bind = 1;
        else if (strcmp(optarg, "none") == 0)
            o->bind = 0;
        else
            return cli_usage_error("--bind %s: expected cores or none", optarg);
        break;
    case O_TIMEOUT: {
        char *end;
        o->timeout_s = strtod(optarg, &end);
        /* NaN and inf refused; deadlines are time_t seconds from now */
        if (end == optarg || *end || !(o->timeout_s > 0) || o->timeout_s > 1e9)
            return cli_usage_error("--timeout %s: expected a positive number of seconds, at most 1e9",
                                   optarg);
        break;
    }
    case O_BATCHES:
        if (cli_parse_int(optarg, 1, &o->batches))
            return cli_usage_error("--batches %s: expected a positive integer", optarg);
        o->batches_set = 1;
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
        if (end == optarg || *end || !(v >= 0) || isinf(v)) /* !(v >= 0): NaN too */
            return c == O_RTOL ? cli_usage_error("--rtol %s: expected a finite non-negative number", optarg)
                               : cli_usage_error("--atol %s: expected a finite non-negative number", optarg);
        *(c == O_RTOL ? &o->rtol : &o->atol) = v;
        break;
    }
    case O_LISTOPS:
        list_ops();
        return 0;
    case 'h': usage(stdout); return 0;
    case 'V': printf(CLI_PROG " %s\n", IPU_EXEC_VERSION); return 0;
    case ':': return cli_usage_error("option %s needs a value", argv[optind - 1]);
    default: return cli_usage_error("unknown option %s", argv[optind - 1]);
    }
    return -1;
}

/* --check without --inputs: the ONNX test-data layout, MODEL_DIR/model.onnx
 * and MODEL_DIR/test_data_set_M/{input,output}_N.pb, read as micro-batch
 * M's (run.c names them). Returns -1 to go on, else the exit code. */
static int default_inputs(cli_opts_t *o)
{
    static char parent[4096];
    char dir[4200], copy[4096];
    struct stat sb;
    snprintf(copy, sizeof(copy), "%s", o->model);
    snprintf(parent, sizeof(parent), "%s", strchr(o->model, '/') ? dirname(copy) : ".");
    snprintf(dir, sizeof(dir), "%s%stest_data_set_0", strchr(o->model, '/') ? parent : "",
             strchr(o->model, '/') && strcmp(parent, "/") != 0 ? "/" : "");
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return cli_usage_error("--check needs --inputs DIR holding the reference output_N.pb, or "
                               "the ONNX test-data layout (a test_data_set_0/ directory next to "
                               "the model); there is no %s", dir);
    o->inputs = parent;
    o->inputs_sets = 1;
    return -1;
}

int cli_parse_options(int argc, char **argv, cli_opts_t *o)
{
    int c, rc;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hV", longopts, NULL)) != -1)
        if ((rc = option(c, argv, o)) >= 0)
            return rc;
    if (optind >= argc)
        return cli_usage_error("%s", "no model given (usage: " CLI_PROG " MODEL.onnx [OPTIONS])");
    if (optind + 1 < argc)
        return cli_usage_error("unexpected argument %s", argv[optind + 1]);
    o->model = argv[optind];
    if (o->check && !o->inputs && (rc = default_inputs(o)) >= 0)
        return rc;
    if (o->micro_batch_set && o->inputs && cli_launcher_rank() <= 0)
        cli_err_line(CLI_PROG ": note: --micro-batch is not used with --inputs: the input files' shapes "
                     "set the batch");
    /* one micro-batch per replica unless told otherwise */
    if (!o->batches_set)
        o->batches = o->replicas;
    o->sopts.threads = o->threads;
    if (o->warmup < 0)
        o->warmup = o->batches > 1 ? 1 : 0;
    return -1;
}
