//! Is a measurement good enough for its own numbers? A validity verdict in the spirit of MLPerf LoadGen's
//! `Result is: VALID/INVALID`: one line per constraint, then recommendations.
//!
//! VALID means the figures the summary reports are pinned down; every INVALID names a rule the user
//! can act on. Constraints (all must hold for VALID):
//!
//! | constraint | holds when | default |
//! | --- | --- | --- |
//! | no failed calls | the case completed and every timed call returned | |
//! | completed | the case ran to the end of its stopping rule (an interrupted case keeps partial statistics) | |
//! | samples | timed calls ≥ `min_samples`: enough for the median and its interval over 10 blocks of calls | 10 |
//! | min duration | the timed loop ran ≥ `min_duration_s` (first call start to last call end) | 1 s |
//! | p50 pinned down | the p50's 95 % interval (over 10 blocks of calls, [`crate::intervals::run_p50`]) lies within `p50_half_width` of the p50 on both sides | ±2 % ([`P50_HALF_WIDTH`]) |
//!
//! A tail percentile resting on too few calls is not a reported figure: p-th percentile needs
//! n × (1 − p) ≥ 1 calls ([`crate::stats::percentile_supported`]); tables show the others marked `~`.
//!
//! Spread is not a constraint: a run whose calls vary a lot can still pin its median down. A robust CV
//! (1.4826 × MAD / median, [`crate::stats::robust_cv`]) above `max_cv` (10 %, [`crate::result::NOISY_CV`])
//! is a `noisy` note with its advice. Other notes (reported with recommendations, not part of the
//! verdict): warm-up drift (the first calls are slower than the median), a sustained slowdown later in
//! the run (throttling or a competing process), and Tukey outliers (mild: beyond 1.5 IQR, severe:
//! beyond 3 IQR).

use crate::artifacts::{CaseResult, CaseStatus, Observation};
use crate::result::NOISY_CV;
use crate::stats::{self, TukeyFences};
use crate::text::{fmt_num, fmt_pct};
use serde::{Deserialize, Serialize};

/// The half-width, as a fraction of the p50, within which the p50's 95 % interval must lie for the p50
/// to count as pinned down (VALID) and at which `run`'s default stopping rule stops measuring.
pub const P50_HALF_WIDTH: f64 = 0.02;

/// Thresholds of the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    /// Fewest timed calls for VALID (enough for the median's interval over 10 blocks).
    pub min_samples: u64,
    /// Shortest timed loop for VALID, in seconds (first call start to last call end).
    pub min_duration_s: f64,
    /// Above this robust CV a case gets the `noisy` note (not part of the verdict).
    pub max_cv: f64,
    /// Most the p50's 95 % interval may reach from the p50 on either side, as a fraction of it ([`P50_HALF_WIDTH`]).
    #[serde(default = "default_half_width")]
    pub p50_half_width: f64,
}

fn default_half_width() -> f64 {
    P50_HALF_WIDTH
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            min_samples: 10,
            min_duration_s: 1.0,
            max_cv: NOISY_CV,
            p50_half_width: P50_HALF_WIDTH,
        }
    }
}

/// The half-width of the p50's 95 % interval of `samples` (in call order) as a fraction of the p50:
/// the larger of its two sides. `None` when the interval cannot reach 95 % (fewer than 6 calls).
pub fn p50_half_width(samples: &[f64]) -> Option<f64> {
    let r = crate::intervals::run_p50(samples, 0.95)?;
    interval_half_width(&r.interval).filter(|_| r.trusted(crate::intervals::MIN_ROUNDS))
}

fn interval_half_width(i: &crate::stats::Interval) -> Option<f64> {
    (i.estimate > 0.0).then(|| (i.estimate - i.low).max(i.high - i.estimate) / i.estimate)
}

/// One line of the verdict: a rule, whether the case meets it, and the figures behind that.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Constraint {
    /// The rule's short name (e.g. `samples`, `p50 pinned down`).
    pub name: String,
    /// Whether the case meets it.
    pub met: bool,
    /// The figures behind the answer, e.g. `12 timed calls (at least 10)`.
    pub detail: String,
}

/// The verdict on one case: VALID when every constraint holds, with notes and advice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Validity {
    /// Whether every constraint is met.
    pub valid: bool,
    /// Each constraint checked, in a fixed order.
    pub constraints: Vec<Constraint>,
    /// Observations that do not change the verdict (drift, slowdown, outliers).
    pub notes: Vec<String>,
    /// What the user can do about the unmet constraints and the notes (e.g. measure longer).
    pub recommendations: Vec<String>,
}

impl Validity {
    /// `VALID` or `INVALID`, as printed.
    pub fn verdict(&self) -> &'static str {
        if self.valid { "VALID" } else { "INVALID" }
    }
    /// The unmet constraints' details, for one-line summaries.
    pub fn failures(&self) -> Vec<String> {
        self.constraints
            .iter()
            .filter(|c| !c.met)
            .map(|c| format!("{}: {}", c.name, c.detail))
            .collect()
    }
}

/// How latency moved over the run, from the timed calls in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    /// Window (calls) of the rolling median.
    pub window: usize,
    /// Leading calls that ran slower than the steady state (0 when there is no warm-up drift).
    pub warmup_calls: usize,
    /// How much slower the first window was than the median, as a fraction.
    pub warmup_excess: f64,
    /// First call of a sustained slowdown that lasts to the end of the run.
    pub slowdown_from: Option<usize>,
    /// How much slower the calls from `slowdown_from` were than the fastest early tenth, as a fraction.
    pub slowdown: f64,
    /// Calls beyond Tukey's inner fences but within the outer ones.
    pub mild_outliers: usize,
    /// Calls beyond Tukey's outer fences (3 IQR).
    pub severe_outliers: usize,
}

/// Relative excess above which the first window counts as warm-up drift.
const DRIFT: f64 = 0.10;
/// Relative rise over the early best that counts as a sustained slowdown.
const SLOWDOWN: f64 = 0.10;

impl Trend {
    /// Analyzes latencies in call order; `None` for fewer than 20 calls.
    pub fn analyze(latencies: &[f64]) -> Option<Trend> {
        let n = latencies.len();
        if n < 20 {
            return None;
        }
        let sorted = stats::sorted(latencies);
        let median = stats::percentile_sorted(&sorted, 50.0);
        let fences = TukeyFences::from_sorted(&sorted);
        let severe_outliers = latencies
            .iter()
            .filter(|&&x| x < fences.lower_outer || x > fences.upper_outer)
            .count();
        let mild_outliers =
            latencies.iter().filter(|&&x| fences.is_outlier(x)).count() - severe_outliers;

        let window = (n / 20).max(5);
        let window_median =
            |start: usize| stats::median(&latencies[start..(start + window).min(n)]);
        let first = window_median(0);
        let (mut warmup_calls, mut warmup_excess) = (0, 0.0);
        if median > 0.0 && first > median * (1.0 + DRIFT) {
            let stride = (window / 5).max(1);
            let mut start = 0;
            while start < n / 2 && window_median(start) > median * (1.0 + DRIFT / 2.0) {
                start += stride;
            }
            warmup_calls = (start + window / 2).min(n / 2).max(1);
            warmup_excess = first / median - 1.0;
        }

        let (mut slowdown_from, mut slowdown) = (None, 0.0);
        if n >= 50 {
            let tenths: Vec<f64> = (0..10)
                .map(|t| stats::median(&latencies[t * n / 10..(t + 1) * n / 10]))
                .collect();
            let best_early = tenths[..5].iter().copied().fold(f64::INFINITY, f64::min);
            let limit = best_early * (1.0 + SLOWDOWN);
            // The first tenth from which every later tenth stays above the limit, lasting ≥ 2 tenths.
            if let Some(j) = (1..=8).find(|&j| tenths[j..].iter().all(|&m| m > limit))
                && best_early > 0.0
            {
                slowdown_from = Some(j * n / 10);
                slowdown = stats::median(&latencies[j * n / 10..]) / best_early - 1.0;
            }
        }
        Some(Trend {
            window,
            warmup_calls,
            warmup_excess,
            slowdown_from,
            slowdown,
            mild_outliers,
            severe_outliers,
        })
    }
}

/// Seconds from the start of the first timed call to the end of the last one.
pub fn observed_span_s(observations: &[Observation]) -> Option<f64> {
    let first = observations.iter().map(|o| o.start_ns).min()?;
    let last = observations
        .iter()
        .map(|o| o.start_ns.saturating_add(o.wall_ns))
        .max()?;
    Some(last.saturating_sub(first) as f64 / 1e9)
}

/// The verdict for one case. `observations` (in call order) refine the duration and add trend notes;
/// without them the summed call time from result.json stands in for the duration.
pub fn assess(
    case: &CaseResult,
    observations: Option<&[Observation]>,
    policy: &Policy,
) -> (Validity, Option<Trend>) {
    let mut constraints = Vec::new();
    let mut notes = Vec::new();
    let mut recommendations = Vec::new();
    let metrics = match (&case.metrics, case.status) {
        (Some(m), CaseStatus::Completed) => {
            constraints.push(Constraint {
                name: "no failed calls".into(),
                met: true,
                detail: format!("all {} timed calls completed", m.latency_ms.count),
            });
            m
        }
        (Some(m), CaseStatus::Interrupted) => {
            constraints.push(Constraint {
                name: "completed".into(),
                met: false,
                detail: case
                    .error
                    .clone()
                    .unwrap_or_else(|| "interrupted: the statistics are partial".into()),
            });
            recommendations.push(
                "run the case again to the end; raise --timeout or bound it with --max-duration"
                    .into(),
            );
            m
        }
        _ => {
            let reason = case
                .error
                .clone()
                .unwrap_or_else(|| "no measurements were recorded".into());
            constraints.push(Constraint {
                name: "no failed calls".into(),
                met: false,
                detail: format!("the case failed: {reason}"),
            });
            for name in ["samples", "min duration", "p50 pinned down"] {
                constraints.push(Constraint {
                    name: name.into(),
                    met: false,
                    detail: "not measured".into(),
                });
            }
            // Outputs that differ from `--check-outputs` are a question of tolerances or data, not
            // something a log explains: say where the errors are and what to change.
            let mismatched = case.output_check.iter().any(|c| !c.passed);
            // The log the case recorded (a rounds run's `worker-rNN.log`), only when the worker wrote one
            // with something in it; otherwise the failure above is all there is.
            recommendations.push(match &case.files.worker_log {
                _ if mismatched => "outputs differ from --check-outputs (see output_check in result.json): if it is rounding, raise --atol/--rtol; else check that --inputs are what the expected outputs were computed from".into(),
                Some(log) => format!("read {log}, fix the failure and run the case again"),
                None => "fix the failure named above and run the case again".into(),
            });
            return (
                Validity {
                    valid: false,
                    constraints,
                    notes,
                    recommendations,
                },
                None,
            );
        }
    };

    let n = metrics.latency_ms.count as u64;
    let enough = n >= policy.min_samples;
    constraints.push(Constraint {
        name: "samples".into(),
        met: enough,
        detail: if enough {
            format!("{n} timed calls (at least {})", policy.min_samples)
        } else {
            format!(
                "{n} timed calls, fewer than the {} the median's interval needs",
                policy.min_samples
            )
        },
    });
    if !enough {
        recommendations.push(format!(
            "raise --iterations to at least {} (or drop it: a default run sizes itself)",
            policy.min_samples
        ));
    }
    let unsupported: Vec<&str> = [(90.0, "p90"), (95.0, "p95"), (99.0, "p99")]
        .into_iter()
        .filter(|&(p, _)| !crate::stats::percentile_supported(p, n as usize))
        .map(|(_, name)| name)
        .collect();
    if !unsupported.is_empty() {
        notes.push(format!(
            "{} rest on {n} calls, too few to reach that far into the tail (p99 needs 100): shown marked with ~",
            unsupported.join(", ")
        ));
    }

    let duration = observations
        .and_then(observed_span_s)
        .unwrap_or(metrics.timed_seconds);
    let long_enough = duration >= policy.min_duration_s;
    constraints.push(Constraint {
        name: "min duration".into(),
        met: long_enough,
        detail: format!(
            "timed loop ran {} s (minimum {} s)",
            fmt_num(duration),
            fmt_num(policy.min_duration_s)
        ),
    });
    if !long_enough {
        recommendations.push(format!(
            "add --duration {} so timing covers at least {} s (shorter runs are dominated by timer and scheduler noise)",
            policy.min_duration_s.ceil().max(1.0),
            fmt_num(policy.min_duration_s)
        ));
    }

    let latencies: Option<Vec<f64>> = observations.map(latencies_ms);
    let half_width = match latencies.as_deref() {
        Some(l) if !l.is_empty() => p50_half_width(l),
        _ => metrics.p50_ci_ms.as_ref().and_then(interval_half_width),
    };
    let pinned = half_width.is_some_and(|h| h <= policy.p50_half_width);
    constraints.push(Constraint {
        name: "p50 pinned down".into(),
        met: pinned,
        detail: match half_width {
            Some(h) => format!(
                "the p50's 95 % interval reaches ±{} % (limit ±{} %)",
                fmt_pct(h),
                fmt_pct(policy.p50_half_width)
            ),
            None => "too few calls for a 95 % interval of the p50".into(),
        },
    });
    if !pinned {
        recommendations.push(match case.measurement.max_duration_s {
            Some(max) => format!(
                "measure longer so the p50 settles: raise --max-duration (now {max} s) or add --duration; a run with its default count keeps measuring until the p50 is pinned down or its budget is spent"
            ),
            _ => "measure longer so the p50 settles: add --duration, or drop --iterations so the run measures until the p50 is pinned down (within --max-duration)".into(),
        });
    }

    let cv = metrics.latency_ms.cv;
    let (spread, how) = match latencies.as_deref() {
        Some(l) if !l.is_empty() => (
            crate::stats::robust_cv(l),
            format!(
                "robust CV (MAD) {} %, plain CV {} %",
                fmt_pct(crate::stats::robust_cv(l)),
                fmt_pct(cv)
            ),
        ),
        _ => (cv, format!("coefficient of variation {} %", fmt_pct(cv))),
    };
    if spread > policy.max_cv {
        notes.push(format!(
            "noisy: {how}, above {} %: the tail percentiles move with the noise; the verdict rests on the p50's interval",
            fmt_pct(policy.max_cv)
        ));
        recommendations.push(format!(
            "latency varies too much: close other programs, pin threads (taskset), raise --warmup, or {}",
            telemetry_advice(case)
        ));
    }

    let trend = latencies.as_deref().and_then(Trend::analyze);
    if let Some(t) = &trend {
        if t.warmup_calls > 0 {
            notes.push(format!(
                "warm-up drift: the first timed calls ran {} % slower than the median, for about {} calls",
                fmt_pct(t.warmup_excess),
                t.warmup_calls
            ));
            recommendations.push(format!(
                "raise --warmup by at least {} (currently {})",
                t.warmup_calls, case.measurement.warmup
            ));
        }
        if let Some(from) = t.slowdown_from {
            notes.push(format!(
                "sustained slowdown: latency rose {} % from call {from} to the end (throttling or a competing process)",
                fmt_pct(t.slowdown)
            ));
            recommendations.push(format!(
                "{}, set the CPU governor to performance, or let the machine cool down between runs",
                telemetry_advice(case)
            ));
        }
        if t.mild_outliers + t.severe_outliers > 0 {
            notes.push(format!(
                "Tukey outliers: {} mild (beyond 1.5 IQR), {} severe (beyond 3 IQR)",
                t.mild_outliers, t.severe_outliers
            ));
        }
    } else if metrics.outliers > 0 {
        notes.push(format!(
            "Tukey outliers: {} beyond 1.5 IQR",
            metrics.outliers
        ));
    }
    let valid = constraints.iter().all(|c| c.met);
    (
        Validity {
            valid,
            constraints,
            notes,
            recommendations,
        },
        trend,
    )
}

/// Where to look for throttling: the case's telemetry.json when the run wrote one (it does by default
/// only where nvidia-smi exists), else how to get one.
fn telemetry_advice(case: &CaseResult) -> String {
    match &case.files.telemetry {
        Some(file) => format!("check {file} for throttling"),
        None => "run again with --telemetry on and check the case's telemetry.json for throttling (CPU load and clocks)".into(),
    }
}

/// Latencies in milliseconds, in call order.
pub fn latencies_ms(observations: &[Observation]) -> Vec<f64> {
    let mut ordered: Vec<&Observation> = observations.iter().collect();
    ordered.sort_by_key(|o| o.iteration);
    ordered.iter().map(|o| o.wall_ns as f64 / 1e6).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `walls_ms[i]` is call i's wall time; calls start 10 ms apart (a 2 s run for 200 calls).
    fn observations(walls_ms: impl Iterator<Item = f64>) -> Vec<Observation> {
        walls_ms
            .enumerate()
            .map(|(i, ms)| Observation {
                iteration: i as u64,
                start_ns: i as u64 * 10_000_000,
                wall_ns: (ms * 1e6) as u64,
                ..Default::default()
            })
            .collect()
    }

    /// A completed case of these calls, built through JSON so later fields with defaults do not break it.
    fn completed(obs: &[Observation]) -> CaseResult {
        let op = crate::operations::operation("test_sleep").expect("op");
        serde_json::from_value(serde_json::json!({
            "dir": "001-m", "model": "m", "case": "default", "label": "default",
            "task_strategy": "test_sleep", "operation": "test_sleep",
            "runtime": {"name": "tract", "version": "0.23.9"},
            "status": "completed", "error": null, "identity": "0".repeat(64), "bundle": null,
            "measurement": {"warmup": 2, "iterations": obs.len(), "min_duration_s": 0.0,
                "max_duration_s": 30.0, "observations": obs.len(), "load_ms": null},
            "metrics": crate::result::reduce(op, obs),
            "sweep_point": {}, "request": {},
            "files": {"resolved_case": "r.json", "observations": "o.jsonl", "worker_log": null, "telemetry": null}
        }))
        .expect("a valid case")
    }

    #[test]
    fn a_noisy_run_whose_p50_is_pinned_down_is_valid_with_a_noisy_note() {
        // Each block of 20 calls holds ten at 1.0 ms and ten at 1.5 ms: every block's median is 1.25 ms
        // (the p50 is pinned down exactly) while the robust CV is about 30 %.
        let obs = observations((0..200).map(|i| if i % 10 < 5 { 1.0 } else { 1.5 }));
        let (v, _) = assess(&completed(&obs), Some(&obs), &Policy::default());
        assert!(v.valid, "{v:?}");
        assert!(
            v.notes.iter().any(|n| n.starts_with("noisy: robust CV")),
            "{v:?}"
        );
        assert!(
            v.recommendations
                .iter()
                .any(|r| r.starts_with("latency varies too much")),
            "{v:?}"
        );
    }

    #[test]
    fn a_drifting_p50_is_invalid_and_the_fix_is_named() {
        // Calls slow down steadily from 1 ms to 3 ms: the blocks' medians spread, the p50 is not pinned.
        let obs = observations((0..200).map(|i| 1.0 + f64::from(i) / 100.0));
        let (v, _) = assess(&completed(&obs), Some(&obs), &Policy::default());
        assert!(!v.valid);
        let failures = v.failures();
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert!(failures[0].starts_with("p50 pinned down: the p50's 95 % interval reaches ±"));
        assert!(
            v.recommendations
                .iter()
                .any(|r| r.contains("raise --max-duration (now 30 s)")),
            "{v:?}"
        );
        assert!(
            p50_half_width(&obs.iter().map(|o| o.wall_ns as f64).collect::<Vec<_>>())
                .is_some_and(|h| h > P50_HALF_WIDTH)
        );
        assert_eq!(p50_half_width(&[1.0, 2.0]), None);
    }

    fn steady(n: usize, ms: f64) -> Vec<f64> {
        // Deterministic ±2 % wobble.
        (0..n)
            .map(|i| ms * (1.0 + 0.02 * (((i * 7919) % 13) as f64 / 6.0 - 1.0)))
            .collect()
    }

    #[test]
    fn a_steady_run_shows_no_drift_or_slowdown() {
        let t = Trend::analyze(&steady(400, 10.0)).expect("trend");
        assert_eq!(t.warmup_calls, 0);
        assert_eq!(t.slowdown_from, None);
        assert_eq!(t.severe_outliers, 0);
        assert!(Trend::analyze(&steady(19, 10.0)).is_none());
    }

    #[test]
    fn slow_first_calls_are_warm_up_drift() {
        let mut v = steady(400, 10.0);
        for x in v.iter_mut().take(40) {
            *x *= 1.6;
        }
        let t = Trend::analyze(&v).expect("trend");
        assert!(
            (30..=60).contains(&t.warmup_calls),
            "about 40 slow calls, got {}",
            t.warmup_calls
        );
        assert!(t.warmup_excess > 0.4, "{}", t.warmup_excess);
        assert_eq!(t.slowdown_from, None, "drift is not a slowdown");
    }

    #[test]
    fn a_late_lasting_rise_is_a_slowdown() {
        let mut v = steady(500, 10.0);
        for x in v.iter_mut().skip(300) {
            *x *= 1.3;
        }
        let t = Trend::analyze(&v).expect("trend");
        assert_eq!(t.slowdown_from, Some(300));
        assert!((t.slowdown - 0.3).abs() < 0.05, "{}", t.slowdown);
        // A rise that falls back is not sustained.
        let mut w = steady(500, 10.0);
        for x in w.iter_mut().skip(200).take(100) {
            *x *= 1.3;
        }
        assert_eq!(Trend::analyze(&w).expect("trend").slowdown_from, None);
    }

    #[test]
    fn outliers_split_into_mild_and_severe() {
        // Quartiles 10 and 11 (IQR 1): inner fences 8.5 / 12.5, outer fences 7 / 14.
        let mut v: Vec<f64> = (0..200)
            .map(|i| if i % 2 == 0 { 10.0 } else { 11.0 })
            .collect();
        v[0] = 13.0; // mild
        v[2] = 20.0; // severe
        v[4] = 8.0; // mild, low side
        let t = Trend::analyze(&v).expect("trend");
        assert_eq!((t.mild_outliers, t.severe_outliers), (2, 1));
    }
}
