//! Change points of one series: E-divisive means (Matteson and James, 2014) proposes where a series
//! splits; a split is kept only when the two sides differ by the rule the matrix lights use — the
//! interval of the ratio of the two segments (after / before) lies wholly outside the green band
//! (docs/statistics.md, "History").
//!
//! E-divisive with α = 1 finds the split that maximizes the energy distance between the points before
//! and after it, scaled by the segment sizes; it assumes no distribution and finds changes in location
//! and in spread. The published method then tests the split with a permutation test and recurses
//! into both sides; here the test is the ratio interval instead, so a change is reported only when
//! it is a change of the size people act on, with its interval, and never on noise alone.
//!
//! The ratio's interval is Moses' distribution-free interval for the Hodges–Lehmann shift of the
//! logarithms ([`segment_ratio`]): one interval from every pair of points across the split. A segment
//! needs [`min_segment`] points (7 at 95 %), so a short run of slow results is never a change.

use serde::Serialize;
use trtmc_core::intervals;

/// The rule that confirms a change.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rule {
    /// The green band is [1 / green_max, green_max]: a ratio interval wholly above it is a slowdown,
    /// wholly below it a speedup.
    pub green_max: f64,
    /// Joint confidence of the ratio's interval.
    pub confidence: f64,
}

/// The history's default green band: 5 %, half the matrix's default 10 %. The matrix compares two
/// runtimes with a tolerance; the history asks whether one runtime moved, and the interval already
/// keeps noise out (an A/A series of 20 points reports nothing: docs/performance.md).
pub const DEFAULT_GREEN_MAX: f64 = 1.05;

impl Default for Rule {
    fn default() -> Self {
        Rule {
            green_max: DEFAULT_GREEN_MAX,
            confidence: 0.95,
        }
    }
}

impl Rule {
    /// The confidence of each side's median interval.
    fn each(&self) -> f64 {
        self.confidence.sqrt()
    }
}

/// Which way a confirmed change went (every stored metric is lower-is-better).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The values went up.
    Slowdown,
    /// The values went down.
    Speedup,
}

impl Direction {
    /// The word reports and `history check` use for it.
    pub fn label(self) -> &'static str {
        match self {
            Direction::Slowdown => "slowdown",
            Direction::Speedup => "speedup",
        }
    }
}

/// The ratio of the median after to the median before, with its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SegmentRatio {
    /// Median after / median before: above 1 a slowdown.
    pub ratio: f64,
    /// Lower end of the ratio's interval.
    pub low: f64,
    /// Upper end of the ratio's interval.
    pub high: f64,
    /// The interval's confidence.
    pub confidence: f64,
}

/// A confirmed change point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// Index of the first point after the change.
    pub at: usize,
    /// The points compared: `before.0..at` and `at..after.1`.
    pub before_start: usize,
    /// See `before_start` (exclusive end).
    pub after_end: usize,
    /// How much the median moved.
    pub ratio: SegmentRatio,
    /// Which way it moved.
    pub direction: Direction,
}

/// The fewest points a segment needs: a change must hold for this many results on each side, so a
/// short run of slow results (a busy night) is not reported. The count is where one side's median has
/// a distribution-free interval at √confidence (7 at 95 %: [min, max] of 7 covers 98.4 %), the
/// standard of the first rule, kept so that a confirmed change stays one a single side shows.
pub fn min_segment(rule: &Rule) -> usize {
    (2..64)
        .find(|&n| {
            let values: Vec<f64> = (0..n).map(|i| i as f64).collect();
            intervals::median(&values, rule.each()).is_some_and(|r| r.coverage >= rule.each())
        })
        .unwrap_or(64)
}

/// The ratio of `after` to `before` with its interval: the Hodges–Lehmann shift of the logarithms
/// (the median of every pairwise `ln after_j − ln before_i`) and Moses' distribution-free interval
/// for it, read off the same sorted differences at the ranks the Mann–Whitney distribution gives.
/// `None` when a side is empty, a value is not positive, or the sides are too short for an interval
/// at the rule's confidence.
///
/// One interval for the ratio, instead of a median interval per side combined: each side's interval
/// has to cover its own noise, so a single slow point on either side widened the combined one past
/// the band (a 13 % step of tiny-cnn went unreported); the shift interval uses every pair at once.
pub fn segment_ratio(before: &[f64], after: &[f64], rule: &Rule) -> Option<SegmentRatio> {
    let (m, n) = (before.len(), after.len());
    if m == 0 || n == 0 || before.iter().chain(after).any(|v| *v <= 0.0) {
        return None;
    }
    let k = moses_rank(m, n, rule.confidence)?;
    let mut d: Vec<f64> = Vec::with_capacity(m * n);
    for a in after {
        let la = a.ln();
        d.extend(before.iter().map(|b| la - b.ln()));
    }
    let total = d.len();
    let low = *d.select_nth_unstable_by(k - 1, f64::total_cmp).1;
    let high = *d.select_nth_unstable_by(total - k, f64::total_cmp).1;
    let (left, mid, _) = d.select_nth_unstable_by(total / 2, f64::total_cmp);
    let mid = *mid;
    let estimate = if total % 2 == 1 {
        mid
    } else {
        let below = left.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (below + mid) / 2.0
    };
    Some(SegmentRatio {
        ratio: estimate.exp(),
        low: low.exp(),
        high: high.exp(),
        confidence: rule.confidence,
    })
}

/// Moses' rank: the largest `k` with `P(U ≤ k − 1) ≤ (1 − confidence) / 2` under the null
/// distribution of the Mann–Whitney `U` for sizes `m` and `n`; the interval is then the `k`-th
/// smallest and `k`-th largest of the `m·n` differences. Exact up to 100 points in all, the normal
/// approximation with continuity correction beyond. `None` when even `k = 1` is not enough.
pub fn moses_rank(m: usize, n: usize, confidence: f64) -> Option<usize> {
    let tail = (1.0 - confidence) / 2.0;
    if m + n <= 100 {
        let counts = mann_whitney_counts(m, n);
        let total: f64 = counts.iter().map(|&c| c as f64).sum();
        let mut below = 0.0;
        let mut k = 0;
        for &c in &counts {
            below += c as f64;
            if below / total > tail {
                break;
            }
            k += 1;
        }
        (k >= 1).then_some(k)
    } else {
        let (mf, nf) = (m as f64, n as f64);
        let sd = (mf * nf * (mf + nf + 1.0) / 12.0).sqrt();
        let k = (mf * nf / 2.0 + 0.5 - normal_quantile(1.0 - tail) * sd).floor();
        (k >= 1.0).then_some(k as usize)
    }
}

/// How many arrangements give each value of `U` (0 ..= m·n): the coefficients of the Gaussian
/// binomial `[m+n choose m]_q = ∏ (1 − q^(n+i)) / (1 − q^i)`, i = 1..m, in exact integers.
fn mann_whitney_counts(m: usize, n: usize) -> Vec<i128> {
    let degree = m * n;
    let mut c = vec![0i128; degree + 1];
    c[0] = 1;
    for i in 1..=m {
        // Multiply by (1 − q^(n+i)), then divide by (1 − q^i) (a running sum with stride i).
        let step = n + i;
        for u in (step..=degree).rev() {
            c[u] -= c[u - step];
        }
        for u in i..=degree {
            c[u] += c[u - i];
        }
    }
    c
}

/// The standard normal quantile, by bisection on the CDF (called once per interval).
fn normal_quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (-10.0, 10.0);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if trtmc_core::stats::standard_normal_cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// The direction when the ratio's interval lies wholly outside the green band.
pub fn confirmed(r: &SegmentRatio, rule: &Rule) -> Option<Direction> {
    if r.low > rule.green_max {
        Some(Direction::Slowdown)
    } else if r.high < 1.0 / rule.green_max {
        Some(Direction::Speedup)
    } else {
        None
    }
}

/// The split of `x` (each side at least `min` points) with the largest E-divisive statistic
/// `Q(τ) = (p·q / n) · (2·mean|before − after| − mean|before − before| − mean|after − after|)`,
/// in O(n²): the three sums are updated as one point moves from the right side to the left.
pub fn best_split(x: &[f64], min: usize) -> Option<usize> {
    let n = x.len();
    if min == 0 || n < 2 * min {
        return None;
    }
    let (mut between, mut left, mut right) = (0.0, 0.0, 0.0);
    for i in 0..n {
        for j in i + 1..n {
            let d = (x[i] - x[j]).abs();
            match (i < min, j < min) {
                (true, true) => left += d,
                (false, false) => right += d,
                _ => between += d,
            }
        }
    }
    let mut best: Option<(usize, f64)> = None;
    for tau in min..=n - min {
        let (p, q) = (tau as f64, (n - tau) as f64);
        let energy =
            2.0 * between / (p * q) - left / (p * (p - 1.0) / 2.0) - right / (q * (q - 1.0) / 2.0);
        let stat = p * q / n as f64 * energy;
        if best.is_none_or(|(_, s)| stat > s) {
            best = Some((tau, stat));
        }
        if tau == n - min {
            break;
        }
        // Move x[tau] from the right side to the left.
        let (mut to_left, mut to_right) = (0.0, 0.0);
        for (i, v) in x.iter().enumerate() {
            let d = (x[tau] - v).abs();
            if i < tau {
                to_left += d;
            } else if i > tau {
                to_right += d;
            }
        }
        left += to_left;
        right -= to_right;
        between += to_right - to_left;
    }
    best.map(|(tau, _)| tau)
}

/// The confirmed change points of `values` in order, each compared with the segments between its
/// neighbouring change points.
///
/// Candidates come from recursive bisection: E-divisive splits a segment where the energy statistic
/// is largest, and both sides are searched again unless the split showed the sides equal (the ratio's
/// interval wholly inside the green band). Then the weakest candidate that the rule does not confirm
/// is dropped, one at a time (its neighbours' segments grow, so their intervals narrow), until every
/// remaining one is confirmed.
pub fn detect(values: &[f64], rule: &Rule) -> Vec<Change> {
    if values.iter().any(|v| !v.is_finite()) {
        return Vec::new();
    }
    let min = min_segment(rule);
    let mut cuts = Vec::new();
    divide(values, 0, min, rule, &mut cuts);
    cuts.sort_unstable();
    loop {
        let judged = judge(values, &cuts, rule);
        let weakest = judged
            .iter()
            .enumerate()
            .filter(|(_, (_, confirmed))| !confirmed)
            .min_by(|a, b| a.1.0.strength.total_cmp(&b.1.0.strength))
            .map(|(i, _)| i);
        match weakest {
            Some(i) => {
                cuts.remove(i);
            }
            None => return judged.into_iter().filter_map(|(j, _)| j.change).collect(),
        }
    }
}

/// Recursive bisection: split where E-divisive says; search both sides unless the split showed them
/// equal.
fn divide(x: &[f64], offset: usize, min: usize, rule: &Rule, cuts: &mut Vec<usize>) {
    let Some(tau) = best_split(x, min) else {
        return;
    };
    let Some(ratio) = segment_ratio(&x[..tau], &x[tau..], rule) else {
        return;
    };
    if ratio.low >= 1.0 / rule.green_max && ratio.high <= rule.green_max {
        return;
    }
    cuts.push(offset + tau);
    divide(&x[..tau], offset, min, rule, cuts);
    divide(&x[tau..], offset + tau, min, rule, cuts);
}

/// A candidate cut judged against its neighbours' segments.
struct Judged {
    /// How far the ratio's interval lies outside the band (log scale; negative when it does not).
    strength: f64,
    change: Option<Change>,
}

fn judge(values: &[f64], cuts: &[usize], rule: &Rule) -> Vec<(Judged, bool)> {
    let mut out = Vec::new();
    for (i, &at) in cuts.iter().enumerate() {
        let start = if i == 0 { 0 } else { cuts[i - 1] };
        let end = cuts.get(i + 1).copied().unwrap_or(values.len());
        let Some(ratio) = segment_ratio(&values[start..at], &values[at..end], rule) else {
            out.push((
                Judged {
                    strength: f64::NEG_INFINITY,
                    change: None,
                },
                false,
            ));
            continue;
        };
        let strength = (ratio.low / rule.green_max)
            .ln()
            .max((1.0 / rule.green_max / ratio.high).ln());
        let change = confirmed(&ratio, rule).map(|direction| Change {
            at,
            before_start: start,
            after_end: end,
            ratio,
            direction,
        });
        let ok = change.is_some();
        out.push((Judged { strength, change }, ok));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Lognormal-ish noise: `level · (1 + noise · N(0, 1))`, from a seeded generator.
    fn series(levels: &[(usize, f64)], noise: f64, seed: u64) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut out = Vec::new();
        for &(n, level) in levels {
            for _ in 0..n {
                // Box-Muller.
                let (u, v): (f64, f64) = (rng.random_range(1e-12..1.0), rng.random());
                let z = (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos();
                out.push(level * (1.0 + noise * z));
            }
        }
        out
    }

    #[test]
    fn moses_ranks_match_the_mann_whitney_tables() {
        // Two-sided 5 % critical values of U (tables: m = n = 7 → 8, m = n = 10 → 23, m = 8, n = 12
        // → 22): the interval is the (critical + 1)-th smallest and largest difference.
        assert_eq!(moses_rank(7, 7, 0.95), Some(9));
        assert_eq!(moses_rank(10, 10, 0.95), Some(24));
        assert_eq!(moses_rank(8, 12, 0.95), Some(23));
        // Three points a side cannot reach 95 % (the smallest tail is 1/20 per side).
        assert_eq!(moses_rank(3, 3, 0.95), None);
        // The counts are the distribution: they sum to C(m+n, m) and are symmetric.
        let c = mann_whitney_counts(5, 4);
        assert_eq!(c.iter().sum::<i128>(), 126);
        assert!(c.iter().eq(c.iter().rev()));
        // The normal approximation beyond 100 points agrees with the exact count at its border.
        let exact = moses_rank(50, 50, 0.95).expect("exact");
        let (mf, nf) = (50.0f64, 50.0f64);
        let approx = (mf * nf / 2.0 + 0.5
            - normal_quantile(0.975) * (mf * nf * (mf + nf + 1.0) / 12.0).sqrt())
        .floor() as usize;
        assert!(exact.abs_diff(approx) <= 1, "{exact} vs {approx}");
        assert!(moses_rank(60, 60, 0.95).is_some());
    }

    #[test]
    fn one_slow_point_on_either_side_does_not_hide_a_step() {
        // The tiny-cnn series that went unreported under the per-side rule: a 13 % step at point 12
        // with one point of the second segment back near the first level.
        let x = [
            0.8631, 0.8666, 0.8488, 0.8545, 0.8744, 0.8486, 0.8448, 0.8539, 0.8838, 0.8812, 0.8409,
            1.0130, 0.9688, 0.9830, 0.9624, 0.9760, 0.9106, 1.0096, 0.9557, 0.9754,
        ];
        let c = detect(&x, &Rule::default());
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!((c[0].at, c[0].direction), (11, Direction::Slowdown));
        assert!(c[0].ratio.low > 1.05 && c[0].ratio.high < 1.2, "{c:?}");
    }

    #[test]
    fn a_segment_needs_seven_points_for_a_95_percent_ratio() {
        assert_eq!(min_segment(&Rule::default()), 7);
    }

    #[test]
    fn the_split_statistic_finds_a_step_exactly() {
        let mut x = vec![1.0; 12];
        x.extend(vec![1.3; 8]);
        assert_eq!(best_split(&x, 3), Some(12));
        assert_eq!(best_split(&x[..5], 3), None);
    }

    #[test]
    fn the_incremental_statistic_equals_the_direct_one() {
        let x = series(&[(9, 1.0), (11, 1.2)], 0.05, 3);
        let direct = |tau: usize| {
            let (a, b) = x.split_at(tau);
            let mean = |s: f64, k: f64| s / k;
            let between: f64 = a
                .iter()
                .map(|p| b.iter().map(|q| (p - q).abs()).sum::<f64>())
                .sum();
            let within = |s: &[f64]| {
                let mut t = 0.0;
                for i in 0..s.len() {
                    for j in i + 1..s.len() {
                        t += (s[i] - s[j]).abs();
                    }
                }
                t / (s.len() * (s.len() - 1) / 2) as f64
            };
            let (p, q) = (a.len() as f64, b.len() as f64);
            p * q / (p + q) * (2.0 * mean(between, p * q) - within(a) - within(b))
        };
        let best = (4..=16)
            .max_by(|&i, &j| direct(i).total_cmp(&direct(j)))
            .expect("a split");
        assert_eq!(best_split(&x, 4), Some(best));
    }

    #[test]
    fn a_30_percent_step_is_found_at_its_point_with_its_ratio() {
        let x = series(&[(11, 2.0), (9, 2.6)], 0.02, 7);
        let c = detect(&x, &Rule::default());
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].at, 11);
        assert_eq!(c[0].direction, Direction::Slowdown);
        assert!((c[0].ratio.ratio - 1.3).abs() < 0.05, "{c:?}");
        assert!(c[0].ratio.low > 1.05 && c[0].ratio.low <= c[0].ratio.ratio);
    }

    #[test]
    fn a_speedup_is_reported_as_one() {
        let x = series(&[(10, 2.0), (10, 1.5)], 0.02, 11);
        let c = detect(&x, &Rule::default());
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!((c[0].at, c[0].direction), (10, Direction::Speedup));
    }

    #[test]
    fn a_flat_noisy_series_has_no_change() {
        for seed in 0..50 {
            let x = series(&[(60, 1.0)], 0.05, seed);
            assert!(detect(&x, &Rule::default()).is_empty(), "seed {seed}");
        }
    }

    #[test]
    fn two_steps_are_both_found() {
        let x = series(&[(15, 1.0), (15, 1.25), (15, 1.0)], 0.02, 5);
        let at: Vec<usize> = detect(&x, &Rule::default()).iter().map(|c| c.at).collect();
        assert_eq!(at, vec![15, 30]);
    }

    #[test]
    fn a_step_inside_the_green_band_is_not_a_change() {
        let x = series(&[(20, 1.0), (20, 1.03)], 0.005, 9);
        assert!(detect(&x, &Rule::default()).is_empty());
    }

    #[test]
    fn too_short_or_broken_series_have_no_change() {
        assert!(detect(&[1.0, 2.0, 3.0], &Rule::default()).is_empty());
        let mut x = vec![1.0; 10];
        x.extend(vec![2.0; 10]);
        x[3] = f64::NAN;
        assert!(detect(&x, &Rule::default()).is_empty());
    }
}
