//! One progress channel for the orchestrators of `run`, `tune` and `matrix` (in trtmc-matrix): they report
//! [`Event`]s and never print; the CLI decides what is shown (crates/cli/src/progress.rs).

use std::path::Path;

use trtmc_core::artifacts::CaseResult;
use trtmc_runtime::protocol::WorkerProgress;
use trtmc_tune::cache::IterationRecord;
use trtmc_tune::{Objective, TunePlan};

/// Something an orchestrator did.
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
    /// `tune`: the route runner is up and the search starts.
    TuneStarted {
        model: &'a str,
        runtime: &'a str,
        plan: &'a TunePlan,
        cache: &'a Path,
    },
    /// `tune --continue` dropped the torn last line of the cache (a write cut short by a kill).
    TornCacheLine {
        bytes: usize,
        cache: &'a Path,
    },
    /// `tune`: one iteration ran, or was replayed from the cache.
    Iteration {
        record: &'a IterationRecord,
        replayed: bool,
        objective: Objective,
    },
    /// `matrix`: row `done` (from 0) of `total` starts.
    RowStarted {
        done: usize,
        total: usize,
        id: &'a str,
    },
    /// `matrix`: a row's outcome, in one line.
    RowFinished {
        id: &'a str,
        outcome: &'a str,
    },
    /// Anything else worth a line (e.g. the Slurm executor's submissions).
    Message(&'a str),
}

/// What the orchestrators tell the user interface.
pub trait Progress {
    fn report(&self, event: Event<'_>);
}

/// Progress nobody watches.
pub struct Silent;

impl Progress for Silent {
    fn report(&self, _event: Event<'_>) {}
}
