#!/usr/bin/python3
"""Annotated and folded models for the partition tests.

stage_models.py OUTDIR  writes, in OUTDIR, folded_stage.onnx: stages 0..2
                        annotated, stage 1 only a Shape of an input of static
                        shape (it folds at load); gap.onnx: stages 0 and 2, no
                        node on 1; all_folded.onnx: every node folds
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def node(op, ins, outs, stage=None, **kw):
    n = helper.make_node(op, ins, outs, **kw)
    if stage is not None:
        n.attribute.extend([helper.make_attribute("__pipeline_stage", stage)])
    return n


def save(path, nodes, x, y):
    g = helper.make_graph(nodes, "g", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


out = sys.argv[1]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
save(os.path.join(out, "folded_stage.onnx"),
     [node("Relu", ["x"], ["a"], 0), node("Shape", ["x"], ["s"], 1),
      node("Reshape", ["a", "s"], ["b"], 2), node("Relu", ["b"], ["y"], 2)],
     x, helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4]))
save(os.path.join(out, "gap.onnx"), [node("Relu", ["x"], ["a"], 0), node("Relu", ["a"], ["y"], 2)],
     x, helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4]))
seven = numpy_helper.from_array(np.array([7], np.int64))
save(os.path.join(out, "all_folded.onnx"),
     [node("Shape", ["x"], ["s"]), node("ConstantOfShape", ["s"], ["y"], value=seven)],
     x, helper.make_tensor_value_info("y", TensorProto.INT64, [1, 4]))
