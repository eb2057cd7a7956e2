#!/bin/sh
# libgcl under mpirun against MPI (tests/mpi/gcl_test.c and its parts) with
# groups of 1 to 8 ranks, oversubscribed on this machine:
#   api       version, status strings, argument errors, init from an
#             out-of-band allgather, over the MPI transport and with
#             GCL_NO_SHM=1, send/recv size mismatches on each
#   coll      every collective x dtype x op x count x blocking / non-blocking /
#             in-place, at every group size
#   split     color/key, GCL_UNDEFINED, CONSECUTIVE / ORTHOGONAL groups,
#             non-blocking collectives in flight on several at once
#   timeout   one rank never joins: GCL_ERR_TIMED_OUT on every caller, in time
#   mismatch  one rank calls differently: GCL_ERR_MISMATCH on all, with
#             GCL_DEBUG=1, and without it on shared memory and GCL_NO_SHM=1
#   algo      every algorithm forced with GCL_<COLL>_ALGO
#   reg       the matrix on registered memory (gcl_mem_alloc): allreduces
#             run direct; mixed with plain buffers; split communicators
#   (split and timeout again at 4 ranks with GCL_TOPO_PPN=2: the hierarchical path)
#   big       >= 16 MiB messages: every collective x dtype x blocking /
#             non-blocking / in-place, the reductions' ops in turn across the
#             dtypes (-A: every op of every dtype)
#   -b        algo with a >= 16 MiB message per forced algorithm
#   -q        fewer counts per forced algorithm (algo, large groups)
# Two tiers. The default (make check): coll at 1, 2, 3, 4, 5 and 8 ranks; big
# at 2; algo -b at 4 (where every algorithm applies: each at >= 16 MiB), algo
# at the others; the faults, splits, timeouts, GCL_TOPO_PPN=2 and direct runs.
# IPU_TEST_TIER=full (make check-full): also coll at 7 ranks and big -A at
# every group size, algo -b at 1 and 2. Each run is bounded by `timeout`.
# GCL_TEST_NP="2 4" runs only those group sizes.
set -u
: "${top_builddir:=.}" "${MPIRUN:=mpirun}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T=$top_builddir/tests/mpi/gcl_test
[ -x "$T" ] || { echo "SKIP: $T not built"; exit 77; }
fails=0
start=$(date +%s)

# run NP LIMIT SUITES [ARGS...]: every suite must print "gcl_test S: ok"
run() {
    np=$1 lim=$2 suites=$3
    shift 3
    t0=$(date +%s)
    out=$(timeout -k 5 "$lim" "$MPIRUN" --oversubscribe -np "$np" "$T" -s "$suites" "$@" 2>&1)
    rc=$?
    missing=""
    for s in $(echo "$suites" | tr , ' '); do
        echo "$out" | grep -q "^gcl_test $s: ok ($np ranks" || missing="$missing $s"
    done
    if [ "$rc" -eq 0 ] && [ -z "$missing" ]; then
        echo "ok: $np ranks: $suites${*:+ $*} ($(($(date +%s) - t0)) s)"
    else
        echo "FAIL: $np ranks: $suites${*:+ $*} (exit $rc${missing:+, not ok:$missing})"
        echo "$out" | grep -v "UCX  WARN" | grep -v "^gcl_test .*: ok" | head -40
        fails=$((fails + 1))
    fi
}

# direct NP: on registered memory (gcl_mem_alloc) every rank's allreduces
# ran direct, not through staging: the count GCL_LOG=info prints for world
# when it is destroyed
direct() {
    out=$(GCL_LOG=info timeout -k 5 120 "$MPIRUN" --oversubscribe -np "$1" "$T" -s reg -q 2>&1)
    rc=$?
    n=$(echo "$out" | grep -c "comm 0 rank [0-9]*/$1: [1-9][0-9]* allreduce calls ran on registered memory")
    if [ "$rc" -eq 0 ] && [ "$n" -eq "$1" ] && echo "$out" | grep -q "^gcl_test reg: ok ($1 ranks"; then
        echo "ok: $1 ranks: allreduces on registered memory ran direct at every rank"
    else
        echo "FAIL: $1 ranks: allreduces on registered memory ran direct at $n of $1 ranks (exit $rc)"
        echo "$out" | grep -v "algorithm\|UCX  WARN" | tail -20
        fails=$((fails + 1))
    fi
}

if [ "${IPU_TEST_TIER:-}" = full ]; then
    for np in ${GCL_TEST_NP:-1 2 3 4 5 7 8}; do
        case $np in
        1) run 1 120 api,coll,split,algo,reg -b; run 1 240 big -A ;;
        2) run 2 180 api,coll,split,timeout,mismatch,algo,reg -b; run 2 400 big -A; direct 2 ;;
        3) run 3 240 coll,reg; run 3 500 big -A; run 3 150 split,algo ;;
        4) run 4 300 api,coll,split,timeout,mismatch,algo,reg -b; run 4 450 big -A; direct 4 ;;
        5) run 5 240 coll; run 5 700 big -A; run 5 150 split,algo,reg -q ;;
        7) run 7 300 coll; run 7 1400 big -A; run 7 150 split,timeout,mismatch,reg -q ;;
        8) run 8 360 coll; run 8 1500 big -A; run 8 180 api,split,algo,reg -q; direct 8 ;;
        *) run "$np" 300 api,coll,split,timeout,mismatch,algo,reg ;;
        esac
    done
else
    for np in ${GCL_TEST_NP:-1 2 3 4 5 8}; do
        case $np in
        1) run 1 120 api,coll,split,algo,reg ;;
        2) run 2 180 api,coll,split,timeout,mismatch,algo,reg; run 2 300 big; direct 2 ;;
        3) run 3 240 coll,reg; run 3 150 split,algo ;;
        4) run 4 300 api,coll,split,timeout,mismatch,algo,reg -b; direct 4 ;;
        5) run 5 240 coll; run 5 150 split,algo,reg -q ;;
        8) run 8 360 coll; run 8 180 api,split,timeout,mismatch,algo,reg -q; direct 8 ;;
        *) run "$np" 300 api,coll,split,timeout,mismatch,algo,reg ;;
        esac
    done
fi
# the hierarchical path on one machine: every 2 consecutive ranks pretend to
# share a host, so split's crossed starts and waits run hierarchical calls
echo "with GCL_TOPO_PPN=2:"
export GCL_TOPO_PPN=2
run 4 120 split,timeout
unset GCL_TOPO_PPN
echo "gcl.sh: $(($(date +%s) - start)) s"
[ "$fails" -eq 0 ]
