//! `trtmc-bench run`: benchmark resolved workloads and write a result directory.

use std::path::PathBuf;

use trtmc_core::artifacts::CaseStatus;
use trtmc_core::case::{MeasureFlags, SweepAxis};
use trtmc_core::catalog::{Catalog, Profile};
use trtmc_core::test_hooks::TestHooks;
use trtmc_runner::bundles::{BundleOptions, default_cache_root};
use trtmc_runner::run::{self as runner, RunOptions, Selection};

use crate::exit::{CliError, CliResult, ExitCode};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TelemetryMode {
    /// Sample when a GPU (nvidia-smi) is present.
    Auto,
    On,
    Off,
}

/// Benchmark one or more resolved workloads (model profile × case × bundle) in an isolated worker.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  trtmc-bench run --model tiny-gpt
  trtmc-bench run --model tiny-gpt --case sampled --set request.max_new_tokens=16 -o results/gpt
  trtmc-bench run --model tiny-cnn --sweep request.batch_size=1,4
  trtmc-bench run --onnx model.onnx --shape input:1x3x224x224 --iterations 100
  trtmc-bench run plan.yaml -o results/current")]
pub struct RunArgs {
    /// A plan file (YAML) listing models with their cases, counts and overrides.
    #[arg(value_name = "PLAN.yaml")]
    pub plan: Option<PathBuf>,
    /// Catalog model to run; repeat to run a batch (each missing bundle is built once).
    #[arg(short, long = "model", value_name = "NAME")]
    pub models: Vec<String>,
    /// Benchmark any ONNX file without a catalog entry (inputs synthesized from its declared shapes);
    /// repeat to compare several files.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["models", "plan"])]
    pub onnx: Vec<PathBuf>,
    /// Shape of a dynamic input, trtexec style: NAME:1x3x224x224 (repeatable). A dynamic dimension
    /// neither this nor --inputs sets is 1.
    #[arg(long = "shape", value_name = "NAME:DIMS")]
    pub shapes: Vec<String>,
    /// Feed this data instead of synthesized inputs: an .npz, a folder of NAME.npy or of ONNX
    /// input_N.pb files (a folder of test_data_set_* folders: one set each), or trtexec's
    /// name:file.bin list. Repeat for several sets; the calls rotate over them.
    #[arg(long = "inputs", value_name = "PATH")]
    pub inputs: Vec<String>,
    /// Check the outputs of each --inputs set against these (same formats, output_N.pb in ONNX test
    /// folders); a mismatch fails the case (exit 5).
    #[arg(long = "check-outputs", value_name = "PATH", requires = "inputs")]
    pub check_outputs: Vec<String>,
    /// Absolute tolerance of --check-outputs (Polygraphy's meaning: an element fails when it is beyond
    /// both --atol and --rtol).
    #[arg(long, value_name = "X", requires = "check_outputs", default_value_t = trtmc_core::data::DEFAULT_ATOL)]
    pub atol: f64,
    /// Relative tolerance of --check-outputs, against |expected|.
    #[arg(long, value_name = "X", requires = "check_outputs", default_value_t = trtmc_core::data::DEFAULT_RTOL)]
    pub rtol: f64,
    /// Named case to run (repeatable; cases are independent runs, never combined).
    #[arg(long = "case", value_name = "NAME")]
    pub cases: Vec<String>,
    /// Override a field: request.KEY=V, build.KEY=V, runtime.KEY=V (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Sweep a field over values; several sweeps form a Cartesian product: KEY=A,B,C.
    #[arg(long = "sweep", value_name = "KEY=V1,V2")]
    pub sweeps: Vec<String>,
    /// Runtime to use instead of the profile's runtime_strategy; repeat to run every case on each
    /// runtime (e.g. --runtime tract --runtime onnxruntime).
    #[arg(long = "runtime", value_name = "NAME")]
    pub runtimes: Vec<String>,
    /// Split each case's measurement into N rounds, one worker process per case per round, the cases
    /// interleaved (A B, B A, …), and compare every case with the baseline over the paired rounds
    /// (default: 10 when there is more than one case, else 1).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = trtmc_runner::numbers::count_usize)]
    pub rounds: Option<usize>,
    /// The case the others are compared with: its number in the summary (default 1, the first, and then
    /// only cases of its workload get a verdict; given, every case is compared with it).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = trtmc_runner::numbers::count_usize)]
    pub baseline: Option<usize>,
    /// Warm-up calls before timing (default: the operation's, e.g. 5 for generation, 50 for encoders,
    /// cut short once they take a fifth of the time budget).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = trtmc_runner::numbers::count)]
    pub warmup: Option<u64>,
    /// Timed calls, exactly (default: at least the operation's count, e.g. 50 for generation, 500 for
    /// encoders, for at least 1 s, within the time budget).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = trtmc_runner::numbers::count)]
    pub iterations: Option<u64>,
    /// Keep timing until at least this many seconds have passed (and --iterations calls are done).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub duration: Option<f64>,
    /// Time budget of each case's timed loop: it stops here even before --iterations calls, keeping
    /// what it timed (default: the operation's budget, e.g. 30 s, when --iterations is not given).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub max_duration: Option<f64>,
    /// Stop a case's worker after this many seconds (default 600); the calls it timed are kept and the
    /// case is recorded as interrupted.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub timeout: Option<f64>,
    /// Result directory; replaced only if empty or a previous trtmc result (default: a new timestamped one).
    #[arg(short, long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Use this bundle directory as is (reported as not compatibility-verified).
    #[arg(long, value_name = "PATH")]
    pub bundle: Option<PathBuf>,
    /// Directory searched for a bundle with a matching cache key (repeatable).
    #[arg(long = "bundle-root", value_name = "PATH")]
    pub bundle_roots: Vec<PathBuf>,
    /// Managed bundle cache (default: <user cache dir>/trtmc/bundles).
    #[arg(long, value_name = "PATH")]
    pub bundle_cache: Option<PathBuf>,
    /// Fail instead of building when no bundle exists.
    #[arg(long, conflicts_with = "rebuild")]
    pub no_build: bool,
    /// Rebuild the managed-cache bundle even if a compatible one exists (a match below --bundle-root is
    /// not used then).
    #[arg(long, conflicts_with = "bundle")]
    pub rebuild: bool,
    /// Print the resolved plan and bundle paths without building or loading anything.
    #[arg(long)]
    pub dry_run: bool,
    /// Worker executable (default: this program in worker mode).
    #[arg(long, value_name = "PATH")]
    pub worker: Option<PathBuf>,
    /// Sample CPU, memory, clocks (and nvidia-smi) outside the timed calls into telemetry.json.
    #[arg(long, value_enum, default_value = "auto")]
    pub telemetry: TelemetryMode,
    /// Catalog root holding MODEL.toml files.
    #[arg(long, value_name = "PATH")]
    pub manifest_root: Option<PathBuf>,
    /// After each case's timed run, a separate per-layer profiling pass writing layers_<runtime>.json and
    /// profile_<runtime>.json (trtexec's export shapes, read by `analyze`) into the case directory.
    #[arg(long)]
    pub profile: bool,
    /// Operation calls of the profiling pass (after the case's warm-up calls).
    #[arg(long, value_name = "N", default_value_t = trtmc_runner::run::DEFAULT_PROFILE_ITERATIONS, requires = "profile", allow_negative_numbers = true, value_parser = trtmc_runner::numbers::count)]
    pub profile_iterations: u64,
    /// The trtexec executable of the tensorrt runtime (default: trtexec on PATH, then /usr/src/tensorrt/bin).
    #[arg(long, value_name = "PATH")]
    pub trtexec: Option<PathBuf>,
    /// A folder searched for runtime libraries and tools (libonnxruntime, trtexec, TensorRT's libraries)
    /// before the default places; repeatable, in search order. Recorded in result.json's provenance.
    #[arg(long = "runtime-dir", value_name = "PATH")]
    pub runtime_dirs: Vec<PathBuf>,
    /// No progress display.
    #[arg(short, long)]
    pub quiet: bool,
    /// Also write the summary to FILE: .json, .csv or .md by extension (repeatable).
    #[arg(long = "export", value_name = "FILE")]
    pub exports: Vec<PathBuf>,
    /// Print the summary to stdout in this format instead of the table (progress stays on stderr);
    /// `wide` prints the table with every column.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<crate::commands::report::ExportFormat>,
    #[command(flatten)]
    pub ci: crate::ci::CiArgs,
    /// Also store the result in this history database (a SQLite path or postgres:// URL) once it is
    /// committed (docs/history.md).
    #[arg(long, value_name = "DB")]
    pub history: Option<String>,
}

/// Rounds when several cases are compared and `--rounds` is not given: enough for a 95 % interval
/// (6 is the least, docs/statistics.md) with room for a round spoiled by a machine speed step.
const DEFAULT_ROUNDS: usize = 10;
const MOST_ROUNDS: usize = 1000;

/// Adds the profile of an ONNX file to `catalog` under a name no other profile has (the file's stem,
/// then `-2`, `-3`, …) and returns that name.
fn add_onnx_profile(
    catalog: &mut Catalog,
    onnx: &std::path::Path,
    what: &str,
) -> Result<String, CliError> {
    let mut profile =
        Profile::from_onnx_file(onnx).map_err(|e| CliError::input(format!("{what}: {e}")))?;
    let stem = profile.name.clone();
    let mut n = 2;
    while catalog.profiles.iter().any(|p| p.name == profile.name) {
        profile.name = format!("{stem}-{n}");
        n += 1;
    }
    let name = profile.name.clone();
    catalog.profiles.push(profile);
    Ok(name)
}

/// Data specs with their paths made absolute (a run may change directory before the worker reads
/// them); a trtexec `name:file` list is kept as given but for its files.
fn absolute_specs(specs: &[String]) -> Vec<String> {
    let absolute = |path: &str| {
        std::path::absolute(path)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| path.to_string())
    };
    specs
        .iter()
        .map(|spec| {
            if std::path::Path::new(spec).exists() || !spec.contains(':') {
                return absolute(spec);
            }
            spec.split(',')
                .map(|item| match item.rsplit_once(':') {
                    Some((name, file)) => format!("{name}:{}", absolute(file)),
                    None => item.to_string(),
                })
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect()
}

pub fn execute(args: RunArgs) -> CliResult {
    crate::runtime_dirs::apply(&args.runtime_dirs)?;
    let command_line: Vec<String> = std::env::args().collect();
    let test_hooks = TestHooks::from_env();
    crate::summary::check_exports(&args.exports)?;
    args.ci
        .fail_on
        .check("run", &[crate::ci::FailOn::Invalid])?;
    let flags = MeasureFlags {
        warmup: args.warmup,
        iterations: args.iterations,
        min_duration_s: args.duration,
        max_duration_s: args.max_duration,
        timeout_s: args.timeout,
    };
    let sets =
        trtmc_core::case::cli_overrides(&args.sets, &args.shapes, &[]).map_err(CliError::input)?;
    let sweeps: Vec<SweepAxis> = args
        .sweeps
        .iter()
        .map(|s| SweepAxis::parse(s))
        .collect::<Result<_, _>>()
        .map_err(CliError::input)?;
    if args.profile && !(1..=trtmc_core::case::MOST_CALLS).contains(&args.profile_iterations) {
        return Err(CliError::input(format!(
            "--profile-iterations {}: give from 1 to {} calls",
            args.profile_iterations,
            trtmc_core::case::MOST_CALLS
        )));
    }

    for (flag, value) in [("--atol", args.atol), ("--rtol", args.rtol)] {
        if !(value.is_finite() && value >= 0.0) {
            return Err(CliError::input(format!(
                "{flag} {value}: give a tolerance of 0 or more"
            )));
        }
    }
    let inputs = absolute_specs(&args.inputs);
    let check_outputs = absolute_specs(&args.check_outputs);

    // One selection per runtime asked for (none: the profile's own).
    let runtimes: Vec<Option<String>> = if args.runtimes.is_empty() {
        vec![None]
    } else {
        args.runtimes.iter().cloned().map(Some).collect()
    };
    // `--model NAME` or `--onnx FILE`: one selection per runtime, with the command line's settings.
    let on_every_runtime = |model: &str| -> Vec<Selection> {
        runtimes
            .iter()
            .map(|runtime| Selection {
                model: model.to_string(),
                cases: args.cases.clone(),
                runtime: runtime.clone(),
                sets: sets.clone(),
                sweeps: sweeps.clone(),
                flags: flags.clone(),
                inputs: inputs.clone(),
                check_outputs: check_outputs.clone(),
                tolerance: Some((args.atol, args.rtol)),
                ..Default::default()
            })
            .collect()
    };
    let (catalog, selections) = if !args.onnx.is_empty() {
        let mut catalog = Catalog {
            root: args.onnx[0].parent().map(PathBuf::from).unwrap_or_default(),
            profiles: Vec::new(),
        };
        let mut selections = Vec::new();
        for onnx in &args.onnx {
            let name = add_onnx_profile(&mut catalog, onnx, "--onnx")?;
            selections.extend(on_every_runtime(&name));
        }
        (catalog, selections)
    } else {
        let root = crate::catalog_root::resolve(args.manifest_root.clone())?;
        let mut catalog = Catalog::load(&root).map_err(CliError::input)?;
        let mut selections = Vec::new();
        if let Some(plan) = &args.plan {
            for entry in trtmc_core::plan::load(plan).map_err(CliError::input)? {
                let model = match &entry.onnx {
                    Some(onnx) => {
                        add_onnx_profile(&mut catalog, onnx, &format!("plan {}", plan.display()))?
                    }
                    None => entry.model.clone(),
                };
                let mut entry_sweeps = entry.sweeps.clone();
                entry_sweeps.extend(sweeps.iter().cloned());
                let entry_runtimes: Vec<Option<String>> = if args.runtimes.is_empty() {
                    vec![entry.runtime.clone()]
                } else {
                    runtimes.clone()
                };
                for runtime in entry_runtimes {
                    selections.push(Selection {
                        model: model.clone(),
                        cases: if args.cases.is_empty() {
                            entry.cases.clone()
                        } else {
                            args.cases.clone()
                        },
                        runtime,
                        plan_sets: entry.sets.clone(),
                        plan_measure: entry.measure.clone(),
                        sets: sets.clone(),
                        sweeps: entry_sweeps.clone(),
                        flags: flags.clone(),
                        inputs: inputs.clone(),
                        check_outputs: check_outputs.clone(),
                        tolerance: Some((args.atol, args.rtol)),
                    });
                }
            }
        }
        for model in &args.models {
            selections.extend(on_every_runtime(model));
        }
        if selections.is_empty() {
            return Err(CliError::new(
                ExitCode::Usage,
                "nothing to run: give --model NAME (see `trtmc-bench list models`), --onnx PATH, or a plan file",
            ));
        }
        (catalog, selections)
    };

    let bundle = BundleOptions {
        explicit: args.bundle.clone(),
        roots: args.bundle_roots.clone(),
        cache_root: args.bundle_cache.clone().unwrap_or_else(default_cache_root),
        no_build: args.no_build,
        rebuild: args.rebuild,
        runtimes: trtmc_runtime::runtime::RuntimeOptions {
            trtexec: args.trtexec.clone(),
        },
    };
    let planned = runner::plan_cases(&catalog, &selections, &bundle, &test_hooks)?;
    let rounds = match args.rounds {
        Some(n) if n == 0 || n > MOST_ROUNDS => {
            return Err(CliError::input(format!(
                "--rounds {n}: give from 1 to {MOST_ROUNDS} rounds (each round starts one worker per case)"
            )));
        }
        Some(n) => n,
        None if planned.len() > 1 => DEFAULT_ROUNDS,
        None => 1,
    };
    let baseline = args.baseline.unwrap_or(1);
    if baseline == 0 || baseline > planned.len() {
        return Err(CliError::input(format!(
            "--baseline {baseline}: give a case number from 1 to {} (the # column of the summary)",
            planned.len()
        )));
    }
    // Dimensions left dynamic were set to 1: one line each, naming the --shape that chooses them.
    if !args.dry_run && !args.quiet {
        let notes: std::collections::BTreeSet<&String> = planned
            .iter()
            .flat_map(|p| &p.inputs)
            .filter_map(|i| i.note.as_ref())
            .collect();
        for note in notes {
            eprintln!("note: {note}");
        }
    }
    if args.dry_run {
        outln!(
            "plan: {} case(s); bundle cache {}",
            planned.len(),
            bundle.cache_root.display()
        )?;
        for line in runner::describe_plan(&planned, &bundle, rounds) {
            outln!("{line}")?;
        }
        return Ok(());
    }

    let worker = match &args.worker {
        Some(w) => w.clone(),
        None => std::env::current_exe()
            .map_err(|e| CliError::internal(format!("cannot locate this program: {e}")))?,
    };
    let telemetry = match args.telemetry {
        TelemetryMode::On => true,
        TelemetryMode::Off => false,
        TelemetryMode::Auto => trtmc_core::machine::find_program("nvidia-smi").is_some(),
    };
    let options = RunOptions {
        bundle,
        worker,
        telemetry,
        output: args.output.clone(),
        results_parent: PathBuf::from("trtmc-results"),
        command_line,
        profile: args.profile.then_some(args.profile_iterations),
        test_hooks,
        rounds,
        baseline: baseline - 1,
        baseline_explicit: args.baseline.is_some(),
    };
    let progress = crate::progress::Terminal::new(args.quiet);
    let outcome = runner::execute(planned, &options, &progress)?;
    crate::summary::after_run(&outcome.run, &outcome.dir, args.format, &args.exports)?;
    if args.format.is_none() && rounds > 1 && args.baseline.is_none() {
        for line in other_workloads(&outcome.run, baseline - 1) {
            outln!("{line}")?;
        }
    }
    if args.format.is_none() {
        // `--profile`: where each case's per-layer report is (it is not part of report.html).
        for c in &outcome.run.cases {
            if let Some(report) = c.profile.as_ref().and_then(|p| p.report.as_ref()) {
                outln!(
                    "profile report of case {}: {}",
                    c.dir,
                    outcome.dir.join(report).display()
                )?;
            }
        }
    }
    let fail_on = crate::ci::after_run(&outcome.run, &outcome.dir, &args.ci)?;
    if let Some(db) = &args.history {
        crate::commands::history::remember(db, &outcome.dir)?;
    }
    let count = |status| {
        outcome
            .run
            .cases
            .iter()
            .filter(|c| c.status == status)
            .count()
    };
    if trtmc_runner::interrupt::requested() {
        return Err(CliError::new(
            ExitCode::Interrupted,
            format!(
                "interrupted: the calls timed so far are kept in {}{}",
                outcome.dir.display(),
                match outcome.run.not_run.len() {
                    0 => String::new(),
                    n => format!(
                        "; {n} case(s) not started: {}",
                        outcome.run.not_run.join(", ")
                    ),
                }
            ),
        ));
    }
    let (failed, interrupted) = (count(CaseStatus::Failed), count(CaseStatus::Interrupted));
    if interrupted > 0 && failed == 0 {
        return Err(CliError::new(
            ExitCode::CaseFailed,
            format!(
                "{interrupted} of {} case(s) stopped by --timeout before the end of their stopping rule; their calls are kept in {} (raise --timeout or bound the run with --max-duration)",
                outcome.run.cases.len(),
                outcome.dir.display()
            ),
        ));
    }
    if !outcome.build_failed.is_empty() {
        return Err(CliError::new(
            ExitCode::Build,
            format!(
                "{} of {} case(s) have no bundle, their build failed ({}): the other cases were measured and the result is in {}",
                outcome.build_failed.len(),
                outcome.run.cases.len(),
                failure_causes(&outcome.run),
                outcome.dir.display()
            ),
        ));
    }
    if failed > 0 {
        return Err(CliError::new(
            ExitCode::CaseFailed,
            format!(
                "{failed} of {} case(s) failed ({}); their worker logs and protocol files are kept in {}",
                outcome.run.cases.len(),
                failure_causes(&outcome.run),
                outcome.dir.display()
            ),
        ));
    }
    let unprofiled: Vec<String> = outcome
        .run
        .cases
        .iter()
        .filter_map(|c| {
            c.profile
                .as_ref()
                .filter(|p| p.status == CaseStatus::Failed)
                .map(|p| format!("{}: {}", c.dir, p.error.as_deref().unwrap_or("failed")))
        })
        .collect();
    if !unprofiled.is_empty() {
        return Err(CliError::new(
            ExitCode::CaseFailed,
            format!(
                "the per-layer profiling pass failed (the timed results are complete; see profile.log in {}): {}",
                outcome.dir.display(),
                unprofiled.join("; ")
            ),
        ));
    }
    fail_on.map_or(Ok(()), Err)
}

/// Why the completed cases outside the baseline's workload got no verdict (a different model, request
/// or input computes something else: its time says nothing about the baseline's), one line each.
fn other_workloads(run: &trtmc_core::artifacts::BenchmarkRun, baseline: usize) -> Vec<String> {
    let Some(base) = run.cases.get(baseline) else {
        return Vec::new();
    };
    run.cases
        .iter()
        .enumerate()
        .filter(|(i, c)| {
            *i != baseline && c.status == CaseStatus::Completed && c.identity != base.identity
        })
        .map(|(i, c)| {
            format!(
                "no verdict for case {} ({} {}): it measures a different workload than case {} ({} {}); give --baseline {} to compare them anyway",
                i + 1,
                c.model,
                c.label,
                baseline + 1,
                base.model,
                base.label,
                baseline + 1
            )
        })
        .collect()
}

/// `001-tiny-cnn-single: <its error>; …` for the failed cases: the message that ends a run names each
/// cause (a matrix row quotes this line as the reason the row failed).
fn failure_causes(run: &trtmc_core::artifacts::BenchmarkRun) -> String {
    run.cases
        .iter()
        .filter(|c| c.status == CaseStatus::Failed)
        .map(|c| {
            format!(
                "{}: {}",
                c.dir,
                c.error.as_deref().unwrap_or("no error recorded")
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}
