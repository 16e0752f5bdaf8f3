#!/usr/bin/env bash
# Benchmarks of the `run` foundation (issue 2), recorded in docs/performance.md:
#   1. harness overhead: a timed no-op through the worker's dispatch and recording vs a bare Instant loop
#      (`cargo bench`, which compiles the bench: only with BENCH_HARNESS=1);
#   2. start-up: `list models` and `run --dry-run` wall time (hyperfine when installed, else a Python loop);
#   3. `run` on light_resnet50 vs tract's own timing loop on the same model, interleaved A B / B A, one
#      process per side per round; the loop loads the very bundle `run` loads (LOOP_MODEL=bundle, the
#      default: the harness alone is compared) or the ONNX file (LOOP_MODEL=onnx: tract's other plan);
#      the ratio is the median of the per-round ratios with its 95 %
#      distribution-free interval, as in the matrix (docs/statistics.md).
# Needs: a release build (cargo build --release --workspace --bins --examples; this script never
# rebuilds), python3 with the onnx wheel (pip install onnx).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-10}
# The catalog model of part 3 (tract bundles of any fixed-shape single-input model work: tiny-cnn gives
# ~1 ms calls, so a round takes well under a second and many rounds fit in a few minutes).
MODEL_NAME=${MODEL_NAME:-light-resnet50}
ITER=${ITER:-30}
WARMUP=${WARMUP:-5}
BIN=target/release/trtmc-bench
LOOP=target/release/examples/tract_loop
for f in "$BIN" "$LOOP"; do
  [ -x "$f" ] || { echo "bench-run: $f is missing: cargo build --release --workspace --bins --examples" >&2; exit 7; }
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

if [ "${BENCH_HARNESS:-0}" = 1 ]; then
  echo "== 1. harness overhead"
  cargo bench -q --workspace --bench harness_overhead 2>/dev/null | grep -v '^$'
else
  echo "== 1. harness overhead: skipped (BENCH_HARNESS=1 runs it; it compiles the bench)"
fi

echo "== 2. start-up wall time"
if command -v hyperfine >/dev/null; then
  hyperfine -N --warmup 3 --runs 30 \
    "$BIN list models" \
    "$BIN run --model tiny-gpt --dry-run --bundle-cache $WORK/cache" \
    "$BIN run --model light-resnet50 --dry-run --bundle-cache $WORK/cache" 2>/dev/null | grep -E "Benchmark|Time"
else
  python3 - "$BIN" "$WORK/cache" <<'PY'
import statistics, subprocess, sys, time
bin_, cache = sys.argv[1:3]
for args in (["list", "models"], ["run", "--model", "tiny-gpt", "--dry-run", "--bundle-cache", cache],
             ["run", "--model", "light-resnet50", "--dry-run", "--bundle-cache", cache]):
    times = []
    for i in range(33):
        t = time.perf_counter()
        subprocess.run([bin_] + args, check=True, stdout=subprocess.DEVNULL)
        if i >= 3:
            times.append((time.perf_counter() - t) * 1e3)
    print(f"{' '.join(args[:3])}: median {statistics.median(times):.1f} ms over 30 runs (no hyperfine: Python's clock)")
PY
fi

echo "== 3. run vs tract's own loop on $MODEL_NAME ($ROUNDS interleaved rounds, $WARMUP warm-ups, $ITER timed calls)"
[ "${LOOP_MODEL:-bundle}" = onnx ] && [ "$MODEL_NAME" != light-resnet50 ] && { echo "bench-run: LOOP_MODEL=onnx needs MODEL_NAME=light-resnet50 (the onnx wheel's file)" >&2; exit 2; }
MODEL=$(python3 -c 'import onnx,os;print(os.path.join(os.path.dirname(onnx.__file__),"backend/test/data/light/light_resnet50.onnx"))')
"$BIN" run --model "$MODEL_NAME" --bundle-cache "$WORK/cache" --warmup 1 --iterations 1 -q -o "$WORK/build" >/dev/null
python3 - "$BIN" "$LOOP" "$MODEL" "$WORK" "$ROUNDS" "$WARMUP" "$ITER" "${LOOP_MODEL:-bundle}" "$MODEL_NAME" <<'PY'
import json, os, statistics, subprocess, sys
bin_, loop, model, work, rounds, warmup, iters, loop_model, model_name = sys.argv[1:10]
if loop_model == "bundle":
    bundle = json.load(open(f"{work}/build/result.json"))["cases"][0]["bundle"]["path"]
    model = os.path.join(bundle, "model.nnef.tar")
print(f"tract loop loads {model}")
sys.path.insert(0, "scripts")
from round_interval import describe
ratios, ours, theirs = [], [], []
def ours_once(r):
    out = f"{work}/r{r}"
    subprocess.run([bin_, "run", "--model", model_name, "--bundle-cache", f"{work}/cache", "--warmup", warmup,
                    "--iterations", iters, "--telemetry", "off", "-q", "-o", out], check=True, stdout=subprocess.DEVNULL)
    return json.load(open(f"{out}/result.json"))["cases"][0]["metrics"]["latency_ms"]["p50"]
def theirs_once():
    return json.loads(subprocess.run([loop, model, warmup, iters], check=True, capture_output=True, text=True).stdout)["median_ms"]
for r in range(int(rounds)):
    if r % 2 == 0:
        a = ours_once(r); b = theirs_once()
    else:
        b = theirs_once(); a = ours_once(r)
    ours.append(a); theirs.append(b); ratios.append(a / b)
    print(f"round {r}: trtmc-bench p50 {a:.2f} ms, tract loop median {b:.2f} ms, ratio {a/b:.3f}")
print(f"ratio (median of {len(ratios)} rounds [95 % interval]) {describe(ratios)} "
      f"(range {min(ratios):.3f}-{max(ratios):.3f}); "
      f"medians: trtmc-bench {statistics.median(ours):.2f} ms, tract loop {statistics.median(theirs):.2f} ms")
PY
