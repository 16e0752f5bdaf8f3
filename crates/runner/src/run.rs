//! The `run` orchestration: resolve every case, plan and build each bundle once, run each case in its
//! own worker process, reduce the raw observations, and write the result directory.
//!
//! The orchestrator never prints; it reports [`Event`]s through [`Progress`] so the CLI decides what is shown.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use trtmc_core::artifacts::benchmark_run::RoundsStop;
use trtmc_core::artifacts::{
    BENCHMARK_RUN_SCHEMA, BenchmarkRun, BundleOrigin, BundleRef, CALL_NOTES_SCHEMA, CallNotes,
    CaseFiles, CaseProfile, CaseResult, CaseStatus, LoopStop, MeasurementInfo, Observation,
    PUBLIC_PIPELINE_CALL_WALL, Provenance, RoundStat, RuntimeInfo, TIMING_NOTES_SCHEMA, Telemetry,
    TimingNotes,
};
use trtmc_core::case::{self, MeasureFlags, Override, ResolveInput, ResolvedCase, SweepAxis};
use trtmc_core::catalog::{Catalog, Profile};
use trtmc_core::fsutil::{OutputSlot, write_json_atomic};
use trtmc_core::intervals;
use trtmc_core::operations;
use trtmc_core::result::reduce;
use trtmc_core::stats::PERCENTILE_METHOD;
use trtmc_core::test_hooks::TestHooks;
use trtmc_runtime::bundle::{BUNDLE_FILE, BundleManifest};
use trtmc_runtime::protocol::{
    ProfilePass, WORKER_REQUEST_SCHEMA, WorkerRequest, WorkerResult, WorkerStatus,
};
use trtmc_runtime::registry;
use trtmc_runtime::runtime::{self, SelfTimed, SelfTimedRequest};
use trtmc_runtime::tensor::HostTensor;

use crate::Error;
use crate::bundles::{self, BundleOptions, BundlePlan};
use crate::launch::{self, Launch, Outcome, StopCause};
use crate::progress::{Event, Progress};
use crate::sources;

/// The run's document (`trtmc.benchmark-run/v1`) at the top of the result directory.
pub const RESULT_FILE: &str = "result.json";
/// The run's self-contained HTML report, beside [`RESULT_FILE`].
pub const REPORT_FILE: &str = "report.html";
/// A case directory's resolved case: every field with its source.
pub const RESOLVED_CASE_FILE: &str = "resolved-case.json";
/// A case directory's raw timed calls, one JSON object a line.
pub const OBSERVATIONS_FILE: &str = "observations.jsonl";
/// A case directory's log of the worker's stdout and stderr.
pub const WORKER_LOG: &str = "worker.log";
/// The request the orchestrator writes for the worker (removed once the case succeeded).
pub const WORKER_REQUEST_FILE: &str = "worker-request.json";
/// The result the worker writes back (removed once the case succeeded).
pub const WORKER_RESULT_FILE: &str = "worker-result.json";
/// The worker's progress file while it runs (removed afterwards).
pub const WORKER_PROGRESS_FILE: &str = ".worker-progress.json";
/// A case directory's telemetry samples (`--telemetry`).
pub const TELEMETRY_FILE: &str = "telemetry.json";
/// The worker request of `--profile`'s per-layer profiling pass (removed once it succeeded).
pub const PROFILE_REQUEST_FILE: &str = "profile-request.json";
/// The worker result of the profiling pass (removed once it succeeded).
pub const PROFILE_RESULT_FILE: &str = "profile-result.json";
/// The profiling pass's worker log.
pub const PROFILE_LOG: &str = "profile.log";
/// The worker's notes on the last timed call (e.g. the transcript), beside observations.jsonl.
pub const CALL_NOTES_FILE: &str = "call-notes.json";
/// What a self-timed runtime's tool reported besides the observations (its own summary, argv).
pub const SELF_TIMED_NOTES_FILE: &str = "timing-notes.json";
/// Operation calls of the profiling pass when `--profile` gives no count.
pub const DEFAULT_PROFILE_ITERATIONS: u64 = 20;

/// One `--model` (or plan entry) with what the user asked for it.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Catalog name of the model (for `--onnx`, the name its added profile got).
    pub model: String,
    /// `--case`: the cases to run; empty runs the profile's default case.
    pub cases: Vec<String>,
    /// `--runtime`, or the plan entry's runtime; `None` takes the case's own.
    pub runtime: Option<String>,
    /// The plan entry's `set` overrides, applied before the command line's.
    pub plan_sets: Vec<Override>,
    /// The plan entry's counts and durations, applied before the command line's.
    pub plan_measure: MeasureFlags,
    /// `--set key=value` overrides, which win over the plan's.
    pub sets: Vec<Override>,
    /// `--sweep` axes (and the plan entry's): each point of their product is a case of its own.
    pub sweeps: Vec<SweepAxis>,
    /// The command line's counts and durations (`--warmup`, `--iterations`, …).
    pub flags: MeasureFlags,
    /// `--inputs`: data sets fed instead of synthesized inputs (`infer` cases; several rotate).
    pub inputs: Vec<String>,
    /// `--check-outputs`: the expected outputs of those data sets.
    pub check_outputs: Vec<String>,
    /// `--atol`, `--rtol` of the output check (default: Polygraphy's, 1e-5 each).
    pub tolerance: Option<(f64, f64)>,
    /// `--max-tensor-memory-gib`: the bound of a case's estimated tensor memory (default
    /// `trtmc_core::limits::DEFAULT_MOST_TENSOR_GIB`).
    pub most_tensor_gib: Option<f64>,
}

impl Selection {
    /// The data sets this selection gives, as input settling reads them.
    fn given_data(&self) -> crate::model_inputs::GivenData<'_> {
        crate::model_inputs::GivenData {
            inputs: &self.inputs,
            check_outputs: &self.check_outputs,
            tolerance: self.tolerance,
            most_tensor_gib: self.most_tensor_gib,
        }
    }
}

/// How a run is carried out, beside what it measures ([`Selection`]s).
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// How each case's bundle is found or built.
    pub bundle: BundleOptions,
    /// The program started as `<worker> worker --request …` for each case (normally this very binary).
    pub worker: PathBuf,
    /// Sample telemetry outside the worker (`--telemetry`, already decided for `auto`).
    pub telemetry: bool,
    /// `-o DIR`: a replaceable slot. `None`: a new timestamped directory below `results_parent`.
    pub output: Option<PathBuf>,
    /// Where a run without `-o` creates its timestamped directory (`trtmc-results`).
    pub results_parent: PathBuf,
    /// The command line as typed, recorded in result.json and in bundles that get built.
    pub command_line: Vec<String>,
    /// `--profile`: after each case's timed run, a separate per-layer profiling pass of this many calls.
    pub profile: Option<u64>,
    /// The test suite's hooks (all off unless `TRTMC_TEST=1`).
    pub test_hooks: TestHooks,
    /// Rounds each case's measurement is split into (one worker process per case per round), the cases
    /// interleaved round by round (A B, B A, …) so machine drift lands on every case alike.
    pub rounds: usize,
    /// The most rounds a run with comparisons may measure: above `rounds`, blocks of rounds are added
    /// until every verdict is decided or a case's `--max-duration` would be spent (docs/run.md).
    pub max_rounds: usize,
    /// The case (index into the plan, from 0) the others are compared with, when there are rounds.
    pub baseline: usize,
    /// `--baseline` was given: every case is compared with it, whatever workload each measured;
    /// otherwise only the cases of the baseline's workload are.
    pub baseline_explicit: bool,
    /// Renders `report.html`, committed with `result.json`.
    pub page: RunPage,
}

/// A run's page from its document and each case's observations (in case order). The CLI passes the
/// report crate's renderer: the orchestrator writes the page it is given and knows no HTML.
pub type RunPage = fn(&BenchmarkRun, &[Vec<Observation>]) -> String;

/// Errors that stop a run before any case is measured: the runner's one error type (kept under this
/// name for callers of the run orchestration).
pub type RunError = crate::Error;

/// A resolved case with its profile and bundle plan.
pub struct PlannedCase {
    /// The model's catalog profile.
    pub profile: Profile,
    /// The case with every field resolved and its source recorded.
    pub resolved: ResolvedCase,
    /// Where its bundle comes from; `None` when the model has no model file (nothing to build).
    pub bundle: Option<BundlePlan>,
    /// The model's inputs as the case feeds them (`infer` cases whose model file is at hand).
    pub inputs: Vec<crate::model_inputs::InputLine>,
}

/// Resolves every selection into cases and plans their bundles; nothing is built or loaded. A profile of a
/// test-only operation is refused unless `test_hooks` come from the test harness.
pub fn plan_cases(
    catalog: &Catalog,
    selections: &[Selection],
    options: &BundleOptions,
    test_hooks: &TestHooks,
) -> Result<Vec<PlannedCase>, RunError> {
    operations::validate().map_err(|e| Error::OperationTable {
        reason: e.to_string(),
    })?;
    if options.explicit.is_some() && selections.len() > 1 {
        return Err(Error::ExplicitBundleForManyModels);
    }
    let mut planned = Vec::new();
    for sel in selections {
        let profile = catalog
            .require(&sel.model)
            .map_err(|e| Error::UnknownModel {
                model: sel.model.clone(),
                reason: e.to_string(),
            })?;
        if !profile.status.is_ready() {
            return Err(Error::ModelNotReady {
                model: profile.name.clone(),
                status: profile.status.label(),
            });
        }
        test_hooks
            .check_operation(profile)
            .map_err(|e| Error::TestOnlyOperation {
                model: profile.name.clone(),
                reason: e.to_string(),
            })?;
        // Resolved after the model source, whose absence is the first thing to report.
        let mut tokenizer: Option<Option<String>> = None;
        let points = case::sweep_points(&sel.sweeps).map_err(|e| Error::Sweep {
            reason: e.to_string(),
        })?;
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
                let mut resolved = case::resolve(
                    profile,
                    &input,
                    trtmc_runtime::registry::declared_settings(),
                )
                .map_err(|e| Error::Case {
                    model: profile.name.clone(),
                    reason: e.to_string(),
                })?;
                let inputs = crate::model_inputs::settle(
                    profile,
                    sel.given_data(),
                    &mut resolved,
                    &options.cache_root,
                )
                .map_err(|e| Error::Case {
                    model: profile.name.clone(),
                    reason: e.to_string(),
                })?;
                case::refresh_identity(
                    profile,
                    &mut resolved,
                    trtmc_runtime::registry::declared_settings(),
                )
                .map_err(|e| Error::Case {
                    model: profile.name.clone(),
                    reason: e.to_string(),
                })?;
                let rt = runtime_named(&resolved.runtime.value, &options.runtimes)?;
                rt.availability().map_err(|e| Error::RuntimeUnavailable {
                    runtime: rt.name().to_string(),
                    reason: e.to_string(),
                })?;
                rt.supports_operation(&resolved.operation).map_err(|e| {
                    Error::UnsupportedOperation {
                        model: profile.name.clone(),
                        runtime: rt.name().to_string(),
                        reason: e.to_string(),
                    }
                })?;
                runtime::check_build_settings(
                    rt.name(),
                    &resolved.build_values(),
                    &rt.build_settings(),
                )
                .map_err(Error::BuildSetting)?;
                rt.check_build_values(&resolved.build_values())
                    .map_err(|e| Error::BuildSetting(anyhow::Error::msg(e)))?;
                runtime::check_settings(rt.as_ref(), &resolved.runtime_values()).map_err(|e| {
                    Error::RuntimeSetting {
                        runtime: rt.name().to_string(),
                        reason: e.to_string(),
                    }
                })?;
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
                // The worker gets the tokenizer as a file it can open (hub files from the cache);
                // planning never downloads: a missing hub file stays `hub:` until `execute`.
                let tokenizer = match &tokenizer {
                    Some(t) => t.clone(),
                    None => tokenizer
                        .insert(
                            sources::resolve_tokenizer(profile, sources::Fetch::CacheOnly)
                                .map_err(|source| Error::Tokenizer {
                                    model: profile.name.clone(),
                                    source: Box::new(source),
                                })?,
                        )
                        .clone(),
                };
                // A chat case is rendered now, so a missing or broken template stops the run before
                // any build; one whose hub files are not cached yet keeps its `hub:` tokenizer and is
                // rendered by `fetch_tokenizers` after their download.
                let rendered = crate::chat::render_case(
                    profile,
                    tokenizer.as_deref(),
                    sources::Fetch::CacheOnly,
                    &mut resolved,
                )
                .map_err(|e| Error::Case {
                    model: profile.name.clone(),
                    reason: e.to_string(),
                })?;
                let tokenizer = match rendered {
                    true => tokenizer,
                    false => profile.tokenizer.clone(),
                };
                crate::chat::check_prompt_fits(profile, tokenizer.as_deref(), &resolved).map_err(
                    |e| Error::Case {
                        model: profile.name.clone(),
                        reason: e.to_string(),
                    },
                )?;
                crate::model_inputs::check_kv_cache_memory(
                    profile,
                    tokenizer.as_deref(),
                    &resolved,
                    &options.cache_root,
                    sel.given_data().most_tensor_gib,
                )
                .map_err(|e| Error::Case {
                    model: profile.name.clone(),
                    reason: e.to_string(),
                })?;
                planned.push(PlannedCase {
                    profile: Profile {
                        tokenizer,
                        ..profile.clone()
                    },
                    resolved,
                    bundle,
                    inputs,
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
        // The boundary is the runtime's, whichever tool it drives.
        let rt = runtime_named(
            &p.resolved.runtime.value,
            &runtime::RuntimeOptions::default(),
        )?;
        let b = rt.timing_boundary();
        match boundary {
            None => boundary = Some((b, &p.resolved.runtime.value)),
            Some((first, first_rt)) if first != b => {
                return Err(Error::MixedTimingBoundaries {
                    first_runtime: first_rt.to_string(),
                    first_boundary: first,
                    runtime: rt.name().to_string(),
                    boundary: b,
                });
            }
            Some(_) => {}
        }
    }
    Ok(boundary.map_or(PUBLIC_PIPELINE_CALL_WALL, |(b, _)| b))
}

/// The runtime called `name`.
fn runtime_named(
    name: &str,
    options: &runtime::RuntimeOptions,
) -> Result<Box<dyn runtime::Runtime>, Error> {
    registry::runtime_with(name, options).map_err(|reason| Error::UnknownRuntime {
        runtime: name.to_string(),
        reason,
    })
}

/// The result of a run: where it was written and what it says.
pub struct RunOutcome {
    /// The committed result directory.
    pub dir: PathBuf,
    /// The run's document as written to result.json.
    pub run: BenchmarkRun,
    /// Cases whose bundle build failed (their directories; each is a failed case with its cause),
    /// while other cases were measured.
    pub build_failed: Vec<String>,
}

/// Builds missing bundles, measures every case, writes and commits the result directory.
pub fn execute(
    mut planned: Vec<PlannedCase>,
    options: &RunOptions,
    progress: &dyn Progress,
) -> Result<RunOutcome, RunError> {
    let boundary = timing_boundary(&planned)?;
    // Tokenizers first: a chat case waiting for its hub template is rendered (or refused) before any
    // build.
    fetch_tokenizers(&mut planned)?;
    // A build that fails fails its case only; the others are still measured. When every case's build
    // failed there is nothing to measure: the first failure is the run's.
    let mut build_errors = build_missing(&mut planned, options, progress)?;
    if !build_errors.is_empty()
        && build_errors.iter().all(Option::is_some)
        && let Some(first) = build_errors.iter_mut().find_map(Option::take)
    {
        return Err(first);
    }
    let build_failed: Vec<String> = planned
        .iter()
        .zip(&build_errors)
        .enumerate()
        .filter(|(_, (_, e))| e.is_some())
        .map(|(i, (p, _))| case_dir_name(i + 1, &p.profile.name, &p.resolved))
        .collect();

    let target = match &options.output {
        Some(dir) => dir.clone(),
        None => timestamped_dir(&options.results_parent),
    };
    let slot =
        OutputSlot::prepare(&target, RESULT_FILE, &["trtmc.benchmark-run/"]).map_err(|e| {
            Error::OutputSlot {
                dir: target.clone(),
                reason: e.to_string(),
            }
        })?;
    let total = planned.len();
    // Never more rounds than calls: every round of every case times at least one call.
    let rounds = planned
        .iter()
        .map(|p| p.resolved.measure.iterations.value as usize)
        .fold(options.rounds.max(1), usize::min)
        .max(1);
    let mut started: Vec<Option<CaseRun>> = (0..total).map(|_| None).collect();
    let mut finished: Vec<Option<(CaseResult, Vec<Observation>)>> =
        (0..total).map(|_| None).collect();
    // With comparisons and room above `rounds`, the run looks at its verdicts on a fixed schedule
    // and adds rounds until they are decided (docs/statistics.md, *Sequential rounds*).
    let identities: Vec<&str> = planned
        .iter()
        .map(|p| p.resolved.identity.as_str())
        .collect();
    let sequential = rounds > 1
        && options.max_rounds > rounds
        && crate::verdicts::anything_to_compare(
            &identities,
            options.baseline,
            options.baseline_explicit,
        );
    let looks = intervals::Looks::plan(
        rounds,
        if sequential {
            options.max_rounds
        } else {
            rounds
        },
        crate::verdicts::CONFIDENCE,
    );
    let mut scheduled = looks.at.first().copied().unwrap_or(rounds).max(rounds);
    let mut stopped_by: Option<RoundsStop> = None;
    let baseline_dir = planned
        .get(options.baseline)
        .map(|b| case_dir_name(options.baseline + 1, &b.profile.name, &b.resolved))
        .unwrap_or_default();
    // From here on a Ctrl-C or SIGTERM stops the running case after its current call and commits
    // what was measured; if watching fails, the signals keep their default action.
    let _ = crate::interrupt::watch();
    let mut round = 0;
    'rounds: loop {
        if round == scheduled {
            if !sequential {
                break;
            }
            // A look: stop when every verdict is decided, when no look is left, or when the next
            // block would take a case past its budget.
            let paired: Vec<crate::verdicts::Paired<'_>> = started
                .iter()
                .zip(&identities)
                .filter_map(|(run, identity)| Some(run.as_ref()?.paired(identity)))
                .collect();
            if crate::verdicts::decided(
                &paired,
                &baseline_dir,
                options.baseline_explicit,
                looks.per_look,
            ) {
                stopped_by = Some(RoundsStop::Decided);
                break;
            }
            let Some(next) = looks.next(round) else {
                stopped_by = Some(RoundsStop::MaxRounds);
                break;
            };
            if started
                .iter()
                .zip(planned.iter())
                .any(|(run, p)| run.as_ref().is_some_and(|r| r.would_overspend(p, next)))
            {
                stopped_by = Some(RoundsStop::MaxDuration);
                break;
            }
            scheduled = next;
        }
        // A B C, then C B A: drift within a round lands on every case alike.
        let order: Vec<usize> = if round % 2 == 0 {
            (0..total).collect()
        } else {
            (0..total).rev().collect()
        };
        for i in order {
            if crate::interrupt::requested() {
                break 'rounds;
            }
            let p = &planned[i];
            let run = match &mut started[i] {
                Some(run) => run,
                empty => empty.insert(start_case(i + 1, p, slot.staging(), slot.target())?),
            };
            if let Some(e) = build_errors.get_mut(i).and_then(Option::take) {
                // Reported as a failed case with its cause; the build log is named in the message.
                run.m.error = Some(e.message());
                run.stopped = true;
            }
            if run.stopped {
                continue;
            }
            let part = Round {
                index: round,
                of: rounds,
                first_call: run.m.observations.len() as u64 + run.m.warmup_done.unwrap_or(0),
            };
            progress.report(Event::CaseStarted {
                index: i + 1,
                total,
                label: &format!("{} {}{}", p.profile.name, p.resolved.label, part.label()),
                iterations: part.share_of_calls(p.resolved.measure.iterations.value),
            });
            measure_round(i + 1, p, options, progress, run, part)?;
            if rounds == 1
                && let Some(run) = started[i].take()
            {
                finished[i] = Some(finish_reported(i + 1, p, options, progress, run)?);
            }
        }
        round += 1;
    }
    let mut cases = Vec::with_capacity(total);
    let mut observations_by_case = Vec::with_capacity(total);
    let mut not_run = Vec::new();

    for (i, p) in planned.iter().enumerate() {
        let done = match finished[i].take() {
            Some(done) => Some(done),
            None => match started[i].take() {
                Some(mut run) => {
                    // A stop between rounds leaves this case short of rounds it never started.
                    if run.rounds_done < scheduled && !run.stopped {
                        run.m.interrupted = Some(format!(
                            "interrupted (Ctrl-C or SIGTERM) after {} of {scheduled} rounds, {} timed call(s); they are kept and the statistics are partial",
                            run.rounds_done,
                            run.m.observations.len()
                        ));
                        run.m.stopped_by = Some(LoopStop::Signal);
                    }
                    Some(finish_reported(i + 1, p, options, progress, run)?)
                }
                None => None,
            },
        };
        match done {
            Some((result, observations)) => {
                cases.push(result);
                observations_by_case.push(observations);
            }
            None => not_run.push(case_dir_name(i + 1, &p.profile.name, &p.resolved)),
        }
    }
    let labels = crate::verdicts::labels(&planned);
    let by_dir: BTreeMap<String, String> = planned
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (
                case_dir_name(i + 1, &p.profile.name, &p.resolved),
                labels[i].clone(),
            )
        })
        .collect();
    let comparisons = match planned.get(options.baseline) {
        Some(b) if rounds > 1 => crate::verdicts::compare(
            &cases,
            &by_dir,
            &case_dir_name(options.baseline + 1, &b.profile.name, &b.resolved),
            options.baseline_explicit,
            crate::verdicts::Look {
                confidence: looks.per_look,
                stopped_by: stopped_by.filter(|_| sequential),
            },
        ),
        _ => Vec::new(),
    };

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
        not_run,
        comparisons,
        provenance: Provenance {
            program: crate::machine::program(),
            runtime_dirs: trtmc_core::runtime_dirs::current()
                .iter()
                .map(|d| d.display().to_string())
                .collect(),
            runtimes,
            machine: trtmc_core::machine::machine(),
        },
        cases,
    };
    let report = (options.page)(&run, &observations_by_case);
    let report_path = slot.staging().join(REPORT_FILE);
    trtmc_core::fsutil::write_atomic(&report_path, report.as_bytes())
        .map_err(write_error(&report_path))?;
    let result_path = slot.staging().join(RESULT_FILE);
    write_json_atomic(&result_path, &run).map_err(write_error(&result_path))?;
    if let Some(pause) = options.test_hooks.pause_before_commit {
        // Test hook: widens the window in which a kill leaves a staged but uncommitted result.
        std::thread::sleep(pause);
    }
    let dir = slot.commit().map_err(|e| Error::OutputSlot {
        dir: target.clone(),
        reason: e.to_string(),
    })?;
    Ok(RunOutcome {
        dir,
        run,
        build_failed,
    })
}

/// Downloads the hub tokenizers that planning left as `hub:` specs (planning never downloads).
pub(crate) fn fetch_tokenizers(planned: &mut [PlannedCase]) -> Result<(), RunError> {
    for p in planned {
        if sources::tokenizer_pending(p.profile.tokenizer.as_deref()) {
            let hub = p.profile.clone();
            p.profile.tokenizer = sources::resolve_tokenizer(&hub, sources::Fetch::Allowed)
                .map_err(|source| Error::Tokenizer {
                    model: p.profile.name.clone(),
                    source: Box::new(source),
                })?;
            crate::chat::render_case(
                &hub,
                p.profile.tokenizer.as_deref(),
                sources::Fetch::Allowed,
                &mut p.resolved,
            )
            .map_err(|e| Error::Case {
                model: p.profile.name.clone(),
                reason: e.to_string(),
            })?;
        }
    }
    Ok(())
}

/// How a bundle build ended: its origin, or its build log and failure (for the cases sharing it).
type BuildEnd = Result<BundleOrigin, (PathBuf, String)>;

/// Builds the bundles the cases miss; returns, per case, the failure of its build (a runtime that
/// cannot build the model fails that case only). Errors of the cache itself stop the run.
fn build_missing(
    planned: &mut [PlannedCase],
    options: &RunOptions,
    progress: &dyn Progress,
) -> Result<Vec<Option<RunError>>, RunError> {
    // Each bundle path once, with how its build ended.
    let mut done: Vec<(PathBuf, BuildEnd)> = Vec::new();
    let mut failures: Vec<Option<RunError>> = Vec::with_capacity(planned.len());
    for p in planned.iter_mut() {
        failures.push(None);
        let Some(plan) = &p.bundle else { continue };
        if !plan.needs_build {
            // A cache hit still clears what killed builds left beside its bundle.
            if plan.origin == BundleOrigin::CacheHit
                && let Some(dir) = plan.path.parent()
            {
                bundles::remove_stale_build_folders(dir);
            }
            continue;
        }
        let built = match done.iter().find(|(path, _)| path == &plan.path) {
            Some((_, origin)) => origin.clone().map_err(|(log, cause)| Error::BuildFailed {
                model: p.profile.name.clone(),
                runtime: p.resolved.runtime.value.clone(),
                log,
                source: anyhow::Error::msg(cause),
            }),
            None => {
                let rt = runtime_named(&p.resolved.runtime.value, &options.bundle.runtimes)?;
                let built = build_reported(
                    p,
                    plan,
                    rt.as_ref(),
                    &options.bundle,
                    &options.command_line,
                    progress,
                );
                let record = match &built {
                    Ok(origin) => Ok(*origin),
                    Err(Error::BuildFailed { log, source, .. }) => {
                        Err((log.clone(), format!("{source:#}")))
                    }
                    Err(e) => Err((PathBuf::new(), e.message())),
                };
                done.push((plan.path.clone(), record));
                built
            }
        };
        let origin = match built {
            Ok(origin) => origin,
            Err(e @ (Error::BuildFailed { .. } | Error::NoBundle { .. })) => {
                if let Some(f) = failures.last_mut() {
                    *f = Some(e);
                }
                continue;
            }
            Err(e) => return Err(e),
        };
        // A run that lost the build race to another one reused its bundle: say so in result.json.
        if let Some(plan) = &mut p.bundle {
            plan.origin = origin;
        }
    }
    Ok(failures)
}

/// Builds `plan` for the planned case, telling `progress` when the build starts and how long it took
/// (`run` and `compare` both build through it).
pub(crate) fn build_reported(
    p: &PlannedCase,
    plan: &BundlePlan,
    rt: &dyn runtime::Runtime,
    options: &BundleOptions,
    command_line: &[String],
    progress: &dyn Progress,
) -> Result<BundleOrigin, RunError> {
    progress.report(Event::BuildStarted {
        model: &p.profile.name,
        runtime: rt.name(),
        path: &plan.path,
    });
    let started = Instant::now();
    let origin = bundles::build(
        &p.profile,
        &p.resolved.build_values(),
        rt,
        plan,
        options,
        command_line,
    )?;
    progress.report(Event::BuildFinished {
        model: &p.profile.name,
        seconds: started.elapsed().as_secs_f64(),
    });
    Ok(origin)
}

/// A case being measured: its directory and what its rounds measured so far.
struct CaseRun {
    dir: PathBuf,
    /// Where `dir` will be once the result folder is committed (messages name files there).
    committed_dir: PathBuf,
    dir_name: String,
    m: Measured,
    rounds: Vec<RoundStat>,
    /// A round failed or was interrupted: the case takes no more rounds.
    stopped: bool,
    /// Rounds measured (failed or not).
    rounds_done: usize,
}

impl CaseRun {
    /// The case's rounds as a look between blocks of rounds reads them.
    fn paired<'a>(&'a self, identity: &'a str) -> crate::verdicts::Paired<'a> {
        crate::verdicts::Paired {
            dir: &self.dir_name,
            identity,
            p50_ms: self.rounds.iter().map(|r| r.p50_ms).collect(),
            completed: !self.stopped && self.m.error.is_none(),
        }
    }

    /// Whether measuring up to `rounds` rounds at this case's pace so far would take it past its
    /// `--max-duration` (the time its timed calls take, as the budget counts it).
    fn would_overspend(&self, p: &PlannedCase, rounds: usize) -> bool {
        let Some(budget_s) = p.resolved.measure.max_duration_s.value else {
            return false;
        };
        if self.stopped || self.rounds_done == 0 {
            return false;
        }
        let spent_s: f64 = self
            .m
            .observations
            .iter()
            .map(|o| o.wall_ns as f64 / 1e9)
            .sum();
        spent_s / self.rounds_done as f64 * rounds as f64 > budget_s
    }
}

/// Which part of a case's measurement one worker launch makes: round `index` (from 0) of `of`.
#[derive(Debug, Clone, Copy)]
struct Round {
    index: usize,
    of: usize,
    /// Calls the case made in earlier rounds, warm-up included (where input rotation resumes).
    first_call: u64,
}

impl Round {
    const ONLY: Round = Round {
        index: 0,
        of: 1,
        first_call: 0,
    };

    /// ` (round 2/10)` for progress lines (` (round 12, added)` past the first block); nothing for a
    /// single round.
    fn label(&self) -> String {
        if self.index >= self.of && self.of > 1 {
            format!(" (round {}, added)", self.index + 1)
        } else if self.of > 1 {
            format!(" (round {}/{})", self.index + 1, self.of)
        } else {
            String::new()
        }
    }

    /// This round's share of a case's minimum count: the shares add up to the count exactly (an
    /// explicit `--iterations` stays exact), the first rounds taking the remainder.
    fn share_of_calls(&self, calls: u64) -> u64 {
        let of = self.of as u64;
        (calls / of + u64::from((self.index as u64) < calls % of)).max(1)
    }

    fn share_of_seconds(&self, seconds: f64) -> f64 {
        seconds / self.of as f64
    }

    /// `worker.log` → `worker-r02.log` when there are rounds, so every round keeps its own files.
    fn file(&self, name: &str) -> String {
        if self.of == 1 {
            return name.to_string();
        }
        match name.rsplit_once('.') {
            Some((stem, ext)) => format!("{stem}-r{:02}.{ext}", self.index + 1),
            None => format!("{name}-r{:02}", self.index + 1),
        }
    }
}

/// `message` with the staged case folder `staged` named where it will be once the result is
/// committed: a message must name files that exist after the command ends.
fn as_committed(message: &str, staged: &Path, committed: &Path) -> String {
    message.replace(
        &staged.display().to_string(),
        &committed.display().to_string(),
    )
}

/// Creates the case's directory with its resolved-case.json.
fn start_case(
    index: usize,
    p: &PlannedCase,
    staging: &Path,
    target: &Path,
) -> Result<CaseRun, Error> {
    let r = &p.resolved;
    let dir_name = case_dir_name(index, &p.profile.name, r);
    let dir = staging.join(&dir_name);
    std::fs::create_dir_all(&dir).map_err(|source| Error::CreateResultDir {
        path: dir.clone(),
        source,
    })?;
    let resolved_path = dir.join(RESOLVED_CASE_FILE);
    write_json_atomic(&resolved_path, r).map_err(write_error(&resolved_path))?;
    Ok(CaseRun {
        dir,
        committed_dir: target.join(&dir_name),
        dir_name,
        m: Measured::default(),
        rounds: Vec::new(),
        stopped: false,
        rounds_done: 0,
    })
}

/// Measures one round of a case and adds it to what the case measured so far.
fn measure_round(
    index: usize,
    p: &PlannedCase,
    options: &RunOptions,
    progress: &dyn Progress,
    run: &mut CaseRun,
    round: Round,
) -> Result<(), Error> {
    let rt = runtime_named(&p.resolved.runtime.value, &options.bundle.runtimes)?;
    let mut m = match rt.self_timed() {
        Some(timer) => measure_self_timed(timer, p, &run.dir, round),
        None => measure_in_worker(p, &run.dir, &run.dir_name, options, round, &|w| {
            progress.report(Event::CaseProgress { index, progress: w })
        }),
    };
    if let Some(error) = m.error.as_mut() {
        *error = as_committed(error, &run.dir, &run.committed_dir);
    }
    let ok = m.error.is_none() && m.interrupted.is_none();
    if round.of > 1 {
        if ok {
            // Every round's protocol files go once it succeeded; a failed round keeps its own.
            for f in [&m.request_file, &m.result_file].into_iter().flatten() {
                let _ = std::fs::remove_file(run.dir.join(f));
            }
        }
        if !m.observations.is_empty() {
            let walls: Vec<f64> = m
                .observations
                .iter()
                .map(|o| o.wall_ns as f64 / 1e6)
                .collect();
            run.rounds.push(RoundStat {
                calls: walls.len() as u64,
                p50_ms: trtmc_core::stats::median(&walls),
            });
        }
    }
    run.stopped = !ok;
    run.rounds_done += 1;
    run.m.absorb(m);
    Ok(())
}

/// Finishes a case (reduction, profiling pass) and tells `progress`.
fn finish_reported(
    index: usize,
    p: &PlannedCase,
    options: &RunOptions,
    progress: &dyn Progress,
    run: CaseRun,
) -> Result<(CaseResult, Vec<Observation>), Error> {
    let done = finish_case(p, options, run)?;
    progress.report(Event::CaseFinished {
        index,
        result: &done.0,
    });
    Ok(done)
}

fn finish_case(
    p: &PlannedCase,
    options: &RunOptions,
    run: CaseRun,
) -> Result<(CaseResult, Vec<Observation>), Error> {
    let r = &p.resolved;
    let CaseRun {
        dir,
        committed_dir,
        dir_name,
        mut m,
        rounds,
        ..
    } = run;
    let rel = |f: &str| format!("{dir_name}/{f}");
    let bundle_ref: Option<BundleRef> = match &p.bundle {
        // A case whose build failed has no bundle to refer to.
        Some(plan) if plan.path.join(BUNDLE_FILE).is_file() => Some(bundles::bundle_ref(plan)?),
        _ => None,
    };
    let rt = runtime_named(&r.runtime.value, &options.bundle.runtimes)?;
    let rt_info = match &bundle_ref {
        Some(b) => b.runtime.clone(),
        None => RuntimeInfo {
            name: rt.name().into(),
            version: rt.version(),
        },
    };
    // A loop that ended by its own rule made at least the minimum count; one stopped by its budget or a
    // signal made what it could; a self-timed tool says nothing, so it must deliver the count.
    let expected = r.measure.iterations.value as usize;
    let rule_allows_fewer = matches!(
        m.stopped_by,
        Some(LoopStop::Budget | LoopStop::Timeout | LoopStop::Signal)
    );
    if m.error.is_none() && !rule_allows_fewer && m.observations.len() < expected {
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

    // Outputs that differ from `--check-outputs` fail the case (exit 5), naming the worst element.
    if m.error.is_none()
        && let Some(data) = &r.data
    {
        let failed: Vec<String> = m
            .output_check
            .iter()
            .filter(|c| !c.passed)
            .map(|c| c.describe_failure(data.atol, data.rtol))
            .collect();
        if !failed.is_empty() {
            m.error = Some(failed.join("; "));
        }
    }

    let op = operations::operation(&r.operation).ok_or_else(|| Error::UnknownOperation {
        operation: r.operation.clone(),
    })?;
    let keep = |f: &Option<String>| f.as_ref().filter(|f| dir.join(f).exists()).map(|f| rel(f));
    // A log is named only when the worker wrote something into it (the failure advice sends the user
    // there; an empty file is no help).
    let keep_log = |f: &Option<String>| {
        f.as_ref()
            .filter(|f| std::fs::metadata(dir.join(f)).is_ok_and(|m| m.len() > 0))
            .map(|f| rel(f))
    };
    let (status, metrics, files) = if m.error.is_some() {
        (
            CaseStatus::Failed,
            None,
            CaseFiles {
                resolved_case: rel(RESOLVED_CASE_FILE),
                observations: None,
                worker_log: keep_log(&m.log),
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
        let status = if m.interrupted.is_some() {
            CaseStatus::Interrupted
        } else {
            CaseStatus::Completed
        };
        (
            status,
            // Partial statistics of an interrupted case are still its statistics, marked by its status.
            (!m.observations.is_empty())
                .then(|| reduce(op, &m.observations))
                .flatten(),
            CaseFiles {
                resolved_case: rel(RESOLVED_CASE_FILE),
                observations: Some(rel(OBSERVATIONS_FILE)),
                worker_log: keep_log(&m.log),
                telemetry: m.telemetry.clone(),
                worker_request: None,
                worker_result: None,
            },
        )
    };
    let profile = match options.profile {
        Some(iterations) if status == CaseStatus::Completed => {
            let mut profile = match rt.self_timed() {
                Some(timer) => profile_self_timed(timer, p, &dir, &dir_name, iterations),
                None => profile_in_worker(p, &dir, &dir_name, options, iterations),
            };
            package_profile(&mut profile, &dir, &dir_name, &p.profile.name);
            profile.error = profile
                .error
                .map(|e| as_committed(&e, &dir, &committed_dir));
            Some(profile)
        }
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
        error: m.error.or(m.interrupted),
        identity: r.identity.clone(),
        bundle: bundle_ref.map(|b| BundleRef {
            route_used: m.route_used.or(b.route_used),
            ..b
        }),
        measurement: MeasurementInfo {
            warmup: r.measure.warmup.value,
            iterations: r.measure.iterations.value,
            min_duration_s: r.measure.min_duration_s.value,
            max_duration_s: r.measure.max_duration_s.value,
            warmup_done: m.warmup_done,
            observations: m.observations.len() as u64,
            stopped_by: m.stopped_by,
            load_ms: m.load_ms,
        },
        metrics,
        sweep_point: r.sweep_point.clone(),
        request: r
            .request
            .iter()
            .map(|(k, v)| (k.clone(), v.value.clone()))
            .collect::<BTreeMap<String, Value>>(),
        batch_source: Some(r.inputs.batch_source),
        files,
        profile,
        rounds,
        input_shapes: m.input_shapes,
        output_check: m.output_check,
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
    /// What ended the timed loop (worker runtimes).
    stopped_by: Option<LoopStop>,
    warmup_done: Option<u64>,
    /// Why the case stopped before its rule ended it (its observations are kept).
    interrupted: Option<String>,
    /// The shapes the calls fed each input in (`infer`).
    input_shapes: BTreeMap<String, Vec<Vec<usize>>>,
    /// `--check-outputs`: each data set's outputs against the expected ones.
    output_check: Vec<trtmc_core::data::OutputCheck>,
    /// The build route the runtime's tool reported it used (trtexec 11.1+).
    route_used: Option<String>,
}

impl Measured {
    /// Adds a later round: its calls follow this one's (numbered on, their start times shifted past
    /// this one's last call); the first failure or interruption stays the case's.
    fn absorb(&mut self, round: Measured) {
        let offset = self
            .observations
            .iter()
            .map(|o| o.start_ns.saturating_add(o.wall_ns))
            .max()
            .unwrap_or(0);
        let first = self.observations.len() as u64;
        self.observations.extend(
            round
                .observations
                .into_iter()
                .enumerate()
                .map(|(i, mut o)| {
                    o.iteration = first + i as u64;
                    o.start_ns = o.start_ns.saturating_add(offset);
                    o
                }),
        );
        self.error = self.error.take().or(round.error);
        self.interrupted = self.interrupted.take().or(round.interrupted);
        self.load_ms = self.load_ms.or(round.load_ms);
        self.runtime = self.runtime.take().or(round.runtime);
        self.route_used = self.route_used.take().or(round.route_used);
        self.warmup_done = match (self.warmup_done, round.warmup_done) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.stopped_by = stronger_stop(self.stopped_by, round.stopped_by);
        self.log = round.log.or(self.log.take());
        self.telemetry = round.telemetry.or(self.telemetry.take());
        self.request_file = round.request_file.or(self.request_file.take());
        self.result_file = round.result_file.or(self.result_file.take());
        for (name, shapes) in round.input_shapes {
            let seen = self.input_shapes.entry(name).or_default();
            for shape in shapes {
                if !seen.contains(&shape) {
                    seen.push(shape);
                }
            }
        }
        // A set is checked in the first round that uses it.
        for check in round.output_check {
            if !self
                .output_check
                .iter()
                .any(|c| c.set == check.set && c.output == check.output)
            {
                self.output_check.push(check);
            }
        }
    }
}

/// What ended a case's loop, from what ended its rounds: the strongest reason any round gave (a
/// signal, then `--timeout`, then the time budget, then its own rule), so a round that ran out of its
/// time budget keeps the case's fewer calls allowed whichever round came last.
fn stronger_stop(a: Option<LoopStop>, b: Option<LoopStop>) -> Option<LoopStop> {
    let rank = |s: &Option<LoopStop>| match s {
        None => 0,
        Some(LoopStop::Complete) => 1,
        Some(LoopStop::Budget) => 2,
        Some(LoopStop::Timeout) => 3,
        Some(LoopStop::Signal) => 4,
    };
    if rank(&b) > rank(&a) { b } else { a }
}

/// The worker request of a case's single-round run (what a reference runner repeats).
pub(crate) fn case_worker_request(p: &PlannedCase) -> WorkerRequest {
    worker_request(p, Round::ONLY)
}

/// The worker request of one timed round of a case (the profiling pass starts from `Round::ONLY` and
/// sets `profile`).
fn worker_request(p: &PlannedCase, round: Round) -> WorkerRequest {
    let r = &p.resolved;
    let m = &r.measure;
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
        warmup: m.warmup.value,
        warmup_budget_s: m.warmup_budget_s().map(|s| round.share_of_seconds(s)),
        iterations: round.share_of_calls(m.iterations.value),
        min_duration_s: round.share_of_seconds(m.min_duration_s.value),
        max_duration_s: m.max_duration_s.value.map(|s| round.share_of_seconds(s)),
        // A default count is a minimum: measure on (within the budget) until the p50 is pinned down;
        // a count the user asked for is what runs (docs/run.md, *Stopping rule*).
        p50_half_width: (!matches!(
            m.iterations.source,
            trtmc_core::case::Source::Cli | trtmc_core::case::Source::Plan
        ))
        .then_some(trtmc_core::validity::P50_HALF_WIDTH),
        progress_file: None,
        profile: None,
        first_call: round.first_call,
        hooks: None,
        data: r.data.clone(),
    }
}

/// The test hooks `run` hands its worker: the slow node (`TRTMC_TEST_SLOW_NODE`) to the timed run and
/// the profile, the call delay and slowdown to the timed run only. `None` when none is set.
fn worker_hooks(options: &RunOptions, timed: bool) -> Option<trtmc_runtime::protocol::WorkerHooks> {
    let test = &options.test_hooks;
    let hooks = trtmc_runtime::protocol::WorkerHooks {
        call_delay_us: test
            .call_delay
            .filter(|_| timed)
            .map(|d| d.as_micros() as u64),
        call_slowdown_ppm: test.call_slowdown_ppm.filter(|_| timed),
        slow_node: test
            .slow_node
            .as_ref()
            .map(|(node, wait)| trtmc_runtime::protocol::SlowNode {
                node: node.clone(),
                micros: wait.as_micros() as u64,
            }),
    };
    (hooks != Default::default()).then_some(hooks)
}

/// How a worker launch ended.
enum WorkerEnd {
    Done(WorkerResult),
    /// Stopped on request (timeout or signal) after writing what it had timed.
    Stopped {
        result: WorkerResult,
        cause: StopCause,
    },
    Failed(String),
}

/// Starts the worker on `request` and says how it ended, with an error naming what happened.
fn launch_worker(
    request: &WorkerRequest,
    dir: &Path,
    files: (&str, &str, &str),
    timeout_s: f64,
    telemetry: bool,
    worker: &Path,
    show: Option<&dyn Fn(&trtmc_runtime::protocol::WorkerProgress)>,
) -> (WorkerEnd, Option<Telemetry>) {
    let (request_file, result_file, log_file) = files;
    let request_path = dir.join(request_file);
    let result_path = dir.join(result_file);
    let progress_path = dir.join(WORKER_PROGRESS_FILE);
    let request = WorkerRequest {
        progress_file: show.is_some().then(|| progress_path.clone()),
        ..request.clone()
    };
    if let Err(e) = write_json_atomic(&request_path, &request) {
        return (
            WorkerEnd::Failed(format!("cannot write {request_file}: {e}")),
            None,
        );
    }
    let (outcome, samples) = launch::run(&Launch {
        worker,
        request: &request_path,
        result: &result_path,
        log: &dir.join(log_file),
        timeout: Duration::from_secs_f64(timeout_s.max(0.001)),
        telemetry,
        progress: show.map(|f| (progress_path.as_path(), f)),
    });
    let _ = std::fs::remove_file(&progress_path);
    let end = match outcome {
        Outcome::SpawnFailed(m) => WorkerEnd::Failed(m),
        Outcome::Stopped {
            cause,
            result: Some(res),
        } if res.status != WorkerStatus::Error => WorkerEnd::Stopped { result: res, cause },
        Outcome::Stopped { cause, result } => WorkerEnd::Failed(match (cause, result) {
            (_, Some(res)) => res.error.unwrap_or_else(|| "the worker failed".into()),
            (StopCause::Timeout, None) => format!(
                "the worker did not finish within {timeout_s:.0} s and did not stop within {} s of being asked, so it was killed and nothing it timed was saved (raise --timeout, or bound the run with --max-duration; see {log_file})",
                launch::STOP_GRACE.as_secs()
            ),
            (StopCause::Signal, None) => format!(
                "interrupted; the worker did not stop within {} s and was killed (see {log_file})",
                launch::STOP_GRACE.as_secs()
            ),
        }),
        Outcome::Exited {
            status,
            result,
            result_error,
        } => match result {
            Some(res) if res.status == WorkerStatus::Ok && status.success() => WorkerEnd::Done(res),
            // A signal from outside (e.g. the terminal's Ctrl-C reached the worker first).
            Some(res) if res.status == WorkerStatus::Interrupted => WorkerEnd::Stopped {
                result: res,
                cause: StopCause::Signal,
            },
            Some(res) => {
                WorkerEnd::Failed(res.error.unwrap_or_else(|| launch::describe_exit(&status)))
            }
            None => WorkerEnd::Failed(format!(
                "{} without writing a result{} (see {log_file})",
                launch::describe_exit(&status),
                result_error.map(|e| format!("; {e}")).unwrap_or_default(),
            )),
        },
    };
    (end, samples)
}

/// The timed run in the worker process.
fn measure_in_worker(
    p: &PlannedCase,
    dir: &Path,
    dir_name: &str,
    options: &RunOptions,
    round: Round,
    show: &dyn Fn(&trtmc_runtime::protocol::WorkerProgress),
) -> Measured {
    let request = WorkerRequest {
        hooks: worker_hooks(options, true),
        ..worker_request(p, round)
    };
    let timeout_s = p.resolved.measure.timeout_s.value;
    let (request_file, result_file, log_file) = (
        round.file(WORKER_REQUEST_FILE),
        round.file(WORKER_RESULT_FILE),
        round.file(WORKER_LOG),
    );
    let (end, telemetry) = launch_worker(
        &request,
        dir,
        (&request_file, &result_file, &log_file),
        timeout_s,
        options.telemetry,
        &options.worker,
        Some(show),
    );
    let mut m = Measured {
        log: Some(log_file),
        request_file: Some(request_file),
        result_file: Some(result_file),
        ..Default::default()
    };
    if let Some(t) = telemetry {
        match write_json_atomic(&dir.join(TELEMETRY_FILE), &t) {
            Ok(()) => m.telemetry = Some(format!("{dir_name}/{TELEMETRY_FILE}")),
            Err(e) => m.error = Some(format!("cannot write {TELEMETRY_FILE}: {e}")),
        }
    }
    let res = match end {
        WorkerEnd::Done(res) => res,
        WorkerEnd::Stopped { result, cause } => {
            let kept = result.observations.len();
            let (why, stop) = match cause {
                StopCause::Timeout => (
                    format!("stopped by --timeout {timeout_s} s"),
                    LoopStop::Timeout,
                ),
                StopCause::Signal => (
                    "interrupted (Ctrl-C or SIGTERM)".to_string(),
                    LoopStop::Signal,
                ),
            };
            m.interrupted = Some(format!(
                "{why} after {kept} timed call(s); they are kept and the statistics are partial"
            ));
            m.stopped_by = Some(stop);
            result
        }
        WorkerEnd::Failed(e) => {
            m.error = m.error.take().or(Some(e));
            return m;
        }
    };
    // `infer`'s input shapes and output checks become typed fields of result.json.
    if let Some(shapes) = res.notes.get(trtmc_runtime::ops::INPUT_SHAPES_NOTE) {
        m.input_shapes = serde_json::from_value(shapes.clone()).unwrap_or_default();
    }
    if let Some(checks) = res.notes.get(trtmc_runtime::ops::OUTPUT_CHECK_NOTE) {
        match serde_json::from_value(checks.clone()) {
            Ok(checks) => m.output_check = checks,
            Err(e) => m.error = Some(format!("the worker's output check is malformed: {e}")),
        }
    }
    // What the last call produced (transcript, generated text, ranking): evidence, not metrics.
    if !res.notes.is_empty() {
        let doc = CallNotes {
            schema: CALL_NOTES_SCHEMA.into(),
            notes: res.notes,
        };
        if let Err(e) = write_json_atomic(&dir.join(CALL_NOTES_FILE), &doc) {
            m.error = Some(format!("cannot write {CALL_NOTES_FILE}: {e}"));
        }
    }
    m.stopped_by = m.stopped_by.or(res.stopped_by);
    m.warmup_done = Some(res.warmup_ms.len() as u64);
    m.observations = res.observations;
    m.load_ms = res.load_ms;
    m.runtime = Some(res.runtime);
    m
}

/// The request a self-timed runtime gets for a case.
fn self_timed_request<'a>(
    p: &'a PlannedCase,
    manifest: &'a BundleManifest,
    bundle_dir: &'a Path,
    settings: &'a BTreeMap<String, Value>,
    dir: &'a Path,
    round: Round,
) -> SelfTimedRequest<'a> {
    let r = &p.resolved;
    SelfTimedRequest {
        bundle_dir,
        manifest,
        operation: &r.operation,
        settings,
        warmup: r.measure.warmup.value,
        iterations: round.share_of_calls(r.measure.iterations.value),
        min_duration_s: round.share_of_seconds(r.measure.min_duration_s.value),
        timeout: Duration::from_secs_f64(r.measure.timeout_s.value.max(0.001)),
        case_dir: dir,
        inputs: None,
    }
}

/// The bundle directory and manifest of a case, for a self-timed runtime.
fn bundle_of(p: &PlannedCase) -> Result<(PathBuf, BundleManifest), NoBundle> {
    let plan = p.bundle.as_ref().ok_or_else(|| NoBundle::None {
        runtime: p.resolved.runtime.value.clone(),
        model: p.profile.name.clone(),
    })?;
    let manifest = bundles::read_manifest(&plan.path).map_err(|e| NoBundle::Unreadable {
        reason: e.message(),
    })?;
    Ok((plan.path.clone(), manifest))
}

/// Why a self-timed case has no bundle to time.
#[derive(Debug, thiserror::Error)]
enum NoBundle {
    #[error("runtime `{runtime}` needs a model bundle; model `{model}` has none")]
    None { runtime: String, model: String },
    /// The bundle's manifest cannot be read; `reason` is the runner's message with its causes.
    #[error("{reason}")]
    Unreadable { reason: String },
}

/// The timed run of a runtime whose own tool owns the loop (trtexec), in the runtime's child process.
fn measure_self_timed(
    timer: &dyn SelfTimed,
    p: &PlannedCase,
    dir: &Path,
    round: Round,
) -> Measured {
    let mut m = Measured::default();
    let (bundle_dir, manifest) = match bundle_of(p) {
        Ok(b) => b,
        Err(e) => {
            m.error = Some(e.to_string());
            return m;
        }
    };
    let settings = p.resolved.runtime_values();
    // The case's own data: the tool's timed loop feeds its first set (trtexec cannot rotate sets).
    let first_set = match p.resolved.data.as_ref().and_then(|d| d.inputs.first()) {
        Some(set) => match set_tensors(set, &manifest) {
            Ok(tensors) => Some(tensors),
            Err(e) => {
                m.error = Some(format!("reading the inputs: {e:#}"));
                return m;
            }
        },
        None => None,
    };
    let mut request = self_timed_request(p, &manifest, &bundle_dir, &settings, dir, round);
    request.inputs = first_set.as_deref();
    match timer.time(&request) {
        Ok(run) => {
            m.log = Some(timer.time_log().into());
            m.observations = run.observations;
            m.runtime = Some(manifest.runtime.clone());
            m.route_used = run
                .notes
                .get(trtmc_runtime::tensorrt_rt::ROUTE_USED_NOTE)
                .and_then(Value::as_str)
                .map(String::from);
            let notes = dir.join(SELF_TIMED_NOTES_FILE);
            let doc = TimingNotes {
                schema: TIMING_NOTES_SCHEMA.into(),
                runtime: manifest.runtime.clone(),
                files: run.files,
                notes: run.notes,
            };
            if let Err(e) = write_json_atomic(&notes, &doc) {
                m.error = Some(format!("cannot write {SELF_TIMED_NOTES_FILE}: {e}"));
            }
            // `--check-outputs`: the tool's own output export of each data set, checked like the
            // worker checks its outputs (in the first round only: the outputs do not change).
            if let Some(data) = p.resolved.data.as_ref().filter(|d| !d.expected.is_empty())
                && round.index == 0
            {
                match check_self_timed_outputs(timer, &request, &manifest, data) {
                    Ok(checks) => m.output_check = checks,
                    Err(e) => m.error = Some(format!("checking the outputs: {e:#}")),
                }
            }
        }
        Err(e) => {
            m.error = Some(format!("{e:#}"));
            m.log = Some(timer.time_log().into());
        }
    }
    m
}

/// A data set's tensors for the bundle's inputs, by name, in the bundle's types.
fn set_tensors(
    set: &trtmc_core::data::DataSetRecord,
    manifest: &BundleManifest,
) -> anyhow::Result<Vec<(String, HostTensor)>> {
    let given = trtmc_runtime::data::read_set(set)?;
    manifest
        .inputs
        .iter()
        .map(|spec| {
            let t = given
                .iter()
                .find(|t| t.name == spec.name)
                .ok_or_else(|| anyhow::anyhow!("{} has no input `{}`", set.source, spec.name))?;
            Ok((
                spec.name.clone(),
                trtmc_runtime::outputs::from_tensor(t, spec.dtype)?,
            ))
        })
        .collect()
}

/// Runs each input set once through the tool (trtexec: `--loadInputs`, `--exportOutput`) and checks
/// its outputs against the expected set with the rule and tolerances of `--check-outputs`.
fn check_self_timed_outputs(
    timer: &dyn SelfTimed,
    request: &SelfTimedRequest<'_>,
    manifest: &BundleManifest,
    data: &trtmc_core::data::CaseData,
) -> anyhow::Result<Vec<trtmc_core::data::OutputCheck>> {
    let mut checks = Vec::new();
    for (set, (inputs, expected)) in data.inputs.iter().zip(&data.expected).enumerate() {
        let named = set_tensors(inputs, manifest)?;
        let outputs = timer.outputs(request, &named)?;
        for want in trtmc_runtime::data::read_set(expected)? {
            let (_, got) = outputs
                .iter()
                .find(|(name, _)| *name == want.name)
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "the expected outputs name `{}`, which the model does not produce",
                        want.name
                    )
                })?;
            checks.push(trtmc_runtime::outputs::check_against(
                got, &want, set, data.atol, data.rtol,
            ));
        }
    }
    Ok(checks)
}

fn profile_failed(iterations: u64, error: String, log: Option<String>) -> CaseProfile {
    CaseProfile {
        status: CaseStatus::Failed,
        error: Some(error),
        iterations,
        layer_info: None,
        layer_profile: None,
        log,
        report: None,
        report_error: None,
    }
}

/// Folder of a case's packaged profile report, inside the case directory.
pub const PROFILE_REPORT_DIR: &str = "profile-report";

/// Packages a completed profiling pass as an `analyze` report in `<case>/profile-report/`, so the
/// run report can link it. A failure is recorded beside the profile and fails nothing: the
/// profile files stay and `analyze` can read them later.
fn package_profile(profile: &mut CaseProfile, dir: &Path, dir_name: &str, model: &str) {
    if profile.status != CaseStatus::Completed {
        return;
    }
    let in_case = |rel: &Option<String>| {
        rel.as_deref()
            .and_then(|r| Path::new(r).file_name())
            .map(|name| dir.join(name))
    };
    let (Some(layers), Some(layer_profile)) = (
        in_case(&profile.layer_info),
        in_case(&profile.layer_profile),
    ) else {
        return;
    };
    let request = trtmc_analyze::Request {
        inputs: trtmc_analyze::Inputs::Data(vec![trtmc_analyze::DataSpec {
            layers,
            profile: Some(layer_profile),
            times: None,
            label: None,
        }]),
        model_name: Some(model.to_owned()),
    };
    let options = trtmc_analyze::report::PackageOptions {
        report_dir: Some(dir.join(PROFILE_REPORT_DIR)),
        ..Default::default()
    };
    let packaged = trtmc_analyze::analyze(&request)
        .map_err(|e| e.to_string())
        .and_then(|mut a| {
            // The case directory is still in the staging folder, which the commit renames: the
            // report names its sources relative to itself (`../layers_tract.json`), a path that stays.
            relative_sources(&mut a, dir);
            trtmc_analyze::report::package(&a, &options).map_err(|e| e.to_string())
        });
    match packaged {
        Ok(_) => profile.report = Some(format!("{dir_name}/{PROFILE_REPORT_DIR}/index.html")),
        Err(e) => profile.report_error = Some(format!("the profile could not be packaged: {e}")),
    }
}

/// Rewrites the source paths an analysis records (below `case_dir`) relative to the report folder
/// inside it.
fn relative_sources(analysis: &mut trtmc_analyze::Analysis, case_dir: &Path) {
    let relative = |path: &mut String| {
        if let Ok(rest) = Path::new(path.as_str()).strip_prefix(case_dir) {
            *path = Path::new("..").join(rest).display().to_string();
        }
    };
    if let Some(folder) = analysis.input.folder.as_mut() {
        relative(folder);
    }
    for b in &mut analysis.backends {
        let s = &mut b.sources;
        for path in [&mut s.layers, &mut s.profile, &mut s.times]
            .into_iter()
            .flatten()
        {
            relative(path);
        }
        s.metadata.iter_mut().for_each(relative);
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
    let mut request = worker_request(p, Round::ONLY);
    request.profile = Some(ProfilePass {
        dir: dir.to_path_buf(),
        iterations,
    });
    request.hooks = worker_hooks(options, false);
    let (end, _) = launch_worker(
        &request,
        dir,
        (PROFILE_REQUEST_FILE, PROFILE_RESULT_FILE, PROFILE_LOG),
        p.resolved.measure.timeout_s.value,
        false,
        &options.worker,
        None,
    );
    let log = Some(rel(PROFILE_LOG));
    let res = match end {
        WorkerEnd::Done(res) => res,
        WorkerEnd::Stopped { .. } => {
            return profile_failed(iterations, "per-layer profiling was stopped".into(), log);
        }
        WorkerEnd::Failed(e) => {
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
                report: None,
                report_error: None,
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
        Err(e) => return profile_failed(iterations, e.to_string(), None),
    };
    let settings = p.resolved.runtime_values();
    let request = self_timed_request(p, &manifest, &bundle_dir, &settings, dir, Round::ONLY);
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
            report: None,
            report_error: None,
        },
        Err(e) => profile_failed(
            iterations,
            format!("per-layer profiling failed: {e:#}"),
            log,
        ),
    }
}

fn write_observations(path: &Path, observations: &[Observation]) -> Result<(), Error> {
    let mut text = String::with_capacity(observations.len() * 96);
    for o in observations {
        let line = serde_json::to_string(o).map_err(|e| write_error(path)(e.into()))?;
        text.push_str(&line);
        text.push('\n');
    }
    trtmc_core::fsutil::write_atomic(path, text.as_bytes()).map_err(write_error(path))
}

/// Maps an I/O error writing `path` of the result directory.
fn write_error(path: &Path) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.to_path_buf();
    move |source| Error::WriteResult { path, source }
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

/// Describes the plan for `--dry-run`: one line per case with its bundle decision and cache path, and
/// for a runtime driving an outside tool the exact command lines of the first of `rounds` rounds.
pub fn describe_plan(
    planned: &[PlannedCase],
    options: &BundleOptions,
    rounds: usize,
) -> Vec<String> {
    // As `execute` does: never more rounds than calls.
    let rounds = planned
        .iter()
        .map(|p| p.resolved.measure.iterations.value as usize)
        .fold(rounds.max(1), usize::min)
        .max(1);
    let first = Round {
        index: 0,
        of: rounds,
        first_call: 0,
    };
    let mut lines = Vec::new();
    for (i, p) in planned.iter().enumerate() {
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
        let bundle = match sources::needs_download(&p.profile).as_slice() {
            [] => bundle,
            files => format!("{bundle} (the run downloads {} first)", files.join(", ")),
        };
        let r = &p.resolved;
        lines.push(format!(
            "{:03} {} {} op={} runtime={} warmup={} iterations={} bundle {bundle}",
            i + 1,
            p.profile.name,
            r.label,
            r.operation,
            r.runtime.value,
            r.measure.warmup.value,
            r.measure.iterations.value
        ));
        for input in &p.inputs {
            lines.push(format!(
                "    input `{}` {} fed {}: {}",
                input.name, input.declared, input.fed, input.source
            ));
            if let Some(note) = &input.note {
                lines.push(format!("    note: {note}"));
            }
        }
        if let Some(data) = &r.data
            && !data.expected.is_empty()
        {
            lines.push(format!(
                "    outputs checked against {} (--atol {} --rtol {})",
                data.expected
                    .iter()
                    .map(|s| s.source.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                data.atol,
                data.rtol
            ));
        }
        if let Some(chat) = &r.chat {
            lines.push(match (&chat.template_source, chat.prompt_tokens) {
                (Some(template), Some(tokens)) => format!(
                    "    chat: {tokens} prompt tokens rendered with {template}; identity {}",
                    r.identity
                ),
                _ => "    chat: rendered once the hub tokenizer's files are downloaded".to_string(),
            });
        }
        // Runtimes driving an outside tool show the exact commands (trtexec's build and time argv).
        let Some(b) = &p.bundle else { continue };
        let Ok(rt) = registry::runtime_with(&r.runtime.value, &options.runtimes) else {
            continue;
        };
        let timed = runtime::TimedPlan {
            warmup: r.measure.warmup.value,
            iterations: first.share_of_calls(r.measure.iterations.value),
            min_duration_s: first.share_of_seconds(r.measure.min_duration_s.value),
            feeds_data: r.data.as_ref().is_some_and(|d| !d.inputs.is_empty()),
        };
        // A runtime that runs in-process has no commands: ask before producing the model file, so
        // a dry run of one builds and generates nothing.
        let in_process = rt
            .describe_commands(
                None,
                &r.build_values(),
                &r.runtime_values(),
                &b.path,
                &timed,
            )
            .is_ok_and(|commands| commands.is_empty());
        if in_process {
            continue;
        }
        let onnx = sources::planned_model_file(&p.profile, &options.cache_root)
            .ok()
            .flatten();
        match rt.describe_commands(
            onnx.as_deref(),
            &r.build_values(),
            &r.runtime_values(),
            &b.path,
            &timed,
        ) {
            Ok(commands) if rounds > 1 && !commands.is_empty() => {
                lines.push(format!("    (round 1 of {rounds}:)"));
                lines.extend(commands.into_iter().map(|c| format!("    {c}")));
            }
            Ok(commands) => lines.extend(commands.into_iter().map(|c| format!("    {c}"))),
            Err(e) => lines.push(format!("    (commands unknown: {e})")),
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_shares_add_up_to_the_count_and_name_their_files() {
        let shares = |calls: u64, of: usize| -> Vec<u64> {
            (0..of)
                .map(|index| {
                    Round {
                        index,
                        of,
                        first_call: 0,
                    }
                    .share_of_calls(calls)
                })
                .collect()
        };
        assert_eq!(shares(25, 10), [3, 3, 3, 3, 3, 2, 2, 2, 2, 2]);
        assert_eq!(shares(25, 10).iter().sum::<u64>(), 25);
        assert_eq!(shares(7, 1), [7]);
        let r = Round {
            index: 1,
            of: 10,
            first_call: 0,
        };
        assert_eq!(r.file("worker.log"), "worker-r02.log");
        assert_eq!(Round::ONLY.file("worker.log"), "worker.log");
        assert_eq!(r.share_of_seconds(30.0), 3.0);
    }

    /// A middle round that ran out of its time budget keeps the case's fewer calls allowed, whichever
    /// round came last (the lost verdict of issue 31).
    #[test]
    fn merged_rounds_keep_a_budget_stop_of_any_round() {
        let round = |stop| Measured {
            stopped_by: Some(stop),
            ..Default::default()
        };
        let mut m = Measured::default();
        for stop in [LoopStop::Complete, LoopStop::Budget, LoopStop::Complete] {
            m.absorb(round(stop));
        }
        assert_eq!(m.stopped_by, Some(LoopStop::Budget));
        m.absorb(round(LoopStop::Signal));
        m.absorb(round(LoopStop::Budget));
        assert_eq!(m.stopped_by, Some(LoopStop::Signal));
    }
}
