#!/usr/bin/env python3
"""Peer driver: run a model with onnxruntime's Python package (CPU) on ONNX
test data; the same command line and the same JSON line as ort_run.js, for
machines with the onnxruntime wheel and no node (bench/models.sh picks it
with BENCH_PEER=python, or by itself when node is missing).

  ort_run.py MODEL.onnx|MODEL_DIR [--inputs DIR] [--threads T] [--runs N]
             [--warmup W] [--check]

MODEL_DIR is a folder holding model.onnx and test_data_set_0/ (the layout of
tests/models/make_models.py). --inputs DIR holds input_N.pb
(onnx.TensorProto) and, for --check, output_N.pb; it defaults to
test_data_set_0 beside the model. Inputs are matched to the model's inputs by
TensorProto name, else by position.

After W warm-up runs (default 1), N timed runs (default 10) of the session
with T intra-op threads (default 1; inter-op 1, sequential execution).
Prints one JSON line:
  {"model":..., "threads":T, "runs":N, "median_ms":..., "min_ms":...,
   "max_ms":..., "check":"pass"|"fail"|null, "max_abs_err":..., "worst":...}
--check compares the outputs with output_N.pb as numpy.allclose(rtol=1e-3,
atol=1e-4) does and exits 1 on a mismatch. Bad usage or input: exit 2;
onnxruntime, onnx or numpy missing: exit 77.
"""
import json
import math
import os
import re
import sys
import time
import traceback
from decimal import ROUND_HALF_UP, Context, Decimal

RTOL, ATOL = 1e-3, 1e-4
USAGE = ("usage: ort_run.py MODEL.onnx|MODEL_DIR [--inputs DIR] [--threads T] "
         "[--runs N] [--warmup W] [--check]")


def die(msg, code=2):
    sys.stderr.write(f"ort_run.py: {msg}\n")
    sys.exit(code)


try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
    import onnxruntime as ort
except ImportError as e:
    die(f"onnxruntime (python) not installed for {sys.executable}: {e}", 77)

# onnx.TensorProto.DataType -> onnxruntime type name (ort_run.js's names)
DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32",
          7: "int64", 9: "bool", 10: "float16", 11: "float64", 12: "uint32",
          13: "uint64", 16: "bfloat16"}
ITEMSIZE = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2}


def js_number(v):
    """v as JavaScript's Number#toString writes it (what ort_run.js prints)."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return str(int(v))
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "0"
    if v < 0:
        return "-" + js_number(-v)
    _, digits, exp = Decimal(repr(v)).normalize().as_tuple()
    s = "".join(map(str, digits))
    k = len(s)
    n = exp + k  # v = 0.s x 10^n
    if k <= n <= 21:
        return s + "0" * (n - k)
    if 0 < n <= 21:
        return s[:n] + "." + s[n:]
    if -6 < n <= 0:
        return "0." + "0" * -n + s
    e = n - 1
    return (s if k == 1 else s[0] + "." + s[1:]) + "e" + ("+" if e >= 0 else "-") + str(abs(e))


def ms3(v):
    """+v.toFixed(3) of JavaScript: v rounded to 3 decimals, ties away from 0."""
    return float(Decimal(v).quantize(Decimal("0.001"), ROUND_HALF_UP, Context(prec=400)))


def json_line(obj):
    """One line as JSON.stringify writes it: no spaces, JavaScript numbers."""
    def enc(v):
        if v is None:
            return "null"
        if isinstance(v, str):
            return json.dumps(v, ensure_ascii=False)
        if isinstance(v, float) and not math.isfinite(v):
            return "null"
        return js_number(v)
    return "{" + ",".join(f"{json.dumps(k)}:{enc(v)}" for k, v in obj.items()) + "}"


def parse_args(argv):
    o = {"model": None, "inputs": None, "threads": 1, "runs": 10, "warmup": 1, "check": False}

    def num(i, name, lo):
        s = argv[i] if i < len(argv) else "undefined"
        try:
            v = int(s.strip() or "0")
        except ValueError:
            v = None
        if v is None or v < lo:
            die(f"{name} needs an integer >= {lo}, got '{s}'")
        return v

    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--inputs":
            i += 1
            o["inputs"] = argv[i] if i < len(argv) else None
        elif a in ("--threads", "--runs", "--warmup"):
            i += 1
            o[a[2:]] = num(i, a, 0 if a == "--warmup" else 1)
        elif a == "--check":
            o["check"] = True
        elif a in ("-h", "--help"):
            print(USAGE)
            sys.exit(0)
        elif a.startswith("-"):
            die(f"unknown option {a}\n{USAGE}")
        elif o["model"] is None:
            o["model"] = a
        else:
            die(f"unexpected argument {a}\n{USAGE}")
        i += 1
    if o["model"] is None:
        die(USAGE)
    if os.path.isdir(o["model"]):
        o["inputs"] = o["inputs"] or os.path.normpath(os.path.join(o["model"], "test_data_set_0"))
        o["model"] = os.path.normpath(os.path.join(o["model"], "model.onnx"))
    if not os.path.exists(o["model"]):
        die(f"{o['model']}: no such file")
    o["inputs"] = o["inputs"] or os.path.normpath(
        os.path.join(os.path.dirname(o["model"]), "test_data_set_0"))
    if not os.path.exists(o["inputs"]):
        die(f"{o['inputs']}: no such directory")
    return o


def read_tensor(path):
    """(name, onnxruntime type name, numpy array) of a TensorProto file."""
    t = onnx.TensorProto()
    try:
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
    except Exception as e:  # noqa: BLE001 -- a decode error of any kind
        die(f"{path}: not a TensorProto: {e}")
    typ = DTYPES.get(t.data_type)
    if typ is None:
        die(f"{path}: unsupported TensorProto data_type {t.data_type}")
    dims = [int(d) for d in t.dims]
    count = math.prod(dims)
    if t.raw_data and len(t.raw_data) != count * ITEMSIZE[t.data_type]:
        die(f"{path}: raw_data holds {len(t.raw_data)} bytes, dims [{','.join(map(str, dims))}] "
            f"need {count * ITEMSIZE[t.data_type]}")
    try:
        a = numpy_helper.to_array(t)
    except Exception as e:  # noqa: BLE001
        die(f"{path}: {e}")
    if a.size != count:
        die(f"{path}: holds {a.size} values, dims [{','.join(map(str, dims))}] need {count}")
    return t.name, typ, a.reshape(dims)


def numbered(d, prefix):
    pat = re.compile(rf"^{prefix}_(\d+)\.pb$")
    found = [(int(m.group(1)), f) for f in os.listdir(d) for m in [pat.match(f)] if m]
    return [os.path.join(d, f) for _, f in sorted(found, key=lambda x: x[0])]


def compare(name, got, got_type, want, want_type):
    """numpy.allclose(got, want, rtol, atol), with ort_run.js's report:
    (ok, max |got - want| over finite pairs, the worst element as text)."""
    if list(got.shape) != list(want.shape) or got_type != want_type:
        return (False, 0, f"{name}: {got_type}[{','.join(map(str, got.shape))}] differs from "
                          f"reference {want_type}[{','.join(map(str, want.shape))}]")
    x = np.asarray(got, dtype=np.float64).ravel()
    y = np.asarray(want, dtype=np.float64).ravel()
    if y.size == 0:
        return True, 0, None
    with np.errstate(invalid="ignore", over="ignore"):
        eq = x == y
        finite = np.isfinite(x) & np.isfinite(y)
        d = np.where(finite & ~eq, np.abs(x - y), 0.0)
        excess = np.where(eq, -ATOL, np.where(finite, d - (ATOL + RTOL * np.abs(y)), np.inf))
    i = int(np.argmax(excess))
    worst = f"{name}[{i}]: got {js_number(x[i])}, expected {js_number(y[i])}"
    return bool(excess[i] <= 0), float(d.max()), worst


def main():
    o = parse_args(sys.argv[1:])
    so = ort.SessionOptions()
    so.intra_op_num_threads = o["threads"]
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    try:
        sess = ort.InferenceSession(o["model"], sess_options=so,
                                    providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001
        die(f"{o['model']}: onnxruntime cannot load it: {e}")
    input_names = [i.name for i in sess.get_inputs()]
    output_names = [i.name for i in sess.get_outputs()]
    files = numbered(o["inputs"], "input")
    if len(files) != len(input_names):
        die(f"{o['inputs']}: {len(files)} input_N.pb files, the model has "
            f"{len(input_names)} inputs")
    feeds = {}
    for i, f in enumerate(files):
        name, _, a = read_tensor(f)
        feeds[name if name in input_names else input_names[i]] = a

    outputs = None
    for _ in range(max(o["warmup"], 1 if o["check"] else 0)):
        outputs = sess.run(None, feeds)
    times = []
    for _ in range(o["runs"]):
        t0 = time.perf_counter_ns()
        sess.run(None, feeds)
        times.append((time.perf_counter_ns() - t0) / 1e6)
    times.sort()
    n = len(times)
    med = times[n >> 1] if n % 2 else (times[n // 2 - 1] + times[n // 2]) / 2
    res = {"model": o["model"], "threads": o["threads"], "runs": o["runs"],
           "median_ms": ms3(med), "min_ms": ms3(times[0]),
           "max_ms": ms3(times[-1]), "check": None, "max_abs_err": None, "worst": None}
    if o["check"]:
        refs = numbered(o["inputs"], "output")
        if not refs:
            die(f"{o['inputs']}: no output_N.pb to check against")
        res["check"] = "pass"
        res["max_abs_err"] = 0
        for i, f in enumerate(refs):
            if i >= len(output_names):
                die(f"{f}: the model has only {len(output_names)} outputs")
            got = np.asarray(outputs[i])
            _, want_type, want = read_tensor(f)
            ok, max_abs, worst = compare(output_names[i], got, got.dtype.name, want, want_type)
            res["max_abs_err"] = max(res["max_abs_err"], max_abs)
            if not ok and res["check"] == "pass":
                res["check"] = "fail"
                res["worst"] = worst
    print(json_line(res), flush=True)
    if res["check"] == "fail":
        sys.stderr.write(f"ort_run.py: mismatch: {res['worst']}\n")
        sys.exit(1)


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except BaseException:  # noqa: BLE001 -- ort_run.js: any other error exits 1
        die(traceback.format_exc().rstrip(), 1)
