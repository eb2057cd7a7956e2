#!/usr/bin/python3
"""The soak's model (bench/soak.sh): a small CNN of 11 nodes that splits into
4 pipeline stages, with seeded random weights.

x[N,3,32,32] -> Conv 3->32 3x3 -> Relu -> Conv 32->32 3x3 -> Relu -> MaxPool 2
  -> Conv 32->64 3x3 -> Relu -> GlobalAveragePool -> Flatten -> Gemm 64->10
  -> Softmax -> y[N,10]      (N symbolic; opset 13)

usage: soak_model.py OUT.onnx
"""
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

rng = np.random.default_rng(21)


def weight(name, *shape):
    fan_in = int(np.prod(shape[1:]))
    return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32), name)


def main():
    inits = [weight("w1", 32, 3, 3, 3), weight("w2", 32, 32, 3, 3), weight("w3", 64, 32, 3, 3),
             weight("fc", 10, 64), numpy_helper.from_array(np.zeros(10, np.float32), "fc_b")]
    conv = lambda x, w, y: helper.make_node("Conv", [x, w], [y], name=y, kernel_shape=[3, 3],
                                            pads=[1, 1, 1, 1])
    nodes = [conv("x", "w1", "c1"), helper.make_node("Relu", ["c1"], ["r1"], name="r1"),
             conv("r1", "w2", "c2"), helper.make_node("Relu", ["c2"], ["r2"], name="r2"),
             helper.make_node("MaxPool", ["r2"], ["p"], name="p", kernel_shape=[2, 2], strides=[2, 2]),
             conv("p", "w3", "c3"), helper.make_node("Relu", ["c3"], ["r3"], name="r3"),
             helper.make_node("GlobalAveragePool", ["r3"], ["g"], name="g"),
             helper.make_node("Flatten", ["g"], ["f"], name="f"),
             helper.make_node("Gemm", ["f", "fc", "fc_b"], ["logits"], name="logits", transB=1),
             helper.make_node("Softmax", ["logits"], ["y"], name="y", axis=1)]
    g = helper.make_graph(nodes, "soak",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 32, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    onnx.save(m, sys.argv[1])


if __name__ == "__main__":
    main()
