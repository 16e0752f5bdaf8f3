#!/usr/bin/env bash
# Benchmarks of the reports (issue 7), recorded in docs/performance.md under `## report`:
#   1. a synthetic 100-case collection (10 run directories x 10 cases, 500 observations each, sweeps,
#      drift, slowdowns, outliers; written by crates/report/examples/report_bench.rs): size of report.html
#      and report.json, and the wall time of `trtmc-bench report DIR` (hyperfine);
#   2. a 1000-row table page built from the shared components (the matrix report's table), opened from
#      file:// in headless Chromium: the page's own data-ready-ms (navigation start to the first layout of
#      every row plus the script) and the wall time of a whole Chromium launch, interleaved A B A B with the
#      same page holding one row, as a difference and a ratio.
# Needs: a release build, hyperfine, Debian's chromium. ROUNDS (default 8) interleaved Chromium rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-8}
CASES=${CASES:-100}
ROWS=${ROWS:-1000}
cargo build --release -q --workspace --bins --examples
BIN=target/release/trtmc-bench
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

echo "== machine: $(nproc) cores, $(uptime | sed 's/.*load average/load average/')"
echo "== 1. ${CASES}-case collection report"
target/release/examples/report_bench "$WORK" "$CASES" "$ROWS"
ls -l "$WORK/collection/report.html" "$WORK/collection/report.json" | awk '{print $5, $9}'
hyperfine -N --warmup 2 --runs 15 "$BIN report $WORK/collection --quiet" 2>/dev/null | grep -E "Time|Range"

echo "== 2. ${ROWS}-row table in headless Chromium ($ROUNDS interleaved rounds)"
python3 - "$WORK" "$ROUNDS" <<'PY'
import re, statistics, subprocess, sys, tempfile, time
work, rounds = sys.argv[1], int(sys.argv[2])
flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]
def launch(page):
    with tempfile.TemporaryDirectory() as profile:
        t0 = time.monotonic()
        out = subprocess.run(["chromium", *flags, f"--user-data-dir={profile}", "--dump-dom",
                              f"file://{work}/{page}"], capture_output=True, text=True, timeout=120).stdout
        wall = time.monotonic() - t0
    ready = re.search(r'data-ready-ms="(\d+)"', out)
    errors = re.search(r'data-report-errors="(\d+)"', out)
    assert ready and errors and errors.group(1) == "0", f"{page} did not finish cleanly"
    return wall, int(ready.group(1))
launch("matrix-baseline.html")  # warm the disk cache
walls = {"matrix.html": [], "matrix-baseline.html": []}
ready = {"matrix.html": [], "matrix-baseline.html": []}
for r in range(rounds):
    for page in ("matrix-baseline.html", "matrix.html"):
        w, ms = launch(page)
        walls[page].append(w); ready[page].append(ms)
    a, b = walls["matrix.html"][-1], walls["matrix-baseline.html"][-1]
    print(f"round {r}: 1000 rows {a:.2f} s (ready {ready['matrix.html'][-1]} ms), "
          f"1 row {b:.2f} s (ready {ready['matrix-baseline.html'][-1]} ms), ratio {a/b:.3f}")
med = statistics.median
ratios = [a / b for a, b in zip(walls["matrix.html"], walls["matrix-baseline.html"])]
diffs = [a - b for a, b in zip(walls["matrix.html"], walls["matrix-baseline.html"])]
print(f"data-ready-ms median: 1000 rows {med(ready['matrix.html'])} ms, 1 row {med(ready['matrix-baseline.html'])} ms")
print(f"launch wall median: 1000 rows {med(walls['matrix.html']):.2f} s, 1 row {med(walls['matrix-baseline.html']):.2f} s; "
      f"difference {med(diffs):.2f} s, ratio {med(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")
w, ms = launch("collection/report.html")
print(f"the collection report in Chromium: launch {w:.2f} s, data-ready-ms {ms}")
PY
