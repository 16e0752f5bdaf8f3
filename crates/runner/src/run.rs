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
    BENCHMARK_RUN_SCHEMA, BenchmarkRun, BundleOrigin, BundleRef, CaseFiles, CaseResult, CaseStatus,
    MeasurementInfo, Observation, PUBLIC_PIPELINE_CALL_WALL, Provenance, RuntimeInfo, reduce,
};
use trtmc_core::stats::PERCENTILE_METHOD;
use trtmc_runtime::protocol::{WORKER_REQUEST_SCHEMA, WorkerRequest, WorkerStatus};
use trtmc_runtime::runtime;

use crate::bundles::{self, BundleError, BundleOptions, BundlePlan};
use crate::launch::{self, Launch, Outcome};

pub const RESULT_FILE: &str = "result.json";
pub const REPORT_FILE: &str = "report.html";
pub const RESOLVED_CASE_FILE: &str = "resolved-case.json";
pub const OBSERVATIONS_FILE: &str = "observations.jsonl";
pub const WORKER_LOG: &str = "worker.log";
pub const WORKER_REQUEST_FILE: &str = "worker-request.json";
pub const WORKER_RESULT_FILE: &str = "worker-result.json";
pub const TELEMETRY_FILE: &str = "telemetry.json";

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
}

/// Errors that stop a run before any case is measured, by exit-code class.
#[derive(Debug, Clone, PartialEq)]
pub enum RunError {
    Input(String),
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
                let rt = runtime::runtime(&resolved.runtime.value).map_err(RunError::Input)?;
                rt.availability().map_err(RunError::Input)?;
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
                planned.push(PlannedCase {
                    profile: profile.clone(),
                    resolved,
                    bundle,
                });
            }
        }
    }
    Ok(planned)
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
        timing_boundary: PUBLIC_PIPELINE_CALL_WALL.into(),
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
        let rt = runtime::runtime(&p.resolved.runtime.value).map_err(RunError::Input)?;
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
    let rt_info = match &bundle_ref {
        Some(b) => b.runtime.clone(),
        None => runtime::runtime(&r.runtime.value)
            .map(|rt| RuntimeInfo {
                name: rt.name().into(),
                version: rt.version(),
            })
            .unwrap_or(RuntimeInfo {
                name: r.runtime.value.clone(),
                version: "unknown".into(),
            }),
    };
    let request = WorkerRequest {
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
    };
    let request_path = dir.join(WORKER_REQUEST_FILE);
    let result_path = dir.join(WORKER_RESULT_FILE);
    write_json_atomic(&request_path, &request)
        .map_err(|e| format!("cannot write {WORKER_REQUEST_FILE}: {e}"))?;
    let log_path = dir.join(WORKER_LOG);
    let (outcome, telemetry) = launch::run(&Launch {
        worker: &options.worker,
        request: &request_path,
        result: &result_path,
        log: &log_path,
        timeout: Duration::from_secs_f64(r.measure.timeout_s.value.max(0.001)),
        telemetry: options.telemetry,
    });
    let telemetry_file = match telemetry {
        Some(t) => {
            write_json_atomic(&dir.join(TELEMETRY_FILE), &t)
                .map_err(|e| format!("cannot write {TELEMETRY_FILE}: {e}"))?;
            Some(rel(TELEMETRY_FILE))
        }
        None => None,
    };

    let mut error: Option<String> = None;
    let mut observations = Vec::new();
    let mut load_ms = None;
    let mut runtime_info = rt_info;
    match outcome {
        Outcome::SpawnFailed(m) => error = Some(m),
        Outcome::TimedOut => {
            error = Some(format!(
                "the worker did not finish within {:.0} s and was killed (raise --timeout, or lower --iterations; see {})",
                r.measure.timeout_s.value,
                rel(WORKER_LOG)
            ))
        }
        Outcome::Exited {
            status,
            result,
            result_error,
        } => match result {
            Some(res) if res.status == WorkerStatus::Ok && status.success() => {
                observations = res.observations;
                load_ms = res.load_ms;
                runtime_info = res.runtime;
            }
            Some(res) => error = Some(res.error.unwrap_or_else(|| launch::describe_exit(&status))),
            None => {
                error = Some(format!(
                    "{} without writing a result{} (see {})",
                    launch::describe_exit(&status),
                    result_error.map(|e| format!("; {e}")).unwrap_or_default(),
                    rel(WORKER_LOG)
                ))
            }
        },
    }
    let expected = r.measure.iterations.value as usize;
    if error.is_none() && observations.len() < expected {
        error = Some(format!(
            "the worker returned {} observations, {expected} were requested",
            observations.len()
        ));
    }

    let op = operations::operation(&r.operation)
        .ok_or_else(|| format!("unknown operation `{}`", r.operation))?;
    let (status, metrics, files) = if let Some(_) = &error {
        let worker_result = result_path.exists().then(|| rel(WORKER_RESULT_FILE));
        (
            CaseStatus::Failed,
            None,
            CaseFiles {
                resolved_case: rel(RESOLVED_CASE_FILE),
                observations: None,
                worker_log: Some(rel(WORKER_LOG)),
                telemetry: telemetry_file,
                worker_request: Some(rel(WORKER_REQUEST_FILE)),
                worker_result,
            },
        )
    } else {
        write_observations(&dir.join(OBSERVATIONS_FILE), &observations)?;
        let _ = std::fs::remove_file(&request_path);
        let _ = std::fs::remove_file(&result_path);
        (
            CaseStatus::Completed,
            reduce(op, &observations),
            CaseFiles {
                resolved_case: rel(RESOLVED_CASE_FILE),
                observations: Some(rel(OBSERVATIONS_FILE)),
                worker_log: Some(rel(WORKER_LOG)),
                telemetry: telemetry_file,
                worker_request: None,
                worker_result: None,
            },
        )
    };
    let result = CaseResult {
        dir: dir_name,
        model: p.profile.name.clone(),
        case: r.case.clone(),
        label: r.label.clone(),
        task_strategy: r.task_strategy.clone(),
        operation: r.operation.clone(),
        runtime: runtime_info,
        status,
        error,
        identity: r.identity.clone(),
        bundle: bundle_ref,
        measurement: MeasurementInfo {
            warmup: r.measure.warmup.value,
            iterations: r.measure.iterations.value,
            min_duration_s: r.measure.min_duration_s.value,
            observations: observations.len() as u64,
            load_ms,
        },
        metrics,
        sweep_point: r.sweep_point.clone(),
        request: r
            .request
            .iter()
            .map(|(k, v)| (k.clone(), v.value.clone()))
            .collect::<BTreeMap<String, Value>>(),
        files,
    };
    Ok((result, observations))
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
