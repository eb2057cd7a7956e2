"""Reference data for tests/unit/test_gcl_reduce.c (libgcl's local reductions).

Usage: python3 ref_gcl_reduce.py OUTDIR
For every dtype DT (f32 f64 f16 bf16 i8 u8 i32 i64) writes OUTDIR/DT.a.bin and
OUTDIR/DT.b.bin (N elements each: seeded random values plus special values:
NaN, +-inf, +-0, extremes, subnormals, rounding ties, integer overflow) and
OUTDIR/DT.OP.bin for OP in sum prod min max, the element-wise a OP b, and
OUTDIR/DT.avg3.bin, (a + b) / 3, computed with numpy (bfloat16 with torch),
independently of libgcl. Semantics (gcl.h, reduce_local.c): integers wrap;
float16/bfloat16 are computed in float32 and rounded to nearest even; MIN/MAX
give NaN when either operand is NaN and, for equal operands, -0 (MIN) / +0
(MAX); AVG divides the (rounded) sum once, truncating for integers.
"""
import os
import sys

import numpy as np
import torch

OUT = sys.argv[1]
N = 1037  # not a multiple of any vector width
rng = np.random.default_rng(20240917)


def minmax(a, b, is_min):
    """NaN-propagating min/max with -0 < +0 (float32/float64 arrays)."""
    r = np.minimum(a, b) if is_min else np.maximum(a, b)
    eq = (a == b) & (a == 0)
    neg = np.signbit(a) | np.signbit(b) if is_min else np.signbit(a) & np.signbit(b)
    r = np.where(eq, np.where(neg, -0.0, 0.0).astype(a.dtype), r)
    return np.where(np.isnan(a) | np.isnan(b), np.nan, r).astype(a.dtype)


def float_pairs(dt, finfo_max, tiny, specials):
    a = rng.standard_normal(N) * 10.0 ** rng.integers(-3, 4, N)
    b = rng.standard_normal(N) * 10.0 ** rng.integers(-3, 4, N)
    a[: len(specials)] = [p[0] for p in specials]
    b[: len(specials)] = [p[1] for p in specials]
    b[len(specials) : len(specials) + 40] = a[len(specials) : len(specials) + 40]  # equal pairs
    return a, b


INF, NAN = np.inf, np.nan
COMMON = [
    (NAN, 1.0), (1.0, NAN), (NAN, NAN), (INF, 1.0), (-INF, 1.0), (INF, -INF), (INF, INF),
    (0.0, -0.0), (-0.0, 0.0), (-0.0, -0.0), (0.0, 0.0), (NAN, INF), (-INF, NAN),
    (1.0, -1.0), (3.0, 3.0), (-2.5, -2.5),
]


def save(name, arr):
    np.ascontiguousarray(arr).tofile(os.path.join(OUT, name))


def do_numpy_float(name, dt, compute_dt, extra):
    fi = np.finfo(dt)
    specials = COMMON + extra + [(float(fi.max), float(fi.max)), (-float(fi.max), float(fi.max)),
                                 (float(fi.tiny), -float(fi.tiny) / 2)]
    a, b = float_pairs(dt, fi.max, fi.tiny, specials)
    a, b = a.astype(dt), b.astype(dt)
    save(f"{name}.a.bin", a)
    save(f"{name}.b.bin", b)
    x, y = a.astype(compute_dt), b.astype(compute_dt)
    with np.errstate(all="ignore"):
        res = {
            "sum": x + y, "prod": x * y,
            "min": minmax(x, y, True), "max": minmax(x, y, False),
        }
        res["avg3"] = (res["sum"].astype(dt).astype(compute_dt) / compute_dt(3))
    for op, r in res.items():
        save(f"{name}.{op}.bin", r.astype(dt))


with np.errstate(all="ignore"):
    do_numpy_float("f32", np.float32, np.float32, [(1e38, 1e38), (1e-45, 1e-45)])
    do_numpy_float("f64", np.float64, np.float64, [(1e308, 1e308)])
    # float16: ties (2048 + 1, 1 + 2^-11), subnormals, overflow to inf
    do_numpy_float("f16", np.float16, np.float32,
                   [(2048.0, 1.0), (2048.0, 3.0), (1.0, 2.0 ** -11), (1.0, 3 * 2.0 ** -11),
                    (2.0 ** -24, 2.0 ** -24), (2.0 ** -14, -2.0 ** -24), (60000.0, 10000.0),
                    (65504.0, 8.0), (65504.0, 16.0), (300.0, 300.0)])

# bfloat16 through torch (its float32 -> bfloat16 conversion rounds to nearest even)
bspecials = COMMON + [(1.0, 2.0 ** -8), (1.0, 3 * 2.0 ** -8), (256.0, 1.0), (3e38, 3e38),
                      (1e-39, 1e-39), (-1e-40, 2e-40)]
a, b = float_pairs(None, None, None, bspecials)
ta = torch.tensor(a, dtype=torch.float32).to(torch.bfloat16)
tb = torch.tensor(b, dtype=torch.float32).to(torch.bfloat16)
save("bf16.a.bin", ta.view(torch.int16).numpy())
save("bf16.b.bin", tb.view(torch.int16).numpy())
x, y = ta.float().numpy(), tb.float().numpy()
with np.errstate(all="ignore"):
    bres = {"sum": x + y, "prod": x * y, "min": minmax(x, y, True), "max": minmax(x, y, False)}
    s16 = torch.tensor(bres["sum"]).to(torch.bfloat16).float().numpy()
    bres["avg3"] = s16 / np.float32(3)
for op, r in bres.items():
    save(f"bf16.{op}.bin", torch.tensor(r, dtype=torch.float32).to(torch.bfloat16)
         .view(torch.int16).numpy())

# integers: numpy arithmetic wraps
for name, dt in (("i8", np.int8), ("u8", np.uint8), ("i32", np.int32), ("i64", np.int64)):
    ii = np.iinfo(dt)
    a = rng.integers(ii.min, ii.max, N, dtype=dt, endpoint=True)
    b = rng.integers(ii.min, ii.max, N, dtype=dt, endpoint=True)
    a[100:300] = rng.integers(-20 if ii.min < 0 else 0, 20, 200)  # small values too
    b[100:300] = rng.integers(-20 if ii.min < 0 else 0, 20, 200)
    sp = [(ii.max, 1), (ii.min, -1 if ii.min < 0 else 0), (ii.max, ii.max), (ii.min, ii.min),
          (ii.max, 2), (0, 0), (ii.min, ii.max), (5, 5)]
    for k, (p, q) in enumerate(sp):
        a[k], b[k] = p, q
    save(f"{name}.a.bin", a)
    save(f"{name}.b.bin", b)
    with np.errstate(all="ignore"):
        s = a + b
        res = {"sum": s, "prod": a * b, "min": np.minimum(a, b), "max": np.maximum(a, b)}
    # truncating division of the wrapped sum, exactly (python integers)
    res["avg3"] = np.array([(abs(int(v)) // 3) * (1 if v >= 0 else -1) for v in s], dtype=dt)
    for op, r in res.items():
        save(f"{name}.{op}.bin", r.astype(dt))
