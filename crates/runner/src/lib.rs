//! The orchestration behind `trtmc-bench run`: model sources, bundle resolution and builds, worker
//! launches, reduction and result directories. It never prints; the CLI shows progress.

pub mod args;
pub mod bundles;
pub mod chat;
pub mod compare;
mod error;
pub mod interrupt;
pub mod launch;
pub mod machine;
pub mod model_inputs;
pub mod numbers;
pub mod progress;
pub mod run;
pub mod sources;
pub mod verdicts;

pub use error::Error;
