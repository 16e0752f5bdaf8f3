//! [`ProcessRunner`]: the real `RouteRunner` of the session runtimes (tract, onnxruntime).
//!
//! Every route is resolved like a `run` case whose sweep point is the route (`build.*` and `runtime.*`
//! overrides), built into the bundle cache by its own child process (`tune-worker`, mode build), and
//! served by another child (mode serve) that keeps the bundle loaded: one forward pass for the accuracy
//! gate, then measurements on request. The driver interleaves racing rounds and head-to-head passes, so
//! measurements alternate between the live workers of the routes, one command at a time: two
//! measurements never run at once. At most `max_live_workers` stay loaded; the least recently used is
//! stopped (and started again when its route is measured again).
//!
//! A child that dies (signal, abort, panic) is a crash, one that passes the route timeout is killed and
//! the route timed out; either way the route is excluded and the message names the route's log.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command as Process, Stdio};
use std::rc::{Rc, Weak};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::expr::Route;
use crate::{MeasurePlan, RouteError, RouteRunner, Timing};
use serde_json::{Value, json};
use trtmc_core::accuracy::Tensor;
use trtmc_core::case::{self, Override, ResolveInput, ResolvedCase};
use trtmc_core::catalog::Profile;
use trtmc_core::fsutil::{write_atomic, write_json_atomic};
use trtmc_runtime::registry;
use trtmc_runtime::runtime::{self, Runtime, RuntimeOptions};

use crate::protocol::{CHILD_REQUEST_SCHEMA, ChildMode, ChildRequest, Command, Response};
use crate::runtime_knobs::{self, RouteSettings};
use trtmc_runner::bundles::{self, BundleOptions};
use trtmc_runner::launch::describe_exit;

/// Longest wait for anything when the tune has no route timeout (a day: effectively none).
const NO_TIMEOUT: Duration = Duration::from_secs(24 * 3600);
/// How long a worker asked to quit may take before it is killed.
const QUIT_GRACE: Duration = Duration::from_secs(2);

/// What is tuned: a catalog profile (or a one-profile catalog for `--onnx`), its case, the user's
/// `--set` overrides, and the runtime.
#[derive(Debug, Clone)]
pub struct Target {
    /// The model's profile.
    pub profile: Profile,
    /// `--case`: the case every route starts from; `None`: the profile's default.
    pub case: Option<String>,
    /// The fixed overrides every route starts from (`--set`, `--shape`, `--dim`).
    pub sets: Vec<Override>,
    /// Name of the runtime whose routes are built and timed.
    pub runtime: String,
    /// The ONNX file routes are built from (already materialized: generated, reweighted, downloaded).
    pub onnx: PathBuf,
    /// The trtexec the tensorrt runtime drives (`--trtexec`); `None`: found on `PATH`.
    pub trtexec: Option<PathBuf>,
}

/// Where the runner works.
#[derive(Debug, Clone)]
pub struct Options {
    /// The `trtmc-bench` executable whose `tune-worker` subcommand runs the children.
    pub exe: PathBuf,
    /// The managed bundle cache the routes' bundles are built into (shared with `run`).
    pub cache_root: PathBuf,
    /// Scratch space for tensors exchanged with the children (emptied by the caller).
    pub work_dir: PathBuf,
    /// One build log and one serve log per route.
    pub log_dir: PathBuf,
    /// Most serving workers kept loaded at once; the least recently used is stopped (at least 1).
    pub max_live_workers: usize,
    /// The tune's command line, recorded in the bundles it builds.
    pub command_line: Vec<String>,
}

/// A route resolved to its case, bundle and settings.
#[derive(Debug, Clone)]
pub struct RouteBundle {
    /// The route's text (`-k=v -k2=v2`), the key of [`ProcessRunner::built`].
    pub route: String,
    /// The case the route resolves to: the target's case with the route's knobs as its sweep point.
    pub resolved: ResolvedCase,
    /// What the route's knobs set.
    pub settings: RouteSettings,
    /// The route's bundle directory in the managed bundle cache.
    pub bundle: PathBuf,
    /// The bundle's full cache key.
    pub key: String,
}

/// A built route: its bundle and, while it is loaded, its serving worker.
pub struct Built {
    /// The route's resolved case and bundle.
    pub info: RouteBundle,
    slot: Rc<RefCell<Slot>>,
}

struct Slot {
    worker: Option<LiveWorker>,
    last_used: u64,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(w) = self.worker.take() {
            w.stop();
        }
    }
}

/// A running child with its stdout read line by line on a thread.
struct LiveWorker {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    log: PathBuf,
}

impl LiveWorker {
    fn send(&mut self, line: &str) -> std::io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdin closed"))?;
        writeln!(stdin, "{line}")?;
        stdin.flush()
    }

    /// Asks the worker to quit, then kills it if it does not.
    fn stop(mut self) {
        let _ = self.send(r#"{"cmd":"quit"}"#);
        self.stdin = None;
        let deadline = Instant::now() + QUIT_GRACE;
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        kill_group(&mut self.child);
    }

    fn kill(mut self) {
        kill_group(&mut self.child);
    }

    /// The worker's exit, after its stdout closed: how it ended and the end of its log.
    fn ended(mut self, during: &str, route: &str) -> RouteError {
        self.stdin = None;
        let deadline = Instant::now() + QUIT_GRACE;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                _ => {
                    kill_group(&mut self.child);
                    break self.child.wait().ok();
                }
            }
        };
        let how = status
            .as_ref()
            .map(describe_exit)
            .unwrap_or_else(|| "the worker ended".into());
        RouteError::crash(format!(
            "{how} during {during} of route {route} without answering{}",
            log_tail(&self.log)
        ))
    }
}

/// Kills a worker and whatever it started (trtexec runs as its grandchild): each worker leads its own
/// process group, so a timed-out build leaves no trtexec behind.
fn kill_group(child: &mut Child) {
    #[cfg(unix)]
    {
        let group = rustix::process::Pid::from_child(child);
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// ` (log …: last lines)` of a child's log, for error messages.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("tune-worker "))
        .collect();
    let tail = &lines[lines.len().saturating_sub(3)..];
    if tail.is_empty() {
        format!(" (log: {})", log.display())
    } else {
        format!("; log {}: {}", log.display(), tail.join(" | "))
    }
}

/// The `RouteRunner` of tract and onnxruntime: one build process and one serving worker per route.
pub struct ProcessRunner {
    target: Target,
    options: Options,
    rt: Box<dyn Runtime>,
    registry: Vec<Weak<RefCell<Slot>>>,
    tick: u64,
    inputs_file: Option<PathBuf>,
    exchanges: u64,
    /// Every route built so far, by route text (for `--save-bundle` / `--save-all`).
    pub built: BTreeMap<String, RouteBundle>,
}

/// Why the route processes cannot be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// No runtime of that name; the text lists the known ones.
    #[error("{0}")]
    UnknownRuntime(String),
    /// The runtime's library or tool is missing on this machine.
    #[error(transparent)]
    Unavailable(#[from] trtmc_runtime::error::Unavailable),
    /// The work or log directory cannot be created.
    #[error("cannot create {}: {source}", dir.display())]
    CreateDir {
        /// The directory.
        dir: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Why a route does not resolve to a case and a bundle.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// A knob of the route does not translate into settings.
    #[error(transparent)]
    Knobs(#[from] runtime_knobs::RouteSettingError),
    /// The case with the route's settings does not resolve.
    #[error(transparent)]
    Case(#[from] trtmc_core::case::CaseError),
    /// A chat case's prompt cannot be rendered.
    #[error(transparent)]
    Prompt(#[from] trtmc_runner::chat::PromptError),
    /// The runtime refuses one of the route's runtime settings.
    #[error(transparent)]
    Setting(#[from] trtmc_runtime::error::SettingError),
    /// The bundle cannot be planned; `reason` is the runner's message with its causes.
    #[error("{reason}")]
    Bundle {
        /// The runner's message with its causes.
        reason: String,
    },
    /// The bundle plan came back without a cache key (a bug).
    #[error("the bundle plan has no cache key")]
    NoKey,
}

impl ProcessRunner {
    /// A runner for `target`: finds the runtime, checks that it is available and creates the work and
    /// log directories; nothing is built yet.
    pub fn new(target: Target, options: Options) -> Result<Self, StartError> {
        let runtime_options = RuntimeOptions {
            trtexec: target.trtexec.clone(),
            probe_cache: Some(options.cache_root.clone()),
        };
        let rt = registry::runtime_with(&target.runtime, &runtime_options)
            .map_err(StartError::UnknownRuntime)?;
        rt.availability()?;
        for dir in [&options.work_dir, &options.log_dir] {
            std::fs::create_dir_all(dir).map_err(|source| StartError::CreateDir {
                dir: dir.clone(),
                source,
            })?;
        }
        Ok(Self {
            target,
            options: Options {
                max_live_workers: options.max_live_workers.max(1),
                ..options
            },
            rt,
            registry: Vec::new(),
            tick: 0,
            inputs_file: None,
            exchanges: 0,
            built: BTreeMap::new(),
        })
    }

    /// The case a route resolves to (the route's knobs as the sweep point), without building anything.
    pub fn resolve(&self, route: &Route) -> Result<RouteBundle, ResolveError> {
        let settings = runtime_knobs::route_settings(self.rt.as_ref(), route)?;
        let input = ResolveInput {
            case: self.target.case.as_deref(),
            sets: self.target.sets.clone(),
            sweep_point: settings.overrides.clone(),
            runtime: Some(self.target.runtime.clone()),
            ..ResolveInput::default()
        };
        let mut resolved = case::resolve(
            &self.target.profile,
            &input,
            trtmc_runtime::registry::declared_settings(),
        )?;
        // A chat case's prompt is its rendered template (the target's tokenizer is already on disk).
        trtmc_runner::chat::render_case(
            &self.target.profile,
            self.target.profile.tokenizer.as_deref(),
            trtmc_runner::sources::Fetch::CacheOnly,
            &mut resolved,
        )?;
        runtime::check_settings(self.rt.as_ref(), &resolved.runtime_values())?;
        let options = BundleOptions {
            cache_root: self.options.cache_root.clone(),
            ..BundleOptions::default()
        };
        let plan = bundles::plan(
            &self.target.profile,
            &resolved.build_values(),
            self.rt.as_ref(),
            &options,
        )
        .map_err(|e| ResolveError::Bundle {
            reason: e.message().to_string(),
        })?;
        let key = plan.key.ok_or(ResolveError::NoKey)?;
        Ok(RouteBundle {
            route: route.to_string(),
            resolved,
            settings,
            bundle: plan.path,
            key,
        })
    }

    pub(crate) fn request(&self, mode: ChildMode, info: &RouteBundle) -> ChildRequest {
        let r = &info.resolved;
        ChildRequest {
            schema: CHILD_REQUEST_SCHEMA.into(),
            mode,
            route: info.route.clone(),
            runtime: self.target.runtime.clone(),
            model: self.target.profile.name.clone(),
            onnx: self.target.onnx.clone(),
            bundle: info.bundle.clone(),
            key: info.key.clone(),
            build_settings: r.build_values(),
            runtime_settings: r.runtime_values(),
            operation: r.operation.clone(),
            request: r
                .request
                .iter()
                .map(|(k, v)| (k.clone(), v.value.clone()))
                .collect(),
            manifest_dir: Some(self.target.profile.dir().to_path_buf()),
            tokenizer: self.target.profile.tokenizer.clone(),
            input_seed: r.request_value("seed").and_then(Value::as_u64).unwrap_or(0),
            hooks: info.settings.hooks.clone(),
            command_line: self.options.command_line.clone(),
            trtexec: self.target.trtexec.clone(),
            tool_dir: Some(self.tool_dir(&info.route)),
            probe_cache: Some(self.options.cache_root.clone()),
        }
    }

    /// A killed build child leaves its half-built bundle folder with the tool's log: keep the logs in
    /// the route's tool folder, drop the rest.
    fn keep_killed_build_logs(&self, info: &RouteBundle, pid: u32) {
        if let Some(tmp) = crate::child::build_folder(&info.bundle, &info.key, pid) {
            crate::child::keep_logs(&tmp, &self.tool_dir(&info.route));
            let _ = std::fs::remove_dir_all(&tmp);
        }
    }

    /// The folder of a route's tool logs and exports (trtexec's build, timing and output logs).
    pub fn tool_dir(&self, route: &str) -> PathBuf {
        let digest = trtmc_core::hash::sha256_hex(route.as_bytes());
        self.options
            .log_dir
            .join(format!("route-{}.tool", &digest[..12]))
    }

    fn log_path(&self, route: &str, what: &str) -> PathBuf {
        let digest = trtmc_core::hash::sha256_hex(route.as_bytes());
        self.options
            .log_dir
            .join(format!("route-{}.{what}.log", &digest[..12]))
    }

    fn spawn(&self, request: &ChildRequest, log: &Path) -> Result<LiveWorker, RouteError> {
        let file = std::fs::File::create(log)
            .map_err(|e| RouteError::failed(format!("cannot create {}: {e}", log.display())))?;
        let mut child = tune_worker_command(&self.options.exe)
            .stderr(Stdio::from(file))
            .spawn()
            .map_err(|e| {
                RouteError::failed(format!(
                    "cannot start {} tune-worker: {e}",
                    self.options.exe.display()
                ))
            })?;
        let stdout = child.stdout.take();
        let (tx, rx) = mpsc::channel();
        if let Some(stdout) = stdout {
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let mut worker = LiveWorker {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            log: log.to_path_buf(),
        };
        let line = serde_json::to_string(request).map_err(|e| {
            RouteError::failed(format!("cannot encode the tune-worker request: {e}"))
        })?;
        if worker.send(&line).is_err() {
            return Err(worker.ended("start-up", &request.route));
        }
        Ok(worker)
    }

    /// Waits for one answer; a timeout kills the worker, a closed pipe reports how it ended.
    fn receive(
        worker: LiveWorker,
        timeout: Option<Duration>,
        during: &str,
        route: &str,
    ) -> Result<(LiveWorker, Response), RouteError> {
        let limit = timeout.unwrap_or(NO_TIMEOUT);
        match worker.lines.recv_timeout(limit) {
            Ok(line) => match serde_json::from_str::<Response>(&line) {
                Ok(r) if r.ok => Ok((worker, r)),
                Ok(r) => {
                    let message = r.error.unwrap_or_else(|| "no message".into());
                    let log = worker.log.clone();
                    worker.kill();
                    let message = format!("{message} (log: {})", log.display());
                    Err(if r.crashed {
                        RouteError::crash(message)
                    } else {
                        RouteError::failed(message)
                    })
                }
                Err(e) => {
                    let log = worker.log.clone();
                    worker.kill();
                    Err(RouteError::crash(format!(
                        "the worker answered something unreadable during {during}: {e} (log: {})",
                        log.display()
                    )))
                }
            },
            Err(RecvTimeoutError::Timeout) => {
                let log = worker.log.clone();
                worker.kill();
                Err(RouteError::timeout(format!(
                    "{during} of route {route} took longer than the route timeout of {:.1} s and was killed (raise \
                     --route-timeout; log: {})",
                    limit.as_secs_f64(),
                    log.display()
                )))
            }
            Err(RecvTimeoutError::Disconnected) => Err(worker.ended(during, route)),
        }
    }

    /// Stops least recently used workers until a new one fits.
    fn make_room(&mut self) {
        self.registry.retain(|w| w.strong_count() > 0);
        loop {
            let live: Vec<Rc<RefCell<Slot>>> = self
                .registry
                .iter()
                .filter_map(Weak::upgrade)
                .filter(|s| s.try_borrow().is_ok_and(|s| s.worker.is_some()))
                .collect();
            if live.len() < self.options.max_live_workers {
                return;
            }
            let Some(oldest) = live
                .iter()
                .min_by_key(|s| s.try_borrow().map(|s| s.last_used).unwrap_or(u64::MAX))
            else {
                return;
            };
            let worker = oldest
                .try_borrow_mut()
                .ok()
                .and_then(|mut s| s.worker.take());
            match worker {
                Some(w) => w.stop(),
                None => return,
            }
        }
    }

    /// Sends one command to the route's serving worker (started when needed) and waits for the answer.
    fn call(
        &mut self,
        built: &mut Built,
        command: &Command,
        timeout: Option<Duration>,
        during: &str,
    ) -> Result<Response, RouteError> {
        self.tick += 1;
        let running = built.slot.borrow().worker.is_some();
        if !running {
            self.make_room();
            let request = self.request(ChildMode::Serve, &built.info);
            let log = self.log_path(&built.info.route, "serve");
            let worker = self.spawn(&request, &log)?;
            built.slot.borrow_mut().worker = Some(worker);
        }
        let mut slot = built.slot.borrow_mut();
        slot.last_used = self.tick;
        let Some(mut worker) = slot.worker.take() else {
            return Err(RouteError::failed("the route's worker was lost"));
        };
        let line = serde_json::to_string(command)
            .map_err(|e| RouteError::failed(format!("cannot encode a tune-worker command: {e}")))?;
        if worker.send(&line).is_err() {
            return Err(worker.ended(during, &built.info.route));
        }
        let (worker, response) = Self::receive(worker, timeout, during, &built.info.route)?;
        slot.worker = Some(worker);
        Ok(response)
    }

    /// The given inputs as a raw tensor index (f64 values), written once per tune.
    fn inputs_file(&mut self, inputs: &[Tensor]) -> Result<PathBuf, RouteError> {
        if let Some(p) = &self.inputs_file {
            return Ok(p.clone());
        }
        let dir = self.options.work_dir.join("inputs");
        let io = |e: std::io::Error| {
            RouteError::failed(format!(
                "cannot write the inputs into {}: {e}",
                dir.display()
            ))
        };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let mut entries = Vec::with_capacity(inputs.len());
        for (i, t) in inputs.iter().enumerate() {
            let file = format!("input-{i}.bin");
            let bytes: Vec<u8> = t.values.iter().flat_map(|v| v.to_le_bytes()).collect();
            write_atomic(&dir.join(&file), &bytes).map_err(io)?;
            entries.push(json!({"name": t.name, "dtype": "f64", "shape": t.shape, "file": file}));
        }
        let index = dir.join("inputs.json");
        write_json_atomic(&index, &json!({ "inputs": entries })).map_err(io)?;
        self.inputs_file = Some(index.clone());
        Ok(index)
    }
}

impl Drop for ProcessRunner {
    fn drop(&mut self) {
        for slot in self.registry.iter().filter_map(Weak::upgrade) {
            if let Ok(mut s) = slot.try_borrow_mut()
                && let Some(w) = s.worker.take()
            {
                w.stop();
            }
        }
    }
}

impl RouteRunner for ProcessRunner {
    type Built = Built;

    fn build(&mut self, route: &Route, timeout: Option<Duration>) -> Result<Built, RouteError> {
        let info = self
            .resolve(route)
            .map_err(|e| RouteError::failed(e.to_string()))?;
        let request = self.request(ChildMode::Build, &info);
        let log = self.log_path(&info.route, "build");
        // Its standard input stays open until it answers: it is the build's liveness pipe.
        let worker = self.spawn(&request, &log)?;
        let pid = worker.child.id();
        let received = Self::receive(worker, timeout, "the build", &info.route);
        if received.is_err() {
            self.keep_killed_build_logs(&info, pid);
        }
        let (mut worker, _response) = received?;
        let _ = worker.child.wait();
        self.built.insert(info.route.clone(), info.clone());
        let slot = Rc::new(RefCell::new(Slot {
            worker: None,
            last_used: 0,
        }));
        self.registry.push(Rc::downgrade(&slot));
        Ok(Built { info, slot })
    }

    fn outputs(
        &mut self,
        built: &mut Built,
        inputs: &[Tensor],
        timeout: Option<Duration>,
    ) -> Result<Vec<Tensor>, RouteError> {
        let inputs = if inputs.is_empty() {
            None
        } else {
            Some(self.inputs_file(inputs)?)
        };
        self.exchanges += 1;
        let out_dir = self
            .options
            .work_dir
            .join(format!("outputs-{}", self.exchanges));
        let command = Command::Outputs {
            inputs,
            out_dir: out_dir.clone(),
        };
        let response = self.call(
            built,
            &command,
            timeout,
            "the inference for the accuracy check",
        )?;
        let index = response
            .index
            .ok_or_else(|| RouteError::failed("the worker wrote no outputs index"))?;
        let tensors = crate::golden::read_golden(&index)
            .map_err(|e| RouteError::failed(format!("cannot read the route's outputs: {e}")));
        let _ = std::fs::remove_dir_all(&out_dir);
        tensors
    }

    fn measure(&mut self, built: &mut Built, plan: &MeasurePlan) -> Result<Timing, RouteError> {
        if plan.fresh_process {
            // The next call starts a new worker: each head-to-head pass samples a fresh process.
            let live = built.slot.borrow_mut().worker.take();
            if let Some(worker) = live {
                worker.stop();
            }
        }
        let command = Command::Measure {
            warmup: plan.warmup_calls as u64,
            calls: plan.calls as u64,
        };
        let response = self.call(built, &command, plan.timeout, "the measurement")?;
        Ok(Timing {
            warmup_ms: response.warmup_ms,
            samples_ms: response.samples_ms,
            notes: response.notes,
        })
    }
}

/// `exe tune-worker` with piped stdin and stdout, in a process group of its own (so that a kill
/// reaches what it starts); the caller decides where stderr goes.
pub(crate) fn tune_worker_command(exe: &Path) -> Process {
    let mut command = Process::new(exe);
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    command
        .arg("tune-worker")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    command
}
