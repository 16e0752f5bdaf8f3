//! The Slurm executor: the pending rows become one job array (one row per task, each task writes its
//! own row file), the array is followed by polling until no task is left, and tasks that ended without
//! a row result are recorded as failed rows with their Slurm state. `resume` re-submits just those.
//! Submitting and reading task states is shared with `tune --executor slurm` (`trtmc_executor::slurm`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::progress::{Event, Progress};

use crate::error::{Error, MatrixError};
use crate::plan::{Plan, PlannedRow};
use crate::row;
use crate::runner::{self, SlurmJob};
use trtmc_executor::slurm;

/// Runs the pending rows as one job array and waits for it; tasks that left no row result become
/// failed rows with their Slurm state.
pub(crate) fn run(
    plan: &Plan,
    run: &Path,
    pending: &[PlannedRow],
    progress: &dyn Progress,
) -> Result<(), MatrixError> {
    if pending.is_empty() {
        return Ok(());
    }
    let dir = run.join("slurm");
    std::fs::create_dir_all(&dir).map_err(Error::create_dir(&dir))?;
    let mut jobs = runner::read_slurm_jobs(run);
    let n = jobs.len() + 1;
    let tasks_file = dir.join(format!("submit-{n}-tasks.json"));
    let indices: Vec<usize> = pending.iter().map(|p| p.index).collect();
    trtmc_core::fsutil::write_json_atomic(&tasks_file, &indices)
        .map_err(Error::write(&tasks_file))?;
    // Non-final results of these rows are replaced by the tasks; remove them so a task that dies
    // cannot leave an older attempt's result looking current.
    for i in &indices {
        let _ = std::fs::remove_file(row::row_file(run, *i));
    }
    let task = [
        plan.exe.to_string_lossy().into_owned(),
        "matrix".into(),
        "task".into(),
        run.to_string_lossy().into_owned(),
        "--tasks-file".into(),
        tasks_file.to_string_lossy().into_owned(),
    ];
    // The array index is expanded by the task's shell, so it stays outside the quoted words.
    let wrap = format!(
        "exec {} --task \"$SLURM_ARRAY_TASK_ID\"",
        trtmc_core::text::shell_line(&task)
    );
    let log_pattern = dir.join(format!("submit-{n}-task-%a.log"));
    let array = slurm::ArrayJob {
        name: "trtmc-matrix",
        tasks: indices.len(),
        log_pattern: &log_pattern,
        chdir: run,
        task_command: &wrap,
    };
    let job =
        slurm::submit_array(&array, &plan.environment.slurm).map_err(|e| Error::SlurmSubmit {
            reason: e.to_string(),
        })?;
    progress.report(Event::Message(&format!(
        "submitted job array {job} ({} task(s), one row each)",
        indices.len()
    )));
    jobs.push(SlurmJob {
        job: job.clone(),
        tasks_file: tasks_file
            .strip_prefix(run)
            .unwrap_or(&tasks_file)
            .to_string_lossy()
            .into_owned(),
        rows: indices.clone(),
        submitted: jiff::Timestamp::now().to_string(),
    });
    runner::write_slurm_jobs(run, &jobs)?;

    // Follow the array until no task is pending or running.
    let settings = &plan.environment.slurm;
    let deadline = Instant::now() + Duration::from_secs_f64(settings.timeout_s.max(1.0));
    let step = Duration::from_secs_f64(settings.poll_s.clamp(0.1, 60.0));
    let mut reported = 0;
    loop {
        let states = task_states(&job)?;
        let done = indices
            .iter()
            .filter(|i| row::read_row(run, **i).is_some())
            .count();
        if done > reported {
            reported = done;
            runner::finalize(run)?;
            progress.report(Event::Message(&format!(
                "{done}/{} row(s) of job {job} written",
                indices.len()
            )));
        }
        let active = states.values().any(|(s, _)| slurm::is_active(s));
        // An array still pending may be listed as one record (`123_[0-3]`), so also require every
        // task to be known unless all rows are written.
        let all_known = (0..indices.len()).all(|t| states.contains_key(&t));
        if !active && (all_known || done == indices.len()) {
            // Record tasks that ended without a row result as failed rows.
            for (t, index) in indices.iter().enumerate() {
                if row::read_row(run, *index).is_some() {
                    continue;
                }
                let (state, reason) = states
                    .get(&t)
                    .cloned()
                    .unwrap_or_else(|| ("UNKNOWN".into(), String::new()));
                let Some(pr) = pending.iter().find(|p| p.index == *index) else {
                    continue;
                };
                runner::write_failed_row(
                    plan,
                    run,
                    pr,
                    format!("{job}_{t}"),
                    format!(
                        "Slurm task {job}_{t} ended {state}{} without a row result (log: slurm/submit-{n}-task-{t}.log); `matrix resume` runs it again",
                        slurm::reason_suffix(&reason)
                    ),
                )?;
            }
            return Ok(());
        }
        if !slurm::sleep_until(deadline, step) {
            let _ = Command::new("scancel").arg(&job).status();
            return Err(Error::SlurmTimeout {
                job,
                timeout_s: settings.timeout_s,
            });
        }
    }
}

/// State and reason of each task of array `job`, by task id.
fn task_states(job: &str) -> Result<BTreeMap<usize, (String, String)>, MatrixError> {
    slurm::task_states(job).map_err(|e| Error::SlurmPoll {
        job: job.to_string(),
        reason: e.to_string(),
    })
}
