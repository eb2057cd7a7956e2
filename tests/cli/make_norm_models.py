#!/usr/bin/python3
"""Models of normalisations with PyTorch references.

A model of BatchNormalization nodes after Conv, Gemm and Concat, with
PyTorch references (torch.nn.functional in inference mode), for the
BatchNormalization folding (graph/fold_bn.h) and the batch normalization
with a fused Relu.

OUT/bn/model.onnx         x[2,3,8,8] ->
  y1 = Relu(BN(Conv(x, W1, b1)))            folded into conv1, Relu fused
  y2 = BN(Conv(x, W2), group 3)             folded into conv2 (no bias)
  y3 = Relu(BN(Concat(x, x)))               not foldable: BN with the Relu fused
  y4 = Conv(x, W4), y5 = BN(y4)             not foldable: y4 is an output
  y6 = BN(Gemm(Flatten(x), B6, C6, transB)) folded into gemm6
  y7 = BN(Gemm(Flatten(x), B7, alpha 0.5))  folded into gemm7 (no C)
OUT/bn/test_data_set_0/   input_0.pb, output_0.pb .. output_6.pb

OUT/norms/model.onnx      (opset 17) x[2,3,4,5] ->
  n1 = InstanceNormalization(x)             (N * C planes of 4 x 5)
  n2 = InstanceNormalization(Reshape(x, [2, 3, 20]))
  n3, mean, inv = LayerNormalization(x, Scale[5], axis -2)  (Scale broadcast to [4, 5], no B)
  n4 = LayerNormalization(x, Scale, B, axis 1)
  n5 = Softmax(x, axis 1), n6 = LogSoftmax(x, axis 2)        (along one axis, inner > 1)
OUT/norms/test_data_set_0/
OUT/sm11/model.onnx       (opset 11) Softmax(x, axis 1), LogSoftmax(x, axis 2): the
                          input coerced to 2-D at axis
"""
import os, sys
import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import helper, numpy_helper, TensorProto

out = sys.argv[1]
rng = np.random.default_rng(7)
inits, nodes = [], []


def const(name, a):
    a = np.asarray(a, dtype=np.float32)
    inits.append(numpy_helper.from_array(a, name))
    return torch.from_numpy(a)


def bn_params(name, c):
    """scale, B, mean, var of a BN of c channels, as torch tensors"""
    return [const(f"{name}_{k}", v) for k, v in
            (("s", rng.uniform(0.5, 2, c)), ("b", rng.standard_normal(c)),
             ("m", rng.standard_normal(c)), ("v", rng.uniform(0.2, 3, c)))]


def bn(name, x, c, eps, t):
    s, b, m, v = bn_params(name, c)
    nodes.append(helper.make_node("BatchNormalization", [x] + [f"{name}_{k}" for k in "sbmv"],
                                  [name + "_y"], name=name, epsilon=eps))
    return F.batch_norm(t, m, v, s, b, training=False, eps=eps)


x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
tx = torch.from_numpy(x)
refs = {}
# conv1 + bn1 + relu1
W1, b1 = const("W1", rng.standard_normal((4, 3, 3, 3))), const("b1", rng.standard_normal(4))
nodes.append(helper.make_node("Conv", ["x", "W1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]))
t = bn("bn1", "c1", 4, 1e-5, F.conv2d(tx, W1, b1, padding=1))
nodes.append(helper.make_node("Relu", ["bn1_y"], ["y1"], name="relu1"))
refs["y1"] = torch.relu(t)
# conv2 (grouped, no bias) + bn2
W2 = const("W2", rng.standard_normal((6, 1, 3, 3)))
nodes.append(helper.make_node("Conv", ["x", "W2"], ["c2"], name="conv2", group=3, strides=[2, 2]))
refs["y2"] = bn("bn2", "c2", 6, 1e-3, F.conv2d(tx, W2, groups=3, stride=2))
nodes.append(helper.make_node("Identity", ["bn2_y"], ["y2"], name="id2"))
# concat + bn3 + relu3
nodes.append(helper.make_node("Concat", ["x", "x"], ["cat"], name="cat", axis=1))
t = bn("bn3", "cat", 6, 1e-5, torch.cat([tx, tx], 1))
nodes.append(helper.make_node("Relu", ["bn3_y"], ["y3"], name="relu3"))
refs["y3"] = torch.relu(t)
# conv4, its output a graph output too, + bn4
W4 = const("W4", rng.standard_normal((2, 3, 1, 1)))
nodes.append(helper.make_node("Conv", ["x", "W4"], ["y4"], name="conv4"))
refs["y4"] = F.conv2d(tx, W4)
refs["y5"] = bn("bn4", "y4", 2, 1e-5, refs["y4"])
nodes.append(helper.make_node("Identity", ["bn4_y"], ["y5"], name="id5"))
# gemm6 (transB, C) + bn6; gemm7 (alpha, no C) + bn7
nodes.append(helper.make_node("Flatten", ["x"], ["flat"], name="flat"))
tf = tx.reshape(2, -1)
B6, C6 = const("B6", rng.standard_normal((5, 192)) * 0.1), const("C6", rng.standard_normal(5))
nodes.append(helper.make_node("Gemm", ["flat", "B6", "C6"], ["g6"], name="gemm6", transB=1))
refs["y6"] = bn("bn6", "g6", 5, 1e-5, tf @ B6.T + C6)
nodes.append(helper.make_node("Identity", ["bn6_y"], ["y6"], name="id6"))
B7 = const("B7", rng.standard_normal((192, 100)) * 0.1)  # 75 KiB: deferred by plan
nodes.append(helper.make_node("Gemm", ["flat", "B7"], ["g7"], name="gemm7", alpha=0.5))
refs["y7"] = bn("bn7", "g7", 100, 1e-5, 0.5 * (tf @ B7))
nodes.append(helper.make_node("Identity", ["bn7_y"], ["y7"], name="id7"))



def save_model(name, nodes, inputs, refs, inits, opset):
    outs = [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in refs.items()]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape)
                                        for k, v in inputs.items()], outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    d = os.path.join(out, name, "test_data_set_0")
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(out, name, "model.onnx"))
    for i, (k, v) in enumerate(inputs.items()):
        with open(os.path.join(d, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, k).SerializeToString())
    for i, (k, v) in enumerate(refs.items()):
        with open(os.path.join(d, f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v.numpy().astype(np.float32), k).SerializeToString())


save_model("bn", nodes, {"x": x}, refs, inits, 13)

# InstanceNormalization, LayerNormalization, Softmax along one axis
inits, nodes, refs = [], [], {}
x = (rng.standard_normal((2, 3, 4, 5)) * 3 + 1).astype(np.float32)
tx = torch.from_numpy(x)
s1, b1 = const("s1", rng.uniform(0.5, 2, 3)), const("b1", rng.standard_normal(3))
nodes.append(helper.make_node("InstanceNormalization", ["x", "s1", "b1"], ["n1"], name="in1",
                              epsilon=1e-3))
refs["n1"] = F.instance_norm(tx, weight=s1, bias=b1, eps=1e-3)
inits.append(numpy_helper.from_array(np.array([2, 3, 20], dtype=np.int64), "shape3"))
nodes.append(helper.make_node("Reshape", ["x", "shape3"], ["x3"], name="reshape"))
nodes.append(helper.make_node("InstanceNormalization", ["x3", "s1", "b1"], ["n2"], name="in2"))
refs["n2"] = F.instance_norm(tx.reshape(2, 3, 20), weight=s1, bias=b1, eps=1e-5)
s5 = const("s5", rng.uniform(0.5, 2, 5))
nodes.append(helper.make_node("LayerNormalization", ["x", "s5"], ["n3", "mean", "inv"], name="ln3",
                              axis=-2))
refs["n3"] = F.layer_norm(tx, (4, 5), weight=s5.expand(4, 5), eps=1e-5)
var, mean = torch.var_mean(tx, dim=(2, 3), unbiased=False, keepdim=True)
refs["mean"], refs["inv"] = mean, 1 / torch.sqrt(var + 1e-5)
s4, b4 = const("s4", rng.uniform(0.5, 2, (3, 4, 5))), const("b4", rng.standard_normal((3, 4, 5)))
nodes.append(helper.make_node("LayerNormalization", ["x", "s4", "b4"], ["n4"], name="ln4", axis=1,
                              epsilon=1e-3))
refs["n4"] = F.layer_norm(tx, (3, 4, 5), weight=s4, bias=b4, eps=1e-3)
nodes.append(helper.make_node("Softmax", ["x"], ["n5"], name="sm5", axis=1))
refs["n5"] = torch.softmax(tx, 1)
nodes.append(helper.make_node("LogSoftmax", ["x"], ["n6"], name="lsm6", axis=2))
refs["n6"] = torch.log_softmax(tx, 2)
save_model("norms", nodes, {"x": x}, refs, inits, 17)

# opset 11: the input coerced to 2-D at axis
nodes = [helper.make_node("Softmax", ["x"], ["s1"], name="sm1", axis=1),
         helper.make_node("LogSoftmax", ["x"], ["s2"], name="lsm2", axis=2)]
refs = {"s1": torch.softmax(tx.reshape(2, 60), 1).reshape(2, 3, 4, 5),
        "s2": torch.log_softmax(tx.reshape(6, 20), 1).reshape(2, 3, 4, 5)}
save_model("sm11", nodes, {"x": x}, refs, [], 11)
