#!/bin/sh
# Install the benchmark peer, onnxruntime-node (its CPU library ships inside
# the npm package, so no install script is run), and a TensorProto decoder
# into bench/node_modules. Idempotent: does nothing when already installed.
# Exit status: 0 ok, 77 when node/npm are missing (apt-get install nodejs npm).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "bench/setup.sh: $tool not found (Debian packages: nodejs npm)" >&2
        exit 77
    fi
done
cd "$here"
if node -e "require('onnxruntime-node'); require('onnx-proto')" >/dev/null 2>&1; then
    echo "bench/setup.sh: onnxruntime-node already installed in $here/node_modules"
    exit 0
fi
npm install --ignore-scripts --no-audit --no-fund --loglevel=error
node -e "require('onnxruntime-node'); require('onnx-proto')" || {
    echo "bench/setup.sh: onnxruntime-node installed but does not load" >&2
    exit 1
}
echo "bench/setup.sh: onnxruntime-node $(node -p "require('onnxruntime-node/package.json').version") ready in $here/node_modules"
