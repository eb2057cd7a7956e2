#!/bin/sh
# Build, run the whole test suite (make check), then the unit tests again
# under AddressSanitizer/UBSan in a separate build folder.
set -eu
cd "$(dirname "$0")/.."
IPU_CONFIGURE_FLAGS="--enable-werror" scripts/build.sh
status=0
make -j"$(nproc)" check || status=$?
mkdir -p build-asan
( cd build-asan && { [ -f Makefile ] || ../configure --enable-werror --enable-sanitizers >/dev/null; } \
  && make -j"$(nproc)" check-unit ) || status=$?
# one closing line for the whole run
python3 - <<'PY' || true
import glob, re
p = f = s = 0
for log in glob.glob("test-suite.log") + glob.glob("build-asan/test-suite.log"):
    txt = open(log).read()
    for key, var in (("PASS", "p"), ("FAIL", "f"), ("SKIP", "s"), ("ERROR", "e")):
        m = re.search(r"^# %s: +(\d+)" % key, txt, re.M)
        n = int(m.group(1)) if m else 0
        if var == "p": p += n
        elif var == "s": s += n
        else: f += n
print(f"{p} passed, {f} failed, {s} skipped")
PY
exit $status
