//! CI signals shared by `run`, `matrix` and `analyze`: `--fail-on CONDITION` (exit 9 once everything
//! is written) and `--export-junit FILE` (docs/ci.md).
//!
//! A command first checks that it takes the conditions given (exit 2 otherwise), does all its work,
//! writes the JUnit file, and only then turns a met condition into [`ExitCode::FailOn`]; an exit code
//! the command earned anyway (5 a case failed, 8 a contract mismatch) wins over it.

use std::path::{Path, PathBuf};

use trtmc_core::artifacts::{BenchmarkRun, CaseStatus};
use trtmc_matrix::lights::Light;
use trtmc_matrix::row::RowStatus;
use trtmc_matrix::runner::Results;
use trtmc_report::export::junit::{self, Suite};
use trtmc_report::validity::Policy;

use crate::exit::{CliError, CliResult, ExitCode};

/// A condition `--fail-on` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// `run`: a case whose validity verdict is INVALID, or that failed or was interrupted.
    Invalid,
    /// `matrix`: a yellow or red row.
    Yellow,
    /// `matrix`: a red row.
    Red,
    /// `analyze`: a backend that is unusable (failed validation).
    Unusable,
    /// `history check`: a confirmed slowdown (since `--since`).
    Regression,
}

impl FailOn {
    fn name(self) -> &'static str {
        match self {
            FailOn::Invalid => "invalid",
            FailOn::Yellow => "yellow",
            FailOn::Red => "red",
            FailOn::Unusable => "unusable",
            FailOn::Regression => "regression",
        }
    }
}

/// `--fail-on`, as `analyze` takes it.
#[derive(Debug, Default, clap::Args)]
pub struct FailOnArgs {
    /// Exit 9 (after writing everything) when a condition is met; repeatable or comma-separated.
    /// run: invalid (a case INVALID, failed or interrupted); matrix: yellow (a yellow or red row),
    /// red (a red row); analyze: unusable (a backend failed validation); history check: regression
    /// (a confirmed slowdown).
    #[arg(
        long = "fail-on",
        value_enum,
        value_delimiter = ',',
        value_name = "CONDITION"
    )]
    pub fail_on: Vec<FailOn>,
}

impl FailOnArgs {
    /// Exit 2 for a condition that means nothing to `command`, naming the ones it takes.
    pub fn check(&self, command: &str, takes: &[FailOn]) -> CliResult {
        if let Some(bad) = self.fail_on.iter().find(|f| !takes.contains(f)) {
            let names: Vec<&str> = takes.iter().map(|f| f.name()).collect();
            return Err(CliError::new(
                ExitCode::Usage,
                format!(
                    "--fail-on {}: `{command}` takes --fail-on {}",
                    bad.name(),
                    names.join(", ")
                ),
            ));
        }
        Ok(())
    }

    fn has(&self, condition: FailOn) -> bool {
        self.fail_on.contains(&condition)
    }
}

/// `--fail-on` and `--export-junit`, as `run` and `matrix` take them.
#[derive(Debug, Default, clap::Args)]
pub struct CiArgs {
    #[command(flatten)]
    pub fail_on: FailOnArgs,
    /// Also write a JUnit XML report to FILE: one test case per run case or matrix row; INVALID cases,
    /// red rows (and yellow ones with --fail-on yellow) and contract mismatches are failures, failed
    /// cases and rows errors (docs/ci.md).
    #[arg(long, value_name = "FILE")]
    pub export_junit: Option<PathBuf>,
}

fn write_junit(path: &Path, suite: &Suite, results: &Path) -> CliResult {
    trtmc_core::fsutil::write_atomic(path, suite.to_xml().as_bytes()).map_err(|e| {
        CliError::new(
            ExitCode::Output,
            format!(
                "cannot write --export-junit {}: {e} (the results themselves are in {})",
                path.display(),
                results.display()
            ),
        )
    })
}

/// Up to `max` names, then how many more.
fn listed(names: &[String], max: usize) -> String {
    let mut s = names
        .iter()
        .take(max)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > max {
        s.push_str(&format!(" and {} more", names.len() - max));
    }
    s
}

fn met(condition: &str, what: String) -> CliError {
    CliError::new(ExitCode::FailOn, format!("--fail-on {condition}: {what}"))
}

/// After `run` committed `dir`: writes the JUnit file and returns the `--fail-on invalid` verdict
/// (`Some` when met) for the caller to return after its own failure checks.
pub fn after_run(run: &BenchmarkRun, dir: &Path, ci: &CiArgs) -> CliResult<Option<CliError>> {
    if ci.export_junit.is_none() && ci.fail_on.fail_on.is_empty() {
        return Ok(None);
    }
    let (report, _) = trtmc_report::collection::summarize_run_dir(run, dir, &Policy::default());
    if let Some(path) = &ci.export_junit {
        write_junit(path, &junit::run_suite(&report), dir)?;
    }
    if !ci.fail_on.has(FailOn::Invalid) {
        return Ok(None);
    }
    let invalid: Vec<String> = report
        .cases
        .iter()
        .filter(|c| c.status != CaseStatus::Completed || !c.validity.valid)
        .map(|c| {
            let reason = match (c.status, c.validity.failures().first()) {
                (CaseStatus::Completed, Some(f)) => f.clone(),
                _ => c.error.clone().unwrap_or_else(|| "did not complete".into()),
            };
            format!("{} · {} ({reason})", c.model, c.label)
        })
        .collect();
    Ok((!invalid.is_empty()).then(|| {
        met(
            "invalid",
            format!(
                "{} of {} case(s) INVALID or not completed: {}; the result is in {}",
                invalid.len(),
                report.cases.len(),
                listed(&invalid, 3),
                dir.display()
            ),
        )
    }))
}

/// After a matrix run, resume or report wrote `run_dir`: writes the JUnit file and returns the
/// `--fail-on yellow|red` verdict (`Some` when met).
pub fn after_matrix(results: &Results, run_dir: &Path, ci: &CiArgs) -> CliResult<Option<CliError>> {
    let yellow = ci.fail_on.has(FailOn::Yellow);
    if let Some(path) = &ci.export_junit {
        write_junit(path, &trtmc_matrix::junit::suite(results, yellow), run_dir)?;
    }
    let (condition, lights): (&str, &[Light]) = if yellow {
        ("yellow", &[Light::Yellow, Light::Red])
    } else if ci.fail_on.has(FailOn::Red) {
        ("red", &[Light::Red])
    } else {
        return Ok(None);
    };
    let hit: Vec<String> = results
        .rows
        .iter()
        .filter_map(|r| match (r.status, &r.comparison) {
            (RowStatus::Compared, Some(c)) if lights.contains(&c.light) => {
                Some(format!("{} ({} {:.3})", r.id, c.light.label(), c.ratio))
            }
            _ => None,
        })
        .collect();
    Ok((!hit.is_empty()).then(|| {
        met(
            condition,
            format!(
                "{} row(s) {}: {}; see {}",
                hit.len(),
                if yellow { "yellow or red" } else { "red" },
                listed(&hit, 3),
                run_dir.join(trtmc_matrix::runner::RESULTS_FILE).display()
            ),
        )
    }))
}

/// `--fail-on unusable` after `analyze` wrote its documents: `Some` when a backend failed validation.
pub fn after_analyze(analysis: &trtmc_analyze::Analysis, fail_on: &FailOnArgs) -> Option<CliError> {
    if !fail_on.has(FailOn::Unusable) {
        return None;
    }
    let unusable: Vec<String> = analysis
        .backends
        .iter()
        .filter(|b| !b.passed())
        .map(|b| {
            let first_error = b
                .validation
                .messages
                .iter()
                .find(|m| m.level == trtmc_analyze::analysis::Level::Error);
            match first_error {
                Some(m) => format!("{} ({})", b.label, m.message),
                None => b.label.clone(),
            }
        })
        .collect();
    (!unusable.is_empty()).then(|| {
        met(
            "unusable",
            format!(
                "{} of {} backend(s) unusable: {}",
                unusable.len(),
                analysis.backends.len(),
                listed(&unusable, 3)
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_condition_the_command_does_not_take_is_a_usage_error_naming_the_ones_it_does() {
        let args = FailOnArgs {
            fail_on: vec![FailOn::Invalid, FailOn::Red],
        };
        let e = args
            .check("run", &[FailOn::Invalid])
            .expect_err("red is not a run condition");
        assert_eq!(e.code, ExitCode::Usage);
        assert_eq!(e.message, "--fail-on red: `run` takes --fail-on invalid");
        assert!(
            args.check("matrix run", &[FailOn::Invalid, FailOn::Red])
                .is_ok()
        );
    }

    #[test]
    fn long_lists_are_cut_with_a_count() {
        let names: Vec<String> = (1..=5).map(|i| format!("c{i}")).collect();
        assert_eq!(listed(&names, 3), "c1, c2, c3 and 2 more");
        assert_eq!(listed(&names[..2], 3), "c1, c2");
    }
}
