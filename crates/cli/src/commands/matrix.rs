//! `trtmc-bench matrix`: the release performance matrix (docs/matrix.md).

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use trtmc_core::test_hooks::TestHooks;
use trtmc_matrix::plan::{self, CheckInput};
use trtmc_matrix::runner::{self, Results, TaskOutcome};
use trtmc_report::terminal::pad_right;

use crate::exit::{CliError, CliResult, ExitCode};
use crate::progress::Terminal;

#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  trtmc-bench matrix check release --environment cpu      (the suite and environment shipped in the binary)
  trtmc-bench matrix check benchmarks/performance/release.yaml --environment benchmarks/performance/environments/cpu.yaml
  trtmc-bench matrix run benchmarks/performance/release.yaml --environment benchmarks/performance/environments/cpu.yaml --entry tiny-cnn.classify
  trtmc-bench matrix resume artifacts/perf/matrix-20260101-120000
  trtmc-bench matrix report artifacts/perf/matrix-20260101-120000 --preparation-receipt bundle-preparation.json

Exit codes: 0 every row has a light (green, yellow or red); 3 suite/environment error; 5 a row failed,
is incomplete or pending; 6 output refused; 7 machine prerequisite missing (executable, runtime,
storage, Slurm); 8 contract mismatch (different workload, timing boundary or precision); 9 a row met
--fail-on (red, or yellow or red with --fail-on yellow) and nothing above applied.")]
pub struct MatrixArgs {
    #[command(subcommand)]
    pub command: MatrixCommand,
}

#[derive(Debug, Subcommand)]
pub enum MatrixCommand {
    /// The full preflight without measuring: coverage, environment, storage, executables, revision,
    /// testcases, timing contracts.
    Check(SuiteArgs),
    /// Preflight, then measure every row (or `--entry`) and write results.json and report.html.
    Run(RunArgs),
    /// Continue an interrupted run: rows without a final result run again, finished rows are kept.
    Resume(ResumeArgs),
    /// Rewrite results.json and report.html of a run, optionally attaching a bundle-preparation receipt.
    Report(ReportArgs),
    /// Internal: one Slurm array task (runs one row).
    #[command(hide = true)]
    Task(TaskArgs),
}

#[derive(Debug, Args)]
pub struct SuiteArgs {
    /// The suite (YAML, trtmc.perf-suite/v1), or a shipped one by name: `release` (CPU), `gpu`.
    pub suite: PathBuf,
    /// The environment file (YAML, trtmc.perf-environment/v1), or a shipped one by name: `cpu`, `gpu`.
    #[arg(long, value_name = "FILE")]
    pub environment: PathBuf,
    /// Only rows with this entry id (`<family>.<operation>`) or exact row id.
    #[arg(long, value_name = "ID")]
    pub entry: Option<String>,
    /// Where rows run: `local` (one at a time here) or `slurm` (a job array, one row per task).
    #[arg(long, default_value = "local")]
    pub executor: String,
    /// Catalog root holding MODEL.toml files.
    #[arg(long, value_name = "PATH")]
    pub manifest_root: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Run directory (new or empty); default: a new `matrix-<time>` below the environment's results root.
    #[arg(short, long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub ci: crate::ci::CiArgs,
    /// Also store the results in this history database (a SQLite path or postgres:// URL) once
    /// results.json is written (docs/history.md).
    #[arg(long, value_name = "DB")]
    pub history: Option<String>,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    pub run_dir: PathBuf,
    /// Executor for the remaining rows (default: the run's).
    #[arg(long)]
    pub executor: Option<String>,
    #[command(flatten)]
    pub ci: crate::ci::CiArgs,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    pub run_dir: PathBuf,
    /// A trtmc.perf-bundle-preparation/v1 receipt of a separately run preparation step.
    #[arg(long, value_name = "FILE")]
    pub preparation_receipt: Option<PathBuf>,
    #[command(flatten)]
    pub ci: crate::ci::CiArgs,
}

#[derive(Debug, Args)]
pub struct TaskArgs {
    pub run_dir: PathBuf,
    #[arg(long)]
    pub tasks_file: PathBuf,
    #[arg(long)]
    pub task: usize,
}

fn preflight(args: &SuiteArgs) -> CliResult<plan::Plan> {
    let catalog_root = crate::catalog_root::resolve(args.manifest_root.clone())?;
    let reference = crate::catalog_root::reference_dir()?;
    let suite = crate::catalog_root::shipped("suite", &args.suite, trtmc_share::SHIPPED_SUITES)?;
    let environment = crate::catalog_root::shipped(
        "environment",
        &args.environment,
        trtmc_share::SHIPPED_ENVIRONMENTS,
    )?;
    let input = CheckInput {
        suite: &suite,
        environment: &environment,
        catalog_root: &catalog_root,
        repo_reference: &reference,
        entry: args.entry.as_deref(),
        executor: &args.executor,
        command_line: std::env::args().collect(),
    };
    plan::check(&input).map_err(|findings| trtmc_matrix::Error::Preflight { findings }.into())
}

/// The conditions `matrix run`, `resume` and `report` take.
const FAIL_ON: &[crate::ci::FailOn] = &[crate::ci::FailOn::Yellow, crate::ci::FailOn::Red];

fn finish(
    run: &Path,
    results: Results,
    ci: &crate::ci::CiArgs,
    history: Option<&str>,
) -> CliResult {
    let s = &results.summary;
    outln!(
        "{} row(s): {} green, {} yellow, {} red, {} contract mismatch, {} failed, {} incomplete, {} pending",
        s.rows,
        s.green,
        s.yellow,
        s.red,
        s.contract_mismatch,
        s.failed,
        s.incomplete,
        s.pending
    )?;
    for r in &results.rows {
        outln!("  {} {}", pad_right(&r.id, 50), runner::outcome_line(r))?;
    }
    outln!("results: {}", run.join(runner::RESULTS_FILE).display())?;
    outln!("report:  {}", run.join(runner::REPORT_FILE).display())?;
    let fail_on = crate::ci::after_matrix(&results, run, ci)?;
    if let Some(db) = history {
        crate::commands::history::remember(db, run)?;
    }
    match results.exit_code() {
        0 => fail_on.map_or(Ok(()), Err),
        8 => Err(CliError::new(
            ExitCode::ContractMismatch,
            format!(
                "{} row(s) are contract mismatches (no light); see {}",
                s.contract_mismatch,
                run.join(runner::RESULTS_FILE).display()
            ),
        )),
        _ => Err(CliError::new(
            ExitCode::CaseFailed,
            format!(
                "{} row(s) failed, {} incomplete, {} pending (no light); `trtmc-bench matrix resume {}` runs them again",
                s.failed,
                s.incomplete,
                s.pending,
                run.display()
            ),
        )),
    }
}

pub fn execute(args: MatrixArgs) -> CliResult {
    match args.command {
        MatrixCommand::Check(a) => {
            let plan = preflight(&a)?;
            outln!(
                "suite {} ({} row(s) selected) passes the preflight on environment {}",
                plan.suite.name,
                plan.rows.len(),
                plan.environment.name
            )?;
            outln!(
                "program: trtmc-bench {} revision {} ({} build)",
                plan.program.version,
                plan.program.revision,
                plan.program.build_profile
            )?;
            for pr in &plan.rows {
                outln!(
                    "  {} {} vs {}  boundary {}  baseline precision {} ({})",
                    pad_right(&pr.id, 50),
                    pr.row.candidate.runtime,
                    pr.row.reference.backend,
                    pr.candidate_boundary,
                    pr.baseline_precision,
                    pr.baseline_precision_source
                )?;
            }
            for e in &plan.suite.excluded_profiles {
                outln!("  excluded {}: {}", e.profile, e.reason)?;
            }
            let catalog = trtmc_core::catalog::Catalog::load(&plan.catalog_root)
                .map_err(|e| CliError::new(ExitCode::Input, format!("catalog: {e}")))?;
            let counts = trtmc_matrix::plan::coverage_counts(&plan.suite, &catalog);
            outln!(
                "coverage: {} profile(s) across {} famil{} and {} (family, operation) contract(s)",
                counts.profiles,
                counts.families,
                if counts.families == 1 { "y" } else { "ies" },
                counts.contracts
            )?;
            let rows = plan.rows.iter().map(|pr| (pr.id.as_str(), pr.rounds));
            for w in trtmc_matrix::lights::warnings(&plan.suite.thresholds, rows) {
                outln!("warning: {w}")?;
            }
            Ok(())
        }
        MatrixCommand::Run(a) => {
            a.ci.fail_on.check("matrix run", FAIL_ON)?;
            let plan = preflight(&a.suite)?;
            let run = runner::create(&plan, a.output.as_deref())?;
            eprintln!("run directory: {}", run.display());
            let results = runner::execute(
                &run,
                &plan.executor,
                &Terminal::new(false),
                TestHooks::current(),
            )?;
            finish(&run, results, &a.ci, a.history.as_deref())
        }
        MatrixCommand::Resume(a) => {
            a.ci.fail_on.check("matrix resume", FAIL_ON)?;
            let results = runner::resume(
                &a.run_dir,
                a.executor.as_deref(),
                &Terminal::new(false),
                TestHooks::current(),
            )?;
            finish(&a.run_dir, results, &a.ci, None)
        }
        MatrixCommand::Report(a) => {
            a.ci.fail_on.check("matrix report", FAIL_ON)?;
            let results = runner::report(&a.run_dir, a.preparation_receipt.as_deref())?;
            finish(&a.run_dir, results, &a.ci, None)
        }
        MatrixCommand::Task(a) => {
            match runner::task(&a.run_dir, &a.tasks_file, a.task, TestHooks::current())? {
                TaskOutcome::RowWritten => Ok(()),
                // Test only (TRTMC_TEST=1): die without a row result, as a task killed by Slurm would.
                TaskOutcome::AbortedForTest => std::process::exit(9),
            }
        }
    }
}
