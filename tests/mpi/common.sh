# Shared by the multi-rank tests: mpirun as root and oversubscribed, models
# made once into the build tree (tests/models/make_models.py).
: "${top_srcdir:=.}" "${top_builddir:=.}" "${PYTHON_REF:=/usr/bin/python3}" "${MPIRUN:=mpirun}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
EXE=$top_builddir/ipu-exec
CACHE=${MPI_MODEL_CACHE:-$top_builddir/tests/mpi/models}
mkdir -p "$CACHE" && CACHE=$(cd "$CACHE" && pwd)
fails=0

need_models() { # need_models OPSET NAME...
    opset=$1; shift
    dir=$CACHE/op$opset
    mkdir -p "$dir"
    missing=""
    for n in "$@"; do [ -f "$dir/$n/model.onnx" ] || missing="$missing $n"; done
    [ -z "$missing" ] && return 0
    # one maker at a time (make -j runs these tests in parallel)
    # shellcheck disable=SC2086
    flock "$dir/.lock" "$PYTHON_REF" "$top_srcdir/tests/models/make_models.py" "$dir" $missing \
        --opset "$opset" >/dev/null 2>"$dir/make.err.$$"
    rc=$?
    mv "$dir/make.err.$$" "$dir/make.err"
    if [ $rc -ne 0 ]; then cat "$dir/make.err"; [ $rc -eq 77 ] && exit 77; exit 1; fi
}

ok()   { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# run_mpi NP ARGS...: mpirun bounded in time; output in $OUT
run_mpi() {
    np=$1; shift
    OUT=$(timeout -k 5 300 "$MPIRUN" -np "$np" "$EXE" "$@" 2>&1)
}
