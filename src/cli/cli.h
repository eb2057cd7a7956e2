/* Shared pieces of the command line tool. */
#ifndef IPU_CLI_CLI_H
#define IPU_CLI_CLI_H

#include "graph/ir.h"

#include <stddef.h>

/* Parse an integer >= lo (0 ok, -1 bad) / a size with K/M/G suffix. */
int cli_parse_int(const char *s, int lo, int *out);
int cli_parse_size(const char *s, size_t *out);
/* Print "ipu-exec: <fmt with arg>; see ipu-exec --help" and return 2. */
int cli_usage_error(const char *fmt, const char *arg);

/* ipu-exec plan ... (argv[0] is "plan"); returns the exit code. */
int cli_plan_main(int argc, char **argv);
/* Set input shapes from --inputs DIR or the declared shapes, and infer. */
ipu_status_t cli_infer_shapes(ipu_graph_t *g, const char *inputs_dir);
/* Smallest stage among the consumers of node's outputs (0 if none). */
int cli_first_consumer_stage(const ipu_graph_t *g, const int *node_stage, int node);

#endif
