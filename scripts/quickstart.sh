#!/bin/sh
# Install everything, build, export a real model (ResNet-18 from torchvision,
# random seeded weights, PyTorch's outputs as the reference), run it on one
# IPU with --check, then as pipeline stages over 4 MPI ranks. Usage:
# scripts/quickstart.sh [MODEL] (default resnet18;
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
# The main job: the same model cut into 4 pipeline stages, one per MPI rank
# (the plan is printed first), checked against PyTorch. Open MPI refuses to
# run as root without its two opt-in variables.
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "+ mpirun -np 4 --oversubscribe build/ipu-exec out/models/$model/model.onnx --check --batches 8"
mpirun -np 4 --oversubscribe build/ipu-exec "out/models/$model/model.onnx" --check --batches 8
