#!/bin/sh
# oneDNN's instruction set and kernels across ranks: a rank capped by
# DNNL_MAX_CPU_ISA=AVX2 (mpirun -x for its app context only) caps its
# replica too, said once, and the two replicas' outputs are byte-identical
# to the one-rank run capped the same way. The layout convolutions ask for
# and Winograd are agreed the same way. Replicas that made different oneDNN
# implementations for a node (a shim on one rank) fail before any transfer
# with one line naming both ranks and the node.
set -u
. "$(dirname "$0")/common.sh"
unset IPU_EXEC_WINOGRAD IPU_EXEC_CONV_LAYOUT # the cases below set them per rank
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$PYTHON_REF" -c "import torch, torchvision, onnx" 2>/dev/null || { echo "skipped: no torch"; exit 77; }
need_models 13 gpt2_tiny resnet18
isa=$("$EXE" info 2>/dev/null | sed -n 's/.* isa \([a-z0-9_]*\);.*/\1/p')
echo "this host: oneDNN isa $isa"
case "$isa" in avx512*|avx2_vnni) ;; *) echo "skipped: the host's ISA is no higher than avx2"; exit 77 ;; esac
m=$CACHE/op13/gpt2_tiny/model.onnx
DNNL_MAX_CPU_ISA=AVX2 "$EXE" "$m" --batches 4 --output-dir "$W/ref" >/dev/null 2>"$W/err" ||
    { fail "one-rank run at avx2"; cat "$W/err"; }
OUT=$(timeout -k 5 300 "$MPIRUN" -np 1 -x DNNL_MAX_CPU_ISA=AVX2 "$EXE" "$m" --batches 4 --replicas 2 \
    --output-dir "$W/out" : -np 1 "$EXE" "$m" --batches 4 --replicas 2 --output-dir "$W/out" 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ "$(echo "$OUT" | grep -c "oneDNN capped to the instruction set avx2 on every rank")" -eq 1 ] &&
    echo "$OUT" | grep -q "rank 1 has $isa, rank 0 avx2"; then
    ok "rank 0 at avx2 by DNNL_MAX_CPU_ISA: rank 1 capped to it too, said once"
else fail "the ISA cap (exit $rc)"; echo "$OUT" | tail -5; fi
diff -r "$W/ref" "$W/out" >/dev/null && ok "the capped replicas' outputs are identical to one rank at avx2" ||
    fail "capped replicas differ from the one-rank run at avx2"
# the same kernels everywhere: no cap, no line
OUT=$(timeout -k 5 300 "$MPIRUN" -np 2 "$EXE" "$m" --batches 4 --replicas 2 2>&1)
[ $? -eq 0 ] && ! echo "$OUT" | grep -q "capped" && ok "same ISA on every rank: no cap" ||
    { fail "uncapped run"; echo "$OUT" | tail -5; }
# Winograd (3x3 stride-1 convolutions on AVX-512) agreed like the ISA:
# rank 0 without it makes both stages run direct convolution, said once,
# and the pipeline's outputs are byte-identical to one rank without it
# (with Winograd they are not: rank 1's stage would compute another sum)
case "$isa" in avx512_core*)
    m=$CACHE/op13/resnet18/model.onnx
    IPU_EXEC_WINOGRAD=0 "$EXE" "$m" --batches 2 --output-dir "$W/dref" >"$W/dref.out" 2>"$W/err" ||
        { fail "one-rank run with IPU_EXEC_WINOGRAD=0"; cat "$W/err"; }
    "$EXE" "$m" --batches 2 --output-dir "$W/wref" >"$W/wref.out" 2>"$W/err" ||
        { fail "one-rank run with Winograd"; cat "$W/err"; }
    OUT=$(timeout -k 5 300 "$MPIRUN" -np 1 -x IPU_EXEC_WINOGRAD=0 "$EXE" "$m" --batches 2 --output-dir "$W/dout" \
        : -np 1 "$EXE" "$m" --batches 2 --output-dir "$W/dout" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && [ "$(echo "$OUT" | grep -c "convolutions run without Winograd on every rank")" -eq 1 ] &&
        echo "$OUT" | grep -q "rank 0 has IPU_EXEC_WINOGRAD=0, rank 1 does not"; then
        ok "rank 0 without Winograd: both stages without it, said once"
    else fail "the Winograd agreement (exit $rc)"; echo "$OUT" | tail -5; fi
    ! diff -r "$W/dref" "$W/wref" >/dev/null && diff -r "$W/dref" "$W/dout" >/dev/null &&
        ok "2 stages, one rank without Winograd: byte-identical to one rank without it" ||
        fail "2 stages with IPU_EXEC_WINOGRAD=0 on rank 0 differ from one rank without it (or Winograd changes nothing)"
    # an IPU between the two runs' needs: the error says what Winograd adds
    # and what the stage needs with IPU_EXEC_WINOGRAD=0: the need of the
    # run without it
    used() { sed -n 's/.* \([0-9.]*\) MiB of [0-9.]* MiB used$/\1/p' "$1"; }
    dneed=$(used "$W/dref.out") wneed=$(used "$W/wref.out")
    mem=$(awk -v d="$dneed" -v w="$wneed" 'BEGIN { if (w > d + 1) printf "%dM", (d + w) / 2 }')
    if [ -n "$mem" ]; then
        OUT=$("$EXE" "$m" --batches 1 --ipu-memory "$mem" 2>&1)
        rc=$?
        IPU_EXEC_WINOGRAD=0 "$EXE" "$m" --batches 1 --ipu-memory "$mem" >/dev/null 2>"$W/err"
        rc0=$?
        said=$(echo "$OUT" | sed -n "s/.*Winograd adds [0-9.]* [KM]*i*B to the 3x3 convolutions' weights\( and [0-9.]* [KM]*i*B to the scratch\)*: with IPU_EXEC_WINOGRAD=0 (slower convolutions) it needs \([0-9.]*\) MiB;.*/\2/p")
        if [ $rc -ne 0 ] && [ $rc0 -eq 0 ] && [ "$said" = "$dneed" ]; then
            ok "--ipu-memory $mem: too small with Winograd ($wneed MiB); the error says IPU_EXEC_WINOGRAD=0 needs $said MiB, as that run does"
        else fail "the Winograd memory advice at --ipu-memory $mem (exit $rc, $rc0 without Winograd)"; echo "$OUT"; cat "$W/err"; fi
    else fail "Winograd holds no more memory than direct convolution ($wneed against $dneed MiB)"; fi ;;
*) echo "Winograd agreement skipped: no Winograd on $isa" ;;
esac
# replicas whose oneDNN made different kernels for a node (a host with
# another oneDNN build or CPU, here tests/mpi/impl_shim.so on rank 1) fail
# before any transfer with one line naming both ranks and the node
shim=$top_builddir/tests/mpi/.libs/impl_shim.so
if [ -f "$shim" ]; then
    m=$CACHE/op13/resnet18/model.onnx
    OUT=$(timeout -k 5 300 "$MPIRUN" -np 1 "$EXE" "$m" --batches 2 --replicas 2 \
        : -np 1 -x LD_PRELOAD="$shim" "$EXE" "$m" --batches 2 --replicas 2 2>&1)
    rc=$?
    line=$(echo "$OUT" | grep "made different oneDNN implementations")
    if [ $rc -ne 0 ] && [ "$(echo "$line" | grep -c .)" -eq 1 ] &&
        echo "$line" | grep -q "ranks 0 and 1 (both holding stage 0) .* for node '[^']*' (Conv)"; then
        ok "replicas on different kernels: one error line naming the ranks and the node"
    else fail "the kernels check (exit $rc)"; echo "$OUT" | tail -5; fi
else fail "$shim is not built (make check builds it)"; fi
# the layout convolutions ask for (IPU_EXEC_CONV_LAYOUT), agreed like the
# ISA: the blocked one only where every rank wants it, said once, and the
# replicas' outputs are byte-identical to one rank asking for oneDNN's
m=$CACHE/op13/resnet18/model.onnx
IPU_EXEC_CONV_LAYOUT=onednn "$EXE" "$m" --batches 2 --output-dir "$W/lref" >/dev/null 2>"$W/err" ||
    { fail "one-rank run with IPU_EXEC_CONV_LAYOUT=onednn"; cat "$W/err"; }
OUT=$(timeout -k 5 300 "$MPIRUN" -np 1 -x IPU_EXEC_CONV_LAYOUT=onednn "$EXE" "$m" --batches 2 --replicas 2 \
    --output-dir "$W/lout" : -np 1 -x IPU_EXEC_CONV_LAYOUT=blocked "$EXE" "$m" --batches 2 --replicas 2 \
    --output-dir "$W/lout" 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ "$(echo "$OUT" | grep -c "convolutions ask for oneDNN's layout on every rank")" -eq 1 ] &&
    echo "$OUT" | grep -q "rank 1 asks for the blocked layout, rank 0 does not"; then
    ok "rank 1 wants the blocked layout, rank 0 not: oneDNN's on both, said once"
else fail "the layout agreement (exit $rc)"; echo "$OUT" | tail -5; fi
diff -r "$W/lref" "$W/lout" >/dev/null && ok "those replicas' outputs are identical to one rank in oneDNN's layout" ||
    fail "replicas with the agreed layout differ from the one-rank run"
echo "isa: $fails failure(s)"
[ "$fails" -eq 0 ]
