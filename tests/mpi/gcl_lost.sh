#!/bin/sh
# A member lost on libgcl's shared-memory path (tests/mpi/gcl_lost.c): with
# 2, 3 and 4 ranks on this host, a rank killed mid-collective (reaped, or
# left a zombie; blocking and non-blocking calls; no timeout) is reported to
# every survivor as GCL_ERR_TRANSPORT naming it within 2 s, on the call in
# flight and on the next one; a stopped rank ends in the timeout; a rank
# that did its part of a reduce and exited is not reported. Then the same at
# 4 ranks on two pretended hosts (GCL_TOPO_PPN=2: the hierarchical path; the
# loss reaches the other host through lost-rank notices). No mpirun: the
# ranks are forked and bootstrap through files (gcl_init_oob).
set -u
: "${top_builddir:=.}"
T=$top_builddir/tests/mpi/gcl_lost
[ -x "$T" ] || { echo "SKIP: $T not built"; exit 77; }
fails=0
# one run: PPN (empty: one host) and the rank count
run() {
    out=$(GCL_NO_SHM= GCL_TOPO_PPN=$1 timeout -k 5 240 "$T" -n "$2" 2>&1)
    rc=$?
    echo "$out" | grep -v "UCX  WARN"
    if [ "$rc" -ne 0 ] || ! echo "$out" | grep -q "^gcl_lost: ok ($2 ranks"; then
        echo "FAIL: $2 ranks${1:+, GCL_TOPO_PPN=$1} (exit $rc)"; fails=$((fails + 1))
    fi
}
for n in ${GCL_LOST_NP:-2 3 4}; do
    run "" "$n"
done
run 2 4
[ "$fails" -eq 0 ]
