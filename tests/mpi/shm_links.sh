#!/bin/sh
# Stage links between ranks of one host go through shared memory
# (pipeline/links_shm.c). On 3 ranks, for a CNN and a transformer:
#  - every rank's links go through shared memory (its debug log says so) and
#    the outputs are byte-identical to one rank's;
#  - with IPU_EXEC_SHM_LINKS=0 on every rank no link does, still identical;
#  - with it on rank 0 only (the sending rank decides): rank 0's links go
#    through the transport, rank 1's to rank 2 through shared memory, still
#    identical;
#  - with rank 1 in a PID namespace of its own (one host name, but the
#    other ranks' processes out of its reach, as in containers with the
#    host's network): rank 1 warns that it cannot open rank 0's segment,
#    every link goes through the transport, still identical (where the
#    system lets us make the namespace);
#  - nothing is named in /dev/shm (the segments are anonymous).
set -u
. "$(dirname "$0")/common.sh"
"$PYTHON_REF" -c "import torch, torchvision, onnx" 2>/dev/null || { echo "SKIP: no torch/onnx"; exit 77; }
need_models 13 resnet18 gpt2_tiny
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
ls /dev/shm > "$W/before"
shm_lines() { echo "$OUT" | grep "^\[ipu-exec:$1\] DEBUG .*: through shared memory" | wc -l; }
# same NAME: the run succeeded and its outputs are one rank's
same() {
    if [ "$1" -ne 0 ]; then fail "$2: exit $1"; echo "$OUT" | tail -5; return 1; fi
    diff -r "$W/ref" "$W/out" >/dev/null || { fail "$2: outputs differ from one rank's"; return 1; }
}
for m in resnet18 gpt2_tiny; do
    model=$CACHE/op13/$m/model.onnx
    rm -rf "$W/ref"
    "$EXE" "$model" --batches 4 --output-dir "$W/ref" >/dev/null 2>"$W/err" || { fail "$m one rank"; cat "$W/err"; continue; }

    rm -rf "$W/out"
    OUT=$(IPU_EXEC_LOG_LEVEL=debug timeout -k 5 300 "$MPIRUN" -np 3 "$EXE" "$model" --batches 4 \
          --output-dir "$W/out" 2>&1)
    same $? "$m, shared memory" &&
        if [ "$(shm_lines 0)" -ge 1 ] && [ "$(shm_lines 1)" -ge 2 ] && [ "$(shm_lines 2)" -ge 1 ]; then
            ok "$m on 3 ranks, links through shared memory: identical to one rank"
        else fail "$m: links not through shared memory (ranks 0-2: $(shm_lines 0) $(shm_lines 1) $(shm_lines 2))"; fi

    rm -rf "$W/out"
    OUT=$(IPU_EXEC_SHM_LINKS=0 IPU_EXEC_LOG_LEVEL=debug timeout -k 5 300 "$MPIRUN" -np 3 "$EXE" "$model" \
          --batches 4 --output-dir "$W/out" 2>&1)
    same $? "$m, IPU_EXEC_SHM_LINKS=0" &&
        if [ "$(shm_lines '[0-9]')" -eq 0 ]; then ok "$m, IPU_EXEC_SHM_LINKS=0: through the transport, identical"
        else fail "$m, IPU_EXEC_SHM_LINKS=0: a link went through shared memory"; fi

    rm -rf "$W/out"
    OUT=$(IPU_EXEC_LOG_LEVEL=debug timeout -k 5 300 "$MPIRUN" -np 1 env IPU_EXEC_SHM_LINKS=0 "$EXE" "$model" \
          --batches 4 --output-dir "$W/out" : -np 2 "$EXE" "$model" --batches 4 --output-dir "$W/out" 2>&1)
    same $? "$m, IPU_EXEC_SHM_LINKS=0 on rank 0" &&
        if [ "$(shm_lines 0)" -eq 0 ] && [ "$(shm_lines 1)" -ge 1 ] && [ "$(shm_lines 2)" -ge 1 ]; then
            ok "$m, IPU_EXEC_SHM_LINKS=0 on rank 0 only: its links through the transport, rank 1's not; identical"
        else fail "$m, IPU_EXEC_SHM_LINKS=0 on rank 0: ranks 0-2 logged $(shm_lines 0) $(shm_lines 1) $(shm_lines 2)"; fi

    # rank 1 in its own PID namespace; UCX and Open MPI kept on TCP (their
    # single-copy paths need the peer's pid too)
    if [ $m = resnet18 ] && unshare -pf --mount-proc true 2>/dev/null; then
        rm -rf "$W/out"
        OUT=$(UCX_TLS=self,tcp OMPI_MCA_btl=self,tcp IPU_EXEC_LOG_LEVEL=debug timeout -k 5 300 "$MPIRUN" \
              -np 1 "$EXE" "$model" --batches 4 --output-dir "$W/out" : -np 1 unshare -pf --mount-proc sh -c \
              'exec "$@"' sh "$EXE" "$model" --batches 4 --output-dir "$W/out" 2>&1)
        same $? "$m, rank 1 in its own PID namespace" &&
            if echo "$OUT" | grep -q "rank 1: every stage link goes through the transport: rank 0's shared memory: open(/proc/[0-9]*/fd/[0-9]*): No such file or directory" &&
               [ "$(shm_lines '[0-9]')" -eq 0 ]; then
                ok "$m, rank 1 in its own PID namespace: warned, every link through the transport, identical"
            else fail "$m, rank 1 in its own PID namespace: no warning, or a link through shared memory"; echo "$OUT" | head -5; fi
    elif [ $m = resnet18 ]; then
        echo "skip: cannot make a PID namespace here"
    fi
done

ls /dev/shm | grep -v -x -F -f "$W/before" | grep -q '^ipu-exec' && fail "a segment named in /dev/shm: $(ls /dev/shm | grep '^ipu-exec')" ||
    ok "nothing named in /dev/shm"
[ $fails -eq 0 ] || exit 1
