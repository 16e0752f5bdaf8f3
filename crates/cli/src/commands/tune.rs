//! `trtmc-bench tune`: search a runtime's build routes for the fastest accurate one (seed 003, issue 5).
//!
//! The engine is `trtmc-tune` (expressions, orders, accuracy gate, selection, resumable cache); the
//! runtimes' knob databases and route runners are `trtmc_runner::tune`. This command wires them to a
//! model (catalog profile or `--onnx`), writes the tuning cache, the JSON summary and the HTML report, and
//! saves the chosen route's bundle. `tune --continue --cache FILE` restores every option from the cache
//! header, as trtexec's `--continue` does.

use std::collections::BTreeMap;
use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};

use clap::Parser as _;
use serde_json::{Value, json};
use trtmc_core::accuracy::{AccuracySpec, Algorithm, Tensor};
use trtmc_core::case::{self, Override, ResolveInput, ResolvedCase, Source};
use trtmc_core::catalog::{BuildSettings, Catalog, ModelSource, Profile, ProfileStatus, TestCase};
use trtmc_core::fsutil::{write_atomic, write_json_atomic};
use trtmc_runner::bundles::default_cache_root;
use trtmc_runner::tune::knobs;
use trtmc_runner::tune::process::{Options as ProcessOptions, ProcessRunner, RouteBundle, Target};
use trtmc_runtime::knobs::KnobError;
use trtmc_runtime::runtime;
use trtmc_tune::cache::{
    self, CacheHeader, CacheWriter, Fingerprint, IterationRecord, RouteStatus,
};
use trtmc_tune::summary::{ChosenRoute, DecisionKind, TuneContext, TuneSummary};
use trtmc_tune::{
    KnobSet, Objective, Reference, SearchOrder, Session, TuneConfig, TuneError, TunePlan,
};

use crate::exit::{CliError, CliResult, ExitCode};

pub const SUMMARY_FILE: &str = "tuning-summary.json";
pub const REPORT_FILE: &str = "tuning-report.html";
pub const CACHE_FILE: &str = "tuning-cache.jsonl";
pub const TUNED_ROUTE_FILE: &str = "tuned-route.json";
pub const TUNED_ROUTE_SCHEMA: &str = "trtmc.tuned-route/v1";
const LOG_DIR: &str = "logs";
const WORK_DIR: &str = ".tune-work";

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
    let knob_set = knob_database(rt.as_ref(), base.as_ref())?;
    if let Some(filter) = &args.help_routes {
        let filter = Some(filter.as_str()).filter(|f| !f.is_empty());
        let text = if args.text {
            knob_set.help_text(filter)
        } else {
            knob_set.help_json(filter).map(|j| j + "\n")
        }
        .map_err(|e| input_err(e.to_string()))?;
        return print_out(&text);
    }
    let expression_text = read_expression(&args)?;
    let expression = trtmc_tune::expr::parse(&expression_text, &knob_set)
        .map_err(|e| input_err(e.to_string()))?;
    let config = args.config()?;
    if args.dry_run {
        return print_out(&trtmc_tune::search::dry_run(
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
    rt.availability()
        .map_err(|e| CliError::new(ExitCode::Environment, e))?;
    if rt.self_timed().is_some() {
        return Err(CliError::new(
            ExitCode::Environment,
            format!(
                "runtime `{runtime_name}` times itself through its own tool; this build lists and dry-runs its routes \
                 (--help-routes, --dry-run) but cannot build and measure them yet (tunable end to end: tract, onnxruntime)"
            ),
        ));
    }
    let plan = TunePlan {
        knobs: knob_set,
        expression,
        config,
    };
    let out_dir = prepare_output(&args)?;
    let cache_path = args
        .cache
        .clone()
        .map(|p| absolute(&p))
        .unwrap_or_else(|| out_dir.join(CACHE_FILE));
    let mut stored = args.clone();
    stored.output = Some(out_dir.clone());
    stored.cache = Some(cache_path.clone());
    let prepared = prepare_run(&stored, model, base, &runtime_name)?;
    let header = CacheHeader::new(
        plan.config.clone(),
        plan.knobs.to_db(),
        plan.expression.to_string(),
        prepared.fingerprint.clone(),
        stored.canonical_argv(),
        prepared.files.clone(),
    );
    let mut writer =
        CacheWriter::create(&cache_path, &header).map_err(|e| input_err(e.to_string()))?;
    run_tune(&stored, &plan, prepared, &mut writer, Vec::new(), &out_dir)
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
    let content = cache::read(&cache_path).map_err(|e| input_err(e.to_string()))?;
    let header = content.header;
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
    let plan = TunePlan::from_header(&header).map_err(|e| input_err(e.to_string()))?;
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
    let out_dir = stored
        .output
        .clone()
        .ok_or_else(|| input_err("the tuning cache header names no output directory"))?;
    std::fs::create_dir_all(&out_dir).map_err(|e| {
        CliError::new(
            ExitCode::Output,
            format!("cannot create {}: {e}", out_dir.display()),
        )
    })?;
    let prepared = prepare_run(&stored, model, base, &runtime_name)?;
    header
        .check_fingerprint(&prepared.fingerprint)
        .map_err(|e| input_err(e.to_string()))?;
    let (content, mut writer) =
        cache::open_for_continue(&cache_path).map_err(|e| input_err(e.to_string()))?;
    if !stored.quiet && content.torn_bytes > 0 {
        eprintln!(
            "tune: dropped a torn last line ({} bytes) of {}",
            content.torn_bytes,
            cache_path.display()
        );
    }
    run_tune(
        &stored,
        &plan,
        prepared,
        &mut writer,
        content.records,
        &out_dir,
    )
}

/// A model ready to tune: the profile and the ONNX file.
struct Model {
    profile: Profile,
    catalog_root: Option<PathBuf>,
}

fn load_model(args: &TuneArgs) -> CliResult<Option<Model>> {
    if let Some(onnx) = &args.onnx {
        return Ok(Some(Model {
            profile: onnx_profile(onnx)?,
            catalog_root: None,
        }));
    }
    let Some(name) = &args.model else {
        return Ok(None);
    };
    let root = crate::catalog_root::resolve(args.manifest_root.clone());
    let catalog = Catalog::load(&root).map_err(input_err)?;
    let profile = catalog.require(name).map_err(input_err)?.clone();
    if !profile.status.is_ready() {
        return Err(input_err(format!(
            "model `{}` cannot be tuned: {}",
            profile.name,
            profile.status.label()
        )));
    }
    Ok(Some(Model {
        profile,
        catalog_root: Some(root),
    }))
}

fn resolve_base(args: &TuneArgs, model: &Model, runtime_name: &str) -> CliResult<ResolvedCase> {
    if matches!(model.profile.source, ModelSource::None) {
        return Err(input_err(format!(
            "model `{}` has no model file, so it has no build routes to tune",
            model.profile.name
        )));
    }
    let input = ResolveInput {
        case: args.case.as_deref(),
        sets: args.overrides()?,
        runtime: Some(runtime_name.to_string()),
        ..ResolveInput::default()
    };
    case::resolve(&model.profile, &input).map_err(input_err)
}

/// The runtime's knob databases, merged (plus the test knobs under the test harness).
fn knob_database(rt: &dyn runtime::Runtime, base: Option<&ResolvedCase>) -> CliResult<KnobSet> {
    knobs::knob_set(rt, base).map_err(|e| match e {
        knobs::KnobSetError::Runtime(KnobError::Tool(message)) => {
            CliError::new(ExitCode::Environment, message)
        }
        knobs::KnobSetError::Runtime(e @ KnobError::NoKnobs { .. }) => input_err(e.to_string()),
        knobs::KnobSetError::Database(message) => input_err(message),
        knobs::KnobSetError::Internal(message) => CliError::internal(message),
    })
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

fn print_out(text: &str) -> CliResult {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::new(
            ExitCode::Output,
            format!("cannot write to stdout: {e}"),
        )),
        _ => Ok(()),
    }
}

/// The output directory: created when missing; an existing one must be empty or hold a tune's files.
fn prepare_output(args: &TuneArgs) -> CliResult<PathBuf> {
    let dir = match &args.output {
        Some(d) => absolute(d),
        None => {
            let stamp = jiff::ZonedDateTime::now()
                .strftime("%Y%m%d-%H%M%S")
                .to_string();
            absolute(&PathBuf::from("trtmc-results").join(format!("tune-{stamp}")))
        }
    };
    let refuse = |why: String| {
        CliError::new(
            ExitCode::Output,
            format!("-o {}: {why}; choose another directory", dir.display()),
        )
    };
    match std::fs::symlink_metadata(&dir) {
        Ok(m) if m.file_type().is_symlink() => return Err(refuse("it is a symlink".into())),
        Ok(m) if !m.is_dir() => return Err(refuse("it is a file".into())),
        Ok(_) => {
            let entries: Vec<String> = std::fs::read_dir(&dir)
                .map_err(|e| refuse(format!("it cannot be read: {e}")))?
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            let ours = [
                SUMMARY_FILE,
                REPORT_FILE,
                CACHE_FILE,
                LOG_DIR,
                WORK_DIR,
                "bundles",
            ];
            if let Some(other) = entries.iter().find(|e| !ours.contains(&e.as_str())) {
                return Err(refuse(format!(
                    "it holds `{other}`, which a tune did not write"
                )));
            }
        }
        Err(_) => {}
    }
    std::fs::create_dir_all(&dir).map_err(|e| refuse(format!("it cannot be created: {e}")))?;
    Ok(dir)
}

/// What a tune needs besides its plan: the runner's target, the fingerprint and the golden data.
struct Prepared {
    target: Target,
    fingerprint: Fingerprint,
    files: BTreeMap<String, String>,
    model_sha256: String,
    runtime_version: String,
    inputs: Vec<Tensor>,
    reference: Reference,
    operation: String,
}

fn prepare_run(
    args: &TuneArgs,
    model: Model,
    base: ResolvedCase,
    runtime_name: &str,
) -> CliResult<Prepared> {
    let cache_root = args.bundle_cache.clone().unwrap_or_else(default_cache_root);
    let onnx =
        trtmc_runner::sources::materialize(&model.profile, &cache_root).map_err(input_err)?;
    let model_sha256 = cache::sha256_file(&onnx).map_err(|e| {
        input_err(format!(
            "cannot read the model file {}: {e}",
            onnx.display()
        ))
    })?;
    let rt = runtime::runtime(runtime_name).map_err(input_err)?;
    let runtime_version = rt.version();
    let mut shapes = BTreeMap::new();
    let mut build_settings = BTreeMap::new();
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    for (k, v) in base.build_values() {
        if let Some(input) = k.strip_prefix("shapes.") {
            shapes.insert(input.to_string(), text(&v));
        } else {
            build_settings.insert(format!("build.{k}"), text(&v));
        }
    }
    for (k, v) in base.runtime_values() {
        build_settings.insert(format!("runtime.{k}"), text(&v));
    }
    for (k, v) in &base.request {
        build_settings.insert(format!("request.{k}"), text(&v.value));
    }
    build_settings.insert("operation".into(), base.operation.clone());
    build_settings.insert("case".into(), base.case.clone());
    let fingerprint = Fingerprint {
        model_sha256: model_sha256.clone(),
        runtime: runtime_name.to_string(),
        runtime_version: runtime_version.clone(),
        machine: cache::describe_machine(),
        shapes,
        build_settings,
    };
    let mut files = BTreeMap::new();
    files.insert("onnx".to_string(), onnx.display().to_string());
    if let Some(root) = &model.catalog_root {
        files.insert(
            "manifest_root".to_string(),
            absolute(root).display().to_string(),
        );
    }
    let read = |what: &str, p: &Path| {
        trtmc_tune::golden::read_golden(p).map_err(|e| input_err(format!("{what}: {e}")))
    };
    let inputs = match &args.inputs {
        Some(p) => {
            files.insert("inputs".into(), absolute(p).display().to_string());
            read("--inputs", p)?
        }
        None => Vec::new(),
    };
    let reference = match &args.ref_outputs {
        Some(p) => {
            files.insert("ref_outputs".into(), absolute(p).display().to_string());
            Reference::Given(read("--ref-outputs", p)?)
        }
        None => Reference::DefaultRoute,
    };
    let mut profile = model.profile;
    profile.tokenizer = trtmc_runner::sources::resolve_tokenizer(&profile).map_err(input_err)?;
    let target = Target {
        profile,
        case: args.case.clone(),
        sets: args.overrides()?,
        runtime: runtime_name.to_string(),
        onnx,
    };
    Ok(Prepared {
        target,
        fingerprint,
        files,
        model_sha256,
        runtime_version,
        inputs,
        reference,
        operation: base.operation,
    })
}

const MEASUREMENT: &str = "each route is built by its own child process (tune-worker build) into the bundle cache and served by \
     its own worker process that keeps the bundle loaded; racing rounds and head-to-head passes alternate short \
     rounds of calls between the routes' live workers, one command at a time, so two measurements never run at \
     once (at most --live-workers workers stay loaded; the least recently used is stopped and restarted when \
     needed)";

fn run_tune(
    args: &TuneArgs,
    plan: &TunePlan,
    prepared: Prepared,
    writer: &mut CacheWriter,
    previous: Vec<IterationRecord>,
    out_dir: &Path,
) -> CliResult {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::internal(format!("cannot locate this program: {e}")))?;
    let work_dir = out_dir.join(WORK_DIR);
    let cache_root = args
        .bundle_cache
        .clone()
        .map(|p| absolute(&p))
        .unwrap_or_else(default_cache_root);
    let options = ProcessOptions {
        exe,
        cache_root,
        work_dir: work_dir.clone(),
        log_dir: out_dir.join(LOG_DIR),
        max_live_workers: args.live_workers.unwrap_or(8),
        command_line: args.canonical_argv(),
    };
    let Prepared {
        target,
        files,
        model_sha256,
        runtime_version,
        inputs,
        reference,
        operation,
        ..
    } = prepared;
    let model_name = target.profile.name.clone();
    let model_file = target.onnx.display().to_string();
    let runtime_name = target.runtime.clone();
    let mut runner =
        ProcessRunner::new(target, options).map_err(|e| CliError::new(ExitCode::Environment, e))?;
    let quiet = args.quiet;
    let objective = plan.config.objective;
    let mut progress = |rec: &IterationRecord, replayed: bool| {
        if !quiet {
            eprintln!("{}", progress_line(rec, replayed, objective));
        }
    };
    if !quiet {
        eprintln!(
            "tune: {} on {runtime_name}, {} search over {}; cache {}",
            model_name,
            plan.config.search,
            plan.expression,
            writer.path().display()
        );
    }
    let session = Session {
        cache: Some(writer),
        previous,
        stop_after_new_iterations: None,
        progress: Some(&mut progress),
    };
    let outcome = trtmc_tune::tune(&mut runner, plan, &inputs, &reference, session);
    let mut summary = outcome.map_err(tune_error)?;
    let _ = std::fs::remove_dir_all(&work_dir);

    let decided = summary.decision.route.clone();
    let mut context_files = BTreeMap::new();
    let mut chosen_route = None;
    if let Some(route) = &decided {
        let info = runner.built.get(route).cloned();
        let saved = match (&args.save_bundle, &info) {
            (Some(dir), Some(info)) => Some(save_bundle(info, dir, &summary)?),
            _ => None,
        };
        chosen_route = info.map(|i| chosen_settings(&i, saved.clone()));
        if let Some(s) = saved {
            context_files.insert("saved_bundle".to_string(), s);
        }
    }
    if args.save_all {
        let dir = out_dir.join("bundles");
        for r in summary.routes.iter().filter(|r| r.eligible) {
            if let Some(info) = runner.built.get(&r.route) {
                let name = format!("iter{:03}.bundle", r.iter);
                save_bundle(info, &dir.join(name), &summary)?;
            }
        }
        context_files.insert("all_bundles".into(), dir.display().to_string());
    }
    drop(runner);
    for (k, v) in files {
        context_files.insert(k, v);
    }
    context_files.insert(
        "report".into(),
        out_dir.join(REPORT_FILE).display().to_string(),
    );
    summary.context = Some(TuneContext {
        model: model_name,
        model_file,
        model_sha256,
        runtime: runtime_name,
        runtime_version,
        machine: cache::describe_machine(),
        operation,
        measurement: MEASUREMENT.into(),
        command_line: cache::shell_quote_argv(&args.canonical_argv()),
        cache: Some(writer_path(args, out_dir)),
        chosen: chosen_route,
        files: context_files,
    });
    let summary_path = out_dir.join(SUMMARY_FILE);
    write_json_atomic(&summary_path, &summary).map_err(|e| {
        CliError::new(
            ExitCode::Output,
            format!("cannot write {}: {e}", summary_path.display()),
        )
    })?;
    let summary_value = serde_json::to_value(&summary).map_err(CliError::internal)?;
    let html = trtmc_report::tune_page::render(&summary_value);
    let report_path = out_dir.join(REPORT_FILE);
    write_atomic(&report_path, html.as_bytes()).map_err(|e| {
        CliError::new(
            ExitCode::Output,
            format!("cannot write {}: {e}", report_path.display()),
        )
    })?;
    print_out(&decision_text(&summary, out_dir))?;
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
                summary_path.display(),
                out_dir.join(LOG_DIR).display()
            ),
        ));
    }
    Ok(())
}

fn writer_path(args: &TuneArgs, out_dir: &Path) -> String {
    args.cache
        .clone()
        .map(|p| absolute(&p))
        .unwrap_or_else(|| out_dir.join(CACHE_FILE))
        .display()
        .to_string()
}

fn tune_error(e: TuneError) -> CliError {
    match e {
        TuneError::Reference { .. } => CliError::new(ExitCode::CaseFailed, e.to_string()),
        TuneError::Cache(cache::CacheError::Io { .. }) => {
            CliError::new(ExitCode::Output, e.to_string())
        }
        other => CliError::input(other.to_string()),
    }
}

fn chosen_settings(info: &RouteBundle, saved: Option<String>) -> ChosenRoute {
    let mut other = BTreeMap::new();
    if let Some(f) = &info.settings.fault {
        other.insert("test.fault".into(), f.clone());
    }
    if info.settings.sleep_us > 0 {
        other.insert("test.sleep_us".into(), info.settings.sleep_us.to_string());
    }
    ChosenRoute {
        route: info.route.clone(),
        build_settings: info.resolved.build_values(),
        runtime_settings: info.resolved.runtime_values(),
        other,
        run_sets: knobs::run_sets(&info.settings),
        saved_bundle: saved,
    }
}

/// Copies a route's bundle to `dir` (which must be absent, empty, or an earlier saved bundle) and writes
/// `tuned-route.json` beside its files.
fn save_bundle(info: &RouteBundle, dir: &Path, summary: &TuneSummary) -> CliResult<String> {
    let dir = absolute(dir);
    let refuse = |why: String| {
        CliError::new(
            ExitCode::Output,
            format!("--save-bundle {}: {why}", dir.display()),
        )
    };
    if let Ok(m) = std::fs::symlink_metadata(&dir) {
        if m.file_type().is_symlink() || !m.is_dir() {
            return Err(refuse("it exists and is not a directory".into()));
        }
        let empty = std::fs::read_dir(&dir)
            .map(|mut e| e.next().is_none())
            .unwrap_or(false);
        if !empty && !dir.join(TUNED_ROUTE_FILE).is_file() {
            return Err(refuse(
                "it is not empty and holds no tuned-route.json (choose another directory)".into(),
            ));
        }
        std::fs::remove_dir_all(&dir).map_err(|e| refuse(format!("cannot replace it: {e}")))?;
    }
    copy_dir(&info.bundle, &dir)
        .map_err(|e| refuse(format!("cannot copy {}: {e}", info.bundle.display())))?;
    let route = summary.route(&info.route);
    let record = json!({
        "schema": TUNED_ROUTE_SCHEMA,
        "route": info.route,
        "decision": summary.decision.kind,
        "chosen": summary.decision.route.as_deref() == Some(info.route.as_str()),
        "build_settings": info.resolved.build_values(),
        "runtime_settings": info.resolved.runtime_values(),
        "run_sets": knobs::run_sets(&info.settings),
        "estimate": route.and_then(|r| r.search.clone()),
        "source_bundle": info.bundle.display().to_string(),
    });
    write_json_atomic(&dir.join(TUNED_ROUTE_FILE), &record)
        .map_err(|e| refuse(format!("cannot write {TUNED_ROUTE_FILE}: {e}")))?;
    Ok(dir.display().to_string())
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

fn progress_line(rec: &IterationRecord, replayed: bool, objective: Objective) -> String {
    let round = rec.round.map(|r| format!(" round {r}")).unwrap_or_default();
    let what = match rec.status {
        RouteStatus::Ok => match rec.time_ms {
            Some(t) => format!(
                "ok, {} {t:.4} ms over {} calls",
                objective.time_statistic(),
                rec.samples_ms.len()
            ),
            None => "ok".into(),
        },
        other => format!(
            "{}: {}",
            serde_json::to_value(other)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            rec.error_message.as_deref().unwrap_or("")
        ),
    };
    format!(
        "[{:>3}] {}{round} {}{}: {what}",
        rec.iter,
        rec.phase,
        if rec.build_route.is_empty() {
            "(no knobs)"
        } else {
            &rec.build_route
        },
        if replayed { " (from the cache)" } else { "" }
    )
}

fn decision_text(s: &TuneSummary, out_dir: &Path) -> String {
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
        let sets: Vec<String> = c.run_sets.iter().map(|s| format!("--set {s}")).collect();
        out.push_str(&format!(
            "  run it: trtmc-bench run ... {}\n",
            sets.join(" ")
        ));
    }
    out.push_str(&format!(
        "  {} routes evaluated, {} eligible; summary {}, report {}\n",
        s.counts.evaluated,
        s.counts.eligible,
        out_dir.join(SUMMARY_FILE).display(),
        out_dir.join(REPORT_FILE).display()
    ));
    if std::io::stdout().is_terminal() {
        for n in &s.notes {
            out.push_str(&format!("  note: {n}\n"));
        }
    }
    out
}

/// A one-profile catalog entry for `--onnx PATH`: generic inference on seeded synthesized inputs.
fn onnx_profile(path: &Path) -> CliResult<Profile> {
    let meta = std::fs::metadata(path)
        .map_err(|e| input_err(format!("cannot read --onnx {}: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(input_err(format!(
            "--onnx {} is not a file",
            path.display()
        )));
    }
    let file = std::fs::canonicalize(path)
        .map_err(|e| input_err(format!("cannot resolve --onnx {}: {e}", path.display())))?;
    let name = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "onnx".into());
    let mut request = BTreeMap::new();
    request.insert("seed".to_string(), json!(0));
    Ok(Profile {
        name: name.clone(),
        family: name,
        summary: format!("ONNX file {}", file.display()),
        task_strategy: "onnx_inference".into(),
        operation: Some("infer".into()),
        runtime_strategy: trtmc_core::catalog::DEFAULT_RUNTIME.into(),
        reference_precision: None,
        tokenizer: None,
        source: ModelSource::Path { path: file.clone() },
        reweight_seed: None,
        build: BuildSettings::default(),
        cases: vec![TestCase {
            name: "default".into(),
            summary: "seeded synthesized inputs".into(),
            reference_precision: None,
            request,
            measure: Default::default(),
            manifest: file.clone(),
        }],
        smoke_of: None,
        manifest_hash: trtmc_core::hash::sha256_hex(
            format!("tune-onnx-file:{}", file.display()).as_bytes(),
        ),
        manifest: file,
        status: ProfileStatus::Ready,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canonical_argv_parses_back_to_the_same_options() {
        let args = TuneArgs {
            model: Some("tiny-cnn".into()),
            runtime: Some("tract".into()),
            routes: Some("-threads=[1|2] -precision=fp32".into()),
            search: Some("racing".into()),
            timeout: Some(-1.0),
            calls: Some(20),
            tensor_thresholds: vec!["y=1e-3".into()],
            sets: vec!["request.seed=3".into()],
            dims: vec!["batch=1".into()],
            save_all: true,
            output: Some(PathBuf::from("out")),
            ..TuneArgs::default()
        };
        let argv = args.canonical_argv();
        let back = Stored::try_parse_from(argv.iter().skip(1))
            .expect("parses")
            .args;
        assert_eq!(back.canonical_argv(), argv);
        assert_eq!(back.routes, args.routes);
        assert_eq!(back.timeout, Some(-1.0));
        assert_eq!(back.dims, vec!["batch=1"]);
        assert!(
            back.overrides()
                .expect("overrides")
                .iter()
                .any(|o| o.key == "build.dims.batch" && o.value == "1")
        );
        assert!(back.output.as_ref().expect("output").is_absolute());
        assert_eq!(back.config().expect("config").budget_s, None);
    }

    #[test]
    fn continue_refuses_other_options() {
        let args = TuneArgs {
            resume: true,
            cache: Some("c.jsonl".into()),
            quiet: true,
            ..TuneArgs::default()
        };
        assert!(args.extra_options_for_continue().is_empty());
        let args = TuneArgs {
            runtime: Some("tract".into()),
            dry_run: true,
            ..args
        };
        assert_eq!(
            args.extra_options_for_continue(),
            vec!["--runtime", "--dry-run"]
        );
    }

    #[test]
    fn bad_option_values_name_the_option() {
        let args = TuneArgs {
            search: Some("greedy".into()),
            ..TuneArgs::default()
        };
        assert!(args.config().expect_err("bad").message.contains("--search"));
        let args = TuneArgs {
            tensor_thresholds: vec!["logits".into()],
            ..TuneArgs::default()
        };
        assert!(args.config().expect_err("bad").message.contains("NAME=EPS"));
        let args = TuneArgs {
            confidence: Some(2.0),
            ..TuneArgs::default()
        };
        assert!(
            args.config()
                .expect_err("bad")
                .message
                .contains("confidence")
        );
    }
}
