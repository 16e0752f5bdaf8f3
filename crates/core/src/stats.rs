//! Statistics over timing samples.
//!
//! Percentiles use linear interpolation between the two closest ranks (Hyndman & Fan type 7, NumPy's
//! default): for `n` sorted samples, percentile `p` sits at rank `h = (n - 1) * p / 100`, and the value is
//! `x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)])`. So p50 of an even count is the mean of the
//! two middle samples, p0 is the minimum and p100 the maximum. The method name is recorded in every result as
//! [`PERCENTILE_METHOD`].
//!
//! `analyze` summarizes trtexec's own per-iteration times (`--exportTimes`) by the nearest-rank method
//! instead ([`percentile_nearest_rank_sorted`], [`NEAREST_RANK_METHOD`]): always an observed value, as
//! trtexec's printed percentiles are. Both methods live here and nowhere else.

use serde::{Deserialize, Serialize};

pub use trtmc_metadata::figures::{Interval, Summary};
use trtmc_metadata::tune_summary::Objective;

/// The cost of samples under a tuning objective. The objective is a value of the tuning summary
/// (`trtmc_metadata`), the statistics behind it live here.
pub trait ObjectiveCost {
    /// The cost of samples in ms: lower is better for every objective.
    fn cost(self, samples: &[f64]) -> f64;
}

impl ObjectiveCost for Objective {
    fn cost(self, samples: &[f64]) -> f64 {
        if samples.is_empty() {
            return f64::NAN;
        }
        match self {
            Objective::P50 => median(samples),
            Objective::P95 => percentile_sorted(&sorted(samples), 95.0),
            Objective::Mean | Objective::Throughput => mean(samples),
        }
    }
}

/// The percentile method name written into results.
pub const PERCENTILE_METHOD: &str = "linear_interpolation_type7";

/// Percentile `p` (0..=100) of already sorted, non-empty samples.
pub fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    debug_assert!(!sorted.is_empty());
    let n = sorted.len();
    if n == 1 {
        return sorted[0];
    }
    let rank = (n - 1) as f64 * (p.clamp(0.0, 100.0) / 100.0);
    let lower = rank.floor() as usize;
    let upper = (lower + 1).min(n - 1);
    let fraction = rank - lower as f64;
    sorted[lower] + fraction * (sorted[upper] - sorted[lower])
}

/// The name of the nearest-rank method (`analyze`'s per-iteration time statistics).
pub const NEAREST_RANK_METHOD: &str = "nearest_rank";

/// Percentile `p` (0..=100) of already sorted, non-empty samples by the nearest-rank method: the sample at
/// rank `ceil(p / 100 * n)` (1-based, at least 1), so p90 of 1..=100 is 90 and p99 is 99.
pub fn percentile_nearest_rank_sorted(sorted: &[f64], p: f64) -> f64 {
    debug_assert!(!sorted.is_empty());
    let n = sorted.len();
    let rank = (p.clamp(0.0, 100.0) / 100.0 * n as f64).ceil() as usize;
    sorted[rank.clamp(1, n) - 1]
}

/// A sorted copy of `samples` (NaN sorts last; callers reject non-finite samples before this).
pub fn sorted(samples: &[f64]) -> Vec<f64> {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// Arithmetic mean of `samples` (NaN when there are none).
pub fn mean(samples: &[f64]) -> f64 {
    samples.iter().sum::<f64>() / samples.len() as f64
}

/// Whether `n` samples reach the `p`-th percentile (0–100) at all: at least one sample must lie beyond
/// it, n × (1 − p/100) ≥ 1; below that the type-7 estimate interpolates between the slowest samples.
pub fn percentile_supported(p: f64, n: usize) -> bool {
    n as f64 * (1.0 - p / 100.0) >= 1.0 - 1e-9
}

/// The spread of `samples` around their median, robust to a few outliers: 1.4826 × the median absolute
/// deviation over the median (equal to the CV for normal data; a handful of scheduler hiccups among
/// sub-millisecond calls leave it alone while they triple the CV). 0 for an empty or zero median.
pub fn robust_cv(samples: &[f64]) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let m = median(samples);
    if m == 0.0 {
        return 0.0;
    }
    let deviations: Vec<f64> = samples.iter().map(|x| (x - m).abs()).collect();
    1.4826 * median(&deviations) / m
}

/// Median of `samples` (type-7 interpolation between the middle two for an even count); `samples` must not be empty.
pub fn median(samples: &[f64]) -> f64 {
    percentile_sorted(&sorted(samples), 50.0)
}

/// Sample standard deviation (n - 1 denominator); 0 for fewer than two samples.
pub fn std_dev(samples: &[f64]) -> f64 {
    if samples.len() < 2 {
        return 0.0;
    }
    let m = mean(samples);
    let var = samples.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (samples.len() - 1) as f64;
    var.sqrt()
}

/// Summarize samples; `None` when there are none.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    if samples.is_empty() {
        return None;
    }
    let s = sorted(samples);
    let m = mean(&s);
    let sd = std_dev(&s);
    Some(Summary {
        count: s.len(),
        min: s[0],
        mean: m,
        p50: percentile_sorted(&s, 50.0),
        p90: percentile_sorted(&s, 90.0),
        p95: percentile_sorted(&s, 95.0),
        p99: percentile_sorted(&s, 99.0),
        max: s[s.len() - 1],
        std_dev: sd,
        cv: if m != 0.0 { sd / m } else { 0.0 },
    })
}

/// Tukey's fences over sorted samples: inner at 1.5 IQR, outer at 3 IQR beyond the quartiles.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TukeyFences {
    /// First quartile (25th percentile, type 7).
    pub q1: f64,
    /// Third quartile (75th percentile, type 7).
    pub q3: f64,
    /// `q1 - 1.5 IQR`: values below it are mild outliers.
    pub lower_inner: f64,
    /// `q3 + 1.5 IQR`: values above it are mild outliers.
    pub upper_inner: f64,
    /// `q1 - 3 IQR`: values below it are extreme outliers.
    pub lower_outer: f64,
    /// `q3 + 3 IQR`: values above it are extreme outliers.
    pub upper_outer: f64,
}

impl TukeyFences {
    /// The fences of `sorted`, which must be sorted ascending and not empty.
    pub fn from_sorted(sorted: &[f64]) -> Self {
        let q1 = percentile_sorted(sorted, 25.0);
        let q3 = percentile_sorted(sorted, 75.0);
        let iqr = q3 - q1;
        Self {
            q1,
            q3,
            lower_inner: q1 - 1.5 * iqr,
            upper_inner: q3 + 1.5 * iqr,
            lower_outer: q1 - 3.0 * iqr,
            upper_outer: q3 + 3.0 * iqr,
        }
    }

    /// Whether `x` lies outside the inner fences (a mild or severe outlier).
    pub fn is_outlier(&self, x: f64) -> bool {
        x < self.lower_inner || x > self.upper_inner
    }
}

/// Two-sided Mann-Whitney U test with tie correction, normal approximation (fine for n >= 8 per side).
/// Returns the p-value that `a` and `b` come from the same distribution; `None` for empty inputs.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> Option<f64> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    let (mut rank_sum_a, mut tie_term) = (0.0, 0.0);
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let average_rank = (i + j) as f64 / 2.0 + 1.0;
        let ties = (j - i + 1) as f64;
        tie_term += ties * ties * ties - ties;
        rank_sum_a += all[i..=j].iter().filter(|e| e.1).count() as f64 * average_rank;
        i = j + 1;
    }
    let (n1f, n2f, nf) = (n1 as f64, n2 as f64, n as f64);
    let u = rank_sum_a - n1f * (n1f + 1.0) / 2.0;
    let mean_u = n1f * n2f / 2.0;
    let var_u = n1f * n2f / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0)));
    if var_u <= 0.0 {
        return Some(1.0);
    }
    // Continuity correction towards the mean.
    let z = ((u - mean_u).abs() - 0.5).max(0.0) / var_u.sqrt();
    Some((2.0 * (1.0 - standard_normal_cdf(z))).clamp(0.0, 1.0))
}

/// Standard normal CDF through the complementary error function (Abramowitz-Stegun 7.1.26 is too coarse
/// in the tails; this uses the W. J. Cody-style rational approximation via erfc).
pub fn standard_normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// Complementary error function, Numerical Recipes' Chebyshev fit (fractional error < 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tail_percentiles_need_one_sample_beyond_them() {
        assert!(percentile_supported(99.0, 100));
        assert!(!percentile_supported(99.0, 99));
        assert!(percentile_supported(90.0, 10));
        assert!(!percentile_supported(95.0, 19));
        assert!(percentile_supported(50.0, 2));
    }

    #[test]
    fn robust_cv_ignores_a_few_hiccups_that_inflate_the_cv() {
        // 0.1 ms calls ±2 %, three of them hit by a 2 ms interruption.
        let mut calls: Vec<f64> = (0..300)
            .map(|i| 0.1 * (1.0 + 0.02 * ((i % 5) as f64 - 2.0) / 2.0))
            .collect();
        for i in [50, 150, 250] {
            calls[i] = 2.0;
        }
        let plain = summarize(&calls).expect("summary").cv;
        let robust = robust_cv(&calls);
        assert!(plain > 1.0, "the CV explodes: {plain}");
        assert!(robust < 0.03, "the median's spread stays small: {robust}");
        assert_eq!(robust_cv(&[]), 0.0);
    }

    use super::*;

    #[test]
    fn percentiles_interpolate_between_ranks() {
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile_sorted(&s, 50.0), 2.5);
        assert_eq!(percentile_sorted(&s, 0.0), 1.0);
        assert_eq!(percentile_sorted(&s, 100.0), 4.0);
        // rank = 3 * 0.9 = 2.7 -> 3 + 0.7 * (4 - 3)
        assert!((percentile_sorted(&s, 90.0) - 3.7).abs() < 1e-12);
        assert_eq!(percentile_sorted(&[7.0], 99.0), 7.0);
    }

    #[test]
    fn nearest_rank_percentiles_are_observed_samples() {
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile_nearest_rank_sorted(&hundred, 90.0), 90.0);
        assert_eq!(percentile_nearest_rank_sorted(&hundred, 99.0), 99.0);
        assert!(
            (percentile_sorted(&hundred, 99.0) - 99.01).abs() < 1e-9,
            "type 7 interpolates"
        );
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile_nearest_rank_sorted(&s, 0.0), 1.0);
        assert_eq!(percentile_nearest_rank_sorted(&s, 50.0), 2.0);
        assert_eq!(percentile_nearest_rank_sorted(&s, 90.0), 4.0);
        assert_eq!(percentile_nearest_rank_sorted(&[7.0], 1.0), 7.0);
    }

    #[test]
    fn summary_matches_hand_computation() {
        let s = summarize(&[3.0, 1.0, 2.0, 10.0]).expect("non-empty");
        assert_eq!(
            (s.count, s.min, s.max, s.mean, s.p50),
            (4, 1.0, 10.0, 4.0, 2.5)
        );
        let sd = ((9.0 + 4.0 + 1.0 + 36.0) / 3.0f64).sqrt();
        assert!((s.std_dev - sd).abs() < 1e-12);
        assert!((s.cv - sd / 4.0).abs() < 1e-12);
        assert!(summarize(&[]).is_none());
    }

    #[test]
    fn tukey_flags_far_points_only() {
        let mut v: Vec<f64> = (0..100).map(|i| 50.0 + (i % 10) as f64).collect();
        v.push(500.0);
        let f = TukeyFences::from_sorted(&sorted(&v));
        assert!(f.is_outlier(500.0));
        assert!(!f.is_outlier(55.0));
    }

    #[test]
    fn mann_whitney_separates_shifted_samples() {
        let a: Vec<f64> = (0..40).map(|i| (i % 10) as f64).collect();
        let b: Vec<f64> = a.iter().map(|x| x + 20.0).collect();
        assert!(mann_whitney_p(&a, &b).expect("p") < 1e-6);
        let p_same = mann_whitney_p(&a, &a).expect("p");
        assert!(p_same > 0.9, "{p_same}");
    }

    #[test]
    fn normal_cdf_known_values() {
        assert!((standard_normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((standard_normal_cdf(1.959_964) - 0.975).abs() < 1e-6);
        assert!((standard_normal_cdf(-1.644_854) - 0.05).abs() < 1e-6);
    }
}
