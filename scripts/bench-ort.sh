#!/usr/bin/env bash
# ONNX Runtime through trtmc's worker against ONNX Runtime's own Python loop (reference/ort_reference.py)
# on light_resnet50 (seeded random weights, IR 8), at 1 and 2 intra-op threads, measured interleaved in one run: each round runs every
# side once, and the order of the two sides alternates from round to round (A B, then B A). Both sides
# get the same inputs (written by trtmc from the worker's seeded synthesis), warm-ups and call count.
#
# Then the knobs: ORT's graph optimization level of the offline-optimized bundle (disable vs all) and
# tract's executor threads (1 vs 2), interleaved the same way.
#
# Usage: scripts/bench-ort.sh [WORK_DIR]      (env: ROUNDS=10 WARMUP=5 ITERATIONS=30 MODEL=light-resnet50-rand
#        TRTMC_BIN=target/release/trtmc-bench)
# Needs: a release build (cargo build --release --workspace), python3 with numpy and onnxruntime.
# Prints a Markdown table; raw per-run results stay in WORK_DIR. Never uses more threads than cores.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-10}
WARMUP=${WARMUP:-5}
ITERATIONS=${ITERATIONS:-30}
MODEL=${MODEL:-light-resnet50-rand}
WORK=${1:-$(mktemp -d -t trtmc-bench-ort.XXXXXX)}
BIN=${TRTMC_BIN:-target/release/trtmc-bench}
PYTHON=${TRTMC_PYTHON:-python3}
CORES=$(nproc)

[ -x "$BIN" ] || { echo "bench-ort: $BIN is missing: cargo build --release --workspace" >&2; exit 7; }
mkdir -p "$WORK"
CACHE="$WORK/cache"

idle() { # percent idle over 2 s, from /proc/stat
  "$PYTHON" - <<'EOF'
import time
def read():
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return f[3] + f[4], sum(f)
i0, t0 = read(); time.sleep(2); i1, t1 = read()
print(f"{100.0 * (i1 - i0) / max(t1 - t0, 1):.0f}")
EOF
}
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $CORES cores; idle before: $(idle)%"
echo "work dir: $WORK; rounds $ROUNDS, warm-up $WARMUP, iterations $ITERATIONS, model $MODEL"

# Bundles (built once, outside every measurement) and the reference's inputs and request.
"$BIN" compare --model "$MODEL" --runtime onnxruntime --save-inputs "$WORK/ref" --bundle-cache "$CACHE" >/dev/null
for level in disable all; do
  "$BIN" run --model "$MODEL" --runtime onnxruntime --set build.optimization_level=$level --warmup 0 --iterations 1 \
    --telemetry off -q --bundle-cache "$CACHE" -o "$WORK/prebuild-$level" >/dev/null
done
"$BIN" run --model "$MODEL" --runtime tract --warmup 0 --iterations 1 --telemetry off -q --bundle-cache "$CACHE" -o "$WORK/prebuild-tract" >/dev/null

threads_list="1"
[ "$CORES" -ge 2 ] && threads_list="1 2"
for t in $threads_list; do
  "$PYTHON" - "$WORK/ref/reference-request.json" "$WORK/request-$t.json" "$t" "$WARMUP" "$ITERATIONS" <<'EOF'
import json, sys
src, dst, threads, warmup, iterations = sys.argv[1:]
r = json.load(open(src))
r.update(threads=int(threads), warmup=int(warmup), iterations=int(iterations))
json.dump(r, open(dst, "w"), indent=2)
EOF
done

ours() { # name threads level round
  "$BIN" run --model "$MODEL" --runtime onnxruntime --set "runtime.intra_threads=$2" --set "build.optimization_level=$3" \
    --warmup "$WARMUP" --iterations "$ITERATIONS" --telemetry off -q --no-build --bundle-cache "$CACHE" -o "$WORK/$1" >/dev/null
}
theirs() { # name threads
  "$PYTHON" reference/ort_reference.py "$WORK/request-$2.json" "$WORK/$1.json" >/dev/null
}
tract() { # name threads
  "$BIN" run --model "$MODEL" --runtime tract --set "runtime.threads=$2" --warmup "$WARMUP" --iterations "$ITERATIONS" \
    --telemetry off -q --no-build --bundle-cache "$CACHE" -o "$WORK/$1" >/dev/null
}

for r in $(seq 1 "$ROUNDS"); do
  for t in $threads_list; do
    if [ $((r % 2)) -eq 1 ]; then
      ours "worker-t$t-r$r" "$t" all; theirs "python-t$t-r$r" "$t"
    else
      theirs "python-t$t-r$r" "$t"; ours "worker-t$t-r$r" "$t" all
    fi
  done
  if [ $((r % 2)) -eq 1 ]; then
    ours "level-disable-r$r" 1 disable; ours "level-all-r$r" 1 all
  else
    ours "level-all-r$r" 1 all; ours "level-disable-r$r" 1 disable
  fi
  for t in $threads_list; do tract "tract-t$t-r$r" "$t"; done
  echo "round $r/$ROUNDS done (idle now $(idle)%)" >&2
done

"$PYTHON" - "$WORK" "$ROUNDS" "$threads_list" <<'EOF'
import json, os, statistics, sys
work, rounds, threads = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()

def worker(name):
    doc = json.load(open(os.path.join(work, name, "result.json")))
    case = doc["cases"][0]
    assert case["status"] == "completed", case["error"]
    return case["metrics"]["latency_ms"]["p50"], case["measurement"]["load_ms"]

def python(name):
    doc = json.load(open(os.path.join(work, name + ".json")))
    assert doc["status"] == "ok", doc["error"]
    assert doc["boundary"] == "public_pipeline_call_wall" and doc["precision"] == "fp32"
    return statistics.median(o["wall_ns"] / 1e6 for o in doc["observations"]), doc["load_ms"]

sys.path.insert(0, "scripts")
from round_interval import describe  # the matrix's interval over paired rounds (docs/statistics.md)

def row(label, a, b):
    ratios = [x / y for x, y in zip(a, b)]
    return (f"| {label} | {statistics.median(a):.1f} | {statistics.median(b):.1f} | {describe(ratios)} "
            f"| {min(ratios):.3f} – {max(ratios):.3f} |")

lines = ["| comparison (A / B) | A p50 ms (median of rounds) | B p50 ms | A/B ratio: median of rounds [95 % interval] | ratio range |",
         "|---|---|---|---|---|"]
summary = {}
for t in threads:
    w = [worker(f"worker-t{t}-r{r}") for r in range(1, rounds + 1)]
    p = [python(f"python-t{t}-r{r}") for r in range(1, rounds + 1)]
    lines.append(row(f"ORT {t} thread(s): trtmc worker / ORT Python loop", [x[0] for x in w], [x[0] for x in p]))
    summary[f"worker_vs_python_t{t}"] = {"worker_p50": [x[0] for x in w], "python_p50": [x[0] for x in p],
                                         "worker_load_ms": [x[1] for x in w], "python_load_ms": [x[1] for x in p]}
d = [worker(f"level-disable-r{r}") for r in range(1, rounds + 1)]
a = [worker(f"level-all-r{r}") for r in range(1, rounds + 1)]
lines.append(row("ORT 1 thread: bundle level disable / level all", [x[0] for x in d], [x[0] for x in a]))
if len(threads) > 1:
    t1 = [worker(f"tract-t1-r{r}") for r in range(1, rounds + 1)]
    t2 = [worker(f"tract-t2-r{r}") for r in range(1, rounds + 1)]
    lines.append(row("tract: 1 thread / 2 threads", [x[0] for x in t1], [x[0] for x in t2]))
    summary["tract_p50"] = {"t1": [x[0] for x in t1], "t2": [x[0] for x in t2]}
summary["level_p50"] = {"disable": [x[0] for x in d], "all": [x[0] for x in a]}
t = threads[0]
w_load = statistics.median(summary[f"worker_vs_python_t{t}"]["worker_load_ms"])
p_load = statistics.median(summary[f"worker_vs_python_t{t}"]["python_load_ms"])
lines.append("")
lines.append(f"Session load (median of rounds, {t} thread): trtmc worker {w_load:.0f} ms (offline-optimized bundle, "
             f"loaded with optimization disabled) vs ORT Python {p_load:.0f} ms (optimizes the graph at load).")
print("\n".join(lines))
json.dump(summary, open(os.path.join(work, "summary.json"), "w"), indent=2)
EOF
echo "idle after: $(idle)%"
