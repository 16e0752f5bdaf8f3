//! JUnit XML for CI test reports (GitHub, GitLab, Jenkins, Azure): one `<testsuite>` per command, one
//! `<testcase>` per run case or matrix row, in the Ant/Jenkins shape every CI tool reads
//! (tests/schemas/junit.xsd is the shape the tests check it against).
//!
//! `run` and `matrix` map their results into the small model here ([`Suite`], [`TestCase`],
//! [`Outcome`]); [`Suite::to_xml`] is the one writer. Names come from users (catalog cases, suites,
//! `--set` values), so every string is escaped, and the characters XML 1.0 forbids (control characters
//! other than tab, line feed and carriage return) are replaced by U+FFFD.

use std::fmt::Write as _;

use crate::fmt::{fmt_num, fmt_seconds};
use crate::model::{CaseEntry, CollectionReport};

/// One `<testsuite>`.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    /// `trtmc-bench run <run id>`, `trtmc-bench matrix <suite>`.
    pub name: String,
    /// When the results were created (RFC 3339), if known.
    pub timestamp: Option<String>,
    /// The machine the results came from, if known.
    pub hostname: Option<String>,
    /// The test cases, in report order.
    pub cases: Vec<TestCase>,
}

/// One `<testcase>`.
#[derive(Debug, Clone, PartialEq)]
pub struct TestCase {
    /// The model (run) or the suite (matrix): CI tools group test cases by it.
    pub classname: String,
    /// The case label (run) or the row id (matrix).
    pub name: String,
    /// Seconds, when known.
    pub time_s: Option<f64>,
    /// How it ended.
    pub outcome: Outcome,
    /// Free text shown with the test case (the numbers, a yellow light's reason).
    pub system_out: Option<String>,
}

/// How a test case ended. `message` is one line (shown in test lists); `detail` is the element's text.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The case ran and its result is acceptable.
    Passed,
    /// The case ran and its result is a failure (an INVALID verdict, a red light, a contract mismatch).
    Failure {
        /// One line.
        message: String,
        /// The element's text.
        detail: String,
    },
    /// The case could not run to the end (a crashed or timed-out worker, a failed leaf command).
    Error {
        /// One line.
        message: String,
        /// The element's text.
        detail: String,
    },
    /// The case did not run (a matrix row still pending).
    Skipped {
        /// One line.
        message: String,
    },
}

impl Suite {
    fn count(&self, pick: impl Fn(&Outcome) -> bool) -> usize {
        self.cases.iter().filter(|c| pick(&c.outcome)).count()
    }

    /// The whole document: `<testsuites>` holding this one `<testsuite>`.
    pub fn to_xml(&self) -> String {
        let tests = self.cases.len();
        let failures = self.count(|o| matches!(o, Outcome::Failure { .. }));
        let errors = self.count(|o| matches!(o, Outcome::Error { .. }));
        let skipped = self.count(|o| matches!(o, Outcome::Skipped { .. }));
        let time: f64 = self
            .cases
            .iter()
            .filter_map(|c| c.time_s)
            .filter(|t| t.is_finite() && *t >= 0.0)
            .sum();
        let counts = format!(
            "tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{}\"",
            seconds(time)
        );
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(out, "<testsuites name=\"{}\" {counts}>", attr(&self.name));
        let _ = write!(out, "  <testsuite name=\"{}\" {counts}", attr(&self.name));
        if let Some(t) = &self.timestamp {
            let _ = write!(out, " timestamp=\"{}\"", attr(t));
        }
        if let Some(h) = &self.hostname {
            let _ = write!(out, " hostname=\"{}\"", attr(h));
        }
        out.push_str(">\n");
        for case in &self.cases {
            case.write(&mut out);
        }
        out.push_str("  </testsuite>\n</testsuites>\n");
        out
    }
}

impl TestCase {
    fn write(&self, out: &mut String) {
        let _ = write!(
            out,
            "    <testcase classname=\"{}\" name=\"{}\"",
            attr(&self.classname),
            attr(&self.name)
        );
        if let Some(t) = self.time_s.filter(|t| t.is_finite() && *t >= 0.0) {
            let _ = write!(out, " time=\"{}\"", seconds(t));
        }
        if self.outcome == Outcome::Passed && self.system_out.is_none() {
            out.push_str("/>\n");
            return;
        }
        out.push_str(">\n");
        match &self.outcome {
            Outcome::Passed => {}
            Outcome::Failure { message, detail } => element(out, "failure", message, detail),
            Outcome::Error { message, detail } => element(out, "error", message, detail),
            Outcome::Skipped { message } => {
                let _ = writeln!(out, "      <skipped message=\"{}\"/>", attr(message));
            }
        }
        if let Some(text_out) = &self.system_out {
            let _ = writeln!(out, "      <system-out>{}</system-out>", text(text_out));
        }
        out.push_str("    </testcase>\n");
    }
}

fn element(out: &mut String, tag: &str, message: &str, detail: &str) {
    let _ = writeln!(
        out,
        "      <{tag} message=\"{}\" type=\"{tag}\">{}</{tag}>",
        attr(message),
        text(detail)
    );
}

/// Seconds with millisecond resolution, as JUnit readers expect (`xs:decimal`: never `NaN`, and never
/// `-0.000`, which an empty `f64` sum is).
fn seconds(s: f64) -> String {
    if s.is_finite() && s > 0.0 {
        format!("{s:.3}")
    } else {
        "0.000".into()
    }
}

/// A character XML 1.0 allows (§2.2 `Char`); Rust strings hold no surrogates.
fn allowed(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && c != '\u{FFFE}' && c != '\u{FFFF}')
}

/// Escapes an attribute value. Tabs and line breaks become character references: a parser would
/// otherwise normalize them to spaces.
pub fn attr(s: &str) -> String {
    escape_with(s, |c| match c {
        '"' => Some("&quot;"),
        '\'' => Some("&apos;"),
        '\t' => Some("&#9;"),
        '\n' => Some("&#10;"),
        c => text_reference(c),
    })
}

/// Escapes element text (a carriage return as a reference, which parsers would otherwise drop).
pub fn text(s: &str) -> String {
    escape_with(s, text_reference)
}

/// The reference element text needs for `c`, if any.
fn text_reference(c: char) -> Option<&'static str> {
    match c {
        '&' => Some("&amp;"),
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        '\r' => Some("&#13;"),
        _ => None,
    }
}

/// `s` with each character's `reference` in its place, and characters XML does not allow replaced.
fn escape_with(s: &str, reference: impl Fn(char) -> Option<&'static str>) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match reference(c) {
            Some(r) => out.push_str(r),
            None if !allowed(c) => out.push('\u{FFFD}'),
            None => out.push(c),
        }
    }
    out
}

/// The test cases of a run's summary: a VALID case passes, an INVALID one is a failure whose message
/// lists the unmet constraints, a case that did not complete (failed, interrupted) is an error with
/// its reason. `time` is the timed loop's span.
pub fn run_suite(report: &CollectionReport) -> Suite {
    let run = report.runs.first();
    Suite {
        name: match run {
            Some(r) => format!("trtmc-bench run {}", r.run_id),
            None => "trtmc-bench run".into(),
        },
        timestamp: run.map(|r| r.created.clone()),
        hostname: run.map(|r| r.machine.hostname.clone()),
        cases: report.cases.iter().map(run_case).collect(),
    }
}

fn run_case(c: &CaseEntry) -> TestCase {
    let numbers = match &c.latency_ms {
        Some(l) => format!(
            "{} timed calls over {}; p50 {} ms, p99 {} ms; runtime {} {}",
            c.samples,
            fmt_seconds(c.duration_s),
            fmt_num(l.p50),
            fmt_num(l.p99),
            c.runtime.name,
            c.runtime.version
        ),
        None => format!("runtime {} {}", c.runtime.name, c.runtime.version),
    };
    let detail = |head: String| {
        let mut lines = vec![head];
        lines.extend(c.validity.failures());
        lines.extend(c.validity.recommendations.iter().cloned());
        lines.push(format!("case directory: {}", c.dir));
        lines.join("\n")
    };
    let outcome = if c.status != trtmc_core::artifacts::CaseStatus::Completed {
        let reason = c
            .error
            .clone()
            .unwrap_or_else(|| "no measurements were recorded".into());
        Outcome::Error {
            message: format!("{}: {reason}", status_label(c)),
            detail: detail(format!("the case {}: {reason}", status_label(c))),
        }
    } else if !c.validity.valid {
        Outcome::Failure {
            message: format!("INVALID: {}", c.validity.failures().join("; ")),
            detail: detail(numbers.clone()),
        }
    } else {
        Outcome::Passed
    };
    TestCase {
        classname: c.model.clone(),
        name: c.label.clone(),
        time_s: (c.duration_s.is_finite() && c.duration_s > 0.0).then_some(c.duration_s),
        outcome,
        system_out: Some(format!("{}: {numbers}", c.validity.verdict())),
    }
}

fn status_label(c: &CaseEntry) -> String {
    serde_json::to_value(c.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "failed".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite(cases: Vec<TestCase>) -> Suite {
        Suite {
            name: "trtmc-bench run r1".into(),
            timestamp: Some("2026-12-01T21:00:00Z".into()),
            hostname: Some("host".into()),
            cases,
        }
    }

    fn case(name: &str, outcome: Outcome) -> TestCase {
        TestCase {
            classname: "tiny-cnn".into(),
            name: name.into(),
            time_s: Some(1.23456),
            outcome,
            system_out: None,
        }
    }

    #[test]
    fn user_strings_are_escaped_and_forbidden_characters_replaced() {
        let nasty = "a\"b'<c>&d\u{1}e\u{0}f\u{1b}g\u{FFFF}\th\ni\rj";
        assert_eq!(
            attr(nasty),
            "a&quot;b&apos;&lt;c&gt;&amp;d\u{FFFD}e\u{FFFD}f\u{FFFD}g\u{FFFD}&#9;h&#10;i&#13;j"
        );
        assert_eq!(
            text(nasty),
            "a\"b'&lt;c&gt;&amp;d\u{FFFD}e\u{FFFD}f\u{FFFD}g\u{FFFD}\th\ni&#13;j"
        );
        // Text that would close a CDATA section or an element stays inert.
        assert_eq!(text("]]></system-out>"), "]]&gt;&lt;/system-out&gt;");
    }

    #[test]
    fn counts_and_times_add_up_and_each_outcome_has_its_element() {
        let xml = suite(vec![
            case("ok", Outcome::Passed),
            case(
                "slow",
                Outcome::Failure {
                    message: "INVALID: samples for p99: 5 < 100".into(),
                    detail: "5 timed calls".into(),
                },
            ),
            case(
                "crash",
                Outcome::Error {
                    message: "failed: SIGABRT".into(),
                    detail: "worker died".into(),
                },
            ),
            case(
                "later",
                Outcome::Skipped {
                    message: "pending".into(),
                },
            ),
        ])
        .to_xml();
        assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "));
        assert!(
            xml.contains(
                "<testsuite name=\"trtmc-bench run r1\" tests=\"4\" failures=\"1\" errors=\"1\" skipped=\"1\" time=\"4.938\" timestamp=\"2026-12-01T21:00:00Z\" hostname=\"host\">"
            ),
            "{xml}"
        );
        assert!(xml.contains("<testcase classname=\"tiny-cnn\" name=\"ok\" time=\"1.235\"/>"));
        assert!(xml.contains(
            "<failure message=\"INVALID: samples for p99: 5 &lt; 100\" type=\"failure\">5 timed calls</failure>"
        ));
        assert!(
            xml.contains("<error message=\"failed: SIGABRT\" type=\"error\">worker died</error>")
        );
        assert!(xml.contains("<skipped message=\"pending\"/>"));
        assert!(xml.ends_with("  </testsuite>\n</testsuites>\n"));
    }

    #[test]
    fn an_unknown_or_impossible_time_is_left_out() {
        let mut c = case("x", Outcome::Passed);
        c.time_s = Some(f64::NAN);
        let xml = suite(vec![c]).to_xml();
        assert!(
            xml.contains("<testcase classname=\"tiny-cnn\" name=\"x\"/>"),
            "{xml}"
        );
        assert!(xml.contains("time=\"0.000\""), "{xml}");
    }
}
