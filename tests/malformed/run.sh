#!/bin/sh
# Malformed models and inputs (issue 2, point 7): every case must exit with
# code 2 and print exactly one line on stderr that names the problem.
#     ipu-exec MODEL.onnx [--inputs DIR]
set -u
: "${top_builddir:=.}" "${top_srcdir:=.}" "${PYTHON_REF:=/usr/bin/python3}"
EXE="$top_builddir/ipu-exec"
[ -x "$EXE" ] || { echo "SKIP: $EXE is not built"; exit 77; }
"$PYTHON_REF" -c "import onnx, numpy" 2>/dev/null || { echo "SKIP: $PYTHON_REF lacks onnx/numpy"; exit 77; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$PYTHON_REF" "$top_srcdir/tests/malformed/make_bad_models.py" "$W" || exit 99
fails=0

# bad CASE PATTERN... [-- ipu-exec options]: runs ipu-exec on
# $W/CASE/model.onnx; wants exit 2, exactly one line on stderr, and every
# PATTERN (extended regex) in it.
bad() {
    name=$1; shift
    pats=""
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        pats="$pats$1
"
        shift
    done
    [ $# -gt 0 ] && shift
    "$EXE" "$W/$name/model.onnx" "$@" >"$W/out" 2>"$W/err"; rc=$?
    lines=$(wc -l <"$W/err")
    why=""
    [ "$rc" -eq 2 ] || why="$why; exit $rc (want 2)"
    [ "$lines" -eq 1 ] || why="$why; $lines lines on stderr (want 1)"
    while IFS= read -r p; do
        [ -z "$p" ] || grep -Eq -- "$p" "$W/err" || why="$why; no '$p' on stderr"
    done <<PATS
$pats
PATS
    if [ -n "$why" ]; then
        echo "FAIL: $name: ${why#; }"; sed 's/^/    /' "$W/err"; fails=$((fails + 1))
    else
        echo "ok: $name: $(cat "$W/err")"
    fi
}

bad missing_file        "model\.onnx" "No such file"
bad not_protobuf        "not an ONNX model"
bad truncated           "truncated"
bad no_graph            "no graph"
bad unsupported_op      "unsupported_op/model\.onnx: 2 unsupported" "det_node" "Det" "foo_node" "FooBarOp"
bad opset_5             "opset 5([^0-9]|$)"
bad opset_99            "opset 99([^0-9]|$)"
bad missing_initializer "conv1\.weight" "missing initializer"
bad dangling_input      "hiden_state" "dangling"
bad newline_in_name     "'hidden\\\\x0astate'" "dangling"
bad extra_output        "extra_output/model\\.onnx: node 'mm_two'" "output #1 'mm_extra' is not produced" "MatMul-13"
bad huge_shape          "node 'fill' \\(ConstantOfShape\\): output 'big'" "over 4096 TiB"
bad huge_fold           "needs 65536\\.0 MiB" "raise --ipu-memory"
bad cyclic_graph        "cycle" "loop_"
bad stride_2_31         "node 'pool_far' \\(MaxPool\\)" "strides\\[1\\] = 2147483648" "not supported"
bad stage_float         "node 'relu0' \\(Relu\\): attribute __pipeline_stage has type FLOAT; it must be an INT"
bad ipu_number_ints     "node 'relu0' \\(Relu\\): attribute __ipu_number has type INTS; it must be an INT"
bad inner_dims          "inner_dims/model\.onnx: node 'mm_bad'" "inner dimensions"
bad input_wrong_dtype   "pixel_values" "int64" -- --inputs "$W/input_wrong_dtype/inputs"
bad input_wrong_shape   "pixel_values" "\[2,5\]" -- --inputs "$W/input_wrong_shape/inputs"
bad external_dotdot     "ext_weight" "outside the model folder"
bad external_absolute   "ext_weight" "outside the model folder"
bad external_symlink    "ext_weight" "outside the model folder"
bad external_short      "ext_weight" "shorter than declared"
bad big_truncated       "truncated"
bad big_damaged         "damaged|truncated"
bad big_wrong_size      "big_weight" "262144 bytes of raw_data" "\[255,256\]"
bad big_raw_twice       "twice_weight" "16 bytes of raw_data"
# the private post-op attributes of a fused node (graph/fuse.h) in the
# file itself: a depthwise post-op with no bias slot, after a Mul, after a
# 3x3 Conv
bad fused_dw_no_bias_slot "node 'fused'" "depthwise Conv has no bias slot"
bad fused_dw_after_mul  "node 'fused'" "post-op 0 before a depthwise Conv"
bad fused_dw_after_3x3  "node 'fused'" "not 2-D pointwise"

echo "malformed: $fails failure(s)"
[ "$fails" -eq 0 ]
