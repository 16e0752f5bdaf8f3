#!/usr/bin/env python3
"""Validity of `trtmc-bench history` change points on real series (docs/statistics.md, issue 38).

For each repetition, three series of POINTS real `run`s of tiny-cnn on tract are measured, their runs
interleaved point by point (so a change of machine speed falls on all three): an A/A series, and
series whose calls are made 10 % and 30 % slower from point CHANGE_AT on by the run's test hook
(TRTMC_TEST_CALL_SLOWDOWN under TRTMC_TEST=1: after each timed call, a busy wait of that fraction of
the call's own duration, so the true ratio is exact whatever the machine's speed). Each series goes
into its own SQLite database with commits c01…c20, and `history report` says where the p50 series
changed.

Prints a Markdown table: per scenario, in how many repetitions exactly the injected change was found
at CHANGE_AT ± 1 (a slowdown), and how many other changes were reported. Raw records go to
WORK/history-validity.jsonl.

Usage: scripts/history-validity.py [--repeats 10] [--points 20] [--change-at 12] [--iterations 300]
                                   [--slowdowns 0,0.1,0.3] [--work DIR] [--bin target/release/trtmc-bench]
Not a test: 3 x POINTS x REPEATS runs (about 20 minutes at the defaults on a loaded 2-core machine).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sh(args, env=None):
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(args)}\n{p.stderr}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--points", type=int, default=20)
    ap.add_argument("--change-at", type=int, default=12, help="first slower point, from 1")
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--slowdowns", default="0,0.1,0.3")
    ap.add_argument("--work", default=None)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/trtmc-bench"))
    a = ap.parse_args()
    slowdowns = [float(s) for s in a.slowdowns.split(",")]
    work = a.work or tempfile.mkdtemp(prefix="history-validity-")
    os.makedirs(work, exist_ok=True)
    cache = os.path.join(work, "cache")
    records = open(os.path.join(work, "history-validity.jsonl"), "a")
    base_env = dict(os.environ, TRTMC_TEST="1")
    base_env.pop("TRTMC_TEST_CALL_SLOWDOWN", None)
    results = {s: [] for s in slowdowns}
    started = time.time()
    for rep in range(a.repeats):
        dbs = {s: os.path.join(work, f"rep{rep:02}-slow{s}.sqlite") for s in slowdowns}
        for point in range(1, a.points + 1):
            order = slowdowns[point % len(slowdowns):] + slowdowns[: point % len(slowdowns)]
            for s in order:
                out = os.path.join(work, f"rep{rep:02}-slow{s}-p{point:02}")
                env = dict(base_env)
                if s > 0 and point >= a.change_at:
                    env["TRTMC_TEST_CALL_SLOWDOWN"] = str(s)
                sh([a.bin, "run", "--model", "tiny-cnn", "--runtime", "tract", "--warmup", "20",
                    "--iterations", str(a.iterations), "--bundle-cache", cache, "-o", out, "-q"], env)
                sh([a.bin, "history", "add", "--db", dbs[s], "--commit", f"c{point:02}", out], base_env)
        for s in slowdowns:
            report = os.path.join(work, f"rep{rep:02}-slow{s}-report")
            sh([a.bin, "history", "report", "--db", dbs[s], "-o", report], base_env)
            doc = json.load(open(os.path.join(report, "history.json")))
            changes = [
                {"at": c["at"] + 1, "direction": c["direction"], "ratio": c["ratio"]}
                for series in doc["series"] if series["series"]["metric"] == "p50_ms"
                for c in series["changes"]
            ]
            p50 = [p["estimate"] for series in doc["series"] if series["series"]["metric"] == "p50_ms"
                   for p in series["points"]]
            rec = {"repeat": rep, "slowdown": s, "changes": changes, "p50_ms": p50}
            results[s].append(rec)
            records.write(json.dumps(rec) + "\n")
            records.flush()
        print(f"repeat {rep + 1}/{a.repeats} done after {time.time() - started:.0f} s", file=sys.stderr)

    print(f"| scenario | repeats | injected change found at point {a.change_at} ± 1 | other changes reported | found ratios |")
    print("| --- | --- | --- | --- | --- |")
    for s in slowdowns:
        recs = results[s]
        if s == 0:
            hit = "–"
            other = sum(len(r["changes"]) for r in recs)
            ratios = ""
        else:
            hits = [r for r in recs if any(c["direction"] == "slowdown" and abs(c["at"] - a.change_at) <= 1
                                           for c in r["changes"])]
            hit = f"{len(hits)} of {len(recs)}"
            other = sum(len([c for c in r["changes"] if not (c["direction"] == "slowdown"
                                                             and abs(c["at"] - a.change_at) <= 1)])
                        for r in recs)
            ratios = ", ".join(f"{c['ratio']['ratio']:.3f}" for r in hits for c in r["changes"]
                               if abs(c["at"] - a.change_at) <= 1)
        name = "A/A" if s == 0 else f"{s * 100:.0f} % slowdown"
        print(f"| {name} | {len(recs)} | {hit} | {other} | {ratios} |")
    print(f"\nwall time {time.time() - started:.0f} s; records in {work}", file=sys.stderr)


if __name__ == "__main__":
    main()
