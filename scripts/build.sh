#!/bin/sh
# Configure (once) and build ipu-exec out of tree, in build/ (or $BUILD_DIR).
# Extra configure flags: IPU_CONFIGURE_FLAGS; the make target (default all):
# BUILD_TARGET.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
cd "$top"
[ -x configure ] || autoreconf -fi >/dev/null 2>&1
mkdir -p "$build"
cd "$build"
[ -f Makefile ] || "$top/configure" ${IPU_CONFIGURE_FLAGS:-} >/dev/null
make -j"$(nproc)" ${BUILD_TARGET:-} >/dev/null
echo "build: done ($build${BUILD_TARGET:+: make $BUILD_TARGET})"
