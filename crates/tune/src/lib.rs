//! Build-route tuning for `trtmc-bench tune` (seed 003, issue 5).
//!
//! * [`knobs`]: knob databases in TensorRT's `getAllBuildRoutes` JSON shape; merging; `--help-routes`.
//! * [`expr`]: route expressions in TensorRT 11.1's grammar; concrete [`expr::Route`]s.
//! * [`search`]: the `fast`, `full`, `mixed` and `racing` orders and trtexec-identical `--dry-run` listings.
//! * [`select`]: objectives over steady-state samples, intervals over rounds, ties, head-to-head.
//! * [`driver`]: the tuning loop behind the [`driver::RouteRunner`] trait that runtimes implement.
//! * [`cache`]: the resumable JSON Lines tuning cache with its fingerprint.
//! * [`summary`]: the `trtmc.tuning-summary/v1` JSON summary.
//! * [`golden`]: `.npy`, `.npz` and raw-index readers for inputs and golden outputs (the crate
//!   `trtmc-golden`, below both the runtimes and the tuner; the old path keeps working).
//!
//!
//! The orchestration of a tune (it sits above `trtmc-runner`, whose bundles and worker launches it
//! uses; the runner never calls back):
//!
//! * [`runtime_knobs`]: the knob database of each runtime and what each knob sets.
//! * [`process`]: [`process::ProcessRunner`], one build process and one serving worker per route
//!   (tract, onnxruntime).
//! * [`child`]: the `tune-worker` child process (build or serve).
//! * [`orchestrate`]: a whole tune, request in, outcome out (output directory, cache, engine, saved
//!   bundles, summary and report).
//! * [`progress`]: the events a tune reports to the user interface.
//! * [`protocol`]: the line protocol between the tuner and its children.
//! * [`slurm`]: `--executor slurm`, each round's builds as one Slurm job array.
//! * [`testing`]: the test-only knobs (`-test:*`) and what they do in a route's child.
//!
//! Accuracy losses live in `trtmc_core::accuracy` (shared with `matrix` and the runtimes).

pub mod cache;
pub mod child;
pub mod config;
pub mod driver;
pub mod expr;
pub mod knobs;
pub mod orchestrate;
pub mod process;
pub mod progress;
pub mod protocol;
pub mod runtime_knobs;
pub mod search;
pub mod select;
pub mod slurm;
pub mod summary;
pub mod testing;

pub use trtmc_golden as golden;

pub use cache::{CacheHeader, CacheWriter, Fingerprint, IterationRecord, Phase, RouteStatus};
pub use config::TuneConfig;
pub use driver::{
    ExecutorError, MeasurePlan, Progress, Reference, RouteError, RouteErrorKind, RouteRunner,
    Session, Timing, TuneError, TunePlan, tune,
};
pub use expr::{Expression, Route};
pub use knobs::KnobSet;
pub use search::SearchOrder;
pub use select::Objective;
pub use summary::TuneSummary;
