#!/bin/sh
# Install everything ipu-exec needs to build, test and make its test models,
# from Debian 12's packages (clang, its libFuzzer/sanitizer runtimes, OpenMP
# and llvm-symbolizer: the fuzz build of scripts/test.sh). Run as root (or with sudo).
set -eu
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
    build-essential autoconf automake libtool pkg-config \
    libopenmpi-dev openmpi-bin libucx-dev \
    protobuf-c-compiler libprotobuf-c-dev libonnx-dev \
    libhwloc-dev libdnnl-dev libcmocka-dev \
    clang libclang-rt-14-dev libomp-14-dev llvm-14 \
    python3 python3-numpy python3-onnx python3-torch python3-torchvision \
    slurm-wlm munge iproute2 util-linux \
    >/dev/null
echo "install-deps: done"
