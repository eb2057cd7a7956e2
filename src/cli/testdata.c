/* The test data of a run (io.h, cli_data_t): which file holds each input
 * and reference output of each micro-batch; the model's inputs with a
 * default (an initializer) that the files override become fed inputs. A
 * directory holds a tensor as KIND_N.pb (onnx.TensorProto), KIND_N.npy,
 * NAME.pb or NAME.npy (NAME: the graph input's or output's name), in that
 * order of preference; a directory of the ONNX test-data layout holds
 * test_data_set_M/ subdirectories, one per micro-batch, cycled over. */
#include "cli/cli.h"
#include "cli/io.h"

#include "common/log.h"
#include "common/npy.h"
#include "graph/load.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { N_CAND = 4 };

static int is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int is_file(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && !S_ISDIR(sb.st_mode);
}

/* The candidate files of tensor k (kind "input" or "output", graph name
 * name) in dir, in order of preference; returns how many. */
static int candidates(const char *dir, const char *kind, int k, const char *name, char cand[N_CAND][4200])
{
    int n = 0;
    snprintf(cand[n++], 4200, "%s/%s_%d.pb", dir, kind, k);
    snprintf(cand[n++], 4200, "%s/%s_%d.npy", dir, kind, k);
    if (name && name[0] && !strchr(name, '/')) {
        snprintf(cand[n++], 4200, "%s/%s.pb", dir, name);
        snprintf(cand[n++], 4200, "%s/%s.npy", dir, name);
    }
    return n;
}

/* The file of tensor k in dir: *path (malloc'd), *by_index_pb when it is
 * KIND_N.pb; NULL *path when there is none. Several files for the tensor
 * are warned about (when warn), naming the one used. */
static ipu_status_t resolve(const char *dir, const char *kind, int k, const char *name, int warn, char **path,
                            int *by_index_pb)
{
    char cand[N_CAND][4200], others[8600] = "";
    int n = candidates(dir, kind, k, name, cand), used = -1;
    for (int i = 0; i < n; i++) {
        if (!is_file(cand[i]))
            continue;
        if (used < 0)
            used = i;
        else if (strlen(others) + strlen(cand[i]) + 3 < sizeof(others)) {
            if (others[0])
                strcat(others, ", ");
            strcat(others, cand[i]);
        }
    }
    *path = NULL;
    *by_index_pb = used == 0;
    if (used < 0)
        return IPU_OK;
    if (others[0] && warn && ipu_log_level_current >= IPU_LOG_WARN)
        cli_err_line(CLI_PROG ": warning: %s %d '%s' has several files: %s and %s; using %s (remove the "
                     "other)", kind, k, name ? name : "", cand[used], others, cand[used]);
    if ((*path = strdup(cand[used])) == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    return IPU_OK;
}

/* "KIND_N" with N < n: 1; "KIND_<digits>" past n: -1; else 0. */
static int indexed(const char *stem, const char *kind, int n)
{
    size_t l = strlen(kind);
    if (strncmp(stem, kind, l) != 0 || stem[l] != '_' || !stem[l + 1] ||
        strspn(stem + l + 1, "0123456789") != strlen(stem + l + 1))
        return 0;
    return atoi(stem + l + 1) < n ? 1 : -1;
}

/* Warn about the .pb / .npy files of dir that are no input or output. */
static void warn_extra(const ipu_graph_t *g, const cli_data_t *d, const char *dir, int warn)
{
    if (!warn || ipu_log_level_current < IPU_LOG_WARN)
        return;
    DIR *dp = opendir(dir);
    struct dirent *e;
    while (dp && (e = readdir(dp)) != NULL) {
        char stem[512];
        size_t l = strlen(e->d_name);
        const char *ext = strrchr(e->d_name, '.');
        if (!ext || (strcmp(ext, ".pb") != 0 && strcmp(ext, ".npy") != 0) || l >= sizeof(stem))
            continue;
        snprintf(stem, sizeof(stem), "%.*s", (int)(ext - e->d_name), e->d_name);
        int known = indexed(stem, "input", d->n_in) > 0 || indexed(stem, "output", g->n_outputs) > 0;
        for (int p = 0; p < d->n_in && !known; p++)
            known = strcmp(stem, g->values[d->value[p]].name) == 0;
        for (int k = 0; k < g->n_outputs && !known; k++)
            known = strcmp(stem, g->values[g->outputs[k]].name) == 0;
        if (known || indexed(stem, "output", g->n_outputs) < 0)
            continue;
        if (d->n_in == 0)
            cli_err_line(CLI_PROG ": warning: %s/%s: the model has no inputs; the file is not used", dir,
                         e->d_name);
        else if (d->n_in == 1)
            cli_err_line(CLI_PROG ": warning: %s/%s matches no input of the model (input_0, or by name "
                         "'%s'); the file is not used", dir, e->d_name, g->values[d->value[0]].name);
        else
            cli_err_line(CLI_PROG ": warning: %s/%s matches no input of the model (input_0..input_%d, or "
                         "an input's name such as '%s'); the file is not used", dir, e->d_name,
                         d->n_in - 1, g->values[d->value[0]].name);
    }
    if (dp)
        closedir(dp);
}

void cli_data_free(cli_data_t *d)
{
    for (int i = 0; d->in && i < d->n_sets * d->n_in; i++)
        free(d->in[i]);
    for (int i = 0; d->ref && i < d->n_sets * d->n_out; i++)
        free(d->ref[i]);
    free(d->in);
    free(d->ref);
    free(d->reorder);
    free(d->value);
    free(d->slot);
    memset(d, 0, sizeof(*d));
}

/* Resolve every input (and reference) of one set directory: a file for
 * each input, none needed for an input with a default. */
static ipu_status_t open_set(const ipu_graph_t *g, const char *dir, int set, int refs, int warn, cli_data_t *d)
{
    ipu_status_t st = IPU_OK;
    int all_pb = 1;
    for (int p = 0; p < d->n_in && st == IPU_OK; p++) {
        const char *name = g->values[d->value[p]].name;
        char **path = &d->in[set * d->n_in + p];
        int pb;
        int needed = p < d->n_required || (g->values[d->value[p]].flags & IPU_VALUE_INPUT); /* fed already */
        if ((st = resolve(dir, "input", p, name, warn, path, &pb)) == IPU_OK && *path == NULL && needed)
            st = ipu_error(IPU_ERR_IO, "%s/input_%d.pb: no such file; a test-data folder needs a file per "
                           "model input: input_%d.pb, input_%d.npy, %s.pb or %s.npy for input %d '%s'", dir, p, p, p,
                           name, name, p, name);
        if (*path)
            all_pb &= pb;
    }
    d->reorder[set] = all_pb;
    for (int k = 0; refs && k < g->n_outputs && st == IPU_OK; k++) {
        const char *name = g->values[g->outputs[k]].name;
        char **p = &d->ref[set * d->n_out + k];
        int pb;
        if ((st = resolve(dir, "output", k, name, warn, p, &pb)) == IPU_OK && *p == NULL)
            st = ipu_error(IPU_ERR_IO, "--check: %s/output_%d.pb: no such file; the reference of output %d "
                           "'%s' is output_%d.pb, output_%d.npy, %s.pb or %s.npy there", dir, k, k, name, k,
                           k, name, name);
    }
    if (st == IPU_OK)
        warn_extra(g, d, dir, warn);
    return st;
}

/* The model's input positions: its inputs without a default (g->inputs,
 * but for defaults fed already), then those with one (g->defaults). */
static ipu_status_t list_positions(const ipu_graph_t *g, cli_data_t *d)
{
    d->value = calloc((size_t)g->n_inputs + (size_t)g->n_defaults + 1, sizeof(int));
    d->slot = calloc((size_t)g->n_inputs + (size_t)g->n_defaults + 1, sizeof(int));
    if (!d->value || !d->slot)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    for (int k = 0; k < g->n_inputs; k++) {
        int dflt = 0;
        for (int j = 0; j < g->n_defaults && !dflt; j++)
            dflt = g->defaults[j] == g->inputs[k];
        if (!dflt)
            d->value[d->n_in++] = g->inputs[k];
    }
    d->n_required = d->n_in;
    for (int j = 0; j < g->n_defaults; j++)
        d->value[d->n_in++] = g->defaults[j];
    return IPU_OK;
}

/* The defaults the files give become fed inputs (every set gives the same
 * ones); slot[p]: position p's index in g->inputs, -1 for a default used. */
static ipu_status_t feed_defaults(ipu_graph_t *g, const char *dir, cli_data_t *d)
{
    ipu_status_t st = IPU_OK;
    for (int p = d->n_required; p < d->n_in && st == IPU_OK; p++) {
        int given = d->in[p] != NULL;
        for (int s = 1; s < d->n_sets && st == IPU_OK; s++)
            if ((d->in[s * d->n_in + p] != NULL) != given)
                st = ipu_error(IPU_ERR_IO, "%s/test_data_set_%d: input %d '%s' (it has a default in the "
                               "model) is given in test_data_set_%d but not in test_data_set_%d; give it in "
                               "every set or in none", dir, s, p, g->values[d->value[p]].name,
                               given ? 0 : s, given ? s : 0);
        for (int j = 0; j < g->n_defaults && st == IPU_OK && given; j++)
            if (g->defaults[j] == d->value[p])
                st = ipu_graph_feed_default(g, j);
    }
    for (int p = 0; p < d->n_in; p++) {
        d->slot[p] = -1;
        for (int k = 0; k < g->n_inputs; k++)
            if (g->inputs[k] == d->value[p])
                d->slot[p] = k;
    }
    return st;
}

/* Whether dir itself holds a file of some input (or, for a model without
 * inputs, of some output). */
static int holds_files(const ipu_graph_t *g, const cli_data_t *d, const char *dir)
{
    char cand[N_CAND][4200];
    int n_t = d->n_in ? d->n_in : g->n_outputs;
    for (int k = 0; k < n_t; k++) {
        const char *name = d->n_in ? g->values[d->value[k]].name : g->values[g->outputs[k]].name;
        int n = candidates(dir, d->n_in ? "input" : "output", k, name, cand);
        for (int i = 0; i < n; i++)
            if (is_file(cand[i]))
                return 1;
    }
    return 0;
}

/* Sets after a gap (test_data_set_0 and _2 without _1) are not read: say
 * so, naming the first of them (when warn). n: the sets read. */
static void warn_gap(const char *dir, int n, int warn)
{
    if (!warn || ipu_log_level_current < IPU_LOG_WARN)
        return;
    DIR *dp = opendir(dir);
    int first = -1, k;
    char end;
    for (struct dirent *e; dp && (e = readdir(dp)) != NULL;)
        if (sscanf(e->d_name, "test_data_set_%d%c", &k, &end) == 1 && k > n && (first < 0 || k < first))
            first = k;
    if (dp)
        closedir(dp);
    if (first >= 0)
        cli_err_line(CLI_PROG ": warning: %s/test_data_set_%d is not read: the sets are read from 0 up to "
                     "the first missing one, test_data_set_%d (rename them without a gap)", dir, first, n);
}

ipu_status_t cli_data_open(ipu_graph_t *g, const char *dir, int sets, int max_sets, int refs, int warn,
                           cli_data_t *d)
{
    char sub[4200];
    memset(d, 0, sizeof(*d));
    if (!is_dir(dir))
        return ipu_error(IPU_ERR_IO, "--inputs %s: %s", dir,
                         access(dir, F_OK) != 0 ? "no such directory" : "not a directory");
    ipu_status_t st = list_positions(g, d);
    if (st != IPU_OK) {
        cli_data_free(d);
        return st;
    }
    snprintf(sub, sizeof(sub), "%s/test_data_set_0", dir);
    if (!sets)
        sets = !holds_files(g, d, dir) && is_dir(sub);
    int n = 1;
    if (sets) {
        for (n = 0; n < (max_sets > 0 ? max_sets : 1000000); n++) {
            snprintf(sub, sizeof(sub), "%s/test_data_set_%d", dir, n);
            if (!is_dir(sub))
                break;
        }
        if (n == 0) {
            cli_data_free(d);
            return ipu_error(IPU_ERR_IO, "%s/test_data_set_0: no such directory", dir);
        }
        if (max_sets <= 0 || n < max_sets)
            warn_gap(dir, n, warn);
    }
    d->n_sets = n;
    d->sets = sets;
    d->n_out = g->n_outputs;
    d->in = calloc((size_t)n * (size_t)d->n_in + 1, sizeof(char *));
    d->ref = calloc((size_t)n * (size_t)g->n_outputs + 1, sizeof(char *));
    d->reorder = calloc((size_t)n, sizeof(int));
    if (!d->in || !d->ref || !d->reorder) {
        cli_data_free(d);
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    }
    for (int s = 0; s < n && st == IPU_OK; s++) {
        if (sets)
            snprintf(sub, sizeof(sub), "%s/test_data_set_%d", dir, s);
        st = open_set(g, sets ? sub : dir, s, refs, warn, d);
    }
    if (st == IPU_OK)
        st = feed_defaults(g, dir, d);
    if (st != IPU_OK) {
        cli_data_free(d);
        return st;
    }
    if (warn && sets) {
        if (n == 1)
            printf("inputs: %s/test_data_set_0\n", dir);
        else
            printf("inputs: %s/test_data_set_{0..%d}: micro-batch M reads test_data_set_<M mod %d>\n", dir,
                   n - 1, n);
        fflush(stdout);
    }
    return IPU_OK;
}

/* 1 when a and b name the same existing directory (links followed) */
static int same_dir(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && S_ISDIR(sa.st_mode) && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

ipu_status_t cli_data_check_out_dir(const cli_data_t *d, const char *opt, const char *dir, int n_batches)
{
    for (int i = 0; i < d->n_sets * d->n_out; i++) {
        const char *ref = d->ref ? d->ref[i] : NULL;
        const char *slash = ref ? strrchr(ref, '/') : NULL;
        if (ref == NULL)
            continue;
        char rdir[4200], wdir[4200];
        snprintf(rdir, sizeof(rdir), "%.*s", slash ? (int)(slash - ref) : 1, slash ? ref : ".");
        int hit = n_batches <= 1 && same_dir(rdir, dir);
        /* with several micro-batches, DIR/test_data_set_M (M < n_batches)
         * are written: is the reference's folder one of them? */
        const char *base = strrchr(rdir, '/');
        int m;
        char end;
        if (!hit && n_batches > 1 && sscanf(base ? base + 1 : rdir, "test_data_set_%d%c", &m, &end) == 1 &&
            m >= 0 && m < n_batches) {
            snprintf(wdir, sizeof(wdir), "%s/test_data_set_%d", dir, m);
            hit = same_dir(rdir, wdir);
        }
        if (hit)
            return ipu_error(IPU_ERR_INVALID_ARG,
                             "%s %s would write this run's outputs over the references --check compares "
                             "them with (%s): give --output-dir another folder", opt, dir, ref);
    }
    return IPU_OK;
}

ipu_status_t cli_read_tensor(const char *path, ipu_tensor_t *t, char **name)
{
    size_t l = strlen(path);
    if (name)
        *name = NULL;
    if (l > 4 && strcmp(path + l - 4, ".npy") == 0)
        return ipu_npy_read(path, t);
    return ipu_tensorproto_read(path, t, name);
}

ipu_status_t cli_data_inputs(const ipu_graph_t *g, const cli_data_t *d, int mb, ipu_tensor_t *ins)
{
    int set = mb % d->n_sets, n = d->n_in;
    char *const *file = &d->in[set * n];
    ipu_tensor_t tmp[n + 1];
    char *names[n + 1];
    int perm[n + 1], used[n + 1];
    ipu_status_t st = IPU_OK;
    memset(tmp, 0, sizeof(tmp));
    memset(used, 0, sizeof(used));
    for (int p = 0; p < n; p++)
        names[p] = NULL;
    for (int p = 0; p < n && st == IPU_OK; p++)
        if (file[p])
            st = cli_read_tensor(file[p], &tmp[p], &names[p]);
    /* input_N.pb files whose TensorProto names are those of the inputs
     * given go to those inputs, whatever their N; otherwise by position */
    int by_name = st == IPU_OK && d->reorder[set];
    for (int p = 0; p < n && by_name; p++) {
        perm[p] = p;
        if (!file[p])
            continue;
        perm[p] = -1;
        for (int q = 0; q < n && names[p]; q++)
            if (file[q] && !used[q] && strcmp(names[p], g->values[d->value[q]].name) == 0)
                perm[p] = q;
        by_name = perm[p] >= 0;
        if (by_name)
            used[perm[p]] = 1;
    }
    for (int p = 0; p < n && st == IPU_OK; p++) {
        if (!file[p])
            continue;
        ins[d->slot[by_name ? perm[p] : p]] = tmp[p];
        tmp[p].data = NULL;
    }
    for (int p = 0; p < n; p++) {
        free(tmp[p].data);
        free(names[p]);
    }
    return st;
}

int cli_data_position(const cli_data_t *d, int k)
{
    for (int p = 0; p < d->n_in; p++)
        if (d->slot[p] == k)
            return p;
    return k;
}

const char *cli_data_file(const cli_data_t *d, int mb, int k)
{
    return d->in[(mb % d->n_sets) * d->n_in + cli_data_position(d, k)];
}

ipu_status_t cli_data_check(const ipu_graph_t *g, const cli_data_t *d, int mb, const ipu_tensor_t *ins)
{
    char got[256], want[256];
    for (int k = 0; k < g->n_inputs; k++) {
        const ipu_value_t *v = &g->values[g->inputs[k]];
        if (ipu_value_accepts(v, &ins[k]))
            continue;
        int dtype = v->dtype != IPU_DTYPE_UNDEFINED && ins[k].dtype != v->dtype;
        return ipu_error(IPU_ERR_INPUT, "%s: input %d '%s' is %s but the model's input is %s: the file's %s "
                         "differs from the model's; %s%s", cli_data_file(d, mb, k), cli_data_position(d, k), v->name,
                         ipu_tensor_describe(&ins[k], got, sizeof(got)), ipu_value_describe(v, want, sizeof(want)),
                         dtype ? "dtype" : "shape", dtype ? "write the file as " : "give a tensor of that shape",
                         dtype ? ipu_dtype_name(v->dtype) : "");
    }
    return IPU_OK;
}

ipu_status_t cli_data_ref(const cli_data_t *d, int mb, int k, ipu_tensor_t *ref)
{
    ipu_status_t st = cli_read_tensor(cli_data_ref_path(d, mb, k), ref, NULL);
    if (st != IPU_OK)
        return ipu_error(st, "--check: %s", ipu_error_message());
    return IPU_OK;
}

const char *cli_data_ref_path(const cli_data_t *d, int mb, int k)
{
    return d->ref[(mb % d->n_sets) * d->n_out + k];
}

ipu_status_t cli_read_inputs(ipu_graph_t *g, const char *dir, ipu_tensor_t *ins)
{
    cli_data_t d;
    ipu_status_t st = cli_data_open(g, dir, 0, 1, 0, 1, &d);
    if (st == IPU_OK && (st = cli_data_inputs(g, &d, 0, ins)) == IPU_OK)
        st = cli_data_check(g, &d, 0, ins);
    cli_data_free(&d);
    return st;
}
