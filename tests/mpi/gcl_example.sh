#!/bin/sh
# The installed libgcl works for a user: `make install DESTDIR=...` puts
# include/gcl/gcl.h, libgcl.so and gcl.pc in place; examples/custom_collective.c
# builds from that gcl.pc alone (no path of the build tree), once with the
# one-line `cc ... $(pkg-config --cflags --libs gcl ompi-c)` and once with
# examples/Makefile, links the installed libgcl.so, and runs under mpirun with
# 1, 3 and 4 ranks.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}" "${MPIRUN:=mpirun}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
top_srcdir=$(cd "$top_srcdir" && pwd)
tmp=$(mktemp -d /tmp/gcl_example.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/root
fails=0
ok()   { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

if ! make -C "$top_builddir" install DESTDIR="$dest" >"$tmp/install.log" 2>&1; then
    fail "make install DESTDIR=$dest"
    tail -20 "$tmp/install.log"
    exit 1
fi
prefix=$(sed -n 's/^prefix=//p' "$top_builddir/gcl.pc")
pcdir=$(dirname "$(find "$dest" -name gcl.pc | head -1)")
[ -f "$pcdir/gcl.pc" ] && ok "gcl.pc installed ($pcdir)" || { fail "no gcl.pc under $dest"; exit 1; }
# gcl.pc names $prefix; the files are under DESTDIR for now: the same gcl.pc
# with prefix= moved there (the other paths follow from it)
mkdir -p "$tmp/pc"
sed "s|^prefix=.*|prefix=$dest$prefix|" "$pcdir/gcl.pc" > "$tmp/pc/gcl.pc"
export PKG_CONFIG_PATH="$tmp/pc"
PKG=pkg-config
incdir=$($PKG --variable=includedir gcl)
libdir=$($PKG --variable=libdir gcl)
[ -f "$incdir/gcl/gcl.h" ] && ok "gcl/gcl.h installed" || fail "no $incdir/gcl/gcl.h"
[ -e "$libdir/libgcl.so" ] && ok "libgcl.so installed" || fail "no $libdir/libgcl.so"
[ "$($PKG --modversion gcl)" = "$(sed -n 's/^Version: //p' "$top_builddir/gcl.pc")" ] || fail "pkg-config --modversion gcl"
# only the public headers are installed in include/gcl
extra=$(find "$incdir/gcl" -type f ! -name gcl.h ! -name gcl_mpi.h)
[ -z "$extra" ] || fail "headers other than gcl.h and gcl_mpi.h installed: $extra"
[ -f "$incdir/gcl/gcl_mpi.h" ] && ok "gcl/gcl_mpi.h installed" || fail "gcl/gcl_mpi.h not installed"

mkdir -p "$tmp/ex1" "$tmp/ex2"
cp "$top_srcdir/examples/custom_collective.c" "$top_srcdir/examples/Makefile" "$tmp/ex2/"
# shellcheck disable=SC2046
if cc -O2 -Wall -Wextra -Werror -o "$tmp/ex1/custom_collective" "$top_srcdir/examples/custom_collective.c" \
        $($PKG --cflags --libs gcl) $(pkg-config --cflags --libs ompi-c) 2>"$tmp/cc.log"; then
    ok "cc custom_collective.c \$(pkg-config --cflags --libs gcl ompi-c)"
else
    fail "cc custom_collective.c"; cat "$tmp/cc.log"
fi
if make -C "$tmp/ex2" CFLAGS="-O2 -Wall -Wextra -Werror" >"$tmp/make.log" 2>&1; then
    ok "make -C examples"
else
    fail "make -C examples"; cat "$tmp/make.log"
fi

for exe in "$tmp/ex1/custom_collective" "$tmp/ex2/custom_collective"; do
    [ -x "$exe" ] || continue
    # it must load the installed library, not the build tree's
    lib=$(LD_LIBRARY_PATH="$libdir" ldd "$exe" | sed -n 's/.*libgcl\.so[^ ]* => \([^ ]*\).*/\1/p')
    case $lib in "$libdir"/*) ;; *) fail "$exe loads libgcl from '$lib', not $libdir" ;; esac
    for np in 1 3 4; do
        out=$(LD_LIBRARY_PATH="$libdir" timeout -k 5 120 "$MPIRUN" --oversubscribe -x LD_LIBRARY_PATH -np "$np" \
              "$exe" 2>&1)
        rc=$?
        if [ "$rc" -eq 0 ] && echo "$out" | grep -q "^custom_collective: ok"; then
            ok "$(basename "$(dirname "$exe")")/custom_collective, $np ranks"
        else
            fail "$exe, $np ranks (exit $rc)"; echo "$out" | grep -v "UCX  WARN" | tail -20
        fi
    done
done
[ "$fails" -eq 0 ]
