#!/bin/sh
# Time of `ipu-exec plan MODEL --stages S` (default GPT-2 small into 8
# stages; the bar is < 1 s): wall seconds and peak RSS of each of
# BENCH_ROUNDS (5) runs, then the median. The first run reads the model
# from disk unless it is cached.
#
#   bench/plan.sh [MODEL_NAME [STAGES]]   (a name of tests/models/make_models.py)
# Environment: BENCH_ROUNDS, top_builddir, PYTHON_REF, MODEL_CACHE.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top_builddir=$(cd "${top_builddir:-$here/..}" && pwd)
PYTHON_REF=${PYTHON_REF:-/usr/bin/python3}
EXE=$top_builddir/ipu-exec
name=${1:-gpt2_small}
S=${2:-8}
rounds=${BENCH_ROUNDS:-5}
cache=${MODEL_CACHE:-$top_builddir/tests/models/cache}/b1_op13
[ -x "$EXE" ] || { echo "bench/plan.sh: SKIP: $EXE not built" >&2; exit 77; }
[ -f "$cache/$name/model.onnx" ] || "$PYTHON_REF" "$here/../tests/models/make_models.py" "$cache" "$name" >&2
M=$cache/$name/model.onnx
: > /tmp/bench_plan.$$
r=1
while [ $r -le "$rounds" ]; do
    /usr/bin/time -f "%e %M" -a -o /tmp/bench_plan.$$ "$EXE" plan "$M" --stages "$S" > /dev/null
    r=$((r + 1))
done
echo "| plan $name --stages $S | run | seconds | peak RSS MiB |"
echo "|---|---:|---:|---:|"
awk '{printf "| | %d | %.2f | %.0f |\n", NR, $1, $2 / 1024}' /tmp/bench_plan.$$
sort -n /tmp/bench_plan.$$ | awk '{a[NR]=$1} END {printf "| median | | %.2f | |\n", a[int((NR + 1) / 2)]}'
rm -f /tmp/bench_plan.$$
