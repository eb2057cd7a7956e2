#!/usr/bin/python3
"""The --digest of a run, computed from the outputs it wrote with --output-dir
(the reference for tests/cli/run.sh): for every micro-batch m and output k,
splitmix64's finaliser of FNV-1a 64 over m, k, the rank and the dims (each an
int64, little-endian), then the output's bytes; the digest is their sum mod
2^64, printed as 16 hex digits.

usage: output_digest.py DIR BATCHES OUTPUTS   (DIR/test_data_set_M/output_K.pb)
"""
import os, sys
import numpy as np
from onnx import TensorProto, numpy_helper

M64 = (1 << 64) - 1


def fnv1a(h, data):
    for b in data:
        h = ((h ^ b) * 1099511628211) & M64
    return h


def i64(v):
    return int(v).to_bytes(8, "little", signed=True)


def digest(m, k, a):
    h = fnv1a(14695981039346656037, i64(m) + i64(k) + i64(a.ndim) + b"".join(i64(d) for d in a.shape))
    h = fnv1a(h, np.ascontiguousarray(a).tobytes())
    h = ((h ^ (h >> 30)) * 0xbf58476d1ce4e5b9) & M64
    h = ((h ^ (h >> 27)) * 0x94d049bb133111eb) & M64
    return h ^ (h >> 31)


def main():
    d, batches, outputs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    total = 0
    for m in range(batches):
        sub = os.path.join(d, f"test_data_set_{m}") if batches > 1 else d
        for k in range(outputs):
            t = TensorProto()
            with open(os.path.join(sub, f"output_{k}.pb"), "rb") as f:
                t.ParseFromString(f.read())
            total = (total + digest(m, k, numpy_helper.to_array(t))) & M64
    print(f"{total:016x}")


if __name__ == "__main__":
    main()
