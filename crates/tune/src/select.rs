//! Ranking routes on steady-state samples with confidence intervals.
//!
//! Every comparison works on a *cost* (lower is better) computed from per-call times in milliseconds:
//! `p50`, `p95` and `mean` are those statistics of the samples; `throughput` is calls per second,
//! `1000 / mean`, whose cost is the mean. Intervals are percentile-bootstrap intervals from
//! `trtmc_core::stats`; warm-up calls never reach these functions (the driver keeps them apart).

use serde::{Deserialize, Serialize};
use trtmc_core::stats::{self, Interval};

/// Declared with the tuning summary, which records them.
pub use trtmc_core::artifacts::tune_summary::{Estimate, Objective};

/// Resamples used for intervals inside the tuner (enough for stable 95 % bounds on a few hundred samples).
pub const RESAMPLES: usize = 1000;

/// The objective of `samples` with a bootstrap interval; `None` without samples.
pub fn estimate(
    objective: Objective,
    samples: &[f64],
    confidence: f64,
    seed: u64,
) -> Option<Estimate> {
    let cost = stats::bootstrap_ci(samples, |s| objective.cost(s), confidence, RESAMPLES, seed)?;
    let (a, b) = (objective.value(cost.low), objective.value(cost.high));
    Some(Estimate {
        statistic: objective,
        value: objective.value(cost.estimate),
        low: a.min(b),
        high: a.max(b),
        confidence,
        unit: objective.unit().to_string(),
        samples: samples.len(),
        cost,
    })
}

/// Ratio `cost(other) / cost(best)` with a bootstrap interval: above 1 means `other` is slower.
pub fn cost_ratio(
    objective: Objective,
    other: &[f64],
    best: &[f64],
    confidence: f64,
    seed: u64,
) -> Option<Interval> {
    stats::bootstrap_ratio_ci(
        other,
        best,
        |s| objective.cost(s),
        confidence,
        RESAMPLES,
        seed,
    )
}

/// Indices of the candidates whose cost interval overlaps the best one's (the best included, first).
/// `None` entries (routes without samples) are skipped.
pub fn tied_with_best(estimates: &[Option<Estimate>]) -> Vec<usize> {
    let Some(best) = best_index(estimates) else {
        return Vec::new();
    };
    let best_cost = estimates[best].as_ref().map(|e| e.cost);
    let mut tied = vec![best];
    if let Some(b) = best_cost {
        for (i, e) in estimates.iter().enumerate() {
            if let Some(e) = e
                && i != best
                && e.cost.low <= b.high
                && b.low <= e.cost.high
            {
                tied.push(i);
            }
        }
    }
    tied
}

/// Index of the lowest point cost (first seen wins an exact tie).
pub fn best_index(estimates: &[Option<Estimate>]) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, e) in estimates.iter().enumerate() {
        if let Some(e) = e
            && best.is_none_or(|(_, c)| e.cost.estimate < c)
        {
            best = Some((i, e.cost.estimate));
        }
    }
    best.map(|(i, _)| i)
}

/// How finalists compare with the fastest of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadToHead {
    /// Index (into the finalists) of the lowest point cost.
    pub best: usize,
    /// For each finalist: `cost(finalist) / cost(best)` with its interval (`None` for the best itself).
    pub ratios: Vec<Option<Interval>>,
    /// Finalists not shown slower than the best by more than `min_effect` (the best included).
    pub tied: Vec<usize>,
}

/// Compare finalists' samples (from interleaved passes). A finalist is beaten when the lower bound of its
/// cost ratio to the best exceeds `1 + min_effect`; otherwise it is tied with the best.
pub fn head_to_head(
    objective: Objective,
    samples: &[Vec<f64>],
    confidence: f64,
    min_effect: f64,
    seed: u64,
) -> Option<HeadToHead> {
    let costs: Vec<Option<f64>> = samples
        .iter()
        .map(|s| {
            if s.is_empty() {
                None
            } else {
                Some(objective.cost(s))
            }
        })
        .collect();
    let mut best: Option<(usize, f64)> = None;
    for (i, c) in costs.iter().enumerate() {
        if let Some(c) = c
            && best.is_none_or(|(_, b)| *c < b)
        {
            best = Some((i, *c));
        }
    }
    let (best, _) = best?;
    let mut ratios = Vec::with_capacity(samples.len());
    let mut tied = vec![best];
    for (i, s) in samples.iter().enumerate() {
        if i == best || s.is_empty() {
            ratios.push(None);
            continue;
        }
        let ratio = cost_ratio(
            objective,
            s,
            &samples[best],
            confidence,
            seed.wrapping_add(i as u64),
        );
        if ratio.is_none_or(|r| r.low <= 1.0 + min_effect) {
            tied.push(i);
        }
        ratios.push(ratio);
    }
    Some(HeadToHead { best, ratios, tied })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noisy(center: f64, n: usize, spread: f64) -> Vec<f64> {
        (0..n)
            .map(|i| center * (1.0 + spread * (((i * 37) % 11) as f64 / 10.0 - 0.5)))
            .collect()
    }

    #[test]
    fn objectives_compute_their_statistics() {
        let s = [1.0, 2.0, 3.0, 4.0, 100.0];
        assert_eq!(Objective::P50.cost(&s), 3.0);
        assert_eq!(Objective::Mean.cost(&s), 22.0);
        assert!((Objective::P95.cost(&s) - (4.0 + 0.8 * 96.0)).abs() < 1e-9);
        assert_eq!(
            Objective::Throughput.value(Objective::Throughput.cost(&[2.0, 2.0])),
            500.0
        );
        for o in Objective::ALL {
            assert_eq!(o.name().parse::<Objective>(), Ok(o));
        }
    }

    #[test]
    fn throughput_interval_is_ordered_in_its_own_unit() {
        let e = estimate(Objective::Throughput, &noisy(2.0, 60, 0.1), 0.95, 1).expect("estimate");
        assert!(e.low <= e.value && e.value <= e.high, "{e:?}");
        assert!((e.value - 500.0).abs() < 10.0);
        assert_eq!(e.unit, "calls/s");
    }

    #[test]
    fn overlapping_intervals_are_ties_and_separated_ones_are_not() {
        let a = estimate(Objective::P50, &noisy(10.0, 50, 0.05), 0.95, 1);
        let b = estimate(Objective::P50, &noisy(10.02, 50, 0.05), 0.95, 2);
        let c = estimate(Objective::P50, &noisy(12.0, 50, 0.05), 0.95, 3);
        let all = [c, None, a, b];
        assert_eq!(tied_with_best(&all), vec![2, 3]);
        assert_eq!(best_index(&all), Some(2));
        assert!(tied_with_best(&[None, None]).is_empty());
    }

    #[test]
    fn head_to_head_separates_a_real_difference_and_ties_identical_routes() {
        let fast = noisy(10.0, 60, 0.04);
        let slow = noisy(10.8, 60, 0.04);
        let h = head_to_head(Objective::P50, &[slow.clone(), fast.clone()], 0.95, 0.01, 9)
            .expect("h2h");
        assert_eq!(h.best, 1);
        assert_eq!(h.tied, vec![1]);
        let r = h.ratios[0].expect("ratio");
        assert!(r.low > 1.05 && r.estimate > 1.07, "{r:?}");
        let same = head_to_head(Objective::P50, &[fast.clone(), fast], 0.95, 0.01, 9).expect("h2h");
        assert_eq!(same.tied.len(), 2);
    }
}
