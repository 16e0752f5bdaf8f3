//! report.html of one `run`: summary table, per-case latency histogram and per-call timeline.

use minijinja::{AutoEscape, Environment, context};
use serde::Serialize;
use trtmc_core::result::{BenchmarkRun, CaseResult, Observation};

use crate::plots;

const TEMPLATE: &str = include_str!("../templates/run.html");
pub const CSS: &str = include_str!("../templates/style.css");
pub const TABLE_JS: &str = include_str!("../templates/table.js");

#[derive(Serialize)]
struct Formatted {
    p50: String,
    p95: String,
    p99: String,
    mean: String,
    cv: String,
    load: String,
    throughputs: Vec<String>,
    stages: Vec<String>,
}

#[derive(Serialize)]
struct CaseView<'a> {
    result: &'a CaseResult,
    fmt: Formatted,
    histogram: String,
    timeline: String,
    request_json: String,
}

/// Formats a value with a sensible number of significant digits for tables.
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a >= 0.001 {
        format!("{v:.4}")
    } else {
        format!("{v:.3e}")
    }
}

/// Renders the self-contained HTML report. `observations[i]` belongs to `run.cases[i]`.
pub fn render(run: &BenchmarkRun, observations: &[Vec<Observation>]) -> String {
    let cases: Vec<CaseView<'_>> = run
        .cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let obs = observations.get(i).map(Vec::as_slice).unwrap_or(&[]);
            let latencies: Vec<f64> = obs.iter().map(|o| o.wall_ns as f64 / 1e6).collect();
            let fmt = match &c.metrics {
                Some(m) => Formatted {
                    p50: fmt_num(m.latency_ms.p50),
                    p95: fmt_num(m.latency_ms.p95),
                    p99: fmt_num(m.latency_ms.p99),
                    mean: fmt_num(m.latency_ms.mean),
                    cv: format!("{:.1}", m.latency_ms.cv * 100.0),
                    load: c.measurement.load_ms.map(fmt_num).unwrap_or_default(),
                    throughputs: m
                        .throughputs
                        .iter()
                        .map(|t| format!("{} {}", fmt_num(t.value), t.name))
                        .collect(),
                    stages: m
                        .stages_ms
                        .iter()
                        .map(|(k, s)| format!("{k} {} ms", fmt_num(s.p50)))
                        .collect(),
                },
                None => Formatted {
                    p50: String::new(),
                    p95: String::new(),
                    p99: String::new(),
                    mean: String::new(),
                    cv: String::new(),
                    load: String::new(),
                    throughputs: Vec::new(),
                    stages: Vec::new(),
                },
            };
            CaseView {
                result: c,
                fmt,
                histogram: if latencies.is_empty() {
                    String::new()
                } else {
                    plots::histogram_svg(&latencies, 520, 260)
                },
                timeline: if latencies.is_empty() {
                    String::new()
                } else {
                    plots::timeline_svg(&latencies, 520, 260)
                },
                request_json: serde_json::to_string_pretty(&c.request).unwrap_or_default(),
            }
        })
        .collect();
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    let rendered = env.template_from_str(TEMPLATE).and_then(|t| {
        t.render(context! { run => run, cases => cases, css => CSS, js => TABLE_JS })
    });
    match rendered {
        Ok(html) => html,
        Err(e) => format!(
            "<!doctype html><title>report error</title><p>report could not be rendered: {}</p>",
            crate::escape_html(&e.to_string())
        ),
    }
}
