//! The figures documents carry: a distribution summary and a confidence interval.

use serde::{Deserialize, Serialize};

/// Distribution summary of one set of samples, in the samples' unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// How many samples.
    pub count: usize,
    /// The smallest sample.
    pub min: f64,
    /// The arithmetic mean.
    pub mean: f64,
    /// The median (percentiles are type 7, `trtmc_core::stats`).
    pub p50: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// The 95th percentile.
    pub p95: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The largest sample.
    pub max: f64,
    /// The sample standard deviation (n - 1).
    pub std_dev: f64,
    /// Coefficient of variation: std_dev / mean (0 when the mean is 0).
    pub cv: f64,
}

/// A two-sided confidence interval around a point estimate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// The point estimate.
    pub estimate: f64,
    /// The lower bound.
    pub low: f64,
    /// The upper bound.
    pub high: f64,
    /// Confidence level, e.g. 0.95.
    pub confidence: f64,
}

impl Interval {
    /// Whether `value` lies within the bounds (inclusive).
    pub fn contains(&self, value: f64) -> bool {
        self.low <= value && value <= self.high
    }
}

/// Rounds below which no order-statistic interval reaches 95 % (6 rounds: [min, max] covers 96.9 %);
/// `trtmc_core::intervals` computes the intervals, the matrix thresholds default to it.
pub const MIN_ROUNDS: usize = 6;
