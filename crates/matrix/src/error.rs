//! The matrix's one error type: what stopped a matrix command, with the data of the thing that went
//! wrong. A row that fails is not an error (it is a failed row in results.json); these stop the command.
//!
//! An underlying error (I/O, JSON) is the variant's `source()` and is not repeated in the message; the
//! CLI prints the message followed by its causes and decides the exit code of each variant in one
//! place (`exit.rs`).

use std::path::PathBuf;

use crate::plan::Finding;

/// Why a matrix command stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    // --- the run directory or an input file is wrong (exit 3) ---
    /// The directory has no readable plan.
    #[error("{} is not a matrix run directory (no {})", run.display(), crate::plan::PLAN_FILE)]
    NotARunDirectory {
        /// The matrix run directory.
        run: PathBuf,
        /// Why the plan could not be read.
        source: std::io::Error,
    },
    /// A directory an interrupted `matrix run` of an earlier version left without its plan.
    #[error(
        "{} holds what an interrupted `matrix run` left before it wrote its plan ({}): nothing ran in it, so there is nothing to resume; remove it with `{}` or give it to `matrix run -o` again, which clears it",
        run.display(),
        crate::plan::PLAN_FILE,
        trtmc_core::text::shell_line(&["rm".into(), "-r".into(), "--".into(), run.display().to_string()])
    )]
    HalfCreated {
        /// The matrix run directory.
        run: PathBuf,
    },
    /// The plan file does not parse.
    #[error("{} is not a matrix plan", path.display())]
    MalformedPlan {
        /// The plan file.
        path: PathBuf,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// `--executor` names no executor.
    #[error("executor `{executor}` is unknown: use local or slurm")]
    UnknownExecutor {
        /// The name given.
        executor: String,
    },
    /// `matrix resume` with a program of another revision than the one that started the run.
    #[error(
        "{} was started by revision {started_by}, this trtmc-bench is {this}: resume it with the same build, or start a new run",
        run.display()
    )]
    RevisionMismatch {
        /// The matrix run directory.
        run: PathBuf,
        /// The revision recorded in the plan.
        started_by: String,
        /// This program's revision.
        this: String,
    },
    /// A Slurm task list that cannot be read or parsed.
    #[error("cannot read task list {}", path.display())]
    TaskList {
        /// The task list file.
        path: PathBuf,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// A Slurm task index beyond its task list.
    #[error("task {task} is not in {}", path.display())]
    TaskNotListed {
        /// The task index (`SLURM_ARRAY_TASK_ID`).
        task: usize,
        /// The task list file.
        path: PathBuf,
    },
    /// A task list names a row the plan does not have.
    #[error("row {index} is not in the plan")]
    RowNotPlanned {
        /// The row index named.
        index: usize,
    },
    /// A preparation receipt that cannot be read, parsed or matched to this run.
    #[error("{source}")]
    Receipt {
        /// The receipt file.
        path: PathBuf,
        /// What is wrong with it (its message names the file).
        source: crate::receipt::ReceiptError,
    },
    /// `matrix check` (or the check before `matrix run`) found problems; the exit code depends on
    /// their kinds.
    #[error(
        "matrix preflight failed ({} problem(s)):\n{}",
        findings.len(),
        findings
            .iter()
            .map(|f| format!("{}: {}", f.subject, f.message))
            .collect::<Vec<_>>()
            .join("\n")
    )]
    Preflight {
        /// Every problem found, each naming its subject.
        findings: Vec<Finding>,
    },

    // --- Slurm does not answer as it should (exit 7) ---
    /// `sbatch` failed, could not start, or printed no job id.
    #[error("cannot submit the job array: {reason}")]
    SlurmSubmit {
        /// What went wrong, from the Slurm client.
        reason: String,
    },
    /// `sacct`/`squeue` failed while the array was followed.
    #[error("cannot poll job {job}: {reason}")]
    SlurmPoll {
        /// The Slurm job id.
        job: String,
        /// What went wrong, from the Slurm client.
        reason: String,
    },
    /// The array ran past `slurm.timeout_s` and was cancelled.
    #[error(
        "job array {job} did not finish within {timeout_s} s (slurm.timeout_s); it was cancelled; `matrix resume` continues"
    )]
    SlurmTimeout {
        /// The Slurm job id.
        job: String,
        /// The environment's `slurm.timeout_s`, seconds.
        timeout_s: f64,
    },

    // --- the run directory cannot be made or written (exit 6) ---
    /// `-o` names the directory of an existing run.
    #[error(
        "{} already holds a matrix run: continue it with `{}`, or give a new directory",
        dir.display(),
        trtmc_core::text::shell_line(&["trtmc-bench".into(), "matrix".into(), "resume".into(), dir.display().to_string()])
    )]
    OutputNotEmpty {
        /// The directory given to `-o`.
        dir: PathBuf,
    },
    /// `-o` names something a run cannot be created in (a symlink, a file, an unrelated directory).
    #[error("cannot create the matrix run in {}: {reason}", dir.display())]
    OutputRefused {
        /// The directory given to `-o`.
        dir: PathBuf,
        /// Why it cannot be used.
        reason: String,
    },
    /// A directory of the run could not be created.
    #[error("cannot create {}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// A file of the run could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// Another `matrix run`/`resume` writes this run now (one writer per run folder).
    #[error(transparent)]
    Locked(#[from] trtmc_core::dirlock::LockError),

    // --- stopped (exit 130) ---
    /// Ctrl-C, SIGTERM or SIGHUP: the running row's leaf was stopped and its row left pending.
    #[error(
        "interrupted: {done} row(s) of this session are kept in {}; the stopped row and the rest are pending: `{}` finishes them",
        run.display(),
        trtmc_core::text::shell_line(&["trtmc-bench".into(), "matrix".into(), "resume".into(), run.display().to_string()])
    )]
    Interrupted {
        /// The matrix run directory.
        run: PathBuf,
        /// Rows this session finished before the stop.
        done: usize,
    },
}

/// The matrix's errors under their earlier name.
pub type MatrixError = Error;

impl Error {
    /// The message followed by its causes.
    pub fn message(&self) -> String {
        trtmc_core::error_text::with_causes(self)
    }

    pub(crate) fn write(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Write { path, source }
    }

    pub(crate) fn create_dir(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::CreateDir { path, source }
    }
}
