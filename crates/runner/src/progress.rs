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
        model: &'a str,
        runtime: &'a str,
        path: &'a Path,
    },
    BuildFinished {
        model: &'a str,
        seconds: f64,
    },
    /// `run`: case `index` of `total` (from 1) starts its worker.
    CaseStarted {
        index: usize,
        total: usize,
        label: &'a str,
        iterations: u64,
    },
    /// `run`: what case `index`'s worker reported about its warm-up or timed loop (about twice a second).
    CaseProgress {
        index: usize,
        progress: &'a WorkerProgress,
    },
    CaseFinished {
        index: usize,
        result: &'a CaseResult,
    },
}

/// What `run` tells the user interface.
pub trait Progress {
    fn report(&self, event: Event<'_>);
}

/// Progress nobody watches.
pub struct Silent;

impl Progress for Silent {
    fn report(&self, _event: Event<'_>) {}
}
