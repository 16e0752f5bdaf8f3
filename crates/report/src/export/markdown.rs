//! Markdown for a CI step summary (`$GITHUB_STEP_SUMMARY`) or a pull-request comment: a heading, the
//! overall verdict in one line, the default terminal table's columns as a GitHub-flavoured table, then
//! why each invalid case is invalid.

use super::{Exporter, Format};
use crate::fmt::{fmt_count, fmt_human, fmt_pct, fmt_percentile};
use crate::model::{CollectionReport, distinctions};
use crate::terminal::{headline_column, status_text};

/// Writes the Markdown summary described above.
pub struct MarkdownExporter;

/// Escapes text for a table cell: pipes, markup characters, HTML and line breaks.
pub fn cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' | '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' => out.push(' '),
            c if c.is_control() => {}
            _ => out.push(c),
        }
    }
    out
}

impl Exporter for MarkdownExporter {
    fn format(&self) -> Format {
        Format::Markdown
    }

    fn export(&self, report: &CollectionReport) -> String {
        let cases = &report.cases;
        let machines: std::collections::BTreeSet<&str> =
            cases.iter().map(|c| c.machine.as_str()).collect();
        let with_machine = machines.len() > 1;
        let distinctions = distinctions(report);
        let with_run = distinctions.iter().any(|d| !d.is_empty());
        let (throughput, throughput_cells) = headline_column(cases, true);
        let mut out = String::from("### trtmc-bench summary\n\n");
        out.push_str(&verdict_line(report));
        out.push_str("\n\n| # | model | case | runtime |");
        let mut align = String::from("|--:|---|---|---|");
        if with_machine {
            out.push_str(" machine |");
            align.push_str("---|");
        }
        if with_run {
            out.push_str(" run |");
            align.push_str("---|");
        }
        out.push_str(&format!(
            " calls | p50 ms | p99 ms | CV % | {} | validity |\n",
            cell(&throughput)
        ));
        align.push_str("--:|--:|--:|--:|--:|---|\n");
        out.push_str(&align);
        for (i, c) in cases.iter().enumerate() {
            let mut row = format!(
                "| {} | {} | {} | {} |",
                i + 1,
                cell(&c.model),
                cell(&c.label),
                cell(&format!("{} {}", c.runtime.name, c.runtime.version))
            );
            if with_machine {
                row.push_str(&format!(" {} |", cell(&c.machine)));
            }
            if with_run {
                row.push_str(&format!(" {} |", cell(&distinctions[i])));
            }
            let (p50, p99, cv) = match &c.latency_ms {
                Some(l) => (
                    fmt_human(l.p50),
                    fmt_percentile(l.p99, 99.0, l.count),
                    fmt_pct(l.cv),
                ),
                None => ("–".into(), "–".into(), "–".into()),
            };
            row.push_str(&format!(
                " {} | {p50} | {p99} | {cv} | {} | {} |\n",
                fmt_count(c.samples),
                cell(&throughput_cells[i]),
                cell(&status_text(c))
            ));
            out.push_str(&row);
        }
        let invalid: Vec<String> = cases
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.validity.valid)
            .map(|(i, c)| {
                let mut what = format!("{} · {}", cell(&c.model), cell(&c.label));
                if !distinctions[i].is_empty() {
                    what.push_str(&format!(" · {}", cell(&distinctions[i])));
                }
                let mut line = format!(
                    "- **{}. {what}**: {}",
                    i + 1,
                    cell(&c.validity.failures().join("; "))
                );
                if !c.validity.recommendations.is_empty() {
                    line.push_str(&format!(
                        " (recommended: {})",
                        cell(&c.validity.recommendations.join("; "))
                    ));
                }
                line
            })
            .collect();
        if !invalid.is_empty() {
            out.push_str("\nInvalid results:\n\n");
            out.push_str(&invalid.join("\n"));
            out.push('\n');
        }
        let verdicts: Vec<String> = report
            .runs
            .iter()
            .flat_map(|r| {
                r.comparisons
                    .iter()
                    .map(|c| format!("- {}", cell(&c.verdict)))
            })
            .collect();
        if !verdicts.is_empty() {
            out.push_str("\nComparisons (paired rounds):\n\n");
            out.push_str(&verdicts.join("\n"));
            out.push('\n');
        }
        out
    }
}

/// The overall verdict in one line: `**VALID**: all 3 cases valid` or
/// `**INVALID**: 1 of 3 cases valid, 2 invalid (1 failed)`.
fn verdict_line(report: &CollectionReport) -> String {
    let t = &report.totals;
    let runs = if t.runs > 1 {
        format!(" in {} runs", t.runs)
    } else {
        String::new()
    };
    let noun = if t.cases == 1 { "case" } else { "cases" };
    if t.invalid == 0 {
        return format!("**VALID**: all {} {noun}{runs} valid.", t.cases);
    }
    let failed = if t.failed > 0 {
        format!(" ({} failed)", t.failed)
    } else {
        String::new()
    };
    format!(
        "**INVALID**: {} of {} {noun}{runs} valid, {} invalid{failed}.",
        t.valid, t.cases, t.invalid
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::model::tests::{case, observations, run};
    use crate::model::{LoadedRun, build};
    use crate::validity::Policy;

    fn threads_run(dir: &str, threads: &str, calls: usize) -> LoadedRun {
        let o = observations(calls, 10.0);
        LoadedRun {
            path: dir.into(),
            has_report: false,
            run: run(vec![case("tiny-cnn", "single", &[], &o)], "h"),
            observations: vec![Ok(o)],
            settings: vec![BTreeMap::from([(
                "runtime.threads".to_string(),
                threads.to_string(),
            )])],
        }
    }

    #[test]
    fn a_step_summary_has_a_heading_a_verdict_line_and_the_run_column() {
        let runs = vec![
            threads_run("results/t1", "1", 150),
            threads_run("results/t2", "2", 5),
        ];
        let (report, _) = build(vec![".".into()], runs, vec![], &Policy::default());
        let text = MarkdownExporter.export(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "### trtmc-bench summary", "{text}");
        assert_eq!(
            lines[2], "**INVALID**: 1 of 2 cases in 2 runs valid, 1 invalid.",
            "{text}"
        );
        assert_eq!(
            lines[4],
            "| # | model | case | runtime | run | calls | p50 ms | p99 ms | CV % | request/s | validity |",
            "{text}"
        );
        assert!(lines[6].contains("| threads=1 | 150 | 10.00 |"), "{text}");
        assert!(lines[7].contains("| threads=2 | 5 |"), "{text}");
        assert!(
            text.contains("- **2. tiny-cnn · single · threads=2**: samples:"),
            "{text}"
        );

        let (one, _) = build(
            vec![".".into()],
            vec![threads_run(".", "1", 150)],
            vec![],
            &Policy::default(),
        );
        let text = MarkdownExporter.export(&one);
        assert!(text.contains("\n**VALID**: all 1 case valid.\n"), "{text}");
        assert!(!text.contains("| run |"), "{text}");
    }
}
