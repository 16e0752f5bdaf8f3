#!/usr/bin/env python3
"""Is it the process or the machine? (docs/statistics.md, "The process effect")

One process alternates two unrelated workloads in short blocks: ONNX Runtime running tiny-cnn's
bundle on one thread, and a pure-Python integer loop. It prints each block's median for both and their
correlation. If both change speed at the same moments, the machine changes speed (CPU frequency,
other tenants of the host), not something inside one process (allocation placement, thread placement).

Usage: scripts/speed-regimes.py [--blocks 80] [--bin target/release/trtmc-bench]
Needs: python3 with numpy and onnxruntime; a trtmc-bench build to write the bundle. Not a test.
"""
import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def spin():
    a = 0
    for k in range(20000):
        a += k * k
    return a


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--blocks", type=int, default=80)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/trtmc-bench"))
    args = ap.parse_args()
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"speed-regimes: {args.bin} is missing: cargo build --release --workspace")
    import numpy as np
    import onnxruntime as ort

    work = tempfile.mkdtemp(prefix="trtmc-regimes.")
    subprocess.run([args.bin, "run", "--model", "tiny-cnn", "--runtime", "onnxruntime", "--warmup", "0",
                    "--iterations", "1", "--telemetry", "off", "-q", "--bundle-cache", f"{work}/cache",
                    "-o", f"{work}/build"], check=True, stdout=subprocess.DEVNULL)
    model = glob.glob(f"{work}/cache/onnxruntime/tiny-cnn-*.bundle/model.ort.onnx")[0]
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    session = ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])
    inp = session.get_inputs()[0]
    x = np.zeros([d if isinstance(d, int) else 1 for d in inp.shape], np.float32)
    ort_blocks, spin_blocks = [], []
    for _ in range(args.blocks):
        t = []
        for _ in range(200):
            a = time.perf_counter_ns()
            session.run(None, {inp.name: x})
            t.append(time.perf_counter_ns() - a)
        ort_blocks.append(statistics.median(t) / 1e6)
        t = []
        for _ in range(50):
            a = time.perf_counter_ns()
            spin()
            t.append(time.perf_counter_ns() - a)
        spin_blocks.append(statistics.median(t) / 1e6)
    print("onnxruntime tiny-cnn, block medians (ms):", " ".join(f"{v:.3f}" for v in ort_blocks))
    print("integer loop, block medians (ms):        ", " ".join(f"{v:.3f}" for v in spin_blocks))
    r = np.corrcoef(ort_blocks, spin_blocks)[0, 1]
    print(f"{args.blocks} blocks; onnxruntime max/min {max(ort_blocks) / min(ort_blocks):.2f}; integer loop "
          f"max/min {max(spin_blocks) / min(spin_blocks):.2f}; correlation of the two {r:.2f}; "
          f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
