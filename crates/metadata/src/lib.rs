//! Every document trtmc writes for machines to read, one Rust type and one schema constant each, with
//! its JSON Schema in `schemas/`. Writers build these types and readers deserialize them, so a renamed
//! or missing field is a compile error on the writing side and a named deserialization error on the
//! reading side, never a silent default.
//!
//! | file | schema constant | type | JSON Schema |
//! | --- | --- | --- | --- |
//! | `result.json` | [`BENCHMARK_RUN_SCHEMA`] | [`BenchmarkRun`] | benchmark-run.schema.json |
//! | `observations.jsonl` (one line) | – | [`Observation`] | observation.schema.json |
//! | `call-notes.json` | [`CALL_NOTES_SCHEMA`] | [`CallNotes`] | call-notes.schema.json |
//! | `timing-notes.json` | [`TIMING_NOTES_SCHEMA`] | [`TimingNotes`] | timing-notes.schema.json |
//! | `telemetry.json` | [`TELEMETRY_SCHEMA`] | [`Telemetry`] | telemetry.schema.json |
//! | `list models --format json` | [`MODEL_LIST_SCHEMA`] | [`ModelList`] | model-list.schema.json |
//! | `tuning-summary.json` | [`TUNING_SUMMARY_SCHEMA`] | [`TuneSummary`] | tuning-summary.schema.json |
//! | `tuned-route.json` | [`TUNED_ROUTE_SCHEMA`] | [`TunedRoute`] | tuned-route.schema.json |
//! | matrix `rows/NNN.json` | [`matrix::ROW_SCHEMA`] | [`matrix::RowResult`] | matrix-results.schema.json (`$defs/row`) |
//! | matrix `results.json` | [`matrix::RESULTS_SCHEMA`] | [`matrix::Results`] | matrix-results.schema.json |
//! | matrix preparation receipt | [`matrix::RECEIPT_SCHEMA`] | [`matrix::Receipt`] | matrix-bundle-preparation.schema.json |
//!
//! The matrix documents stay in their own module ([`matrix`]): their names (`Summary`, `Side`,
//! `Results`) only make sense with the `matrix::` prefix.
//!
//! Documents tied to one runtime's or one command's own types stay with them: the worker protocol, the
//! bundle manifest, reference requests and results, layer profiles (`trtmc-runtime`), the tuning cache
//! (`trtmc-tune`), `analysis.json` (`trtmc-analyze`) and the collection report (`trtmc-report`).

pub mod accuracy;
pub mod benchmark_run;
pub mod exit_codes;
pub mod figures;
pub mod matrix;
pub mod model_list;
pub mod notes;
pub mod observation;
pub mod telemetry;
pub mod tune_summary;
pub mod tuned_route;

pub use benchmark_run::*;
pub use model_list::*;
pub use notes::*;
pub use observation::*;
pub use telemetry::*;
pub use tune_summary::*;
pub use tuned_route::*;

/// Schema name of a plan file given to `run --plan` (cases, sweeps and overrides; `trtmc_core::plan`).
pub const PLAN_SCHEMA: &str = "trtmc.plan/v1";
