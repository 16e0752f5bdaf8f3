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
