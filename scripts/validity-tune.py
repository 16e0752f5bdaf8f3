#!/usr/bin/env python3
"""Validity benchmark of the tuner (docs/statistics.md): facing routes identical in effect, does it
declare a tie?

Runs `trtmc-bench tune` REPEATS times over each route expression whose routes do the same work
(ONNX Runtime with sequential execution, where `inter_threads` has no effect), with the tuner's default
head-to-head, and counts the decisions: a `tie` is right, a `winner` is a false winner (its claimed
margin is printed). Repeats of the expressions are interleaved.

Usage: scripts/validity-tune.py [--repeats 20] [--model tiny-cnn] [--work DIR]
                                [--bin target/release/trtmc-bench]
Needs a release build (cargo build --release --workspace) and the onnxruntime wheel. Not a test.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPRESSIONS = ["-execution_mode=sequential -inter_threads=[1|2]",
               "-execution_mode=sequential -inter_threads=[1|2|3]"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--model", default="tiny-cnn")
    ap.add_argument("--work", default=None)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/trtmc-bench"))
    args = ap.parse_args()
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"validity-tune: {args.bin} is missing: cargo build --release --workspace")
    work = args.work or tempfile.mkdtemp(prefix="trtmc-validity-tune.")
    print(f"{args.model} on onnxruntime, {args.repeats} repeats per expression; load before "
          f"{os.getloadavg()[0]:.2f}; work dir {work}", flush=True)
    results = {e: [] for e in EXPRESSIONS}
    for k in range(args.repeats):
        for i, expr in enumerate(EXPRESSIONS):
            out = os.path.join(work, f"r{k}-{i}")
            started = time.monotonic()
            cmd = [args.bin, "tune", "--model", args.model, "--runtime", "onnxruntime", "--routes", expr,
                   "--search", "full", "--bundle-cache", os.path.join(work, "cache"), "-o", out, "--quiet"]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"validity-tune: {' '.join(cmd)} exited {done.returncode}:\n{done.stderr}")
            decision = json.load(open(os.path.join(out, "tuning-summary.json")))["decision"]
            margin = decision.get("margin") or {}
            results[expr].append((decision["kind"], margin.get("percent"), margin.get("low"),
                                  time.monotonic() - started))
        print(f"repeat {k + 1}/{args.repeats}: " + ", ".join(r[-1][0] for r in results.values()), flush=True)
    print()
    print("| routes (identical in effect) | tunes | tie | winner (false) | claimed margins of false winners | "
          "wall s per tune (median) |")
    print("| --- | ---: | ---: | ---: | --- | ---: |")
    for expr, rs in results.items():
        ties = sum(1 for r in rs if r[0] == "tie")
        wins = [r for r in rs if r[0] == "winner"]
        margins = ", ".join(f"{w[1]:.1f} % (low {w[2]:.3f})" for w in wins) or "none"
        print(f"| `{expr}` | {len(rs)} | {ties} | {len(wins)} | {margins} | "
              f"{statistics.median(r[3] for r in rs):.1f} |")


if __name__ == "__main__":
    main()
