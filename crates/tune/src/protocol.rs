//! The line protocol between the tuner and a route's child processes (`trtmc-bench tune-worker`).
//!
//! Nothing is written to disk for it: the first line on the child's stdin is the [`ChildRequest`], every
//! later line a [`Command`]; the child answers each with one [`Response`] line on stdout and logs to
//! stderr. A child that dies answers nothing: the tuner sees the pipe close and reads its exit status.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `schema` of a [`ChildRequest`].
pub const CHILD_REQUEST_SCHEMA: &str = "trtmc.tune-child-request/v1";

/// What a child process does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildMode {
    /// Build the route's bundle (skipped when the bundle directory already holds one with the key), then
    /// exit.
    Build,
    /// Load the bundle and answer [`Command`]s until `quit` or the end of stdin.
    Serve,
}

/// The first line a child reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildRequest {
    /// Always [`CHILD_REQUEST_SCHEMA`].
    pub schema: String,
    /// Build the bundle, or serve it.
    pub mode: ChildMode,
    /// The route, for messages.
    pub route: String,
    /// Name of the runtime that builds and serves the bundle.
    pub runtime: String,
    /// Name of the model's profile.
    pub model: String,
    /// The ONNX file the bundle is built from.
    pub onnx: PathBuf,
    /// The route's bundle directory in the managed bundle cache.
    pub bundle: PathBuf,
    /// The bundle's cache key (see `bundles::cache_key`).
    pub key: String,
    /// The resolved case's `build.*` values, with the route's knobs applied.
    pub build_settings: BTreeMap<String, Value>,
    /// The resolved case's `runtime.*` values, with the route's knobs applied.
    pub runtime_settings: BTreeMap<String, Value>,
    /// The public operation each measured call performs, and its request fields.
    pub operation: String,
    /// The resolved case's `request.*` values.
    pub request: BTreeMap<String, Value>,
    /// The directory of the profile's MODEL.toml, which relative paths (a `file:` tokenizer) start from.
    pub manifest_dir: Option<PathBuf>,
    /// The profile's tokenizer spec, as MODEL.toml gives it.
    pub tokenizer: Option<String>,
    /// Seed of the synthesized inputs for the accuracy check (the case's `request.seed`, else 0).
    pub input_seed: u64,
    /// The route's test-only knobs (`crate::testing`), set only under the test harness and absent from
    /// every other request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<ChildHooks>,
    /// The tuner's command line, for the bundle's build evidence.
    #[serde(default)]
    pub command_line: Vec<String>,
    /// The trtexec the tensorrt runtime drives (`--trtexec`); `None`: found on `PATH`.
    #[serde(default)]
    pub trtexec: Option<PathBuf>,
    /// Where a runtime that times itself keeps this route's tool logs and exports; the logs of a failed
    /// build are copied here too.
    #[serde(default)]
    pub tool_dir: Option<PathBuf>,
    /// The bundle cache, where the tuner's probes of the runtime's tool were kept (one `trtexec
    /// --help` per tune, not one per child).
    #[serde(default)]
    pub probe_cache: Option<PathBuf>,
}

/// What the test suite asks of a route's child (`-test:*` knobs), carried as one optional value and
/// honoured only under the test harness (`TRTMC_TEST=1`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChildHooks {
    /// A fault to inject (`-test:fault`), never `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
    /// Microseconds of sleep inside every timed call (`-test:sleep_us`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sleep_us: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A request to a serving child.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum Command {
    /// One forward pass on the given inputs (a raw tensor index) or, when `None`, on the seeded synthesized
    /// inputs; the outputs are written as a raw tensor index `outputs.json` into `out_dir`.
    Outputs {
        /// A raw tensor index of the inputs; `None`: the seeded synthesized inputs.
        inputs: Option<PathBuf>,
        /// Where `outputs.json` and its tensors are written.
        out_dir: PathBuf,
    },
    /// `warmup` untimed-for-ranking calls, then `calls` timed calls of the operation.
    Measure {
        /// Warm-up calls, timed apart and never ranked.
        warmup: u64,
        /// Steady-state calls.
        calls: u64,
    },
    /// Stop serving and exit.
    Quit,
}

/// A child's answer: `ok` with the fields of the command, or an error message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The command succeeded.
    pub ok: bool,
    /// Why it failed, when `ok` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Build: the bundle already existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached: Option<bool>,
    /// Build: seconds the runtime's build took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_seconds: Option<f64>,
    /// Outputs: the index of the written outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<PathBuf>,
    /// Measure: wall time of each warm-up call, ms.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warmup_ms: Vec<f64>,
    /// Measure: wall time of each timed call, ms.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples_ms: Vec<f64>,
    /// Measure: what the runtime's own tool said about the measurement (trtexec's warnings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// A failure that was a crash of the runtime's tool (trtexec killed by a signal), not a refusal.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub crashed: bool,
}

impl Response {
    /// A failed answer with `message` (not a crash).
    pub fn failed(message: impl Into<String>) -> Self {
        Self {
            ok: false,
            error: Some(message.into()),
            ..Self::default()
        }
    }
}
