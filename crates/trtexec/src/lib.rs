//! Drives NVIDIA's `trtexec` for the `tensorrt` runtime: find it, read its version, build the
//! argv each TensorRT release understands, run it with a timeout, and read what it prints and
//! exports.
//!
//! Nothing in this crate was run against a GPU. Every parser is tested on real recorded trtexec
//! output (`shared/fixtures/trtexec-logs`, TensorRT 8.0.3 to 11.1) and the runner on a stand-in
//! executable (`trtexec-standin`) that replays those recordings; see `docs/tensorrt.md`.
//!
//! # How the tensorrt runtime uses it
//!
//! ```no_run
//! use std::path::Path;
//! use std::time::Duration;
//! use trtmc_trtexec::{
//!     BuildRequest, BuildShapes, ProfileRequest, TensorShape, TimeRequest, Trtexec, read_times,
//!     BOUNDARY_GPU_COMPUTE,
//! };
//!
//! # fn main() -> Result<(), trtmc_trtexec::TrtexecError> {
//! // `--trtexec PATH` from the command line, else PATH.
//! let trtexec = Trtexec::locate(None)?;
//! let version = trtexec.version(); // e.g. 10.16.1, from the `&&&& RUNNING` banner
//!
//! // Bundle build: engine + detailed layer information + build evidence from the log.
//! let mut build = BuildRequest::new("model.onnx", "bundle/model.plan");
//! build.shapes = BuildShapes::Static(vec![TensorShape::new("x", [4, 1, 28, 28])]);
//! build.timing_cache = Some("cache/timing.cache".into());
//! build.layer_info = Some("bundle/layers_tensorrt.json".into());
//! let built = trtexec.build(&build, Path::new("bundle/build.log"), Duration::from_secs(3600))?;
//! let _engine_build_s = built.log.build.engine_built_s; // "Engine built in X sec."
//!
//! // Timed run: one observation per query under a named boundary.
//! let mut time = TimeRequest::new("bundle/model.plan");
//! time.shapes = vec![TensorShape::new("x", [4, 1, 28, 28])];
//! time.export_times = Some("run/times.json".into());
//! let timed = trtexec.time(&time, Path::new("run/time.log"), Duration::from_secs(600))?;
//! let summary = timed.require_summary()?; // trtexec's own statistics, for cross-checking
//! for query in read_times(Path::new("run/times.json"))? {
//!     let _observation = (BOUNDARY_GPU_COMPUTE, query.compute_ms);
//! }
//! # let _ = (version, summary);
//!
//! // Separate profiling pass (never inside the timed run).
//! let mut profile = ProfileRequest::new("bundle/model.plan", "run/profile_tensorrt.json");
//! profile.export_layer_info = Some("run/layers_tensorrt.json".into());
//! trtexec.profile(&profile, Path::new("run/profile.log"), Duration::from_secs(600))?;
//! # Ok(())
//! # }
//! ```
//!
//! * The request structs are plain data with public fields and `args(&version)` methods that
//!   return the argv (pure functions, no I/O), so a runtime can record the exact command line in
//!   its build evidence and a tuner can build one route per child process with
//!   `BuildRequest::build_route` (`--setBuildRoute`). `trtexec`'s own tuner
//!   (`--tuneBuildRoutes`, `--dryRun`) is deliberately not driven.
//! * One requested behaviour, [`InferenceBehaviour`], yields the right flags on both sides of the
//!   TensorRT 11.0 flip of the CUDA-graph, spin-wait and data-transfer defaults.
//! * Asking an 11.x trtexec (strongly typed) for fp16 is [`TrtexecError::StrongTyping`] unless
//!   the request says the model is already typed.
//! * [`parse_log`] reads any trtexec log (7.x block summaries to 11.1 fixed notation) and never
//!   fails; [`read_times`], [`read_profile`] and [`parse_knob_database`] read the JSON exports and
//!   return errors that name the file and the expected shape.
//! * Timing boundaries: `computeMs` of `--exportTimes` is [`BOUNDARY_GPU_COMPUTE`]
//!   (`trtexec_gpu_compute`), `latencyMs` is [`BOUNDARY_HOST_LATENCY`] (`trtexec_host_latency`);
//!   neither is comparable with `public_pipeline_call_wall`.

pub mod args;
pub mod error;
pub mod exports;
pub mod knobs;
pub mod log;
pub mod outputs;
pub mod probes;
pub mod runner;
pub mod summary;
pub mod version;

pub use args::{
    BuildRequest, BuildShapes, InferenceBehaviour, MemPool, MemPoolKind, Precision, ProfileRequest,
    TensorShape, TimeRequest, format_shapes, help_build_route_args,
};
pub use error::{Result, TrtexecError};
pub use exports::{
    BOUNDARY_GPU_COMPUTE, BOUNDARY_HOST_LATENCY, LayerTime, ProfileExport, QueryTime,
    parse_profile, parse_times, read_profile, read_times,
};
pub use knobs::{
    AllowedValuesError, KnobDatabase, KnobOption, KnobValues, parse_allowed_values,
    parse_knob_database,
};
pub use log::{
    ParsedLog, RunStatus, StatusLine, is_unmarked_failure, parse_log, parse_status_line,
};
pub use outputs::{OutputTensor, parse_outputs, read_outputs};
pub use probes::ProbeCache;
pub use runner::{
    RunOutput, Trtexec, detect_version, find_executable, find_executable_in, run_process,
    run_process_in,
};
pub use summary::{
    IncompleteSummary, Percentile, PerformanceSummary, StatLine, SummaryForm, SummaryWarning,
};
pub use version::TrtexecVersion;
