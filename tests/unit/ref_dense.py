"""Reference data for tests/unit/test_ops_dense.c (Conv, Gemm, MatMul, pools)
and tests/unit/test_ops_convt_lrn.c (ConvTranspose, LRN).

Usage: python3 ref_dense.py OUTDIR
Writes OUTDIR/<case>.<slot>.bin (raw little-endian float32, or int64 for
MaxPool indices) for every case: the inputs (in0, in1, ...) drawn from a seeded
generator and the expected outputs (out0, out1) computed with PyTorch / numpy,
independently of ipu-exec. The C test declares the same shapes and ONNX
attributes and checks the file sizes against them.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

OUT = sys.argv[1]
rng = np.random.default_rng(20240601)


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def save(case, **arrays):
    for slot, a in arrays.items():
        a = np.ascontiguousarray(a)
        if a.dtype != np.int64:
            a = a.astype(np.float32)
        a.tofile(os.path.join(OUT, f"{case}.{slot}.bin"))


def t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def onnx_pad(x, pads, value=0.0):
    """Apply ONNX pads [b0, b1, ..., e0, e1, ...] to the spatial dims of x."""
    nd = len(pads) // 2
    tp = []
    for i in reversed(range(nd)):  # F.pad wants the last dim first
        tp += [pads[i], pads[i + nd]]
    return F.pad(x, tp, value=value)


def same_pads(ins, ks, ss, ds, lower):
    """auto_pad SAME_*: output ceil(in / stride), extra pad at the end (UPPER) or start (LOWER)."""
    b, e = [], []
    for i, k, s, d in zip(ins, ks, ss, ds):
        out = -(-i // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - i)
        small, big = total // 2, total - total // 2
        b.append(big if lower else small)
        e.append(small if lower else big)
    return b + e


CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


ACT = {
    None: lambda y: y,
    "Relu": lambda y: np.maximum(y, 0),
    "Clip": lambda y: np.clip(y, -0.5, 0.75),
    "Sigmoid": lambda y: 1 / (1 + np.exp(-y.astype(np.float64))),
    "SiLU": lambda y: y / (1 + np.exp(-y.astype(np.float64))),
}


def conv(case, xs, ws, bias=True, pads=None, strides=None, dil=None, group=1, same=None,
         act=None):
    """act: the fused activation the C test sets on the node (Clip bounds -0.5, 0.75)."""
    x, w = rand(*xs), rand(*ws)
    b = rand(ws[0]) if bias else None
    nd = len(xs) - 2
    strides = strides or [1] * nd
    dil = dil or [1] * nd
    if same is not None:
        pads = same_pads(xs[2:], ws[2:], strides, dil, same == "lower")
    pads = pads or [0] * (2 * nd)
    y = CONV[nd](onnx_pad(t(x), pads), t(w), None if b is None else t(b),
                 stride=strides, dilation=dil, groups=group).numpy()
    y = ACT[act](y)
    if b is None:
        save(case, in0=x, in1=w, out0=y)
    else:
        save(case, in0=x, in1=w, in2=b, out0=y)


conv("conv_pads_strides", [1, 3, 7, 8], [4, 3, 3, 3], pads=[1, 2, 1, 0], strides=[2, 1])
conv("conv_dilation_nobias", [1, 2, 9, 9], [3, 2, 3, 3], bias=False, pads=[2, 2, 2, 2], dil=[2, 2])
conv("conv_group_batch2", [2, 4, 6, 6], [6, 2, 3, 3], pads=[1, 1, 1, 1], group=2)
conv("conv_depthwise_mult2", [2, 4, 7, 7], [8, 1, 3, 3], pads=[1, 1, 1, 1], group=4)
conv("conv_depthwise_s2", [1, 5, 8, 9], [5, 1, 5, 5], pads=[2, 2, 1, 2], strides=[2, 2], group=5)
conv("conv_depthwise_dil", [1, 3, 6, 7], [3, 1, 3, 2], pads=[2, 0, 1, 1], dil=[2, 1], group=3)
conv("conv_1x1_batch2", [2, 8, 5, 5], [6, 8, 1, 1])
conv("conv_1x1_stride2", [1, 8, 6, 6], [4, 8, 1, 1], strides=[2, 2])
conv("conv_same_upper", [1, 2, 7, 6], [3, 2, 4, 3], strides=[2, 2], same="upper")
conv("conv_same_lower", [1, 2, 7, 6], [3, 2, 4, 3], strides=[2, 2], same="lower")
conv("conv_valid", [1, 2, 7, 8], [3, 2, 3, 3], strides=[2, 3])
conv("conv1d", [2, 3, 10], [4, 3, 3], pads=[1, 2], strides=[2], dil=[2])
conv("conv3d", [1, 2, 5, 5, 4], [3, 2, 3, 3, 2], pads=[1, 1, 0, 1, 1, 1], strides=[2, 1, 1])
# depthwise: stride 3 x 2 with dilation (three row phases, two column phases)
conv("conv_depthwise_s3_dil", [1, 4, 11, 10], [4, 1, 3, 3], pads=[1, 2, 2, 0], strides=[3, 2],
     dil=[1, 2], group=4)
# depthwise 5x5 stride 2 on a plane wider than 32 outputs, fused SiLU
conv("conv_depthwise_silu", [1, 2, 20, 71], [2, 1, 5, 5], pads=[2, 2, 2, 2], strides=[2, 2],
     group=2, act="SiLU")
# depthwise 3-D (row-by-row path), fused Sigmoid
conv("conv_depthwise3d_sigmoid", [1, 3, 4, 5, 6], [3, 1, 2, 3, 3], pads=[0, 1, 1, 1, 1, 1],
     group=3, act="Sigmoid")
# im2col in bands of output rows: K = 432 gives bands of 12 rows of 20 (2 bands)
conv("conv_im2col_bands_relu", [1, 48, 20, 20], [4, 48, 3, 3], pads=[1, 1, 1, 1], act="Relu")
# 3-D bands: K = 648, bands of 42 rows of 6 cross the out[0] boundary
conv("conv3d_bands", [1, 24, 8, 8, 6], [2, 24, 3, 3, 3], pads=[1, 1, 1, 1, 1, 1], bias=False)
# pointwise with fused Clip, and grouped im2col with fused Clip
conv("conv_1x1_clip", [1, 8, 5, 5], [6, 8, 1, 1], act="Clip")
conv("conv_1x1_plane1_sigmoid", [2, 6, 1, 1], [5, 6, 1, 1], act="Sigmoid")  # sgemv
conv("conv_group_clip", [1, 4, 6, 6], [6, 2, 3, 3], pads=[1, 1, 1, 1], group=2, act="Clip")


def gemm(case, a_shape, b_shape, c_shape, ta, tb, alpha, beta):
    a, b = rand(*a_shape), rand(*b_shape)
    opa = a.T if ta else a
    opb = b.T if tb else b
    y = alpha * (opa.astype(np.float64) @ opb.astype(np.float64))
    if c_shape is None:
        save(case, in0=a, in1=b, out0=y)
    else:
        c = rand(*c_shape)
        save(case, in0=a, in1=b, in2=c, out0=y + beta * c)


gemm("gemm_full_c", [3, 4], [4, 5], [3, 5], 0, 0, 0.5, 2.0)
gemm("gemm_trans_row_c", [4, 3], [5, 4], [5], 1, 1, 1.5, 0.5)
gemm("gemm_col_c", [3, 4], [4, 5], [3, 1], 0, 0, 1.0, 1.0)
gemm("gemm_scalar_c", [3, 4], [5, 4], [], 0, 1, 1.0, -1.0)
gemm("gemm_no_c", [3, 4], [4, 5], None, 0, 0, 2.0, 1.0)
gemm("gemm_m1_transb", [1, 6], [5, 6], [5], 0, 1, 1.0, 1.0)
gemm("gemm_m1_transa", [6, 1], [6, 5], [1, 5], 1, 0, 0.7, 0.3)
gemm("gemm_n1", [4, 6], [6, 1], [4, 1], 0, 0, 1.0, 1.0)
gemm("gemm_n1_trans", [6, 4], [1, 6], None, 1, 1, 1.0, 1.0)


def matmul(case, a_shape, b_shape):
    a, b = rand(*a_shape), rand(*b_shape)
    save(case, in0=a, in1=b, out0=np.matmul(a.astype(np.float64), b.astype(np.float64)))


matmul("mm_2d", [3, 4], [4, 5])
matmul("mm_1d_a", [4], [2, 4, 5])
matmul("mm_1d_b", [2, 3, 4], [4])
matmul("mm_1d_both", [4], [4])
matmul("mm_shared_b", [2, 3, 4, 5], [5, 6])
matmul("mm_attention", [2, 3, 4, 5], [2, 3, 5, 4])
matmul("mm_broadcast", [2, 1, 3, 4], [3, 4, 2])
matmul("mm_a_2d", [3, 4], [2, 4, 5])
matmul("mm_m1_batch", [2, 3, 1, 4], [2, 3, 4, 5])


# --- pools -----------------------------------------------------------------
x = rand(1, 2, 8, 8)  # SqueezeNet's MaxPool: kernel 3, stride 2, ceil_mode 1
save("maxpool_ceil", in0=x, out0=F.max_pool2d(t(x), 3, 2, ceil_mode=True).numpy())
x = rand(1, 2, 9, 9)
save("maxpool_ceil_pad", in0=x, out0=F.max_pool2d(t(x), 3, 2, padding=1, ceil_mode=True).numpy())
x = rand(1, 3, 7, 8)  # pads [1,0,1,1], dilations [2,1], strides [1,2], kernel [3,2]
xp = onnx_pad(t(x), [1, 0, 1, 1], value=-math.inf)
save("maxpool_pads_dil", in0=x, out0=F.max_pool2d(xp, (3, 2), (1, 2), dilation=(2, 1)).numpy())
x = rand(1, 2, 7, 6)
xp = onnx_pad(t(x), same_pads([7, 6], [3, 3], [2, 2], [1, 1], False), value=-math.inf)
save("maxpool_same_upper", in0=x, out0=F.max_pool2d(xp, 3, 2).numpy())
x = rand(2, 2, 5, 5)
y, idx = F.max_pool2d(t(x), 2, 2, return_indices=True)
planes = (np.arange(4).reshape(2, 2, 1, 1) * 25).astype(np.int64)
save("maxpool_indices", in0=x, out0=y.numpy(), out1=idx.numpy().astype(np.int64) + planes)
x = rand(1, 2, 9)
save("maxpool1d", in0=x, out0=F.max_pool1d(t(x), 3, 2, padding=1).numpy())
x = rand(1, 1, 5, 5)  # ceil_mode: the last window would start in the end padding: dropped
save("maxpool_ceil_drop", in0=x, out0=F.max_pool2d(t(x), 2, 2, padding=1, ceil_mode=True).numpy())
x = rand(1, 2, 6, 6)  # the last window overhangs the end padding
save("avgpool_include_ceil", in0=x,
     out0=F.avg_pool2d(t(x), 3, 2, padding=1, ceil_mode=True, count_include_pad=True).numpy())
save("avgpool_exclude_ceil", in0=x,
     out0=F.avg_pool2d(t(x), 3, 2, padding=1, ceil_mode=True, count_include_pad=False).numpy())
x = rand(2, 3, 6, 7)
save("avgpool_exclude", in0=x,
     out0=F.avg_pool2d(t(x), (3, 2), (2, 1), padding=(1, 1), count_include_pad=False).numpy())
x = rand(1, 2, 5, 6, 4)
save("avgpool3d", in0=x, out0=F.avg_pool3d(t(x), 2, (1, 2, 2), padding=1,
                                           count_include_pad=True).numpy())
x = rand(2, 3, 5, 4)
save("global_avg", in0=x, out0=x.astype(np.float64).mean(axis=(2, 3), keepdims=True))
save("global_max", in0=x, out0=x.max(axis=(2, 3), keepdims=True))
x = rand(1, 3, 9, 7)  # planes of 63: the 8-wide loop and its tail
save("global_avg_63", in0=x, out0=x.astype(np.float64).mean(axis=(2, 3), keepdims=True))
save("global_max_63", in0=x, out0=x.max(axis=(2, 3), keepdims=True))


# --- ConvTranspose -----------------------------------------------------------
CONVT = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def convt_pads(ins, ks, ss, ds, ops, auto_pad, output_shape):
    """ConvTranspose-11's pads [b..., e...] for auto_pad SAME_* or output_shape:
    the total padding full - out split with floor(total / 2) at the beginning
    for SAME_UPPER, at the end otherwise."""
    b, e = [], []
    for j, (i, k, s, d, o) in enumerate(zip(ins, ks, ss, ds, ops)):
        full = s * (i - 1) + o + (k - 1) * d + 1
        out = output_shape[j] if output_shape else i * s
        total = full - out
        small, big = total // 2, total - total // 2
        b.append(small if auto_pad == "SAME_UPPER" else big)
        e.append(big if auto_pad == "SAME_UPPER" else small)
    return b + e


def convt(case, xs, ws, bias=True, strides=None, dil=None, group=1, pads=None, op=None,
          auto_pad=None, output_shape=None):
    """ONNX ConvTranspose: W [C, M/group, k...] is PyTorch's layout too. Pads
    PyTorch takes (symmetric, output_padding < stride) go to it as they are;
    others crop (or extend with zeros, then the bias) its unpadded output."""
    x, w = rand(*xs), rand(*ws)
    m = ws[1] * group
    b = rand(m) if bias else None
    nd = len(xs) - 2
    strides = strides or [1] * nd
    dil = dil or [1] * nd
    op = op or [0] * nd
    if auto_pad in ("SAME_UPPER", "SAME_LOWER") or output_shape:
        pads = convt_pads(xs[2:], ws[2:], strides, dil, op, auto_pad, output_shape)
    pads = pads or [0] * (2 * nd)
    if pads[:nd] == pads[nd:] and all(o < max(s, d) for o, s, d in zip(op, strides, dil)):
        y = CONVT[nd](t(x), t(w), None if b is None else t(b), stride=strides, padding=pads[:nd],
                      output_padding=op, groups=group, dilation=dil).numpy()
    else:
        y = CONVT[nd](t(x), t(w), None, stride=strides, groups=group, dilation=dil).numpy()
        y = np.pad(y, [(0, 0), (0, 0)] + [(0, o) for o in op])
        grow = [(max(0, -pads[j]), max(0, -pads[j + nd])) for j in range(nd)]
        y = np.pad(y, [(0, 0), (0, 0)] + grow)
        y = y[(slice(None), slice(None)) + tuple(
            slice(max(0, pads[j]), y.shape[2 + j] - max(0, pads[j + nd])) for j in range(nd))]
        if b is not None:
            y = y + b.reshape([1, m] + [1] * nd)
    if b is None:
        save(case, in0=x, in1=w, out0=y)
    else:
        save(case, in0=x, in1=w, in2=b, out0=y)


convt("convt_pads_op", [1, 3, 5, 4], [3, 4, 3, 3], strides=[2, 2], pads=[1, 1, 1, 1], op=[1, 1])
convt("convt_group_dil_asym", [2, 4, 5, 6], [4, 3, 3, 2], bias=False, strides=[1, 2], dil=[2, 1],
      group=2, pads=[0, 1, 2, 0])
convt("convt1d", [2, 3, 7], [3, 2, 4], strides=[3], pads=[1, 2], op=[2])
convt("convt3d_depthwise", [1, 4, 3, 4, 3], [4, 1, 2, 3, 3], strides=[2, 1, 2], dil=[1, 2, 1],
      group=4, pads=[1, 0, 1, 1, 1, 0], op=[1, 0, 1])
convt("convt_same_upper", [1, 2, 4, 5], [2, 3, 3, 4], strides=[2, 3], auto_pad="SAME_UPPER")
convt("convt_same_lower", [1, 2, 4, 5], [2, 3, 3, 4], strides=[2, 3], auto_pad="SAME_LOWER")
convt("convt_valid", [1, 2, 3, 4], [2, 2, 2, 3], strides=[2, 1], auto_pad="VALID")
# output_shape one past the full extent (end padding -1) and equal to it
convt("convt_output_shape", [1, 2, 4, 4], [2, 2, 3, 3], strides=[2, 2], output_shape=[10, 9])
# upsampling as decoders have it: blocked layouts, batch 2, group 2
convt("convt_upsample", [2, 16, 7, 7], [16, 8, 3, 3], strides=[2, 2], pads=[1, 1, 1, 1], op=[1, 1],
      group=2)


# --- LRN ---------------------------------------------------------------------
def lrn_onnx(x, size, alpha, beta, bias):
    """LRN-13 as Operators.md writes it: channels c - floor((size-1)/2) ..
    c + ceil((size-1)/2), in float64."""
    x64 = x.astype(np.float64)
    sq = np.zeros_like(x64)
    c = x.shape[1]
    for ch in range(c):
        lo, hi = max(0, ch - (size - 1) // 2), min(c - 1, ch + -(-(size - 1) // 2))
        sq[:, ch] = (x64[:, lo:hi + 1] ** 2).sum(axis=1)
    return x64 / (bias + alpha / size * sq) ** beta


def lrn(case, xs, size, alpha=0.0001, beta=0.75, bias=1.0):
    """Odd sizes: PyTorch's LocalResponseNorm (its window is ONNX's then),
    checked against the spec's formula; even sizes (PyTorch puts the extra
    channel before c, ONNX after): the formula."""
    x = rand(*xs) * 2
    y = lrn_onnx(x, size, alpha, beta, bias)
    if size % 2:
        yt = torch.nn.LocalResponseNorm(size, alpha, beta, bias)(t(x)).numpy()
        assert np.allclose(yt, y, rtol=1e-5, atol=1e-6), case
        y = yt
    save(case, in0=x, out0=y)


lrn("lrn_size5", [2, 8, 4, 5], 5, alpha=0.5, beta=0.75, bias=1.5)
lrn("lrn_size3_5d", [1, 6, 3, 4, 2], 3, alpha=0.2, beta=0.5, bias=2.0)
lrn("lrn_size1_3d", [2, 7, 9], 1, alpha=0.3, beta=1.0, bias=1.0)
lrn("lrn_size7_wide", [1, 4, 5, 5], 7, alpha=0.4, beta=0.6, bias=0.5)
lrn("lrn_size2", [2, 5, 3, 4], 2, alpha=0.5, beta=0.75, bias=1.0)
lrn("lrn_size4", [1, 9, 6, 5], 4, alpha=0.8, beta=0.9, bias=1.2)


def avg_pool_dilated(x, k, s, d, pads, include_pad):
    """AveragePool-19 with dilations (PyTorch's avg_pool has none): the sum of
    each dilated window (a convolution with ones over the zero-padded input)
    over its taps inside the input, or inside the padded input."""
    nd = len(k)
    ones = torch.ones((1, 1) + tuple(k), dtype=torch.float64)
    planes = t(x).double().reshape((-1, 1) + x.shape[2:])
    total = CONV[nd](onnx_pad(planes, pads), ones, stride=s, dilation=d)
    mask = onnx_pad(torch.ones_like(planes[:1]), pads, value=1.0 if include_pad else 0.0)
    count = CONV[nd](mask, ones, stride=s, dilation=d)
    y = total / count
    return y.reshape(x.shape[:2] + y.shape[2:]).numpy()


# on oneDNN: ceil_mode with dilations, channels enough for its vector paths
x = rand(2, 32, 13, 12)
save("maxpool_ceil_dil", in0=x,
     out0=F.max_pool2d(t(x), 3, 2, padding=1, dilation=2, ceil_mode=True).numpy())
x = rand(1, 2, 7, 9, 8)
save("maxpool3d_ceil", in0=x, out0=F.max_pool3d(t(x), 2, 2, ceil_mode=True).numpy())
x = rand(1, 32, 7, 7)  # ceil_mode whose last window ends at the end padding
save("avgpool_include_ceil_fit", in0=x,
     out0=F.avg_pool2d(t(x), 3, 2, padding=1, ceil_mode=True, count_include_pad=True).numpy())
x = rand(1, 4, 9, 10)  # pads [1, 2, 1, 0], kernel 3, strides [2, 1], dilations [2, 3]
save("avgpool_dil_include", in0=x,
     out0=avg_pool_dilated(x, [3, 3], [2, 1], [2, 3], [1, 2, 1, 0], True))
save("avgpool_dil_exclude", in0=x,
     out0=avg_pool_dilated(x, [3, 3], [2, 1], [2, 3], [1, 2, 1, 0], False))
x = rand(1, 32, 7, 7)
save("global_avg_32", in0=x, out0=x.astype(np.float64).mean(axis=(2, 3), keepdims=True))
save("global_max_32", in0=x, out0=x.max(axis=(2, 3), keepdims=True))
