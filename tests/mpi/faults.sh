#!/bin/sh
# A rank that dies mid-stream: every other rank must exit non-zero within 30
# s with a message naming the lost rank, never hang.
#  1. plain mpirun: the launcher tears the job down; the lost rank is named.
#  2. mpirun --enable-recovery (the launcher leaves the survivors running):
#     the survivors detect the loss themselves (UCX peer failure or their
#     progress deadline) and say "lost rank 1" / name rank 1.
#  3. the same on 4 ranks with rank 0 killed: ranks 2 and 3 have no link to
#     it, and rank 2's neighbour (rank 1) stops when it finds rank 0 gone;
#     every survivor must still name rank 0 (transport/lost.h), not the rank
#     that stopped.
#  4. the same as 2 with --transport mpi (no peer failure from MPI: the
#     survivors ping the ranks they wait on and must still name rank 1).
#  5. a rank that stops during set-up (SIGSTOP once it has opened the
#     model, before the run starts): the others must not wait in a
#     collective for ever but name it (pipeline/fault.h) within --timeout.
#  6. rank 0 stopped (SIGSTOP) mid-stream with a short --timeout (5 s): the
#     survivors must name it, not each other (the pings used to take 2 + 3 s,
#     so rank 2's 5 s without data from live rank 1 came first).
set -u
. "$(dirname "$0")/common.sh"
"$PYTHON_REF" -c "import torch, torchvision, onnx" 2>/dev/null || { echo "SKIP: no torch/onnx"; exit 77; }
need_models 13 gpt2_tiny
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
M=$CACHE/op13/gpt2_tiny/model.onnx
tag=ipu-fault-$$

# kill_rank R: SIGKILL the ipu-exec process of rank R started with our tag
kill_rank() {
    for p in $(pgrep -f "ipu-exec $M"); do
        if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "IPU_TEST_TAG=$tag" &&
           tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
            kill -9 "$p"; return 0
        fi
    done
    return 1
}

# wait until the pipeline streams (outputs of micro-batch 3 are written)
wait_running() {
    i=0
    while [ $i -lt 600 ]; do
        [ -f "$1" ] && return 0
        sleep 0.1; i=$((i + 1))
    done
    return 1
}

# survivors_name MODE VICTIM RANK...: each RANK exited non-zero (its code in
# $W/codes) and its message names the victim ("lost rank VICTIM ...")
survivors_name() {
    m=$1 v=$2
    shift 2
    for r in "$@"; do
        code=$(cat "$W/codes/$r" 2>/dev/null || echo none)
        [ "$code" != 0 ] && [ "$code" != none ] && ok "$m: rank $r exits non-zero ($code)" || fail "$m: rank $r exit $code"
        grep -q "^ipu-exec (rank $r): lost rank $v[ :]" "$W/log" && ok "$m: rank $r names rank $v" ||
            { fail "$m: rank $r does not name rank $v"; grep "ipu-exec" "$W/log"; }
    done
}

for mode in plain recovery recovery4 recovery_mpi; do
    extra="" np=3 victim=1 targs=""
    [ $mode = plain ] || extra="--enable-recovery"
    [ $mode = recovery4 ] && np=4 victim=0
    [ $mode = recovery_mpi ] && np=4 targs="--transport mpi"
    rm -rf "$W/codes"; mkdir -p "$W/codes"
    # each rank records its own exit status
    cat > "$W/rank.sh" <<EOS
#!/bin/sh
"$EXE" "\$@"
echo \$? > "$W/codes/\$OMPI_COMM_WORLD_RANK"
EOS
    chmod +x "$W/rank.sh"
    start=$(date +%s)
    # shellcheck disable=SC2086
    timeout -k 5 120 "$MPIRUN" $extra --oversubscribe -x IPU_TEST_TAG=$tag -np $np "$W/rank.sh" "$M" --batches 1000000 \
        --output-dir "$W/o" --timeout 20 $targs >"$W/log" 2>&1 &
    job=$!
    if ! wait_running "$W/o/test_data_set_3/output_0.pb"; then
        fail "$mode: the job did not start"; kill $job; continue
    fi
    kill_rank $victim || { fail "$mode: no rank $victim to kill"; kill $job; continue; }
    killed=$(date +%s)
    wait $job; rc=$?
    took=$(( $(date +%s) - killed ))
    [ $took -le 30 ] && ok "$mode: the job ended ${took}s after rank $victim died" || fail "$mode: took ${took}s"
    grep -q "rank $victim" "$W/log" && ok "$mode: the lost rank is named" || { fail "$mode: rank $victim not named"; tail -5 "$W/log"; }
    if [ $mode = plain ]; then
        [ $rc -ne 0 ] && ok "plain: mpirun exits $rc" || fail "plain: mpirun exit 0"
    elif [ $mode = recovery4 ]; then
        survivors_name $mode 0 1 2 3
    elif [ $mode = recovery_mpi ]; then
        survivors_name $mode 1 0 2 3
    else
        for r in 0 2; do
            code=$(cat "$W/codes/$r" 2>/dev/null || echo killed)
            [ "$code" != 0 ] && ok "recovery: rank $r exits non-zero ($code)" || fail "recovery: rank $r exit 0"
        done
        [ "$(grep -c 'lost rank 1\|from rank 1\|rank 1 (host' "$W/log")" -ge 1 ] && ok "recovery: a survivor says it lost rank 1" \
            || { fail "recovery: no survivor message"; tail -5 "$W/log"; }
    fi
    pkill -9 -f "IPU_TEST_TAG=$tag" 2>/dev/null
    rm -rf "$W/o"
done
# 5. a rank stopped during set-up
victim=2
rm -rf "$W/codes"; mkdir -p "$W/codes"
timeout -k 5 120 "$MPIRUN" --enable-recovery --oversubscribe -x IPU_TEST_TAG=$tag -np 3 "$W/rank.sh" "$M" \
    --batches 100 --timeout 5 >"$W/log" 2>&1 &
job=$!
stopped="" vpid="" i=0
# find the victim's process once, then watch its open files closely: it is
# stopped the moment it has the model open (loading, before the run)
while [ -z "$vpid" ] && [ $i -lt 3000 ]; do
    for p in $(pgrep -f "ipu-exec $M"); do
        if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "IPU_TEST_TAG=$tag" &&
           tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$victim"; then
            vpid=$p
        fi
    done
    i=$((i + 1))
    [ -n "$vpid" ] || sleep 0.01
done
while [ -n "$vpid" ] && [ -z "$stopped" ] && [ -d "/proc/$vpid" ]; do
    if ls -l "/proc/$vpid/fd" 2>/dev/null | grep -q "model.onnx"; then
        kill -STOP "$vpid"; stopped=$vpid
    fi
done
if [ -z "$stopped" ]; then
    fail "setup: rank $victim never opened the model"
else
    t0=$(date +%s)
    # the survivors end by themselves; then the stopped rank is ended
    for r in 0 1; do
        j=0
        while [ ! -f "$W/codes/$r" ] && [ $j -lt 600 ]; do sleep 0.1; j=$((j + 1)); done
    done
    took=$(( $(date +%s) - t0 ))
    kill -9 "$stopped" 2>/dev/null
    wait $job
    [ $took -le 30 ] && ok "setup: the survivors ended ${took}s after rank $victim stopped" || fail "setup: took ${took}s"
    survivors_name setup $victim 0 1
    grep -q "^ipu-exec (rank .): lost rank $victim: .*within 5 s" "$W/log" && ok "setup: the message says how long it waited" ||
        fail "setup: no wait in the message"
fi
pkill -9 -f "IPU_TEST_TAG=$tag" 2>/dev/null
# 6. rank 0 stopped mid-stream, --timeout 5
rm -rf "$W/codes" "$W/o"; mkdir -p "$W/codes"
timeout -k 5 120 "$MPIRUN" --enable-recovery --oversubscribe -x IPU_TEST_TAG=$tag -x IPU_EXEC_ABORT_GRACE=1 -np 3 \
    "$W/rank.sh" "$M" --batches 1000000 --output-dir "$W/o" --timeout 5 >"$W/log" 2>&1 &
job=$!
if wait_running "$W/o/test_data_set_3/output_0.pb"; then
    stopped=""
    for p in $(pgrep -f "ipu-exec $M"); do
        tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "IPU_TEST_TAG=$tag" &&
            tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=0" && stopped=$p
    done
    [ -n "$stopped" ] && kill -STOP "$stopped"
    for r in 1 2; do
        j=0
        while [ ! -f "$W/codes/$r" ] && [ $j -lt 300 ]; do sleep 0.1; j=$((j + 1)); done
    done
    kill -9 "$stopped" 2>/dev/null
    wait $job
    survivors_name "stopped, --timeout 5" 0 1 2
else
    fail "stopped, --timeout 5: the job did not start"; kill $job
fi
pkill -9 -f "IPU_TEST_TAG=$tag" 2>/dev/null
echo "faults: $fails failure(s)"
[ "$fails" -eq 0 ]
