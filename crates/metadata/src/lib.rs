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
//! Also here: the schema names of the two plan files ([`PLAN_SCHEMA`], [`matrix::PLAN_SCHEMA`]), the
//! timing boundaries ([`PUBLIC_PIPELINE_CALL_WALL`], [`TRTEXEC_GPU_COMPUTE`]) and the exit codes
//! ([`exit_codes::ExitCode`]). This crate depends on serde and serde_json only (a test in
//! `crates/core/tests/dependency_rules.rs` keeps it so).
//!
//! Not moved here yet (issue 33 item 6 continues): the worker protocol, the bundle manifest, reference
//! requests and results, layer profiles (`trtmc-runtime`), the tuning cache (`trtmc-tune`),
//! `analysis.json` (`trtmc-analyze`) and the collection report (`trtmc-report`).

#![warn(missing_docs)]

/// Output agreement: algorithm, tolerances and verdicts.
pub mod accuracy;
/// `result.json` of `run` and its parts.
pub mod benchmark_run;
/// The exit codes of `trtmc-bench`.
pub mod exit_codes;
/// Distribution summaries and confidence intervals.
pub mod figures;
// The fields of the matrix documents and the tuning summary are described in their JSON Schemas
// (schemas/) but not all here yet: the lint is held off for these two modules alone.
/// The release performance matrix's rows, results and receipts.
#[allow(missing_docs)]
pub mod matrix;
/// `list models --format json`.
pub mod model_list;
/// `call-notes.json` and `timing-notes.json`.
pub mod notes;
/// One line of `observations.jsonl`.
pub mod observation;
/// `telemetry.json`.
pub mod telemetry;
/// `tuning-summary.json` and the tuning values it names.
#[allow(missing_docs)]
pub mod tune_summary;
/// `tuned-route.json`.
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
