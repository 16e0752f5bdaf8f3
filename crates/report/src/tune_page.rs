//! The HTML tuning report of `trtmc-bench tune`, drawn from the JSON summary (`trtmc.tuning-summary/v1`).
//!
//! Sections: the decision (winner and margin, or the tie and its members, against the baseline), route
//! against latency with intervals (search phase and head-to-head), every route with its status, error
//! and accuracy, accuracy per output tensor, the head-to-head, racing and mixed-search details, and the
//! chosen route as settings. The page reads the tuner's own summary type
//! ([`trtmc_core::artifacts::TuneSummary`]), so a renamed field breaks the build, not the page.

use std::collections::BTreeMap;

use serde_json::Value;
use trtmc_core::artifacts::{
    DecisionKind, Estimate, Margin, Objective, RouteStatus, RouteSummary, TUNING_SUMMARY_SCHEMA,
    TuneContext, TuneSummary,
};

use trtmc_core::intervals;

use crate::fmt::fmt_num;
use crate::html::{Markup, Page, Section, banner, el, key_values, pill, text};
use crate::plots::{self, Bar, BarGroup};
use crate::table::{Cell, Column, Table};

/// Most routes drawn in the latency chart (the tables list every route).
pub const MAX_PLOTTED_ROUTES: usize = 120;

fn dash() -> Markup {
    text("–")
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A counter for people: integers as they are, other numbers with a few significant digits (the
/// measurement time in ms was printed with every digit of the float).
fn count_text(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if !v.is_u64() && !v.is_i64() => fmt_num(x),
        _ => value_text(v),
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

fn status_class(status: RouteStatus) -> &'static str {
    match status {
        RouteStatus::Ok => "completed",
        RouteStatus::AccuracyFailed | RouteStatus::AccuracyError | RouteStatus::Eliminated => {
            "partial"
        }
        RouteStatus::Crashed | RouteStatus::TimedOut | RouteStatus::Failed => "failed",
    }
}

fn decision_pill(kind: DecisionKind) -> Markup {
    match kind {
        DecisionKind::Winner => pill("winner", "valid"),
        DecisionKind::Sole => pill("sole eligible route", "valid"),
        DecisionKind::Tie => pill("tie", "partial"),
        DecisionKind::None => pill("no eligible route", "invalid"),
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

/// Renders the tuning report of a tune's summary.
pub fn render(s: &TuneSummary) -> String {
    let ctx = s.context.as_ref();
    let title = match ctx {
        Some(c) => format!("tune {} on {}", c.model, c.runtime),
        None => "tune".to_string(),
    };
    let mut page = Page::new("tune", &title);
    page.status = Some(decision_pill(s.decision.kind));
    page.subtitle.push(text(&format!(
        "{} search over {} · objective {} ({}) · {} routes evaluated, {} eligible",
        s.search,
        s.expression,
        s.objective,
        s.objective_unit,
        s.counts.evaluated,
        s.counts.eligible
    )));
    if let Some(c) = ctx {
        page.subtitle.push(text(&format!(
            "{} {} · {} · {}",
            c.runtime, c.runtime_version, c.operation, c.machine
        )));
    }
    if s.decision.kind == DecisionKind::None {
        page.banners.push(banner(
            "error",
            &text(&format!("No route was eligible: {}", s.decision.reason)),
        ));
    }
    if let Some(stopped) = s.stopped {
        page.banners.push(banner(
            "warn",
            &text(&format!(
                "The tune stopped early ({}); the decision uses what was measured by then.",
                stopped.name()
            )),
        ));
    }
    page.sections
        .push(Section::new("decision", "Decision", decision(s)));
    page.sections
        .push(Section::new("latency", "Latency by route", latency_plot(s)));
    page.sections
        .push(Section::new("routes", "Routes", routes_table(s)));
    page.sections
        .push(Section::new("accuracy", "Accuracy", accuracy_table(s)));
    page.sections.push(Section::new(
        "head-to-head",
        "Head to head",
        head_to_head(s),
    ));
    if let Some(c) = ctx {
        page.sections
            .push(Section::new("setup", "Setup", setup(s, c)));
    }
    page.footer = text(&format!(
        "tuner {} · summary schema {TUNING_SUMMARY_SCHEMA} · intervals: medians over passes or blocks of calls, distribution-free at {:.0} % confidence",
        s.tuner_version,
        s.confidence * 100.0
    ));
    page.render()
}

fn decision(s: &TuneSummary) -> Markup {
    let d = &s.decision;
    let route = d
        .route
        .as_deref()
        .map(|r| el("code", &[("id", "chosen-route")], &text(&route_label(r))))
        .unwrap_or_else(dash);
    let mut rows: Vec<(&str, Markup)> = vec![
        ("decision", decision_pill(d.kind)),
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

fn latency_plot(s: &TuneSummary) -> Markup {
    let mut measured: Vec<&RouteSummary> = s.routes.iter().filter(|r| r.search.is_some()).collect();
    measured.sort_by(|a, b| {
        let v = |r: &RouteSummary| r.search.as_ref().map_or(f64::INFINITY, |e| e.value);
        v(a).total_cmp(&v(b))
    });
    if s.objective == Objective::Throughput {
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
    let mut few_calls = 0;
    let groups: Vec<BarGroup> = measured[..shown]
        .iter()
        .map(|r| {
            let mut label = route_label(&r.route);
            if r.status == RouteStatus::Eliminated {
                label.push_str(" (eliminated)");
            } else if !r.eligible {
                label.push_str(" (not eligible)");
            }
            // Below MIN_ROUNDS blocks no order-statistic interval reaches the confidence: the whisker
            // is then the range of the calls.
            if r.search
                .as_ref()
                .is_some_and(|e| e.samples < intervals::MIN_ROUNDS)
            {
                label.push_str(" ‡");
                few_calls += 1;
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
    let svg = plots::interval_dots_log(&format!("{} ({unit})", s.objective), &series, &groups);
    let legend = plots::legend(&[
        ("c0", "search phase: median over blocks of calls"),
        ("c1", "head to head: median over interleaved passes"),
    ]);
    let mut body = plots::figure(
        "route-latency",
        &format!(
            "{} per route on a log scale, best first; whiskers: its {:.0} % distribution-free interval \
             (trtmc_core::intervals){}",
            s.objective,
            s.confidence * 100.0,
            if few_calls > 0 {
                format!(
                    "; ‡ fewer than {} calls (e.g. stopped after the probe): min–max of its calls",
                    intervals::MIN_ROUNDS
                )
            } else {
                String::new()
            }
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

fn routes_table(s: &TuneSummary) -> Markup {
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
            Column::text("error / warnings / notes").help(
                "the route's error or why it was eliminated, warnings about its ranking (a high CV), then \
                 what the runtime's own tool or the tuner noted about its measurements",
            ),
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
            .map(|x| {
                let shown = format!("{:.1} %", x.cv * 100.0);
                let mut cell = Cell::num(x.cv, &shown);
                if !r.warnings.is_empty() {
                    // A high CV makes the route's rank doubtful: flag it where the number is.
                    cell.body.push_text(" ");
                    cell.body.push(&pill("doubtful", "partial"));
                }
                cell
            })
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
        let status = match (r.failed_stage, r.crash) {
            (Some(stage), true) => format!("{} ({}, crash)", r.status.name(), stage.name()),
            (Some(stage), false) => format!("{} ({})", r.status.name(), stage.name()),
            _ => r.status.name().to_string(),
        };
        t.push(vec![
            Cell::int(r.iter as u64),
            Cell::markup(el("code", &[], &text(&route_label(&r.route))), &r.route),
            Cell::text(r.phase.name()),
            Cell::markup(pill(&status, status_class(r.status)), r.status.name()),
            est,
            low,
            high,
            n,
            cv,
            h2h,
            Cell::text(accuracy),
            Cell::text(&role.join(", ")),
            Cell::text(
                &r.error_message
                    .iter()
                    .chain(&r.warnings)
                    .chain(&r.notes)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        ]);
    }
    t.render()
}

fn accuracy_table(s: &TuneSummary) -> Markup {
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
                Cell::text(tensor.note.as_deref().unwrap_or(a.algorithm.name())),
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

fn head_to_head(s: &TuneSummary) -> Markup {
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

fn setup(s: &TuneSummary, c: &TuneContext) -> Markup {
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
    // Every counter by its serialized name, so a counter added to the summary shows up here too.
    if let Ok(Value::Object(by_name)) = serde_json::to_value(&s.counts) {
        for (k, v) in &by_name {
            counts.push_str(&format!("{k} {} · ", count_text(v)));
        }
    }
    rows.push(("counts", text(counts.trim_end_matches(" · "))));
    key_values(&rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn summary(route: &str) -> TuneSummary {
        let doc = json!({
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
            "counts": {"planned": 1, "evaluated": 1, "eligible": 1, "crashed": 0, "timed_out": 0,
                       "failed": 0, "accuracy_failed": 0, "accuracy_errors": 0, "iterations": 1,
                       "iterations_this_session": 1, "measurement_calls_this_session": 20},
            "stopped": null, "notes": ["a <note>"],
            "context": {"model": "m\"<script>alert(1)</script>", "model_file": "f", "model_sha256": "h",
                        "runtime": "tract", "runtime_version": "1", "machine": "x", "operation": "infer",
                        "measurement": "m", "command_line": "c", "cache": null, "chosen": null}
        });
        serde_json::from_value(doc).expect("a complete tuning summary")
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
    fn the_latency_chart_is_log_scaled_and_doubtful_routes_are_flagged() {
        let mut s = summary("-threads=1 -precision=fp32");
        s.routes[0].warnings =
            vec!["CV 103 % over 100 calls (above 10 %): its rank is doubtful".into()];
        s.routes[0].search_samples.as_mut().expect("samples").cv = 1.03;
        let mut slow = s.routes[0].clone();
        slow.route = "-threads=1 -precision=fp16".into();
        slow.status = RouteStatus::Eliminated;
        slow.eligible = false;
        slow.warnings.clear();
        slow.error_message = Some("stopped early after 3 probe call(s)".into());
        let e = slow.search.as_mut().expect("estimate");
        (e.value, e.low, e.high, e.samples) = (5985.0, 5960.0, 6010.0, 3);
        s.routes.push(slow);
        s.counts.measurement_ms_this_session = 611043.0537350003;
        let html = render(&s);
        // Decades from 1 ms to 10 s on the axis, both routes drawn.
        for tick in [">1<", ">10<", ">100<", ">1000<", ">10000<"] {
            assert!(html.contains(tick), "tick {tick} missing");
        }
        assert!(html.contains("log scale"));
        assert!(
            html.contains("(eliminated) ‡"),
            "the probe-only route is marked"
        );
        assert!(
            html.contains("min–max of its calls"),
            "the legend says which interval"
        );
        assert!(html.contains("doubtful"), "the CV warning is shown");
        assert!(html.contains("CV 103 % over 100 calls"));
        assert!(html.contains("stopped early after 3 probe call(s)"));
        assert!(
            html.contains("measurement_ms_this_session 611043 "),
            "counts are formatted"
        );
        assert!(!html.contains("611043.05"));
    }

    #[test]
    fn a_summary_without_routes_or_context_still_renders() {
        let mut s = summary("-k=1");
        s.routes.clear();
        s.ties.clear();
        s.context = None;
        s.decision.kind = DecisionKind::None;
        s.decision.route = None;
        let html = render(&s);
        assert!(html.contains("no eligible route"));
        assert!(html.contains("data-report-kind=\"tune\""));
    }
}
