#!/bin/sh
# libgcl against MPI on this machine: bench/gcl-bench (OSU style, both in the
# same run) for 2 and 4 ranks, with Open MPI's default point-to-point path
# (pml ob1 + btl vader) and with the UCX pml, for allreduce, reduce_scatter,
# allgather and broadcast; prints one markdown table per run.
#
#   bench/gcl.sh [gcl-bench options, e.g. -m 8:1048576 -d bf16]
#
# Ranks are bound to cores (--bind-to core); with more ranks than cores two
# share a core (core:overload-allowed). Environment: BENCH_NP ("2 4"),
# BENCH_PML ("ob1 ucx"), BENCH_COLLS ("allreduce reduce_scatter allgather
# broadcast"), BENCH_LAUNCHES (1), top_builddir (default: the directory above
# this script).
#
# BENCH_LAUNCHES=L runs each configuration as L separate mpirun launches and
# prints, per size, the median over the launches of every column (the ratio
# then is the median libgcl busbw over the median MPI busbw). On a VM a
# launch can land in a state in which cross-core copies run several times
# slower for its whole life (bench/results/gcl-allreduce.md); one launch
# then speaks for that state only.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_builddir=$(cd "${top_builddir:-$here/..}" && pwd)
B=$top_builddir/bench/gcl-bench
[ -x "$B" ] || { echo "bench/gcl.sh: $B not built (make)" >&2; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# gcl-bench table rows of several launches on stdin -> one table of the
# per-size medians (rows keep the order of the first launch)
median_table() {
    awk -F'|' '
    function med(list,   n, a, i, j, t) {
        n = split(list, a, " ")
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    {
        k = $2; gsub(/^ +| +$/, "", k)
        if (!(k in seen)) { seen[k] = 1; order[++nk] = k; algo[k] = $3 }
        for (c = 4; c <= 9; c++) { v = $c; gsub(/ /, "", v); if (v != "-") col[k, c] = col[k, c] " " v }
        ck = $11; gsub(/ /, "", ck); if (ck != "ok" && ck != "-") bad[k] = 1; else if (!(k in bad)) chk[k] = ck
    }
    END {
        print "|       size | libgcl algorithm   |  libgcl us | algbw GB/s | busbw GB/s |     MPI us | algbw GB/s | busbw GB/s |  ratio | check |"
        print "|-----------:|--------------------|-----------:|----------:|----------:|-----------:|----------:|----------:|-------:|-------|"
        for (i = 1; i <= nk; i++) {
            k = order[i]
            line = sprintf("| %10s |%s|", k, algo[k])
            for (c = 4; c <= 9; c++) m[c] = ((k, c) in col) ? med(col[k, c]) : "-"
            r = (m[4] != "-" && m[7] != "-" && m[4] > 0) ? sprintf("%.2f", m[7] / m[4]) : "-" # busbw ratio, from the times (busbw is printed to 3 decimals)
            printf "%s %10s | %9s | %9s | %10s | %9s | %9s | %6s | %5s |\n", line, m[4], m[5], m[6], m[7], m[8], m[9], r, (k in bad) ? "BAD" : chk[k]
        }
    }'
}
cores=$(nproc)
status=0
for coll in ${BENCH_COLLS:-allreduce reduce_scatter allgather broadcast}; do
    for np in ${BENCH_NP:-2 4}; do
        if [ "$np" -le "$cores" ]; then
            bind="--map-by core --bind-to core"
        else
            bind="--map-by core:OVERSUBSCRIBE --bind-to core:overload-allowed"
        fi
        for pml in ${BENCH_PML:-ob1 ucx}; do
            case $pml in
            ucx) mca="--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any" ;;
            *)   mca="--mca pml $pml" ;;
            esac
            echo
            echo "## $coll, $np ranks, MPI with pml $pml ($bind)"
            echo
            L=${BENCH_LAUNCHES:-1}
            if [ "$L" -le 1 ]; then
                # shellcheck disable=SC2086
                mpirun -np "$np" $bind $mca "$B" -c "$coll" "$@" 2>&1 | grep -v "UCX  WARN" || status=1
                continue
            fi
            runs=$(mktemp)
            i=1
            while [ "$i" -le "$L" ]; do
                # shellcheck disable=SC2086
                mpirun -np "$np" $bind $mca "$B" -c "$coll" "$@" > "$runs.$i" 2>&1 || status=1
                grep "^# gcl-bench" "$runs.$i" | head -1 > "$runs.head"
                grep '^| *[0-9]' "$runs.$i" >> "$runs"
                rm -f "$runs.$i"
                i=$((i + 1))
            done
            cat "$runs.head"
            echo "# median over $L launches of each column (each launch: gcl-bench's own medians)"
            median_table < "$runs"
            rm -f "$runs" "$runs.head"
        done
    done
done
exit $status
