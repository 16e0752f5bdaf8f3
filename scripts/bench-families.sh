#!/usr/bin/env bash
# Time and disk of generating each model family at its real size (docs/performance.md, "Catalog of
# families"): one call on ONNX Runtime generates the built-in model into a private source cache, once per
# family (a `--dry-run` of an in-process runtime generates nothing);
# the script prints the wall time, peak memory and file size of each, then deletes the file unless KEEP=1
# (the real sizes together take gigabytes).
#
#   BIN=target/release/trtmc-bench scripts/bench-families.sh [FAMILY ...]
#
# Environment: BIN (default target/release/trtmc-bench), CACHE (a temporary folder), KEEP (0).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${BIN:-$repo/target/release/trtmc-bench}"
keep="${KEEP:-0}"
[ -x "$bin" ] || { echo "bench-families: $bin is not an executable trtmc-bench (set BIN)" >&2; exit 7; }
command -v /usr/bin/time >/dev/null || { echo "bench-families: /usr/bin/time is required" >&2; exit 7; }
cache="${CACHE:-$(mktemp -d)}"
if [ "$#" -gt 0 ]; then
  families=("$@")
else
  # Every real-size generated profile: the directories with a matching `-l0` smoke variant.
  mapfile -t families < <(cd "$repo/catalog" && for d in *-l0; do echo "${d%-l0}"; done)
fi
echo "| family | generation + build + 1 call, wall s | peak RSS MiB | ONNX MB |"
echo "| --- | ---: | ---: | ---: |"
for family in "${families[@]}"; do
  log="$(mktemp)"
  # A dry run of an in-process runtime generates nothing, so one call on ONNX Runtime: generation, the
  # session build and one forward pass (generation dominates at real size).
  /usr/bin/time -f "%e %M" -o "$log" "$bin" run --model "$family" --runtime onnxruntime --warmup 0 \
    --iterations 1 --bundle-cache "$cache" -o "$cache/run-$family" >/dev/null
  read -r wall rss <"$log"
  file="$(ls -1 "$cache"/sources/builtin-"$family"-seed*.onnx 2>/dev/null | head -1)"
  size="$(stat -c %s "$file")"
  awk -v f="$family" -v w="$wall" -v r="$rss" -v s="$size" \
    'BEGIN { printf "| %s | %.1f | %.0f | %.1f |\n", f, w, r / 1024, s / 1e6 }'
  [ "$keep" = 1 ] || rm -f "$file"
  rm -f "$log"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
