//! The runner's one error type: what stopped a run (or a bundle resolution, or a build) before any
//! case was measured, with the data of the thing that went wrong.
//!
//! Each message names the thing and the fix. An underlying error (an I/O error, a failed build) is the
//! variant's `source()` and is not repeated in the message; [`Error::message`] (and the CLI) print the
//! message followed by its causes. Where a lower crate still reports plain text, the variant keeps that
//! text as `reason` beside the name of what it concerns. The exit code of each variant is decided in one
//! place, the CLI's `exit.rs`.

use std::path::PathBuf;

/// Why a run, a bundle plan or a bundle build stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    // --- the request is wrong (exit 3) ---
    /// `--bundle` names one bundle, so it cannot serve several models.
    #[error("--bundle applies to a single model; drop it or run one --model")]
    ExplicitBundleForManyModels,
    /// The catalog has no such model (`reason` lists close names).
    #[error("{reason}")]
    UnknownModel { model: String, reason: String },
    /// The model exists but its status (e.g. `unsupported`) says it cannot run.
    #[error("model `{model}` cannot run: {status}")]
    ModelNotReady { model: String, status: String },
    /// A `--sweep` cannot be expanded.
    #[error("{reason}")]
    Sweep { reason: String },
    /// A test-only operation (test_crash, test_hang, …) outside the test harness.
    #[error("{reason}")]
    TestOnlyOperation { model: String, reason: String },
    /// A case of the model cannot be resolved (unknown case or field, a bad value).
    #[error("{reason}")]
    Case { model: String, reason: String },
    /// No runtime of that name.
    #[error("{reason}")]
    UnknownRuntime { runtime: String, reason: String },
    /// The runtime cannot run the model's operation.
    #[error("model `{model}`: {reason}")]
    UnsupportedOperation {
        model: String,
        runtime: String,
        reason: String,
    },
    /// A `build.*` setting the runtime does not know or accept.
    #[error(transparent)]
    BuildSetting(anyhow::Error),
    /// A `runtime.*` setting the runtime does not know or accept.
    #[error("{reason}")]
    RuntimeSetting { runtime: String, reason: String },
    /// The model's tokenizer cannot be found or fetched.
    #[error("{source}")]
    Tokenizer {
        model: String,
        source: Box<crate::sources::SourceError>,
    },
    /// The model's source file cannot be found, read or fetched.
    #[error("{source}")]
    Source {
        model: String,
        source: Box<crate::sources::SourceError>,
    },
    /// The planned cases would be timed at different boundaries, so they cannot share one result.
    #[error(
        "runtime `{first_runtime}` is timed at `{first_boundary}` and runtime `{runtime}` at `{boundary}`: these numbers are not comparable, so they cannot share one result; run them separately"
    )]
    MixedTimingBoundaries {
        first_runtime: String,
        first_boundary: &'static str,
        runtime: String,
        boundary: &'static str,
    },
    /// An operation name that no operation declares.
    #[error("unknown operation `{operation}`")]
    UnknownOperation { operation: String },
    /// A bundle directory without a readable, current `bundle.json`.
    #[error("{reason}")]
    BundleManifest { bundle: PathBuf, reason: String },
    /// `--bundle` was built for another runtime.
    #[error(
        "bundle {} was built for runtime `{built_for}`, not `{requested}` (pass --runtime {built_for} or another bundle)",
        bundle.display()
    )]
    BundleRuntimeMismatch {
        bundle: PathBuf,
        built_for: String,
        requested: String,
    },

    // --- a runtime's library or tool is missing (exit 7) ---
    #[error("runtime `{runtime}` is not available: {reason}")]
    RuntimeUnavailable { runtime: String, reason: String },

    // --- no bundle (exit 4) ---
    /// No bundle exists and `--no-build` forbids building one.
    #[error(
        "no bundle for model `{model}` on runtime `{runtime}` (key {key}) in {} and --no-build forbids building one (run without --no-build, or pass --bundle PATH)",
        cache_root.display()
    )]
    NoBundle {
        model: String,
        runtime: String,
        /// The first 16 hex digits of the cache key.
        key: String,
        cache_root: PathBuf,
    },
    /// The runtime's build failed; its log is kept at `log`.
    #[error(
        "building model `{model}` with runtime `{runtime}` failed (build log: {})",
        log.display()
    )]
    BuildFailed {
        model: String,
        runtime: String,
        log: PathBuf,
        source: anyhow::Error,
    },
    /// The managed bundle cache cannot be written.
    #[error("cannot {action} {} (check --bundle-cache)", path.display())]
    BundleCache {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },

    // --- the result directory (exit 6) ---
    /// `-o` is refused (a symlink, unrelated content) or the result cannot be moved into place.
    #[error("{reason}")]
    OutputSlot { dir: PathBuf, reason: String },
    /// A directory of the result cannot be created.
    #[error("cannot create {}", path.display())]
    CreateResultDir {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A file of the result directory cannot be written.
    #[error("cannot write {}", path.display())]
    WriteResult {
        path: PathBuf,
        source: std::io::Error,
    },

    // --- compare sides and reference requests ---
    /// Input tensors for a comparison cannot be synthesized or read.
    #[error("{reason}")]
    CompareInputs { reason: String },
    /// A comparison side's selection resolved to no case.
    #[error("the selection resolved to no case")]
    NoCase,
    /// A comparison side has no model file (nothing to run forward).
    #[error("model `{model}` has no model file to compare")]
    NoModelFile { model: String },
    /// A self-timed runtime (TensorRT through trtexec) returns no outputs to compare.
    #[error(
        "runtime `{runtime}` runs inside its own tool and returns no outputs here; compare it with trtexec's own accuracy check (--loadInputs/--loadRefOutputs)"
    )]
    SelfTimedRuntime { runtime: String },
    /// The reference inputs or request cannot be written.
    #[error("cannot write {}: {reason}", path.display())]
    WriteReference { path: PathBuf, reason: String },

    // --- a bug (exit 1) ---
    /// The operation table contradicts itself.
    #[error("{reason}")]
    OperationTable { reason: String },
    /// A planned bundle that should have been built has no cache key or parent directory.
    #[error("bundle plan for {} cannot be built: {what}", bundle.display())]
    UnbuildablePlan { bundle: PathBuf, what: &'static str },
}

impl Error {
    /// The message followed by its causes, for places that keep an error as text (a failed route, a
    /// matrix row).
    pub fn message(&self) -> String {
        trtmc_core::error_text::with_causes(self)
    }
}
