/* Shared pieces of the command line tool. */
#ifndef IPU_CLI_CLI_H
#define IPU_CLI_CLI_H

#include "exec/session.h"
#include "graph/ir.h"
#include "transport/transport.h"

#include <stddef.h>

#define CLI_PROG "ipu-exec"

/* Options of a run. */
typedef struct cli_opts {
    const char *model, *inputs, *output_dir;
    const char *save_inputs;   /* --save-inputs DIR */
    int format;                /* --format: cli_format_t of the files written */
    int inputs_sets;           /* inputs is the model's folder, read as its
                                * test_data_set_M (--check's default) */
    int digest;                /* --digest (io.h, cli_output_digest) */
    int check, batches, threads, warmup, micro_batch;
    int replicas, ipus_per_rank, credits;
    ipu_transport_kind_t transport;
    double timeout_s;
    unsigned seed;
    double rtol, atol;
    ipu_session_opts_t sopts;
    int failed_together;   /* set when every rank saw the same error */
    int bind;              /* bind IPU workers to cores (default 1) */
    int batches_set;       /* --batches given (else one per replica) */
    int micro_batch_set;   /* --micro-batch given */
} cli_opts_t;

/* Parse the run's command line into o (defaults set by the caller; see
 * options.c for --help). Returns -1 to go on, else the exit code (0 after
 * --help, --version, --list-ops; 2 after a usage error, printed once). */
int cli_parse_options(int argc, char **argv, cli_opts_t *o);

/* One model on one IPU of this process (bare or mpirun -np 1). */
ipu_status_t cli_run_single(const cli_opts_t *o);
/* The pipeline over MPI_COMM_WORLD (mpirun -np N). */
ipu_status_t cli_run_pipeline(cli_opts_t *o, int rank);
/* " (rank R)" for messages; static buffer. */
const char *cli_rank_tag(int rank);

/* Parse an integer >= lo (0 ok, -1 bad) / a size with K/M/G suffix. */
int cli_parse_int(const char *s, int lo, int *out);
int cli_parse_size(const char *s, size_t *out);
/* A usage error: record the message fmt with arg and return 2; bare, print
 * it at once ("ipu-exec: MSG; see ipu-exec --help"); under a launcher main
 * prints it after MPI_Init (cli_usage_print, or the start-up agreement). */
int cli_usage_error(const char *fmt, const char *arg);
/* The last usage error's message, and printing it as above. */
const char *cli_usage_message(void);
void cli_usage_print(void);

/* The start-up agreement of a pipelined run (MPI_COMM_WORLD, after
 * MPI_Init, before any other communication): every rank passes its status
 * so far: IPU_OK, or its usage error (usage = 1; cli_usage_message()) or
 * load / input error (ipu_error_message()). The ranks then compare a
 * digest of each one's model file and the options that decide the run
 * (cli/agree.c) with rank 0's. Returns IPU_OK to go on. Otherwise rank 0
 * has printed the verdict in one line, naming the rank whose error it is
 * (the lowest failing one), or the option or model files that differ:
 * o->failed_together is set and the error's message is empty; or a rank
 * did not report within --timeout: the error names it (every survivor
 * prints it; no collective may follow). */
ipu_status_t cli_agree_startup(cli_opts_t *o, int rank, ipu_status_t st, int usage);
/* This process's rank from the launcher's environment (Open MPI's
 * OMPI_COMM_WORLD_RANK, PMIx's PMIX_RANK), or -1 when not launched so. */
int cli_launcher_rank(void);
/* Format one line (a newline is added) and write it to stderr in a single
 * write, so that lines of several ranks do not interleave. */
void cli_err_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ipu-exec info [--ipus-per-rank K]: placement and binding of every rank;
 * info --config [--markdown] calls cli_config_main. */
int cli_info_main(int argc, char **argv);
/* Print the settings with their current values and sources, or (markdown)
 * docs/settings.md; returns the exit code. */
int cli_config_main(int markdown);
/* ipu-exec plan ... (argv[0] is "plan"); returns the exit code. */
int cli_plan_main(int argc, char **argv);
/* Set input shapes from --inputs DIR or the declared shapes (symbolic batch
 * dimensions micro_batch, as cli_synth_inputs), and infer. */
ipu_status_t cli_infer_shapes(ipu_graph_t *g, const char *inputs_dir, int micro_batch);
/* Smallest stage among the consumers of node's outputs (0 if none). */
int cli_first_consumer_stage(const ipu_graph_t *g, const int *node_stage, int node);

#endif
