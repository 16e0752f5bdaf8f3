//! Progress on stderr. `run`: a spinner per build and per case (indicatif), silent when stderr is not a
//! terminal or with --quiet. `tune`: a line per iteration, silent with --quiet.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use trtmc_core::result::{CaseResult, CaseStatus};
use trtmc_runner::run::Progress;
use trtmc_runner::tune::orchestrate::TuneProgress;
use trtmc_tune::cache::{IterationRecord, RouteStatus};
use trtmc_tune::{Objective, TunePlan};

pub struct Terminal {
    enabled: bool,
    current: Mutex<Option<ProgressBar>>,
}

impl Terminal {
    pub fn new(quiet: bool) -> Self {
        Self {
            enabled: !quiet && std::io::stderr().is_terminal(),
            current: Mutex::new(None),
        }
    }

    fn start(&self, message: String) {
        if !self.enabled {
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
    fn build_started(&self, model: &str, runtime: &str, path: &Path) {
        self.start(format!(
            "building {model} for {runtime} → {}",
            path.display()
        ));
    }

    fn build_finished(&self, model: &str, seconds: f64) {
        self.finish(format!("built {model} in {seconds:.1} s"));
    }

    fn case_started(&self, index: usize, total: usize, label: &str, iterations: u64) {
        self.start(format!(
            "[{index}/{total}] {label}: warm-up + {iterations} timed calls"
        ));
    }

    fn case_finished(&self, index: usize, result: &CaseResult) {
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
}

/// `tune`'s progress: one line per iteration on stderr (also when stderr is not a terminal, so logs of
/// long tunes show where they are); nothing with --quiet.
pub struct TuneLines {
    quiet: bool,
}

impl TuneLines {
    pub fn new(quiet: bool) -> Self {
        Self { quiet }
    }
}

impl TuneProgress for TuneLines {
    fn started(&self, model: &str, runtime: &str, plan: &TunePlan, cache: &Path) {
        if !self.quiet {
            eprintln!(
                "tune: {model} on {runtime}, {} search over {}; cache {}",
                plan.config.search,
                plan.expression,
                cache.display()
            );
        }
    }

    fn dropped_torn_line(&self, bytes: usize, cache: &Path) {
        if !self.quiet {
            eprintln!(
                "tune: dropped a torn last line ({bytes} bytes) of {}",
                cache.display()
            );
        }
    }

    fn iteration(&self, record: &IterationRecord, replayed: bool, objective: Objective) {
        if !self.quiet {
            eprintln!("{}", iteration_line(record, replayed, objective));
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
