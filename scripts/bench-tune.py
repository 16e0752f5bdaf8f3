#!/usr/bin/env python3
"""Racing against exhaustive (`--search full`) on one route space, interleaved (full, racing, full, ...).

For each pair: the measurement time each spent (`counts.measurement_ms_this_session`, calls too) and the
quality of racing's pick, judged by the exhaustive run of the same pair: cost(racing's pick) /
cost(exhaustive winner), both from the exhaustive run's search estimates (p50). Ratios only: absolute
times drift between runs on this shared machine.

usage: scripts/bench-tune.py BIN OUT_DIR PAIRS -- <tune arguments without --search/-o>
"""

import json
import statistics
import subprocess
import sys
from pathlib import Path


def run(bin_, out, search, args):
    cmd = [bin_, "tune", *args, "--search", search, "-o", str(out), "--quiet"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr}")
    return json.loads((out / "tuning-summary.json").read_text())


def estimates(summary):
    return {
        r["route"]: r["search"]["value"]
        for r in summary["routes"]
        if r.get("eligible") and r.get("search")
    }


def phase_ms(out):
    """Steady-state measurement time per phase, from the tuning cache (sum of samples_ms)."""
    totals = {}
    lines = (out / "tuning-cache.jsonl").read_text().splitlines()[1:]
    for line in filter(None, lines):
        rec = json.loads(line)
        phase = "final" if rec["phase"] == "final" else "search"
        totals[phase] = totals.get(phase, 0.0) + sum(rec.get("samples_ms") or [])
    return totals


def pick(summary):
    d = summary["decision"]
    if d.get("route"):
        return d["route"]
    # A tie: the tied route with the best search estimate.
    est = estimates(summary)
    tied = [r for r in d.get("tied_routes", []) if r in est] or list(est)
    return min(tied, key=est.get)


def main():
    bin_, out, pairs = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    args = sys.argv[sys.argv.index("--") + 1 :]
    rows = []
    for i in range(pairs):
        full = run(bin_, out / f"full-{i}", "full", args)
        race = run(bin_, out / f"racing-{i}", "racing", args)
        est = estimates(full)
        best = min(est.values())
        chosen = pick(race)
        row = {
            "routes": full["counts"]["evaluated"],
            "full_decision": full["decision"]["kind"],
            "full_pick": pick(full),
            "racing_decision": race["decision"]["kind"],
            "racing_pick": chosen,
            "quality": est[chosen] / best,
            "time_ratio": race["counts"]["measurement_ms_this_session"]
            / full["counts"]["measurement_ms_this_session"],
            "calls_ratio": race["counts"]["measurement_calls_this_session"]
            / full["counts"]["measurement_calls_this_session"],
            # The search alone (racing rounds vs every route's calls), without the head-to-head both do.
            "search_time_ratio": phase_ms(out / f"racing-{i}")["search"]
            / phase_ms(out / f"full-{i}")["search"],
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    for key in ["quality", "time_ratio", "calls_ratio", "search_time_ratio"]:
        values = [r[key] for r in rows]
        print(f"{key}: median {statistics.median(values):.3f}, max {max(values):.3f}")


if __name__ == "__main__":
    main()
