/* The start-up agreement of a job of several ranks (cli.h): before any
 * work, every rank reports what it found (its usage, load or input error);
 * then every rank compares a digest of its model file and the options that
 * must be equal on every rank with rank 0's. Two steps of the pipeline's
 * agreement (pipeline/fault.h: bounded waits, a rank that does not report
 * is named); rank 0 says the verdict in one line. */
#include "cli/cli.h"
#include "common/hash.h"
#include "pipeline/fault.h"

#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { OPT_TEXT = 24, MODEL_TEXT = 192, MSG_TEXT = 640 };

/* The options every rank must share: they decide the plan, the schedule
 * and what is checked. Paths (--inputs, --output-dir, --save-inputs) may differ between
 * hosts and are not compared. */
static const char *const opt_names[] = {
    "--batches", "--warmup", "--micro-batch", "--replicas", "--ipus-per-rank", "--credits",
    "--transport", "--timeout", "--ipu-memory", "--threads", "--check", "--rtol", "--atol",
    "--seed", "--bind", "--profile", "--format", "--digest",
};
enum { N_OPTS = sizeof(opt_names) / sizeof(opt_names[0]) };

/* Rank 0's report, sent to every rank once all have loaded. */
typedef struct report {
    uint64_t model_digest;   /* 0 when the model could not be read */
    int64_t model_bytes;
    char model[MODEL_TEXT];
    char opt[N_OPTS][OPT_TEXT];
} report_t;

static void opt_texts(const cli_opts_t *o, char t[N_OPTS][OPT_TEXT])
{
    int i = 0;
    snprintf(t[i++], OPT_TEXT, "%d", o->batches);
    snprintf(t[i++], OPT_TEXT, "%d", o->warmup);
    snprintf(t[i++], OPT_TEXT, "%d", o->micro_batch);
    snprintf(t[i++], OPT_TEXT, "%d", o->replicas);
    snprintf(t[i++], OPT_TEXT, "%d", o->ipus_per_rank);
    snprintf(t[i++], OPT_TEXT, "%d", o->credits);
    snprintf(t[i++], OPT_TEXT, "%s", o->transport == IPU_TRANSPORT_MPI ? "mpi" : "ucx");
    snprintf(t[i++], OPT_TEXT, "%g", o->timeout_s);
    snprintf(t[i++], OPT_TEXT, "%zu", o->sopts.ipu_memory);
    snprintf(t[i++], OPT_TEXT, "%d", o->threads);
    snprintf(t[i++], OPT_TEXT, "%s", o->check ? "on" : "off");
    snprintf(t[i++], OPT_TEXT, "%g", o->rtol);
    snprintf(t[i++], OPT_TEXT, "%g", o->atol);
    snprintf(t[i++], OPT_TEXT, "%u", o->seed);
    snprintf(t[i++], OPT_TEXT, "%s", o->bind ? "cores" : "none");
    snprintf(t[i++], OPT_TEXT, "%s", o->sopts.profile ? "on" : "off");
    snprintf(t[i++], OPT_TEXT, "%s", o->format ? "npy" : "pb");
    snprintf(t[i++], OPT_TEXT, "%s", o->digest ? "on" : "off");
}

/* FNV-1a over the file's size and 16 blocks of 64 KiB spread over it (the
 * first holds the graph of most models, the others sample the weights):
 * two different models of one size and graph differ in some block unless
 * they differ only between the samples. */
static uint64_t model_digest(const char *path, int64_t *bytes)
{
    enum { BLOCKS = 16, BLOCK = 64 << 10 };
    struct stat sb;
    uint64_t h = IPU_FNV64_BASIS;
    int fd = open(path, O_RDONLY);
    *bytes = -1;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    *bytes = sb.st_size;
    unsigned char *buf = malloc(BLOCK);
    for (int b = 0; buf && b < BLOCKS; b++) {
        off_t off = sb.st_size > BLOCK ? (off_t)((sb.st_size - BLOCK) / (BLOCKS - 1)) * b : 0;
        ssize_t n = pread(fd, buf, BLOCK, off);
        h = ipu_fnv1a64(h, buf, n > 0 ? (size_t)n : 0);
        if (sb.st_size <= BLOCK)
            break;
    }
    for (int i = 0; i < 8; i++) {
        uint8_t b = (uint8_t)(sb.st_size >> (8 * i));
        h = ipu_fnv1a64(h, &b, 1);
    }
    free(buf);
    close(fd);
    return h ? h : 1;
}

static void report_of(const cli_opts_t *o, report_t *r)
{
    memset(r, 0, sizeof(*r));
    if (o->model) {
        snprintf(r->model, sizeof(r->model), "%s", o->model);
        r->model_digest = model_digest(o->model, &r->model_bytes);
    }
    opt_texts(o, r->opt);
}

/* This rank's report against rank 0's (root): IPU_ERR_INVALID_ARG with a
 * message naming what differs, else IPU_OK. */
static ipu_status_t compare(const report_t *root, const report_t *mine, int rank)
{
    if (root->model_digest != mine->model_digest || root->model_bytes != mine->model_bytes)
        return ipu_error(IPU_ERR_INVALID_ARG, "the ranks run different models: rank 0 has %s "
                         "(%lld bytes), rank %d has %s (%lld bytes); give every rank the same model "
                         "file", root->model, (long long)root->model_bytes, rank, mine->model,
                         (long long)mine->model_bytes);
    for (int i = 0; i < N_OPTS; i++)
        if (strcmp(root->opt[i], mine->opt[i]) != 0)
            return ipu_error(IPU_ERR_INVALID_ARG, "the ranks disagree on %s: rank 0 has %s, rank "
                             "%d has %s; give every rank the same options", opt_names[i],
                             root->opt[i], rank, mine->opt[i]);
    return IPU_OK;
}

/* One step of ipu_agree; a failing rank's message is what rank 0 prints
 * after "ipu-exec", so ranks other than 0 tag theirs with their rank. */
static ipu_status_t step(cli_opts_t *o, int rank, ipu_status_t st, const char *what, void *payload,
                         size_t bytes)
{
    ipu_agree_params_t p = {.step = what, .timeout_s = o->timeout_s};
    int lost = 0;
    if (st != IPU_OK) {
        char msg[IPU_AGREE_MSG];
        snprintf(msg, sizeof(msg), "%s", ipu_error_message());
        st = ipu_error(st, "%s: %s", rank > 0 ? cli_rank_tag(rank) : "", msg);
    }
    st = ipu_agree(MPI_COMM_WORLD, st, &p, payload, bytes, NULL, &lost);
    if (st == IPU_OK || lost) /* a lost rank: every survivor says it */
        return st;
    if (rank == 0)
        cli_err_line(CLI_PROG "%s", ipu_error_message());
    o->failed_together = 1;
    return ipu_error(st, "%s", "");
}

ipu_status_t cli_agree_startup(cli_opts_t *o, int rank, ipu_status_t st, int usage)
{
    report_t root, mine;
    if (st != IPU_OK && usage)
        ipu_error(st, "%s; see " CLI_PROG " --help", cli_usage_message());
    report_of(o, &mine);
    root = mine;
    if ((st = step(o, rank, st, "the model", &root, sizeof(root))) != IPU_OK)
        return st;
    return step(o, rank, compare(&root, &mine, rank), "the model and the options", NULL, 0);
}
