//! The matrix's progress: its orchestrator and Slurm executor report [`Event`]s and never print; the
//! CLI decides what is shown (crates/cli/src/progress.rs).

/// Something a matrix run did.
pub enum Event<'a> {
    /// Row `done` (from 0) of `total` starts.
    RowStarted {
        /// Rows of this session finished so far.
        done: usize,
        /// Rows this session runs.
        total: usize,
        /// The row's id.
        id: &'a str,
    },
    /// A row's outcome, in one line.
    RowFinished {
        /// The row's id.
        id: &'a str,
        /// Its light or failure, as one line.
        outcome: &'a str,
    },
    /// A step of the Slurm executor (a job array submitted, its tasks waited for).
    Message(&'a str),
}

/// What a matrix run tells the user interface.
pub trait Progress {
    /// Called for each event as it happens.
    fn report(&self, event: Event<'_>);
}
