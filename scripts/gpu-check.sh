#!/usr/bin/env bash
# The first check of trtmc's `tensorrt` runtime on a machine with an NVIDIA GPU and TensorRT's
# trtexec: build and time one catalog model, profile it and package the per-layer analysis, tune it,
# time the tuned bundle, and run the GPU performance matrix. Everything lands in ONE evidence folder:
# each command's full output and exit code, numbered in order, and SUMMARY.md with the machine facts.
# A failing step does not stop the others; the script exits nonzero when any step failed.
#
# Usage: scripts/gpu-check.sh [--trtexec PATH] [--model NAME] [--bin PATH] [-o EVIDENCE_DIR] [--simulator]
#
#   --trtexec PATH  TensorRT's trtexec (default: trtexec on PATH, else /usr/src/tensorrt/bin/trtexec)
#   --model NAME    profile of benchmarks/performance/catalog-gpu (operation `infer`; default
#                   resnet50-infer)
#   --bin PATH      trtmc-bench (default: target/release/trtmc-bench, else trtmc-bench on PATH)
#   -o DIR          evidence folder, new or empty (default: ./gpu-evidence-<UTC timestamp>)
#   --simulator     rehearse without a GPU, with trtmc's trtexec simulator (--trtexec .../trtexec-standin,
#                   TRTMC_SIM_VERSION=110100 or 101601): every file the script writes says SIMULATED
#
# Exit codes: 0 every step passed; 2 wrong command line; 5 at least one step failed (SUMMARY.md says
# which); 6 the evidence folder was refused; 7 a prerequisite is missing (trtexec, a GPU, trtmc-bench).
# Nothing is written before the prerequisites are found.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
catalog="$repo/benchmarks/performance/catalog-gpu"
suite="$repo/benchmarks/performance/gpu.yaml"
environment="$repo/benchmarks/performance/environments/gpu.yaml"
# The matrix rows that need no build route (TensorRT < 11.1 cannot build the suite's route row).
matrix_entry_without_routes="resnet50.infer"

trtexec=""
model="resnet50-infer"
bin=""
evid=""
simulator=0

usage() {
  sed -n '8,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

die() { # CODE MESSAGE...
  local code=$1
  shift
  printf 'gpu-check: %s\n' "$@" >&2
  exit "$code"
}

parse_args() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --trtexec | --model | --bin | -o | --output)
        if [ $# -lt 2 ] || [ -z "$2" ]; then
          die 2 "$1 needs a value (see --help)"
        fi
        case "$1" in
          --trtexec) trtexec=$2 ;;
          --model) model=$2 ;;
          --bin) bin=$2 ;;
          *) evid=$2 ;;
        esac
        shift 2
        ;;
      --simulator) simulator=1; shift ;;
      -h | --help) usage; exit 0 ;;
      *) die 2 "unknown argument '$1'" "usage: scripts/gpu-check.sh [--trtexec PATH] [--model NAME] [--bin PATH] [-o EVIDENCE_DIR] [--simulator]" ;;
    esac
  done
}

# ---------------------------------------------------------------------------------------------------
# Prerequisites: found (or refused) before anything is written.

# Prints the absolute path of an executable given as a path or a bare name on PATH.
resolve_executable() {
  local name=$1 found
  if [[ $name == */* ]]; then
    [ -f "$name" ] && [ -x "$name" ] || return 1
    printf '%s/%s\n' "$(cd "$(dirname "$name")" && pwd)" "$(basename "$name")"
  else
    found=$(command -v -- "$name") || return 1
    [ -f "$found" ] && [ -x "$found" ] || return 1
    resolve_executable "$found"
  fi
}

find_trtexec() {
  if [ -n "$trtexec" ]; then
    resolve_executable "$trtexec" && return 0
    echo "trtexec: --trtexec $trtexec is not an executable file (nor a program on PATH): pass the trtexec binary itself, e.g. --trtexec /usr/src/tensorrt/bin/trtexec" >&2
    return 1
  fi
  resolve_executable trtexec 2>/dev/null && return 0
  resolve_executable /usr/src/tensorrt/bin/trtexec 2>/dev/null && return 0
  echo "trtexec: not on PATH nor at /usr/src/tensorrt/bin/trtexec: install TensorRT (the tar/zip package ships bin/trtexec; the Debian/Ubuntu packages put it in /usr/src/tensorrt/bin) and pass --trtexec PATH or add its folder to PATH" >&2
  return 1
}

# At least one GPU listed by `nvidia-smi -L` (a driver without a GPU, or a GPU without its driver,
# would make every later step fail with a less clear message).
check_gpu() {
  local listing
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "NVIDIA GPU: nvidia-smi was not found, so there is no NVIDIA driver here: run this on a machine with an NVIDIA GPU and its driver (nvidia-smi -L must list a GPU), or pass --simulator to rehearse with trtexec-standin" >&2
    return 1
  fi
  listing=$(nvidia-smi -L 2>&1) || true
  if ! grep -q '^GPU [0-9]' <<<"$listing"; then
    echo "NVIDIA GPU: 'nvidia-smi -L' lists no GPU (it said: $(head -n 1 <<<"$listing")): run this on a machine with an NVIDIA GPU and a working driver, or pass --simulator to rehearse" >&2
    return 1
  fi
}

find_bin() {
  if [ -n "$bin" ]; then
    resolve_executable "$bin" && return 0
    echo "trtmc-bench: --bin $bin is not an executable file: build it with 'cargo build --release' and pass target/release/trtmc-bench" >&2
    return 1
  fi
  resolve_executable "$repo/target/release/trtmc-bench" 2>/dev/null && return 0
  resolve_executable trtmc-bench 2>/dev/null && return 0
  echo "trtmc-bench: not at $repo/target/release/trtmc-bench nor on PATH: build it with 'cargo build --release' (in $repo) or pass --bin PATH" >&2
  return 1
}

# The model must be a profile of the GPU catalog whose task is onnx_inference (operation `infer`,
# the only operation trtexec can time).
check_model() {
  local manifest name task names=()
  for manifest in "$catalog"/*/MODEL.toml; do
    [ -f "$manifest" ] || continue
    name=$(sed -n 's/^name *= *"\(.*\)".*/\1/p' "$manifest" | head -n 1)
    task=$(sed -n 's/^task_strategy *= *"\(.*\)".*/\1/p' "$manifest" | head -n 1)
    [ "$task" = onnx_inference ] || continue
    names+=("$name")
    [ "$name" = "$model" ] && return 0
  done
  die 2 "--model $model is not an onnx_inference profile of $catalog (profiles: ${names[*]:-none})"
}

# TensorRT's version from the banner every trtexec since 8.0 prints, also for --help:
#   &&&& RUNNING TensorRT.trtexec [TensorRT v110100] [b106] # trtexec --help
# The number is major*10000+minor*100+patch from 10.0 on, major*1000+minor*100+patch before.
read_trtexec_version() {
  local help encoded major minor patch
  help=$(timeout 120 "$trtexec" --help 2>&1) || true
  if ! [[ $help =~ \[TensorRT\ v([0-9]+)\] ]]; then
    die 7 "$trtexec printed no TensorRT version banner for --help (a TensorRT 7.x trtexec, or one that cannot start; if it names libnvinfer, add TensorRT's lib folder to LD_LIBRARY_PATH). It said:" "$(head -n 5 <<<"$help")"
  fi
  encoded=$((10#${BASH_REMATCH[1]}))
  if [ "$encoded" -ge 100000 ]; then
    major=$((encoded / 10000)) minor=$((encoded / 100 % 100)) patch=$((encoded % 100))
  else
    major=$((encoded / 1000)) minor=$((encoded / 100 % 10)) patch=$((encoded % 100))
  fi
  trt_encoded=$encoded
  trt_version="$major.$minor.$patch"
  trt_major_minor=$((major * 100 + minor))
  # The simulator says so in its help; its figures must never pass for GPU evidence.
  if [ "$simulator" -eq 0 ] && grep -q 'trtexec-standin' <<<"$help"; then
    die 7 "$trtexec is trtmc's trtexec simulator (trtexec-standin), not TensorRT: pass --simulator to rehearse, or --trtexec with TensorRT's trtexec"
  fi
}

# ---------------------------------------------------------------------------------------------------
# Evidence: numbered logs and exit codes, and the step table behind SUMMARY.md.

step_no=0
failed=0
# 1 while running steps whose failure must not fail the check (nvidia-smi under --simulator).
informational=0
step_names=() step_cmds=() step_rcs=() step_durs=() step_outs=() step_logs=()

now_us() {
  if [ -n "${EPOCHREALTIME:-}" ]; then
    local t=${EPOCHREALTIME/[.,]/}
    echo $((10#$t))
  else
    echo $(($(date +%s%N) / 1000))
  fi
}

seconds_of() { # MICROSECONDS -> "12.345"
  printf '%d.%03d' $(($1 / 1000000)) $(($1 % 1000000 / 1000))
}

# One argument as a shell word a reader can paste: bare when safe, else single-quoted.
shell_word() {
  if [[ $1 =~ ^[A-Za-z0-9_./:=,+@%-]+$ ]]; then
    printf '%s' "$1"
  else
    printf "'%s'" "${1//\'/\'\\\'\'}"
  fi
}

command_line() {
  local out="" arg
  for arg in "$@"; do
    out+="${out:+ }$(shell_word "$arg")"
  done
  printf '%s' "$out"
}

simulated_note() {
  echo "SIMULATED: trtexec was trtmc's simulator (trtexec-standin) and no GPU was required; nothing here is a GPU measurement"
}

# Counted failures are bold in the step table.
is_counted_failure() {
  [ "$1" != 0 ] && [[ $1 != *"not counted"* ]]
}

# Records one step. OUTPUTS: where its results are (relative to the evidence folder), or "-".
record() { # NAME COMMAND-LINE RC DURATION-US OUTPUTS LOG
  local rc=$3
  if [ "$informational" -eq 1 ] && [ "$rc" != 0 ]; then
    rc="$rc (not counted: --simulator)"
  elif [ "$rc" != 0 ]; then
    failed=$((failed + 1))
  fi
  step_names+=("$1") step_cmds+=("$2") step_rcs+=("$rc") step_durs+=("$4") step_outs+=("$5") step_logs+=("$6")
}

# Runs one command with stdout and stderr into logs/NN-SLUG.log and its exit code into
# logs/NN-SLUG.exit; a failure is recorded, never fatal.
step() { # SLUG OUTPUTS -- COMMAND...
  local slug=$1 outputs=$2 base log start rc=0 dur cmd
  shift 3
  step_no=$((step_no + 1))
  base=$(printf 'logs/%02d-%s' "$step_no" "$slug")
  log="$evid/$base.log"
  cmd=$(command_line "$@")
  {
    [ "$simulator" -eq 1 ] && echo "### $(simulated_note)"
    echo "### step $step_no: $slug"
    echo "### command: $cmd"
    echo "### started: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "### ---- stdout and stderr follow ----"
  } >"$log"
  echo "gpu-check: [$step_no] $cmd" >&2
  start=$(now_us)
  "$@" >>"$log" 2>&1 </dev/null || rc=$?
  dur=$(($(now_us) - start))
  {
    [ "$simulator" -eq 1 ] && echo "# $(simulated_note)"
    echo "exit_code=$rc"
    echo "duration_s=$(seconds_of "$dur")"
  } >"$evid/$base.exit"
  [ "$rc" -eq 0 ] || echo "gpu-check: [$step_no] exit code $rc (log: $base.log)" >&2
  record "$slug" "$cmd" "$rc" "$dur" "$outputs" "$base.log"
}

# A step that cannot run because an earlier one did not produce its input; it counts as failed.
skip_step() { # SLUG REASON
  local base
  step_no=$((step_no + 1))
  base=$(printf 'logs/%02d-%s' "$step_no" "$1")
  {
    [ "$simulator" -eq 1 ] && echo "### $(simulated_note)"
    echo "### step $step_no: $1: skipped: $2"
  } >"$evid/$base.log"
  {
    [ "$simulator" -eq 1 ] && echo "# $(simulated_note)"
    echo "exit_code=skipped"
    echo "reason=$2"
  } >"$evid/$base.exit"
  echo "gpu-check: [$step_no] $1 skipped: $2" >&2
  record "$1" "(skipped: $2)" "skipped" 0 "-" "$base.log"
}

# ---------------------------------------------------------------------------------------------------
# The steps.

# (1) What this machine is: GPU, driver, TensorRT, trtmc, kernel.
step_machine_facts() {
  # Under --simulator there may be no GPU at all: what nvidia-smi says is recorded, not required.
  informational=$simulator
  if command -v nvidia-smi >/dev/null 2>&1; then
    step nvidia-smi-list - -- nvidia-smi -L
    step nvidia-smi-query - -- nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv
  else
    skip_step nvidia-smi-query "no nvidia-smi on this machine"
  fi
  informational=0
  step trtexec-help - -- "$trtexec" --help
  if [ "$trt_major_minor" -ge 1101 ]; then
    # The knob database the build routes are checked against (TensorRT >= 11.1).
    step trtexec-help-build-route - -- "$trtexec" --helpBuildRoute
  fi
  step trtmc-bench-version - -- "$bin" --version
  step uname - -- uname -a
}

# (2) Build the engine and time it: the tensorrt runtime end to end.
step_run() {
  step run run/ -- "$bin" run --manifest-root "$catalog" --model "$model" --runtime tensorrt \
    --trtexec "$trtexec" --bundle-cache "$evid/bundles" -o "$evid/run"
}

# (3) The same with a per-layer profiling pass, then the browser report of its layer info and
# profile (layers_tensorrt.json / profile_tensorrt.json in the run's case directory).
step_profile_and_analyze() {
  local case_dir="" d
  step run-profile run-profile/ -- "$bin" run --manifest-root "$catalog" --model "$model" \
    --runtime tensorrt --trtexec "$trtexec" --bundle-cache "$evid/bundles" --profile \
    -o "$evid/run-profile"
  for d in "$evid"/run-profile/[0-9][0-9][0-9]-*/; do
    if [ -f "$d/layers_tensorrt.json" ]; then
      case_dir=${d%/}
      break
    fi
  done
  if [ -z "$case_dir" ]; then
    skip_step analyze-package "no case directory with layers_tensorrt.json below run-profile/ (see the run-profile step)"
    return
  fi
  step analyze-package analyze/ -- "$bin" analyze package "$case_dir" --model-name "$model" \
    --report-dir "$evid/analyze"
}

# (4) A small tune, then (5) time the bundle it chose. TensorRT 11.1 brought build routes
# (--setBuildRoute); older versions tune a trtexec build flag instead.
step_tune_and_run_tuned() {
  local routes
  if [ "$trt_major_minor" -ge 1101 ]; then
    routes='-kgen:tiling=[0|1|2]'
  else
    routes='-trtexec:builderOptimizationLevel=[3|5]'
  fi
  tune_routes=$routes
  step tune "tune/, tuned.bundle/" -- "$bin" tune --manifest-root "$catalog" --model "$model" \
    --runtime tensorrt --trtexec "$trtexec" --routes "$routes" --save-bundle "$evid/tuned.bundle" \
    --bundle-cache "$evid/bundles" -o "$evid/tune"
  if [ ! -d "$evid/tuned.bundle" ]; then
    skip_step run-tuned "the tune step saved no tuned.bundle"
    return
  fi
  step run-tuned run-tuned/ -- "$bin" run --manifest-root "$catalog" --model "$model" \
    --runtime tensorrt --trtexec "$trtexec" --bundle-cache "$evid/bundles" \
    --bundle "$evid/tuned.bundle" -o "$evid/run-tuned"
}

# (6) The GPU performance matrix. Its rows find trtexec on PATH (a row may name its own), so a
# `trtexec` link to the one under test goes first on PATH; the environment's folders point into
# the evidence folder.
step_matrix() {
  local tools="$evid/tools" entry=()
  mkdir -p "$tools"
  ln -s "$trtexec" "$tools/trtexec"
  if [ "$trt_major_minor" -lt 1101 ]; then
    entry=(--entry "$matrix_entry_without_routes")
    matrix_note="TensorRT $trt_version < 11.1 has no build routes: only the rows of entry $matrix_entry_without_routes were selected"
  fi
  local env_cmd=(env "PATH=$tools:$PATH" "TRTMC_PERF_BUNDLE_CACHE=$evid/bundles"
    "TRTMC_PERF_RESULTS=$evid/matrix")
  step matrix-check - -- "${env_cmd[@]}" "$bin" matrix check "$suite" --environment "$environment" \
    --manifest-root "$catalog" ${entry[@]+"${entry[@]}"}
  if [ "${step_rcs[${#step_rcs[@]} - 1]}" != 0 ]; then
    skip_step matrix-run "matrix check failed (matrix run would refuse at the same preflight)"
    return
  fi
  step matrix-run matrix/ -- "${env_cmd[@]}" "$bin" matrix run "$suite" --environment "$environment" \
    --manifest-root "$catalog" ${entry[@]+"${entry[@]}"} -o "$evid/matrix"
}

# ---------------------------------------------------------------------------------------------------
# SUMMARY.md

# Under --simulator the result folders trtmc-bench wrote get a SIMULATED.txt too, so no part of the
# evidence can be copied away and pass for GPU figures. Bundles are left alone (their files are
# what a bundle is).
mark_simulated() {
  local d
  for d in run run-profile analyze tune run-tuned matrix; do
    if [ -d "$evid/$d" ]; then
      simulated_note >"$evid/$d/SIMULATED.txt"
    fi
  done
}

# The log's output without the script's header lines.
log_output() {
  sed '1,/^### ---- stdout and stderr follow ----$/d' "$evid/$1"
}

log_of() { # SLUG -> the step's log (relative), or nothing
  local i
  for i in "${!step_names[@]}"; do
    if [ "${step_names[$i]}" = "$1" ]; then
      printf '%s' "${step_logs[$i]}"
      return
    fi
  done
}

fact() { # TITLE SLUG [FILTER]
  local log
  log=$(log_of "$2")
  echo "**$1** (\`$log\`):"
  echo
  echo '```text'
  if [ -z "$log" ]; then
    echo "(not recorded)"
  elif [ -n "${3:-}" ]; then
    log_output "$log" | grep -m 1 -e "$3" || echo "(no line matching '$3')"
  elif [ -n "$(log_output "$log")" ]; then
    log_output "$log"
  else
    echo "(no output; see $log)"
  fi
  echo '```'
  echo
}

write_summary() {
  local i rc verdict
  {
    echo "# trtmc GPU check: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo
    if [ "$simulator" -eq 1 ]; then
      echo "> **$(simulated_note).**"
      echo "> No GPU figure was measured: every timing, engine and profile in this folder comes from the"
      echo "> simulator and shows only that the commands and files fit together."
      echo
    fi
    if [ "$failed" -eq 0 ]; then
      verdict="every step passed"
    else
      verdict="$failed of ${#step_names[@]} steps failed or were skipped"
    fi
    echo "Result: **$verdict**. Model \`$model\` (catalog \`benchmarks/performance/catalog-gpu\`),"
    echo "trtexec \`$trtexec\` (TensorRT $trt_version, banner v$trt_encoded), trtmc-bench \`$bin\`."
    echo "Tune expression: \`$tune_routes\`."
    [ -n "$matrix_note" ] && echo "Matrix: $matrix_note."
    echo
    echo "Every command's stdout and stderr are in \`logs/NN-<step>.log\`, its exit code and duration in"
    echo "\`logs/NN-<step>.exit\`; engines and models are cached in \`bundles/\`."
    echo
    echo "| # | step | exit code | duration (s) | outputs | log |"
    echo "| --- | --- | --- | --- | --- | --- |"
    for i in "${!step_names[@]}"; do
      rc=${step_rcs[$i]}
      if is_counted_failure "$rc"; then
        rc="**$rc**"
      fi
      echo "| $((i + 1)) | ${step_names[$i]} | $rc | $(seconds_of "${step_durs[$i]}") | ${step_outs[$i]} | \`${step_logs[$i]}\` |"
    done
    echo
    echo "## Command lines"
    echo
    for i in "${!step_names[@]}"; do
      echo "**$((i + 1)). ${step_names[$i]}** (exit code ${step_rcs[$i]}):"
      echo
      echo '```sh'
      echo "${step_cmds[$i]}"
      echo '```'
      echo
    done
    echo "## Machine facts"
    echo
    fact "GPU (nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv)" nvidia-smi-query
    fact "trtexec banner" trtexec-help '^&&&& RUNNING'
    fact "trtmc-bench --version" trtmc-bench-version
    fact "uname -a" uname
    if [ "$simulator" -eq 1 ]; then
      echo "Simulator settings: TRTMC_SIM_VERSION=${TRTMC_SIM_VERSION:-(unset: 110100)}."
      echo
    fi
  } >"$evid/SUMMARY.md"
}

# ---------------------------------------------------------------------------------------------------

main() {
  local missing=() found
  parse_args "$@"

  # Every missing prerequisite is named at once, before anything is written.
  # Each finder prints the path found, or (on stderr) what is missing and how to fix it.
  if found=$(find_trtexec 2>&1); then
    trtexec=$found
  else
    missing+=("$found")
  fi
  if [ "$simulator" -eq 0 ]; then
    found=$(check_gpu 2>&1) || missing+=("$found")
  fi
  if found=$(find_bin 2>&1); then
    bin=$found
  else
    missing+=("$found")
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    die 7 "cannot run the GPU check; missing:" "${missing[@]/#/  - }"
  fi
  check_model
  read_trtexec_version

  if [ -z "$evid" ]; then
    evid="gpu-evidence-$([ "$simulator" -eq 1 ] && echo SIMULATED-)$(date -u +%Y%m%dT%H%M%SZ)"
  fi
  if [ -e "$evid" ] && { [ ! -d "$evid" ] || [ -n "$(ls -A "$evid")" ]; }; then
    die 6 "evidence folder $evid exists and is not an empty folder: name a new one with -o"
  fi
  mkdir -p "$evid/logs"
  evid="$(cd "$evid" && pwd)"
  if [ "$simulator" -eq 1 ]; then
    simulated_note >"$evid/SIMULATED.txt"
  fi
  echo "gpu-check: evidence folder $evid (TensorRT $trt_version)" >&2

  tune_routes="" matrix_note=""
  step_machine_facts
  step_run
  step_profile_and_analyze
  step_tune_and_run_tuned
  step_matrix
  if [ "$simulator" -eq 1 ]; then
    mark_simulated
  fi
  write_summary

  echo "gpu-check: $evid/SUMMARY.md" >&2
  if [ "$failed" -ne 0 ]; then
    echo "gpu-check: $failed step(s) failed or were skipped" >&2
    exit 5
  fi
  echo "gpu-check: every step passed" >&2
}

main "$@"
