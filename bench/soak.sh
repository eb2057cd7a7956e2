#!/bin/sh
# Soak (issue 21): many micro-batches through a 4-stage pipeline on 4 ranks
# must leave every rank's memory flat and every output identical to one
# rank's run of the same inputs.
#
#   nice bench/soak.sh [BUILD_DIR]        (default build/; run from the source tree)
#
# The model is bench/soak_model.py's small CNN, cut into 4 stages (one per
# rank, mpirun -np 4, oversubscribed where there are fewer cores). Inputs
# are ipu-exec's seeded synthetic ones: micro-batch M has seed M, the same on
# one rank and in the pipeline.
#   - outputs: `--digest` prints one digest of every micro-batch's output bytes
#     (ipu-exec(1)); the 4-rank run's must equal the 1-rank run's, over the
#     same number of outputs.
#   - memory: the VmRSS of each rank's process (/proc/PID/status) is sampled
#     every SOAK_INTERVAL seconds from when the ranks are found. RSS after
#     warm-up is the first sample at or after SOAK_WARMUP seconds; growth is the largest sample after it minus
#     it; the soak fails when a rank grew by more than SOAK_RSS_BOUND_KIB.
#     The samples are written to SOAK_CSV when it is set.
# Environment: SOAK_BATCHES (default 100000; fewer for a quick look),
# SOAK_INTERVAL (1), SOAK_WARMUP (5), SOAK_RSS_BOUND_KIB (2048), MPIRUN.
# Exit status 0 when the outputs are identical and RSS stayed within the
# bound, 1 otherwise, 2 when the runs could not be made.
set -u
B=${1:-build}
EXE=$B/ipu-exec
N=${SOAK_BATCHES:-100000}
INTERVAL=${SOAK_INTERVAL:-1}
WARMUP=${SOAK_WARMUP:-5}
BOUND=${SOAK_RSS_BOUND_KIB:-2048}
NP=4
PY=/usr/bin/python3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
[ -x "$EXE" ] || { echo "soak: no $EXE; build first (or pass the build directory)"; exit 2; }
W=$(mktemp -d /tmp/soak.XXXXXX)
trap 'rm -rf "$W"' EXIT
"$PY" "$(dirname "$0")/soak_model.py" "$W/model.onnx" || { echo "soak: bench/soak_model.py failed"; exit 2; }
now() { date +%s.%N; }
digest() { sed -n 's/^digest: \([0-9a-f]\{16\}\) (\([0-9]*\) outputs.*/\1 \2/p' "$1"; }

echo "soak: $N micro-batches, 1 rank, then $NP ranks ($(nproc) cores: $(lscpu | sed -n 's/^Model name: *//p'))"
t0=$(now)
"$EXE" "$W/model.onnx" --batches "$N" --digest >"$W/one.out" 2>&1 || { cat "$W/one.out"; echo "soak: the 1-rank run failed"; exit 2; }
t1=$(now)
one=$(digest "$W/one.out")

# the pipeline in the background, its ranks' RSS sampled meanwhile
t2=$(now)
"${MPIRUN:-mpirun}" -np $NP "$EXE" "$W/model.onnx" --batches "$N" --digest >"$W/four.out" 2>&1 &
mp=$!
: >"$W/rss"
pids=""
while kill -0 "$mp" 2>/dev/null; do
    sleep "$INTERVAL"
    if [ -z "$pids" ]; then
        # the ranks are mpirun's children, each named by its environment
        for p in $(pgrep -P "$mp" -x ipu-exec); do
            r=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
            [ -n "$r" ] && pids="$pids $r:$p"
        done
        [ "$(echo $pids | wc -w)" -eq $NP ] || { pids=""; continue; }
        pids=$(echo $pids | tr ' ' '\n' | sort -n | tr '\n' ' ')
        tr0=$(now) # the ranks have started: time 0 of the samples
    fi
    line=$(awk -v t="$(now)" -v t0="$tr0" 'BEGIN {printf "%.1f", t - t0}')
    for rp in $pids; do
        kib=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/${rp#*:}/status" 2>/dev/null)
        [ -n "$kib" ] || { line=""; break; } # a rank has exited: the run is over
        line="$line $kib"
    done
    [ -n "$line" ] && echo "$line" >>"$W/rss"
done
wait "$mp"
rc=$?
t3=$(now)
[ "$rc" -eq 0 ] || { tail -20 "$W/four.out"; echo "soak: the $NP-rank run failed (exit $rc)"; exit 2; }
four=$(digest "$W/four.out")
[ -n "${SOAK_CSV:-}" ] && { echo "t_s rank0_kib rank1_kib rank2_kib rank3_kib" >"$SOAK_CSV"; cat "$W/rss" >>"$SOAK_CSV"; }

fails=0
grep -E "^(auto partition|throughput|latency|peak RSS)" "$W/four.out" | sed 's/^/  4 ranks: /'
awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v n="$N" 'BEGIN {
    printf "wall: 1 rank %.1f s (%.0f micro-batches/s), %d ranks %.1f s (%.0f micro-batches/s, mpirun start and end included)\n",
           b - a, n / (b - a), '$NP', d - c, n / (d - c) }'
if [ -n "$one" ] && [ "$one" = "$four" ]; then
    echo "outputs: identical (digest ${one% *} over ${one#* } outputs on 1 and $NP ranks)"
else
    echo "FAIL: outputs differ: 1 rank '$one', $NP ranks '$four' (digest, outputs)"; fails=1
fi
# RSS after warm-up, at the end and the growth, per rank
awk -v warm="$WARMUP" -v bound="$BOUND" -v np=$NP '
    { n++; for (r = 0; r < np; r++) last[r] = $(r + 2) }
    !based && $1 >= warm { based = 1; t0 = $1; for (r = 0; r < np; r++) base[r] = mx[r] = $(r + 2); next }
    based { for (r = 0; r < np; r++) if ($(r + 2) > mx[r]) mx[r] = $(r + 2); t1 = $1 }
    END {
        if (!based) { printf "FAIL: no RSS sample after the %d s warm-up (%d samples): run more micro-batches\n", warm, n; exit 1 }
        printf "RSS: %d samples; after warm-up at %.1f s, at the end (%.1f s), largest growth, KiB:\n", n, t0, t1
        bad = 0
        for (r = 0; r < np; r++) {
            g = mx[r] - base[r]
            printf "  rank %d: %d  %d  %+d\n", r, base[r], last[r], g
            if (g > bound) bad = 1
        }
        if (bad) { printf "FAIL: a rank grew by more than %d KiB after warm-up\n", bound; exit 1 }
        printf "RSS flat: every rank within %d KiB after warm-up\n", bound
    }' "$W/rss" || fails=1
[ "$fails" -eq 0 ] && echo "soak: ok" || echo "soak: FAILED"
[ "$fails" -eq 0 ]
