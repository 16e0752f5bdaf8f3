//! `tune`'s progress: the orchestrator and its Slurm executor report [`Event`]s and never print; the
//! CLI decides what is shown (crates/cli/src/progress.rs).

use std::path::Path;

use crate::cache::IterationRecord;
use crate::{Objective, TunePlan};

/// Something a tune did.
pub enum Event<'a> {
    /// The route runner is up and the search starts.
    TuneStarted {
        /// Name of the model's profile.
        model: &'a str,
        /// Name of the runtime whose routes are tuned.
        runtime: &'a str,
        /// The knobs, expression and options of the tune.
        plan: &'a TunePlan,
        /// The tuning cache appended to.
        cache: &'a Path,
    },
    /// `--continue` dropped the torn last line of the cache (a write cut short by a kill).
    TornCacheLine {
        /// Bytes dropped from the end of the file.
        bytes: usize,
        /// The tuning cache.
        cache: &'a Path,
    },
    /// One iteration ran, or was replayed from the cache.
    Iteration {
        /// The iteration's cache line.
        record: &'a IterationRecord,
        /// It was read back from the cache rather than run now.
        replayed: bool,
        /// The statistic routes are ranked on, to show the record's time.
        objective: Objective,
    },
    /// A step of the Slurm executor (a job array submitted, its tasks waited for).
    Message(&'a str),
}

/// What a tune tells the user interface.
pub trait Progress {
    /// Called for each event as it happens, on the tuning thread; it should return quickly.
    fn report(&self, event: Event<'_>);
}
