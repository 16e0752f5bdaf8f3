//! report.html of one `run`: the same page as a collection report, over one run.

use trtmc_core::artifacts::{BenchmarkRun, Observation};

use crate::model::{self, CaseLatencies, CollectionReport, LoadedRun};
use crate::pages::{self, Kind};
use crate::validity::Policy;

pub use crate::fmt::fmt_num;

/// The summary model of one run (`observations[i]` belongs to `run.cases[i]`); the run directory is `.`.
pub fn summarize(
    run: &BenchmarkRun,
    observations: &[Vec<Observation>],
    policy: &Policy,
) -> (CollectionReport, CaseLatencies) {
    let loaded = LoadedRun {
        path: ".".into(),
        has_report: true,
        run: run.clone(),
        observations: (0..run.cases.len())
            .map(|i| Ok(observations.get(i).cloned().unwrap_or_default()))
            .collect(),
        settings: Vec::new(),
    };
    model::build(vec![".".into()], vec![loaded], Vec::new(), policy)
}

/// Renders the self-contained HTML report. `observations[i]` belongs to `run.cases[i]`.
pub fn render(run: &BenchmarkRun, observations: &[Vec<Observation>]) -> String {
    let (report, latencies) = summarize(run, observations, &Policy::default());
    pages::render(Kind::Run, &report, &latencies)
}
