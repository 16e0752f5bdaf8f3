//! The one interval method of trtmc: the **round** is the unit of variance.
//!
//! On a shared CPU most of the variance of a latency statistic lies between processes and between
//! stretches of time, not between the calls of one stretch: one process's p50 can sit at one of two
//! levels for its whole life (docs/statistics.md). Resampling pooled calls as if they were independent
//! then gives intervals far too narrow (an A/A "95 %" interval covered the true ratio of 1 in 54 % of
//! repeats). So every interval here is computed from one value per round:
//!
//! * a **round** is one process (a matrix round, a tuner's head-to-head pass in a fresh worker) or,
//!   inside a single run, one block of consecutive calls;
//! * each round contributes its median (or the chosen statistic);
//! * on the log scale, the mean of the rounds' values (or of paired rounds' ratios) gets a Student-t
//!   interval with `rounds - 1` degrees of freedom, reported back on the ratio scale.
//!
//! Paired rounds (candidate and reference measured next to each other, as the matrix alternates them)
//! cancel a slow drift of machine load. Fewer than [`MIN_ROUNDS`] rounds give an interval that callers
//! must present as untrusted.

use serde::{Deserialize, Serialize};

use crate::stats::{self, Interval};

/// Rounds below which an interval is reported but not trusted for a verdict.
pub const MIN_ROUNDS: usize = 5;

/// Blocks a single run's calls are cut into for its p50 interval.
pub const RUN_BLOCKS: usize = 10;

/// An interval and the number of rounds it rests on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RoundInterval {
    #[serde(flatten)]
    pub interval: Interval,
    pub rounds: usize,
}

impl RoundInterval {
    /// Enough rounds for a verdict (see [`MIN_ROUNDS`]).
    pub fn trusted(&self, min_rounds: usize) -> bool {
        self.rounds >= min_rounds.max(2)
    }
}

/// Two-sided Student-t quantile for `confidence` with `df` degrees of freedom.
fn t_quantile(confidence: f64, df: usize) -> f64 {
    distrs::StudentsT::ppf(0.5 + confidence / 2.0, df as f64)
}

/// Geometric mean of positive `values` with a t interval on the log scale; `None` with fewer than two
/// values or any value that is not finite and positive.
pub fn geometric(values: &[f64], confidence: f64) -> Option<RoundInterval> {
    let n = values.len();
    if n < 2 || values.iter().any(|v| !v.is_finite() || *v <= 0.0) {
        return None;
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let mean = logs.iter().sum::<f64>() / n as f64;
    let var = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = t_quantile(confidence, n - 1) * (var / n as f64).sqrt();
    Some(RoundInterval {
        interval: Interval {
            estimate: mean.exp(),
            low: (mean - half).exp(),
            high: (mean + half).exp(),
            confidence,
        },
        rounds: n,
    })
}

/// Ratio `a / b` from paired rounds: `a[i]` and `b[i]` are the statistic of round `i` on each side.
/// The estimate is the geometric mean of the per-round ratios. `None` when the sides have different
/// round counts, fewer than two rounds, or a non-positive value.
pub fn paired_ratio(a: &[f64], b: &[f64], confidence: f64) -> Option<RoundInterval> {
    if a.len() != b.len() || b.iter().any(|v| *v <= 0.0) {
        return None;
    }
    let ratios: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
    geometric(&ratios, confidence)
}

/// The per-round value of `statistic` over each non-empty round.
pub fn per_round(rounds: &[Vec<f64>], statistic: impl Fn(&[f64]) -> f64) -> Vec<f64> {
    rounds
        .iter()
        .filter(|r| !r.is_empty())
        .map(|r| statistic(r))
        .collect()
}

/// Cuts one run's calls (in call order) into `blocks` contiguous blocks of near-equal size; fewer when
/// there are fewer calls than blocks.
pub fn blocks(samples: &[f64], blocks: usize) -> Vec<Vec<f64>> {
    let k = blocks.min(samples.len()).max(1);
    let n = samples.len();
    (0..k)
        .map(|i| samples[i * n / k..(i + 1) * n / k].to_vec())
        .filter(|b| !b.is_empty())
        .collect()
}

/// The p50 interval of one run: the run's calls cut into [`RUN_BLOCKS`] blocks, one median per block.
/// It shows the drift within the run; it cannot show the variance between processes.
pub fn run_p50(samples: &[f64], confidence: f64) -> Option<RoundInterval> {
    geometric(
        &per_round(&blocks(samples, RUN_BLOCKS), stats::median),
        confidence,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_tables() {
        assert!((t_quantile(0.95, 4) - 2.776).abs() < 1e-3);
        assert!((t_quantile(0.95, 9) - 2.262).abs() < 1e-3);
        assert!((t_quantile(0.90, 30) - 1.697).abs() < 1e-3);
    }

    #[test]
    fn geometric_interval_brackets_the_mean_and_narrows_with_rounds() {
        let few = geometric(&[1.0, 1.2, 0.9, 1.1], 0.95).expect("interval");
        assert!(few.interval.low < few.interval.estimate && few.interval.estimate < few.interval.high);
        assert_eq!(few.rounds, 4);
        assert!(!few.trusted(MIN_ROUNDS));
        let many: Vec<f64> = [1.0, 1.2, 0.9, 1.1].repeat(5);
        let many = geometric(&many, 0.95).expect("interval");
        assert!(many.trusted(MIN_ROUNDS));
        assert!(many.interval.high - many.interval.low < few.interval.high - few.interval.low);
        assert!(geometric(&[1.0], 0.95).is_none());
        assert!(geometric(&[1.0, 0.0], 0.95).is_none());
        assert!(geometric(&[1.0, f64::NAN], 0.95).is_none());
    }

    #[test]
    fn paired_rounds_cancel_a_shared_drift() {
        // Load doubles the second half of the row for both sides; the ratio stays 1.3 in every round.
        let reference: Vec<f64> = (0..10).map(|i| if i < 5 { 1.0 } else { 2.0 }).collect();
        let candidate: Vec<f64> = reference.iter().map(|r| r * 1.3).collect();
        let r = paired_ratio(&candidate, &reference, 0.95).expect("ratio");
        assert!((r.interval.estimate - 1.3).abs() < 1e-9);
        assert!((r.interval.high - r.interval.low).abs() < 1e-9);
        assert!(paired_ratio(&candidate[..3], &reference, 0.95).is_none());
    }

    #[test]
    fn a_round_level_effect_widens_the_interval_where_pooled_calls_would_not() {
        // Two processes per side at different levels (1.0 and 1.5): the per-round ratios vary, so the
        // interval must be wide and contain 1.
        let c = [1.0, 1.5, 1.0, 1.5, 1.5, 1.0];
        let r = [1.5, 1.0, 1.0, 1.5, 1.0, 1.5];
        let i = paired_ratio(&c, &r, 0.95).expect("ratio");
        assert!(i.interval.contains(1.0));
        assert!(i.interval.high > 1.2 && i.interval.low < 0.85, "{i:?}");
    }

    #[test]
    fn blocks_cover_every_call_in_order() {
        let s: Vec<f64> = (0..23).map(f64::from).collect();
        let b = blocks(&s, 10);
        assert_eq!(b.len(), 10);
        assert_eq!(b.concat(), s);
        assert_eq!(blocks(&s[..3], 10).len(), 3);
        assert!(run_p50(&[2.0], 0.95).is_none());
        let p = run_p50(&s.iter().map(|v| v + 1.0).collect::<Vec<_>>(), 0.95).expect("p50");
        assert_eq!(p.rounds, 10);
    }
}
