/* One model on one IPU of this rank (session.h): load and bind, prepare for
 * the inputs' shapes (exec/prepare.h), run. */
#include "exec/session.h"

#include "exec/ops/registry.h"
#include "exec/prepare.h"
#include "graph/load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ipu_session_opts_init(ipu_session_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->threads = 1;
    o->ipu_memory = IPU_DEFAULT_MEMORY;
    o->core = -1;
}

ipu_status_t ipu_session_open(const char *path, const ipu_session_opts_t *opts, ipu_session_t **out)
{
    ipu_session_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
    s->opts = *opts;
    ipu_status_t st = ipu_model_load(path, &s->g);
    if (st == IPU_OK && (st = ipu_graph_bind_ops(s->g, ipu_op_lookup)) != IPU_OK)
        st = ipu_error_prefix(st, path);
    if (st == IPU_OK) {
        ipu_device_params_t dp = {.index = 0, .capacity = opts->ipu_memory,
                                  .threads = opts->threads, .core = opts->core,
                                  .n_cpus = opts->n_cpus};
        memcpy(dp.cpus, opts->cpus, sizeof dp.cpus);
        st = ipu_device_open(&dp, &s->dev);
    }
    if (st != IPU_OK) {
        ipu_session_close(s);
        return st;
    }
    *out = s;
    return IPU_OK;
}

void ipu_session_close(ipu_session_t *s)
{
    if (s == NULL)
        return;
    ipu_device_close(s->dev);
    ipu_stage_free(&s->stage);
    ipu_graph_free(s->g);
    free(s->declared);
    free(s);
}

static ipu_status_t check_input(const ipu_value_t *v, const ipu_tensor_t *t)
{
    char want[256], got[256];
    if (ipu_value_accepts(v, t))
        return IPU_OK;
    return ipu_error(IPU_ERR_INPUT, "input '%s': the model expects %s, got %s; give a tensor of "
                     "the model's dtype and shape", v->name, ipu_value_describe(v, want, sizeof(want)),
                     ipu_tensor_describe(t, got, sizeof(got)));
}

ipu_status_t ipu_session_prepare(ipu_session_t *s, const ipu_tensor_t *inputs, int n)
{
    ipu_graph_t *g = s->g;
    ipu_status_t st;
    if (n != g->n_inputs)
        return ipu_error(IPU_ERR_INPUT, "the model has %d input%s but %d %s given",
                         g->n_inputs, g->n_inputs == 1 ? "" : "s", n, n == 1 ? "was" : "were");
    /* the declared shapes are copied at the first prepare (the caller may
     * have fed inputs with a default since open), so a second prepare
     * could re-resolve symbolic dimensions (where the first freed no
     * weights) */
    if (s->declared == NULL) {
        if ((s->declared = calloc((size_t)n + 1, sizeof(ipu_value_t))) == NULL)
            return ipu_error(IPU_ERR_NO_MEMORY, "out of memory");
        for (int k = 0; k < n; k++)
            s->declared[k] = g->values[g->inputs[k]];
    }
    for (int k = 0; k < n; k++) {
        if ((st = check_input(&s->declared[k], &inputs[k])) != IPU_OK)
            return st;
    }
    if (s->released)
        return ipu_error(IPU_ERR_INVALID_ARG, "ipu_session_prepare a second time: the first freed "
                         "the weights its nodes hold in oneDNN's layouts; open a new session");
    s->prepared = 0;
    ipu_stage_free(&s->stage);
    if ((st = ipu_prepare_shapes(g, inputs)) != IPU_OK)
        return st;
    /* the whole graph; the weights its nodes hold copies of freed as they load */
    ipu_prepare_params_t pp = {.profile = s->opts.profile, .release = ipu_release_new(g, NULL)};
    st = ipu_prepare_stage(g, &pp, s->dev, &s->stage);
    s->released = ipu_prepare_release_end(pp.release) > 0;
    if (st == IPU_OK)
        s->prepared = 1;
    return st;
}

ipu_status_t ipu_session_run(ipu_session_t *s, const ipu_tensor_t *inputs, int n,
                             ipu_tensor_t *outputs)
{
    ipu_graph_t *g = s->g;
    ipu_status_t st;
    if (!s->prepared)
        return ipu_error(IPU_ERR_INVALID_ARG, "ipu_session_run before ipu_session_prepare");
    if (n != g->n_inputs)
        return ipu_error(IPU_ERR_INPUT, "the model has %d inputs but %d were given", g->n_inputs, n);
    for (int k = 0; k < n; k++) {
        ipu_tensor_t slot = ipu_device_tensor(s->dev, g->inputs[k]);
        if (!ipu_shape_equal(slot.rank, slot.dims, inputs[k].rank, inputs[k].dims) ||
            slot.dtype != inputs[k].dtype)
            return ipu_error(IPU_ERR_INPUT, "input '%s' changed shape since prepare",
                             g->values[g->inputs[k]].name);
        if (slot.data == NULL) /* input unused by any node */
            continue;
        if ((st = ipu_device_write(s->dev, g->inputs[k], inputs[k].data,
                                   ipu_tensor_nbytes(&inputs[k]))) != IPU_OK)
            return st;
    }
    if ((st = ipu_device_run(s->dev)) != IPU_OK)
        return st;
    for (int k = 0; k < g->n_outputs; k++)
        outputs[k] = ipu_device_tensor(s->dev, g->outputs[k]);
    return IPU_OK;
}
