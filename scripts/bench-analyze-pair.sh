#!/usr/bin/env bash
# Wall and CPU time of a two-build comparison (`analyze --data A… --data B…`) for two binaries,
# interleaved round by round: the 14,400-layer engine of scripts/bench-analyze.sh as both builds.
# Prints each binary's median wall and CPU time, the new/old ratios and the load average.
#
#   OLD_BIN=/path/to/old/trtmc-bench NEW_BIN=target/release/trtmc-bench RUNS=7 scripts/bench-analyze-pair.sh
#
# Environment: OLD_BIN, NEW_BIN (required), COPIES (400), RUNS (5), SETTLE_S (1), TRTMC_FIXTURES.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/bench-analyze-settings.sh
. "$repo/scripts/bench-analyze-settings.sh"
: "${OLD_BIN:?set OLD_BIN to the binary to compare against}"
: "${NEW_BIN:?set NEW_BIN to the binary under test}"
for tool in python3 /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "bench-analyze-pair: $tool is required" >&2; exit 7; }
done
for bin in "$OLD_BIN" "$NEW_BIN"; do
  [ -x "$bin" ] || { echo "bench-analyze-pair: $bin is not an executable" >&2; exit 4; }
done
work="$(mktemp -d "${TMPDIR:-/tmp}/bench-analyze-pair.XXXXXX")"
trap 'rm -rf "$work"' EXIT

python3 "$repo/scripts/gen-large-engine.py" "$fixtures/trex" "$work" "$copies"
mkdir -p "$work/a" "$work/b"
cp "$work/layers_x.json" "$work/profile_x.json" "$work/a/"
mv "$work/layers_x.json" "$work/profile_x.json" "$work/b/"

run_once() {
  local label="$1" bin="$2"
  rm -f "$work/analysis.json"
  sync; sleep "$settle"
  /usr/bin/time -v -o "$work/time.txt" "$bin" analyze -q \
    --data "$work/a/layers_x.json" "$work/a/profile_x.json" --label a \
    --data "$work/b/layers_x.json" "$work/b/profile_x.json" --label b \
    -o "$work/analysis.json" >/dev/null 2>"$work/stderr.txt" \
    || { cat "$work/stderr.txt" >&2; echo "bench-analyze-pair: $label failed" >&2; exit 1; }
  awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,p,":"); w=0; for(i=1;i<=n;i++) w=w*60+p[i]}
              /(User|System) time \(seconds\)/ {c+=$2}
              END {print w, c}' "$work/time.txt" >>"$work/$label.runs"
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$runs"); do
  run_once old "$OLD_BIN"
  run_once new "$NEW_BIN"
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
for label in old new; do
  wall="$(cut -d' ' -f1 "$work/$label.runs" | median)"
  cpu="$(cut -d' ' -f2 "$work/$label.runs" | median)"
  echo "$label: median wall ${wall} s, median CPU ${cpu} s ($runs runs: $(cut -d' ' -f1 "$work/$label.runs" | tr '\n' ' '))"
  eval "${label}_wall=$wall ${label}_cpu=$cpu"
done
awk -v ow="$old_wall" -v nw="$new_wall" -v oc="$old_cpu" -v nc="$new_cpu" \
  'BEGIN {printf "new/old: wall %.3f, CPU %.3f\n", nw/ow, nc/oc}'
echo "load average before: $load_before; after: $load_after ($(nproc) CPUs)"
