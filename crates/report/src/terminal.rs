//! The compact terminal table (after `run`, and from `report`), in the spirit of hyperfine's summary:
//! one line per case, then the reasons of each invalid case, then each recommendation once with the
//! cases it applies to.

use unicode_width::{UnicodeWidthChar as _, UnicodeWidthStr};

use crate::fmt::{fmt_num, fmt_pct};
use crate::model::CollectionReport;

/// Replaces control characters (escape sequences from a hostile name) and shortens to `max` terminal
/// columns.
pub fn clean(s: &str, max: usize) -> String {
    let out: String = s
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if width(&out) <= max {
        return out;
    }
    let mut short = String::new();
    let mut used = 0;
    for c in out.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > max.saturating_sub(1) {
            break;
        }
        short.push(c);
        used += w;
    }
    short.push('…');
    short
}

/// Terminal columns `s` takes: a CJK character or an emoji takes two, a combining mark none.
pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// `s` followed by spaces up to `columns` terminal columns (`format!`'s `{:<N}` counts characters,
/// which misaligns wide characters).
pub fn pad_right(s: &str, columns: usize) -> String {
    format!("{s}{}", " ".repeat(columns.saturating_sub(width(s))))
}

/// The table as text, lines ending in `\n`.
pub fn table(report: &CollectionReport) -> String {
    let machines: std::collections::BTreeSet<&str> =
        report.cases.iter().map(|c| c.machine.as_str()).collect();
    let with_machine = machines.len() > 1;
    let mut header = vec!["#", "model", "case", "runtime"];
    if with_machine {
        header.push("machine");
    }
    header.extend([
        "calls",
        "p50 ms",
        "p50 95% CI",
        "p95 ms",
        "p99 ms",
        "CV %",
        "outl",
        "request/s",
        "validity",
    ]);
    let numeric_from = if with_machine { 5 } else { 4 };
    let mut rows: Vec<Vec<String>> = Vec::new();
    for (i, c) in report.cases.iter().enumerate() {
        let mut row = vec![
            (i + 1).to_string(),
            clean(&c.model, 32),
            clean(&c.label, 40),
            clean(&format!("{} {}", c.runtime.name, c.runtime.version), 20),
        ];
        if with_machine {
            row.push(clean(&c.machine, 20));
        }
        row.push(c.samples.to_string());
        match &c.latency_ms {
            Some(l) => {
                row.push(fmt_num(l.p50));
                row.push(
                    c.p50_ci_ms
                        .map(|i| format!("{}–{}", fmt_num(i.low), fmt_num(i.high)))
                        .unwrap_or_default(),
                );
                row.push(fmt_num(l.p95));
                row.push(fmt_num(l.p99));
                row.push(fmt_pct(l.cv));
                row.push(c.outliers.to_string());
            }
            None => {
                row.push("failed".into());
                row.extend(std::iter::repeat_n(String::new(), 5));
            }
        }
        row.push(
            c.throughput("request/s")
                .map(|t| fmt_num(t.value))
                .unwrap_or_default(),
        );
        row.push(c.validity.verdict().into());
        rows.push(row);
    }
    let mut widths: Vec<usize> = header.iter().map(|h| width(h)).collect();
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(width(cell));
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = w.saturating_sub(width(cell));
            let right = i == 0 || (i >= numeric_from && i + 1 < cells.len());
            if right {
                s.push_str(&" ".repeat(pad));
                s.push_str(cell);
            } else {
                s.push_str(cell);
                if i + 1 < cells.len() {
                    s.push_str(&" ".repeat(pad));
                }
            }
        }
        s.push('\n');
        s
    };
    let mut out = line(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    for r in &rows {
        out.push_str(&line(r));
    }
    for (i, c) in report.cases.iter().enumerate() {
        if c.validity.valid {
            continue;
        }
        out.push_str(&format!(
            "{:>3}  INVALID  {} · {}\n",
            i + 1,
            clean(&c.model, 60),
            clean(&c.label, 80)
        ));
        for f in c.validity.failures() {
            out.push_str(&format!("       ✗ {}\n", clean(&f, 200)));
        }
    }
    // Each recommendation once, with the cases it applies to: a sweep of 50 short cases gets one line
    // saying "add --duration", not fifty.
    let mut advice: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, c) in report.cases.iter().enumerate() {
        for r in &c.validity.recommendations {
            match advice.iter_mut().find(|(a, _)| *a == r.as_str()) {
                Some((_, cases)) => cases.push(i + 1),
                None => advice.push((r, vec![i + 1])),
            }
        }
    }
    for (r, cases) in advice {
        let which = if cases.len() == 1 { "case" } else { "cases" };
        out.push_str(&format!(
            "  → {} ({which} {})\n",
            clean(r, 200),
            ranges(&cases)
        ));
    }
    out
}

/// Ascending case numbers as ranges: `1–3, 5, 7–8`.
fn ranges(numbers: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < numbers.len() {
        let mut j = i;
        while j + 1 < numbers.len() && numbers[j + 1] == numbers[j] + 1 {
            j += 1;
        }
        parts.push(if j == i {
            numbers[i].to_string()
        } else {
            format!("{}–{}", numbers[i], numbers[j])
        });
        i = j + 1;
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::{case, observations, run};
    use crate::model::{LoadedRun, build};
    use crate::validity::Policy;

    #[test]
    fn columns_line_up_and_hostile_names_cannot_drive_the_terminal() {
        let o = observations(150, 10.0);
        let short = observations(5, 1.0);
        let loaded = LoadedRun {
            path: ".".into(),
            has_report: false,
            run: run(
                vec![
                    case("tiny\u{1b}[31m", "default", &[], &o),
                    case("m", "a-much-longer-case-label", &[], &short),
                ],
                "h",
            ),
            observations: vec![Ok(o.clone()), Ok(short.clone())],
        };
        let (report, _) = build(vec![".".into()], vec![loaded], vec![], &Policy::default());
        let text = table(&report);
        assert!(!text.contains('\u{1b}'), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        let at = |l: &str, h: &str| width(&l[..l.find(h).expect(h)]);
        // The validity column starts at the same place on every row.
        let col = at(lines[0], "validity");
        assert_eq!(at(lines[1], "VALID"), col, "{text}");
        assert_eq!(at(lines[2], "INVALID"), col, "{text}");
        assert!(
            text.contains("  2  INVALID  m · a-much-longer-case-label"),
            "{text}"
        );
        assert!(
            text.contains("  → raise --iterations to at least 10, or leave it at the default so the run sizes itself (case 2)"),
            "{text}"
        );
    }

    #[test]
    fn wide_model_names_keep_the_columns_aligned() {
        let o = observations(150, 10.0);
        let loaded = LoadedRun {
            path: ".".into(),
            has_report: false,
            run: run(
                vec![
                    case("画像分類モデル", "default", &[], &o),
                    case("tiny-cnn", "default", &[], &o),
                ],
                "h",
            ),
            observations: vec![Ok(o.clone()), Ok(o.clone())],
        };
        let (report, _) = build(vec![".".into()], vec![loaded], vec![], &Policy::default());
        let text = table(&report);
        let lines: Vec<&str> = text.lines().collect();
        let at = |l: &str, h: &str| width(&l[..l.find(h).expect(h)]);
        // Seven CJK characters take fourteen columns: the next column starts at the same place.
        let col = at(lines[0], "case");
        assert_eq!(at(lines[1], "default"), col, "{text}");
        assert_eq!(at(lines[2], "default"), col, "{text}");
        assert_eq!(at(lines[1], "VALID"), at(lines[0], "validity"), "{text}");
        assert_eq!(at(lines[2], "VALID"), at(lines[0], "validity"), "{text}");
    }

    #[test]
    fn long_wide_names_are_shortened_by_columns() {
        assert_eq!(clean("画像分類モデル", 14), "画像分類モデル");
        let short = clean("画像分類モデル", 8);
        assert_eq!(short, "画像分…");
        assert!(width(&short) <= 8);
        assert_eq!(pad_right("画像", 6), "画像  ");
        assert_eq!(width("画像"), 4);
    }

    #[test]
    fn each_recommendation_is_printed_once_with_its_cases() {
        let short = observations(5, 1.0);
        let cases: Vec<_> = (0..5)
            .map(|i| case("m", &format!("c{i}"), &[], &short))
            .collect();
        let loaded = LoadedRun {
            path: ".".into(),
            has_report: false,
            run: run(cases, "h"),
            observations: vec![Ok(short.clone()); 5],
        };
        let (report, _) = build(vec![".".into()], vec![loaded], vec![], &Policy::default());
        let text = table(&report);
        assert_eq!(
            text.matches("raise --iterations to at least 10,").count(),
            1,
            "{text}"
        );
        assert!(
            text.contains("leave it at the default so the run sizes itself (cases 1–5)"),
            "{text}"
        );
        assert_eq!(text.matches("✗ samples:").count(), 5, "{text}");
        assert_eq!(ranges(&[1, 2, 3, 5, 7, 8]), "1–3, 5, 7–8");
    }
}
