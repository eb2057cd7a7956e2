#!/bin/sh
# libgcl smoke test (tests/mpi/gcl_smoke.c) on 1-5 ranks: the decision
# table's choices, forced algorithms (GCL_<COLL>_ALGO), a pretended
# two-ranks-per-host topology (hierarchical), without the shm path
# (GCL_NO_SHM=1), GCL_DEBUG mismatch, timeout, a bad GCL_<COLL>_ALGO.
set -u
: "${top_builddir:=.}" "${MPIRUN:=mpirun}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GCL_SEGMENT_BYTES=65536 # small segments: exercise the pipelining
fails=0
run() { # run NP LABEL [ENV...] [-- ARGS]
    np=$1 label=$2; shift 2
    out=$(env "$@" timeout -k 5 300 "$MPIRUN" --oversubscribe -np "$np" "$top_builddir/tests/mpi/gcl_smoke" $ARGS 2>&1)
    rc=$?
    if [ "$rc" -eq 0 ] && echo "$out" | grep -q "gcl_smoke: ok ($np ranks)"; then
        echo "ok: $np ranks, $label"
    else
        echo "FAIL: $np ranks, $label (exit $rc)"; echo "$out" | tail -25; fails=$((fails + 1))
    fi
}
ARGS=
for n in 1 2 3 4 5; do run "$n" "default table"; done
for n in 2 3 5; do run "$n" "default table without shm" GCL_NO_SHM=1; done
for n in 3 4; do
    run "$n" "algorithms A" GCL_ALLREDUCE_ALGO=ring GCL_REDUCE_ALGO=reduce_scatter_gather \
        GCL_REDUCE_SCATTER_ALGO=pairwise GCL_ALLGATHER_ALGO=bruck GCL_BROADCAST_ALGO=scatter_allgather
    run "$n" "algorithms B" GCL_ALLREDUCE_ALGO=rabenseifner GCL_REDUCE_ALGO=knomial \
        GCL_REDUCE_SCATTER_ALGO=ring GCL_ALLGATHER_ALGO=ring GCL_BROADCAST_ALGO=knomial
    run "$n" "algorithms C" GCL_ALLREDUCE_ALGO=recursive_doubling GCL_REDUCE_SCATTER_ALGO=recursive_halving \
        GCL_ALLGATHER_ALGO=recursive_doubling
done
for n in 4 5; do run "$n" "hierarchical (GCL_TOPO_PPN=2)" GCL_TOPO_PPN=2; done
ARGS=mismatch; run 3 "GCL_DEBUG mismatch" GCL_DEBUG=1
ARGS=timeout; run 3 "timeout"
ARGS=
out=$(GCL_ALLREDUCE_ALGO=nonsense OMPI_ALLOW_RUN_AS_ROOT=1 timeout 60 "$MPIRUN" -np 1 "$top_builddir/tests/mpi/gcl_smoke" 2>&1)
if echo "$out" | grep -q "GCL_ALLREDUCE_ALGO=nonsense: unknown algorithm; valid: auto, recursive_doubling"; then
    echo "ok: unknown algorithm rejected"
else
    echo "FAIL: unknown algorithm not rejected"; echo "$out" | tail -5; fails=$((fails + 1))
fi
[ "$fails" -eq 0 ]
