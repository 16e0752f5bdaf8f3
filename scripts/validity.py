#!/usr/bin/env python3
"""Validity benchmark of the matrix lights (docs/statistics.md): do identical things come out green and
real slowdowns red, at a suite's counts, on this machine, and how many rows stay undecided?

Runs every selected row of the release suite as an A/A row (its reference switched to `trtmc:<the
candidate's runtime>`) REPEATS times with no slowdown and with each injected candidate-only slowdown
(TRTMC_TEST_MATRIX_CANDIDATE_SLOWDOWN under TRTMC_TEST=1: after each timed call of the candidate, a
busy wait of that fraction of the call's own duration). The realized ratio of a slowdown is above its
nominal 1 + fraction (the busy wait competes with the runtime's threads, docs/run.md's hook table), so
coverage is counted against the realized ratio: the median of every per-round ratio of that row and
slowdown over all repeats (and against the nominal one, next to it). Scenarios of one repeat run back to
back, their order rotating, so a change of machine load falls on all of them.

Prints the issue-32 table (A/A green, never red, coverage; 30 % red; 10 % at least yellow; undecided
rows; rounds; wall time; load) and a detailed table per row and slowdown. Raw records go to
WORK/validity.jsonl.

--rows      row ids of the suite, or any unique part of one (`tiny-gpt/sampled/tract`); default: four
            rows that are not tiny-cnn
--counts    `suite` (the shipped counts) or `KEY=VALUE,...` over each selected row's measure
            (`rounds=8,max_rounds=18,iterations=32,max_seconds=25`)
--slowdowns fractions, 0 for A/A (default 0,0.1,0.3)
--load      `idle` (nothing added), `cores` (a second process busy on every core for the whole run) or
            `ON,OFF` (one core busy ON seconds then idle OFF seconds, repeating)

Usage: scripts/validity.py [--repeats 40] [--rows ...] [--counts suite] [--slowdowns 0,0.1,0.3]
                           [--load idle] [--work DIR] [--bin $CARGO_TARGET_DIR/release/trtmc-bench]
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


DEFAULT_ROWS = ["tiny-gpt/sampled/tract", "tiny-encoder/batch4/onnxruntime",
                "tiny-segnet/batch4/tract", "tiny-detector.detect/tiny-detector/"]


def resolve_rows(specs, known):
    """Each spec is a row id or a unique part of one; the last default also needs onnxruntime."""
    rows = []
    for spec in specs:
        hits = [k for k in known if spec in k]
        if spec.endswith("/") and len(hits) > 1:
            hits = [k for k in hits if k.endswith("/onnxruntime")]
        if len(hits) != 1:
            sys.exit(f"validity: `{spec}` matches {len(hits)} rows; rows of the suite: {', '.join(known)}")
        rows.append(hits[0])
    return rows


def with_counts(suite_text, rows, counts):
    """The suite with each selected row's `measure:` replaced by its own measure overlaid with `counts`."""
    if counts == "suite":
        return suite_text
    extra = dict(kv.split("=", 1) for kv in counts.split(",") if kv)
    head, *blocks = suite_text.split("\n  - entry: ")
    out = [head]
    for block in blocks:
        entry = block.split("\n", 1)[0].strip()
        model = re.search(r"\n\s+model: (\S+)", block).group(1)
        case = re.search(r"\n\s+testcase: (\S+)", block).group(1)
        runtime = re.search(r"candidate: \{runtime: (\w+)", block).group(1)
        if f"{entry}/{model}/{case}/{runtime}" in rows:
            m = re.search(r"\n(\s+)measure: \{([^}]*)\}", block)
            current = dict(kv.strip().split(": ", 1) for kv in m.group(2).split(",") if kv.strip()) if m else {}
            current.update(extra)
            line = "measure: {" + ", ".join(f"{k}: {v}" for k, v in current.items()) + "}"
            if m:
                block = block[:m.start()] + f"\n{m.group(1)}{line}" + block[m.end():]
            else:
                block = block.rstrip("\n") + f"\n    {line}\n"
        out.append(block)
    return "\n  - entry: ".join(out)


def spin():
    while True:
        pass


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


def pct(k, n):
    return f"{k}/{n} ({100 * k / n:.0f} %)" if n else "–"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=40)
    ap.add_argument("--rows", default=",".join(DEFAULT_ROWS))
    ap.add_argument("--counts", default="suite")
    ap.add_argument("--slowdowns", default="0,0.1,0.3")
    ap.add_argument("--load", default="idle", help="idle, cores, or ON,OFF seconds of one busy core")
    ap.add_argument("--busy", default=None, help="old spelling of --load ON,OFF")
    ap.add_argument("--work", default=None)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    ap.add_argument("--bin", default=os.path.join(target, "release/trtmc-bench"))
    ap.add_argument("--suite", default=os.path.join(ROOT, "benchmarks/performance/release.yaml"))
    args = ap.parse_args()
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"validity: {args.bin} is missing: cargo build --release --workspace")
    work = args.work or tempfile.mkdtemp(prefix="trtmc-validity.")
    os.makedirs(os.path.join(work, "runs"), exist_ok=True)
    release = open(args.suite).read()
    known = row_ids(aa_suite(release))
    rows = resolve_rows([r for r in args.rows.split(",") if r], known)
    suite_text = with_counts(aa_suite(release), rows, args.counts)
    suite = os.path.join(work, "validity-aa.yaml")
    open(suite, "w").write(suite_text)
    env_file = os.path.join(ROOT, "benchmarks/performance/environments/cpu.yaml")
    thresholds = re.search(r"green_max: ([\d.]+).*?yellow_max: ([\d.]+)", release, re.S)
    green, yellow = float(thresholds.group(1)), float(thresholds.group(2))
    slowdowns = [float(s) for s in args.slowdowns.split(",")]
    pattern = args.busy or args.load
    spinners = []
    if pattern == "cores":
        spinners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(os.cpu_count())]
        print(f"second load: a process busy on each of the {os.cpu_count()} cores, all the time")
    elif pattern != "idle":
        on_s, off_s = (float(x) for x in pattern.split(","))
        spinners = [multiprocessing.Process(target=busy, args=(on_s, off_s), daemon=True)]
        print(f"second load: one core busy {on_s:g} s, idle {off_s:g} s, repeating")
    for p in spinners:
        p.start()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"machine: {cpu}, {os.cpu_count()} cores; load before {load():.2f}; work dir {work}")
    print(f"rows: {', '.join(rows)}; counts {args.counts}; slowdowns {slowdowns}; repeats {args.repeats}; "
          f"thresholds green<={green}, yellow<={yellow}", flush=True)

    records = []
    log = open(os.path.join(work, "validity.jsonl"), "w")
    started = time.monotonic()
    for k in range(args.repeats):
        for i, row in enumerate(rows):
            order = slowdowns[(k + i) % len(slowdowns):] + slowdowns[:(k + i) % len(slowdowns)]
            for s in order:
                before = load()
                r, c, seconds = run_row(args, suite, env_file, row, s, work, f"r{k}-{i}-{s}")
                cand = r["candidate"]["samples_ms"]
                ref = r["reference"]["samples_ms"]
                old = old_rule(cand, ref, green, yellow)
                per_round = [a / b for a, b in zip(r["candidate"]["round_p50_ms"], r["reference"]["round_p50_ms"])
                             if b > 0]
                rec = {"repeat": k, "row": row, "slowdown": s, "light": c["light"],
                       "uncertain": c["uncertain"], "ratio": c["ratio"], "ci": [c["ci_low"], c["ci_high"]],
                       "rounds": c["rounds"], "stopped_by": c.get("stopped_by"), "round_ratios": per_round,
                       "seconds": seconds, "load": before, "old_light": old[0], "old_ci": [old[1], old[2]]}
                records.append(rec)
                log.write(json.dumps(rec) + "\n")
                log.flush()
        print(f"repeat {k + 1}/{args.repeats} done, load {load():.2f}", flush=True)
    wall = time.monotonic() - started
    for p in spinners:
        p.terminate()

    def of(row, s):
        return [r for r in records if r["row"] == row and r["slowdown"] == s]

    def realized(rs):
        ratios = [x for r in rs for x in r["round_ratios"]]
        return statistics.median(ratios) if ratios else float("nan")

    loads = [r["load"] for r in records]
    print()
    print(f"load while measuring: median {statistics.median(loads):.2f}, range {min(loads):.2f}–{max(loads):.2f}; "
          f"wall {wall / 60:.1f} min")
    print()
    print("| suite counts | row | A/A green | A/A red | A/A interval contains 1 | 30 % slowdown red | "
          "10 % slowdown ≥ yellow | uncertain (all scenarios) | rounds (median) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        aa = of(row, 0.0)
        s30, s10 = of(row, 0.3), of(row, 0.1)
        every = [r for r in records if r["row"] == row]
        cells = [
            pct(sum(r["light"] == "green" for r in aa), len(aa)),
            pct(sum(r["light"] == "red" for r in aa), len(aa)),
            pct(sum(r["ci"][0] <= 1.0 <= r["ci"][1] for r in aa), len(aa)),
            pct(sum(r["light"] == "red" for r in s30), len(s30)),
            pct(sum(r["light"] != "green" for r in s10), len(s10)),
            pct(sum(r["uncertain"] for r in every), len(every)),
            f"{statistics.median(r['rounds'] for r in every):g}",
        ]
        print(f"| {args.counts} | {row} | " + " | ".join(cells) + " |")

    print()
    print("| row | slowdown | realized ratio | n | green | yellow | red | uncertain | stopped by (decided/max_rounds/max_seconds) | "
          "interval contains the realized ratio | … the nominal ratio | old method green/yellow/red | "
          "ratio range | wall s per row (median) | load (median) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        for s in slowdowns:
            rs = of(row, s)
            n = len(rs)
            if not n:
                continue
            count = lambda key, v: sum(1 for r in rs if r[key] == v)
            true = 1.0 if s == 0 else realized(rs)
            contains = sum(1 for r in rs if r["ci"][0] <= true <= r["ci"][1])
            nominal = sum(1 for r in rs if r["ci"][0] <= 1.0 + s <= r["ci"][1])
            stops = "/".join(str(count("stopped_by", k)) for k in ("decided", "max_rounds", "max_seconds"))
            print(f"| {row} | {s:.0%} | {true:.3f} | {n} | {count('light', 'green')} | {count('light', 'yellow')} | "
                  f"{count('light', 'red')} | {count('uncertain', True)} | {stops} | {contains}/{n} | {nominal}/{n} | "
                  f"{count('old_light', 'green')}/{count('old_light', 'yellow')}/{count('old_light', 'red')} | "
                  f"{min(r['ratio'] for r in rs):.3f}–{max(r['ratio'] for r in rs):.3f} | "
                  f"{statistics.median(r['seconds'] for r in rs):.1f} | "
                  f"{statistics.median(r['load'] for r in rs):.2f} |")
    print(f"\nraw records: {os.path.join(work, 'validity.jsonl')}")


if __name__ == "__main__":
    main()
