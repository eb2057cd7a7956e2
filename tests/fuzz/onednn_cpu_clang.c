/* src/exec/onednn_cpu.c for the fuzz build (clang): clang 14's
 * __builtin_cpu_supports rejects the feature names "avxvnni", "amx-tile",
 * "amx-int8" and "amx-bf16" that gcc 12 knows, so here every CPU feature
 * test answers "absent". That only touches ipu_dnn_isa_mask (the --isa
 * cap), which shape inference does not call; the rest of the file (the
 * OpenMP team of primitive creation) is compiled as it is. */
#define __builtin_cpu_supports(feature) 0
#include "exec/onednn_cpu.c"
