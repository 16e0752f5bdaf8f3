//! The JUnit writer against tests/junit/junit.xsd, with the strings users can put in names: quotes,
//! markup characters, line breaks and the control characters XML 1.0 forbids. A parser (xmllint)
//! must read back exactly what was written, with the forbidden characters replaced by U+FFFD.

#[path = "../../../tests/junit/xmllint.rs"]
mod xmllint;

use std::path::Path;
use std::process::Command;

use trtmc_report::export::junit::{Outcome, Suite, TestCase};

const NASTY: &str = "q\"uo'te <tag> & amp ]]> \u{1}\u{0}\u{1b}\u{7f} tab\there\nline\rcr ü 漢";

fn case(name: &str, outcome: Outcome) -> TestCase {
    TestCase {
        classname: format!("model {NASTY}"),
        name: name.into(),
        time_s: Some(0.25),
        outcome,
        system_out: Some(format!("out {NASTY}")),
    }
}

/// `xmllint --xpath` of a string expression; `None` when xmllint is missing (the schema check already
/// reported that).
fn xpath(file: &Path, expr: &str) -> Option<String> {
    let program = std::env::var_os("TRTMC_XMLLINT").unwrap_or_else(|| "xmllint".into());
    let out = Command::new(program)
        .args(["--xpath", expr])
        .arg(file)
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "{expr}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // xmllint ends the value with a line break of its own.
    let mut value = String::from_utf8(out.stdout).expect("utf-8");
    if value.ends_with('\n') {
        value.pop();
    }
    Some(value)
}

#[test]
fn every_outcome_with_hostile_names_validates_and_reads_back() {
    let suite = Suite {
        name: format!("suite {NASTY}"),
        timestamp: Some("2026-12-01T21:00:00.123456789Z".into()),
        hostname: Some(format!("host {NASTY}")),
        cases: vec![
            case(&format!("pass {NASTY}"), Outcome::Passed),
            case(
                &format!("fail {NASTY}"),
                Outcome::Failure {
                    message: format!("message {NASTY}"),
                    detail: format!("detail {NASTY}"),
                },
            ),
            case(
                "error",
                Outcome::Error {
                    message: format!("message {NASTY}"),
                    detail: String::new(),
                },
            ),
            case(
                "skipped",
                Outcome::Skipped {
                    message: format!("message {NASTY}"),
                },
            ),
            TestCase {
                classname: "c".into(),
                name: "no time, no output".into(),
                time_s: None,
                outcome: Outcome::Passed,
                system_out: None,
            },
        ],
    };
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("junit.xml");
    std::fs::write(&file, suite.to_xml()).expect("write");
    xmllint::assert_valid_junit(&file);

    // What a reader gets back: the text itself, the forbidden characters replaced.
    let expected = NASTY.replace(['\u{1}', '\u{0}', '\u{1b}'], "\u{FFFD}");
    let Some(name) = xpath(&file, "string(//testcase[2]/@name)") else {
        return;
    };
    assert_eq!(name, format!("fail {expected}"));
    assert_eq!(
        xpath(&file, "string(//testcase[2]/failure/@message)").as_deref(),
        Some(format!("message {expected}").as_str())
    );
    assert_eq!(
        xpath(&file, "string(//testcase[2]/failure)").as_deref(),
        Some(format!("detail {expected}").as_str())
    );
    assert_eq!(
        xpath(&file, "string(//testcase[1]/system-out)").as_deref(),
        Some(format!("out {expected}").as_str())
    );
    assert_eq!(
        xpath(&file, "string(/testsuites/testsuite/@hostname)").as_deref(),
        Some(format!("host {expected}").as_str())
    );
    assert_eq!(
        xpath(
            &file,
            "concat(count(//testcase), ' ', //testsuite/@tests, ' ', //testsuite/@failures, ' ', //testsuite/@errors, ' ', //testsuite/@skipped, ' ', //testsuite/@time)"
        )
        .as_deref(),
        Some("5 5 1 1 1 1.000")
    );
}
