#!/bin/sh
# Rank-local weights: a model whose two 32 MiB weights are embedded in the
# .onnx file (raw_data, not external data) runs as 2 pipeline stages on 2
# ranks; each rank must copy only its own stage's weight. Its peak RSS above
# that of the same model with 32 KiB weights (measured here, same ranks)
# must stay under 80 MiB: its own 32 MiB, the copy of it that the MatMul
# keeps in oneDNN's layout (another 32 MiB; the original is freed only once
# the copy is made) plus activations; the other rank's weight would add 32
# MiB more. Parsing the whole model on every rank (protobuf-c copies every
# weight, and the file's pages are read) cost 120 MiB more. Outputs must
# equal the single-rank run's. One rank of four 16 MiB weights: each is
# freed as soon as its MatMul has its copy, so the peak holds the four
# copies and one original (+80 MiB), not both of every weight (+128).
set -u
. "$(dirname "$0")/common.sh"
"$PYTHON_REF" -c "import onnx, numpy" 2>/dev/null || { echo "SKIP: no onnx/numpy"; exit 77; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
# make WIDTH OUT: x[1, 1024] -> MatMul [1024, WIDTH] -> Relu -> MatMul [WIDTH, 1024]
make() {
    "$PYTHON_REF" - "$1" "$2" <<'EOF'
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
w = int(sys.argv[1]); rng = np.random.default_rng(7)
w1 = numpy_helper.from_array((rng.standard_normal((1024, w)) * 0.03).astype(np.float32), "w1")
w2 = numpy_helper.from_array((rng.standard_normal((w, 1024)) * 0.03).astype(np.float32), "w2")
g = helper.make_graph(
    [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
     helper.make_node("Relu", ["h"], ["r"], name="relu"),
     helper.make_node("MatMul", ["r", "w2"], ["y"], name="mm2")],
    "weights", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1024])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1024])], [w1, w2])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[2])
EOF
}
make 8192 "$W/big.onnx" && make 8 "$W/small.onnx" || { fail "making the models"; exit 1; }
rss() { # rss MODEL: "R0 R1", the peak RSS of each of 2 ranks in MiB
    run_mpi 2 "$1" --batches 4 --output-dir "$W/out.$(basename "$1")" || { echo "$OUT" | tail -3 >&2; return 1; }
    echo "$OUT" | sed -n 's/^peak RSS per rank MiB: *//p'
}
small=$(rss "$W/small.onnx") && big=$(rss "$W/big.onnx") || { fail "the 2-rank runs"; exit 1; }
echo "peak RSS per rank MiB: 32 KiB weights: $small; 2 x 32 MiB weights: $big"
set -- $small $big
if [ $# -eq 4 ] && awk -v s0="$1" -v s1="$2" -v b0="$3" -v b1="$4" \
        'BEGIN { exit !(b0 - s0 < 80 && b1 - s1 < 80 && b0 - s0 > 48 && b1 - s1 > 48) }'; then
    ok "each rank holds its own stage's weight only (+$(awk -v a="$3" -v b="$1" 'BEGIN{print a-b}') / +$(awk -v a="$4" -v b="$2" 'BEGIN{print a-b}') MiB)"
else
    fail "peak RSS per rank: 32 KiB weights $small, 32 MiB weights $big (each rank must add 48-80 MiB)"
fi
"$EXE" "$W/big.onnx" --batches 4 --output-dir "$W/ref" >/dev/null 2>"$W/err" || { fail "single-rank run"; cat "$W/err"; }
if diff -r "$W/ref" "$W/out.big.onnx" >/dev/null; then ok "2-rank outputs identical to one rank"
else fail "2-rank outputs differ from the single-rank run"; fi
# weights that reach their MatMul through a Transpose, folded at load: every
# rank folds them from the file (and puts each weight back there after), the
# folded copies it does not use are dropped; outputs as one rank's
"$PYTHON_REF" - "$W/folded.onnx" <<'EOF'
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
rng = np.random.default_rng(3); nodes, inits, x = [], [], "x"
for i in range(3):
    inits.append(numpy_helper.from_array((rng.standard_normal((512, 512)) * 0.05).astype(np.float32), f"w{i}"))
    nodes += [helper.make_node("Transpose", [f"w{i}"], [f"wt{i}"], perm=[1, 0], name=f"t{i}"),
              helper.make_node("MatMul", [x, f"wt{i}"], [f"h{i}"], name=f"mm{i}")]
    x = f"h{i}"
g = helper.make_graph(nodes, "folded", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 512])],
                      [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 512])], inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
EOF
"$EXE" "$W/folded.onnx" --batches 3 --output-dir "$W/fref" >/dev/null 2>"$W/err" || { fail "folded: single-rank run"; cat "$W/err"; }
run_mpi 3 "$W/folded.onnx" --batches 3 --output-dir "$W/fout"
if [ $? -eq 0 ] && diff -r "$W/fref" "$W/fout" >/dev/null; then ok "folded weights: 3-rank outputs identical to one rank"
else fail "folded weights: 3 ranks"; echo "$OUT" | tail -3; fi
# chain K WIDTH OUT: x[1, 1024] -> MatMul [1024, WIDTH] -> MatMul [WIDTH, 1024], K times
chain() {
    "$PYTHON_REF" - "$@" <<'EOF'
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
k, w = int(sys.argv[1]), int(sys.argv[2]); rng = np.random.default_rng(5)
nodes, inits, x = [], [], "x"
for i in range(k):
    shape = (1024, w) if i % 2 == 0 else (w, 1024)
    inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.03).astype(np.float32), f"w{i}"))
    nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"h{i}"], name=f"mm{i}"))
    x = f"h{i}"
g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1024])],
                      [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 1024])], inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[3])
EOF
}
chain 4 4096 "$W/chain.onnx" && chain 4 4 "$W/chain_small.onnx" || { fail "making the chains"; exit 1; }
peak1() { # peak1 MODEL: the peak RSS in MiB of a single-rank run (a child's ru_maxrss)
    "$PYTHON_REF" -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)' "$EXE" "$1" --batches 2
}
s=$(peak1 "$W/chain_small.onnx") && b=$(peak1 "$W/chain.onnx") || { fail "the 1-rank chain runs"; exit 1; }
if awk -v s="$s" -v b="$b" 'BEGIN { exit !(b - s > 64 && b - s < 104) }'; then
    ok "one rank of four 16 MiB weights: peak +$(awk -v s="$s" -v b="$b" 'BEGIN{print b-s}') MiB (copies, one original)"
else
    fail "one rank of four 16 MiB weights: peak RSS $b MiB, $s MiB with 16 KiB weights (must add 64-104 MiB)"
fi
echo "weights: $fails failure(s)"
[ "$fails" -eq 0 ]
