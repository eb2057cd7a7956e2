#!/bin/sh
# hwloc binding and `ipu-exec info`: on a synthetic host of 2 NUMA nodes x 4
# cores (HWLOC_SYNTHETIC), 4 ranks x 2 IPUs take 8 distinct cores, ranks 0-1
# in NUMA node 0 and 2-3 in node 1; 3 ranks x 2 IPUs on 4 cores wrap and say
# so; on the real host, the worker threads of a running pipeline are bound
# to the cores info reports and two ranks use different cores, and each
# worker's OpenMP team (--threads 2) is bound to its worker's CPUs; with
# --threads T each IPU's team gets T cores of the rank's share (synthetic:
# 2 ranks x 2 threads on 4 cores take 0,1 and 2,3; this host: one rank with
# --threads 2 has its OpenMP threads on cores 0 and 1), and a rank with too
# few cores says so.
set -u
. "$(dirname "$0")/common.sh"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
OUT=$(timeout 60 "$MPIRUN" -x HWLOC_SYNTHETIC="node:2 core:4 pu:1" -np 4 "$EXE" info --ipus-per-rank 2 2>&1)
echo "$OUT" > "$W/info"
for r in 0 1 2 3; do
    numa=$((r / 2)); c0=$((2 * r)); c1=$((2 * r + 1))
    if grep -q "^rank $r: .*NUMA node $numa, 8 cores, 2 IPUs: IPU0->core $c0 .*IPU1->core $c1 " "$W/info"; then
        ok "rank $r: NUMA node $numa, cores $c0 and $c1"
    else fail "rank $r binding"; cat "$W/info"; fi
done
grep -q "cores shared" "$W/info" && fail "8 workers on 8 cores reported shared" || ok "no core shared"
OUT=$(timeout 60 "$MPIRUN" -x HWLOC_SYNTHETIC="node:1 core:4 pu:1" -np 3 "$EXE" info --ipus-per-rank 2 2>&1)
echo "$OUT" | grep -q "^rank 2: .*IPU0->core 0 .*cores shared" && ok "6 workers on 4 cores wrap and say so" \
    || { fail "wrap-around"; echo "$OUT"; }
echo "$OUT" | grep -q "ucx: this host tcp" && ok "info names the UCX transport" || fail "no transport in info"
OUT=$(timeout 60 "$MPIRUN" -x HWLOC_SYNTHETIC="node:1 core:4 pu:1" -np 2 "$EXE" info --threads 2 2>&1)
if echo "$OUT" | grep -q "^rank 0: .*IPU0->core 0 (cpu 0) team cpus 0,1;" &&
    echo "$OUT" | grep -q "^rank 1: .*IPU0->core 2 (cpu 2) team cpus 2,3;" &&
    ! echo "$OUT" | grep -q "cores shared"; then
    ok "--threads 2: each rank's IPU gets 2 cores of its own (0,1 and 2,3)"
else fail "--threads 2 binding"; echo "$OUT"; fi
OUT=$(timeout 60 "$MPIRUN" -x HWLOC_SYNTHETIC="node:1 core:4 pu:1" -np 2 "$EXE" info --threads 3 2>&1)
echo "$OUT" | grep -q "threads share cores" && echo "$OUT" | grep -q "^rank 1: .*cores shared" &&
    ok "--threads 3 on 2 x 3 > 4 cores: said on stderr, cores shared" || { fail "--threads 3 share"; echo "$OUT"; }
# real host: two ranks, their workers bound to distinct cores during a run
"$PYTHON_REF" -c "import torch, torchvision, onnx" 2>/dev/null || { echo "pipeline part skipped: no torch"; echo "binding: $fails failure(s)"; [ "$fails" -eq 0 ]; exit; }
need_models 13 gpt2_tiny
tag=ipu-bind-$$
timeout -k 5 120 "$MPIRUN" -x IPU_TEST_TAG=$tag -np 2 "$EXE" "$CACHE/op13/gpt2_tiny/model.onnx" \
    --batches 100000 --output-dir "$W/o" >/dev/null 2>&1 &
job=$!
i=0; while [ $i -lt 300 ] && [ ! -f "$W/o/test_data_set_3/output_0.pb" ]; do sleep 0.1; i=$((i + 1)); done
cpus=""
for p in $(pgrep -f "ipu-exec $CACHE/op13/gpt2_tiny"); do
    tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "IPU_TEST_TAG=$tag" || continue
    # the IPU worker: the thread that has used the most CPU
    best=0 cpu=""
    for t in /proc/$p/task/*; do
        u=$(awk '{print $14 + $15}' "$t/stat" 2>/dev/null)
        if [ -n "$u" ] && [ "$u" -ge "$best" ]; then best=$u; cpu=$(sed -n 's/^Cpus_allowed_list:\t//p' "$t/status"); fi
    done
    cpus="$cpus $cpu"
done
kill $job 2>/dev/null; wait $job 2>/dev/null
set -- $cpus
if [ $# -eq 2 ] && [ "$1" != "$2" ] && [ "${1#*,}" = "$1" ] && [ "${1#*-}" = "$1" ]; then
    ok "the two ranks' IPU workers run bound to cpus $1 and $2"
else fail "worker binding: '$cpus'"; fi
# each rank's IPU runs oneDNN on an OpenMP team of --threads threads, every
# one bound to its worker's CPUs (each thread logs its own affinity)
OUT=$(IPU_EXEC_LOG_LEVEL=debug timeout -k 5 120 "$MPIRUN" -x IPU_EXEC_LOG_LEVEL -np 2 "$EXE" \
    "$CACHE/op13/gpt2_tiny/model.onnx" --threads 2 --ipus-per-rank 1 2>&1)
team=$(echo "$OUT" | grep "IPU 0: OpenMP thread [01] of 2 on CPUs ")
if [ "$(echo "$team" | grep -c .)" -eq 4 ] &&
    echo "$team" | sed 's/.* on CPUs \([0-9,-]*\), the worker.s \([0-9,-]*\)$/\1 \2/' |
    awk 'NF != 2 || $1 != $2 || $1 !~ /^[0-9]+$/ { bad = 1 } { cpu[$1] = 1 }
         END { n = 0; for (c in cpu) n++; exit bad || n != 2 }'; then
    ok "--threads 2: each rank's OpenMP threads run on its worker's one core, not the other's"
else fail "OpenMP team binding: $team"; echo "$OUT" | tail -5; fi
# one rank, --threads 2 on this host's 2 cores: its IPU's team on cores 0
# and 1, one OpenMP thread each (mpirun binds a rank to one core: the plan
# takes the rank's share instead, and says so)
if [ "$(nproc)" -eq 2 ]; then
    OUT=$(IPU_EXEC_LOG_LEVEL=debug timeout -k 5 120 "$MPIRUN" -x IPU_EXEC_LOG_LEVEL -np 1 "$EXE" \
        "$CACHE/op13/gpt2_tiny/model.onnx" --threads 2 --check 2>&1)
    if echo "$OUT" | grep -q "IPU 0: OpenMP thread 0 of 2 on CPUs 0, the worker's 0,1$" &&
        echo "$OUT" | grep -q "IPU 0: OpenMP thread 1 of 2 on CPUs 1, the worker's 0,1$" &&
        echo "$OUT" | grep -q "^check: .* ok"; then
        ok "--threads 2 on 2 cores: IPU 0 on cores 0,1, OpenMP threads 0 and 1 on one each"
    else fail "--threads 2 team on 2 cores"; echo "$OUT" | grep -v DEBUG | tail -5; fi
else echo "--threads 2 on this host: skipped (not a 2-core host)"; fi
echo "binding: $fails failure(s)"
[ "$fails" -eq 0 ]
