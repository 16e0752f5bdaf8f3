//! Runtimes, timed operation runners and the worker of trtmc.
//!
//! - [`runtime`]: the `Runtime` trait (build an optimized artifact, load a session).
//! - [`registry`]: the runtimes by name (`runtime_with`, `runtime_names`) and `run_bundle`; above
//!   every runtime, so no runtime imports it.
//! - [`knobs`]: a runtime's declared settings as `tune` knobs (getAllBuildRoutes shape).
//! - [`tract_rt`]: the embedded pure-Rust runtime.
//! - [`ort_rt`]: ONNX Runtime, loaded from `libonnxruntime` at run time.
//! - [`tensorrt_rt`]: TensorRT through NVIDIA's `trtexec` (a runtime that times itself).
//! - [`profile`]: per-layer profiles in trtexec's export shapes, and the profiling pass.
//! - [`data`]: a case's own input data and expected outputs (`run --inputs`, `--check-outputs`).
//! - [`outputs`]: one forward pass with named outputs, for output agreement between runtimes.
//! - [`reference`]: the request/result protocol of the Python reference runners in `reference/`.
//! - [`error`]: the typed errors of the runtimes' checks (availability, settings, bundles).
//! - [`bundle`]: bundle directories with their build evidence.
//! - [`guard`]: the runtime boundary (graphs no runtime can run, a runtime's panic as an error).
//! - [`ops`]: one timed runner per public operation.
//! - [`worker`] and [`protocol`]: the isolated process that owns the timed loop.
//! - [`testing`]: the test suite's hooks on a loaded session (the slow node).

pub mod bundle;
pub mod data;
pub mod error;
pub mod guard;
pub mod knobs;
pub mod ops;
pub mod ort_rt;
pub mod outputs;
pub mod profile;
pub mod protocol;
pub mod reference;
pub mod registry;
pub mod runtime;
pub mod tensor;
pub mod tensorrt_rt;
pub mod testing;
pub mod tokenize;
pub mod tract_rt;
pub mod worker;
