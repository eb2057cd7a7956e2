#!/bin/sh
# Run the libFuzzer targets of a fuzz build (configure CC=clang
# --enable-fuzzers; see README.md, "Fuzzing") for SECONDS each (default
# 30): fuzz_model (model files -> loader -> shape inference) and
# fuzz_tensor (.pb / .npy tensor files -> their readers).
#
#     tests/fuzz/run.sh [SECONDS [TARGET...]]
#
# The seed corpus is made first, into $top_builddir/tests/fuzz/seeds/TARGET:
# the models and tensor files of tests/unit/make_loader_models.py,
# tests/cli/make_cli_models.py and tests/malformed/make_bad_models.py (those
# up to 64 KiB), and the ONNX node conformance cases when a build holds them
# ($IPU_FUZZ_CASES, default: ../build/tests/conformance/cache of
# $top_builddir). New inputs libFuzzer finds go to
# $top_builddir/tests/fuzz/corpus/TARGET (kept between runs). A crash, leak,
# sanitizer report or timeout (over 10 s for one input) fails the run and
# prints the reproducer's path and the command that replays it.
#
# Environment: top_builddir (the fuzz build; default build-fuzz of this
# tree), top_srcdir, PYTHON_REF (default /usr/bin/python3), IPU_FUZZ_ARGS
# (more libFuzzer options, e.g. -runs=10000000 -jobs=2).
# Exit: 0 nothing found, 1 a finding (or a target failed), 77 skip (not a
# fuzz build).
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$here/../..}" "${top_builddir:=$top_srcdir/build-fuzz}" "${PYTHON_REF:=/usr/bin/python3}"
top_builddir=$(cd "$top_builddir" && pwd) || exit 1
secs=${1:-30}
[ $# -gt 0 ] && shift
targets=${*:-fuzz_model fuzz_tensor}
fz=$top_builddir/tests/fuzz
for t in $targets; do
    [ -x "$fz/$t" ] || { echo "SKIP: $fz/$t is not built (configure CC=clang --enable-fuzzers; make fuzzers)"; exit 77; }
done

# --- seeds -------------------------------------------------------------
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
for gen in unit/make_loader_models.py cli/make_cli_models.py malformed/make_bad_models.py; do
    out=$W/$(basename "$gen" .py)
    "$PYTHON_REF" "$top_srcdir/tests/$gen" "$out" >/dev/null 2>&1 ||
        echo "fuzz: $gen failed; its files are not seeds"
done
cases=${IPU_FUZZ_CASES:-$top_builddir/../build/tests/conformance/cache}
rm -rf "$fz/seeds"
mkdir -p "$fz/seeds/fuzz_model" "$fz/seeds/fuzz_tensor"
# seed TARGET DIR PATTERN...: copy the files under DIR matching a name
# pattern, up to 64 KiB, named by their content (duplicates collapse); one
# process, not one per file
seed() {
    [ -d "$2" ] || return 0
    "$PYTHON_REF" - "$fz/seeds/$1" "$@" <<'PY'
import fnmatch, hashlib, os, sys
dst, src, pats = sys.argv[1], sys.argv[3], sys.argv[4:]
for root, _, names in os.walk(src):
    for n in names:
        p = os.path.join(root, n)
        if any(fnmatch.fnmatch(n, q) for q in pats) and os.path.getsize(p) <= 65536:
            b = open(p, "rb").read()
            open(os.path.join(dst, hashlib.sha1(b).hexdigest()), "wb").write(b)
PY
}
seed fuzz_model "$W" '*.onnx'
seed fuzz_tensor "$W" '*.pb' '*.npy'
seed fuzz_model "$cases/node" '*.onnx'
seed fuzz_tensor "$cases/node" '*.pb'

# --- runs --------------------------------------------------------------
status=0
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
for t in $targets; do
    corpus=$fz/corpus/$t
    art=$fz/artifacts/$t
    mkdir -p "$corpus" "$art"
    log=$fz/$t.log
    echo "fuzz: $t for ${secs} s ($(ls "$fz/seeds/$t" | wc -l) seeds, $(ls "$corpus" | wc -l) corpus inputs)"
    # shellcheck disable=SC2086 # IPU_FUZZ_ARGS is a list of options
    "$fz/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$art/" ${IPU_FUZZ_ARGS:-} "$corpus" "$fz/seeds/$t" >"$log" 2>&1
    rc=$?
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" | sed 's/^/    /'
    if [ "$rc" -ne 0 ]; then
        status=1
        repro=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
        echo "FAIL: $t exited $rc: $(grep -m1 -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|fuzz: )' "$log")"
        tail -n 30 "$log" | sed 's/^/    /'
        [ -n "$repro" ] && echo "FAIL: $t: reproducer $repro; replay: $fz/$t $repro"
    else
        echo "ok: $t: $(ls "$corpus" | wc -l) corpus inputs"
    fi
done
exit $status
