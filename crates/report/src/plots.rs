//! SVG plots drawn in Rust with plotters: no network, no JavaScript library.
//!
//! Colours are mid-tones that read on both the light and the dark page background.

use plotters::prelude::*;

const BAR: RGBColor = RGBColor(59, 130, 246);
const LINE: RGBColor = RGBColor(37, 99, 235);
const MARK: RGBColor = RGBColor(220, 38, 38);
const INK: RGBColor = RGBColor(128, 128, 128);

fn axis_range(values: &[f64]) -> (f64, f64) {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() || !hi.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.05).max(hi.abs() * 1e-3).max(1e-9);
    ((lo - pad).max(0.0), hi + pad)
}

/// Histogram of latencies (ms) in up to 40 equal-width bins.
pub fn histogram_svg(values_ms: &[f64], width: u32, height: u32) -> String {
    let mut svg = String::new();
    let drawn = draw_histogram(&mut svg, values_ms, width, height);
    if drawn.is_err() { String::new() } else { svg }
}

fn draw_histogram(
    svg: &mut String,
    values: &[f64],
    width: u32,
    height: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    let (lo, hi) = axis_range(values);
    let bins = ((values.len() as f64).sqrt().ceil() as usize).clamp(5, 40);
    let step = (hi - lo) / bins as f64;
    let mut counts = vec![0u32; bins];
    for &v in values {
        let i = (((v - lo) / step) as usize).min(bins - 1);
        counts[i] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(1).max(1);
    let root = SVGBackend::with_string(svg, (width, height)).into_drawing_area();
    let label = ("sans-serif", 12).into_font().color(&INK);
    let mut chart = ChartBuilder::on(&root)
        .margin(10)
        .x_label_area_size(32)
        .y_label_area_size(44)
        .build_cartesian_2d(lo..hi, 0u32..(top + top / 10 + 1))?;
    chart
        .configure_mesh()
        .disable_mesh()
        .axis_style(INK)
        .label_style(label.clone())
        .axis_desc_style(label)
        .x_desc("latency (ms)")
        .y_desc("calls")
        .draw()?;
    chart.draw_series(counts.iter().enumerate().map(|(i, &c)| {
        let x0 = lo + step * i as f64;
        Rectangle::new([(x0, 0), (x0 + step * 0.92, c)], BAR.filled())
    }))?;
    root.present()?;
    Ok(())
}

/// Latency of each timed call in order, with Tukey outliers marked (warm-up drift, throttling).
pub fn timeline_svg(values_ms: &[f64], width: u32, height: u32) -> String {
    let mut svg = String::new();
    let drawn = draw_timeline(&mut svg, values_ms, width, height);
    if drawn.is_err() { String::new() } else { svg }
}

fn draw_timeline(
    svg: &mut String,
    values: &[f64],
    width: u32,
    height: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    let (lo, hi) = axis_range(values);
    let fences = trtmc_core::stats::TukeyFences::from_sorted(&trtmc_core::stats::sorted(values));
    let root = SVGBackend::with_string(svg, (width, height)).into_drawing_area();
    let label = ("sans-serif", 12).into_font().color(&INK);
    let mut chart = ChartBuilder::on(&root)
        .margin(10)
        .x_label_area_size(32)
        .y_label_area_size(52)
        .build_cartesian_2d(0usize..values.len().max(2), lo..hi)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .axis_style(INK)
        .label_style(label.clone())
        .axis_desc_style(label)
        .x_desc("timed call")
        .y_desc("latency (ms)")
        .draw()?;
    chart.draw_series(LineSeries::new(
        values.iter().enumerate().map(|(i, &v)| (i, v)),
        LINE.stroke_width(1),
    ))?;
    chart.draw_series(
        values
            .iter()
            .enumerate()
            .filter(|(_, v)| fences.is_outlier(**v))
            .map(|(i, &v)| Circle::new((i, v), 3, MARK.filled())),
    )?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_are_svg_documents() {
        let values: Vec<f64> = (0..200)
            .map(|i| 10.0 + (i % 7) as f64 * 0.1)
            .chain([30.0])
            .collect();
        let h = histogram_svg(&values, 400, 200);
        assert!(
            h.starts_with("<svg") && h.contains("<rect"),
            "{}",
            &h[..h.len().min(200)]
        );
        let t = timeline_svg(&values, 400, 200);
        assert!(t.contains("<polyline") || t.contains("<path"));
        assert!(t.contains("<circle"), "the 30 ms outlier is marked");
        assert!(
            !histogram_svg(&[5.0], 400, 200).is_empty(),
            "one sample still plots"
        );
    }
}
