//! What `run` shows when it is done: a compact table on stdout (like hyperfine's summary) with the
//! validity verdict per case (`--format wide`: every column), or with `--format` the JSON / CSV /
//! Markdown summary instead, and the `--export FILE` summaries (format from the extension).

use std::path::{Path, PathBuf};

use trtmc_core::artifacts::BenchmarkRun;
use trtmc_report::export::{self, Format};
use trtmc_report::validity::Policy;

use crate::commands::report::ExportFormat;
use crate::exit::{CliError, CliResult, ExitCode};

/// Checks `--export` paths before anything runs: each must end in .json, .csv, .md or .markdown.
pub fn check_exports(paths: &[PathBuf]) -> CliResult {
    for p in paths {
        if Format::from_path(p).is_none() {
            return Err(CliError::input(format!(
                "--export {}: unknown format; name the file .json, .csv or .md (e.g. --export summary.csv)",
                p.display()
            )));
        }
    }
    Ok(())
}

/// Prints the summary of a committed run directory (the table, or the `format` export) and writes the
/// exports.
pub fn after_run(
    run: &BenchmarkRun,
    dir: &Path,
    format: Option<ExportFormat>,
    exports: &[PathBuf],
) -> CliResult {
    let (report, _) = trtmc_report::collection::summarize_run_dir(run, dir, &Policy::default());
    let text = match format.and_then(ExportFormat::export) {
        Some(f) => export::export(f, &report),
        None => format!(
            "result: {}\n{}",
            dir.display(),
            trtmc_report::terminal::table_with(&report, ExportFormat::layout(format))
        ),
    };
    crate::out::text(&text)?;
    for p in exports {
        let Some(format) = Format::from_path(p) else {
            return Err(CliError::input(format!(
                "--export {}: unknown format",
                p.display()
            )));
        };
        trtmc_core::fsutil::write_atomic(p, export::export(format, &report).as_bytes()).map_err(
            |e| {
                CliError::new(
                    ExitCode::Output,
                    format!(
                        "cannot write --export {}: {e} (the result itself is in {})",
                        p.display(),
                        dir.display()
                    ),
                )
            },
        )?;
    }
    Ok(())
}
