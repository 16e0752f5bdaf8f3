//! The documents of `trtmc-bench matrix`: one row result (`rows/NNN.json`, schema
//! `trtmc.matrix-row/v1`) and the run's `results.json` (schema `trtmc.matrix-results/v1`), both
//! described by schemas/matrix-results.schema.json (a row is its `$defs/row`), and the
//! bundle-preparation receipt they embed (`trtmc.perf-bundle-preparation/v1`,
//! schemas/matrix-bundle-preparation.schema.json). The parts of the suite and environment YAML that
//! `results.json` records (thresholds, the expanded environment) are typed here too; `trtmc-matrix`
//! reads, checks and writes them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::benchmark_run::{MachineInfo, ProgramInfo};
use crate::exit_codes::ExitCode;

pub const ROW_SCHEMA: &str = "trtmc.matrix-row/v1";
pub const RESULTS_SCHEMA: &str = "trtmc.matrix-results/v1";
pub const RECEIPT_SCHEMA: &str = "trtmc.perf-bundle-preparation/v1";
/// Schema name of the matrix plan (`plan.json`: the expanded rows of a suite; `trtmc_matrix::plan`).
pub const PLAN_SCHEMA: &str = "trtmc.matrix-plan/v1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RowStatus {
    /// Both sides measured the same workload at the same boundary: the row has a light.
    Compared,
    /// Different workload, boundary or precision: no light.
    ContractMismatch,
    /// A leaf command failed (or a Slurm task died): no light.
    Failed,
    /// Too few samples for a light.
    Incomplete,
}

impl RowStatus {
    pub fn label(self) -> &'static str {
        match self {
            RowStatus::Compared => "compared",
            RowStatus::ContractMismatch => "contract mismatch",
            RowStatus::Failed => "failed",
            RowStatus::Incomplete => "incomplete",
        }
    }
    /// Final outcomes are kept by `resume`; the others are attempted again.
    pub fn is_final(self) -> bool {
        matches!(self, RowStatus::Compared | RowStatus::ContractMismatch)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeafCommand {
    pub argv: Vec<String>,
    /// Environment variables set for this command on top of the inherited ones.
    pub env: BTreeMap<String, String>,
    pub exit_code: Option<i32>,
    pub seconds: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub backend: String,
    pub runtime: String,
    pub version: String,
    pub boundary: String,
    /// Workload identity the side recorded (hash of the resolved case).
    pub identity: String,
    pub precision: Option<String>,
    pub samples_ms: Vec<f64>,
    /// The p50 of each round (one process each), in round order.
    #[serde(default)]
    pub round_p50_ms: Vec<f64>,
    /// The side's result file, relative to the run directory.
    pub result_file: String,
}

/// How the candidate's bundle was prepared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Preparation {
    pub model: String,
    pub bundle: Option<String>,
    /// `built`, `cache_hit`, `bundle_root`, `explicit`, `none`; a matching receipt turns it into
    /// `built (receipt)` in the report.
    pub origin: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowResult {
    pub schema: String,
    pub index: usize,
    pub id: String,
    pub entry: String,
    pub model: String,
    pub testcase: String,
    pub status: RowStatus,
    pub message: Option<String>,
    pub comparison: Option<Comparison>,
    pub candidate: Option<Side>,
    pub reference: Option<Side>,
    pub resolved_settings: BTreeMap<String, Value>,
    pub commands: Vec<LeafCommand>,
    pub preparation: Option<Preparation>,
    /// The machine's 1-minute load average read before each round (`/proc/loadavg`; empty elsewhere).
    #[serde(default)]
    pub round_loads: Vec<f64>,
    /// Where the time went, for a yellow or red row whose sides can both profile (docs/matrix.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
    /// The attempt's working directory, relative to the run directory.
    pub attempt_dir: String,
    pub executor: String,
    pub slurm_task: Option<String>,
    pub host: String,
    pub started: String,
    pub finished: String,
}

/// A yellow or red row's explanation: one per-layer profiling pass per side, outside the timed rounds,
/// aligned by ONNX node. `layers` is empty when `missing` says why there is no explanation; the light
/// stays whatever the timed rounds gave.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    /// Why the explanation is missing (a side cannot profile, a profiling pass failed); `None` when
    /// `layers` holds it.
    pub missing: Option<String>,
    /// Summed per-call layer time of each side's profiling pass, milliseconds.
    pub candidate_ms: Option<f64>,
    pub reference_ms: Option<f64>,
    /// The layers that account for most of the gap, largest share first.
    pub layers: Vec<GapLayer>,
    /// The `analyze` report of both profiles (`index.html`), relative to the run directory.
    pub report: Option<String>,
    /// Why the two profiles could not be packaged (the explanation above still stands).
    pub report_error: Option<String>,
    /// Each side's profile files (`layers_*.json`, `profile_*.json`), relative to the run directory.
    pub files: Vec<String>,
}

/// One aligned layer: the ONNX nodes both sides' layers came from, and their per-call times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GapLayer {
    /// The ONNX node, or the first and last of the nodes a fusion on either side merged.
    pub layer: String,
    /// Every ONNX node in the group, in graph order.
    pub nodes: Vec<String>,
    pub candidate_ms: f64,
    pub reference_ms: f64,
    /// candidate_ms − reference_ms.
    pub delta_ms: f64,
    /// delta_ms as a fraction of the whole gap (the candidate's total minus the reference's).
    pub share: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Light {
    Green,
    Yellow,
    Red,
}

/// How a light is shown: its word, and its colour as the report palette's index and CSS class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LightStyle {
    pub label: &'static str,
    /// Index into the report palette (green, mustard, red).
    pub palette: usize,
    /// The palette's CSS class for swatches (`c2`).
    pub css_class: &'static str,
}

impl Light {
    /// The one place a light maps to its word and colour.
    pub fn style(self) -> LightStyle {
        let (label, palette, css_class) = match self {
            Light::Green => ("green", 2, "c2"),
            Light::Yellow => ("yellow", 5, "c5"),
            Light::Red => ("red", 3, "c3"),
        };
        LightStyle {
            label,
            palette,
            css_class,
        }
    }

    pub fn label(self) -> &'static str {
        self.style().label
    }
}

/// The comparison of one completed row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub candidate_p50_ms: f64,
    pub reference_p50_ms: f64,
    /// candidate p50 / reference p50: above 1 the candidate is slower.
    pub ratio: f64,
    /// How `ratio` and its interval were computed (`paired_rounds_median`: the median of the per-round
    /// p50 ratios with its distribution-free interval; docs/statistics.md).
    #[serde(default)]
    pub method: String,
    /// Paired rounds the ratio and its interval rest on.
    #[serde(default)]
    pub rounds: usize,
    pub ci_low: f64,
    pub ci_high: f64,
    pub confidence: f64,
    pub light: Light,
    /// The interval reaches past the light's band: the light is the estimate's (green/yellow) or was
    /// lowered from red to yellow.
    pub uncertain: bool,
    pub note: String,
    /// Why the row stopped adding rounds: its light was decided, or a budget ran out (`max_rounds`,
    /// `max_seconds`). Absent in rows written before rows added rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<StopReason>,
    /// The confidence of the interval at the look the row stopped at: the suite's confidence split
    /// over the planned looks (docs/statistics.md, *Sequential rounds*). 0 in older rows.
    #[serde(default)]
    pub look_confidence: f64,
}

/// Why a comparison that adds rounds stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The interval decided the light.
    Decided,
    /// The row reached its `max_rounds`.
    MaxRounds,
    /// Another block of rounds would have run past the row's `max_seconds`.
    MaxSeconds,
}

impl StopReason {
    pub fn label(self) -> &'static str {
        match self {
            StopReason::Decided => "decided",
            StopReason::MaxRounds => "max_rounds",
            StopReason::MaxSeconds => "max_seconds",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub rows: usize,
    pub green: usize,
    pub yellow: usize,
    pub red: usize,
    pub contract_mismatch: usize,
    pub failed: usize,
    pub incomplete: usize,
    pub pending: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteInfo {
    pub name: String,
    pub path: PathBuf,
    pub sha256: String,
    pub thresholds: Thresholds,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingRow {
    pub index: usize,
    pub id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlurmJob {
    pub job: String,
    pub tasks_file: String,
    pub rows: Vec<usize>,
    pub submitted: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub schema: String,
    pub created: String,
    pub updated: String,
    pub suite: SuiteInfo,
    pub environment_path: PathBuf,
    pub environment: Expanded,
    pub program: ProgramInfo,
    pub machine: MachineInfo,
    pub executor: String,
    pub entry: Option<String>,
    pub command_line: Vec<String>,
    pub summary: Summary,
    pub rows: Vec<RowResult>,
    pub pending: Vec<PendingRow>,
    pub slurm_jobs: Vec<SlurmJob>,
    pub preparation_receipt: Option<Receipt>,
}

impl Results {
    /// 0 when every row has a light; 5 when a row failed, is incomplete or pending; 8 for contract
    /// mismatches (and nothing worse).
    pub fn exit_code(&self) -> i32 {
        let s = &self.summary;
        let code = if s.failed + s.incomplete + s.pending > 0 {
            ExitCode::CaseFailed
        } else if s.contract_mismatch > 0 {
            ExitCode::ContractMismatch
        } else {
            ExitCode::Success
        };
        code as i32
    }
}

/// Light thresholds on the candidate/reference p50 ratio (lower is faster for the candidate).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Thresholds {
    /// Ratios up to this are green.
    pub green_max: f64,
    /// Ratios above `green_max` and up to this are yellow; above it, red.
    pub yellow_max: f64,
    /// Confidence level of the interval on the ratio.
    pub confidence: f64,
    /// Fewer timed calls than this on either side: an incomplete measurement, no light.
    pub min_samples: u64,
    /// Fewer paired rounds than this: the interval is not trusted, the row is `uncertain` and never red.
    pub min_rounds: u64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            green_max: 1.10,
            yellow_max: 1.25,
            confidence: 0.95,
            min_samples: 10,
            min_rounds: crate::figures::MIN_ROUNDS as u64,
        }
    }
}

/// The environment with every `${VAR}` expanded: what the run actually uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Expanded {
    pub name: String,
    pub variables: BTreeMap<String, String>,
    pub executables: BTreeMap<String, String>,
    pub bundle_cache: PathBuf,
    pub bundle_roots: Vec<PathBuf>,
    pub runtime_dirs: Vec<PathBuf>,
    /// The trtmc-bench the candidate rows run, when not this program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<PathBuf>,
    pub results_root: PathBuf,
    pub free_storage_gib: f64,
    pub python: String,
    pub reference_dir: PathBuf,
    pub require_release_build: bool,
    pub reference_threads: u64,
    pub slurm: SlurmSettings,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlurmSettings {
    /// Extra `sbatch` arguments (partition, account, time limit).
    pub sbatch_args: Vec<String>,
    /// One task per node at a time (`--exclusive`), so rows never share a machine while timed.
    pub exclusive: bool,
    /// Seconds between `squeue`/`sacct` polls.
    pub poll_s: f64,
    /// Give up waiting for the job array after this many seconds.
    pub timeout_s: f64,
    /// `tune`: the nodes are the same hardware, so a route built on one node may be timed on another.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub identical_nodes: bool,
    /// `tune`: folders every node sees; the tune's files must lie below one of them. Empty: anything
    /// but node-local folders (/tmp, /var/tmp, /dev/shm, /run).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shared_paths: Vec<std::path::PathBuf>,
}

impl Default for SlurmSettings {
    fn default() -> Self {
        SlurmSettings {
            sbatch_args: Vec::new(),
            exclusive: true,
            poll_s: 1.0,
            timeout_s: 3600.0,
            identical_nodes: false,
            shared_paths: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Receipt {
    pub schema: String,
    pub scope: String,
    /// The exact Git revision of the run the bundles were prepared for.
    pub revision: String,
    pub records: Vec<Record>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// The model file the bundle was built from (exactly as the run consumed it).
    pub model: String,
    /// The bundle directory (exactly as the run consumed it).
    pub bundle: String,
    /// `built` or `reused`.
    pub action: String,
    /// Seconds the build took; required, finite and non-negative for `built`.
    #[serde(default)]
    pub build_seconds: Option<f64>,
}
