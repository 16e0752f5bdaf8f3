//! What the matrix's and the tune's Slurm executors share: submitting a job array, reading its tasks'
//! states, and checking the controller before anything is submitted.
//!
//! Task states come from `sacct` when the cluster keeps accounting; without slurmdbd `sacct` answers
//! "accounting storage is disabled", and the states come from `squeue -t all` (finished jobs stay
//! visible for `MinJobAge` seconds).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use trtmc_core::artifacts::matrix::SlurmSettings;

/// Why a Slurm client program could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    /// The program could not be started.
    #[error("cannot start {program:?}: {source}")]
    Start {
        /// The program as it was to be started.
        program: OsString,
        /// Why it could not start.
        source: std::io::Error,
    },
    /// The program ran and failed; `stderr` is what it said.
    #[error("{program:?} failed ({status}): {stderr}")]
    Failed {
        /// The program that failed.
        program: OsString,
        /// Its exit status.
        status: ExitStatus,
        /// Its standard error, trimmed.
        stderr: String,
    },
    /// A Slurm client program is not on `PATH`.
    #[error(
        "`{program}` is not on PATH: install the Slurm client (slurm-client) or add its folder to PATH"
    )]
    ClientMissing {
        /// The missing program (`sbatch`, `squeue`, `scontrol` or `scancel`).
        program: &'static str,
    },
    /// `scontrol ping` did not succeed.
    #[error(
        "`scontrol ping` failed: the Slurm controller is not reachable (start slurmctld, check /etc/slurm/slurm.conf)"
    )]
    ControllerUnreachable,
    /// `sbatch --parsable` answered without a job id.
    #[error("sbatch printed no job id: `{output}`")]
    NoJobId {
        /// What sbatch printed instead.
        output: String,
    },
}

/// Runs `cmd`, returning stdout, or an error with stderr.
pub fn capture(cmd: &mut Command) -> Result<String, SlurmError> {
    let out = cmd.output().map_err(|source| SlurmError::Start {
        program: cmd.get_program().to_os_string(),
        source,
    })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(SlurmError::Failed {
            program: cmd.get_program().to_os_string(),
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// Sleeps one poll step, or returns `false` when the deadline has passed.
pub fn sleep_until(deadline: Instant, step: Duration) -> bool {
    let now = Instant::now();
    if now >= deadline {
        return false;
    }
    std::thread::sleep(step.min(deadline - now));
    true
}

/// The Slurm client programs on PATH and a controller that answers `scontrol ping`; otherwise the
/// reason and the fix.
pub fn check_controller() -> Result<(), SlurmError> {
    for exe in ["sbatch", "squeue", "scontrol", "scancel"] {
        if trtmc_core::machine::find_program(exe).is_none() {
            return Err(SlurmError::ClientMissing { program: exe });
        }
    }
    let ping = Command::new("scontrol").arg("ping").output();
    if !ping.is_ok_and(|o| o.status.success()) {
        return Err(SlurmError::ControllerUnreachable);
    }
    Ok(())
}

/// One job array to submit: `tasks` tasks, each running `task_command` (a shell line that may use
/// `$SLURM_ARRAY_TASK_ID`), logs in `log_pattern` (`%a`: the task id).
pub struct ArrayJob<'a> {
    /// The job name (`--job-name`), as `squeue` shows it.
    pub name: &'a str,
    /// Number of array tasks; they get the ids `0..tasks`.
    pub tasks: usize,
    /// Where each task's output goes (`--output`); `%a` is replaced by the task id.
    pub log_pattern: &'a Path,
    /// The tasks' working directory (`--chdir`).
    pub chdir: &'a Path,
    /// The shell line each task runs.
    pub task_command: &'a str,
}

/// Submits `job` with the environment's settings (`--exclusive` unless turned off, plus its sbatch
/// arguments); returns the job id.
pub fn submit_array(job: &ArrayJob, settings: &SlurmSettings) -> Result<String, SlurmError> {
    let mut cmd = Command::new("sbatch");
    cmd.arg("--parsable")
        .arg(format!("--array=0-{}", job.tasks.saturating_sub(1)))
        .arg(format!("--job-name={}", job.name))
        .arg(format!("--output={}", job.log_pattern.display()))
        .arg(format!("--chdir={}", job.chdir.display()));
    if settings.exclusive {
        cmd.arg("--exclusive");
    }
    cmd.args(&settings.sbatch_args)
        .arg("--wrap")
        .arg(job.task_command);
    let out = capture(&mut cmd)?;
    parse_job_id(&out).ok_or_else(|| SlurmError::NoJobId {
        output: out.trim().to_string(),
    })
}

/// The job id of `sbatch --parsable`'s answer (`123` or `123;cluster`).
pub fn parse_job_id(out: &str) -> Option<String> {
    out.trim()
        .split(';')
        .next()
        .filter(|j| !j.is_empty() && j.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_string)
}

/// A task in this state may still write its result.
pub fn is_active(state: &str) -> bool {
    matches!(
        state,
        "PENDING"
            | "RUNNING"
            | "CONFIGURING"
            | "COMPLETING"
            | "SUSPENDED"
            | "REQUEUED"
            | "RESIZING"
    )
}

/// A task in this state was stopped from outside (cancelled, past its time limit or deadline,
/// preempted) rather than dying by itself.
pub fn was_stopped(state: &str) -> bool {
    matches!(state, "CANCELLED" | "TIMEOUT" | "DEADLINE" | "PREEMPTED")
}

/// State and reason of each task of array `job`, by task id.
pub fn task_states(job: &str) -> Result<BTreeMap<usize, (String, String)>, SlurmError> {
    if let Some(states) = sacct_states(job) {
        return Ok(states);
    }
    let out = capture(
        Command::new("squeue").args(["-h", "-r", "-t", "all", "-j", job, "-o", "%K|%T|%r"]),
    )?;
    Ok(parse_squeue(&out))
}

fn parse_squeue(out: &str) -> BTreeMap<usize, (String, String)> {
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
    states
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
    let states = parse_sacct(&String::from_utf8_lossy(&out.stdout));
    (!states.is_empty()).then_some(states)
}

fn parse_sacct(text: &str) -> BTreeMap<usize, (String, String)> {
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
    states
}

/// ` (reason)` for messages, empty when Slurm gave none.
pub fn reason_suffix(reason: &str) -> String {
    if reason.is_empty() || reason == "None" {
        String::new()
    } else {
        format!(" ({reason})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_and_task_states_are_read_from_slurms_answers() {
        assert_eq!(parse_job_id("4711\n").as_deref(), Some("4711"));
        assert_eq!(parse_job_id("4711;cluster\n").as_deref(), Some("4711"));
        assert_eq!(parse_job_id("Submitted batch job 4711"), None);
        let squeue = parse_squeue("0|COMPLETED|None\n1|FAILED|NonZeroExitCode\nN/A|PENDING|\n");
        assert_eq!(squeue[&0].0, "COMPLETED");
        assert_eq!(squeue[&1], ("FAILED".into(), "NonZeroExitCode".into()));
        assert_eq!(squeue.len(), 2);
        let sacct =
            parse_sacct("12_0|COMPLETED|0:0\n12_1|CANCELLED by 0|0:9\n12_[2-3]|PENDING|0:0\n");
        assert_eq!(sacct[&1].0, "CANCELLED");
        assert_eq!(sacct.len(), 2);
        assert!(is_active("PENDING") && !is_active("FAILED"));
        assert!(was_stopped("TIMEOUT") && !was_stopped("FAILED"));
    }
}
