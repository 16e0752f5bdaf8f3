//! `trtmc-bench tune`: search a runtime's build routes for the fastest accurate one (seed 003, issue 5).
//!
//! The engine is `trtmc-tune` (expressions, orders, accuracy gate, selection, resumable cache); the
//! orchestration (model, knob database, output directory, cache, route runner, saved bundles, summary
//! and report) is `trtmc_runner::tune::orchestrate`. This command turns the options into a plan and a
//! request, shows the progress and prints the decision. `tune --continue --cache FILE` restores every
//! option from the cache header, as trtexec's `--continue` does.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};

use clap::Parser as _;
use trtmc_core::accuracy::{AccuracySpec, Algorithm};
use trtmc_core::case::{self, Override, ResolvedCase, Source};
use trtmc_runner::bundles::default_cache_root;
use trtmc_runner::tune::orchestrate::{
    self, CACHE_FILE, DEFAULT_LIVE_WORKERS, Model, ModelChoice, Start, TuneOutcome, TuneRequest,
    TuneRunError,
};
use trtmc_runtime::runtime;
use trtmc_tune::summary::{DecisionKind, TuneSummary};
use trtmc_tune::{Objective, SearchOrder, TuneConfig, TunePlan};

use crate::exit::{CliError, CliResult, ExitCode};

/// Search a runtime's build routes: build each route in its own process, gate on accuracy, measure, and
/// pick the fastest accurate route only when the measurements say so (else report a tie).
#[derive(Debug, Clone, Default, clap::Args)]
#[command(after_help = "Examples:
  trtmc-bench tune --model tiny-cnn --runtime tract --routes '-threads=[1|2]' --dry-run
  trtmc-bench tune --model light-resnet50 --runtime onnxruntime \\
      --routes '-intra_threads=[1|2] -optimization_level=[basic|all] -execution_mode=[sequential|parallel]' \\
      --search racing -o results/tune-resnet --save-bundle best.bundle
  trtmc-bench tune --runtime tract --help-routes
  trtmc-bench tune --continue --cache results/tune-resnet/tuning-cache.jsonl

trtexec spellings work too: --tuneBuildRoutes, --tuneBuildRouteFile, --tuningSearch, --tuningCacheFile,
--tuningTimeOut, --dryRun, --helpBuildRoute, --saveEngine, --saveAllEngines, --accuracyAlgorithm,
--accuracyThreshold. Exit code 5 when no route is eligible (see docs/exit-codes.md).")]
pub struct TuneArgs {
    /// Catalog model to tune (see `trtmc-bench list models`).
    #[arg(short, long, value_name = "NAME", conflicts_with = "onnx")]
    pub model: Option<String>,
    /// Tune any ONNX file (generic inference on seeded synthesized inputs).
    #[arg(long, value_name = "PATH")]
    pub onnx: Option<PathBuf>,
    /// Runtime whose knobs are tuned: tract, onnxruntime or tensorrt.
    #[arg(long, value_name = "NAME")]
    pub runtime: Option<String>,
    /// Build-route expression in TensorRT 11.1's grammar, e.g. '-threads=[1|2] -precision=fp32'.
    #[arg(
        long,
        visible_alias = "tuneBuildRoutes",
        value_name = "EXPR",
        conflicts_with = "routes_file",
        allow_hyphen_values = true
    )]
    pub routes: Option<String>,
    /// Read the expression from a file (tokens separated by spaces or newlines).
    #[arg(long, visible_alias = "tuneBuildRouteFile", value_name = "FILE")]
    pub routes_file: Option<PathBuf>,
    /// Search order: fast (baseline + one-offs), full (every combination), mixed, racing.
    #[arg(long, visible_alias = "tuningSearch", value_name = "ORDER")]
    pub search: Option<String>,
    /// The tuning cache (JSON Lines), appended to after every iteration (default: DIR/tuning-cache.jsonl).
    #[arg(long, visible_alias = "tuningCacheFile", value_name = "FILE")]
    pub cache: Option<PathBuf>,
    /// Continue an interrupted tune from --cache FILE; every other option comes from the cache header.
    #[arg(long = "continue")]
    pub resume: bool,
    /// List the routes the search would try, in trtexec's format, and exit.
    #[arg(long, visible_alias = "dryRun")]
    pub dry_run: bool,
    /// Print the runtime's knob database (getAllBuildRoutes JSON), or one knob's entry, and exit.
    #[arg(long, visible_alias = "helpBuildRoute", value_name = "KNOB", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub help_routes: Option<String>,
    /// With --help-routes: print text instead of JSON.
    #[arg(long)]
    pub text: bool,
    /// Output directory (summary, report, default cache, logs); default trtmc-results/tune-<time>.
    #[arg(short, long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Budget of the whole tune in seconds (checked before each iteration; -1: none).
    #[arg(
        long,
        visible_alias = "tuningTimeOut",
        value_name = "SECONDS",
        allow_negative_numbers = true
    )]
    pub timeout: Option<f64>,
    /// Limit for one route's build, inference or measurement; the route's process is killed past it.
    #[arg(long, value_name = "SECONDS")]
    pub route_timeout: Option<f64>,
    /// Build and evaluate at most N routes (all phases together).
    #[arg(long, value_name = "N")]
    pub max_routes: Option<usize>,
    /// Statistic routes are ranked on: p50 (default), p95, mean or throughput.
    #[arg(long, value_name = "STAT")]
    pub objective: Option<String>,
    /// Golden inputs (.npz, .npy, or a .json index of raw little-endian files); default: seeded inputs.
    #[arg(long, value_name = "FILE")]
    pub inputs: Option<PathBuf>,
    /// Golden outputs for --inputs; default: the outputs of the default route.
    #[arg(long, value_name = "FILE", requires = "inputs")]
    pub ref_outputs: Option<PathBuf>,
    /// Accuracy loss: l0, l1, l2, lInf or cos (default cos).
    #[arg(long, visible_alias = "accuracyAlgorithm", value_name = "ALGO")]
    pub accuracy_algorithm: Option<String>,
    /// Absolute tolerance of l0 (default 1e-5).
    #[arg(long, value_name = "X")]
    pub atol: Option<f64>,
    /// Relative tolerance of l0 (default 1e-5).
    #[arg(long, value_name = "X")]
    pub rtol: Option<f64>,
    /// Largest accepted loss per output tensor, ε (default 1e-3; 1e30 disables the gate).
    #[arg(long, visible_alias = "accuracyThreshold", value_name = "EPS")]
    pub accuracy_threshold: Option<f64>,
    /// Threshold of one output tensor: NAME=EPS (repeatable).
    #[arg(long = "tensor-threshold", value_name = "NAME=EPS")]
    pub tensor_thresholds: Vec<String>,
    /// Copy the chosen route's bundle here (with tuned-route.json).
    #[arg(long, visible_alias = "saveEngine", value_name = "DIR")]
    pub save_bundle: Option<PathBuf>,
    /// Also copy every eligible route's bundle into DIR/bundles.
    #[arg(long, visible_alias = "saveAllEngines")]
    pub save_all: bool,
    /// Steady-state calls per route (racing: the most a route gets); default 100.
    #[arg(long, value_name = "N")]
    pub calls: Option<usize>,
    /// Warm-up calls before a route's first measurement; default 5.
    #[arg(long, value_name = "N")]
    pub warmup: Option<usize>,
    /// Calls per route per racing round; default 5.
    #[arg(long, value_name = "N")]
    pub race_round_calls: Option<usize>,
    /// Interleaved head-to-head passes over the finalists; default 5.
    #[arg(long, value_name = "N")]
    pub final_passes: Option<usize>,
    /// Calls per finalist per head-to-head pass; default 10.
    #[arg(long, value_name = "N")]
    pub final_calls: Option<usize>,
    /// Confidence of every interval; default 0.95.
    #[arg(long, value_name = "P")]
    pub confidence: Option<f64>,
    /// Smallest margin that makes a winner (0.01 = 1 %); default 0.01.
    #[arg(long, value_name = "FRACTION")]
    pub min_effect: Option<f64>,
    /// Named case of the model whose operation is measured (default: its first case).
    #[arg(long, value_name = "NAME")]
    pub case: Option<String>,
    /// Fixed override for every route: request.KEY=V, build.KEY=V, runtime.KEY=V (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Shape of a dynamic input, trtexec style: NAME:1x3x224x224 (repeatable).
    #[arg(long = "shape", value_name = "NAME:DIMS")]
    pub shapes: Vec<String>,
    /// Size of a named dynamic dimension, e.g. batch=1 (repeatable; the same as --set build.dims.NAME=V).
    #[arg(long = "dim", value_name = "NAME=VALUE")]
    pub dims: Vec<String>,
    /// Catalog root holding MODEL.toml files.
    #[arg(long, value_name = "PATH")]
    pub manifest_root: Option<PathBuf>,
    /// The trtexec executable whose `--helpBuildRoute` knob database the tensorrt runtime tunes
    /// (default: trtexec on PATH, then /usr/src/tensorrt/bin).
    #[arg(long, value_name = "PATH")]
    pub trtexec: Option<PathBuf>,
    /// Managed bundle cache the routes are built into (default: <user cache dir>/trtmc/bundles).
    #[arg(long, value_name = "PATH")]
    pub bundle_cache: Option<PathBuf>,
    /// Most route workers kept loaded at once (least recently used stopped first); default 8.
    #[arg(long, value_name = "N")]
    pub live_workers: Option<usize>,
    /// No per-iteration progress on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `tune-worker`: a route's child process (started by `tune`, never by hand).
#[derive(Debug, clap::Args)]
pub struct TuneWorkerArgs {}

/// Runs a route's child process; returns its exit code.
pub fn execute_worker(_args: TuneWorkerArgs) -> i32 {
    trtmc_runner::tune::child::main()
}

/// Re-parses the argument vector stored in a cache header.
#[derive(Debug, clap::Parser)]
#[command(name = "tune")]
struct Stored {
    #[command(flatten)]
    args: TuneArgs,
}

fn input_err(message: impl Into<String>) -> CliError {
    CliError::input(message)
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

impl TuneArgs {
    /// The options that define the tune, as a canonical argument vector with absolute paths (stored in
    /// the cache header; `--continue` parses it back). `--continue`, `--dry-run`, `--help-routes`,
    /// `--text` and `--quiet` are not part of it.
    fn canonical_argv(&self) -> Vec<String> {
        let mut v: Vec<String> = vec!["trtmc-bench".into(), "tune".into()];
        let mut opt = |flag: &str, value: Option<String>| {
            if let Some(value) = value {
                v.push(format!("--{flag}={value}"));
            }
        };
        let path = |p: &Option<PathBuf>| p.as_deref().map(|p| absolute(p).display().to_string());
        let num = |n: Option<usize>| n.map(|n| n.to_string());
        let float = |x: Option<f64>| x.map(|x| x.to_string());
        opt("model", self.model.clone());
        opt("onnx", path(&self.onnx));
        opt("runtime", self.runtime.clone());
        opt("routes", self.routes.clone());
        opt("routes-file", path(&self.routes_file));
        opt("search", self.search.clone());
        opt("cache", path(&self.cache));
        opt("output", path(&self.output));
        opt("timeout", float(self.timeout));
        opt("route-timeout", float(self.route_timeout));
        opt("max-routes", num(self.max_routes));
        opt("objective", self.objective.clone());
        opt("inputs", path(&self.inputs));
        opt("ref-outputs", path(&self.ref_outputs));
        opt("accuracy-algorithm", self.accuracy_algorithm.clone());
        opt("atol", float(self.atol));
        opt("rtol", float(self.rtol));
        opt("accuracy-threshold", float(self.accuracy_threshold));
        for t in &self.tensor_thresholds {
            opt("tensor-threshold", Some(t.clone()));
        }
        opt("save-bundle", path(&self.save_bundle));
        if self.save_all {
            v.push("--save-all".into());
        }
        let mut opt = |flag: &str, value: Option<String>| {
            if let Some(value) = value {
                v.push(format!("--{flag}={value}"));
            }
        };
        opt("calls", num(self.calls));
        opt("warmup", num(self.warmup));
        opt("race-round-calls", num(self.race_round_calls));
        opt("final-passes", num(self.final_passes));
        opt("final-calls", num(self.final_calls));
        opt("confidence", float(self.confidence));
        opt("min-effect", float(self.min_effect));
        opt("case", self.case.clone());
        for s in &self.sets {
            opt("set", Some(s.clone()));
        }
        for s in &self.shapes {
            opt("shape", Some(s.clone()));
        }
        for d in &self.dims {
            opt("dim", Some(d.clone()));
        }
        opt("manifest-root", path(&self.manifest_root));
        opt("trtexec", path(&self.trtexec));
        opt("bundle-cache", path(&self.bundle_cache));
        opt("live-workers", num(self.live_workers));
        v
    }

    /// Options given besides `--continue --cache FILE [--quiet]`.
    fn extra_options_for_continue(&self) -> Vec<String> {
        let base = TuneArgs {
            cache: self.cache.clone(),
            resume: self.resume,
            quiet: self.quiet,
            ..TuneArgs::default()
        };
        let given = self.canonical_argv();
        let allowed = base.canonical_argv();
        let mut extra: Vec<String> = given
            .into_iter()
            .filter(|a| !allowed.contains(a))
            .map(|a| a.split('=').next().unwrap_or_default().to_string())
            .collect();
        for (set, flag) in [
            (self.dry_run, "--dry-run"),
            (self.help_routes.is_some(), "--help-routes"),
        ] {
            if set {
                extra.push(flag.into());
            }
        }
        extra.dedup();
        extra
    }

    fn config(&self) -> CliResult<TuneConfig> {
        let mut c = TuneConfig::default();
        if let Some(s) = &self.search {
            c.search = s
                .parse::<SearchOrder>()
                .map_err(|e| input_err(format!("--search: {e}")))?;
        }
        if let Some(o) = &self.objective {
            c.objective = o
                .parse::<Objective>()
                .map_err(|e| input_err(format!("--objective: {e}")))?;
        }
        if let Some(n) = self.calls {
            c.calls = n;
        }
        if let Some(n) = self.warmup {
            c.warmup_calls = n;
        }
        if let Some(n) = self.race_round_calls {
            c.race_round_calls = n;
        }
        if let Some(n) = self.final_passes {
            c.final_passes = n;
        }
        if let Some(n) = self.final_calls {
            c.final_calls_per_pass = n;
        }
        if let Some(x) = self.confidence {
            c.confidence = x;
        }
        if let Some(x) = self.min_effect {
            c.min_effect = x;
        }
        c.max_routes = self.max_routes;
        c.route_timeout_s = self.route_timeout;
        // trtexec's --tuningTimeOut=-1 means no budget.
        c.budget_s = self.timeout.filter(|t| *t >= 0.0);
        let algorithm = match &self.accuracy_algorithm {
            Some(a) => a
                .parse::<Algorithm>()
                .map_err(|e| input_err(format!("--accuracy-algorithm: {e}")))?,
            None => c.accuracy.algorithm,
        };
        let mut spec = AccuracySpec::new(
            algorithm,
            self.accuracy_threshold.unwrap_or(c.accuracy.epsilon),
        );
        if let Some(x) = self.atol {
            spec.atol = x;
        }
        if let Some(x) = self.rtol {
            spec.rtol = x;
        }
        for t in &self.tensor_thresholds {
            let (name, eps) = t.split_once('=').ok_or_else(|| {
                input_err(format!(
                    "--tensor-threshold `{t}` is not NAME=EPS (e.g. --tensor-threshold logits=1e-3)"
                ))
            })?;
            let eps: f64 = eps.trim().parse().map_err(|_| {
                input_err(format!("--tensor-threshold `{t}`: `{eps}` is not a number"))
            })?;
            spec.per_tensor_epsilon.insert(name.trim().to_string(), eps);
        }
        c.accuracy = spec;
        c.validate()
            .map_err(|e| input_err(format!("{e} (see trtmc-bench tune --help)")))?;
        Ok(c)
    }

    fn overrides(&self) -> CliResult<Vec<Override>> {
        let mut sets: Vec<Override> = self
            .sets
            .iter()
            .map(|s| Override::parse(s, Source::Set))
            .collect::<Result<_, _>>()
            .map_err(input_err)?;
        for shape in &self.shapes {
            let (name, dims) = shape.split_once(':').ok_or_else(|| {
                input_err(format!(
                    "--shape `{shape}` is not NAME:DIMS (e.g. --shape input:1x3x224x224)"
                ))
            })?;
            case::parse_shape(dims).map_err(|e| input_err(format!("--shape {shape}: {e}")))?;
            sets.push(Override {
                key: format!("build.shapes.{name}"),
                value: dims.to_string(),
                source: Source::Cli,
            });
        }
        for dim in &self.dims {
            let (name, value) = dim
                .split_once('=')
                .filter(|(n, v)| !n.trim().is_empty() && v.trim().parse::<u64>().is_ok())
                .ok_or_else(|| {
                    input_err(format!(
                        "--dim `{dim}` is not NAME=VALUE with a whole number (e.g. --dim batch=1)"
                    ))
                })?;
            sets.push(Override {
                key: format!("build.dims.{}", name.trim()),
                value: value.trim().to_string(),
                source: Source::Cli,
            });
        }
        Ok(sets)
    }
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
                runtime::runtime_names().join(", ")
            ),
        )
    })?;
    let rt = open_runtime(&runtime_name, args.trtexec.as_deref()).map_err(input_err)?;
    let model = load_model(&args)?;
    let base = match &model {
        Some(m) => Some(resolve_base(&args, m, &runtime_name)?),
        None => None,
    };
    let knob_set = orchestrate::knob_database(rt.as_ref(), base.as_ref()).map_err(tune_error)?;
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
    let expression = trtmc_tune::expr::parse(&expression_text, &knob_set)
        .map_err(|e| input_err(e.to_string()))?;
    let config = args.config()?;
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
    orchestrate::check_measurable(rt.as_ref()).map_err(tune_error)?;
    let plan = TunePlan {
        knobs: knob_set,
        expression,
        config,
    };
    let out_dir = orchestrate::prepare_output(args.output.as_deref()).map_err(tune_error)?;
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
    let header = orchestrate::read_cache_header(&cache_path).map_err(tune_error)?;
    let stored = Stored::try_parse_from(header.argv.iter().skip(1)).map_err(|e| {
        input_err(format!(
            "tuning cache {}: the stored command line no longer parses ({}); start a new tune",
            cache_path.display(),
            e.to_string().lines().next().unwrap_or_default()
        ))
    })?;
    let mut stored = stored.args;
    stored.cache = Some(cache_path.clone());
    stored.quiet = args.quiet;
    let runtime_name = stored
        .runtime
        .clone()
        .ok_or_else(|| input_err("the tuning cache header names no --runtime; start a new tune"))?;
    open_runtime(&runtime_name, stored.trtexec.as_deref())
        .and_then(|rt| rt.availability())
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
            root: crate::catalog_root::resolve(args.manifest_root.clone()),
        },
        (None, None) => return Ok(None),
    };
    Model::load(&choice, &trtmc_core::test_hooks::TestHooks::from_env())
        .map(Some)
        .map_err(tune_error)
}

fn resolve_base(args: &TuneArgs, model: &Model, runtime_name: &str) -> CliResult<ResolvedCase> {
    model
        .resolve_base(args.case.as_deref(), &args.overrides()?, runtime_name)
        .map_err(tune_error)
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
    };
    let progress = crate::progress::Terminal::new(args.quiet);
    let outcome = orchestrate::run(&request, start, &progress).map_err(tune_error)?;
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
    Ok(())
}

fn tune_error(e: TuneRunError) -> CliError {
    match e {
        TuneRunError::Input(m) => CliError::new(ExitCode::Input, m),
        TuneRunError::Environment(m) => CliError::new(ExitCode::Environment, m),
        TuneRunError::CaseFailed(m) => CliError::new(ExitCode::CaseFailed, m),
        TuneRunError::Output(m) => CliError::new(ExitCode::Output, m),
        TuneRunError::Internal(m) => CliError::internal(m),
    }
}

/// The runtime `runtime_name`, driving the trtexec of `--trtexec PATH` when given.
fn open_runtime(
    runtime_name: &str,
    trtexec: Option<&Path>,
) -> Result<Box<dyn runtime::Runtime>, String> {
    let options = runtime::RuntimeOptions {
        trtexec: trtexec.map(absolute),
    };
    runtime::runtime_with(runtime_name, &options)
}

fn read_expression(args: &TuneArgs) -> CliResult<String> {
    match (&args.routes, &args.routes_file) {
        (Some(e), _) => Ok(e.clone()),
        (None, Some(file)) => {
            let text = std::fs::read_to_string(file).map_err(|e| {
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
    out.push_str(&format!(
        "  {} routes evaluated, {} eligible; summary {}, report {}\n",
        s.counts.evaluated,
        s.counts.eligible,
        outcome.summary_file.display(),
        outcome.report_file.display()
    ));
    if std::io::stdout().is_terminal() {
        for n in &s.notes {
            out.push_str(&format!("  note: {n}\n"));
        }
    }
    out
}

/// The `run` command line that measures the chosen route: the tune's model, runtime, case, fixed
/// overrides and bundle cache plus the route's settings, so it resolves to the bundle the tune built.
fn run_command(args: &TuneArgs, run_sets: &[String]) -> String {
    let mut argv: Vec<String> = vec!["trtmc-bench".into(), "run".into()];
    let mut opt = |flag: &str, value: String| argv.extend([flag.to_string(), value]);
    let path = |p: &Path| absolute(p).display().to_string();
    if let Some(onnx) = &args.onnx {
        opt("--onnx", path(onnx));
    }
    if let Some(model) = &args.model {
        opt("--model", model.clone());
    }
    if let Some(root) = &args.manifest_root {
        opt("--manifest-root", path(root));
    }
    if let Some(runtime) = &args.runtime {
        opt("--runtime", runtime.clone());
    }
    if let Some(case) = &args.case {
        opt("--case", case.clone());
    }
    for set in &args.sets {
        opt("--set", set.clone());
    }
    for shape in &args.shapes {
        opt("--shape", shape.clone());
    }
    for dim in &args.dims {
        if let Some((name, value)) = dim.split_once('=') {
            opt(
                "--set",
                format!("build.dims.{}={}", name.trim(), value.trim()),
            );
        }
    }
    if let Some(trtexec) = &args.trtexec {
        opt("--trtexec", path(trtexec));
    }
    if let Some(cache) = &args.bundle_cache {
        opt("--bundle-cache", path(cache));
    }
    for set in run_sets {
        opt("--set", set.clone());
    }
    trtmc_core::text::shell_line(&argv)
}

#[cfg(test)]
mod tests;
