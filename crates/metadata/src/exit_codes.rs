//! The exit codes `trtmc-bench` ends with (docs/exit-codes.md), for scripts and programs that run it.
//! The binary maps every library error to one of them in `crates/cli/src/exit.rs`.

/// Documented process exit codes of `trtmc-bench`. Keep docs/exit-codes.md in step with this list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Everything requested completed.
    Success = 0,
    /// An unexpected internal error (a bug: please report it).
    Internal = 1,
    /// The command line itself is wrong (reported by clap).
    Usage = 2,
    /// Invalid input: unknown model, case or field; malformed TOML/YAML/JSON; a missing file.
    Input = 3,
    /// A bundle could not be built, or none exists and `--no-build` forbade building one.
    Build = 4,
    /// At least one case failed: the worker crashed, hung, timed out or produced non-finite output.
    CaseFailed = 5,
    /// The output directory was refused (unrelated content, a symlink) or could not be written.
    Output = 6,
    /// A required external tool, library or resource is missing (trtexec, libonnxruntime, python, a
    /// writable cache for the embedded catalog).
    Environment = 7,
    /// `matrix`: candidate and reference measured different workloads, timing boundaries or precisions.
    ContractMismatch = 8,
    /// A `--fail-on` condition was met (an INVALID case, a yellow or red matrix row, an unusable
    /// `analyze` backend); everything was written first.
    FailOn = 9,
    /// `run` was stopped by Ctrl-C or SIGTERM: what was timed is committed, the rest did not run
    /// (128 + SIGINT, as shells report it).
    Interrupted = 130,
}
