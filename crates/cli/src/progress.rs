//! How the orchestrators' progress [`Event`]s show on stderr, for `run`, `tune` and `matrix`. `run`: a
//! spinner per build and per case (indicatif), shown only when stderr is a terminal. `tune`: a line per
//! iteration, also into logs. `matrix`: a line per row and per Slurm step. Nothing with --quiet.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use trtmc_core::artifacts::CaseStatus;
use trtmc_runner::progress::{Event, Progress};
use trtmc_tune::Objective;
use trtmc_tune::cache::{IterationRecord, RouteStatus};

pub struct Terminal {
    quiet: bool,
    spinners: bool,
    current: Mutex<Option<ProgressBar>>,
}

impl Terminal {
    pub fn new(quiet: bool) -> Self {
        Self {
            quiet,
            spinners: !quiet && std::io::stderr().is_terminal(),
            current: Mutex::new(None),
        }
    }

    fn start(&self, message: String) {
        if !self.spinners {
            return;
        }
        let bar = ProgressBar::new_spinner();
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} [{elapsed}]") {
            bar.set_style(style);
        }
        bar.set_message(message);
        bar.enable_steady_tick(Duration::from_millis(120));
        if let Ok(mut slot) = self.current.lock() {
            *slot = Some(bar);
        }
    }

    fn finish(&self, message: String) {
        if let Ok(mut slot) = self.current.lock()
            && let Some(bar) = slot.take()
        {
            bar.finish_with_message(message);
        }
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
            } => self.start(format!(
                "[{index}/{total}] {label}: warm-up + {iterations} timed calls"
            )),
            Event::CaseFinished { index, result } => {
                let outcome = match (&result.status, &result.metrics) {
                    (CaseStatus::Completed, Some(m)) => format!("p50 {:.3} ms", m.latency_ms.p50),
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
            _ if self.quiet => {}
            Event::TuneStarted {
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
            Event::TornCacheLine { bytes, cache } => eprintln!(
                "tune: dropped a torn last line ({bytes} bytes) of {}",
                cache.display()
            ),
            Event::Iteration {
                record,
                replayed,
                objective,
            } => eprintln!("{}", iteration_line(record, replayed, objective)),
            Event::RowStarted { done, total, id } => eprintln!("[{}/{total}] {id}", done + 1),
            Event::RowFinished { outcome, .. } => eprintln!("        {outcome}"),
            Event::Message(m) => eprintln!("{m}"),
        }
    }
}

fn iteration_line(rec: &IterationRecord, replayed: bool, objective: Objective) -> String {
    let round = rec.round.map(|r| format!(" round {r}")).unwrap_or_default();
    let what = match rec.status {
        RouteStatus::Ok => match rec.time_ms {
            Some(t) => format!(
                "ok, {} {t:.4} ms over {} calls",
                objective.time_statistic(),
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
