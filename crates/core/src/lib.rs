//! Shared types of trtmc: catalog, cases, plans and sweeps, result schemas, statistics, cache keys and
//! atomic file helpers. Nothing here prints or runs a model.

pub mod accuracy;
/// The documents trtmc writes, from `trtmc-metadata` (the old path keeps working).
pub use trtmc_metadata as artifacts;
pub mod case;
pub mod case_error;
pub mod catalog;
pub mod chat;
pub mod data;
pub mod dirlock;
pub mod error_text;
pub mod fsutil;
pub mod hash;
pub mod intervals;
pub mod limits;
pub mod machine;
pub mod operations;
pub mod plan;
pub mod python;
pub mod result;
pub mod runtime_dirs;
pub mod settings;
pub mod sourced;
pub mod stats;
pub mod test_hooks;
pub mod text;
pub mod validity;
pub mod verdicts;
