//! Replay mode (`TRTMC_STANDIN_LOG` set): replays a real recorded trtexec log and records what it
//! was asked to do. This is the stand-in the contract tests of `trtmc-trtexec` and the CLI's
//! tensorrt runtime tests were written against; its behaviour is kept as it was.
//!
//! Environment:
//! * `TRTMC_STANDIN_LOG`: the recorded log to replay (required). `[E]`/`[F]` lines go to stderr,
//!   the rest to stdout, as trtexec does.
//! * `TRTMC_STANDIN_ARGV`: write the received arguments here as a JSON array of strings.
//! * `TRTMC_STANDIN_TIMES`, `TRTMC_STANDIN_PROFILE`, `TRTMC_STANDIN_LAYERS`: recorded JSON
//!   copied to the paths given by `--exportTimes=`, `--exportProfile=`, `--exportLayerInfo=`.
//! * `TRTMC_STANDIN_EXIT`: exit status (default: 1 if the log's last `&&&&` status is FAILED,
//!   else 0).
//! * `TRTMC_STANDIN_SLEEP_MS`: sleep this long before exiting (timeout tests).
//!
//! `--help` prints only the log's `&&&& RUNNING` banner (with this command line) and a help
//! line, then exits 0, like real trtexec. `--saveEngine=F` gets a small dummy engine.

use std::io::Write;
use std::path::Path;

use crate::error::SimError;

const ENGINE_BYTES: &[u8] = b"trtmc trtexec-standin dummy engine\n";

/// Replays the log named by `TRTMC_STANDIN_LOG`; the exit status, or a message for `[E]` and
/// exit status 2.
pub fn run(args: &[String]) -> Result<u8, SimError> {
    if let Some(path) = std::env::var_os("TRTMC_STANDIN_ARGV") {
        crate::calls::write_argv(Path::new(&path), args)?;
    }
    let log_path = std::env::var_os("TRTMC_STANDIN_LOG").ok_or(SimError::NoReplayLog)?;
    let bytes = std::fs::read(&log_path).map_err(|source| SimError::File {
        action: "read TRTMC_STANDIN_LOG".into(),
        path: log_path.into(),
        source,
    })?;
    let log = String::from_utf8_lossy(&bytes);

    if args.iter().any(|a| a == "--help" || a == "-h") {
        print_help_banner(&log, args);
        return Ok(0);
    }

    for (flag, variable) in [
        ("--exportTimes=", "TRTMC_STANDIN_TIMES"),
        ("--exportProfile=", "TRTMC_STANDIN_PROFILE"),
        ("--exportLayerInfo=", "TRTMC_STANDIN_LAYERS"),
    ] {
        if let (Some(target), Some(source)) = (flag_value(args, flag), std::env::var_os(variable)) {
            std::fs::copy(&source, target).map_err(|e| SimError::Copy {
                variable,
                from: source.into(),
                to: target.into(),
                source: e,
            })?;
        }
    }
    if let Some(engine) = flag_value(args, "--saveEngine=") {
        std::fs::write(engine, ENGINE_BYTES).map_err(|source| SimError::File {
            action: "write the dummy engine".into(),
            path: engine.into(),
            source,
        })?;
    }

    replay(&log)?;

    if let Some(ms) = std::env::var("TRTMC_STANDIN_SLEEP_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    match std::env::var("TRTMC_STANDIN_EXIT") {
        Ok(code) => code
            .parse::<u8>()
            .map_err(|_| SimError::ExitStatus { value: code }),
        Err(_) => Ok(recorded_exit(&log)),
    }
}

fn flag_value<'a>(args: &'a [String], prefix: &str) -> Option<&'a str> {
    args.iter().rev().find_map(|a| a.strip_prefix(prefix))
}

fn print_help_banner(log: &str, args: &[String]) {
    let banner = log.lines().find_map(|line| {
        let start = line.find("&&&& RUNNING ")?;
        let line = &line[start..];
        Some(match line.split_once(" # ") {
            Some((head, _)) => head.to_string(),
            None => line.to_string(),
        })
    });
    if let Some(head) = banner {
        println!("{head} # trtexec {}", args.join(" "));
    }
    println!("=== Model Options ===");
    println!("  --onnx=<file>               ONNX model (stand-in help text)");
}

/// Replays the log line by line; error lines go to stderr like trtexec's logger sends them.
fn replay(log: &str) -> Result<(), SimError> {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let mut out = stdout.lock();
    let mut err = stderr.lock();
    for line in log.lines() {
        let to_stderr = line.contains("] [E] ") || line.contains("] [F] ");
        let result = if to_stderr {
            writeln!(err, "{line}").and_then(|_| err.flush())
        } else {
            writeln!(out, "{line}").and_then(|_| out.flush())
        };
        result.map_err(|source| SimError::Output { source })?;
    }
    Ok(())
}

/// 1 when the last `&&&&` status line says FAILED, else 0.
fn recorded_exit(log: &str) -> u8 {
    let last = log
        .lines()
        .filter_map(|line| line.find("&&&& ").map(|i| &line[i + 5..]))
        .filter_map(|rest| rest.split_whitespace().next())
        .rfind(|word| matches!(*word, "PASSED" | "FAILED" | "WAIVED"));
    u8::from(last == Some("FAILED"))
}
