#!/bin/sh
# ONNX node conformance: generate the onnx package's node test cases into the
# build tree (once; cached), then run `ipu-exec --check` on every case whose
# ops ipu-exec supports, and print pass/fail/refused/unsupported per op.
# Fails when a case fails that tests/conformance/known_failures.txt does not
# list. Run by `make check`; also by hand: tests/conformance/run.sh [REGEX]
#
# Environment: top_srcdir, top_builddir (set by make check; default: this
# script's tree), PYTHON_REF (default /usr/bin/python3), IPU_EXEC (default
# $top_builddir/ipu-exec), CONFORMANCE_JOBS (default: the number of cores),
# CONFORMANCE_STRICT=1 (a supported op refusing a case also fails).
# Exit: 0 pass, 1 fail, 77 skip (no python/onnx, or no ipu-exec built).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$here/../..}
top_builddir=${top_builddir:-$top_srcdir}
top_builddir=$(cd "$top_builddir" && pwd)
PYTHON_REF=${PYTHON_REF:-/usr/bin/python3}
IPU_EXEC=${IPU_EXEC:-$top_builddir/ipu-exec}
cache=$top_builddir/tests/conformance/cache

if [ ! -x "$PYTHON_REF" ] || ! "$PYTHON_REF" -c 'import numpy, onnx' 2>/dev/null; then
    echo "SKIP: $PYTHON_REF with numpy and onnx is needed (apt-get install python3-onnx python3-numpy)"
    exit 77
fi
if [ ! -x "$IPU_EXEC" ]; then
    echo "SKIP: $IPU_EXEC is not built"
    exit 77
fi

# The cache is valid for one onnx version and one version of the generator.
stamp="onnx $("$PYTHON_REF" -c 'import onnx; print(onnx.__version__)') $(cksum < "$here/make_node_tests.py")"
if [ ! -f "$cache/.stamp" ] || [ "$(cat "$cache/.stamp")" != "$stamp" ]; then
    echo "generating the ONNX node cases into $cache"
    rm -rf "$cache"
    mkdir -p "$cache"
    "$PYTHON_REF" "$here/make_node_tests.py" "$cache/node"
    echo "$stamp" > "$cache/.stamp"
fi

strict=""
[ "${CONFORMANCE_STRICT:-0}" = 1 ] && strict=--strict
exec "$PYTHON_REF" "$here/run_cases.py" --ipu-exec "$IPU_EXEC" --cases "$cache/node" \
    --known "$here/known_failures.txt" --jobs "${CONFORMANCE_JOBS:-$(nproc)}" \
    --report "$cache/report.md" --filter "${1:-}" $strict
