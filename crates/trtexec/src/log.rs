//! Reads what trtexec prints (stdout and stderr together) into a [`ParsedLog`].
//!
//! The parser is line based and never fails: it keeps what it recognizes and notes in
//! [`ParsedLog::problems`] what looked like a known section but could not be read. Lines carry
//! trtexec's prefix `[MM/DD/YYYY-HH:MM:SS] [I] ` (severity V, I, W, E or F); the `&&&&` status
//! lines, the layer-information dump and a tuner's dry-run listing may come without it.
//!
//! A log may hold several runs (a tuning parent with its children): fields that hold one value
//! keep the last run's, lists keep all of them in order.

use serde::{Deserialize, Serialize};

use crate::summary::{PerformanceSummary, SummaryBuilder, number_with_unit};
use crate::version::TrtexecVersion;

/// Severity letter of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// `[V]`
    Verbose,
    /// `[I]`
    Info,
    /// `[W]`
    Warning,
    /// `[E]`
    Error,
    /// `[F]` (internal error)
    Fatal,
}

impl Severity {
    fn from_letter(letter: char) -> Option<Self> {
        match letter {
            'V' => Some(Severity::Verbose),
            'I' => Some(Severity::Info),
            'W' => Some(Severity::Warning),
            'E' => Some(Severity::Error),
            'F' => Some(Severity::Fatal),
            _ => None,
        }
    }
}

/// Splits `[07/07/2026-02:10:58] [I] message` into severity and message. Lines without the
/// prefix come back whole with no severity.
pub fn split_line(line: &str) -> (Option<Severity>, &str) {
    let line = line.trim_end_matches(['\r', '\n']);
    let mut rest = line;
    if let Some(after) = rest.strip_prefix('[')
        && let Some((stamp, tail)) = after.split_once("] ")
        && !stamp.is_empty()
        && stamp
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '/' | '-' | ':' | '.' | ' '))
    {
        rest = tail;
    }
    let mut chars = rest.chars();
    if let (Some('['), Some(letter), Some(']')) = (chars.next(), chars.next(), chars.next())
        && let Some(severity) = Severity::from_letter(letter)
    {
        let message = chars.as_str();
        return (Some(severity), message.strip_prefix(' ').unwrap_or(message));
    }
    (None, line)
}

/// The word after `&&&&`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// `&&&& RUNNING`: printed first, with the version and the command line.
    Running,
    /// `&&&& PASSED`
    Passed,
    /// `&&&& FAILED`
    Failed,
    /// `&&&& WAIVED`
    Waived,
}

/// One `&&&& RUNNING|PASSED|FAILED|WAIVED TensorRT.trtexec [TensorRT v101601] [b11] # cmd` line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusLine {
    /// The status word.
    pub status: RunStatus,
    /// The test name, `TensorRT.trtexec`.
    pub program: String,
    /// The version as printed, `NV_TENSORRT_VERSION` (8.0+; absent in 7.x banners).
    pub encoded_version: Option<u64>,
    /// The decoded version.
    pub version: Option<TrtexecVersion>,
    /// The build number (`[b11]`, 10.x+).
    pub build: Option<u64>,
    /// The command line after `# `, arguments joined by single spaces.
    pub command_line: Option<String>,
}

/// Parses a `&&&& ...` status line; `None` for anything else (task markers included).
pub fn parse_status_line(line: &str) -> Option<StatusLine> {
    let (_, message) = split_line(line);
    let rest = message.trim_start().strip_prefix("&&&& ")?;
    let (word, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let status = match word {
        "RUNNING" => RunStatus::Running,
        "PASSED" => RunStatus::Passed,
        "FAILED" => RunStatus::Failed,
        "WAIVED" => RunStatus::Waived,
        _ => return None,
    };
    let (head, command_line) = match rest.split_once(" # ") {
        Some((head, command)) => (head, Some(command.to_string())),
        None => (rest.trim_end_matches(" #"), None),
    };
    let program = head
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string();
    let mut encoded_version = None;
    let mut build = None;
    for group in head.split('[').skip(1) {
        let Some((inside, _)) = group.split_once(']') else {
            continue;
        };
        if let Some(number) = inside.strip_prefix("TensorRT v") {
            encoded_version = number.trim().parse::<u64>().ok();
        } else if let Some(number) = inside.strip_prefix('b') {
            build = number.trim().parse::<u64>().ok();
        }
    }
    Some(StatusLine {
        status,
        program,
        encoded_version,
        version: encoded_version.and_then(TrtexecVersion::from_encoded),
        build,
        command_line,
    })
}

/// Build-phase timings and sizes found in the log (seconds unless named otherwise).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BuildTimings {
    /// `Finished parsing network model. Parse time: X` (10.x+).
    pub parse_s: Option<f64>,
    /// `[TRT] Graph construction and optimization completed in X seconds.` (verbose logs).
    pub graph_optimization_s: Option<f64>,
    /// `[TRT] Formats and tactics selection completed in X seconds.` (verbose logs).
    pub tactic_selection_s: Option<f64>,
    /// `[TRT] Engine generation completed in X seconds.`
    pub engine_generation_s: Option<f64>,
    /// `Engine built in X sec.`: trtexec's whole build, parse to serialized engine.
    pub engine_built_s: Option<f64>,
    /// `Created engine with size: X MiB`.
    pub engine_size_mib: Option<f64>,
    /// `Engine deserialized in X sec.`
    pub engine_deserialize_s: Option<f64>,
}

/// `Warmup completed N queries over X ms`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Warmup {
    /// Warm-up queries.
    pub queries: u64,
    /// Warm-up time, ms.
    pub duration_ms: f64,
}

/// `Timing trace has N queries over X s`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimingTrace {
    /// Timed queries (warm-ups excluded).
    pub queries: u64,
    /// Host walltime of the timed queries, s.
    pub duration_s: f64,
}

/// One `Average on N runs - GPU latency: X ms - Host latency: Y ms (...)` line.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TraceAverage {
    /// Mean GPU compute time of the N queries, ms.
    pub gpu_ms: f64,
    /// Mean host latency, ms.
    pub host_ms: f64,
    /// Mean end-to-end latency (7.x–8.2), ms.
    pub end_to_end_ms: Option<f64>,
    /// Mean enqueue time (7.2+), ms.
    pub enqueue_ms: Option<f64>,
}

/// The `Trace averages of N runs:` block.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceAverages {
    /// Queries per average (`--avgRuns`).
    pub runs_per_average: u64,
    /// The printed averages.
    pub averages: Vec<TraceAverage>,
    /// From `... Omitting N lines` (10.x+ prints the first and last 200 averages); N counts
    /// queries, not lines.
    pub omitted_queries: Option<u64>,
}

/// One row of the `--dumpProfile` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileRow {
    /// Layer name (`Total` for the last row).
    pub name: String,
    /// Total time over all profiled iterations, ms.
    pub time_ms: f64,
    /// Average per iteration, ms.
    pub average_ms: f64,
    /// Median per iteration, ms (8.4+).
    pub median_ms: Option<f64>,
    /// Share of the total, %.
    pub percentage: f64,
}

/// The `=== Profile (N iterations ) ===` table of `--dumpProfile`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfileTable {
    /// Profiled iterations.
    pub iterations: u64,
    /// One row per layer, in execution order.
    pub layers: Vec<ProfileRow>,
    /// The `Total` row.
    pub total: Option<ProfileRow>,
}

/// `Accuracy loss for tensor y (Cosine): 0.000000` (11.1 accuracy check).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccuracyLoss {
    /// Output tensor.
    pub tensor: String,
    /// Algorithm as printed (`Cosine`, `L0`, ...).
    pub algorithm: String,
    /// The loss (0 = identical).
    pub loss: f64,
}

/// `&&&& TASK_BEGIN|TASK_END|TASK_ABORT [iter=N] BuildRoute = '...'` from trtexec's own tuner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuningTask {
    /// `TASK_BEGIN`, `TASK_END` or `TASK_ABORT`.
    pub marker: String,
    /// Iteration index.
    pub iteration: u64,
    /// The build route.
    pub route: String,
}

/// What a log of trtexec's own Global Performance Tuner (11.1) says.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TuningLog {
    /// `Using tuning build route: ...` (a `--setBuildRoute` build).
    pub build_route: Option<String>,
    /// Each `--dryRun: N build routes would be tried:` listing, routes in order.
    pub dry_runs: Vec<Vec<String>>,
    /// Iteration markers.
    pub tasks: Vec<TuningTask>,
    /// `Best iteration: <route> (gpu_time_ms=X)`: route and time.
    pub best: Option<(String, f64)>,
    /// `Tuning summary: A / B iterations succeeded.`: (A, B).
    pub succeeded: Option<(u64, u64)>,
}

/// Everything recognized in one trtexec log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ParsedLog {
    /// Every `&&&&` status line, in order.
    pub status_lines: Vec<StatusLine>,
    /// The version from the first `&&&&` line that has one, else from `TensorRT version: X`.
    pub tensorrt_version: Option<TrtexecVersion>,
    /// `Selected Device: ...`
    pub device: Option<String>,
    /// Build timings.
    pub build: BuildTimings,
    /// The warm-up line.
    pub warmup: Option<Warmup>,
    /// The timing-trace line.
    pub trace: Option<TimingTrace>,
    /// The per-N-queries averages.
    pub trace_averages: Option<TraceAverages>,
    /// Every complete performance summary, in order.
    pub summaries: Vec<PerformanceSummary>,
    /// 10.x profiling without `--separateProfileRun`: "The e2e network timing is not reported".
    pub e2e_timing_not_reported: bool,
    /// "Skipped inference phase since --skipInference is added."
    pub inference_skipped: bool,
    /// Every `--dumpProfile` table.
    pub profile_tables: Vec<ProfileTable>,
    /// Accuracy-check results.
    pub accuracy: Vec<AccuracyLoss>,
    /// Tuner output.
    pub tuning: TuningLog,
    /// Messages of `[E]` and `[F]` lines, and the failure lines trtexec and the C++ runtime print
    /// without a severity ([`is_unmarked_failure`]: `Cuda failure …`, an uncaught exception).
    pub errors: Vec<String>,
    /// Messages of `[W]` lines outside the performance summary.
    pub warnings: Vec<String>,
    /// Sections that looked familiar but could not be read.
    pub problems: Vec<String>,
}

impl ParsedLog {
    /// The first `&&&& RUNNING` line (the banner).
    pub fn banner(&self) -> Option<&StatusLine> {
        self.status_lines
            .iter()
            .find(|s| s.status == RunStatus::Running)
    }

    /// The last final status (`PASSED`, `FAILED` or `WAIVED`), i.e. how the outermost run ended.
    pub fn outcome(&self) -> Option<RunStatus> {
        self.status_lines
            .iter()
            .rev()
            .map(|s| s.status)
            .find(|s| *s != RunStatus::Running)
    }

    /// The last performance summary.
    pub fn summary(&self) -> Option<&PerformanceSummary> {
        self.summaries.last()
    }

    /// The last `count` error messages that say something (empty ones dropped).
    pub fn last_errors(&self, count: usize) -> Vec<String> {
        let meaningful: Vec<&String> = self
            .errors
            .iter()
            .filter(|e| !e.trim().is_empty())
            .collect();
        let start = meaningful.len().saturating_sub(count);
        meaningful[start..].iter().map(|e| e.to_string()).collect()
    }
}

/// A failure line printed without a `[E]`/`[F]` severity. trtexec's CUDA checks
/// (`samples/common/safeCommon.h`) write `Cuda failure at FILE:LINE: message` (`Cuda failure: N` in
/// older releases) straight to stderr; a C++ exception nobody caught ends the process with
/// `terminate called after throwing …` and `what(): …`; the loader refuses a missing TensorRT library
/// with `error while loading shared libraries`; a failed `assert` prints `Assertion … failed`.
pub fn is_unmarked_failure(line: &str) -> bool {
    const STARTS: &[&str] = &[
        "Cuda failure",
        "CUDA failure",
        "CUDA error",
        "Cuda error",
        "terminate called",
        "what():",
        "Segmentation fault",
    ];
    STARTS.iter().any(|s| line.starts_with(s))
        || line.contains("error while loading shared libraries")
        || (line.contains("Assertion") && line.ends_with("failed."))
}

/// Parses a whole trtexec log.
pub fn parse_log(text: &str) -> ParsedLog {
    let mut parser = Parser::default();
    for (index, line) in text.lines().enumerate() {
        parser.line(index + 1, line);
    }
    parser.finish()
}

#[derive(Debug, Default)]
enum Section {
    #[default]
    None,
    Summary(Box<SummaryBuilder>),
    Block(Box<SummaryBuilder>),
    TraceAverages(TraceAverages),
    Profile {
        table: ProfileTable,
        layout: Option<ProfileLayout>,
    },
    DryRun(Vec<String>),
}

#[derive(Debug, Clone, Copy)]
enum ProfileLayout {
    /// 8.6+: `Time(ms) Avg.(ms) Median(ms) Time(%) Layer`.
    NumbersFirst,
    /// 7.x–8.5: `Layer Time (ms) Avg. Time (ms) [Median Time (ms)] Time %`.
    NameFirst { with_median: bool },
}

#[derive(Debug, Default)]
struct Parser {
    log: ParsedLog,
    section: Section,
    section_start: usize,
}

impl Parser {
    fn line(&mut self, number: usize, line: &str) {
        let (severity, message) = split_line(line);
        let trimmed = message.trim();
        if trimmed.starts_with("&&&& ") {
            self.close_section();
            self.status(trimmed);
            return;
        }
        if severity.is_none() && is_unmarked_failure(trimmed) {
            self.close_section();
            self.log.errors.push(trimmed.to_string());
            return;
        }
        if self.continue_section(severity, message) {
            return;
        }
        self.close_section();
        self.section_start = number;
        self.plain(severity, message);
    }

    /// Feeds the open section; false when the line does not belong to it.
    fn continue_section(&mut self, severity: Option<Severity>, message: &str) -> bool {
        let trimmed = message.trim();
        match &mut self.section {
            Section::None => false,
            Section::Summary(builder) => match severity {
                Some(Severity::Warning) => {
                    if let Some(text) = trimmed.strip_prefix("* ") {
                        builder.push_warning(text);
                        true
                    } else {
                        // Indented continuation lines carry advice only; anything else is not
                        // part of the summary.
                        message.starts_with(' ')
                    }
                }
                Some(Severity::Verbose) => true,
                _ => builder.feed_line(trimmed),
            },
            Section::Block(builder) => {
                if builder.block_complete() {
                    return false;
                }
                matches!(severity, Some(Severity::Verbose)) || builder.feed_block(trimmed)
            }
            Section::TraceAverages(averages) => {
                if let Some(rest) = trimmed.strip_prefix("... Omitting ") {
                    averages.omitted_queries = rest
                        .strip_suffix(" lines")
                        .and_then(|n| n.trim().parse().ok());
                    return true;
                }
                match parse_trace_average(trimmed) {
                    Some(average) => {
                        averages.averages.push(average);
                        true
                    }
                    None => false,
                }
            }
            Section::Profile { table, layout } => {
                if trimmed.is_empty() {
                    return false;
                }
                let Some(current) = layout else {
                    *layout = profile_layout(trimmed);
                    return layout.is_some();
                };
                match parse_profile_row(trimmed, *current) {
                    Some(row) if row.name == "Total" => {
                        table.total = Some(row);
                        true
                    }
                    Some(row) => {
                        table.layers.push(row);
                        true
                    }
                    None => false,
                }
            }
            Section::DryRun(routes) => {
                let Some(rest) = trimmed.strip_prefix('[') else {
                    return false;
                };
                let Some((index, route)) = rest.split_once("]:") else {
                    return false;
                };
                if index.parse::<u64>().is_err() {
                    return false;
                }
                routes.push(route.trim().to_string());
                true
            }
        }
    }

    fn close_section(&mut self) {
        match std::mem::take(&mut self.section) {
            Section::None => {}
            Section::Summary(builder) | Section::Block(builder) => match builder.finish() {
                Ok(summary) => self.log.summaries.push(summary),
                Err(problem) => self
                    .log
                    .problems
                    .push(format!("line {}: {problem}", self.section_start)),
            },
            Section::TraceAverages(averages) => self.log.trace_averages = Some(averages),
            Section::Profile { table, layout } => {
                if layout.is_none() || (table.layers.is_empty() && table.total.is_none()) {
                    self.log.problems.push(format!(
                        "line {}: the --dumpProfile table has no readable rows",
                        self.section_start
                    ));
                }
                self.log.profile_tables.push(table);
            }
            Section::DryRun(routes) => self.log.tuning.dry_runs.push(routes),
        }
    }

    fn status(&mut self, message: &str) {
        if let Some(status) = parse_status_line(message) {
            if self.log.tensorrt_version.is_none() {
                self.log.tensorrt_version = status.version;
            }
            self.log.status_lines.push(status);
            return;
        }
        let rest = message.trim_start_matches("&&&& ");
        let Some((marker, rest)) = rest.split_once(" [iter=") else {
            return;
        };
        let Some((iteration, rest)) = rest.split_once(']') else {
            return;
        };
        let route = rest
            .trim()
            .strip_prefix("BuildRoute = ")
            .map(|r| r.trim().trim_matches('\'').to_string())
            .unwrap_or_default();
        if let Ok(iteration) = iteration.parse() {
            self.log.tuning.tasks.push(TuningTask {
                marker: marker.trim().to_string(),
                iteration,
                route,
            });
        }
    }

    fn plain(&mut self, severity: Option<Severity>, message: &str) {
        let trimmed = message.trim();
        match severity {
            Some(Severity::Error | Severity::Fatal) => {
                if !trimmed.is_empty() {
                    self.log.errors.push(trimmed.to_string());
                }
                return;
            }
            Some(Severity::Warning) => {
                if !trimmed.is_empty() {
                    self.log.warnings.push(trimmed.to_string());
                }
                return;
            }
            _ => {}
        }
        let core = trimmed.strip_prefix("[TRT] ").unwrap_or(trimmed);
        let log = &mut self.log;
        if core == "=== Performance summary ===" {
            self.section = Section::Summary(Box::new(SummaryBuilder::lines()));
        } else if core == "Host latency" || core == "Host Latency" {
            let mut builder = SummaryBuilder::block();
            builder.feed_block(core);
            self.section = Section::Block(Box::new(builder));
        } else if let Some(rest) = core.strip_prefix("Trace averages of ") {
            let runs = rest
                .strip_suffix(" runs:")
                .and_then(|n| n.trim().parse().ok());
            self.section = Section::TraceAverages(TraceAverages {
                runs_per_average: runs.unwrap_or(0),
                ..TraceAverages::default()
            });
        } else if let Some(rest) = core.strip_prefix("=== Profile (") {
            let iterations = rest.split_whitespace().next().and_then(|n| n.parse().ok());
            if iterations.is_none() {
                log.problems
                    .push(format!("cannot read the iteration count in {core:?}"));
            }
            self.section = Section::Profile {
                table: ProfileTable {
                    iterations: iterations.unwrap_or(0),
                    ..ProfileTable::default()
                },
                layout: None,
            };
        } else if core.starts_with("--dryRun: ") && core.ends_with("would be tried:") {
            self.section = Section::DryRun(Vec::new());
        } else if let Some(rest) = core.strip_prefix("Warmup completed ") {
            match rest.split_once(" queries over ") {
                Some((queries, ms)) => match (queries.parse(), number_with_unit(ms, "ms")) {
                    (Ok(queries), Some(duration_ms)) => {
                        log.warmup = Some(Warmup {
                            queries,
                            duration_ms,
                        })
                    }
                    _ => log.problems.push(format!("cannot read {core:?}")),
                },
                None => log.problems.push(format!("cannot read {core:?}")),
            }
        } else if let Some(rest) = core.strip_prefix("Timing trace has ") {
            match rest.split_once(" queries over ") {
                Some((queries, s)) => match (queries.parse(), number_with_unit(s, "s")) {
                    (Ok(queries), Some(duration_s)) => {
                        log.trace = Some(TimingTrace {
                            queries,
                            duration_s,
                        })
                    }
                    _ => log.problems.push(format!("cannot read {core:?}")),
                },
                None => log.problems.push(format!("cannot read {core:?}")),
            }
        } else if let Some(rest) = core.strip_prefix("TensorRT version: ") {
            if log.tensorrt_version.is_none() {
                log.tensorrt_version = TrtexecVersion::parse(rest);
            }
        } else if let Some(rest) = core.strip_prefix("Selected Device: ") {
            log.device = Some(rest.trim().to_string());
        } else if let Some(rest) = core.strip_prefix("Engine built in ") {
            log.build.engine_built_s = number_with_unit(rest, "sec");
        } else if let Some(rest) = core.strip_prefix("Engine deserialized in ") {
            log.build.engine_deserialize_s = number_with_unit(rest, "sec");
        } else if let Some(rest) = core.strip_prefix("Engine generation completed in ") {
            log.build.engine_generation_s = number_with_unit(rest, "seconds");
        } else if let Some(rest) =
            core.strip_prefix("Graph construction and optimization completed in ")
        {
            log.build.graph_optimization_s = number_with_unit(rest, "seconds");
        } else if let Some(rest) = core.strip_prefix("Formats and tactics selection completed in ")
        {
            log.build.tactic_selection_s = number_with_unit(rest, "seconds");
        } else if let Some(rest) = core.strip_prefix("Finished parsing network model. Parse time: ")
        {
            log.build.parse_s = rest.trim().parse().ok();
        } else if let Some(rest) = core.strip_prefix("Created engine with size: ") {
            log.build.engine_size_mib = number_with_unit(rest, "MiB");
        } else if core.starts_with("The e2e network timing is not reported") {
            log.e2e_timing_not_reported = true;
        } else if core.starts_with("Skipped inference phase since --skipInference") {
            log.inference_skipped = true;
        } else if let Some(rest) = core.strip_prefix("Accuracy loss for tensor ") {
            match parse_accuracy(rest) {
                Some(loss) => log.accuracy.push(loss),
                None => log.problems.push(format!("cannot read {core:?}")),
            }
        } else if let Some(rest) = core.strip_prefix("Using tuning build route: ") {
            log.tuning.build_route = Some(rest.trim().to_string());
        } else if let Some(rest) = core.strip_prefix("Best iteration: ") {
            log.tuning.best = parse_best_iteration(rest).or(log.tuning.best.take());
        } else if let Some(rest) = core.strip_prefix("Tuning summary: ") {
            log.tuning.succeeded = parse_tuning_summary(rest).or(log.tuning.succeeded);
        }
    }

    fn finish(mut self) -> ParsedLog {
        self.close_section();
        self.log
    }
}

/// `<route> (gpu_time_ms=0.0283833)`
fn parse_best_iteration(rest: &str) -> Option<(String, f64)> {
    let (route, time) = rest.rsplit_once(" (gpu_time_ms=")?;
    let ms = time.trim_end_matches(')').parse().ok()?;
    Some((route.trim().to_string(), ms))
}

/// `4 / 4 iterations succeeded.`
fn parse_tuning_summary(rest: &str) -> Option<(u64, u64)> {
    let (ok, rest) = rest.split_once(" / ")?;
    let (total, _) = rest.split_once(' ')?;
    Some((ok.trim().parse().ok()?, total.parse().ok()?))
}

fn parse_trace_average(message: &str) -> Option<TraceAverage> {
    let rest = message.strip_prefix("Average on ")?;
    let mut parts = rest.split(" - ");
    parts.next()?; // "10 runs"
    let gpu = parts.next()?.strip_prefix("GPU latency: ")?;
    let host = parts.next()?.strip_prefix("Host latency: ")?;
    let (host, extras) = match host.split_once('(') {
        Some((host, extras)) => (host, extras.trim_end_matches(')')),
        None => (host, ""),
    };
    let mut average = TraceAverage {
        gpu_ms: number_with_unit(gpu, "ms")?,
        host_ms: number_with_unit(host, "ms")?,
        end_to_end_ms: None,
        enqueue_ms: None,
    };
    for extra in extras.split(", ").filter(|e| !e.trim().is_empty()) {
        if let Some(value) = extra.strip_prefix("end to end ") {
            average.end_to_end_ms = number_with_unit(value, "ms");
        } else if let Some(value) = extra.strip_prefix("enqueue ") {
            average.enqueue_ms = number_with_unit(value, "ms");
        }
    }
    Some(average)
}

fn profile_layout(header: &str) -> Option<ProfileLayout> {
    if header.starts_with("Time(ms)") {
        Some(ProfileLayout::NumbersFirst)
    } else if header.starts_with("Layer") {
        Some(ProfileLayout::NameFirst {
            with_median: header.contains("Median"),
        })
    } else {
        None
    }
}

fn parse_profile_row(line: &str, layout: ProfileLayout) -> Option<ProfileRow> {
    match layout {
        ProfileLayout::NumbersFirst => {
            let mut rest = line.trim_start();
            let mut numbers = [0.0f64; 4];
            for slot in &mut numbers {
                let (token, tail) = rest.split_once(char::is_whitespace)?;
                *slot = token.parse().ok()?;
                rest = tail.trim_start();
            }
            let name = rest.trim_end();
            if name.is_empty() {
                return None;
            }
            Some(ProfileRow {
                name: name.to_string(),
                time_ms: numbers[0],
                average_ms: numbers[1],
                median_ms: Some(numbers[2]),
                percentage: numbers[3],
            })
        }
        ProfileLayout::NameFirst { with_median } => {
            let count = if with_median { 4 } else { 3 };
            let mut rest = line.trim_end();
            let mut numbers = Vec::with_capacity(count);
            for _ in 0..count {
                let (head, token) = rest.rsplit_once(char::is_whitespace)?;
                numbers.push(token.parse::<f64>().ok()?);
                rest = head.trim_end();
            }
            numbers.reverse();
            let name = rest.trim();
            if name.is_empty() {
                return None;
            }
            let (median_ms, percentage) = if with_median {
                (Some(numbers[2]), numbers[3])
            } else {
                (None, numbers[2])
            };
            Some(ProfileRow {
                name: name.to_string(),
                time_ms: numbers[0],
                average_ms: numbers[1],
                median_ms,
                percentage,
            })
        }
    }
}

fn parse_accuracy(rest: &str) -> Option<AccuracyLoss> {
    let (left, value) = rest.rsplit_once(": ")?;
    let (tensor, algorithm) = left.rsplit_once(" (")?;
    Some(AccuracyLoss {
        tensor: tensor.to_string(),
        algorithm: algorithm.trim_end_matches(')').to_string(),
        loss: value.trim().parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_prefixed_and_bare_lines() {
        assert_eq!(
            split_line("[07/07/2026-02:10:58] [I] Throughput: 15374.3 qps"),
            (Some(Severity::Info), "Throughput: 15374.3 qps")
        );
        assert_eq!(
            split_line("[07/07/2026-02:10:58] [I]"),
            (Some(Severity::Info), "")
        );
        assert_eq!(
            split_line("[03/19/2022-12:28:38] [I] "),
            (Some(Severity::Info), "")
        );
        assert_eq!(
            split_line("[08/27/2026-12:21:02] [W] [TRT] ModelImporter.cpp:1047: x"),
            (Some(Severity::Warning), "[TRT] ModelImporter.cpp:1047: x")
        );
        assert_eq!(split_line("Bindings:"), (None, "Bindings:"));
        assert_eq!(split_line("[0]:-a=on"), (None, "[0]:-a=on"));
        assert_eq!(split_line(""), (None, ""));
        assert_eq!(split_line("[E] oops"), (Some(Severity::Error), "oops"));
    }

    #[test]
    fn status_lines_of_every_banner_form() {
        let s = parse_status_line(
            "&&&& RUNNING TensorRT.trtexec [TensorRT v101601] [b11] # trtexec --onnx=a.onnx",
        )
        .expect("banner");
        assert_eq!(s.status, RunStatus::Running);
        assert_eq!(s.program, "TensorRT.trtexec");
        assert_eq!(s.encoded_version, Some(101601));
        assert_eq!(s.version, Some(TrtexecVersion::new(10, 16, 1)));
        assert_eq!(s.build, Some(11));
        assert_eq!(s.command_line.as_deref(), Some("trtexec --onnx=a.onnx"));

        let s = parse_status_line("&&&& PASSED TensorRT.trtexec [TensorRT v8003] # trtexec")
            .expect("8.0 form");
        assert_eq!(s.status, RunStatus::Passed);
        assert_eq!(s.version, Some(TrtexecVersion::new(8, 0, 3)));
        assert_eq!(s.build, None);

        let s = parse_status_line("&&&& RUNNING TensorRT.trtexec # ./trtexec --onnx=m.onnx")
            .expect("7.x form");
        assert_eq!(s.version, None);
        assert_eq!(s.command_line.as_deref(), Some("./trtexec --onnx=m.onnx"));

        assert!(parse_status_line("&&&& TASK_END [iter=3] BuildRoute = 'x'").is_none());
        assert!(parse_status_line("RUNNING").is_none());
    }

    #[test]
    fn trace_average_forms() {
        let a = parse_trace_average(
            "Average on 10 runs - GPU latency: 0.152188 ms - Host latency: 0.158199 ms (end to end 0.289972 ms, enqueue 0.0316971 ms)",
        )
        .expect("8.0 form");
        assert_eq!(a.end_to_end_ms, Some(0.289972));
        assert_eq!(a.enqueue_ms, Some(0.0316971));
        let a = parse_trace_average(
            "Average on 10 runs - GPU latency: 0.0390579 ms - Host latency: 0.0390579 ms (enqueue 0.00185547 ms)",
        )
        .expect("10.x form");
        assert_eq!(a.gpu_ms, 0.0390579);
        assert_eq!(a.end_to_end_ms, None);
        assert!(parse_trace_average("Average on 10 runs - GPU latency: x ms").is_none());
    }

    #[test]
    fn profile_rows_in_both_layouts() {
        let row = parse_profile_row(
            "      101.96       0.0056       0.0044       6.7   Reformatting CopyNode for Input Tensor 0 to {ForeignNode[a...b]}",
            ProfileLayout::NumbersFirst,
        )
        .expect("row");
        assert_eq!(
            row.name,
            "Reformatting CopyNode for Input Tensor 0 to {ForeignNode[a...b]}"
        );
        assert_eq!(row.median_ms, Some(0.0044));
        let row = parse_profile_row(
            "   conv 1 + relu       12.50       0.0125   1.5",
            ProfileLayout::NameFirst { with_median: false },
        )
        .expect("row");
        assert_eq!(row.name, "conv 1 + relu");
        assert_eq!(row.percentage, 1.5);
        assert!(parse_profile_row("Total", ProfileLayout::NumbersFirst).is_none());
    }
}
