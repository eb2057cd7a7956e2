#!/usr/bin/env python3
"""Models and tensor files for tests/unit/test_loader.c, written with
onnx.helper / numpy (the independent reference).

    make_loader_models.py OUTDIR           write everything into OUTDIR
    make_loader_models.py --verify OUTDIR  check the files the C test wrote
                                           into OUTDIR/out against numpy

Expected tensor bytes are written as OUTDIR/expect/NAME.bin (numpy tobytes,
little-endian C order), so the C test compares without any decoding of its own.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import set_external_data


def expect(out, name, arr):
    with open(os.path.join(out, "expect", name + ".bin"), "wb") as f:
        f.write(np.ascontiguousarray(arr).tobytes())


def model(graph, opset=13, extra_opsets=(), ir_version=8):
    imports = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    m = helper.make_model(graph, opset_imports=imports)
    m.ir_version = ir_version
    return m


def save(m, path):
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def identity_graph(name, inits, x_shape=(2, 3)):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(x_shape))
    node = helper.make_node("Identity", ["x"], ["y"], name="id")
    return helper.make_graph([node], name, [x], [y], initializer=inits)


def write_attrs(out):
    """Every attribute type on one node of a custom domain; symbolic dims."""
    sub = helper.make_graph(
        [helper.make_node("Identity", ["a"], ["b"])], "sub",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])])
    t = helper.make_tensor("t", TensorProto.INT64, [2, 2], [1, 2, 3, -4])
    t1 = helper.make_tensor("t1", TensorProto.FLOAT, [2], [1.0, 2.5])
    t2 = numpy_helper.from_array(np.array([7], dtype=np.int32), "t2")
    node = helper.make_node(
        "AllAttrs", ["x"], ["h"], name="all_attrs", domain="com.test",
        f=1.5, i=-7, s="hello", t=t, g=sub,
        floats=[0.5, -2.25], ints=[1, -2, 3], strings=[b"ab", b"", b"cde"],
        tensors=[t1, t2], graphs=[sub, sub])
    unnamed = helper.make_node("Relu", ["h"], ["y"])  # no name: default given
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, None])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3, 5])
    g = helper.make_graph([node, unnamed], "attrs_graph", [x], [y])
    save(model(g, opset=13, extra_opsets=[("com.test", 2)]), os.path.join(out, "attrs.onnx"))


def initializer_cases(rng):
    """(name, array, raw) for each dtype and storage form."""
    f32 = rng.standard_normal((2, 3)).astype(np.float32)
    cases = [
        ("f32_raw", f32, True),
        ("f32_typed", (f32 * 3).astype(np.float32), False),
        ("f64_typed", rng.standard_normal((3,)), False),
        ("i64_raw", np.array([[1, -2], [1 << 40, -(1 << 50)]], dtype=np.int64), True),
        ("i64_typed", np.array([5, -6, 7], dtype=np.int64), False),
        ("i32_typed", np.array([1, -2, 2147483647], dtype=np.int32), False),
        ("i16_typed", np.array([-32768, 5], dtype=np.int16), False),
        ("u16_typed", np.array([65535, 1], dtype=np.uint16), False),
        ("i8_typed", np.array([-128, 127, 0, -1], dtype=np.int8), False),
        ("u8_typed", np.array([[0, 255], [17, 3]], dtype=np.uint8), False),
        ("bool_typed", np.array([True, False, True]), False),
        ("u32_typed", np.array([4294967295, 3], dtype=np.uint32), False),
        ("u64_typed", np.array([18446744073709551615, 2], dtype=np.uint64), False),
        ("f16_typed", np.array([1.0, -0.5, 65504.0, 0.1], dtype=np.float16), False),
        ("f16_raw", np.array([[2.0, -3.25]], dtype=np.float16), True),
        ("scalar", np.array(3.5, dtype=np.float32), True),
        ("empty", np.zeros((0, 3), dtype=np.float32), True),
    ]
    return cases


def write_inits(out):
    rng = np.random.default_rng(7)
    inits = []
    for name, arr, raw in initializer_cases(rng):
        if raw:
            tp = numpy_helper.from_array(arr, name)
        else:
            dt = onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[arr.dtype]
            tp = helper.make_tensor(name, dt, arr.shape, arr.flatten().tolist())
        inits.append(tp)
        expect(out, name, arr)
    # bfloat16 in int32_data: values exactly representable, bits = f32 >> 16
    bf = np.array([1.0, -2.5, 0.15625], dtype=np.float32)
    bits = (bf.view(np.uint32) >> 16).astype(np.uint16)
    tp = TensorProto()
    tp.name = "bf16_typed"
    tp.data_type = TensorProto.BFLOAT16
    tp.dims.extend([3])
    tp.int32_data.extend(int(b) for b in bits)
    inits.append(tp)
    expect(out, "bf16_typed", bits)
    # IR < 4 style: one initializer also listed as a graph input
    g = identity_graph("inits_graph", inits)
    g.input.append(helper.make_tensor_value_info("f32_raw", TensorProto.FLOAT, [2, 3]))
    save(model(g, opset=17, ir_version=3), os.path.join(out, "inits.onnx"))


def write_external(out):
    """Initializers in weights.bin at aligned and misaligned offsets."""
    rng = np.random.default_rng(11)
    w1 = rng.standard_normal((4, 5)).astype(np.float32)     # offset 0
    w2 = np.array([1, -2, 3], dtype=np.int8)                 # offset 80
    w3 = rng.standard_normal((3,)).astype(np.float32)        # offset 83 (misaligned)
    w4 = rng.standard_normal((2, 2))                         # offset 4096 + 16 (mapped)
    w5 = np.arange(6, dtype=np.int64).reshape(2, 3)          # sub/more.bin, offset 0
    blob = bytearray(4096 + 16 + w4.nbytes + 8)
    places = [("w1", w1, 0), ("w2", w2, 80), ("w3", w3, 83), ("w4", w4, 4096 + 16)]
    for _, arr, off in places:
        blob[off:off + arr.nbytes] = arr.tobytes()
    with open(os.path.join(out, "weights.bin"), "wb") as f:
        f.write(blob)
    os.makedirs(os.path.join(out, "sub"), exist_ok=True)
    with open(os.path.join(out, "sub", "more.bin"), "wb") as f:
        f.write(w5.tobytes())
    inits = []
    for name, arr, off in places + [("w5", w5, 0)]:
        tp = numpy_helper.from_array(arr, name)
        loc = "sub/more.bin" if name == "w5" else "weights.bin"
        set_external_data(tp, loc, offset=off, length=arr.nbytes)
        tp.ClearField("raw_data")
        tp.data_location = TensorProto.EXTERNAL
        inits.append(tp)
        expect(out, name, arr)
    save(model(identity_graph("ext_graph", inits)), os.path.join(out, "ext.onnx"))


def ext_model(path, location, arr, offset=0, length=None):
    tp = numpy_helper.from_array(arr, "w")
    set_external_data(tp, location, offset=offset, length=arr.nbytes if length is None else length)
    tp.ClearField("raw_data")
    tp.data_location = TensorProto.EXTERNAL
    save(model(identity_graph("ext_bad", [tp])), path)


def write_errors(out):
    err = os.path.join(out, "errors")
    os.makedirs(err, exist_ok=True)
    good = model(identity_graph("g", [numpy_helper.from_array(np.ones((2, 2), np.float32), "w")]))
    data = good.SerializeToString()
    with open(os.path.join(err, "garbage.onnx"), "wb") as f:
        f.write(b"this is a text file, not an ONNX model\n" * 4)
    with open(os.path.join(err, "random.onnx"), "wb") as f:
        f.write(np.random.default_rng(3).integers(0, 256, 333, dtype=np.uint8).tobytes())
    with open(os.path.join(err, "truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])
    with open(os.path.join(err, "empty.onnx"), "wb") as f:
        pass
    nog = onnx.ModelProto()
    nog.ir_version = 8
    nog.opset_import.extend([helper.make_opsetid("", 13)])
    save(nog, os.path.join(err, "nograph.onnx"))
    for v in (5, 99):
        save(model(identity_graph("g", []), opset=v), os.path.join(err, "opset%d.onnx" % v))
    noop = model(identity_graph("g", []))
    del noop.opset_import[:]
    noop.opset_import.extend([helper.make_opsetid("com.other", 1)])
    save(noop, os.path.join(err, "noopset.onnx"))

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    conv = helper.make_node("Conv", ["x", "conv1.weight", "conv1.bias"], ["y"], name="conv1")
    b = numpy_helper.from_array(np.zeros(1, np.float32), "conv1.bias")
    save(model(helper.make_graph([conv], "g", [x], [y], initializer=[b])),
         os.path.join(err, "missing_init.onnx"))
    add = helper.make_node("Add", ["x", "hiden_state"], ["y"], name="add0")
    save(model(helper.make_graph([add], "g", [x], [y])), os.path.join(err, "dangling.onnx"))
    n1 = helper.make_node("Add", ["x", "c"], ["a"], name="loop_a")
    n2 = helper.make_node("Relu", ["a"], ["c"], name="loop_b")
    n3 = helper.make_node("Relu", ["a"], ["y"], name="out")
    save(model(helper.make_graph([n1, n2, n3], "g", [x], [y])), os.path.join(err, "cycle.onnx"))

    bad = numpy_helper.from_array(np.ones((2, 3), np.float32), "w_raw")
    bad.raw_data = bad.raw_data[:-4]
    save(model(identity_graph("g", [bad])), os.path.join(err, "raw_size.onnx"))
    bad = helper.make_tensor("w_typed", TensorProto.FLOAT, [2, 2], [1.0, 2.0, 3.0, 4.0])
    del bad.float_data[-1]
    save(model(identity_graph("g", [bad])), os.path.join(err, "typed_count.onnx"))
    strt = helper.make_tensor("w_str", TensorProto.STRING, [1], [b"a"])
    save(model(identity_graph("g", [strt])), os.path.join(err, "string_init.onnx"))

    arr = np.arange(20, dtype=np.float32)
    with open(os.path.join(out, "outside.bin"), "wb") as f:  # exists, but outside err/
        f.write(arr.tobytes())
    ext_model(os.path.join(err, "ext_dotdot.onnx"), "../outside.bin", arr)
    ext_model(os.path.join(err, "ext_abs.onnx"), os.path.abspath(os.path.join(out, "outside.bin")), arr)
    link = os.path.join(err, "link.bin")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.abspath(os.path.join(out, "outside.bin")), link)
    ext_model(os.path.join(err, "ext_symlink.onnx"), "link.bin", arr)
    with open(os.path.join(err, "short.bin"), "wb") as f:
        f.write(arr.tobytes()[:40])
    ext_model(os.path.join(err, "ext_short.onnx"), "short.bin", arr)
    with open(os.path.join(err, "full.bin"), "wb") as f:
        f.write(arr.tobytes())
    ext_model(os.path.join(err, "ext_offset.onnx"), "full.bin", arr, offset=8)
    ext_model(os.path.join(err, "ext_length.onnx"), "full.bin", arr, length=40)
    ext_model(os.path.join(err, "ext_missing.onnx"), "nothere.bin", arr)


def write_tensors(out):
    tdir = os.path.join(out, "tensors")
    os.makedirs(tdir, exist_ok=True)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((1, 3, 2, 2)).astype(np.float32)
    with open(os.path.join(tdir, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(a, "pixels").SerializeToString())
    expect(out, "tp_f32", a)
    ids = np.array([[101, 2023, -1]], dtype=np.int64)
    with open(os.path.join(tdir, "input_1.pb"), "wb") as f:
        f.write(helper.make_tensor("ids", TensorProto.INT64, ids.shape, ids.flatten().tolist())
                .SerializeToString())
    expect(out, "tp_i64", ids)
    with open(os.path.join(tdir, "scalar.pb"), "wb") as f:
        f.write(numpy_helper.from_array(np.array(-2.0), "s").SerializeToString())
    expect(out, "tp_scalar", np.array(-2.0))
    with open(os.path.join(tdir, "garbage.pb"), "wb") as f:
        f.write(b"\xff\xff\xff\xff not a tensor")
    bad = numpy_helper.from_array(a, "short")
    bad.raw_data = bad.raw_data[:8]
    with open(os.path.join(tdir, "short.pb"), "wb") as f:
        f.write(bad.SerializeToString())

    ndir = os.path.join(out, "npy")
    os.makedirs(ndir, exist_ok=True)
    arrays = npy_arrays()
    for name, arr in arrays.items():
        np.save(os.path.join(ndir, name + ".npy"), arr)
        expect(out, "npy_" + name, arr)
    with open(os.path.join(ndir, "v2.npy"), "wb") as f:
        np.lib.format.write_array(f, arrays["f4"], version=(2, 0))
    np.save(os.path.join(ndir, "fortran.npy"), np.asfortranarray(arrays["f4"]))
    np.save(os.path.join(ndir, "bigendian.npy"), arrays["f4"].astype(">f4"))
    np.save(os.path.join(ndir, "complex.npy"), np.zeros(2, np.complex64))
    with open(os.path.join(ndir, "f4.npy"), "rb") as f:
        blob = f.read()
    with open(os.path.join(ndir, "truncated.npy"), "wb") as f:
        f.write(blob[:-3])


def npy_arrays():
    rng = np.random.default_rng(9)
    return {
        "f4": rng.standard_normal((2, 3, 4)).astype(np.float32),
        "f8": rng.standard_normal((5,)),
        "i8": np.array([[1, -(1 << 60)], [3, 4]], dtype=np.int64),
        "i4": np.array([7, -8, 9], dtype=np.int32),
        "b1": np.array([[True, False, True]]),
        "u1": np.array([0, 200, 255], dtype=np.uint8),
        "i1": np.array([-128, 5], dtype=np.int8),
        "f2": np.array([0.5, -1.25, 1000.0], dtype=np.float16),
        "scalar": np.array(4.25, dtype=np.float32),
        "empty": np.zeros((0, 2), dtype=np.float32),
    }


def verify(out):
    """Files written by the C test: out/NAME.npy and out/NAME.pb must equal
    the numpy arrays of npy_arrays()."""
    odir = os.path.join(out, "out")
    bad = 0
    for name, want in npy_arrays().items():
        got = np.load(os.path.join(odir, name + ".npy"))
        tp = TensorProto()
        with open(os.path.join(odir, name + ".pb"), "rb") as f:
            tp.ParseFromString(f.read())
        got_pb = numpy_helper.to_array(tp)
        for what, g in (("npy", got), ("pb", got_pb)):
            if g.dtype != want.dtype or g.shape != want.shape or not np.array_equal(g, want):
                print("%s %s: got %s %s %r, want %s %s %r" % (name, what, g.dtype, g.shape, g,
                                                          want.dtype, want.shape, want))
                bad += 1
        if tp.name != "t_" + name:
            print("%s pb: name %r, want %r" % (name, tp.name, "t_" + name))
            bad += 1
    return 1 if bad else 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--verify":
        sys.exit(verify(sys.argv[2]))
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "expect"), exist_ok=True)
    write_attrs(out)
    write_inits(out)
    write_external(out)
    write_errors(out)
    write_tensors(out)


if __name__ == "__main__":
    main()
