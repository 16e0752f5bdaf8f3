//! Ranking routes on steady-state samples with confidence intervals.
//!
//! Every comparison works on a *cost* (lower is better) computed from per-call times in milliseconds:
//! `p50`, `p95` and `mean` are those statistics of the samples; `throughput` is calls per second,
//! `1000 / mean`, whose cost is the mean. Estimates are medians over rounds with their distribution-free
//! intervals from `trtmc_core::intervals` (a round: a head-to-head pass in a fresh process, or a block of
//! consecutive calls within one measurement); warm-up calls never reach these functions (the driver
//! keeps them apart).

use serde::{Deserialize, Serialize};
use trtmc_core::intervals;
use trtmc_core::stats::{self, Interval};

/// Declared with the tuning summary, which records them.
pub use trtmc_core::artifacts::tune_summary::{Estimate, Objective};
pub use trtmc_core::stats::ObjectiveCost;

/// The objective's cost of each block of consecutive calls (the unit of the intervals below).
fn block_costs(objective: Objective, samples: &[f64]) -> Vec<f64> {
    intervals::per_round(&intervals::blocks(samples, intervals::RUN_BLOCKS), |s| {
        objective.cost(s)
    })
}

/// The objective of `samples` (one route's calls in call order): the median over blocks of consecutive
/// calls with its distribution-free interval (`trtmc_core::intervals`); `None` without samples. One
/// block (a single call) gives a zero-width interval.
pub fn estimate(objective: Objective, samples: &[f64], confidence: f64) -> Option<Estimate> {
    if samples.is_empty() {
        return None;
    }
    let cost = intervals::median(&block_costs(objective, samples), confidence)
        .map(|r| r.interval)
        .unwrap_or_else(|| {
            let c = objective.cost(samples);
            Interval {
                estimate: c,
                low: c,
                high: c,
                confidence,
            }
        });
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

/// Ratio `cost(other) / cost(best)` of two routes' search samples: blocks of consecutive calls paired
/// by position, median ratio with its interval. Above 1 means `other` is slower. Each route ran in its own process, so
/// this interval cannot see the variance between processes: only the head-to-head decides.
pub fn cost_ratio(
    objective: Objective,
    other: &[f64],
    best: &[f64],
    confidence: f64,
) -> Option<Interval> {
    let (mut a, mut b) = (block_costs(objective, other), block_costs(objective, best));
    let k = a.len().min(b.len());
    a.truncate(k);
    b.truncate(k);
    intervals::paired_ratio(&a, &b, confidence).map(|r| r.interval)
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
    /// Index (into the finalists) of the lowest cost (median of the per-pass costs).
    pub best: usize,
    /// For each finalist: `cost(finalist) / cost(best)` with its interval over paired passes (`None`
    /// for the best itself, or when no ratio could be formed).
    pub ratios: Vec<Option<Interval>>,
    /// Finalists not shown slower than the best by more than `min_effect` (the best included).
    pub tied: Vec<usize>,
    /// Paired passes the ratios rest on.
    pub passes: usize,
}

/// Compare finalists pass by pass: `passes[f][k]` holds finalist `f`'s calls in pass `k`, each pass in
/// a fresh process, the finalists of one pass measured next to each other. A finalist is beaten when
/// the lower bound of its cost ratio to the best (the median of the paired per-pass ratios with its
/// distribution-free interval) exceeds `1 + min_effect`. With fewer than `min_passes` passes, or too
/// few for the interval to reach `confidence`, no finalist is beaten: every one is tied with the best.
pub fn head_to_head(
    objective: Objective,
    passes: &[Vec<Vec<f64>>],
    confidence: f64,
    min_effect: f64,
    min_passes: usize,
) -> Option<HeadToHead> {
    let costs: Vec<Vec<f64>> = passes
        .iter()
        .map(|p| intervals::per_round(p, |s| objective.cost(s)))
        .collect();
    let level = |c: &Vec<f64>| (!c.is_empty()).then(|| stats::median(c));
    let mut best: Option<(usize, f64)> = None;
    for (i, c) in costs.iter().enumerate() {
        if let Some(l) = level(c)
            && best.is_none_or(|(_, b)| l < b)
        {
            best = Some((i, l));
        }
    }
    let (best, _) = best?;
    let rounds = costs
        .iter()
        .map(Vec::len)
        .filter(|&n| n > 0)
        .min()
        .unwrap_or(0);
    let mut ratios = Vec::with_capacity(costs.len());
    let mut tied = vec![best];
    for (i, c) in costs.iter().enumerate() {
        if i == best || c.is_empty() {
            ratios.push(None);
            continue;
        }
        let ratio = intervals::paired_ratio(c, &costs[best], confidence);
        if ratio.is_none_or(|r| !r.trusted(min_passes) || r.interval.low <= 1.0 + min_effect) {
            tied.push(i);
        }
        ratios.push(ratio.map(|r| r.interval));
    }
    Some(HeadToHead {
        best,
        ratios,
        tied,
        passes: rounds,
    })
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
        let e = estimate(Objective::Throughput, &noisy(2.0, 60, 0.1), 0.95).expect("estimate");
        assert!(e.low <= e.value && e.value <= e.high, "{e:?}");
        assert!((e.value - 500.0).abs() < 10.0);
        assert_eq!(e.unit, "calls/s");
    }

    #[test]
    fn overlapping_intervals_are_ties_and_separated_ones_are_not() {
        let a = estimate(Objective::P50, &noisy(10.0, 50, 0.05), 0.95);
        let b = estimate(Objective::P50, &noisy(10.02, 50, 0.05), 0.95);
        let c = estimate(Objective::P50, &noisy(12.0, 50, 0.05), 0.95);
        let all = [c, None, a, b];
        assert_eq!(tied_with_best(&all), vec![2, 3]);
        assert_eq!(best_index(&all), Some(2));
        assert!(tied_with_best(&[None, None]).is_empty());
    }

    /// `n` passes of 10 calls around `center`; pass `k`'s level wobbles by `spread` (a process effect).
    fn passes(center: f64, n: usize, spread: f64) -> Vec<Vec<f64>> {
        (0..n)
            .map(|k| {
                noisy(
                    center * (1.0 + spread * ((k * 7 % 5) as f64 / 4.0 - 0.5)),
                    10,
                    0.04,
                )
            })
            .collect()
    }

    #[test]
    fn head_to_head_separates_a_real_difference_and_ties_identical_routes() {
        let fast = passes(10.0, 10, 0.02);
        let slow = passes(10.8, 10, 0.02);
        let h = head_to_head(Objective::P50, &[slow.clone(), fast.clone()], 0.95, 0.01, 5)
            .expect("h2h");
        assert_eq!((h.best, h.passes), (1, 10));
        assert_eq!(h.tied, vec![1]);
        let r = h.ratios[0].expect("ratio");
        assert!(r.low > 1.05 && r.estimate > 1.07, "{r:?}");
        let same = head_to_head(Objective::P50, &[fast.clone(), fast.clone()], 0.95, 0.01, 5)
            .expect("h2h");
        assert_eq!(same.tied.len(), 2);
        // Too few passes: nobody is beaten, whatever the estimate says.
        let short = head_to_head(
            Objective::P50,
            &[slow[..5].to_vec(), fast[..5].to_vec()],
            0.95,
            0.01,
            5,
        )
        .expect("h2h");
        assert_eq!(short.tied.len(), 2);
    }

    #[test]
    fn a_process_level_effect_makes_a_tie_not_a_winner() {
        // Identical routes whose processes land on one of two levels (1.0 or 1.4): pooled calls would
        // separate them, passes as the unit do not.
        let levels = [1.0, 1.4, 1.4, 1.0, 1.4, 1.0];
        let a: Vec<Vec<f64>> = levels.iter().map(|l| noisy(10.0 * l, 10, 0.02)).collect();
        let b: Vec<Vec<f64>> = levels
            .iter()
            .rev()
            .map(|l| noisy(10.0 * l, 10, 0.02))
            .collect();
        let h = head_to_head(Objective::P50, &[a, b], 0.95, 0.01, 5).expect("h2h");
        assert_eq!(h.tied.len(), 2, "{h:?}");
    }
}
