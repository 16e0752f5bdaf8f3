//! The artifacts of a benchmark run: raw observations, reduced metrics, `result.json`.
//!
//! JSON Schemas for these live in `schemas/` (benchmark-run.schema.json, observation.schema.json); the
//! tests validate real outputs against them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::operations::{ItemCount, OperationDecl};
use crate::stats::{self, Interval, Summary, TukeyFences};

pub const BENCHMARK_RUN_SCHEMA: &str = "trtmc.benchmark-run/v1";
/// The timed region of `run`: one public operation call, measured by the worker's monotonic clock.
pub const PUBLIC_PIPELINE_CALL_WALL: &str = "public_pipeline_call_wall";
/// The timed region of the `tensorrt` runtime: GPU compute of one trtexec query (`computeMs` of
/// `--exportTimes`). Never comparable with [`PUBLIC_PIPELINE_CALL_WALL`].
pub const TRTEXEC_GPU_COMPUTE: &str = "trtexec_gpu_compute";

/// One raw timed call as written to observations.jsonl.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// 0-based index among the timed calls (warm-ups are not observations).
    pub iteration: u64,
    /// Start of this call, nanoseconds after the start of the first timed call.
    pub start_ns: u64,
    /// Wall time of the call in nanoseconds.
    pub wall_ns: u64,
    /// Items processed by the call (images, vectors, sequences); absent means 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<u64>,
    /// Output elements per item (e.g. the embedding width), for element/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elements_per_item: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Stage durations reported by the runner inside the call, by the operation's stage names.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stages_ns: BTreeMap<String, u64>,
    /// Operation-specific counters (audio microseconds, masks, frames), by the operation's counter names.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counts: BTreeMap<String, u64>,
}

/// A throughput figure: items per second of summed timed wall time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    pub name: String,
    pub unit: String,
    pub value: f64,
    /// Items counted over all timed calls.
    pub items: u64,
}

/// Reduced metrics of one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Wall latency of the timed calls, milliseconds.
    pub latency_ms: Summary,
    /// Bootstrap 95 % confidence interval of the p50 latency, milliseconds.
    pub p50_ci_ms: Option<Interval>,
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

/// Coefficient of variation above which a run is flagged as noisy (trtexec warns at 2.5 % on GPUs; CPU
/// runs here drift more, so flag at 10 %).
pub const NOISY_CV: f64 = 0.10;

/// Reduces raw observations into the operation's declared metrics. `None` when there are none.
pub fn reduce(op: &OperationDecl, observations: &[Observation]) -> Option<Metrics> {
    if observations.is_empty() {
        return None;
    }
    let latencies: Vec<f64> = observations
        .iter()
        .map(|o| o.wall_ns as f64 / 1e6)
        .collect();
    let latency_ms = stats::summarize(&latencies)?;
    let timed_seconds = observations.iter().map(|o| o.wall_ns as f64).sum::<f64>() / 1e9;
    let p50_ci_ms = stats::bootstrap_ci(
        &latencies,
        stats::median,
        0.95,
        stats::DEFAULT_RESAMPLES,
        0x5eed,
    );
    let fences = TukeyFences::from_sorted(&stats::sorted(&latencies));
    let outliers = latencies.iter().filter(|&&x| fences.is_outlier(x)).count();

    let throughputs = op
        .throughputs
        .iter()
        .map(|t| {
            let items = count_items(t.count, observations);
            let quantity = items as f64 * count_scale(op, t.count);
            let value = if timed_seconds > 0.0 {
                quantity / timed_seconds
            } else {
                0.0
            };
            Throughput {
                name: t.name.into(),
                unit: t.unit.into(),
                value,
                items,
            }
        })
        .collect();

    let ratios = op
        .ratios
        .iter()
        .map(|r| {
            let items = count_items(r.per, observations);
            let quantity = items as f64 * count_scale(op, r.per);
            Throughput {
                name: r.name.into(),
                unit: r.unit.into(),
                value: if quantity > 0.0 {
                    timed_seconds / quantity
                } else {
                    0.0
                },
                items,
            }
        })
        .collect();

    let mut stages_ms = BTreeMap::new();
    for stage in op.stages {
        let values: Vec<f64> = observations
            .iter()
            .filter_map(|o| o.stages_ns.get(stage.name))
            .map(|&ns| ns as f64 / 1e6)
            .collect();
        if let Some(s) = stats::summarize(&values) {
            stages_ms.insert(stage.name.to_string(), s);
        }
    }

    let mut warnings = Vec::new();
    let n = observations.len();
    if n < 20 {
        warnings.push(format!("only {n} timed calls: p95 and p99 are interpolated from the top few samples (raise --iterations)"));
    } else if n < 100 {
        warnings.push(format!(
            "only {n} timed calls: p99 rests on fewer than 100 samples (raise --iterations)"
        ));
    }
    if latency_ms.cv > NOISY_CV {
        warnings.push(format!(
            "latency varies a lot (coefficient of variation {:.1} %): close other programs, pin threads, or raise --warmup",
            latency_ms.cv * 100.0
        ));
    }
    Some(Metrics {
        latency_ms,
        p50_ci_ms,
        throughputs,
        ratios,
        stages_ms,
        outliers,
        timed_seconds,
        warnings,
    })
}

/// Items of `count` summed over the observations, in the count's base unit.
fn count_items(count: ItemCount, observations: &[Observation]) -> u64 {
    observations
        .iter()
        .map(|o| match count {
            ItemCount::Call => 1,
            ItemCount::Items => o.items.unwrap_or(1),
            ItemCount::Elements => o.items.unwrap_or(1) * o.elements_per_item.unwrap_or(0),
            ItemCount::OutputTokens => o.output_tokens.unwrap_or(0),
            ItemCount::Counter(name) => o.counts.get(name).copied().unwrap_or(0),
        })
        .sum()
}

/// Factor from a count's base unit to its metric unit (e.g. audio microseconds to seconds).
fn count_scale(op: &OperationDecl, count: ItemCount) -> f64 {
    match count {
        ItemCount::Counter(name) => op
            .counters
            .iter()
            .find(|c| c.name == name)
            .map_or(1.0, |c| c.scale),
        _ => 1.0,
    }
}

/// Program, runtimes and machine that produced a result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub program: ProgramInfo,
    pub runtimes: Vec<RuntimeInfo>,
    pub machine: MachineInfo,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgramInfo {
    pub name: String,
    pub version: String,
    /// Git revision the program was built from (`unknown` outside a checkout).
    pub revision: String,
    /// Cargo profile of the build (`release` or `debug`).
    pub build_profile: String,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RuntimeInfo {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineInfo {
    pub hostname: String,
    pub os: String,
    pub arch: String,
    pub cpu_model: String,
    pub logical_cpus: usize,
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
    pub log: String,
    pub timing: String,
    pub command: String,
    pub excluded_from_metrics: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BundleRef {
    pub path: String,
    pub key: Option<String>,
    pub origin: BundleOrigin,
    pub compatibility_verified: bool,
    pub runtime: RuntimeInfo,
    pub build_evidence: Option<BuildEvidence>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    Completed,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasurementInfo {
    pub warmup: u64,
    pub iterations: u64,
    pub min_duration_s: f64,
    /// Timed calls actually made (at least `iterations`; more when `min_duration_s` asked for it).
    pub observations: u64,
    /// Model load time in the worker, milliseconds (excluded from metrics).
    pub load_ms: Option<f64>,
}

/// One case of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    /// Directory of the case, relative to the result directory (`001-tiny-gpt-greedy`).
    pub dir: String,
    pub model: String,
    pub case: String,
    pub label: String,
    pub task_strategy: String,
    pub operation: String,
    pub runtime: RuntimeInfo,
    pub status: CaseStatus,
    #[serde(default)]
    pub error: Option<String>,
    pub identity: String,
    pub bundle: Option<BundleRef>,
    pub measurement: MeasurementInfo,
    pub metrics: Option<Metrics>,
    /// Swept keys and values of this case.
    #[serde(default)]
    pub sweep_point: BTreeMap<String, String>,
    /// Resolved request values (a copy of resolved-case.json's values, for reports).
    #[serde(default)]
    pub request: BTreeMap<String, serde_json::Value>,
    pub files: CaseFiles,
    /// The per-layer profiling pass (`run --profile`), made after the timed run; absent when not asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<CaseProfile>,
}

/// A case's per-layer profiling pass: trtexec-shaped `layers_<runtime>.json` and
/// `profile_<runtime>.json` in the case directory. Its failure leaves the timed result intact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseProfile {
    pub status: CaseStatus,
    #[serde(default)]
    pub error: Option<String>,
    /// Operation calls profiled (after the case's warm-up calls).
    pub iterations: u64,
    /// Paths relative to the result directory.
    pub layer_info: Option<String>,
    pub layer_profile: Option<String>,
    pub log: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseFiles {
    pub resolved_case: String,
    pub observations: Option<String>,
    pub worker_log: Option<String>,
    pub telemetry: Option<String>,
    /// Kept only when the worker failed.
    #[serde(default)]
    pub worker_request: Option<String>,
    #[serde(default)]
    pub worker_result: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Completed,
    /// Some cases failed.
    Partial,
    Failed,
}

/// result.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkRun {
    pub schema: String,
    pub run_id: String,
    pub created: String,
    pub status: RunStatus,
    pub command_line: Vec<String>,
    pub timing_boundary: String,
    pub percentile_method: String,
    /// A built-in test case makes a benchmark runnable; it is not evidence of task quality.
    pub task_quality_evaluated: bool,
    pub provenance: Provenance,
    pub cases: Vec<CaseResult>,
}

impl BenchmarkRun {
    pub fn status_of(cases: &[CaseResult]) -> RunStatus {
        let failed = cases
            .iter()
            .filter(|c| c.status == CaseStatus::Failed)
            .count();
        match failed {
            0 => RunStatus::Completed,
            n if n == cases.len() => RunStatus::Failed,
            _ => RunStatus::Partial,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operations::operation;

    fn obs(i: u64, wall_ms: f64, tokens: u64) -> Observation {
        Observation {
            iteration: i,
            start_ns: i * 10_000_000,
            wall_ns: (wall_ms * 1e6) as u64,
            output_tokens: Some(tokens),
            stages_ns: BTreeMap::from([("time_to_first_token".to_string(), 1_000_000)]),
            ..Default::default()
        }
    }

    #[test]
    fn generation_metrics_are_consistent() {
        let op = operation("generate").expect("generate");
        let o: Vec<Observation> = (0..10).map(|i| obs(i, 20.0, 32)).collect();
        let m = reduce(op, &o).expect("metrics");
        assert!((m.latency_ms.p50 - 20.0).abs() < 1e-9);
        assert!((m.timed_seconds - 0.2).abs() < 1e-9);
        let tps = m
            .throughputs
            .iter()
            .find(|t| t.name == "output token/s")
            .expect("tps");
        // tokens/s × time = tokens produced
        assert!((tps.value * m.timed_seconds - 320.0).abs() < 1e-6);
        let rps = m
            .throughputs
            .iter()
            .find(|t| t.name == "request/s")
            .expect("rps");
        assert!((rps.value - 50.0).abs() < 1e-9);
        assert_eq!(m.stages_ms["time_to_first_token"].p50, 1.0);
        assert!(m.warnings.iter().any(|w| w.contains("p95 and p99")));
    }

    #[test]
    fn encode_counts_vectors_and_elements() {
        let op = operation("encode").expect("encode");
        let o: Vec<Observation> = (0..4)
            .map(|i| Observation {
                iteration: i,
                wall_ns: 1_000_000,
                items: Some(8),
                elements_per_item: Some(64),
                ..Default::default()
            })
            .collect();
        let m = reduce(op, &o).expect("metrics");
        let get = |n: &str| m.throughputs.iter().find(|t| t.name == n).expect(n).value;
        assert!((get("vector/s") - 8000.0).abs() < 1e-6);
        assert!((get("element/s") - 512_000.0).abs() < 1e-3);
        assert!(reduce(op, &[]).is_none());
    }

    #[test]
    fn audio_counters_give_audio_seconds_per_second_and_the_real_time_factor() {
        let op = operation("transcribe").expect("transcribe");
        // 4 calls of 10 ms, each transcribing 0.5 s of audio into 6 tokens.
        let o: Vec<Observation> = (0..4)
            .map(|i| Observation {
                iteration: i,
                wall_ns: 10_000_000,
                output_tokens: Some(6),
                counts: BTreeMap::from([("audio_us".to_string(), 500_000)]),
                ..Default::default()
            })
            .collect();
        let m = reduce(op, &o).expect("metrics");
        let get = |n: &str| m.throughputs.iter().find(|t| t.name == n).expect(n).value;
        assert!((get("audio s/s") - 50.0).abs() < 1e-9);
        assert!((get("output token/s") - 600.0).abs() < 1e-9);
        let rtf = m
            .ratios
            .iter()
            .find(|r| r.name == "real-time factor")
            .expect("rtf");
        assert!((rtf.value - 0.02).abs() < 1e-12);
        assert!((rtf.value * get("audio s/s") - 1.0).abs() < 1e-9);
        assert_eq!(rtf.items, 2_000_000);
    }

    #[test]
    fn run_status_summarizes_cases() {
        assert_eq!(BenchmarkRun::status_of(&[]), RunStatus::Completed);
    }
}
