//! The worker protocol: a JSON request in, raw timed observations out (both files).
//!
//! The orchestrator writes `worker-request.json`, starts the worker, and reads `worker-result.json`,
//! which the worker writes atomically once the timed loop is over. Nothing of the orchestrator runs in the
//! worker process.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use trtmc_core::artifacts::{LoopStop, Observation, RuntimeInfo};

/// The `schema` of worker-request.json.
pub const WORKER_REQUEST_SCHEMA: &str = "trtmc.worker-request/v1";
/// The `schema` of worker-result.json.
pub const WORKER_RESULT_SCHEMA: &str = "trtmc.worker-result/v1";

/// worker-request.json: everything the worker needs to time one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerRequest {
    /// [`WORKER_REQUEST_SCHEMA`].
    pub schema: String,
    /// The operation to call.
    pub operation: String,
    /// The runtime's name.
    pub runtime: String,
    /// The bundle directory; `None` for operations that need no model.
    pub bundle: Option<PathBuf>,
    /// Directory that manifest-relative artifact paths resolve against.
    pub manifest_dir: Option<PathBuf>,
    /// Tokenizer of text models (`bytes` for the embedded ones).
    #[serde(default)]
    pub tokenizer: Option<String>,
    /// The case's resolved request values (`request.*`).
    pub request: BTreeMap<String, Value>,
    /// Load-time settings (`runtime.*`).
    pub runtime_settings: BTreeMap<String, Value>,
    /// Untimed calls before the timed loop.
    pub warmup: u64,
    /// Seconds after which the warm-up stops early (at least one call is made); `None`: all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_budget_s: Option<f64>,
    /// The minimum count of timed calls.
    pub iterations: u64,
    /// The shortest timed loop, seconds (both minimums hold).
    pub min_duration_s: f64,
    /// The timed loop's budget: it stops here even before `iterations` calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_s: Option<f64>,
    /// With a budget (`max_duration_s`): once the minimums hold, keep calling until the p50's 95 %
    /// interval is within this fraction of the p50 (docs/run.md, *Stopping rule*); `None`: stop there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_half_width: Option<f64>,
    /// Where the worker writes its [`WorkerProgress`] about once a second (outside the timed calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_file: Option<PathBuf>,
    /// A per-layer profiling pass instead of a timed run (`run --profile`, always after the timed run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfilePass>,
    /// Calls the case made before this worker (earlier rounds, warm-up included): a case that rotates
    /// its inputs continues the rotation from there rather than restarting it every round.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub first_call: u64,
    /// The test suite's hooks, set only under `TRTMC_TEST=1` and absent from every other request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<WorkerHooks>,
    /// The case's own input data and expected outputs (`run --inputs`, `--check-outputs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<trtmc_core::data::CaseData>,
}

/// What the test suite asks of a worker (`trtmc_core::test_hooks`), carried as one optional value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerHooks {
    /// Microseconds of waiting added to every timed call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_delay_us: Option<u64>,
    /// Every timed call is made slower by this fraction, in parts per million (a busy wait of that
    /// fraction of the call's own duration, after it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_slowdown_ppm: Option<u64>,
    /// One node made slower in every call, timed or profiled (the matrix's candidate made slower in one
    /// known node): the worker decorates its session with `crate::testing::SlowNode`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_node: Option<SlowNode>,
}

/// `micros` more in the first layer whose name starts with `node`: a busy wait after every run of the
/// session, and that much more in the layer's every run of a profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlowNode {
    /// Prefix of the node's name.
    pub node: String,
    /// The wait, microseconds.
    pub micros: u64,
}

/// What a profiling pass writes: `layers_<runtime>.json` and `profile_<runtime>.json` into `dir`, from
/// `iterations` operation calls after the request's warm-up calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfilePass {
    /// Where the two files go.
    pub dir: PathBuf,
    /// Profiled calls.
    pub iterations: u64,
}

/// How the worker's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerStatus {
    /// The timed loop ran to its stopping rule.
    Ok,
    /// It failed; `error` says why.
    Error,
    /// Stopped by SIGINT or SIGTERM after a whole call: the observations made so far are in the result.
    Interrupted,
}

/// What the worker is doing, for the orchestrator's progress display.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerProgress {
    /// `warmup` or `timed`.
    pub phase: String,
    /// Calls made in this phase.
    pub done: u64,
    /// The calls this phase is expected to make, estimated from the calls so far and the stopping rule.
    pub expected: u64,
    /// Seconds since the phase started.
    pub elapsed_s: f64,
    /// Median wall time of the most recent calls (up to 1,000), milliseconds.
    pub p50_ms: f64,
}

/// worker-result.json: the raw timed observations and how the run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerResult {
    /// [`WORKER_RESULT_SCHEMA`].
    pub schema: String,
    /// How the run ended.
    pub status: WorkerStatus,
    /// Why it failed, when it did.
    pub error: Option<String>,
    /// The runtime that ran it, with its version.
    pub runtime: RuntimeInfo,
    /// Bundle load and session preparation, milliseconds.
    pub load_ms: Option<f64>,
    /// Wall time of each warm-up call, milliseconds (reported, never part of the metrics).
    pub warmup_ms: Vec<f64>,
    /// One per timed call, in order.
    pub observations: Vec<Observation>,
    /// What ended the timed loop (absent on error).
    #[serde(default)]
    pub stopped_by: Option<LoopStop>,
    /// Facts about the run worth keeping (e.g. the generated text of the last call).
    #[serde(default)]
    pub notes: BTreeMap<String, Value>,
}

impl WorkerResult {
    pub(crate) fn without_error(self) -> Self {
        WorkerResult {
            error: None,
            ..self
        }
    }
    /// A failed result: `error` set, nothing timed.
    pub fn failed(runtime: RuntimeInfo, error: String) -> Self {
        WorkerResult {
            schema: WORKER_RESULT_SCHEMA.into(),
            status: WorkerStatus::Error,
            error: Some(error),
            runtime,
            load_ms: None,
            warmup_ms: Vec::new(),
            observations: Vec::new(),
            stopped_by: None,
            notes: BTreeMap::new(),
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
