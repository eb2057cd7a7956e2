#!/bin/sh
# Configure (once) and build ipu-exec in the source tree.
set -eu
cd "$(dirname "$0")/.."
[ -x configure ] || autoreconf -fi >/dev/null
[ -f Makefile ] || ./configure ${IPU_CONFIGURE_FLAGS:-} >/dev/null
make -j"$(nproc)" >/dev/null
echo "build: done ($(pwd)/ipu-exec)"
