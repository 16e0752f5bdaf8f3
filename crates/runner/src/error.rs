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
    UnknownModel {
        /// The model name as given (`--model` or a bundle's manifest).
        model: String,
        /// The catalog's message, with the closest known names.
        reason: String,
    },
    /// The model exists but its status (e.g. `unsupported`) says it cannot run.
    #[error("model `{model}` cannot run: {status}")]
    ModelNotReady {
        /// Catalog name of the model.
        model: String,
        /// The model's catalog status, e.g. `unsupported`, with its note.
        status: String,
    },
    /// A `--sweep` cannot be expanded.
    #[error("{reason}")]
    Sweep {
        /// What is wrong with the sweep expression.
        reason: String,
    },
    /// A test-only operation (test_crash, test_hang, …) outside the test harness.
    #[error("{reason}")]
    TestOnlyOperation {
        /// Catalog name of the test model.
        model: String,
        /// Which operation it is and why it is refused here.
        reason: String,
    },
    /// A case of the model cannot be resolved (unknown case or field, a bad value).
    #[error("{reason}")]
    Case {
        /// Catalog name of the model whose case is wrong.
        model: String,
        /// The unknown case or field, or the bad value, as the catalog reports it.
        reason: String,
    },
    /// No runtime of that name.
    #[error("{reason}")]
    UnknownRuntime {
        /// The runtime name as given (`--runtime`).
        runtime: String,
        /// The registry's message, with the known runtimes.
        reason: String,
    },
    /// The runtime cannot run the model's operation.
    #[error("model `{model}`: {reason}")]
    UnsupportedOperation {
        /// Catalog name of the model.
        model: String,
        /// Name of the runtime that cannot run it.
        runtime: String,
        /// The runtime's explanation (which operation, and what it lacks).
        reason: String,
    },
    /// A `build.*` setting the runtime does not know or accept.
    #[error(transparent)]
    BuildSetting(anyhow::Error),
    /// A `runtime.*` setting the runtime does not know or accept.
    #[error("{reason}")]
    RuntimeSetting {
        /// Name of the runtime that refused the setting.
        runtime: String,
        /// Which setting and why it is refused.
        reason: String,
    },
    /// The model's tokenizer cannot be found or fetched.
    #[error("{source}")]
    Tokenizer {
        /// Catalog name of the model whose tokenizer is missing.
        model: String,
        /// What is missing and how to get it.
        source: Box<crate::sources::SourceError>,
    },
    /// The model's source file cannot be found, read or fetched.
    #[error("{source}")]
    Source {
        /// Catalog name of the model whose file is missing.
        model: String,
        /// What is missing and how to get it.
        source: Box<crate::sources::SourceError>,
    },
    /// The planned cases would be timed at different boundaries, so they cannot share one result.
    #[error(
        "runtime `{first_runtime}` is timed at `{first_boundary}` and runtime `{runtime}` at `{boundary}`: these numbers are not comparable, so they cannot share one result; run them separately"
    )]
    MixedTimingBoundaries {
        /// The first planned runtime, whose boundary the others are held to.
        first_runtime: String,
        /// Where `first_runtime`'s timer starts and stops.
        first_boundary: &'static str,
        /// A later runtime timed elsewhere.
        runtime: String,
        /// Where `runtime`'s timer starts and stops.
        boundary: &'static str,
    },
    /// An operation name that no operation declares.
    #[error("unknown operation `{operation}`")]
    UnknownOperation {
        /// The operation name as the model's catalog entry gives it.
        operation: String,
    },
    /// A bundle directory without a readable, current `bundle.json`.
    #[error("{reason}")]
    BundleManifest {
        /// The bundle directory.
        bundle: PathBuf,
        /// Why its `bundle.json` is missing, unreadable or out of date.
        reason: String,
    },
    /// `--bundle` was built for another runtime.
    #[error(
        "bundle {} was built for runtime `{built_for}`, not `{requested}` (pass --runtime {built_for} or another bundle)",
        bundle.display()
    )]
    BundleRuntimeMismatch {
        /// The bundle directory given to `--bundle`.
        bundle: PathBuf,
        /// The runtime its manifest records.
        built_for: String,
        /// The runtime the run asked for.
        requested: String,
    },

    // --- a runtime's library or tool is missing (exit 7) ---
    /// The runtime's library or tool cannot be found or loaded on this machine.
    #[error("runtime `{runtime}` is not available: {reason}")]
    RuntimeUnavailable {
        /// Name of the runtime.
        runtime: String,
        /// What is missing and how to provide it.
        reason: String,
    },

    // --- no bundle (exit 4) ---
    /// No bundle exists and `--no-build` forbids building one.
    #[error(
        "no bundle for model `{model}` on runtime `{runtime}` (key {key}) in {} and --no-build forbids building one (run without --no-build, or pass --bundle PATH)",
        cache_root.display()
    )]
    NoBundle {
        /// Catalog name of the model.
        model: String,
        /// Name of the runtime the bundle would be for.
        runtime: String,
        /// The first 16 hex digits of the cache key.
        key: String,
        /// The managed bundle cache that was searched (`--bundle-cache`).
        cache_root: PathBuf,
    },
    /// The runtime's build failed; its log is kept at `log`.
    #[error(
        "building model `{model}` with runtime `{runtime}` failed (build log: {})",
        log.display()
    )]
    BuildFailed {
        /// Catalog name of the model.
        model: String,
        /// Name of the runtime whose build failed.
        runtime: String,
        /// The kept build log, next to the bundle's place in the cache.
        log: PathBuf,
        /// The build's own error.
        source: anyhow::Error,
    },
    /// The managed bundle cache cannot be written.
    #[error("cannot {action} {} (check --bundle-cache)", path.display())]
    BundleCache {
        /// What was attempted, as a verb phrase (`create`, `lock`, …).
        action: &'static str,
        /// The file or directory of the cache concerned.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },

    // --- the result directory (exit 6) ---
    /// `-o` is refused (a symlink, unrelated content) or the result cannot be moved into place.
    #[error("{reason}")]
    OutputSlot {
        /// The result directory given to `-o`.
        dir: PathBuf,
        /// Why it is refused or cannot be filled.
        reason: String,
    },
    /// A directory of the result cannot be created.
    #[error("cannot create {}", path.display())]
    CreateResultDir {
        /// The directory that could not be created.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file of the result directory cannot be written.
    #[error("cannot write {}", path.display())]
    WriteResult {
        /// The file that could not be written.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },

    // --- compare sides and reference requests ---
    /// Input tensors for a comparison cannot be synthesized or read.
    #[error("{reason}")]
    CompareInputs {
        /// Which input and what went wrong.
        reason: String,
    },
    /// A comparison side's selection resolved to no case.
    #[error("the selection resolved to no case")]
    NoCase,
    /// A comparison side has no model file (nothing to run forward).
    #[error("model `{model}` has no model file to compare")]
    NoModelFile {
        /// Catalog name of the model.
        model: String,
    },
    /// A self-timed runtime (TensorRT through trtexec) returns no outputs to compare.
    #[error(
        "runtime `{runtime}` runs inside its own tool and returns no outputs here; compare it with trtexec's own accuracy check (--loadInputs/--loadRefOutputs)"
    )]
    SelfTimedRuntime {
        /// Name of the runtime.
        runtime: String,
    },
    /// The reference inputs or request cannot be written.
    #[error("cannot write {}: {reason}", path.display())]
    WriteReference {
        /// The file or directory that could not be written.
        path: PathBuf,
        /// The underlying error as text.
        reason: String,
    },

    // --- a bug (exit 1) ---
    /// The operation table contradicts itself.
    #[error("{reason}")]
    OperationTable {
        /// The contradiction found.
        reason: String,
    },
    /// A planned bundle that should have been built has no cache key or parent directory.
    #[error("bundle plan for {} cannot be built: {what}", bundle.display())]
    UnbuildablePlan {
        /// The planned bundle directory.
        bundle: PathBuf,
        /// What it lacks, as a clause (`it has no cache key`).
        what: &'static str,
    },
}

impl Error {
    /// The message followed by its causes, for places that keep an error as text (a failed route, a
    /// matrix row).
    pub fn message(&self) -> String {
        trtmc_core::error_text::with_causes(self)
    }
}
