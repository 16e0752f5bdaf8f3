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
    /// Standard input is a pipe the orchestrator holds open; its end means the orchestrator is gone.
    #[arg(long)]
    pub parent_pipe: bool,
    /// The orchestrator's timeout for this case, in seconds: the worker stops itself soon after it
    /// if nobody else does.
    #[arg(long, value_name = "SECONDS")]
    pub timeout_s: Option<f64>,
}

/// Runs the request and returns the process exit code.
pub fn execute(args: WorkerArgs) -> i32 {
    let watchdog = trtmc_runtime::worker::Watchdog {
        parent_pipe: args.parent_pipe,
        // Out-of-range values (checked at resolution already) mean no watchdog rather than a panic.
        timeout: args
            .timeout_s
            .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok()),
    };
    trtmc_runtime::worker::main_with_files(&args.request, &args.result, watchdog)
}
