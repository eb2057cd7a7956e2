/* ipu-exec: run an ONNX model on (simulated) IPUs. The command line is thin:
 * main() picks the command (run, plan, info), joins the MPI job, calls the
 * library (exec/session.h, pipeline/pipeline.h) through cli/run.c and exits
 * with the status's code. */
#include "cli/cli.h"
#include "common/launcher.h"
#include "common/log.h"
#include "pipeline/fault.h"

#include <malloc.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    /* weights and activations of 4 MiB and more get pages of their own,
     * given back when freed: glibc otherwise raises this threshold after the
     * first such free, and weights a pipeline rank drops (or copies made to
     * fold constants) would stay in its heap, counted in its RSS */
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
    int plan = argc > 1 && strcmp(argv[1], "plan") == 0, info = argc > 1 && strcmp(argv[1], "info") == 0;
    if (plan || info) {
        /* plan is one process, without MPI: under a launcher rank 0 plans
         * and writes --write. Neither has the run's start-up agreement, to
         * which cli_usage_error leaves a launched job's usage error: rank 0
         * says it here. */
        ipu_launcher_t l = ipu_launcher();
        if (plan && l.launched && l.rank > 0)
            return 0;
        if (plan)
            ipu_log_init(-1); /* IPU_EXEC_LOG_LEVEL: oneDNN's choices at debug */
        int rc = plan ? cli_plan_main(argc - 1, argv + 1) : cli_info_main(argc - 1, argv + 1);
        if (rc == 2 && l.launched && l.rank <= 0 && cli_usage_message()[0])
            cli_usage_print();
        return rc;
    }
    cli_opts_t o = {.batches = 1, .threads = 1, .warmup = -1, .rtol = 1e-3, .atol = 1e-4,
                    .micro_batch = 1, .replicas = 1, .ipus_per_rank = 1, .credits = 2,
                    .transport = IPU_TRANSPORT_UCX, .timeout_s = 30, .bind = 1};
    ipu_session_opts_init(&o.sopts);
    int rc = cli_parse_options(argc, argv, &o);
    /* under mpirun (Open MPI sets OMPI_COMM_WORLD_SIZE) join the job */
    int mpi = ipu_launcher().launched;
    if (rc >= 0 && !(rc == 2 && mpi)) /* bare: a usage error is said already */
        return rc;
    /* the pipeline (--ipus-per-rank, --replicas) runs bare as under mpirun
     * -np 1: MPI's singleton start */
    if (!mpi && (o.replicas > 1 || o.ipus_per_rank > 1))
        mpi = 1;
    int rank = 0, size = 1;
    if (mpi) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
    }
    ipu_log_init(mpi ? rank : -1);
    ipu_status_t st;
    if (rc == 2 && size == 1) { /* a usage error under a launcher */
        cli_usage_print();
        st = ipu_error(IPU_ERR_INVALID_ARG, "%s", "");
    } else if (rc == 2) { /* said with the other ranks' */
        st = cli_agree_startup(&o, rank, IPU_ERR_INVALID_ARG, 1);
    } else if (size > 1 || o.replicas > 1 || o.ipus_per_rank > 1)
        st = cli_run_pipeline(&o, rank);
    else
        st = cli_run_single(&o);
    if (st != IPU_OK && ipu_error_message()[0]) /* empty: another rank says it */
        cli_err_line(CLI_PROG "%s: %s", mpi && size > 1 ? cli_rank_tag(rank) : "", ipu_error_message());
    fflush(stdout);
    int code = ipu_status_exit_code(st);
    if (mpi) {
        /* the others may wait on this rank: leave now with the error; the
         * launcher ends the job (MPI_Abort can hang on an unreachable host) */
        if (size > 1 && st != IPU_OK && st != IPU_ERR_MISMATCH && !o.failed_together)
            ipu_fault_exit(st, code); /* after the grace for a lost peer */
        if (size > 1) /* a rank that died now would hold MPI_Finalize for ever */
            ipu_watchdog_arm(o.timeout_s, rank, "MPI_Finalize");
        MPI_Finalize();
        ipu_watchdog_disarm();
    }
    return code;
}
