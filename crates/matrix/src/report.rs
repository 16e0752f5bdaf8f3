//! report.html of a matrix run, built from the shared report components (crates/report): a row table
//! with candidate/reference p50, the ratio with its interval and the light, filterable by text, light,
//! status and bundle preparation.

use trtmc_report::fmt::fmt_num;
use trtmc_report::html::{
    Markup, Page, Section, banner, el, href_for_path, key_values, pill, text,
};
use trtmc_report::table::{Cell, Column, Table};

use crate::row::{RowResult, RowStatus};
use crate::runner::{Results, preparation_label};

/// The explanation of one yellow or red row (`None` when it has none): the layers that account for
/// most of the gap, or why the explanation is missing, and a link to the `analyze` report of both
/// profiles (paths are relative to the run directory, where report.html is).
pub fn explanation_block(row: &RowResult) -> Option<Markup> {
    let e = row.explanation.as_ref()?;
    let mut m = el(
        "h3",
        &[("id", &format!("explanation-{:03}", row.index))],
        &text(&row.id),
    );
    if let Some(why) = &e.missing {
        m.push(&banner("warn", &text(&format!("no explanation: {why}"))));
    }
    if let (Some(c), Some(r)) = (e.candidate_ms, e.reference_ms) {
        m.push(&el(
            "p",
            &[("class", "muted")],
            &text(&format!(
                "summed layer time per call in the profiling passes: candidate {} ms, reference {} ms, gap {} ms",
                fmt_num(c),
                fmt_num(r),
                fmt_num(c - r)
            )),
        ));
    }
    if !e.layers.is_empty() {
        let mut t = Table::new(
            &format!("explanation-table-{:03}", row.index),
            vec![
                Column::text("layer")
                    .help("the ONNX node, or the nodes a fusion on either side merged"),
                Column::num("candidate ms"),
                Column::num("reference ms"),
                Column::num("delta ms"),
                Column::num("share").help("the delta over the whole gap between the two profiles"),
            ],
        );
        for l in &e.layers {
            t.push(vec![
                Cell::markup(
                    el("span", &[("title", &l.nodes.join(", "))], &text(&l.layer)),
                    &l.layer,
                ),
                Cell::num(l.candidate_ms, &fmt_num(l.candidate_ms)),
                Cell::num(l.reference_ms, &fmt_num(l.reference_ms)),
                Cell::num(l.delta_ms, &fmt_num(l.delta_ms)),
                Cell::num(l.share, &format!("{:.0} %", l.share * 100.0)),
            ]);
        }
        m.push(&t.render());
    }
    match (&e.report, &e.report_error) {
        (Some(report), _) => m.push(&el(
            "p",
            &[],
            &el(
                "a",
                &[("href", &href_for_path(report))],
                &text("analyze report of both profiles"),
            ),
        )),
        (None, Some(why)) => m.push(&el("p", &[("class", "muted")], &text(why))),
        (None, None) => {}
    }
    Some(m)
}

fn light_class(light: &str) -> &'static str {
    match light {
        "green" => "valid",
        "yellow" => "partial",
        "red" => "invalid",
        _ => "failed",
    }
}

pub fn render(r: &Results) -> String {
    let s = &r.summary;
    let mut page = Page::new("matrix", &format!("performance matrix: {}", r.suite.name));
    let status_class = match r.exit_code() {
        0 if s.red > 0 => "invalid",
        0 if s.yellow > 0 => "partial",
        0 => "valid",
        _ => "failed",
    };
    page.status = Some(pill(
        &format!(
            "{} green, {} yellow, {} red, {} mismatch, {} failed, {} incomplete, {} pending",
            s.green, s.yellow, s.red, s.contract_mismatch, s.failed, s.incomplete, s.pending
        ),
        status_class,
    ));
    page.subtitle.push(text(&format!(
        "suite {} · environment {} · executor {} · revision {} ({} build)",
        r.suite.path.display(),
        r.environment.name,
        r.executor,
        r.program.revision,
        r.program.build_profile
    )));
    if s.pending > 0 {
        page.banners.push(banner(
            "warn",
            &text(&format!(
                "{} row(s) have not run yet: continue with `trtmc-bench matrix resume`",
                s.pending
            )),
        ));
    }

    let mut t = Table::new(
        "rows",
        vec![
            Column::text("entry"),
            Column::text("model"),
            Column::text("testcase"),
            Column::text("candidate").filter(),
            Column::text("reference").filter(),
            Column::num("candidate p50 ms"),
            Column::num("reference p50 ms"),
            Column::num("ratio")
                .help("candidate p50 / reference p50; above 1 the candidate is slower"),
            Column::text("interval"),
            Column::text("light").filter(),
            Column::text("status").filter(),
            Column::text("bundle preparation").filter(),
            Column::text("note"),
        ],
    );
    let receipt = r.preparation_receipt.as_ref();
    for row in &r.rows {
        let cand = row
            .candidate
            .as_ref()
            .map_or(String::new(), |c| format!("{} {}", c.runtime, c.version));
        let reference = row
            .reference
            .as_ref()
            .map_or(String::new(), |c| format!("{} {}", c.backend, c.version));
        let num = |v: Option<f64>| match v {
            Some(x) => Cell::num(x, &fmt_num(x)),
            None => Cell::empty(),
        };
        let c = row.comparison.as_ref();
        let light = match (row.status, c) {
            (RowStatus::Compared, Some(c)) => c.light.label(),
            _ => "none",
        };
        let (prep, seconds) = preparation_label(row, receipt);
        let prep_text = match seconds {
            Some(s) => format!("{prep} ({s:.1} s, receipt)"),
            None => prep.clone(),
        };
        let note = match (c, &row.message) {
            (_, Some(m)) => m.clone(),
            (Some(c), None) => c.note.clone(),
            _ => String::new(),
        };
        t.push(vec![
            Cell::text(&row.entry),
            Cell::text(&row.model),
            Cell::text(&row.testcase),
            Cell::text(&cand),
            Cell::text(&reference),
            num(c.map(|c| c.candidate_p50_ms)),
            num(c.map(|c| c.reference_p50_ms)),
            num(c.map(|c| c.ratio)),
            Cell::text(&c.map_or(String::new(), |c| {
                format!(
                    "[{:.3}, {:.3}] {:.0} %, {} round(s){}",
                    c.ci_low,
                    c.ci_high,
                    c.confidence * 100.0,
                    c.rounds,
                    if c.uncertain { " (uncertain)" } else { "" }
                )
            })),
            Cell::markup(pill(light, light_class(light)), light),
            Cell::text(row.status.label()),
            Cell::markup(text(&prep_text), &prep),
            Cell::text(&note),
        ]);
    }
    for p in &r.pending {
        let mut cells = vec![Cell::text(&p.id)];
        cells.extend((0..9).map(|_| Cell::empty()));
        cells.push(Cell::text("pending"));
        cells.push(Cell::empty());
        cells.push(Cell::empty());
        t.push(cells);
    }
    page.sections
        .push(Section::new("rows-panel", "Rows", t.render()));
    let explained: Vec<Markup> = r.rows.iter().filter_map(explanation_block).collect();
    if !explained.is_empty() {
        page.sections.push(Section::new(
            "explanations",
            "Where the time went",
            Markup::concat(&explained),
        ));
    }
    let th = &r.suite.thresholds;
    page.sections.push(Section::new(
        "rules",
        "Lights",
        key_values(&[
            ("green", text(&format!("the whole interval <= {}", th.green_max))),
            (
                "red",
                text(&format!(
                    "ratio > {} and the whole {:.0} % interval above {}, over at least {} paired rounds",
                    th.yellow_max,
                    th.confidence * 100.0,
                    th.green_max,
                    th.min_rounds
                )),
            ),
            ("yellow", text("neither green nor red")),
            (
                "ratio and interval",
                text("the median of the per-round p50 ratios (candidate and reference alternate, one process per side per round) with its distribution-free interval over rounds; fewer rounds than min_rounds: uncertain, never red"),
            ),
            (
                "no light",
                text(&format!(
                    "contract mismatch, failed command, fewer than {} timed calls on a side",
                    th.min_samples
                )),
            ),
        ]),
    ));
    page.sections.push(Section::new(
        "provenance",
        "Provenance",
        key_values(&[
            ("suite sha256", text(&r.suite.sha256)),
            (
                "machine",
                text(&format!(
                    "{} · {} · {} CPUs",
                    r.machine.hostname, r.machine.cpu_model, r.machine.logical_cpus
                )),
            ),
            ("created", text(&r.created)),
            ("updated", text(&r.updated)),
            (
                "receipt",
                text(&receipt.map_or("none attached".to_string(), |rc| {
                    format!("{} record(s), revision {}", rc.records.len(), rc.revision)
                })),
            ),
        ]),
    ));
    page.render()
}

#[cfg(test)]
mod tests {
    use super::*;
    use trtmc_core::artifacts::matrix::{Explanation, GapLayer};

    fn row_with(explanation: Option<Explanation>) -> RowResult {
        let mut row: RowResult = serde_json::from_value(serde_json::json!({
            "schema": "trtmc.matrix-row/v1", "index": 3, "id": "e/m/t/tract", "entry": "e",
            "model": "m", "testcase": "t", "status": "compared", "message": null,
            "comparison": null, "candidate": null, "reference": null, "resolved_settings": {},
            "commands": [], "preparation": null, "attempt_dir": "rows/003/attempt-1",
            "executor": "local", "slurm_task": null, "host": "h", "started": "", "finished": ""
        }))
        .expect("a row result");
        row.explanation = explanation;
        row
    }

    #[test]
    fn the_explanation_block_lists_layers_links_the_report_and_escapes_names() {
        assert_eq!(explanation_block(&row_with(None)), None);
        let block = explanation_block(&row_with(Some(Explanation {
            missing: None,
            candidate_ms: Some(25.0),
            reference_ms: Some(5.0),
            layers: vec![GapLayer {
                layer: "<n3_maxpool_4>".into(),
                nodes: vec!["<n3_maxpool_4>".into()],
                candidate_ms: 20.5,
                reference_ms: 0.5,
                delta_ms: 20.0,
                share: 1.0,
            }],
            report: Some("rows/003/attempt-1/explanation-report/index.html".into()),
            report_error: None,
            files: Vec::new(),
        })))
        .expect("a block");
        let html = block.as_str();
        assert!(html.contains("&lt;n3_maxpool_4&gt;") && !html.contains("<n3_maxpool_4>"));
        assert!(html.contains("100 %"));
        assert!(html.contains("href=\"rows/003/attempt-1/explanation-report/index.html\""));
        let missing = explanation_block(&row_with(Some(Explanation {
            missing: Some("the reference's profiling pass failed: exit code 2".into()),
            candidate_ms: None,
            reference_ms: None,
            layers: Vec::new(),
            report: None,
            report_error: None,
            files: Vec::new(),
        })))
        .expect("a block");
        assert!(
            missing
                .as_str()
                .contains("no explanation: the reference&#39;s profiling pass failed")
        );
    }
}
