//! trtmc-analyze: read TensorRT `--exportLayerInfo` / `--exportProfile` / `--exportTimes` JSON,
//! validate it, analyze it, compare backends, and package a self-contained browser report.
//!
//! ```no_run
//! use trtmc_analyze::{Inputs, Request, analyze};
//! let analysis = analyze(&Request { inputs: Inputs::Folder("exports/bert".into()), model_name: None })?;
//! analysis.write_json(std::io::stdout().lock())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod analysis;
mod backend;
pub mod classify;
pub mod compare;
mod compat;
pub mod discover;
pub mod findings;
pub mod graph;
pub mod identity;
pub mod memory;
mod pack;
pub mod provenance;
pub mod report;
pub mod request;
pub mod serve;
mod write;

pub use analysis::{Analysis, SCHEMA};
pub use request::{AnalyzeError, Inputs, Options, Request, analyze, analyze_with};

pub use discover::DataSpec;
/// The export readers, from the crate below the trtexec driver (the old path keeps working).
pub use trtmc_trtexec_exports as read;
pub(crate) use trtmc_trtexec_exports::PARALLEL_LAYERS;
