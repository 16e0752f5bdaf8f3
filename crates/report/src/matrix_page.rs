//! report.html of a matrix run, built from the shared report components (crates/report): a forest plot
//! of every row's ratio with its interval over the threshold bands (rows without one listed with the
//! reason), the row table (candidate/reference p50, ratio, interval, light; filterable by text, light,
//! status and bundle preparation), and per row its files: the row result, each round's leaf logs and
//! result files, and its explanation when it has one. Links are made only to files that exist in the run
//! directory, relative to it, so the page works from file:// wherever the run directory is moved.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::fmt::fmt_num;
use crate::html::{
    Markup, Page, Section, banner, breakable, el, file_link, key_values, pill, text,
};
use crate::plots::{self, ForestBands, ForestRow};
use crate::table::{Cell, Column, Table};

use trtmc_core::artifacts::matrix::Explanation;
use trtmc_core::artifacts::matrix::{Comparison, Light, Receipt, Results, RowResult, RowStatus};

/// What a yellow or red row's explanation says: the layers that account for most of the gap (or why
/// the explanation is missing) and a link to the `analyze` report of both profiles, when it exists
/// (paths are relative to the run directory, where report.html is).
fn explanation_content(row: &RowResult, run: &Path, e: &Explanation) -> Markup {
    let mut m = el("h4", &[], &text("Where the time went"));
    if let Some(why) = &e.missing {
        m.push(&banner(
            "warn",
            &breakable(&format!("no explanation: {why}")),
        ));
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
        (Some(report), _) => {
            let link = existing_link(run, report, "analyze report of both profiles")
                .unwrap_or_else(|| {
                    let mut missing = text("the analyze report is missing: ");
                    missing.push(&breakable(report));
                    missing
                });
            m.push(&el("p", &[("class", "files")], &link));
        }
        (None, Some(why)) => m.push(&el("p", &[("class", "muted")], &breakable(why))),
        (None, None) => {
            let row_file = format!("rows/{:03}.json", row.index);
            let mut p = text("recorded in ");
            p.push(&existing_link(run, &row_file, &row_file).unwrap_or_else(|| text(&row_file)));
            m.push(&el("p", &[("class", "files")], &p));
        }
    }
    m
}

/// A row's light on the page, straight from the enum: the badge's text and its CSS class (`None`: the
/// row was not compared, so it has no light).
fn light_badge(light: Option<Light>) -> (&'static str, &'static str) {
    match light {
        Some(Light::Green) => ("green", "valid"),
        Some(Light::Yellow) => ("yellow", "partial"),
        Some(Light::Red) => ("red", "invalid"),
        None => ("none", "failed"),
    }
}

/// The light of a compared row.
fn row_light(row: &RowResult) -> Option<Light> {
    match (row.status, row.comparison.as_ref()) {
        (RowStatus::Compared, Some(c)) => Some(c.light),
        _ => None,
    }
}

/// The preparation status a row shows: a matching receipt record wins over the run's own cache hit.
fn preparation_label(r: &RowResult, receipt: Option<&Receipt>) -> (String, Option<f64>) {
    let Some(p) = &r.preparation else {
        return ("unknown".into(), None);
    };
    if let Some(rec) = receipt.and_then(|rc| {
        rc.records
            .iter()
            .find(|rec| Some(&rec.bundle) == p.bundle.as_ref() && rec.model == p.model)
    }) {
        return match rec.action.as_str() {
            "built" => ("Built".into(), rec.build_seconds),
            _ => ("Reused".into(), rec.build_seconds),
        };
    }
    let label = match p.origin.as_str() {
        "built" => "Built",
        "cache_hit" => "Cache hit",
        "bundle_root" => "Bundle root",
        "explicit" => "Explicit",
        _ => "None",
    };
    (label.into(), None)
}

/// The anchor of a row's files and explanation on the page.
fn row_anchor(index: usize) -> String {
    format!("row-{index:03}")
}

/// Identifiers keep whole words (`<wbr>` marks where they may break); prose wraps at spaces; the note
/// column is wide enough to read. Only the last resort (`break-word`) may split a word, and only one
/// longer than its whole cell.
const EXTRA_CSS: &str = "#rows th { white-space: normal; }
#rows th, #rows td { padding: 0.3rem 0.4rem; }
#rows td.name { overflow-wrap: break-word; min-width: 0; max-width: 22rem; }
#rows td.name:last-child { min-width: 11rem; }
#rows td.name:nth-child(2), #rows td.name:nth-child(10) { min-width: 7rem; }
.unplotted { margin: 0.4rem 0 0; padding-left: 1.2rem; }
.unplotted li { overflow-wrap: break-word; }
article.row-files { border-top: 1px solid var(--line); padding: 0.5rem 0; }
article.row-files:first-of-type { border-top: none; }
article.row-files h3 { display: flex; flex-wrap: wrap; align-items: baseline; gap: 0.5rem; margin: 0.2rem 0; overflow-wrap: break-word; }
article.row-files p { margin: 0.2rem 0; overflow-wrap: break-word; }
.files a { margin-right: 0.6rem; }
table.rounds { width: auto; margin: 0.3rem 0; }
.explanation { border-left: 3px solid var(--accent); padding: 0.2rem 0.6rem; margin: 0.4rem 0; }";

/// `run` is the run directory the page is written into: links point into it, to files that exist.
pub fn render(r: &Results, run: &Path) -> String {
    let s = &r.summary;
    let mut page = Page::new("matrix", &format!("performance matrix: {}", r.suite.name));
    page.extra_css = EXTRA_CSS.into();
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
    page.subtitle.push(breakable(&format!(
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
    let explanations: BTreeSet<usize> = r
        .rows
        .iter()
        .filter(|row| row.explanation.is_some())
        .map(|row| row.index)
        .collect();

    page.sections
        .push(Section::new("ratios", "Ratios", forest_section(r)));
    page.sections.push(Section::new(
        "rows-panel",
        "Rows",
        rows_table(r, &explanations).render(),
    ));
    let mut files = Markup::default();
    for row in &r.rows {
        files.push(&row_files(row, run, row.explanation.as_ref()));
    }
    if r.rows.is_empty() {
        files.push(&el(
            "p",
            &[("class", "muted")],
            &text("no row has finished yet"),
        ));
    }
    page.sections
        .push(Section::new("row-files", "Row files", files));
    page.sections.push(lights_section(r));
    page.sections.push(provenance_section(r));
    page.render()
}

/// Why a row has no mark on the forest plot, or `None` when it has one.
fn unplotted_reason(row: &RowResult) -> Option<String> {
    let Some(c) = row
        .comparison
        .as_ref()
        .filter(|_| row.status == RowStatus::Compared)
    else {
        return Some(match &row.message {
            Some(m) => format!("{}: {m}", row.status.label()),
            None => format!("{}: no ratio", row.status.label()),
        });
    };
    let drawable = plots::forest_drawable(&forest_row(row, c));
    (!drawable).then(|| {
        format!(
            "{}{}: ratio {} with interval [{}, {}] cannot be drawn on a ratio axis",
            c.light.label(),
            if c.uncertain { " (uncertain)" } else { "" },
            fmt_num(c.ratio),
            fmt_num(c.ci_low),
            fmt_num(c.ci_high)
        )
    })
}

fn forest_row(row: &RowResult, c: &Comparison) -> ForestRow {
    ForestRow {
        label: row.id.clone(),
        ratio: c.ratio,
        low: c.ci_low,
        high: c.ci_high,
        light: c.light,
        uncertain: c.uncertain,
    }
}

/// The forest plot of every compared row's ratio, and the rows it cannot show, each with its reason.
fn forest_section(r: &Results) -> Markup {
    let th = &r.suite.thresholds;
    let drawn: Vec<ForestRow> = r
        .rows
        .iter()
        .filter(|row| unplotted_reason(row).is_none())
        .filter_map(|row| row.comparison.as_ref().map(|c| forest_row(row, c)))
        .collect();
    let svg = plots::forest(
        "candidate p50 / reference p50",
        &drawn,
        ForestBands {
            green_max: th.green_max,
            yellow_max: th.yellow_max,
        },
    );
    let green = format!("green band: up to {}", th.green_max);
    let yellow = format!("yellow band: up to {}", th.yellow_max);
    let red = format!("red band: above {}", th.yellow_max);
    let legend = plots::legend(&[
        (plots::light_swatch(Light::Green), &green),
        (plots::light_swatch(Light::Yellow), &yellow),
        (plots::light_swatch(Light::Red), &red),
    ]);
    let mut body = Markup::trusted("<div class=\"plots wide\">");
    body.push(&plots::figure(
        "forest",
        &format!(
            "ratio of each row with its {:.0} % interval (above 1 the candidate is slower)",
            th.confidence * 100.0
        ),
        &svg,
        Some(&legend),
    ));
    body.push_trusted("</div>");
    body.push(&el(
        "p",
        &[("class", "muted")],
        &text("One line per row: the dot is the row's ratio, coloured by its light (hollow: uncertain, its interval reaches into another band), the whisker its interval, the grey line parity (1)."),
    ));
    let missing: Vec<(&RowResult, String)> = r
        .rows
        .iter()
        .filter_map(|row| unplotted_reason(row).map(|why| (row, why)))
        .collect();
    if !missing.is_empty() || !r.pending.is_empty() {
        body.push(&el(
            "p",
            &[("class", "muted")],
            &text("Not plotted (no ratio with an interval):"),
        ));
        let mut list = Markup::trusted("<ul class=\"unplotted\">");
        for (row, why) in missing {
            let mut item = el(
                "a",
                &[("href", &format!("#{}", row_anchor(row.index)))],
                &breakable(&row.id),
            );
            item.push_trusted(" — ");
            item.push(&breakable(&why));
            list.push(&el("li", &[("data-row", &row.index.to_string())], &item));
        }
        for p in &r.pending {
            let mut item = breakable(&p.id);
            item.push_trusted(" — ");
            item.push(&text("pending: not run yet"));
            list.push(&el("li", &[("data-row", &p.index.to_string())], &item));
        }
        list.push_trusted("</ul>");
        body.push(&list);
    }
    body
}

fn rows_table(r: &Results, explanations: &BTreeSet<usize>) -> Table {
    let mut t = Table::new(
        "rows",
        vec![
            Column::num("row").help("the row's files and explanation are below, under Row files"),
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
    let ident = |s: &str| Cell::markup(breakable(s), s);
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
        let (light, light_class) = light_badge(row_light(row));
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
        let mut note_markup = breakable(&note);
        if explanations.contains(&row.index) {
            if !note.is_empty() {
                note_markup.push_trusted(" ");
            }
            note_markup.push(&el(
                "a",
                &[("href", &format!("#{}-explanation", row_anchor(row.index)))],
                &text("explanation"),
            ));
        }
        let anchor = el(
            "a",
            &[("href", &format!("#{}", row_anchor(row.index)))],
            &text(&format!("{:03}", row.index)),
        );
        t.push(vec![
            Cell::markup(anchor, &row.index.to_string()),
            ident(&row.entry),
            ident(&row.model),
            ident(&row.testcase),
            ident(&cand),
            ident(&reference),
            num(c.map(|c| c.candidate_p50_ms)),
            num(c.map(|c| c.reference_p50_ms)),
            num(c.map(|c| c.ratio)),
            Cell::text(&c.map_or(String::new(), |c| {
                // No-break spaces keep the interval and the percentage whole.
                format!(
                    "[{:.3},\u{a0}{:.3}] {:.0}\u{a0}%, {} round(s){}",
                    c.ci_low,
                    c.ci_high,
                    c.confidence * 100.0,
                    c.rounds,
                    if c.uncertain { " (uncertain)" } else { "" }
                )
            })),
            Cell::markup(pill(light, light_class), light),
            Cell::text(row.status.label()),
            Cell::markup(text(&prep_text), &prep),
            Cell::markup(note_markup, &note),
        ]);
    }
    for p in &r.pending {
        let mut cells = vec![
            Cell::markup(text(&format!("{:03}", p.index)), &p.index.to_string()),
            ident(&p.id),
        ];
        cells.extend((0..9).map(|_| Cell::empty()));
        cells.push(Cell::text("pending"));
        cells.push(Cell::empty());
        cells.push(Cell::empty());
        t.push(cells);
    }
    t
}

/// A path below the run directory, as the report links it (`/`-separated).
fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{}/{name}", dir.trim_end_matches('/'))
    }
}

/// A link to `rel` (relative to the run directory) labelled `label`, or `None` when no such file or
/// folder exists: the page never links to nothing.
fn existing_link(run: &Path, rel: &str, label: &str) -> Option<Markup> {
    (!rel.is_empty() && run.join(rel).exists()).then(|| file_link(rel, &text(label)))
}

/// `candidate-3` → (`candidate`, Some(3)); `reference` → (`reference`, None).
fn side_and_round(stem: &str) -> (&str, Option<u32>) {
    match stem.rsplit_once('-') {
        Some((side, k)) if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) => {
            (side, k.parse().ok())
        }
        _ => (stem, None),
    }
}

/// The files of one round of a row's attempt (paths relative to the run directory).
#[derive(Default)]
struct RoundFiles {
    candidate_log: Option<String>,
    candidate_result: Option<String>,
    reference_log: Option<String>,
    reference_result: Option<String>,
}

/// The names of the entries of `dir` that are Unicode (none when it cannot be read: the page shows
/// what is there).
fn entry_names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// What the attempt directory holds: per round the leaf logs and result files of both sides
/// (`candidate-K.log`, `candidate-K/result.json`, `reference-K.log`, `reference-K/result.json` or the
/// Python reference's `reference/reference-result-K.json`), and any other log (profiling passes, …).
fn attempt_files(run: &Path, attempt: &str) -> (BTreeMap<Option<u32>, RoundFiles>, Vec<String>) {
    let mut rounds: BTreeMap<Option<u32>, RoundFiles> = BTreeMap::new();
    let mut other_logs = Vec::new();
    if attempt.is_empty() {
        return (rounds, other_logs);
    }
    let dir = run.join(attempt);
    let mut names = entry_names(&dir);
    names.sort();
    for name in names {
        let rel = join(attempt, &name);
        if let Some(stem) = name.strip_suffix(".log") {
            match side_and_round(stem) {
                ("candidate", k) => rounds.entry(k).or_default().candidate_log = Some(rel),
                ("reference", k) => rounds.entry(k).or_default().reference_log = Some(rel),
                _ => other_logs.push(rel),
            }
            continue;
        }
        if !dir.join(&name).is_dir() {
            continue;
        }
        let result = join(&rel, "result.json");
        if run.join(&result).is_file() {
            match side_and_round(&name) {
                ("candidate", k) => rounds.entry(k).or_default().candidate_result = Some(result),
                ("reference", k) => rounds.entry(k).or_default().reference_result = Some(result),
                _ => {}
            }
        }
        if name == "reference" {
            // The Python reference writes one result per round into its prepared folder.
            for file in entry_names(&dir.join(&name)) {
                if let Some(stem) = file.strip_suffix(".json")
                    && let ("reference-result", k) = side_and_round(stem)
                {
                    rounds.entry(k).or_default().reference_result = Some(join(&rel, &file));
                }
            }
        }
    }
    (rounds, other_logs)
}

/// One row's files: the row result, both sides' result files and the attempt folder, each round's
/// logs and results, and its explanation.
fn row_files(row: &RowResult, run: &Path, explanation: Option<&Explanation>) -> Markup {
    let anchor = row_anchor(row.index);
    let mut heading = text(&format!("{:03}", row.index));
    heading.push(&el("span", &[], &breakable(&row.id)));
    let (light, light_class) = light_badge(row_light(row));
    heading.push(&pill(light, light_class));
    let mut body = el("h3", &[], &heading);

    let mut summary = row.status.label().to_string();
    if let Some(c) = &row.comparison {
        summary.push_str(&format!(
            " · ratio {:.3} [{:.3}, {:.3}] over {} round(s){}",
            c.ratio,
            c.ci_low,
            c.ci_high,
            c.rounds,
            if c.uncertain { ", uncertain" } else { "" }
        ));
        if !c.note.is_empty() {
            summary.push_str(&format!(" · {}", c.note));
        }
    }
    if let Some(m) = &row.message {
        summary.push_str(&format!(" · {m}"));
    }
    body.push(&el("p", &[], &breakable(&summary)));

    let row_file = format!("rows/{:03}.json", row.index);
    let links: Vec<Markup> = [
        existing_link(run, &row_file, "row result"),
        row.candidate
            .as_ref()
            .and_then(|s| existing_link(run, &s.result_file, "candidate result (round 1)")),
        row.reference
            .as_ref()
            .and_then(|s| existing_link(run, &s.result_file, "reference result (round 1)")),
        existing_link(run, &row.attempt_dir, "attempt folder"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut files = text("files: ");
    if links.is_empty() {
        files.push(&text("none found in the run directory"));
    }
    for l in &links {
        files.push(l);
    }
    body.push(&el("p", &[("class", "files")], &files));

    let (rounds, other_logs) = attempt_files(run, &row.attempt_dir);
    if !rounds.is_empty() {
        let cell = |rel: &Option<String>, label: &str| -> Markup {
            let inner = rel
                .as_deref()
                .and_then(|p| existing_link(run, p, label))
                .unwrap_or_else(|| text("–"));
            el("td", &[], &inner)
        };
        let mut table = Markup::trusted(
            "<table class=\"grid rounds\"><thead><tr><th>round</th><th>candidate log</th><th>candidate result</th><th>reference log</th><th>reference result</th></tr></thead><tbody>",
        );
        for (k, f) in &rounds {
            let round = k.map_or("1".to_string(), |k| k.to_string());
            table.push_trusted("<tr>");
            table.push(&el("td", &[("class", "num")], &text(&round)));
            table.push(&cell(&f.candidate_log, "log"));
            table.push(&cell(&f.candidate_result, "result.json"));
            table.push(&cell(&f.reference_log, "log"));
            table.push(&cell(&f.reference_result, "result"));
            table.push_trusted("</tr>");
        }
        table.push_trusted("</tbody></table>");
        let mut details = el(
            "summary",
            &[],
            &text(&format!(
                "leaf logs and results of {} round(s)",
                rounds.len()
            )),
        );
        details.push(&table);
        body.push(&el("details", &[], &details));
    }
    if !other_logs.is_empty() {
        let mut more = text("other logs: ");
        for rel in &other_logs {
            let name = rel.rsplit('/').next().unwrap_or(rel);
            if let Some(l) = existing_link(run, rel, name) {
                more.push(&l);
            }
        }
        body.push(&el("p", &[("class", "files")], &more));
    }
    if let Some(e) = explanation {
        body.push(&explanation_block(row, run, e));
    }
    el("article", &[("class", "row-files"), ("id", &anchor)], &body)
}

/// The explanation block of a row (`#row-NNN-explanation`, linked from the row table's note).
fn explanation_block(row: &RowResult, run: &Path, e: &Explanation) -> Markup {
    el(
        "div",
        &[
            ("class", "explanation"),
            ("id", &format!("{}-explanation", row_anchor(row.index))),
        ],
        &explanation_content(row, run, e),
    )
}

fn lights_section(r: &Results) -> Section {
    let th = &r.suite.thresholds;
    Section::new(
        "rules",
        "Lights",
        key_values(&[
            (
                "green",
                text(&format!("the whole interval <= {}", th.green_max)),
            ),
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
                text(
                    "the median of the per-round p50 ratios (candidate and reference alternate, one process per side per round) with its distribution-free interval over rounds; fewer rounds than min_rounds: uncertain, never red",
                ),
            ),
            (
                "no light",
                text(&format!(
                    "contract mismatch, failed command, fewer than {} timed calls on a side",
                    th.min_samples
                )),
            ),
        ]),
    )
}

fn provenance_section(r: &Results) -> Section {
    let receipt = r.preparation_receipt.as_ref();
    Section::new(
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
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_light_gets_its_badge_from_the_enum() {
        for (light, class) in [
            (Light::Green, "valid"),
            (Light::Yellow, "partial"),
            (Light::Red, "invalid"),
        ] {
            assert_eq!(light_badge(Some(light)), (light.label(), class));
        }
        assert_eq!(light_badge(None), ("none", "failed"));
    }
    use serde_json::Value;

    const PROBE: &str = "<script>alert(1)</script>";

    fn row(
        index: usize,
        status: &str,
        comparison: Option<Value>,
        message: Option<&str>,
    ) -> RowResult {
        serde_json::from_value(serde_json::json!({
            "schema": "trtmc.matrix-row/v1", "index": index,
            "id": format!("cls.{PROBE}/m/t/tract"), "entry": "cls", "model": PROBE, "testcase": "t",
            "status": status, "message": message, "comparison": comparison,
            "candidate": null, "reference": null, "resolved_settings": {}, "commands": [],
            "preparation": null, "attempt_dir": format!("rows/{index:03}/attempt-1"),
            "executor": "local", "slurm_task": null, "host": "h", "started": "", "finished": ""
        }))
        .expect("a row result")
    }

    fn comparison(ratio: f64, low: Value, high: Value) -> Value {
        serde_json::json!({
            "candidate_p50_ms": 2.0, "reference_p50_ms": 1.0, "ratio": ratio,
            "method": "paired_rounds_median", "rounds": 2, "ci_low": low, "ci_high": high,
            "confidence": 0.95, "light": "yellow", "uncertain": true, "note": ""
        })
    }

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, "x").expect("write");
    }

    #[test]
    fn rows_without_a_drawable_ratio_say_why() {
        let failed = row(0, "failed", None, Some("reference failure: no model piece"));
        assert_eq!(
            unplotted_reason(&failed).as_deref(),
            Some("failed: reference failure: no model piece")
        );
        // An interval that is not a number cannot be drawn.
        let mut no_interval = row(
            1,
            "compared",
            Some(comparison(1.2, 1.0.into(), 1.4.into())),
            None,
        );
        if let Some(c) = no_interval.comparison.as_mut() {
            (c.ci_low, c.ci_high) = (f64::NAN, f64::NAN);
        }
        let why = unplotted_reason(&no_interval).expect("not drawable");
        assert!(why.starts_with("yellow (uncertain): ratio 1.20"), "{why}");
        let drawn = row(
            2,
            "compared",
            Some(comparison(1.2, 1.0.into(), 1.4.into())),
            None,
        );
        assert_eq!(unplotted_reason(&drawn), None);
    }

    /// The Python reference's layout: `reference-K.log` beside the attempt, results inside `reference/`.
    #[test]
    fn row_files_link_each_round_that_exists_and_nothing_else() {
        let t = tempfile::tempdir().expect("tmp");
        let run = t.path();
        let attempt = run.join("rows/000/attempt-1");
        for k in 1..=2 {
            touch(&attempt.join(format!("candidate-{k}.log")));
            touch(&attempt.join(format!("candidate-{k}/result.json")));
            touch(&attempt.join(format!("reference-{k}.log")));
            touch(&attempt.join(format!("reference/reference-result-{k}.json")));
        }
        touch(&attempt.join("profile-candidate.log"));
        touch(&run.join("rows/000.json"));
        let r = row(
            0,
            "compared",
            Some(comparison(1.2, 1.0.into(), 1.4.into())),
            None,
        );
        let (rounds, others) = attempt_files(run, &r.attempt_dir);
        assert_eq!(rounds.len(), 2);
        let second = &rounds[&Some(2)];
        assert_eq!(
            second.reference_result.as_deref(),
            Some("rows/000/attempt-1/reference/reference-result-2.json")
        );
        assert_eq!(
            second.candidate_result.as_deref(),
            Some("rows/000/attempt-1/candidate-2/result.json")
        );
        assert_eq!(others, ["rows/000/attempt-1/profile-candidate.log"]);

        let html = row_files(&r, run, None).into_string();
        assert!(!html.contains("<script"), "{html}");
        assert!(html.contains("&lt;script&gt;"));
        let hrefs: Vec<&str> = html
            .split("href=\"")
            .skip(1)
            .filter_map(|s| s.split('"').next())
            .collect();
        assert_eq!(hrefs.len(), 1 + 1 + 2 * 4 + 1, "{hrefs:?}");
        for href in hrefs {
            assert!(run.join(href).exists(), "{href} does not exist");
        }
        // A row whose files are gone links nothing.
        let gone = row(7, "failed", None, Some("killed"));
        let html = row_files(&gone, run, None).into_string();
        assert!(!html.contains("href="), "{html}");
        assert!(html.contains("none found in the run directory"));
    }
}

#[cfg(test)]
mod explanation_tests {
    use super::*;
    use trtmc_core::artifacts::matrix::GapLayer;

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
        let t = tempfile::tempdir().expect("tmp");
        let run = t.path();
        let report = "rows/003/attempt-1/explanation-report/index.html";
        std::fs::create_dir_all(run.join("rows/003/attempt-1/explanation-report")).expect("mkdir");
        std::fs::write(run.join(report), "<html></html>").expect("write");
        let e = Explanation {
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
            report: Some(report.into()),
            ..Default::default()
        };
        let row = row_with(Some(e.clone()));
        let html = explanation_block(&row, run, &e).into_string();
        assert!(html.contains("id=\"row-003-explanation\""), "{html}");
        assert!(html.contains("&lt;n3_maxpool_4&gt;") && !html.contains("<n3_maxpool_4>"));
        assert!(html.contains("100 %"));
        assert!(html.contains(&format!("href=\"{report}\"")), "{html}");
        // A report that is not there is named, not linked.
        let gone = Explanation {
            report: Some("rows/003/nowhere/index.html".into()),
            ..e
        };
        let html = explanation_block(&row, run, &gone).into_string();
        assert!(!html.contains("href=\"rows/003/nowhere"), "{html}");
        assert!(html.contains("missing"));
        let missing = Explanation {
            missing: Some("the reference's profiling pass failed: exit code 2".into()),
            ..Default::default()
        };
        let html = explanation_block(&row, run, &missing).into_string();
        assert!(
            html.contains("no explanation: the reference&#39;s profiling pass failed"),
            "{html}"
        );
    }
}
