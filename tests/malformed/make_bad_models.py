#!/usr/bin/env python3
"""One bad model (or bad input) per case of issue 2, point 7, for run.sh.

    make_bad_models.py OUTDIR

Each case gets its own folder OUTDIR/CASE/ holding model.onnx (and, where
the case is about inputs, inputs/input_0.pb), so external-data layouts do
not mix. The missing-file case has no folder at all.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import set_external_data

X = helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, [1, 3])
Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)


def model(nodes, inits=(), opset=13, inputs=(X,), outputs=(Y,)):
    g = helper.make_graph(nodes, "bad", list(inputs), list(outputs), initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def relu():
    return [helper.make_node("Relu", ["pixel_values"], ["y"], name="relu0")]


def case(out, name):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    return d


def save(d, m, fname="model.onnx"):
    with open(os.path.join(d, fname), "wb") as f:
        f.write(m.SerializeToString())


def save_input(d, arr):
    os.makedirs(os.path.join(d, "inputs"), exist_ok=True)
    with open(os.path.join(d, "inputs", "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(arr, "pixel_values").SerializeToString())


def ext_model(d, location, arr):
    w = numpy_helper.from_array(arr, "ext_weight")
    set_external_data(w, location, offset=0, length=arr.nbytes)
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    add = helper.make_node("Add", ["pixel_values", "ext_weight"], ["y"], name="add_w")
    save(d, model([add], [w]))


def main():
    out = sys.argv[1]
    good = model(relu(), [numpy_helper.from_array(np.ones((4, 4), np.float32), "w")])
    data = good.SerializeToString()

    with open(os.path.join(case(out, "not_protobuf"), "model.onnx"), "wb") as f:
        f.write(b"<html><body>404 Not Found</body></html>\n")
    with open(os.path.join(case(out, "truncated"), "model.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])

    nog = good.__class__()
    nog.ir_version = 8
    nog.opset_import.extend([helper.make_opsetid("", 13)])
    save(case(out, "no_graph"), nog)

    # two unsupported nodes: both must be listed
    det = helper.make_node("Det", ["pixel_values"], ["d"], name="det_node")
    foo = helper.make_node("FooBarOp", ["d"], ["y"], name="foo_node")
    save(case(out, "unsupported_op"), model([det, foo]))

    save(case(out, "opset_5"), model(relu(), opset=5))
    save(case(out, "opset_99"), model(relu(), opset=99))

    x4 = helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, [1, 1, 4, 4])
    conv = helper.make_node("Conv", ["pixel_values", "conv1.weight", "conv1.bias"], ["y"], name="conv1")
    bias = numpy_helper.from_array(np.zeros(1, np.float32), "conv1.bias")
    save(case(out, "missing_initializer"), model([conv], [bias], inputs=[x4]))

    add = helper.make_node("Add", ["pixel_values", "hiden_state"], ["y"], name="add0")
    save(case(out, "dangling_input"), model([add]))
    # a newline in a name (found by tests/fuzz/fuzz_model): the message
    # must stay one line
    add = helper.make_node("Add", ["pixel_values", "hidden\nstate"], ["y"], name="add0")
    save(case(out, "newline_in_name"), model([add]))

    # [1, 3] x [5, 4]: found by shape inference, which must name the file
    mm = helper.make_node("MatMul", ["pixel_values", "w5x4"], ["y"], name="mm_bad")
    save(case(out, "inner_dims"), model([mm], [numpy_helper.from_array(np.ones((5, 4), np.float32), "w5x4")]))

    # a stride of 2^31 (valid int64 in ONNX): oneDNN's descriptors refuse it
    pool = helper.make_node("MaxPool", ["pixel_values"], ["y"], name="pool_far", kernel_shape=[3, 3],
                            strides=[1, 1 << 31])
    save(case(out, "stride_2_31"), model([pool], inputs=[x4]))

    # a second output MatMul does not have (found by tests/fuzz/fuzz_model)
    mm2 = helper.make_node("MatMul", ["pixel_values", "w3x2"], ["y", "mm_extra"], name="mm_two")
    save(case(out, "extra_output"), model([mm2], [numpy_helper.from_array(np.ones((3, 2), np.float32), "w3x2")]))

    # shapes from the fuzzer (tests/fuzz/fuzz_model): a constant of 2^63
    # elements, and one of 64 GiB, which is not folded on the host (the
    # stage has it, and the IPU's memory refuses it)
    for name, dims in (("huge_shape", [1 << 21] * 3), ("huge_fold", [1 << 16, 1 << 16, 4])):
        shape = numpy_helper.from_array(np.array(dims, np.int64), "big_shape")
        cos = helper.make_node("ConstantOfShape", ["big_shape"], ["big"], name="fill")
        save(case(out, name), model(relu() + [cos], [shape], outputs=[Y, helper.make_tensor_value_info(
            "big", TensorProto.FLOAT, None)]))

    n1 = helper.make_node("Add", ["pixel_values", "c"], ["a"], name="loop_a")
    n2 = helper.make_node("Relu", ["a"], ["c"], name="loop_b")
    n3 = helper.make_node("Relu", ["a"], ["y"], name="out")
    save(case(out, "cyclic_graph"), model([n1, n2, n3]))

    # pipeline annotations of a type PopART does not read (it reads INT)
    for name, attr, value in (("stage_float", "__pipeline_stage", 1.0),
                              ("ipu_number_ints", "__ipu_number", [0, 1])):
        r = relu()
        r[0].attribute.extend([helper.make_attribute(attr, value)])
        save(case(out, name), model(r))

    d = case(out, "input_wrong_dtype")
    save(d, model(relu()))
    save_input(d, np.array([[1, 2, 3]], dtype=np.int64))
    d = case(out, "input_wrong_shape")
    save(d, model(relu()))
    save_input(d, np.zeros((2, 5), np.float32))

    w = np.ones((1, 3), np.float32)
    with open(os.path.join(out, "secret.bin"), "wb") as f:  # exists, outside each case folder
        f.write(w.tobytes())
    ext_model(case(out, "external_dotdot"), "../secret.bin", w)
    ext_model(case(out, "external_absolute"), os.path.abspath(os.path.join(out, "secret.bin")), w)
    d = case(out, "external_symlink")
    os.symlink(os.path.abspath(os.path.join(out, "secret.bin")), os.path.join(d, "weights.bin"))
    ext_model(d, "weights.bin", w)
    d = case(out, "external_short")
    with open(os.path.join(d, "weights.bin"), "wb") as f:
        f.write(w.tobytes()[:6])
    ext_model(d, "weights.bin", w)

    # a 256 KiB weight inside the file: the loader leaves large raw_data out
    # of protobuf-c's parse (src/graph/rawskip.c) and checks it itself
    big = numpy_helper.from_array(np.ones((256, 256), np.float32), "big_weight")
    big_data = model(relu(), [big]).SerializeToString()
    raw_at = big_data.index(b"\x4a\x80\x80\x10")  # raw_data (field 9), 262144 bytes
    with open(os.path.join(case(out, "big_truncated"), "model.onnx"), "wb") as f:
        f.write(big_data[: raw_at + 100000])  # ends inside the weight's bytes
    with open(os.path.join(case(out, "big_damaged"), "model.onnx"), "wb") as f:
        # its length says 2 MiB - 1: past the end of the graph that holds it
        f.write(big_data[: raw_at + 1] + b"\xff\xff\x7f" + big_data[raw_at + 4:])
    big.dims[0] = 255  # 256 x 256 floats of raw_data for 255 x 256
    save(case(out, "big_wrong_size"), model(relu(), [big]))

    # raw_data given twice in one tensor, 256 KiB then 16 B: protobuf keeps
    # the last, which does not fit its dims (written by hand: concatenated
    # protobuf records merge)
    def varint(v):
        b = b""
        while True:
            b += bytes([(v & 0x7F) | (0x80 if v > 0x7F else 0)])
            v >>= 7
            if not v:
                return b
    def record(field, payload):
        return varint(field << 3 | 2) + varint(len(payload)) + payload
    twice = numpy_helper.from_array(np.ones((256, 256), np.float32), "twice_weight")
    tbytes = twice.SerializeToString() + record(9, bytes(16))
    m = model(relu())
    gbytes = m.graph.SerializeToString() + record(5, tbytes)
    m.ClearField("graph")
    with open(os.path.join(case(out, "big_raw_twice"), "model.onnx"), "wb") as f:
        f.write(m.SerializeToString() + record(7, gbytes))
    fused_dw(out)


def fused_dw(out):
    """A 1x1 Conv carrying the private post-op attributes graph/fuse.c
    writes (graph/fuse.h), as a model file might: a depthwise post-op
    (kind 14) whose bias slot is left out, one after a per-channel Mul
    (kind 11), and one after a 3x3 Conv."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])
    rng = np.random.default_rng(0)
    w = lambda name, *s: numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), name)
    W1, W3, B = w("w1x1", 16, 16, 1, 1), w("w3x3", 16, 16, 3, 3), w("b", 16)
    Wd, S = w("w_dw", 16, 1, 3, 3), w("scale", 1, 16, 1, 1)
    def conv(name, weights, kinds, alpha, extra, **attrs):
        n = helper.make_node("Conv", ["x", weights.name, "b"] + extra, ["y"], name="fused", **attrs)
        n.attribute.extend([helper.make_attribute("ipu.fused_ops", kinds),
                            helper.make_attribute("ipu.fused_alpha", alpha),
                            helper.make_attribute("ipu.fused_beta", [0.0] * len(kinds))])
        save(case(out, name), model([n], [W1, W3, B, Wd, S], inputs=(x,)))
    conv("fused_dw_no_bias_slot", W1, [14], [1.0], [Wd.name])
    conv("fused_dw_after_mul", W1, [11, 14], [0.0, 2.0], [S.name, Wd.name, ""])
    conv("fused_dw_after_3x3", W3, [14], [1.0], [Wd.name, ""], pads=[1, 1, 1, 1])


if __name__ == "__main__":
    main()
