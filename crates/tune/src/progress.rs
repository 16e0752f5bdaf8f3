//! `tune`'s progress: the orchestrator and its Slurm executor report [`Event`]s and never print; the
//! CLI decides what is shown (crates/cli/src/progress.rs).

use std::path::Path;

use crate::cache::IterationRecord;
use crate::{Objective, TunePlan};

/// Something a tune did.
pub enum Event<'a> {
    /// The route runner is up and the search starts.
    TuneStarted {
        model: &'a str,
        runtime: &'a str,
        plan: &'a TunePlan,
        cache: &'a Path,
    },
    /// `--continue` dropped the torn last line of the cache (a write cut short by a kill).
    TornCacheLine { bytes: usize, cache: &'a Path },
    /// One iteration ran, or was replayed from the cache.
    Iteration {
        record: &'a IterationRecord,
        replayed: bool,
        objective: Objective,
    },
    /// A step of the Slurm executor (a job array submitted, its tasks waited for).
    Message(&'a str),
}

/// What a tune tells the user interface.
pub trait Progress {
    fn report(&self, event: Event<'_>);
}
