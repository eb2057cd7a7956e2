#!/usr/bin/python3
"""Small PyTorch-built ONNX models whose element-wise work graph/fuse.c folds
into the Conv, MatMul and Gemm before it (post-ops), with PyTorch reference
outputs (test_data_set_0/).

OUT/conv_acts/model.onnx  x[1,3,12,12]: one Conv 3->8 (3x3, pad 1) per branch,
                          then ReLU, LeakyReLU(0.1), Hardtanh(-1,2) (Clip),
                          Sigmoid, Tanh, ELU(0.7), Hardsigmoid, Hardswish,
                          GELU (erf), SiLU, * a per-channel constant
                          [1,8,1,1], * 1.5 + 0.25 then Relu, and + x2
                          (a residual: a Conv of x) then ReLU: 13 outputs
OUT/dense/model.onnx      a[2,5,32] -> Linear(32,64) (MatMul + Add) -> GELU
                          (erf) -> Linear(64,16); b[4,32] -> Linear(32,24)
                          (Gemm) -> Hardswish: 2 outputs
OUT/se_chain/model.onnx   x[2,8,10,10]: EfficientNet's squeeze-and-excitation
                          around a depthwise Conv (32 channels, SiLU) whose
                          output the global average pool and five element-wise
                          ops read, each op's output a 1x1 Conv's input:
                          scale * y and y * scale (scale [2,32,1,1], the
                          Sigmoid of the excitation), y + scale, y - scale,
                          y / scale, and y * t (t a scalar); plus y - scale
                          itself: 6 outputs. The ops are no post-ops (their
                          operand is no constant), so they run on oneDNN's
                          binary primitive in the Conv's layout (the layout
                          pass, exec/ops/dnn_chain.h).
Opset 14 (HardSwish is an operator from 14; GELU is exported as Erf).
"""
import os, sys
import numpy as np
import torch
from onnx import numpy_helper

out = sys.argv[1]
torch.manual_seed(0)


class ConvActs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.acts = [nn.ReLU(), nn.LeakyReLU(0.1), nn.Hardtanh(-1.0, 2.0), nn.Sigmoid(), nn.Tanh(),
                     nn.ELU(0.7), nn.Hardsigmoid(), nn.Hardswish(), nn.GELU(), nn.SiLU()]
        self.convs = nn.ModuleList(nn.Conv2d(3, 8, 3, padding=1) for _ in range(len(self.acts) + 4))
        self.scale = nn.Parameter(torch.randn(1, 8, 1, 1))

    def forward(self, x):
        c = self.convs
        ys = [a(c[i](x)) for i, a in enumerate(self.acts)]
        k = len(self.acts)
        ys.append(c[k](x) * self.scale)
        ys.append(torch.relu(c[k + 1](x) * 1.5 + 0.25))
        ys.append(torch.relu(c[k + 2](x) + c[k + 3](x)))
        return tuple(ys)


class Dense(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(32, 64)
        self.fc2 = torch.nn.Linear(64, 16)
        self.fc3 = torch.nn.Linear(32, 24)

    def forward(self, a, b):
        return self.fc2(torch.nn.functional.gelu(self.fc1(a))), torch.nn.functional.hardswish(self.fc3(b))


class SEChain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.expand = nn.Conv2d(8, 32, 1)
        self.dw = nn.Conv2d(32, 32, 3, padding=1, groups=32)
        self.fc1 = nn.Conv2d(32, 8, 1)
        self.fc2 = nn.Conv2d(8, 32, 1)
        self.proj = nn.ModuleList(nn.Conv2d(32, 16, 1) for _ in range(6))

    def forward(self, x):
        F = torch.nn.functional
        y = F.silu(self.dw(F.silu(self.expand(x))))
        scale = torch.sigmoid(self.fc2(F.silu(self.fc1(F.adaptive_avg_pool2d(y, 1)))))
        t = scale.mean()
        p = self.proj
        d = y - scale
        return (p[0](scale * y), p[1](y * scale), p[2](y + scale), p[3](d), p[4](y / scale),
                p[5](y * t), d)


def save(t, path, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(t, name).SerializeToString())


def export(name, model, inputs):
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    model.eval()
    with torch.no_grad():
        ys = model(*inputs)
    in_names = [f"in{i}" for i in range(len(inputs))]
    out_names = [f"out{i}" for i in range(len(ys))]
    torch.onnx.export(model, inputs, os.path.join(d, "model.onnx"), opset_version=14,
                      input_names=in_names, output_names=out_names)
    for i, x in enumerate(inputs):
        save(x.numpy(), f"{d}/test_data_set_0/input_{i}.pb", in_names[i])
    for i, y in enumerate(ys):
        save(y.numpy(), f"{d}/test_data_set_0/output_{i}.pb", out_names[i])


export("conv_acts", ConvActs(), (torch.randn(1, 3, 12, 12),))
export("dense", Dense(), (torch.randn(2, 5, 32), torch.randn(4, 32)))
export("se_chain", SEChain(), (torch.randn(2, 8, 10, 10),))
