//! The one interval method of trtmc: the **round** is the unit of variance.
//!
//! On a shared CPU most of the variance of a latency statistic lies between processes and between
//! stretches of time, not between the calls of one stretch: the machine changes speed in steps of 1.3×
//! and more that last seconds (docs/statistics.md). Resampling pooled calls as if they were
//! independent then gives intervals far too narrow (an A/A "95 %" interval covered the true ratio of 1
//! in 54 % of repeats). So every interval here is computed from one value per round:
//!
//! * a **round** is one process (a matrix round, a tuner's head-to-head pass in a fresh worker) or,
//!   inside a single run, one block of consecutive calls;
//! * each round contributes its median (or the chosen statistic); paired rounds (candidate and
//!   reference measured next to each other, as the matrix alternates them) contribute their ratio;
//! * the estimate is the **median over rounds**, and the interval is the distribution-free interval of
//!   that median: the k-th smallest and k-th largest round values, k the largest for which the
//!   binomial coverage `1 - 2·P(Bin(n, ½) < k)` still reaches the confidence.
//!
//! The median and its order-statistic interval ignore the odd round that a speed step split in two
//! (one side measured before the step, the other after), where a mean would be dragged along. With
//! fewer than [`MIN_ROUNDS`] rounds no interval reaches 95 %: callers present such an interval as
//! untrusted.

use crate::stats::{self, Interval};

pub use trtmc_metadata::figures::MIN_ROUNDS;

/// Blocks a single run's calls are cut into for its p50 interval.
pub const RUN_BLOCKS: usize = 10;

/// An interval, the number of rounds it rests on, and its exact coverage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundInterval {
    /// The estimate (median over rounds) and its interval.
    pub interval: Interval,
    /// How many rounds the interval rests on.
    pub rounds: usize,
    /// Binomial coverage of the order-statistic interval (at least `interval.confidence` when the
    /// rounds allow it).
    pub coverage: f64,
}

impl RoundInterval {
    /// Enough rounds for a verdict: at least `min_rounds`, and the interval reaches its confidence.
    pub fn trusted(&self, min_rounds: usize) -> bool {
        self.rounds >= min_rounds.max(2) && self.coverage >= self.interval.confidence
    }
}

/// Coverage of the interval [k-th smallest, k-th largest] of `n` values for their median.
fn coverage(n: usize, k: usize) -> f64 {
    // 1 - 2·P(Bin(n, ½) <= k - 1), summed in log space so that large n does not overflow.
    let ln_half_n = n as f64 * 0.5f64.ln();
    let mut tail = 0.0;
    let mut ln_choose = 0.0; // ln C(n, 0)
    for i in 0..k {
        tail += (ln_choose + ln_half_n).exp();
        ln_choose += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
    }
    1.0 - 2.0 * tail
}

/// The median of `values` with its distribution-free interval at `confidence`; `None` with fewer than
/// two values or a value that is not finite.
pub fn median(values: &[f64], confidence: f64) -> Option<RoundInterval> {
    let n = values.len();
    if n < 2 || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let sorted = stats::sorted(values);
    let mut k = 1;
    while 2 * (k + 1) <= n && coverage(n, k + 1) >= confidence {
        k += 1;
    }
    Some(RoundInterval {
        interval: Interval {
            estimate: stats::percentile_sorted(&sorted, 50.0),
            low: sorted[k - 1],
            high: sorted[n - k],
            confidence,
        },
        rounds: n,
        coverage: coverage(n, k),
    })
}

/// A fixed schedule of looks for a comparison that adds rounds until it is decided: looks at `first`
/// rounds, then each time the rounds have grown by half (at least by 2), and last at `most`. The error
/// `1 - confidence` is split evenly between the looks (Bonferroni), so every look's interval is computed
/// at `per_look` and the chance that any look's interval misses the true median stays at most
/// `1 - confidence`, however early the comparison stops (docs/statistics.md, *Sequential rounds*).
#[derive(Debug, Clone, PartialEq)]
pub struct Looks {
    /// Round counts at which the interval is computed and the comparison may stop, ascending.
    pub at: Vec<usize>,
    /// The confidence of each look's interval.
    pub per_look: f64,
}

impl Looks {
    /// The schedule from `first` to `most` rounds (`most` at or below `first`: a single look at `first`,
    /// at the full confidence).
    pub fn plan(first: usize, most: usize, confidence: f64) -> Looks {
        let first = first.max(1);
        let most = most.max(first);
        let mut at = vec![first];
        let mut n = first;
        while n < most {
            n = (n + (n / 2).max(2)).min(most);
            at.push(n);
        }
        // A look whose round count cannot reach its share of the confidence (even [min, max] of
        // its rounds covers less) could never decide and would only spend error: leave it out and
        // share the error between the others. The last look always stays.
        loop {
            let per_look = 1.0 - (1.0 - confidence) / at.len() as f64;
            if at.len() > 1 && coverage(at[0], 1) < per_look {
                at.remove(0);
                continue;
            }
            return Looks { at, per_look };
        }
    }

    /// Whether `rounds` is one of the planned looks.
    pub fn is_look(&self, rounds: usize) -> bool {
        self.at.contains(&rounds)
    }

    /// The look after `rounds`, if any.
    pub fn next(&self, rounds: usize) -> Option<usize> {
        self.at.iter().copied().find(|&n| n > rounds)
    }

    /// The last planned look.
    pub fn last(&self) -> usize {
        self.at.last().copied().unwrap_or(1)
    }
}

/// Ratio `a / b` from paired rounds: `a[i]` and `b[i]` are the statistic of round `i` on each side.
/// The estimate is the median of the per-round ratios. `None` when the sides have different round
/// counts, fewer than two rounds, or a non-positive `b`.
pub fn paired_ratio(a: &[f64], b: &[f64], confidence: f64) -> Option<RoundInterval> {
    if a.len() != b.len() || b.iter().any(|v| *v <= 0.0) {
        return None;
    }
    let ratios: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
    median(&ratios, confidence)
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
    median(
        &per_round(&blocks(samples, RUN_BLOCKS), stats::median),
        confidence,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_matches_the_binomial_tables() {
        assert!((coverage(6, 1) - 0.96875).abs() < 1e-12);
        assert!((coverage(5, 1) - 0.9375).abs() < 1e-12);
        assert!((coverage(10, 2) - 0.978_515_625).abs() < 1e-9);
        assert!((coverage(20, 6) - 0.958_610_534_667_968_8).abs() < 1e-9);
        assert!(coverage(1000, 400) > 0.999);
    }

    #[test]
    fn the_interval_is_the_widest_order_statistics_that_keep_the_confidence() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        let i = median(&v, 0.95).expect("interval");
        // n = 20: k = 6 (95.9 %); k = 7 would cover only 88.5 %.
        assert_eq!((i.interval.low, i.interval.high), (6.0, 15.0));
        assert_eq!(i.interval.estimate, 10.5);
        assert!(i.trusted(MIN_ROUNDS));
        let few = median(&v[..5], 0.95).expect("interval");
        assert_eq!((few.interval.low, few.interval.high), (1.0, 5.0));
        assert!(!few.trusted(MIN_ROUNDS), "5 rounds cover only 93.75 %");
        assert!(median(&[1.0], 0.95).is_none());
        assert!(median(&[1.0, f64::NAN], 0.95).is_none());
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
    fn a_round_split_by_a_speed_step_does_not_move_the_verdict() {
        // Twenty A/A rounds near 1.0; two rounds straddle a 1.5x speed step (one side before it, one
        // after). The median and its interval stay near 1; a mean of the ratios would not.
        let mut ratios: Vec<f64> = (0..18)
            .map(|i| 1.0 + 0.01 * ((i % 5) as f64 - 2.0))
            .collect();
        ratios.extend([1.5, 0.67]);
        let i = median(&ratios, 0.95).expect("interval");
        assert!(i.interval.contains(1.0));
        assert!(i.interval.high < 1.02 && i.interval.low > 0.98, "{i:?}");
    }

    #[test]
    fn looks_grow_by_half_and_split_the_error() {
        let l = Looks::plan(8, 40, 0.95);
        assert_eq!(l.at, vec![8, 12, 18, 27, 40]);
        assert!((l.per_look - 0.99).abs() < 1e-12);
        assert_eq!(
            (l.next(8), l.next(27), l.next(40)),
            (Some(12), Some(40), None)
        );
        assert!(l.is_look(18) && !l.is_look(19));
        // No extension: one look at the full confidence.
        let fixed = Looks::plan(30, 30, 0.95);
        assert_eq!((fixed.at.clone(), fixed.per_look), (vec![30], 0.95));
        assert_eq!(Looks::plan(6, 3, 0.95).at, vec![6]);
        // Every look of the shipped schedule can reach its confidence ([min, max] of 8 covers 99.2 %).
        let first = median(&(0..8).map(f64::from).collect::<Vec<_>>(), l.per_look).expect("look");
        assert!(first.trusted(MIN_ROUNDS), "{first:?}");
        // Six rounds cannot reach a three-look share ([min, max] of 6 covers 96.9 % < 98.3 %): the
        // look at 6 is left out and the two remaining looks share the error.
        let tune = Looks::plan(6, 12, 0.95);
        assert_eq!(tune.at, vec![9, 12]);
        assert!((tune.per_look - 0.975).abs() < 1e-12);
        let at_nine =
            median(&(0..9).map(f64::from).collect::<Vec<_>>(), tune.per_look).expect("look");
        assert!(at_nine.trusted(MIN_ROUNDS), "{at_nine:?}");
    }

    #[test]
    fn blocks_cover_every_call_in_order() {
        let s: Vec<f64> = (0..23).map(f64::from).collect();
        let b = blocks(&s, 10);
        assert_eq!(b.len(), 10);
        assert_eq!(b.concat(), s);
        assert_eq!(blocks(&s[..3], 10).len(), 3);
        assert!(run_p50(&[2.0], 0.95).is_none());
        let p = run_p50(&s, 0.95).expect("p50");
        assert_eq!(p.rounds, 10);
        assert!(p.trusted(MIN_ROUNDS));
    }
}
