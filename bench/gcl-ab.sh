#!/bin/sh
# Two builds of libgcl against each other (a change against its baseline):
# bench/gcl-bench of build A and of build B in alternating mpirun launches,
# the order swapped every repetition, for each collective, group size and
# message size; prints one markdown row each: the medians over launches of
# libgcl's time per call (each launch's figure is gcl-bench's median over
# its rounds) and the median of the per-repetition ratio B / A, with how many
# repetitions had B slower. A ratio from one machine's noise spreads as wide
# as single launches do: read it with the quartiles.
#
#   BENCH_A=build-a BENCH_B=build-b bench/gcl-ab.sh
#
# Environment: BENCH_A, BENCH_B (top_builddirs holding bench/gcl-bench),
# BENCH_NP ("2 4"), BENCH_COLLS ("allreduce reduce reduce_scatter allgather
# broadcast alltoall"), BENCH_SIZES (bytes, "8 1048576"), BENCH_LAUNCHES (6
# per build), BENCH_GCL_ENV (variables for both, default "GCL_NO_SHM=1": the
# network path), BENCH_SECONDS (gcl-bench -t, 0.5), BENCH_LOCK (a file to
# flock around each launch, so that other benchmarks do not overlap it),
# BENCH_ARGS (more gcl-bench options for both, e.g. -l).
set -u
A=${BENCH_A:?BENCH_A: a build directory}/bench/gcl-bench
B=${BENCH_B:?BENCH_B: a build directory}/bench/gcl-bench
for x in "$A" "$B"; do [ -x "$x" ] || { echo "bench/gcl-ab.sh: $x not built" >&2; exit 77; }; done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
L=${BENCH_LAUNCHES:-6}
envs=""
for e in ${BENCH_GCL_ENV-GCL_NO_SHM=1}; do envs="$envs -x $e"; done
cores=$(nproc)
lock=${BENCH_LOCK:-}

# one NP COLL SIZE BIN: libgcl's time per call in us of one launch ("-" if none)
one() {
    if [ "$1" -le "$cores" ]; then bind="--map-by core --bind-to core"
    else bind="--map-by core:OVERSUBSCRIBE --bind-to core:overload-allowed"; fi
    # shellcheck disable=SC2086
    cmd="mpirun -np $1 $bind $envs $4 -n -c $2 -m $3:$3 -t ${BENCH_SECONDS:-0.5} ${BENCH_ARGS:-}"
    if [ -n "$lock" ]; then out=$(flock "$lock" $cmd 2>/dev/null); else out=$($cmd 2>/dev/null); fi
    echo "$out" | awk -F'|' '/^\| +[0-9]/ {gsub(/ /, "", $4); print $4; exit}'
}

stats() { # numbers on stdin -> "median q1 q3"
    sort -g | awk '{a[NR] = $1} END {
        if (NR == 0) { print "- - -"; exit }
        m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
        print m, a[int((NR + 3) / 4)], a[int((3 * NR + 3) / 4)] }'
}

echo "| collective | ranks | size | launches | A us | B us | B / A (quartiles) | B slower |"
echo "|---|---:|---:|---:|---:|---:|---|---:|"
for coll in ${BENCH_COLLS:-allreduce reduce reduce_scatter allgather broadcast alltoall}; do
    for np in ${BENCH_NP:-2 4}; do
        for size in ${BENCH_SIZES:-8 1048576}; do
            ta="" tb="" ratios=""
            i=0
            while [ $i -lt "$L" ]; do
                if [ $((i % 2)) -eq 0 ]; then a=$(one "$np" "$coll" "$size" "$A"); b=$(one "$np" "$coll" "$size" "$B")
                else b=$(one "$np" "$coll" "$size" "$B"); a=$(one "$np" "$coll" "$size" "$A"); fi
                if [ -n "$a" ] && [ -n "$b" ] && [ "$a" != "-" ] && [ "$b" != "-" ]; then
                    ta="$ta $a" tb="$tb $b"
                    ratios="$ratios $(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.4f", b / a}')"
                fi
                i=$((i + 1))
            done
            n=$(echo $ratios | wc -w)
            ma=$(echo $ta | tr ' ' '\n' | stats | cut -d' ' -f1)
            mb=$(echo $tb | tr ' ' '\n' | stats | cut -d' ' -f1)
            [ "$n" -gt 0 ] || { echo "| $coll | $np | $size B | 0 | - | - | - | - |"; continue; }
            set -- $(echo $ratios | tr ' ' '\n' | stats)
            slower=$(echo $ratios | tr ' ' '\n' | awk '$1 > 1 {s++} END {print s + 0}')
            printf "| %s | %d | %d B | %d | %s | %s | %.3f (%.2f-%.2f) | %d of %d |\n" \
                "$coll" "$np" "$size" "$n" "$ma" "$mb" "$1" "$2" "$3" "$slower" "$n"
        done
    done
done
