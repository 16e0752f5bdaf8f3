//! One error type for everything this crate does; every message names the thing and the next step.

use std::path::PathBuf;
use std::time::Duration;

use crate::version::TrtexecVersion;

/// Result alias used across the crate.
pub type Result<T, E = TrtexecError> = std::result::Result<T, E>;

/// What can go wrong while finding, driving or reading trtexec.
#[derive(Debug, thiserror::Error)]
pub enum TrtexecError {
    /// No trtexec at the given path, on `PATH`, or in the usual install folders.
    #[error(
        "trtexec was not found ({searched}). Install TensorRT (the tar/zip package ships bin/trtexec; \
         the Debian/Ubuntu packages put it in /usr/src/tensorrt/bin) and add its folder to PATH, \
         or pass --trtexec /path/to/trtexec"
    )]
    NotFound {
        /// Where we looked, in words.
        searched: String,
    },

    /// The file exists but cannot be run.
    #[error(
        "{path} cannot be run as trtexec: {reason}. Pass the trtexec executable itself with --trtexec PATH"
    )]
    NotExecutable {
        /// The offending path.
        path: PathBuf,
        /// Why (a directory, no execute permission, ...).
        reason: String,
    },

    /// The operating system refused to start the process.
    #[error("could not start {path}: {source}. Check that it is a trtexec built for this machine")]
    Spawn {
        /// The executable.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },

    /// The banner did not carry a version we can read.
    #[error(
        "could not detect the TensorRT version of {path}: {detail}. trtexec prints \
         '&&&& RUNNING TensorRT.trtexec [TensorRT vNNNN] ...' from TensorRT 8.0 on; older \
         releases are not supported for driving (their logs can still be parsed)"
    )]
    VersionUnknown {
        /// The executable.
        path: PathBuf,
        /// What was seen instead.
        detail: String,
    },

    /// A requested option needs a newer (or older) trtexec than the one found.
    #[error("{what} ({flag}) needs TensorRT {needs}; this trtexec is TensorRT {found}. {hint}")]
    Unsupported {
        /// The feature in words.
        what: &'static str,
        /// The trtexec flag.
        flag: &'static str,
        /// The version range that has it, e.g. ">= 10.8" or "< 11.0".
        needs: &'static str,
        /// The detected version.
        found: TrtexecVersion,
        /// What to do instead.
        hint: &'static str,
    },

    /// Reduced precision was requested from a strongly typed trtexec (11.x) for an untyped model.
    #[error(
        "TensorRT {found} builds strongly typed networks: precision comes from the tensor types in the \
         model, and the {flags} flag(s) were removed in 11.0. Export the model in the precision you want \
         (for example convert it to float16, or insert Q/DQ nodes for int8/fp8) and mark the request as \
         already typed, or use a TensorRT 10.x trtexec for {flags}"
    )]
    StrongTyping {
        /// The precision flags that were asked for.
        flags: String,
        /// The detected version.
        found: TrtexecVersion,
    },

    /// A request field holds a value trtexec cannot express.
    #[error("invalid trtexec request: {0}")]
    InvalidRequest(String),

    /// trtexec ran and reported failure.
    #[error("trtexec failed ({status}).{errors} Full log: {log}", errors = format_errors(.errors, .tail))]
    Failed {
        /// "exit status 1", "'&&&& FAILED' with exit status 0", "killed by a signal", ...
        status: String,
        /// The last meaningful error lines of the log (`[E]`, `[F]`, `Cuda failure …`).
        errors: Vec<String>,
        /// When the log has no error line: its last lines, so that the message still shows how
        /// trtexec ended.
        tail: Vec<String>,
        /// The captured log.
        log: PathBuf,
    },

    /// trtexec did not finish in time and was killed.
    #[error(
        "trtexec did not finish within {after:?} and was stopped. Raise the timeout, or shorten the run \
         (--duration, --iterations, a smaller model or shapes). Partial log: {log}"
    )]
    TimedOut {
        /// The timeout that was exceeded.
        after: Duration,
        /// The captured (partial) log.
        log: PathBuf,
    },

    /// trtexec reported success but a file it should have written is missing.
    #[error("trtexec passed but did not write {what} at {path}. Check the log for warnings: {log}")]
    MissingOutput {
        /// What was expected ("the engine", "the --exportTimes file").
        what: &'static str,
        /// Where.
        path: PathBuf,
        /// The captured log.
        log: PathBuf,
    },

    /// Output that should be trtexec's could not be understood.
    #[error("could not read {what}: {detail}")]
    Unparsable {
        /// What was being read ("the trtexec log /tmp/x.log", "--exportTimes file ...").
        what: String,
        /// What was wrong and what to check.
        detail: String,
    },

    /// Reading or writing a file failed.
    #[error("could not {action} {path}: {source}")]
    Io {
        /// "read", "create", ...
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

fn format_errors(errors: &[String], tail: &[String]) -> String {
    let (mut text, lines) = match (errors.is_empty(), tail.is_empty()) {
        (false, _) => (String::from(" Last errors:"), errors),
        (true, false) => (
            String::from(" The log has no error line; it ends with:"),
            tail,
        ),
        (true, true) => return " The log is empty.".to_string(),
    };
    for line in lines {
        text.push_str("\n  ");
        text.push_str(line);
    }
    text.push('\n');
    text
}

/// How a trtexec that died by a signal is described in [`TrtexecError::Failed`].
pub const KILLED_BY_SIGNAL: &str = "killed by a signal";

impl TrtexecError {
    /// trtexec died by a signal: a crash, as TensorRT's own tuner counts it (not a refusal).
    pub fn is_crash(&self) -> bool {
        matches!(self, TrtexecError::Failed { status, .. } if status == KILLED_BY_SIGNAL)
    }
}
