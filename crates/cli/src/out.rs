//! Standard output: everything trtmc-bench prints for the user goes through [`Stdout`] (`outln!`,
//! [`text`]); `println!` is denied in this crate.
//!
//! When the reader of a pipe leaves early (`trtmc-bench list models | head -1`) the next write fails
//! with `BrokenPipe`, and `println!` would panic (exit 101, an undocumented code). Resetting SIGPIPE to
//! its default instead would end the process by a signal (status 141, no message) wherever it writes to
//! a closed pipe: also when `tune` writes to a route child that has just crashed, or in a run whose
//! result directory is not committed yet. So a reader that leaves is not an error: the rest of the
//! output is dropped, the command finishes its work and exits with the code that work earned
//! (docs/exit-codes.md). Any other failure to write stdout is exit 6.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::exit::{CliError, CliResult, ExitCode};

/// Set once stdout's reader has gone; every later write is dropped.
static READER_GONE: AtomicBool = AtomicBool::new(false);

/// Prints one line (`format!` arguments) to stdout; `?` it: only a write error other than a closed
/// pipe is an error.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}

/// The process's standard output, dropping output once the reader has gone.
pub struct Stdout(io::StdoutLock<'static>);

/// Locks stdout for a sequence of writes.
pub fn stdout() -> Stdout {
    Stdout(io::stdout().lock())
}

impl Stdout {
    /// Runs one write of the inner stream unless the reader is gone; a closed pipe counts as done.
    fn guarded<T>(
        &mut self,
        done: T,
        op: impl FnOnce(&mut io::StdoutLock<'static>) -> io::Result<T>,
    ) -> io::Result<T> {
        if READER_GONE.load(Ordering::Relaxed) {
            return Ok(done);
        }
        match op(&mut self.0) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                READER_GONE.store(true, Ordering::Relaxed);
                Ok(done)
            }
            other => other,
        }
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.guarded(buf.len(), |out| out.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.guarded((), |out| out.flush())
    }
}

/// The error of a failed write to stdout (never a closed pipe, which [`Stdout`] absorbs).
pub fn write_failed(e: io::Error) -> CliError {
    CliError::new(
        ExitCode::Output,
        format!("cannot write to standard output: {e}"),
    )
}

/// Writes `text` as is and flushes it.
pub fn text(text: &str) -> CliResult {
    let mut out = stdout();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(write_failed)
}

/// What `outln!` expands to.
pub fn line(args: fmt::Arguments<'_>) -> CliResult {
    let mut out = stdout();
    out.write_fmt(args)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(write_failed)
}
