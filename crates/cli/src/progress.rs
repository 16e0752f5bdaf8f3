//! How the orchestrators' progress events show on stderr: `run`'s [`Event`]s, `tune`'s and the
//! matrix's (each verb owns its event enum; [`Terminal`] renders all three).
//! `run` on a terminal: a spinner per build, and per case a bar of calls done out of the calls expected,
//! with elapsed time, ETA and the running p50 (indicatif); when stderr is not a terminal, a line when a
//! build or case starts and ends and one every [`LINE_EVERY`] in between. `tune`: a line per iteration.
//! `matrix`: a line per row and per Slurm step. Nothing with --quiet.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use trtmc_core::artifacts::CaseStatus;
use trtmc_matrix::progress::Event as MatrixEvent;
use trtmc_runner::progress::{Event, Progress};
use trtmc_runtime::protocol::WorkerProgress;
use trtmc_tune::Objective;
use trtmc_tune::cache::{IterationRecord, RouteStatus};
use trtmc_tune::progress::Event as TuneEvent;

/// How often a progress line is written when stderr is not a terminal (logs, CI).
const LINE_EVERY: Duration = Duration::from_secs(5);

pub struct Terminal {
    quiet: bool,
    bars: bool,
    current: Mutex<Option<ProgressBar>>,
    /// The running case's label and when its last progress line was written (no terminal).
    case: Mutex<(String, Instant)>,
}

impl Terminal {
    pub fn new(quiet: bool) -> Self {
        Self {
            quiet,
            bars: !quiet && std::io::stderr().is_terminal(),
            current: Mutex::new(None),
            case: Mutex::new((String::new(), Instant::now())),
        }
    }

    fn start(&self, message: String) {
        if self.quiet {
            return;
        }
        if !self.bars {
            eprintln!("{message}");
            return;
        }
        let bar = ProgressBar::new_spinner();
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} [{elapsed}]") {
            bar.set_style(style);
        }
        bar.set_message(message);
        bar.enable_steady_tick(Duration::from_millis(120));
        if let Ok(mut slot) = self.current.lock() {
            // A round ends with no event of its own: its bar is erased when the next one starts,
            // instead of staying on the screen as a stale line.
            if let Some(previous) = slot.replace(bar) {
                previous.finish_and_clear();
            }
        }
    }

    fn finish(&self, message: String) {
        if self.quiet {
            return;
        }
        if !self.bars {
            eprintln!("{message}");
            return;
        }
        // The running bar (if any: the cases of a rounds run finish after their last round, one
        // after the other) gives way to the finish line, which is always printed.
        if let Ok(mut slot) = self.current.lock()
            && let Some(bar) = slot.take()
        {
            bar.finish_and_clear();
        }
        eprintln!("{message}");
    }

    /// A case's worker reported: the bar shows calls done of expected, elapsed, ETA and running p50.
    fn case_progress(&self, index: usize, p: &WorkerProgress) {
        if self.quiet {
            return;
        }
        let Ok(mut case) = self.case.lock() else {
            return;
        };
        let line = progress_text(p);
        if !self.bars {
            if case.1.elapsed() >= LINE_EVERY {
                eprintln!("[{index}] {}: {line}", case.0);
                case.1 = Instant::now();
            }
            return;
        }
        if let Ok(slot) = self.current.lock()
            && let Some(bar) = slot.as_ref()
        {
            if bar.length() != Some(p.expected) {
                let template = "{spinner} {prefix} [{bar:24}] {msg} [{elapsed}]";
                if let Ok(style) = ProgressStyle::with_template(template) {
                    bar.set_style(style.progress_chars("=> "));
                }
                bar.set_prefix(format!("[{index}] {}", case.0));
                bar.set_length(p.expected);
            }
            bar.set_position(p.done.min(p.expected));
            bar.set_message(line);
        }
    }
}

/// `timed 120/150 calls, ETA 0.3 s, p50 6.68 ms` from a worker's progress report.
fn progress_text(p: &WorkerProgress) -> String {
    let remaining = p.expected.saturating_sub(p.done);
    let eta = if p.done > 0 {
        p.elapsed_s / p.done as f64 * remaining as f64
    } else {
        0.0
    };
    let phase = if p.phase == "warmup" {
        "warm-up"
    } else {
        "timed"
    };
    format!(
        "{phase} {}/{} calls, {} elapsed, ETA {}, p50 {} ms",
        p.done,
        p.expected,
        seconds(p.elapsed_s),
        seconds(eta),
        trtmc_report::fmt::fmt_num(p.p50_ms)
    )
}

/// `0.8 s`, `42 s`, `3 min 05 s`.
fn seconds(s: f64) -> String {
    if s < 10.0 {
        format!("{s:.1} s")
    } else if s < 120.0 {
        format!("{s:.0} s")
    } else {
        let whole = s.round() as u64;
        format!("{} min {:02} s", whole / 60, whole % 60)
    }
}

impl Progress for Terminal {
    fn report(&self, event: Event<'_>) {
        match event {
            Event::BuildStarted {
                model,
                runtime,
                path,
            } => self.start(format!(
                "building {model} for {runtime} → {}",
                path.display()
            )),
            Event::BuildFinished { model, seconds } => {
                self.finish(format!("built {model} in {seconds:.1} s"))
            }
            Event::CaseStarted {
                index,
                total,
                label,
                iterations,
            } => {
                if let Ok(mut case) = self.case.lock() {
                    *case = (label.to_string(), Instant::now());
                }
                self.start(format!(
                    "[{index}/{total}] {label}: warm-up, then at least {iterations} timed calls"
                ))
            }
            Event::CaseProgress { index, progress } => self.case_progress(index, progress),
            Event::CaseFinished { index, result } => {
                let calls = result.measurement.observations;
                let outcome = match (&result.status, &result.metrics) {
                    (CaseStatus::Completed, Some(m)) => format!(
                        "{calls} calls, p50 {} ms",
                        trtmc_report::fmt::fmt_num(m.latency_ms.p50)
                    ),
                    (CaseStatus::Interrupted, m) => format!(
                        "INTERRUPTED after {calls} calls{}",
                        m.as_ref()
                            .map(|m| format!(
                                ", partial p50 {} ms",
                                trtmc_report::fmt::fmt_num(m.latency_ms.p50)
                            ))
                            .unwrap_or_default()
                    ),
                    _ => format!(
                        "FAILED: {}",
                        result.error.as_deref().unwrap_or("unknown error")
                    ),
                };
                self.finish(format!(
                    "[{index}] {} {}: {outcome}",
                    result.model, result.label
                ));
            }
        }
    }
}

impl trtmc_tune::progress::Progress for Terminal {
    fn report(&self, event: TuneEvent<'_>) {
        if self.quiet {
            return;
        }
        match event {
            TuneEvent::TuneStarted {
                model,
                runtime,
                plan,
                cache,
            } => eprintln!(
                "tune: {model} on {runtime}, {} search over {}; cache {}",
                plan.config.search,
                plan.expression,
                cache.display()
            ),
            TuneEvent::TornCacheLine { bytes, cache } => eprintln!(
                "tune: dropped a torn last line ({bytes} bytes) of {}",
                cache.display()
            ),
            TuneEvent::Iteration {
                record,
                replayed,
                objective,
            } => eprintln!("{}", iteration_line(record, replayed, objective)),
            TuneEvent::Message(m) => eprintln!("{m}"),
        }
    }
}

impl trtmc_matrix::progress::Progress for Terminal {
    fn report(&self, event: MatrixEvent<'_>) {
        if self.quiet {
            return;
        }
        match event {
            MatrixEvent::RowStarted { done, total, id } => eprintln!("[{}/{total}] {id}", done + 1),
            MatrixEvent::RowFinished { outcome, .. } => eprintln!("        {outcome}"),
            MatrixEvent::Message(m) => eprintln!("{m}"),
        }
    }
}

fn iteration_line(rec: &IterationRecord, replayed: bool, objective: Objective) -> String {
    let round = rec.round.map(|r| format!(" round {r}")).unwrap_or_default();
    let what = match rec.status {
        RouteStatus::Ok => match rec.time_ms {
            Some(t) => format!(
                "ok, {} {} ms over {} calls",
                objective.time_statistic(),
                trtmc_report::fmt::fmt_num(t),
                rec.samples_ms.len()
            ),
            None => "ok".into(),
        },
        other => format!(
            "{}: {}",
            serde_json::to_value(other)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            rec.error_message.as_deref().unwrap_or("")
        ),
    };
    format!(
        "[{:>3}] {}{round} {}{}: {what}",
        rec.iter,
        rec.phase,
        if rec.build_route.is_empty() {
            "(no knobs)"
        } else {
            &rec.build_route
        },
        if replayed { " (from the cache)" } else { "" }
    )
}
