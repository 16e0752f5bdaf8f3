#!/usr/bin/env python3
"""Validity benchmark of the matrix lights (docs/statistics.md): do identical things come out equal and
real slowdowns red, at the shipped suite's counts, on this machine?

Runs every selected row of the release suite as an A/A row (its reference switched to `trtmc:<the
candidate's runtime>`) REPEATS times with no slowdown and with each injected candidate-only slowdown
(TRTMC_TEST_MATRIX_CANDIDATE_SLOWDOWN under TRTMC_TEST=1: after each timed call of the candidate, a
busy wait of that fraction of the call's own duration, so the true ratio is exactly 1 + fraction
whatever the machine's speed). Scenarios of one repeat run back to back, their order rotating, so a
change of machine load falls on all of them.

Prints a Markdown table: lights, `uncertain` rows, how often the interval contains the true ratio
(1 + slowdown), detection rates, wall time per row, load. Also re-judges the same raw samples with the
previous method (percentile bootstrap of pooled calls, 2000 resamples) for comparison. Raw records go
to WORK/validity.jsonl.

With --busy ON,OFF a second load shares the machine part of the time: one process spins a core for
ON seconds, then idles OFF seconds, for the whole benchmark.

Usage: scripts/validity.py [--repeats 40] [--rows tiny-cnn/single/tract,...] [--slowdowns 0,0.1,0.3]
                           [--busy 15,15] [--work DIR] [--bin target/release/trtmc-bench]
Needs: a release build (cargo build --release --workspace), python3 with numpy and onnxruntime.
Not a test: it takes minutes to hours (REPEATS x rows x scenarios matrix rows).
"""
import argparse
import json
import multiprocessing
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def aa_suite(release_text):
    """The release suite with each row's reference replaced by its own candidate runtime."""
    pattern = re.compile(
        r"(candidate: \{runtime: (\w+)[^\n]*\n(\s+))reference: \{backend: onnxruntime-python\}")
    text, n = pattern.subn(lambda m: f'{m.group(1)}reference: {{backend: "trtmc:{m.group(2)}"}}',
                           release_text)
    if n == 0:
        sys.exit("validity: found no `reference: {backend: onnxruntime-python}` row in the release suite")
    return text.replace("name: release-cpu", "name: validity-aa", 1)


def row_ids(suite_text):
    ids = []
    for block in suite_text.split("\n  - entry: ")[1:]:
        entry = block.split("\n", 1)[0].strip()
        model = re.search(r"\n\s+model: (\S+)", block).group(1)
        case = re.search(r"\n\s+testcase: (\S+)", block).group(1)
        runtime = re.search(r"candidate: \{runtime: (\w+)", block).group(1)
        ids.append(f"{entry}/{model}/{case}/{runtime}")
    return ids


def busy(on_s, off_s):
    """A second load: spin one core for on_s seconds, idle off_s seconds, forever."""
    while True:
        until = time.monotonic() + on_s
        while time.monotonic() < until:
            pass
        time.sleep(off_s)


def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run_row(args, suite, env_file, row, slowdown, work, tag):
    out = os.path.join(work, "runs", tag)
    env = dict(os.environ, TRTMC_TEST="1", TRTMC_PERF_BUNDLE_CACHE=os.path.join(work, "cache"),
               TRTMC_PERF_RESULTS=os.path.join(work, "runs"))
    env.pop("TRTMC_TEST_MATRIX_CANDIDATE_DELAY_US", None)
    env.pop("TRTMC_TEST_MATRIX_CANDIDATE_SLOWDOWN", None)
    if slowdown > 0:
        env["TRTMC_TEST_MATRIX_CANDIDATE_SLOWDOWN"] = str(slowdown)
    started = time.monotonic()
    p = subprocess.run([args.bin, "matrix", "run", suite, "--environment", env_file, "--entry", row,
                        "-o", out], env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    results = os.path.join(out, "results.json")
    if not os.path.exists(results):
        sys.exit(f"validity: `matrix run --entry {row}` wrote no results (exit {p.returncode}):\n{p.stderr}")
    doc = json.load(open(results))
    r = doc["rows"][0]
    c = r.get("comparison")
    if c is None:
        sys.exit(f"validity: row {row} has no comparison: {r.get('status')}: {r.get('message')}")
    return r, c, seconds


def old_rule(cand, ref, green, yellow, conf=0.95, resamples=2000, seed=0x6D617472):
    """The previous lights: ratio of pooled medians, percentile bootstrap resampling calls."""
    rng = random.Random(seed)
    ratio = statistics.median(cand) / statistics.median(ref)
    boots = []
    for _ in range(resamples):
        a = [cand[rng.randrange(len(cand))] for _ in cand]
        b = [ref[rng.randrange(len(ref))] for _ in ref]
        boots.append(statistics.median(a) / statistics.median(b))
    boots.sort()
    lo = boots[int((1 - conf) / 2 * (resamples - 1))]
    hi = boots[int((1 + conf) / 2 * (resamples - 1))]
    light = "green" if ratio <= green else "yellow" if ratio <= yellow or lo <= yellow else "red"
    return light, lo, hi


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=40)
    ap.add_argument("--rows", default="tiny-cnn.classify/tiny-cnn/single/tract,"
                    "tiny-cnn.classify/tiny-cnn/single/onnxruntime")
    ap.add_argument("--slowdowns", default="0,0.1,0.3")
    ap.add_argument("--busy", default=None, help="ON,OFF seconds of a second, spinning load")
    ap.add_argument("--work", default=None)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/trtmc-bench"))
    ap.add_argument("--suite", default=os.path.join(ROOT, "benchmarks/performance/release.yaml"))
    args = ap.parse_args()
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"validity: {args.bin} is missing: cargo build --release --workspace")
    work = args.work or tempfile.mkdtemp(prefix="trtmc-validity.")
    os.makedirs(os.path.join(work, "runs"), exist_ok=True)
    release = open(args.suite).read()
    suite_text = aa_suite(release)
    known = row_ids(suite_text)
    rows = [r for r in args.rows.split(",") if r]
    for r in rows:
        if r not in known:
            sys.exit(f"validity: unknown row `{r}`; rows of the suite: {', '.join(known)}")
    suite = os.path.join(work, "validity-aa.yaml")
    open(suite, "w").write(suite_text)
    env_file = os.path.join(ROOT, "benchmarks/performance/environments/cpu.yaml")
    thresholds = re.search(r"green_max: ([\d.]+).*?yellow_max: ([\d.]+)", release, re.S)
    green, yellow = float(thresholds.group(1)), float(thresholds.group(2))
    slowdowns = [float(s) for s in args.slowdowns.split(",")]
    if args.busy:
        on_s, off_s = (float(x) for x in args.busy.split(","))
        spinner = multiprocessing.Process(target=busy, args=(on_s, off_s), daemon=True)
        spinner.start()
        print(f"second load: one core busy {on_s:g} s, idle {off_s:g} s, repeating")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"machine: {cpu}, {os.cpu_count()} cores; load before {load():.2f}; work dir {work}")
    print(f"rows: {', '.join(rows)}; slowdowns {slowdowns}; repeats {args.repeats}; thresholds green<={green}, "
          f"yellow<={yellow}", flush=True)

    records = []
    log = open(os.path.join(work, "validity.jsonl"), "w")
    for k in range(args.repeats):
        for i, row in enumerate(rows):
            order = slowdowns[(k + i) % len(slowdowns):] + slowdowns[:(k + i) % len(slowdowns)]
            for s in order:
                before = load()
                r, c, seconds = run_row(args, suite, env_file, row, s, work, f"r{k}-{i}-{s}")
                cand = r["candidate"]["samples_ms"]
                ref = r["reference"]["samples_ms"]
                old = old_rule(cand, ref, green, yellow)
                rec = {"repeat": k, "row": row, "slowdown": s, "light": c["light"],
                       "uncertain": c["uncertain"], "ratio": c["ratio"], "ci": [c["ci_low"], c["ci_high"]],
                       "rounds": c["rounds"], "seconds": seconds, "load": before, "old_light": old[0],
                       "old_ci": [old[1], old[2]]}
                records.append(rec)
                log.write(json.dumps(rec) + "\n")
                log.flush()
        print(f"repeat {k + 1}/{args.repeats} done, load {load():.2f}", flush=True)

    print()
    print("| row | slowdown | n | green | yellow | red | uncertain | interval contains the true ratio | "
          "old method green/yellow/red | old interval contains the true ratio | ratio range | wall s per row (median) | load (median) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        for s in slowdowns:
            rs = [r for r in records if r["row"] == row and r["slowdown"] == s]
            n = len(rs)
            count = lambda key, v: sum(1 for r in rs if r[key] == v)
            true = 1.0 + s
            contains = sum(1 for r in rs if r["ci"][0] <= true <= r["ci"][1])
            old_contains = sum(1 for r in rs if r["old_ci"][0] <= true <= r["old_ci"][1])
            print(f"| {row} | {s:.0%} | {n} | {count('light', 'green')} | {count('light', 'yellow')} | "
                  f"{count('light', 'red')} | {count('uncertain', True)} | {contains}/{n} | "
                  f"{count('old_light', 'green')}/{count('old_light', 'yellow')}/{count('old_light', 'red')} | "
                  f"{old_contains}/{n} | {min(r['ratio'] for r in rs):.3f}–{max(r['ratio'] for r in rs):.3f} | "
                  f"{statistics.median(r['seconds'] for r in rs):.1f} | "
                  f"{statistics.median(r['load'] for r in rs):.2f} |")
    print(f"\nraw records: {os.path.join(work, 'validity.jsonl')}")


if __name__ == "__main__":
    main()
