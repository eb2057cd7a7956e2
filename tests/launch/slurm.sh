#!/bin/sh
# A real SLURM cluster on this machine (launch/slurm/cluster.sh): submit the
# batch template with sbatch --wait and check the job's output (--check
# passes, a throughput line) and exit state, the build/ipu-exec of the
# submit directory without IPU_EXEC, the refusal of fewer cpus per task than
# IPUs per rank; the srun form too; tear down.
# Skips (77) only when slurm-wlm/munge are not installed.
set -u
. "$(dirname "$0")/../mpi/common.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to run munged/slurmd"; exit 77; }
"$PYTHON_REF" -c "import torch, torchvision, onnx" 2>/dev/null || { echo "SKIP: no torch/onnx"; exit 77; }
need_models 13 gpt2_tiny
D=$(mktemp -d /tmp/ipu-slurm.XXXXXX)
W=$(mktemp -d)
cleanup() { "$top_srcdir/launch/slurm/cluster.sh" down "$D" >/dev/null 2>&1; rm -rf "$W"; }
trap cleanup EXIT
out=$("$top_srcdir/launch/slurm/cluster.sh" up "$D" 2>&1); rc=$?
[ $rc -eq 77 ] && { echo "SKIP: $out"; exit 77; }
[ $rc -eq 0 ] || { echo "FAIL: cluster did not start: $out"; exit 1; }
export SLURM_CONF="$D/slurm.conf"
M=$CACHE/op13/gpt2_tiny
EXE_ABS=$(cd "$(dirname "$EXE")" && pwd)/$(basename "$EXE")
SBATCH_SCRIPT=$(cd "$top_srcdir/launch/slurm" && pwd)/ipu-exec.sbatch
# submitted from a source tree without IPU_EXEC: the job runs its build/ipu-exec
mkdir -p "$W/tree/build" && ln -s "$EXE_ABS" "$W/tree/build/ipu-exec"
(unset IPU_EXEC; cd "$W/tree" && timeout -k 5 180 sbatch --wait --chdir="$W" --ntasks-per-node=2 \
    --export=ALL,MODEL=$M/model.onnx,BATCHES=8,IPU_EXEC_OPTS="--inputs $M/test_data_set_0 --check" \
    "$SBATCH_SCRIPT") > "$W/submit" 2>&1
rc=$?
job=$(sed -n 's/^Submitted batch job //p' "$W/submit")
[ $rc -eq 0 ] && ok "sbatch job $job exited 0" || { fail "sbatch --wait exit $rc"; cat "$W/submit"; }
log=$W/ipu-exec-$job.out
grep -q "check: 8 outputs of 8 micro-batches ok" "$log" 2>/dev/null && ok "the job's --check passed" || { fail "no check line"; cat "$log"; }
grep -q "throughput: .* samples/s" "$log" 2>/dev/null && ok "the job printed its throughput" || fail "no throughput"
grep -q "2 ranks on 1 node.*, 1 cpu(s) per rank, $W/tree/build/ipu-exec\$" "$log" 2>/dev/null &&
    ok "2 ranks from the allocation, the submit tree's build/ipu-exec" || { fail "rank count or binary"; head -3 "$log"; }
# more IPUs per rank than cpus per task: refused, saying what to submit
timeout -k 5 120 sbatch --wait --chdir="$W" --cpus-per-task=1 \
    --export=ALL,MODEL=$M/model.onnx,IPU_EXEC=$EXE_ABS,IPUS_PER_RANK=2 \
    "$top_srcdir/launch/slurm/ipu-exec.sbatch" > "$W/submit3" 2>&1
rc=$?
job=$(sed -n 's/^Submitted batch job //p' "$W/submit3")
[ $rc -ne 0 ] && grep -q "IPUS_PER_RANK=2 but 1 cpu(s) per task: submit with --cpus-per-task=2" "$W/ipu-exec-$job.out" 2>/dev/null &&
    ok "IPUS_PER_RANK=2 on 1 cpu per task is refused" || { fail "IPUS_PER_RANK=2, 1 cpu per task: exit $rc"; cat "$W/ipu-exec-$job.out"; }
# a failing job fails: a model that does not exist
timeout -k 5 120 sbatch --wait --chdir="$W" --export=ALL,MODEL=/nonexistent.onnx,IPU_EXEC=$EXE_ABS \
    "$top_srcdir/launch/slurm/ipu-exec.sbatch" > "$W/submit2" 2>&1
[ $? -ne 0 ] && ok "a failing job's sbatch --wait is non-zero" || fail "failing job reported success"
# the srun form inside the cluster
OUT=$(cd "$W" && timeout -k 5 120 srun -n 2 "$EXE_ABS" "$M/model.onnx" --inputs "$M/test_data_set_0" --check --batches 4 2>&1)
echo "$OUT" | grep -q "check: 4 outputs of 4 micro-batches ok" && ok "srun -n 2 (PMIx)" || { fail "srun"; echo "$OUT" | tail -5; }
echo "slurm: $fails failure(s)"
[ "$fails" -eq 0 ]
