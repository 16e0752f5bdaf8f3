//! Markdown: a GitHub-flavoured table for CI comments, then why each invalid case is invalid.

use super::{Exporter, Format};
use crate::fmt::{fmt_num, fmt_pct};
use crate::model::CollectionReport;

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
        let machines: std::collections::BTreeSet<&str> =
            report.cases.iter().map(|c| c.machine.as_str()).collect();
        let with_machine = machines.len() > 1;
        let mut out = String::new();
        out.push_str("| # | model | case | runtime |");
        if with_machine {
            out.push_str(" machine |");
        }
        out.push_str(
            " calls | p50 ms (95 % CI) | p95 ms | p99 ms | CV % | request/s | validity |\n",
        );
        out.push_str("|--:|---|---|---|");
        if with_machine {
            out.push_str("---|");
        }
        out.push_str("--:|--:|--:|--:|--:|--:|---|\n");
        for (i, c) in report.cases.iter().enumerate() {
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
            match &c.latency_ms {
                Some(l) => {
                    let ci = c
                        .p50_ci_ms
                        .map(|i| format!(" ({} – {})", fmt_num(i.low), fmt_num(i.high)))
                        .unwrap_or_default();
                    row.push_str(&format!(
                        " {} | {}{ci} | {} | {} | {} |",
                        c.samples,
                        fmt_num(l.p50),
                        fmt_num(l.p95),
                        fmt_num(l.p99),
                        fmt_pct(l.cv)
                    ));
                }
                None => row.push_str(" 0 | failed | | | |"),
            }
            let rps = c
                .throughput("request/s")
                .map(|t| fmt_num(t.value))
                .unwrap_or_default();
            row.push_str(&format!(" {rps} | {} |\n", c.validity.verdict()));
            out.push_str(&row);
        }
        let invalid: Vec<String> = report
            .cases
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.validity.valid)
            .map(|(i, c)| {
                let mut line = format!(
                    "- **{}. {} · {}**: {}",
                    i + 1,
                    cell(&c.model),
                    cell(&c.label),
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
