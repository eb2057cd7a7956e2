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
# broadcast"), top_builddir (default: the directory above this script).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_builddir=$(cd "${top_builddir:-$here/..}" && pwd)
B=$top_builddir/bench/gcl-bench
[ -x "$B" ] || { echo "bench/gcl.sh: $B not built (make)" >&2; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
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
            # shellcheck disable=SC2086
            mpirun -np "$np" $bind $mca "$B" -c "$coll" "$@" 2>&1 | grep -v "UCX  WARN" || status=1
        done
    done
done
exit $status
