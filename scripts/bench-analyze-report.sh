#!/usr/bin/env bash
# Measures the report package of a large engine (the ResNet18 fp16 TREx fixture replicated COPIES
# times, default 400 → 14,400 layers, as scripts/bench-analyze.sh): the size of each file and of the
# folder, and how soon the page is usable in headless Chromium.
#
# "Usable" is app.js's first render, laid out: app.js writes performance.now() at that point (ms
# since the navigation started, so reading and parsing data.js are included) into
# <body data-report-ms>, read here from `chromium --dump-dom`. Also timed: a whole headless
# `--screenshot` run (browser start, load, render, paint) next to the same run on an empty page.
# Medians over RUNS rounds, interleaved.
#
#   scripts/bench-analyze-report.sh              # builds the analyze_folder example (debug), packages
#   scripts/bench-analyze-report.sh DIR [DIR…]   # measures existing report folders, interleaved
#
# A report folder made by an earlier version has no data-report-ms marker: add the two lines of
# app.js `finish()` that write it (docs/performance.md, "analyze: the report package").
#
# Environment: COPIES (400), RUNS (5), TRTMC_BIN (default target/debug/examples/analyze_folder; a
# trtmc-bench binary works too: the package does not depend on the build profile), TRTMC_CHROMIUM
# (default chromium), TRTMC_FIXTURES.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/bench-analyze-settings.sh
. "$repo/scripts/bench-analyze-settings.sh"
chromium="${TRTMC_CHROMIUM:-chromium}"
work="$(mktemp -d "${TMPDIR:-/tmp}/bench-analyze-report.XXXXXX")"
trap 'rm -rf "$work"' EXIT
command -v "$chromium" >/dev/null || { echo "bench-analyze-report: $chromium not found (set TRTMC_CHROMIUM)" >&2; exit 7; }

# The folders to measure: the arguments, or one packaged here.
reports=("$@")
if [ ${#reports[@]} -eq 0 ]; then
  bin="${TRTMC_BIN:-$repo/target/debug/examples/analyze_folder}"
  if [ -z "${TRTMC_BIN:-}" ]; then
    (cd "$repo" && cargo build -p trtmc-analyze --example analyze_folder >&2)
  fi
  python3 "$repo/scripts/gen-large-engine.py" "$fixtures/trex" "$work" "$copies"
  mkdir -p "$work/in" && mv "$work/layers_x.json" "$work/profile_x.json" "$work/in/"
  case "$(basename "$bin")" in
    analyze_folder) "$bin" "$work/in" "$work/out" --package >/dev/null 2>&1; reports=("$work/out/report") ;;
    *) "$bin" analyze package "$work/in" --report-dir "$work/report" --quiet >/dev/null; reports=("$work/report") ;;
  esac
fi

echo '<!doctype html><html><body>empty</body></html>' >"$work/empty.html"
chrome() {
  "$chromium" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --no-first-run --user-data-dir="$work/profile" "$@" 2>/dev/null
}
# timed LABEL CMD...: the command's wall seconds, appended to $work/LABEL.runs
timed() {
  local label="$1"; shift
  local start end
  start="$(date +%s.%N)"
  "$@" >/dev/null
  end="$(date +%s.%N)"
  awk -v s="$start" -v e="$end" 'BEGIN {printf "%.3f\n", e - s}' >>"$work/$label.runs"
}
median() { sort -g "$work/$1.runs" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for i in "${!reports[@]}"; do
  r="${reports[$i]}"
  [ -f "$r/index.html" ] || { echo "bench-analyze-report: no report at $r" >&2; exit 3; }
  echo "report $i: $r"
  for f in data.js analysis.json analyze-data.json app.js index.html styles.css; do
    if [ -f "$r/$f" ]; then printf '  %-20s %12d bytes\n' "$f" "$(stat -c %s "$r/$f")"; fi
  done
  printf '  %-20s %12d bytes\n' "folder" "$(du -sb "$r" | cut -f1)"
done

# Interleaved: each round loads every folder once, then the empty page.
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$runs"); do
  for i in "${!reports[@]}"; do
    r="${reports[$i]}"
    rm -rf "$work/profile"
    chrome --dump-dom "file://$r/index.html" >"$work/dom.html"
    ms="$(grep -o 'data-report-ms="[0-9]*"' "$work/dom.html" | head -1 | tr -dc 0-9)"
    [ -n "$ms" ] || { echo "bench-analyze-report: $r did not report data-report-ms" >&2; exit 1; }
    grep -q 'data-report-errors="0"' "$work/dom.html" || { echo "bench-analyze-report: $r reported page errors" >&2; exit 1; }
    echo "$ms" >>"$work/usable$i.runs"
    rm -rf "$work/profile"
    timed "shot$i" chrome --window-size=1400,3200 --screenshot="$work/shot.png" "file://$r/index.html"
  done
  rm -rf "$work/profile"
  timed empty chrome --window-size=1400,3200 --screenshot="$work/shot.png" "file://$work/empty.html"
done
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $("$chromium" --version 2>/dev/null | head -1)"
echo "load average before: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg); $runs interleaved rounds"
for i in "${!reports[@]}"; do
  echo "report $i: usable (data-report-ms) median $(median "usable$i") ms [$(tr '\n' ' ' <"$work/usable$i.runs")]; headless screenshot run median $(median "shot$i") s [$(tr '\n' ' ' <"$work/shot$i.runs")]"
done
echo "empty page: headless screenshot run median $(median empty) s [$(tr '\n' ' ' <"$work/empty.runs")]"
