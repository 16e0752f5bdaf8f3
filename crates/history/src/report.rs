//! `history report -o DIR`: `index.html` (self-contained, the shared page shell of `trtmc_report`:
//! escaped text, inline theme and script admitted by hash in its Content-Security-Policy), with
//! `history.csv` (one line per point) and `history.json` (every series, its points and changes).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use trtmc_report::html::{Markup, Page, Section, escape, text};
use trtmc_report::table::{Cell, Column, Table};

use crate::Error;
use crate::changes::Rule;
use crate::check::{self, Analyzed, Boundary};

/// The schema name of `history.json`.
pub const EXPORT_SCHEMA: &str = "trtmc.history-export/v1";

#[derive(Serialize)]
struct Export<'a> {
    schema: &'static str,
    database: &'a str,
    rule: &'a Rule,
    series: &'a [Analyzed],
    boundaries: &'a [Boundary],
}

/// Writes the report folder and returns the page's path.
pub fn write(dir: &Path, analyzed: &[Analyzed], rule: &Rule, db: &str) -> Result<PathBuf, Error> {
    let fail = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Write { path, source }
    };
    std::fs::create_dir_all(dir).map_err(fail(dir))?;
    let series: Vec<_> = analyzed.iter().map(|a| a.series.clone()).collect();
    let boundaries = check::boundaries(&series);
    let json = dir.join("history.json");
    let export = Export {
        schema: EXPORT_SCHEMA,
        database: db,
        rule,
        series: analyzed,
        boundaries: &boundaries,
    };
    let bytes = serde_json::to_vec_pretty(&export).map_err(|e| Error::Write {
        path: json.clone(),
        source: e.into(),
    })?;
    trtmc_core::fsutil::write_atomic(&json, &bytes).map_err(fail(&json))?;
    let csv = dir.join("history.csv");
    trtmc_core::fsutil::write_atomic(&csv, csv_text(analyzed).as_bytes()).map_err(fail(&csv))?;
    let page = dir.join("index.html");
    trtmc_core::fsutil::write_atomic(&page, render(analyzed, &boundaries, rule, db).as_bytes())
        .map_err(fail(&page))?;
    Ok(page)
}

/// One line per point, with its series' key; quoted as CSV requires.
fn csv_text(analyzed: &[Analyzed]) -> String {
    let mut out = String::from(
        "series,model,label,operation,runtime,runtime_version,machine,metric,index,commit,created,estimate,low,high,count,verdict,folder,change\n",
    );
    for a in analyzed {
        let k = &a.series.key;
        for (i, p) in a.points.iter().enumerate() {
            let change = a
                .changes
                .iter()
                .find(|f| f.change.at == i)
                .map(|f| {
                    format!(
                        "{} x{:.4}",
                        f.change.direction.label(),
                        f.change.ratio.ratio
                    )
                })
                .unwrap_or_default();
            let fields = [
                a.series.id.to_string(),
                k.model.clone(),
                k.label.clone(),
                k.operation.clone(),
                k.runtime.clone(),
                k.runtime_version.clone(),
                k.machine.clone(),
                k.metric.clone(),
                (i + 1).to_string(),
                p.commit.clone(),
                p.created.clone(),
                p.estimate.to_string(),
                p.low.map(|v| v.to_string()).unwrap_or_default(),
                p.high.map(|v| v.to_string()).unwrap_or_default(),
                p.count.to_string(),
                p.verdict.clone(),
                p.folder.clone(),
                change,
            ];
            let quoted: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
            out.push_str(&quoted.join(","));
            out.push('\n');
        }
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The trend of one series as inline SVG: each point with its interval, boundaries drawn by the page
/// around the series, change points as vertical marks titled with their commit range.
fn chart(a: &Analyzed) -> Markup {
    let (w, h, pad) = (480.0, 130.0, 8.0);
    let values: Vec<f64> = a
        .points
        .iter()
        .flat_map(|p| [Some(p.estimate), p.low, p.high])
        .flatten()
        .filter(|v| v.is_finite())
        .collect();
    if values.is_empty() {
        return Markup::default();
    }
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let span = if hi > lo { hi - lo } else { hi.abs().max(1e-9) };
    let n = a.points.len().max(2) as f64;
    let x = |i: usize| pad + (w - 2.0 * pad) * i as f64 / (n - 1.0);
    let y = |v: f64| pad + (h - 2.0 * pad) * (1.0 - (v - lo) / span);
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg class=\"history-trend\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{}\">",
        escape(&format!("trend of series {}", a.series.id))
    );
    for f in &a.changes {
        let cx = (x(f.change.at - 1) + x(f.change.at)) / 2.0;
        let _ = write!(
            svg,
            "<line class=\"change\" x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"0\" y2=\"{h}\" stroke=\"#d9534f\" stroke-dasharray=\"4 3\"><title>{}</title></line>",
            escape(&format!(
                "{}: {} → {}",
                change_ratio(f),
                f.last_good_commit,
                f.first_changed_commit
            ))
        );
    }
    let mut path = String::new();
    for (i, p) in a.points.iter().enumerate() {
        if let (Some(l), Some(hv)) = (p.low, p.high) {
            let _ = write!(
                svg,
                "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1:.1}\" y2=\"{2:.1}\" stroke=\"#7a8699\"/>",
                x(i),
                y(l),
                y(hv)
            );
        }
        let _ = write!(
            path,
            "{}{:.1},{:.1}",
            if i == 0 { "M" } else { " L" },
            x(i),
            y(p.estimate)
        );
    }
    let _ = write!(svg, "<path d=\"{path}\" fill=\"none\" stroke=\"#3b7dd8\"/>");
    for (i, p) in a.points.iter().enumerate() {
        let _ = write!(
            svg,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"#3b7dd8\"><title>{}</title></circle>",
            x(i),
            y(p.estimate),
            escape(&format!("{} {} {:.4}", p.commit, p.created, p.estimate))
        );
    }
    svg.push_str("</svg>");
    Markup::trusted(svg)
}

fn render(analyzed: &[Analyzed], boundaries: &[Boundary], rule: &Rule, db: &str) -> String {
    let mut page = Page::new("history", "Result history");
    page.subtitle.push(text(&format!(
        "{} series from {db}; a change is confirmed when the {:.0} % interval of the ratio of the segments' medians lies outside [1/{g}, {g}]",
        analyzed.len(),
        rule.confidence * 100.0,
        g = rule.green_max
    )));
    let mut table = Table::new(
        "history-series",
        vec![
            Column::num("series"),
            Column::text("model").filter(),
            Column::text("case"),
            Column::text("operation").filter(),
            Column::text("runtime").filter(),
            Column::text("metric").filter(),
            Column::text("machine").filter(),
            Column::num("points"),
            Column::text("changes"),
            Column::text("trend"),
        ],
    );
    for a in analyzed {
        let k = &a.series.key;
        let mut changes = Markup::default();
        for f in &a.changes {
            changes.push_text(&format!(
                "{} between {} and {}",
                change_ratio(f),
                f.last_good_commit,
                f.first_changed_commit
            ));
            changes.push_trusted("<br>");
        }
        for b in boundaries.iter().filter(|b| b.to_series == a.series.id) {
            changes.push_text(&format!(
                "boundary after series {}: {}",
                b.from_series,
                b.changed.join(", ")
            ));
            changes.push_trusted("<br>");
        }
        table.push(vec![
            Cell::int(a.series.id.max(0) as u64),
            Cell::text(&k.model),
            Cell::text(&k.label),
            Cell::text(&k.operation),
            Cell::text(&format!("{} {}", k.runtime, k.runtime_version)),
            Cell::text(&k.metric),
            Cell::text(&format!("{} ({})", k.machine_name, k.machine)),
            Cell::int(a.points.len() as u64),
            Cell::markup(changes, &a.changes.len().to_string()),
            Cell::markup(chart(a), ""),
        ]);
    }
    page.sections
        .push(Section::new("series", "Series", table.render()));
    page.footer = text("history.csv and history.json beside this page hold every point.");
    page.render()
}

/// A change's direction and ratio with its interval: `slower ×1.234 [1.100, 1.300]`.
fn change_ratio(f: &check::Found) -> String {
    format!(
        "{} ×{:.3} [{:.3}, {:.3}]",
        f.change.direction.label(),
        f.change.ratio.ratio,
        f.change.ratio.low,
        f.change.ratio.high
    )
}
