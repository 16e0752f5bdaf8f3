//! Traffic lights from the candidate/reference p50 ratio and its interval over paired rounds (rule:
//! docs/matrix.md#lights, method: docs/statistics.md).

use trtmc_core::{intervals, stats, verdicts};

use crate::suite::Thresholds;

/// The light is recorded in every row result; its type lives with the matrix documents in core.
pub use trtmc_core::artifacts::matrix::{Comparison, Light, StopReason};

/// How every comparison computes its ratio and interval (recorded as `Comparison::method`).
pub const METHOD: &str = "paired_rounds_median";
/// The method when a row has a single round: blocks of its calls stand in for rounds (never trusted).
pub const METHOD_ONE_ROUND: &str = "blocks_of_one_round_median";

/// Why a comparison gives no light: the measurement is incomplete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Incomplete {
    /// Either side has fewer timed calls than `thresholds.min_samples`.
    #[error(
        "too few timed calls for a light: candidate {candidate}, reference {reference}, the suite needs at least {needed} on each side (thresholds.min_samples)"
    )]
    TooFewCalls {
        /// The candidate's timed calls.
        candidate: usize,
        /// The reference's timed calls.
        reference: usize,
        /// `thresholds.min_samples`.
        needed: usize,
    },
    /// A duration that is not a finite number of milliseconds >= 0.
    #[error("a timed call has a non-finite or negative duration")]
    BadDuration,
    /// The sides' rounds cannot be paired (different counts, or an empty round).
    #[error(
        "the sides ran different or empty rounds (candidate {candidate}, reference {reference}): no paired ratio"
    )]
    UnpairedRounds {
        /// The candidate's rounds.
        candidate: usize,
        /// The reference's rounds.
        reference: usize,
    },
    /// A reference round with a zero p50, or too few calls to pair.
    #[error(
        "a reference round has a zero p50, or too few calls to pair: no ratio; check the reference side's observations or raise measure.iterations"
    )]
    NoRatio,
}

/// Compares the timed calls (milliseconds) of both sides, round by round: `candidate[i]` and
/// `reference[i]` were measured next to each other. The ratio is the median of the per-round p50
/// ratios, with its distribution-free interval (`trtmc_core::intervals`) at `look_confidence` (the
/// suite's confidence, or its share at one look of a row that adds rounds). `Err` is an incomplete
/// measurement (too few samples, a zero reference), which gets no light.
///
/// The light is the claim the interval backs (`trtmc_core::verdicts::light`, docs/matrix.md#lights);
/// `uncertain` when the interval does not decide it. The caller records why the row stopped.
pub fn compare(
    candidate: &[Vec<f64>],
    reference: &[Vec<f64>],
    t: &Thresholds,
    look_confidence: f64,
) -> Result<Comparison, Incomplete> {
    let pooled_c: Vec<f64> = candidate.concat();
    let pooled_r: Vec<f64> = reference.concat();
    let n = t.min_samples as usize;
    if pooled_c.len() < n || pooled_r.len() < n {
        return Err(Incomplete::TooFewCalls {
            candidate: pooled_c.len(),
            reference: pooled_r.len(),
            needed: n,
        });
    }
    if pooled_c
        .iter()
        .chain(&pooled_r)
        .any(|v| !v.is_finite() || *v < 0.0)
    {
        return Err(Incomplete::BadDuration);
    }
    if candidate.len() != reference.len() || candidate.iter().chain(reference).any(Vec::is_empty) {
        return Err(Incomplete::UnpairedRounds {
            candidate: candidate.len(),
            reference: reference.len(),
        });
    }
    let rounds = candidate.len();
    // One round: blocks of its calls stand in for rounds; such an interval cannot see the variance
    // between processes, so it is never trusted.
    let (c_units, r_units, method) = if rounds >= 2 {
        (candidate.to_vec(), reference.to_vec(), METHOD)
    } else {
        (
            intervals::blocks(&pooled_c, intervals::RUN_BLOCKS),
            intervals::blocks(&pooled_r, intervals::RUN_BLOCKS),
            METHOD_ONE_ROUND,
        )
    };
    let (c_units, r_units) = trim_to_pairs(c_units, r_units);
    let paired = intervals::paired_ratio(
        &intervals::per_round(&c_units, stats::median),
        &intervals::per_round(&r_units, stats::median),
        look_confidence,
    )
    .ok_or(Incomplete::NoRatio)?;
    let trusted = rounds >= 2 && paired.trusted(t.min_rounds as usize);
    let ci = paired.interval;
    let ratio = ci.estimate;
    let (light, decided) = verdicts::light(&ci, trusted, t);
    let note = if !trusted {
        format!(
            "only {rounds} round(s): an interval needs at least {} paired rounds (thresholds.min_rounds) to reach {:.1} %, so the light is at most an uncertain yellow",
            (t.min_rounds as usize).max(intervals::MIN_ROUNDS),
            look_confidence * 100.0
        )
    } else if !decided {
        format!(
            "the {:.1} % interval [{:.3}, {:.3}] over {rounds} rounds holds green_max {}: neither within tolerance nor a slowdown shown (ratio {ratio:.3})",
            look_confidence * 100.0,
            ci.low,
            ci.high,
            t.green_max
        )
    } else {
        String::new()
    };
    Ok(Comparison {
        candidate_p50_ms: stats::median(&pooled_c),
        reference_p50_ms: stats::median(&pooled_r),
        ratio,
        method: method.into(),
        rounds,
        ci_low: ci.low,
        ci_high: ci.high,
        confidence: t.confidence,
        light,
        uncertain: !decided,
        note,
        stopped_by: None,
        look_confidence,
    })
}

/// The largest A/A ratio `scripts/validity.py` measured (1.059, 320 A/A rows at 20 and 30 rounds, quiet
/// and busy, on a shared 2-core machine: docs/performance.md): thresholds inside this spread cannot tell a runtime from itself.
pub const MEASURED_AA_HIGH: f64 = 1.06;

/// What `matrix check` warns about before anything is measured: rows with too few rounds for a
/// trusted interval, and thresholds inside the A/A spread measured by the validity benchmark.
pub fn warnings<'a>(t: &Thresholds, rows: impl IntoIterator<Item = (&'a str, u64)>) -> Vec<String> {
    let mut out = Vec::new();
    for (id, rounds) in rows {
        if rounds < t.min_rounds {
            out.push(format!(
                "row `{id}` has {rounds} round(s), fewer than thresholds.min_rounds ({}): its light will be `uncertain` and never red; set measure.rounds to {} or more",
                t.min_rounds, t.min_rounds
            ));
        }
    }
    if t.green_max < MEASURED_AA_HIGH {
        out.push(format!(
            "thresholds.green_max {} is inside the A/A spread measured by scripts/validity.py (A/A ratios up to {MEASURED_AA_HIGH} at the shipped counts, docs/statistics.md): a runtime compared with itself can come out yellow; raise green_max or measure more rounds",
            t.green_max
        ));
    }
    let spread = MEASURED_AA_HIGH - 1.0;
    if t.yellow_max - t.green_max < spread {
        out.push(format!(
            "the yellow band ({} to {}) is narrower than the A/A spread measured by scripts/validity.py ({spread:.2}): noise alone can move a row from green to red; widen the band or measure more rounds",
            t.green_max, t.yellow_max
        ));
    }
    out
}

/// Blocks of one round may differ in count between the sides (fewer calls than blocks): pair the first.
fn trim_to_pairs(mut a: Vec<Vec<f64>>, mut b: Vec<Vec<f64>>) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let k = a.len().min(b.len());
    a.truncate(k);
    b.truncate(k);
    (a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rounds` rounds of `n` calls around `center`, with a round-to-round wobble of `spread`.
    fn rounds(center: f64, rounds: usize, n: usize, spread: f64) -> Vec<Vec<f64>> {
        (0..rounds)
            .map(|k| {
                let level = center * (1.0 + spread * ((k % 3) as f64 - 1.0));
                (0..n)
                    .map(|i| level * (1.0 + 0.01 * ((i % 5) as f64 - 2.0)))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn lights_follow_the_ratio() {
        let t = Thresholds::default();
        let r = rounds(1.0, 10, 10, 0.01);
        let green = compare(&rounds(1.0, 10, 10, 0.01), &r, &t, t.confidence).unwrap();
        assert_eq!(green.light, Light::Green);
        assert!(!green.uncertain);
        assert_eq!((green.rounds, green.method.as_str()), (10, METHOD));
        assert_eq!(
            compare(&rounds(1.18, 10, 10, 0.01), &r, &t, t.confidence)
                .unwrap()
                .light,
            Light::Yellow
        );
        let red = compare(&rounds(2.0, 10, 10, 0.01), &r, &t, t.confidence).unwrap();
        assert_eq!(red.light, Light::Red);
        assert!((red.ratio - 2.0).abs() < 0.05);
        assert!(red.ci_low > t.yellow_max);
    }

    #[test]
    fn check_warns_about_few_rounds_and_thresholds_inside_the_aa_spread() {
        let t = Thresholds::default();
        assert!(warnings(&t, [("a", 10)]).is_empty());
        let w = warnings(&t, [("a", 10), ("b", 2)]);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("`b` has 2 round(s)"), "{w:?}");
        let tight = Thresholds {
            green_max: 1.02,
            yellow_max: 1.05,
            ..Thresholds::default()
        };
        let w = warnings(&tight, []);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains(&MEASURED_AA_HIGH.to_string()));
    }

    #[test]
    fn too_few_samples_get_no_light() {
        let t = Thresholds::default();
        // (rounds, samples per round) of the candidate and of the reference.
        for ((a_rounds, a_samples), (b_rounds, b_samples)) in
            [((1, 3), (1, 30)), ((3, 10), (2, 15))]
        {
            assert!(
                compare(
                    &rounds(1.0, a_rounds, a_samples, 0.0),
                    &rounds(1.0, b_rounds, b_samples, 0.0),
                    &t,
                    t.confidence
                )
                .is_err()
            );
        }
    }

    #[test]
    fn too_few_rounds_are_never_red_nor_a_confident_green() {
        let t = Thresholds::default();
        let slow = compare(
            &rounds(2.0, 3, 20, 0.0),
            &rounds(1.0, 3, 20, 0.0),
            &t,
            t.confidence,
        )
        .unwrap();
        assert_eq!(slow.light, Light::Yellow);
        assert!(
            slow.uncertain && slow.note.contains("min_rounds"),
            "{slow:?}"
        );
        let same = compare(
            &rounds(1.0, 1, 40, 0.0),
            &rounds(1.0, 1, 40, 0.0),
            &t,
            t.confidence,
        )
        .unwrap();
        assert_eq!(same.light, Light::Green);
        assert!(same.uncertain);
        assert_eq!((same.rounds, same.method.as_str()), (1, METHOD_ONE_ROUND));
    }

    #[test]
    fn a_slowdown_that_varies_between_rounds_is_lowered_to_yellow() {
        let t = Thresholds::default();
        // Per-round ratios 1.0, 1.6, 1.0, 1.6, …: the estimate is above yellow_max, the interval wide.
        let r = rounds(1.0, 6, 10, 0.0);
        let c: Vec<Vec<f64>> = r
            .iter()
            .enumerate()
            .map(|(k, v)| {
                v.iter()
                    .map(|x| x * if k % 2 == 0 { 1.05 } else { 1.7 })
                    .collect()
            })
            .collect();
        let out = compare(&c, &r, &t, t.confidence).unwrap();
        assert!(out.ratio > t.yellow_max, "{out:?}");
        assert_eq!(out.light, Light::Yellow);
        assert!(out.uncertain);
    }
}
