#!/usr/bin/python3
"""Run ipu-exec --check on the ONNX node conformance cases it supports.

    run_cases.py --ipu-exec BIN --cases DIR [--known FILE] [--jobs N]
                 [--timeout S] [--strict] [--filter REGEX] [--report FILE]

DIR is what make_node_tests.py wrote (index.tsv + one folder per case).

Which cases run: `BIN --list-ops` prints one "OpType since-until" line per
operator (the model opsets it implements). A case runs when every op of its
graph is listed for the model's opset; the others count as "unsupported" and
do not run. When BIN has no --list-ops, every case runs and a run that exits
2 with "unsupported" or "not supported" on stderr counts as unsupported.

Each run is `BIN CASE/model.onnx --inputs CASE/test_data_set_0 --check`:
  exit 0                               pass
  exit 2, "(un|not )supported" on stderr refused: the op is listed, but this
                                       case (a dtype, an attribute) is
                                       rejected cleanly at load time
  anything else (mismatch, other error, crash, timeout)   fail

Per op (the op under test of each case) the counts are printed as a table.
Exit status 1 when a case fails that known_failures.txt does not list (one
"test_name  reason" per line), or, with --strict, when a case is refused;
2 on bad usage or a malformed known-failures file; 0 otherwise. Listed
cases that pass are reported as XPASS, so the list can be trimmed.
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

LISTOPS_LINE = re.compile(r"^(\S+)\s+(\d+)-(\d+)\s*$")
REFUSAL = re.compile(r"unsupported|not supported", re.I)


def fatal(msg, code=2):
    print(f"run_cases.py: {msg}", file=sys.stderr)
    sys.exit(code)


def list_ops(binary):
    """{op: [(since, until), ...]} from BIN --list-ops, or None without it."""
    try:
        p = subprocess.run([binary, "--list-ops"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        fatal(f"cannot run {binary} --list-ops: {e}")
    if p.returncode != 0:
        return None
    ops = collections.defaultdict(list)
    for line in p.stdout.splitlines():
        m = LISTOPS_LINE.match(line)
        if m:
            ops[m.group(1)].append((int(m.group(2)), int(m.group(3))))
        elif line.strip():
            return None  # not the format we know: fall back to running everything
    return ops or None


def read_index(cases_dir):
    path = os.path.join(cases_dir, "index.tsv")
    try:
        lines = open(path).read().splitlines()
    except OSError as e:
        fatal(f"{path}: {e}")
    cases = []
    for line in lines:
        name, op, ops = line.split("\t")
        req = [(o.rsplit(":", 1)[0], int(o.rsplit(":", 1)[1])) for o in ops.split()]
        cases.append((name, op, req))
    return cases


def read_known(path):
    known = {}
    if not path or not os.path.exists(path):
        return known
    for n, line in enumerate(open(path), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        if len(parts) < 2:
            fatal(f"{path}:{n}: '{parts[0]}' needs a reason after the test name")
        known[parts[0]] = parts[1]
    return known


def supported(req, ops):
    return all(any(a <= v <= b for a, b in ops.get(op, ())) for op, v in req)


def run_case(binary, cases_dir, name, timeout):
    d = os.path.join(cases_dir, name)
    cmd = [binary, os.path.join(d, "model.onnx"), "--inputs", os.path.join(d, "test_data_set_0"),
           "--check"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "fail", f"timed out after {timeout}s"
    err = (p.stderr.strip() or p.stdout.strip()).splitlines()
    msg = err[-1] if err else ""
    worst = [line for line in p.stdout.splitlines() if "mismatch" in line.lower()]
    if worst:  # the line naming the worst element says more than the verdict
        msg = worst[0]
    if p.returncode == 0:
        return "pass", ""
    if p.returncode == 2 and REFUSAL.search(p.stderr):
        return "refused", msg
    if p.returncode < 0:
        return "fail", f"killed by signal {-p.returncode}; {msg}"
    return "fail", f"exit {p.returncode}: {msg}"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ipu-exec", required=True, dest="binary")
    ap.add_argument("--cases", required=True)
    ap.add_argument("--known")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--strict", action="store_true")
    ap.add_argument("--filter", default="", help="run only cases whose name matches")
    ap.add_argument("--report", help="also write the per-op table (markdown) here")
    a = ap.parse_args()
    if not os.access(a.binary, os.X_OK):
        fatal(f"{a.binary}: not an executable", 77)

    t0 = time.time()
    ops = list_ops(a.binary)
    known = read_known(a.known)
    cases = [c for c in read_index(a.cases) if re.search(a.filter, c[0])]
    if not cases:
        fatal(f"no case in {a.cases} matches '{a.filter}'")
    result = {}
    to_run = []
    for name, op, req in cases:
        if ops is not None and not supported(req, ops):
            result[name] = ("unsupported", "")
        else:
            to_run.append(name)
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        for name, r in zip(to_run, pool.map(
                lambda n: run_case(a.binary, a.cases, n, a.timeout), to_run)):
            result[name] = r
    if ops is None:  # derived: a refusal means the op is not supported
        result = {n: ("unsupported", m) if s == "refused" else (s, m)
                  for n, (s, m) in result.items()}

    cols = ["pass", "fail", "xfail", "refused", "unsupported"]
    per_op = collections.defaultdict(collections.Counter)
    unexpected, xpass, refused = [], [], []
    for name, op, _ in cases:
        status, msg = result[name]
        if status == "fail" and name in known:
            status = "xfail"
        elif status == "fail":
            unexpected.append((name, msg))
        elif status == "pass" and name in known:
            xpass.append(name)
        elif status == "refused":
            refused.append((name, msg))
        per_op[op][status] += 1

    table = ["| op | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    run_ops = sorted(o for o, c in per_op.items() if sum(c.values()) > c["unsupported"])
    for op in run_ops:
        table.append(f"| {op} | " + " | ".join(str(per_op[op][c]) for c in cols) + " |")
    never = sorted(o for o in per_op if o not in run_ops)
    totals = collections.Counter()
    for c in per_op.values():
        totals.update(c)
    table.append("| **total** | " + " | ".join(str(totals[c]) for c in cols) + " |")
    text = "\n".join(table)
    text += f"\n\nOps with no case run ({len(never)}): {' '.join(never)}\n"
    print(f"ONNX node conformance: {len(cases)} cases, "
          f"list of ops from {'--list-ops' if ops is not None else 'refusals (no --list-ops)'}")
    print(text)
    if a.report:
        with open(a.report, "w") as f:
            f.write(text)
    for name, msg in refused:
        print(f"REFUSED {name}: {msg}")
    for name in xpass:
        print(f"XPASS {name}: passes now; remove it from {a.known}")
    for name, msg in unexpected:
        print(f"FAIL {name}: {msg}")
    stale = sorted(set(known) - {c[0] for c in cases}) if not a.filter else []
    for name in stale:
        print(f"note: {name} in {a.known} is not a case of this suite")
    bad = len(unexpected) + (len(refused) if a.strict else 0)
    print(f"conformance: {totals['pass']} passed, {len(unexpected)} failed, "
          f"{totals['xfail']} known failures, {totals['refused']} refused, "
          f"{totals['unsupported']} unsupported ({time.time() - t0:.0f}s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
