#!/bin/sh
# The test suite: build in build/, run make check (unit, model, conformance
# and malformed-input tests), then build in build-asan/ with
# -fsanitize=address,undefined and run the unit tests again.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
status=0
IPU_CONFIGURE_FLAGS="--enable-werror" scripts/build.sh
( cd build && make -j"$(nproc)" check ) || status=1
BUILD_DIR="$top/build-asan" IPU_CONFIGURE_FLAGS="--enable-werror --enable-sanitizers" scripts/build.sh \
  && ( cd build-asan && make -j"$(nproc)" check-unit ) || status=1
# the end of each failed test's log, so a CI failure can be read from the
# CI output alone
for trs in build/tests/*/*.trs build-asan/tests/*/*.trs; do
  [ -f "$trs" ] || continue
  grep -qE '^:test-result: (FAIL|ERROR)' "$trs" || continue
  echo "==== ${trs%.trs}.log (last 40 lines) ===="
  tail -n 40 "${trs%.trs}.log"
done
# one closing line for both runs
passed=0; failed=0; skipped=0
for log in build/test-suite.log build-asan/test-suite.log; do
  [ -f "$log" ] || { failed=$((failed + 1)); continue; }
  p=$(sed -n 's/^# PASS: *//p' "$log"); f=$(sed -n 's/^# FAIL: *//p' "$log")
  e=$(sed -n 's/^# ERROR: *//p' "$log"); s=$(sed -n 's/^# SKIP: *//p' "$log")
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0} + ${e:-0})); skipped=$((skipped + ${s:-0}))
done
[ "$failed" -eq 0 ] || status=1
echo "$passed passed, $failed failed, $skipped skipped"
exit $status
