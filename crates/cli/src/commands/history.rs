//! `trtmc-bench history`: results remembered in a database, series, change points and the CI gate
//! (docs/history.md). The work is `trtmc_history`'s; this file parses arguments and presents.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use trtmc_history::changes::{DEFAULT_GREEN_MAX, Rule};
use trtmc_history::check::{self, Analyzed, Found};
use trtmc_history::ingest;
use trtmc_history::store::{Ingested, Store};
use trtmc_report::export::junit::{Outcome, Suite, TestCase};
use trtmc_report::terminal::pad_right;

use crate::ci::{FailOn, FailOnArgs};
use crate::exit::{CliError, CliResult, ExitCode};

#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  trtmc-bench run --model tiny-cnn -o results/nightly/tiny-cnn --history
  trtmc-bench history add results/nightly/*            (the default database: see --db)
  trtmc-bench history list --model tiny-cnn
  trtmc-bench history show 3
  trtmc-bench history check --fail-on regression --since \"$LAST_RELEASE\" --export-junit history.xml
  trtmc-bench history report -o history-report
  trtmc-bench history add --db postgres://bench@db.example/trtmc artifacts/perf/matrix-*

Exit codes: 0 done; 2 command line; 3 a folder that is not a result, an unknown series or commit, a
database of a newer schema; 6 the database or an output cannot be written; 7 the PostgreSQL server
cannot be reached; 9 --fail-on regression met (after the JUnit and Markdown files were written).")]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub command: HistoryCommand,
}

#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// Store result folders of `run` and `matrix run` (each in one transaction; the same folder twice is
    /// stored once).
    Add(AddArgs),
    /// The series: one workload × runtime version × machine × metric each, with their changes.
    List(ListArgs),
    /// One series point by point, with its change points.
    Show(ShowArgs),
    /// Confirmed slowdowns (since a commit): exit 9 with --fail-on regression; JUnit and Markdown.
    Check(CheckArgs),
    /// A self-contained HTML page of every series (trend, intervals, changes), with CSV and JSON.
    Report(ReportArgs),
}

#[derive(Debug, Args)]
pub struct DbArgs {
    /// The history database: a SQLite file (created when missing) or a postgres://user@host/db URL.
    /// Default: $TRTMC_HISTORY_DB, else ~/.local/share/trtmc/history.sqlite.
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<String>,
}

impl DbArgs {
    pub fn open(&self) -> CliResult<Store> {
        let db = match &self.db {
            Some(db) => db.clone(),
            None => trtmc_history::default_db().ok_or_else(|| {
                CliError::input(
                    "no user data folder for the default history database: pass --db PATH",
                )
            })?,
        };
        Ok(Store::open(&db)?)
    }
}

#[derive(Debug, Args)]
pub struct RuleArgs {
    /// A change is confirmed when the interval of the ratio of the segments' medians lies wholly
    /// outside [1/G, G] (the matrix lights' rule with the history's band).
    #[arg(long, value_name = "G", default_value_t = DEFAULT_GREEN_MAX)]
    pub green_max: f64,
}

impl RuleArgs {
    fn rule(&self) -> CliResult<Rule> {
        if !(self.green_max.is_finite() && self.green_max > 1.0 && self.green_max < 100.0) {
            return Err(CliError::new(
                ExitCode::Usage,
                format!(
                    "--green-max {}: give a ratio above 1, e.g. 1.05 for a 5 % band",
                    self.green_max
                ),
            ));
        }
        Ok(Rule {
            green_max: self.green_max,
            ..Rule::default()
        })
    }
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// Result folders (`run -o`, `matrix run -o`).
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// The commit these results belong to, instead of the trtmc revision recorded in them (for
    /// results of a project's own commits).
    #[arg(long, value_name = "REF")]
    pub commit: Option<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only series of this model.
    #[arg(long)]
    pub model: Option<String>,
    /// Only series of this runtime.
    #[arg(long)]
    pub runtime: Option<String>,
    /// Only this metric (p50_ms, p99_ms).
    #[arg(long)]
    pub metric: Option<String>,
    #[command(flatten)]
    pub rule: RuleArgs,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The series id (`history list` shows them).
    pub series: i64,
    #[command(flatten)]
    pub rule: RuleArgs,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub fail_on: FailOnArgs,
    /// Only changes after every result of this commit.
    #[arg(long, value_name = "REF")]
    pub since: Option<String>,
    /// Also write a JUnit XML report: one test case per series, a failure per confirmed slowdown.
    #[arg(long, value_name = "FILE")]
    pub export_junit: Option<PathBuf>,
    /// Also write a Markdown summary (for $GITHUB_STEP_SUMMARY).
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    #[command(flatten)]
    pub rule: RuleArgs,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The report folder (index.html, history.csv, history.json).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,
    #[command(flatten)]
    pub rule: RuleArgs,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn execute(args: HistoryArgs) -> CliResult {
    match args.command {
        HistoryCommand::Add(a) => add(a),
        HistoryCommand::List(a) => list(a),
        HistoryCommand::Show(a) => show(a),
        HistoryCommand::Check(a) => check_command(a),
        HistoryCommand::Report(a) => report(a),
    }
}

/// Ingests `dirs` into `store`: every folder is read first, so a folder that is not a result stops
/// the command before anything is stored. Prints one line per folder unless `quiet`.
pub fn ingest_folders(
    store: &mut Store,
    dirs: &[PathBuf],
    commit: Option<&str>,
    quiet: bool,
) -> CliResult {
    let folders = dirs
        .iter()
        .map(|d| ingest::read_folder(d, commit))
        .collect::<Result<Vec<_>, _>>()?;
    let (mut stored, mut points) = (0, 0);
    for folder in &folders {
        let outcome = store.ingest(folder)?;
        if let Ingested::Stored { points: n } = outcome {
            stored += 1;
            points += n;
        }
        if !quiet {
            match outcome {
                Ingested::Stored { points: n } => {
                    outln!("stored {n} point(s): {}", folder.path.display())?
                }
                Ingested::AlreadyStored => outln!("already stored: {}", folder.path.display())?,
            }
        }
    }
    if !quiet {
        outln!(
            "{stored} of {} folder(s) stored ({points} point(s)) in {}",
            folders.len(),
            store.name()
        )?;
    }
    Ok(())
}

/// `run --history DB`, `matrix run --history DB`: stores the committed result folder `dir`; one line
/// on stderr (stdout may carry `--format` output).
pub fn remember(db: &str, dir: &Path) -> CliResult {
    let mut store = Store::open(db)?;
    let folder = ingest::read_folder(dir, None)?;
    match store.ingest(&folder)? {
        Ingested::Stored { points } => {
            eprintln!("history: stored {points} point(s) in {}", store.name())
        }
        Ingested::AlreadyStored => eprintln!("history: already stored in {}", store.name()),
    }
    Ok(())
}

fn add(args: AddArgs) -> CliResult {
    let mut store = args.db.open()?;
    ingest_folders(&mut store, &args.dirs, args.commit.as_deref(), false)
}

fn series_name(a: &Analyzed) -> String {
    let k = &a.series.key;
    format!(
        "{} · {} · {} {} · {}",
        k.model, k.label, k.runtime, k.runtime_version, k.metric
    )
}

fn change_line(f: &Found) -> String {
    let c = &f.change;
    format!(
        "{} ×{:.3} ({:.0} % CI {:.3}–{:.3}) between {} and {} (points {}→{})",
        c.direction.label(),
        c.ratio.ratio,
        c.ratio.confidence * 100.0,
        c.ratio.low,
        c.ratio.high,
        f.last_good_commit,
        f.first_changed_commit,
        c.at,
        c.at + 1
    )
}

fn list(args: ListArgs) -> CliResult {
    let rule = args.rule.rule()?;
    let mut store = args.db.open()?;
    let analyzed = check::analyze(&mut store, &rule)?;
    let all: Vec<_> = analyzed.iter().map(|a| a.series.clone()).collect();
    let boundaries = check::boundaries(&all);
    let keep = |a: &&Analyzed| {
        let k = &a.series.key;
        args.model.as_ref().is_none_or(|m| &k.model == m)
            && args.runtime.as_ref().is_none_or(|r| &k.runtime == r)
            && args.metric.as_ref().is_none_or(|m| &k.metric == m)
    };
    let shown: Vec<&Analyzed> = analyzed.iter().filter(keep).collect();
    if shown.is_empty() {
        outln!(
            "no series in {} matches; `trtmc-bench history add DIR` stores results",
            store.name()
        )?;
        return Ok(());
    }
    let names: Vec<String> = shown.iter().map(|a| series_name(a)).collect();
    let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    outln!(
        "{:>5}  {}  {:>6}  {:<12}  changes",
        "id",
        pad_right("series", width),
        "points",
        "machine"
    )?;
    for (a, name) in shown.iter().zip(&names) {
        let last = a
            .changes
            .last()
            .map(change_line)
            .unwrap_or_else(|| "none".into());
        outln!(
            "{:>5}  {}  {:>6}  {:<12}  {}",
            a.series.id,
            pad_right(name, width),
            a.series.points,
            a.series.key.machine,
            if a.changes.len() > 1 {
                format!("{} (latest: {last})", a.changes.len())
            } else {
                last
            }
        )?;
        for b in boundaries.iter().filter(|b| b.to_series == a.series.id) {
            outln!(
                "{:>5}  ↳ continues series {} after a boundary: {}",
                "",
                b.from_series,
                b.changed.join(", ")
            )?;
        }
    }
    Ok(())
}

fn show(args: ShowArgs) -> CliResult {
    let rule = args.rule.rule()?;
    let mut store = args.db.open()?;
    let points = store.points(args.series)?;
    let series = store
        .series()?
        .into_iter()
        .find(|s| s.id == args.series)
        .ok_or_else(|| CliError::input(format!("no series {}", args.series)))?;
    let a = check::analyze_series(series, points, &rule);
    let k = &a.series.key;
    outln!("series {}: {}", a.series.id, series_name(&a))?;
    outln!(
        "workload {}  operation {}  machine {} ({})",
        k.workload,
        k.operation,
        k.machine,
        k.machine_name
    )?;
    for (i, p) in a.points.iter().enumerate() {
        if let Some(f) = a.changes.iter().find(|f| f.change.at == i) {
            outln!("      ── {}", change_line(f))?;
        }
        let interval = match (p.low, p.high) {
            (Some(l), Some(h)) => format!("[{l:.4}, {h:.4}]"),
            _ => "no interval".into(),
        };
        outln!(
            "{:>5}  {}  {:<12}  {:.4} {}  n={}  {}  {}",
            i + 1,
            p.created,
            p.commit.get(..12).unwrap_or(&p.commit),
            p.estimate,
            interval,
            p.count,
            p.verdict,
            p.folder
        )?;
    }
    Ok(())
}

fn check_command(args: CheckArgs) -> CliResult {
    args.fail_on.check("history check", &[FailOn::Regression])?;
    let rule = args.rule.rule()?;
    let mut store = args.db.open()?;
    let analyzed = check::analyze(&mut store, &rule)?;
    let regressions = check::regressions(&analyzed, args.since.as_deref())?;
    if let Some(path) = &args.export_junit {
        write_file(
            path,
            junit(&analyzed, &regressions, args.since.as_deref())
                .to_xml()
                .as_bytes(),
        )?;
    }
    if let Some(path) = &args.export_markdown {
        write_file(
            path,
            markdown(&analyzed, &regressions, args.since.as_deref()).as_bytes(),
        )?;
    }
    outln!(
        "{} series, {} confirmed slowdown(s){}",
        analyzed.len(),
        regressions.len(),
        args.since
            .as_ref()
            .map(|s| format!(" since {s}"))
            .unwrap_or_default()
    )?;
    for (a, f) in &regressions {
        outln!(
            "  series {}: {}: {}",
            a.series.id,
            series_name(a),
            change_line(f)
        )?;
        outln!(
            "    before: {}",
            f.before_folders.last().cloned().unwrap_or_default()
        )?;
        outln!(
            "    after:  {}",
            f.after_folders.first().cloned().unwrap_or_default()
        )?;
    }
    if !args.fail_on.fail_on.is_empty() && !regressions.is_empty() {
        let names: Vec<String> = regressions
            .iter()
            .take(3)
            .map(|(a, f)| {
                format!(
                    "series {} {} (×{:.3})",
                    a.series.id,
                    series_name(a),
                    f.change.ratio.ratio
                )
            })
            .collect();
        return Err(CliError::new(
            ExitCode::FailOn,
            format!(
                "--fail-on regression: {} confirmed slowdown(s): {}{}",
                regressions.len(),
                names.join(", "),
                if regressions.len() > 3 {
                    " and more"
                } else {
                    ""
                }
            ),
        ));
    }
    Ok(())
}

fn write_file(path: &Path, bytes: &[u8]) -> CliResult {
    trtmc_core::fsutil::write_atomic(path, bytes).map_err(|e| {
        CliError::new(
            ExitCode::Output,
            format!("cannot write {}: {e}", path.display()),
        )
    })
}

fn junit(analyzed: &[Analyzed], regressions: &[(&Analyzed, &Found)], since: Option<&str>) -> Suite {
    let cases = analyzed
        .iter()
        .map(|a| {
            let hits: Vec<&Found> = regressions
                .iter()
                .filter(|(r, _)| r.series.id == a.series.id)
                .map(|(_, f)| *f)
                .collect();
            let outcome = match hits.first() {
                Some(f) => Outcome::Failure {
                    message: format!("regression: {}", change_line(f)),
                    detail: hits
                        .iter()
                        .map(|f| {
                            format!(
                                "{}\nbefore: {}\nafter: {}",
                                change_line(f),
                                f.before_folders.join(", "),
                                f.after_folders.join(", ")
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\n\n"),
                },
                None => Outcome::Passed,
            };
            TestCase {
                classname: a.series.key.model.clone(),
                name: format!("series {}: {}", a.series.id, series_name(a)),
                time_s: None,
                outcome,
                system_out: (!a.changes.is_empty()).then(|| {
                    a.changes
                        .iter()
                        .map(change_line)
                        .collect::<Vec<_>>()
                        .join("\n")
                }),
            }
        })
        .collect();
    Suite {
        name: match since {
            Some(s) => format!("trtmc-bench history check --since {s}"),
            None => "trtmc-bench history check".into(),
        },
        timestamp: None,
        hostname: None,
        cases,
    }
}

/// Markdown cells: no line breaks, pipes escaped.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

fn markdown(
    analyzed: &[Analyzed],
    regressions: &[(&Analyzed, &Found)],
    since: Option<&str>,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "## trtmc history check{}\n\n{} series, **{} confirmed slowdown(s)**.\n",
        since
            .map(|r| format!(" since `{}`", cell(r)))
            .unwrap_or_default(),
        analyzed.len(),
        regressions.len()
    );
    if regressions.is_empty() {
        return s;
    }
    s.push_str("| series | ratio | interval | commits | before | after |\n| --- | --- | --- | --- | --- | --- |\n");
    for (a, f) in regressions {
        let c = &f.change.ratio;
        let _ = writeln!(
            s,
            "| {} {} | ×{:.3} | {:.3}–{:.3} | `{}`..`{}` | {} | {} |",
            a.series.id,
            cell(&series_name(a)),
            c.ratio,
            c.low,
            c.high,
            cell(&f.last_good_commit),
            cell(&f.first_changed_commit),
            cell(f.before_folders.last().map(String::as_str).unwrap_or("")),
            cell(f.after_folders.first().map(String::as_str).unwrap_or(""))
        );
    }
    s
}

fn report(args: ReportArgs) -> CliResult {
    let rule = args.rule.rule()?;
    let mut store = args.db.open()?;
    let analyzed = check::analyze(&mut store, &rule)?;
    let written = trtmc_history::report::write(&args.output, &analyzed, &rule, store.name())?;
    outln!("wrote {}", written.display())?;
    Ok(())
}
