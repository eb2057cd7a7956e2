#!/bin/sh
# Post-op fusion (graph/fuse.c) on PyTorch-built models: every output agrees
# with PyTorch's (--check), and the debug log names the fusions expected:
# each activation, the Erf GELU, SiLU, a per-channel Mul, an affine Mul/Add
# and a residual Add on Conv; Add (bias) + GELU and Add on MatMul;
# HardSwish on Gemm. In se_chain (squeeze-and-excitation) the layout pass
# keeps the depthwise Conv's output in oneDNN's layout for its 7 readers
# (the pool and the Add, Sub, Mul, Div by a per-channel scale or a scalar
# on oneDNN's binary primitive) and each op's output that a Conv reads; in
# concat_chain it keeps Concats and a BatchNormalization between Convs in
# oneDNN's layouts, and a DenseNet block's features, which only Concats
# read, channels-last (its Concats and BatchNormalizations then run on
# their own channels-last loops, over the IPU's 2 threads on 64x64); in
# lrn_deconv it keeps an LRN's and a ConvTranspose's in them. These run
# with convolutions in the layout oneDNN's kernels prefer
# (IPU_EXEC_CONV_LAYOUT=onednn); with oneDNN's channel-blocked one
# (=blocked), EfficientNet's squeeze-and-excitation scale and a DenseNet
# block's Concats read the blocked layout as it is.
set -u
: "${top_builddir:=.}" "${top_srcdir:=.}" "${PYTHON_REF:=/usr/bin/python3}"
EXE="$top_builddir/ipu-exec"
"$PYTHON_REF" -c "import onnx, torch" 2>/dev/null || { echo "SKIP: $PYTHON_REF lacks onnx/torch"; exit 77; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$PYTHON_REF" "$top_srcdir/tests/fusion/make_fused_models.py" "$W" >"$W/gen.log" 2>&1 ||
    { cat "$W/gen.log"; exit 1; }
fails=0
# run MODEL N [OPTION...]: --check passes and N "fused into" lines are logged
run() {
    run_m=$1 run_k=$2
    shift 2
    IPU_EXEC_CONV_LAYOUT=${LAYOUT:-onednn} IPU_EXEC_LOG_LEVEL=debug "$EXE" "$W/$run_m/model.onnx" \
        --check "$@" >"$W/out" 2>"$W/err"; rc=$?
    set -- "$run_m" "$run_k"
    if [ "$rc" -ne 0 ] || ! grep -q "^check: $2 outputs* of 1 micro-batch ok" "$W/out"; then
        echo "FAIL: $1: exit $rc"; cat "$W/out" "$W/err"; fails=$((fails + 1))
    else
        echo "ok: $1 matches PyTorch"
    fi
    sed -n "s/.*fused into node '\([^']*\)' ([A-Za-z]*): \(.*\)/\1: \2/p" "$W/err" >"$W/$1.fused"
}
# kept MODEL NODE N: the layout pass kept NODE's output in oneDNN's layout for N readers
kept() {
    if grep -qF "node '$2' ($3): output kept in oneDNN's layout for $4 reader(s)" "$W/err"; then
        echo "ok: $1 keeps $2's output in oneDNN's layout"
    else
        echo "FAIL: $1: $2's output not kept in oneDNN's layout for $4 readers"; fails=$((fails + 1))
    fi
}
# want MODEL LINE: the fusion LINE ("node: kinds (n nodes)") was logged
want() {
    if grep -qxF -- "$2" "$W/$1.fused"; then echo "ok: $1 fused $2"; else
        echo "FAIL: $1: no fusion '$2'; logged:"; cat "$W/$1.fused"; fails=$((fails + 1)); fi
}
run conv_acts 13
i=0
for k in "Relu (1" "Relu (1" "Clip (1" "Sigmoid (1" "Tanh (1" "Elu (1" "HardSigmoid (1" \
         "HardSwish (1" "Gelu (5" "SiLU (2" "Mul (1" "Linear, Relu (3" "Sum, Relu (2"; do
    want conv_acts "/convs.$i/Conv: $k nodes)"
    i=$((i + 1))
done
# Clips that oneDNN's clip post-op cannot take (min above max, a NaN
# bound) run alone, as torch.clamp computes them
run clip_inverted 2
if [ ! -s "$W/clip_inverted.fused" ]; then echo "ok: clip_inverted: no Clip fused"
else echo "FAIL: clip_inverted fused: $(cat "$W/clip_inverted.fused")"; fails=$((fails + 1)); fi
run dense 2
want dense "/fc1/MatMul: Add, Gelu (6 nodes)"
want dense "/fc2/MatMul: Add (1 nodes)"
want dense "/fc3/Gemm: HardSwish (1 nodes)"
run se_chain 7
kept se_chain /dw/Conv Conv 7
for k in Mul_3 Mul_4 Add Div Mul_5; do
    kept se_chain "/$k" "${k%_*}" 1
done
# the layout pass through Concat and BatchNormalization (exec/ops/dnn_chain.h):
# the Fire module's expands and Concat, the Concat of three and the
# BatchNormalization after it stay in oneDNN's layouts; in the DenseNet
# block, each feature that several Concats read is kept channels-last for
# them, and the Concats, BatchNormalizations and 1x1 Convs after them stay
# in that layout
# kept_some MODEL NODE: NODE's output kept in oneDNN's layout (any readers)
kept_some() {
    if grep -q "node '$2' ([A-Za-z]*): output kept in oneDNN's layout" "$W/err"; then
        echo "ok: $1 keeps $2 in oneDNN's layout"
    else echo "FAIL: $1: $2 not kept in oneDNN's layout"; fails=$((fails + 1)); fi
}
for m in concat_chain concat_chain_b2 concat_chain_64; do
    # on 64x64 the channels-last row loops split their rows over a team of 2
    if [ $m = concat_chain_64 ]; then run $m 2 --threads 2; else run $m 2; fi
    for node in /expand1/Conv /expand3/Conv /Concat /a/Conv /b/Conv /c/Conv /Concat_1 \
                /bn/BatchNormalization /post/Conv /Concat_3 /dense_bn.1/BatchNormalization \
                /dense_1x1.1/Conv; do
        kept_some $m $node
    done
    for f in "/block_in/Conv 4" "/dense_3x3.0/Conv 3" "/dense_3x3.1/Conv 2"; do
        if grep -qF "node '${f% *}' (Conv): output kept channels-last for ${f#* } Concats" "$W/err"
        then echo "ok: $m keeps ${f% *} channels-last for its ${f#* } Concats"
        else echo "FAIL: $m: ${f% *} not kept channels-last for ${f#* } Concats"; fails=$((fails + 1)); fi
    done
done
# plan --measure times the nodes as a run has them: fused and in the layouts
# the layout pass chose
if IPU_EXEC_CONV_LAYOUT=onednn IPU_EXEC_LOG_LEVEL=debug "$EXE" plan "$W/concat_chain/model.onnx" --measure --stages 2 >"$W/out" 2>"$W/err" &&
    grep -qF "node '/Concat' (Concat): output kept in oneDNN's layout" "$W/err"; then
    echo "ok: plan --measure runs the layout pass"
else
    echo "FAIL: plan --measure: no layout pass"; cat "$W/out" "$W/err"; fails=$((fails + 1))
fi
# a residual made by a Conv after the one that fuses the sum (in node
# order): that later Conv leaves the fused chain alone
run res_order 2
# LRN and ConvTranspose in the layout pass: the odd LRN reads the Conv's
# output as it is and writes for the 1x1 Conv; the ConvTranspose reads the
# 1x1 Conv's output (through one reorder) and writes for the 3x3 Conv; the
# even LRN runs on its own loop
for m in lrn_deconv lrn_deconv_b2; do
    run $m 2
    kept $m conv_a Conv 1
    kept $m lrn5 LRN 1
    kept $m conv_b Conv 1
    kept $m up ConvTranspose 1
done
# oneDNN's channel-blocked layout: the per-channel Mul of a
# squeeze-and-excitation block reads the depthwise Conv's output as it is
# (oneDNN's binary, its scale described in the same blocking), and so does
# the pool; a DenseNet block's features in whole blocks stay blocked for
# their Concats, which copy each as one run per image
for l in onednn blocked; do
    LAYOUT=$l run se_block 1
    kept "se_block ($l)" /dw/Conv Conv 2
    kept "se_block ($l)" /Mul_3 Mul 1
done
n=$(grep "(Conv): activations in oneDNN's channel-blocked layout" "$W/err" | sed "s/.*node '//" | sort -u | grep -c .)
[ "$n" -eq 5 ] && echo "ok: se_block (blocked): its 5 Convs ask for the blocked layout" ||
    { echo "FAIL: se_block (blocked): $n of 5 Convs in the blocked layout"; fails=$((fails + 1)); }
# 24 channels pad their second block: kept so, in buffers planned for it
for l in onednn blocked; do
    LAYOUT=$l run padded 1
    kept "padded ($l)" /c1/Conv Conv 2
    kept "padded ($l)" /c2/Conv Conv 1
done
# 2 x 32 x 10 x 10 floats, not 2 x 24 x 10 x 10
if grep -q "value '/c1/Conv_output_0': a buffer of 25600 bytes for its layout (19200 for its elements)" "$W/err"
then echo "ok: padded (blocked): the padded value's buffer is planned for its layout"
else echo "FAIL: padded (blocked): no buffer planned for the padded layout"; fails=$((fails + 1)); fi
# the partitioner charges a padded value its layout's bytes (as a run has
# it: plan --measure runs the layout pass): the memory that plan's advice
# names is enough for the stages it then plans
adv=$(IPU_EXEC_CONV_LAYOUT=blocked "$EXE" plan "$W/wide/model.onnx" --measure --stages 2 --ipu-memory 25M 2>&1 |
    sed -n 's/.*raise --ipu-memory to at least \([0-9]*K\).*/\1/p')
if [ -n "$adv" ] && IPU_EXEC_CONV_LAYOUT=blocked "$EXE" plan "$W/wide/model.onnx" --measure --stages 2 \
    --ipu-memory "$adv" >"$W/out" 2>&1; then
    echo "ok: wide (blocked): plan's advice ($adv) is enough memory"
else echo "FAIL: wide (blocked): plan's advice '$adv' is not enough"; cat "$W/out"; fails=$((fails + 1)); fi
LAYOUT=blocked run se_chain 7
for m in concat_chain concat_chain_b2; do
    LAYOUT=blocked run $m 2
    for f in "/block_in/Conv 4" "/dense_3x3.0/Conv 3" "/dense_3x3.1/Conv 2"; do
        kept "$m (blocked)" "${f% *}" Conv "${f#* }"
    done
    for node in /Concat /Concat_3 /Concat_4; do
        kept "$m (blocked)" $node Concat 1
    done
done
# a Pad of zeros (DenseNet's transition AvgPool2d exports one) becomes an
# Identity the layout pass keeps oneDNN's layout through; a Pad of ones
# stays; a value only Concats read is converted once, channels-last or, in
# the blocked family, channel-blocked
for l in onednn blocked; do
    LAYOUT=$l run transition 3
    n=$(grep -c "(Pad) pads nothing: an Identity" "$W/err")
    [ "$n" -eq 2 ] && echo "ok: transition ($l): the 2 Pads of zeros are Identities, the other stays" ||
        { echo "FAIL: transition ($l): $n Pads made Identity, not 2"; fails=$((fails + 1)); }
    kept "transition ($l)" /conv/Conv Conv 1
    kept "transition ($l)" /pool/AveragePool AveragePool 1
    kept "transition ($l)" /Concat_1 Concat 1
    # the input's pool that only the two Concats read: converted once, into
    # the layout of the convolutions' family
    want=channels-last
    [ $l = blocked ] && want=channel-blocked
    if grep -qF "node '/MaxPool' (MaxPool): output kept $want for 2 Concats" "$W/err"; then
        echo "ok: transition ($l): the pool only Concats read is kept $want"
    else echo "FAIL: transition ($l): the pool not kept $want for its Concats"; fails=$((fails + 1)); fi
done
# inverted residual blocks: the depthwise Conv fuses into the 1x1 Conv
# before it (graph/fuse.h), its activations on both sides; not after a
# SiLU, from 24 input channels, nor on a small tensor. On 1 thread oneDNN
# runs each pair as one kernel; on a team of 8 its heuristic (the expanded
# tensor against twice the team's L2) declines and it runs its two
# primitives (ref_fused_convolution): the same outputs either way
for l in onednn blocked; do
    LAYOUT=$l run dw_blocks 6
    want dw_blocks "/a_expand/a_expand.0/Conv: Clip, Depthwise, Clip (3 nodes)"
    want dw_blocks "/b_expand/Conv: Relu, Depthwise, Relu (3 nodes)"
    want dw_blocks "/c_expand/Conv: HardSwish, Depthwise, HardSwish (3 nodes)"
    for k in d e f; do want dw_blocks "/${k}_dw/Conv: Relu (1 nodes)"; done
    n=$(grep -c "_expand[.0]*/Conv' (Conv): oneDNN jit_1x1:[a-z0-9_]*, scratchpad [1-9]" "$W/err")
    [ "$n" -eq 3 ] && echo "ok: dw_blocks ($l): 3 fused pairs on one kernel" ||
        { echo "FAIL: dw_blocks ($l): $n of 3 fused pairs on one kernel"; fails=$((fails + 1)); }
done
run dw_blocks 6 --threads 8
n=$(grep -c "_expand[.0]*/Conv' (Conv): oneDNN ref_fused_convolution:any:" "$W/err")
[ "$n" -eq 3 ] && echo "ok: dw_blocks (8 threads): 3 fused pairs on two primitives" ||
    { echo "FAIL: dw_blocks (8 threads): $n of 3 fused pairs on two primitives"; fails=$((fails + 1)); }
[ "$fails" -eq 0 ] || { echo "$fails failures"; exit 1; }
echo "all fusion tests passed"
