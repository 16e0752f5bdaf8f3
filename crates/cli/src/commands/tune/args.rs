//! `trtmc-bench tune`'s options: the clap definition, the canonical command line stored in the tuning
//! cache for `--continue`, and their conversion into the tuning configuration and case overrides.

use std::path::PathBuf;

use trtmc_core::case::{self, Override};
use trtmc_tune::TuneConfig;
use trtmc_tune::config::ConfigFlags;

use super::{absolute, input_err};
use crate::exit::CliResult;

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
    /// Also store the tune's measured routes in this history database (a SQLite path or postgres://
    /// URL) once its summary is written (docs/history.md).
    #[arg(long, value_name = "DB")]
    pub history: Option<String>,
    /// Budget of the whole tune in seconds (checked before each iteration; -1: none).
    #[arg(
        long,
        visible_alias = "tuningTimeOut",
        value_name = "SECONDS",
        allow_negative_numbers = true
    )]
    pub timeout: Option<f64>,
    /// Limit for one route's build, inference or measurement; the route's process is killed past it.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub route_timeout: Option<f64>,
    /// Seconds of search measurement per route: the calls that fit are made and kept, none is killed
    /// (default 10; -1: none, every route gets --calls).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub route_budget: Option<f64>,
    /// Stop a route after its 3 probe calls when each is above FACTOR × the best route's statistic so
    /// far (status eliminated; default 5; 0: never).
    #[arg(long, value_name = "FACTOR", allow_negative_numbers = true)]
    pub early_stop_factor: Option<f64>,
    /// Build and evaluate at most N routes (all phases together).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = trtmc_runner::numbers::count_usize)]
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
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = trtmc_runner::numbers::count_usize)]
    pub calls: Option<usize>,
    /// Warm-up calls before a route's first measurement; default 5.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = trtmc_runner::numbers::count_usize)]
    pub warmup: Option<usize>,
    /// Calls per route per racing round; default 5.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = trtmc_runner::numbers::count_usize)]
    pub race_round_calls: Option<usize>,
    /// Interleaved head-to-head passes over the finalists; default 10 (more, up to twice as many, while
    /// a finalist is undecided).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = trtmc_runner::numbers::count_usize)]
    pub final_passes: Option<usize>,
    /// Calls per finalist per head-to-head pass; default 10.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = trtmc_runner::numbers::count_usize)]
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
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = trtmc_runner::numbers::count_usize)]
    pub live_workers: Option<usize>,
    /// Where the routes are built: local (default), or slurm (each round's builds as one job array;
    /// accuracy checks and timing stay on this node).
    #[arg(long, value_name = "EXECUTOR", value_parser = ["local", "slurm"])]
    pub executor: Option<String>,
    /// With --executor slurm: the environment file (YAML, trtmc.perf-environment/v1, the matrix's
    /// format) whose `slurm:` section gives sbatch arguments, exclusivity, polling and timeouts; or a
    /// shipped one by name: cpu, gpu.
    #[arg(long, value_name = "FILE")]
    pub environment: Option<PathBuf>,
    /// No per-iteration progress on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

/// The most route workers `--live-workers` may keep loaded at once.
const MOST_LIVE_WORKERS: usize = 64;

/// Re-parses the argument vector stored in a cache header.
#[derive(Debug, clap::Parser)]
#[command(name = "tune")]
pub(super) struct Stored {
    #[command(flatten)]
    pub(super) args: TuneArgs,
}

impl TuneArgs {
    /// The options that define the tune, as a canonical argument vector with absolute paths (stored in
    /// the cache header; `--continue` parses it back). `--continue`, `--dry-run`, `--help-routes`,
    /// `--text` and `--quiet` are not part of it.
    pub(super) fn canonical_argv(&self) -> Vec<String> {
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
        opt("route-budget", float(self.route_budget));
        opt("early-stop-factor", float(self.early_stop_factor));
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
        opt("executor", self.executor.clone());
        opt("environment", path(&self.environment));
        v
    }

    /// Options given besides `--continue --cache FILE [--quiet]`.
    pub(super) fn extra_options_for_continue(&self) -> Vec<String> {
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

    pub(super) fn config(&self) -> CliResult<TuneConfig> {
        if let Some(n) = self.live_workers
            && !(1..=MOST_LIVE_WORKERS).contains(&n)
        {
            return Err(input_err(format!(
                "--live-workers {n}: give from 1 to {MOST_LIVE_WORKERS} (each live worker holds a loaded model)"
            )));
        }
        ConfigFlags {
            search: self.search.clone(),
            objective: self.objective.clone(),
            calls: self.calls,
            warmup: self.warmup,
            race_round_calls: self.race_round_calls,
            final_passes: self.final_passes,
            final_calls: self.final_calls,
            confidence: self.confidence,
            min_effect: self.min_effect,
            max_routes: self.max_routes,
            route_timeout_s: self.route_timeout,
            timeout_s: self.timeout,
            route_budget_s: self.route_budget,
            early_stop_factor: self.early_stop_factor,
            accuracy_algorithm: self.accuracy_algorithm.clone(),
            accuracy_threshold: self.accuracy_threshold,
            atol: self.atol,
            rtol: self.rtol,
            tensor_thresholds: self.tensor_thresholds.clone(),
        }
        .to_config()
        .map_err(input_err)
    }

    pub(super) fn overrides(&self) -> CliResult<Vec<Override>> {
        case::cli_overrides(&self.sets, &self.shapes, &self.dims).map_err(input_err)
    }
}
