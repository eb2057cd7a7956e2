#!/bin/sh
# Command-line behaviour of ipu-exec on small models with numpy references:
# --check (pass and fail), symbolic batch, .npy inputs, input matching by
# name, --output-dir round trip, bad inputs, memory capacity, mpirun -np 1.
set -u
: "${top_builddir:=.}" "${top_srcdir:=.}" "${PYTHON_REF:=/usr/bin/python3}"
EXE="$top_builddir/ipu-exec"
"$PYTHON_REF" -c "import onnx, numpy" 2>/dev/null || { echo "SKIP: $PYTHON_REF lacks onnx/numpy"; exit 77; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$PYTHON_REF" "$top_srcdir/tests/cli/make_cli_models.py" "$W" || exit 1
fails=0
# expect CODE DESCRIPTION PATTERN -- command...: exit code CODE and PATTERN in stdout+stderr
expect() {
    code=$1 what=$2 pat=$3; shift 4
    "$@" >"$W/out" 2>"$W/err"; rc=$?
    if [ "$rc" -ne "$code" ] || ! grep -q -- "$pat" "$W/out" "$W/err"; then
        echo "FAIL: $what: exit $rc (want $code), pattern '$pat'"; cat "$W/out" "$W/err"; fails=$((fails + 1))
    else
        echo "ok: $what"
    fi
}
# errors: exactly one line on stderr
one_line() {
    n=$(wc -l <"$W/err")
    [ "$n" -eq 1 ] || { echo "FAIL: $1: $n lines on stderr"; cat "$W/err"; fails=$((fails + 1)); }
}
M=$W/mlp
expect 0 "check passes (symbolic batch 3)" "output 0 'y' float\[3,4\]: ok" -- "$EXE" "$M/model.onnx" --inputs "$M/test_data_set_0" --check
expect 0 "latency line" "latency ms: median" -- "$EXE" "$M/model.onnx" --batches 3
expect 0 "throughput counts the batch" "micro-batch of 3)" -- "$EXE" "$M/model.onnx" --inputs "$M/test_data_set_0"
expect 0 ".npy input (batch 2)" "float\[2,4\]: ok" -- "$EXE" "$M/model.onnx" --inputs "$M/npy" --check
expect 1 "check mismatch names the worst element" "worst at \[1,2\]" -- "$EXE" "$M/model.onnx" --inputs "$M/bad_ref" --check
expect 0 "inputs matched by name, two outputs, int64 output" "output 1 'shape' int64\[2\]: ok" -- "$EXE" "$W/two_in/model.onnx" --inputs "$W/two_in/test_data_set_0" --check
# --output-dir writes what --check then accepts as a reference
expect 0 "output-dir" "latency" -- "$EXE" "$M/model.onnx" --inputs "$M/test_data_set_0" --output-dir "$W/o"
cp "$M/test_data_set_0/input_0.pb" "$W/o/"
expect 0 "output-dir round trip" ": ok" -- "$EXE" "$M/model.onnx" --inputs "$W/o" --check --atol 0 --rtol 0
expect 0 "profile" "profile: MatMul" -- "$EXE" "$M/model.onnx" --profile --batches 2
expect 2 "wrong input dtype" "expects float\[N,8\], got double\[3,8\]" -- "$EXE" "$M/model.onnx" --inputs "$M/wrong_dtype"
one_line "wrong input dtype"
expect 2 "wrong input shape" "got float\[3,9\]" -- "$EXE" "$M/model.onnx" --inputs "$M/wrong_shape"
one_line "wrong input shape"
expect 2 "missing input file" "input_0.pb" -- "$EXE" "$M/model.onnx" --inputs "$W"
expect 2 "too little IPU memory" "raise --ipu-memory" -- "$EXE" "$M/model.onnx" --ipu-memory 256
one_line "too little IPU memory"
expect 2 "check without inputs" "--check needs --inputs" -- "$EXE" "$M/model.onnx" --check
expect 2 "bad option value" "--threads" -- "$EXE" "$M/model.onnx" --threads 0
expect 0 "help" "Usage: ipu-exec" -- "$EXE" --help
expect 0 "list-ops" "^Conv " -- "$EXE" --list-ops
# docs/ops.md is generated from --list-ops: they must agree
"$EXE" --list-ops | LC_ALL=C sort | awk '{print "| " $1 " | " $2 " |"}' > "$W/ops"
if grep '^| [A-Z]' "$top_srcdir/docs/ops.md" | diff - "$W/ops" >/dev/null; then echo "ok: docs/ops.md is current"
else echo "FAIL: docs/ops.md differs from --list-ops (run scripts/gen-ops-doc.sh)"; fails=$((fails + 1)); fi
if command -v "${MPIRUN:-mpirun}" >/dev/null; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    expect 0 "mpirun -np 1" "output 0 'y' float\[3,4\]: ok" -- timeout 60 "${MPIRUN:-mpirun}" -np 1 "$EXE" "$M/model.onnx" --inputs "$M/test_data_set_0" --check
fi
echo "cli: $fails failure(s)"
[ "$fails" -eq 0 ]
