//! The Slurm executor: the pending rows become one job array (one row per task, each task writes its
//! own row file), the array is followed by polling until no task is left, and tasks that ended without
//! a row result are recorded as failed rows with their Slurm state. `resume` re-submits just those.
//!
//! Task states come from `sacct` when the cluster keeps accounting; without slurmdbd `sacct` answers
//! "accounting storage is disabled", and the states come from `squeue -t all` (finished jobs stay
//! visible for `MinJobAge` seconds).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use trtmc_runner::progress::{Event, Progress};

use crate::error::{Error, MatrixError};
use crate::plan::{Plan, PlannedRow};
use crate::row;
use crate::runner::{self, SlurmJob, capture};

pub fn run(
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
    let mut cmd = Command::new("sbatch");
    cmd.arg("--parsable")
        .arg(format!("--array=0-{}", indices.len() - 1))
        .arg("--job-name=trtmc-matrix")
        .arg(format!(
            "--output={}",
            dir.join(format!("submit-{n}-task-%a.log")).display()
        ))
        .arg(format!("--chdir={}", run.display()));
    if plan.environment.slurm.exclusive {
        cmd.arg("--exclusive");
    }
    cmd.args(&plan.environment.slurm.sbatch_args)
        .arg("--wrap")
        .arg(&wrap);
    let out = capture(&mut cmd).map_err(|reason| Error::SlurmSubmit { reason })?;
    let job = out
        .trim()
        .split(';')
        .next()
        .filter(|j| !j.is_empty() && j.chars().all(|c| c.is_ascii_digit()))
        .ok_or_else(|| Error::SlurmNoJobId {
            output: out.trim().to_string(),
        })?
        .to_string();
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
        let active = states.values().any(|(s, _)| {
            matches!(
                s.as_str(),
                "PENDING"
                    | "RUNNING"
                    | "CONFIGURING"
                    | "COMPLETING"
                    | "SUSPENDED"
                    | "REQUEUED"
                    | "RESIZING"
            )
        });
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
                        if reason.is_empty() || reason == "None" {
                            String::new()
                        } else {
                            format!(" ({reason})")
                        }
                    ),
                )?;
            }
            return Ok(());
        }
        if !runner::sleep_until(deadline, step) {
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
    if let Some(states) = sacct_states(job) {
        return Ok(states);
    }
    let out = capture(
        Command::new("squeue").args(["-h", "-r", "-t", "all", "-j", job, "-o", "%K|%T|%r"]),
    )
    .map_err(|reason| Error::SlurmPoll {
        job: job.to_string(),
        reason,
    })?;
    let mut states = BTreeMap::new();
    for line in out.lines() {
        let mut parts = line.trim().splitn(3, '|');
        let (Some(task), Some(state)) = (parts.next(), parts.next()) else {
            continue;
        };
        if let Ok(t) = task.trim().parse::<usize>() {
            states.insert(
                t,
                (
                    state.trim().to_string(),
                    parts.next().unwrap_or("").trim().to_string(),
                ),
            );
        }
    }
    Ok(states)
}

/// `sacct` states when accounting is enabled; `None` when it is not (no slurmdbd).
fn sacct_states(job: &str) -> Option<BTreeMap<usize, (String, String)>> {
    let out = Command::new("sacct")
        .args(["-n", "-P", "-X", "-j", job, "-o", "JobID,State,ExitCode"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut states = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('|').collect();
        if f.len() < 3 {
            continue;
        }
        let Some((_, task)) = f[0].split_once('_') else {
            continue;
        };
        if let Ok(t) = task.parse::<usize>() {
            let state = f[1].split_whitespace().next().unwrap_or("").to_string();
            states.insert(t, (state, format!("exit {}", f[2])));
        }
    }
    (!states.is_empty()).then_some(states)
}
