//! `trtmc-bench`: benchmark neural-network inference, explain it, and tune its build settings.

mod commands;
mod exit;

use clap::{Parser, Subcommand};
use exit::{CliError, ExitCode};

#[derive(Debug, Parser)]
#[command(name = "trtmc-bench", version, about = "Benchmark, analyze and tune neural-network inference")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Analyze TensorRT layer-info and profile JSON; validate it and package a browser report.
    Analyze(commands::analyze::AnalyzeArgs),
}

fn main() {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Analyze(args) => commands::analyze::execute(args),
    };
    if let Err(err) = outcome {
        report_and_exit(err);
    }
}

fn report_and_exit(err: CliError) -> ! {
    eprintln!("error: {}", err.message);
    std::process::exit(err.code as i32);
}

#[allow(dead_code)]
fn success() -> ExitCode {
    ExitCode::Success
}
