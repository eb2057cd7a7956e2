#!/usr/bin/python3
"""Small ONNX models for the command-line tests, with numpy references.

OUT/mlp/model.onnx            x[N,8] (symbolic N) -> Relu(x @ W + b) @ W2 -> y[N,4]
OUT/mlp/test_data_set_0/      input_0.pb (N=3), output_0.pb (numpy)
OUT/mlp/wrong_dtype/          input_0.pb of float64
OUT/mlp/wrong_shape/          input_0.pb of shape [3,9]
OUT/mlp/npy/                  input_0.npy (N=2), output_0.pb
OUT/mlp/bad_ref/              input_0.pb, output_0.pb perturbed in one element
OUT/mlp/npy_ref/              input_0.npy, output_0.npy (the reference as .npy)
OUT/mlp/by_name/              x.npy, y.npy: input and reference by the graph names
OUT/mlp/both/                 input_0.pb and input_0.npy (different data; output_0.pb
                              is that of the .pb), and an extra input_1.pb
OUT/mlp/fortran/              input_0.npy saved in Fortran order (an error)
OUT/sets/model.onnx           the mlp, with test_data_set_0 and _1 of different
                              inputs (N=3) and outputs
OUT/sets_bad/                 test_data_set_0 as sets/, test_data_set_1 whose
                              reference is set 0's output: passes only if set 0
                              were used for both micro-batches
OUT/sets_shapes/              test_data_set_0 (N=3) and test_data_set_1 (N=2): an error
OUT/dtypes/model.onnx         inputs of every .npy dtype, [2,3], each Cast to float and
                              summed -> y; dtypes/npy/: input_K.npy, output_0.npy
OUT/two_in/model.onnx         a[2,3] + b[3] -> (sum, Shape(sum)) two outputs, int64 second
OUT/fixed/model.onnx          the mlp with a fixed batch dimension: x[1,8] -> y[1,4]
                              (no test_data_set_0: --check has no default inputs)
OUT/fixed/wrong_{batch,rank,dtype}/  input_0.pb of float[2,8], float[8], double[1,8]:
                              each an error, on any number of ranks
OUT/dflt/model.onnx           graph inputs [b, x, c], b[2,3] and c[3] with initializers (inputs
                              with a default, keep_initializers_as_inputs style):
                              y = (Relu(x) + b) * c, Relu on stage 0, Add and Mul on stage 1
                              (__pipeline_stage); positions: x 0, b 1, c 2. Data dirs
                              (numpy references): none/ (x only: the defaults), by_pos/
                              (input_0.pb x, input_1.pb b), by_name/ (x.npy, c.npy),
                              pb_names/ (input_0..2.pb holding c, x, b: placed by name),
                              sets/ (test_data_set_0, _1 each of x and b), sets_mixed/
                              (b in set 0 only: an error), wrong/ (b.npy of float[3])
OUT/noshape/model.onnx        x (float, no shape: rank unknown) -> Relu -> Neg -> y;
                              test_data_set_0 of x[2,3] (numpy), rank3/ of x[2,1,3]
OUT/fp16/model.onnx           the mlp in float16 (input, weights, output): its 4
                              nodes read float16 tensors
OUT/infs/model.onnx           Relu(x[4]) -> y, x = [1, 2, inf, 5]; inf_ok/: y's
                              reference (numpy); finite_vs_inf/: reference [inf, 2,
                              inf, 5]; inf_sign/: [1, 2, -inf, 5] (numpy.allclose:
                              False for both)
OUT/held/model.onnx           x[1,8,10,10] -> Conv(Wa[16,8,3,3], pad 1) -> Relu ->
                              Conv(Wb[16,16,1,1]) -> y, and Wb * s[1] -> z: Wa is
                              read only by the Conv that holds it in its own layout
                              once loaded, Wb also by the Mul; test_data_set_0
                              (numpy)
OUT/conv/model.onnx           x[1,32,28,28] -> Conv(W[32,32,3,3], pad 1) -> y: a
                              convolution whose oneDNN scratchpad (Winograd on
                              AVX-512) grows with the threads
"""
import os, sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

out = sys.argv[1]
rng = np.random.default_rng(1)


def save(t, path, name):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(t, name).SerializeToString())


def mlp():
    W = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    W2 = rng.standard_normal((16, 4)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h0"], name="mm1"),
             helper.make_node("Add", ["h0", "b"], ["h1"], name="add"),
             helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
             helper.make_node("MatMul", ["h2", "W2"], ["y"], name="mm2")]
    g = helper.make_graph(nodes, "mlp",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
                          [numpy_helper.from_array(W, "W"), numpy_helper.from_array(b, "b"),
                           numpy_helper.from_array(W2, "W2")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    d = os.path.join(out, "mlp")
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    m0 = onnx.load(os.path.join(d, "model.onnx"))
    for v in list(m.graph.input) + list(m.graph.output):
        v.type.tensor_type.shape.dim[0].dim_value = 1
    os.makedirs(os.path.join(out, "fixed"), exist_ok=True)
    onnx.save(m, os.path.join(out, "fixed", "model.onnx"))
    for v in list(m.graph.input) + list(m.graph.output):
        v.type.tensor_type.elem_type = TensorProto.FLOAT16
    for i, t in enumerate(list(m.graph.initializer)):
        m.graph.initializer[i].CopyFrom(numpy_helper.from_array(
            numpy_helper.to_array(t).astype(np.float16), t.name))
    os.makedirs(os.path.join(out, "fp16"), exist_ok=True)
    onnx.save(m, os.path.join(out, "fp16", "model.onnx"))
    ref = lambda x: np.maximum(x @ W + b, 0) @ W2
    x = rng.standard_normal((3, 8)).astype(np.float32)
    save(x, f"{d}/test_data_set_0/input_0.pb", "x")
    save(ref(x), f"{d}/test_data_set_0/output_0.pb", "y")
    save(x.astype(np.float64), f"{d}/wrong_dtype/input_0.pb", "x")
    save(rng.standard_normal((3, 9)).astype(np.float32), f"{d}/wrong_shape/input_0.pb", "x")
    x2 = rng.standard_normal((2, 8)).astype(np.float32)
    os.makedirs(f"{d}/npy", exist_ok=True)
    np.save(f"{d}/npy/input_0.npy", x2)
    save(ref(x2), f"{d}/npy/output_0.pb", "y")
    os.makedirs(f"{d}/npy_ref", exist_ok=True)
    np.save(f"{d}/npy_ref/input_0.npy", x2)
    np.save(f"{d}/npy_ref/output_0.npy", ref(x2))
    os.makedirs(f"{d}/by_name", exist_ok=True)
    np.save(f"{d}/by_name/x.npy", x2)
    np.save(f"{d}/by_name/y.npy", ref(x2))
    save(x, f"{d}/both/input_0.pb", "x")
    np.save(f"{d}/both/input_0.npy", x2)
    save(ref(x), f"{d}/both/output_0.pb", "y")
    save(x, f"{d}/both/input_1.pb", "x")
    os.makedirs(f"{d}/fortran", exist_ok=True)
    np.save(f"{d}/fortran/input_0.npy", np.asfortranarray(x))
    s = os.path.join(out, "sets")
    os.makedirs(s, exist_ok=True)
    onnx.save(m0, os.path.join(s, "model.onnx"))
    xs = [rng.standard_normal((3, 8)).astype(np.float32) for _ in range(2)]
    for i, xi in enumerate(xs):
        save(xi, f"{s}/test_data_set_{i}/input_0.pb", "x")
        save(ref(xi), f"{s}/test_data_set_{i}/output_0.pb", "y")
        save(xi, f"{out}/sets_bad/test_data_set_{i}/input_0.pb", "x")
        save(ref(xs[0]), f"{out}/sets_bad/test_data_set_{i}/output_0.pb", "y")
    save(xs[0], f"{out}/sets_shapes/test_data_set_0/input_0.pb", "x")
    os.makedirs(f"{out}/sets_shapes/test_data_set_1", exist_ok=True)
    np.save(f"{out}/sets_shapes/test_data_set_1/input_0.npy", x2)
    y = ref(x)
    y[1, 2] += 0.5
    save(x, f"{d}/bad_ref/input_0.pb", "x")
    save(y, f"{d}/bad_ref/output_0.pb", "y")


def two_in():
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Shape", ["s"], ["shape"])]
    g = helper.make_graph(nodes, "two_in",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
                           helper.make_tensor_value_info("b", TensorProto.FLOAT, [3])],
                          [helper.make_tensor_value_info("s", TensorProto.FLOAT, [2, 3]),
                           helper.make_tensor_value_info("shape", TensorProto.INT64, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    d = os.path.join(out, "two_in")
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    # files named for the inputs, written in reverse order: matched by name
    save(b, f"{d}/test_data_set_0/input_0.pb", "b")
    save(a, f"{d}/test_data_set_0/input_1.pb", "a")
    save(a + b, f"{d}/test_data_set_0/output_0.pb", "s")
    save(np.array([2, 3], np.int64), f"{d}/test_data_set_0/output_1.pb", "shape")


DTYPES = [(np.float32, TensorProto.FLOAT), (np.float64, TensorProto.DOUBLE), (np.float16, TensorProto.FLOAT16),
          (np.int64, TensorProto.INT64), (np.int32, TensorProto.INT32), (np.int16, TensorProto.INT16),
          (np.int8, TensorProto.INT8), (np.uint8, TensorProto.UINT8), (np.uint16, TensorProto.UINT16),
          (np.uint32, TensorProto.UINT32), (np.bool_, TensorProto.BOOL)]


def dtypes():
    ins, nodes, xs = [], [], []
    for i, (npt, onnxt) in enumerate(DTYPES):
        ins.append(helper.make_tensor_value_info(f"x{i}", onnxt, [2, 3]))
        nodes.append(helper.make_node("Cast", [f"x{i}"], [f"c{i}"], to=TensorProto.FLOAT))
        if npt == np.bool_:
            xs.append(rng.integers(0, 2, (2, 3)).astype(np.bool_))
        elif np.issubdtype(npt, np.integer):
            xs.append(rng.integers(0, 100, (2, 3)).astype(npt))
        else:
            xs.append(rng.standard_normal((2, 3)).astype(npt))
    nodes.append(helper.make_node("Sum", [f"c{i}" for i in range(len(DTYPES))], ["y"]))
    g = helper.make_graph(nodes, "dtypes", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    d = os.path.join(out, "dtypes")
    os.makedirs(f"{d}/npy", exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for i, x in enumerate(xs):
        np.save(f"{d}/npy/input_{i}.npy", x)
    np.save(f"{d}/npy/output_0.npy", sum(x.astype(np.float32) for x in xs))


def held():
    wa = rng.standard_normal((16, 8, 3, 3)).astype(np.float32) * 0.2
    wb = rng.standard_normal((16, 16, 1, 1)).astype(np.float32) * 0.2
    nodes = [helper.make_node("Conv", ["x", "Wa"], ["h0"], name="conv_a", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["h0"], ["h1"], name="relu"),
             helper.make_node("Conv", ["h1", "Wb"], ["y"], name="conv_b"),
             helper.make_node("Mul", ["Wb", "s"], ["z"], name="scale_wb")]
    g = helper.make_graph(nodes, "held",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 10, 10]),
                           helper.make_tensor_value_info("s", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 10, 10]),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT, [16, 16, 1, 1])],
                          [numpy_helper.from_array(wa, "Wa"), numpy_helper.from_array(wb, "Wb")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    d = os.path.join(out, "held")
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    x = rng.standard_normal((1, 8, 10, 10)).astype(np.float32)
    win = np.lib.stride_tricks.sliding_window_view(np.pad(x[0], ((0, 0), (1, 1), (1, 1))),
                                                   (3, 3), axis=(1, 2))  # [8,10,10,3,3]
    h = np.maximum(np.einsum("ocij,chwij->ohw", wa.astype(np.float64), win), 0)
    y = np.einsum("oc,chw->ohw", wb[:, :, 0, 0].astype(np.float64), h)[None].astype(np.float32)
    s = np.array([1.5], np.float32)
    save(x, f"{d}/test_data_set_0/input_0.pb", "x")
    save(s, f"{d}/test_data_set_0/input_1.pb", "s")
    save(y, f"{d}/test_data_set_0/output_0.pb", "y")
    save(wb * s[0], f"{d}/test_data_set_0/output_1.pb", "z")


def infs():
    x = np.array([1, 2, np.inf, 5], np.float32)
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "infs",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    d = os.path.join(out, "infs")
    os.makedirs(d, exist_ok=True)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/model.onnx")
    refs = {"inf_ok": np.maximum(x, 0), "finite_vs_inf": np.array([np.inf, 2, np.inf, 5], np.float32),
            "inf_sign": np.array([1, 2, -np.inf, 5], np.float32)}
    for sub, y in refs.items():
        save(x, f"{d}/{sub}/input_0.pb", "x")
        save(y, f"{d}/{sub}/output_0.pb", "y")


def bad_inputs():
    d = os.path.join(out, "fixed")
    save(rng.standard_normal((2, 8)).astype(np.float32), f"{d}/wrong_batch/input_0.pb", "x")
    save(rng.standard_normal(8).astype(np.float32), f"{d}/wrong_rank/input_0.pb", "x")
    save(rng.standard_normal((1, 8)), f"{d}/wrong_dtype/input_0.pb", "x")


def noshape():
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["y"])]
    g = helper.make_graph(nodes, "noshape", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    d = os.path.join(out, "noshape")
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for sub, shape in (("test_data_set_0", (2, 3)), ("rank3", (2, 1, 3))):
        x = rng.standard_normal(shape).astype(np.float32)
        save(x, f"{d}/{sub}/input_0.pb", "x")
        save(-np.maximum(x, 0), f"{d}/{sub}/output_0.pb", "y")


def dflt():
    B, C = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    def N(op, ins, outs, st):
        n = helper.make_node(op, ins, outs)
        n.attribute.extend([helper.make_attribute("__pipeline_stage", st)])
        return n
    g = helper.make_graph([N("Relu", ["x"], ["r"], 0), N("Add", ["r", "b"], ["s"], 1), N("Mul", ["s", "c"], ["y"], 1)],
                          "dflt", [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 3]),
                                   helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                                   helper.make_tensor_value_info("c", TensorProto.FLOAT, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                          [numpy_helper.from_array(B, "b"), numpy_helper.from_array(C, "c")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 6
    d = os.path.join(out, "dflt")
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    new = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    ref = lambda x, b=B, c=C: (np.maximum(x, 0) + b) * c
    x = new(2, 3)
    save(x, f"{d}/none/input_0.pb", "x")
    save(ref(x), f"{d}/none/output_0.pb", "y")
    b = new(2, 3)
    save(x, f"{d}/by_pos/input_0.pb", "x")
    save(b, f"{d}/by_pos/input_1.pb", "b")
    save(ref(x, b), f"{d}/by_pos/output_0.pb", "y")
    c = new(3)
    os.makedirs(f"{d}/by_name", exist_ok=True)
    np.save(f"{d}/by_name/x.npy", x)
    np.save(f"{d}/by_name/c.npy", c)
    np.save(f"{d}/by_name/y.npy", ref(x, c=c))
    save(c, f"{d}/pb_names/input_0.pb", "c")
    save(x, f"{d}/pb_names/input_1.pb", "x")
    save(b, f"{d}/pb_names/input_2.pb", "b")
    save(ref(x, b, c), f"{d}/pb_names/output_0.pb", "y")
    for i in range(2):
        xi, bi = new(2, 3), new(2, 3)
        save(xi, f"{d}/sets/test_data_set_{i}/input_0.pb", "x")
        save(bi, f"{d}/sets/test_data_set_{i}/input_1.pb", "b")
        save(ref(xi, bi), f"{d}/sets/test_data_set_{i}/output_0.pb", "y")
        save(xi, f"{d}/sets_mixed/test_data_set_{i}/input_0.pb", "x")
        save(ref(xi), f"{d}/sets_mixed/test_data_set_{i}/output_0.pb", "y")
    save(b, f"{d}/sets_mixed/test_data_set_0/input_1.pb", "b")
    save(x, f"{d}/wrong/input_0.pb", "x")
    np.save(f"{d}/wrong/b.npy", c)


def conv():
    w = (rng.standard_normal((32, 32, 3, 3)) * 0.1).astype(np.float32)
    g = helper.make_graph([helper.make_node("Conv", ["x", "W"], ["y"], pads=[1, 1, 1, 1])], "conv",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 28, 28])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 28, 28])],
                          [numpy_helper.from_array(w, "W")])
    d = os.path.join(out, "conv")
    os.makedirs(d, exist_ok=True)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(d, "model.onnx"))


mlp()
infs()
two_in()
dtypes()
held()
bad_inputs()
noshape()
dflt()
conv()
