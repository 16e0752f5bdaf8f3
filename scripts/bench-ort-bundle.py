#!/usr/bin/env python3
"""Does trtmc's offline-optimized ONNX Runtime bundle run slower than ONNX Runtime's own online
optimization? (docs/performance.md, "Fidelity")

In ONNX Runtime's Python API only, one fresh process per measurement, variants interleaved with their
order rotating: the bundle trtmc builds (`model.ort.onnx`, optimized offline at level `all`) loaded with
optimization disabled, as trtmc's worker loads it; the source model optimized online at `all`, as
ONNX Runtime's own loop does; the bundle at `all` again; the source with trtmc's free-dimension override.

Usage: scripts/bench-ort-bundle.py [--rounds 8] [--threads 1] [--model light-resnet50-rand]
                                   [--bin target/release/trtmc-bench]
Needs python3 with numpy and onnxruntime, and a trtmc-bench build (to write the bundle). Not a test.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ONE = r'''
import json, sys, time, numpy as np, onnxruntime as ort
model, level, threads, override = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
so = ort.SessionOptions()
so.graph_optimization_level = {"disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
                               "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}[level]
so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
if override:
    so.add_free_dimension_override_by_name("batch", 1)
s = ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])
i = s.get_inputs()[0]
x = np.random.default_rng(0).standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
for _ in range(5):
    s.run(None, {i.name: x})
t = []
for _ in range(30):
    a = time.perf_counter_ns(); s.run(None, {i.name: x}); t.append((time.perf_counter_ns() - a) / 1e6)
print(json.dumps({"p50": sorted(t)[len(t) // 2]}))
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--model", default="light-resnet50-rand")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/trtmc-bench"))
    args = ap.parse_args()
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"bench-ort-bundle: {args.bin} is missing: cargo build --release --workspace")
    work = tempfile.mkdtemp(prefix="trtmc-ort-bundle.")
    subprocess.run([args.bin, "run", "--model", args.model, "--runtime", "onnxruntime", "--warmup", "0",
                    "--iterations", "1", "--telemetry", "off", "-q", "--bundle-cache", f"{work}/cache",
                    "-o", f"{work}/build"], check=True, stdout=subprocess.DEVNULL)
    bundle = glob.glob(f"{work}/cache/onnxruntime/*.bundle/model.ort.onnx")[0]
    source = glob.glob(f"{work}/cache/sources/*.onnx")[0]
    variants = {"bundle, optimization disabled (trtmc's worker)": (bundle, "disable", "0"),
                "source, online optimization all (ORT's own loop)": (source, "all", "0"),
                "bundle, optimization all again": (bundle, "all", "0"),
                "source, all, batch override": (source, "all", "1")}
    names = list(variants)
    p50 = {k: [] for k in names}
    for r in range(args.rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            m, level, override = variants[k]
            out = subprocess.run([sys.executable, "-c", ONE, m, level, str(args.threads), override],
                                 check=True, capture_output=True, text=True).stdout
            p50[k].append(json.loads(out)["p50"])
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    from round_interval import describe
    base = p50[names[1]]
    print(f"{args.model}, {args.threads} thread(s), {args.rounds} rounds; load {os.getloadavg()[0]:.2f}")
    print("| variant | p50 ms (median of rounds) | ratio to ORT's own loop: median [95 % interval] |")
    print("| --- | ---: | --- |")
    for k in names:
        ratios = [a / b for a, b in zip(p50[k], base)]
        print(f"| {k} | {statistics.median(p50[k]):.1f} | {describe(ratios) if k != names[1] else '1'} |")


if __name__ == "__main__":
    main()
