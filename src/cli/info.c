/* ipu-exec info: where each rank runs (host, NUMA node, cores, IPUs and the
 * cores their workers are bound to, the CPU model and the instruction set
 * oneDNN dispatches to there) and how it reaches the others; with
 * --config the settings (config.c). */
#include "cli/cli.h"
#include "common/launcher.h"
#include "exec/binding.h"
#include "exec/onednn.h"
#include "transport/transport.h"

#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LINE 1024

static void info_usage(FILE *f)
{
    fprintf(f,
"Usage: " CLI_PROG " info [--ipus-per-rank K] [--threads T]\n"
"       " CLI_PROG " info --config [--markdown]\n"
"Per rank (run it under mpirun or srun with the job's layout): the host, NUMA\n"
"node, cores, the cores each IPU's worker is bound to, the CPU model and the\n"
"instruction set oneDNN dispatches to, and the transport to the other ranks.\n"
"  --ipus-per-rank K   IPUs owned by each rank (1 to 64, default 1)\n"
"  --threads T         threads per IPU, each on a core of its own (default 1)\n"
"  --config            every setting (IPU_EXEC_*, GCL_*) with its value and\n"
"                      where it came from; needs no ranks\n"
"  --markdown          with --config: the table of docs/settings.md\n"
"  -h, --help          this help\n");
}

/* The options of info into *k, *config, *markdown; returns -1 to go on,
 * else the exit code (help printed: 0; a usage error: 2). */
static int info_parse(int argc, char **argv, int *k, int *threads, int *config, int *markdown)
{
    enum { O_K = 256, O_THREADS, O_CONFIG, O_MARKDOWN };
    static const struct option longopts[] = {
        {"ipus-per-rank", required_argument, NULL, O_K},
        {"threads", required_argument, NULL, O_THREADS},
        {"config", no_argument, NULL, O_CONFIG},
        {"markdown", no_argument, NULL, O_MARKDOWN},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case O_K:
            if (cli_parse_int(optarg, 1, k) || *k > 64)
                return cli_usage_error("--ipus-per-rank %s: expected an integer from 1 to 64", optarg);
            break;
        case O_THREADS:
            if (cli_parse_int(optarg, 1, threads) || *threads > 1024)
                return cli_usage_error("--threads %s: expected an integer from 1 to 1024", optarg);
            break;
        case O_CONFIG: *config = 1; break;
        case O_MARKDOWN: *markdown = 1; break;
        case 'h': info_usage(stdout); return 0;
        case ':': return cli_usage_error("option %s needs a value", argv[optind - 1]);
        default: return cli_usage_error("info: unknown option %s", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error("info takes no model or other argument (got %s)", argv[optind]);
    if (*markdown && !*config)
        return cli_usage_error("%s", "info: --markdown goes with --config");
    return -1;
}

int cli_info_main(int argc, char **argv)
{
    int mpi = ipu_launcher().launched;
    int rank = 0, size = 1, lrank = 0, lsize = 1;
    MPI_Comm local = MPI_COMM_NULL;
    int ipus_per_rank = 1, threads = 1, config = 0, markdown = 0;
    int rc = info_parse(argc, argv, &ipus_per_rank, &threads, &config, &markdown);
    if (rc >= 0)
        return rc;
    if (config) /* no ranks needed */
        return cli_config_main(markdown);
    if (mpi) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
        MPI_Comm_rank(local, &lrank);
        MPI_Comm_size(local, &lsize);
    }
    ipu_binding_t b;
    char line[LINE], allowed[128], host[64] = {0}, cores[256] = {0}, tls[160] = "-", cpu[128];
    ipu_status_t st = ipu_binding_plan(lrank, lsize, ipus_per_rank, threads, &b);
    gethostname(host, sizeof(host) - 1);
    ipu_binding_allowed(allowed, sizeof(allowed));
    size_t off = 0;
    for (int i = 0; st == IPU_OK && i < b.n_ipus && off < sizeof(cores); i++) {
        char team[128];
        ipu_binding_team(&b, i, team, sizeof team);
        off += (size_t)snprintf(cores + off, sizeof(cores) - off, "%sIPU%d->core %d (cpu %d)%s%s",
                                i ? ", " : "", i, b.core[i], b.pu[i],
                                b.threads > 1 ? " team cpus " : "", b.threads > 1 ? team : "");
    }
    ipu_transport_t *t = NULL;
    if (mpi && size > 1) {
        ipu_transport_params_t tp;
        ipu_transport_params_init(&tp);
        if (ipu_transport_open(MPI_COMM_WORLD, &tp, &t) == IPU_OK) {
            /* one peer on this host and one on another, if there are */
            char same[64] = "", other[64] = "";
            for (int p = 0; p < size; p++) {
                if (p == rank)
                    continue;
                int here = strcmp(ipu_transport_host(t, p), host) == 0;
                if (here && !same[0])
                    ipu_transport_peer_info(t, p, same, sizeof(same));
                if (!here && !other[0])
                    ipu_transport_peer_info(t, p, other, sizeof(other));
            }
            snprintf(tls, sizeof(tls), "ucx: this host %s; other hosts %s", same[0] ? same : "-",
                     other[0] ? other : "-");
        }
    }
    if (st == IPU_OK)
        snprintf(line, sizeof(line), "rank %d: host %s, local rank %d of %d, NUMA node %d, %d cores, "
                 "%d IPU%s: %s%s; process cpus %s; cpu %s, %s isa %s; conv layout %s; %s", rank, host,
                 lrank, lsize, b.numa, b.n_cores, b.n_ipus, b.n_ipus > 1 ? "s" : "", cores,
                 b.shared ? " (cores shared: more workers x threads than cores)" : "", allowed,
                 ipu_cpu_model(cpu, sizeof(cpu)), ipu_dnn_version(), ipu_dnn_isa(),
                 ipu_dnn_layout_name(ipu_dnn_layout_wanted()), tls);
    else
        snprintf(line, sizeof(line), "rank %d: %s", rank, ipu_error_message());
    char *all = rank == 0 ? malloc((size_t)size * LINE) : NULL;
    if (mpi)
        MPI_Gather(line, LINE, MPI_CHAR, all, LINE, MPI_CHAR, 0, MPI_COMM_WORLD);
    else if (all)
        memcpy(all, line, LINE);
    if (rank == 0 && all)
        for (int r = 0; r < size; r++)
            printf("%s\n", all + (size_t)r * LINE);
    free(all);
    if (t) {
        MPI_Barrier(MPI_COMM_WORLD);
        ipu_transport_close(t);
    }
    if (mpi) {
        MPI_Comm_free(&local);
        MPI_Finalize();
    }
    return ipu_status_exit_code(st);
}
