"""Reference data for tests/unit/test_ops_softmax.c (Softmax, LogSoftmax).

Usage: python3 ref_softmax.py OUTDIR
Writes OUTDIR/<case>.<slot>.bin (raw little-endian float32): the input in0
drawn from a seeded generator, with -inf elements and rows that are all
-inf along some axes, a NaN and a +inf (NaN rows), and the expected output out0 computed with PyTorch,
independently of ipu-exec: opset 13 along one axis (torch.softmax(x, axis)),
opset 11 on x coerced to 2-D [prod(dims before axis), prod(the rest)] along
dim 1. Cases: <op>_r<rank>_a<axis>_o<opset> for every axis of x3 [3,4,5] and
x4 [2,3,4,5]; big_* for the runs on two threads.
"""
import os
import sys

import numpy as np
import torch

OUT = sys.argv[1]
rng = np.random.default_rng(20261204)
FN = {"sm": torch.softmax, "lsm": torch.log_softmax}


def save(case, **arrays):
    for slot, a in arrays.items():
        np.ascontiguousarray(a, dtype=np.float32).tofile(os.path.join(OUT, f"{case}.{slot}.bin"))


def ref(op, x, axis, opset):
    t = torch.from_numpy(x)
    if opset < 13:
        rows = int(np.prod(x.shape[:axis], dtype=np.int64))
        return FN[op](t.reshape(rows, -1), 1).reshape(x.shape).numpy()
    return FN[op](t, axis).numpy()


x3 = (rng.standard_normal((3, 4, 5)) * 3).astype(np.float32)
x3[1, 2, :] = -np.inf  # a row all -inf along axis 2
x3[2, :, 0] = -np.inf  # along axis 1
x3[:, 3, 4] = -np.inf  # along axis 0
x3[0, 0, 1] = -np.inf  # one alone
x3[0, 2, 3] = np.nan  # NaN and +inf: NaN for every row through them (as
x3[2, 1, 2] = np.inf  # PyTorch; oneDNN's kernel alone zeroes the rest)
x4 = (rng.standard_normal((2, 3, 4, 5)) * 3).astype(np.float32)
x4[1, 2, 3, :] = -np.inf
x4[0, 1, :, :] = -np.inf  # all -inf from axis 2 on: the opset 11 row at axis 2
x4[1, :, 0, 2] = -np.inf
x4[:, 2, 1, 1] = -np.inf
x4[0, 0, 2, 3] = np.nan
x4[1, 1, 1, 4] = np.inf
for x in (x3, x4):
    for op in FN:
        for opset in (11, 13):
            for axis in range(x.ndim):
                case = f"{op}_r{x.ndim}_a{axis}_o{opset}"
                save(case, in0=x, out0=ref(op, x, axis, opset))

# above IPU_TEAM_MIN_BYTES: split over two threads (causal -inf mask)
big = (rng.standard_normal((2, 4, 64, 128)) * 3).astype(np.float32)
big[..., np.triu(np.ones((64, 128), bool), 1)] = -np.inf
big[1, 3, 7, :] = -np.inf
for op in FN:
    save(f"big_{op}_last", in0=big, out0=ref(op, big, 3, 13))
narrow = (rng.standard_normal((4, 2048, 8)) * 3).astype(np.float32)
narrow[1, :, 5] = -np.inf
narrow[2, 100, :] = -np.inf
for op in FN:
    save(f"big_{op}_narrow", in0=narrow, out0=ref(op, narrow, 1, 13))
