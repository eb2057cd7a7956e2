#!/bin/sh
# The installed libgcl works for a user: `make install prefix=DIR` (the build
# configured for another prefix) puts include/gcl/gcl.h, gcl_mpi.h, libgcl.so
# and gcl.pc in DIR, gcl.pc naming DIR (made at make time, not configure
# time); examples/custom_collective.c builds from that gcl.pc alone (no path
# of the build tree), once with the one-line `cc ... $(pkg-config --cflags
# --libs gcl ompi-c)` and once with examples/Makefile, loads DIR's libgcl.so
# without LD_LIBRARY_PATH (the rpath in gcl.pc's Libs) and runs under mpirun
# with 1, 3 and 4 ranks. A staged install (DESTDIR) names the final prefix,
# and a system libdir gets no rpath.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}" "${MPIRUN:=mpirun}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset LD_LIBRARY_PATH
top_srcdir=$(cd "$top_srcdir" && pwd)
tmp=$(mktemp -d /tmp/gcl_example.XXXXXX)
# the build tree's gcl.pc is made again for its own prefix on the way out
trap 'rm -rf "$tmp"; make -C "$top_builddir" gcl.pc >/dev/null 2>&1' EXIT
prefix=$tmp/gclp
fails=0
ok()   { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

configured=$(sed -n 's/^prefix = //p' "$top_builddir/Makefile")
[ "$configured" != "$prefix" ] || fail "configured for $prefix: the test needs another prefix"
if ! make -C "$top_builddir" install prefix="$prefix" >"$tmp/install.log" 2>&1; then
    fail "make install prefix=$prefix"
    tail -20 "$tmp/install.log"
    exit 1
fi
pc=$prefix/lib/pkgconfig/gcl.pc
[ -f "$pc" ] && ok "gcl.pc installed ($pc)" || { fail "no $pc"; find "$prefix" -name gcl.pc; exit 1; }
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
PKG=pkg-config
[ "$($PKG --variable=prefix gcl)" = "$prefix" ] && ok "gcl.pc: prefix=$prefix" ||
    fail "gcl.pc: prefix=$($PKG --variable=prefix gcl), not $prefix (configured: $configured)"
libdir=$($PKG --variable=libdir gcl)
incdir=$($PKG --variable=includedir gcl)
[ "$libdir" = "$prefix/lib" ] && ok "gcl.pc: libdir=$libdir" || fail "gcl.pc: libdir=$libdir, not $prefix/lib"
[ -f "$incdir/gcl/gcl.h" ] && ok "gcl/gcl.h installed" || fail "no $incdir/gcl/gcl.h"
[ -e "$libdir/libgcl.so" ] && ok "libgcl.so installed" || fail "no $libdir/libgcl.so"
[ "$($PKG --modversion gcl)" = "$(sed -n 's/^PACKAGE_VERSION = //p' "$top_builddir/Makefile")" ] || fail "pkg-config --modversion gcl"
# only the public headers are installed in include/gcl
extra=$(find "$incdir/gcl" -type f ! -name gcl.h ! -name gcl_mpi.h)
[ -z "$extra" ] || fail "headers other than gcl.h and gcl_mpi.h installed: $extra"
[ -f "$incdir/gcl/gcl_mpi.h" ] && ok "gcl/gcl_mpi.h installed" || fail "gcl/gcl_mpi.h not installed"
case " $($PKG --libs gcl) " in
    *" -Wl,-rpath,$libdir "*) ok "gcl.pc's Libs: -Wl,-rpath,$libdir" ;;
    *) fail "gcl.pc's Libs lack -Wl,-rpath,$libdir: $($PKG --libs gcl)" ;;
esac
# a staged install names the final prefix; a system libdir has no rpath
make -C "$top_builddir" install-pkgconfigDATA DESTDIR="$tmp/stage" prefix=/opt/gcl >/dev/null 2>&1
grep -qx "prefix=/opt/gcl" "$tmp/stage/opt/gcl/lib/pkgconfig/gcl.pc" 2>/dev/null && ok "DESTDIR: gcl.pc names prefix=/opt/gcl" ||
    fail "DESTDIR=$tmp/stage prefix=/opt/gcl: $(cat "$tmp/stage/opt/gcl/lib/pkgconfig/gcl.pc" 2>&1)"
make -C "$top_builddir" install-pkgconfigDATA DESTDIR="$tmp/sys" prefix=/usr libdir=/usr/lib/x86_64-linux-gnu >/dev/null 2>&1
sys=$tmp/sys/usr/lib/x86_64-linux-gnu/pkgconfig/gcl.pc
grep -qx "Libs: -L\${libdir} -lgcl" "$sys" 2>/dev/null && ok "a system libdir: no rpath" || fail "libdir=/usr/lib/x86_64-linux-gnu: $(grep Libs: "$sys" 2>&1)"

mkdir -p "$tmp/ex1" "$tmp/ex2"
cp "$top_srcdir/examples/custom_collective.c" "$top_srcdir/examples/Makefile" "$tmp/ex2/"
# shellcheck disable=SC2046
if cc -O2 -Wall -Wextra -Werror -o "$tmp/ex1/custom_collective" "$top_srcdir/examples/custom_collective.c" \
        $($PKG --cflags --libs gcl ompi-c) 2>"$tmp/cc.log"; then
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
    # it must load the installed library, found without LD_LIBRARY_PATH
    lib=$(ldd "$exe" | sed -n 's/.*libgcl\.so[^ ]* => \([^ ]*\).*/\1/p')
    case $lib in "$libdir"/*) ;; *) fail "$exe loads libgcl from '$lib', not $libdir" ;; esac
    for np in 1 3 4; do
        out=$(timeout -k 5 120 "$MPIRUN" --oversubscribe -np "$np" "$exe" 2>&1)
        rc=$?
        if [ "$rc" -eq 0 ] && echo "$out" | grep -q "^custom_collective: ok"; then
            ok "$(basename "$(dirname "$exe")")/custom_collective, $np ranks, no LD_LIBRARY_PATH"
        else
            fail "$exe, $np ranks (exit $rc)"; echo "$out" | grep -v "UCX  WARN" | tail -20
        fi
    done
done
echo "gcl_example: $fails failure(s)"
[ "$fails" -eq 0 ]
