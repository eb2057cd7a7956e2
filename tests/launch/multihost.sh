#!/bin/sh
# Across simulated hosts (network namespaces, launch/netns/): a pipeline over
# 2 hosts x 2 ranks gives outputs identical to the single-rank run, with UCX
# over TCP between the hosts; libgcl's allreduce goes hierarchical; when a host's link goes down mid-run, every
# rank exits within 30 s, a survivor naming the lost host/rank, and mpirun
# exits non-zero.
# Skips (77) where network namespaces cannot be made.
set -u
. "$(dirname "$0")/../mpi/common.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for network namespaces"; exit 77; }
"$PYTHON_REF" -c "import torch, torchvision, onnx" 2>/dev/null || { echo "SKIP: no torch/onnx"; exit 77; }
need_models 13 gpt2_tiny resnet18
NS=$top_srcdir/launch/netns
W=$(mktemp -d)
cleanup() { "$NS/hosts.sh" down >/dev/null 2>&1; rm -rf "$W"; }
trap cleanup EXIT
out=$("$NS/hosts.sh" up 2 2>&1); rc=$?
[ $rc -eq 77 ] && { echo "SKIP: $out"; exit 77; }
[ $rc -eq 0 ] || { echo "FAIL: hosts did not come up: $out"; exit 1; }
EXE_ABS=$(cd "$(dirname "$EXE")" && pwd)/$(basename "$EXE")
hmpirun() { timeout -k 5 "$1" "$NS/mpirun.sh" -np 4 --map-by node "$EXE_ABS" "${@:2}"; }

OUT=$(timeout -k 5 60 "$NS/mpirun.sh" -np 4 --map-by node "$EXE_ABS" info 2>&1)
echo "$OUT" | grep -q "^rank 1: host ipuh1" && echo "$OUT" | grep -q "^rank 0: host ipuh0" \
    && ok "ranks spread over hosts ipuh0 and ipuh1" || { fail "placement"; echo "$OUT"; }
echo "$OUT" | grep -q "other hosts tcp/veth0" && ok "UCX reaches the other host over TCP" || fail "transport: $OUT"
for m in gpt2_tiny resnet18; do
    model=$CACHE/op13/$m/model.onnx
    "$EXE" "$model" --batches 4 --output-dir "$W/ref-$m" >/dev/null 2>&1
    OUT=$(timeout -k 5 300 "$NS/mpirun.sh" -np 4 --map-by node "$EXE_ABS" "$model" --batches 4 --output-dir "$W/out-$m" 2>&1); rc=$?
    if [ $rc -eq 0 ] && diff -r "$W/ref-$m" "$W/out-$m" >/dev/null; then ok "$m on 2 hosts x 2 ranks equals one rank"
    else fail "$m across hosts (exit $rc)"; echo "$OUT" | tail -5; fi
done
# libgcl picks its hierarchical allreduce by itself across hosts and agrees
# with MPI_Allreduce
GCLH=$(cd "$top_builddir/tests/mpi" && pwd)/gcl_hosts
OUT=$(timeout -k 5 120 "$NS/mpirun.sh" -np 4 --map-by node "$GCLH" 2>&1)
echo "$OUT" | grep -q "gcl_hosts: ok (hierarchical, 4 ranks)" && ok "libgcl allreduce across hosts: hierarchical, correct" \
    || { fail "libgcl across hosts"; echo "$OUT" | tail -5; }
# a host's link goes down mid-run
M=$CACHE/op13/gpt2_tiny/model.onnx
# the ranks give up after 5 s without progress and say whom they lost; the
# launcher's own keepalive (5 s + 3 probes of 2 s) ends the job it cannot
# reach any more
timeout -k 5 120 "$NS/mpirun.sh" -np 4 --map-by node "$EXE_ABS" "$M" \
    --batches 1000000 --timeout 5 --output-dir "$W/stream" > "$W/log" 2>&1 &
job=$!
i=0; while [ $i -lt 300 ] && [ ! -f "$W/stream/test_data_set_5/output_0.pb" ]; do sleep 0.1; i=$((i + 1)); done
"$NS/hosts.sh" link 1 down
cut=$(date +%s)
# the issue's bound is on the ranks: every rank of the job (the survivors
# and the cut-off ones alike) must have exited within 30 s. mpirun itself
# ends later, once its own keepalive gives up on the unreachable daemon
# (measured 22-24 s after the cut on an idle machine, more under load), so
# it gets the 120 s bound above.
while pgrep -f "^$EXE_ABS .*$W/stream" >/dev/null && [ $(( $(date +%s) - cut )) -le 40 ]; do sleep 0.2; done
took=$(( $(date +%s) - cut ))
[ $took -le 30 ] && ok "every rank exited ${took}s after host ipuh1's link went down" || fail "ranks still running ${took}s after the cut"
wait $job; rc=$?
[ $rc -ne 0 ] && ok "mpirun exits non-zero ($rc) after $(( $(date +%s) - cut ))s" || fail "exit 0 after losing a host"
# the survivors print "rank 1 (host ipuh1 ...)" after --timeout; when mpirun
# ends the job on its own keepalive first it may drop their lines and say
# "lost communication with a remote daemon ... on node <ipuh1's address>"
addr=$(awk '$2 == "ipuh1" {print $1}' /run/ipu-netns/hosts)
if grep -qE "ipu-exec \(rank [02]\): .*rank [13] .*host ipuh1" "$W/log"; then ok "a surviving rank names the lost rank and host"
elif grep -q "Remote daemon.* on node $addr" "$W/log"; then ok "the launcher names the lost host ($addr)"
else fail "the lost host is not named"; tail -8 "$W/log"; fi
# and no survivor crashes on its way out (UCX asserted in ucp_worker_destroy
# while a send to the lost host was still in flight)
if grep -qE "Assertion .* failed|Signal: Aborted|Segmentation fault" "$W/log"; then
    fail "a surviving rank crashed while exiting"; grep -m3 -E "Assertion|Signal:" "$W/log"
else ok "no surviving rank crashed while exiting"; fi
echo "multihost: $fails failure(s)"
[ "$fails" -eq 0 ]
