#!/bin/sh
# The test suite: build in build/, run make check (unit, model, conformance
# and malformed-input tests), then build in build-asan/ with
# -fsanitize=address,undefined and run the unit tests again, then build the
# libFuzzer targets with clang in build-fuzz/ and run each for 30 s
# (tests/fuzz/run.sh; seeded from build/'s conformance cases). --full runs
# make check-full instead of make check (the exhaustive products too; see
# README.md). Ends with each test's wall time, slowest first.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
target=check
case "${1:-}" in
--full) target=check-full ;;
"") ;;
*) echo "usage: scripts/test.sh [--full]" >&2; exit 2 ;;
esac
status=0
stages=""
# stage NAME START: record how long NAME took
stage() { stages="$stages$(($(date +%s) - $2)) $1
"; }
t=$(date +%s)
IPU_CONFIGURE_FLAGS="--enable-werror" scripts/build.sh
stage "build" "$t"; t=$(date +%s)
( cd build && make -j"$(nproc)" "$target" ) || status=1
stage "build: make $target" "$t"; t=$(date +%s)
asan=0
BUILD_DIR="$top/build-asan" IPU_CONFIGURE_FLAGS="--enable-werror --enable-sanitizers" scripts/build.sh \
  || asan=1
stage "build-asan" "$t"; t=$(date +%s)
[ "$asan" -eq 0 ] && ( cd build-asan && make -j"$(nproc)" check-unit ) || status=1
stage "build-asan: make check-unit" "$t"; t=$(date +%s)
fuzz=0
BUILD_DIR="$top/build-fuzz" BUILD_TARGET=fuzzers \
  IPU_CONFIGURE_FLAGS="CC=clang --enable-werror --enable-fuzzers" scripts/build.sh || fuzz=1
stage "build-fuzz" "$t"; t=$(date +%s)
[ "$fuzz" -eq 0 ] && top_builddir="$top/build-fuzz" IPU_FUZZ_CASES="$top/build/tests/conformance/cache" \
  tests/fuzz/run.sh 30 || fuzz=1
stage "build-fuzz: tests/fuzz/run.sh 30" "$t"
[ "$fuzz" -eq 0 ] || status=1
# the end of each failed test's log, so a CI failure can be read from the
# CI output alone
for trs in build/tests/*/*.trs build-asan/tests/*/*.trs; do
  [ -f "$trs" ] || continue
  grep -qE '^:test-result: (FAIL|ERROR)' "$trs" || continue
  echo "==== ${trs%.trs}.log (last 40 lines) ===="
  tail -n 40 "${trs%.trs}.log"
done
# each test's wall time (the last line tests/timed.sh writes to its log)
echo "==== wall time per test (s), slowest first ===="
for trs in build/tests/*/*.trs build-asan/tests/*/*.trs; do
  [ -f "$trs" ] || continue
  log=${trs%.trs}.log
  s=$(sed -n 's/^wall time: \([0-9.]*\) s$/\1/p' "$log" 2>/dev/null | tail -n 1)
  r=$(sed -n 's/^:test-result: //p' "$trs" | head -n 1)
  printf '%8s  %-5s %s\n' "${s:-?}" "$r" "${trs%.trs}"
done | sort -rn
echo "==== wall time per stage (s) ===="
printf '%s' "$stages" | while read -r s name; do printf '%8s  %s\n' "$s" "$name"; done
# one closing line for both runs
passed=0; failed=0; skipped=0
for log in build/test-suite.log build-asan/test-suite.log; do
  [ -f "$log" ] || { failed=$((failed + 1)); continue; }
  p=$(sed -n 's/^# PASS: *//p' "$log"); f=$(sed -n 's/^# FAIL: *//p' "$log")
  e=$(sed -n 's/^# ERROR: *//p' "$log"); s=$(sed -n 's/^# SKIP: *//p' "$log")
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0} + ${e:-0})); skipped=$((skipped + ${s:-0}))
done
# the fuzz stage counts as one test
if [ "$fuzz" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
[ "$failed" -eq 0 ] || status=1
echo "$passed passed, $failed failed, $skipped skipped"
exit $status
