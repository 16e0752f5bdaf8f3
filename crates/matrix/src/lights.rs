//! Traffic lights from the candidate/reference p50 ratio and its bootstrap interval (rule:
//! docs/matrix.md#lights).

use trtmc_core::stats;

use crate::suite::Thresholds;

/// The light is recorded in every row result; its type lives with the matrix documents in core.
pub use trtmc_core::artifacts::matrix::{Comparison, Light};

fn band(ratio: f64, t: &Thresholds) -> Light {
    if ratio <= t.green_max {
        Light::Green
    } else if ratio <= t.yellow_max {
        Light::Yellow
    } else {
        Light::Red
    }
}

/// Compares the timed calls (milliseconds) of both sides. `Err` is an incomplete measurement (too few
/// samples, a zero reference), which gets no light.
pub fn compare(
    candidate_ms: &[f64],
    reference_ms: &[f64],
    t: &Thresholds,
) -> Result<Comparison, String> {
    let n = t.min_samples as usize;
    if candidate_ms.len() < n || reference_ms.len() < n {
        return Err(format!(
            "too few timed calls for a light: candidate {}, reference {}, the suite needs at least {} on each side (thresholds.min_samples)",
            candidate_ms.len(),
            reference_ms.len(),
            n
        ));
    }
    if candidate_ms
        .iter()
        .chain(reference_ms)
        .any(|v| !v.is_finite() || *v < 0.0)
    {
        return Err("a timed call has a non-finite or negative duration".into());
    }
    let c = stats::median(candidate_ms);
    let r = stats::median(reference_ms);
    let ci = stats::bootstrap_ratio_ci(
        candidate_ms,
        reference_ms,
        stats::median,
        t.confidence,
        stats::DEFAULT_RESAMPLES,
        0x6d61_7472,
    )
    .ok_or("the reference p50 is zero: no ratio")?;
    let ratio = c / r;
    let mut light = band(ratio, t);
    let mut uncertain = band(ci.low, t) != light || band(ci.high, t) != light;
    let mut note = String::new();
    if light == Light::Red && ci.low <= t.yellow_max {
        // Red needs the whole interval above yellow_max; otherwise the slowdown is not shown.
        light = Light::Yellow;
        uncertain = true;
        note = format!(
            "ratio {ratio:.3} is above yellow_max {} but its interval reaches down to {:.3}: yellow, not red",
            t.yellow_max, ci.low
        );
    } else if uncertain {
        note = format!(
            "the {:.0} % interval [{:.3}, {:.3}] crosses a threshold; the light is the estimate's",
            t.confidence * 100.0,
            ci.low,
            ci.high
        );
    }
    Ok(Comparison {
        candidate_p50_ms: c,
        reference_p50_ms: r,
        ratio,
        ci_low: ci.low,
        ci_high: ci.high,
        confidence: t.confidence,
        light,
        uncertain,
        note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(center: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| center * (1.0 + 0.01 * ((i % 5) as f64 - 2.0)))
            .collect()
    }

    #[test]
    fn lights_follow_the_ratio() {
        let t = Thresholds::default();
        let r = samples(1.0, 30);
        assert_eq!(
            compare(&samples(1.0, 30), &r, &t).unwrap().light,
            Light::Green
        );
        assert_eq!(
            compare(&samples(1.18, 30), &r, &t).unwrap().light,
            Light::Yellow
        );
        let red = compare(&samples(2.0, 30), &r, &t).unwrap();
        assert_eq!(red.light, Light::Red);
        assert!((red.ratio - 2.0).abs() < 0.05);
        assert!(red.ci_low > t.yellow_max);
    }

    #[test]
    fn too_few_samples_get_no_light() {
        let t = Thresholds::default();
        assert!(compare(&samples(1.0, 3), &samples(1.0, 30), &t).is_err());
    }

    #[test]
    fn red_with_a_wide_interval_is_lowered_to_yellow() {
        let t = Thresholds::default();
        // Half the candidate calls fast, half slow: p50 ratio above yellow_max, interval wide.
        let mut c: Vec<f64> = vec![1.0; 15];
        c.extend(vec![2.0; 16]);
        let out = compare(&c, &samples(1.0, 31), &t).unwrap();
        assert!(out.ratio > t.yellow_max);
        assert_eq!(out.light, Light::Yellow);
        assert!(out.uncertain);
    }
}
