/* ipu-exec plan: partition a model into pipeline stages and print (or
 * write) the plan without running it. */
#include "cli/cli.h"
#include "cli/io.h"
#include "exec/measure.h"
#include "exec/ops/registry.h"
#include "exec/prepare.h"
#include "graph/annotate.h"
#include "graph/load.h"
#include "partition/partition.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void plan_usage(FILE *f)
{
    fprintf(f,
"Usage: ipu-exec plan MODEL.onnx [--stages S] [--ipus-per-rank K] [--ipu-memory SIZE]\n"
"                     [--inputs DIR] [--micro-batch M] [--replicas R] [--measure]\n"
"                     [--write ANNOTATED.onnx]\n"
"Partition MODEL into S pipeline stages and print one row per stage: its rank\n"
"and IPU, nodes, GFLOP, weight MiB, peak activation MiB, boundary bytes in and\n"
"out per micro-batch, estimated ms, then the imbalance (slowest / mean stage).\n"
"A model annotated with __pipeline_stage / __ipu_number (PopART, PopRT) keeps\n"
"its placement. --write saves a copy annotated with the plan (write it next\n"
"to the original when the model has external data). Shapes come from --inputs\n"
"or the declared input shapes: --micro-batch M (default 1) sizes their symbolic\n"
"batch dimensions, as a run's synthetic inputs; other symbolic dimensions are 1.\n"
"The plan is per replica: --replicas R (data-parallel copies, as a run's) only\n"
"says how many copies of it a run of R x S/K ranks makes.\n"
"Costs come from the cost model (FLOPs and bytes, the same on any machine);\n"
"--measure times the Conv/Gemm/MatMul nodes on this machine's kernels and\n"
"fuses activations first, as a pipelined run does, so the plan is the one\n"
"`mpirun ipu-exec MODEL` makes (up to timing noise; about a second more).\n"
"plan runs in one process, without MPI: under mpirun only rank 0 says\n"
"anything (and writes --write), and the stage count is --stages, not -np.\n");
}

/* Set the graph inputs' shapes from tensors and infer (no device). */
ipu_status_t cli_infer_shapes(ipu_graph_t *g, const char *inputs_dir, int micro_batch)
{
    /* room for the inputs with a default that the files give */
    ipu_tensor_t *ins = calloc((size_t)g->n_inputs + (size_t)g->n_defaults + 1, sizeof(*ins));
    if (ins == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    ipu_status_t st = inputs_dir ? cli_read_inputs(g, inputs_dir, ins) : cli_synth_inputs(g, 0, micro_batch, ins);
    for (int k = 0; st == IPU_OK && k < g->n_inputs; k++)
        ipu_value_set_shape(&g->values[g->inputs[k]], ins[k].dtype, ins[k].rank, ins[k].dims);
    for (int k = 0; k < g->n_inputs; k++)
        free(ins[k].data);
    free(ins);
    if (st == IPU_OK)
        st = ipu_graph_infer(g);
    return st;
}

/* --write FILE checked before any work: not a directory, in a writable
 * folder. Returns the exit code of a usage error, or -1 to go on. */
static int check_write_dest(const char *write)
{
    char copy[4096];
    struct stat sb;
    if (stat(write, &sb) == 0 && S_ISDIR(sb.st_mode))
        return cli_usage_error("--write %s: is a directory; give a file name", write);
    snprintf(copy, sizeof(copy), "%s", write);
    const char *dir = dirname(copy);
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return cli_usage_error("--write %s: its folder does not exist", write);
    /* a file made and removed: permissions alone do not tell (root, /proc,
     * a read-only mount) */
    char probe[4200];
    snprintf(probe, sizeof(probe), "%s/.ipu-exec-plan-XXXXXX", dir);
    int fd = mkstemp(probe);
    if (fd < 0) {
        char what[4300];
        snprintf(what, sizeof(what), "%s: cannot create a file in its folder: %s", write, strerror(errno));
        return cli_usage_error("--write %s", what);
    }
    close(fd);
    unlink(probe);
    return -1;
}

/* The written copy names the model's external data files by the same
 * relative paths (graph/annotate.h): it must be written in the model's
 * folder when it has any. */
static ipu_status_t check_write_extdata(const ipu_graph_t *g, const char *model, const char *write)
{
    char copy[4096], a[PATH_MAX], b[PATH_MAX];
    int external = 0; /* (the model file's own mapping is not external data) */
    for (int i = 0; i < g->n_values && !external; i++)
        external = g->values[i].data_kind == IPU_CONST_MAPPED;
    snprintf(copy, sizeof(copy), "%s", write);
    if (!external || !g->dir || !realpath(g->dir, a) || !realpath(dirname(copy), b) ||
        strcmp(a, b) == 0)
        return IPU_OK;
    return ipu_error(IPU_ERR_INVALID_ARG, "--write %s: %s keeps weights in external data files "
                     "that the copy names by relative paths; write it in the model's folder %s",
                     write, model, a);
}

int cli_plan_main(int argc, char **argv)
{
    enum { O_STAGES = 256, O_K, O_MEM, O_INPUTS, O_WRITE, O_MEASURE, O_MB, O_REPLICAS };
    static const struct option longopts[] = {
        {"stages", required_argument, NULL, O_STAGES},
        {"ipus-per-rank", required_argument, NULL, O_K},
        {"ipu-memory", required_argument, NULL, O_MEM},
        {"inputs", required_argument, NULL, O_INPUTS},
        {"write", required_argument, NULL, O_WRITE},
        {"measure", no_argument, NULL, O_MEASURE},
        {"micro-batch", required_argument, NULL, O_MB},
        {"replicas", required_argument, NULL, O_REPLICAS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    ipu_partition_params_t pp;
    ipu_partition_params_init(&pp);
    const char *inputs = NULL, *write = NULL;
    int c, measure = 0, stages_set = 0, micro_batch = 1, micro_batch_set = 0, replicas = 1;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case O_STAGES:
            if (cli_parse_int(optarg, 1, &pp.stages))
                return cli_usage_error("--stages %s: expected a positive integer", optarg);
            stages_set = 1;
            break;
        case O_K:
            if (cli_parse_int(optarg, 1, &pp.ipus_per_rank))
                return cli_usage_error("--ipus-per-rank %s: expected a positive integer", optarg);
            break;
        case O_MEM:
            if (cli_parse_size(optarg, &pp.ipu_memory))
                return cli_usage_error("--ipu-memory %s: expected a size such as 900M or 2G", optarg);
            break;
        case O_MB:
            if (cli_parse_int(optarg, 1, &micro_batch))
                return cli_usage_error("--micro-batch %s: expected a positive integer", optarg);
            micro_batch_set = 1;
            break;
        case O_REPLICAS:
            if (cli_parse_int(optarg, 1, &replicas))
                return cli_usage_error("--replicas %s: expected a positive integer", optarg);
            break;
        case O_INPUTS: inputs = optarg; break;
        case O_WRITE: write = optarg; break;
        case O_MEASURE: measure = 1; break;
        case 'h': plan_usage(stdout); return 0;
        case ':': return cli_usage_error("option %s needs a value", argv[optind - 1]);
        default: return cli_usage_error("unknown option %s", argv[optind - 1]);
        }
    }
    if (optind + 1 != argc)
        return cli_usage_error("%s", "plan takes one model (usage: ipu-exec plan MODEL.onnx [OPTIONS])");
    const char *model = argv[optind];
    int rc = write ? check_write_dest(write) : -1;
    if (rc >= 0)
        return rc;
    if (micro_batch_set && inputs)
        cli_err_line(CLI_PROG ": note: --micro-batch is not used with --inputs: the input files' shapes "
                     "set the batch");
    if (stages_set && pp.stages % pp.ipus_per_rank != 0) {
        char msg[256];
        int lo = pp.stages / pp.ipus_per_rank * pp.ipus_per_rank, hi = lo + pp.ipus_per_rank;
        snprintf(msg, sizeof(msg), "--stages %d is not a multiple of --ipus-per-rank %d: a rank runs "
                 "one stage on each of its IPUs; use --stages %d%s%d", pp.stages, pp.ipus_per_rank,
                 lo > 0 ? lo : hi, lo > 0 ? " or " : "", lo > 0 ? hi : 0);
        if (lo == 0) /* only the multiple above */
            msg[strlen(msg) - 1] = '\0';
        return cli_usage_error("%s", msg);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ipu_graph_t *g = NULL;
    ipu_partition_t pt = {0};
    int64_t *vals = NULL;
    double *node_ms = NULL;
    /* weights stay in the file (a plan needs their sizes, not their
     * values; folding reads the few it needs): plan reads the model's
     * structure only, as a pipeline rank does before its plan */
    ipu_status_t st = ipu_model_load_deferred(model, &g);
    if (st == IPU_OK && (st = ipu_graph_bind_ops(g, ipu_op_lookup)) != IPU_OK)
        st = ipu_error_prefix(st, model);
    if (st == IPU_OK && write)
        st = check_write_extdata(g, model, write);
    if (st == IPU_OK)
        st = cli_infer_shapes(g, inputs, micro_batch);
    /* folded, fused and laid out as pipeline/setup.c has the graph before it
     * partitions (a value kept padded needs more than its elements) */
    if (st == IPU_OK)
        st = ipu_prepare_graph(g);
    if (st == IPU_OK && measure) {
        if ((node_ms = malloc(((size_t)g->n_nodes + 1) * sizeof(double))) == NULL)
            st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
        if (st == IPU_OK && (st = ipu_measure_nodes(g, node_ms)) == IPU_OK)
            pp.node_ms = node_ms;
    }
    int annotated = st == IPU_OK ? ipu_partition_annotated_stages(g, NULL) : 0;
    if (annotated > 0 && stages_set && annotated != pp.stages)
        cli_err_line(CLI_PROG ": note: %s is annotated with %d pipeline stages (__pipeline_stage): "
                     "the annotations win over --stages %d; plan the model without them to re-plan",
                     model, annotated, pp.stages);
    if (st == IPU_OK)
        st = ipu_partition_make(g, &pp, &pt);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (st == IPU_OK) {
        char per[64] = "", mb[48] = "";
        if (replicas > 1) /* every replica runs the same plan: print it once */
            snprintf(per, sizeof(per), " per replica (%d replicas)", replicas);
        if (!inputs)
            snprintf(mb, sizeof(mb), "micro-batch %d, ", micro_batch);
        printf("plan of %s%s: %d node%s, %d IPU%s per rank, %.0f MiB per IPU, %s%s costs (%.3f s)\n",
               model, per, g->n_nodes, g->n_nodes == 1 ? "" : "s", pp.ipus_per_rank, pp.ipus_per_rank > 1 ? "s" : "",
               pp.ipu_memory / 1048576.0, mb, measure ? "measured" : "modelled",
               (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
        ipu_partition_print(&pt, stdout);
    }
    if (st == IPU_OK && write) {
        static const char *const names[] = {"__ipu_number", "__pipeline_stage"};
        vals = malloc(((size_t)g->n_nodes + 1) * 2 * sizeof(int64_t));
        if (vals == NULL) {
            st = ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
        } else {
            /* folded nodes go with the first stage reading their output */
            for (int i = 0; i < g->n_nodes; i++) {
                int s = pt.node_stage[i];
                if (s < 0)
                    s = cli_first_consumer_stage(g, pt.node_stage, i);
                vals[2 * i] = pt.stages[s].rank * pp.ipus_per_rank + pt.stages[s].ipu;
                vals[2 * i + 1] = s;
            }
            st = ipu_model_write_annotated(model, write, g->n_nodes, names, 2, vals);
            if (st == IPU_OK)
                printf("wrote %s (nodes annotated with __ipu_number and __pipeline_stage)\n", write);
        }
    }
    free(vals);
    free(node_ms);
    ipu_partition_free(&pt);
    ipu_graph_free(g);
    if (st != IPU_OK)
        cli_err_line("ipu-exec: %s", ipu_error_message());
    return ipu_status_exit_code(st);
}

int cli_first_consumer_stage(const ipu_graph_t *g, const int *node_stage, int node)
{
    int best = -1;
    const ipu_node_t *n = &g->nodes[node];
    for (int i = 0; i < g->n_nodes; i++) {
        if (node_stage[i] < 0)
            continue;
        const ipu_node_t *c = &g->nodes[i];
        for (int k = 0; k < c->n_inputs; k++)
            for (int o = 0; o < n->n_outputs; o++)
                if (c->inputs[k] >= 0 && c->inputs[k] == n->outputs[o] &&
                    (best < 0 || node_stage[i] < best))
                    best = node_stage[i];
    }
    return best < 0 ? 0 : best;
}
