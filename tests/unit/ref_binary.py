"""Reference data for tests/unit/test_dnn_binary.c (Add, Sub, Mul, Div on
oneDNN's binary primitive).

Usage: python3 ref_binary.py OUTDIR
Writes OUTDIR/<case>.<slot>.bin (raw little-endian float32): the operands
A (in0) and B (in1) drawn from a seeded generator and the expected Y = A op B
(out0) computed with numpy broadcasting, independently of ipu-exec. The C
test declares the same shapes and checks the file sizes against them.
"""
import os
import sys

import numpy as np

OUT = sys.argv[1]
rng = np.random.default_rng(20261203)

OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}
A = (2, 32, 7, 5)
B = {"pc": (2, 32, 1, 1), "c": (1, 32, 1, 1), "scalar": (1, 1, 1, 1), "eq": A}


def save(case, **arrays):
    for slot, a in arrays.items():
        np.ascontiguousarray(a, dtype=np.float32).tofile(os.path.join(OUT, f"{case}.{slot}.bin"))


for op, f in OPS.items():
    for kind, bs in B.items():
        a = rng.standard_normal(A).astype(np.float32)
        b = rng.standard_normal(bs).astype(np.float32)
        if op == "div":  # away from 0: the quotient's rounding stays in tolerance
            b = np.where(b < 0, b - 0.5, b + 0.5).astype(np.float32)
        save(f"{op}_{kind}", in0=a, in1=b, out0=f(a.astype(np.float64), b.astype(np.float64)))
