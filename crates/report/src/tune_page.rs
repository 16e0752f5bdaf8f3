//! The HTML tuning report of `trtmc-bench tune`, drawn from the JSON summary (`trtmc.tuning-summary/v1`).
//!
//! Sections: the decision (winner and margin, or the tie and its members, against the baseline), route
//! against latency with intervals (search phase and head-to-head), every route with its status, error
//! and accuracy, accuracy per output tensor, the head-to-head, racing and mixed-search details, and the
//! chosen route as settings. The page reads the summary as JSON, so it depends on the schema, not on the
//! tuning crate; fields it does not know are ignored and missing ones are shown as `–`.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::fmt::fmt_num;
use crate::html::{Markup, Page, Section, banner, el, key_values, pill, text};
use crate::plots::{self, Bar, BarGroup};
use crate::table::{Cell, Column, Table};

/// Most routes drawn in the latency chart (the tables list every route).
pub const MAX_PLOTTED_ROUTES: usize = 120;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Summary {
    search: String,
    objective: String,
    objective_unit: String,
    confidence: f64,
    min_effect: f64,
    expression: String,
    baseline_route: String,
    default_route: String,
    tuner_version: String,
    accuracy: Spec,
    routes: Vec<RouteEntry>,
    positive_knobs: Option<Vec<String>>,
    racing: Option<Racing>,
    ties: Vec<String>,
    head_to_head: Option<HeadToHead>,
    decision: Decision,
    counts: BTreeMap<String, Value>,
    stopped: Option<String>,
    notes: Vec<String>,
    context: Option<Context>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Spec {
    algorithm: String,
    atol: f64,
    rtol: f64,
    epsilon: f64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Estimate {
    value: f64,
    low: f64,
    high: f64,
    unit: String,
    samples: usize,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SampleSummary {
    cv: f64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct TensorAccuracy {
    name: String,
    loss: Option<f64>,
    threshold: f64,
    passed: bool,
    note: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Accuracy {
    algorithm: String,
    passed: bool,
    tensors: Vec<TensorAccuracy>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RouteEntry {
    route: String,
    phase: String,
    iter: usize,
    status: String,
    failed_stage: Option<String>,
    crash: bool,
    error_message: Option<String>,
    accuracy: Option<Accuracy>,
    search: Option<Estimate>,
    search_samples: Option<SampleSummary>,
    head_to_head: Option<Estimate>,
    eligible: bool,
    tied_with_best: bool,
    finalist: bool,
    eliminated_in_round: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Racing {
    rounds: usize,
    round_calls: usize,
    alpha: f64,
    test: String,
    eliminated: usize,
    survivors: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Interval {
    estimate: f64,
    low: f64,
    high: f64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Finalist {
    route: String,
    estimate: Option<Estimate>,
    ratio_to_best: Option<Interval>,
    tied_with_best: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct HeadToHead {
    based_on: String,
    passes: usize,
    calls_per_pass: usize,
    finalists: Vec<Finalist>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Margin {
    other: String,
    ratio: f64,
    low: f64,
    high: f64,
    confidence: f64,
    percent: f64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Decision {
    kind: String,
    route: Option<String>,
    tied_routes: Vec<String>,
    margin: Option<Margin>,
    versus_baseline: Option<Margin>,
    reason: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Chosen {
    route: String,
    build_settings: BTreeMap<String, Value>,
    runtime_settings: BTreeMap<String, Value>,
    other: BTreeMap<String, String>,
    run_sets: Vec<String>,
    saved_bundle: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Context {
    model: String,
    model_file: String,
    model_sha256: String,
    runtime: String,
    runtime_version: String,
    machine: String,
    operation: String,
    measurement: String,
    command_line: String,
    cache: Option<String>,
    chosen: Option<Chosen>,
    files: BTreeMap<String, String>,
}

fn dash() -> Markup {
    text("–")
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `value [low, high] unit`.
fn estimate_text(e: &Estimate) -> String {
    format!(
        "{} [{}, {}] {}",
        fmt_num(e.value),
        fmt_num(e.low),
        fmt_num(e.high),
        e.unit
    )
}

fn route_label(route: &str) -> String {
    if route.is_empty() {
        "(no knobs)".into()
    } else {
        route.to_string()
    }
}

fn status_class(status: &str) -> &'static str {
    match status {
        "ok" => "completed",
        "accuracy_failed" | "accuracy_error" => "partial",
        _ => "failed",
    }
}

fn decision_pill(kind: &str) -> Markup {
    match kind {
        "winner" => pill("winner", "valid"),
        "sole" => pill("sole eligible route", "valid"),
        "tie" => pill("tie", "partial"),
        _ => pill("no eligible route", "invalid"),
    }
}

fn margin_text(m: &Margin) -> String {
    format!(
        "{:+.2} % against {} (ratio {} , {:.0} % interval {} to {})",
        m.percent,
        route_label(&m.other),
        fmt_num(m.ratio),
        m.confidence * 100.0,
        fmt_num(m.low),
        fmt_num(m.high)
    )
}

/// Renders the tuning report from a `trtmc.tuning-summary/v1` document.
pub fn render(summary: &Value) -> String {
    let s: Summary = serde_json::from_value(summary.clone()).unwrap_or_default();
    let ctx = s.context.as_ref();
    let title = match ctx {
        Some(c) => format!("tune {} on {}", c.model, c.runtime),
        None => "tune".to_string(),
    };
    let mut page = Page::new("tune", &title);
    page.status = Some(decision_pill(&s.decision.kind));
    page.subtitle.push(text(&format!(
        "{} search over {} · objective {} ({}) · {} routes evaluated, {} eligible",
        s.search,
        s.expression,
        s.objective,
        s.objective_unit,
        count(&s, "evaluated"),
        count(&s, "eligible")
    )));
    if let Some(c) = ctx {
        page.subtitle.push(text(&format!(
            "{} {} · {} · {}",
            c.runtime, c.runtime_version, c.operation, c.machine
        )));
    }
    if s.decision.kind == "none" {
        page.banners.push(banner(
            "error",
            &text(&format!("No route was eligible: {}", s.decision.reason)),
        ));
    }
    if let Some(stopped) = &s.stopped {
        page.banners.push(banner(
            "warn",
            &text(&format!(
                "The tune stopped early ({stopped}); the decision uses what was measured by then."
            )),
        ));
    }
    page.sections
        .push(Section::new("decision", "Decision", decision(&s)));
    page.sections.push(Section::new(
        "latency",
        "Latency by route",
        latency_plot(&s),
    ));
    page.sections
        .push(Section::new("routes", "Routes", routes_table(&s)));
    page.sections
        .push(Section::new("accuracy", "Accuracy", accuracy_table(&s)));
    page.sections.push(Section::new(
        "head-to-head",
        "Head to head",
        head_to_head(&s),
    ));
    if let Some(c) = ctx {
        page.sections
            .push(Section::new("setup", "Setup", setup(&s, c)));
    }
    page.footer = text(&format!(
        "tuner {} · summary schema trtmc.tuning-summary/v1 · intervals: percentile bootstrap at {:.0} % confidence",
        s.tuner_version,
        s.confidence * 100.0
    ));
    page.render()
}

fn count(s: &Summary, name: &str) -> String {
    s.counts
        .get(name)
        .map(value_text)
        .unwrap_or_else(|| "–".into())
}

fn decision(s: &Summary) -> Markup {
    let d = &s.decision;
    let route = d
        .route
        .as_deref()
        .map(|r| el("code", &[("id", "chosen-route")], &text(&route_label(r))))
        .unwrap_or_else(dash);
    let mut rows: Vec<(&str, Markup)> = vec![
        ("decision", decision_pill(&d.kind)),
        ("route", route),
        ("reason", text(&d.reason)),
    ];
    if let Some(m) = &d.margin {
        rows.push((
            "margin",
            el("span", &[("id", "margin")], &text(&margin_text(m))),
        ));
    }
    if !d.tied_routes.is_empty() {
        let mut list = Markup::trusted("<ul id=\"tied-routes\">");
        for r in &d.tied_routes {
            list.push(&el("li", &[], &el("code", &[], &text(&route_label(r)))));
        }
        list.push_trusted("</ul>");
        rows.push(("tied routes", list));
    }
    if let Some(m) = &d.versus_baseline {
        rows.push(("versus baseline", text(&margin_text(m))));
    }
    rows.push((
        "baseline route",
        el("code", &[], &text(&route_label(&s.baseline_route))),
    ));
    rows.push((
        "default route",
        el("code", &[], &text(&route_label(&s.default_route))),
    ));
    rows.push((
        "selection",
        text(&format!(
            "{} of steady-state samples; a winner must beat every other finalist by more than {:.1} % at {:.0} % \
             confidence in interleaved head-to-head passes, otherwise the routes are reported as a tie",
            s.objective,
            s.min_effect * 100.0,
            s.confidence * 100.0
        )),
    ));
    if let Some(k) = &s.positive_knobs {
        rows.push((
            "positive knobs (mixed)",
            text(&if k.is_empty() {
                "none".to_string()
            } else {
                k.join(" ")
            }),
        ));
    }
    if let Some(r) = &s.racing {
        rows.push((
            "racing",
            text(&format!(
                "{} rounds of {} calls; {} routes dropped ({}, α = {}); survivors: {}",
                r.rounds,
                r.round_calls,
                r.eliminated,
                r.test,
                r.alpha,
                if r.survivors.is_empty() {
                    "none".to_string()
                } else {
                    r.survivors
                        .iter()
                        .map(|x| route_label(x))
                        .collect::<Vec<_>>()
                        .join("; ")
                }
            )),
        ));
    }
    let mut body = key_values(&rows);
    for n in &s.notes {
        body.push(&banner("info", &text(n)));
    }
    body
}

fn latency_plot(s: &Summary) -> Markup {
    let mut measured: Vec<&RouteEntry> = s.routes.iter().filter(|r| r.search.is_some()).collect();
    measured.sort_by(|a, b| {
        let v = |r: &RouteEntry| r.search.as_ref().map_or(f64::INFINITY, |e| e.value);
        v(a).total_cmp(&v(b))
    });
    if s.objective == "throughput" {
        measured.reverse();
    }
    let shown = measured.len().min(MAX_PLOTTED_ROUTES);
    let bar = |e: &Option<Estimate>| {
        e.as_ref().map(|e| Bar {
            value: e.value,
            low: Some(e.low),
            high: Some(e.high),
        })
    };
    let groups: Vec<BarGroup> = measured[..shown]
        .iter()
        .map(|r| {
            let mut label = route_label(&r.route);
            if !r.eligible {
                label.push_str(" (not eligible)");
            }
            BarGroup {
                label,
                bars: vec![bar(&r.search), bar(&r.head_to_head)],
            }
        })
        .collect();
    let unit = s
        .routes
        .iter()
        .find_map(|r| r.search.as_ref().map(|e| e.unit.clone()))
        .unwrap_or_else(|| s.objective_unit.clone());
    let series = ["search phase".to_string(), "head to head".to_string()];
    let svg = plots::grouped_bars(&format!("{} ({unit})", s.objective), &series, &groups);
    let legend = plots::legend(&[
        ("c0", "search phase"),
        ("c1", "head to head (interleaved passes)"),
    ]);
    let mut body = plots::figure(
        "route-latency",
        &format!(
            "{} per route with its {:.0} % interval, best first",
            s.objective,
            s.confidence * 100.0
        ),
        &svg,
        Some(&legend),
    );
    if measured.len() > shown {
        body.push(&el(
            "p",
            &[("class", "muted")],
            &text(&format!(
                "the {shown} best of {} measured routes are drawn; the routes table lists all",
                measured.len()
            )),
        ));
    }
    body
}

fn routes_table(s: &Summary) -> Markup {
    let mut t = Table::new(
        "routes-table",
        vec![
            Column::num("iter"),
            Column::text("route"),
            Column::text("phase").filter(),
            Column::text("status").filter(),
            Column::num("estimate").help("objective over the search-phase samples"),
            Column::num("low"),
            Column::num("high"),
            Column::num("samples"),
            Column::num("cv"),
            Column::num("head to head"),
            Column::text("accuracy").filter(),
            Column::text("role").filter(),
            Column::text("error"),
        ],
    );
    for r in &s.routes {
        let (est, low, high, n) = match &r.search {
            Some(e) => (
                Cell::num(e.value, &fmt_num(e.value)),
                Cell::num(e.low, &fmt_num(e.low)),
                Cell::num(e.high, &fmt_num(e.high)),
                Cell::int(e.samples as u64),
            ),
            None => (Cell::empty(), Cell::empty(), Cell::empty(), Cell::empty()),
        };
        let cv = r
            .search_samples
            .as_ref()
            .map(|x| Cell::num(x.cv, &format!("{:.1} %", x.cv * 100.0)))
            .unwrap_or_else(Cell::empty);
        let h2h = r
            .head_to_head
            .as_ref()
            .map(|e| Cell::num(e.value, &estimate_text(e)))
            .unwrap_or_else(Cell::empty);
        let accuracy = match &r.accuracy {
            Some(a) if a.passed => "passed",
            Some(_) => "failed",
            None => "not checked",
        };
        let mut role = Vec::new();
        if s.decision.route.as_deref() == Some(r.route.as_str()) {
            role.push("chosen".to_string());
        }
        if r.tied_with_best {
            role.push("tied with best".into());
        }
        if r.finalist {
            role.push("finalist".into());
        }
        if let Some(round) = r.eliminated_in_round {
            role.push(format!("dropped after round {round}"));
        }
        if r.route == s.baseline_route {
            role.push("baseline".into());
        }
        let status = match (&r.failed_stage, r.crash) {
            (Some(stage), true) => format!("{} ({stage}, crash)", r.status),
            (Some(stage), false) => format!("{} ({stage})", r.status),
            _ => r.status.clone(),
        };
        t.push(vec![
            Cell::int(r.iter as u64),
            Cell::markup(el("code", &[], &text(&route_label(&r.route))), &r.route),
            Cell::text(&r.phase),
            Cell::markup(pill(&status, status_class(&r.status)), &r.status),
            est,
            low,
            high,
            n,
            cv,
            h2h,
            Cell::text(accuracy),
            Cell::text(&role.join(", ")),
            Cell::text(r.error_message.as_deref().unwrap_or("")),
        ]);
    }
    t.render()
}

fn accuracy_table(s: &Summary) -> Markup {
    let mut t = Table::new(
        "accuracy-table",
        vec![
            Column::text("route"),
            Column::text("tensor").filter(),
            Column::num("loss"),
            Column::num("threshold"),
            Column::text("verdict").filter(),
            Column::text("note"),
        ],
    );
    for r in &s.routes {
        let Some(a) = &r.accuracy else { continue };
        for tensor in &a.tensors {
            let loss = match tensor.loss {
                Some(l) => Cell::num(l, &format!("{l:.3e}")),
                None => Cell::text("not finite"),
            };
            let verdict = if tensor.passed { "passed" } else { "failed" };
            t.push(vec![
                Cell::markup(el("code", &[], &text(&route_label(&r.route))), &r.route),
                Cell::text(&tensor.name),
                loss,
                Cell::num(tensor.threshold, &format!("{:.3e}", tensor.threshold)),
                Cell::markup(
                    pill(verdict, if tensor.passed { "completed" } else { "failed" }),
                    verdict,
                ),
                Cell::text(tensor.note.as_deref().unwrap_or(&a.algorithm)),
            ]);
        }
    }
    let mut body = el(
        "p",
        &[("class", "muted")],
        &text(&format!(
            "loss {} per output tensor against the golden outputs (atol {}, rtol {}); a route passes when every \
             tensor's loss is at most its threshold (default ε = {}); routes that fail are measured for the record \
             but can never win",
            s.accuracy.algorithm, s.accuracy.atol, s.accuracy.rtol, s.accuracy.epsilon
        )),
    );
    body.push(&t.render());
    body
}

fn head_to_head(s: &Summary) -> Markup {
    let Some(h) = &s.head_to_head else {
        return el(
            "p",
            &[("class", "muted")],
            &text("no head-to-head: fewer than two eligible routes"),
        );
    };
    let mut body = el(
        "p",
        &[("class", "muted")],
        &text(&format!(
            "based on {}: {} interleaved passes of {} calls per finalist, the order rotating each pass",
            h.based_on.replace('_', " "),
            h.passes,
            h.calls_per_pass
        )),
    );
    let mut t = Table::new(
        "finalists-table",
        vec![
            Column::text("finalist"),
            Column::num("estimate"),
            Column::num("ratio to best"),
            Column::text("interval"),
            Column::text("tied with best").filter(),
        ],
    );
    for f in &h.finalists {
        let est = f
            .estimate
            .as_ref()
            .map(|e| Cell::num(e.value, &estimate_text(e)))
            .unwrap_or_else(Cell::empty);
        let (ratio, interval) = match &f.ratio_to_best {
            Some(r) => (
                Cell::num(r.estimate, &fmt_num(r.estimate)),
                Cell::text(&format!("{} to {}", fmt_num(r.low), fmt_num(r.high))),
            ),
            None => (Cell::text("best"), Cell::empty()),
        };
        t.push(vec![
            Cell::markup(el("code", &[], &text(&route_label(&f.route))), &f.route),
            est,
            ratio,
            interval,
            Cell::text(if f.tied_with_best { "yes" } else { "no" }),
        ]);
    }
    body.push(&t.render());
    if !s.ties.is_empty() {
        body.push(&el(
            "p",
            &[("class", "muted")],
            &text(&format!(
                "after the search {} route(s) overlapped the best one's interval: {}",
                s.ties.len(),
                s.ties
                    .iter()
                    .map(|r| route_label(r))
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
        ));
    }
    body
}

fn setup(s: &Summary, c: &Context) -> Markup {
    let mut rows: Vec<(&str, Markup)> = vec![
        ("model", text(&c.model)),
        ("model file", el("code", &[], &text(&c.model_file))),
        ("model sha256", el("code", &[], &text(&c.model_sha256))),
        (
            "runtime",
            text(&format!("{} {}", c.runtime, c.runtime_version)),
        ),
        ("operation", text(&c.operation)),
        ("machine", text(&c.machine)),
        ("measurement", text(&c.measurement)),
        ("command", el("code", &[], &text(&c.command_line))),
        ("tuning cache", text(c.cache.as_deref().unwrap_or("–"))),
        (
            "accuracy gate",
            text(&format!(
                "{} ≤ {} per tensor (atol {}, rtol {})",
                s.accuracy.algorithm, s.accuracy.epsilon, s.accuracy.atol, s.accuracy.rtol
            )),
        ),
    ];
    if let Some(ch) = &c.chosen {
        rows.push((
            "chosen route",
            el("code", &[], &text(&route_label(&ch.route))),
        ));
        let join = |m: &BTreeMap<String, Value>| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", value_text(v)))
                .collect::<Vec<_>>()
                .join(" ")
        };
        rows.push(("build settings", text(&join(&ch.build_settings))));
        rows.push(("runtime settings", text(&join(&ch.runtime_settings))));
        if !ch.other.is_empty() {
            let other: Vec<String> = ch.other.iter().map(|(k, v)| format!("{k}={v}")).collect();
            rows.push(("other settings", text(&other.join(" "))));
        }
        if !ch.run_sets.is_empty() {
            let sets: Vec<String> = ch.run_sets.iter().map(|x| format!("--set {x}")).collect();
            rows.push((
                "reproduce with run",
                el("code", &[], &text(&sets.join(" "))),
            ));
        }
        if let Some(b) = &ch.saved_bundle {
            rows.push(("saved bundle", el("code", &[], &text(b))));
        }
    }
    for (k, v) in &c.files {
        rows.push((k.as_str(), el("code", &[], &text(v))));
    }
    let mut counts = String::new();
    for (k, v) in &s.counts {
        counts.push_str(&format!("{k} {} · ", value_text(v)));
    }
    rows.push(("counts", text(counts.trim_end_matches(" · "))));
    key_values(&rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn summary(route: &str) -> Value {
        json!({
            "schema": "trtmc.tuning-summary/v1",
            "search": "fast", "objective": "p50", "objective_unit": "ms", "confidence": 0.95,
            "min_effect": 0.01, "expression": route, "baseline_route": route, "default_route": route,
            "tuner_version": "t",
            "accuracy": {"algorithm": "cos", "atol": 1e-5, "rtol": 1e-5, "epsilon": 1e-3},
            "routes": [{
                "route": route, "phase": "fast", "iter": 1, "status": "ok", "failed_stage": null,
                "crash": false, "error_message": "<b>bold</b>",
                "accuracy": {"algorithm": "cos", "atol": 1e-5, "rtol": 1e-5, "passed": true,
                             "tensors": [{"name": "y<script>", "loss": 0.0, "threshold": 1e-3, "passed": true}]},
                "search": {"statistic": "p50", "value": 1.5, "low": 1.4, "high": 1.6, "confidence": 0.95,
                           "unit": "ms", "samples": 20, "cost": {"estimate": 1.5, "low": 1.4, "high": 1.6, "confidence": 0.95}},
                "search_samples": {"count": 20, "min": 1.0, "mean": 1.5, "p50": 1.5, "p90": 1.6, "p95": 1.6,
                                   "p99": 1.7, "max": 1.8, "std_dev": 0.1, "cv": 0.07},
                "head_to_head": null, "eligible": true, "tied_with_best": true, "finalist": false,
                "eliminated_in_round": null}],
            "ties": [route], "head_to_head": null,
            "decision": {"kind": "sole", "route": route, "tied_routes": [], "margin": null,
                         "versus_baseline": null, "reason": "only one"},
            "counts": {"evaluated": 1, "eligible": 1}, "stopped": null, "notes": ["a <note>"],
            "context": {"model": "m\"<script>alert(1)</script>", "model_file": "f", "model_sha256": "h",
                        "runtime": "tract", "runtime_version": "1", "machine": "x", "operation": "infer",
                        "measurement": "m", "command_line": "c", "cache": null, "chosen": null}
        })
    }

    #[test]
    fn every_user_string_is_escaped_and_sections_are_present() {
        let html = render(&summary("-k=<img src=x onerror=alert(1)>"));
        assert!(!html.contains("<img src=x"), "a route became an element");
        assert!(
            !html.contains("<script>alert"),
            "a model name became an element"
        );
        assert!(!html.contains("<b>bold</b>"));
        assert!(html.contains("-k=&lt;img src=x onerror=alert(1)&gt;"));
        for id in [
            "id=\"decision\"",
            "id=\"latency\"",
            "id=\"routes-table\"",
            "id=\"accuracy-table\"",
            "id=\"head-to-head\"",
            "id=\"setup\"",
            "data-plot=\"route-latency\"",
            "data-report-kind=\"tune\"",
        ] {
            assert!(html.contains(id), "{id} missing");
        }
        assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
    }

    #[test]
    fn a_document_that_is_not_a_summary_still_renders() {
        let html = render(&json!({"routes": "not a list"}));
        assert!(html.contains("no eligible route"));
        let html = render(&json!(null));
        assert!(html.contains("data-report-kind=\"tune\""));
    }
}
