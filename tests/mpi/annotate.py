#!/usr/bin/python3
"""Variants of an annotated model for the partition tests.

annotate.py IN OUT partial        drop __pipeline_stage/__ipu_number from one node
annotate.py IN OUT backwards      put the first node in the last stage (a tensor
                                  then flows from a later stage to an earlier one)
annotate.py IN OUT stages         print the stage of every node (one per line)
annotate.py IN OUT float          give one node's __pipeline_stage as a FLOAT (PopART
                                  reads only INT)
"""
import sys
import onnx

src, dst, what = sys.argv[1:4]
m = onnx.load(src, load_external_data=False)
nodes = m.graph.node


def stage(n):
    for a in n.attribute:
        if a.name == "__pipeline_stage":
            return a.i
    return None


if what == "stages":
    print("\n".join(str(stage(n)) for n in nodes))
    sys.exit(0)
if what == "partial":
    victim = next(n for n in nodes if n.op_type not in ("Constant",))
    keep = [a for a in victim.attribute if a.name not in ("__pipeline_stage", "__ipu_number")]
    del victim.attribute[:]
    victim.attribute.extend(keep)
    print(victim.name)
elif what == "backwards":
    last = max(stage(n) for n in nodes)
    victim = next(n for n in nodes if n.op_type not in ("Constant",))
    for a in victim.attribute:
        if a.name in ("__pipeline_stage", "__ipu_number"):
            a.i = last
    print(victim.name)
elif what == "float":
    victim = next(n for n in nodes if n.op_type not in ("Constant",))
    for a in victim.attribute:
        if a.name == "__pipeline_stage":
            a.f, a.type = float(a.i), onnx.AttributeProto.FLOAT
            a.ClearField("i")
    print(victim.name)
onnx.save(m, dst)
