//! Reducing raw observations into the metrics of `result.json`. The documents themselves are typed in
//! [`crate::artifacts`].

use std::collections::BTreeMap;

use crate::artifacts::{Metrics, Observation, Throughput};
use crate::operations::{ItemCount, OperationDecl};
use crate::stats::{self, TukeyFences};

/// Coefficient of variation above which a run is flagged as noisy (trtexec warns at 2.5 % on GPUs; CPU
/// runs here drift more, so flag at 10 %).
pub const NOISY_CV: f64 = 0.10;

/// Reduces raw observations into the operation's declared metrics. `None` when there are none.
pub fn reduce(op: &OperationDecl, observations: &[Observation]) -> Option<Metrics> {
    if observations.is_empty() {
        return None;
    }
    let latencies: Vec<f64> = observations
        .iter()
        .map(|o| o.wall_ns as f64 / 1e6)
        .collect();
    let latency_ms = stats::summarize(&latencies)?;
    let timed_seconds = observations.iter().map(|o| o.wall_ns as f64).sum::<f64>() / 1e9;
    // Blocks of consecutive calls are the unit (crate::intervals): calls are not independent.
    let p50_ci_ms = crate::intervals::run_p50(&latencies, 0.95).map(|r| r.interval);
    let fences = TukeyFences::from_sorted(&stats::sorted(&latencies));
    let outliers = latencies.iter().filter(|&&x| fences.is_outlier(x)).count();

    let throughputs = op
        .throughputs
        .iter()
        .map(|t| {
            let items = count_items(t.count, observations);
            let quantity = items as f64 * count_scale(op, t.count);
            let value = if timed_seconds > 0.0 {
                quantity / timed_seconds
            } else {
                0.0
            };
            Throughput {
                name: t.name.into(),
                unit: t.unit.into(),
                value,
                items,
            }
        })
        .collect();

    let ratios = op
        .ratios
        .iter()
        .map(|r| {
            let items = count_items(r.per, observations);
            let quantity = items as f64 * count_scale(op, r.per);
            Throughput {
                name: r.name.into(),
                unit: r.unit.into(),
                value: if quantity > 0.0 {
                    timed_seconds / quantity
                } else {
                    0.0
                },
                items,
            }
        })
        .collect();

    let mut stages_ms = BTreeMap::new();
    for stage in op.stages {
        let values: Vec<f64> = observations
            .iter()
            .filter_map(|o| o.stages_ns.get(stage.name))
            .map(|&ns| ns as f64 / 1e6)
            .collect();
        if let Some(s) = stats::summarize(&values) {
            stages_ms.insert(stage.name.to_string(), s);
        }
    }

    let mut warnings = Vec::new();
    let n = observations.len();
    if n < 20 {
        warnings.push(format!("only {n} timed calls: p95 and p99 are interpolated from the top few samples (raise --iterations)"));
    } else if n < 100 {
        warnings.push(format!(
            "only {n} timed calls: p99 rests on fewer than 100 samples (raise --iterations)"
        ));
    }
    if latency_ms.cv > NOISY_CV {
        warnings.push(format!(
            "latency varies a lot (coefficient of variation {:.1} %): close other programs, pin threads, or raise --warmup",
            latency_ms.cv * 100.0
        ));
    }
    Some(Metrics {
        latency_ms,
        p50_ci_ms,
        throughputs,
        ratios,
        stages_ms,
        outliers,
        timed_seconds,
        warnings,
    })
}

/// Items of `count` summed over the observations, in the count's base unit.
fn count_items(count: ItemCount, observations: &[Observation]) -> u64 {
    observations
        .iter()
        .map(|o| match count {
            ItemCount::Call => 1,
            ItemCount::Items => o.items.unwrap_or(1),
            ItemCount::Elements => o.items.unwrap_or(1) * o.elements_per_item.unwrap_or(0),
            ItemCount::OutputTokens => o.output_tokens.unwrap_or(0),
            ItemCount::Counter(name) => o.counts.get(name).copied().unwrap_or(0),
        })
        .sum()
}

/// Factor from a count's base unit to its metric unit (e.g. audio microseconds to seconds).
fn count_scale(op: &OperationDecl, count: ItemCount) -> f64 {
    match count {
        ItemCount::Counter(name) => op
            .counters
            .iter()
            .find(|c| c.name == name)
            .map_or(1.0, |c| c.scale),
        _ => 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operations::operation;

    fn obs(i: u64, wall_ms: f64, tokens: u64) -> Observation {
        Observation {
            iteration: i,
            start_ns: i * 10_000_000,
            wall_ns: (wall_ms * 1e6) as u64,
            output_tokens: Some(tokens),
            stages_ns: BTreeMap::from([("time_to_first_token".to_string(), 1_000_000)]),
            ..Default::default()
        }
    }

    #[test]
    fn generation_metrics_are_consistent() {
        let op = operation("generate").expect("generate");
        let o: Vec<Observation> = (0..10).map(|i| obs(i, 20.0, 32)).collect();
        let m = reduce(op, &o).expect("metrics");
        assert!((m.latency_ms.p50 - 20.0).abs() < 1e-9);
        assert!((m.timed_seconds - 0.2).abs() < 1e-9);
        let tps = m
            .throughputs
            .iter()
            .find(|t| t.name == "output token/s")
            .expect("tps");
        // tokens/s × time = tokens produced
        assert!((tps.value * m.timed_seconds - 320.0).abs() < 1e-6);
        let rps = m
            .throughputs
            .iter()
            .find(|t| t.name == "request/s")
            .expect("rps");
        assert!((rps.value - 50.0).abs() < 1e-9);
        assert_eq!(m.stages_ms["time_to_first_token"].p50, 1.0);
        assert!(m.warnings.iter().any(|w| w.contains("p95 and p99")));
    }

    #[test]
    fn encode_counts_vectors_and_elements() {
        let op = operation("encode").expect("encode");
        let o: Vec<Observation> = (0..4)
            .map(|i| Observation {
                iteration: i,
                wall_ns: 1_000_000,
                items: Some(8),
                elements_per_item: Some(64),
                ..Default::default()
            })
            .collect();
        let m = reduce(op, &o).expect("metrics");
        let get = |n: &str| m.throughputs.iter().find(|t| t.name == n).expect(n).value;
        assert!((get("vector/s") - 8000.0).abs() < 1e-6);
        assert!((get("element/s") - 512_000.0).abs() < 1e-3);
        assert!(reduce(op, &[]).is_none());
    }

    #[test]
    fn audio_counters_give_audio_seconds_per_second_and_the_real_time_factor() {
        let op = operation("transcribe").expect("transcribe");
        // 4 calls of 10 ms, each transcribing 0.5 s of audio into 6 tokens.
        let o: Vec<Observation> = (0..4)
            .map(|i| Observation {
                iteration: i,
                wall_ns: 10_000_000,
                output_tokens: Some(6),
                counts: BTreeMap::from([("audio_us".to_string(), 500_000)]),
                ..Default::default()
            })
            .collect();
        let m = reduce(op, &o).expect("metrics");
        let get = |n: &str| m.throughputs.iter().find(|t| t.name == n).expect(n).value;
        assert!((get("audio s/s") - 50.0).abs() < 1e-9);
        assert!((get("output token/s") - 600.0).abs() < 1e-9);
        let rtf = m
            .ratios
            .iter()
            .find(|r| r.name == "real-time factor")
            .expect("rtf");
        assert!((rtf.value - 0.02).abs() < 1e-12);
        assert!((rtf.value * get("audio s/s") - 1.0).abs() < 1e-9);
        assert_eq!(rtf.items, 2_000_000);
    }
}
