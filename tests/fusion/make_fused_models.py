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
OUT/concat_chain/model.onnx x[1,3,20,20]: Concats between Convs, which the
                          layout pass (exec/ops/dnn_chain.h) keeps in oneDNN's
                          layouts: a SqueezeNet Fire module (1x1 and 3x3
                          expands joined, then a 1x1 Conv), a Concat of three
                          (24, 16 and 8 channels) -> BatchNormalization ->
                          ReLU -> 1x1 Conv, a Concat with x (in ours) as a
                          graph output, and a DenseNet block of three layers
                          (Concat of the features so far -> BatchNormalization
                          -> ReLU -> 1x1 Conv -> ReLU -> 3x3 Conv, 16 channels
                          each, as torchvision's) whose features only Concats
                          read, the last Concat a graph output: 2 outputs
OUT/concat_chain_b2/      the same at batch 2
OUT/concat_chain_64/      the same on 64x64 (the dense block's Concats and
                          BatchNormalizations over 256 KiB: run on 2 threads)
OUT/res_order/model.onnx  x[1,8,8,8]: two sums whose residual is made by a
                          Conv later in node order than the Conv that fuses
                          the sum: relu(relu(conv0(x)) + conv2(conv1(x)))
                          and, ResNet-like with the shortcut relu(conv5(x)),
                          conv6(relu(conv4(relu(conv3(x))) + relu(conv5(x))));
                          the later Conv must not take the fused nodes' chain
                          again (it did: the sum was lost): 2 outputs
OUT/dw_blocks/model.onnx  inverted residual blocks (1x1 Conv 16->96, then a
                          3x3 depthwise Conv) whose depthwise Conv fuses
                          into the 1x1 Conv: x[1,16,112,112] as MobileNetV2's
                          features.2 (BatchNorms, ReLU6, stride 2, then the
                          1x1 projection) and at stride 1 with Relu on both
                          sides and no depthwise bias; odd[1,16,105,105]
                          with HardSwish at stride 2 (an odd size: the last
                          row's pad), the 1x1 Conv without bias, the
                          depthwise one with. Not fused: SiLU before it (on x),
                          x24[1,24,112,112] (half a channel block), and
                          small[1,16,56,56] (1.2 MB expanded): 6 outputs
OUT/lrn_deconv/model.onnx x[1,8,16,16]: Conv 8->32 (3x3) + Relu -> LRN (size
                          5) -> 1x1 Conv -> ConvTranspose 32->16 (2x2, stride
                          2) -> 3x3 Conv, which the layout pass keeps in
                          oneDNN's layouts; and Conv 8->8 -> LRN of size 4 (the
                          op's own loop: ONNX puts an even window's extra
                          channel after c): 2 outputs. Built with onnx.helper
                          (PyTorch exports LocalResponseNorm as a pooling
                          chain), the reference from PyTorch's conv ops and
                          the spec's LRN formula in numpy
OUT/lrn_deconv_b2/        the same at batch 2
Opset 14 (HardSwish is an operator from 14; GELU is exported as Erf).
"""
import inspect, os, sys
import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper

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


class ClipInverted(torch.nn.Module):
    """Clips oneDNN's clip post-op cannot take: min above max (max
    everywhere) and a NaN max (NaN everywhere, as torch.clamp)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.b = torch.nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        return torch.clamp(self.a(x), 3.0, 1.0), torch.clamp(self.b(x), -1.0, float("nan"))


class Dense(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(32, 64)
        self.fc2 = torch.nn.Linear(64, 16)
        self.fc3 = torch.nn.Linear(32, 24)

    def forward(self, a, b):
        return self.fc2(torch.nn.functional.gelu(self.fc1(a))), torch.nn.functional.hardswish(self.fc3(b))


class SEChain(torch.nn.Module):
    def __init__(self, in_ch=8, n_proj=6):
        super().__init__()
        nn = torch.nn
        self.expand = nn.Conv2d(in_ch, 32, 1)
        self.dw = nn.Conv2d(32, 32, 3, padding=1, groups=32)
        self.fc1 = nn.Conv2d(32, 8, 1)
        self.fc2 = nn.Conv2d(8, 32, 1)
        self.proj = nn.ModuleList(nn.Conv2d(32, 16, 1) for _ in range(n_proj))

    def squeeze_excite(self, x):
        F = torch.nn.functional
        y = F.silu(self.dw(F.silu(self.expand(x))))
        return y, torch.sigmoid(self.fc2(F.silu(self.fc1(F.adaptive_avg_pool2d(y, 1)))))

    def forward(self, x):
        y, scale = self.squeeze_excite(x)
        t = scale.mean()
        p = self.proj
        d = y - scale
        return (p[0](scale * y), p[1](y * scale), p[2](y + scale), p[3](d), p[4](y / scale),
                p[5](y * t), d)


class SEBlock(SEChain):
    """EfficientNet's block: the squeeze-and-excitation scale multiplies
    the depthwise Conv's output per channel, whole blocks of 16 channels."""
    def __init__(self):
        super().__init__(16, 1)

    def forward(self, x):
        y, scale = self.squeeze_excite(x)
        return (self.proj[0](y * scale),)


class Transition(torch.nn.Module):
    """DenseNet's transition: its AvgPool2d exports as a Pad of zeros and an
    AveragePool; beside it a Pad of ones; and a pool of the input that only
    Concats read (a DenseNet block's input)."""
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.conv = nn.Conv2d(16, 32, 1)
        self.pool = nn.AvgPool2d(2, stride=2)
        self.post = nn.Conv2d(32, 16, 3, padding=1)
        self.side = nn.Conv2d(16, 16, 3)
        self.u = nn.Conv2d(16, 16, 1)
        self.v = nn.Conv2d(32, 16, 3, padding=1)
        self.w = nn.Conv2d(48, 16, 1)

    def forward(self, x):
        F = torch.nn.functional
        y = torch.relu(self.conv(x))
        m = F.max_pool2d(x, 2)
        u = self.u(F.avg_pool2d(x, 2))
        c1 = torch.cat([m, u], 1)
        c2 = torch.cat([m, u, self.v(c1)], 1)
        return (self.post(self.pool(y)), self.side(F.pad(x, (1, 1, 1, 1), value=1.0)),
                self.w(c2))


class Padded(torch.nn.Module):
    """24 channels: a block and a half of oneDNN's 16 (MobileNetV2's
    projections), a residual among them."""
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.c1 = nn.Conv2d(16, 24, 1)
        self.c2 = nn.Conv2d(24, 24, 3, padding=1)
        self.c3 = nn.Conv2d(24, 32, 1)

    def forward(self, x):
        a = torch.relu(self.c1(x))
        return (self.c3(torch.relu(self.c2(a) + a)),)


class Wide(torch.nn.Module):
    """17 channels on a large map: blocked, twice (AVX-512) or 1.4 times
    (AVX2) the elements' bytes."""
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.c1 = nn.Conv2d(1, 17, 1)
        self.c2 = nn.Conv2d(17, 17, 1)
        self.c3 = nn.Conv2d(17, 1, 1)

    def forward(self, x):
        return (self.c3(torch.relu(self.c2(torch.relu(self.c1(x))))),)


class ConcatChain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.squeeze = nn.Conv2d(16, 8, 1)
        self.expand1 = nn.Conv2d(8, 32, 1)
        self.expand3 = nn.Conv2d(8, 32, 3, padding=1)
        self.fire_out = nn.Conv2d(64, 16, 1)
        self.a = nn.Conv2d(16, 24, 1)
        self.b = nn.Conv2d(16, 16, 3, padding=1)
        self.c = nn.Conv2d(16, 8, 1)
        self.bn = nn.BatchNorm2d(48)
        self.post = nn.Conv2d(48, 16, 1)
        # a DenseNet block: layer i reads the Concat of its input and the
        # features of the layers before it
        self.block_in = nn.Conv2d(16, 16, 1)
        self.dense_bn = nn.ModuleList([nn.BatchNorm2d(16 * (i + 1)) for i in range(3)])
        self.dense_1x1 = nn.ModuleList([nn.Conv2d(16 * (i + 1), 32, 1) for i in range(3)])
        self.dense_3x3 = nn.ModuleList([nn.Conv2d(32, 16, 3, padding=1) for i in range(3)])
        with torch.no_grad():
            for bn in [self.bn, *self.dense_bn]:
                bn.running_mean.uniform_(-0.5, 0.5)
                bn.running_var.uniform_(0.5, 2.0)
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-0.2, 0.2)

    def forward(self, x):
        r = torch.relu
        s = r(self.stem(x))
        q = r(self.squeeze(s))
        y = r(self.fire_out(torch.cat([r(self.expand1(q)), r(self.expand3(q))], 1)))
        d = torch.cat([self.a(y), self.b(y), self.c(y)], 1)
        z = self.post(r(self.bn(d)))
        feats = [r(self.block_in(y))]
        for bn, c1, c3 in zip(self.dense_bn, self.dense_1x1, self.dense_3x3):
            feats.append(c3(r(c1(r(bn(torch.cat(feats, 1)))))))
        return torch.cat([z, x], 1), torch.cat(feats, 1)


class ResOrder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c = torch.nn.ModuleList([torch.nn.Conv2d(8 if i in (0, 1, 3, 5) else 16, 16, 3, padding=1)
                                      for i in range(7)])

    def forward(self, x):
        r, c = torch.relu, self.c
        y0 = r(r(c[0](x)) + c[2](c[1](x)))
        y1 = c[6](r(c[4](r(c[3](x))) + r(c[5](x))))
        return y0, y1


class DwBlocks(torch.nn.Module):
    """Inverted residual blocks whose depthwise Conv fuses into the 1x1
    Conv before it (graph/fuse.h), and three that do not."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        bn = lambda c: nn.BatchNorm2d(c)
        # MobileNetV2's features.2: BatchNorms (folded), ReLU6, stride 2
        self.a_expand = nn.Sequential(nn.Conv2d(16, 96, 1, bias=False), bn(96), nn.ReLU6())
        self.a_dw = nn.Sequential(nn.Conv2d(96, 96, 3, 2, 1, groups=96, bias=False), bn(96), nn.ReLU6())
        self.a_proj = nn.Sequential(nn.Conv2d(96, 24, 1, bias=False), bn(24))
        # stride 1, a depthwise Conv with no bias, Relu on both sides
        self.b_expand = nn.Conv2d(16, 96, 1)
        self.b_dw = nn.Conv2d(96, 96, 3, 1, 1, groups=96, bias=False)
        # MobileNetV3's HardSwish, stride 2 over an odd size; no bias on
        # the 1x1 Conv, one on the depthwise Conv
        self.c_expand = nn.Conv2d(16, 96, 1, bias=False)
        self.c_dw = nn.Conv2d(96, 96, 3, 2, 1, groups=96)
        # not fused: SiLU before the depthwise Conv, 24 input channels
        # (half a block), an expanded tensor under 4 MiB
        self.d_expand = nn.Conv2d(16, 96, 1)
        self.d_dw = nn.Conv2d(96, 96, 3, 2, 1, groups=96)
        self.e_expand = nn.Conv2d(24, 96, 1)
        self.e_dw = nn.Conv2d(96, 96, 3, 1, 1, groups=96)
        self.f_expand = nn.Conv2d(16, 96, 1)
        self.f_dw = nn.Conv2d(96, 96, 3, 1, 1, groups=96)

    def forward(self, x, odd, x24, small):
        F = torch.nn.functional
        a = self.a_proj(self.a_dw(self.a_expand(x)))
        b = torch.relu(self.b_dw(torch.relu(self.b_expand(x))))
        c = F.hardswish(self.c_dw(F.hardswish(self.c_expand(odd))))
        d = torch.relu(self.d_dw(F.silu(self.d_expand(x))))
        e = torch.relu(self.e_dw(torch.relu(self.e_expand(x24))))
        f = torch.relu(self.f_dw(torch.relu(self.f_expand(small))))
        return a, b, c, d, e, f


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
    # the TorchScript exporter (torch >= 2.9 defaults to dynamo's), as
    # tests/models/make_models.py asks for it
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model, inputs, os.path.join(d, "model.onnx"), opset_version=14,
                      input_names=in_names, output_names=out_names, **legacy)
    for i, x in enumerate(inputs):
        save(x.numpy(), f"{d}/test_data_set_0/input_{i}.pb", in_names[i])
    for i, y in enumerate(ys):
        save(y.numpy(), f"{d}/test_data_set_0/output_{i}.pb", out_names[i])


def lrn_ref(x, size, alpha, beta, bias):
    """LRN-13 as Operators.md writes it: the square sum over channels
    c - floor((size-1)/2) .. c + ceil((size-1)/2), clipped."""
    C = x.shape[1]
    sq = np.zeros_like(x)
    for c in range(C):
        lo, hi = max(0, c - (size - 1) // 2), min(C - 1, c + size // 2)  # ceil((size-1)/2)
        sq[:, c] = (x[:, lo:hi + 1] ** 2).sum(axis=1)
    return (x / (bias + alpha / size * sq) ** beta).astype(np.float32)


def export_lrn_deconv(name, batch):
    g = torch.Generator().manual_seed(1)
    rnd = lambda *shape, s=0.3: (torch.randn(*shape, generator=g) * s).float()
    w = {"wa": rnd(32, 8, 3, 3), "ba": rnd(32), "wb": rnd(32, 32, 1, 1), "bb": rnd(32),
         "wt": rnd(32, 16, 2, 2), "bt": rnd(16), "wc": rnd(16, 16, 3, 3), "bc": rnd(16),
         "wd": rnd(8, 8, 1, 1), "bd": rnd(8)}
    x = torch.randn(batch, 8, 16, 16, generator=g)
    lrn5 = dict(size=5, alpha=0.5, beta=0.75, bias=2.0)
    lrn4 = dict(size=4, alpha=0.3, beta=0.6, bias=1.5)
    F = torch.nn.functional
    with torch.no_grad():
        a = torch.relu(F.conv2d(x, w["wa"], w["ba"], padding=1))
        l5 = torch.from_numpy(lrn_ref(a.numpy(), **lrn5))
        b = F.conv2d(l5, w["wb"], w["bb"])
        t = F.conv_transpose2d(b, w["wt"], w["bt"], stride=2)
        y0 = F.conv2d(t, w["wc"], w["bc"], padding=1).numpy()
        y1 = lrn_ref(F.conv2d(x, w["wd"], w["bd"]).numpy(), **lrn4)
    N = helper.make_node
    nodes = [N("Conv", ["x", "wa", "ba"], ["a0"], name="conv_a", pads=[1, 1, 1, 1]),
             N("Relu", ["a0"], ["a"], name="relu_a"),
             N("LRN", ["a"], ["l5"], name="lrn5", **lrn5),
             N("Conv", ["l5", "wb", "bb"], ["b"], name="conv_b"),
             N("ConvTranspose", ["b", "wt", "bt"], ["t"], name="up", strides=[2, 2]),
             N("Conv", ["t", "wc", "bc"], ["y0"], name="conv_c", pads=[1, 1, 1, 1]),
             N("Conv", ["x", "wd", "bd"], ["d"], name="conv_d"),
             N("LRN", ["d"], ["y1"], name="lrn4", **lrn4)]
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y0", onnx.TensorProto.FLOAT, list(y0.shape)),
         helper.make_tensor_value_info("y1", onnx.TensorProto.FLOAT, list(y1.shape))],
        [numpy_helper.from_array(v.numpy(), k) for k, v in w.items()])
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]),
              os.path.join(d, "model.onnx"))
    save(x.numpy(), f"{d}/test_data_set_0/input_0.pb", "x")
    save(y0, f"{d}/test_data_set_0/output_0.pb", "y0")
    save(y1, f"{d}/test_data_set_0/output_1.pb", "y1")


export("conv_acts", ConvActs(), (torch.randn(1, 3, 12, 12),))
export("clip_inverted", ClipInverted(), (torch.randn(1, 3, 6, 6),))
export("dense", Dense(), (torch.randn(2, 5, 32), torch.randn(4, 32)))
export("se_chain", SEChain(), (torch.randn(2, 8, 10, 10),))
export("se_block", SEBlock(), (torch.randn(2, 16, 10, 10),))
export("transition", Transition(), (torch.randn(2, 16, 12, 12),))
export("padded", Padded(), (torch.randn(2, 16, 10, 10),))
export("wide", Wide(), (torch.randn(1, 1, 256, 256),))
export("concat_chain", ConcatChain(), (torch.randn(1, 3, 20, 20),))
export("concat_chain_b2", ConcatChain(), (torch.randn(2, 3, 20, 20),))
export("concat_chain_64", ConcatChain(), (torch.randn(1, 3, 64, 64),))
export("res_order", ResOrder(), (torch.randn(1, 8, 8, 8),))
dw = DwBlocks()
for m in dw.modules():  # BatchNorms with statistics of their own
    if isinstance(m, torch.nn.BatchNorm2d):
        m.running_mean.uniform_(-0.5, 0.5)
        m.running_var.uniform_(0.5, 2.0)
        m.weight.data.uniform_(0.5, 1.5)
        m.bias.data.uniform_(-0.5, 0.5)
export("dw_blocks", dw, (torch.randn(1, 16, 112, 112), torch.randn(1, 16, 105, 105),
                         torch.randn(1, 24, 112, 112), torch.randn(1, 16, 56, 56)))
export_lrn_deconv("lrn_deconv", 1)
export_lrn_deconv("lrn_deconv_b2", 2)
