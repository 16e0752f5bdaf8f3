//! Progress on stderr (indicatif): a spinner per build and per case; silent when stderr is not a terminal
//! or with --quiet.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use trtmc_core::artifacts::{CaseResult, CaseStatus};
use trtmc_runner::run::Progress;

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
