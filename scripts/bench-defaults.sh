#!/usr/bin/env bash
# Default-run benchmark (issue 15, recorded in docs/performance.md): runs every ready catalog profile with
# its defaults (`run --model M`, nothing else) one after another and prints one Markdown row per profile:
# wall time of the whole command (build excluded: bundles are built first, untimed), timed calls, loop
# duration, p50, and the validity verdict with its unmet constraints.
#   BIN=path/to/trtmc-bench (default target/release/trtmc-bench; this script never rebuilds)
#   MODELS="tiny-cnn tiny-gpt" to run a subset.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/trtmc-bench}
[ -x "$BIN" ] || { echo "bench-defaults: $BIN is missing: cargo build --release -p trtmc-bench" >&2; exit 7; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
MODELS=${MODELS:-$("$BIN" list models --format json | python3 -c '
import json, sys
for m in json.load(sys.stdin)["models"]:
    if m.get("status") == "ready":
        print(m["name"])')}
echo "| profile | wall s | calls | loop s | p50 ms | verdict |"
echo "| --- | ---: | ---: | ---: | ---: | --- |"
for m in $MODELS; do
  # Build (or find) the bundle first so the timed command measures only the run.
  "$BIN" run --model "$m" --iterations 1 --warmup 0 -o "$WORK/build-$m" >/dev/null 2>&1 || true
  start=$(date +%s.%N)
  rc=0
  "$BIN" run --model "$m" -o "$WORK/$m" --format json >"$WORK/$m.json" 2>"$WORK/$m.err" || rc=$?
  end=$(date +%s.%N)
  python3 - "$m" "$start" "$end" "$rc" "$WORK/$m.json" "$WORK/$m.err" <<'PY'
import json, sys
m, start, end, rc, path, err = sys.argv[1:]
wall = float(end) - float(start)
try:
    doc = json.load(open(path))
    c = doc["cases"][0]
except Exception:
    tail = open(err).read().strip().splitlines()[-1:] or ["?"]
    print(f"| {m} | {wall:.1f} | | | | exit {rc}: {tail[0][:80]} |")
    sys.exit(0)
v = c.get("validity") or {}
verdict = "VALID" if v.get("valid") else "INVALID"
why = "; ".join(k["name"] for k in v.get("constraints", []) if not k.get("met"))
lat = c.get("latency_ms") or {}
p50 = lat.get("p50")
print(f"| {m} | {wall:.1f} | {c.get('samples')} | {c.get('duration_s') or 0:.2f} | "
      f"{p50:.3g} | {verdict}{' (' + why + ')' if why else ''} |" if p50 is not None else
      f"| {m} | {wall:.1f} | {c.get('samples')} | | | {c.get('status')} |")
PY
done
