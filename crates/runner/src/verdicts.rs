//! `run`'s verdicts between cases: each case against the baseline case from their paired rounds, with
//! the one interval method of trtmc (`trtmc_core::intervals`: the median of the per-round ratios and its
//! distribution-free interval; docs/statistics.md). Rounds are interleaved (A B, B A, …), so round `i` of
//! every case ran next to round `i` of the baseline.

use std::collections::BTreeMap;

use trtmc_core::artifacts::benchmark_run::RoundsStop;
use trtmc_core::artifacts::{CaseResult, CaseStatus, Comparison};
use trtmc_core::intervals::{self, MIN_ROUNDS, RoundInterval};
use trtmc_core::verdicts::{Difference, SAME_WITHIN};

use crate::run::PlannedCase;

/// Confidence of every verdict.
pub const CONFIDENCE: f64 = 0.95;

/// What tells the planned cases apart, per case directory: the model, case, runtime and the settings
/// whose values differ between cases (`onnxruntime · threads=2`); `case N` when nothing does.
pub fn labels(planned: &[PlannedCase]) -> Vec<String> {
    let facts: Vec<BTreeMap<String, String>> = planned
        .iter()
        .map(|p| {
            let r = &p.resolved;
            let mut f = BTreeMap::from([
                ("0 model".to_string(), p.profile.name.clone()),
                ("1 case".to_string(), r.case.clone()),
                ("2 runtime".to_string(), r.runtime.value.clone()),
            ]);
            let request = r.request.iter().map(|(k, v)| (k.clone(), v.value.clone()));
            for (k, v) in r
                .runtime_values()
                .into_iter()
                .chain(r.build_values())
                .chain(request)
            {
                f.insert(format!("3 {k}"), value_text(&v));
            }
            f
        })
        .collect();
    let keys: std::collections::BTreeSet<&String> = facts.iter().flat_map(|f| f.keys()).collect();
    let differing: Vec<&String> = keys
        .into_iter()
        .filter(|k| {
            let mut values = facts.iter().map(|f| f.get(*k));
            let first = values.next().flatten();
            values.any(|v| v != first)
        })
        .collect();
    facts
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let parts: Vec<String> = differing
                .iter()
                .filter_map(|k| {
                    let v = f.get(*k)?;
                    Some(match k.split_once(' ') {
                        Some(("3", name)) => format!("{name}={v}"),
                        _ => v.clone(),
                    })
                })
                .collect();
            if parts.is_empty() {
                format!("case {}", i + 1)
            } else {
                parts.join(" · ")
            }
        })
        .collect()
}

fn value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One case's paired rounds as a comparison reads them: from a finished [`CaseResult`], or from a
/// case still being measured (a look between blocks of rounds).
pub struct Paired<'a> {
    /// The case directory's name.
    pub dir: &'a str,
    /// The workload the case measured (only cases of the baseline's workload are compared).
    pub identity: &'a str,
    /// Each round's p50, in round order.
    pub p50_ms: Vec<f64>,
    /// The case measured without failing (a failed case is not compared).
    pub completed: bool,
}

impl<'a> Paired<'a> {
    /// A finished case.
    pub fn of(case: &'a CaseResult) -> Paired<'a> {
        Paired {
            dir: &case.dir,
            identity: &case.identity,
            p50_ms: case.rounds.iter().map(|r| r.p50_ms).collect(),
            completed: case.status == CaseStatus::Completed,
        }
    }
}

/// Where a run stands in its schedule of looks (`trtmc_core::intervals::Looks`): the confidence of
/// each look's interval, and why it stopped adding rounds (`None` with a single planned look).
#[derive(Debug, Clone, Copy)]
pub struct Look {
    /// Confidence of each look's interval (below [`CONFIDENCE`] when several looks share its error).
    pub confidence: f64,
    /// Why the run stopped adding rounds, when it planned several looks.
    pub stopped_by: Option<RoundsStop>,
}

impl Look {
    /// A run with one planned look: the interval at the full confidence.
    pub const SINGLE: Look = Look {
        confidence: CONFIDENCE,
        stopped_by: None,
    };
}

/// The baseline (`baseline`: its directory) and each case compared with it, with the interval of
/// its ratio at `confidence`. Only completed cases of the baseline's workload (its identity) are
/// compared, unless `any_workload` (an explicit `--baseline`): one model's time says nothing about
/// another's. Nothing when the baseline has fewer than two rounds or failed.
fn against_baseline<'c>(
    cases: &'c [Paired<'c>],
    baseline: &str,
    any_workload: bool,
    confidence: f64,
) -> Option<(&'c Paired<'c>, Vec<(&'c Paired<'c>, RoundInterval)>)> {
    let base = cases.iter().find(|c| c.dir == baseline)?;
    if base.p50_ms.len() < 2 || !base.completed {
        return None;
    }
    let compared = cases
        .iter()
        .filter(|c| c.dir != base.dir && c.completed)
        .filter(|c| any_workload || c.identity == base.identity)
        .filter_map(|c| {
            Some((
                c,
                intervals::paired_ratio(&c.p50_ms, &base.p50_ms, confidence)?,
            ))
        })
        .collect();
    Some((base, compared))
}

/// Whether every case compared with the baseline has a decided difference at `confidence` (faster,
/// slower or the same): a look between blocks of rounds. `true` when there is nothing to compare.
pub fn decided(cases: &[Paired<'_>], baseline: &str, any_workload: bool, confidence: f64) -> bool {
    let Some((_, compared)) = against_baseline(cases, baseline, any_workload, confidence) else {
        return true;
    };
    compared
        .iter()
        .all(|(_, ratio)| Difference::of(&ratio.interval, ratio.trusted(MIN_ROUNDS)).decided())
}

/// Whether any case would be compared with the baseline: only then can more rounds change a verdict.
pub fn anything_to_compare(identities: &[&str], baseline: usize, any_workload: bool) -> bool {
    let Some(base) = identities.get(baseline) else {
        return false;
    };
    identities
        .iter()
        .enumerate()
        .any(|(i, id)| i != baseline && (any_workload || id == base))
}

/// Every completed case with rounds against the baseline case (`baseline`: its directory), labelled by
/// `labels` (per case directory), each interval at `look.confidence`. Nothing when the baseline has no
/// rounds. Only the cases of the baseline's workload (its identity) are compared, unless
/// `any_workload` (an explicit `--baseline`).
pub fn compare(
    cases: &[CaseResult],
    labels: &BTreeMap<String, String>,
    baseline: &str,
    any_workload: bool,
    look: Look,
) -> Vec<Comparison> {
    let paired: Vec<Paired<'_>> = cases.iter().map(Paired::of).collect();
    let Some((base, compared)) = against_baseline(&paired, baseline, any_workload, look.confidence)
    else {
        return Vec::new();
    };
    let label = |dir: &str| labels.get(dir).cloned().unwrap_or_else(|| dir.to_string());
    compared
        .into_iter()
        .map(|(c, ratio)| {
            let trusted = ratio.trusted(MIN_ROUNDS);
            let i = ratio.interval;
            let mut verdict = verdict(
                &label(c.dir),
                &label(base.dir),
                i.estimate,
                i.low,
                i.high,
                ratio.rounds,
                trusted,
            );
            // An undecided verdict says which budget ended the rounds.
            if let Some(stop) = look.stopped_by
                && stop != RoundsStop::Decided
                && !Difference::of(&i, trusted).decided()
            {
                verdict.push_str(&format!(" [undecided: {}]", stop.describe()));
            }
            Comparison {
                case: c.dir.to_string(),
                baseline: base.dir.to_string(),
                ratio: i.estimate,
                low: i.low,
                high: i.high,
                // The interval holds the truth at this confidence over all looks together.
                confidence: CONFIDENCE,
                rounds: ratio.rounds,
                trusted,
                verdict,
                stopped_by: look.stopped_by,
                look_confidence: look.stopped_by.map(|_| look.confidence),
            }
        })
        .collect()
}

/// `A ran 2.19× faster than B (95 % CI 2.11–2.27, 10 rounds)`, or slower, or no difference shown, or too
/// few rounds to tell. `ratio`, `low`, `high`: A's p50 over B's.
pub fn verdict(
    a: &str,
    b: &str,
    ratio: f64,
    low: f64,
    high: f64,
    rounds: usize,
    trusted: bool,
) -> String {
    let x = |v: f64| format!("{v:.2}×");
    let interval = trtmc_core::stats::Interval {
        estimate: ratio,
        low,
        high,
        confidence: CONFIDENCE,
    };
    // The rule is core's (`trtmc_core::verdicts::Difference`), beside the interval method.
    match Difference::of(&interval, trusted) {
        Difference::TooFewRounds => format!(
            "{a} at {} {b}'s p50 over {rounds} rounds: too few rounds for a 95 % interval (--rounds {MIN_ROUNDS} or more)",
            x(ratio)
        ),
        Difference::Faster => format!(
            "{a} ran {} faster than {b} (95 % CI {:.2}–{:.2}, {rounds} rounds)",
            x(1.0 / ratio),
            1.0 / high,
            1.0 / low
        ),
        Difference::Slower => format!(
            "{a} ran {} slower than {b} (95 % CI {low:.2}–{high:.2}, {rounds} rounds)",
            x(ratio)
        ),
        Difference::Same => format!(
            "{a} and {b} ran the same within {:.0} %, {a} at {} {b}'s p50 (95 % CI {low:.2}–{high:.2}, {rounds} rounds)",
            SAME_WITHIN * 100.0,
            x(ratio)
        ),
        Difference::NotShown => format!(
            "{a} and {b}: no difference shown, {a} at {} {b}'s p50 (95 % CI {low:.2}–{high:.2}, {rounds} rounds)",
            x(ratio)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_say_faster_slower_same_or_too_few_rounds() {
        assert_eq!(
            verdict("ort", "tract", 0.5, 0.45, 0.55, 10, true),
            "ort ran 2.00× faster than tract (95 % CI 1.82–2.22, 10 rounds)"
        );
        assert_eq!(
            verdict("b", "a", 1.3, 1.2, 1.4, 10, true),
            "b ran 1.30× slower than a (95 % CI 1.20–1.40, 10 rounds)"
        );
        assert!(verdict("b", "a", 1.02, 0.97, 1.08, 10, true).contains("no difference shown"));
        assert!(
            verdict("b", "a", 1.0, 0.99, 1.01, 10, true)
                .starts_with("b and a ran the same within 2 %"),
            "{}",
            verdict("b", "a", 1.0, 0.99, 1.01, 10, true)
        );
        let few = verdict("b", "a", 0.5, 0.4, 0.6, 3, false);
        assert!(
            few.contains("too few rounds") && !few.contains("faster"),
            "{few}"
        );
    }
}
