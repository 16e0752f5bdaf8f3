//! `tune --executor slurm`: every round's builds as one Slurm job array, the timing on one node.
//!
//! [`SlurmRunner`] wraps the local [`ProcessRunner`]. When the tuning engine announces a round
//! ([`RouteRunner::build_ahead`]), the routes without a result file become one job array: task `i`
//! runs `trtmc-bench tune-task TASKS --task i`, which builds route `i` into the shared bundle cache in
//! a `tune-worker` child (killed past the route timeout) and writes `slurm/routes/route-<hash>.json`
//! atomically: its status, build time, node and hardware. The coordinator follows the array until no
//! task is left; a task that ended without a result file (failed, cancelled, past its time limit, lost
//! with its node) gets one naming its Slurm state, so it becomes that route's error and never a hang.
//! The engine then takes the routes in route order: each route's result is read, the bundle (already
//! in the cache) is loaded by the local runner, and its accuracy check and every measurement run here,
//! one at a time, so all timings come from one node.
//!
//! A stopped coordinator (Ctrl-C, SIGTERM, SIGHUP) cancels the arrays it submitted that are still
//! pending or running (`scancel`), so no build goes on for a tune that ended. A killed one (kill -9)
//! cannot: its arrays run on, and it loses nothing: on `--continue` the routes the cache replays are not
//! asked for, tasks of earlier arrays still running are waited for, and only routes without a result
//! file are submitted again.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use crate::driver::ExecutorError;
use crate::expr::Route;
use crate::{MeasurePlan, RouteError, RouteRunner, Timing};
use serde::{Deserialize, Serialize};
use trtmc_core::accuracy::Tensor;
use trtmc_core::artifacts::matrix::SlurmSettings;
use trtmc_core::fsutil::write_json_atomic;

use crate::orchestrate::BuiltRoutes;
use crate::process::{Built, ProcessRunner, RouteBundle};
use crate::progress::{Event, Progress};
use crate::protocol::{ChildMode, ChildRequest, Response};
use trtmc_executor::slurm;
use trtmc_runner::launch::describe_exit;

/// The coordinator's folder inside the output directory: task lists, jobs, task logs, route results.
pub const SLURM_DIR: &str = "slurm";
/// The `schema` of a [`RouteResult`] file.
pub const ROUTE_RESULT_SCHEMA: &str = "trtmc.tune-route-result/v1";
const TASKS_SCHEMA: &str = "trtmc.tune-slurm-tasks/v1";
/// Test only (with `TRTMC_TEST=1`): the task of this route aborts before it writes its result, as a
/// task killed with its node would.
pub use trtmc_core::test_hooks::TUNE_ABORT_ROUTE_ENV as ABORT_ROUTE_ENV;

/// How a route's build task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BuildStatus {
    /// The bundle was built (or was already in the cache).
    Built,
    /// The runtime reported an error.
    Failed,
    /// The task died (a signal, or it ended without a result).
    Crashed,
    /// Slurm stopped the task (cancelled, past its time limit or deadline, preempted).
    TimedOut,
}

/// One route's result file, written atomically by its task (or by the coordinator for a task that
/// ended without one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteResult {
    /// Always [`ROUTE_RESULT_SCHEMA`].
    pub schema: String,
    /// The route's text.
    pub route: String,
    /// How the build ended.
    pub status: BuildStatus,
    /// Why the build failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Seconds the runtime's build took, when it built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_seconds: Option<f64>,
    /// The bundle was already in the cache.
    #[serde(default)]
    pub cached: bool,
    /// Where the task ran (`SLURMD_NODENAME`, else the host name); empty when it never ran.
    pub node: String,
    /// The node's hardware ([`hardware`]); empty when the task never ran.
    pub hardware: String,
    /// `JOB_TASK`.
    pub slurm_task: String,
    /// When the result was written (RFC 3339).
    pub finished: String,
}

/// The tasks of one job array.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct TaskList {
    schema: String,
    /// The trtmc-bench whose `tune-worker` builds each route.
    exe: PathBuf,
    tasks: Vec<TaskSpec>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct TaskSpec {
    route: String,
    request: ChildRequest,
    result: PathBuf,
    timeout_s: Option<f64>,
}

/// A submitted array, kept in `slurm/jobs.json` so a continued tune waits for its live tasks.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SubmittedJob {
    job: String,
    tasks_file: PathBuf,
    routes: Vec<String>,
    submitted: String,
}

/// This machine's hardware as the route results record it: CPU model, the CPUs the machine has (not
/// the ones a Slurm task may use: a task confined to a few cores is still on the same hardware), OS
/// and architecture, and the GPU models (without their serial UUIDs, which differ on identical nodes).
pub fn hardware() -> String {
    let machine = trtmc_core::machine::machine();
    let cpus = std::fs::read_to_string("/proc/cpuinfo")
        .map(|t| t.lines().filter(|l| l.starts_with("processor")).count())
        .unwrap_or(0);
    let cpus = if cpus > 0 { cpus } else { machine.logical_cpus };
    let mut line = format!(
        "{}; {cpus} CPUs; {} {}",
        machine.cpu_model,
        std::env::consts::OS,
        machine.arch
    );
    let gpus: Vec<&str> = machine
        .gpus
        .iter()
        .map(|g| g.split(" (UUID").next().unwrap_or(g).trim())
        .collect();
    if !gpus.is_empty() {
        line.push_str(&format!("; {}", gpus.join(", ")));
    }
    line
}

fn node_name() -> String {
    std::env::var("SLURMD_NODENAME")
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| trtmc_core::machine::machine().hostname)
}

/// Where route `route`'s result lives.
pub fn result_path(dir: &Path, route: &str) -> PathBuf {
    let digest = trtmc_core::hash::sha256_hex(route.as_bytes());
    dir.join("routes")
        .join(format!("route-{}.json", &digest[..16]))
}

/// Route `route`'s result, when one was written for it.
pub fn read_result(dir: &Path, route: &str) -> Option<RouteResult> {
    let text = std::fs::read_to_string(result_path(dir, route)).ok()?;
    serde_json::from_str::<RouteResult>(&text)
        .ok()
        .filter(|r| r.route == route)
}

/// The refusal of a result built on other hardware than the timing node's, unless the environment
/// declares the nodes identical.
pub fn hardware_mismatch(
    result: &RouteResult,
    timing_node: &str,
    identical_nodes: bool,
) -> Option<String> {
    if identical_nodes || result.hardware.is_empty() || result.hardware == timing_node {
        return None;
    }
    Some(format!(
        "route {} was built on node {} ({}) but is timed on this node ({timing_node}): a bundle is built for \
         the hardware it was built on, so the two are not compared; run the tune on a node like the build \
         nodes, restrict the array to such nodes with slurm.sbatch_args (--constraint, --nodelist), or \
         declare `slurm.identical_nodes: true` when they are the same hardware",
        result.route, result.node, result.hardware
    ))
}

/// The error a failed result becomes.
pub fn result_error(result: &RouteResult) -> Option<RouteError> {
    let message = || {
        let text = result.error.clone().unwrap_or_else(|| "no message".into());
        if result.node.is_empty() {
            text
        } else {
            format!(
                "{text} (Slurm task {} on {})",
                result.slurm_task, result.node
            )
        }
    };
    match result.status {
        BuildStatus::Built => None,
        BuildStatus::Failed => Some(RouteError::failed(message())),
        BuildStatus::Crashed => Some(RouteError::crash(message())),
        BuildStatus::TimedOut => Some(RouteError::timeout(message())),
    }
}

/// The result the coordinator records for a task that ended in `state` without writing one.
pub fn missing_result(
    route: &str,
    job: &str,
    task: usize,
    state: &str,
    reason: &str,
    log: &Path,
) -> RouteResult {
    let status = if slurm::was_stopped(state) {
        BuildStatus::TimedOut
    } else {
        BuildStatus::Crashed
    };
    RouteResult {
        schema: ROUTE_RESULT_SCHEMA.into(),
        route: route.to_string(),
        status,
        error: Some(format!(
            "Slurm task {job}_{task} ended {state}{} without a result (log: {})",
            slurm::reason_suffix(reason),
            log.display()
        )),
        build_seconds: None,
        cached: false,
        node: String::new(),
        hardware: String::new(),
        slurm_task: format!("{job}_{task}"),
        finished: jiff::Timestamp::now().to_string(),
    }
}

/// Where the Slurm executor works and how.
#[derive(Debug, Clone)]
pub struct SlurmOptions {
    /// The environment's Slurm settings (`sbatch` arguments, polling, shared paths, …).
    pub settings: SlurmSettings,
    /// The trtmc-bench the tasks run (on a shared path).
    pub exe: PathBuf,
    /// `OUTPUT/slurm`.
    pub dir: PathBuf,
}

/// The arrays this process submitted and follows, shared with the stop hook that cancels them.
#[derive(Debug, Default)]
struct LiveJobs {
    ids: Vec<String>,
    /// The process is stopping: nothing more is submitted.
    stopping: bool,
}

impl LiveJobs {
    /// Cancels every listed array (the stop hook); returns the line that says so.
    fn cancel_all(&mut self) -> Option<String> {
        self.stopping = true;
        if self.ids.is_empty() {
            return None;
        }
        let ids = std::mem::take(&mut self.ids);
        let cancelled = Process::new("scancel")
            .args(&ids)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        Some(if cancelled {
            format!(
                "cancelled the Slurm job array(s) this tune submitted: {} (scancel)",
                ids.join(", ")
            )
        } else {
            format!(
                "could not cancel the Slurm job array(s) {0}: cancel them with `scancel {0}`",
                ids.join(" ")
            )
        })
    }
}

/// The `RouteRunner` of `tune --executor slurm`: builds as job arrays, everything else local.
pub struct SlurmRunner<'p> {
    inner: ProcessRunner,
    options: SlurmOptions,
    /// This node's hardware: where the routes are timed.
    hardware: String,
    progress: &'p dyn Progress,
    live: Arc<Mutex<LiveJobs>>,
}

impl<'p> SlurmRunner<'p> {
    /// The runner; a graceful stop of this process (`trtmc_runner::interrupt::exit_on_signals`)
    /// cancels the arrays it submitted that are still followed.
    pub fn new(inner: ProcessRunner, options: SlurmOptions, progress: &'p dyn Progress) -> Self {
        let live = Arc::new(Mutex::new(LiveJobs::default()));
        let hook = Arc::clone(&live);
        trtmc_runner::interrupt::on_stop(Box::new(move || {
            hook.lock().unwrap_or_else(|e| e.into_inner()).cancel_all()
        }));
        Self {
            inner,
            options,
            hardware: hardware(),
            progress,
            live,
        }
    }

    fn live(&self) -> std::sync::MutexGuard<'_, LiveJobs> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn jobs_file(&self) -> PathBuf {
        self.options.dir.join("jobs.json")
    }

    fn read_jobs(&self) -> Vec<SubmittedJob> {
        std::fs::read_to_string(self.jobs_file())
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    /// Waits until every task of the earlier arrays that are still listed has ended (a coordinator
    /// killed while they ran), so their routes are not built twice.
    fn wait_for_earlier_jobs(&self, routes: &[&str]) -> Result<(), ExecutorError> {
        for job in self.read_jobs() {
            if !job.routes.iter().any(|r| routes.contains(&r.as_str())) {
                continue;
            }
            let states = slurm::task_states(&job.job).unwrap_or_default();
            if states.values().any(|(s, _)| slurm::is_active(s)) {
                self.progress.report(Event::Message(&format!(
                    "waiting for job array {} of an earlier session",
                    job.job
                )));
                self.follow(&job.job, &job.routes)?;
            }
        }
        Ok(())
    }

    /// Follows array `job` until none of its tasks is pending or running (or the environment's
    /// timeout passes: then it is cancelled); returns each task's last state and reason.
    fn follow(
        &self,
        job: &str,
        routes: &[String],
    ) -> Result<BTreeMap<usize, (String, String)>, ExecutorError> {
        let settings = &self.options.settings;
        let deadline = Instant::now() + Duration::from_secs_f64(settings.timeout_s.max(1.0));
        let step = Duration::from_secs_f64(settings.poll_s.clamp(0.1, 60.0));
        let mut reported = 0;
        loop {
            let states = slurm::task_states(job).map_err(|source| ExecutorError::Follow {
                job: job.to_string(),
                source,
            })?;
            let done = routes
                .iter()
                .filter(|r| read_result(&self.options.dir, r).is_some())
                .count();
            if done > reported {
                reported = done;
                self.progress.report(Event::Message(&format!(
                    "{done}/{} route(s) of job {job} built",
                    routes.len()
                )));
            }
            let active = states.values().any(|(s, _)| slurm::is_active(s));
            // A pending array may be listed as one record (`123_[0-3]`): every task must be known.
            let all_known = (0..routes.len()).all(|t| states.contains_key(&t));
            if !active && (all_known || done == routes.len()) {
                return Ok(states);
            }
            if !slurm::sleep_until(deadline, step) {
                let _ = Process::new("scancel").arg(job).status();
                let mut states = states;
                for t in 0..routes.len() {
                    let entry = states
                        .entry(t)
                        .or_insert_with(|| ("PENDING".into(), String::new()));
                    if slurm::is_active(&entry.0) {
                        *entry = (
                            "CANCELLED".into(),
                            format!(
                                "cancelled after slurm.timeout_s = {} s of waiting",
                                settings.timeout_s
                            ),
                        );
                    }
                }
                return Ok(states);
            }
        }
    }

    /// Submits `routes` as one array, follows it, and gives every task that ended without a result
    /// one naming its Slurm state.
    fn submit(&mut self, routes: &[Route], timeout: Option<Duration>) -> Result<(), ExecutorError> {
        let dir = self.options.dir.clone();
        let mut specs = Vec::new();
        for route in routes {
            let key = route.to_string();
            if specs.iter().any(|s: &TaskSpec| s.route == key) {
                continue;
            }
            // A route that does not resolve fails in the local build, with the local message.
            let Ok(info) = self.inner.resolve(route) else {
                continue;
            };
            specs.push(TaskSpec {
                result: result_path(&dir, &key),
                request: self.inner.request(ChildMode::Build, &info),
                route: key,
                timeout_s: timeout.map(|t| t.as_secs_f64()),
            });
        }
        if specs.is_empty() {
            return Ok(());
        }
        let routes_dir = dir.join("routes");
        std::fs::create_dir_all(&routes_dir).map_err(file_error("create", &routes_dir))?;
        let mut jobs = self.read_jobs();
        let n = jobs.len() + 1;
        let tasks_file = dir.join(format!("submit-{n}-tasks.json"));
        let list = TaskList {
            schema: TASKS_SCHEMA.into(),
            exe: self.options.exe.clone(),
            tasks: specs.clone(),
        };
        write_json_atomic(&tasks_file, &list).map_err(file_error("write", &tasks_file))?;
        let task = [
            self.options.exe.to_string_lossy().into_owned(),
            "tune-task".into(),
            tasks_file.to_string_lossy().into_owned(),
        ];
        // The array index is expanded by the task's shell, so it stays outside the quoted words.
        let command = format!(
            "exec {} --task \"$SLURM_ARRAY_TASK_ID\"",
            trtmc_core::text::shell_line(&task)
        );
        let log_pattern = dir.join(format!("submit-{n}-task-%a.log"));
        let array = slurm::ArrayJob {
            name: "trtmc-tune",
            tasks: specs.len(),
            log_pattern: &log_pattern,
            chdir: &dir,
            task_command: &command,
        };
        let job = {
            // Held across the submission, so a stop either comes first (nothing is submitted) or
            // finds the new array listed and cancels it.
            let mut live = self.live();
            if live.stopping {
                return Err(ExecutorError::Stopping);
            }
            let job = slurm::submit_array(&array, &self.options.settings)
                .map_err(|source| ExecutorError::Submit { source })?;
            live.ids.push(job.clone());
            job
        };
        let route_names: Vec<String> = specs.iter().map(|s| s.route.clone()).collect();
        jobs.push(SubmittedJob {
            job: job.clone(),
            tasks_file: tasks_file.clone(),
            routes: route_names.clone(),
            submitted: jiff::Timestamp::now().to_string(),
        });
        write_json_atomic(&self.jobs_file(), &jobs)
            .map_err(file_error("write", &self.jobs_file()))?;
        self.progress.report(Event::Message(&format!(
            "submitted job array {job}: {} route build(s), one per task",
            specs.len()
        )));
        let states = self.follow(&job, &route_names);
        // Over (or given up on): nothing of it is left for a stop to cancel.
        self.live().ids.retain(|id| *id != job);
        let states = states?;
        for (t, spec) in specs.iter().enumerate() {
            if read_result(&dir, &spec.route).is_some() {
                continue;
            }
            let (state, reason) = states
                .get(&t)
                .cloned()
                .unwrap_or_else(|| ("UNKNOWN".into(), String::new()));
            let log = dir.join(format!("submit-{n}-task-{t}.log"));
            let result = missing_result(&spec.route, &job, t, &state, &reason, &log);
            write_json_atomic(&spec.result, &result).map_err(file_error("write", &spec.result))?;
        }
        Ok(())
    }
}

/// An exchange file's I/O error as an [`ExecutorError`].
fn file_error(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ExecutorError {
    move |source| ExecutorError::File {
        action,
        path: path.to_path_buf(),
        source,
    }
}

impl RouteRunner for SlurmRunner<'_> {
    type Built = Built;

    fn build_ahead(
        &mut self,
        routes: &[Route],
        timeout: Option<Duration>,
    ) -> Result<(), ExecutorError> {
        let names: Vec<String> = routes.iter().map(Route::to_string).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        self.wait_for_earlier_jobs(&names)?;
        let missing: Vec<Route> = routes
            .iter()
            .filter(|r| read_result(&self.options.dir, &r.to_string()).is_none())
            .cloned()
            .collect();
        let kept = routes.len() - missing.len();
        if kept > 0 {
            self.progress.report(Event::Message(&format!(
                "{kept} route(s) of this round already have a build result; {} to submit",
                missing.len()
            )));
        }
        self.submit(&missing, timeout)
    }

    fn build(&mut self, route: &Route, timeout: Option<Duration>) -> Result<Built, RouteError> {
        let key = route.to_string();
        if read_result(&self.options.dir, &key).is_none() {
            self.submit(std::slice::from_ref(route), timeout)
                .map_err(|e| RouteError::failed(e.to_string()))?;
        }
        if let Some(result) = read_result(&self.options.dir, &key) {
            if let Some(e) = result_error(&result) {
                return Err(e);
            }
            if let Some(refusal) = hardware_mismatch(
                &result,
                &self.hardware,
                self.options.settings.identical_nodes,
            ) {
                return Err(RouteError::failed(refusal));
            }
        }
        // The bundle is in the shared cache: the local build child finds it and only loads its key.
        self.inner.build(route, timeout)
    }

    fn outputs(
        &mut self,
        built: &mut Built,
        inputs: &[Tensor],
        timeout: Option<Duration>,
    ) -> Result<Vec<Tensor>, RouteError> {
        self.inner.outputs(built, inputs, timeout)
    }

    fn measure(&mut self, built: &mut Built, plan: &MeasurePlan) -> Result<Timing, RouteError> {
        self.inner.measure(built, plan)
    }
}

impl BuiltRoutes for SlurmRunner<'_> {
    fn route_bundle(&self, route: &str) -> Option<RouteBundle> {
        self.inner.route_bundle(route)
    }
}

/// Entry point of `trtmc-bench tune-task TASKS --task I` (run by a Slurm array task): builds route `I`
/// of the task list and writes its result file. Returns the exit code (0 when a result was written,
/// whatever the build did).
pub fn task_main(tasks_file: &Path, task: usize) -> i32 {
    let list: TaskList = match std::fs::read_to_string(tasks_file)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
    {
        Ok(l) => l,
        Err(e) => {
            eprintln!("tune-task: cannot read {}: {e}", tasks_file.display());
            return 3;
        }
    };
    if list.schema != TASKS_SCHEMA {
        eprintln!(
            "tune-task: {} has schema `{}`, expected `{TASKS_SCHEMA}` (the coordinator and the task come from \
             different builds)",
            tasks_file.display(),
            list.schema
        );
        return 3;
    }
    let Some(spec) = list.tasks.get(task) else {
        eprintln!(
            "tune-task: {} has {} task(s), no task {task}",
            tasks_file.display(),
            list.tasks.len()
        );
        return 3;
    };
    let node = node_name();
    eprintln!("tune-task {task}: route {} on {node}", spec.route);
    let abort_route = &trtmc_core::test_hooks::TestHooks::current().tune_abort_route;
    if abort_route.as_deref() == Some(spec.route.as_str()) {
        eprintln!("tune-task: {ABORT_ROUTE_ENV} names this route: aborting without a result");
        std::process::abort();
    }
    let started = Instant::now();
    let (status, error, response) = match build_in_child(&list.exe, &spec.request, spec.timeout_s) {
        Ok(r) => (BuildStatus::Built, None, Some(r)),
        Err((status, message)) => (status, Some(message), None),
    };
    let slurm_task = format!(
        "{}_{}",
        std::env::var("SLURM_ARRAY_JOB_ID").unwrap_or_default(),
        std::env::var("SLURM_ARRAY_TASK_ID").unwrap_or_else(|_| task.to_string())
    );
    let result = RouteResult {
        schema: ROUTE_RESULT_SCHEMA.into(),
        route: spec.route.clone(),
        status,
        error,
        build_seconds: response
            .as_ref()
            .and_then(|r| r.build_seconds)
            .or(Some(started.elapsed().as_secs_f64())),
        cached: response.as_ref().and_then(|r| r.cached).unwrap_or(false),
        node,
        hardware: hardware(),
        slurm_task,
        finished: jiff::Timestamp::now().to_string(),
    };
    if let Some(parent) = spec.result.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    match write_json_atomic(&spec.result, &result) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("tune-task: cannot write {}: {e}", spec.result.display());
            1
        }
    }
}

/// Runs `exe tune-worker` on the build request; its log goes to the task's log. Killed (with what it
/// started) past `timeout_s`.
fn build_in_child(
    exe: &Path,
    request: &ChildRequest,
    timeout_s: Option<f64>,
) -> Result<Response, (BuildStatus, String)> {
    let failed = |m: String| (BuildStatus::Failed, m);
    let line = serde_json::to_string(request)
        .map_err(|e| failed(format!("cannot encode the build request: {e}")))?;
    let mut child = crate::process::tune_worker_command(exe)
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| failed(format!("cannot start {} tune-worker: {e}", exe.display())))?;
    // Held open until the build answers: the child's liveness pipe (it stops when this closes).
    let mut pipe = child.stdin.take();
    if let Some(stdin) = pipe.as_mut() {
        // A child that died at once shows below as a closed pipe.
        let _ = writeln!(stdin, "{line}").and_then(|()| stdin.flush());
    }
    let (tx, rx) = mpsc::channel();
    if let Some(stdout) = child.stdout.take() {
        std::thread::spawn(move || {
            let mut first = String::new();
            let _ = BufReader::new(stdout).read_line(&mut first);
            let _ = tx.send(first);
        });
    }
    let limit = timeout_s
        .filter(|t| t.is_finite() && *t > 0.0)
        .map(Duration::from_secs_f64)
        .unwrap_or(Duration::from_secs(24 * 3600));
    let kill = |child: &mut std::process::Child| {
        #[cfg(unix)]
        {
            let group = rustix::process::Pid::from_child(child);
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
        let _ = child.kill();
        let _ = child.wait();
    };
    let answer = match rx.recv_timeout(limit) {
        Ok(line) => line,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            kill(&mut child);
            return Err((
                BuildStatus::TimedOut,
                format!(
                    "the build of route {} took longer than the route timeout of {:.1} s and was killed (raise \
                     --route-timeout)",
                    request.route,
                    limit.as_secs_f64()
                ),
            ));
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => String::new(),
    };
    let status = child.wait();
    if answer.trim().is_empty() {
        let how = status
            .as_ref()
            .map(describe_exit)
            .unwrap_or_else(|_| "the build child ended".into());
        return Err((
            BuildStatus::Crashed,
            format!(
                "{how} during the build of route {} without answering",
                request.route
            ),
        ));
    }
    match serde_json::from_str::<Response>(answer.trim()) {
        Ok(r) if r.ok => Ok(r),
        Ok(r) => Err((
            if r.crashed {
                BuildStatus::Crashed
            } else {
                BuildStatus::Failed
            },
            r.error.unwrap_or_else(|| "no message".into()),
        )),
        Err(e) => Err((
            BuildStatus::Crashed,
            format!("the build child answered something unreadable: {e}"),
        )),
    }
}

/// Folders that are local to each node on every cluster.
const NODE_LOCAL: &[&str] = &["/tmp", "/var/tmp", "/dev/shm", "/run"];

/// Refuses a file or folder the array tasks cannot see: outside every `shared_paths` entry when the
/// environment lists some, else inside a node-local folder. `what` names it for the message.
pub fn check_shared_path(
    what: &str,
    path: &Path,
    settings: &SlurmSettings,
) -> Result<(), SharedPathError> {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    if !settings.shared_paths.is_empty() {
        if settings.shared_paths.iter().any(|s| path.starts_with(s)) {
            return Ok(());
        }
        return Err(SharedPathError::OutsideShared {
            what: what.to_string(),
            path,
            shared: settings.shared_paths.clone(),
        });
    }
    if let Some(local) = NODE_LOCAL.iter().find(|l| path.starts_with(l)) {
        return Err(SharedPathError::NodeLocal {
            what: what.to_string(),
            path,
            local,
        });
    }
    Ok(())
}

/// A file or folder the Slurm array tasks may not see.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SharedPathError {
    /// The path is below none of the environment's shared paths.
    #[error(
        "{what} {} is not below any of the environment's slurm.shared_paths ({}), so the Slurm tasks may not see it: move it below one of them or add its shared folder to shared_paths",
        path.display(),
        shared.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    OutsideShared {
        /// What the path is, in words.
        what: String,
        /// The path concerned.
        path: PathBuf,
        /// The environment's `slurm.shared_paths`.
        shared: Vec<PathBuf>,
    },
    /// The path is in a folder that is local to each node.
    #[error(
        "{what} {} is in {local}, which is local to each node, so the Slurm tasks would not see it: put it on a shared filesystem, or list the folder in the environment's slurm.shared_paths when every node sees it (a single-node cluster)",
        path.display()
    )]
    NodeLocal {
        /// What the path is, in words.
        what: String,
        /// The path concerned.
        path: PathBuf,
        /// The node-local folder it is in (e.g. `/tmp`).
        local: &'static str,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(route: &str, status: BuildStatus, hardware: &str) -> RouteResult {
        RouteResult {
            schema: ROUTE_RESULT_SCHEMA.into(),
            route: route.into(),
            status,
            error: (status != BuildStatus::Built).then(|| "it broke".into()),
            build_seconds: Some(1.0),
            cached: false,
            node: "n1".into(),
            hardware: hardware.into(),
            slurm_task: "7_0".into(),
            finished: "2026-12-02T00:00:00Z".into(),
        }
    }

    #[test]
    fn a_task_without_a_result_becomes_its_routes_crash_or_timeout() {
        let log = Path::new("/shared/out/slurm/submit-1-task-2.log");
        let failed = missing_result("-threads=2", "42", 2, "FAILED", "exit 0:6", log);
        let e = result_error(&failed).expect("an error");
        assert_eq!(e.kind, crate::RouteErrorKind::Crash);
        assert!(
            e.message
                .contains("Slurm task 42_2 ended FAILED (exit 0:6)")
                && e.message.contains("submit-1-task-2.log"),
            "{}",
            e.message
        );
        for stopped in ["CANCELLED", "TIMEOUT", "PREEMPTED"] {
            let r = missing_result("-threads=2", "42", 2, stopped, "None", log);
            assert_eq!(r.status, BuildStatus::TimedOut);
            assert!(!r.error.as_deref().unwrap_or("").contains("None"));
        }
        assert!(result_error(&result("r", BuildStatus::Built, "hw")).is_none());
        let e = result_error(&result("r", BuildStatus::Failed, "hw")).expect("failed");
        assert_eq!(e.kind, crate::RouteErrorKind::Failed);
        assert!(e.message.contains("Slurm task 7_0 on n1"), "{}", e.message);
    }

    #[test]
    fn results_from_other_hardware_are_refused_unless_nodes_are_identical() {
        let here = "Xeon; 8 logical cores; linux x86_64";
        let same = result("-threads=1", BuildStatus::Built, here);
        assert_eq!(hardware_mismatch(&same, here, false), None);
        let other = result(
            "-threads=1",
            BuildStatus::Built,
            "EPYC; 64 logical cores; linux x86_64",
        );
        let refusal = hardware_mismatch(&other, here, false).expect("refused");
        assert!(
            refusal.contains("built on node n1 (EPYC") && refusal.contains("identical_nodes: true"),
            "{refusal}"
        );
        assert_eq!(hardware_mismatch(&other, here, true), None);
    }

    #[test]
    fn results_are_read_back_only_for_their_own_route_and_written_atomically() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path();
        assert!(read_result(dir, "-threads=1").is_none());
        let r = result("-threads=1", BuildStatus::Built, "hw");
        let path = result_path(dir, "-threads=1");
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        write_json_atomic(&path, &r).expect("write");
        assert_eq!(read_result(dir, "-threads=1"), Some(r.clone()));
        // A file that names another route (a hash collision, a hand edit) is no result for this one.
        let other = result_path(dir, "-threads=2");
        std::fs::copy(&path, &other).expect("copy");
        assert!(read_result(dir, "-threads=2").is_none());
        // A torn file is no result: the route is submitted again.
        std::fs::write(&path, b"{\"schema\": \"trtmc.tune-rou").expect("tear");
        assert!(read_result(dir, "-threads=1").is_none());
    }

    #[test]
    fn paths_the_tasks_cannot_see_are_refused_with_the_fix() {
        let mut settings = SlurmSettings::default();
        let e = check_shared_path("the output directory", Path::new("/tmp/tune"), &settings)
            .expect_err("node-local")
            .to_string();
        assert!(e.contains("/tmp") && e.contains("shared_paths"), "{e}");
        assert!(check_shared_path("the cache", Path::new("/shared/c.jsonl"), &settings).is_ok());
        settings.shared_paths = vec![PathBuf::from("/tmp/cluster")];
        assert!(check_shared_path("x", Path::new("/tmp/cluster/out"), &settings).is_ok());
        let e = check_shared_path("the bundle cache", Path::new("/home/u/b"), &settings)
            .expect_err("outside")
            .to_string();
        assert!(e.contains("/tmp/cluster"), "{e}");
    }
}
