#!/bin/sh
# Command-line behaviour of ipu-exec on small models with numpy references:
# --check (pass and fail), symbolic batch, .npy inputs and references, input
# matching by name (file and TensorProto), two files for one input and extra
# files (warned), Fortran-order .npy, .npy of every dtype read and written,
# test_data_set_M per micro-batch (sets of other shapes an error),
# --save-inputs and --output-dir (pb and npy) replayed, synthetic inputs
# against the generator computed in Python, bad inputs, memory capacity, mpirun -np 1;
# --check's default inputs (test_data_set_0/ next to the model), --micro-batch
# on a fixed batch dimension, the note on an annotated model run on one rank;
# info's CPU and oneDNN ISA (at least AVX2 where the CPU has it); a weight
# that a Conv holds in its own layout freed (one rank, and a 2-stage pipeline);
# info's arguments; --ipu-memory past 2^64 bytes; input files against the
# model's declared dtypes and shapes on 1 to 3 ranks, an input without a
# shape, inputs with a default (an initializer) overridden or not;
# info --config and docs/settings.md, a warning for an invalid setting;
# plan: --stages against --ipus-per-rank, annotations against --stages,
# --write and --output-dir checked before any work; plan --micro-batch and
# --replicas; a node alone too large for an IPU; a float16 model; --rtol -1;
# under mpirun: the stage count from -np, mismatch lines after the report,
# test_data_set_M per micro-batch through a 2-stage pipeline, --save-inputs
# there and over replicas, usage errors said once, --replicas without
# --batches, the
# start-up agreement (one rank's error, different models or options);
# --digest against its definition computed from the written outputs
# (output_digest.py), the same digest from 4 stages and from 2 replicas;
# the latency of every 2nd micro-batch of a run of 70000.
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
ok()   { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
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
# sets read up to the first missing one: one after a gap is said not to be read
mkdir -p "$W/gap" && cp -r "$M/test_data_set_0" "$W/gap/test_data_set_0" && cp -r "$M/test_data_set_0" "$W/gap/test_data_set_2"
expect 0 "a set after a gap: said" "^ipu-exec: warning: $W/gap/test_data_set_2 is not read: .*test_data_set_1 (rename" -- "$EXE" "$M/model.onnx" --inputs "$W/gap" --check --batches 3
# infinities match only themselves (numpy.isclose): an infinite reference
# has an infinite tolerance, which let anything pass
I=$W/infs
expect 0 "check: inf against the same inf" "output 0 'y' float\[4\]: ok" -- "$EXE" "$I/model.onnx" --inputs "$I/inf_ok" --check
expect 1 "check: finite against inf is a mismatch" "worst at \[0\]: got 1, want inf" -- "$EXE" "$I/model.onnx" --inputs "$I/finite_vs_inf" --check
expect 1 "check: inf against -inf is a mismatch" "worst at \[2\]: got inf, want -inf" -- "$EXE" "$I/model.onnx" --inputs "$I/inf_sign" --check
expect 0 "inputs matched by name, two outputs, int64 output" "output 1 'shape' int64\[2\]: ok" -- "$EXE" "$W/two_in/model.onnx" --inputs "$W/two_in/test_data_set_0" --check
# --output-dir writes what --check then accepts as a reference
expect 0 "output-dir" "latency" -- "$EXE" "$M/model.onnx" --inputs "$M/test_data_set_0" --output-dir "$W/o"
cp "$M/test_data_set_0/input_0.pb" "$W/o/"
expect 0 "output-dir round trip" ": ok" -- "$EXE" "$M/model.onnx" --inputs "$W/o" --check --atol 0 --rtol 0
# --digest: the digest of the outputs' bytes as output_digest.py computes it
# from the files written; another seed, another digest
digest_of() { sed -n 's/^digest: \([0-9a-f]\{16\}\) .*/\1/p' "$W/out"; }
expect 0 "--digest" "^digest: [0-9a-f]\{16\} (3 outputs of 3 micro-batches)\$" -- "$EXE" "$M/model.onnx" --batches 3 --digest --output-dir "$W/dg"
DG=$(digest_of)
[ "$DG" = "$("$PYTHON_REF" "$top_srcdir/tests/cli/output_digest.py" "$W/dg" 3 1)" ] && ok "--digest of the written outputs" ||
    fail "--digest $DG differs from output_digest.py's"
expect 0 "--digest, two outputs" "^digest: .* (4 outputs of 2 micro-batches)" -- "$EXE" "$W/two_in/model.onnx" --inputs "$W/two_in/test_data_set_0" --batches 2 --digest --output-dir "$W/dg2"
[ "$(digest_of)" = "$("$PYTHON_REF" "$top_srcdir/tests/cli/output_digest.py" "$W/dg2" 2 2)" ] && ok "--digest of two outputs, int64 included" ||
    fail "--digest of two_in differs from output_digest.py's: $(cat "$W/out")"
expect 0 "--digest --seed 1" "^digest: " -- "$EXE" "$M/model.onnx" --batches 3 --digest --seed 1
[ "$(digest_of)" != "$DG" ] && ok "other outputs, other digest" || fail "--seed 1 gave the digest of --seed 0"
# .npy references, files by the graph names, two files for one input, an
# extra file, a Fortran-order .npy
expect 0 ".npy reference output_0.npy" "check: 1 output of 1 micro-batch ok" -- "$EXE" "$M/model.onnx" --inputs "$M/npy_ref" --check
expect 0 "input and reference by name (x.npy, y.npy)" "output 0 'y' float\[2,4\]: ok" -- "$EXE" "$M/model.onnx" --inputs "$M/by_name" --check
expect 0 "input_0.pb and input_0.npy: the .pb, said" "^ipu-exec: warning: input 0 'x' has several files: $M/both/input_0.pb and $M/both/input_0.npy; using $M/both/input_0.pb" -- "$EXE" "$M/model.onnx" --inputs "$M/both" --check
grep -q "output 0 'y' float\[3,4\]: ok" "$W/out" && ok "the .pb input was used" || fail "input_0.pb and .npy: $(cat "$W/out")"
grep -q "^ipu-exec: warning: $M/both/input_1.pb matches no input of the model (input_0, or by name 'x'); the file is not used\$" "$W/err" &&
    ok "an extra input file is warned about" || fail "extra input_1.pb: $(cat "$W/err")"
[ "$(grep -c warning "$W/err")" -eq 2 ] && ok "each warning once" || fail "warnings: $(cat "$W/err")"
expect 2 "Fortran-order .npy" "^ipu-exec: $M/fortran/input_0.npy: .npy array is in Fortran order; save a C-order array" -- "$EXE" "$M/model.onnx" --inputs "$M/fortran"
one_line "Fortran-order .npy"
expect 2 "--check without a reference file" "^ipu-exec: --check: $M/wrong_shape/output_0.pb: no such file; the reference of output 0 'y' is output_0.pb, output_0.npy, y.pb or y.npy there\$" -- "$EXE" "$M/model.onnx" --inputs "$M/wrong_shape" --check
one_line "--check without a reference file"
expect 2 "--format bogus" "--format bogus: expected pb or npy" -- "$EXE" "$M/model.onnx" --format bogus
# test_data_set_M: micro-batch M reads set M mod sets, its inputs and its
# reference (S: two sets of different inputs; S_BAD: set 1's reference is
# set 0's output, which passes only if set 0 served both micro-batches)
S=$W/sets S_BAD=$W/sets_bad
expect 0 "--check reads test_data_set_M per micro-batch" "^check: 2 outputs of 2 micro-batches ok" -- "$EXE" "$S/model.onnx" --check --batches 2
grep -q "^inputs: $S/test_data_set_{0..1}: micro-batch M reads test_data_set_<M mod 2>\$" "$W/out" && ok "inputs line names the sets" || fail "inputs line: $(cat "$W/out")"
expect 0 "one micro-batch reads test_data_set_0 alone" "^inputs: $S/test_data_set_0\$" -- "$EXE" "$S/model.onnx" --check
expect 0 "--inputs DIR of sets, cycled over 3 micro-batches" "^check: 3 outputs of 3 micro-batches ok" -- "$EXE" "$S/model.onnx" --inputs "$S" --check --batches 3
expect 1 "micro-batch 1 checked against its own set" "^check: micro-batch 1 output 0 'y' float\[3,4\]: MISMATCH in .*reference $S_BAD/test_data_set_1/output_0.pb)" -- "$EXE" "$S/model.onnx" --inputs "$S_BAD" --check --batches 2
expect 0 "--inputs test_data_set_1 itself: every micro-batch" "^check: 2 outputs of 2 micro-batches ok" -- "$EXE" "$S/model.onnx" --inputs "$S/test_data_set_1" --check --batches 2
expect 2 "test data sets of other shapes, before any work" "^ipu-exec: $W/sets_shapes/test_data_set_1/input_0.npy: input 0 'x' is float\[2,8\] but micro-batch 0's is float\[3,8\]" -- "$EXE" "$S/model.onnx" --inputs "$W/sets_shapes" --batches 2
one_line "test data sets of other shapes"
grep -q latency "$W/out" && fail "sets of other shapes: the model ran" || ok "sets of other shapes: nothing ran"
# every dtype of .npy read (inputs and reference) and written (--save-inputs)
D=$W/dtypes
expect 0 ".npy of 11 dtypes read" "^check: 1 output of 1 micro-batch ok" -- "$EXE" "$D/model.onnx" --inputs "$D/npy" --check --save-inputs "$W/dsave" --format npy
"$PYTHON_REF" - "$D/npy" "$W/dsave" <<'PY' && ok ".npy of 11 dtypes written as read" || fail ".npy dtypes written: $(ls "$W/dsave")"
import sys, numpy as np
a, b = sys.argv[1:]
for k in range(11):
    x, y = np.load(f"{a}/input_{k}.npy"), np.load(f"{b}/input_{k}.npy")
    assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), (k, x.dtype, y.dtype)
PY
# --save-inputs with --output-dir: a replay checks every micro-batch (exact)
expect 0 "--save-inputs and --output-dir, 2 micro-batches" "latency" -- "$EXE" "$M/model.onnx" --batches 2 --save-inputs "$W/rec" --output-dir "$W/rec"
[ -f "$W/rec/test_data_set_1/input_0.pb" ] && [ -f "$W/rec/test_data_set_1/output_0.pb" ] && ok "test_data_set_1 has input and output" || fail "rec: $(find "$W/rec")"
expect 0 "replay of the recorded run" "^check: 2 outputs of 2 micro-batches ok (max abs err 0)" -- "$EXE" "$M/model.onnx" --batches 2 --inputs "$W/rec" --check --atol 0 --rtol 0
# --format npy; the inputs saved are those read; the outputs are numpy's
expect 0 "--format npy" "latency" -- "$EXE" "$S/model.onnx" --inputs "$S" --batches 2 --save-inputs "$W/npyrec" --output-dir "$W/npyrec" --format npy
"$PYTHON_REF" - "$S" "$W/npyrec" <<'PY' && ok "--format npy wrote set M's inputs and numpy's outputs" || fail "--format npy files"
import sys, numpy as np, onnx
from onnx import numpy_helper
src, rec = sys.argv[1:]
pb = lambda p: numpy_helper.to_array(onnx.load_tensor(p))
for m in range(2):
    x = np.load(f"{rec}/test_data_set_{m}/input_0.npy"); y = np.load(f"{rec}/test_data_set_{m}/output_0.npy")
    assert np.array_equal(x, pb(f"{src}/test_data_set_{m}/input_0.pb"))
    assert np.allclose(y, pb(f"{src}/test_data_set_{m}/output_0.pb"), rtol=1e-4, atol=1e-5), m
PY
expect 0 "replay of the .npy record" "^check: 2 outputs of 2 micro-batches ok" -- "$EXE" "$S/model.onnx" --inputs "$W/npyrec" --check --batches 2
# synthetic inputs: the documented generator (xorshift64*, seed N + M for
# micro-batch M), computed one value after another here, for every dtype
# (the float32 input of 6 values leaves one of the generator's 4 streams
# empty; the mlp's of 7992 makes long ones)
expect 0 "synthetic inputs of every dtype saved" "latency" -- "$EXE" "$D/model.onnx" --batches 2 --seed 7 --save-inputs "$W/syn" --format npy
expect 0 "synthetic inputs of 7992 floats saved" "latency" -- "$EXE" "$M/model.onnx" --batches 2 --seed 7 --micro-batch 999 --save-inputs "$W/synm" --format npy
"$PYTHON_REF" - "$W/syn" "$W/synm" <<'PY' && ok "synthetic inputs are xorshift64*'s values" || fail "synthetic inputs differ from xorshift64*"
import sys, glob, numpy as np
M64 = (1 << 64) - 1
def stream(seed):
    s = 0x9E3779B97F4A7C15 ^ seed
    while True:
        s ^= s >> 12; s ^= (s << 25) & M64; s ^= s >> 27
        yield (s * 2685821657736338717) & M64
for d in sys.argv[1:]:
    for m in range(2):
        gen = stream(7 + m)
        files = sorted(glob.glob(f"{d}/test_data_set_{m}/input_*.npy"), key=lambda p: int(p.rsplit("_", 1)[1][:-4]))
        assert files
        for f in files:
            x = np.load(f)
            r = np.array([next(gen) for _ in range(x.size)], dtype=object)
            u = np.array([(v >> 11) / 9007199254740992.0 * 2 - 1 for v in r], np.float64).reshape(x.shape)
            if x.dtype == np.bool_:
                want = np.array([v >> 63 for v in r], np.bool_).reshape(x.shape)
            elif np.issubdtype(x.dtype, np.integer):
                want = np.array([(v >> 1) % 10 for v in r], x.dtype).reshape(x.shape)
            elif x.dtype == np.float16:
                assert np.allclose(x, u, rtol=0, atol=1e-3), f; continue
            else:
                want = u.astype(x.dtype)
            assert np.array_equal(x, want), (f, x.ravel()[:4], want.ravel()[:4])
PY
expect 0 "profile" "profile: MatMul" -- "$EXE" "$M/model.onnx" --profile --batches 2
grep -q "^profile: node  *op  *ms/run  *share" "$W/out" && grep -Eq "^profile: [^ ]+ +MatMul +[0-9.]+ +[0-9.]+%" "$W/out" &&
    ok "profile lists the nodes" || fail "profile without nodes: $(cat "$W/out")"
expect 2 "wrong input dtype: the file's" "^ipu-exec: $M/wrong_dtype/input_0.pb: input 0 'x' is double\[3,8\] but the model's input is float\[N,8\]: the file's dtype differs from the model's; write the file as float\$" -- "$EXE" "$M/model.onnx" --inputs "$M/wrong_dtype"
one_line "wrong input dtype"
expect 2 "wrong input shape" "^ipu-exec: $M/wrong_shape/input_0.pb: input 0 'x' is float\[3,9\] but the model's input is float\[N,8\]: the file's shape differs from the model's; give a tensor of that shape\$" -- "$EXE" "$M/model.onnx" --inputs "$M/wrong_shape"
one_line "wrong input shape"
# an input of unknown rank (no shape in the model) takes the data's shape;
# synthetic data cannot be made for it
NS=$W/noshape
expect 0 "an input without a shape takes float[2,3]" "^check: 1 output of 1 micro-batch ok" -- "$EXE" "$NS/model.onnx" --check
expect 0 "an input without a shape takes float[2,1,3]" "^check: 1 output of 1 micro-batch ok" -- "$EXE" "$NS/model.onnx" --inputs "$NS/rank3" --check
NS_SYNTH="^ipu-exec: input 0 'x': the model does not declare its shape, so no synthetic data can be made for it; give its data with --inputs DIR (input_0.pb, input_0.npy, x.pb or x.npy there)\$"
expect 2 "synthetic data for an input without a shape" "$NS_SYNTH" -- "$EXE" "$NS/model.onnx"
one_line "synthetic data for an input without a shape"
# graph inputs with an initializer (keep_initializers_as_inputs) are inputs
# with a default: data given for one overrides its initializer, by position
# (x 0, b 1, c 2) or by name; without it the initializer is used
DF=$W/dflt
for dir in none by_pos by_name pb_names sets; do
    expect 0 "inputs with a default: $dir" "^check: 2 outputs of 2 micro-batches ok" -- "$EXE" "$DF/model.onnx" --inputs "$DF/$dir" --check --batches 2
done
expect 2 "a default given in one set only" "^ipu-exec: $DF/sets_mixed/test_data_set_1: input 1 'b' (it has a default in the model) is given in test_data_set_0 but not in test_data_set_1; give it in every set or in none\$" -- "$EXE" "$DF/model.onnx" --inputs "$DF/sets_mixed" --batches 2
DF_WRONG="^ipu-exec: $DF/wrong/b.npy: input 1 'b' is float\[3\] but the model's input is float\[2,3\]: the file's shape differs from the model's; give a tensor of that shape\$"
expect 2 "a default's file of another shape" "$DF_WRONG" -- "$EXE" "$DF/model.onnx" --inputs "$DF/wrong"
expect 2 "plan: a default's file of another shape" "$DF_WRONG" -- "$EXE" plan "$DF/model.onnx" --inputs "$DF/wrong"
# --save-inputs writes a default given at its position, and no other
expect 0 "--save-inputs of a default given" "latency" -- "$EXE" "$DF/model.onnx" --inputs "$DF/by_name" --save-inputs "$W/drec" --output-dir "$W/drec"
[ "$(ls "$W/drec" | tr '\n' ' ')" = "input_0.pb input_2.pb output_0.pb " ] && ok "input_2.pb for c, none for b" || fail "drec: $(ls "$W/drec")"
expect 0 "replay of a default given" "^check: 1 output of 1 micro-batch ok (max abs err 0)" -- "$EXE" "$DF/model.onnx" --inputs "$W/drec" --check --atol 0 --rtol 0
expect 0 "synthetic inputs: none for the inputs with a default" "latency" -- "$EXE" "$DF/model.onnx" --save-inputs "$W/dsyn"
[ "$(ls "$W/dsyn")" = "input_0.pb" ] && ok "only x synthesised" || fail "dsyn: $(ls "$W/dsyn")"
expect 2 "missing input file" "input_0.pb" -- "$EXE" "$M/model.onnx" --inputs "$W"
expect 2 "too little IPU memory" "raise --ipu-memory" -- "$EXE" "$M/model.onnx" --ipu-memory 256
one_line "too little IPU memory"
# --check without --inputs: the ONNX test-data layout next to the model
expect 0 "--check finds test_data_set_0" "^inputs: $M/test_data_set_0\$" -- "$EXE" "$M/model.onnx" --check
grep -q "check: output 0 'y' float\[3,4\]: ok" "$W/out" && grep -q "^check: 1 output of 1 micro-batch ok" "$W/out" &&
    ok "--check with test_data_set_0 compares with its output_0.pb" || fail "--check with test_data_set_0: $(cat "$W/out")"
F=$W/fixed # the mlp with a fixed batch dimension of 1, and no test_data_set_0
expect 2 "check without inputs" "--check needs --inputs DIR .*test_data_set_0/.*there is no $F/test_data_set_0" -- "$EXE" "$F/model.onnx" --check
one_line "check without inputs"
# --micro-batch sizes a symbolic batch dimension; a fixed one is an error
expect 0 "--micro-batch 2 on a symbolic batch" "(.* for 1 micro-batch of 2)" -- "$EXE" "$M/model.onnx" --micro-batch 2
expect 2 "--micro-batch 2 on a fixed batch names the input" "input 'x' float\[1,8\] has a fixed batch dimension of 1" -- "$EXE" "$F/model.onnx" --micro-batch 2
one_line "--micro-batch 2 on a fixed batch"
expect 0 "--micro-batch 1 on a fixed batch of 1" "micro-batch of 1)" -- "$EXE" "$F/model.onnx" --micro-batch 1
# a model annotated for 2 stages run on one rank: one line says so
expect 0 "plan --write 2 stages" "wrote $W/ann2.onnx" -- "$EXE" plan "$M/model.onnx" --stages 2 --write "$W/ann2.onnx"
[ "$("$PYTHON_REF" "$top_srcdir/tests/mpi/annotate.py" "$W/ann2.onnx" - stages | sort -u | tr '\n' ' ')" = "0 1 " ] &&
    ok "the written model is annotated 0..1" || fail "ann2.onnx is not annotated with stages 0 and 1"
# plan: --stages must be a multiple of --ipus-per-rank; the annotations win
# over --stages (said); --write checked before any work
expect 2 "plan --stages 3 --ipus-per-rank 2" "--stages 3 is not a multiple of --ipus-per-rank 2: .* use --stages 2 or 4" -- "$EXE" plan "$M/model.onnx" --stages 3 --ipus-per-rank 2
one_line "plan --stages 3 --ipus-per-rank 2"
expect 0 "plan of an annotated model with another --stages: a note" "note: $W/ann2.onnx is annotated with 2 pipeline stages .* the annotations win over --stages 3" -- "$EXE" plan "$W/ann2.onnx" --stages 3
expect 2 "plan --write to a directory" "--write $W: is a directory" -- "$EXE" plan "$M/model.onnx" --write "$W"
expect 2 "plan --write into a missing folder" "--write $W/no/such.onnx: its folder does not exist" -- "$EXE" plan "$M/model.onnx" --write "$W/no/such.onnx"
"$PYTHON_REF" - "$M/model.onnx" "$W/ext" <<'PY' || fail "making a model with external data"
import os, sys, onnx
m = onnx.load(sys.argv[1]); os.makedirs(sys.argv[2], exist_ok=True)
onnx.save(m, os.path.join(sys.argv[2], "model.onnx"), save_as_external_data=True,
          all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
PY
expect 2 "plan --write of a model with external data elsewhere" "keeps weights in external data files .* write it in the model's folder" -- "$EXE" plan "$W/ext/model.onnx" --stages 2 --write "$W/ext2.onnx"
[ -e "$W/ext2.onnx" ] && fail "the copy was written" || ok "nothing written"
expect 0 "plan --write of a model with external data next to it" "wrote $W/ext/ann.onnx" -- "$EXE" plan "$W/ext/model.onnx" --stages 2 --write "$W/ext/ann.onnx"
# the pipeline runs bare as under mpirun -np 1 (MPI's singleton start)
expect 0 "bare --ipus-per-rank 2" "^pipeline: 1 rank = 1 replica x 1 rank, 2 stages, 2 micro-batches of 3" -- "$EXE" "$M/model.onnx" --inputs "$M/test_data_set_0" --check --ipus-per-rank 2 --batches 2
grep -q "^check: 2 outputs of 2 micro-batches ok" "$W/out" && ok "bare --ipus-per-rank 2 checks both micro-batches" || fail "bare --ipus-per-rank 2: $(cat "$W/out")"
# --output-dir checked before the run
echo x >"$W/afile"
expect 2 "--output-dir a file" "--output-dir $W/afile: not a directory" -- "$EXE" "$M/model.onnx" --output-dir "$W/afile"
one_line "--output-dir a file"
grep -q latency "$W/out" && fail "--output-dir a file: the model ran first" || ok "--output-dir a file: nothing ran"
expect 0 "annotated model on one rank: a note" "^ipu-exec: note: $W/ann2.onnx: its 2-stage pipeline annotations .* not used on a single rank.*mpirun -np 2" -- "$EXE" "$W/ann2.onnx" --inputs "$M/test_data_set_0" --check
one_line "annotated model on one rank"
grep -q "check: 1 output of 1 micro-batch ok" "$W/out" && ok "annotated model runs whole on one rank" || fail "annotated model on one rank: $(cat "$W/out")"
"$EXE" "$M/model.onnx" >/dev/null 2>"$W/err"
[ ! -s "$W/err" ] && ok "no note for a model without annotations" || fail "unannotated model: $(cat "$W/err")"
expect 2 "bad option value" "--threads" -- "$EXE" "$M/model.onnx" --threads 0
# info names the CPU and oneDNN's ISA; on a CPU with AVX2 or AVX-512 that ISA
# must be at least AVX2 (a generic build or a missed CPU would be far slower)
expect 0 "info names the CPU and oneDNN's ISA" "cpu .*, oneDNN [0-9.]* isa [a-z0-9_]*;" -- "$EXE" info
isa=$(sed -n 's/.*, oneDNN [0-9.]* isa \([a-z0-9_]*\);.*/\1/p' "$W/out" | head -1)
if grep -qw -e avx2 -e avx512f /proc/cpuinfo 2>/dev/null; then
    case "$isa" in
        avx2*|avx512*) ok "oneDNN dispatches to $isa on this AVX2/AVX-512 CPU" ;;
        *) fail "oneDNN's ISA is '$isa' on a CPU whose flags show avx2 or avx512f" ;;
    esac
fi
expect 0 "help" "Usage: ipu-exec" -- "$EXE" --help
expect 0 "list-ops" "^Conv " -- "$EXE" --list-ops
# docs/ops.md is generated from --list-ops: they must agree
"$EXE" --list-ops | LC_ALL=C sort | awk '{print "| " $1 " | " $2 " |"}' > "$W/ops"
if grep '^| [A-Z]' "$top_srcdir/docs/ops.md" | diff - "$W/ops" >/dev/null; then echo "ok: docs/ops.md is current"
else echo "FAIL: docs/ops.md differs from --list-ops (run scripts/gen-ops-doc.sh)"; fails=$((fails + 1)); fi
# info parses its arguments: help, an unknown option, a stray argument
expect 0 "info --help" "^Usage: ipu-exec info \[--ipus-per-rank K\]" -- "$EXE" info --help
expect 0 "info -h" "^Usage: ipu-exec info" -- "$EXE" info -h
expect 2 "info --bogus" "info: unknown option --bogus" -- "$EXE" info --bogus
one_line "info --bogus"
expect 2 "info with a model" "info takes no model or other argument (got $M/model.onnx)" -- "$EXE" info "$M/model.onnx"
expect 2 "info --ipus-per-rank 0" "--ipus-per-rank 0: expected an integer from 1 to 64" -- "$EXE" info --ipus-per-rank 0
# a size past 2^64 bytes (or below one byte) is an error, not the default
expect 2 "--ipu-memory 17179869184G" "--ipu-memory 17179869184G: expected a size" -- "$EXE" "$M/model.onnx" --ipu-memory 17179869184G
one_line "--ipu-memory 17179869184G"
expect 2 "plan --ipu-memory 1e30" "--ipu-memory 1e30: expected a size" -- "$EXE" plan "$M/model.onnx" --ipu-memory 1e30
# plan takes a run's --micro-batch (symbolic batch of the planned shapes) and
# --replicas (the plan is per replica); the boundary bytes scale with the batch
# (float32 activations [M,16] cross a cut after a MatMul or Add of the mlp)
expect 0 "plan --micro-batch 4 --replicas 2" "^plan of $M/model.onnx per replica (2 replicas): 4 nodes, .*micro-batch 4," -- "$EXE" plan "$M/model.onnx" --stages 2 --micro-batch 4 --replicas 2
[ "$(grep -c '^plan of' "$W/out")" -eq 1 ] && grep -Eq "^ +1 +1 +0 +[0-9]+ .* $((4 * 16 * 4)) +0 " "$W/out" &&
    ok "plan printed once, stage 1 receives 4 x 16 floats" || fail "plan --micro-batch 4: $(cat "$W/out")"
expect 2 "plan --replicas 0" "--replicas 0: expected a positive integer" -- "$EXE" plan "$M/model.onnx" --replicas 0
# one node alone larger than an IPU: named, with what to do
expect 2 "a node alone does not fit" "node 'mm1' (MatMul) alone does not fit one IPU: it needs .* raise --ipu-memory to at least [0-9]*K" -- "$EXE" plan "$M/model.onnx" --stages 2 --ipu-memory 256
one_line "a node alone does not fit"
# a float16 model: how many nodes read float16, and what to do
expect 2 "float16 model" "node 'mm1' (MatMul): .*float16.*; 3 nodes read float16 tensors .* convert the model to float32" -- "$EXE" "$W/fp16/model.onnx"
one_line "float16 model"
# --timeout inf overflowed the watchdog's deadline and hung a healthy
# pipeline; nan ran with no timeout
expect 2 "--timeout inf" "^ipu-exec: --timeout inf: expected a positive number of seconds, at most 1e9" -- "$EXE" "$M/model.onnx" --timeout inf
expect 2 "--timeout nan" "^ipu-exec: --timeout nan: expected a positive number of seconds" -- "$EXE" "$M/model.onnx" --timeout nan
expect 2 "--rtol -1" "^ipu-exec: --rtol -1: expected a finite non-negative number" -- "$EXE" "$M/model.onnx" --rtol -1
# a NaN or infinite tolerance read a report of an element that matched, at [0,-1]
expect 2 "--atol nan" "^ipu-exec: --atol nan: expected a finite non-negative number" -- "$EXE" "$M/model.onnx" --check --inputs "$M/bad_ref" --atol nan
expect 2 "--rtol inf" "^ipu-exec: --rtol inf: expected a finite non-negative number" -- "$EXE" "$M/model.onnx" --check --inputs "$M/bad_ref" --rtol inf
# --output-dir in the folder of --check's references wrote the outputs over
# them, and then checked them against themselves: refused, the files kept
cp -r "$M/bad_ref" "$W/clob" && cp "$W/clob/output_0.pb" "$W/clob_ref.pb"
expect 2 "--output-dir over the references" "^ipu-exec: --output-dir $W/clob would write this run's outputs over the references --check compares them with ($W/clob/output_0.pb): give --output-dir another folder" -- "$EXE" "$M/model.onnx" --inputs "$W/clob" --check --output-dir "$W/clob"
one_line "--output-dir over the references"
cmp -s "$W/clob/output_0.pb" "$W/clob_ref.pb" && ok "the reference is kept" || fail "--output-dir over the references: the reference changed"
mkdir -p "$W/clob2" && cp -r "$M/test_data_set_0" "$W/clob2/" && ln -s "$W/clob2/test_data_set_0" "$W/clob2_link"
expect 2 "--output-dir over test_data_set_0 (--batches 2)" "would write this run's outputs over the references" -- "$EXE" "$M/model.onnx" --inputs "$W/clob2" --check --batches 2 --output-dir "$W/clob2"
expect 2 "--output-dir: a link to the references' folder" "would write this run's outputs over the references" -- "$EXE" "$M/model.onnx" --inputs "$W/clob2" --check --output-dir "$W/clob2_link"
expect 0 "--output-dir beside test_data_set_0" "^check: 1 output of 1 micro-batch ok" -- "$EXE" "$M/model.onnx" --inputs "$W/clob2" --check --output-dir "$W/clob2"
expect 2 "--inputs that does not exist" "^ipu-exec: --inputs $W/nonexistent: no such directory" -- "$EXE" "$M/model.onnx" --inputs "$W/nonexistent"
# the log names no rank outside MPI (it said -1)
IPU_EXEC_LOG_LEVEL=info "$EXE" "$M/model.onnx" >"$W/out" 2>"$W/err"
grep -q '^\[ipu-exec\] INFO ' "$W/err" && ! grep -q 'ipu-exec:-1' "$W/err" && ok "log prefix without MPI" ||
    fail "log prefix without MPI: $(head -3 "$W/err")"
# a stage over its IPU mostly by oneDNN's scratchpads, which grow with
# --threads: the advice says so
# (where oneDNN's kernel for it has a scratchpad per thread: Winograd on AVX-512)
used=$("$EXE" "$W/conv/model.onnx" --threads 256 | sed -n 's/.* \([0-9.]*\) MiB of .* used$/\1/p')
if [ -n "$used" ] && [ "${used%.*}" -ge 16 ]; then
    expect 2 "scratch over the IPU: lower --threads" "raise --ipu-memory, lower --threads (the scratch grows with it) or split" -- "$EXE" "$W/conv/model.onnx" --threads 256 --ipu-memory 4M
else
    ok "scratch over the IPU: skipped ($used MiB at 256 threads: no scratchpad per thread here)"
fi
# plan --write into a folder nothing can be created in (/proc, even as
# root): refused before the plan is made, not after it is printed
if [ -d /proc/self ]; then
    expect 2 "plan --write into /proc" "^ipu-exec: --write /proc/x.onnx: cannot create a file in its folder" -- "$EXE" plan "$M/model.onnx" --write /proc/x.onnx
    [ ! -s "$W/out" ] && ok "plan --write into /proc: nothing printed first" || fail "plan --write into /proc printed: $(cat "$W/out")"
fi
expect 2 "--ipu-memory 0.5" "--ipu-memory 0.5: expected a size" -- "$EXE" "$M/model.onnx" --ipu-memory 0.5
# settings (src/common/settings.c): info --config lists every one, bare, with
# where its value comes from; docs/settings.md is generated from the table
sed -n 's/^    IPU_SET_\([A-Z0-9_]*\),$/\1/p' "$top_srcdir/src/common/settings.h" >"$W/names"
GCL_SHM_NBUF=5 IPU_EXEC_ABORT_GRACE=soon "$EXE" info --config >"$W/cfg" 2>"$W/err"; rc=$?
[ "$rc" -eq 0 ] && [ ! -s "$W/err" ] && [ -s "$W/names" ] && grep -v '^#' "$W/cfg" | sed 's/=.*//' | diff "$W/names" - >/dev/null &&
    ok "info --config lists every setting" || fail "info --config (exit $rc): $(cat "$W/cfg" "$W/err")"
grep -q '^GCL_SHM_NBUF=5 *(environment)' "$W/cfg" && grep -q '^GCL_SHM_ONESHOT_MAX=16K *(default)' "$W/cfg" &&
    grep -q '^IPU_EXEC_ABORT_GRACE=10 *(default: environment value invalid)' "$W/cfg" &&
    ok "info --config: values from the environment and defaults" || fail "info --config sources: $(cat "$W/cfg")"
if "$EXE" info --config --markdown | diff "$top_srcdir/docs/settings.md" - >/dev/null; then ok "docs/settings.md is current"
else fail "docs/settings.md differs from ipu-exec info --config --markdown (regenerate it with that)"; fi
expect 0 "an invalid setting: one warning, the default used" "^ipu-exec: warning: IPU_EXEC_LOG_LEVEL=loud: expected one of error, warn, info, debug; using the default, warn\$" -- env IPU_EXEC_LOG_LEVEL=loud "$EXE" "$M/model.onnx"
one_line "an invalid setting"
n=$(grep -rl getenv "$top_srcdir/src" | wc -l)
[ "$n" -le 2 ] && ok "getenv in src/ only in settings.c and launcher.c" || fail "getenv outside the settings table: $(grep -rl getenv "$top_srcdir/src")"
# weights a Conv holds in oneDNN's layout once loaded are freed (Wa, 16x8x3x3
# floats), not those another node reads too (Wb, read by a Mul); the outputs
# still match numpy's
H=$W/held
expect 0 "a held weight freed" "freed 4.5 KiB of weights that their nodes hold in oneDNN's layouts (4608 bytes)" -- \
    env IPU_EXEC_LOG_LEVEL=info "$EXE" "$H/model.onnx" --inputs "$H/test_data_set_0" --check
grep -q "^check: 2 outputs of 1 micro-batch ok" "$W/out" && ok "outputs after the weights were freed" ||
    fail "outputs after the weights were freed: $(cat "$W/out")"
if command -v "${MPIRUN:-mpirun}" >/dev/null; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    mpi() { timeout 120 "${MPIRUN:-mpirun}" "$@"; }
    expect 0 "mpirun -np 1" "output 0 'y' float\[3,4\]: ok" -- mpi -np 1 "$EXE" "$M/model.onnx" --inputs "$M/test_data_set_0" --check
    # input files that contradict the model's fixed dtype, rank or dims: the
    # same line on every rank count, before any work, nothing written
    for ranks in "1|" "2|" "2|--replicas 2" "3|"; do
        np=${ranks%%|*} extra=${ranks#*|}; ranks="-np $np${extra:+ $extra}"
        for bad in "wrong_batch|float\[2,8\]|shape|give a tensor of that shape" "wrong_rank|float\[8\]|shape|give a tensor of that shape" \
                   "wrong_dtype|double\[1,8\]|dtype|write the file as float"; do
            dir=${bad%%|*} rest=${bad#*|}; got=${rest%%|*} rest=${rest#*|}; what=${rest%%|*} advice=${rest#*|}
            rm -rf "$W/bad_out"
            # shellcheck disable=SC2086
            expect 2 "mpirun $ranks: $dir" "^ipu-exec: $F/$dir/input_0.pb: input 0 'x' is $got but the model's input is float\[1,8\]: the file's $what differs from the model's; $advice\$" -- mpi -np "$np" "$EXE" "$F/model.onnx" --inputs "$F/$dir" --output-dir "$W/bad_out" $extra
            [ "$(grep -c "ipu-exec" "$W/err")" -eq 1 ] && ! grep -q "^pipeline:\|latency" "$W/out" && [ ! -e "$W/bad_out/output_0.pb" ] &&
                ok "mpirun $ranks: $dir said once, nothing ran" || fail "mpirun $ranks: $dir: $(cat "$W/out" "$W/err")"
        done
    done
    expect 0 "mpirun -np 2: an input without a shape" "^check: 1 output of 1 micro-batch ok" -- mpi -np 2 "$EXE" "$NS/model.onnx" --check
    expect 0 "mpirun -np 2: an input without a shape, rank 3" "^check: 1 output of 1 micro-batch ok" -- mpi -np 2 "$EXE" "$NS/model.onnx" --inputs "$NS/rank3" --check
    expect 2 "mpirun -np 2: synthetic data for an input without a shape" "$NS_SYNTH" -- mpi -np 2 "$EXE" "$NS/model.onnx"
    [ "$(grep -c "ipu-exec" "$W/err")" -eq 1 ] && ok "said once" || fail "said more than once: $(cat "$W/err")"
    # inputs with a default overridden through the pipeline: b and c are
    # read by stage 1 (rank 1), x by stage 0
    for dir in none by_pos by_name pb_names sets; do
        expect 0 "mpirun -np 2: inputs with a default: $dir" "^check: 2 outputs of 2 micro-batches ok" -- mpi -np 2 "$EXE" "$DF/model.onnx" --inputs "$DF/$dir" --check --batches 2
    done
    expect 0 "mpirun -np 4 --replicas 2: inputs with a default" "^check: 4 outputs of 4 micro-batches ok" -- mpi -np 4 "$EXE" "$DF/model.onnx" --inputs "$DF/sets" --check --batches 4 --replicas 2
    expect 2 "mpirun -np 2: a default's file of another shape" "$DF_WRONG" -- mpi -np 2 "$EXE" "$DF/model.onnx" --inputs "$DF/wrong"
    # 2 stages: the rank of the Conv that alone reads Wa frees it, the other none
    expect 0 "a held weight freed by its stage's rank" "check: 2 outputs of 1 micro-batch ok" -- \
        env IPU_EXEC_LOG_LEVEL=info "${MPIRUN:-mpirun}" -np 2 "$EXE" "$H/model.onnx" --inputs "$H/test_data_set_0" --check
    n=$(grep -c "freed .* of weights that their nodes hold" "$W/err")
    [ "$n" -eq 1 ] && grep -q "^\[ipu-exec:0\] INFO .* (4608 bytes)" "$W/err" && ok "rank 0 alone freed Wa" ||
        fail "2 stages: $n ranks freed weights: $(grep freed "$W/err")"
    # usage errors come before MPI_Init: rank 0 alone prints them, in one piece
    for u in "--replicas 0|--replicas 0: expected a positive integer" \
             "--ipus-per-rank 0|--ipus-per-rank 0: expected an integer from 1 to 64" \
             "--check|--check needs --inputs DIR holding the reference output_N.pb, or the ONNX test-data layout (a test_data_set_0/ directory next to the model); there is no $F/test_data_set_0"; do
        opt=${u%%|*} line="ipu-exec: ${u#*|}; see ipu-exec --help"
        # shellcheck disable=SC2086
        mpi -np 3 "$EXE" "$F/model.onnx" $opt >"$W/out" 2>"$W/err"; rc=$?
        n=$(grep -cxF -- "$line" "$W/out" "$W/err" | awk -F: '{s += $NF} END {print s}')
        others=$(grep -c "ipu-exec" "$W/out" "$W/err" | awk -F: '{s += $NF} END {print s}')
        if [ "$rc" -eq 2 ] && [ "$n" -eq 1 ] && [ "$others" -eq 1 ]; then ok "mpirun -np 3 $opt: usage error once, unbroken"
        else fail "mpirun -np 3 $opt: exit $rc, the line $n times, $others lines naming ipu-exec"; cat "$W/out" "$W/err"; fi
    done
    # the start-up agreement: one rank's own error, said by rank 0 within
    # seconds (exit 2); models or options that differ between ranks, named
    expect 2 "a missing model on rank 1" "^ipu-exec (rank 1): $W/missing.onnx: cannot open model" -- timeout 30 "${MPIRUN:-mpirun}" -np 1 "$EXE" "$M/model.onnx" : -np 1 "$EXE" "$W/missing.onnx"
    grep -q "lost rank\|did not finish" "$W/err" && fail "a missing model: $(cat "$W/err")" || ok "a missing model: no lost rank"
    expect 2 "a usage error on rank 1" "^ipu-exec (rank 1): unknown option --bogus; see ipu-exec --help" -- timeout 30 "${MPIRUN:-mpirun}" -np 1 "$EXE" "$M/model.onnx" : -np 1 "$EXE" "$M/model.onnx" --bogus
    expect 2 "different models" "^ipu-exec (rank 1): the ranks run different models: rank 0 has $M/model.onnx .*, rank 1 has $F/model.onnx" -- timeout 30 "${MPIRUN:-mpirun}" -np 1 "$EXE" "$M/model.onnx" : -np 1 "$EXE" "$F/model.onnx"
    expect 2 "different --batches" "^ipu-exec (rank 1): the ranks disagree on --batches: rank 0 has 2, rank 1 has 3" -- timeout 30 "${MPIRUN:-mpirun}" -np 1 "$EXE" "$M/model.onnx" --batches 2 : -np 1 "$EXE" "$M/model.onnx" --batches 3
    expect 2 "mpirun -np 2 --output-dir a file" "--output-dir $W/afile: not a directory" -- mpi -np 2 "$EXE" "$M/model.onnx" --output-dir "$W/afile"
    grep -q "lost rank" "$W/err" && fail "--output-dir a file: $(cat "$W/err")" || ok "--output-dir a file under mpirun: no lost rank"
    # a model annotated with 3 stages on ranks of 2 IPUs: the advice runs
    "$EXE" plan "$M/model.onnx" --stages 3 --write "$W/ann3.onnx" >/dev/null 2>&1 || fail "plan --stages 3 --write"
    expect 2 "3 annotated stages, 2 IPUs per rank" "not a multiple of --ipus-per-rank 2 .*run with --ipus-per-rank 1 -np 3, or re-plan the model it was made from (the annotations win over --stages) with ipu-exec plan --stages 4 --ipus-per-rank 2" -- mpi -np 2 "$EXE" "$W/ann3.onnx" --ipus-per-rank 2
    expect 0 "the advice runs" "manual partition: 3 stages" -- mpi -np 3 "$EXE" "$W/ann3.onnx" --ipus-per-rank 1
    # --profile under mpirun: every rank's stage, op types and nodes
    expect 0 "mpirun -np 2 --profile" "^profile (rank 1, stage 1): node " -- mpi -np 2 "$EXE" "$M/model.onnx" --profile --batches 2
    grep -q "^profile (rank 0, stage 0): op " "$W/out" && ok "profile of rank 0's stage" || fail "no profile of rank 0: $(cat "$W/out")"
    # --check's default inputs through the pipeline, said once
    expect 0 "mpirun -np 2 --check finds test_data_set_0" "^check: 1 output of 1 micro-batch ok" -- mpi -np 2 "$EXE" "$M/model.onnx" --check
    [ "$(grep -c "^inputs: $M/test_data_set_0\$" "$W/out")" -eq 1 ] && ok "inputs line once" || fail "inputs line: $(cat "$W/out")"
    expect 2 "mpirun -np 2 --micro-batch 2 on a fixed batch" "input 'x' float\[1,8\] has a fixed batch dimension of 1" -- mpi -np 2 "$EXE" "$F/model.onnx" --micro-batch 2 --batches 2
    [ "$(grep -c "fixed batch dimension" "$W/out" "$W/err" | awk -F: '{s += $NF} END {print s}')" -eq 1 ] && ok "said once, not per rank" ||
        fail "fixed batch error repeated: $(cat "$W/err")"
    # --replicas 2 without --batches: one micro-batch per replica, the same
    # outputs as one rank running those 2 micro-batches
    expect 0 "mpirun -np 2 --replicas 2 without --batches" "^pipeline: 2 ranks = 2 replicas x 1 rank, 1 stage, 2 micro-batches of 1\$" -- mpi -np 2 "$EXE" "$M/model.onnx" --replicas 2 --output-dir "$W/rep"
    "$EXE" "$M/model.onnx" --batches 2 --output-dir "$W/rep1" >/dev/null 2>&1
    [ -f "$W/rep/test_data_set_1/output_0.pb" ] && diff -r "$W/rep1" "$W/rep" >/dev/null && ok "--replicas 2 ran micro-batches 0 and 1 as one rank does" ||
        fail "--replicas 2 outputs differ from one rank's 2 micro-batches"
    expect 2 "explicit --batches 1 for 2 replicas stays an error" "1 micro-batch.* for 2 replicas" -- mpi -np 2 "$EXE" "$M/model.onnx" --replicas 2 --batches 1
    # a 2-stage pipeline reads and checks test_data_set_M per micro-batch
    # (inputs on rank 0's first stage, references on rank 1's last)
    expect 0 "mpirun -np 2: each micro-batch against its own set" "^check: 2 outputs of 2 micro-batches ok" -- mpi -np 2 "$EXE" "$S/model.onnx" --check --batches 2
    grep -q "^pipeline: 2 ranks = 1 replica x 2 ranks, 2 stages" "$W/out" && ok "2 stages" || fail "not 2 stages: $(cat "$W/out")"
    expect 1 "mpirun -np 2: set 1's reference for micro-batch 1" "^check: micro-batch 1 output 0 'y' float\[3,4\]: MISMATCH .*reference $S_BAD/test_data_set_1/output_0.pb)" -- mpi -np 2 "$EXE" "$S/model.onnx" --inputs "$S_BAD" --check --batches 2
    grep -q "micro-batch 0 .*MISMATCH" "$W/out" && fail "micro-batch 0 mismatched: $(cat "$W/out")" || ok "micro-batch 0 matched set 0"
    expect 2 "mpirun -np 2: test data sets of other shapes" "^ipu-exec: $W/sets_shapes/test_data_set_1/input_0.npy: input 0 'x' is float\[2,8\]" -- mpi -np 2 "$EXE" "$S/model.onnx" --inputs "$W/sets_shapes" --batches 2
    grep -q "lost rank" "$W/err" && fail "sets of other shapes under mpirun: $(cat "$W/err")" || ok "sets of other shapes under mpirun: no lost rank"
    # --save-inputs in a pipeline and over replicas: what one rank saves
    expect 0 "mpirun -np 2 --save-inputs" "peak RSS" -- mpi -np 2 "$EXE" "$M/model.onnx" --batches 2 --save-inputs "$W/prec" --output-dir "$W/prec"
    expect 0 "replay of the pipeline's record on one rank" "^check: 2 outputs of 2 micro-batches ok (max abs err 0)" -- "$EXE" "$M/model.onnx" --batches 2 --inputs "$W/prec" --check --atol 0 --rtol 0
    expect 0 "mpirun -np 2 --replicas 2 --save-inputs" "peak RSS" -- mpi -np 2 "$EXE" "$M/model.onnx" --replicas 2 --save-inputs "$W/rrec"
    diff -r "$W/rrec" "$W/rec" | grep -q input_ && fail "--replicas 2 saved other inputs: $(diff -r "$W/rrec" "$W/rec")" ||
        { [ -f "$W/rrec/test_data_set_1/input_0.pb" ] && ok "--replicas 2 saved both micro-batches' inputs as one rank does" || fail "rrec: $(find "$W/rrec")"; }
    expect 2 "different --format" "^ipu-exec (rank 1): the ranks disagree on --format: rank 0 has pb, rank 1 has npy" -- timeout 30 "${MPIRUN:-mpirun}" -np 1 "$EXE" "$M/model.onnx" : -np 1 "$EXE" "$M/model.onnx" --format npy
    # a pipeline's --output-dir over --check's references: refused on every
    # rank count, the reference kept
    expect 2 "mpirun -np 2: --output-dir over the references" "would write this run's outputs over the references --check compares" -- mpi -np 2 "$EXE" "$M/model.onnx" --inputs "$W/clob" --check --output-dir "$W/clob"
    cmp -s "$W/clob/output_0.pb" "$W/clob_ref.pb" && ok "mpirun -np 2: the reference is kept" || fail "mpirun -np 2: the reference changed"
    # plan is one process: under mpirun rank 0 alone prints it, and says a
    # usage error (it said nothing)
    expect 0 "mpirun -np 2 ipu-exec plan" "^plan of" -- mpi -np 2 "$EXE" plan "$M/model.onnx"
    [ "$(grep -c '^plan of' "$W/out")" -eq 1 ] && ok "mpirun -np 2 ipu-exec plan: printed once" || fail "mpirun -np 2 plan: $(cat "$W/out")"
    expect 2 "mpirun -np 1 ipu-exec plan --bogus" "^ipu-exec: unknown option --bogus" -- mpi -np 1 "$EXE" plan "$M/model.onnx" --bogus
    expect 2 "mpirun -np 2 ipu-exec info --bogus" "^ipu-exec: info: unknown option --bogus" -- mpi -np 2 "$EXE" info --bogus
    [ "$(grep -c 'unknown option' "$W/out" "$W/err" | awk -F: '{s += $2} END {print s}')" -eq 1 ] && ok "mpirun -np 2 ipu-exec info --bogus: said once" ||
        fail "info --bogus under mpirun: $(cat "$W/err")"
    # the stage count comes from -np when --stages was never given: say so
    expect 2 "mpirun -np 5 on 4 nodes" "cannot split 4 running nodes into 5 stages: under mpirun the stage count is the ranks per replica (-np 5 / 1 replica) x --ipus-per-rank 1; run with mpirun -np 4 or fewer" -- mpi -np 5 "$EXE" "$M/model.onnx"
    expect 2 "mpirun -np 1 --replicas 2" "1 rank does not divide into 2 replicas" -- mpi -np 1 "$EXE" "$M/model.onnx" --replicas 2
    # a pipeline's mismatch lines come after rank 0's plan and report
    expect 1 "mpirun -np 2 mismatch" "MISMATCH" -- mpi -np 2 "$EXE" "$M/model.onnx" --inputs "$M/bad_ref" --check
    awk '/^peak RSS/ {r = NR} /MISMATCH/ {m = NR} END {exit !(r && m > r)}' "$W/out" &&
        ok "mismatch line after the report" || fail "mismatch line order: $(cat "$W/out")"
    # --digest over a pipeline and over replicas: one rank's, summed over
    # the ranks that took the outputs
    expect 0 "mpirun -np 4 --digest" "^digest: $DG (3 outputs of 3 micro-batches)\$" -- mpi -np 4 "$EXE" "$M/model.onnx" --batches 3 --digest
    grep -q "4 stages" "$W/out" && ok "--digest over 4 stages" || fail "not 4 stages: $(cat "$W/out")"
    expect 0 "mpirun -np 2 --replicas 2 --digest" "^digest: $DG (3 outputs of 3 micro-batches)\$" -- mpi -np 2 "$EXE" "$M/model.onnx" --batches 3 --replicas 2 --digest
    # a run longer than the latency record: every 2nd micro-batch's latency
    # (half a minute: make check-full only; bench/soak.sh runs 10^5)
    if [ "${IPU_TEST_TIER:-}" = full ]; then
        expect 0 "mpirun -np 2, 70000 micro-batches" "^latency ms per micro-batch: median .* (of 35000 micro-batches, every 2nd)\$" -- mpi -np 2 "$EXE" "$M/model.onnx" --batches 70000
    fi
    # the annotated model under mpirun -np 2 uses its stages: no note
    expect 0 "annotated model on 2 ranks" "manual partition: 2 stages" -- mpi -np 2 "$EXE" "$W/ann2.onnx"
    grep -q "note:" "$W/err" && fail "a note on 2 ranks: $(cat "$W/err")" || ok "no note on 2 ranks"
fi
echo "cli: $fails failure(s)"
[ "$fails" -eq 0 ]
