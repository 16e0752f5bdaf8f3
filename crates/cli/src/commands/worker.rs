//! `trtmc-bench worker`: the isolated process that owns the timed loop (started by `run`).

use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// Worker request (JSON, schema trtmc.worker-request/v1).
    #[arg(long, value_name = "FILE")]
    pub request: PathBuf,
    /// Where to write the worker result (JSON, schema trtmc.worker-result/v1).
    #[arg(long, value_name = "FILE")]
    pub result: PathBuf,
}

/// Runs the request and returns the process exit code.
pub fn execute(args: WorkerArgs) -> i32 {
    trtmc_runtime::worker::main_with_files(&args.request, &args.result)
}
