#!/bin/sh
# Packs bench/remote/pack/gcl.tar.xz for run.sh's gcl step: bench/gcl-bench
# and libgcl.so.0 of two builds of this tree's HEAD, A with
# no-call-check.patch (the cost's baseline: libgcl without its always-on
# call check) and B without it, each with a wrapper A|B/bench/gcl-bench
# that bench/gcl-ab.sh runs. Both are built in a git worktree of their own
# (GCL_AB_TREE, default /tmp/gcl-ab), never in this checkout.
#   bench/remote/pack-gcl.sh
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
wt=${GCL_AB_TREE:-/tmp/gcl-ab}
mark=.pack-gcl-worktree
case $(cd "$(dirname "$wt")" 2>/dev/null && pwd)/$(basename "$wt") in
"$top" | "$top"/*) echo "pack-gcl: $wt is inside this checkout: choose another GCL_AB_TREE" >&2; exit 2 ;;
esac
git -C "$top" worktree prune
if [ -e "$wt" ] && [ ! -f "$wt/$mark" ]; then
    echo "pack-gcl: $wt exists and is not this script's worktree: choose another GCL_AB_TREE" >&2
    exit 2
fi
[ -e "$wt" ] || { git -C "$top" worktree add -q --detach "$wt" HEAD && touch "$wt/$mark"; }
git -C "$wt" checkout -q -f --detach "$(git -C "$top" rev-parse HEAD)"
(cd "$wt" && BUILD_DIR=$wt/build-b BUILD_TARGET=bench/gcl-bench scripts/build.sh >/dev/null)
git -C "$wt" apply "$top/bench/remote/no-call-check.patch"
(cd "$wt" && BUILD_DIR=$wt/build-a BUILD_TARGET=bench/gcl-bench scripts/build.sh >/dev/null) || {
    git -C "$wt" checkout -q -f -- src; exit 1; }
git -C "$wt" checkout -q -f -- src
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for n in A B; do
    b=$wt/build-$(echo "$n" | tr AB ab)
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
echo "pack-gcl: $top/bench/remote/pack/gcl.tar.xz (HEAD $(git -C "$top" rev-parse --short HEAD); A without the call check, B with it)"
