//! The performance summary trtexec prints after a timed run, in every format it has had.
//!
//! * 7.x: a block — `Host latency` / `min: X ms (end to end Y ms)` / ... / `throughput: X qps` /
//!   `walltime: X s` / (7.1+: `Enqueue Time` / `min: ...`) / `GPU Compute` / `min: X ms` / ... /
//!   `total compute time: X s`.
//! * 8.0–8.2: `=== Performance summary ===`, one line per statistic with a single
//!   `percentile(99%)`, plus an `End-to-End Host Latency:` line.
//! * 8.4: the same without the End-to-End line.
//! * 8.6–11.1: several percentiles (`--percentile=90,95,99`). After an accuracy check 11.1 leaves
//!   the log stream in fixed notation, so `Throughput: 15590.511719 qps` and
//!   `Total Host Walltime: 3.000158 s` have six decimals while the statistics do not.
//!
//! Warnings (`[W] * ...`) right after the summary are kept as [`SummaryWarning`]s.

use serde::{Deserialize, Serialize};

/// Which layout the summary was printed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SummaryForm {
    /// TensorRT 7.x block form.
    Block,
    /// TensorRT 8.0+ `=== Performance summary ===` lines.
    Lines,
}

/// One `percentile(P%) = X ms` value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentile {
    /// P, in percent (99 for `percentile(99%)`).
    pub percent: f64,
    /// The value in ms.
    pub ms: f64,
}

/// One statistic line (`Latency: min = ... ms, max = ..., mean = ..., median = ..., percentile(..)`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatLine {
    /// Minimum, ms.
    pub min_ms: f64,
    /// Maximum, ms.
    pub max_ms: f64,
    /// Mean, ms (7.x prints no mean for Enqueue Time).
    pub mean_ms: Option<f64>,
    /// Median, ms.
    pub median_ms: f64,
    /// The percentiles in printed order.
    pub percentiles: Vec<Percentile>,
}

impl StatLine {
    /// The value of `percentile(percent%)`, if printed.
    pub fn percentile(&self, percent: f64) -> Option<f64> {
        self.percentiles
            .iter()
            .find(|p| p.percent == percent)
            .map(|p| p.ms)
    }
}

/// A warning trtexec printed under the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum SummaryWarning {
    /// Median enqueue time > 0.8 × median GPU compute time: the host cannot keep the GPU busy.
    EnqueueBound,
    /// Median host-to-device time ≥ median GPU compute time.
    H2dBound,
    /// Median device-to-host time ≥ median GPU compute time.
    D2hBound,
    /// GPU compute time varies: coefficient of variance above 2.5 %.
    Unstable {
        /// The coefficient of variance in percent.
        coefficient_of_variance_percent: f64,
    },
    /// Several inference streams ran in parallel: per-query latencies are not meaningful.
    MultipleStreams,
    /// Any other `* ...` warning, verbatim.
    Other {
        /// The warning text.
        text: String,
    },
}

impl SummaryWarning {
    pub(crate) fn classify(text: &str) -> Self {
        if text.contains("bound by Enqueue Time") {
            return SummaryWarning::EnqueueBound;
        }
        if text.contains("bound by host-to-device") {
            return SummaryWarning::H2dBound;
        }
        if text.contains("bound by device-to-host") {
            return SummaryWarning::D2hBound;
        }
        if text.contains("Multiple inference streams") {
            return SummaryWarning::MultipleStreams;
        }
        if let Some(rest) = text
            .split_once("coefficient of variance = ")
            .map(|(_, r)| r)
        {
            let number = rest.trim_end_matches(['.', '%', ' ']);
            if let Ok(cov) = number.parse::<f64>() {
                return SummaryWarning::Unstable {
                    coefficient_of_variance_percent: cov,
                };
            }
        }
        SummaryWarning::Other {
            text: text.to_string(),
        }
    }
}

/// The performance summary of one timed run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerformanceSummary {
    /// Which layout it was printed in.
    pub form: SummaryForm,
    /// Queries per second over the host walltime.
    pub throughput_qps: f64,
    /// Host latency per query = H2D + GPU compute + D2H.
    pub latency: StatLine,
    /// 7.x–8.2 end-to-end host latency (includes waiting for the previous query).
    pub end_to_end: Option<StatLine>,
    /// Host time to enqueue a query.
    pub enqueue: Option<StatLine>,
    /// Host-to-device copies per query.
    pub h2d: Option<StatLine>,
    /// GPU time executing the kernels of a query.
    pub gpu_compute: StatLine,
    /// Device-to-host copies per query.
    pub d2h: Option<StatLine>,
    /// From the first timed enqueue to the last completion, s.
    pub total_host_walltime_s: Option<f64>,
    /// Sum of GPU compute over all timed queries, s.
    pub total_gpu_compute_s: Option<f64>,
    /// Warnings printed under the summary.
    pub warnings: Vec<SummaryWarning>,
}

/// Collects a summary line by line; `finish` says whether it is complete.
#[derive(Debug, Default)]
pub(crate) struct SummaryBuilder {
    pub form: Option<SummaryForm>,
    pub throughput_qps: Option<f64>,
    pub latency: Option<StatLine>,
    pub end_to_end: Option<StatLine>,
    pub enqueue: Option<StatLine>,
    pub h2d: Option<StatLine>,
    pub gpu_compute: Option<StatLine>,
    pub d2h: Option<StatLine>,
    pub total_host_walltime_s: Option<f64>,
    pub total_gpu_compute_s: Option<f64>,
    pub warnings: Vec<SummaryWarning>,
    /// 7.x block: which section the `min:`/`max:` lines belong to.
    pub block_section: BlockSection,
    /// 7.x block: partial statistics of the current sections.
    pub block_latency: PartialStat,
    pub block_end_to_end: PartialStat,
    pub block_enqueue: PartialStat,
    pub block_gpu: PartialStat,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockSection {
    #[default]
    Latency,
    Enqueue,
    Gpu,
}

#[derive(Debug, Default)]
pub(crate) struct PartialStat {
    min: Option<f64>,
    max: Option<f64>,
    mean: Option<f64>,
    median: Option<f64>,
    percentiles: Vec<Percentile>,
}

impl PartialStat {
    fn finish(self) -> Option<StatLine> {
        Some(StatLine {
            min_ms: self.min?,
            max_ms: self.max?,
            mean_ms: self.mean,
            median_ms: self.median?,
            percentiles: self.percentiles,
        })
    }

    fn is_empty(&self) -> bool {
        self.min.is_none() && self.max.is_none() && self.median.is_none()
    }
}

impl SummaryBuilder {
    pub fn lines() -> Self {
        Self {
            form: Some(SummaryForm::Lines),
            ..Self::default()
        }
    }

    pub fn block() -> Self {
        Self {
            form: Some(SummaryForm::Block),
            ..Self::default()
        }
    }

    /// Feeds one info message of the 8.0+ form. Returns false when the line is not part of it.
    pub fn feed_line(&mut self, message: &str) -> bool {
        if let Some(rest) = message.strip_prefix("Throughput:") {
            self.throughput_qps = number_with_unit(rest, "qps");
            return true;
        }
        if let Some(rest) = message.strip_prefix("Total Host Walltime:") {
            self.total_host_walltime_s = number_with_unit(rest, "s");
            return true;
        }
        if let Some(rest) = message.strip_prefix("Total GPU Compute Time:") {
            self.total_gpu_compute_s = number_with_unit(rest, "s");
            return true;
        }
        let Some((name, body)) = message.split_once(": ") else {
            return false;
        };
        if !body.trim_start().starts_with("min =") {
            return false;
        }
        let stat = parse_stat_body(body);
        match name.trim() {
            "Latency" => self.latency = stat,
            "End-to-End Host Latency" => self.end_to_end = stat,
            "Enqueue Time" => self.enqueue = stat,
            "H2D Latency" => self.h2d = stat,
            "GPU Compute Time" => self.gpu_compute = stat,
            "D2H Latency" => self.d2h = stat,
            _ => {}
        }
        true
    }

    /// Feeds one info message of the 7.x block form. Returns false when it is not part of it.
    pub fn feed_block(&mut self, message: &str) -> bool {
        let message = message.trim();
        match message {
            "Host latency" | "Host Latency" => {
                self.block_section = BlockSection::Latency;
                return true;
            }
            "Enqueue Time" => {
                self.block_section = BlockSection::Enqueue;
                return true;
            }
            "GPU Compute" => {
                self.block_section = BlockSection::Gpu;
                return true;
            }
            _ => {}
        }
        let Some((key, value)) = message.split_once(": ") else {
            return false;
        };
        match key {
            "throughput" => {
                self.throughput_qps = number_with_unit(value, "qps");
                return true;
            }
            "walltime" => {
                self.total_host_walltime_s = number_with_unit(value, "s");
                return true;
            }
            "total compute time" => {
                self.total_gpu_compute_s = number_with_unit(value, "s");
                return true;
            }
            "min" | "max" | "mean" | "median" | "percentile" => {}
            _ => return false,
        }
        // `X ms (end to end Y ms)` or `X ms at P% (end to end Y ms at P%)` or `X ms at P%`.
        let (main, end_to_end) = match value.split_once('(') {
            Some((main, paren)) => (main, Some(paren.trim_end_matches(')'))),
            None => (value, None),
        };
        let Some((main_ms, main_percent)) = block_value(main) else {
            return false;
        };
        let e2e = end_to_end.and_then(|text| block_value(text.trim_start_matches("end to end ")));
        let (target, e2e_target) = match self.block_section {
            BlockSection::Latency => (&mut self.block_latency, Some(&mut self.block_end_to_end)),
            BlockSection::Enqueue => (&mut self.block_enqueue, None),
            BlockSection::Gpu => (&mut self.block_gpu, None),
        };
        set_partial(target, key, main_ms, main_percent);
        if let (Some(e2e_target), Some((ms, percent))) = (e2e_target, e2e) {
            set_partial(e2e_target, key, ms, percent);
        }
        true
    }

    /// True once the line that closes a 7.x block (`total compute time`) was seen.
    pub fn block_complete(&self) -> bool {
        self.form == Some(SummaryForm::Block) && self.total_gpu_compute_s.is_some()
    }

    pub fn push_warning(&mut self, text: &str) {
        self.warnings.push(SummaryWarning::classify(text));
    }

    /// The summary, or what is missing from it.
    pub fn finish(mut self) -> Result<PerformanceSummary, IncompleteSummary> {
        let form = self.form.unwrap_or(SummaryForm::Lines);
        if form == SummaryForm::Block {
            self.latency = std::mem::take(&mut self.block_latency).finish();
            let e2e = std::mem::take(&mut self.block_end_to_end);
            if !e2e.is_empty() {
                self.end_to_end = e2e.finish();
            }
            let enqueue = std::mem::take(&mut self.block_enqueue);
            if !enqueue.is_empty() {
                self.enqueue = enqueue.finish();
            }
            self.gpu_compute = std::mem::take(&mut self.block_gpu).finish();
        }
        let mut missing = Vec::new();
        if self.throughput_qps.is_none() {
            missing.push("throughput");
        }
        if self.latency.is_none() {
            missing.push("latency statistics");
        }
        if self.gpu_compute.is_none() {
            missing.push("GPU compute statistics");
        }
        match (self.throughput_qps, self.latency, self.gpu_compute) {
            (Some(throughput_qps), Some(latency), Some(gpu_compute)) => Ok(PerformanceSummary {
                form,
                throughput_qps,
                latency,
                end_to_end: self.end_to_end,
                enqueue: self.enqueue,
                h2d: self.h2d,
                gpu_compute,
                d2h: self.d2h,
                total_host_walltime_s: self.total_host_walltime_s,
                total_gpu_compute_s: self.total_gpu_compute_s,
                warnings: self.warnings,
            }),
            _ => Err(IncompleteSummary { missing }),
        }
    }
}

/// A performance summary without one of the parts every summary has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the performance summary is incomplete (no readable {})", missing.join(", "))]
pub struct IncompleteSummary {
    /// What was not found: `throughput`, `latency statistics`, `GPU compute statistics`.
    pub missing: Vec<&'static str>,
}

fn set_partial(target: &mut PartialStat, key: &str, ms: f64, percent: Option<f64>) {
    match key {
        "min" => target.min = Some(ms),
        "max" => target.max = Some(ms),
        "mean" => target.mean = Some(ms),
        "median" => target.median = Some(ms),
        "percentile" => {
            if let Some(percent) = percent {
                target.percentiles.push(Percentile { percent, ms });
            }
        }
        _ => {}
    }
}

/// `0.5 ms` or `0.5 ms at 99%` → (0.5, Some(99)).
fn block_value(text: &str) -> Option<(f64, Option<f64>)> {
    let text = text.trim();
    let (value, percent) = match text.split_once(" at ") {
        Some((value, percent)) => (value, Some(percent)),
        None => (text, None),
    };
    let ms = number_with_unit(value, "ms")?;
    let percent = match percent {
        Some(p) => Some(p.trim().trim_end_matches('%').parse().ok()?),
        None => None,
    };
    Some((ms, percent))
}

/// `" 15374.3 qps"` with unit `qps` → 15374.3.
pub(crate) fn number_with_unit(text: &str, unit: &str) -> Option<f64> {
    let text = text.trim().trim_end_matches('.');
    let number = text.strip_suffix(unit)?.trim_end();
    number.parse().ok()
}

/// `min = 1 ms, max = 2 ms, mean = 1.5 ms, median = 1.5 ms, percentile(99%) = 2 ms`.
fn parse_stat_body(body: &str) -> Option<StatLine> {
    let mut stat = PartialStat::default();
    for item in body.split(", ") {
        let (key, value) = item.split_once(" = ")?;
        let ms = number_with_unit(value, "ms")?;
        let key = key.trim();
        if let Some(percent) = key
            .strip_prefix("percentile(")
            .and_then(|rest| rest.strip_suffix("%)"))
        {
            stat.percentiles.push(Percentile {
                percent: percent.parse().ok()?,
                ms,
            });
        } else {
            set_partial(&mut stat, key, ms, None);
        }
    }
    stat.mean?;
    stat.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_body_with_several_percentiles() {
        let stat = parse_stat_body(
            "min = 0.0410156 ms, max = 0.14917 ms, mean = 0.0441053 ms, median = 0.0440674 ms, \
             percentile(90%) = 0.0450439 ms, percentile(99.9%) = 0.0512695 ms",
        )
        .expect("parses");
        assert_eq!(stat.min_ms, 0.0410156);
        assert_eq!(stat.max_ms, 0.14917);
        assert_eq!(stat.mean_ms, Some(0.0441053));
        assert_eq!(stat.median_ms, 0.0440674);
        assert_eq!(stat.percentile(90.0), Some(0.0450439));
        assert_eq!(stat.percentile(99.9), Some(0.0512695));
        assert_eq!(stat.percentile(95.0), None);
    }

    #[test]
    fn stat_body_rejects_garbage() {
        assert!(parse_stat_body("min = x ms").is_none());
        assert!(parse_stat_body("min = 1 ms, max = 2 ms, median = 1 ms").is_none());
        assert!(parse_stat_body("").is_none());
    }

    #[test]
    fn warnings_are_classified() {
        assert_eq!(
            SummaryWarning::classify(
                "* GPU compute time is unstable, with coefficient of variance = 6.58751%."
            ),
            SummaryWarning::Unstable {
                coefficient_of_variance_percent: 6.58751
            }
        );
        assert_eq!(
            SummaryWarning::classify(
                "* Throughput may be bound by Enqueue Time rather than GPU Compute and the GPU may be under-utilized."
            ),
            SummaryWarning::EnqueueBound
        );
        assert!(matches!(
            SummaryWarning::classify("* something new"),
            SummaryWarning::Other { .. }
        ));
    }

    #[test]
    fn block_value_reads_percentiles() {
        assert_eq!(block_value("0.5 ms at 99%"), Some((0.5, Some(99.0))));
        assert_eq!(block_value("0.5 ms "), Some((0.5, None)));
        assert_eq!(block_value("ms"), None);
    }
}
