//! Run directories: the plan, the row results, `results.json` and `report.html`; the local and Slurm
//! executors; resume.
//!
//! ```text
//! RUN/
//!   matrix-run.json          the plan (suite, expanded environment, rows, revision, executor)
//!   rows/NNN.json            one row result, written atomically once the row ends
//!   rows/NNN/attempt-K/      the leaf commands' outputs and logs of each attempt
//!   slurm/                   job records, task lists and task logs (Slurm executor)
//!   preparation-receipt.json an attached receipt (matrix report --preparation-receipt)
//!   results.json             everything above in one document, rewritten after every row
//!   report.html
//! ```

use std::path::{Path, PathBuf};

use trtmc_core::fsutil::{write_atomic, write_json_atomic};
use trtmc_core::test_hooks::TestHooks;

use crate::error::Error;
pub use crate::error::MatrixError;
use crate::progress::{Event, Progress};

use crate::lights::Light;
use crate::plan::{Plan, PlannedRow};
use crate::receipt::{self, Receipt};
use crate::row::{self, RowResult, RowStatus};

pub use crate::plan::PLAN_FILE;
/// The run's results document, written by `finalize`.
pub const RESULTS_FILE: &str = "results.json";
/// The run's HTML report, written beside the results.
pub const REPORT_FILE: &str = "report.html";
/// The preparation receipt a run may be given, kept in the run directory.
pub(crate) const RECEIPT_FILE: &str = "preparation-receipt.json";

/// The results document's types live with every other document in `trtmc_core::artifacts`.
pub use trtmc_core::artifacts::matrix::{
    PendingRow, RESULTS_SCHEMA, Results, SlurmJob, SuiteInfo, Summary,
};

/// Reads the run's plan; a directory without one is not a run (or an interrupted, half-created one).
pub(crate) fn read_plan(run: &Path) -> Result<Plan, MatrixError> {
    let path = run.join(PLAN_FILE);
    let bytes = std::fs::read(&path).map_err(|source| {
        if half_created(run).is_some() {
            Error::HalfCreated {
                run: run.to_path_buf(),
            }
        } else {
            Error::NotARunDirectory {
                run: run.to_path_buf(),
                source,
            }
        }
    })?;
    serde_json::from_slice(&bytes).map_err(|source| Error::MalformedPlan { path, source })
}

/// What an interrupted creation by an earlier version left in `dir` (an empty `rows/` and the plan's
/// atomic-write temporaries, but no plan), or `None` when `dir` holds anything else. Runs made now
/// are assembled beside their directory and moved into place whole, so they never look like this.
fn half_created(dir: &Path) -> Option<Vec<PathBuf>> {
    if !std::fs::symlink_metadata(dir).ok()?.is_dir() || dir.join(PLAN_FILE).exists() {
        return None;
    }
    let plan_temporary = format!(".{PLAN_FILE}.tmp-");
    let mut leftovers = Vec::new();
    for entry in std::fs::read_dir(dir).ok()? {
        let entry = entry.ok()?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let empty_rows = name == "rows"
            && std::fs::read_dir(&path).is_ok_and(|mut entries| entries.next().is_none());
        if !empty_rows && !name.starts_with(&plan_temporary) {
            return None;
        }
        leftovers.push(path);
    }
    (!leftovers.is_empty()).then_some(leftovers)
}

/// Removes the temporaries that killed matrix processes left in `run` (`.results.json.tmp-PID`,
/// `.report.html.tmp-PID`, a leaf run's `.NAME.staging-PID`, …) once their owner is known to be dead.
/// Rows are written by the row's own process, which under Slurm runs on another machine whose pids are
/// not ours to judge: their folders are only swept when every row ran here (`local`).
fn remove_stale_temporaries(run: &Path, rows_ran_here: bool) {
    use trtmc_core::fsutil::{atomic_temporary_owner, staging_owner};
    let sweep = |dir: &Path| {
        trtmc_core::fsutil::remove_stale_temporaries(dir, |name| {
            atomic_temporary_owner(name).or_else(|| staging_owner(name))
        });
    };
    sweep(run);
    sweep(&run.join("slurm"));
    if !rows_ran_here {
        return;
    }
    let rows = row::rows_dir(run);
    sweep(&rows);
    let subdirs = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .collect()
            })
            .unwrap_or_default()
    };
    for row_dir in subdirs(&rows) {
        sweep(&row_dir);
        for attempt in subdirs(&row_dir) {
            sweep(&attempt);
            // The Python reference's inputs and request are written one level down (`reference/`).
            for side in subdirs(&attempt) {
                sweep(&side);
            }
        }
    }
}

fn slurm_jobs(run: &Path) -> Vec<SlurmJob> {
    std::fs::read(run.join("slurm").join("jobs.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn read_receipt(run: &Path) -> Option<Receipt> {
    std::fs::read(run.join(RECEIPT_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
}

/// Builds results.json from the plan and the row files, and writes it and report.html atomically.
pub fn finalize(run: &Path) -> Result<Results, MatrixError> {
    let plan = read_plan(run)?;
    let mut rows = Vec::new();
    let mut pending = Vec::new();
    let mut s = Summary {
        rows: plan.rows.len(),
        ..Default::default()
    };
    for pr in &plan.rows {
        match row::read_row(run, pr.index) {
            Some(r) => {
                match (r.status, r.comparison.as_ref().map(|c| c.light)) {
                    (RowStatus::Compared, Some(Light::Green)) => s.green += 1,
                    (RowStatus::Compared, Some(Light::Yellow)) => s.yellow += 1,
                    (RowStatus::Compared, _) => s.red += 1,
                    (RowStatus::ContractMismatch, _) => s.contract_mismatch += 1,
                    (RowStatus::Failed, _) => s.failed += 1,
                    (RowStatus::Incomplete, _) => s.incomplete += 1,
                }
                rows.push(r);
            }
            None => {
                s.pending += 1;
                pending.push(PendingRow {
                    index: pr.index,
                    id: pr.id.clone(),
                });
            }
        }
    }
    let results = Results {
        schema: RESULTS_SCHEMA.into(),
        created: plan.created.clone(),
        updated: jiff::Timestamp::now().to_string(),
        suite: SuiteInfo {
            name: plan.suite.name.clone(),
            path: plan.suite_path.clone(),
            sha256: plan.suite_sha256.clone(),
            thresholds: plan.suite.thresholds.clone(),
        },
        environment_path: plan.environment_path.clone(),
        environment: plan.environment.clone(),
        program: plan.program.clone(),
        machine: trtmc_core::machine::machine(),
        executor: plan.executor.clone(),
        entry: plan.entry.clone(),
        command_line: plan.command_line.clone(),
        summary: s,
        rows,
        pending,
        slurm_jobs: slurm_jobs(run),
        preparation_receipt: read_receipt(run),
    };
    let results_path = run.join(RESULTS_FILE);
    write_json_atomic(&results_path, &results).map_err(Error::write(results_path))?;
    let html = trtmc_report::matrix_page::render(&results, run);
    let report_path = run.join(REPORT_FILE);
    write_atomic(&report_path, html.as_bytes()).map_err(Error::write(report_path))?;
    Ok(results)
}

/// Creates the run directory (a new one below the results root, or `output` if new or empty) with its
/// plan and `rows/`. The directory is assembled in a hidden sibling and renamed into place whole, so a
/// run directory that exists always holds its plan and can be resumed, whenever a kill comes.
pub fn create(plan: &Plan, output: Option<&Path>) -> Result<PathBuf, MatrixError> {
    let dir = match output {
        Some(d) => {
            check_output(d)?;
            let staging = assemble(plan, d)?;
            move_into_place(&staging, d).map_err(|source| match source.kind() {
                std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::DirectoryNotEmpty => {
                    Error::OutputRefused {
                        dir: d.to_path_buf(),
                        reason: "something was written into it while the run was being created"
                            .into(),
                    }
                }
                _ => Error::CreateDir {
                    path: d.to_path_buf(),
                    source,
                },
            })?;
            d.to_path_buf()
        }
        None => {
            let stamp = jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S").to_string();
            let root = &plan.environment.results_root;
            std::fs::create_dir_all(root).map_err(Error::create_dir(root))?;
            let stem = format!("matrix-{stamp}");
            let staging = assemble(plan, &root.join(&stem))?;
            place_uniquely(&staging, root, &stem).map_err(Error::create_dir(root.join(stem)))?
        }
    };
    let dir = crate::plan::absolute(&dir);
    finalize(&dir)?;
    Ok(dir)
}

/// Refuses an `-o` that cannot take a new run: a symlink (as `run -o` does), a file, a directory with
/// content. Only a directory that holds a run is pointed to `matrix resume`; what an interrupted
/// creation left (no plan, nothing ran) is cleared once its creator is dead.
fn check_output(dir: &Path) -> Result<(), MatrixError> {
    let refuse = |reason: String| Error::OutputRefused {
        dir: dir.to_path_buf(),
        reason,
    };
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return Ok(());
    };
    if meta.file_type().is_symlink() {
        return Err(refuse(
            "it is a symlink; a matrix run is never written through one (pass the real directory or a new path)"
                .into(),
        ));
    }
    if !meta.is_dir() {
        return Err(refuse(
            "it is a file, not a directory (give a new or empty directory)".into(),
        ));
    }
    let mut entries =
        std::fs::read_dir(dir).map_err(|e| refuse(format!("it cannot be read: {e}")))?;
    if entries.next().is_none() {
        return Ok(());
    }
    if dir.join(PLAN_FILE).exists() {
        return match read_plan(dir) {
            Ok(_) => Err(Error::OutputNotEmpty {
                dir: dir.to_path_buf(),
            }),
            Err(e) => Err(refuse(format!(
                "its {PLAN_FILE} is not a plan this program can resume ({}); give a new or empty directory",
                e.message()
            ))),
        };
    }
    let Some(leftovers) = half_created(dir) else {
        return Err(refuse(format!(
            "it is not empty and holds no matrix run (no {PLAN_FILE}); give a new or empty directory"
        )));
    };
    for path in &leftovers {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(pid) = trtmc_core::fsutil::atomic_temporary_owner(&name) {
            let changed = std::fs::symlink_metadata(path)
                .and_then(|m| m.modified())
                .unwrap_or(std::time::SystemTime::UNIX_EPOCH);
            if trtmc_core::fsutil::owner_may_be_alive(pid, changed) {
                return Err(refuse(format!(
                    "process {pid} is creating a matrix run in it (give another directory)"
                )));
            }
        }
    }
    for path in &leftovers {
        let removed = if path.is_dir() {
            std::fs::remove_dir(path)
        } else {
            std::fs::remove_file(path)
        };
        removed.map_err(|e| {
            refuse(format!(
                "what an interrupted matrix run left in it cannot be removed ({}: {e})",
                path.display()
            ))
        })?;
    }
    Ok(())
}

/// Writes the plan, then `rows/`, into a fresh hidden sibling of `target` (`.NAME.staging-PID`), after
/// removing the siblings that killed creations left.
fn assemble(plan: &Plan, target: &Path) -> Result<PathBuf, MatrixError> {
    let parent = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "matrix".into());
    std::fs::create_dir_all(parent).map_err(Error::create_dir(parent))?;
    // This name's killed creations, and those of runs named by the results root's default stem.
    let own = format!(".{name}.staging-");
    trtmc_core::fsutil::remove_stale_temporaries(parent, |entry| {
        let ours = entry.starts_with(&own) || entry.starts_with(".matrix-");
        trtmc_core::fsutil::staging_owner(entry).filter(|_| ours)
    });
    let staging = parent.join(format!(".{name}.staging-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir(&staging).map_err(Error::create_dir(&staging))?;
    let filled = (|| {
        let plan_path = staging.join(PLAN_FILE);
        write_json_atomic(&plan_path, plan).map_err(Error::write(plan_path))?;
        let rows = row::rows_dir(&staging);
        std::fs::create_dir(&rows).map_err(Error::create_dir(rows))
    })();
    filled.inspect_err(|_| {
        let _ = std::fs::remove_dir_all(&staging);
    })?;
    Ok(staging)
}

/// Renames the assembled `staging` to `target`, which must be absent or an empty directory (the rename
/// fails on a directory with content); the staging directory is removed when it fails.
fn move_into_place(staging: &Path, target: &Path) -> std::io::Result<()> {
    std::fs::rename(staging, target).inspect_err(|_| {
        let _ = std::fs::remove_dir_all(staging);
    })
}

/// Moves `staging` to `<root>/<stem>` (or `-2`, `-3`, … when taken).
fn place_uniquely(staging: &Path, root: &Path, stem: &str) -> std::io::Result<PathBuf> {
    for n in 1..10_000 {
        let candidate = if n == 1 {
            root.join(stem)
        } else {
            root.join(format!("{stem}-{n}"))
        };
        if std::fs::symlink_metadata(&candidate).is_ok() {
            continue;
        }
        match std::fs::rename(staging, &candidate) {
            Ok(()) => return Ok(candidate),
            // Another run took the name in between.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::DirectoryNotEmpty
                ) => {}
            Err(e) => {
                let _ = std::fs::remove_dir_all(staging);
                return Err(e);
            }
        }
    }
    let _ = std::fs::remove_dir_all(staging);
    Err(std::io::Error::other(format!(
        "no free directory name for {stem} in {}",
        root.display()
    )))
}

/// Rows still to run: no result, or a result that is not final (failed, incomplete).
pub fn pending_rows(plan: &Plan, run: &Path) -> Vec<PlannedRow> {
    plan.rows
        .iter()
        .filter(|pr| !row::read_row(run, pr.index).is_some_and(|r| r.status.is_final()))
        .cloned()
        .collect()
}

fn write_row(run: &Path, r: &RowResult) -> Result<(), MatrixError> {
    let path = row::row_file(run, r.index);
    write_json_atomic(&path, r).map_err(Error::write(path))
}

/// A row's outcome in one line (progress, the CLI's list of rows).
pub fn outcome_line(r: &RowResult) -> String {
    match (&r.status, &r.comparison) {
        (RowStatus::Compared, Some(c)) => format!(
            "{}{}: ratio {:.3} [{:.3}, {:.3}] over {} round(s) (candidate p50 {:.3} ms, reference p50 {:.3} ms)",
            c.light.label(),
            if c.uncertain { " (uncertain)" } else { "" },
            c.ratio,
            c.ci_low,
            c.ci_high,
            c.rounds,
            c.candidate_p50_ms,
            c.reference_p50_ms
        ),
        (s, _) => format!("{}: {}", s.label(), r.message.as_deref().unwrap_or("")),
    }
}

/// Runs every pending row of the run in `run` with `executor`, then writes the results.
pub fn execute(
    run: &Path,
    executor: &str,
    progress: &dyn Progress,
    test_hooks: &TestHooks,
) -> Result<Results, MatrixError> {
    let mut plan = read_plan(run)?;
    // One writer per run folder: a second `matrix run`/`resume` of this run is refused, so no row
    // runs twice.
    let _lock = lock_run(run)?;
    // Rows run with this program (resume checks that it is the plan's revision), unless the
    // environment names the trtmc-bench they run (`worker`).
    if plan.environment.worker.is_none()
        && let Ok(exe) = std::env::current_exe()
    {
        plan.exe = exe;
    }
    remove_stale_temporaries(run, plan.executor == "local" && executor == "local");
    plan.executor = executor.into();
    let pending = pending_rows(&plan, run);
    match executor {
        "local" => {
            let total = pending.len();
            // Ctrl-C, SIGTERM and SIGHUP stop the running row's leaf gracefully; the row is then
            // left pending (not recorded as failed) for `matrix resume`.
            let _ = trtmc_runner::interrupt::watch();
            for (i, pr) in pending.iter().enumerate() {
                if trtmc_runner::interrupt::requested() {
                    return Err(interrupted(run, i));
                }
                progress.report(Event::RowStarted {
                    done: i,
                    total,
                    id: &pr.id,
                });
                let r = row::execute(&plan, pr, run, None, test_hooks);
                if trtmc_runner::interrupt::requested() {
                    return Err(interrupted(run, i));
                }
                write_row(run, &r)?;
                progress.report(Event::RowFinished {
                    id: &r.id,
                    outcome: &outcome_line(&r),
                });
                finalize(run)?;
            }
        }
        "slurm" => crate::slurm::run(&plan, run, &pending, progress)?,
        other => {
            return Err(Error::UnknownExecutor {
                executor: other.to_string(),
            });
        }
    }
    finalize(run)
}

/// The lock of a matrix run folder (`.lock` inside it), held while rows run or results are written.
fn lock_run(run: &Path) -> Result<trtmc_core::dirlock::DirLock, MatrixError> {
    let what = format!("the matrix run {}", run.display());
    Ok(trtmc_core::dirlock::DirLock::acquire(
        &run.join(".lock"),
        &what,
    )?)
}

/// The stop of a local matrix session after `done` rows; the results so far are written first.
fn interrupted(run: &Path, done: usize) -> MatrixError {
    let _ = finalize(run);
    Error::Interrupted {
        run: run.to_path_buf(),
        done,
    }
}

/// `matrix resume`: the same program revision continues the rows that have no final result.
pub fn resume(
    run: &Path,
    executor: Option<&str>,
    progress: &dyn Progress,
    test_hooks: &TestHooks,
) -> Result<Results, MatrixError> {
    let plan = read_plan(run)?;
    let program = trtmc_runner::machine::program();
    if plan.program.revision != program.revision {
        return Err(Error::RevisionMismatch {
            run: run.to_path_buf(),
            started_by: plan.program.revision,
            this: program.revision,
        });
    }
    let executor = executor.unwrap_or(&plan.executor).to_string();
    execute(run, &executor, progress, test_hooks)
}

/// A Slurm array task: runs the row its task index names and writes its result.
pub fn task(
    run: &Path,
    tasks_file: &Path,
    task: usize,
    test_hooks: &TestHooks,
) -> Result<TaskOutcome, MatrixError> {
    let mut plan = read_plan(run)?;
    plan.executor = "slurm".into();
    let task_list = |source| Error::TaskList {
        path: tasks_file.to_path_buf(),
        source,
    };
    let bytes = std::fs::read(tasks_file).map_err(task_list)?;
    let rows: Vec<usize> =
        serde_json::from_slice(&bytes).map_err(|e| task_list(std::io::Error::from(e)))?;
    let index = *rows.get(task).ok_or_else(|| Error::TaskNotListed {
        task,
        path: tasks_file.to_path_buf(),
    })?;
    let pr = plan
        .rows
        .iter()
        .find(|r| r.index == index)
        .ok_or(Error::RowNotPlanned { index })?;
    if test_hooks.matrix_abort_row.as_deref() == Some(pr.id.as_str()) {
        // The caller ends the process without a row result, as a killed task would.
        return Ok(TaskOutcome::AbortedForTest);
    }
    let label = match (
        std::env::var("SLURM_ARRAY_JOB_ID"),
        std::env::var("SLURM_ARRAY_TASK_ID"),
    ) {
        (Ok(j), Ok(t)) => Some(format!("{j}_{t}")),
        _ => None,
    };
    let r = row::execute(&plan, pr, run, label, test_hooks);
    write_row(run, &r)?;
    Ok(TaskOutcome::RowWritten)
}

/// What a Slurm array task did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskOutcome {
    /// The row ran and its result is written.
    RowWritten,
    /// Test only: the row named by `TRTMC_TEST_MATRIX_ABORT_ROW` (under `TRTMC_TEST=1`) wrote nothing,
    /// so the process should now die as a killed task would.
    AbortedForTest,
}

/// `matrix report`: validates and attaches a preparation receipt (if given), rewrites the results.
pub fn report(run: &Path, receipt_path: Option<&Path>) -> Result<Results, MatrixError> {
    let plan = read_plan(run)?;
    remove_stale_temporaries(run, false);
    if let Some(path) = receipt_path {
        let mut consumed = receipt::Consumed::new();
        for pr in &plan.rows {
            if let Some(p) = row::read_row(run, pr.index).and_then(|r| r.preparation)
                && let Some(b) = p.bundle
            {
                consumed.insert(b, p.model);
            }
        }
        let r = receipt::load(path, &plan.program.revision, &consumed).map_err(|source| {
            Error::Receipt {
                path: path.to_path_buf(),
                source,
            }
        })?;
        let receipt_path = run.join(RECEIPT_FILE);
        write_json_atomic(&receipt_path, &r).map_err(Error::write(receipt_path))?;
    }
    finalize(run)
}

pub(crate) fn write_slurm_jobs(run: &Path, jobs: &[SlurmJob]) -> Result<(), MatrixError> {
    let path = run.join("slurm").join("jobs.json");
    write_json_atomic(&path, &jobs).map_err(Error::write(path))
}

pub(crate) fn read_slurm_jobs(run: &Path) -> Vec<SlurmJob> {
    slurm_jobs(run)
}

pub(crate) fn write_failed_row(
    plan: &Plan,
    run: &Path,
    pr: &PlannedRow,
    task: String,
    message: String,
) -> Result<(), MatrixError> {
    let now = jiff::Timestamp::now().to_string();
    let mut r = row::failed_row(plan, pr, Some(task), now.clone());
    r.message = Some(message);
    r.finished = now;
    write_row(run, &r)
}
