//! HTML views of a [`CollectionReport`]: the run report (one run) and the collection report (many).
//!
//! Sections: overview, summary table (sortable, filterable), comparison bars, sweeps, and per case the
//! statistics, the validity block and the histogram, CDF and timeline.

use std::collections::BTreeMap;

use trtmc_core::artifacts::CaseStatus;

use crate::fmt::{fmt_num, fmt_pct, fmt_seconds};
use crate::html::{Markup, Page, Section, banner, el, href_for_path, key_values, pill, text};
use crate::model::{CaseEntry, CaseLatencies, CollectionReport, RunEntry, SweepEntry};
use crate::plots::{self, Bar, BarGroup, Point, Series};
use crate::table::{Cell, Column, Table};
use crate::validity::Validity;

/// Which page to draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `report.html` of one run directory (written by `run`).
    Run,
    /// `report.html` of a collection (written by `report`).
    Collection,
}

/// Most groups drawn in one comparison bar chart (the table lists every case).
pub const MAX_BAR_GROUPS: usize = 150;

fn runtime_label(c: &CaseEntry) -> String {
    format!("{} {}", c.runtime.name, c.runtime.version)
}

/// The validity block: `Result is: VALID/INVALID`, one line per constraint, notes, recommendations.
pub fn validity_block(v: &Validity) -> Markup {
    let class = if v.valid { "valid" } else { "invalid" };
    let mut m = Markup::trusted(format!(
        "<div class=\"validity {class}\" data-valid=\"{}\"><p class=\"verdict\">Result is: ",
        v.valid
    ));
    m.push(&pill(v.verdict(), class));
    m.push_trusted("</p><ul>");
    for c in &v.constraints {
        let cls = if c.met { "met" } else { "unmet" };
        m.push(&el(
            "li",
            &[("class", cls)],
            &text(&format!(
                "{}: {} — {}",
                c.name,
                if c.met { "yes" } else { "NO" },
                c.detail
            )),
        ));
    }
    for n in &v.notes {
        m.push(&el("li", &[("class", "note")], &text(n)));
    }
    m.push_trusted("</ul>");
    if !v.recommendations.is_empty() {
        m.push_trusted(
            "<p class=\"recommendations\">Recommendations:</p><ul class=\"recommendations\">",
        );
        for r in &v.recommendations {
            m.push(&el("li", &[], &text(r)));
        }
        m.push_trusted("</ul>");
    }
    m.push_trusted("</div>");
    m
}

fn validity_cell(v: &Validity) -> Cell {
    let class = if v.valid { "valid" } else { "invalid" };
    let failures = v.failures().join("; ");
    let mut body = Markup::default();
    let mut span = el(
        "span",
        &[("class", &format!("pill {class}")), ("title", &failures)],
        &text(v.verdict()),
    );
    if failures.is_empty() {
        span = pill(v.verdict(), class);
    }
    body.push(&span);
    Cell::markup(body, v.verdict())
}

fn status_label(s: CaseStatus) -> &'static str {
    s.label()
}

fn summary_table(report: &CollectionReport, kind: Kind) -> Markup {
    let collection = kind == Kind::Collection;
    let mut columns = vec![Column::num("#")];
    if collection {
        columns.push(Column::text("run").filter());
    }
    columns.extend([
        Column::text("model").filter(),
        Column::text("case"),
        Column::text("runtime").filter(),
    ]);
    if collection {
        columns.push(Column::text("machine").filter());
    }
    // The verdict sits beside the status, where it is seen without scrolling a wide table sideways.
    columns.extend([
        Column::text("status").filter(),
        Column::text("validity").filter(),
        Column::num("calls"),
        Column::num("p50 ms"),
        Column::num("p50 95 % CI").help("95 % interval of the median latency: the median of 10 blocks of consecutive calls with its distribution-free interval (one process: it cannot show the variance between processes)"),
        Column::num("p95 ms"),
        Column::num("p99 ms"),
        Column::num("mean ms"),
        Column::num("CV %").help("coefficient of variation: standard deviation / mean"),
        Column::num("outliers").help("calls beyond Tukey's inner fences (1.5 IQR)"),
        Column::num("request/s"),
        Column::text("throughput"),
    ]);
    let mut t = Table::new("summary-table", columns);
    t.label = "cases".into();
    for (i, c) in report.cases.iter().enumerate() {
        let anchor = format!("#case-{}", i + 1);
        let mut row = vec![Cell::markup(
            el("a", &[("href", &anchor)], &text(&(i + 1).to_string())),
            &(i + 1).to_string(),
        )];
        if collection {
            let path = report
                .runs
                .get(c.run)
                .map(|r| r.path.as_str())
                .unwrap_or("");
            row.push(Cell::text(path));
        }
        row.push(Cell::text(&c.model));
        row.push(Cell::text(&c.label));
        row.push(Cell::text(&runtime_label(c)));
        if collection {
            row.push(Cell::text(&c.machine));
        }
        row.push(Cell::markup(
            pill(status_label(c.status), status_label(c.status)),
            status_label(c.status),
        ));
        row.push(validity_cell(&c.validity));
        row.push(Cell::int(c.samples));
        match &c.latency_ms {
            Some(l) => {
                row.push(Cell::num(l.p50, &fmt_num(l.p50)));
                row.push(match &c.p50_ci_ms {
                    Some(ci) => Cell::num(
                        ci.high - ci.low,
                        &format!("{} – {}", fmt_num(ci.low), fmt_num(ci.high)),
                    ),
                    None => Cell::empty(),
                });
                row.push(Cell::num(l.p95, &fmt_num(l.p95)));
                row.push(Cell::num(l.p99, &fmt_num(l.p99)));
                row.push(Cell::num(l.mean, &fmt_num(l.mean)));
                row.push(Cell::num(l.cv * 100.0, &fmt_pct(l.cv)));
                row.push(Cell::int(c.outliers as u64));
            }
            None => {
                for _ in 0..7 {
                    row.push(Cell::empty());
                }
            }
        }
        match c.throughput("request/s") {
            Some(t) => row.push(Cell::num(t.value, &fmt_num(t.value))),
            None => row.push(Cell::empty()),
        }
        let others: Vec<String> = c
            .throughputs
            .iter()
            .filter(|t| t.name != "request/s")
            .map(|t| format!("{} {}", fmt_num(t.value), t.name))
            .collect();
        match (&c.error, others.is_empty()) {
            (Some(e), _) => row.push(Cell::markup(
                el("span", &[("class", "status-failed")], &text(e)),
                e,
            )),
            (None, false) => row.push(Cell::text(&others.join(", "))),
            (None, true) => row.push(Cell::empty()),
        }
        t.push(row);
    }
    t.render()
}

fn runs_table(report: &CollectionReport) -> Markup {
    let mut t = Table::new(
        "runs-table",
        vec![
            Column::text("run directory"),
            Column::text("run id"),
            Column::text("created"),
            Column::text("status").filter(),
            Column::text("machine").filter(),
            Column::text("CPU"),
            Column::text("runtimes"),
            Column::num("cases"),
            Column::text("links"),
        ],
    );
    t.label = "runs".into();
    for r in &report.runs {
        let status = format!("{:?}", r.status).to_lowercase();
        let mut links = Markup::default();
        if let Some(rep) = &r.report {
            links.push(&el("a", &[("href", &href_for_path(rep))], &text("report")));
            links.push_trusted(" · ");
        }
        links.push(&el(
            "a",
            &[("href", &href_for_path(&r.result))],
            &text("result.json"),
        ));
        t.push(vec![
            Cell::text(&r.path),
            Cell::text(&r.run_id),
            Cell::text(&r.created),
            Cell::markup(pill(&status, &status), &status),
            Cell::text(&r.machine.hostname),
            Cell::text(&format!(
                "{} ({} CPUs)",
                r.machine.cpu_model, r.machine.logical_cpus
            )),
            Cell::text(
                &r.runtimes
                    .iter()
                    .map(|x| format!("{} {}", x.name, x.version))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            Cell::int(r.cases as u64),
            Cell::markup(links, ""),
        ]);
    }
    t.render()
}

fn provenance(run: &RunEntry) -> Markup {
    let runtimes = run
        .runtimes
        .iter()
        .map(|x| format!("{} {}", x.name, x.version))
        .collect::<Vec<_>>()
        .join(", ");
    let memory = run
        .machine
        .memory_bytes
        .map(|b| format!(", {:.1} GiB", b as f64 / (1u64 << 30) as f64))
        .unwrap_or_default();
    key_values(&[
        ("run id", text(&run.run_id)),
        ("created", text(&run.created)),
        (
            "timing boundary",
            el("code", &[], &text(&run.timing_boundary)),
        ),
        ("percentiles", text(&run.percentile_method)),
        (
            "program",
            text(&format!(
                "{} {} ({}, {})",
                run.program.name,
                run.program.version,
                run.program.revision,
                run.program.build_profile
            )),
        ),
        ("runtimes", text(&runtimes)),
        (
            "machine",
            text(&format!(
                "{} · {} ({} CPUs{memory}) · {} {}",
                run.machine.hostname,
                run.machine.cpu_model,
                run.machine.logical_cpus,
                run.machine.os,
                run.machine.arch
            )),
        ),
        (
            "GPUs",
            text(&if run.machine.gpus.is_empty() {
                "none".to_string()
            } else {
                run.machine.gpus.join(", ")
            }),
        ),
    ])
}

/// Series label of a case in comparison bars: runtime, plus machine when there are several, plus run
/// directory when the same case ran more than once on the same runtime and machine.
fn bar_series(report: &CollectionReport) -> (Vec<String>, Vec<(String, usize)>) {
    let machines: std::collections::BTreeSet<&str> =
        report.cases.iter().map(|c| c.machine.as_str()).collect();
    let base = |c: &CaseEntry| {
        if machines.len() > 1 {
            format!("{} · {}", runtime_label(c), c.machine)
        } else {
            runtime_label(c)
        }
    };
    let group = |c: &CaseEntry| format!("{} · {}", c.model, c.label);
    let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
    for c in &report.cases {
        *seen.entry((group(c), base(c))).or_default() += 1;
    }
    let repeated = seen.values().any(|&n| n > 1);
    let mut series: Vec<String> = Vec::new();
    let mut per_case = Vec::new();
    for c in &report.cases {
        let mut s = base(c);
        if repeated {
            let path = report
                .runs
                .get(c.run)
                .map(|r| r.path.as_str())
                .unwrap_or("");
            s = format!("{s} · {path}");
        }
        let idx = match series.iter().position(|x| *x == s) {
            Some(i) => i,
            None => {
                series.push(s);
                series.len() - 1
            }
        };
        per_case.push((group(c), idx));
    }
    (series, per_case)
}

fn comparison(report: &CollectionReport) -> Option<Markup> {
    let completed = report
        .cases
        .iter()
        .filter(|c| c.latency_ms.is_some())
        .count();
    if completed < 2 {
        return None;
    }
    let (series, per_case) = bar_series(report);
    let mut groups: Vec<BarGroup> = Vec::new();
    let mut tput_groups: Vec<BarGroup> = Vec::new();
    for (c, (g, si)) in report.cases.iter().zip(per_case) {
        let idx = match groups.iter().position(|x| x.label == g) {
            Some(i) => i,
            None => {
                groups.push(BarGroup {
                    label: g.clone(),
                    bars: vec![None; series.len()],
                });
                tput_groups.push(BarGroup {
                    label: g,
                    bars: vec![None; series.len()],
                });
                groups.len() - 1
            }
        };
        if let Some(l) = &c.latency_ms {
            groups[idx].bars[si] = Some(Bar {
                value: l.p50,
                low: c.p50_ci_ms.map(|i| i.low),
                high: c.p50_ci_ms.map(|i| i.high),
            });
        }
        if let Some(t) = c.throughput("request/s") {
            tput_groups[idx].bars[si] = Some(Bar {
                value: t.value,
                low: None,
                high: None,
            });
        }
    }
    let total = groups.len();
    groups.truncate(MAX_BAR_GROUPS);
    tput_groups.truncate(MAX_BAR_GROUPS);
    let entries: Vec<(String, &str)> = series
        .iter()
        .enumerate()
        .map(|(i, s)| (format!("c{}", i % 8), s.as_str()))
        .collect();
    let legend_entries: Vec<(&str, &str)> = entries.iter().map(|(c, s)| (c.as_str(), *s)).collect();
    let legend = plots::legend(&legend_entries);
    let mut m = Markup::default();
    if total > MAX_BAR_GROUPS {
        m.push(&banner(
            "info",
            &text(&format!(
                "the charts show the first {MAX_BAR_GROUPS} of {total} model·case groups; the summary table lists all"
            )),
        ));
    }
    m.push_trusted("<div class=\"plots wide\">");
    m.push(&plots::figure(
        "bars-latency",
        "p50 latency (ms) with its 95 % confidence interval, per model · case and runtime · machine",
        &plots::grouped_bars("p50 latency (ms)", &series, &groups),
        Some(&legend),
    ));
    m.push(&plots::figure(
        "bars-throughput",
        "requests per second, per model · case and runtime · machine",
        &plots::grouped_bars("request/s", &series, &tput_groups),
        Some(&legend),
    ));
    m.push_trusted("</div>");
    Some(m)
}

fn sweep_plots(report: &CollectionReport, kind: Kind, s: &SweepEntry) -> Markup {
    let members: Vec<&CaseEntry> = s
        .cases
        .iter()
        .filter_map(|&i| report.cases.get(i))
        .collect();
    let mut categories: Vec<String> = Vec::new();
    if !s.numeric {
        for c in &members {
            if let Some(v) = c.sweep_point.get(&s.parameter)
                && !categories.contains(v)
            {
                categories.push(v.clone());
            }
        }
    }
    let x_of = |c: &CaseEntry| -> Option<f64> {
        let v = c.sweep_point.get(&s.parameter)?;
        if s.numeric {
            v.trim().parse().ok()
        } else {
            categories.iter().position(|x| x == v).map(|p| p as f64)
        }
    };
    let mut latency: Vec<Series> = Vec::new();
    let mut p99: Vec<Series> = Vec::new();
    let mut tput: Vec<Series> = Vec::new();
    for c in &members {
        let Some(x) = x_of(c) else { continue };
        let name = s.series_of(c);
        let slot = match latency.iter().position(|x| x.name == name) {
            Some(i) => i,
            None => {
                for v in [&mut latency, &mut p99, &mut tput] {
                    v.push(Series {
                        name: name.clone(),
                        points: Vec::new(),
                    });
                }
                latency.len() - 1
            }
        };
        if let Some(l) = &c.latency_ms {
            latency[slot].points.push(Point {
                x,
                y: l.p50,
                low: c.p50_ci_ms.map(|i| i.low),
                high: c.p50_ci_ms.map(|i| i.high),
            });
            p99[slot].points.push(Point {
                x,
                y: l.p99,
                low: None,
                high: None,
            });
        }
        if let Some(t) = c.throughput("request/s") {
            tput[slot].points.push(Point {
                x,
                y: t.value,
                low: None,
                high: None,
            });
        }
    }
    // p50 and p99 in one chart: p99 lines follow the p50 ones in the palette.
    let mut both = latency.clone();
    for mut s99 in p99 {
        s99.name = format!("p99 {}", s99.name);
        both.push(s99);
    }
    let cats = (!s.numeric).then_some(categories.as_slice());
    let legend_items: Vec<(String, String)> = both
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let name = match (i < latency.len(), s.series_keys.is_empty()) {
                (true, true) => "p50".to_string(),
                (true, false) => format!("p50 {}", x.name),
                (false, true) => "p99".to_string(),
                (false, false) => x.name.clone(),
            };
            (format!("c{}", i % 8), name)
        })
        .collect();
    let legend_refs: Vec<(&str, &str)> = legend_items
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let tput_items: Vec<(String, String)> = tput
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let name = if s.series_keys.is_empty() {
                "request/s".to_string()
            } else {
                x.name.clone()
            };
            (format!("c{}", i % 8), name)
        })
        .collect();
    let tput_refs: Vec<(&str, &str)> = tput_items
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let mut title = format!("{} · {} · {} — {}", s.model, s.case, s.runtime, s.parameter);
    if kind == Kind::Collection
        && let Some(r) = report.runs.get(s.run)
    {
        title = format!("{} · {title}", r.path);
    }
    let mut m = el("h3", &[], &text(&title));
    m.push_trusted("<div class=\"plots\">");
    m.push(&plots::figure(
        "sweep-latency",
        &format!(
            "latency (ms) against {}: p50 with 95 % CI, and p99",
            s.parameter
        ),
        &plots::lines(&s.parameter, "latency (ms)", &both, cats),
        Some(&plots::legend(&legend_refs)),
    ));
    m.push(&plots::figure(
        "sweep-throughput",
        &format!("request/s against {}", s.parameter),
        &plots::lines(&s.parameter, "request/s", &tput, cats),
        Some(&plots::legend(&tput_refs)),
    ));
    m.push_trusted("</div>");
    m
}

fn case_article(
    report: &CollectionReport,
    kind: Kind,
    i: usize,
    c: &CaseEntry,
    latencies: Option<&Vec<f64>>,
) -> Markup {
    let id = format!("case-{}", i + 1);
    let mut m = Markup::trusted(format!(
        "<article class=\"case\" id=\"{id}\" data-valid=\"{}\">",
        c.validity.valid
    ));
    m.push(&el(
        "h3",
        &[],
        &text(&format!("{}. {} · {}", i + 1, c.model, c.label)),
    ));
    let run = report.runs.get(c.run);
    let mut meta = Markup::default();
    if kind == Kind::Collection
        && let Some(r) = run
    {
        meta.push_text("run ");
        match &r.report {
            Some(rep) => meta.push(&el(
                "a",
                &[("href", &format!("{}#case-{}", href_for_path(rep), c.number))],
                &text(&r.path),
            )),
            None => meta.push(&el("code", &[], &text(&r.path))),
        }
        meta.push_text(&format!(" · {} · ", c.machine));
    }
    meta.push_text("directory ");
    meta.push(&el("code", &[], &text(&c.dir)));
    if let Some(profile) = &c.profile_report {
        meta.push_text(" · ");
        meta.push(&el(
            "a",
            &[
                ("href", &href_for_path(profile)),
                ("class", "profile-report"),
            ],
            &text("per-layer profile report"),
        ));
    }
    meta.push_text(&format!(
        " · {} · {} · {}",
        c.operation,
        runtime_label(c),
        status_label(c.status)
    ));
    if let Some(origin) = c.bundle_origin {
        meta.push_text(&format!(" · bundle {origin:?}").to_lowercase());
        if c.bundle_verified == Some(false) {
            meta.push_text(" (not compatibility-verified)");
        }
    }
    if let Some(route) = &c.bundle_route {
        meta.push_text(" · build route ");
        meta.push(&el("code", &[("class", "route-used")], &text(route)));
    }
    if let Some(load) = c.load_ms {
        meta.push_text(&format!(" · load {} ms (excluded)", fmt_num(load)));
    }
    m.push(&el("p", &[("class", "muted")], &meta));
    if !c.input_shapes.is_empty() {
        let mut io = Markup::default();
        io.push_text("inputs ");
        io.push(&el("code", &[], &text(&c.input_shapes_text())));
        if let Some(check) = c.output_check_text() {
            io.push_text(&format!(" · {check}"));
        }
        m.push(&el("p", &[("class", "case-inputs")], &io));
    }
    if let Some(e) = &c.error {
        m.push(&banner("error", &text(e)));
    }
    m.push_trusted("<div class=\"columns\"><div>");
    if let Some(l) = &c.latency_ms {
        let ci = c
            .p50_ci_ms
            .map(|i| format!(" (95 % CI {} – {})", fmt_num(i.low), fmt_num(i.high)))
            .unwrap_or_default();
        let mut pairs: Vec<(&str, Markup)> = vec![
            (
                "timed calls",
                text(&format!("{} after {} warm-up calls", c.samples, c.warmup)),
            ),
            ("duration", text(&fmt_seconds(c.duration_s))),
            ("p50", text(&format!("{} ms{ci}", fmt_num(l.p50)))),
            (
                "p90 / p95 / p99",
                text(&format!(
                    "{} / {} / {} ms",
                    fmt_num(l.p90),
                    fmt_num(l.p95),
                    fmt_num(l.p99)
                )),
            ),
            (
                "min / mean / max",
                text(&format!(
                    "{} / {} / {} ms",
                    fmt_num(l.min),
                    fmt_num(l.mean),
                    fmt_num(l.max)
                )),
            ),
            (
                "std dev, CV",
                text(&format!("{} ms, {} %", fmt_num(l.std_dev), fmt_pct(l.cv))),
            ),
        ];
        let outliers = match &c.trend {
            Some(t) => format!(
                "{} mild, {} severe (Tukey)",
                t.mild_outliers, t.severe_outliers
            ),
            None => format!("{} beyond 1.5 IQR (Tukey)", c.outliers),
        };
        pairs.push(("outliers", text(&outliers)));
        let tp = c
            .throughputs
            .iter()
            .map(|t| format!("{} {}", fmt_num(t.value), t.name))
            .collect::<Vec<_>>()
            .join(", ");
        pairs.push(("throughput", text(&tp)));
        if !c.stages_ms.is_empty() {
            let st = c
                .stages_ms
                .iter()
                .map(|(k, s)| format!("{k} {} ms", fmt_num(s.p50)))
                .collect::<Vec<_>>()
                .join(", ");
            pairs.push(("stages (p50)", text(&st)));
        }
        m.push(&key_values(&pairs));
    }
    m.push_trusted("</div><div>");
    m.push(&validity_block(&c.validity));
    m.push_trusted("</div></div>");
    if let Some(note) = &c.observations_note {
        m.push(&banner("warn", &text(&format!("plots omitted: {note}"))));
    }
    if let Some(v) = latencies
        && !v.is_empty()
    {
        m.push_trusted("<div class=\"plots\">");
        m.push(&plots::figure(
            "histogram",
            "latency distribution",
            &plots::histogram(v),
            Some(&plots::legend(&[("c1", "p50"), ("c3", "p99")])),
        ));
        m.push(&plots::figure(
            "cdf",
            "cumulative distribution",
            &plots::cdf(v),
            None,
        ));
        m.push(&plots::figure(
            "timeline",
            "latency per timed call",
            &plots::timeline(v, c.trend.as_ref()),
            Some(&plots::legend(&[
                ("c0", "calls"),
                ("c-median", "rolling median"),
                ("c-outlier", "Tukey outlier"),
                ("c-warmup", "warm-up drift"),
                ("c-throttle", "sustained slowdown"),
            ])),
        ));
        m.push_trusted("</div>");
    }
    if !c.request.is_empty() {
        let json = serde_json::to_string_pretty(&c.request).unwrap_or_default();
        m.push_trusted("<details><summary>request</summary>");
        m.push(&el("pre", &[], &text(&json)));
        m.push_trusted("</details>");
    }
    m.push_trusted("</article>");
    m
}

/// Renders the page.
pub fn render(kind: Kind, report: &CollectionReport, latencies: &CaseLatencies) -> String {
    let (kind_name, title) = match kind {
        Kind::Run => (
            "run",
            format!(
                "run {}",
                report.runs.first().map(|r| r.run_id.as_str()).unwrap_or("")
            ),
        ),
        Kind::Collection => (
            "report",
            format!(
                "{} run(s), {} case(s): {}",
                report.totals.runs,
                report.totals.cases,
                report.roots.join(", ")
            ),
        ),
    };
    let mut page = Page::new(kind_name, &title);
    let t = &report.totals;
    let all_valid = t.invalid == 0 && t.cases > 0;
    page.status = Some(pill(
        &format!("{} of {} valid", t.valid, t.cases),
        if all_valid { "valid" } else { "invalid" },
    ));
    if let Some(r) = report.runs.first()
        && kind == Kind::Run
    {
        page.subtitle.push(text(&format!(
            "{} · boundary {} · {} · {}",
            r.created, r.timing_boundary, r.machine.hostname, r.machine.cpu_model
        )));
    } else {
        page.subtitle.push(text(&format!(
            "built {} · {} completed, {} failed, {} skipped file(s)",
            report.created, t.completed, t.failed, t.skipped
        )));
    }
    page.subtitle.push(text(
        "A built-in test case makes a benchmark runnable; it is not evidence of task quality.",
    ));
    for n in &report.notes {
        page.banners.push(banner("warn", &text(n)));
    }
    // `run`'s verdicts between its cases, first thing under the title.
    for r in &report.runs {
        for c in &r.comparisons {
            let prefix = match kind {
                Kind::Run => String::new(),
                Kind::Collection => format!("{}: ", r.path),
            };
            page.banners.push(banner(
                "info verdict",
                &text(&format!("{prefix}{}", c.verdict)),
            ));
        }
    }
    for s in &report.skipped {
        page.banners.push(banner(
            "error",
            &text(&format!("skipped {}: {}", s.path, s.reason)),
        ));
    }

    let overview = match kind {
        Kind::Run => match report.runs.first() {
            Some(r) => provenance(r),
            None => text("no run"),
        },
        Kind::Collection => {
            let mut m = key_values(&[
                ("roots", text(&report.roots.join(", "))),
                ("runs", text(&t.runs.to_string())),
                (
                    "cases",
                    text(&format!(
                        "{} ({} completed, {} failed; {} valid, {} invalid)",
                        t.cases, t.completed, t.failed, t.valid, t.invalid
                    )),
                ),
                (
                    "validity policy",
                    text(&format!(
                        "at least {} timed calls, {} s, CV ≤ {} %, no failed calls",
                        report.policy.min_samples,
                        fmt_num(report.policy.min_duration_s),
                        fmt_pct(report.policy.max_cv)
                    )),
                ),
            ]);
            m.push(&el("h3", &[], &text("Runs")));
            m.push(&runs_table(report));
            m
        }
    };
    page.sections
        .push(Section::new("overview", "Overview", overview));
    page.sections.push(Section::new(
        "summary",
        "Summary",
        summary_table(report, kind),
    ));
    if let Some(bars) = comparison(report) {
        page.sections
            .push(Section::new("comparison", "Comparison", bars));
    }
    if !report.sweeps.is_empty() {
        let body = Markup::concat(
            report
                .sweeps
                .iter()
                .map(|s| sweep_plots(report, kind, s))
                .collect::<Vec<_>>()
                .iter(),
        );
        page.sections.push(Section::new("sweeps", "Sweeps", body));
    }
    let mut cases = Markup::default();
    for (i, c) in report.cases.iter().enumerate() {
        cases.push(&case_article(
            report,
            kind,
            i,
            c,
            latencies.get(i).and_then(Option::as_ref),
        ));
    }
    if report.cases.is_empty() {
        cases = text("no cases");
    }
    page.sections.push(Section::new("cases", "Cases", cases));
    page.footer = text(&format!(
        "{} {} · schema {} · self-contained: no network, no external files",
        report.generator.name, report.generator.version, report.schema
    ));
    page.render()
}
