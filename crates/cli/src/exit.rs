//! Exit codes and the one error type that reaches `main`.
//!
//! Every failure a user can cause ends as a [`CliError`]: one message that names the thing and says
//! what to do next, and a documented exit code (docs/exit-codes.md).

use std::fmt;

/// Documented process exit codes. Keep docs/exit-codes.md in step with this list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Everything requested completed.
    #[expect(
        dead_code,
        reason = "listed for the docs; success is main returning normally"
    )]
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
    /// A required external tool or library is missing (trtexec, libonnxruntime, python).
    Environment = 7,
    /// `matrix`: candidate and reference measured different workloads, timing boundaries or precisions.
    ContractMismatch = 8,
}

#[derive(Debug)]
pub struct CliError {
    pub code: ExitCode,
    pub message: String,
}

impl CliError {
    pub fn new(code: ExitCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
    pub fn input(message: impl Into<String>) -> Self {
        Self::new(ExitCode::Input, message)
    }
    pub fn internal(err: impl fmt::Display) -> Self {
        Self::new(ExitCode::Internal, format!("internal error: {err}"))
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

pub type CliResult<T = ()> = Result<T, CliError>;
