#!/bin/sh
# The transport (UCX and MPI back ends) under mpirun with 1, 2, 3, 4, 5 and 8
# ranks (oversubscribed): every pair exchanges patterned messages of 0 B to
# 4 MiB; a length mismatch is the receive's own error (IPU_ERR_MESSAGE_SIZE),
# not a hang, and the pair still works after it.
set -u
: "${top_builddir:=.}" "${MPIRUN:=mpirun}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fails=0
for n in 1 2 3 4 5 8; do
    out=$(timeout -k 5 120 "$MPIRUN" --oversubscribe -np "$n" "$top_builddir/tests/mpi/test_transport" 2>&1)
    rc=$?
    if [ "$rc" -eq 0 ] && echo "$out" | grep -q "transport: ok ($n ranks)"; then
        echo "ok: $n ranks"
    else
        echo "FAIL: $n ranks (exit $rc)"; echo "$out" | tail -20; fails=$((fails + 1))
    fi
done
[ "$fails" -eq 0 ]
