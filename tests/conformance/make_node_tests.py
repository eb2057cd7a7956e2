#!/usr/bin/python3
"""Generate the ONNX backend node test suite for ipu-exec's conformance run.

Writes, for every node case of the onnx package's backend test generators
(Debian's python3-onnx, onnx 1.12: opsets up to 17):

    OUT/test_<op>_<case>/model.onnx
    OUT/test_<op>_<case>/test_data_set_N/{input,output}_K.pb  (onnx.TensorProto)
    OUT/index.tsv   one line per case: name, op under test, and 'Op:V' for
                    every op type in its graph (V: the model's opset for it)

The expected outputs are computed by the onnx package's own numpy code, so
they are independent of ipu-exec and of PyTorch. Cases whose inputs or
outputs are sequences, maps or optionals (ipu-exec handles tensors only) are
not written; they are counted on the last line.

Usage: make_node_tests.py OUT
Exit status: 0 ok, 2 bad usage, 77 when numpy/onnx are missing.
"""
import os
import shutil
import sys

try:
    import numpy as np
except ImportError as e:
    print(f"make_node_tests.py: {e} (install python3-numpy)", file=sys.stderr)
    sys.exit(77)

# onnx 1.12's case generators still use the numpy aliases np.float, np.int,
# np.bool and np.object that numpy 1.24 removed; put them back before the
# generators are imported.
for _alias, _type in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _alias not in np.__dict__:
        setattr(np, _alias, _type)

try:
    import onnx
    from onnx import numpy_helper
    import onnx.backend.test.case.node as node_cases
except ImportError as e:
    print(f"make_node_tests.py: {e} (install python3-onnx)", file=sys.stderr)
    sys.exit(77)


def tensor_only(values):
    return all(v.type.HasField("tensor_type") for v in values)


def op_label(domain, op_type):
    return op_type if domain in ("", "ai.onnx") else f"{domain}.{op_type}"


def op_under_test(case):
    """Each case is one node (its op is the one tested) or, for names ending
    in _expanded, that node's function body: then the op of the unexpanded
    case, recovered from the graph name's case."""
    g = case.model.graph
    if len(g.node) == 1:
        return op_label(g.node[0].domain, g.node[0].op_type)
    return _base_op.get(case.name[:-len("_expanded")], "?")


def node_ops(model):
    """'Op:V' for every op type in the graph (V: the model's opset of that op's
    domain), sorted; what a runtime must implement to run the case."""
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}
    ops = {(n.domain, n.op_type) for n in model.graph.node}
    return sorted(f"{op_label(d, t)}:{opsets.get('' if d == 'ai.onnx' else d, 0)}" for d, t in ops)


_base_op = {}


def write_case(case, out):
    d = os.path.join(out, case.name)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    g = case.model.graph
    for i, (inputs, outputs) in enumerate(case.data_sets):
        ds = os.path.join(d, f"test_data_set_{i}")
        os.makedirs(ds)
        for kind, vals, decl in (("input", inputs, g.input), ("output", outputs, g.output)):
            for j, v in enumerate(vals):
                t = numpy_helper.from_array(np.asarray(v), decl[j].name)
                # numpy has no bfloat16: the generators hand its bit patterns
                # over as uint16; label them with the type the graph declares.
                want = decl[j].type.tensor_type.elem_type
                if want == onnx.TensorProto.BFLOAT16 and t.data_type == onnx.TensorProto.UINT16:
                    t.data_type = want
                with open(os.path.join(ds, f"{kind}_{j}.pb"), "wb") as f:
                    f.write(t.SerializeToString())


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    written, skipped = {}, 0  # a few names occur twice: the last case wins
    for case in node_cases.collect_testcases(None):
        g = case.model.graph
        if not (tensor_only(g.input) and tensor_only(g.output)):
            skipped += 1
            continue
        write_case(case, out)
        if len(g.node) == 1:
            _base_op[case.name] = op_label(g.node[0].domain, g.node[0].op_type)
        written[case.name] = f"{case.name}\t{op_under_test(case)}\t{' '.join(node_ops(case.model))}"
    with open(os.path.join(out, "index.tsv"), "w") as f:
        f.write("\n".join(written[k] for k in sorted(written)) + "\n")
    print(f"make_node_tests.py: {len(written)} node cases (onnx {onnx.__version__}) in {out}; "
          f"{skipped} cases with sequence/map/optional values left out")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
