#!/bin/sh
# libgcl's shared-memory path (tests/mpi/gcl_shm_test) under mpirun with 1, 2,
# 3, 4, 5 and 8 ranks on this host (oversubscribed).
set -u
: "${top_builddir:=.}" "${MPIRUN:=mpirun}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fails=0
for n in 1 2 3 4 5 8; do
    out=$(timeout -k 5 300 "$MPIRUN" --oversubscribe -np "$n" "$top_builddir/tests/mpi/gcl_shm_test" 2>&1)
    rc=$?
    if [ "$rc" -eq 0 ] && echo "$out" | grep -q "gcl_shm: ok ($n ranks)"; then
        echo "ok: $n ranks"
    else
        echo "FAIL: $n ranks (exit $rc)"; echo "$out" | tail -20; fails=$((fails + 1))
    fi
done
[ "$fails" -eq 0 ]
