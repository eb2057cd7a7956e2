#!/bin/sh
# The pipeline under mpirun: a CNN and both transformers, run on 1, 2, 3, 4,
# 5 and 8 ranks (oversubscribed), with 1 and 2 replicas and 1 and 2 IPUs per
# rank, must give outputs byte-identical to the single-rank run of the same
# micro-batches (same kernels, same order), with no UCX warning; and --check
# against PyTorch's reference passes through the pipeline.
set -u
. "$(dirname "$0")/common.sh"
"$PYTHON_REF" -c "import torch, torchvision, onnx" 2>/dev/null || { echo "SKIP: no torch/onnx"; exit 77; }
need_models 13 resnet18 gpt2_tiny
need_models 17 bert_tiny
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
N=6
# ranks and options: the world is replicas x ranks per replica
CONFIGS="1:--ipus-per-rank=2 2: 3: 4: 5: 8: 2:--replicas=2 4:--replicas=2 2:--ipus-per-rank=2 4:--replicas=2,--ipus-per-rank=2 8:--replicas=2 3:--transport=mpi"
for m in op13/resnet18 op13/gpt2_tiny op17/bert_tiny; do
    model=$CACHE/$m/model.onnx
    "$EXE" "$model" --batches $N --output-dir "$W/ref" >/dev/null 2>"$W/err" || { fail "$m single-rank run"; cat "$W/err"; continue; }
    for cfg in $CONFIGS; do
        np=${cfg%%:*} opts=$(echo "${cfg#*:}" | tr ',' ' ')
        rm -rf "$W/out"
        # shellcheck disable=SC2086
        run_mpi "$np" "$model" --batches $N --output-dir "$W/out" $opts
        if [ $? -ne 0 ]; then
            fail "$m -np $np $opts: exit status"; echo "$OUT" | tail -5
        elif ! diff -r "$W/ref" "$W/out" >/dev/null; then
            fail "$m -np $np $opts: outputs differ from the single-rank run"
        elif echo "$OUT" | grep -q "UCX  *WARN"; then
            # a run that succeeded leaves nothing for UCX to warn about
            fail "$m -np $np $opts: UCX warned"; echo "$OUT" | grep "UCX  *WARN" | head -3
        else
            ok "$m -np $np $opts: identical to one rank"
        fi
    done
    rm -rf "$W/ref"
    run_mpi 4 "$model" --inputs "$CACHE/$m/test_data_set_0" --check --batches 4 --replicas 2
    if [ $? -eq 0 ] && echo "$OUT" | grep -q "check: .* ok"; then ok "$m --check through the pipeline"
    else fail "$m --check through the pipeline"; echo "$OUT" | tail -5; fi
done
# MobileNetV2 with convolutions in oneDNN's channel-blocked layout: its
# 24-channel tensors pad their second block of 16 (on AVX-512) and cross
# stage boundaries in that layout, which the links carry whole
need_models 13 mobilenet_v2
m=op13/mobilenet_v2
export IPU_EXEC_CONV_LAYOUT=blocked
"$EXE" "$CACHE/$m/model.onnx" --batches 4 --output-dir "$W/ref" >/dev/null 2>"$W/err" ||
    { fail "$m single-rank run, blocked"; cat "$W/err"; }
for np in 3 5; do
    rm -rf "$W/out"
    run_mpi "$np" "$CACHE/$m/model.onnx" --batches 4 --output-dir "$W/out"
    if [ $? -eq 0 ] && diff -r "$W/ref" "$W/out" >/dev/null; then ok "$m -np $np, blocked: identical to one rank"
    else fail "$m -np $np, blocked: differs from one rank or failed"; echo "$OUT" | tail -5; fi
done
rm -rf "$W/ref" "$W/out"
unset IPU_EXEC_CONV_LAYOUT
# the report names throughput, latency, stage busy fractions, peak RSS
run_mpi 2 "$CACHE/op13/gpt2_tiny/model.onnx" --batches 4
for pat in "auto partition: 2 stages" "throughput: .* samples/s" "latency ms per micro-batch" \
           "stage 1: busy" "peak RSS per rank MiB"; do
    echo "$OUT" | grep -q "$pat" && ok "report: $pat" || fail "report lacks '$pat'"
done
# a latency is a time on the last stage's rank minus one on the first's:
# never negative (each rank timed from its own start before the clocks were
# put on one base, pipe_sync_clocks; replicas of 2-IPU ranks showed it)
run_mpi 4 "$CACHE/op13/gpt2_tiny/model.onnx" --batches 7 --replicas 2 --ipus-per-rank 2
if [ $? -eq 0 ] && echo "$OUT" | grep -q "latency ms per micro-batch: median [0-9.]* min [0-9.]* max"; then
    ok "latencies measured on one clock: none negative"
else fail "latencies: $(echo "$OUT" | grep latency)"; fi
# the replicas' finishing times: the last one is the throughput's window
win=$(echo "$OUT" | sed -n 's/^throughput: .* (\([0-9.]*\) s for .*/\1/p')
last=$(echo "$OUT" | sed -n 's/^replicas: done after [0-9.]* s (first), [0-9.]* (median), \([0-9.]*\) (last: replica [01], ranks [02]-[13]).*/\1/p')
if [ -n "$win" ] && [ "$win" = "$last" ] && echo "$OUT" | grep -q "^stage 1 (replica 0): busy"; then
    ok "the last replica's end is the throughput's window ($win s)"
else fail "replicas line: '$(echo "$OUT" | grep '^replicas:')' against a window of '$win'"; fi
# many micro-batches over the MPI back end: its tags are folded into
# MPI_TAG_UB, and no reserved tag may meet a data tag (sequence 511 met the
# lost-rank notice's once)
run_mpi 2 "$CACHE/op13/gpt2_tiny/model.onnx" --batches 600 --transport mpi
if [ $? -eq 0 ] && echo "$OUT" | grep -q "throughput: .* (.* for 600 micro-batches"; then ok "600 micro-batches over --transport mpi"
else fail "600 micro-batches over --transport mpi"; echo "$OUT" | tail -5; fi
echo "pipeline: $fails failure(s)"
[ "$fails" -eq 0 ]
