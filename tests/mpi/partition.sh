#!/bin/sh
# Partitioning and placement: ipu-exec plan prints the per-stage table (also
# with --measure, the timed costs a pipelined run uses); the
# model it writes (annotated with __ipu_number/__pipeline_stage as PopART
# does) runs with the same plan; a partly annotated or backwards-flowing
# model and a rank count that does not divide are errors naming the
# problem, before any work; a model that does not fit says what to change;
# the annotated model on one rank runs whole with a note; --micro-batch on
# gpt2_tiny's fixed batch is an error said once.
set -u
. "$(dirname "$0")/common.sh"
"$PYTHON_REF" -c "import torch, torchvision, onnx" 2>/dev/null || { echo "SKIP: no torch/onnx"; exit 77; }
need_models 13 gpt2_tiny
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
expect 2 "annotated with 3 pipeline stages but 2 ranks" "stage count vs ranks is an error"
victim=$("$PYTHON_REF" "$top_srcdir/tests/mpi/annotate.py" "$W/annotated.onnx" "$W/partial.onnx" partial)
run_mpi 3 "$W/partial.onnx" --batches 2; rc=$?
expect 2 "partly annotated.*'$victim'" "partial annotation names the node"
victim=$("$PYTHON_REF" "$top_srcdir/tests/mpi/annotate.py" "$W/annotated.onnx" "$W/back.onnx" backwards)
OUT=$("$EXE" plan "$W/back.onnx" 2>&1); rc=$?
expect 2 "inconsistent annotations" "a backwards flow is an error"
run_mpi 3 "$M" --batches 4 --replicas 2; rc=$?
expect 2 "3 ranks do not divide into 2 replicas" "rank count not divisible"
[ "$(echo "$OUT" | grep -c 'ipu-exec')" -eq 1 ] && ok "said once, not per rank" || fail "error repeated: $OUT"
run_mpi 2 "$M" --batches 2 --ipu-memory 1M; rc=$?
expect 2 "does not fit .* stage .* needs .* MiB.*--ipu-memory" "a model that does not fit says what to change"
OUT=$("$EXE" plan "$M" --stages 100000 2>&1); rc=$?
expect 2 "into 100000 stages" "more stages than nodes"
echo "partition: $fails failure(s)"
[ "$fails" -eq 0 ]
