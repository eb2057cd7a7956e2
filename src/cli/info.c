/* ipu-exec info: where each rank runs (host, NUMA node, cores, IPUs and the
 * cores their workers are bound to, the CPU model and the instruction set
 * oneDNN dispatches to there) and how it reaches the others; with
 * --config the settings (config.c). */
#include "cli/cli.h"
#include "common/launcher.h"
#include "exec/binding.h"
#include "exec/onednn.h"
#include "transport/transport.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LINE 1024

int cli_info_main(int argc, char **argv, int ipus_per_rank)
{
    int mpi = ipu_launcher().launched;
    int rank = 0, size = 1, lrank = 0, lsize = 1;
    MPI_Comm local = MPI_COMM_NULL;
    int config = 0, markdown = 0;
    for (int i = 1; i < argc; i++) {
        config |= strcmp(argv[i], "--config") == 0;
        markdown |= strcmp(argv[i], "--markdown") == 0;
    }
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
    ipu_status_t st = ipu_binding_plan(lrank, lsize, ipus_per_rank, &b);
    gethostname(host, sizeof(host) - 1);
    ipu_binding_allowed(allowed, sizeof(allowed));
    size_t off = 0;
    for (int i = 0; st == IPU_OK && i < b.n_ipus && off < sizeof(cores); i++)
        off += (size_t)snprintf(cores + off, sizeof(cores) - off, "%sIPU%d->core %d (cpu %d)",
                                i ? ", " : "", i, b.core[i], b.pu[i]);
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
                 "%d IPU%s: %s%s; process cpus %s; cpu %s, %s isa %s; %s", rank, host, lrank, lsize,
                 b.numa, b.n_cores, b.n_ipus, b.n_ipus > 1 ? "s" : "", cores,
                 b.shared ? " (cores shared: more workers than cores)" : "", allowed,
                 ipu_cpu_model(cpu, sizeof(cpu)), ipu_dnn_version(), ipu_dnn_isa(), tls);
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
