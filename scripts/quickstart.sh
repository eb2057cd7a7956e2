#!/bin/sh
# Install everything, build, export a real model (ResNet-18 from torchvision,
# random seeded weights, PyTorch's outputs as the reference) and run it on an
# IPU with --check. Usage: scripts/quickstart.sh [MODEL] (default resnet18;
# tests/models/make_models.py --list shows the others).
set -eu
cd "$(dirname "$0")/.."
model=${1:-resnet18}
scripts/install-deps.sh
scripts/build.sh
mkdir -p out/models
[ -f "out/models/$model/model.onnx" ] || /usr/bin/python3 tests/models/make_models.py out/models "$model"
echo "+ build/ipu-exec out/models/$model/model.onnx --inputs out/models/$model/test_data_set_0 --check --batches 5"
build/ipu-exec "out/models/$model/model.onnx" --inputs "out/models/$model/test_data_set_0" --check --batches 5
