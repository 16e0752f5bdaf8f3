//! Markdown for a CI step summary (`$GITHUB_STEP_SUMMARY`) or a pull-request comment: a heading, the
//! overall verdict in one line, the default terminal table's columns as a GitHub-flavoured table, then
//! why each invalid case is invalid.

use super::{Exporter, Format};
use crate::fmt::{fmt_count, fmt_human, fmt_pct};
use crate::model::{CollectionReport, distinctions};
use crate::terminal::{headline_column, status_text};

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
                Some(l) => (fmt_human(l.p50), fmt_human(l.p99), fmt_pct(l.cv)),
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
