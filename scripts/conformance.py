#!/usr/bin/env python3
"""Conformance on the onnx wheel's backend test models (docs/performance.md, "Your own model:
conformance"): does every model a runtime's own API runs also run, and match, through trtmc?

For each model folder M under onnx/backend/test/data/{pytorch-converted,pytorch-operator,simple,real}
(`real` ships no model files in the wheel, only download addresses, and is counted as such):

- ONNX Runtime's Python API: InferenceSession(M/model.onnx) on M/test_data_set_0/input_N.pb, outputs
  checked against output_N.pb;
- tract-onnx's own API: crates/runtime/examples/tract_check (load, fix input facts, optimize, run, check);
- trtmc: `trtmc-bench run --onnx M/model.onnx --inputs M/test_data_set_0 --check-outputs
  M/test_data_set_0 --runtime R --warmup 1 --iterations 3` for R in tract, onnxruntime.

Every check is trtmc's (Polygraphy's element-wise rule: an element fails beyond both --atol and
--rtol x |expected|) with the backend tests' own tolerances, atol 1e-7 and rtol 1e-3.

Usage: scripts/conformance.py [--bin target/release/trtmc-bench] [--tract-check PATH]
                              [--json out.json] [--only SUBSTRING] [--reuse previous.json]
Needs python3 with onnx, numpy and onnxruntime, a trtmc-bench build and the tract_check example
(cargo build --release -p trtmc-runtime --example tract_check). Not a test: it prints a summary and
writes per-model outcomes to --json.
"""
import argparse
import collections
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GROUPS = ["pytorch-converted", "pytorch-operator", "simple", "real"]
ATOL, RTOL = 1e-7, 1e-3

ORT_ONE = r'''
import glob, json, os, sys
import numpy as np, onnx, onnxruntime as ort
from onnx import numpy_helper
model, folder, atol, rtol = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
def numbered(prefix):
    files = glob.glob(os.path.join(folder, prefix + "*.pb"))
    return sorted(files, key=lambda f: int(os.path.basename(f)[len(prefix):-3]))
def read(f):
    t = onnx.TensorProto()
    with open(f, "rb") as fh:
        t.ParseFromString(fh.read())
    return numpy_helper.to_array(t)
try:
    s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    names = [i.name for i in s.get_inputs()]
    feed = {n: read(f) for n, f in zip(names, numbered("input_"))}
    got = s.run(None, feed)
    for i, (g, f) in enumerate(zip(got, numbered("output_"))):
        want = read(f)
        g, want = np.asarray(g), np.asarray(want)
        if g.shape != want.shape:
            print(json.dumps({"status": "mismatch", "message": f"output {i}: shape {g.shape} vs {want.shape}"})); sys.exit(0)
        if want.dtype.kind in "fc":
            a = np.abs(g.astype(np.float64) - want.astype(np.float64))
            den = np.abs(want.astype(np.float64)); den[den == 0] = np.finfo(np.float64).eps
            bad = ((a > atol) | np.isnan(a)) & ((a / den > rtol) | np.isnan(a))
        elif want.dtype.kind in "OUS":
            bad = g != want
        else:
            bad = g.astype(np.float64) != want.astype(np.float64)
        if np.any(bad):
            print(json.dumps({"status": "mismatch", "message": f"output {i}: {int(np.sum(bad))} elements differ"})); sys.exit(0)
    print(json.dumps({"status": "ok", "message": ""}))
except Exception as e:
    print(json.dumps({"status": "error", "message": f"{type(e).__name__}: {e}".splitlines()[0][:300]}))
'''


def backend_data():
    import onnx
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")


def op_types(model):
    import onnx
    m = onnx.load(model, load_external_data=False)
    ops = set()
    def walk(graph):
        for n in graph.node:
            ops.add(n.op_type)
            for a in n.attribute:
                if a.g.node:
                    walk(a.g)
                for g in a.graphs:
                    walk(g)
    walk(m.graph)
    return sorted(ops)


def one_line(text, limit=240):
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    # trtmc's error is its last line on stderr.
    return (lines[-1] if lines else "")[:limit]


def run_json(cmd, timeout=300):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "error", "message": "timed out"}
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"status": "error", "message": one_line(p.stderr) or f"exit {p.returncode}"}


def trtmc(binary, model, folder, runtime, tmp):
    out = os.path.join(tmp, "result")
    cmd = [binary, "run", "--onnx", model, "--inputs", folder, "--check-outputs", folder,
           "--atol", str(ATOL), "--rtol", str(RTOL), "--runtime", runtime, "--warmup", "1",
           "--iterations", "3", "--quiet", "--telemetry", "off", "-o", out,
           "--bundle-cache", os.path.join(tmp, "cache")]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return {"status": "error", "code": None, "message": "timed out"}
    status = "ok" if p.returncode == 0 else ("mismatch" if "differs from the expected" in p.stderr else "error")
    message = one_line(p.stderr) if p.returncode else ""
    if p.returncode == 5:
        # The case's own error is in result.json.
        try:
            with open(os.path.join(out, "result.json")) as f:
                err = json.load(f)["cases"][0].get("error") or ""
            message = err.splitlines()[0][:240] if err else message
            if "differs from the expected" in err:
                status = "mismatch"
        except (OSError, ValueError, KeyError, IndexError):
            pass
    return {"status": status, "code": p.returncode, "message": message}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "trtmc-bench"))
    ap.add_argument("--tract-check", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", default=None)
    ap.add_argument("--reuse", default=None,
                    help="a previous --json: keep its outcomes and run only what it lacks (tract_api 'not run')")
    args = ap.parse_args()
    previous = {}
    if args.reuse:
        with open(args.reuse) as f:
            previous = {r["model"]: r for r in json.load(f)["models"]}
    target = os.path.dirname(args.bin)
    tract_check = args.tract_check or os.path.join(target, "examples", "tract_check")
    data = backend_data()
    rows = []
    missing = []
    for group in GROUPS:
        for folder in sorted(glob.glob(os.path.join(data, group, "*"))):
            name = f"{group}/{os.path.basename(folder)}"
            if args.only and args.only not in name:
                continue
            model = os.path.join(folder, "model.onnx")
            sets = sorted(glob.glob(os.path.join(folder, "test_data_set_*")))
            if not os.path.exists(model) or not sets:
                missing.append(name)
                continue
            tds = sets[0]
            row = previous.get(name) or {"model": name, "ops": op_types(model)}
            if "ort_python" not in row:
                row["ort_python"] = run_json([sys.executable, "-c", ORT_ONE, model, tds, str(ATOL), str(RTOL)])
            if row.get("tract_api", {}).get("status", "not run") == "not run":
                row["tract_api"] = (run_json([tract_check, model, tds, str(ATOL), str(RTOL)])
                                    if os.path.exists(tract_check) else {"status": "not run", "message": "no tract_check"})
            with tempfile.TemporaryDirectory() as tmp:
                for rt in ["tract", "onnxruntime"]:
                    if f"trtmc_{rt}" not in row:
                        row[f"trtmc_{rt}"] = trtmc(args.bin, model, tds, rt, os.path.join(tmp, rt))
            rows.append(row)
            print(f"{name:60} ort-py {row['ort_python']['status']:8} trtmc-ort {row['trtmc_onnxruntime']['status']:8} "
                  f"tract-api {row['tract_api']['status']:8} trtmc-tract {row['trtmc_tract']['status']}", flush=True)

    def count(key, status="ok"):
        return sum(1 for r in rows if r[key]["status"] == status)

    def parity(own, ours):
        runs = [r for r in rows if r[own]["status"] == "ok"]
        also = [r for r in runs if r[ours]["status"] == "ok"]
        return len(also), len(runs), [r["model"] for r in runs if r[ours]["status"] != "ok"]

    summary = {
        "models": len(rows),
        "without_model_file": missing,
        "ok": {k: count(k) for k in ["ort_python", "trtmc_onnxruntime", "tract_api", "trtmc_tract"]},
        "mismatch": {k: count(k, "mismatch") for k in ["ort_python", "trtmc_onnxruntime", "tract_api", "trtmc_tract"]},
        "parity_onnxruntime": parity("ort_python", "trtmc_onnxruntime")[:2],
        "parity_tract": parity("tract_api", "trtmc_tract")[:2],
        "ort_runs_trtmc_does_not": parity("ort_python", "trtmc_onnxruntime")[2],
        "tract_runs_trtmc_does_not": parity("tract_api", "trtmc_tract")[2],
    }
    # Operators of the models a runtime refuses through trtmc that no model it runs uses.
    for rt in ["tract", "onnxruntime"]:
        ran = set(op for r in rows if r[f"trtmc_{rt}"]["status"] == "ok" for op in r["ops"])
        refused = collections.Counter(
            op for r in rows if r[f"trtmc_{rt}"]["status"] == "error" for op in r["ops"] if op not in ran)
        summary[f"refused_operators_{rt}"] = dict(sorted(refused.items()))
        summary[f"errors_{rt}"] = {r["model"]: r[f"trtmc_{rt}"]["message"]
                                   for r in rows if r[f"trtmc_{rt}"]["status"] != "ok"}
    print(json.dumps(summary, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "models": rows}, f, indent=2)


if __name__ == "__main__":
    main()
