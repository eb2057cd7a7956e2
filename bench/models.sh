#!/bin/sh
# Model latency of ipu-exec against onnxruntime (the peer), on the same cores.
#
#   bench/models.sh [NAME...]      default: every zoo model of make_models.py
#
# For each model (batch BENCH_BATCH, opset 13; made by
# tests/models/make_models.py into the same cache as the model tests) both
# engines run the same model.onnx on the same test_data_set_0 inputs, pinned
# with taskset to the same core(s), BENCH_THREADS threads each (default: one
# core, 1 thread), in alternating rounds (ipu-exec first in odd rounds,
# onnxruntime first in even ones). Each round is one process of each engine
# doing a warm-up and BENCH_RUNS timed runs; the figure reported is the
# median over the rounds of each round's median. Prints a markdown table:
# model, ipu-exec median ms, ORT median ms, ratio (ipu-exec / ORT of the
# medians), paired ratio (the median over the rounds of each round's
# ipu-exec / ORT: the two processes of a round run back to back, so a
# machine whose speed drifts between rounds, a VM's second vCPU say, moves
# both sides of a round's ratio alike), the minimum of each over all runs,
# and whether ipu-exec's --check passed in the first round. Each round's
# figures go to stderr.
#
# Environment: BENCH_MODELS (names, instead of arguments), BENCH_ROUNDS
# (default 3), BENCH_RUNS (timed runs per round, default 10), BENCH_BATCH
# (the models' batch size, default 1), BENCH_THREADS (threads of each
# engine: ipu-exec --threads, onnxruntime's intra-op threads; default 1),
# BENCH_CORE (the first core of the BENCH_THREADS consecutive ones both
# engines are pinned to; default: the last BENCH_THREADS cores),
# BENCH_IPU_MEMORY (ipu-exec --ipu-memory, default 16G: the bench compares
# the engines' speed, and VGG-16 at batch 8 needs more than the default
# IPU's 900 MiB), IPU_EXEC (default $top_builddir/ipu-exec),
# top_builddir (default: this tree), PYTHON_REF (default /usr/bin/python3),
# MODEL_CACHE (default $top_builddir/tests/models/cache), BENCH_PEER (node:
# onnxruntime-node by bench/ort_run.js, the default; python: the onnxruntime
# wheel of PEER_PYTHON, default python3, by bench/ort_run.py; unset and no
# node but PEER_PYTHON imports onnxruntime, onnx and numpy: python).
# Exit: 0 table printed, 1 an engine failed on a model, 77 a prerequisite is
# missing (node/npm or onnxruntime for python, torch, ipu-exec).
set -eu
# oneDNN's ISA cap would make the comparison unfair: the bench runs oneDNN
# with its own detection.
unset DNNL_MAX_CPU_ISA ONEDNN_MAX_CPU_ISA

here=$(cd "$(dirname "$0")" && pwd)
top_builddir=$(cd "${top_builddir:-$here/..}" && pwd)
PYTHON_REF=${PYTHON_REF:-/usr/bin/python3}
IPU_EXEC=${IPU_EXEC:-$top_builddir/ipu-exec}
batch=${BENCH_BATCH:-1}
threads=${BENCH_THREADS:-1}
cache=${MODEL_CACHE:-$top_builddir/tests/models/cache}/b${batch}_op13
rounds=${BENCH_ROUNDS:-3}
runs=${BENCH_RUNS:-10}
first=${BENCH_CORE:-$(( $(nproc) - threads ))}
[ "$first" -ge 0 ] && [ $((first + threads)) -le "$(nproc)" ] ||
    { echo "bench/models.sh: $threads threads from core $first: this machine has $(nproc) cores" >&2; exit 1; }
core=$(seq -s, "$first" $((first + threads - 1)))

skip() { echo "bench/models.sh: SKIP: $*" >&2; exit 77; }
die() { echo "bench/models.sh: $*" >&2; exit 1; }

[ -x "$IPU_EXEC" ] || skip "$IPU_EXEC is not built (make)"
command -v taskset >/dev/null 2>&1 || skip "taskset not found (util-linux)"
"$PYTHON_REF" -c 'import torch, torchvision, onnx' 2>/dev/null ||
    skip "$PYTHON_REF with torch, torchvision and onnx is needed to make the models"
PEER_PYTHON=${PEER_PYTHON:-python3}
peer=${BENCH_PEER:-}
if [ -z "$peer" ]; then
    peer=node
    command -v node >/dev/null 2>&1 ||
        ! "$PEER_PYTHON" -c 'import onnxruntime, onnx, numpy' 2>/dev/null || peer=python
fi
case $peer in
node)
    rc=0
    "$here/setup.sh" >&2 || rc=$?
    [ $rc -eq 0 ] || { [ $rc -eq 77 ] && exit 77; die "bench/setup.sh failed"; }
    peer_version="onnxruntime-node $(node -p "require('$here/node_modules/onnxruntime-node/package.json').version")"
    ;;
python)
    peer_version=$("$PEER_PYTHON" -c 'import onnx, numpy, onnxruntime; print(onnxruntime.__version__)' 2>/dev/null) ||
        skip "$PEER_PYTHON cannot import onnxruntime, onnx and numpy (BENCH_PEER=python)"
    peer_version="onnxruntime (python) $peer_version"
    ;;
*) die "BENCH_PEER=$peer: node or python" ;;
esac

names=${*:-${BENCH_MODELS:-$("$PYTHON_REF" "$here/../tests/models/make_models.py" --list)}}
mkdir -p "$cache"
# shellcheck disable=SC2086
"$PYTHON_REF" "$here/../tests/models/make_models.py" "$cache" $names --batch "$batch" --opset 13 \
    >&2 2>"$cache/bench-make.err" || { cat "$cache/bench-make.err" >&2; die "make_models.py failed"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

median() { cut -d' ' -f1 | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1;
    if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# One process of an engine on a model: prints "median-ms min-ms".
ipu_round() { # model-dir [--check]
    d=$1; shift
    out=$tmp/ipu.out
    taskset -c "$core" "$IPU_EXEC" "$d/model.onnx" --inputs "$d/test_data_set_0" \
        --threads "$threads" --batches "$runs" --ipu-memory "${BENCH_IPU_MEMORY:-16G}" "$@" >"$out" 2>&1 || {
        sed 's/^/  ipu-exec: /' "$out" | tail -n 3 >&2; return 1; }
    sed -n 's/^latency ms: median \([0-9.eE+-]*\) min \([0-9.eE+-]*\).*/\1 \2/p' "$out" | grep . ||
        { echo "  ipu-exec printed no latency line" >&2; return 1; }
}

ort_round() {
    d=$1
    out=$tmp/ort.out
    if [ "$peer" = python ]; then
        set -- "$PEER_PYTHON" "$here/ort_run.py"
    else
        set -- node "$here/ort_run.js"
    fi
    taskset -c "$core" "$@" "$d/model.onnx" --inputs "$d/test_data_set_0" \
        --threads "$threads" --runs "$runs" >"$out" 2>&1 || {
        sed 's/^/  onnxruntime: /' "$out" | tail -n 3 >&2; return 1; }
    sed -n 's/.*"median_ms":\([0-9.eE+-]*\),"min_ms":\([0-9.eE+-]*\).*/\1 \2/p' "$out" | grep . ||
        { echo "  $(basename "$2") printed no median" >&2; return 1; }
}

# the CPU, the instruction set oneDNN dispatches to there and the layout
# convolutions ask for, as ipu-exec info says
isa=$("$IPU_EXEC" info 2>/dev/null |
    sed -n 's/.*; cpu \(.*\), \(oneDNN [0-9.]*\) isa \([a-z0-9_]*\); \(conv layout [a-z]*\);.*/\1; \2 isa \3, \4/p' | head -n 1)
echo "ipu-exec vs $peer_version:" \
     "batch $batch, $threads thread$([ "$threads" -gt 1 ] && echo s) each, core$([ "$threads" -gt 1 ] && echo s) $core, $rounds rounds x $runs runs" \
     "(${isa:-$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')})"
echo
echo "| model | ipu-exec median ms | ORT median ms | ratio | paired ratio | ipu-exec min ms | ORT min ms | ipu-exec --check |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
status=0
for name in $names; do
    d=$cache/$name
    : >"$tmp/ipu.ms"; : >"$tmp/ort.ms"; : >"$tmp/paired"
    check=pass ok=1 r=1
    while [ $r -le "$rounds" ] && [ $ok -eq 1 ]; do
        extra=""
        [ $r -eq 1 ] && extra=--check
        if [ $((r % 2)) -eq 1 ]; then
            # shellcheck disable=SC2086
            ims=$(ipu_round "$d" $extra) || { [ -n "$extra" ] && check=FAIL; ims=""; }
            oms=$(ort_round "$d") || { ok=0; oms=""; }
        else
            oms=$(ort_round "$d") || { ok=0; oms=""; }
            ims=$(ipu_round "$d") || { ok=0; ims=""; }
        fi
        [ -n "$ims" ] && echo "$ims" >>"$tmp/ipu.ms"
        [ -n "$oms" ] && echo "$oms" >>"$tmp/ort.ms"
        [ -n "$ims" ] && [ -n "$oms" ] && echo "${ims%% *} ${oms%% *}" |
            awk -v r="$r" '$2 > 0 { printf "%.4f %d\n", $1 / $2, r }' >>"$tmp/paired"
        r=$((r + 1))
    done
    sed "s/^/  $name ipu-exec round median, min ms: /" "$tmp/ipu.ms" >&2
    sed "s/^/  $name onnxruntime round median, min ms: /" "$tmp/ort.ms" >&2
    awk -v m="$name" '{ printf "  %s round %d ipu-exec / onnxruntime: %s\n", m, $2, $1 }' "$tmp/paired" >&2
    ipu=$(median <"$tmp/ipu.ms" || echo "-")
    ort=$(median <"$tmp/ort.ms" || echo "-")
    ipu_min=$(cut -d' ' -f2 "$tmp/ipu.ms" | sort -g | head -n 1 | grep . || echo "-")
    ort_min=$(cut -d' ' -f2 "$tmp/ort.ms" | sort -g | head -n 1 | grep . || echo "-")
    if [ "$ipu" = - ] || [ "$ort" = - ] || [ $ok -eq 0 ]; then
        status=1
        ratio="-" paired="-"
    else
        ratio=$(awk -v a="$ipu" -v b="$ort" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
        paired=$(median <"$tmp/paired" | awk '{ printf "%.2f", $1 }' | grep . || echo "-")
    fi
    [ "$check" = pass ] || status=1
    echo "| $name | $ipu | $ort | $ratio | $paired | $ipu_min | $ort_min | $check |"
done
exit $status
