#!/usr/bin/env bash
# Benchmark `trtmc-bench analyze` on a large engine: the ResNet18 fp16 TREx fixture replicated
# N times (default 400 → 14,400 layers), with the copies chained into one graph. Reports median
# wall time, median CPU time and peak RSS (GNU time) over RUNS rounds, and the same for NVIDIA's
# reference Python analyzer (trt-perf-analysis analyze_trt_perf.py) when REF_ANALYZER points to
# it, interleaved round by round.
#
#   scripts/bench-analyze.sh                       # builds the release binary, ours only
#   REF_ANALYZER=/path/to/analyze_trt_perf.py scripts/bench-analyze.sh
#
# Environment: COPIES (400), RUNS (5), SETTLE_S (1: seconds of rest after `sync` before every timed run), TRTMC_BIN (default target/release/trtmc-bench; set it to
# target/release/examples/analyze_folder to time the library without the CLI), TRTMC_FIXTURES.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/bench-analyze-settings.sh
. "$repo/scripts/bench-analyze-settings.sh"
bin="${TRTMC_BIN:-$repo/target/release/trtmc-bench}"
work="$(mktemp -d "${TMPDIR:-/tmp}/bench-analyze.XXXXXX")"
trap 'rm -rf "$work"' EXIT

for tool in python3 /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "bench-analyze: $tool is required" >&2; exit 7; }
done
[ -d "$fixtures/trex" ] || { echo "bench-analyze: fixtures not found at $fixtures (set TRTMC_FIXTURES)" >&2; exit 3; }

if [ -z "${TRTMC_BIN:-}" ]; then
  (cd "$repo" && cargo build --release -p trtmc-bench >&2)
fi
[ -x "$bin" ] || { echo "bench-analyze: $bin is not built" >&2; exit 4; }

# Generate the replicated engine: layers_x.json ({"Layers": [...]} as trtexec writes it),
# profile_x.json (trtexec's line layout), and layers_bare.json (a bare list, which the reference
# analyzer needs).
python3 "$repo/scripts/gen-large-engine.py" "$fixtures/trex" "$work" "$copies"
mkdir -p "$work/in" && mv "$work/layers_x.json" "$work/profile_x.json" "$work/in/"

# run_once LABEL CMD...: one timed run, appended to $work/LABEL.runs as "wall_s max_rss_kb cpu_s"
# (CPU = user + system time; it moves less with the machine's load than the wall time does).
run_once() {
  local label="$1"; shift
  # Every timed run writes fresh output files, as a new analysis does: the previous run's outputs
  # are deleted here, untimed (replacing an 11 MB or 54 MB file that was already written back costs
  # the writer ~0.1 s of ext4 block freeing). Then the previous command's teardown and writeback
  # get time to finish, so that neither is billed to the next command.
  rm -rf "$work/out" "$work/analysis.json" "$work/analyze-data.json" "$work/ref.json"
  sync; sleep "$settle"
  /usr/bin/time -v -o "$work/time.txt" "$@" >/dev/null 2>"$work/stderr.txt" || { cat "$work/stderr.txt" >&2; echo "bench-analyze: $label failed" >&2; exit 1; }
  awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,p,":"); w=0; for(i=1;i<=n;i++) w=w*60+p[i]}
              /Maximum resident set size/ {r=$2} /(User|System) time \(seconds\)/ {c+=$2}
              END {print w, r, c}' "$work/time.txt" >>"$work/$label.runs"
}

# summary LABEL: "median_wall_s max_rss_kb median_cpu_s" over the runs.
summary() {
  local f="$work/$1.runs"
  echo "$(cut -d' ' -f1 "$f" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')" \
    "$(cut -d' ' -f2 "$f" | sort -g | tail -1)" \
    "$(cut -d' ' -f3 "$f" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"
}

# Ours, twice: the default output (analysis.json, the counterpart of the reference's single JSON)
# and both documents (analysis.json + analyze-data.json, written on two threads).
case "$(basename "$bin")" in
  analyze_folder)
    primary=("$bin" "$work/in" "$work/out" --analysis-only)
    both=("$bin" "$work/in" "$work/out") ;;
  *)
    primary=("$bin" analyze "$work/in" --output "$work/analysis.json" --quiet)
    both=("${primary[@]}" --analyze-data-output "$work/analyze-data.json") ;;
esac
if [ -n "${REF_ANALYZER:-}" ]; then
  [ -f "$REF_ANALYZER" ] || { echo "bench-analyze: REF_ANALYZER=$REF_ANALYZER not found" >&2; exit 3; }
fi
# Interleaved: each round runs every command once, so load changes hit all of them alike.
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$runs"); do
  run_once ours "${primary[@]}"
  run_once both "${both[@]}"
  if [ -n "${REF_ANALYZER:-}" ]; then
    run_once reference python3 "$REF_ANALYZER" --data "$work/layers_bare.json" "$work/in/profile_x.json" --output "$work/ref.json"
  fi
done
read -r ours_wall ours_rss ours_cpu < <(summary ours)
read -r both_wall both_rss both_cpu < <(summary both)
echo "input: $copies copies of resnet18-pt-a100-fp16, $((copies * 36)) layers, $(stat -c %s "$work/in/layers_x.json") bytes of layer JSON"
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)"
echo "load average before: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg); $runs interleaved rounds"
printf '%-44s %10s %10s %14s\n' "analyzer" "wall (s)" "CPU (s)" "peak RSS (MiB)"
printf '%-44s %10.3f %10.3f %14.1f\n' "trtmc-bench analyze (analysis.json)" "$ours_wall" "$ours_cpu" "$(awk -v r="$ours_rss" 'BEGIN {print r / 1024}')"
printf '%-44s %10.3f %10.3f %14.1f\n' "  + analyze-data.json" "$both_wall" "$both_cpu" "$(awk -v r="$both_rss" 'BEGIN {print r / 1024}')"

if [ -n "${REF_ANALYZER:-}" ]; then
  read -r ref_wall ref_rss ref_cpu < <(summary reference)
  printf '%-44s %10.3f %10.3f %14.1f\n' "reference analyze_trt_perf.py" "$ref_wall" "$ref_cpu" "$(awk -v r="$ref_rss" 'BEGIN {print r / 1024}')"
  awk -v ow="$ours_wall" -v rw="$ref_wall" -v orss="$ours_rss" -v rrss="$ref_rss" -v oc="$ours_cpu" -v rc="$ref_cpu" \
    'BEGIN {printf "ratio ours/reference: wall %.4f (target <= 0.02), CPU %.4f, peak RSS %.4f (target <= 0.25)\n", ow / rw, oc / rc, orss / rrss}'
  awk -v ow="$ours_wall" -v rw="$ref_wall" -v orss="$ours_rss" -v rrss="$ref_rss" \
    'BEGIN {exit !(ow / rw <= 0.02 && orss / rrss <= 0.25)}' || { echo "bench-analyze: target missed" >&2; exit 1; }
fi
