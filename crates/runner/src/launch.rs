//! Starting the worker process: request file in, result file out, stdout and stderr into worker.log,
//! a per-case timeout, and optional low-frequency telemetry sampled from outside the worker.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use trtmc_core::artifacts::{GpuSample, TELEMETRY_SCHEMA, Telemetry, TelemetrySample};
use trtmc_runtime::protocol::{WorkerProgress, WorkerResult};

/// How often telemetry is sampled; low, so the sampler barely competes with the worker for a core.
const TELEMETRY_INTERVAL: Duration = Duration::from_millis(500);
/// How often the orchestrator checks whether the worker has exited.
const POLL: Duration = Duration::from_millis(5);
/// How often the worker's progress file is read.
const PROGRESS_POLL: Duration = Duration::from_millis(250);
/// How long a worker asked to stop (SIGTERM) may take to finish its call and write its result before
/// it is killed.
pub const STOP_GRACE: Duration = trtmc_runtime::worker::STOP_GRACE;

/// Who sees a worker's progress reports.
pub type ShowProgress<'a> = &'a dyn Fn(&WorkerProgress);

/// One worker launch: the program, its protocol files, its limits and who watches its progress.
pub(crate) struct Launch<'a> {
    pub worker: &'a Path,
    pub request: &'a Path,
    pub result: &'a Path,
    pub log: &'a Path,
    pub timeout: Duration,
    pub telemetry: bool,
    /// The worker's progress file (named in its request) and who wants to see it.
    pub progress: Option<(&'a Path, ShowProgress<'a>)>,
}

/// Why the orchestrator asked the worker to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopCause {
    Timeout,
    /// Ctrl-C or SIGTERM reached the orchestrator.
    Signal,
}

/// How a worker launch ended.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// The worker exited; `result` is absent when it died without writing one.
    Exited {
        status: ExitStatus,
        result: Option<WorkerResult>,
        result_error: Option<String>,
    },
    /// The worker was asked to stop (SIGTERM); `result` holds what it timed when it wrote one within
    /// [`STOP_GRACE`], else it was killed.
    Stopped {
        cause: StopCause,
        result: Option<WorkerResult>,
    },
    SpawnFailed(String),
}

/// Runs the worker to completion or timeout. Telemetry (when asked) is returned beside the outcome.
pub(crate) fn run(launch: &Launch<'_>) -> (Outcome, Option<Telemetry>) {
    let log = match std::fs::File::create(launch.log) {
        Ok(f) => f,
        Err(e) => {
            return (
                Outcome::SpawnFailed(format!("cannot create {}: {e}", launch.log.display())),
                None,
            );
        }
    };
    let log_err = match log.try_clone() {
        Ok(f) => f,
        Err(e) => {
            return (
                Outcome::SpawnFailed(format!("cannot share {}: {e}", launch.log.display())),
                None,
            );
        }
    };
    let spawned = Command::new(launch.worker)
        .arg("worker")
        .arg("--request")
        .arg(launch.request)
        .arg("--result")
        .arg(launch.result)
        // The worker ends itself when this pipe closes (this process died, however) or soon after
        // its timeout, so a killed orchestrator never leaves a worker running.
        .arg("--parent-pipe")
        .arg("--timeout-s")
        .arg(launch.timeout.as_secs_f64().to_string())
        .stdin(Stdio::piped())
        .stdout(log)
        .stderr(log_err)
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            return (
                Outcome::SpawnFailed(format!(
                    "cannot start worker {}: {e} (check --worker)",
                    launch.worker.display()
                )),
                None,
            );
        }
    };
    let started = Instant::now();
    let mut sampler = launch.telemetry.then(|| Sampler::new(child.id()));
    let mut next_sample = started;
    let mut next_progress = started + PROGRESS_POLL;
    let mut stop: Option<(StopCause, Instant)> = None;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let (result, result_error) = read_result(launch.result);
                let outcome = match stop {
                    Some((cause, _)) => Outcome::Stopped { cause, result },
                    None => Outcome::Exited {
                        status,
                        result,
                        result_error,
                    },
                };
                return (outcome, sampler.map(Sampler::finish));
            }
            Ok(None) => {}
            Err(e) => {
                return (
                    Outcome::SpawnFailed(format!("cannot wait for the worker: {e}")),
                    None,
                );
            }
        }
        let now = Instant::now();
        match stop {
            None => {
                let cause = if now - started > launch.timeout {
                    Some(StopCause::Timeout)
                } else if crate::interrupt::requested() {
                    Some(StopCause::Signal)
                } else {
                    None
                };
                if let Some(cause) = cause {
                    // The worker finishes its call, writes what it timed and exits.
                    let pid = rustix::process::Pid::from_child(&child);
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
                    stop = Some((cause, now));
                }
            }
            Some((cause, asked)) if now - asked > STOP_GRACE => {
                let _ = child.kill();
                let _ = child.wait();
                let (result, _) = read_result(launch.result);
                return (
                    Outcome::Stopped { cause, result },
                    sampler.map(Sampler::finish),
                );
            }
            Some(_) => {}
        }
        if let Some(s) = sampler.as_mut()
            && now >= next_sample
        {
            s.sample(now - started);
            next_sample = now + TELEMETRY_INTERVAL;
        }
        if let Some((path, show)) = launch.progress
            && now >= next_progress
        {
            if let Ok(bytes) = std::fs::read(path)
                && let Ok(p) = serde_json::from_slice::<WorkerProgress>(&bytes)
            {
                show(&p);
            }
            next_progress = now + PROGRESS_POLL;
        }
        std::thread::sleep(POLL);
    }
}

fn read_result(path: &Path) -> (Option<WorkerResult>, Option<String>) {
    match std::fs::read(path) {
        Err(_) => (None, None),
        Ok(bytes) => match serde_json::from_slice::<WorkerResult>(&bytes) {
            Ok(r) => (Some(r), None),
            Err(e) => (
                None,
                Some(format!("malformed worker result {}: {e}", path.display())),
            ),
        },
    }
}

/// Reads /proc for the worker's CPU time and RSS; nvidia-smi when it is on PATH.
struct Sampler {
    pid: u32,
    last_cpu_ticks: Option<u64>,
    last_t: Duration,
    ticks_per_s: f64,
    nvidia_smi: Option<PathBuf>,
    /// The `--id=` of the GPU CUDA runs on; `None` when none is visible.
    gpu_device: Option<String>,
    samples: Vec<TelemetrySample>,
}

impl Sampler {
    fn new(pid: u32) -> Self {
        let nvidia_smi = trtmc_core::machine::find_program("nvidia-smi");
        // Resolved once: a UUID prefix costs an `nvidia-smi -L`.
        let gpu_device = nvidia_smi.as_ref().and_then(|smi| {
            trtmc_core::machine::nvidia_smi_selected(
                smi,
                std::env::var("CUDA_VISIBLE_DEVICES").ok().as_deref(),
            )
        });
        Self {
            pid,
            last_cpu_ticks: None,
            last_t: Duration::ZERO,
            // USER_HZ is 100 on every Linux configuration in practice.
            ticks_per_s: 100.0,
            nvidia_smi,
            gpu_device,
            samples: Vec::new(),
        }
    }

    fn sample(&mut self, t: Duration) {
        let ticks = read_cpu_ticks(self.pid);
        let cpu_percent = match (ticks, self.last_cpu_ticks) {
            (Some(now), Some(before)) if t > self.last_t => Some(
                (now.saturating_sub(before)) as f64
                    / self.ticks_per_s
                    / (t - self.last_t).as_secs_f64()
                    * 100.0,
            ),
            _ => None,
        };
        self.last_cpu_ticks = ticks;
        self.last_t = t;
        let gpu = self.nvidia_smi.as_ref().and_then(|smi| {
            let device = self.gpu_device.as_ref()?;
            let out = Command::new(smi)
                .arg(format!("--id={device}"))
                .args([GpuSample::QUERY, GpuSample::FORMAT])
                .output()
                .ok()?;
            // A device nvidia-smi does not know (CUDA_VISIBLE_DEVICES=1 on a one-GPU machine) is
            // "No devices were found" with a failing status: no GPU reading, not a GPU of that name.
            out.status
                .success()
                .then(|| GpuSample::parse(&String::from_utf8_lossy(&out.stdout)))?
        });
        self.samples.push(TelemetrySample {
            t_s: t.as_secs_f64(),
            cpu_percent,
            rss_bytes: read_rss(self.pid),
            cpu_mhz: read_cpu_mhz(),
            gpu,
        });
    }

    fn finish(self) -> Telemetry {
        Telemetry {
            schema: TELEMETRY_SCHEMA.into(),
            interval_ms: TELEMETRY_INTERVAL.as_millis() as u64,
            note: "sampled by the orchestrator from outside the worker process, never inside a timed call"
                .into(),
            samples: self.samples,
        }
    }
}

fn read_cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesized command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

fn read_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

fn read_cpu_mhz() -> Option<f64> {
    if let Ok(khz) =
        std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq")
    {
        return khz.trim().parse::<f64>().ok().map(|k| k / 1000.0);
    }
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("cpu MHz"))?
        .split(':')
        .nth(1)?
        .trim()
        .parse()
        .ok()
}

/// Describes how a worker ended, for the case's error message.
pub fn describe_exit(status: &ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(signal) = status.signal() {
        let name = match signal {
            6 => "SIGABRT",
            9 => "SIGKILL",
            11 => "SIGSEGV",
            15 => "SIGTERM",
            _ => "signal",
        };
        format!("the worker was killed by {name} ({signal})")
    } else {
        format!(
            "the worker exited with status {}",
            status.code().unwrap_or(-1)
        )
    }
}
