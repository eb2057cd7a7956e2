#!/bin/sh
# Packs bench/remote/pack/gcl.tar.xz for run.sh's gcl step: bench/gcl-bench
# and libgcl.so.0 of two builds, A (this tree with no-call-check.patch: the
# cost's baseline, libgcl without its always-on call check) and B (this tree
# as it is, build/), each with a wrapper A|B/bench/gcl-bench that
# bench/gcl-ab.sh runs. A is built in a git worktree at /tmp/gcl-nocheck.
#   bench/remote/pack-gcl.sh        (after scripts/build.sh)
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
wt=${GCL_NOCHECK_TREE:-/tmp/gcl-nocheck}
[ -d "$wt" ] || git -C "$top" worktree add -q --detach "$wt" HEAD
git -C "$wt" checkout -q --detach "$(git -C "$top" rev-parse HEAD)"
git -C "$wt" checkout -q -- src
git -C "$wt" apply "$top/bench/remote/no-call-check.patch"
(cd "$wt" && BUILD_DIR=$wt/build scripts/build.sh >/dev/null)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for v in "A:$wt/build" "B:$top/build"; do
    n=${v%%:*} b=${v#*:}
    mkdir -p "$stage/$n/bench" "$stage/$n/lib"
    cp "$b/bench/.libs/gcl-bench" "$stage/$n/lib/gcl-bench.bin"
    cp -L "$b/.libs/libgcl.so.0" "$stage/$n/lib/"
    cat >"$stage/$n/bench/gcl-bench" <<'W'
#!/bin/sh
d=$(cd "$(dirname "$0")/../lib" && pwd)
LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/gcl-bench.bin" "$@"
W
    chmod +x "$stage/$n/bench/gcl-bench"
done
mkdir -p "$top/bench/remote/pack"
tar -C "$stage" -cJf "$top/bench/remote/pack/gcl.tar.xz" A B
echo "pack-gcl: $top/bench/remote/pack/gcl.tar.xz (A: $wt/build without the call check, B: build/)"
