#!/bin/sh
# Real-model tests: make PyTorch/torchvision models with PyTorch's outputs as
# the reference (tests/models/make_models.py; cached under the build tree),
# then check that `ipu-exec MODEL --inputs DATA --check` agrees with them
# (numpy.allclose rtol=1e-3 atol=1e-4).
#
#   tests/models/run.sh                      the make-check subset
#   tests/models/run.sh SPEC...              SPEC = BATCH:OPSET:NAME, e.g. 4:13:resnet50
#
# Environment: top_srcdir, top_builddir (set by make check; default: this
# script's tree), PYTHON_REF (default /usr/bin/python3), IPU_EXEC (default
# $top_builddir/ipu-exec), MODEL_TIMEOUT (seconds per ipu-exec run, default 600),
# MODEL_CACHE (default $top_builddir/tests/models/cache).
# Exit: 0 all pass, 1 a model fails, 77 skip (no torch/onnx, no ipu-exec).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$here/../..}
top_builddir=${top_builddir:-$top_srcdir}
top_builddir=$(cd "$top_builddir" && pwd)
PYTHON_REF=${PYTHON_REF:-/usr/bin/python3}
IPU_EXEC=${IPU_EXEC:-$top_builddir/ipu-exec}
cache=${MODEL_CACHE:-$top_builddir/tests/models/cache}
timeout=${MODEL_TIMEOUT:-600}

# The make-check subset: a representative CNN or two, a small one of pools
# between convolutions, both transformers at the opsets PyTorch exports them
# with (17 brings LayerNormalization), and a small encoder-decoder of
# transposed convolutions (batch 2).
specs=${*:-1:13:resnet18 1:13:mobilenet_v2 1:13:pool_chain 1:13:gpt2_tiny 1:17:gpt2_tiny 1:13:bert_tiny 1:17:bert_tiny 2:13:decoder_tiny}

if [ ! -x "$PYTHON_REF" ] || ! "$PYTHON_REF" -c 'import torch, torchvision, onnx, numpy' 2>/dev/null; then
    echo "SKIP: $PYTHON_REF with torch, torchvision, onnx and numpy is needed" \
         "(apt-get install python3-torch python3-torchvision python3-onnx)"
    exit 77
fi
if [ ! -x "$IPU_EXEC" ]; then
    echo "SKIP: $IPU_EXEC is not built"
    exit 77
fi

# Generate what is missing: one make_models.py call per (batch, opset) folder.
# A folder is remade when make_models.py or torch changed.
version="$(cksum < "$here/make_models.py") torch $("$PYTHON_REF" -c 'import torch; print(torch.__version__)')"
configs=$(for s in $specs; do echo "${s%:*}"; done | sort -u)
for cfg in $configs; do
    batch=${cfg%%:*} opset=${cfg#*:}
    dir=$cache/b${batch}_op${opset}
    names=$(for s in $specs; do if [ "${s%:*}" = "$cfg" ]; then echo "${s##*:}"; fi; done)
    if [ -f "$dir/.version" ] && [ "$(cat "$dir/.version")" != "$version" ]; then
        echo "models: make_models.py or torch changed; remaking $dir"
        rm -rf "$dir"
    fi
    mkdir -p "$dir"
    echo "$version" > "$dir/.version"
    rc=0
    # shellcheck disable=SC2086
    "$PYTHON_REF" "$here/make_models.py" "$dir" $names --batch "$batch" --opset "$opset" \
        2>"$dir/make.err" || rc=$?
    if [ $rc -ne 0 ]; then
        cat "$dir/make.err" >&2
        [ $rc -eq 77 ] && exit 77
        echo "FAIL: make_models.py could not make $names (batch $batch, opset $opset)" >&2
        exit 1
    fi
done

pass=0 fail=0 failed=""
for s in $specs; do
    batch=${s%%:*} rest=${s#*:}
    opset=${rest%%:*} name=${rest#*:}
    d=$cache/b${batch}_op${opset}/$name
    log=$d/ipu-exec.log
    start=$(date +%s)
    rc=0
    timeout "$timeout" "$IPU_EXEC" "$d/model.onnx" --inputs "$d/test_data_set_0" --check \
        >"$log" 2>&1 || rc=$?
    secs=$(( $(date +%s) - start ))
    if [ $rc -eq 0 ]; then
        pass=$((pass + 1))
        echo "PASS $name (batch $batch, opset $opset) ${secs}s"
    else
        fail=$((fail + 1))
        failed="$failed $s"
        [ $rc -eq 124 ] && echo "  timed out after ${timeout}s" >>"$log"
        echo "FAIL $name (batch $batch, opset $opset) exit $rc, ${secs}s:"
        tail -n 5 "$log" | sed 's/^/  /'
    fi
done
# `ipu-exec plan` charges a stage oneDNN's scratchpad: its scratch column
# holds at least the largest scratchpad oneDNN reports for a node (its
# debug log), on resnet18 whose convolutions have one
d=$cache/b1_op13/resnet18
case " $specs " in *" 1:13:resnet18 "*)
    out=$(IPU_EXEC_LOG_LEVEL=debug "$IPU_EXEC" plan "$d/model.onnx" 2>&1) || true
    pad=$(echo "$out" | sed -n 's/.*: oneDNN .*, scratchpad \([0-9]*\) bytes$/\1/p' | sort -n | tail -1)
    # the header's column names, their units ("weight MiB") left out
    col=$(echo "$out" | awk '$1 == "stage" { for (i = 1; i <= NF; i++) if ($i !~ /^(MiB|bytes|ms)$/) {
                                 n++; if ($i == "scratch") c = n } }
                            c && $1 == "0" { print $c; exit }')
    if [ -n "$pad" ] && [ "$pad" -gt 0 ] && [ -n "$col" ] &&
        awk -v p="$pad" -v c="$col" 'BEGIN { exit !(c * 1048576 >= p - 0.005 * 1048576) }'; then
        pass=$((pass + 1))
        echo "PASS plan's scratch column ($col MiB) holds oneDNN's largest scratchpad ($pad bytes)"
    else
        fail=$((fail + 1))
        failed="$failed plan-scratch"
        echo "FAIL plan's scratch column '$col' MiB vs oneDNN's largest scratchpad '$pad' bytes"
    fi ;;
esac
echo "models: $pass passed, $fail failed"
[ $fail -eq 0 ] || { echo "failed:$failed"; exit 1; }
