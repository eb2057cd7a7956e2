#!/bin/sh
# libgcl's entry and exit (tests/mpi/gcl_init.c) on 1 and 2 ranks; and
# that <gcl/gcl_mpi.h> turns gcl_init_mpi_comm(&comm, ...) (a pointer where
# the MPI_Comm goes) into a compile error while gcl_init_mpi_comm(comm, ...)
# compiles.
set -u
: "${top_builddir:=.}" "${top_srcdir:=.}" "${MPIRUN:=mpirun}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fails=0
for n in 1 2; do
    out=$(timeout -k 5 120 "$MPIRUN" --oversubscribe -np "$n" "$top_builddir/tests/mpi/gcl_init" 2>&1)
    if [ $? -eq 0 ] && echo "$out" | grep -q "gcl_init: ok ($n ranks)"; then
        echo "ok: $n ranks"
    else
        echo "FAIL: $n ranks"; echo "$out" | tail -20; fails=$((fails + 1))
    fi
done
if command -v mpicc >/dev/null 2>&1; then
    W=$(mktemp -d)
    trap 'rm -rf "$W"' EXIT
    for form in "comm" "&comm"; do
        printf '#include <gcl/gcl_mpi.h>\nint f(MPI_Comm comm, gcl_comm_t **w) { return gcl_init_mpi_comm(%s, NULL, w); }\n' \
            "$form" >"$W/t.c"
        mpicc -std=c11 -Wall -Wextra -Werror -fsyntax-only -I"$top_srcdir/include" "$W/t.c" >"$W/log" 2>&1
        rc=$?
        if { [ "$form" = "comm" ] && [ $rc -eq 0 ]; } || { [ "$form" = "&comm" ] && [ $rc -ne 0 ]; }; then
            echo "ok: gcl_init_mpi_comm($form) $([ $rc -eq 0 ] && echo compiles || echo "does not compile")"
        else
            echo "FAIL: gcl_init_mpi_comm($form): compiler exit $rc"; cat "$W/log"; fails=$((fails + 1))
        fi
    done
else
    echo "note: mpicc not found: the compile checks are skipped"
fi
echo "gcl_init: $fails failure(s)"
[ "$fails" -eq 0 ]
