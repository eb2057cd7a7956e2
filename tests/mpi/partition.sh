#!/bin/sh
# Partitioning and placement: ipu-exec plan prints the per-stage table (also
# with --measure, the timed costs a pipelined run uses); the
# model it writes (annotated with __ipu_number/__pipeline_stage as PopART
# does) runs with the same plan; a partly annotated or backwards-flowing
# model, an annotation that is not an INT and a rank count that does not
# divide are errors naming the problem, before any work; a model that does
# not fit says what to change; the annotated model on one rank runs whole
# with a note; --micro-batch on gpt2_tiny's fixed batch is an error said
# once. Stages that constant folding empties are dropped, not a gap.
# Near the memory boundary (ResNet-18, 3 stages, conv scratch), a plan that
# fits passes the devices' setup check and one that does not is refused up
# front, naming the stage and what it needs.
set -u
. "$(dirname "$0")/common.sh"
"$PYTHON_REF" -c "import torch, torchvision, onnx" 2>/dev/null || { echo "SKIP: no torch/onnx"; exit 77; }
need_models 13 gpt2_tiny resnet18
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
M=$CACHE/op13/gpt2_tiny/model.onnx
cp "$M" "$W/m.onnx"
expect() { # expect CODE PATTERN DESCRIPTION: on $rc and $OUT
    if [ "$rc" -eq "$1" ] && echo "$OUT" | grep -q -- "$2"; then ok "$3"
    else fail "$3 (exit $rc, want $1; pattern '$2')"; echo "$OUT" | tail -5; fi
}
OUT=$("$EXE" plan "$W/m.onnx" --stages 3 --write "$W/annotated.onnx" 2>&1); rc=$?
expect 0 "auto partition: 3 stages, slowest stage .* imbalance" "plan prints the table"
echo "$OUT" | grep -E '^ +[0-9]+ +[0-9]+ +0 ' > "$W/plan_rows"
[ "$(wc -l < "$W/plan_rows")" -eq 3 ] && ok "one row per stage" || fail "plan rows: $(cat "$W/plan_rows")"
# the annotated model keeps the plan: same rows, now a manual partition
OUT=$("$EXE" plan "$W/annotated.onnx" 2>&1); rc=$?
expect 0 "manual partition: 3 stages" "annotated model is read as manual"
echo "$OUT" | grep -E '^ +[0-9]+ +[0-9]+ +0 ' > "$W/plan_rows2"
diff "$W/plan_rows" "$W/plan_rows2" >/dev/null && ok "annotations reproduce the plan" || fail "annotated plan differs"
"$PYTHON_REF" "$top_srcdir/tests/mpi/annotate.py" "$W/annotated.onnx" - stages > "$W/stages"
[ "$(sort -u "$W/stages" | tr '\n' ' ')" = "0 1 2 " ] && ok "every node annotated 0..2" || fail "annotations: $(sort -u "$W/stages" | tr '\n' ' ')"
run_mpi 3 "$W/annotated.onnx" --batches 4 --output-dir "$W/ann"; rc=$?
expect 0 "manual partition: 3 stages" "annotated model runs on 3 ranks"
"$EXE" "$W/m.onnx" --batches 4 --output-dir "$W/one" >/dev/null 2>&1
diff -r "$W/one" "$W/ann" >/dev/null && ok "annotated run equals one rank" || fail "annotated run differs"
# on a single rank the annotated model runs whole, and one line says so
OUT=$("$EXE" "$W/annotated.onnx" --batches 4 --output-dir "$W/ann1" 2>&1 >/dev/null); rc=$?
expect 0 "^ipu-exec: note: $W/annotated.onnx: its 3-stage pipeline annotations .*not used on a single rank.*mpirun -np 3" \
    "annotated model on one rank: a note"
[ "$(echo "$OUT" | wc -l)" -eq 1 ] && ok "the note is one line" || fail "note: $OUT"
diff -r "$W/one" "$W/ann1" >/dev/null && ok "annotated model on one rank equals the plain one" || fail "annotated single-rank run differs"
# gpt2_tiny's input_ids is int64[1,32]: --micro-batch 2 is an error, said once
run_mpi 3 "$M" --batches 3 --micro-batch 2; rc=$?
expect 2 "--micro-batch 2: .*input 'input_ids' int64\[1,32\] has a fixed batch dimension of 1" "--micro-batch on a fixed batch through the pipeline"
[ "$(echo "$OUT" | grep -c 'ipu-exec')" -eq 1 ] && ok "said once, not per rank" || fail "error repeated: $OUT"
# --measure: the costs a pipelined run uses (timed kernels, fused activations)
OUT=$("$EXE" plan "$W/m.onnx" --stages 3 --measure --write "$W/measured.onnx" 2>&1); rc=$?
expect 0 "measured costs" "plan --measure times the nodes"
[ "$(echo "$OUT" | grep -cE '^ +[0-9]+ +[0-9]+ +0 ')" -eq 3 ] && ok "measured plan: one row per stage" ||
    fail "measured plan rows: $OUT"
run_mpi 3 "$W/measured.onnx" --batches 4 --output-dir "$W/meas"; rc=$?
expect 0 "manual partition: 3 stages" "the measured plan's model runs on 3 ranks"
diff -r "$W/one" "$W/meas" >/dev/null && ok "measured plan's run equals one rank" || fail "measured plan's run differs"
run_mpi 2 "$W/annotated.onnx" --batches 2; rc=$?
expect 2 "annotations give 3 stages but 2 ranks" "stage count vs ranks is an error"
victim=$("$PYTHON_REF" "$top_srcdir/tests/mpi/annotate.py" "$W/annotated.onnx" "$W/partial.onnx" partial)
run_mpi 3 "$W/partial.onnx" --batches 2; rc=$?
expect 2 "partly annotated.*'$victim'" "partial annotation names the node"
victim=$("$PYTHON_REF" "$top_srcdir/tests/mpi/annotate.py" "$W/annotated.onnx" "$W/float.onnx" float)
run_mpi 3 "$W/float.onnx" --batches 2; rc=$?
expect 2 "node '$victim' .*attribute __pipeline_stage has type FLOAT; it must be an INT" \
    "a FLOAT annotation is an error naming the node, not ignored"
[ "$(echo "$OUT" | grep -c 'ipu-exec')" -eq 1 ] && ok "said once, not per rank" || fail "error repeated: $OUT"
victim=$("$PYTHON_REF" "$top_srcdir/tests/mpi/annotate.py" "$W/annotated.onnx" "$W/back.onnx" backwards)
OUT=$("$EXE" plan "$W/back.onnx" 2>&1); rc=$?
expect 2 "inconsistent annotations" "a backwards flow is an error"
# stages that constant folding empties (docs/partition.md): annotated 0..2,
# stage 1 only a folded Shape, the model runs as 2 stages, said in the plan
# line, with the single-rank outputs; -np 3 and the single-rank note name
# -np 2; a real gap is still an error; a model whose every node folds runs
# as replicas of one empty stage, and a pipeline of it says what to run.
"$PYTHON_REF" "$top_srcdir/tests/mpi/stage_models.py" "$W"
"$EXE" "$W/folded_stage.onnx" --batches 3 --output-dir "$W/fs1" >/dev/null 2>&1
run_mpi 2 "$W/folded_stage.onnx" --batches 3 --output-dir "$W/fs2"; rc=$?
expect 0 "manual partition: 2 stages (3 annotated; constant folding left 1 of them without a node to run)" \
    "a stage emptied by folding is dropped and the others run"
diff -r "$W/fs1" "$W/fs2" >/dev/null && ok "its outputs equal one rank's" || fail "folded-stage run differs"
run_mpi 3 "$W/folded_stage.onnx" --batches 2; rc=$?
expect 2 "annotations give 2 stages (3 annotated.*run with -np 2 " "-np 3 on it names -np 2"
OUT=$("$EXE" "$W/folded_stage.onnx" 2>&1 >/dev/null); rc=$?
expect 0 "its 3-stage pipeline annotations .*so 2 run.*mpirun -np 2 " "the single-rank note names -np 2"
OUT=$("$EXE" plan "$W/gap.onnx" 2>&1); rc=$?
expect 2 "stage 1 has no node" "a gap in the annotations is an error"
"$EXE" "$W/all_folded.onnx" --batches 3 --output-dir "$W/af1" >/dev/null 2>&1
run_mpi 2 "$W/all_folded.onnx" --replicas 2 --batches 3 --output-dir "$W/af2"; rc=$?
expect 0 "auto partition: 1 stage," "a model whose every node folds runs as replicas"
diff -r "$W/af1" "$W/af2" >/dev/null && ok "its replicas' outputs equal one rank's" || fail "replicas differ"
run_mpi 2 "$W/all_folded.onnx" --batches 2; rc=$?
expect 2 "constant folding computed every node.*-np 2 .*--replicas 2 --ipus-per-rank 1" \
    "a pipeline of it says what to run"
run_mpi 3 "$M" --batches 4 --replicas 2; rc=$?
expect 2 "3 ranks do not divide into 2 replicas" "rank count not divisible"
[ "$(echo "$OUT" | grep -c 'ipu-exec')" -eq 1 ] && ok "said once, not per rank" || fail "error repeated: $OUT"
run_mpi 2 "$M" --batches 2 --ipu-memory 1M; rc=$?
expect 2 "does not fit .* stage .* needs .* MiB.*--ipu-memory" "a model that does not fit says what to change"
OUT=$("$EXE" plan "$M" --stages 100000 2>&1); rc=$?
expect 2 "into 100000 stages" "more stages than nodes"
# Memory boundary: plans count what the devices count (weights + activation
# arena + scratch). By bisection (64 KiB steps), `plan --measure` (the run's
# fused graph) splits ResNet-18 into 3 stages from hi KiB, not at lo KiB;
# whether a split fits does not depend on the measured times.
R18=$CACHE/op13/resnet18/model.onnx
fits() { "$EXE" plan "$R18" --stages 3 --measure --ipu-memory "$1K" >/dev/null 2>&1; }
lo=0 hi=65536
while [ $((hi - lo)) -gt 64 ]; do
    mid=$(((lo + hi) / 2 / 64 * 64))
    if fits $mid; then hi=$mid; else lo=$mid; fi
done
OUT=$("$EXE" plan "$R18" --stages 3 --measure --ipu-memory "${lo}K" 2>&1); rc=$?
expect 2 "stage [0-9] needs [0-9.]* \(MiB\|B\) (weights .* + activations .* + scratch [0-9.]* [KM]iB) but an IPU has" \
    "no split at ${lo} KiB: plan names the stage and what it needs"
[ "$(echo "$OUT" | wc -l)" -eq 1 ] && ok "in one line" || fail "not one line: $OUT"
# in MiB, or in bytes where both round to the same MiB
need=$(echo "$OUT" | sed -n 's/.*needs \([0-9.]*\) \(MiB\|B\) .*/\1 \2/p')
has=$(echo "$OUT" | sed -n 's/.*an IPU has \([0-9.]*\) \(MiB\|B\);.*/\1 \2/p')
min=$(echo "$OUT" | sed -n 's/.*--ipu-memory \([0-9]*\)K or more.*/\1/p')
echo "ResNet-18, 3 stages: fits from ${hi} KiB, not at ${lo} KiB; plan says ${min:-?} KiB at least"
awk -v n="$need" -v h="$has" -v c="$lo" 'BEGIN { split(n, N, " "); split(h, H, " ");
    want = H[2] == "B" ? c * 1024 : sprintf("%.1f", c / 1024)
    exit !(N[2] == H[2] && N[1] + 0 > H[1] + 0 && H[1] == want) }' &&
    ok "it needs $need, more than the IPU's $has" || fail "needs '$need', has '$has' at ${lo} KiB"
if [ -n "$min" ] && [ "$min" -gt "$lo" ] && [ "$min" -le "$hi" ] && fits "$min" && ! fits $((min - 1)); then
    ok "the least memory it names is the boundary to 1 KiB"
else fail "named ${min:-nothing} KiB; bisection: $lo < x <= $hi"; min=$hi; fi
OUT=$("$EXE" plan "$R18" --stages 3 --measure --ipu-memory "${min}K" --write "$W/r18.onnx" 2>&1); rc=$?
run_mpi 3 "$W/r18.onnx" --ipu-memory "${min}K"; rc=$?
expect 0 "manual partition: 3 stages" "the plan at ${min} KiB passes the devices' setup"
for cap in $min $((min + 1024)); do
    run_mpi 3 "$R18" --ipu-memory "${cap}K"; rc=$?
    expect 0 "auto partition: 3 stages" "a pipelined run plans and passes setup at ${cap} KiB"
done
run_mpi 3 "$R18" --ipu-memory "$((min - 1))K"; rc=$?
expect 2 "does not fit 3 IPUs in any split: at best, stage [0-9] needs" "a run at $((min - 1)) KiB is refused up front"
echo "$OUT" | grep -q "failed to set up\|IPU [0-9]*: the stage" && fail "a device was set up: $OUT" ||
    ok "before any device was set up"
echo "partition: $fails failure(s)"
[ "$fails" -eq 0 ]
