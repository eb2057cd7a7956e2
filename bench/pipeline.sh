#!/bin/sh
# Pipeline throughput on this machine: one model (default ResNet-50, batch 1)
# streamed as N micro-batches (default 128) through
#   1 rank running the whole model (the baseline),
#   2 ranks x 1 stage each (a 2-stage pipeline),
#   2 ranks as 2 replicas of the whole model,
# each rank pinned to its own core, in alternating rounds. Prints a markdown
# table of samples/s and the speed-up over 1 rank (median over the rounds).
# The window a run reports ends when the last stage finishes the last
# micro-batch, so an S-stage pipeline of equal stages takes N + S - 1 stage
# times for N micro-batches (the pipeline bubble of GPipe, Huang et al.
# 2019, section 2.3): at most 2N / (N + 1) x one rank for 2 stages, 1.94x
# at N = 32 and 1.98x at 128. The default N measures the stages' rate
# rather than that bubble; BENCH_BATCHES=32 shows both.
#
#   bench/pipeline.sh [MODEL_NAME]   (a name of tests/models/make_models.py)
# Environment: BENCH_ROUNDS (3), BENCH_BATCHES (128), top_builddir, PYTHON_REF,
# MODEL_CACHE (default $top_builddir/tests/models/cache).
set -eu
unset DNNL_MAX_CPU_ISA ONEDNN_MAX_CPU_ISA
here=$(cd "$(dirname "$0")" && pwd)
top_builddir=$(cd "${top_builddir:-$here/..}" && pwd)
PYTHON_REF=${PYTHON_REF:-/usr/bin/python3}
EXE=$top_builddir/ipu-exec
name=${1:-resnet50}
N=${BENCH_BATCHES:-128}
rounds=${BENCH_ROUNDS:-3}
cache=${MODEL_CACHE:-$top_builddir/tests/models/cache}/b1_op13
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -x "$EXE" ] || { echo "bench/pipeline.sh: SKIP: $EXE not built" >&2; exit 77; }
[ -f "$cache/$name/model.onnx" ] || "$PYTHON_REF" "$here/../tests/models/make_models.py" "$cache" "$name" >&2
M=$cache/$name/model.onnx
# Every configuration reports samples over the wall time of the N timed
# micro-batches, after 2 warm-up micro-batches (per replica).
one() { # samples/s of one rank running the whole model
    taskset -c 0 "$EXE" "$M" --batches "$N" --warmup 2 | sed -n 's/^throughput: \([0-9.]*\) samples.*/\1/p'
}
multi() { # samples/s of a 2-rank run (ranks bound to cores 0 and 1)
    mpirun -np 2 --bind-to core --map-by core "$EXE" "$M" --batches "$N" --warmup 2 "$@" 2>/dev/null |
        sed -n 's/^throughput: \([0-9.]*\) samples.*/\1/p'
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
: > /tmp/bench_pipe.$$
r=1
while [ $r -le "$rounds" ]; do
    echo "one $(one)" >> /tmp/bench_pipe.$$
    echo "pipe $(multi)" >> /tmp/bench_pipe.$$
    echo "repl $(multi --replicas 2)" >> /tmp/bench_pipe.$$
    echo "round $r: $(tail -3 /tmp/bench_pipe.$$ | tr '\n' ' ')" >&2
    r=$((r + 1))
done
base=$(awk '$1 == "one" {print $2}' /tmp/bench_pipe.$$ | median)
echo "| $name, batch 1, $N micro-batches | samples/s | vs 1 rank |"
echo "|---|---:|---:|"
for k in one pipe repl; do
    v=$(awk -v k=$k '$1 == k {print $2}' /tmp/bench_pipe.$$ | median)
    case $k in one) label="1 rank, whole model";; pipe) label="2 ranks, 2 pipeline stages";;
                repl) label="2 ranks, 2 replicas";; esac
    echo "| $label | $v | $(echo "$v $base" | awk '{printf "%.2fx", $1 / $2}') |"
done
rm -f /tmp/bench_pipe.$$
