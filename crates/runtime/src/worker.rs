//! The worker: owns the timed loop. Loads the bundle, prepares the operation's runner, runs the warm-ups,
//! then times each public operation call with the monotonic clock and records it in a preallocated
//! buffer. Nothing else happens between the two clock reads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use trtmc_core::artifacts::{LoopStop, Observation, RuntimeInfo};

use crate::bundle::BundleManifest;
use crate::ops::{self, CallRecord, RunnerContext, TimedRunner};
use crate::protocol::{
    WORKER_RESULT_SCHEMA, WorkerProgress, WorkerRequest, WorkerResult, WorkerStatus,
};
use crate::registry;
use crate::runtime;

/// How often the worker rewrites its progress file (never inside a timed call).
const PROGRESS_EVERY: Duration = Duration::from_millis(500);
/// Calls the running p50 of the progress file is taken over.
const RECENT_CALLS: usize = 1000;
/// Preallocated observations at most; a longer loop grows its buffer between calls.
const PREALLOCATED_CALLS: u64 = 1 << 20;

/// Executes a worker request; failures become a `WorkerResult` with status `error`.
pub fn execute(request: &WorkerRequest) -> WorkerResult {
    execute_until(request, &AtomicBool::new(false))
}

/// [`execute`] that stops after the current call once `stop` is set (by SIGINT or SIGTERM in the
/// worker process), returning the calls timed so far with status `interrupted`.
pub fn execute_until(request: &WorkerRequest, stop: &AtomicBool) -> WorkerResult {
    let runtime_info = runtime_info(&request.runtime);
    let outcome = match &request.profile {
        Some(pass) => crate::profile::pass::execute(request, pass, runtime_info.clone()),
        None => execute_inner(request, runtime_info.clone(), stop),
    };
    match outcome {
        Ok(result) => result,
        Err(e) => WorkerResult::failed(runtime_info, format!("{e:#}")),
    }
}

/// The inputs of the request's calls as its runner prepares them (the bundle loaded, no call made), for
/// a reference runner that must repeat the same calls in another framework.
pub fn reference_inputs(request: &WorkerRequest) -> anyhow::Result<ops::ReferenceInputs> {
    let operation = ops::requested(&request.operation)?;
    let (session, manifest) = load_bundle(request)?;
    // The list of every call's inputs does not depend on where the rotation starts.
    let ctx = runner_context(request, session, manifest.as_ref(), 0);
    let mut runner = ops::prepare(operation, ctx)?;
    runner.prepare_all()?;
    Ok(runner.reference_inputs())
}

type LoadedBundle = (Option<Box<dyn runtime::Session>>, Option<BundleManifest>);

/// What the request's runner is prepared from, its rotation starting at call `first_call`.
fn runner_context<'a>(
    request: &'a WorkerRequest,
    session: Option<Box<dyn runtime::Session>>,
    bundle: Option<&'a BundleManifest>,
    first_call: u64,
) -> RunnerContext<'a> {
    RunnerContext {
        request: &request.request,
        session,
        bundle,
        manifest_dir: request.manifest_dir.as_deref(),
        tokenizer: request.tokenizer.as_deref(),
        first_call,
        data: request.data.as_ref(),
    }
}

/// The request's bundle loaded by its runtime, with its manifest; nothing for bundle-less operations.
fn load_bundle(request: &WorkerRequest) -> anyhow::Result<LoadedBundle> {
    let Some(dir) = &request.bundle else {
        return Ok((None, None));
    };
    let rt = registry::runtime(&request.runtime).map_err(anyhow::Error::msg)?;
    let manifest = BundleManifest::read(dir).map_err(anyhow::Error::msg)?;
    let session = rt
        .load(dir, &manifest, &request.runtime_settings)
        .with_context(|| format!("cannot load bundle {}", dir.display()))?;
    let session = crate::testing::with_hooks(session, request.hooks.as_ref());
    Ok((Some(session), Some(manifest)))
}

fn runtime_info(name: &str) -> RuntimeInfo {
    match registry::runtime(name) {
        Ok(rt) => RuntimeInfo {
            name: rt.name().into(),
            version: rt.version(),
        },
        Err(_) => RuntimeInfo {
            name: name.into(),
            version: "unknown".into(),
        },
    }
}

fn execute_inner(
    request: &WorkerRequest,
    runtime_info: RuntimeInfo,
    stop: &AtomicBool,
) -> anyhow::Result<WorkerResult> {
    let operation = ops::requested(&request.operation)?;
    let load_started = Instant::now();
    let (session, manifest) = load_bundle(request)?;
    let ctx = runner_context(request, session, manifest.as_ref(), request.first_call);
    let mut runner = ops::prepare(operation, ctx)?;
    let load_ms = load_started.elapsed().as_secs_f64() * 1e3;

    let mut progress = ProgressFile::new(request.progress_file.clone());
    let warmup_budget = request
        .warmup_budget_s
        .map(|s| Duration::from_secs_f64(s.max(0.0)));
    let mut warmup_ms = Vec::with_capacity(request.warmup.min(PREALLOCATED_CALLS) as usize);
    let warmup_started = Instant::now();
    for done in 1..=request.warmup {
        let mut record = CallRecord::default();
        runner
            .prepare_call()
            .context("preparing a warm-up call failed")?;
        let t0 = Instant::now();
        runner.call(&mut record).context("warm-up call failed")?;
        warmup_ms.push(t0.elapsed().as_secs_f64() * 1e3);
        runner.verify()?;
        let elapsed = warmup_started.elapsed();
        if stop.load(Ordering::Relaxed) {
            return Ok(interrupted_before_timing(runtime_info, load_ms, warmup_ms));
        }
        if warmup_budget.is_some_and(|b| elapsed >= b) {
            break;
        }
        let expected = match warmup_budget {
            Some(b) => request.warmup.min(estimate_calls(done, elapsed, b)),
            None => request.warmup,
        };
        progress.maybe_write("warmup", done, &warmup_ms, expected, elapsed);
    }

    let rule = LoopRule {
        min_calls: request.iterations,
        min_duration: Duration::from_secs_f64(request.min_duration_s.max(0.0)),
        max_duration: request
            .max_duration_s
            .map(|s| Duration::from_secs_f64(s.max(0.0))),
        p50_half_width: request.p50_half_width,
    };
    let mut report = |calls: &[TimedCall], elapsed: Duration| {
        if progress.due() {
            let done = calls.len() as u64;
            let recent: Vec<f64> = calls[calls.len().saturating_sub(RECENT_CALLS)..]
                .iter()
                .map(|c| c.wall.as_secs_f64() * 1e3)
                .collect();
            progress.maybe_write(
                "timed",
                done,
                &recent,
                rule.expected(done, elapsed),
                elapsed,
            );
        }
    };
    let hooks = request.hooks.clone().unwrap_or_default();
    let ended = match (hooks.call_delay_us, hooks.call_slowdown_ppm) {
        (None, None) => timed_loop_until(runner.as_mut(), &rule, stop, &mut report)?,
        // Test hooks (the matrix's injected slowdowns): the delay is part of each call.
        (delay_us, slowdown_ppm) => timed_loop_until(
            &mut ops::Delayed {
                inner: runner.as_mut(),
                delay: Duration::from_micros(delay_us.unwrap_or(0)),
                slowdown: slowdown_ppm.unwrap_or(0) as f64 / 1e6,
            },
            &rule,
            stop,
            &mut report,
        )?,
    };
    let records = ended.calls;
    let op = operation.decl();
    let stage_names: Vec<&str> = op.stages.iter().map(|s| s.name).collect();
    let counter_names: Vec<&str> = op.counters.iter().map(|c| c.name).collect();
    let observations = records
        .iter()
        .enumerate()
        .map(|(i, r)| to_observation(i, r, &stage_names, &counter_names))
        .collect();
    Ok(WorkerResult {
        schema: WORKER_RESULT_SCHEMA.into(),
        status: if ended.stopped_by == LoopStop::Signal {
            WorkerStatus::Interrupted
        } else {
            WorkerStatus::Ok
        },
        error: None,
        runtime: runtime_info,
        load_ms: Some(load_ms),
        warmup_ms,
        observations,
        stopped_by: Some(ended.stopped_by),
        notes: runner.notes(),
    })
}

fn interrupted_before_timing(
    runtime: RuntimeInfo,
    load_ms: f64,
    warmup_ms: Vec<f64>,
) -> WorkerResult {
    WorkerResult {
        status: WorkerStatus::Interrupted,
        load_ms: Some(load_ms),
        warmup_ms,
        stopped_by: Some(LoopStop::Signal),
        ..WorkerResult::failed(runtime, String::new())
    }
    .without_error()
}

/// Calls that fit in `budget` at the pace of `done` calls in `elapsed` (at least `done`).
fn estimate_calls(done: u64, elapsed: Duration, budget: Duration) -> u64 {
    if done == 0 || elapsed.is_zero() {
        return done;
    }
    let per_call = elapsed.as_secs_f64() / done as f64;
    ((budget.as_secs_f64() / per_call).floor() as u64).max(done)
}

/// The stopping rule of the timed loop (docs/run.md): at least `min_calls` calls and `min_duration`,
/// never past `max_duration`; with `p50_half_width` and a `max_duration`, on past the minimums until
/// the p50 is pinned down.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoopRule {
    pub(crate) min_calls: u64,
    pub(crate) min_duration: Duration,
    pub(crate) max_duration: Option<Duration>,
    pub(crate) p50_half_width: Option<f64>,
}

/// Whether the p50 of `calls` is pinned down: its 95 % interval over blocks of calls
/// (`trtmc_core::intervals::run_p50`) lies within `half_width` of it on both sides.
fn p50_pinned(calls: &[TimedCall], half_width: f64) -> bool {
    let walls: Vec<f64> = calls.iter().map(|c| c.wall.as_secs_f64()).collect();
    trtmc_core::validity::p50_half_width(&walls).is_some_and(|h| h <= half_width)
}

impl LoopRule {
    /// Whether the loop ends after `calls` calls at `elapsed`, and why.
    fn end(&self, calls: u64, elapsed: Duration) -> Option<LoopStop> {
        if calls >= self.min_calls && elapsed >= self.min_duration {
            Some(LoopStop::Complete)
        } else if self.max_duration.is_some_and(|m| elapsed >= m) {
            Some(LoopStop::Budget)
        } else {
            None
        }
    }

    /// The calls the loop will make, estimated from the pace so far (for progress and ETA).
    pub(crate) fn expected(&self, done: u64, elapsed: Duration) -> u64 {
        let mut n = self
            .min_calls
            .max(estimate_calls(done, elapsed, self.min_duration));
        if let Some(max) = self.max_duration {
            n = n.min(estimate_calls(done, elapsed, max));
        }
        n.max(done)
    }
}

/// How a timed loop ended: its calls and why it stopped.
pub(crate) struct LoopEnd {
    pub(crate) calls: Vec<TimedCall>,
    pub(crate) stopped_by: LoopStop,
}

/// The progress file: rewritten atomically at most every [`PROGRESS_EVERY`], between calls.
struct ProgressFile {
    path: Option<PathBuf>,
    last: Instant,
}

impl ProgressFile {
    fn new(path: Option<PathBuf>) -> Self {
        ProgressFile {
            path,
            last: Instant::now(),
        }
    }

    fn due(&self) -> bool {
        self.path.is_some() && self.last.elapsed() >= PROGRESS_EVERY
    }

    /// `walls_ms`: the wall times of the calls so far, or at least of the last [`RECENT_CALLS`].
    fn maybe_write(
        &mut self,
        phase: &str,
        done: u64,
        walls_ms: &[f64],
        expected: u64,
        elapsed: Duration,
    ) {
        if !self.due() {
            return;
        }
        let Some(path) = &self.path else { return };
        let recent = &walls_ms[walls_ms.len().saturating_sub(RECENT_CALLS)..];
        let doc = WorkerProgress {
            phase: phase.into(),
            done,
            expected,
            elapsed_s: elapsed.as_secs_f64(),
            p50_ms: trtmc_core::stats::median(recent),
        };
        // Progress is a courtesy: a failed write never disturbs the measurement.
        let _ = trtmc_core::fsutil::write_json_atomic(path, &doc);
        self.last = Instant::now();
    }
}

/// A timed call: start offset from the first call, wall time, and what the runner reported.
#[derive(Debug, Clone, Copy)]
pub struct TimedCall {
    /// When the call started, from the first timed call's start.
    pub start: Duration,
    /// The call's wall time, between the two clock reads around it.
    pub wall: Duration,
    /// What the runner reported about the call (items, tokens, stages).
    pub record: CallRecord,
}

/// Runs until `iterations` calls are done and `min_duration` has passed (both minimums hold).
pub fn timed_loop(
    runner: &mut dyn TimedRunner,
    iterations: u64,
    min_duration: Duration,
) -> anyhow::Result<Vec<TimedCall>> {
    let rule = LoopRule {
        min_calls: iterations,
        min_duration,
        max_duration: None,
        p50_half_width: None,
    };
    Ok(timed_loop_until(runner, &rule, &AtomicBool::new(false), &mut |_, _| {})?.calls)
}

/// The timed loop under `rule`; it also ends after the current call once `stop` is set. `after_call`
/// sees the calls so far and the elapsed time after each call (after the second clock read).
pub(crate) fn timed_loop_until(
    runner: &mut dyn TimedRunner,
    rule: &LoopRule,
    stop: &AtomicBool,
    after_call: &mut dyn FnMut(&[TimedCall], Duration),
) -> anyhow::Result<LoopEnd> {
    let mut calls: Vec<TimedCall> =
        Vec::with_capacity(rule.min_calls.min(PREALLOCATED_CALLS) as usize);
    let origin = Instant::now();
    let mut next_pin_check = 0;
    loop {
        let mut record = CallRecord::default();
        // Outside the clock reads: a lazily prepared input is made here.
        runner
            .prepare_call()
            .with_context(|| format!("preparing timed call {} failed", calls.len()))?;
        let t0 = Instant::now();
        let outcome = runner.call(&mut record);
        let t1 = Instant::now();
        outcome.with_context(|| format!("timed call {} failed", calls.len()))?;
        calls.push(TimedCall {
            start: t0 - origin,
            wall: t1 - t0,
            record,
        });
        runner.verify()?;
        let elapsed = t1 - origin;
        if let Some(stopped_by) = rule.end(calls.len() as u64, elapsed) {
            // Pinning the p50 goes on within the budget; checked each time the calls grew by a
            // tenth, so the check's sort costs a constant share of the loop.
            let (Some(half_width), Some(max)) = (rule.p50_half_width, rule.max_duration) else {
                return Ok(LoopEnd { calls, stopped_by });
            };
            let n = calls.len() as u64;
            if elapsed >= max {
                // The minimums held but the budget ended the loop before the p50 was pinned down.
                return Ok(LoopEnd {
                    calls,
                    stopped_by: LoopStop::Budget,
                });
            }
            if n >= next_pin_check {
                if p50_pinned(&calls, half_width) {
                    return Ok(LoopEnd { calls, stopped_by });
                }
                next_pin_check = n + n / 10 + 1;
            }
        }
        if stop.load(Ordering::Relaxed) {
            return Ok(LoopEnd {
                calls,
                stopped_by: LoopStop::Signal,
            });
        }
        after_call(&calls, elapsed);
    }
}

/// Registers SIGINT, SIGTERM and SIGHUP (the terminal closed) to set the returned flag instead of
/// killing the worker, so the calls already timed reach the result file.
pub fn stop_on_signals() -> std::io::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    Ok(stop)
}

fn to_observation(
    index: usize,
    call: &TimedCall,
    stage_names: &[&str],
    counter_names: &[&str],
) -> Observation {
    let r = &call.record;
    let positive = |v: u32| (v > 0).then_some(u64::from(v));
    Observation {
        iteration: index as u64,
        start_ns: call.start.as_nanos() as u64,
        wall_ns: call.wall.as_nanos() as u64,
        items: positive(r.items),
        elements_per_item: positive(r.elements_per_item),
        input_tokens: positive(r.input_tokens),
        output_tokens: positive(r.output_tokens),
        stages_ns: stage_names
            .iter()
            .zip(r.stages_ns.iter())
            .map(|(name, &ns)| (name.to_string(), ns))
            .collect::<BTreeMap<_, _>>(),
        counts: counter_names
            .iter()
            .zip(r.counts.iter())
            .map(|(name, &n)| (name.to_string(), n))
            .collect(),
    }
}

/// What the worker watches besides signals, so that it never outlives the run that started it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Watchdog {
    /// Standard input is a pipe whose other end the orchestrator holds open: end of file means the
    /// orchestrator is gone (even killed with SIGKILL), and the worker stops.
    pub parent_pipe: bool,
    /// The orchestrator's per-case timeout. The orchestrator asks for a stop at this point and kills
    /// the worker [`STOP_GRACE`] later; the worker enforces the same limits itself, a little later,
    /// in case the orchestrator cannot.
    pub timeout: Option<Duration>,
}

/// How long a worker asked to stop may take to finish its call and write its result (the
/// orchestrator's grace, which the watchdog mirrors).
pub const STOP_GRACE: Duration = Duration::from_secs(5);
/// How long the watchdog waits beyond the orchestrator's own deadlines before acting, so that in a
/// healthy run the orchestrator always acts first.
const WATCHDOG_SLACK: Duration = Duration::from_secs(1);
/// Exit code of a worker that ended itself because the orchestrator was gone or overdue.
pub const EXIT_ABANDONED: i32 = 3;

impl Watchdog {
    /// Starts the watching threads; each sets `stop` first (so the calls timed so far reach the result
    /// file) and ends the process if the stop does not finish within the grace.
    pub fn start(self, stop: &Arc<AtomicBool>) {
        if self.parent_pipe {
            let stop = Arc::clone(stop);
            let spawned = std::thread::Builder::new()
                .name("parent-pipe".into())
                .spawn(move || {
                    wait_for_eof(std::io::stdin());
                    eprintln!("worker: the orchestrator is gone (its pipe closed); stopping");
                    stop_then_exit(&stop, Duration::ZERO, STOP_GRACE);
                });
            if let Err(e) = spawned {
                eprintln!("worker: cannot watch the orchestrator ({e})");
            }
        }
        if let Some(timeout) = self.timeout {
            let stop = Arc::clone(stop);
            let spawned = std::thread::Builder::new()
                .name("timeout".into())
                .spawn(move || {
                    std::thread::sleep(timeout.saturating_add(WATCHDOG_SLACK));
                    eprintln!(
                        "worker: past its {:.0} s timeout and not stopped by the orchestrator; stopping",
                        timeout.as_secs_f64()
                    );
                    stop_then_exit(&stop, Duration::ZERO, STOP_GRACE);
                });
            if let Err(e) = spawned {
                eprintln!("worker: cannot watch its timeout ({e})");
            }
        }
    }
}

/// Reads until end of file or an error: either means the writer is gone.
fn wait_for_eof(mut input: impl std::io::Read) {
    let mut buf = [0u8; 64];
    while let Ok(n) = input.read(&mut buf) {
        if n == 0 {
            break;
        }
    }
}

fn stop_then_exit(stop: &AtomicBool, delay: Duration, grace: Duration) {
    std::thread::sleep(delay);
    stop.store(true, Ordering::Relaxed);
    std::thread::sleep(grace);
    eprintln!("worker: did not stop within {} s; exiting", grace.as_secs());
    std::process::exit(EXIT_ABANDONED);
}

/// A worker request file that cannot be read.
#[derive(Debug, thiserror::Error)]
enum RequestError {
    #[error("cannot read worker request {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("malformed worker request {}: {source}", path.display())]
    Malformed {
        path: PathBuf,
        source: serde_json::Error,
    },
}

fn read_request(path: &Path) -> Result<WorkerRequest, RequestError> {
    let bytes = std::fs::read(path).map_err(|source| RequestError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| RequestError::Malformed {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads the request file, executes it, writes the result file atomically. Returns the exit code:
/// 0 when the result says ok or interrupted, 1 when it records an error (a crash writes no result at all).
pub fn main_with_files(request_path: &Path, result_path: &Path, watchdog: Watchdog) -> i32 {
    let request = read_request(request_path);
    let stop = match stop_on_signals() {
        Ok(flag) => flag,
        Err(e) => {
            eprintln!("worker: cannot watch for SIGINT/SIGTERM ({e}); a stop will lose the calls");
            Arc::new(AtomicBool::new(false))
        }
    };
    watchdog.start(&stop);
    let result = match request {
        // A runtime that panics on a model fails the case with its message instead of exit 101.
        Ok(r) => {
            crate::guard::catch_runtime_panic(&r.runtime, "loading or running the model", || {
                Ok(execute_until(&r, &stop))
            })
            .unwrap_or_else(|e| {
                WorkerResult::failed(
                    RuntimeInfo {
                        name: r.runtime.clone(),
                        version: "unknown".into(),
                    },
                    format!("{e:#}"),
                )
            })
        }
        Err(e) => WorkerResult::failed(
            RuntimeInfo {
                name: "unknown".into(),
                version: "unknown".into(),
            },
            e.to_string(),
        ),
    };
    if let Some(e) = &result.error {
        eprintln!("worker error: {e}");
    }
    if let Err(e) = trtmc_core::fsutil::write_json_atomic(result_path, &result) {
        eprintln!("worker: cannot write {}: {e}", result_path.display());
        return 1;
    }
    i32::from(result.status == WorkerStatus::Error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::WORKER_REQUEST_SCHEMA;

    /// A `test_sleep` request whose every call sleeps `sleep_us` microseconds.
    fn sleep_request(warmup: u64, iterations: u64, sleep_us: u64) -> WorkerRequest {
        let mut req = request("test_sleep", warmup, iterations);
        req.request
            .insert("sleep_us".into(), serde_json::json!(sleep_us));
        req
    }

    fn request(op: &str, warmup: u64, iterations: u64) -> WorkerRequest {
        WorkerRequest {
            schema: WORKER_REQUEST_SCHEMA.into(),
            operation: op.into(),
            runtime: "tract".into(),
            bundle: None,
            manifest_dir: None,
            tokenizer: None,
            request: BTreeMap::new(),
            runtime_settings: BTreeMap::new(),
            warmup,
            iterations,
            min_duration_s: 0.0,
            warmup_budget_s: None,
            max_duration_s: None,
            progress_file: None,
            profile: None,
            p50_half_width: None,
            first_call: 0,
            hooks: None,
            data: None,
        }
    }

    #[test]
    fn noop_produces_exactly_the_requested_observations() {
        let r = execute(&request("test_noop", 3, 25));
        assert_eq!(r.status, WorkerStatus::Ok, "{:?}", r.error);
        assert_eq!(r.warmup_ms.len(), 3);
        assert_eq!(r.observations.len(), 25);
        assert!(
            r.observations
                .windows(2)
                .all(|w| w[0].start_ns <= w[1].start_ns)
        );
        assert_eq!(r.observations[24].iteration, 24);
    }

    #[test]
    fn min_duration_extends_the_loop() {
        let mut req = sleep_request(0, 2, 2000);
        req.min_duration_s = 0.05;
        let r = execute(&req);
        let last = r.observations.last().expect("observations");
        assert!(
            last.start_ns + last.wall_ns >= 50_000_000,
            "the loop ran for at least the minimum duration"
        );
        assert!(
            r.observations.len() > 2,
            "more calls than --iterations were needed"
        );
        assert!(r.observations.iter().all(|o| o.wall_ns >= 2_000_000));
    }

    #[test]
    fn the_budget_ends_the_loop_before_the_minimum_count_and_keeps_every_call() {
        let mut req = sleep_request(0, 1_000_000, 2000);
        req.max_duration_s = Some(0.1);
        let r = execute(&req);
        assert_eq!(r.status, WorkerStatus::Ok, "{:?}", r.error);
        assert_eq!(r.stopped_by, Some(LoopStop::Budget));
        let n = r.observations.len();
        assert!(
            (10..=50).contains(&n),
            "0.1 s of 2 ms calls, not a million: {n}"
        );
        let last = r.observations.last().expect("calls");
        assert!(last.start_ns + last.wall_ns >= 100_000_000);
    }

    #[test]
    fn the_warmup_stops_at_its_budget_after_at_least_one_call() {
        let mut req = sleep_request(1000, 2, 5000);
        req.warmup_budget_s = Some(0.03);
        let r = execute(&req);
        assert_eq!(r.status, WorkerStatus::Ok, "{:?}", r.error);
        assert!(
            (1..=12).contains(&r.warmup_ms.len()),
            "{:?}",
            r.warmup_ms.len()
        );
        assert_eq!(r.stopped_by, Some(LoopStop::Complete));
        req.warmup_budget_s = Some(0.0);
        assert_eq!(
            execute(&req).warmup_ms.len(),
            1,
            "one warm-up call at least"
        );
    }

    #[test]
    fn a_stop_request_ends_the_loop_after_the_current_call_with_its_calls_kept() {
        let req = sleep_request(1, 1_000_000, 1000);
        let stop = AtomicBool::new(false);
        let r = std::thread::scope(|s| {
            let worker = s.spawn(|| execute_until(&req, &stop));
            std::thread::sleep(Duration::from_millis(150));
            stop.store(true, Ordering::Relaxed);
            worker.join().expect("worker thread")
        });
        assert_eq!(r.status, WorkerStatus::Interrupted);
        assert_eq!(r.stopped_by, Some(LoopStop::Signal));
        assert_eq!(r.error, None);
        assert!(r.observations.len() > 10, "{}", r.observations.len());
        assert!(r.observations.len() < 1000);
    }

    #[test]
    fn progress_is_written_between_calls_with_an_estimate_of_the_calls_to_come() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("progress.json");
        let mut req = sleep_request(0, 1, 2000);
        req.min_duration_s = 1.2;
        req.progress_file = Some(path.clone());
        let r = execute(&req);
        assert_eq!(r.status, WorkerStatus::Ok, "{:?}", r.error);
        let p: WorkerProgress =
            serde_json::from_slice(&std::fs::read(&path).expect("progress written"))
                .expect("progress parses");
        assert_eq!(p.phase, "timed");
        assert!(
            p.done > 100 && p.done < r.observations.len() as u64,
            "{p:?}"
        );
        // 1.2 s of ~2 ms calls: the estimate is in the hundreds, not the minimum count of 1.
        assert!(p.expected > p.done, "{p:?}");
        assert!(p.p50_ms >= 2.0, "{p:?}");
    }

    /// Sleeps `ms[i % len]` milliseconds in call `i`.
    struct Pattern {
        ms: Vec<u64>,
        i: usize,
    }

    impl TimedRunner for Pattern {
        fn call(&mut self, _: &mut CallRecord) -> anyhow::Result<()> {
            std::thread::sleep(Duration::from_millis(self.ms[self.i % self.ms.len()]));
            self.i += 1;
            Ok(())
        }
    }

    #[test]
    fn an_unpinned_p50_keeps_the_loop_going_within_its_budget() {
        let rule = LoopRule {
            min_calls: 10,
            min_duration: Duration::ZERO,
            max_duration: Some(Duration::from_millis(600)),
            p50_half_width: Some(0.02),
        };
        // Blocks of 1 ms and 5 ms calls: the p50 sits between two levels and its interval stays wide,
        // so the loop runs to its budget, far past the minimum count.
        let mut bimodal = Pattern {
            ms: [vec![1; 8], vec![5; 8]].concat(),
            i: 0,
        };
        let end = timed_loop_until(&mut bimodal, &rule, &AtomicBool::new(false), &mut |_, _| {})
            .expect("loop");
        let last = end.calls.last().expect("calls");
        assert!(end.calls.len() > 20, "{}", end.calls.len());
        assert_eq!(end.stopped_by, LoopStop::Budget);
        assert!(last.start + last.wall >= Duration::from_millis(600));
        // Steady calls are pinned down at once (a loose target, for a loaded test machine).
        let loose = LoopRule {
            p50_half_width: Some(0.5),
            ..rule
        };
        let mut steady = Pattern { ms: vec![2], i: 0 };
        let end = timed_loop_until(&mut steady, &loose, &AtomicBool::new(false), &mut |_, _| {})
            .expect("loop");
        assert!(end.calls.len() < 60, "{}", end.calls.len());
        // Without a budget the minimums are the whole rule.
        let unbounded = LoopRule {
            max_duration: None,
            ..rule
        };
        let mut bimodal = Pattern {
            ms: [vec![1; 8], vec![5; 8]].concat(),
            i: 0,
        };
        let end = timed_loop_until(
            &mut bimodal,
            &unbounded,
            &AtomicBool::new(false),
            &mut |_, _| {},
        )
        .expect("loop");
        assert_eq!(end.calls.len(), 10);
    }

    #[test]
    fn expected_calls_follow_the_pace_within_the_rule() {
        let rule = LoopRule {
            min_calls: 50,
            min_duration: Duration::from_secs(1),
            max_duration: Some(Duration::from_secs(30)),
            p50_half_width: None,
        };
        // 10 ms calls: 1 s needs 100.
        assert_eq!(rule.expected(10, Duration::from_millis(100)), 100);
        // 1 s calls: the budget allows 30, fewer than the minimum count.
        assert_eq!(rule.expected(2, Duration::from_secs(2)), 30);
        // 0.1 ms calls: the minimum count already takes longer than needed; 1 s is 10,000.
        assert_eq!(rule.expected(100, Duration::from_millis(10)), 10_000);
    }

    #[test]
    fn the_requested_test_slowdown_stretches_every_timed_call_by_its_fraction() {
        let mut req = sleep_request(1, 5, 20_000);
        req.hooks = Some(crate::protocol::WorkerHooks {
            call_slowdown_ppm: Some(500_000),
            ..Default::default()
        });
        let r = execute(&req);
        assert_eq!(r.status, WorkerStatus::Ok, "{:?}", r.error);
        // A 20 ms call made 50 % slower: at least 30 ms, however long the sleep overshot.
        assert!(
            r.observations.iter().all(|o| o.wall_ns >= 30_000_000),
            "{:?}",
            r.observations
        );
        assert!(
            r.warmup_ms.iter().all(|&ms| ms < 29.0),
            "warm-ups are not slowed"
        );
    }

    #[test]
    fn the_requested_test_delay_is_inside_every_timed_call_only() {
        let mut req = request("test_noop", 2, 5);
        req.hooks = Some(crate::protocol::WorkerHooks {
            call_delay_us: Some(3000),
            ..Default::default()
        });
        let r = execute(&req);
        assert_eq!(r.status, WorkerStatus::Ok, "{:?}", r.error);
        assert_eq!(r.observations.len(), 5);
        assert!(r.observations.iter().all(|o| o.wall_ns >= 3_000_000));
        assert!(
            r.warmup_ms.iter().all(|&ms| ms < 3.0),
            "warm-up calls are not delayed: {:?}",
            r.warmup_ms
        );
    }

    #[test]
    fn non_finite_outputs_fail_the_case() {
        let r = execute(&request("test_nan", 1, 3));
        assert_eq!(r.status, WorkerStatus::Error);
        assert!(r.error.as_deref().unwrap_or("").contains("non-finite"));
        let mut infer = request("infer", 1, 3);
        infer.request.insert("seed".into(), serde_json::json!(0));
        let missing = execute(&infer);
        assert!(
            missing
                .error
                .as_deref()
                .unwrap_or("")
                .contains("needs a model bundle")
        );
    }
}
