//! `result.json` of `trtmc-bench run`: schema `trtmc.benchmark-run/v1`
//! (schemas/benchmark-run.schema.json).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::figures::{Interval, Summary};

/// Schema name of `result.json`.
pub const BENCHMARK_RUN_SCHEMA: &str = "trtmc.benchmark-run/v1";
/// The timed region of `run`: one public operation call, measured by the worker's monotonic clock.
pub const PUBLIC_PIPELINE_CALL_WALL: &str = "public_pipeline_call_wall";
/// The timed region of the `tensorrt` runtime: GPU compute of one trtexec query (`computeMs` of
/// `--exportTimes`). Never comparable with [`PUBLIC_PIPELINE_CALL_WALL`].
pub const TRTEXEC_GPU_COMPUTE: &str = "trtexec_gpu_compute";

/// A throughput figure: items per second of summed timed wall time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// The figure's name.
    pub name: String,
    /// Its unit.
    pub unit: String,
    /// The figure's value, in `unit`.
    pub value: f64,
    /// Items counted over all timed calls.
    pub items: u64,
}

/// Reduced metrics of one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Wall latency of the timed calls, milliseconds.
    pub latency_ms: Summary,
    /// 95 % interval of the p50 latency, milliseconds: the distribution-free interval of the median over
    /// 10 blocks of consecutive calls (`trtmc_core::intervals::run_p50`); `None` with fewer than two
    /// calls.
    pub p50_ci_ms: Option<Interval>,
    /// Items (and elements, tokens, …) per second of timed wall time.
    pub throughputs: Vec<Throughput>,
    /// Wall seconds per counted quantity (seconds/image, real-time factor); `items` is the quantity's
    /// count in its base unit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ratios: Vec<Throughput>,
    /// Stage durations (time to first token, prefill, decode), milliseconds.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stages_ms: BTreeMap<String, Summary>,
    /// Calls outside Tukey's inner fences (1.5 IQR).
    pub outliers: usize,
    /// Summed wall time of the timed calls, seconds.
    pub timed_seconds: f64,
    /// Problems with the measurement's validity (too few samples for a percentile, high variation).
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// Program, runtimes and machine that produced a result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The program that measured.
    pub program: ProgramInfo,
    /// `--runtime-dir` folders searched for runtime libraries and tools before the defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime_dirs: Vec<String>,
    /// The runtimes the run used.
    pub runtimes: Vec<RuntimeInfo>,
    /// The machine it ran on.
    pub machine: MachineInfo,
}

/// A program by name and version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgramInfo {
    /// The program's name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Git revision the program was built from (`unknown` outside a checkout).
    pub revision: String,
    /// Cargo profile of the build (`release` or `debug`).
    pub build_profile: String,
}

/// A runtime by name and version.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RuntimeInfo {
    /// The runtime's name (`tract`, `onnxruntime`, `tensorrt`, …).
    pub name: String,
    /// Its version.
    pub version: String,
}

/// The machine a result was measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineInfo {
    /// Its host name.
    pub hostname: String,
    /// Operating system and version.
    pub os: String,
    /// CPU architecture (`x86_64`, `aarch64`).
    pub arch: String,
    /// CPU model name.
    pub cpu_model: String,
    /// Logical CPUs.
    pub logical_cpus: usize,
    /// Physical memory, where readable.
    pub memory_bytes: Option<u64>,
    /// GPUs reported by nvidia-smi, when present.
    #[serde(default)]
    pub gpus: Vec<String>,
}

/// How a case's bundle was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BundleOrigin {
    /// `--bundle PATH`: used as given, not compatibility-verified.
    Explicit,
    /// Found below `--bundle-root` with a matching cache key.
    BundleRoot,
    /// A compatible entry in the managed cache.
    CacheHit,
    /// Built for this run and stored in the managed cache.
    Built,
    /// The operation needs no model.
    None,
}

/// Build evidence stored beside a bundle; excluded from every performance metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildEvidence {
    /// Path of the build's log.
    pub log: String,
    /// Path of the build's timing record.
    pub timing: String,
    /// The build command line.
    pub command: String,
    /// Marks the evidence as kept out of every performance metric.
    pub excluded_from_metrics: bool,
}

/// The bundle a case ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BundleRef {
    /// The bundle's folder.
    pub path: String,
    /// Its cache key, when it has one.
    pub key: Option<String>,
    /// How it was found.
    pub origin: BundleOrigin,
    /// Whether it was checked to be compatible with this run (not for `--bundle PATH`).
    pub compatibility_verified: bool,
    /// The runtime it was built for.
    pub runtime: RuntimeInfo,
    /// What its build left behind, when this run built it.
    pub build_evidence: Option<BuildEvidence>,
    /// The build route trtexec reported it built the engine with (TensorRT 11.1+, `--setBuildRoute`),
    /// from the bundle's `tensorrt-build.json`; absent for other runtimes and engines built without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_used: Option<String>,
}

/// How a case (or its profiling pass) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    /// It ran to its end.
    Completed,
    /// It produced no measurement (`error` says why).
    Failed,
    /// Stopped early by `--timeout`, Ctrl-C or SIGTERM: the calls timed before the stop are kept and
    /// reduced, and the statistics are partial (`error` says what stopped it).
    Interrupted,
}

impl CaseStatus {
    /// The status as written in result.json.
    pub fn label(self) -> &'static str {
        match self {
            CaseStatus::Completed => "completed",
            CaseStatus::Failed => "failed",
            CaseStatus::Interrupted => "interrupted",
        }
    }
}

/// How a case was measured: asked for and done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasurementInfo {
    /// Warm-up calls asked for.
    pub warmup: u64,
    /// The minimum count of timed calls (or the exact count, when it was asked for explicitly).
    pub iterations: u64,
    /// The minimum duration of the timed loop, seconds.
    pub min_duration_s: f64,
    /// The time budget of the timed loop, seconds; `None` when none applied.
    #[serde(default)]
    pub max_duration_s: Option<f64>,
    /// Warm-up calls made (fewer than `warmup` when the warm-up's share of the budget ran out).
    #[serde(default)]
    pub warmup_done: Option<u64>,
    /// Timed calls actually made.
    pub observations: u64,
    /// What ended the timed loop.
    #[serde(default)]
    pub stopped_by: Option<LoopStop>,
    /// Model load time in the worker, milliseconds (excluded from metrics).
    pub load_ms: Option<f64>,
}

/// What ended a case's timed loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoopStop {
    /// The minimum count and the minimum duration were both reached.
    Complete,
    /// The time budget (`--max-duration`) ran out first.
    Budget,
    /// `--timeout` ran out: the orchestrator asked the worker to stop.
    Timeout,
    /// Ctrl-C or SIGTERM.
    Signal,
}

/// One case of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    /// Directory of the case, relative to the result directory (`001-tiny-gpt-greedy`).
    pub dir: String,
    /// The catalog profile (model).
    pub model: String,
    /// The test case.
    pub case: String,
    /// The case as people read it in reports.
    pub label: String,
    /// The profile's task strategy.
    pub task_strategy: String,
    /// The operation the case calls.
    pub operation: String,
    /// The runtime that ran it.
    pub runtime: RuntimeInfo,
    /// How the case ended.
    pub status: CaseStatus,
    /// Why it failed or stopped, when it did.
    #[serde(default)]
    pub error: Option<String>,
    /// The workload identity: equal identities measured the same work.
    pub identity: String,
    /// The bundle it ran; `None` when the operation needs no model.
    pub bundle: Option<BundleRef>,
    /// How it was measured.
    pub measurement: MeasurementInfo,
    /// The reduced metrics; `None` when no call was timed.
    pub metrics: Option<Metrics>,
    /// Swept keys and values of this case.
    #[serde(default)]
    pub sweep_point: BTreeMap<String, String>,
    /// Resolved request values (a copy of resolved-case.json's values, for reports).
    #[serde(default)]
    pub request: BTreeMap<String, serde_json::Value>,
    /// Whether each batch item is a sample the case lists (`declared`) or one request repeated over the
    /// batch (`cloned`); absent in results written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_source: Option<BatchSource>,
    /// The case's files.
    pub files: CaseFiles,
    /// The per-layer profiling pass (`run --profile`), made after the timed run; absent when not asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<CaseProfile>,
    /// Each round's calls and median when the run interleaved its cases in rounds (`run --rounds`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<RoundStat>,
    /// The shapes each input was fed in (one per distinct shape the calls used), `infer` cases.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub input_shapes: BTreeMap<String, Vec<Vec<usize>>>,
    /// Each output of each data set checked against `--check-outputs` (absent when not asked).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_check: Vec<OutputCheck>,
}

/// One round of a case: one worker process, interleaved with the other cases' rounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RoundStat {
    /// Timed calls of the round.
    pub calls: u64,
    /// The round's median latency, milliseconds.
    pub p50_ms: f64,
}

/// A case against the run's baseline case, from their paired rounds (docs/statistics.md: the median of
/// the per-round ratios of p50 with its distribution-free interval).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Case directory of the compared case and of the baseline.
    pub case: String,
    /// Case directory of the baseline.
    pub baseline: String,
    /// The case's p50 over the baseline's: below 1 the case is faster.
    pub ratio: f64,
    /// Lower bound of the ratio's interval.
    pub low: f64,
    /// Upper bound of the interval.
    pub high: f64,
    /// Confidence level of the interval.
    pub confidence: f64,
    /// Paired rounds the ratio is taken over.
    pub rounds: usize,
    /// Enough rounds for the interval to reach its confidence.
    pub trusted: bool,
    /// The verdict for people, e.g. `onnxruntime ran 2.19× faster than tract (95 % CI 2.11–2.27, 10 rounds)`.
    pub verdict: String,
    /// Why the run stopped adding rounds (`--max-rounds` above `--rounds`): the verdicts were decided,
    /// or a budget ran out. Absent when the run had one planned look (a fixed `--rounds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<RoundsStop>,
    /// The confidence of the interval at each planned look: `confidence` split over the looks, so
    /// the interval the run stopped with holds `confidence` however early it stopped
    /// (docs/statistics.md, *Sequential rounds*). Equal to `confidence` with one look.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub look_confidence: Option<f64>,
}

/// Why a run stopped adding rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoundsStop {
    /// Every verdict was decided (faster, slower, or the same within 2 %).
    Decided,
    /// The run reached `--max-rounds`.
    MaxRounds,
    /// Another block of rounds would have measured a case past its `--max-duration`.
    MaxDuration,
}

impl RoundsStop {
    /// How a verdict says it, e.g. `--max-rounds reached`.
    pub fn describe(self) -> &'static str {
        match self {
            RoundsStop::Decided => "decided",
            RoundsStop::MaxRounds => "--max-rounds reached",
            RoundsStop::MaxDuration => "--max-duration spent",
        }
    }
}

/// A case's per-layer profiling pass: trtexec-shaped `layers_<runtime>.json` and
/// `profile_<runtime>.json` in the case directory. Its failure leaves the timed result intact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseProfile {
    /// How the profiling pass ended.
    pub status: CaseStatus,
    /// Why it failed, when it did.
    #[serde(default)]
    pub error: Option<String>,
    /// Operation calls profiled (after the case's warm-up calls).
    pub iterations: u64,
    /// Paths relative to the result directory.
    pub layer_info: Option<String>,
    /// Path of `profile_<runtime>.json`.
    pub layer_profile: Option<String>,
    /// Path of the pass's log.
    pub log: Option<String>,
    /// The `analyze` report of the two files (`<case>/profile-report/index.html`), linked from
    /// report.html; absent in results written before it existed.
    #[serde(default)]
    pub report: Option<String>,
    /// Why the profile could not be packaged (the profile files are still there).
    #[serde(default)]
    pub report_error: Option<String>,
}

/// The files of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseFiles {
    /// Path of `resolved-case.json`.
    pub resolved_case: String,
    /// Path of `observations.jsonl`, when calls were timed.
    pub observations: Option<String>,
    /// Path of the worker's log.
    pub worker_log: Option<String>,
    /// Path of `telemetry.json` (`run --telemetry on`).
    pub telemetry: Option<String>,
    /// Kept only when the worker failed.
    #[serde(default)]
    pub worker_request: Option<String>,
    /// Kept only when the worker failed.
    #[serde(default)]
    pub worker_result: Option<String>,
}

/// How a whole run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Every case completed.
    Completed,
    /// Some cases failed or were interrupted.
    Partial,
    /// Every case failed.
    Failed,
}

/// result.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkRun {
    /// Always [`BENCHMARK_RUN_SCHEMA`].
    pub schema: String,
    /// The run's identifier.
    pub run_id: String,
    /// When the run was made (a timestamp).
    pub created: String,
    /// How the run ended ([`BenchmarkRun::status_of`]).
    pub status: RunStatus,
    /// The command line that made the run.
    pub command_line: Vec<String>,
    /// What the timed region is ([`PUBLIC_PIPELINE_CALL_WALL`] or [`TRTEXEC_GPU_COMPUTE`]).
    pub timing_boundary: String,
    /// How the percentiles were computed (`trtmc_core::stats`).
    pub percentile_method: String,
    /// A built-in test case makes a benchmark runnable; it is not evidence of task quality.
    pub task_quality_evaluated: bool,
    /// Program, runtimes and machine.
    pub provenance: Provenance,
    /// Every case that ran, in run order.
    pub cases: Vec<CaseResult>,
    /// Case directories that were never started because the run was interrupted before them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<String>,
    /// Every other case against the baseline case, when the cases were interleaved in rounds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<Comparison>,
}

impl BenchmarkRun {
    /// Failed when every case failed, partial when any failed or was interrupted, else completed.
    pub fn status_of(cases: &[CaseResult]) -> RunStatus {
        let count = |status| cases.iter().filter(|c| c.status == status).count();
        let failed = count(CaseStatus::Failed);
        if failed > 0 && failed == cases.len() {
            RunStatus::Failed
        } else if failed + count(CaseStatus::Interrupted) > 0 {
            RunStatus::Partial
        } else {
            RunStatus::Completed
        }
    }
}

/// Where the items of a batch come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchSource {
    /// Every item is one the case lists (a batch of one is its own request).
    #[default]
    Declared,
    /// One request is repeated over a batch of several items.
    Cloned,
}

/// One output of one data set checked against its expected values (result.json `output_check`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputCheck {
    /// The output's name.
    pub output: String,
    /// The data set (from 0) the output was computed from.
    pub set: usize,
    /// Whether every element is within the tolerances.
    pub passed: bool,
    /// The largest |got - expected| over the elements (NaN-free; `None` with no element or a NaN).
    pub max_abs_error: Option<f64>,
    /// The largest |got - expected| / |expected| (a zero expected value counts as f64 epsilon).
    pub max_rel_error: Option<f64>,
    /// Elements compared.
    pub elements: u64,
    /// Elements beyond both tolerances (Polygraphy's `elemwise` check).
    pub mismatches: u64,
    /// The element with the largest absolute error among the mismatches (else overall): its index,
    /// the value computed and the value expected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst: Option<WorstElement>,
    /// Why the check failed before comparing values (shape or element count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One element of an output checked against its expected value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorstElement {
    /// Its index, one entry per dimension.
    pub index: Vec<usize>,
    /// `None` when not a finite number (JSON has no NaN or infinity).
    pub got: Option<f64>,
    /// The expected value; `None` when not a finite number.
    pub expected: Option<f64>,
}

impl OutputCheck {
    /// One line for a failure message: the output, its worst element and the tolerances it broke.
    pub fn describe_failure(&self, atol: f64, rtol: f64) -> String {
        if let Some(note) = &self.note {
            return format!("output `{}` (set {}): {note}", self.output, self.set);
        }
        let worst = self
            .worst
            .as_ref()
            .map(|w| {
                let index: Vec<String> = w.index.iter().map(usize::to_string).collect();
                let value = |v: Option<f64>| {
                    v.map_or_else(|| "a non-finite value".to_string(), |v| v.to_string())
                };
                format!(
                    "; worst element [{}]: got {}, expected {}",
                    index.join(","),
                    value(w.got),
                    value(w.expected)
                )
            })
            .unwrap_or_default();
        format!(
            "output `{}` (set {}) differs from the expected outputs in {} of {} elements (max abs error {}, max rel error {}; --atol {atol} --rtol {rtol}){worst}",
            self.output,
            self.set,
            self.mismatches,
            self.elements,
            shown(self.max_abs_error),
            shown(self.max_rel_error),
        )
    }
}

fn shown(v: Option<f64>) -> String {
    v.map_or_else(|| "NaN".to_string(), |v| format!("{v:.3e}"))
}

impl MachineInfo {
    /// One line for a tuning cache's fingerprint: CPU model, logical cores, OS family and architecture.
    /// Host name, kernel and distribution are left out, so that neither a kernel update nor a sibling
    /// node makes a cache look foreign.
    pub fn fingerprint_line(&self) -> String {
        format!(
            "{}; {} logical cores; {} {}",
            self.cpu_model,
            self.logical_cpus,
            std::env::consts::OS,
            self.arch
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_status_summarizes_cases() {
        assert_eq!(BenchmarkRun::status_of(&[]), RunStatus::Completed);
    }
}
