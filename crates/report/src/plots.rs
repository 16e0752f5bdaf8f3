//! SVG plots drawn in Rust with plotters: no network, no JavaScript library.
//!
//! Every function returns the `<svg>` as [`Markup`] (plotters escapes its text) ready to put in a
//! [`figure`]. Axis text and lines use `currentColor`, so they follow the page's light or dark theme;
//! series use the [`crate::theme::PALETTE`] colours (`.c0` … `.c7` for HTML legends). Large inputs are
//! reduced before drawing (timeline: min/max per bucket so spikes survive; CDF: 150 quantiles below p99,
//! every sample above) to
//! keep a 100-case report small.
//!
//! | function | shows |
//! | --- | --- |
//! | [`histogram`] | latency distribution, p50 and p99 marked |
//! | [`cdf`] | empirical CDF of latency, p50/p95/p99 marked |
//! | [`timeline`] | latency per call in order, rolling median, Tukey outliers, warm-up drift and slowdown shaded |
//! | [`lines`] | a metric against a swept parameter, one line per series, confidence whiskers |
//! | [`grouped_bars`] | horizontal bars per group (model·case) and series (runtime·machine), whiskers |
//! | [`interval_dots_log`] | a point and its interval per group and series on a logarithmic axis (tune routes) |
//! | [`forest`] | a ratio and its interval per row over green/yellow/red threshold bands (matrix) |

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use trtmc_core::artifacts::matrix::Light;
use trtmc_core::stats::{self, TukeyFences};

use crate::fmt::fmt_tick;
use crate::html::{Markup, el, escape, text};
use crate::theme::PALETTE;
use crate::validity::Trend;

/// Sentinel colour for axis ink, rewritten to `currentColor`.
const INK: RGBColor = RGBColor(1, 2, 3);
const INK_HEX: &str = "#010203";

/// Width and height of the per-case plots, in SVG user units.
pub const CASE_PLOT: (u32, u32) = (480, 240);

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn colour(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

fn label_font() -> TextStyle<'static> {
    ("sans-serif", 12).into_font().color(&INK)
}

/// Runs a drawing closure into an SVG string and tidies it; an empty [`Markup`] if plotting failed.
fn render(
    size: (u32, u32),
    label: &str,
    draw: impl FnOnce(DrawingArea<SVGBackend<'_>, plotters::coord::Shift>) -> DrawResult,
) -> Markup {
    let mut svg = String::new();
    let ok = {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw(root).is_ok()
    };
    if !ok || !svg.starts_with("<svg") {
        return Markup::default();
    }
    let tidy = simplify_polylines(
        &svg.replace(INK_HEX, "currentColor")
            .replace(" opacity=\"1\"", "")
            // Axis text: the theme sets font and colour (`figure.plot svg text`).
            .replace(TEXT_ATTRS, "")
            .replace("\n", ""),
    );
    let labelled = tidy.replacen(
        "<svg ",
        &format!("<svg role=\"img\" aria-label=\"{}\" ", escape(label)),
        1,
    );
    Markup::trusted(labelled)
}

/// Attributes plotters writes on every axis label, set once by the theme's CSS instead.
const TEXT_ATTRS: &str =
    " font-family=\"sans-serif\" font-size=\"9.67741935483871\" fill=\"currentColor\"";

/// Drops points that change nothing at pixel resolution: repeats, and the middle of three points on one
/// horizontal or vertical line (a step CDF, flat stretches of a timeline).
fn simplify_polylines(svg: &str) -> String {
    const KEY: &str = "points=\"";
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg;
    while let Some(at) = rest.find(KEY) {
        let start = at + KEY.len();
        let Some(len) = rest[start..].find('"') else {
            break;
        };
        out.push_str(&rest[..start]);
        let mut kept: Vec<(i64, i64)> = Vec::new();
        let mut parsed = true;
        for pair in rest[start..start + len].split_whitespace() {
            let Some((x, y)) = pair.split_once(',') else {
                parsed = false;
                break;
            };
            let (Ok(x), Ok(y)) = (x.parse::<i64>(), y.parse::<i64>()) else {
                parsed = false;
                break;
            };
            if kept.last() == Some(&(x, y)) {
                continue;
            }
            if kept.len() >= 2 {
                let (a, b) = (kept[kept.len() - 2], kept[kept.len() - 1]);
                let same_line = (a.0 == b.0 && b.0 == x && (b.1 - a.1) * (y - b.1) >= 0)
                    || (a.1 == b.1 && b.1 == y && (b.0 - a.0) * (x - b.0) >= 0);
                if same_line {
                    kept.pop();
                }
            }
            kept.push((x, y));
        }
        if parsed {
            let pts: Vec<String> = kept.iter().map(|(x, y)| format!("{x},{y}")).collect();
            out.push_str(&pts.join(" "));
        } else {
            out.push_str(&rest[start..start + len]);
        }
        rest = &rest[start + len..];
    }
    out.push_str(rest);
    out
}

/// A padded axis range over finite values; `(0, 1)` when there are none.
pub fn axis_range(values: impl IntoIterator<Item = f64>, from_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.into_iter().filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() || !hi.is_finite() {
        return (0.0, 1.0);
    }
    if from_zero {
        lo = lo.min(0.0);
    }
    let pad = ((hi - lo) * 0.05).max(hi.abs() * 1e-3).max(1e-9);
    let low = if from_zero {
        lo
    } else if lo >= 0.0 {
        (lo - pad).max(0.0)
    } else {
        lo - pad
    };
    (low, hi + pad)
}

fn finite(values: &[f64]) -> Vec<f64> {
    values.iter().copied().filter(|v| v.is_finite()).collect()
}

/// Latency histogram (ms) with √n bins (5 to 40), p50 and p99 marked.
pub fn histogram(values_ms: &[f64]) -> Markup {
    let values = finite(values_ms);
    if values.is_empty() {
        return Markup::default();
    }
    render(CASE_PLOT, "latency histogram", |root| {
        let sorted = stats::sorted(&values);
        let (lo, hi) = axis_range(values.iter().copied(), false);
        let bins = ((values.len() as f64).sqrt().ceil() as usize).clamp(5, 40);
        let step = (hi - lo) / bins as f64;
        let mut counts = vec![0u32; bins];
        for &v in &values {
            let i = (((v - lo) / step) as usize).min(bins - 1);
            counts[i] += 1;
        }
        let top = counts.iter().copied().max().unwrap_or(1).max(1);
        let mut chart = ChartBuilder::on(&root)
            .margin(8)
            .x_label_area_size(34)
            .y_label_area_size(44)
            .build_cartesian_2d(lo..hi, 0u32..(top + top / 8 + 1))?;
        chart
            .configure_mesh()
            .disable_mesh()
            .axis_style(INK)
            .label_style(label_font())
            .axis_desc_style(label_font())
            .x_desc("latency (ms)")
            .y_desc("calls")
            .x_labels(6)
            .y_labels(5)
            .x_label_formatter(&|v| fmt_tick(*v))
            .draw()?;
        chart.draw_series(
            counts
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(i, &c)| {
                    let x0 = lo + step * i as f64;
                    Rectangle::new([(x0, 0), (x0 + step * 0.9, c)], colour(0).filled())
                }),
        )?;
        let y_top = top + top / 8;
        for (p, name, c) in [(50.0, "p50", colour(1)), (99.0, "p99", colour(3))] {
            let x = stats::percentile_sorted(&sorted, p);
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(x, 0), (x, y_top)],
                c.stroke_width(2),
            )))?;
            chart.draw_series(std::iter::once(Text::new(
                name.to_string(),
                (x, y_top),
                label_font().pos(Pos::new(HPos::Left, VPos::Top)),
            )))?;
        }
        root.present()?;
        Ok(())
    })
}

/// Points of a CDF below p99 (the tail above it is drawn sample by sample).
const CDF_POINTS: usize = 150;

/// Empirical CDF of latency (ms): fraction of calls at or below each latency; p50, p95 and p99 marked.
pub fn cdf(values_ms: &[f64]) -> Markup {
    let values = finite(values_ms);
    if values.is_empty() {
        return Markup::default();
    }
    render(CASE_PLOT, "latency CDF", |root| {
        let sorted = stats::sorted(&values);
        let (lo, hi) = axis_range(sorted.iter().copied(), false);
        let n = sorted.len();
        let points: Vec<(f64, f64)> = if n <= CDF_POINTS {
            sorted
                .iter()
                .enumerate()
                .map(|(i, &x)| (x, (i + 1) as f64 / n as f64))
                .collect()
        } else {
            // Evenly spaced quantiles, plus the tail above p99 sample by sample.
            let mut pts: Vec<(f64, f64)> = (1..=CDF_POINTS)
                .map(|k| {
                    let q = k as f64 / CDF_POINTS as f64 * 0.99;
                    (stats::percentile_sorted(&sorted, q * 100.0), q)
                })
                .collect();
            let tail = (n as f64 * 0.99) as usize;
            pts.extend(
                sorted[tail..]
                    .iter()
                    .enumerate()
                    .map(|(i, &x)| (x, (tail + i + 1) as f64 / n as f64)),
            );
            pts
        };
        let mut chart = ChartBuilder::on(&root)
            .margin(8)
            .x_label_area_size(34)
            .y_label_area_size(44)
            .build_cartesian_2d(lo..hi, 0f64..1.02f64)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .axis_style(INK)
            .label_style(label_font())
            .axis_desc_style(label_font())
            .x_desc("latency (ms)")
            .y_desc("fraction of calls ≤ x")
            .x_labels(6)
            .y_labels(6)
            .x_label_formatter(&|v| fmt_tick(*v))
            .y_label_formatter(&|v| fmt_tick(*v))
            .draw()?;
        // A step function: hold each fraction until the next sample.
        let mut steps = Vec::with_capacity(points.len() * 2 + 1);
        steps.push((lo, 0.0));
        let mut previous = 0.0;
        for &(x, f) in &points {
            steps.push((x, previous));
            steps.push((x, f));
            previous = f;
        }
        chart.draw_series(LineSeries::new(steps, colour(0).stroke_width(2)))?;
        for (p, name, c) in [
            (50.0, "p50", colour(1)),
            (95.0, "p95", colour(5)),
            (99.0, "p99", colour(3)),
        ] {
            let x = stats::percentile_sorted(&sorted, p);
            let y = p / 100.0;
            chart.draw_series(std::iter::once(Circle::new((x, y), 3, c.filled())))?;
            chart.draw_series(std::iter::once(Text::new(
                format!("{name} {}", fmt_tick(x)),
                (x, y),
                label_font().pos(Pos::new(HPos::Right, VPos::Bottom)),
            )))?;
        }
        root.present()?;
        Ok(())
    })
}

/// At most ~2 × `buckets` points of `values` in call order, keeping each bucket's minimum and maximum.
fn min_max_buckets(values: &[f64], buckets: usize) -> Vec<(usize, f64)> {
    if values.len() <= buckets * 2 {
        return values.iter().copied().enumerate().collect();
    }
    let size = values.len().div_ceil(buckets);
    let mut out = Vec::with_capacity(buckets * 2);
    for (b, chunk) in values.chunks(size).enumerate() {
        let base = b * size;
        let (mut imin, mut imax) = (0, 0);
        for (i, &v) in chunk.iter().enumerate() {
            if v < chunk[imin] {
                imin = i;
            }
            if v > chunk[imax] {
                imax = i;
            }
        }
        let (first, second) = if imin <= imax {
            (imin, imax)
        } else {
            (imax, imin)
        };
        out.push((base + first, chunk[first]));
        if second != first {
            out.push((base + second, chunk[second]));
        }
    }
    out
}

/// Buckets of the timeline line: 2 points each, about one per pixel column of the plot.
const TIMELINE_BUCKETS: usize = 200;

/// Most outlier markers drawn on one timeline (the count is in the notes either way).
const MAX_MARKERS: usize = 300;

/// Latency of each timed call in order: the calls (thin line), the rolling median (thick), Tukey
/// outliers (red dots), warm-up drift (amber band) and a sustained slowdown (red band) from `trend`.
pub fn timeline(values_ms: &[f64], trend: Option<&Trend>) -> Markup {
    if values_ms.iter().all(|v| !v.is_finite()) {
        return Markup::default();
    }
    render(CASE_PLOT, "latency per timed call", |root| {
        let n = values_ms.len();
        let (lo, hi) = axis_range(values_ms.iter().copied(), false);
        let fences = TukeyFences::from_sorted(&stats::sorted(&finite(values_ms)));
        let mut chart = ChartBuilder::on(&root)
            .margin(8)
            .x_label_area_size(34)
            .y_label_area_size(50)
            .build_cartesian_2d(0f64..(n.max(2) - 1) as f64, lo..hi)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .axis_style(INK)
            .label_style(label_font())
            .axis_desc_style(label_font())
            .x_desc("timed call")
            .y_desc("latency (ms)")
            .x_labels(6)
            .y_labels(5)
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| fmt_tick(*v))
            .draw()?;
        if let Some(t) = trend {
            if t.warmup_calls > 0 {
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(0.0, lo), (t.warmup_calls as f64, hi)],
                    RGBColor(0xed, 0xc9, 0x48).mix(0.35).filled(),
                )))?;
            }
            if let Some(from) = t.slowdown_from {
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(from as f64, lo), ((n.max(2) - 1) as f64, hi)],
                    colour(3).mix(0.18).filled(),
                )))?;
            }
        }
        let points = min_max_buckets(values_ms, TIMELINE_BUCKETS);
        chart.draw_series(LineSeries::new(
            points
                .iter()
                .filter(|(_, v)| v.is_finite())
                .map(|&(i, v)| (i as f64, v)),
            colour(0).stroke_width(1),
        ))?;
        if let Some(t) = trend {
            let stride = (n / 150).max(1);
            let half = t.window / 2;
            let rolling: Vec<(f64, f64)> = (0..n)
                .step_by(stride)
                .map(|i| {
                    let a = i.saturating_sub(half);
                    let b = (i + half + 1).min(n);
                    (i as f64, stats::median(&values_ms[a..b]))
                })
                .collect();
            chart.draw_series(LineSeries::new(rolling, colour(1).stroke_width(2)))?;
        }
        chart.draw_series(
            values_ms
                .iter()
                .enumerate()
                .filter(|(_, v)| fences.is_outlier(**v))
                .take(MAX_MARKERS)
                .map(|(i, &v)| Circle::new((i as f64, v), 2, colour(3).filled())),
        )?;
        root.present()?;
        Ok(())
    })
}

/// One point of a line series, with an optional confidence interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Position on the x axis (a category's index for a categorical axis).
    pub x: f64,
    /// The value.
    pub y: f64,
    /// Lower end of the interval, drawn as a whisker.
    pub low: Option<f64>,
    /// Upper end of the interval.
    pub high: Option<f64>,
}

/// One line of a [`lines`] plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The legend's label.
    pub name: String,
    /// The points, drawn in order.
    pub points: Vec<Point>,
}

/// A metric against a parameter: one line per series, whiskers where points carry an interval.
/// `categories` names the x positions 0, 1, 2, … for a non-numeric parameter.
pub fn lines(
    x_label: &str,
    y_label: &str,
    series: &[Series],
    categories: Option<&[String]>,
) -> Markup {
    let all = || series.iter().flat_map(|s| s.points.iter());
    if all().next().is_none() {
        return Markup::default();
    }
    render(
        (560, 280),
        &format!("{y_label} against {x_label}"),
        |root| {
            let (x_lo, x_hi) = match categories {
                Some(c) => (-0.5, c.len() as f64 - 0.5),
                None => axis_range(all().map(|p| p.x), false),
            };
            let (_, y_hi) = axis_range(
                all().flat_map(|p| [Some(p.y), p.low, p.high]).flatten(),
                true,
            );
            let category_label = |v: &f64| -> String {
                match categories {
                    Some(c) => {
                        let r = v.round();
                        if (v - r).abs() < 1e-6 && r >= 0.0 {
                            c.get(r as usize).cloned().unwrap_or_default()
                        } else {
                            String::new()
                        }
                    }
                    None => fmt_tick(*v),
                }
            };
            let mut chart = ChartBuilder::on(&root)
                .margin(10)
                .x_label_area_size(36)
                .y_label_area_size(54)
                .build_cartesian_2d(x_lo..x_hi, 0f64..y_hi)?;
            chart
                .configure_mesh()
                .disable_mesh()
                .axis_style(INK)
                .label_style(label_font())
                .axis_desc_style(label_font())
                .x_desc(x_label)
                .y_desc(y_label)
                .x_labels(categories.map_or(8, |c| c.len() * 2 + 1))
                .y_labels(6)
                .x_label_formatter(&category_label)
                .y_label_formatter(&|v| fmt_tick(*v))
                .draw()?;
            for (i, s) in series.iter().enumerate() {
                let c = colour(i);
                let mut pts: Vec<&Point> = s.points.iter().filter(|p| p.y.is_finite()).collect();
                pts.sort_by(|a, b| a.x.total_cmp(&b.x));
                chart.draw_series(LineSeries::new(
                    pts.iter().map(|p| (p.x, p.y)),
                    c.stroke_width(2),
                ))?;
                chart.draw_series(pts.iter().map(|p| Circle::new((p.x, p.y), 3, c.filled())))?;
                let span = (x_hi - x_lo) * 0.008;
                for p in &pts {
                    if let (Some(l), Some(h)) = (p.low, p.high) {
                        chart.draw_series(std::iter::once(PathElement::new(
                            vec![(p.x, l), (p.x, h)],
                            c.stroke_width(1),
                        )))?;
                        for y in [l, h] {
                            chart.draw_series(std::iter::once(PathElement::new(
                                vec![(p.x - span, y), (p.x + span, y)],
                                c.stroke_width(1),
                            )))?;
                        }
                    }
                }
            }
            root.present()?;
            Ok(())
        },
    )
}

/// One bar with an optional confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bar {
    /// The bar's length.
    pub value: f64,
    /// Lower end of the interval, drawn as a whisker.
    pub low: Option<f64>,
    /// Upper end of the interval.
    pub high: Option<f64>,
}

/// One row of a grouped bar chart: a label and one optional bar per series.
#[derive(Debug, Clone, PartialEq)]
pub struct BarGroup {
    /// The group's label on the axis.
    pub label: String,
    /// One entry per series, in series order; `None` where the series has no value.
    pub bars: Vec<Option<Bar>>,
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max - 1).collect();
        out.push('…');
        out
    }
}

/// Horizontal bars side by side: one row per group, one colour per series, whiskers for intervals.
pub fn grouped_bars(value_label: &str, series: &[String], groups: &[BarGroup]) -> Markup {
    let values = || {
        groups
            .iter()
            .flat_map(|g| g.bars.iter().flatten())
            .flat_map(|b| [Some(b.value), b.high])
            .flatten()
    };
    if values().next().is_none() {
        return Markup::default();
    }
    let per_series = series.len().max(1);
    let row = (per_series as u32 * 11 + 8).max(18);
    let height = 70 + row * groups.len() as u32;
    render((900, height), &format!("{value_label} by case"), |root| {
        let (_, x_hi) = axis_range(values(), true);
        let g = groups.len() as f64;
        let mut chart = ChartBuilder::on(&root)
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(300)
            .build_cartesian_2d(0f64..x_hi, 0f64..g)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .axis_style(INK)
            .label_style(label_font())
            .axis_desc_style(label_font())
            .x_desc(value_label)
            .x_labels(8)
            .y_labels(0)
            .x_label_formatter(&|v| fmt_tick(*v))
            .draw()?;
        let band = 0.8 / per_series as f64;
        for (gi, group) in groups.iter().enumerate() {
            // Group 0 at the top.
            let top = g - gi as f64 - 0.1;
            let (px, py) = chart.backend_coord(&(0.0, g - gi as f64 - 0.5));
            root.draw(&Text::new(
                shorten(&group.label, 50),
                (px - 6, py),
                label_font().pos(Pos::new(HPos::Right, VPos::Center)),
            ))?;
            for (si, bar) in group.bars.iter().enumerate() {
                let Some(b) = bar else { continue };
                if !b.value.is_finite() {
                    continue;
                }
                let y1 = top - band * si as f64;
                let y0 = y1 - band * 0.85;
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(0.0, y0), (b.value, y1)],
                    colour(si).filled(),
                )))?;
                if let (Some(l), Some(h)) = (b.low, b.high) {
                    let mid = (y0 + y1) / 2.0;
                    chart.draw_series(std::iter::once(PathElement::new(
                        vec![(l, mid), (h, mid)],
                        INK.stroke_width(1),
                    )))?;
                }
            }
        }
        root.present()?;
        Ok(())
    })
}

/// The decades `[10^a, 10^b]` around the positive finite values, at least one decade wide.
fn decade_range(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    let (mut lo, mut hi) = (f64::INFINITY, 0f64);
    for v in values.into_iter().filter(|v| v.is_finite() && *v > 0.0) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return None;
    }
    let (a, mut b) = (lo.log10().floor(), hi.log10().ceil());
    if b <= a {
        b = a + 1.0;
    }
    Some((10f64.powf(a), 10f64.powf(b)))
}

/// One row per group, one point per series with its interval as a whisker, on a logarithmic value axis
/// labelled at every decade: values that differ by thousands of times (a 1 ms route next to a 6 s one)
/// stay readable side by side. Values that are not positive cannot be drawn on it and are left out.
pub fn interval_dots_log(value_label: &str, series: &[String], groups: &[BarGroup]) -> Markup {
    use plotters::coord::combinators::IntoLogRange;
    let values = groups
        .iter()
        .flat_map(|g| g.bars.iter().flatten())
        .flat_map(|b| [Some(b.value), b.low, b.high])
        .flatten();
    let Some((x_lo, x_hi)) = decade_range(values) else {
        return Markup::default();
    };
    let per_series = series.len().max(1);
    let row = (per_series as u32 * 11 + 8).max(18);
    let height = 70 + row * groups.len() as u32;
    render(
        (900, height),
        &format!("{value_label} by route, log scale"),
        |root| {
            let g = groups.len() as f64;
            let mut chart = ChartBuilder::on(&root)
                .margin(10)
                // Room for the last decade's label, centred on the axis end.
                .margin_right(30)
                .x_label_area_size(36)
                .y_label_area_size(300)
                .build_cartesian_2d((x_lo..x_hi).log_scale(), 0f64..g)?;
            chart
                .configure_mesh()
                .disable_y_mesh()
                .light_line_style(INK.mix(0.0))
                .bold_line_style(INK.mix(0.15))
                .axis_style(INK)
                .label_style(label_font())
                .axis_desc_style(label_font())
                .x_desc(format!("{value_label}, log scale"))
                .x_labels(12)
                .y_labels(0)
                .x_label_formatter(&|v| fmt_tick(*v))
                .draw()?;
            let band = 0.8 / per_series as f64;
            for (gi, group) in groups.iter().enumerate() {
                // Group 0 at the top.
                let top = g - gi as f64 - 0.1;
                let (px, py) = chart.backend_coord(&(x_lo, g - gi as f64 - 0.5));
                root.draw(&Text::new(
                    shorten(&group.label, 50),
                    (px - 6, py),
                    label_font().pos(Pos::new(HPos::Right, VPos::Center)),
                ))?;
                for (si, bar) in group.bars.iter().enumerate() {
                    let Some(b) = bar else { continue };
                    if !(b.value.is_finite() && b.value > 0.0) {
                        continue;
                    }
                    let mid = top - band * si as f64 - band * 0.425;
                    if let (Some(l), Some(h)) = (b.low, b.high)
                        && l > 0.0
                        && h.is_finite()
                    {
                        chart.draw_series(std::iter::once(PathElement::new(
                            vec![(l, mid), (h, mid)],
                            colour(si).stroke_width(2),
                        )))?;
                    }
                    chart.draw_series(std::iter::once(Circle::new(
                        (b.value, mid),
                        4,
                        colour(si).filled(),
                    )))?;
                }
            }
            root.present()?;
            Ok(())
        },
    )
}

/// One line of a [`forest`] plot: a ratio, its interval, and the light it earned.
#[derive(Debug, Clone, PartialEq)]
pub struct ForestRow {
    /// The row's label.
    pub label: String,
    /// The point estimate of the ratio.
    pub ratio: f64,
    /// Lower end of its interval.
    pub low: f64,
    /// Upper end of its interval.
    pub high: f64,
    /// The light, which colours the mark.
    pub light: Light,
    /// The interval reaches into another band: drawn as a hollow mark.
    pub uncertain: bool,
}

/// The band edges of a [`forest`] plot: green up to `green_max`, yellow up to `yellow_max`, red above.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ForestBands {
    /// Upper edge of the green band.
    pub green_max: f64,
    /// Upper edge of the yellow band.
    pub yellow_max: f64,
}

/// The colour of a light's mark and band (the palette's green, mustard and red: `.c2`, `.c5`, `.c3`).
pub fn light_colour(light: Light) -> RGBColor {
    colour(light.style().palette)
}

/// The legend swatch class of a light (same colours as [`light_colour`]).
pub fn light_swatch(light: Light) -> &'static str {
    light.style().css_class
}

/// Ratios a forest axis may label: the round numbers a reader expects on a ratio scale.
const RATIO_TICKS: [f64; 26] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 0.67, 0.75, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0,
    4.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0,
];

/// A row of the forest plot, in SVG user units.
const FOREST_ROW: u32 = 20;

/// Whether `row` can be drawn on a [`forest`]: a positive finite ratio inside a positive finite
/// interval (a logarithmic axis has no place for the rest).
pub fn forest_drawable(row: &ForestRow) -> bool {
    [row.ratio, row.low, row.high]
        .iter()
        .all(|v| v.is_finite() && *v > 0.0)
        && row.low <= row.ratio
        && row.ratio <= row.high
}

/// A forest plot: one line per row (top to bottom in order), its label on the left, its ratio as a dot
/// coloured by its light (hollow when uncertain), its interval as a whisker, and its numbers on the
/// right; behind them the green, yellow and red bands of `bands` and a line at 1. The ratio axis is
/// logarithmic (0.5 and 2 are equally far from 1), labelled at round ratios and the band edges. Rows
/// [`forest_drawable`] rejects are left out: the caller lists them with their reason.
pub fn forest(value_label: &str, rows: &[ForestRow], bands: ForestBands) -> Markup {
    use plotters::coord::combinators::IntoLogRange;
    let drawn: Vec<&ForestRow> = rows.iter().filter(|r| forest_drawable(r)).collect();
    if drawn.is_empty() {
        return Markup::default();
    }
    let edges = [bands.green_max, bands.yellow_max]
        .into_iter()
        .filter(|v| v.is_finite() && *v > 0.0);
    let lo = drawn
        .iter()
        .map(|r| r.low)
        .chain(edges.clone())
        .fold(1.0f64, f64::min)
        / 1.1;
    let hi = drawn
        .iter()
        .map(|r| r.high)
        .chain(edges)
        .fold(1.0f64, f64::max)
        * 1.15;
    let n = drawn.len();
    let height = 64 + FOREST_ROW * n as u32;
    render(
        (1100, height),
        &format!("{value_label} per row with its interval"),
        |root| {
            let g = n as f64;
            let mut chart = ChartBuilder::on(&root)
                .margin(10)
                .margin_right(150)
                .x_label_area_size(36)
                .y_label_area_size(380)
                .build_cartesian_2d((lo..hi).log_scale(), 0f64..g)?;
            // The axes by hand: plotters labels a log axis at its own key points, these ticks are ours.
            let (x0, y0) = chart.backend_coord(&(lo, 0.0));
            let (x1, y1) = chart.backend_coord(&(hi, g));
            root.draw(&PathElement::new(vec![(x0, y1), (x0, y0), (x1, y0)], INK))?;
            root.draw(&Text::new(
                format!("{value_label}, log scale"),
                ((x0 + x1) / 2, y0 + 24),
                label_font().pos(Pos::new(HPos::Center, VPos::Top)),
            ))?;
            // The bands, behind everything else.
            let band = |from: f64, to: f64, light: Light| {
                Rectangle::new(
                    [(from.max(lo), 0.0), (to.min(hi), g)],
                    light_colour(light).mix(0.16).filled(),
                )
            };
            let (green, yellow) = (
                bands.green_max.clamp(lo, hi),
                bands.yellow_max.clamp(lo, hi),
            );
            chart.draw_series([
                band(lo, green, Light::Green),
                band(green, yellow.max(green), Light::Yellow),
                band(yellow.max(green), hi, Light::Red),
            ])?;
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(1.0, 0.0), (1.0, g)],
                INK.mix(0.5).stroke_width(1),
            )))?;
            // Ticks: 1, then the band edges, then round ratios, each only where its label keeps clear of
            // the ones already placed (the bands show their edges either way; the legend names them).
            let px = |v: f64| chart.backend_coord(&(v, 0.0)).0;
            let mut ticks: Vec<f64> = Vec::new();
            let candidates = [1.0, bands.green_max, bands.yellow_max]
                .into_iter()
                .chain(RATIO_TICKS);
            for t in candidates.filter(|v| *v > lo && *v < hi) {
                if ticks.iter().all(|k| (px(*k) - px(t)).abs() >= 40) {
                    ticks.push(t);
                }
            }
            for t in ticks {
                let (x, y) = chart.backend_coord(&(t, 0.0));
                root.draw(&PathElement::new(vec![(x, y), (x, y + 5)], INK))?;
                root.draw(&Text::new(
                    fmt_tick(t),
                    (x, y + 7),
                    label_font().pos(Pos::new(HPos::Center, VPos::Top)),
                ))?;
            }
            for (i, row) in drawn.iter().enumerate() {
                // Row 0 at the top.
                let y = g - i as f64 - 0.5;
                let c = light_colour(row.light);
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(row.low, y), (row.high, y)],
                    c.stroke_width(2),
                )))?;
                let mark = if row.uncertain {
                    Circle::new((row.ratio, y), 5, c.stroke_width(2))
                } else {
                    Circle::new((row.ratio, y), 5, c.filled())
                };
                chart.draw_series(std::iter::once(mark))?;
                let (left, py) = chart.backend_coord(&(lo, y));
                root.draw(&Text::new(
                    shorten_middle(&row.label, 62),
                    (left - 8, py),
                    label_font().pos(Pos::new(HPos::Right, VPos::Center)),
                ))?;
                let (right, _) = chart.backend_coord(&(hi, y));
                root.draw(&Text::new(
                    format!(
                        "{} [{}, {}]",
                        fmt_ratio(row.ratio),
                        fmt_ratio(row.low),
                        fmt_ratio(row.high)
                    ),
                    (right + 8, py),
                    label_font().pos(Pos::new(HPos::Left, VPos::Center)),
                ))?;
            }
            root.present()?;
            Ok(())
        },
    )
}

/// A ratio with three decimals (the precision lights are decided at).
fn fmt_ratio(v: f64) -> String {
    format!("{v:.3}")
}

/// `s` cut to `max` characters by an ellipsis in the middle, so both the entry and the runtime at the
/// ends of a row id stay readable.
fn shorten_middle(s: &str, max: usize) -> String {
    let count = s.chars().count();
    if count <= max || max < 3 {
        return s.to_string();
    }
    let head = (max - 1) / 2;
    let tail = max - 1 - head;
    let mut out: String = s.chars().take(head).collect();
    out.push('…');
    out.extend(s.chars().skip(count - tail));
    out
}

/// A legend entry: CSS class of the swatch (`c0` … `c7`, `c-outlier`, `c-median`, `c-warmup`,
/// `c-throttle`) and its label.
pub fn legend(entries: &[(&str, &str)]) -> Markup {
    let mut m = Markup::trusted("<div class=\"legend\">");
    for (class, label) in entries {
        m.push_trusted("<span>");
        m.push(&el(
            "span",
            &[("class", &format!("swatch {class}"))],
            &Markup::default(),
        ));
        m.push(&text(label));
        m.push_trusted("</span>");
    }
    m.push_trusted("</div>");
    m
}

/// A plot in a captioned figure; `data-plot` names the kind for tests and styling.
pub fn figure(kind: &str, caption: &str, svg: &Markup, legend: Option<&Markup>) -> Markup {
    let mut body = el("figcaption", &[], &text(caption));
    if svg.is_empty() {
        body.push(&el("p", &[("class", "muted")], &text("nothing to plot")));
    } else {
        body.push(svg);
    }
    if let Some(l) = legend {
        body.push(l);
    }
    el("figure", &[("class", "plot"), ("data-plot", kind)], &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<f64> {
        (0..300)
            .map(|i| 10.0 + (i % 7) as f64 * 0.1)
            .chain([30.0])
            .collect()
    }

    #[test]
    fn per_case_plots_are_tidy_svg() {
        let v = sample();
        let h = histogram(&v);
        assert!(
            h.as_str().starts_with("<svg role=\"img\""),
            "{}",
            &h.as_str()[..80]
        );
        assert!(h.as_str().contains("<rect"));
        assert!(
            h.as_str().contains("currentColor"),
            "axis ink follows the theme"
        );
        assert!(!h.as_str().contains(INK_HEX) && !h.as_str().contains('\n'));
        let c = cdf(&v);
        assert!(c.as_str().contains("<polyline") && c.as_str().contains("p99"));
        let t = timeline(&v, Trend::analyze(&v).as_ref());
        assert_eq!(
            t.as_str().matches("<circle").count(),
            1,
            "the 30 ms call is the only outlier"
        );
        assert!(!histogram(&[5.0]).is_empty(), "one sample still plots");
        assert!(histogram(&[]).is_empty() && cdf(&[f64::NAN]).is_empty());
    }

    #[test]
    fn long_timelines_keep_their_spikes_but_not_every_point() {
        let mut v: Vec<f64> = (0..100_000).map(|i| 5.0 + (i % 10) as f64 * 0.01).collect();
        v[77_777] = 40.0;
        let reduced = min_max_buckets(&v, 500);
        assert!(reduced.len() <= 1000, "{}", reduced.len());
        assert!(reduced.contains(&(77_777, 40.0)), "the spike survives");
        assert!(
            reduced.windows(2).all(|w| w[0].0 < w[1].0),
            "call order kept"
        );
        let t = timeline(&v, None);
        assert!(t.as_str().len() < 40_000, "{} bytes", t.as_str().len());
    }

    #[test]
    fn interval_dots_use_a_log_axis_labelled_at_every_decade() {
        let dot = |value: f64, low: f64, high: f64| BarGroup {
            label: format!("route at {value} ms"),
            bars: vec![Some(Bar {
                value,
                low: Some(low),
                high: Some(high),
            })],
        };
        let svg = interval_dots_log(
            "p50 (ms)",
            &["search".into()],
            &[
                dot(1.1, 1.0, 1.3),
                dot(1.5, 1.4, 1.6),
                dot(5985.0, 5900.0, 6100.0),
            ],
        );
        let svg = svg.as_str();
        assert!(svg.contains("p50 (ms), log scale"), "{svg}");
        // Decades from 1 ms to 10 s, each labelled: a linear axis would label 0, 2000, 4000, ...
        for tick in [">1<", ">10<", ">100<", ">1000<", ">10000<"] {
            assert!(svg.contains(tick), "tick {tick} missing in {svg}");
        }
        assert!(!svg.contains(">2000<"));
        // Both fast routes get their own point, far from the axis origin.
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(interval_dots_log("p50 (ms)", &[], &[]).is_empty());
    }

    #[test]
    fn labels_in_bars_and_lines_are_escaped() {
        let probe = "<script>alert(1)</script>";
        let bars = grouped_bars(
            "p50 (ms)",
            &["tract".into(), "ort".into()],
            &[BarGroup {
                label: probe.into(),
                bars: vec![
                    Some(Bar {
                        value: 2.0,
                        low: Some(1.9),
                        high: Some(2.1),
                    }),
                    None,
                ],
            }],
        );
        assert!(!bars.as_str().contains("<script"), "{bars}");
        assert!(bars.as_str().contains("&lt;script&gt;"));
        let l = lines(
            "batch",
            "p50 ms",
            &[Series {
                name: "s".into(),
                points: vec![
                    Point {
                        x: 0.0,
                        y: 1.0,
                        low: Some(0.9),
                        high: Some(1.1),
                    },
                    Point {
                        x: 1.0,
                        y: 2.0,
                        low: None,
                        high: None,
                    },
                ],
            }],
            Some(&["1".to_string(), probe.to_string()]),
        );
        assert!(!l.as_str().contains("<script") && l.as_str().contains("&lt;script&gt;"));
    }

    #[test]
    fn a_forest_draws_one_mark_per_drawable_row_over_the_bands() {
        let row = |label: &str, ratio: f64, low: f64, high: f64, light, uncertain| ForestRow {
            label: label.into(),
            ratio,
            low,
            high,
            light,
            uncertain,
        };
        let rows = [
            row("a.green/x", 0.98, 0.95, 1.02, Light::Green, false),
            row("<script>b</script>", 1.18, 1.05, 1.3, Light::Yellow, true),
            row("c.red", 10.6, 3.9, 16.3, Light::Red, false),
            row("no interval", 1.2, f64::NAN, f64::NAN, Light::Yellow, true),
            row("zero", 0.0, 0.0, 0.0, Light::Green, true),
        ];
        let bands = ForestBands {
            green_max: 1.1,
            yellow_max: 1.25,
        };
        assert_eq!(rows.iter().filter(|r| forest_drawable(r)).count(), 3);
        let svg = forest("candidate / reference", &rows, bands);
        let svg = svg.as_str();
        assert_eq!(svg.matches("<circle").count(), 3, "{svg}");
        assert_eq!(svg.matches("<rect").count(), 3, "three bands: {svg}");
        assert!(svg.contains("&lt;script&gt;b") && !svg.contains("<script"));
        assert!(!svg.contains("no interval") && !svg.contains(">zero<"));
        for tick in [">1<", ">1.25<", ">10<"] {
            assert!(svg.contains(tick), "tick {tick} missing: {svg}");
        }
        assert!(svg.contains("10.600 [3.900, 16.300]"), "{svg}");
        assert!(forest("r", &rows[3..], bands).is_empty());
        assert_eq!(shorten_middle("abcdefghij", 5), "ab…ij");
    }

    #[test]
    fn polylines_lose_only_points_that_change_nothing() {
        let svg = r#"<polyline points="0,0 0,0 0,5 0,9 4,9 8,9 8,3 9,4 "/><text>a</text><polyline points="1,1 2,2"/>"#;
        assert_eq!(
            simplify_polylines(svg),
            r#"<polyline points="0,0 0,9 8,9 8,3 9,4"/><text>a</text><polyline points="1,1 2,2"/>"#
        );
        // A vertical line that turns back keeps its turning point.
        assert_eq!(
            simplify_polylines(r#"<p points="0,0 0,9 0,2"/>"#),
            r#"<p points="0,0 0,9 0,2"/>"#
        );
    }

    #[test]
    fn figures_say_when_there_is_nothing_to_plot() {
        let f = figure("histogram", "Latency <x>", &Markup::default(), None);
        assert!(f.as_str().contains("nothing to plot") && f.as_str().contains("Latency &lt;x&gt;"));
    }
}
