//! The `run` orchestration: resolve every case, plan and build each bundle once, run each case in its
//! own worker process, reduce the raw observations, and write the result directory.
//!
//! The orchestrator never prints; it reports through [`Progress`] so the CLI decides what is shown.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use trtmc_core::case::{self, MeasureFlags, Override, ResolveInput, ResolvedCase, SweepAxis};
use trtmc_core::catalog::{Catalog, Profile};
use trtmc_core::fsutil::{OutputSlot, write_json_atomic};
use trtmc_core::operations;
use trtmc_core::result::{
    BENCHMARK_RUN_SCHEMA, BenchmarkRun, BundleOrigin, BundleRef, CaseFiles, CaseProfile,
    CaseResult, CaseStatus, MeasurementInfo, Observation, PUBLIC_PIPELINE_CALL_WALL, Provenance,
    RuntimeInfo, reduce,
};
use trtmc_core::stats::PERCENTILE_METHOD;
use trtmc_runtime::bundle::BundleManifest;
use trtmc_runtime::protocol::{
    ProfilePass, WORKER_REQUEST_SCHEMA, WorkerRequest, WorkerResult, WorkerStatus,
};
use trtmc_runtime::runtime::{self, SelfTimed, SelfTimedRequest};

use crate::bundles::{self, BundleError, BundleOptions, BundlePlan};
use crate::launch::{self, Launch, Outcome};
use crate::sources;

pub const RESULT_FILE: &str = "result.json";
pub const REPORT_FILE: &str = "report.html";
pub const RESOLVED_CASE_FILE: &str = "resolved-case.json";
pub const OBSERVATIONS_FILE: &str = "observations.jsonl";
pub const WORKER_LOG: &str = "worker.log";
pub const WORKER_REQUEST_FILE: &str = "worker-request.json";
pub const WORKER_RESULT_FILE: &str = "worker-result.json";
pub const TELEMETRY_FILE: &str = "telemetry.json";
pub const PROFILE_REQUEST_FILE: &str = "profile-request.json";
pub const PROFILE_RESULT_FILE: &str = "profile-result.json";
pub const PROFILE_LOG: &str = "profile.log";
/// What a self-timed runtime's tool reported besides the observations (its own summary, argv).
/// The worker's notes on the last timed call (e.g. the transcript), beside observations.jsonl.
pub const CALL_NOTES_FILE: &str = "call-notes.json";
pub const CALL_NOTES_SCHEMA: &str = "trtmc.call-notes/v1";
pub const SELF_TIMED_NOTES_FILE: &str = "timing-notes.json";
pub const SELF_TIMED_NOTES_SCHEMA: &str = "trtmc.timing-notes/v1";
/// Operation calls of the profiling pass when `--profile` gives no count.
pub const DEFAULT_PROFILE_ITERATIONS: u64 = 20;

/// One `--model` (or plan entry) with what the user asked for it.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub model: String,
    pub cases: Vec<String>,
    pub runtime: Option<String>,
    pub plan_sets: Vec<Override>,
    pub plan_measure: MeasureFlags,
    pub sets: Vec<Override>,
    pub sweeps: Vec<SweepAxis>,
    pub flags: MeasureFlags,
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub bundle: BundleOptions,
    pub worker: PathBuf,
    pub telemetry: bool,
    /// `-o DIR`: a replaceable slot. `None`: a new timestamped directory below `results_parent`.
    pub output: Option<PathBuf>,
    pub results_parent: PathBuf,
    pub command_line: Vec<String>,
    /// `--profile`: after each case's timed run, a separate per-layer profiling pass of this many calls.
    pub profile: Option<u64>,
}

/// Errors that stop a run before any case is measured, by exit-code class.
#[derive(Debug, Clone, PartialEq)]
pub enum RunError {
    Input(String),
    /// A runtime's library or tool is missing (libonnxruntime, trtexec).
    Environment(String),
    Build(String),
    Output(String),
    Internal(String),
}

impl From<BundleError> for RunError {
    fn from(e: BundleError) -> Self {
        match e {
            BundleError::Input(m) => RunError::Input(m),
            BundleError::Build(m) => RunError::Build(m),
        }
    }
}

/// What the orchestrator tells the user interface.
pub trait Progress {
    fn build_started(&self, _model: &str, _runtime: &str, _path: &Path) {}
    fn build_finished(&self, _model: &str, _seconds: f64) {}
    fn case_started(&self, _index: usize, _total: usize, _label: &str, _iterations: u64) {}
    fn case_finished(&self, _index: usize, _result: &CaseResult) {}
}

/// A resolved case with its profile and bundle plan.
pub struct PlannedCase {
    pub profile: Profile,
    pub resolved: ResolvedCase,
    pub bundle: Option<BundlePlan>,
}

/// Resolves every selection into cases and plans their bundles; nothing is built or loaded.
pub fn plan_cases(
    catalog: &Catalog,
    selections: &[Selection],
    options: &BundleOptions,
) -> Result<Vec<PlannedCase>, RunError> {
    operations::validate().map_err(RunError::Internal)?;
    if options.explicit.is_some() && selections.len() > 1 {
        return Err(RunError::Input(
            "--bundle applies to a single model; drop it or run one --model".into(),
        ));
    }
    let mut planned = Vec::new();
    for sel in selections {
        let profile = catalog.require(&sel.model).map_err(RunError::Input)?;
        if !profile.status.is_ready() {
            return Err(RunError::Input(format!(
                "model `{}` cannot run: {}",
                profile.name,
                profile.status.label()
            )));
        }
        // Resolved after the model source, whose absence is the first thing to report.
        let mut tokenizer: Option<Option<String>> = None;
        let points = case::sweep_points(&sel.sweeps).map_err(RunError::Input)?;
        let case_names: Vec<Option<&str>> = if sel.cases.is_empty() {
            vec![None]
        } else {
            sel.cases.iter().map(|c| Some(c.as_str())).collect()
        };
        for case_name in &case_names {
            for point in &points {
                let input = ResolveInput {
                    case: *case_name,
                    plan: sel.plan_sets.clone(),
                    sets: sel.sets.clone(),
                    sweep_point: point.clone(),
                    runtime: sel.runtime.clone(),
                    plan_measure: sel.plan_measure.clone(),
                    flags: sel.flags.clone(),
                };
                let resolved = case::resolve(profile, &input).map_err(RunError::Input)?;
                let rt = runtime::runtime_with(&resolved.runtime.value, &options.runtimes)
                    .map_err(RunError::Input)?;
                rt.availability().map_err(|e| {
                    RunError::Environment(format!("runtime `{}` is not available: {e}", rt.name()))
                })?;
                rt.supports_operation(&resolved.operation)
                    .map_err(|e| RunError::Input(format!("model `{}`: {e}", profile.name)))?;
                runtime::check_build_settings(
                    rt.name(),
                    &resolved.build_values(),
                    &rt.build_settings(),
                )
                .map_err(|e| RunError::Input(e.to_string()))?;
                runtime::check_settings(rt.as_ref(), &resolved.runtime_values())
                    .map_err(RunError::Input)?;
                let bundle = if matches!(profile.source, trtmc_core::catalog::ModelSource::None) {
                    None
                } else {
                    Some(bundles::plan(
                        profile,
                        &resolved.build_values(),
                        rt.as_ref(),
                        options,
                    )?)
                };
                // The worker gets the tokenizer as a file it can open (hub files from the cache).
                let tokenizer = match &tokenizer {
                    Some(t) => t.clone(),
                    None => tokenizer
                        .insert(sources::resolve_tokenizer(profile).map_err(RunError::Input)?)
                        .clone(),
                };
                planned.push(PlannedCase {
                    profile: Profile {
                        tokenizer,
                        ..profile.clone()
                    },
                    resolved,
                    bundle,
                });
            }
        }
    }
    timing_boundary(&planned)?;
    Ok(planned)
}

/// The one timing boundary of the planned cases; cases timed at different boundaries cannot share a
/// result (their numbers are not comparable).
pub fn timing_boundary(planned: &[PlannedCase]) -> Result<&'static str, RunError> {
    let mut boundary: Option<(&'static str, &str)> = None;
    for p in planned {
        let rt = runtime::runtime(&p.resolved.runtime.value).map_err(RunError::Input)?;
        let b = rt.timing_boundary();
        match boundary {
            None => boundary = Some((b, &p.resolved.runtime.value)),
            Some((first, first_rt)) if first != b => {
                return Err(RunError::Input(format!(
                    "runtime `{first_rt}` is timed at `{first}` and runtime `{}` at `{b}`: these numbers are not comparable, so they cannot share one result; run them separately",
                    rt.name()
                )));
            }
            Some(_) => {}
        }
    }
    Ok(boundary.map_or(PUBLIC_PIPELINE_CALL_WALL, |(b, _)| b))
}

/// The result of a run: where it was written and what it says.
pub struct RunOutcome {
    pub dir: PathBuf,
    pub run: BenchmarkRun,
}

/// Builds missing bundles, measures every case, writes and commits the result directory.
pub fn execute(
    planned: Vec<PlannedCase>,
    options: &RunOptions,
    progress: &dyn Progress,
) -> Result<RunOutcome, RunError> {
    let boundary = timing_boundary(&planned)?;
    build_missing(&planned, options, progress)?;

    let target = match &options.output {
        Some(dir) => dir.clone(),
        None => timestamped_dir(&options.results_parent),
    };
    let slot = OutputSlot::prepare(&target, RESULT_FILE, &["trtmc.benchmark-run/"])
        .map_err(RunError::Output)?;
    let mut cases = Vec::with_capacity(planned.len());
    let mut observations_by_case = Vec::with_capacity(planned.len());
    let total = planned.len();
    for (i, p) in planned.iter().enumerate() {
        progress.case_started(
            i + 1,
            total,
            &format!("{} {}", p.profile.name, p.resolved.label),
            p.resolved.measure.iterations.value,
        );
        let (result, observations) =
            run_case(i + 1, p, slot.staging(), options).map_err(RunError::Output)?;
        progress.case_finished(i + 1, &result);
        cases.push(result);
        observations_by_case.push(observations);
    }

    let mut runtimes: Vec<RuntimeInfo> = cases.iter().map(|c| c.runtime.clone()).collect();
    runtimes.sort();
    runtimes.dedup();
    let run = BenchmarkRun {
        schema: BENCHMARK_RUN_SCHEMA.into(),
        run_id: run_id(),
        created: jiff::Timestamp::now().to_string(),
        status: BenchmarkRun::status_of(&cases),
        command_line: options.command_line.clone(),
        timing_boundary: boundary.into(),
        percentile_method: PERCENTILE_METHOD.into(),
        task_quality_evaluated: false,
        provenance: Provenance {
            program: crate::machine::program(),
            runtimes,
            machine: crate::machine::machine(),
        },
        cases,
    };
    let report = trtmc_report::run_report::render(&run, &observations_by_case);
    trtmc_core::fsutil::write_atomic(&slot.staging().join(REPORT_FILE), report.as_bytes())
        .map_err(|e| RunError::Output(format!("cannot write {REPORT_FILE}: {e}")))?;
    write_json_atomic(&slot.staging().join(RESULT_FILE), &run)
        .map_err(|e| RunError::Output(format!("cannot write {RESULT_FILE}: {e}")))?;
    if std::env::var_os("TRTMC_TEST_PAUSE_BEFORE_COMMIT_MS").is_some() {
        // Test hook: widens the window in which a kill leaves a staged but uncommitted result.
        let ms = std::env::var("TRTMC_TEST_PAUSE_BEFORE_COMMIT_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        std::thread::sleep(Duration::from_millis(ms));
    }
    let dir = slot.commit().map_err(RunError::Output)?;
    Ok(RunOutcome { dir, run })
}

fn build_missing(
    planned: &[PlannedCase],
    options: &RunOptions,
    progress: &dyn Progress,
) -> Result<(), RunError> {
    let mut built: Vec<PathBuf> = Vec::new();
    for p in planned {
        let Some(plan) = &p.bundle else { continue };
        if !plan.needs_build || built.contains(&plan.path) {
            continue;
        }
        let rt = runtime::runtime_with(&p.resolved.runtime.value, &options.bundle.runtimes)
            .map_err(RunError::Input)?;
        progress.build_started(&p.profile.name, rt.name(), &plan.path);
        let started = Instant::now();
        bundles::build(
            &p.profile,
            &p.resolved.build_values(),
            rt.as_ref(),
            plan,
            &options.bundle,
            &options.command_line,
        )?;
        progress.build_finished(&p.profile.name, started.elapsed().as_secs_f64());
        built.push(plan.path.clone());
    }
    Ok(())
}

fn run_case(
    index: usize,
    p: &PlannedCase,
    staging: &Path,
    options: &RunOptions,
) -> Result<(CaseResult, Vec<Observation>), String> {
    let r = &p.resolved;
    let dir_name = case_dir_name(index, &p.profile.name, r);
    let dir = staging.join(&dir_name);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let rel = |f: &str| format!("{dir_name}/{f}");
    write_json_atomic(&dir.join(RESOLVED_CASE_FILE), r)
        .map_err(|e| format!("cannot write {RESOLVED_CASE_FILE}: {e}"))?;

    let bundle_ref: Option<BundleRef> = match &p.bundle {
        Some(plan) => Some(bundles::bundle_ref(plan).map_err(|e| e.message().to_string())?),
        None => None,
    };
    let rt = runtime::runtime_with(&r.runtime.value, &options.bundle.runtimes)?;
    let rt_info = match &bundle_ref {
        Some(b) => b.runtime.clone(),
        None => RuntimeInfo {
            name: rt.name().into(),
            version: rt.version(),
        },
    };
    let mut m = match rt.self_timed() {
        Some(timer) => measure_self_timed(timer, p, &dir),
        None => measure_in_worker(p, &dir, &dir_name, options),
    };
    let expected = r.measure.iterations.value as usize;
    if m.error.is_none() && m.observations.len() < expected {
        m.error = Some(format!(
            "the {} returned {} observations, {expected} were requested",
            if rt.self_timed().is_some() {
                "runtime's own timing tool"
            } else {
                "worker"
            },
            m.observations.len()
        ));
    }

    let op = operations::operation(&r.operation)
        .ok_or_else(|| format!("unknown operation `{}`", r.operation))?;
    let keep = |f: &Option<String>| f.as_ref().filter(|f| dir.join(f).exists()).map(|f| rel(f));
    let (status, metrics, files) = if m.error.is_some() {
        (
            CaseStatus::Failed,
            None,
            CaseFiles {
                resolved_case: rel(RESOLVED_CASE_FILE),
                observations: None,
                worker_log: keep(&m.log),
                telemetry: m.telemetry.clone(),
                worker_request: keep(&m.request_file),
                worker_result: keep(&m.result_file),
            },
        )
    } else {
        write_observations(&dir.join(OBSERVATIONS_FILE), &m.observations)?;
        for f in [&m.request_file, &m.result_file].into_iter().flatten() {
            let _ = std::fs::remove_file(dir.join(f));
        }
        (
            CaseStatus::Completed,
            reduce(op, &m.observations),
            CaseFiles {
                resolved_case: rel(RESOLVED_CASE_FILE),
                observations: Some(rel(OBSERVATIONS_FILE)),
                worker_log: keep(&m.log),
                telemetry: m.telemetry.clone(),
                worker_request: None,
                worker_result: None,
            },
        )
    };
    let profile = match options.profile {
        Some(iterations) if status == CaseStatus::Completed => Some(match rt.self_timed() {
            Some(timer) => profile_self_timed(timer, p, &dir, &dir_name, iterations),
            None => profile_in_worker(p, &dir, &dir_name, options, iterations),
        }),
        _ => None,
    };
    let result = CaseResult {
        dir: dir_name.clone(),
        model: p.profile.name.clone(),
        case: r.case.clone(),
        label: r.label.clone(),
        task_strategy: r.task_strategy.clone(),
        operation: r.operation.clone(),
        runtime: m.runtime.unwrap_or(rt_info),
        status,
        error: m.error,
        identity: r.identity.clone(),
        bundle: bundle_ref,
        measurement: MeasurementInfo {
            warmup: r.measure.warmup.value,
            iterations: r.measure.iterations.value,
            min_duration_s: r.measure.min_duration_s.value,
            observations: m.observations.len() as u64,
            load_ms: m.load_ms,
        },
        metrics,
        sweep_point: r.sweep_point.clone(),
        request: r
            .request
            .iter()
            .map(|(k, v)| (k.clone(), v.value.clone()))
            .collect::<BTreeMap<String, Value>>(),
        files,
        profile,
    };
    Ok((result, m.observations))
}

/// What a measurement produced; file names are relative to the case directory.
#[derive(Default)]
struct Measured {
    error: Option<String>,
    observations: Vec<Observation>,
    load_ms: Option<f64>,
    runtime: Option<RuntimeInfo>,
    /// The log of the process that timed the calls.
    log: Option<String>,
    /// Relative to the result directory.
    telemetry: Option<String>,
    /// Protocol intermediates: removed on success, kept on failure.
    request_file: Option<String>,
    result_file: Option<String>,
}

/// The worker request of a case (the timed run, or with `profile` set, its profiling pass).
fn worker_request(p: &PlannedCase) -> WorkerRequest {
    let r = &p.resolved;
    WorkerRequest {
        schema: WORKER_REQUEST_SCHEMA.into(),
        operation: r.operation.clone(),
        runtime: r.runtime.value.clone(),
        bundle: p.bundle.as_ref().map(|b| b.path.clone()),
        manifest_dir: Some(p.profile.dir().to_path_buf()),
        tokenizer: p.profile.tokenizer.clone(),
        request: r
            .request
            .iter()
            .map(|(k, v)| (k.clone(), v.value.clone()))
            .collect(),
        runtime_settings: r.runtime_values(),
        warmup: r.measure.warmup.value,
        iterations: r.measure.iterations.value,
        min_duration_s: r.measure.min_duration_s.value,
        profile: None,
    }
}

/// Starts the worker on `request` and returns its ok result, or an error naming what happened.
fn launch_worker(
    request: &WorkerRequest,
    dir: &Path,
    files: (&str, &str, &str),
    timeout_s: f64,
    telemetry: bool,
    worker: &Path,
) -> (Result<WorkerResult, String>, Option<launch::Telemetry>) {
    let (request_file, result_file, log_file) = files;
    let request_path = dir.join(request_file);
    let result_path = dir.join(result_file);
    if let Err(e) = write_json_atomic(&request_path, request) {
        return (Err(format!("cannot write {request_file}: {e}")), None);
    }
    let (outcome, samples) = launch::run(&Launch {
        worker,
        request: &request_path,
        result: &result_path,
        log: &dir.join(log_file),
        timeout: Duration::from_secs_f64(timeout_s.max(0.001)),
        telemetry,
    });
    let result = match outcome {
        Outcome::SpawnFailed(m) => Err(m),
        Outcome::TimedOut => Err(format!(
            "the worker did not finish within {timeout_s:.0} s and was killed (raise --timeout, or lower --iterations; see {log_file})"
        )),
        Outcome::Exited {
            status,
            result,
            result_error,
        } => match result {
            Some(res) if res.status == WorkerStatus::Ok && status.success() => Ok(res),
            Some(res) => Err(res.error.unwrap_or_else(|| launch::describe_exit(&status))),
            None => Err(format!(
                "{} without writing a result{} (see {log_file})",
                launch::describe_exit(&status),
                result_error.map(|e| format!("; {e}")).unwrap_or_default(),
            )),
        },
    };
    (result, samples)
}

/// The timed run in the worker process.
fn measure_in_worker(
    p: &PlannedCase,
    dir: &Path,
    dir_name: &str,
    options: &RunOptions,
) -> Measured {
    let request = worker_request(p);
    let (result, telemetry) = launch_worker(
        &request,
        dir,
        (WORKER_REQUEST_FILE, WORKER_RESULT_FILE, WORKER_LOG),
        p.resolved.measure.timeout_s.value,
        options.telemetry,
        &options.worker,
    );
    let mut m = Measured {
        log: Some(WORKER_LOG.into()),
        request_file: Some(WORKER_REQUEST_FILE.into()),
        result_file: Some(WORKER_RESULT_FILE.into()),
        ..Default::default()
    };
    if let Some(t) = telemetry {
        match write_json_atomic(&dir.join(TELEMETRY_FILE), &t) {
            Ok(()) => m.telemetry = Some(format!("{dir_name}/{TELEMETRY_FILE}")),
            Err(e) => m.error = Some(format!("cannot write {TELEMETRY_FILE}: {e}")),
        }
    }
    match result {
        Ok(res) => {
            // What the last call produced (transcript, generated text, ranking): evidence, not metrics.
            if !res.notes.is_empty() {
                let doc = serde_json::json!({"schema": CALL_NOTES_SCHEMA, "notes": res.notes});
                if let Err(e) = write_json_atomic(&dir.join(CALL_NOTES_FILE), &doc) {
                    m.error = Some(format!("cannot write {CALL_NOTES_FILE}: {e}"));
                }
            }
            m.observations = res.observations;
            m.load_ms = res.load_ms;
            m.runtime = Some(res.runtime);
        }
        Err(e) => m.error = m.error.take().or(Some(e)),
    }
    m
}

/// The request a self-timed runtime gets for a case.
fn self_timed_request<'a>(
    p: &'a PlannedCase,
    manifest: &'a BundleManifest,
    bundle_dir: &'a Path,
    settings: &'a BTreeMap<String, Value>,
    dir: &'a Path,
) -> SelfTimedRequest<'a> {
    let r = &p.resolved;
    SelfTimedRequest {
        bundle_dir,
        manifest,
        operation: &r.operation,
        settings,
        warmup: r.measure.warmup.value,
        iterations: r.measure.iterations.value,
        min_duration_s: r.measure.min_duration_s.value,
        timeout: Duration::from_secs_f64(r.measure.timeout_s.value.max(0.001)),
        case_dir: dir,
    }
}

/// The bundle directory and manifest of a case, for a self-timed runtime.
fn bundle_of(p: &PlannedCase) -> Result<(PathBuf, BundleManifest), String> {
    let plan = p.bundle.as_ref().ok_or_else(|| {
        format!(
            "runtime `{}` needs a model bundle; model `{}` has none",
            p.resolved.runtime.value, p.profile.name
        )
    })?;
    let manifest = BundleManifest::read(&plan.path)?;
    Ok((plan.path.clone(), manifest))
}

/// The timed run of a runtime whose own tool owns the loop (trtexec), in the runtime's child process.
fn measure_self_timed(timer: &dyn SelfTimed, p: &PlannedCase, dir: &Path) -> Measured {
    let mut m = Measured::default();
    let (bundle_dir, manifest) = match bundle_of(p) {
        Ok(b) => b,
        Err(e) => {
            m.error = Some(e);
            return m;
        }
    };
    let settings = p.resolved.runtime_values();
    let request = self_timed_request(p, &manifest, &bundle_dir, &settings, dir);
    match timer.time(&request) {
        Ok(run) => {
            m.log = Some(timer.time_log().into());
            m.observations = run.observations;
            m.runtime = Some(manifest.runtime.clone());
            let notes = dir.join(SELF_TIMED_NOTES_FILE);
            let doc = serde_json::json!({
                "schema": SELF_TIMED_NOTES_SCHEMA,
                "runtime": manifest.runtime,
                "files": run.files,
                "notes": run.notes,
            });
            if let Err(e) = write_json_atomic(&notes, &doc) {
                m.error = Some(format!("cannot write {SELF_TIMED_NOTES_FILE}: {e}"));
            }
        }
        Err(e) => {
            m.error = Some(format!("{e:#}"));
            m.log = Some(timer.time_log().into());
        }
    }
    m
}

fn profile_failed(iterations: u64, error: String, log: Option<String>) -> CaseProfile {
    CaseProfile {
        status: CaseStatus::Failed,
        error: Some(error),
        iterations,
        layer_info: None,
        layer_profile: None,
        log,
    }
}

/// The profiling pass of a worker runtime: a second worker invocation after the timed run.
fn profile_in_worker(
    p: &PlannedCase,
    dir: &Path,
    dir_name: &str,
    options: &RunOptions,
    iterations: u64,
) -> CaseProfile {
    let rel = |f: &str| format!("{dir_name}/{f}");
    let mut request = worker_request(p);
    request.profile = Some(ProfilePass {
        dir: dir.to_path_buf(),
        iterations,
    });
    let (result, _) = launch_worker(
        &request,
        dir,
        (PROFILE_REQUEST_FILE, PROFILE_RESULT_FILE, PROFILE_LOG),
        p.resolved.measure.timeout_s.value,
        false,
        &options.worker,
    );
    let log = Some(rel(PROFILE_LOG));
    let res = match result {
        Ok(res) => res,
        Err(e) => {
            return profile_failed(iterations, format!("per-layer profiling failed: {e}"), log);
        }
    };
    let file = |key: &str| {
        res.notes
            .get(key)
            .and_then(Value::as_str)
            .filter(|f| dir.join(f).is_file())
            .map(rel)
    };
    match (file("layer_info"), file("layer_profile")) {
        (Some(layer_info), Some(layer_profile)) => {
            let _ = std::fs::remove_file(dir.join(PROFILE_REQUEST_FILE));
            let _ = std::fs::remove_file(dir.join(PROFILE_RESULT_FILE));
            CaseProfile {
                status: CaseStatus::Completed,
                error: None,
                iterations,
                layer_info: Some(layer_info),
                layer_profile: Some(layer_profile),
                log,
            }
        }
        _ => profile_failed(
            iterations,
            "per-layer profiling passed but its layer or profile file is missing".into(),
            log,
        ),
    }
}

/// The profiling pass of a self-timed runtime: its tool's own separate profiling run.
fn profile_self_timed(
    timer: &dyn SelfTimed,
    p: &PlannedCase,
    dir: &Path,
    dir_name: &str,
    iterations: u64,
) -> CaseProfile {
    let rel = |f: &Path| {
        f.file_name()
            .map(|n| format!("{dir_name}/{}", n.to_string_lossy()))
    };
    let (bundle_dir, manifest) = match bundle_of(p) {
        Ok(b) => b,
        Err(e) => return profile_failed(iterations, e, None),
    };
    let settings = p.resolved.runtime_values();
    let request = self_timed_request(p, &manifest, &bundle_dir, &settings, dir);
    let log_path = dir.join(timer.profile_log());
    let outcome = timer.profile(&request, iterations);
    let log = log_path.exists().then(|| rel(&log_path)).flatten();
    match outcome {
        Ok(files) => CaseProfile {
            status: CaseStatus::Completed,
            error: None,
            iterations,
            layer_info: rel(&files.layer_info),
            layer_profile: rel(&files.profile),
            log,
        },
        Err(e) => profile_failed(
            iterations,
            format!("per-layer profiling failed: {e:#}"),
            log,
        ),
    }
}

fn write_observations(path: &Path, observations: &[Observation]) -> Result<(), String> {
    let mut text = String::with_capacity(observations.len() * 96);
    for o in observations {
        text.push_str(&serde_json::to_string(o).map_err(|e| e.to_string())?);
        text.push('\n');
    }
    trtmc_core::fsutil::write_atomic(path, text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// `NNN-<model>-<case>` plus the sweep point, reduced to safe file-name characters.
pub fn case_dir_name(index: usize, model: &str, r: &ResolvedCase) -> String {
    let mut name = format!("{index:03}-{model}-{}", r.case);
    for (k, v) in &r.sweep_point {
        let short = k.rsplit('.').next().unwrap_or(k);
        name.push_str(&format!("-{short}-{v}"));
    }
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn timestamped_dir(parent: &Path) -> PathBuf {
    let stamp = jiff::ZonedDateTime::now()
        .strftime("%Y%m%d-%H%M%S")
        .to_string();
    let mut candidate = parent.join(format!("run-{stamp}"));
    let mut n = 2;
    while std::fs::symlink_metadata(&candidate).is_ok() {
        candidate = parent.join(format!("run-{stamp}-{n}"));
        n += 1;
    }
    candidate
}

fn run_id() -> String {
    let now = jiff::Timestamp::now();
    format!("{}-{}", now.as_second(), std::process::id())
}

/// Describes the plan for `--dry-run`: one line per case with its bundle decision and cache path.
pub fn describe_plan(planned: &[PlannedCase]) -> Vec<String> {
    planned
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let bundle = match &p.bundle {
                None => "no model".to_string(),
                Some(b) => {
                    let how = match b.origin {
                        BundleOrigin::Explicit => "explicit --bundle (not compatibility-verified)",
                        BundleOrigin::BundleRoot => "found below --bundle-root",
                        BundleOrigin::CacheHit => "cache hit",
                        BundleOrigin::Built if b.needs_build => "would build",
                        BundleOrigin::Built => "cached",
                        BundleOrigin::None => "none",
                    };
                    format!("{how}: {}", b.path.display())
                }
            };
            let r = &p.resolved;
            format!(
                "{:03} {} {} op={} runtime={} warmup={} iterations={} bundle {bundle}",
                i + 1,
                p.profile.name,
                r.label,
                r.operation,
                r.runtime.value,
                r.measure.warmup.value,
                r.measure.iterations.value
            )
        })
        .collect()
}
