//! One row of the matrix: the candidate through `trtmc-bench run`, the reference in its own process
//! (the Python runner, or `trtmc-bench run` for a `trtmc:` backend), the contract checks and the light.
//!
//! Every side is a leaf command whose argv is recorded. Each attempt works in a fresh directory; the row
//! result file is written last and atomically, so a killed attempt leaves no result and is re-run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::{Value, json};
use trtmc_core::artifacts::{BENCHMARK_RUN_SCHEMA, BenchmarkRun, CaseStatus, Observation};
use trtmc_core::case::{RESOLVED_CASE_SCHEMA, ResolvedCase};
use trtmc_core::catalog::Catalog;
use trtmc_core::intervals;
use trtmc_core::test_hooks::{CALL_DELAY_ENV, CALL_SLOWDOWN_ENV, SLOW_NODE_ENV, TestHooks};
use trtmc_runner::args::{RunArgs, TelemetryMode};
use trtmc_runner::bundles::BundleOptions;
use trtmc_runner::compare::{self, ReferencePreparation, ReferenceSettings};
use trtmc_runner::progress::Silent;
use trtmc_runner::run::{RunError, Selection};
use trtmc_runtime::reference::{REFERENCE_RESULT_SCHEMA, ReferenceResult};

use crate::lights::{self, StopReason};
use crate::plan::{Plan, PlannedRow};
use crate::suite::{ORT_PYTHON, TRTMC_PREFIX};

/// The row document's types live with every other document in `trtmc_core::artifacts`.
pub use trtmc_core::artifacts::matrix::{
    LeafCommand, Preparation, ROW_SCHEMA, RowResult, RowStatus, Side,
};

/// Where the row results of a run are kept, one file per row.
pub(crate) fn rows_dir(run: &Path) -> PathBuf {
    run.join("rows")
}

/// The result file of row `index`.
pub(crate) fn row_file(run: &Path, index: usize) -> PathBuf {
    rows_dir(run).join(format!("{index:03}.json"))
}

/// Reads a row result; `None` when absent or unreadable (treated as not done).
pub fn read_row(run: &Path, index: usize) -> Option<RowResult> {
    let bytes = std::fs::read(row_file(run, index)).ok()?;
    serde_json::from_slice::<RowResult>(&bytes)
        .ok()
        .filter(|r| r.schema == ROW_SCHEMA && r.index == index)
}

/// Why a step of a row failed: the row is recorded as failed with this message.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RowError {
    /// A directory or log file of the attempt could not be created.
    #[error("cannot create {}: {source}", path.display())]
    Create {
        /// The directory or file.
        path: PathBuf,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// Every `attempt-K` name is taken.
    #[error("no free attempt directory")]
    NoFreeAttempt,
    /// A log file could not be opened a second time (for standard error).
    #[error("cannot open {}: {source}", path.display())]
    Open {
        /// The log file.
        path: PathBuf,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// A leaf command could not be started.
    #[error("cannot start `{program}`: {source}")]
    Start {
        /// The program.
        program: String,
        /// Why it could not start.
        source: std::io::Error,
    },
    /// A leaf command ended unsuccessfully. The cause first (the end of the log: the command's own
    /// error line), so the row's summary line leads with it; the command and its log after.
    #[error(
        "{tail} (`{command}` exited with {}; log: {})",
        code.map_or("a signal".into(), |c| format!("code {c}")),
        log.display()
    )]
    Leaf {
        /// The last non-empty lines of the log, `|`-joined.
        tail: String,
        /// The command, as a shell line.
        command: String,
        /// Its exit code; `None`: ended by a signal.
        code: Option<i32>,
        /// Its log, relative to the run directory.
        log: PathBuf,
    },
    /// A file of a leaf cannot be read.
    #[error("cannot read {}: {source}", file.display())]
    Read {
        /// The file, relative to the run directory.
        file: PathBuf,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// A file of a leaf cannot be written.
    #[error("cannot write {}: {source}", file.display())]
    Write {
        /// The file, relative to the run directory.
        file: PathBuf,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// A JSON document of a leaf does not parse as its type.
    #[error("{} is not a valid {schema} document: {source}", file.display())]
    NotADocument {
        /// The file, relative to the run directory.
        file: PathBuf,
        /// The schema it should have.
        schema: String,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// A document of another schema.
    #[error("{} has schema `{found}`, not `{expected}`", file.display())]
    Schema {
        /// The file, relative to the run directory.
        file: PathBuf,
        /// The schema it has.
        found: String,
        /// The schema it should have.
        expected: &'static str,
    },
    /// A benchmark run without a timing boundary.
    #[error("{} has an empty timing_boundary", file.display())]
    NoBoundary {
        /// The result file, relative to the run directory.
        file: PathBuf,
    },
    /// A benchmark run without a case.
    #[error("{} has no case", file.display())]
    NoCase {
        /// The result file, relative to the run directory.
        file: PathBuf,
    },
    /// The side's case did not complete.
    #[error("the case failed: {error}")]
    CaseFailed {
        /// The case's error, empty when none was recorded.
        error: String,
    },
    /// A case without a workload identity.
    #[error("{} has an empty identity in cases[0]", file.display())]
    NoIdentity {
        /// The result file, relative to the run directory.
        file: PathBuf,
    },
    /// A case that names no observations file.
    #[error("{} names no observations file in cases[0].files", file.display())]
    NoObservationsFile {
        /// The result file, relative to the run directory.
        file: PathBuf,
    },
    /// The observations of a side cannot be read.
    #[error("cannot read the observations of {}: {source}", dir.display())]
    ReadObservations {
        /// The side's output folder, relative to the run directory.
        dir: PathBuf,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// An observation line that does not parse.
    #[error("{} holds a bad observation: {source}", dir.display())]
    BadObservation {
        /// The side's output folder, relative to the run directory.
        dir: PathBuf,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// The candidate generated another number of tokens than the reference.
    #[error(
        "output token count differs: the candidate generated {candidate} tokens in call {call}, the reference {reference} per call (not the same workload)"
    )]
    OutputTokens {
        /// The candidate's tokens in that call.
        candidate: u64,
        /// The call.
        call: u64,
        /// The reference's tokens per call.
        reference: u64,
    },
}

/// A fresh attempt directory `rows/NNN/attempt-K`.
fn attempt_dir(run: &Path, index: usize) -> Result<PathBuf, RowError> {
    let base = rows_dir(run).join(format!("{index:03}"));
    std::fs::create_dir_all(&base).map_err(|source| RowError::Create {
        path: base.clone(),
        source,
    })?;
    for k in 1.. {
        let dir = base.join(format!("attempt-{k}"));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(source) => return Err(RowError::Create { path: dir, source }),
        }
    }
    Err(RowError::NoFreeAttempt)
}

pub(crate) struct Ctx<'a> {
    run: &'a Path,
    pub(crate) dir: PathBuf,
    commands: Vec<LeafCommand>,
}

impl Ctx<'_> {
    pub(crate) fn rel(&self, p: &Path) -> String {
        p.strip_prefix(self.run)
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned()
    }

    /// Runs a leaf command with its output in `log`, records it, and returns an error naming it on
    /// failure.
    pub(crate) fn leaf(
        &mut self,
        argv: Vec<String>,
        env: BTreeMap<String, String>,
        log: &str,
    ) -> Result<(), RowError> {
        let log_path = self.dir.join(log);
        let file = std::fs::File::create(&log_path).map_err(|source| RowError::Create {
            path: log_path.clone(),
            source,
        })?;
        let err = file.try_clone().map_err(|source| RowError::Open {
            path: log_path.clone(),
            source,
        })?;
        let started = Instant::now();
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]).envs(&env).stdout(file).stderr(err);
        if argv
            .get(1)
            .is_some_and(|a| a == "run" || a.ends_with(REFERENCE_SCRIPT))
        {
            // A `trtmc-bench run` leaf and a Python reference runner stop when this process ends,
            // however it ends (not recorded in the row's argv: it is how the matrix runs the
            // command, not part of it).
            cmd.arg("--parent-pipe");
        }
        // The delay hooks reach only the leaf they are meant for.
        for hook in [CALL_DELAY_ENV, CALL_SLOWDOWN_ENV, SLOW_NODE_ENV] {
            if !env.contains_key(hook) {
                cmd.env_remove(hook);
            }
        }
        let status = run_leaf(&mut cmd);
        let seconds = started.elapsed().as_secs_f64();
        let exit_code = status.as_ref().ok().and_then(|s| s.code());
        self.commands.push(LeafCommand {
            argv: argv.clone(),
            env,
            exit_code,
            seconds,
        });
        match status {
            Ok(s) if s.success() => Ok(()),
            Ok(s) => Err(RowError::Leaf {
                tail: tail(&log_path),
                command: trtmc_core::text::shell_line(&argv),
                code: s.code(),
                log: self.rel(&log_path).into(),
            }),
            Err(source) => Err(RowError::Start {
                program: argv[0].clone(),
                source,
            }),
        }
    }
}

/// Runs a leaf with standard input a pipe this process holds until the leaf ends (its liveness pipe,
/// see `run --parent-pipe`). A stop asked of the matrix (Ctrl-C, SIGTERM, SIGHUP) is passed on as
/// SIGTERM, so the leaf stops gracefully and the matrix can end with the row still pending.
fn run_leaf(cmd: &mut Command) -> std::io::Result<std::process::ExitStatus> {
    let mut child = cmd.stdin(std::process::Stdio::piped()).spawn()?;
    let _pipe = child.stdin.take();
    let mut asked = false;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if !asked && trtmc_runner::interrupt::requested() {
            asked = true;
            let pid = rustix::process::Pid::from_child(&child);
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

/// A row's overrides as `run`'s `--set KEY=VALUE` values (a string without its JSON quotes).
fn set_values(set: &BTreeMap<String, Value>) -> Vec<String> {
    set.iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect()
}

/// `trtmc-bench run` of one side into `out`.
pub(crate) fn run_argv(
    plan: &Plan,
    pr: &PlannedRow,
    runtime: &str,
    set: &BTreeMap<String, Value>,
    trtexec: Option<&Path>,
    iterations: u64,
    out: &Path,
) -> Vec<String> {
    let env = &plan.environment;
    let args = RunArgs {
        manifest_root: Some(plan.catalog_root.clone()),
        models: vec![pr.row.model.clone()],
        cases: vec![pr.row.testcase.clone()],
        runtimes: vec![runtime.to_string()],
        warmup: Some(pr.warmup),
        iterations: Some(iterations),
        telemetry: TelemetryMode::Off,
        bundle_cache: Some(env.bundle_cache.clone()),
        bundle_roots: env.bundle_roots.clone(),
        runtime_dirs: env.runtime_dirs.clone(),
        trtexec: trtexec.map(Path::to_path_buf),
        sets: set_values(set),
        output: Some(out.to_path_buf()),
        inputs: pr.row.inputs.iter().cloned().collect(),
        check_outputs: pr.row.check_outputs.iter().cloned().collect(),
        atol: pr.row.atol.unwrap_or(trtmc_core::data::DEFAULT_ATOL),
        rtol: pr.row.rtol.unwrap_or(trtmc_core::data::DEFAULT_RTOL),
        ..RunArgs::default()
    };
    let mut argv = vec![plan.exe.to_string_lossy().into_owned(), "run".into()];
    argv.extend(args.to_argv());
    argv
}

/// Reads a JSON document of `trtmc-bench run` through its type: a missing or renamed field is an error
/// naming the file and the field, never a default that would compare equal on both sides.
pub(crate) fn read_typed<T: serde::de::DeserializeOwned>(
    ctx: &Ctx<'_>,
    path: &Path,
    schema: &str,
) -> Result<T, RowError> {
    let bytes = std::fs::read(path).map_err(|source| RowError::Read {
        file: ctx.rel(path).into(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| RowError::NotADocument {
        file: ctx.rel(path).into(),
        schema: schema.to_string(),
        source,
    })
}

/// The side measured by `trtmc-bench run` in `out`.
fn read_run_side(
    ctx: &Ctx<'_>,
    backend: &str,
    out: &Path,
) -> Result<(Side, Option<(String, String)>), RowError> {
    let result = out.join("result.json");
    let doc: BenchmarkRun = read_typed(ctx, &result, BENCHMARK_RUN_SCHEMA)?;
    if doc.schema != BENCHMARK_RUN_SCHEMA {
        return Err(RowError::Schema {
            file: ctx.rel(&result).into(),
            found: doc.schema.clone(),
            expected: BENCHMARK_RUN_SCHEMA,
        });
    }
    // The contract compares these two: an empty one would match another empty one.
    if doc.timing_boundary.is_empty() {
        return Err(RowError::NoBoundary {
            file: ctx.rel(&result).into(),
        });
    }
    let case = doc.cases.first().ok_or_else(|| RowError::NoCase {
        file: ctx.rel(&result).into(),
    })?;
    if case.status != CaseStatus::Completed {
        return Err(RowError::CaseFailed {
            error: case.error.clone().unwrap_or_default(),
        });
    }
    if case.identity.is_empty() {
        return Err(RowError::NoIdentity {
            file: ctx.rel(&result).into(),
        });
    }
    let obs_rel =
        case.files
            .observations
            .as_deref()
            .ok_or_else(|| RowError::NoObservationsFile {
                file: ctx.rel(&result).into(),
            })?;
    let text = std::fs::read_to_string(out.join(obs_rel)).map_err(|source| {
        RowError::ReadObservations {
            dir: ctx.rel(out).into(),
            source,
        }
    })?;
    let mut samples = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let o: Observation =
            serde_json::from_str(line).map_err(|source| RowError::BadObservation {
                dir: ctx.rel(out).into(),
                source,
            })?;
        samples.push(o.wall_ns as f64 / 1e6);
    }
    let bundle = case.bundle.as_ref().map(|b| {
        let origin = serde_json::to_value(b.origin)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        (b.path.clone(), origin)
    });
    // What the side ran at: the resolved model precision of its case.
    let resolved: ResolvedCase = read_typed(
        ctx,
        &out.join(&case.files.resolved_case),
        RESOLVED_CASE_SCHEMA,
    )?;
    let precision = resolved
        .build
        .get("precision")
        .and_then(|p| p.value.as_str())
        .map(str::to_string);
    Ok((
        Side {
            backend: backend.into(),
            runtime: case.runtime.name.clone(),
            version: case.runtime.version.clone(),
            boundary: doc.timing_boundary.clone(),
            identity: case.identity.clone(),
            precision,
            samples_ms: samples,
            round_p50_ms: Vec::new(),
            result_file: ctx.rel(&result),
        },
        bundle,
    ))
}

/// Row `pr`'s result before anything ran: failed, with no message, settings, host or finish time.
pub(crate) fn failed_row(
    plan: &Plan,
    pr: &PlannedRow,
    slurm_task: Option<String>,
    started: String,
) -> RowResult {
    RowResult {
        schema: ROW_SCHEMA.into(),
        index: pr.index,
        id: pr.id.clone(),
        entry: pr.row.entry.clone(),
        model: pr.row.model.clone(),
        testcase: pr.row.testcase.clone(),
        status: RowStatus::Failed,
        message: None,
        comparison: None,
        candidate: None,
        reference: None,
        resolved_settings: BTreeMap::new(),
        commands: Vec::new(),
        preparation: None,
        round_loads: Vec::new(),
        explanation: None,
        attempt_dir: String::new(),
        executor: plan.executor.clone(),
        slurm_task,
        host: String::new(),
        started,
        finished: String::new(),
    }
}

/// Runs row `pr` of `plan` in the run directory `run` and returns its result (not yet written).
pub fn execute(
    plan: &Plan,
    pr: &PlannedRow,
    run: &Path,
    slurm_task: Option<String>,
    test_hooks: &TestHooks,
) -> RowResult {
    let started = jiff::Timestamp::now().to_string();
    let mut result = failed_row(plan, pr, slurm_task, started);
    result.resolved_settings = BTreeMap::from([
        ("baseline_precision".into(), json!(pr.baseline_precision)),
        (
            "baseline_precision_source".into(),
            json!(pr.baseline_precision_source),
        ),
        ("warmup".into(), json!(pr.warmup)),
        ("iterations".into(), json!(pr.iterations)),
        (
            "reference_threads".into(),
            json!(plan.environment.reference_threads),
        ),
    ]);
    result.host = trtmc_core::machine::machine().hostname;
    let dir = match attempt_dir(run, pr.index) {
        Ok(d) => d,
        Err(e) => {
            result.message = Some(e.to_string());
            result.finished = jiff::Timestamp::now().to_string();
            return result;
        }
    };
    let mut ctx = Ctx {
        run,
        dir: dir.clone(),
        commands: Vec::new(),
    };
    result.attempt_dir = ctx.rel(&dir);
    let outcome = measure(plan, pr, &mut ctx, &mut result, test_hooks);
    result.commands = std::mem::take(&mut ctx.commands);
    match outcome {
        Ok(()) => {}
        Err((status, message)) => {
            result.status = status;
            result.message = Some(message);
        }
    }
    result.finished = jiff::Timestamp::now().to_string();
    result
}

type Outcome = Result<(), (RowStatus, String)>;

fn failed(m: impl std::fmt::Display) -> (RowStatus, String) {
    (RowStatus::Failed, m.to_string())
}

fn measure(
    plan: &Plan,
    pr: &PlannedRow,
    ctx: &mut Ctx<'_>,
    result: &mut RowResult,
    test_hooks: &TestHooks,
) -> Outcome {
    let row = &pr.row;
    let rounds = pr.rounds.max(1);
    let per_round = pr.iterations.div_ceil(rounds);
    let mut env = BTreeMap::new();
    // Test hook: the candidate's `run` (under the same TRTMC_TEST=1) hands it to its worker.
    if let Some(us) = &test_hooks.matrix_candidate_delay_us {
        env.insert(CALL_DELAY_ENV.to_string(), us.clone());
    }
    if let Some(fraction) = &test_hooks.matrix_candidate_slowdown {
        env.insert(CALL_SLOWDOWN_ENV.to_string(), fraction.clone());
    }
    if let Some(slow) = &test_hooks.matrix_candidate_slow_node {
        env.insert(SLOW_NODE_ENV.to_string(), slow.clone());
    }
    let backend = row.reference.backend.as_str();
    let python_request = if backend == ORT_PYTHON {
        Some(prepare_python_reference(
            plan, pr, per_round, ctx, test_hooks,
        )?)
    } else {
        None
    };
    let mut candidate: Option<Side> = None;
    let mut reference: Option<Side> = None;
    let (mut candidate_rounds, mut reference_rounds) = (Vec::new(), Vec::new());
    let t = &plan.suite.thresholds;
    let most = (pr.max_rounds.max(rounds)) as usize;
    // A row that may add rounds looks at its interval on a fixed schedule, the error split between the
    // looks (docs/statistics.md, *Sequential rounds*); one without looks once, at the full confidence.
    let looks = intervals::Looks::plan(rounds as usize, most, t.confidence);
    result
        .resolved_settings
        .insert("rounds".into(), json!(rounds));
    result
        .resolved_settings
        .insert("looks".into(), json!(looks.at));
    if let Some(s) = pr.max_seconds {
        result
            .resolved_settings
            .insert("max_seconds".into(), json!(s));
    }
    let started = Instant::now();
    let mut k = 0usize;
    let mut at_look: Option<lights::Comparison> = None;
    let stopped_by = loop {
        k += 1;
        if let Some(load) = load_average() {
            result.round_loads.push(load);
        }
        let suffix = if most == 1 {
            String::new()
        } else {
            format!("-{k}")
        };
        // Candidate and reference alternate, and so does who goes first in a round (C R, R C, …): a
        // side that always ran second would always meet what the first left behind (caches, clocks).
        let out = ctx.dir.join(format!("candidate{suffix}"));
        let mut candidate_side = None;
        let mut reference_side = None;
        let candidate_first = k % 2 == 1;
        for turn in 0..2 {
            if (turn == 0) == candidate_first {
                let argv = run_argv(
                    plan,
                    pr,
                    &row.candidate.runtime,
                    &row.candidate.set,
                    row.candidate.trtexec.as_deref(),
                    per_round,
                    &out,
                );
                ctx.leaf(argv, env.clone(), &format!("candidate{suffix}.log"))
                    .map_err(failed)?;
                candidate_side =
                    Some(read_run_side(ctx, &row.candidate.runtime, &out).map_err(failed)?);
            } else {
                reference_side = Some(match &python_request {
                    Some(request) => run_python_reference(plan, pr, request, &suffix, ctx)?,
                    None => {
                        let rt = backend.trim_start_matches(TRTMC_PREFIX);
                        let out = ctx.dir.join(format!("reference{suffix}"));
                        let argv = run_argv(
                            plan,
                            pr,
                            rt,
                            &row.reference.set,
                            row.reference.trtexec.as_deref(),
                            per_round,
                            &out,
                        );
                        ctx.leaf(argv, BTreeMap::new(), &format!("reference{suffix}.log"))
                            .map_err(failed)?;
                        read_run_side(ctx, backend, &out).map_err(failed)?.0
                    }
                });
            }
        }
        let (Some((side, bundle)), Some(ref_side)) = (candidate_side, reference_side) else {
            return Err(failed("a round ran only one side"));
        };
        if python_request.is_some() {
            same_output_tokens(ctx, &out, &suffix).map_err(failed)?;
        }
        if k == 1 {
            result.preparation = Some(Preparation {
                model: model_path(plan, pr),
                bundle: bundle.as_ref().map(|b| b.0.clone()),
                origin: bundle.map_or("none".into(), |b| b.1),
            });
        }
        candidate_rounds.push(side.samples_ms.clone());
        merge(&mut candidate, side);
        result.candidate = candidate.clone();
        reference_rounds.push(ref_side.samples_ms.clone());
        merge(&mut reference, ref_side);
        result.reference = reference.clone();

        if !looks.is_look(k) {
            continue;
        }
        // A look: stop when the light is decided or the budget cannot pay for the next look.
        let Ok(cmp) = lights::compare(&candidate_rounds, &reference_rounds, t, looks.per_look)
        else {
            break None; // incomplete: the comparison below says why
        };
        let decided = !cmp.uncertain;
        at_look = Some(cmp);
        if decided {
            break Some(StopReason::Decided);
        }
        let Some(next) = looks.next(k) else {
            break Some(StopReason::MaxRounds);
        };
        if let Some(budget) = pr.max_seconds {
            let per_round_s = started.elapsed().as_secs_f64() / k as f64;
            if started.elapsed().as_secs_f64() + per_round_s * (next - k) as f64 > budget {
                break Some(StopReason::MaxSeconds);
            }
        }
    };
    let (Some(candidate), Some(reference)) = (candidate, reference) else {
        return Err(failed("no round ran"));
    };

    // Contracts: same workload, same boundary, the precision that was asked for.
    let mut mismatches = Vec::new();
    if candidate.identity != reference.identity {
        mismatches.push(format!(
            "workload identity differs (candidate {}, reference {})",
            short(&candidate.identity),
            short(&reference.identity)
        ));
    }
    if candidate.boundary != reference.boundary {
        mismatches.push(format!(
            "timing boundary differs (candidate `{}`, reference `{}`)",
            candidate.boundary, reference.boundary
        ));
    }
    if reference.precision.as_deref() != Some(pr.baseline_precision.as_str()) {
        mismatches.push(format!(
            "the reference ran at precision {}, baseline precision {} ({}) was requested",
            reference.precision.as_deref().unwrap_or("unknown"),
            pr.baseline_precision,
            pr.baseline_precision_source
        ));
    }
    if !mismatches.is_empty() {
        return Err((
            RowStatus::ContractMismatch,
            format!("contract mismatch: {}", mismatches.join("; ")),
        ));
    }
    let mut cmp = match at_look {
        Some(cmp) => cmp,
        None => lights::compare(&candidate_rounds, &reference_rounds, t, looks.per_look)
            .map_err(|e| (RowStatus::Incomplete, e.to_string()))?,
    };
    if looks.at.len() > 1 {
        cmp.stopped_by = stopped_by;
        if let Some(budget) = stopped_by.filter(|s| *s != StopReason::Decided) {
            let spent = match budget {
                StopReason::MaxSeconds => format!(
                    "max_seconds ({} s) would be passed by the next look at {} rounds",
                    pr.max_seconds.unwrap_or_default(),
                    looks.next(k).unwrap_or(k)
                ),
                _ => format!("max_rounds ({most}) ran out"),
            };
            cmp.note = format!("undecided after {k} rounds: {spent}; {}", cmp.note);
        }
    }
    let light = cmp.light;
    result.comparison = Some(cmp);
    result.status = RowStatus::Compared;
    // Outside the timed rounds: a yellow or red light says where the time went.
    if light != lights::Light::Green {
        result.explanation = Some(crate::explain::explain(
            plan,
            pr,
            ctx,
            crate::explain::SideRun {
                runtime: Some(&row.candidate.runtime),
                set: &row.candidate.set,
                trtexec: row.candidate.trtexec.as_deref(),
                env,
            },
            crate::explain::SideRun {
                runtime: Some(backend),
                set: &row.reference.set,
                trtexec: row.reference.trtexec.as_deref(),
                env: BTreeMap::new(),
            },
            python_request.as_ref().map(|p| p.request.as_path()),
            test_hooks.matrix_profile_fail_row.as_deref() == Some(pr.id.as_str()),
        ));
    }
    Ok(())
}

/// The output token count per call must be the same on both sides (generation: a reference that
/// stopped early or ran on would time another workload). Checked where the Python reference records
/// `output_tokens` in its notes and the candidate's observations count output tokens.
fn same_output_tokens(ctx: &Ctx<'_>, candidate_out: &Path, suffix: &str) -> Result<(), RowError> {
    let reference_path = ctx
        .dir
        .join("reference")
        .join(format!("reference-result{suffix}.json"));
    let reference: ReferenceResult = read_typed(ctx, &reference_path, REFERENCE_RESULT_SCHEMA)?;
    let Some(expected) = reference.notes.get("output_tokens").and_then(Value::as_u64) else {
        return Ok(());
    };
    let result: BenchmarkRun = read_typed(
        ctx,
        &candidate_out.join("result.json"),
        BENCHMARK_RUN_SCHEMA,
    )?;
    let Some(obs_rel) = result
        .cases
        .first()
        .and_then(|c| c.files.observations.clone())
    else {
        return Ok(());
    };
    let text = std::fs::read_to_string(candidate_out.join(obs_rel)).map_err(|source| {
        RowError::ReadObservations {
            dir: ctx.rel(candidate_out).into(),
            source,
        }
    })?;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let o: Observation =
            serde_json::from_str(line).map_err(|source| RowError::BadObservation {
                dir: ctx.rel(candidate_out).into(),
                source,
            })?;
        if let Some(n) = o.output_tokens.filter(|&n| n != expected) {
            return Err(RowError::OutputTokens {
                candidate: n,
                call: o.iteration,
                reference: expected,
            });
        }
    }
    Ok(())
}

/// The 1-minute load average (`/proc/loadavg`), recorded before each round; `None` off Linux.
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Pools a round's samples into the side; a round that disagrees on identity, boundary or precision
/// makes the pooled side say so (and the contract check fails).
fn merge(acc: &mut Option<Side>, side: Side) {
    let mut side = side;
    side.round_p50_ms = if side.samples_ms.is_empty() {
        Vec::new()
    } else {
        vec![trtmc_core::stats::median(&side.samples_ms)]
    };
    match acc {
        None => *acc = Some(side),
        Some(a) => {
            if a.identity != side.identity {
                a.identity = format!("{} (round differs: {})", a.identity, side.identity);
            }
            if a.boundary != side.boundary {
                a.boundary = format!("{} (round differs: {})", a.boundary, side.boundary);
            }
            if a.precision != side.precision {
                a.precision = None;
            }
            a.samples_ms.extend(side.samples_ms);
            a.round_p50_ms.extend(side.round_p50_ms);
        }
    }
}

fn short(h: &str) -> &str {
    &h[..h.len().min(12)]
}

/// The source model file a row consumes (materialized in the bundle cache's sources).
pub(crate) fn model_path(plan: &Plan, pr: &PlannedRow) -> String {
    let Ok(catalog) = Catalog::load(&plan.catalog_root) else {
        return String::new();
    };
    let Ok(profile) = catalog.require(&pr.row.model) else {
        return String::new();
    };
    trtmc_runner::sources::materialize(profile, &plan.environment.bundle_cache)
        .map(|p| crate::plan::absolute(&p).to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The Python reference, prepared once per row in this process by the code behind
/// `trtmc-bench compare --save-inputs` (`trtmc_runner::compare`): the inputs from the worker's own
/// seeded synthesis of the candidate runtime's bundle with the reference's overrides, and the request
/// with the row's counts, baseline precision, threads and runner options. Returns the request path.
fn prepare_python_reference(
    plan: &Plan,
    pr: &PlannedRow,
    iterations: u64,
    ctx: &Ctx<'_>,
    test_hooks: &TestHooks,
) -> Result<PythonReference, (RowStatus, String)> {
    let row = &pr.row;
    let catalog = Catalog::load(&plan.catalog_root).map_err(|e| failed(e.to_string()))?;
    let selection = Selection {
        model: row.model.clone(),
        cases: vec![row.testcase.clone()],
        runtime: Some(row.candidate.runtime.clone()),
        sets: crate::plan::overrides(&row.reference.set).map_err(|e| failed(e.to_string()))?,
        inputs: row.inputs.iter().cloned().collect(),
        ..Default::default()
    };
    let bundle = BundleOptions {
        cache_root: plan.environment.bundle_cache.clone(),
        ..Default::default()
    };
    let command_line: Vec<String> = std::env::args().collect();
    let saved = compare::prepare_reference(
        ReferencePreparation {
            catalog: &catalog,
            selection,
            bundle: &bundle,
            dir: &ctx.dir.join("reference"),
            settings: ReferenceSettings {
                warmup: Some(pr.warmup),
                iterations: Some(iterations),
                precision: Some(pr.baseline_precision.clone()),
                threads: Some(plan.environment.reference_threads),
                options: row.reference.options.clone(),
            },
            command_line: &command_line,
            test_hooks,
        },
        &Silent,
    )
    .map_err(|e| failed(format!("preparing the reference inputs: {}", message(e))))?;
    Ok(PythonReference {
        request: saved.request_path,
        identity: saved.identity,
    })
}

/// A prepared Python reference: its request, and the workload its inputs were made for.
struct PythonReference {
    request: PathBuf,
    identity: String,
}

fn message(e: RunError) -> String {
    e.message()
}

/// The Python reference runner the matrix starts (in the environment's `reference_dir`).
const REFERENCE_SCRIPT: &str = "ort_reference.py";

/// Runs `ort_reference.py REQUEST RESULT` as a leaf command logged to `log`; returns how the command
/// ended and the result it wrote, if readable (a failing reference still writes one saying why).
pub(crate) fn run_ort_reference(
    plan: &Plan,
    ctx: &mut Ctx<'_>,
    request: &Path,
    result: &Path,
    log: &str,
) -> (Result<(), RowError>, Option<ReferenceResult>) {
    let argv = vec![
        plan.environment.python.clone(),
        plan.environment
            .reference_dir
            .join(REFERENCE_SCRIPT)
            .to_string_lossy()
            .into_owned(),
        request.to_string_lossy().into_owned(),
        result.to_string_lossy().into_owned(),
    ];
    let ran = ctx.leaf(argv, BTreeMap::new(), log);
    let doc = std::fs::read(result)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    (ran, doc)
}

/// One round of the Python reference runner on the prepared request.
fn run_python_reference(
    plan: &Plan,
    pr: &PlannedRow,
    prepared: &PythonReference,
    suffix: &str,
    ctx: &mut Ctx<'_>,
) -> Result<Side, (RowStatus, String)> {
    let dir = ctx.dir.join("reference");
    let result_path = dir.join(format!("reference-result{suffix}.json"));
    let (ran, doc) = run_ort_reference(
        plan,
        ctx,
        &prepared.request,
        &result_path,
        &format!("reference{suffix}.log"),
    );
    let Some(r) = doc else {
        return Err(failed(match ran {
            Err(e) => e.to_string(),
            Ok(()) => format!("the reference wrote no readable {REFERENCE_RESULT_SCHEMA} result"),
        }));
    };
    if r.schema != REFERENCE_RESULT_SCHEMA {
        return Err(failed(format!(
            "the reference result has schema `{}`, not `{REFERENCE_RESULT_SCHEMA}`",
            r.schema
        )));
    }
    if let Err(e) = ran {
        if let Some(p) = r
            .precision
            .as_deref()
            .filter(|p| *p != pr.baseline_precision)
        {
            return Err((
                RowStatus::ContractMismatch,
                format!(
                    "contract mismatch: the reference ran at precision {p}, baseline precision {} ({}) was requested",
                    pr.baseline_precision, pr.baseline_precision_source
                ),
            ));
        }
        // Non-finite outputs, a missing framework, a precision refusal: a reference failure.
        return Err(failed(format!(
            "reference failure: {}",
            r.error.unwrap_or_else(|| e.to_string())
        )));
    }
    Ok(Side {
        backend: ORT_PYTHON.into(),
        runtime: r.runtime.name.clone(),
        version: r.runtime.version.clone(),
        boundary: r.boundary.clone(),
        // The reference side's workload: the case resolved with the reference's overrides (and the
        // row's data), which produced the inputs it timed.
        identity: prepared.identity.clone(),
        precision: r.precision.clone(),
        samples_ms: r
            .observations
            .iter()
            .map(|o| o.wall_ns as f64 / 1e6)
            .collect(),
        round_p50_ms: Vec::new(),
        result_file: ctx.rel(&result_path),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failed command's message leads with the end of its log (a failed `run` ends with the
    /// causes of its failed cases), so a failed row's summary line gives its cause first.
    #[test]
    fn a_failed_command_leads_with_its_cause() {
        let tmp = tempfile::tempdir().expect("tmp");
        let mut ctx = Ctx {
            run: tmp.path(),
            dir: tmp.path().to_path_buf(),
            commands: Vec::new(),
        };
        let argv = [
            "sh",
            "-c",
            "echo table; echo 'error: 1 of 1 case(s) failed (001-m: boom)' >&2; exit 5",
        ];
        let e = ctx
            .leaf(
                argv.iter().map(|a| a.to_string()).collect(),
                BTreeMap::new(),
                "leaf.log",
            )
            .expect_err("exit 5")
            .to_string();
        assert!(
            e.starts_with("table | error: 1 of 1 case(s) failed (001-m: boom) (`sh -c"),
            "{e}"
        );
        assert!(e.contains("exited with code 5; log: leaf.log)"), "{e}");
    }

    /// Finite doubles spread over the whole range, many with 17 significant digits: the numbers a
    /// parser without exact float parsing gets wrong in the last digit.
    fn awkward_floats() -> Vec<f64> {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut out = vec![0.1 + 0.2, 1.0 / 3.0, 2.638_344_616_030_823e-256, 5e-324];
        while out.len() < 20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let x = f64::from_bits(state);
            if x.is_finite() {
                out.push(x);
            }
        }
        out
    }

    #[test]
    fn row_figures_reach_the_results_document_bit_for_bit() {
        let t = tempfile::tempdir().expect("tmp");
        let values = awkward_floats();
        let row = RowResult {
            schema: ROW_SCHEMA.into(),
            index: 0,
            id: "r".into(),
            entry: "e".into(),
            model: "m".into(),
            testcase: "c".into(),
            status: RowStatus::Failed,
            message: None,
            comparison: None,
            candidate: None,
            reference: None,
            resolved_settings: BTreeMap::new(),
            commands: Vec::new(),
            preparation: None,
            round_loads: values.clone(),
            explanation: None,
            attempt_dir: String::new(),
            executor: "local".into(),
            slurm_task: None,
            host: String::new(),
            started: String::new(),
            finished: String::new(),
        };
        std::fs::create_dir_all(rows_dir(t.path())).expect("mkdir");
        trtmc_core::fsutil::write_json_atomic(&row_file(t.path(), 0), &row).expect("write");
        // finalize: read the row back, write it into results.json, which readers parse again.
        let read = read_row(t.path(), 0).expect("row reads back");
        let results = serde_json::to_vec_pretty(&read).expect("serialize");
        let reread: RowResult = serde_json::from_slice(&results).expect("parse");
        for (i, (a, b)) in values.iter().zip(&reread.round_loads).enumerate() {
            assert_eq!(
                a.to_bits(),
                b.to_bits(),
                "value {i}: {a:e} came back as {b:e}"
            );
        }
    }
}
