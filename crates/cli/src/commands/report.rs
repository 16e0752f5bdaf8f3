//! `trtmc-bench report DIR…`: one collection report over every run result found below the roots.

use std::path::PathBuf;

use trtmc_report::collection::{self, Options};
use trtmc_report::export::{self, Format};
use trtmc_report::terminal::Layout;
use trtmc_report::validity::Policy;

use crate::exit::CliResult;

/// What `--format` prints on stdout: an export format, or `wide`, the terminal table with every column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Json,
    Csv,
    Markdown,
    /// The terminal table with every column (p50 interval, p95, outliers, request/s), not fitted to 100
    /// columns.
    Wide,
}

impl ExportFormat {
    /// The export format, or `None` for the terminal table (`wide`).
    pub fn export(self) -> Option<Format> {
        match self {
            ExportFormat::Json => Some(Format::Json),
            ExportFormat::Csv => Some(Format::Csv),
            ExportFormat::Markdown => Some(Format::Markdown),
            ExportFormat::Wide => None,
        }
    }

    /// The terminal table's layout this format asks for.
    pub fn layout(format: Option<Self>) -> Layout {
        if format == Some(ExportFormat::Wide) {
            Layout::Wide
        } else {
            Layout::Compact
        }
    }
}

/// Build report.json + report.html over every result.json below the given directories.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  trtmc-bench run --model tiny-cnn -o results/today/tiny-cnn
  trtmc-bench run --model tiny-gpt -o results/today/tiny-gpt
  trtmc-bench report results/today                     # writes results/today/report.{json,html}
  trtmc-bench report results/a results/b -o reports/ab  # several roots need -o
  trtmc-bench report results/today --format markdown >> \"$GITHUB_STEP_SUMMARY\"
  trtmc-bench report results/today/tiny-cnn --format csv  # one run's summary; writes nothing
  trtmc-bench report results/today --format wide       # the table with every column

A result.json that cannot be used (not JSON, another schema, wrong shape) is skipped and named on stderr
and in the report; --strict makes it an error (exit code 3) instead. Nothing below the roots is modified.
A single run directory with --format (and no -o) prints that run's summary and writes nothing: the run
keeps its own report.html.")]
pub struct ReportArgs {
    /// Result directories to search recursively for trtmc.benchmark-run/v1 result.json files.
    #[arg(value_name = "DIR", required = true)]
    pub dirs: Vec<PathBuf>,
    /// Where report.json and report.html go (default: the single DIR; required for several).
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Also print the summary to stdout in this format (instead of the terminal table); `wide` prints the
    /// table with every column.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<ExportFormat>,
    /// Fail when a result.json is malformed instead of skipping it.
    #[arg(long)]
    pub strict: bool,
    /// Print nothing but errors and the --format export.
    #[arg(short, long)]
    pub quiet: bool,
}

pub fn execute(args: ReportArgs) -> CliResult {
    let opts = Options {
        roots: args.dirs.clone(),
        output: args.output.clone(),
        policy: Policy::default(),
        strict: args.strict,
    };
    // `report RUN_DIR --format F`: the run's summary as an export, at any time after the run. The run
    // directory keeps its own report.html, so nothing is written.
    if let (Some(f), None, [dir]) = (
        args.format.and_then(ExportFormat::export),
        &args.output,
        args.dirs.as_slice(),
    ) && dir.join(collection::RESULT_JSON).is_file()
    {
        let (report, _) = collection::collect(&opts)?;
        for s in &report.skipped {
            eprintln!("warning: skipped {}: {}", s.path, s.reason);
        }
        return crate::out::text(&export::export(f, &report));
    }
    let outcome = collection::write(&opts)?;
    for s in &outcome.report.skipped {
        eprintln!("warning: skipped {}: {}", s.path, s.reason);
    }
    let text = match args.format.and_then(ExportFormat::export) {
        Some(f) => export::export(f, &outcome.report),
        None if args.quiet && args.format.is_none() => return Ok(()),
        None => {
            let t = &outcome.report.totals;
            format!(
                "{}report: {} ({} run(s), {} case(s): {} valid, {} invalid, {} failed)\n  {}\n",
                trtmc_report::terminal::table_with(
                    &outcome.report,
                    ExportFormat::layout(args.format)
                ),
                outcome.dir.display(),
                t.runs,
                t.cases,
                t.valid,
                t.invalid,
                t.failed,
                outcome.html.display()
            )
        }
    };
    crate::out::text(&text)
}
