//! `trtmc-bench`: benchmark neural-network inference, explain it, and tune its build settings.

// Everything for the user's stdout goes through `out` (a reader that leaves early is not a panic).
#![deny(clippy::print_stdout)]

#[macro_use]
mod out;
mod catalog_root;
mod ci;
mod commands;
mod exit;
mod progress;
mod runtime_dirs;
mod summary;

use clap::{Parser, Subcommand};
use exit::CliError;

// mimalloc instead of glibc malloc: `analyze` on a 14,400-layer export is ~30 % faster with it
// (fewer page faults, cheaper small allocations); the worker and tract_loop share it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    name = "trtmc-bench",
    version,
    about = "Benchmark, analyze and tune neural-network inference",
    long_about = "Benchmark, analyze and tune neural-network inference.\n\n\
        run            benchmark a resolved workload in an isolated worker and write a result directory\n\
        list models    every catalog profile with its status and each runtime's availability\n\
        list schemas   the JSON Schemas (list suites: the shipped matrix suites), as files\n\
        report         one report over many runs, or one run's summary (--format)\n\
        matrix         candidate runtime vs reference backend, row by row, with traffic lights\n\
        analyze        TensorRT layer-info/profile analysis with validation and a browser report\n\
        tune           build-route search gated on accuracy, ranked on measured speed, resumable\n\
        compare        per-tensor output agreement: two runtimes, or one and golden files\n\
        completions    shell completion script; man: the man page\n\n\
        Exit codes (docs/exit-codes.md): 0 success, 1 internal error, 2 usage, 3 invalid input,\n\
        4 build failed or no bundle, 5 a case failed, 6 output refused,\n\
        7 missing external tool, 8 contract mismatch, 9 a --fail-on condition was met."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Benchmark one or more workloads (model profile × case × bundle) and write a result directory.
    Run(Box<commands::run::RunCommand>),
    /// List catalog content.
    List(commands::list::ListArgs),
    /// Analyze TensorRT layer-info and profile JSON; validate it and package a browser report.
    Analyze(commands::analyze::AnalyzeArgs),
    /// Compare the outputs of two runtimes (or a runtime and golden files) per output tensor.
    Compare(commands::compare::CompareArgs),
    /// Build one report (report.json + report.html) over the run results found below DIR….
    Report(commands::report::ReportArgs),
    /// Search a runtime's build routes for the fastest accurate one (trtexec --tuneBuildRoutes style).
    Tune(Box<commands::tune::TuneArgs>),
    /// Release performance matrix: candidate runtimes against reference backends, with traffic lights.
    Matrix(commands::matrix::MatrixArgs),
    /// Remember results in a database; series, change points across commits, a CI gate.
    History(commands::history::HistoryArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(commands::shell::CompletionsArgs),
    /// Print the man page (roff), or write one page per subcommand with --dir.
    Man(commands::shell::ManArgs),
    /// Internal: the worker process that owns the timed loop.
    #[command(hide = true)]
    Worker(commands::worker::WorkerArgs),
    /// Internal: a route's child process for `tune` (build or serve one route).
    #[command(hide = true)]
    TuneWorker(commands::tune::TuneWorkerArgs),
    /// Internal: one Slurm array task of `tune --executor slurm` (builds one route).
    #[command(hide = true)]
    TuneTask(commands::tune::TuneTaskArgs),
}

fn main() {
    // The test suite's hooks, read once for the whole process (all off unless TRTMC_TEST=1).
    trtmc_core::test_hooks::TestHooks::install(trtmc_core::test_hooks::TestHooks::from_env());
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Run(args) => commands::run::execute(*args),
        Command::List(args) => commands::list::execute(args),
        Command::Analyze(args) => commands::analyze::execute(args),
        Command::Compare(args) => commands::compare::execute(args),
        Command::Report(args) => commands::report::execute(args),
        Command::Tune(args) => commands::tune::execute(*args),
        Command::Matrix(args) => commands::matrix::execute(args),
        Command::History(args) => commands::history::execute(args),
        Command::Completions(args) => commands::shell::completions(args),
        Command::Man(args) => commands::shell::man(args),
        Command::Worker(args) => std::process::exit(commands::worker::execute(args)),
        Command::TuneWorker(args) => std::process::exit(commands::tune::execute_worker(args)),
        Command::TuneTask(args) => std::process::exit(commands::tune::execute_task(args)),
    };
    if let Err(err) = outcome {
        report_and_exit(err);
    }
}

fn report_and_exit(err: CliError) -> ! {
    eprintln!("error: {}", err.message);
    std::process::exit(err.code as i32);
}
