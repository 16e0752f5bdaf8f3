//! `trtmc-bench tune`: search a runtime's build routes for the fastest accurate one (seed 003, issue 5).
//!
//! The engine is `trtmc-tune` (expressions, orders, accuracy gate, selection, resumable cache); the
//! orchestration (model, knob database, output directory, cache, route runner, saved bundles, summary
//! and report) is `trtmc_tune::orchestrate`. This command turns the options into a plan and a
//! request, shows the progress and prints the decision. `tune --continue --cache FILE` restores every
//! option from the cache header, as trtexec's `--continue` does.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};

use clap::Parser as _;
use trtmc_core::artifacts::matrix::SlurmSettings;
use trtmc_core::case::ResolvedCase;
use trtmc_runner::args::RunArgs;
use trtmc_runner::bundles::default_cache_root;
use trtmc_runtime::registry;
use trtmc_runtime::runtime;
use trtmc_tune::TunePlan;
use trtmc_tune::orchestrate::{
    self, CACHE_FILE, DEFAULT_LIVE_WORKERS, Model, ModelChoice, Start, TuneOutcome, TuneRequest,
};
use trtmc_tune::summary::{DecisionKind, TuneSummary};

use crate::exit::{CliError, CliResult, ExitCode};

/// `tune-worker`: a route's child process (started by `tune`, never by hand).
#[derive(Debug, clap::Args)]
pub struct TuneWorkerArgs {}

/// Runs a route's child process; returns its exit code.
pub fn execute_worker(_args: TuneWorkerArgs) -> i32 {
    trtmc_tune::child::main()
}

/// `tune-task TASKS --task I`: one Slurm array task of `tune --executor slurm` (never by hand).
#[derive(Debug, clap::Args)]
pub struct TuneTaskArgs {
    /// The task list the coordinator wrote.
    pub tasks_file: PathBuf,
    #[arg(long)]
    pub task: usize,
}

/// Builds one route of the task list; returns the exit code.
pub fn execute_task(args: TuneTaskArgs) -> i32 {
    trtmc_tune::slurm::task_main(&args.tasks_file, args.task)
}

fn input_err(message: impl std::fmt::Display) -> CliError {
    CliError::input(message)
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

pub fn execute(args: TuneArgs) -> CliResult {
    if args.resume {
        return resume(args);
    }
    let runtime_name = args.runtime.clone().ok_or_else(|| {
        CliError::new(
            ExitCode::Usage,
            format!(
                "give --runtime NAME (one of {}); see trtmc-bench tune --help",
                registry::runtime_names().join(", ")
            ),
        )
    })?;
    let rt = open_runtime(
        &runtime_name,
        args.trtexec.as_deref(),
        args.bundle_cache.as_deref(),
    )
    .map_err(input_err)?;
    let model = load_model(&args)?;
    let base = match &model {
        Some(m) => Some(resolve_base(&args, m, &runtime_name)?),
        None => None,
    };
    if let Some(base) = &base {
        check_fixed_settings(rt.as_ref(), base)?;
    }
    let knob_set =
        orchestrate::knob_database(rt.as_ref(), base.as_ref()).map_err(CliError::from)?;
    if let Some(filter) = &args.help_routes {
        let filter = Some(filter.as_str()).filter(|f| !f.is_empty());
        let text = if args.text {
            knob_set.help_text(filter)
        } else {
            knob_set.help_json(filter).map(|j| j + "\n")
        }
        .map_err(|e| input_err(e.to_string()))?;
        return crate::out::text(&text);
    }
    let expression_text = read_expression(&args)?;
    // The knobs are the installed runtime's (trtexec's database for tensorrt): say which.
    let expression = trtmc_tune::expr::parse(&expression_text, &knob_set)
        .map_err(|e| input_err(format!("{e} ({} {})", rt.name(), rt.version())))?;
    let config = args.config()?;
    // A bad executor choice or environment is refused before the output directory exists.
    let environment = match &args.environment {
        Some(path) => Some(crate::catalog_root::shipped(
            "environment",
            path,
            trtmc_share::SHIPPED_ENVIRONMENTS,
        )?),
        None => None,
    };
    let mut args = args;
    args.environment = environment;
    slurm_settings(&args)?;
    if args.dry_run {
        return crate::out::text(&trtmc_tune::search::dry_run(
            config.search,
            &expression,
            &knob_set,
            config.max_routes,
        ));
    }
    let Some(model) = model else {
        return Err(CliError::new(
            ExitCode::Usage,
            "give the model to tune: --model NAME (see `trtmc-bench list models`) or --onnx PATH",
        ));
    };
    let Some(base) = base else {
        return Err(CliError::internal("the model's case was not resolved"));
    };
    orchestrate::check_measurable(rt.as_ref()).map_err(CliError::from)?;
    let plan = TunePlan {
        knobs: knob_set,
        expression,
        config,
    };
    // Refused here, before the output directory, the cache or any route's bundle exists.
    plan.check_space().map_err(|e| input_err(e.to_string()))?;
    let out_dir = orchestrate::prepare_output(args.output.as_deref()).map_err(CliError::from)?;
    let cache_path = args
        .cache
        .clone()
        .map(|p| absolute(&p))
        .unwrap_or_else(|| out_dir.join(CACHE_FILE));
    let mut stored = args.clone();
    stored.output = Some(out_dir);
    stored.cache = Some(cache_path);
    run_tune(&stored, &runtime_name, model, base, Start::New(plan))
}

/// `--continue --cache FILE`: everything else comes from the cache header.
fn resume(args: TuneArgs) -> CliResult {
    let extra = args.extra_options_for_continue();
    if !extra.is_empty() {
        return Err(CliError::new(
            ExitCode::Usage,
            format!(
                "--continue takes only --cache FILE (every other option comes from the cache header, as with trtexec); drop {}",
                extra.join(", ")
            ),
        ));
    }
    let Some(cache_path) = args.cache.clone() else {
        return Err(CliError::new(
            ExitCode::Usage,
            "--continue needs --cache FILE (the tuning cache of the interrupted tune)",
        ));
    };
    let cache_path = absolute(&cache_path);
    let header = orchestrate::read_cache_header(&cache_path).map_err(CliError::from)?;
    let stored = Stored::try_parse_from(header.argv.iter().skip(1)).map_err(|e| {
        input_err(format!(
            "tuning cache {}: the stored command line no longer parses ({}); {}",
            cache_path.display(),
            e.to_string().lines().next().unwrap_or_default(),
            trtmc_tune::cache::start_over(&cache_path)
        ))
    })?;
    let mut stored = stored.args;
    stored.cache = Some(cache_path.clone());
    stored.quiet = args.quiet;
    let runtime_name = stored.runtime.clone().ok_or_else(|| {
        input_err(format!(
            "the tuning cache header names no --runtime; {}",
            trtmc_tune::cache::start_over(&cache_path)
        ))
    })?;
    open_runtime(
        &runtime_name,
        stored.trtexec.as_deref(),
        stored.bundle_cache.as_deref(),
    )
    .and_then(|rt| rt.availability().map_err(|e| e.to_string()))
    .map_err(|e| CliError::new(ExitCode::Environment, e))?;
    let model =
        load_model(&stored)?.ok_or_else(|| input_err("the tuning cache header names no model"))?;
    let base = resolve_base(&stored, &model, &runtime_name)?;
    if stored.output.is_none() {
        return Err(input_err(
            "the tuning cache header names no output directory",
        ));
    }
    run_tune(&stored, &runtime_name, model, base, Start::Continue(header))
}

fn load_model(args: &TuneArgs) -> CliResult<Option<Model>> {
    let choice = match (&args.onnx, &args.model) {
        (Some(onnx), _) => ModelChoice::OnnxFile(onnx.clone()),
        (None, Some(name)) => ModelChoice::Catalog {
            name: name.clone(),
            root: crate::catalog_root::resolve(args.manifest_root.clone())?,
        },
        (None, None) => return Ok(None),
    };
    Model::load(&choice, trtmc_core::test_hooks::TestHooks::current())
        .map(Some)
        .map_err(CliError::from)
}

/// The case's own and `--set` build and runtime settings, checked against the runtime's declarations
/// before any route is built (exit 3).
fn check_fixed_settings(rt: &dyn runtime::Runtime, base: &ResolvedCase) -> CliResult {
    runtime::check_build_settings(rt.name(), &base.build_values(), &rt.build_settings())
        .map_err(|e| input_err(e.to_string()))?;
    runtime::check_declared_values(
        rt.name(),
        rt.settings(),
        runtime::SettingSection::Build,
        &base.build_values(),
    )
    .map_err(input_err)?;
    runtime::check_settings(rt, &base.runtime_values()).map_err(input_err)
}

fn resolve_base(args: &TuneArgs, model: &Model, runtime_name: &str) -> CliResult<ResolvedCase> {
    model
        .resolve_base(args.case.as_deref(), &args.overrides()?, runtime_name)
        .map_err(CliError::from)
}

/// Hands the tune to the orchestrator, shows its progress, and prints the decision.
fn run_tune(
    args: &TuneArgs,
    runtime_name: &str,
    model: Model,
    base: ResolvedCase,
    start: Start,
) -> CliResult {
    let (Some(output_dir), Some(cache)) = (args.output.clone(), args.cache.clone()) else {
        return Err(CliError::internal(
            "the tune has no output directory or cache",
        ));
    };
    let worker_exe = std::env::current_exe()
        .map_err(|e| CliError::internal(format!("cannot locate this program: {e}")))?;
    let request = TuneRequest {
        model,
        base,
        runtime: runtime_name.to_string(),
        trtexec: args.trtexec.as_deref().map(absolute),
        case: args.case.clone(),
        sets: args.overrides()?,
        output_dir,
        cache,
        inputs: args.inputs.clone(),
        ref_outputs: args.ref_outputs.clone(),
        save_bundle: args.save_bundle.clone(),
        save_all: args.save_all,
        bundle_cache: args
            .bundle_cache
            .as_deref()
            .map(absolute)
            .unwrap_or_else(default_cache_root),
        live_workers: args.live_workers.unwrap_or(DEFAULT_LIVE_WORKERS),
        command_line: args.canonical_argv(),
        worker_exe,
        slurm: slurm_settings(args)?,
        page: trtmc_report::tune_page::render,
    };
    let progress = crate::progress::Terminal::new(args.quiet);
    // Every measured iteration is in the cache as soon as it ends: a stop keeps them, and the
    // workers end by their liveness pipes when this process does.
    let cache_line = trtmc_core::text::shell_line(&[
        "trtmc-bench".into(),
        "tune".into(),
        "--continue".into(),
        "--cache".into(),
        request.cache.display().to_string(),
    ]);
    trtmc_runner::interrupt::exit_on_signals(format!(
        "interrupted: the iterations measured so far are kept in the tuning cache {}; `{cache_line}` finishes the tune",
        request.cache.display()
    ))
    .map_err(|e| CliError::internal(format!("cannot watch for Ctrl-C: {e}")))?;
    let outcome = orchestrate::run(&request, start, &progress).map_err(CliError::from)?;
    crate::out::text(&decision_text(args, &outcome))?;
    let summary = &outcome.summary;
    if summary.all_failed() {
        return Err(CliError::new(
            ExitCode::CaseFailed,
            format!(
                "no route was eligible ({} evaluated: {} crashed, {} timed out, {} failed, {} failed accuracy); see each \
                 route's error in {} and the logs in {}",
                summary.counts.evaluated,
                summary.counts.crashed,
                summary.counts.timed_out,
                summary.counts.failed,
                summary.counts.accuracy_failed + summary.counts.accuracy_errors,
                outcome.summary_file.display(),
                outcome.log_dir.display()
            ),
        ));
    }
    if let (Some(db), Some(dir)) = (&args.history, outcome.summary_file.parent()) {
        crate::commands::history::remember(db, dir)?;
    }
    Ok(())
}

/// The Slurm settings of `--executor slurm --environment FILE` (the matrix's environment format);
/// `None` for the local executor.
fn slurm_settings(args: &TuneArgs) -> CliResult<Option<SlurmSettings>> {
    let slurm = args.executor.as_deref() == Some("slurm");
    match (&args.environment, slurm) {
        (None, false) => Ok(None),
        (Some(_), false) => Err(CliError::new(
            ExitCode::Usage,
            "--environment is read by --executor slurm only: add --executor slurm or drop --environment",
        )),
        (None, true) => Err(CliError::new(
            ExitCode::Usage,
            "--executor slurm needs --environment FILE (the matrix's environment format, docs/matrix.md; its \
             `slurm:` section gives sbatch arguments, exclusivity, polling and timeouts)",
        )),
        (Some(path), true) => trtmc_executor::environment::load_environment(path)
            .map(|env| Some(env.slurm))
            .map_err(input_err),
    }
}

/// The runtime `runtime_name`, driving the trtexec of `--trtexec PATH` when given.
/// Its probes' answers are kept in the bundle cache (`--bundle-cache`, else the default one).
fn open_runtime(
    runtime_name: &str,
    trtexec: Option<&Path>,
    bundle_cache: Option<&Path>,
) -> Result<Box<dyn runtime::Runtime>, String> {
    let options = runtime::RuntimeOptions {
        trtexec: trtexec.map(absolute),
        probe_cache: Some(
            bundle_cache
                .map(absolute)
                .unwrap_or_else(default_cache_root),
        ),
    };
    registry::runtime_with(runtime_name, &options)
}

fn read_expression(args: &TuneArgs) -> CliResult<String> {
    match (&args.routes, &args.routes_file) {
        (Some(e), _) => Ok(e.clone()),
        (None, Some(file)) => {
            let text =
                trtmc_core::limits::read_outside_text(file, trtmc_core::limits::FileKind::Text)
                    .map_err(|e| {
                        input_err(format!("cannot read --routes-file {}: {e}", file.display()))
                    })?;
            // A routes file holds the same tokens, one or more per line.
            Ok(text.split_whitespace().collect::<Vec<_>>().join(" "))
        }
        (None, None) => Err(CliError::new(
            ExitCode::Usage,
            "give the routes to try: --routes EXPR (e.g. --routes '-threads=[1|2]') or --routes-file FILE; \
             --help-routes lists the knobs",
        )),
    }
}

fn decision_text(args: &TuneArgs, outcome: &TuneOutcome) -> String {
    let s: &TuneSummary = &outcome.summary;
    let d = &s.decision;
    let mut out = String::new();
    let kind = match d.kind {
        DecisionKind::Winner => "winner",
        DecisionKind::Tie => "tie",
        DecisionKind::Sole => "sole eligible route",
        DecisionKind::None => "no eligible route",
    };
    out.push_str(&format!("decision: {kind}"));
    if let Some(r) = &d.route {
        out.push_str(&format!(": {r}"));
    }
    out.push('\n');
    out.push_str(&format!("  {}\n", d.reason));
    if let Some(vs) = &d.versus_baseline {
        out.push_str(&format!(
            "  versus the baseline {}: {:+.2} % ({:.0} % interval {:.3} to {:.3})\n",
            vs.other,
            vs.percent,
            vs.confidence * 100.0,
            vs.low,
            vs.high
        ));
    }
    if let Some(c) = s.context.as_ref().and_then(|c| c.chosen.as_ref())
        && !c.run_sets.is_empty()
    {
        out.push_str(&format!("  run it: {}\n", run_command(args, &c.run_sets)));
    }
    let mut stopped_early = String::new();
    if s.counts.eliminated > 0 {
        stopped_early.push_str(&format!(
            ", {} stopped early as clearly slower",
            s.counts.eliminated
        ));
    }
    if s.counts.budget_capped > 0 {
        stopped_early.push_str(&format!(
            ", {} measured up to the per-route budget",
            s.counts.budget_capped
        ));
    }
    out.push_str(&format!(
        "  {} routes evaluated, {} eligible{stopped_early}; summary {}, report {}\n",
        s.counts.evaluated,
        s.counts.eligible,
        outcome.summary_file.display(),
        outcome.report_file.display()
    ));
    for r in &s.routes {
        for w in &r.warnings {
            out.push_str(&format!("  warning: {}: {w}\n", route_or_none(&r.route)));
        }
    }
    if std::io::stdout().is_terminal() {
        for n in &s.notes {
            out.push_str(&format!("  note: {n}\n"));
        }
    }
    out
}

fn route_or_none(route: &str) -> &str {
    if route.is_empty() {
        "(no knobs)"
    } else {
        route
    }
}

/// The `run` command line that measures the chosen route: the tune's model, runtime, case, fixed
/// overrides and bundle cache plus the route's settings, so it resolves to the bundle the tune built.
fn run_command(args: &TuneArgs, run_sets: &[String]) -> String {
    let path = |p: &PathBuf| absolute(p);
    let dims = args.dims.iter().filter_map(|dim| {
        dim.split_once('=')
            .map(|(name, value)| format!("build.dims.{}={}", name.trim(), value.trim()))
    });
    let run = RunArgs {
        onnx: args.onnx.iter().map(path).collect(),
        models: args.model.iter().cloned().collect(),
        manifest_root: args.manifest_root.as_ref().map(path),
        runtimes: args.runtime.iter().cloned().collect(),
        cases: args.case.iter().cloned().collect(),
        sets: (args.sets.iter().cloned())
            .chain(dims)
            .chain(run_sets.iter().cloned())
            .collect(),
        shapes: args.shapes.clone(),
        trtexec: args.trtexec.as_ref().map(path),
        bundle_cache: args.bundle_cache.as_ref().map(path),
        ..RunArgs::default()
    };
    let mut argv: Vec<String> = vec!["trtmc-bench".into(), "run".into()];
    argv.extend(run.to_argv());
    trtmc_core::text::shell_line(&argv)
}

mod args;
#[cfg(test)]
mod tests;

use args::Stored;
pub use args::TuneArgs;
