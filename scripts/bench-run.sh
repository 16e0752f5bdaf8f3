#!/usr/bin/env bash
# Benchmarks of the `run` foundation (issue 2), recorded in docs/performance.md:
#   1. harness overhead: a timed no-op through the worker's dispatch and recording vs a bare Instant loop;
#   2. start-up: `list models` and `run --dry-run` wall time (hyperfine);
#   3. `run` on light_resnet50 vs tract's own timing loop on the same model, interleaved A B A B.
# Needs: a release build, hyperfine (apt-get install hyperfine), the onnx wheel (pip install onnx).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-6}
ITER=${ITER:-30}
WARMUP=${WARMUP:-5}
cargo build --release -q --workspace --bins --examples
BIN=target/release/trtmc-bench
LOOP=target/release/examples/tract_loop
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

echo "== 1. harness overhead"
cargo bench -q --workspace --bench harness_overhead 2>/dev/null | grep -v '^$'

echo "== 2. start-up wall time"
hyperfine -N --warmup 3 --runs 30 \
  "$BIN list models" \
  "$BIN run --model tiny-gpt --dry-run --bundle-cache $WORK/cache" \
  "$BIN run --model light-resnet50 --dry-run --bundle-cache $WORK/cache" 2>/dev/null | grep -E "Benchmark|Time"

echo "== 3. run vs tract's own loop on light_resnet50 ($ROUNDS interleaved rounds, $WARMUP warm-ups, $ITER timed calls)"
MODEL=$(python3 -c 'import onnx,os;print(os.path.join(os.path.dirname(onnx.__file__),"backend/test/data/light/light_resnet50.onnx"))')
"$BIN" run --model light-resnet50 --bundle-cache "$WORK/cache" --warmup 1 --iterations 1 -q -o "$WORK/build" >/dev/null
python3 - "$BIN" "$LOOP" "$MODEL" "$WORK" "$ROUNDS" "$WARMUP" "$ITER" <<'PY'
import json, statistics, subprocess, sys
bin_, loop, model, work, rounds, warmup, iters = sys.argv[1:8]
ratios, ours, theirs = [], [], []
for r in range(int(rounds)):
    out = f"{work}/r{r}"
    subprocess.run([bin_, "run", "--model", "light-resnet50", "--bundle-cache", f"{work}/cache", "--warmup", warmup,
                    "--iterations", iters, "-q", "-o", out], check=True, stdout=subprocess.DEVNULL)
    a = json.load(open(f"{out}/result.json"))["cases"][0]["metrics"]["latency_ms"]["p50"]
    b = json.loads(subprocess.run([loop, model, warmup, iters], check=True, capture_output=True, text=True).stdout)["median_ms"]
    ours.append(a); theirs.append(b); ratios.append(a / b)
    print(f"round {r}: trtmc-bench p50 {a:.2f} ms, tract loop median {b:.2f} ms, ratio {a/b:.3f}")
print(f"median ratio {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}); "
      f"medians: trtmc-bench {statistics.median(ours):.2f} ms, tract loop {statistics.median(theirs):.2f} ms")
PY
