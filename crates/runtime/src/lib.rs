//! Runtimes, timed operation runners and the worker of trtmc.
//!
//! - [`runtime`]: the `Runtime` trait (build an optimized artifact, load a session) and the registry.
//! - [`tract_rt`]: the embedded pure-Rust runtime.
//! - [`bundle`]: bundle directories with their build evidence.
//! - [`ops`]: one timed runner per public operation.
//! - [`worker`] and [`protocol`]: the isolated process that owns the timed loop.

pub mod bundle;
pub mod ops;
pub mod protocol;
pub mod runtime;
pub mod tensor;
pub mod tokenize;
pub mod tract_rt;
pub mod worker;
