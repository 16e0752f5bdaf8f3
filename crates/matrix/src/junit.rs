//! A matrix run as JUnit XML (`--export-junit`; writer: `trtmc_report::export::junit`): one test case
//! per row, named by the row id, grouped under the suite's name.
//!
//! | row | JUnit |
//! | --- | --- |
//! | green | passed |
//! | yellow | passed, the reason in `<system-out>`; a failure when `yellow_fails` (`--fail-on yellow`) |
//! | red, contract mismatch | failure |
//! | failed, incomplete | error (the row has no light: it could not be measured to the end) |
//! | pending | skipped |

use trtmc_report::export::junit::{Outcome, Suite, TestCase};

use crate::lights::Light;
use crate::row::{RowResult, RowStatus};
use crate::runner::{Results, outcome_line};

/// The JUnit suite of a matrix run: one test case per row (by the table above) and a skipped case
/// per pending row.
pub fn suite(results: &Results, yellow_fails: bool) -> Suite {
    let classname = results.suite.name.clone();
    let mut cases: Vec<TestCase> = results
        .rows
        .iter()
        .map(|r| row_case(r, &classname, yellow_fails))
        .collect();
    cases.extend(results.pending.iter().map(|p| TestCase {
        classname: classname.clone(),
        name: p.id.clone(),
        time_s: None,
        outcome: Outcome::Skipped {
            message: "pending: not run yet (`trtmc-bench matrix resume` runs it)".into(),
        },
        system_out: None,
    }));
    Suite {
        name: format!("trtmc-bench matrix {}", results.suite.name),
        timestamp: Some(results.created.clone()),
        hostname: Some(results.machine.hostname.clone()),
        cases,
    }
}

fn row_case(r: &RowResult, classname: &str, yellow_fails: bool) -> TestCase {
    let line = outcome_line(r);
    let detail = {
        let mut lines = vec![line.clone()];
        if let Some(c) = r.comparison.as_ref().filter(|c| !c.note.is_empty()) {
            lines.push(c.note.clone());
        }
        lines.push(format!("row directory: {}", r.attempt_dir));
        lines.join("\n")
    };
    let light = r.comparison.as_ref().map(|c| c.light);
    let outcome = match (r.status, light) {
        (RowStatus::Compared, Some(Light::Green)) => Outcome::Passed,
        (RowStatus::Compared, Some(Light::Yellow)) if !yellow_fails => Outcome::Passed,
        (RowStatus::Compared, _) | (RowStatus::ContractMismatch, _) => Outcome::Failure {
            message: line.clone(),
            detail,
        },
        (RowStatus::Failed | RowStatus::Incomplete, _) => Outcome::Error {
            message: line.clone(),
            detail,
        },
    };
    TestCase {
        classname: classname.to_string(),
        name: r.id.clone(),
        // The row's leaf commands (candidate and reference rounds) one after another.
        time_s: Some(r.commands.iter().map(|c| c.seconds).sum()),
        outcome,
        system_out: Some(line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: &str, light: Option<&str>, message: Option<&str>) -> RowResult {
        let comparison = light.map(|light| {
            serde_json::json!({
                "candidate_p50_ms": 2.0, "reference_p50_ms": 1.0, "ratio": 2.0,
                "method": "paired_rounds_median", "rounds": 6, "ci_low": 1.9, "ci_high": 2.1,
                "confidence": 0.95, "light": light, "uncertain": false, "note": "a note"
            })
        });
        serde_json::from_value(serde_json::json!({
            "schema": "trtmc.matrix-row/v1", "index": 0, "id": "e/m/t/r", "entry": "e",
            "model": "m", "testcase": "t", "status": status, "message": message,
            "comparison": comparison, "candidate": null, "reference": null,
            "resolved_settings": {},
            "commands": [
                {"argv": ["a"], "env": {}, "exit_code": 0, "seconds": 1.5},
                {"argv": ["b"], "env": {}, "exit_code": 0, "seconds": 0.25}
            ],
            "preparation": null, "attempt_dir": "rows/000/attempt-1", "executor": "local",
            "slurm_task": null, "host": "h", "started": "", "finished": ""
        }))
        .expect("a row result")
    }

    fn outcome(r: &RowResult, yellow_fails: bool) -> Outcome {
        row_case(r, "suite", yellow_fails).outcome
    }

    #[test]
    fn each_row_status_and_light_maps_to_its_junit_outcome() {
        let green = row("compared", Some("green"), None);
        assert_eq!(outcome(&green, true), Outcome::Passed);
        let yellow = row("compared", Some("yellow"), None);
        assert_eq!(outcome(&yellow, false), Outcome::Passed);
        let case = row_case(&yellow, "suite", false);
        assert!(
            case.system_out
                .as_deref()
                .is_some_and(|s| s.starts_with("yellow: ratio 2.000")),
            "{case:?}"
        );
        assert_eq!(case.time_s, Some(1.75));
        assert!(matches!(outcome(&yellow, true), Outcome::Failure { .. }));
        match outcome(&row("compared", Some("red"), None), false) {
            Outcome::Failure { message, detail } => {
                assert!(
                    message.starts_with("red: ratio 2.000 [1.900, 2.100]"),
                    "{message}"
                );
                assert!(detail.contains("a note") && detail.contains("rows/000/attempt-1"));
            }
            other => panic!("red is a failure: {other:?}"),
        }
        assert!(matches!(
            outcome(&row("contract_mismatch", None, Some("different workload")), false),
            Outcome::Failure { message, .. } if message == "contract mismatch: different workload"
        ));
        for status in ["failed", "incomplete"] {
            assert!(
                matches!(
                    outcome(&row(status, None, Some("exit 1")), false),
                    Outcome::Error { .. }
                ),
                "{status}"
            );
        }
    }
}
