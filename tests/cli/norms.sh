#!/bin/sh
# Normalisations and softmax, with PyTorch references
# (tests/cli/make_norm_models.py):
# - BatchNormalization folded into the Conv or Gemm before it
#   (graph/fold_bn.h), and run with a fused Relu where it cannot be folded:
#   the model passes --check, and the debug log names each fold, and only
#   those;
# - InstanceNormalization, LayerNormalization (a broadcast Scale, the Mean
#   and InvStdDev outputs), Softmax and LogSoftmax along an inner axis
#   (opset 17), and over the 2-D view of opset 11.
set -u
: "${top_builddir:=.}" "${top_srcdir:=.}" "${PYTHON_REF:=/usr/bin/python3}"
EXE="$top_builddir/ipu-exec"
"$PYTHON_REF" -c "import onnx, numpy, torch" 2>/dev/null || { echo "SKIP: $PYTHON_REF lacks onnx/numpy/torch"; exit 77; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$PYTHON_REF" "$top_srcdir/tests/cli/make_norm_models.py" "$W" || exit 1
fails=0
ok()   { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
M=$W/bn/model.onnx
IPU_EXEC_LOG_LEVEL=debug "$EXE" "$M" --check >"$W/out" 2>"$W/err"; rc=$?
[ "$rc" -eq 0 ] && grep -q "^check: 7 outputs of 1 micro-batch ok" "$W/out" &&
    ok "--check against PyTorch" || { fail "--check: exit $rc"; cat "$W/out" "$W/err"; }
for f in "bn1' into Conv 'conv1" "bn2' into Conv 'conv2" "bn6' into Gemm 'gemm6" "bn7' into Gemm 'gemm7"; do
    grep -q "folded BatchNormalization '$f'" "$W/err" && ok "folded $f" || fail "not folded: $f"
done
n=$(grep -c "folded BatchNormalization" "$W/err")
[ "$n" -eq 4 ] && ok "4 folds (not bn3 after a Concat, not bn4 after a graph output)" || fail "$n folds"
# relu1 fused into conv1 (through bn1's Identity), relu3 into bn3; bn3 and
# bn4 left
"$EXE" "$M" --profile >"$W/out" 2>&1
grep -q "^profile: Relu " "$W/out" && fail "a Relu is left: $(grep '^profile: Relu' "$W/out")" ||
    ok "relu1 and relu3 fused"
grep -q "^profile: BatchNormalization  *2 " "$W/out" && ok "2 BatchNormalization nodes run" ||
    fail "BatchNormalization nodes run: $(grep '^profile: Batch' "$W/out")"
# plan --measure folds too, reading gemm7's B7 (left in the model file:
# deferred) for the fold only
"$EXE" plan "$M" --measure >"$W/out" 2>"$W/err" && grep -q "^plan of .*: 19 nodes" "$W/out" &&
    ok "plan --measure" || { fail "plan --measure"; cat "$W/out" "$W/err"; }
for m in norms sm11; do
    "$EXE" "$W/$m/model.onnx" --check >"$W/out" 2>&1 && ok "$m: --check against PyTorch" ||
        { fail "$m: --check"; cat "$W/out"; }
done
[ "$fails" -eq 0 ] || exit 1
