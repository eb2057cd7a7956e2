#!/bin/sh
# A real SLURM cluster on this machine (launch/slurm/cluster.sh): submit the
# batch template with sbatch --wait and check the job's output (--check
# passes, a throughput line) and exit state; the srun form too; tear down.
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
timeout -k 5 180 sbatch --wait --chdir="$W" --ntasks-per-node=2 \
    --export=ALL,MODEL=$M/model.onnx,IPU_EXEC=$EXE_ABS,BATCHES=8,IPU_EXEC_OPTS="--inputs $M/test_data_set_0 --check" \
    "$top_srcdir/launch/slurm/ipu-exec.sbatch" > "$W/submit" 2>&1
rc=$?
job=$(sed -n 's/^Submitted batch job //p' "$W/submit")
[ $rc -eq 0 ] && ok "sbatch job $job exited 0" || { fail "sbatch --wait exit $rc"; cat "$W/submit"; }
log=$W/ipu-exec-$job.out
grep -q "check: 8 outputs of 8 micro-batches ok" "$log" 2>/dev/null && ok "the job's --check passed" || { fail "no check line"; cat "$log"; }
grep -q "throughput: .* samples/s" "$log" 2>/dev/null && ok "the job printed its throughput" || fail "no throughput"
grep -q "2 ranks on 1 node" "$log" 2>/dev/null && ok "2 ranks from the allocation" || fail "rank count"
# a failing job fails: a model that does not exist
timeout -k 5 120 sbatch --wait --chdir="$W" --export=ALL,MODEL=/nonexistent.onnx,IPU_EXEC=$EXE_ABS \
    "$top_srcdir/launch/slurm/ipu-exec.sbatch" > "$W/submit2" 2>&1
[ $? -ne 0 ] && ok "a failing job's sbatch --wait is non-zero" || fail "failing job reported success"
# the srun form inside the cluster
OUT=$(cd "$W" && timeout -k 5 120 srun -n 2 "$EXE_ABS" "$M/model.onnx" --inputs "$M/test_data_set_0" --check --batches 4 2>&1)
echo "$OUT" | grep -q "check: 4 outputs of 4 micro-batches ok" && ok "srun -n 2 (PMIx)" || { fail "srun"; echo "$OUT" | tail -5; }
echo "slurm: $fails failure(s)"
[ "$fails" -eq 0 ]
