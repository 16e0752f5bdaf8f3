#!/usr/bin/env python3
"""Where does the variance between processes come from? (docs/statistics.md, "The process effect")

Starts PROCESSES fresh `trtmc-bench run` processes per condition, the conditions interleaved (one
process of each in turn, the order rotating), and prints the distribution of the per-process p50:
quartiles, max/min, and how the processes split around the midpoint between the fastest and slowest
(a two-level effect shows as two tight clusters). Conditions:

  default       as shipped
  no-aslr       `setarch -R`: the same address-space layout in every process
  cpu0, cpu1    `taskset -c N`: pinned to one core
  thp-never     the same, started under `prctl(PR_SET_THP_DISABLE)` (no transparent huge pages)

Usage: scripts/process-levels.py [--processes 20] [--model tiny-cnn] [--runtime onnxruntime]
                                 [--iterations 50] [--conditions default,no-aslr,cpu0,cpu1,thp-never]
Needs a release build (cargo build --release --workspace). Not a test.
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PR_SET_THP_DISABLE = 41


def no_thp():
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)


PREFIX = {"default": [], "no-aslr": ["setarch", "-R"], "cpu0": ["taskset", "-c", "0"],
          "cpu1": ["taskset", "-c", "1"], "thp-never": []}


def one(args, cond, work, k):
    out = os.path.join(work, f"{cond}-{k}")
    cmd = PREFIX[cond] + [args.bin, "run", "--model", args.model, "--runtime", args.runtime, "--warmup",
                          str(args.warmup), "--iterations", str(args.iterations), "--telemetry", "off", "-q",
                          "--bundle-cache", os.path.join(work, "cache"), "-o", out]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                   preexec_fn=no_thp if cond == "thp-never" else None)
    doc = json.load(open(os.path.join(out, "result.json")))
    return doc["cases"][0]["metrics"]["latency_ms"]["p50"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--processes", type=int, default=20)
    ap.add_argument("--model", default="tiny-cnn")
    ap.add_argument("--runtime", default="onnxruntime")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--conditions", default="default,no-aslr,cpu0,cpu1,thp-never")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/trtmc-bench"))
    args = ap.parse_args()
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"process-levels: {args.bin} is missing: cargo build --release --workspace")
    conds = args.conditions.split(",")
    for c in conds:
        if c not in PREFIX:
            sys.exit(f"process-levels: unknown condition `{c}` (known: {', '.join(PREFIX)})")
    work = tempfile.mkdtemp(prefix="trtmc-levels.")
    one(args, "default", work, "prebuild")
    p50s = {c: [] for c in conds}
    for k in range(args.processes):
        for c in conds[k % len(conds):] + conds[:k % len(conds)]:
            p50s[c].append(one(args, c, work, k))
    thp = open("/sys/kernel/mm/transparent_hugepage/enabled").read().strip()
    print(f"{args.model} on {args.runtime}, {args.processes} processes per condition, {args.iterations} calls "
          f"each; transparent huge pages: {thp}; load {os.getloadavg()[0]:.2f}")
    print("| condition | p50 min | q1 | median | q3 | max | max/min | processes below / above the midpoint |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for c, v in p50s.items():
        q = statistics.quantiles(v, n=4)
        mid = (min(v) + max(v)) / 2
        low = sum(1 for x in v if x < mid)
        print(f"| {c} | {min(v):.3f} | {q[0]:.3f} | {q[1]:.3f} | {q[2]:.3f} | {max(v):.3f} | "
              f"{max(v) / min(v):.2f} | {low} / {len(v) - low} |")
    print("per-process p50 (ms), in order:")
    for c, v in p50s.items():
        print(f"  {c}: {' '.join(f'{x:.3f}' for x in v)}")


if __name__ == "__main__":
    main()
