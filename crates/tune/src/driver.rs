//! The tuning loop: expand → build each route → accuracy gate → measure → (mixed phase 2 | racing rounds)
//! → ties → interleaved head-to-head of the finalists → decision. Every iteration is appended to the
//! tuning cache as it completes; a resumed tune replays the cached iterations in the same order (never
//! running them again) and runs only what is missing.
//!
//! Runtimes plug in through [`RouteRunner`]. Each real runner builds a route in its own process, so a crash
//! or a timeout comes back as a [`RouteError`] that excludes the route and keeps its message.

use crate::cache::{
    CacheError, CacheHeader, CacheWriter, IterationRecord, Phase, RouteStatus, Stage,
};
use crate::config::{ConfigError, DEFAULT_EARLY_STOP_FACTOR, TuneConfig};
use crate::expr::{ExprError, Expression, Route};
use crate::knobs::{KnobDbError, KnobSet};
use crate::search::{self, FullSpace, SearchOrder};
use crate::select::{self, Estimate, Objective, ObjectiveCost};
use crate::summary::{
    Counts, Decision, DecisionKind, FinalistResult, HeadToHeadSummary, Margin, RacingSummary,
    RouteSummary, StopReason, TUNING_SUMMARY_SCHEMA, TuneSummary,
};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use trtmc_core::accuracy::{self, AccuracyReport, Tensor};
use trtmc_core::{intervals, stats};

/// How a route failed in the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteErrorKind {
    /// The child process died (signal, no result).
    Crash,
    /// The child process ran past the per-route timeout and was killed.
    Timeout,
    /// The runtime reported an error.
    Failed,
}

/// A failed build, inference or measurement of one route.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RouteError {
    /// Crash, timeout or a reported error: decides the route's status in the cache.
    pub kind: RouteErrorKind,
    /// What went wrong, kept as the route's `error_message`.
    pub message: String,
}

impl RouteError {
    /// The route's child process died (a signal, or no result).
    pub fn crash(message: impl Into<String>) -> Self {
        Self {
            kind: RouteErrorKind::Crash,
            message: message.into(),
        }
    }

    /// The route ran past its timeout and was killed.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self {
            kind: RouteErrorKind::Timeout,
            message: message.into(),
        }
    }

    /// The runtime reported an error for the route.
    pub fn failed(message: impl Into<String>) -> Self {
        Self {
            kind: RouteErrorKind::Failed,
            message: message.into(),
        }
    }
}

/// One measurement request: `warmup_calls` calls whose times are returned apart (never ranked), then
/// `calls` steady-state calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MeasurePlan {
    /// Calls made first and returned in [`Timing::warmup_ms`].
    pub warmup_calls: usize,
    /// Steady-state calls, returned in [`Timing::samples_ms`].
    pub calls: usize,
    /// Limit of the whole measurement (`--route-timeout`); `None`: no limit.
    pub timeout: Option<Duration>,
    /// Measure in a fresh process (a head-to-head pass): the process is the unit of variance, so each
    /// pass must sample a new one (docs/statistics.md). Runners without processes ignore it.
    pub fresh_process: bool,
}

/// Per-call times in milliseconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timing {
    /// The warm-up calls' times, in call order (never ranked).
    pub warmup_ms: Vec<f64>,
    /// The steady-state calls' times, in call order.
    pub samples_ms: Vec<f64>,
    /// What the runtime's own tool said about this measurement (trtexec's variance warnings).
    pub notes: Vec<String>,
}

/// A runtime that can build a route, run it on inputs, and time it.
pub trait RouteRunner {
    /// A built route (a bundle, an engine file, a worker process handle).
    type Built;

    /// Builds `route`, within `timeout` when one is given.
    fn build(
        &mut self,
        route: &Route,
        timeout: Option<Duration>,
    ) -> Result<Self::Built, RouteError>;

    /// The outputs for `inputs`, for the accuracy gate.
    fn outputs(
        &mut self,
        built: &mut Self::Built,
        inputs: &[Tensor],
        timeout: Option<Duration>,
    ) -> Result<Vec<Tensor>, RouteError>;

    /// Times `plan`'s warm-up and steady-state calls of a built route.
    fn measure(
        &mut self,
        built: &mut Self::Built,
        plan: &MeasurePlan,
    ) -> Result<Timing, RouteError>;

    /// Told, before a round's routes are built one by one, which routes it holds (those not replayed
    /// from the cache, in route order): a runner that builds elsewhere (Slurm) starts every build of
    /// the round at once. An error (the executor itself broke: no controller, a refused submission)
    /// stops the tune. The default does nothing.
    fn build_ahead(
        &mut self,
        _routes: &[Route],
        _timeout: Option<Duration>,
    ) -> Result<(), ExecutorError> {
        Ok(())
    }
}

/// Why a runner's executor cannot go on: the Slurm controller refused a submission or a poll, or a
/// file the builds are exchanged through cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum ExecutorError {
    /// The tune was asked to stop: no more arrays are submitted (those submitted are cancelled).
    #[error("the tune is stopping: nothing more is submitted")]
    Stopping,
    /// `sbatch` refused or failed to submit a round's job array.
    #[error("cannot submit the builds to Slurm: {source}")]
    Submit {
        /// Slurm's error.
        source: trtmc_executor::slurm::SlurmError,
    },
    /// A submitted job array's state cannot be polled.
    #[error("cannot follow Slurm job array {job}: {source}")]
    Follow {
        /// The job array's id.
        job: String,
        /// Slurm's error.
        source: trtmc_executor::slurm::SlurmError,
    },
    /// A file the builds are exchanged through cannot be created or written.
    #[error("cannot {action} {}: {source}", path.display())]
    File {
        /// `create`, `write`.
        action: &'static str,
        /// The file or directory concerned.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Where the golden outputs come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Reference {
    /// Given by the user (`--ref-outputs`).
    Given(Vec<Tensor>),
    /// Produced by the default route (every expression knob at its default) on the inputs. Recomputed on
    /// `--continue`; the cache keeps its digest to notice a change.
    DefaultRoute,
    /// The default route's outputs, and when the default route cannot give them (it fails to build or
    /// run), these outputs computed by `source` on the same inputs (e.g. ONNX Runtime on the ONNX file).
    DefaultRouteElse {
        /// What computed the fallback outputs, named in the tune's notes (`onnxruntime 1.x on model.onnx`).
        source: String,
        /// The fallback outputs, in the order of the model's outputs.
        outputs: Vec<Tensor>,
    },
}

impl Reference {
    fn is_default_route(&self) -> bool {
        matches!(
            self,
            Reference::DefaultRoute | Reference::DefaultRouteElse { .. }
        )
    }
}

/// What to tune.
#[derive(Debug, Clone)]
pub struct TunePlan {
    /// The (merged) knob database the expression is read against.
    pub knobs: KnobSet,
    /// The parsed route expression (`--routes`).
    pub expression: Expression,
    /// Every option of the tune.
    pub config: TuneConfig,
}

impl TunePlan {
    /// Restore the plan of a cache header (`--continue` needs nothing else).
    pub fn from_header(header: &CacheHeader) -> Result<Self, TuneError> {
        let knobs = KnobSet::from_db(&header.knob_db, "tuning cache header")?;
        let expression = crate::expr::parse(&header.tuning_expr, &knobs)?;
        Ok(Self {
            knobs,
            expression,
            config: header.options.clone(),
        })
    }

    /// Refuses a `full` or `racing` search whose space is over [`MAX_UNCAPPED_ROUTES`] without
    /// `--max-routes`: checked before anything is built (the CLI asks before it writes the cache).
    pub fn check_space(&self) -> Result<(), TuneError> {
        let config = &self.config;
        if matches!(config.search, SearchOrder::Full | SearchOrder::Racing)
            && config.max_routes.is_none()
            && FullSpace::new(&self.expression)
                .len()
                .is_none_or(|n| n > MAX_UNCAPPED_ROUTES)
        {
            return Err(TuneError::SpaceTooLarge {
                count: search::planned_count(config.search, &self.expression, &self.knobs),
            });
        }
        Ok(())
    }
}

/// Called with every iteration as it is folded in: `true` when it was replayed from the cache.
pub type Progress<'a> = &'a mut dyn FnMut(&IterationRecord, bool);

/// Where this session's iterations go and what earlier sessions did.
#[derive(Default)]
pub struct Session<'a> {
    /// Appends every new iteration; `None` runs without a cache.
    pub cache: Option<&'a mut CacheWriter>,
    /// Iterations read back from the cache (`--continue`), replayed instead of run.
    pub previous: Vec<IterationRecord>,
    /// Stop after this many new iterations (as a kill would); continue later from the cache.
    pub stop_after_new_iterations: Option<usize>,
    /// Told about every iteration (e.g. to print progress).
    pub progress: Option<Progress<'a>>,
}

impl std::fmt::Debug for Session<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("cache", &self.cache)
            .field("previous", &self.previous.len())
            .field("stop_after_new_iterations", &self.stop_after_new_iterations)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// A tune that cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// An option is out of range.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The tuning cache cannot be created, read, appended to or continued.
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// `--continue`: the cache header's knob database is invalid.
    #[error("the knob database in the tuning cache header is invalid: {0}")]
    Knobs(#[from] KnobDbError),
    /// `--continue`: the cache header's expression does not parse against its knob database.
    #[error("the expression in the tuning cache header no longer parses: {0}")]
    Expression(#[from] ExprError),
    /// A `full` or `racing` space over [`MAX_UNCAPPED_ROUTES`] without `--max-routes`.
    #[error(
        "the full space has {count} routes; give --max-routes N (at most {MAX_UNCAPPED_ROUTES} without it) or use \
         --search fast or mixed"
    )]
    SpaceTooLarge {
        /// The number of routes in the space, as text (it may exceed any integer type).
        count: String,
    },
    /// The runner's executor failed (a Slurm submission or poll): the routes' builds cannot go on.
    #[error(transparent)]
    Executor(ExecutorError),
    /// `--continue`: a cache line is not the iteration this plan runs at that position.
    #[error(
        "tuning cache line for iteration {iter} records {found}, but this tune would run {expected} there: the \
         cache belongs to another expression or options; start a new tune"
    )]
    Diverged {
        /// The iteration's number in the cache.
        iter: usize,
        /// The phase and route this tune would run there.
        expected: String,
        /// The phase and route the cache line records.
        found: String,
    },
    /// The default route failed, and without `--ref-outputs` it was the only source of golden outputs.
    #[error(
        "the reference route {route} failed, so there are no golden outputs to gate accuracy: {message}; give \
         --ref-outputs or fix the default route"
    )]
    Reference {
        /// The default route.
        route: String,
        /// Why it failed.
        message: String,
    },
}

/// Most routes `full`/`racing` expand without `--max-routes`.
pub const MAX_UNCAPPED_ROUTES: u128 = 100_000;

/// Run (or continue) a tune.
pub fn tune<R: RouteRunner>(
    runner: &mut R,
    plan: &TunePlan,
    inputs: &[Tensor],
    reference: &Reference,
    session: Session<'_>,
) -> Result<TuneSummary, TuneError> {
    plan.config.validate()?;
    let driver = Driver {
        runner,
        plan,
        config: &plan.config,
        inputs,
        reference_source: reference,
        reference: None,
        reference_digest: None,
        reference_failure: None,
        golden: match reference {
            Reference::Given(_) => "given (--ref-outputs)".to_string(),
            _ => format!(
                "the default route {}",
                search::default_route(&plan.expression, &plan.knobs)
            ),
        },
        cache: session.cache,
        previous: session.previous,
        stop_after: session.stop_after_new_iterations,
        progress: session.progress,
        next_iter: 0,
        new_iterations: 0,
        calls: 0,
        measure_ms: 0.0,
        started: Instant::now(),
        stopped: None,
        routes: Vec::new(),
        by_key: HashMap::new(),
        built: HashMap::new(),
        notes: Vec::new(),
        planned: 0,
        positive_knobs: None,
        racing: None,
    };
    driver.run()
}

struct RouteState {
    route: Route,
    key: String,
    phase: Phase,
    iter: usize,
    status: RouteStatus,
    failed_stage: Option<Stage>,
    crash: bool,
    error: Option<String>,
    accuracy: Option<AccuracyReport>,
    search: Vec<f64>,
    finals: Vec<f64>,
    eliminated: Option<usize>,
    finalist: bool,
    /// What the runtime's tool said about this route's measurements, each once.
    notes: Vec<String>,
}

impl RouteState {
    fn note(&mut self, notes: &[String]) {
        for n in notes {
            if !self.notes.contains(n) {
                self.notes.push(n.clone());
            }
        }
    }

    fn eligible(&self) -> bool {
        self.status == RouteStatus::Ok && !self.search.is_empty()
    }
}

struct Driver<'a, 's, R: RouteRunner> {
    runner: &'a mut R,
    plan: &'a TunePlan,
    config: &'a TuneConfig,
    inputs: &'a [Tensor],
    reference_source: &'a Reference,
    reference: Option<Vec<Tensor>>,
    reference_digest: Option<String>,
    reference_failure: Option<String>,
    /// Where the golden outputs came from, for the summary.
    golden: String,
    cache: Option<&'a mut CacheWriter>,
    previous: Vec<IterationRecord>,
    stop_after: Option<usize>,
    progress: Option<Progress<'s>>,
    next_iter: usize,
    new_iterations: usize,
    calls: usize,
    /// Wall time of the measurement calls of this session (warm-ups included), as the runtime reported it.
    measure_ms: f64,
    started: Instant,
    stopped: Option<StopReason>,
    routes: Vec<RouteState>,
    by_key: HashMap<String, usize>,
    built: HashMap<String, R::Built>,
    notes: Vec<String>,
    planned: usize,
    positive_knobs: Option<Vec<String>>,
    racing: Option<RacingSummary>,
}

fn new_record(
    phase: Phase,
    round: Option<usize>,
    route: &Route,
    objective: Objective,
) -> IterationRecord {
    IterationRecord {
        iter: 0,
        phase,
        round,
        build_route: route.to_string(),
        crash: false,
        error_message: None,
        status: RouteStatus::Ok,
        failed_stage: None,
        accuracy_loss: None,
        accuracy: None,
        time_ms: None,
        time_statistic: objective.time_statistic().to_string(),
        warmup_calls: 0,
        samples_ms: Vec::new(),
        summary: None,
        outputs_sha256: None,
        notes: Vec::new(),
    }
}

fn fail(rec: &mut IterationRecord, stage: Stage, error: &RouteError) {
    rec.status = match error.kind {
        RouteErrorKind::Crash => RouteStatus::Crashed,
        RouteErrorKind::Timeout => RouteStatus::TimedOut,
        RouteErrorKind::Failed => RouteStatus::Failed,
    };
    rec.crash = error.kind != RouteErrorKind::Failed;
    rec.failed_stage = Some(stage);
    let stage = match stage {
        Stage::Build => "build",
        Stage::Outputs => "inference for the accuracy check",
        Stage::Accuracy => "accuracy check",
        Stage::Measure => "measurement",
    };
    rec.error_message = Some(format!("{stage} failed: {}", error.message));
}

/// Steady-state samples must be finite and positive (a 0 ms call means the clock is too coarse to time
/// it), and there must be some.
fn check_samples(samples: &[f64]) -> Result<(), SampleError> {
    if samples.is_empty() {
        return Err(SampleError::None);
    }
    let bad = samples
        .iter()
        .filter(|s| !(s.is_finite() && **s > 0.0))
        .count();
    if bad > 0 {
        return Err(SampleError::Invalid { count: bad });
    }
    Ok(())
}

/// Timing samples a route cannot be judged by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum SampleError {
    #[error("the runtime returned no timing samples")]
    None,
    #[error(
        "the runtime returned {count} invalid timing sample(s) (zero, negative or not finite); time more calls per sample or use a finer clock"
    )]
    Invalid { count: usize },
}

/// Total wall time of a measurement's calls (warm-ups and samples), ignoring invalid values.
fn timing_ms(timing: &Timing) -> f64 {
    timing
        .warmup_ms
        .iter()
        .chain(&timing.samples_ms)
        .filter(|v| v.is_finite() && **v > 0.0)
        .sum()
}

/// What a staged search measurement gave: the samples (probe calls folded into the warm-ups when the
/// route went on), and why it stopped early, if it did.
struct Staged {
    timing: Timing,
    warmup_calls: usize,
    /// The early-stop reason: the route is clearly slower than the best so far.
    eliminated: Option<String>,
    /// The per-route budget cut the calls short.
    budget_note: Option<String>,
}

impl Staged {
    fn single(timing: Timing, warmup_calls: usize) -> Self {
        Self {
            timing,
            warmup_calls,
            eliminated: None,
            budget_note: None,
        }
    }
}

/// A number with three or four significant digits for messages, without trailing zeros (`5985.05` →
/// `5985`, `1.51304` → `1.51`, `3.0` → `3`).
fn short_number(v: f64) -> String {
    if v.is_finite() {
        trtmc_core::text::fmt_short(v)
    } else {
        v.to_string()
    }
}

/// A measurement's samples and the runtime tool's notes into the record.
fn set_samples(
    rec: &mut IterationRecord,
    objective: Objective,
    warmup_calls: usize,
    timing: Timing,
) {
    rec.warmup_calls = warmup_calls;
    rec.time_ms = Some(objective.cost(&timing.samples_ms));
    rec.summary = stats::summarize(&timing.samples_ms);
    rec.samples_ms = timing.samples_ms;
    rec.notes.extend(timing.notes);
}

fn digest_outputs(outputs: &[Tensor]) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for t in outputs {
        hasher.update(t.name.as_bytes());
        hasher.update([0]);
        for d in &t.shape {
            hasher.update((*d as u64).to_le_bytes());
        }
        for v in &t.values {
            hasher.update(v.to_bits().to_le_bytes());
        }
    }
    hex::encode(hasher.finalize())
}

fn rotate<T: Clone>(items: &[T], by: usize) -> Vec<T> {
    if items.is_empty() {
        return Vec::new();
    }
    let k = by % items.len();
    items[k..].iter().chain(&items[..k]).cloned().collect()
}

impl<R: RouteRunner> Driver<'_, '_, R> {
    fn run(mut self) -> Result<TuneSummary, TuneError> {
        let config = self.config;
        let expr = &self.plan.expression;
        let knobs = &self.plan.knobs;
        // Before the reference route: an oversized search must not build anything first.
        self.plan.check_space()?;
        let first_phase = match config.search {
            SearchOrder::Fast => Phase::Fast,
            SearchOrder::Full => Phase::Full,
            SearchOrder::Mixed => Phase::Mixed1,
            SearchOrder::Racing => Phase::Racing,
        };
        let routes = search::planned_routes(config.search, expr, knobs, config.max_routes);
        // The reference route and the first round (each route once), less what the cache replays.
        let mut ahead = Vec::new();
        if self.reference_source.is_default_route() {
            ahead.push(search::default_route(expr, knobs));
        }
        ahead.extend(routes.iter().cloned());
        let mut announced = std::collections::HashSet::new();
        let ahead: Vec<Route> = ahead
            .into_iter()
            .filter(|r| {
                let key = r.to_string();
                !self.replays(&key) && announced.insert(key)
            })
            .collect();
        self.runner
            .build_ahead(&ahead, config.route_timeout())
            .map_err(TuneError::Executor)?;
        if self.reference_source.is_default_route() {
            let route = search::default_route(expr, knobs);
            self.step(Phase::Reference, &route, None, |d| {
                Ok(d.reference_iteration(&route))
            })?;
            if let Some(message) = self.reference_failure.clone() {
                self.fall_back(&route, message)?;
            }
        }
        self.planned = routes.len();
        let first_calls = if config.search == SearchOrder::Racing {
            config.race_round_calls.min(config.calls)
        } else {
            config.calls
        };
        for route in &routes {
            self.step(first_phase, route, None, |d| {
                Ok(d.evaluate(first_phase, route, first_calls))
            })?;
        }
        if config.search == SearchOrder::Mixed {
            self.mixed_phase_two()?;
        }
        if config.search == SearchOrder::Racing {
            self.race()?;
        }
        let (ties, head_to_head, decision) = self.select()?;
        if self.next_iter < self.previous.len() && self.stopped.is_none() {
            let extra = &self.previous[self.next_iter];
            return Err(TuneError::Diverged {
                iter: extra.iter,
                expected: "nothing (the tune is complete)".into(),
                found: format!("{} '{}'", extra.phase, extra.build_route),
            });
        }
        Ok(self.summary(ties, head_to_head, decision))
    }

    /// The cache holds the build iteration of route `key` (it is replayed, not built).
    fn replays(&self, key: &str) -> bool {
        self.previous
            .iter()
            .any(|r| r.round.is_none() && r.build_route == key)
    }

    /// Replay the next cached iteration, or run `work` and append its record. `Ok(false)` when skipped
    /// because the tune has stopped (budget, interruption).
    fn step(
        &mut self,
        phase: Phase,
        route: &Route,
        round: Option<usize>,
        work: impl FnOnce(&mut Self) -> Result<IterationRecord, TuneError>,
    ) -> Result<bool, TuneError> {
        let key = route.to_string();
        if let Some(rec) = self.previous.get(self.next_iter).cloned() {
            if rec.phase != phase || rec.build_route != key || rec.round != round {
                return Err(TuneError::Diverged {
                    iter: rec.iter,
                    expected: format!(
                        "{phase} '{key}'{}",
                        round.map(|r| format!(" round {r}")).unwrap_or_default()
                    ),
                    found: format!(
                        "{} '{}'{}",
                        rec.phase,
                        rec.build_route,
                        rec.round.map(|r| format!(" round {r}")).unwrap_or_default()
                    ),
                });
            }
            self.apply(&rec);
            if let Some(progress) = self.progress.as_deref_mut() {
                progress(&rec, true);
            }
            self.next_iter += 1;
            return Ok(true);
        }
        if self.stopped.is_some() {
            return Ok(false);
        }
        if self.stop_after.is_some_and(|n| self.new_iterations >= n) {
            self.stopped = Some(StopReason::Interrupted);
            return Ok(false);
        }
        if self
            .config
            .budget()
            .is_some_and(|b| self.started.elapsed() >= b)
        {
            self.stopped = Some(StopReason::Budget);
            return Ok(false);
        }
        let mut rec = work(self)?;
        rec.iter = self.next_iter;
        if let Some(cache) = self.cache.as_deref_mut() {
            cache.append(&rec)?;
        }
        self.apply(&rec);
        if let Some(progress) = self.progress.as_deref_mut() {
            progress(&rec, false);
        }
        self.next_iter += 1;
        self.new_iterations += 1;
        Ok(true)
    }

    /// Fold a record (replayed or new) into the route states.
    fn apply(&mut self, rec: &IterationRecord) {
        match (rec.phase, rec.round) {
            (Phase::Reference, _) => {
                self.reference_digest = rec.outputs_sha256.clone();
                if rec.status != RouteStatus::Ok {
                    self.reference_failure = Some(rec.error_message.clone().unwrap_or_default());
                }
            }
            (phase, None) => {
                let route = parse_route(&rec.build_route);
                self.by_key
                    .insert(rec.build_route.clone(), self.routes.len());
                self.routes.push(RouteState {
                    route,
                    key: rec.build_route.clone(),
                    phase,
                    iter: rec.iter,
                    status: rec.status,
                    failed_stage: rec.failed_stage,
                    crash: rec.crash,
                    error: rec.error_message.clone(),
                    accuracy: rec.accuracy.clone(),
                    search: rec.samples_ms.clone(),
                    finals: Vec::new(),
                    eliminated: None,
                    finalist: false,
                    notes: rec.notes.clone(),
                });
            }
            (phase, Some(_)) => {
                let Some(&i) = self.by_key.get(&rec.build_route) else {
                    return;
                };
                let state = &mut self.routes[i];
                state.note(&rec.notes);
                if rec.status == RouteStatus::Ok {
                    if phase == Phase::Final {
                        state.finals.extend_from_slice(&rec.samples_ms);
                    } else {
                        state.search.extend_from_slice(&rec.samples_ms);
                    }
                } else {
                    state.status = rec.status;
                    state.failed_stage = rec.failed_stage;
                    state.crash = rec.crash;
                    state.error = rec.error_message.clone();
                    self.built.remove(&rec.build_route);
                }
            }
        }
    }

    fn reference_iteration(&mut self, route: &Route) -> IterationRecord {
        let mut rec = new_record(Phase::Reference, None, route, self.config.objective);
        match self.compute_reference(route) {
            Ok(outputs) => {
                rec.outputs_sha256 = Some(digest_outputs(&outputs));
                self.reference = Some(outputs);
            }
            Err((stage, e)) => fail(&mut rec, stage, &e),
        }
        rec
    }

    fn compute_reference(&mut self, route: &Route) -> Result<Vec<Tensor>, (Stage, RouteError)> {
        let timeout = self.config.route_timeout();
        let mut built = self
            .runner
            .build(route, timeout)
            .map_err(|e| (Stage::Build, e))?;
        self.runner
            .outputs(&mut built, self.inputs, timeout)
            .map_err(|e| (Stage::Outputs, e))
    }

    /// The golden outputs, computed on first need (after `--continue` the reference line is replayed, not
    /// run, so the outputs are produced again here).
    fn ensure_reference(&mut self) -> Result<(), TuneError> {
        if self.reference.is_some() {
            return Ok(());
        }
        match self.reference_source {
            Reference::Given(tensors) => self.reference = Some(tensors.clone()),
            Reference::DefaultRoute | Reference::DefaultRouteElse { .. } => {
                let route = search::default_route(&self.plan.expression, &self.plan.knobs);
                let outputs = match self.compute_reference(&route) {
                    Ok(outputs) => outputs,
                    Err((_, e)) => return self.fall_back(&route, e.message),
                };
                let digest = digest_outputs(&outputs);
                if self.reference_digest.as_ref().is_some_and(|d| *d != digest) {
                    self.notes.push(format!(
                        "the reference outputs of {route} differ from those of the first session (digest {} then, \
                         {digest} now): the default route is not deterministic on this runtime",
                        self.reference_digest.clone().unwrap_or_default()
                    ));
                }
                self.reference = Some(outputs);
            }
        }
        Ok(())
    }

    /// The default route gave no reference outputs: take the fallback's, saying so, or stop.
    fn fall_back(&mut self, route: &Route, message: String) -> Result<(), TuneError> {
        let Reference::DefaultRouteElse { source, outputs } = self.reference_source else {
            return Err(TuneError::Reference {
                route: route.to_string(),
                message,
            });
        };
        if self.reference.is_none() {
            self.notes.push(format!(
                "the default route {route} gave no reference outputs ({message}); the golden outputs are {source}'s"
            ));
            self.golden = source.clone();
            self.reference = Some(outputs.clone());
        }
        Ok(())
    }

    /// Build, check accuracy and measure one route.
    fn evaluate(&mut self, phase: Phase, route: &Route, calls: usize) -> IterationRecord {
        let config = self.config;
        let mut rec = new_record(phase, None, route, config.objective);
        if let Err(e) = self.ensure_reference() {
            fail(
                &mut rec,
                Stage::Accuracy,
                &RouteError::failed(e.to_string()),
            );
            return rec;
        }
        let timeout = config.route_timeout();
        let mut built = match self.runner.build(route, timeout) {
            Ok(b) => b,
            Err(e) => {
                fail(&mut rec, Stage::Build, &e);
                return rec;
            }
        };
        let outputs = match self.runner.outputs(&mut built, self.inputs, timeout) {
            Ok(o) => o,
            Err(e) => {
                fail(&mut rec, Stage::Outputs, &e);
                return rec;
            }
        };
        let reference = self.reference.as_deref().unwrap_or(&[]);
        match accuracy::compare(&outputs, reference, &config.accuracy) {
            Err(e) => {
                rec.status = RouteStatus::AccuracyError;
                rec.failed_stage = Some(Stage::Accuracy);
                rec.error_message = Some(e.to_string());
                return rec;
            }
            Ok(report) => {
                rec.accuracy_loss = Some(report.losses());
                if !report.passed {
                    rec.status = RouteStatus::AccuracyFailed;
                    rec.failed_stage = Some(Stage::Accuracy);
                    rec.error_message = Some(format!(
                        "accuracy ({}) above the threshold for tensor(s): {}",
                        report.algorithm,
                        report.failed().join(", ")
                    ));
                }
                rec.accuracy = Some(report);
            }
        }
        match self.measure_in_stages(&mut built, calls) {
            Ok(staged) => match check_samples(&staged.timing.samples_ms) {
                Ok(()) => {
                    set_samples(
                        &mut rec,
                        config.objective,
                        staged.warmup_calls,
                        staged.timing,
                    );
                    if let Some(reason) = staged.eliminated {
                        if rec.status == RouteStatus::Ok {
                            rec.status = RouteStatus::Eliminated;
                            rec.error_message = Some(reason);
                        } else {
                            rec.notes.push(reason);
                        }
                    }
                    rec.notes.extend(staged.budget_note);
                }
                Err(bad) => {
                    if rec.status == RouteStatus::Ok {
                        fail(
                            &mut rec,
                            Stage::Measure,
                            &RouteError::failed(bad.to_string()),
                        );
                    }
                }
            },
            Err(e) => {
                if rec.status == RouteStatus::Ok {
                    fail(&mut rec, Stage::Measure, &e);
                } else {
                    let previous = rec.error_message.take().unwrap_or_default();
                    rec.error_message =
                        Some(format!("{previous}; measurement failed too: {}", e.message));
                }
            }
        }
        if rec.status == RouteStatus::Ok {
            self.built.insert(route.to_string(), built);
        }
        rec
    }

    /// One measurement request, counted in this session's calls and measurement time.
    fn measure_counted(
        &mut self,
        built: &mut R::Built,
        warmup_calls: usize,
        calls: usize,
    ) -> Result<Timing, RouteError> {
        let plan = MeasurePlan {
            warmup_calls,
            calls,
            timeout: self.config.route_timeout(),
            fresh_process: false,
        };
        self.calls += plan.warmup_calls + plan.calls;
        let measured = self.runner.measure(built, &plan);
        if let Ok(timing) = &measured {
            self.measure_ms += timing_ms(timing);
        }
        measured
    }

    /// A route's search measurement in two stages. First a probe (one warm-up, `probe_calls` calls): a
    /// route whose every probe call is above `early_stop_factor` × the best cost so far stops there, its
    /// probe calls as its samples. Otherwise the probe's calls count as warm-ups and `calls` calls follow
    /// in the same process, as many as fit in the per-route budget (sized from the probe); when none fit,
    /// the probe's calls are kept as the samples. Without a probe (`probe_calls` 0, or `calls` no more
    /// than it) one request measures everything, as before early stopping existed.
    fn measure_in_stages(
        &mut self,
        built: &mut R::Built,
        calls: usize,
    ) -> Result<Staged, RouteError> {
        let config = self.config;
        let probe = config.probe_calls;
        if probe == 0 || calls <= probe {
            let timing = self.measure_counted(built, config.warmup_calls, calls)?;
            return Ok(Staged::single(timing, config.warmup_calls));
        }
        let probe_warmup = config.warmup_calls.min(1);
        let probe_timing = self.measure_counted(built, probe_warmup, probe)?;
        if check_samples(&probe_timing.samples_ms).is_err() {
            return Ok(Staged::single(probe_timing, probe_warmup));
        }
        if let Some(reason) = self.clearly_slower(&probe_timing.samples_ms) {
            return Ok(Staged {
                eliminated: Some(reason),
                ..Staged::single(probe_timing, probe_warmup)
            });
        }
        let rest_warmup = config.warmup_calls.saturating_sub(probe_warmup + probe);
        let mut rest_calls = calls;
        let mut budget_note = None;
        if let Some(budget_s) = config.route_budget_s {
            let per_call = stats::mean(&probe_timing.samples_ms);
            let left_ms = budget_s * 1000.0 - timing_ms(&probe_timing);
            let fit = (left_ms / per_call).floor() - rest_warmup as f64;
            let fit = if fit.is_finite() && fit > 0.0 {
                (fit as usize).min(calls)
            } else {
                0
            };
            if fit < calls {
                budget_note = Some(format!(
                    "per-route measurement budget of {} s: measured {} of {calls} calls (~{} ms per call in the \
                     probe)",
                    short_number(budget_s),
                    if fit == 0 { probe } else { fit },
                    short_number(per_call)
                ));
                if fit == 0 {
                    return Ok(Staged {
                        budget_note,
                        ..Staged::single(probe_timing, probe_warmup)
                    });
                }
                rest_calls = fit;
            }
        }
        let mut rest = self.measure_counted(built, rest_warmup, rest_calls)?;
        let mut warmup_ms = probe_timing.warmup_ms;
        warmup_ms.extend(probe_timing.samples_ms);
        warmup_ms.append(&mut rest.warmup_ms);
        let mut notes = probe_timing.notes;
        for n in rest.notes {
            if !notes.contains(&n) {
                notes.push(n);
            }
        }
        Ok(Staged {
            timing: Timing {
                warmup_ms,
                samples_ms: rest.samples_ms,
                notes,
            },
            warmup_calls: probe_warmup + probe + rest_warmup,
            eliminated: None,
            budget_note,
        })
    }

    /// Why the probe shows a route slower than the best eligible route so far beyond doubt: its fastest
    /// call is above `early_stop_factor` × the best's cost. `None` when it is not, or nothing to compare.
    fn clearly_slower(&self, probe: &[f64]) -> Option<String> {
        let config = self.config;
        let factor = config.early_stop_factor?;
        let (best, best_cost) = self
            .routes
            .iter()
            .filter(|s| s.eligible() && s.eliminated.is_none())
            .map(|s| (s.key.as_str(), config.objective.cost(&s.search)))
            .filter(|(_, c)| c.is_finite() && *c > 0.0)
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
        let fastest = probe.iter().copied().fold(f64::INFINITY, f64::min);
        (fastest > factor * best_cost).then(|| {
            format!(
                "stopped early after {} probe call(s): the fastest took {} ms, {}× the {} of the best route so far \
                 ({best}, {} ms), above the early-stop factor {}",
                probe.len(),
                short_number(fastest),
                short_number(fastest / best_cost),
                config.objective.time_statistic(),
                short_number(best_cost),
                short_number(factor)
            )
        })
    }

    /// Measure an already evaluated route again (racing round, head-to-head pass). After `--continue` the
    /// route is rebuilt and its accuracy checked again first.
    fn measure_again(
        &mut self,
        phase: Phase,
        route: &Route,
        round: usize,
        calls: usize,
    ) -> IterationRecord {
        let config = self.config;
        let key = route.to_string();
        let mut rec = new_record(phase, Some(round), route, config.objective);
        let timeout = config.route_timeout();
        if !self.built.contains_key(&key) {
            match self.rebuild(route) {
                Ok(b) => {
                    self.built.insert(key.clone(), b);
                }
                Err((stage, e)) => {
                    fail(
                        &mut rec,
                        stage,
                        &RouteError {
                            kind: e.kind,
                            message: format!("rebuilt after --continue: {e}"),
                        },
                    );
                    if stage == Stage::Accuracy {
                        rec.status = RouteStatus::AccuracyFailed;
                    }
                    return rec;
                }
            }
        }
        let Some(built) = self.built.get_mut(&key) else {
            fail(
                &mut rec,
                Stage::Build,
                &RouteError::failed("the built route was lost"),
            );
            return rec;
        };
        // A head-to-head pass starts a fresh process, which needs the first measurement's warm-up.
        let fresh_process = phase == Phase::Final;
        let plan = MeasurePlan {
            warmup_calls: if fresh_process {
                config.warmup_calls.max(config.switch_warmup_calls)
            } else {
                config.switch_warmup_calls
            },
            calls,
            timeout,
            fresh_process,
        };
        self.calls += plan.warmup_calls + plan.calls;
        let measured = self.runner.measure(built, &plan);
        if let Ok(timing) = &measured {
            self.measure_ms += timing_ms(timing);
        }
        match measured {
            Ok(timing) => match check_samples(&timing.samples_ms) {
                Ok(()) => set_samples(&mut rec, config.objective, plan.warmup_calls, timing),
                Err(bad) => fail(
                    &mut rec,
                    Stage::Measure,
                    &RouteError::failed(bad.to_string()),
                ),
            },
            Err(e) => fail(&mut rec, Stage::Measure, &e),
        }
        rec
    }

    fn rebuild(&mut self, route: &Route) -> Result<R::Built, (Stage, RouteError)> {
        self.ensure_reference()
            .map_err(|e| (Stage::Accuracy, RouteError::failed(e.to_string())))?;
        let timeout = self.config.route_timeout();
        let mut built = self
            .runner
            .build(route, timeout)
            .map_err(|e| (Stage::Build, e))?;
        let outputs = self
            .runner
            .outputs(&mut built, self.inputs, timeout)
            .map_err(|e| (Stage::Outputs, e))?;
        let reference = self.reference.as_deref().unwrap_or(&[]);
        match accuracy::compare(&outputs, reference, &self.config.accuracy) {
            Ok(report) if report.passed => Ok(built),
            Ok(report) => Err((
                Stage::Accuracy,
                RouteError::failed(format!(
                    "accuracy above the threshold for {}",
                    report.failed().join(", ")
                )),
            )),
            Err(e) => Err((Stage::Accuracy, RouteError::failed(e.to_string()))),
        }
    }

    fn state(&self, key: &str) -> Option<&RouteState> {
        self.by_key.get(key).map(|&i| &self.routes[i])
    }

    /// Mixed phase 2: promote the knobs whose one-off route was eligible (built, measured, accurate) and
    /// faster than the baseline (cost-ratio interval entirely below 1), then run the product over them.
    fn mixed_phase_two(&mut self) -> Result<(), TuneError> {
        let config = self.config;
        let expr = &self.plan.expression;
        let base = search::baseline(expr, &self.plan.knobs);
        let base_key = base.to_string();
        let mut positive: Vec<String> = Vec::new();
        match self.state(&base_key).filter(|s| s.eligible() && s.phase == Phase::Mixed1) {
            None => self.notes.push(format!(
                "mixed: the baseline {base_key} is not eligible, so no knob can be judged faster; phase 2 skipped"
            )),
            Some(b) => {
                for s in self.routes.iter().filter(|s| s.phase == Phase::Mixed1 && s.key != base_key && s.eligible()) {
                    let changed = s.route.differing_knobs(&b.route);
                    let [knob] = changed.as_slice() else { continue };
                    let ratio = select::cost_ratio(config.objective, &s.search, &b.search, config.confidence);
                    if ratio.is_some_and(|r| r.high < 1.0) && !positive.contains(knob) {
                        positive.push(knob.clone());
                    }
                }
            }
        }
        positive.sort_by_key(|k| expr.terms.iter().position(|t| &t.knob == k));
        self.positive_knobs = Some(positive.clone());
        if positive.len() < 2 {
            self.notes.push(format!(
                "mixed: {} positive knob(s); phase 2 skipped (it needs more than one)",
                positive.len()
            ));
            return Ok(());
        }
        let evaluated = self.routes.len();
        let allowance = config.max_routes.map(|m| m.saturating_sub(evaluated));
        let mut routes: Vec<Route> = search::product_over(expr, &base, &positive)
            .into_iter()
            .filter(|r| !self.by_key.contains_key(&r.to_string()))
            .collect();
        if let Some(a) = allowance {
            routes.truncate(a);
        }
        let ahead: Vec<Route> = routes
            .iter()
            .filter(|r| !self.replays(&r.to_string()))
            .cloned()
            .collect();
        self.runner
            .build_ahead(&ahead, config.route_timeout())
            .map_err(TuneError::Executor)?;
        for route in &routes {
            self.step(Phase::Mixed2, route, None, |d| {
                Ok(d.evaluate(Phase::Mixed2, route, config.calls))
            })?;
        }
        Ok(())
    }

    /// Racing: interleaved rounds over the eligible routes; after each round (once every survivor has
    /// `race_min_samples`), drop each route that a two-sided Mann-Whitney U test at `race_alpha` finds
    /// different from the current best and whose cost is higher. Survivors are measured up to `calls`.
    fn race(&mut self) -> Result<(), TuneError> {
        let config = self.config;
        let mut alive: Vec<String> = self
            .routes
            .iter()
            .filter(|s| s.phase == Phase::Racing && s.eligible())
            .map(|s| s.key.clone())
            .collect();
        let mut round = 0usize;
        let mut eliminated = 0usize;
        loop {
            eliminated += self.eliminate(&mut alive, round);
            let needs_more = alive.iter().any(|k| self.wants_more_racing_calls(k));
            if alive.len() <= 1 || !needs_more || self.stopped.is_some() {
                break;
            }
            round += 1;
            for key in rotate(&alive, round) {
                if !self.wants_more_racing_calls(&key) {
                    continue;
                }
                let have = self.state(&key).map_or(0, |s| s.search.len());
                let calls = config.race_round_calls.min(config.calls - have);
                let route = parse_route(&key);
                self.step(Phase::Racing, &route, Some(round), |d| {
                    Ok(d.measure_again(Phase::Racing, &route, round, calls))
                })?;
            }
            alive.retain(|k| self.state(k).is_some_and(RouteState::eligible));
        }
        self.racing = Some(RacingSummary {
            rounds: round,
            round_calls: config.race_round_calls,
            alpha: config.race_alpha,
            test: "two-sided Mann-Whitney U (normal approximation, tie-corrected) against the current best, \
                   applied once every survivor has race_min_samples; no multiplicity correction"
                .into(),
            eliminated,
            survivors: alive,
        });
        Ok(())
    }

    /// A racing survivor gets rounds until it has `calls` samples or its samples add up to the per-route
    /// budget.
    fn wants_more_racing_calls(&self, key: &str) -> bool {
        self.state(key).is_some_and(|s| {
            let spent_ms: f64 = s.search.iter().sum();
            s.search.len() < self.config.calls
                && self
                    .config
                    .route_budget_s
                    .is_none_or(|b| spent_ms < b * 1000.0)
        })
    }

    fn eliminate(&mut self, alive: &mut Vec<String>, round: usize) -> usize {
        let config = self.config;
        let ready = alive.iter().all(|k| {
            self.state(k)
                .is_some_and(|s| s.search.len() >= config.race_min_samples)
        });
        if alive.len() < 2 || !ready {
            return 0;
        }
        let cost = |s: &RouteState| config.objective.cost(&s.search);
        let Some(best) = alive
            .iter()
            .filter_map(|k| self.state(k))
            .min_by(|a, b| cost(a).total_cmp(&cost(b)))
            .map(|s| s.key.clone())
        else {
            return 0;
        };
        let Some(best_state) = self.state(&best) else {
            return 0;
        };
        let (best_cost, best_samples) = (cost(best_state), best_state.search.clone());
        let mut dropped = Vec::new();
        for key in alive.iter().filter(|k| **k != best) {
            let Some(s) = self.state(key) else { continue };
            let p = stats::mann_whitney_p(&s.search, &best_samples).unwrap_or(1.0);
            if p < config.race_alpha && cost(s) > best_cost {
                dropped.push(key.clone());
            }
        }
        for key in &dropped {
            if let Some(&i) = self.by_key.get(key) {
                self.routes[i].eliminated = Some(round);
            }
            self.built.remove(key);
        }
        alive.retain(|k| !dropped.contains(k));
        dropped.len()
    }

    fn estimate(&self, samples: &[f64]) -> Option<Estimate> {
        select::estimate(self.config.objective, samples, self.config.confidence)
    }

    /// Whether the head-to-head passes so far decide every finalist against the best: each one beaten
    /// (its cost ratio's interval above `1 + min_effect`) or tied within it (the interval at most
    /// `1 + min_effect`), at `confidence` (one look's share).
    fn head_to_head_decided(&self, finalists: &[String], confidence: f64) -> bool {
        let config = &self.config;
        let passes: Vec<Vec<Vec<f64>>> = finalists
            .iter()
            .filter_map(|k| self.state(k).filter(|s| s.eligible()))
            .map(|s| {
                s.finals
                    .chunks(config.final_calls_per_pass.max(1))
                    .map(<[f64]>::to_vec)
                    .collect()
            })
            .collect();
        if passes.len() < 2 {
            return true;
        }
        let Some(h2h) = select::head_to_head(
            config.objective,
            &passes,
            confidence,
            config.min_effect,
            intervals::MIN_ROUNDS,
        ) else {
            return false;
        };
        let edge = 1.0 + config.min_effect;
        h2h.ratios
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != h2h.best)
            .all(|(_, r)| r.is_some_and(|r| r.low > edge || r.high <= edge))
    }

    /// Ties after the search, head-to-head of the finalists, and the decision.
    fn select(&mut self) -> Result<(Vec<String>, Option<HeadToHeadSummary>, Decision), TuneError> {
        let config = self.config;
        let mut candidates: Vec<String> = self
            .routes
            .iter()
            .filter(|s| s.eligible() && s.eliminated.is_none())
            .map(|s| s.key.clone())
            .collect();
        // Racing left one survivor: the best eliminated route meets it head to head, so the decision
        // is a winner with a measured margin rather than a "sole" route among many eligible ones.
        if candidates.len() == 1 {
            let runner_up = self
                .routes
                .iter()
                .filter(|s| s.eligible() && s.eliminated.is_some())
                .filter_map(|s| {
                    let e = self.estimate(&s.search)?;
                    Some((e.cost.estimate, s.key.clone()))
                })
                .min_by(|a, b| a.0.total_cmp(&b.0));
            if let Some((_, key)) = runner_up {
                candidates.push(key);
            }
        }
        if candidates.is_empty() {
            let decision = Decision {
                kind: DecisionKind::None,
                route: None,
                tied_routes: Vec::new(),
                margin: None,
                versus_baseline: None,
                reason: if self.routes.is_empty() {
                    "no route was evaluated".into()
                } else {
                    "no route was eligible (built, accurate and measured); see each route's error_message".into()
                },
            };
            return Ok((Vec::new(), None, decision));
        }
        let estimates: Vec<Option<Estimate>> = candidates
            .iter()
            .map(|k| self.state(k).and_then(|s| self.estimate(&s.search)))
            .collect();
        let by_cost = |i: &usize| {
            estimates[*i]
                .as_ref()
                .map_or(f64::INFINITY, |e| e.cost.estimate)
        };
        let mut tied = select::tied_with_best(&estimates);
        tied.sort_by(|a, b| by_cost(a).total_cmp(&by_cost(b)));
        let ties: Vec<String> = tied.iter().map(|&i| candidates[i].clone()).collect();
        let stopped_early = self
            .routes
            .iter()
            .filter(|s| s.status == RouteStatus::Eliminated)
            .count();
        if candidates.len() == 1 && stopped_early > 0 {
            // Every other measured route was stopped as slower beyond doubt: a winner without a
            // head-to-head, which would spend the very time early stopping saved.
            let route = candidates[0].clone();
            let decision = Decision {
                kind: DecisionKind::Winner,
                versus_baseline: self.versus_baseline(&route),
                reason: format!(
                    "{route} is the only eligible route left: the {stopped_early} other measured route(s) were \
                     stopped early, every probe call above {}× the best cost so far (see their reasons)",
                    short_number(
                        config
                            .early_stop_factor
                            .unwrap_or(DEFAULT_EARLY_STOP_FACTOR)
                    )
                ),
                route: Some(route),
                tied_routes: Vec::new(),
                margin: None,
            };
            return Ok((ties, None, decision));
        }
        if candidates.len() == 1 {
            let route = candidates[0].clone();
            let decision = Decision {
                kind: DecisionKind::Sole,
                versus_baseline: self.versus_baseline(&route),
                route: Some(route.clone()),
                tied_routes: Vec::new(),
                margin: None,
                reason: format!("{route} is the only eligible route"),
            };
            return Ok((ties, None, decision));
        }
        let mut finalists: Vec<usize> = tied.clone();
        finalists.truncate(config.max_finalists);
        if finalists.len() == 1 {
            let mut order: Vec<usize> = (0..candidates.len()).collect();
            order.sort_by(|a, b| by_cost(a).total_cmp(&by_cost(b)));
            if let Some(&runner_up) = order.iter().find(|&&i| i != finalists[0]) {
                finalists.push(runner_up);
            }
        }
        let finalists: Vec<String> = finalists.iter().map(|&i| candidates[i].clone()).collect();
        for key in &finalists {
            if let Some(&i) = self.by_key.get(key) {
                self.routes[i].finalist = true;
            }
        }
        // Passes are added until every finalist is decided (beaten beyond `min_effect`, or tied
        // within it) at one of the planned looks, or `max_final_passes` is reached; the error is split
        // between the looks (docs/statistics.md, *Sequential rounds*).
        let looks = intervals::Looks::plan(
            config.final_passes,
            config.most_final_passes(),
            config.confidence,
        );
        let mut pass = 0;
        while pass < looks.last() && config.final_passes > 0 {
            for key in rotate(&finalists, pass) {
                if !self.state(&key).is_some_and(RouteState::eligible) {
                    continue;
                }
                let route = parse_route(&key);
                self.step(Phase::Final, &route, Some(pass), |d| {
                    Ok(d.measure_again(Phase::Final, &route, pass, config.final_calls_per_pass))
                })?;
            }
            pass += 1;
            if self.stopped.is_some() {
                break;
            }
            if looks.is_look(pass) && self.head_to_head_decided(&finalists, looks.per_look) {
                break;
            }
        }
        let passes_done = pass;
        let standing: Vec<String> = finalists
            .iter()
            .filter(|k| self.state(k).is_some_and(RouteState::eligible))
            .cloned()
            .collect();
        let complete = config.final_passes > 0
            && standing.len() >= 2
            && looks.is_look(passes_done)
            && standing.iter().all(|k| {
                self.state(k)
                    .is_some_and(|s| s.finals.len() >= passes_done * config.final_calls_per_pass)
            });
        let based_on = if complete {
            "interleaved_passes"
        } else {
            "search_samples"
        };
        if !complete {
            self.notes.push(
                "the head-to-head passes did not complete (stopped early or a finalist failed); the decision uses \
                 the search-phase samples"
                    .into(),
            );
        }
        let samples: Vec<Vec<f64>> = standing
            .iter()
            .map(|k| {
                self.state(k)
                    .map(|s| {
                        if complete {
                            s.finals.clone()
                        } else {
                            s.search.clone()
                        }
                    })
                    .unwrap_or_default()
            })
            .collect();
        // The unit is the pass (a fresh process each); search samples are one process per route, a
        // single "pass" that can beat nobody.
        let passes: Vec<Vec<Vec<f64>>> = samples
            .iter()
            .map(|s| {
                if complete {
                    s.chunks(config.final_calls_per_pass.max(1))
                        .map(<[f64]>::to_vec)
                        .collect()
                } else {
                    vec![s.clone()]
                }
            })
            .collect();
        let h2h = select::head_to_head(
            config.objective,
            &passes,
            looks.per_look,
            config.min_effect,
            intervals::MIN_ROUNDS,
        );
        let finalist_results: Vec<FinalistResult> = standing
            .iter()
            .enumerate()
            .map(|(i, k)| FinalistResult {
                route: k.clone(),
                estimate: self.estimate(&samples[i]),
                ratio_to_best: h2h
                    .as_ref()
                    .and_then(|h| h.ratios.get(i).copied().flatten()),
                tied_with_best: h2h.as_ref().is_some_and(|h| h.tied.contains(&i)),
            })
            .collect();
        let summary = HeadToHeadSummary {
            based_on: based_on.into(),
            passes: config.final_passes,
            calls_per_pass: config.final_calls_per_pass,
            finalists: finalist_results,
        };
        let decision = match h2h {
            None => Decision {
                kind: DecisionKind::None,
                route: None,
                tied_routes: Vec::new(),
                margin: None,
                versus_baseline: None,
                reason: "every finalist failed during the head-to-head".into(),
            },
            Some(h) if standing.len() == 1 => {
                let route = standing[h.best].clone();
                Decision {
                    kind: DecisionKind::Sole,
                    versus_baseline: self.versus_baseline(&route),
                    route: Some(route.clone()),
                    tied_routes: Vec::new(),
                    margin: None,
                    reason: format!("{route} is the only finalist left standing"),
                }
            }
            Some(h) if h.tied.len() == 1 => {
                let route = standing[h.best].clone();
                let closest = h
                    .ratios
                    .iter()
                    .enumerate()
                    .filter_map(|(i, r)| r.map(|r| (i, r)))
                    .min_by(|a, b| a.1.estimate.total_cmp(&b.1.estimate));
                let margin = closest.map(|(i, r)| Margin::from_interval(standing[i].clone(), r));
                let reason = match &margin {
                    Some(m) => format!(
                        "{route} is faster than every other finalist: the closest, {}, is {:.2} % slower \
                         ({:.0} % interval {:.2} % to {:.2} %, above the {:.1} % minimum effect)",
                        m.other,
                        m.percent,
                        m.confidence * 100.0,
                        (m.low - 1.0) * 100.0,
                        (m.high - 1.0) * 100.0,
                        config.min_effect * 100.0
                    ),
                    None => format!("{route} is the fastest finalist"),
                };
                Decision {
                    kind: DecisionKind::Winner,
                    versus_baseline: self.versus_baseline(&route),
                    route: Some(route),
                    tied_routes: Vec::new(),
                    margin,
                    reason,
                }
            }
            Some(h) => {
                let tied_routes: Vec<String> =
                    h.tied.iter().map(|&i| standing[i].clone()).collect();
                let base = search::baseline(&self.plan.expression, &self.plan.knobs).to_string();
                let default =
                    search::default_route(&self.plan.expression, &self.plan.knobs).to_string();
                let (route, why) = if tied_routes.contains(&base) {
                    (
                        base,
                        "the baseline is among them, and a tie gives no reason to leave it",
                    )
                } else if tied_routes.contains(&default) {
                    (
                        default,
                        "the default route is among them, and a tie gives no reason to leave it",
                    )
                } else {
                    (
                        standing[h.best].clone(),
                        "it has the lowest point estimate, though not significantly",
                    )
                };
                Decision {
                    kind: DecisionKind::Tie,
                    versus_baseline: self.versus_baseline(&route),
                    reason: format!(
                        "{} routes are within {:.1} % of each other at {:.0} % confidence; chose {route} because {why}",
                        tied_routes.len(),
                        config.min_effect * 100.0,
                        config.confidence * 100.0
                    ),
                    route: Some(route),
                    tied_routes,
                    margin: None,
                }
            }
        };
        Ok((ties, Some(summary), decision))
    }

    /// `cost(baseline) / cost(route)` on the search samples, when the baseline was measured.
    fn versus_baseline(&self, route: &str) -> Option<Margin> {
        let base = search::baseline(&self.plan.expression, &self.plan.knobs).to_string();
        if base == route {
            return None;
        }
        let (b, r) = (self.state(&base)?, self.state(route)?);
        if !b.eligible() {
            return None;
        }
        let ratio = select::cost_ratio(
            self.config.objective,
            &b.search,
            &r.search,
            self.config.confidence,
        )?;
        Some(Margin::from_interval(base, ratio))
    }

    fn summary(
        self,
        ties: Vec<String>,
        head_to_head: Option<HeadToHeadSummary>,
        decision: Decision,
    ) -> TuneSummary {
        let config = self.config;
        let expr = &self.plan.expression;
        let knobs = &self.plan.knobs;
        let mut counts = Counts {
            planned: self.planned,
            evaluated: self.routes.len(),
            iterations: self.next_iter,
            iterations_this_session: self.new_iterations,
            measurement_calls_this_session: self.calls,
            measurement_ms_this_session: self.measure_ms,
            ..Counts::default()
        };
        let routes: Vec<RouteSummary> = self
            .routes
            .iter()
            .map(|s| {
                match s.status {
                    RouteStatus::Ok if s.eligible() => counts.eligible += 1,
                    RouteStatus::Ok => {}
                    RouteStatus::Crashed => counts.crashed += 1,
                    RouteStatus::TimedOut => counts.timed_out += 1,
                    RouteStatus::Failed => counts.failed += 1,
                    RouteStatus::AccuracyFailed => counts.accuracy_failed += 1,
                    RouteStatus::AccuracyError => counts.accuracy_errors += 1,
                    RouteStatus::Eliminated => counts.eliminated += 1,
                }
                if s.eligible() && s.eliminated.is_none() && s.search.len() < config.calls {
                    counts.budget_capped += 1;
                }
                let search_samples = stats::summarize(&s.search);
                let warnings: Vec<String> = if s.status == RouteStatus::Ok {
                    crate::summary::cv_warning(search_samples.as_ref())
                        .into_iter()
                        .collect()
                } else {
                    Vec::new()
                };
                RouteSummary {
                    route: s.key.clone(),
                    phase: s.phase,
                    iter: s.iter,
                    status: s.status,
                    failed_stage: s.failed_stage,
                    crash: s.crash,
                    error_message: s.error.clone(),
                    accuracy: s.accuracy.clone(),
                    search: self.estimate(&s.search),
                    search_samples,
                    head_to_head: self.estimate(&s.finals),
                    eligible: s.eligible(),
                    tied_with_best: ties.contains(&s.key),
                    finalist: s.finalist,
                    eliminated_in_round: s.eliminated,
                    notes: s.notes.clone(),
                    warnings,
                }
            })
            .collect();
        let mut notes = self.notes;
        match self.stopped {
            Some(StopReason::Interrupted) => {
                notes.push("interrupted: continue with the tuning cache to finish (--continue)".into())
            }
            Some(StopReason::Budget) => notes.push(format!(
                "the whole-tune budget of {} s was spent; the decision uses what was measured by then",
                config.budget_s.unwrap_or_default()
            )),
            None => {}
        }
        TuneSummary {
            schema: TUNING_SUMMARY_SCHEMA.into(),
            tuner_version: knobs.tuner_version(),
            search: config.search,
            objective: config.objective,
            objective_unit: config.objective.unit().into(),
            confidence: config.confidence,
            min_effect: config.min_effect,
            expression: expr.to_string(),
            baseline_route: search::baseline(expr, knobs).to_string(),
            default_route: search::default_route(expr, knobs).to_string(),
            accuracy: config.accuracy.clone(),
            routes,
            positive_knobs: self.positive_knobs,
            racing: self.racing,
            ties,
            head_to_head,
            decision,
            counts,
            stopped: self.stopped,
            notes,
            golden: self.golden,
            context: None,
        }
    }
}

/// Routes in records are strings written by [`Route`]'s `Display`: `-k1=v1 -k2=v2`.
fn parse_route(text: &str) -> Route {
    Route {
        settings: text
            .split_whitespace()
            .map(|token| match token.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (token.to_string(), String::new()),
            })
            .collect(),
    }
}
