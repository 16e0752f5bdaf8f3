#!/usr/bin/env python3
"""Checks models written by the Rust tests: the ONNX checker (full_check) passes and
onnxruntime reproduces tract's outputs.

usage: check_onnx.py CASE_DIR...
Each CASE_DIR holds model.onnx and io.json:
  {"tolerance": 1e-4,
   "inputs":  {name: {"dtype": "f32"|"i64", "shape": [...], "data": [...]}},
   "outputs": {name: {"dtype": "f32", "shape": [...], "data": [...]}}}   # tract's results
Prints one JSON line per case; exits 1 on a mismatch, 3 when onnx/onnxruntime are missing.
"""
import json
import os
import sys

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
except ImportError as e:
    print(f"missing Python package ({e}); run `pip install onnx onnxruntime`", file=sys.stderr)
    sys.exit(3)

DTYPES = {"f32": np.float32, "i64": np.int64}


def array(spec):
    return np.asarray(spec["data"], dtype=DTYPES[spec["dtype"]]).reshape(spec["shape"])


def check(case_dir):
    path = os.path.join(case_dir, "model.onnx")
    with open(os.path.join(case_dir, "io.json")) as f:
        io = json.load(f)
    onnx.checker.check_model(onnx.load(path), full_check=True)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    feeds = {name: array(spec) for name, spec in io["inputs"].items()}
    names = list(io["outputs"])
    results = dict(zip(names, session.run(names, feeds)))
    diffs = {}
    for name in names:
        expected = array(io["outputs"][name])
        got = results[name]
        if got.shape != expected.shape:
            raise AssertionError(f"{case_dir}: {name} shape {got.shape} != tract {expected.shape}")
        diffs[name] = float(np.max(np.abs(got - expected))) if got.size else 0.0
    worst = max(diffs.values())
    print(json.dumps({"case": os.path.basename(case_dir), "max_abs_diff": worst, "per_output": diffs}))
    return worst <= io.get("tolerance", 1e-4)


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    ok = all([check(d) for d in sys.argv[1:]])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
