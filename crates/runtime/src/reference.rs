//! The protocol of the Python reference runners in `reference/` (ONNX Runtime's own Python loop, and
//! PyTorch where installed): a request file in, a worker-result-like file out, each runner in its own
//! process.
//!
//! The request (`trtmc.reference-request/v1`) names the ONNX model, the inputs (raw little-endian
//! binaries with a JSON index, written by [`crate::outputs::write_tensor_set`] from the same seeded
//! synthesis the worker uses), the warm-up and timed call counts, the seed, the precision the reference
//! must run at and its thread count. The result (`trtmc.reference-result/v1`) carries the worker
//! result's fields (status, error, runtime, load_ms, warmup_ms, observations, notes) plus the timing
//! boundary (`public_pipeline_call_wall`) and the precision the reference actually ran at.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use trtmc_core::artifacts::{Observation, PUBLIC_PIPELINE_CALL_WALL, RuntimeInfo};

use crate::protocol::WorkerStatus;

/// The `schema` of a [`ReferenceRequest`].
pub const REFERENCE_REQUEST_SCHEMA: &str = "trtmc.reference-request/v1";
/// The `schema` of a [`ReferenceResult`].
pub const REFERENCE_RESULT_SCHEMA: &str = "trtmc.reference-result/v1";
/// The file name of the request written for a reference runner, in its case directory.
pub const REFERENCE_REQUEST_FILE: &str = "reference-request.json";

/// What a reference runner is asked to run (`trtmc.reference-request/v1`), written as JSON and read by
/// `reference/trtmc_reference.py`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceRequest {
    /// Always [`REFERENCE_REQUEST_SCHEMA`].
    pub schema: String,
    /// The ONNX model the reference executes (the source model, not a runtime's bundle).
    pub model: PathBuf,
    /// The inputs' JSON index (`{"inputs": [{"name", "dtype", "shape", "file"}]}`).
    pub inputs: PathBuf,
    /// The case's operation (`infer`, `classify`, `generate`, …), run the way the candidate runs it.
    pub operation: String,
    /// Untimed warm-up calls before the timed ones.
    pub warmup: u64,
    /// The least number of timed calls.
    pub iterations: u64,
    /// The least total time of the timed calls, in seconds: calls go on until both this and
    /// `iterations` are reached (0 for no minimum).
    pub min_duration_s: f64,
    /// The seed `inputs` were synthesized from, for the record (the runners read the inputs).
    pub seed: u64,
    /// The precision the reference must run at (`fp32`, `fp16`, …); the runner records what it ran at
    /// and fails on a mismatch.
    pub precision: String,
    /// Intra-op threads of the reference (never more than the free cores).
    pub threads: u64,
    /// Runner-specific options, e.g. `{"graph_optimization_level": "all"}` for ONNX Runtime.
    #[serde(default)]
    pub options: BTreeMap<String, Value>,
    /// Where to save the outputs of the last call (raw binaries + `outputs.json`), if anywhere.
    #[serde(default)]
    pub save_outputs: Option<PathBuf>,
    /// The resolved case's request values (prompt, max_new_tokens, batch_size, thresholds, …).
    #[serde(default)]
    pub request: BTreeMap<String, Value>,
    /// The operation's per-call inputs as the candidate's runner prepared them
    /// (`operation-inputs.json`, see [`crate::outputs::write_call_inputs`]); absent for `infer` and
    /// `classify`, which feed `inputs` to one forward pass per call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_inputs: Option<PathBuf>,
    /// Run with the framework's profiler on and write its trace into this folder (named in the result's
    /// notes as `profile_trace`); the matrix's explanation of a yellow or red row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_dir: Option<PathBuf>,
}

/// What a reference runner wrote (`trtmc.reference-result/v1`): the worker result's fields plus the
/// timing boundary and the precision it ran at; [`Self::read_checked`] reads and checks one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceResult {
    /// Always [`REFERENCE_RESULT_SCHEMA`].
    pub schema: String,
    /// Whether the reference ran; anything but `ok` is a failure.
    pub status: WorkerStatus,
    /// Why it failed, when it did.
    pub error: Option<String>,
    /// The framework that ran (`name`, `version`).
    pub runtime: RuntimeInfo,
    /// Always `public_pipeline_call_wall`: one call of the reference's public API, wall clock.
    pub boundary: String,
    /// The precision the reference ran at (from the model's floating-point input types).
    pub precision: Option<String>,
    /// The precision the request asked for.
    pub requested_precision: String,
    /// Time to load the model into the framework, in milliseconds (`None` when it did not load).
    pub load_ms: Option<f64>,
    /// Each warm-up call's wall time, in milliseconds (not observations).
    pub warmup_ms: Vec<f64>,
    /// The timed calls, one observation each.
    pub observations: Vec<Observation>,
    /// Free-form facts of the run (e.g. `profile_trace`, the trace written for `profile_dir`).
    #[serde(default)]
    pub notes: BTreeMap<String, Value>,
}

impl ReferenceResult {
    /// Reads a result file and checks its contract: schema, status, boundary, precision, and the number
    /// of observations. `Err` names what does not hold.
    pub fn read_checked(path: &Path, request: &ReferenceRequest) -> anyhow::Result<Self> {
        let bytes = std::fs::read(path).with_context(|| {
            format!("the reference runner wrote no result at {}", path.display())
        })?;
        let r: ReferenceResult = serde_json::from_slice(&bytes).with_context(|| {
            format!(
                "{} is not a {REFERENCE_RESULT_SCHEMA} document",
                path.display()
            )
        })?;
        if r.schema != REFERENCE_RESULT_SCHEMA {
            bail!(
                "{} has schema `{}`, expected `{REFERENCE_RESULT_SCHEMA}`",
                path.display(),
                r.schema
            );
        }
        if r.status != WorkerStatus::Ok {
            bail!(
                "the reference failed: {}",
                r.error.as_deref().unwrap_or("no error message")
            );
        }
        if r.boundary != PUBLIC_PIPELINE_CALL_WALL {
            bail!(
                "the reference timed `{}`, not `{PUBLIC_PIPELINE_CALL_WALL}`: a contract mismatch",
                r.boundary
            );
        }
        if r.precision.as_deref() != Some(request.precision.as_str()) {
            bail!(
                "the reference ran at precision {:?}, {} was requested: a contract mismatch",
                r.precision,
                request.precision
            );
        }
        if (r.observations.len() as u64) < request.iterations {
            bail!(
                "the reference returned {} observations, {} were requested",
                r.observations.len(),
                request.iterations
            );
        }
        Ok(r)
    }
}

/// The inputs of a runner's calls, for a reference runner: call `i` uses `calls[i % calls.len()]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReferenceInputs {
    /// One entry per distinct call, used in rotation.
    pub calls: Vec<CallInputs>,
}

/// One call's inputs: tensors (saved as raw binaries) and plain values (token counts, seeds,
/// thresholds, …, saved as JSON).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallInputs {
    /// The call's tensors by name.
    pub tensors: Vec<(String, crate::tensor::HostTensor)>,
    /// The call's plain values by name.
    pub values: BTreeMap<String, Value>,
}
