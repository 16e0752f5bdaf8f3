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
//! Accuracy losses live in `trtmc_core::accuracy` (shared with `matrix` and the runtimes).

pub mod cache;
pub mod config;
pub mod driver;
pub mod expr;
pub mod knobs;
pub mod search;
pub mod select;
pub mod summary;

pub use trtmc_golden as golden;

pub use cache::{CacheHeader, CacheWriter, Fingerprint, IterationRecord, Phase, RouteStatus};
pub use config::TuneConfig;
pub use driver::{
    MeasurePlan, Progress, Reference, RouteError, RouteErrorKind, RouteRunner, Session, Timing,
    TuneError, TunePlan, tune,
};
pub use expr::{Expression, Route};
pub use knobs::KnobSet;
pub use search::SearchOrder;
pub use select::Objective;
pub use summary::TuneSummary;
