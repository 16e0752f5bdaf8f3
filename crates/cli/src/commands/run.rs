//! `trtmc-bench run`: benchmark resolved workloads and write a result directory.

use std::path::PathBuf;

use trtmc_core::artifacts::CaseStatus;
use trtmc_core::case::{MeasureFlags, SweepAxis};
use trtmc_core::catalog::{Catalog, Profile};
use trtmc_core::test_hooks::TestHooks;
use trtmc_runner::args::{RunArgs, TelemetryMode};
use trtmc_runner::bundles::{BundleOptions, default_cache_root};
use trtmc_runner::run::{self as runner, RunOptions, Selection};

use crate::exit::{CliError, CliResult, ExitCode};

/// Benchmark one or more resolved workloads (model profile × case × bundle) in an isolated worker.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  trtmc-bench run --model tiny-gpt
  trtmc-bench run --model tiny-gpt --case sampled --set request.max_new_tokens=16 -o results/gpt
  trtmc-bench run --model tiny-cnn --sweep request.batch_size=1,4
  trtmc-bench run --onnx model.onnx --shape input:1x3x224x224 --iterations 100
  trtmc-bench run plan.yaml -o results/current")]
pub struct RunCommand {
    #[command(flatten)]
    pub run: RunArgs,
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
/// Rounds a run with an undecided verdict may grow to when neither `--rounds` nor `--max-rounds` is
/// given: looks at 10, 15, 22 and 30 rounds (docs/statistics.md, *Sequential rounds*).
const DEFAULT_MAX_ROUNDS: usize = 30;
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

pub fn execute(command: RunCommand) -> CliResult {
    let RunCommand {
        run: args,
        quiet,
        exports,
        format,
        ci,
        history,
    } = command;
    if args.parent_pipe {
        trtmc_runner::interrupt::watch_parent_pipe();
    }
    crate::runtime_dirs::apply(&args.runtime_dirs)?;
    let command_line: Vec<String> = std::env::args().collect();
    let test_hooks = TestHooks::current().clone();
    crate::summary::check_exports(&exports)?;
    ci.fail_on.check("run", &[crate::ci::FailOn::Invalid])?;
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
                most_tensor_gib: args.max_tensor_memory_gib,
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
                        most_tensor_gib: args.max_tensor_memory_gib,
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

    let cache_root = args.bundle_cache.clone().unwrap_or_else(default_cache_root);
    let bundle = BundleOptions {
        explicit: args.bundle.clone(),
        roots: args.bundle_roots.clone(),
        cache_root: cache_root.clone(),
        no_build: args.no_build,
        rebuild: args.rebuild,
        runtimes: trtmc_runtime::runtime::RuntimeOptions {
            trtexec: args.trtexec.clone(),
            probe_cache: Some(cache_root),
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
    let max_rounds = match (args.max_rounds, args.rounds) {
        (Some(m), _) if m == 0 || m > MOST_ROUNDS => {
            return Err(CliError::input(format!(
                "--max-rounds {m}: give from 1 to {MOST_ROUNDS} rounds"
            )));
        }
        (Some(m), _) if m < rounds => {
            return Err(CliError::input(format!(
                "--max-rounds {m} is below --rounds {rounds}: give at least as many (the first block of rounds is --rounds)"
            )));
        }
        (Some(m), _) => m,
        (None, None) if planned.len() > 1 => DEFAULT_MAX_ROUNDS,
        (None, _) => rounds,
    };
    let baseline = args.baseline.unwrap_or(1);
    if baseline == 0 || baseline > planned.len() {
        return Err(CliError::input(format!(
            "--baseline {baseline}: give a case number from 1 to {} (the # column of the summary)",
            planned.len()
        )));
    }
    // Dimensions left dynamic were set to 1: one line each, naming the --shape that chooses them.
    if !args.dry_run && !quiet {
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
        max_rounds,
        baseline: baseline - 1,
        baseline_explicit: args.baseline.is_some(),
        page: trtmc_report::run_report::render,
    };
    let progress = crate::progress::Terminal::new(quiet);
    let outcome = runner::execute(planned, &options, &progress)?;
    crate::summary::after_run(&outcome.run, &outcome.dir, format, &exports)?;
    if format.is_none() && rounds > 1 && args.baseline.is_none() {
        for line in other_workloads(&outcome.run, baseline - 1) {
            outln!("{line}")?;
        }
    }
    if format.is_none() {
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
    let fail_on = crate::ci::after_run(&outcome.run, &outcome.dir, &ci)?;
    if let Some(db) = &history {
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
                "{failed} of {} case(s) failed ({}); {}",
                outcome.run.cases.len(),
                failure_causes(&outcome.run),
                kept_files(&outcome.run, &outcome.dir)
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
/// The files a failed case kept, by path, so the message names only files that exist (a passing
/// worker's log may be empty and is then not kept).
fn kept_files(run: &trtmc_core::artifacts::BenchmarkRun, dir: &std::path::Path) -> String {
    let files: Vec<String> = run
        .cases
        .iter()
        .filter(|c| c.status == CaseStatus::Failed)
        .flat_map(|c| {
            let f = &c.files;
            [&f.worker_log, &f.worker_request, &f.worker_result]
                .into_iter()
                .flatten()
                .map(|file| dir.join(file).display().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    if files.is_empty() {
        format!("the result is in {}", dir.display())
    } else {
        format!("kept for a look: {}", files.join(", "))
    }
}

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
