//! `run`'s progress: its orchestrator (and `compare`'s, which builds and runs the same bundles) reports
//! [`Event`]s and never prints; the CLI decides what is shown (crates/cli/src/progress.rs). `tune` and
//! `matrix` own their events (`trtmc_tune::progress`, `trtmc_matrix::progress`).

use std::path::Path;

use trtmc_core::artifacts::CaseResult;
use trtmc_runtime::protocol::WorkerProgress;

/// Something `run` did.
pub enum Event<'a> {
    /// `run`: a bundle build starts, into `path`.
    BuildStarted {
        /// Catalog name of the model being built.
        model: &'a str,
        /// Name of the runtime that builds it.
        runtime: &'a str,
        /// The bundle directory the build will fill.
        path: &'a Path,
    },
    /// `run`: the bundle build of `model` finished (a failed build is reported with its case instead).
    BuildFinished {
        /// Catalog name of the model built.
        model: &'a str,
        /// Wall-clock time of the build, in seconds.
        seconds: f64,
    },
    /// `run`: case `index` of `total` (from 1) starts its worker.
    CaseStarted {
        /// Position of the case in the plan, from 1.
        index: usize,
        /// Number of planned cases.
        total: usize,
        /// Model and case label, with the round (`(round 2/3)`) when there are several.
        label: &'a str,
        /// Timed calls this worker will make (this round's share of the case's iterations).
        iterations: u64,
    },
    /// `run`: what case `index`'s worker reported about its warm-up or timed loop (about twice a second).
    CaseProgress {
        /// Position of the case in the plan, from 1.
        index: usize,
        /// The worker's latest progress line.
        progress: &'a WorkerProgress,
    },
    /// `run`: case `index` is measured and reduced (or failed); `result` is what result.json will hold.
    CaseFinished {
        /// Position of the case in the plan, from 1.
        index: usize,
        /// The case's reduced result, with its error if it failed.
        result: &'a CaseResult,
    },
}

/// What `run` tells the user interface.
pub trait Progress {
    /// Called for each event as it happens, on the orchestrating thread; it should return quickly.
    fn report(&self, event: Event<'_>);
}

/// Progress nobody watches.
pub struct Silent;

impl Progress for Silent {
    fn report(&self, _event: Event<'_>) {}
}
