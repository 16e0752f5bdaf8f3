//! `--exportTimes` reader: one record per timed iteration with enqueue/H2D/compute/D2H timestamps.

use serde::Deserialize;
use trtmc_core::stats::{percentile_nearest_rank_sorted, percentile_sorted};

use super::loose::{LNum, LObj, LStr, Slot};
use super::{FormatError, describe_object_keys, first_byte, invalid_json};

/// Summary statistics of one per-iteration quantity, in milliseconds.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Stats {
    pub count: usize,
    pub mean: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub p90: f64,
    pub p99: f64,
}

impl Stats {
    /// Statistics of `values`; `None` when empty. Percentiles by the nearest-rank method
    /// (`trtmc_core::stats::NEAREST_RANK_METHOD`): observed values, like trtexec's own summary.
    pub fn of(mut values: Vec<f64>) -> Option<Stats> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let rank = |p: f64| percentile_nearest_rank_sorted(&values, p);
        Some(Stats {
            count: n,
            mean: values.iter().sum::<f64>() / n as f64,
            median: percentile_sorted(&values, 50.0),
            min: values[0],
            max: values[n - 1],
            p90: rank(90.0),
            p99: rank(99.0),
        })
    }
}

/// End-to-end timings of the profiled engine.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Times {
    pub iterations: usize,
    pub latency_ms: Option<Stats>,
    pub compute_ms: Option<Stats>,
    pub h2d_ms: Option<Stats>,
    pub d2h_ms: Option<Stats>,
    pub enqueue_ms: Option<Stats>,
    /// Records that lacked the numbers above.
    pub skipped_records: usize,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawTime {
    #[serde(rename = "latencyMs")]
    latency: LNum,
    #[serde(rename = "computeMs")]
    compute: LNum,
    #[serde(rename = "h2dMs")]
    h2d: LNum,
    #[serde(rename = "d2hMs")]
    d2h: LNum,
    #[serde(rename = "startEnqMs")]
    start_enq: LNum,
    #[serde(rename = "endEnqMs")]
    end_enq: LNum,
    name: LStr,
}

/// Reads an `--exportTimes` document.
pub fn read_times(text: &str) -> Result<Times, FormatError> {
    match first_byte(text) {
        Some(b'[') => {}
        Some(b'{') => {
            let keys = super::layers::object_keys(text);
            if keys.is_empty() {
                return Err(match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                    Err(e) => invalid_json(text, &e),
                    Ok(_) => FormatError::Shape("the document is an empty object".to_owned()),
                });
            }
            return Err(FormatError::WrongKind {
                expected: "a times export (--exportTimes writes a list)",
                found: describe_object_keys(&keys),
            });
        }
        Some(_) => {
            return Err(match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                Err(e) => invalid_json(text, &e),
                Ok(_) => {
                    FormatError::Shape("the document is not a list of timing records".to_owned())
                }
            });
        }
        None => return Err(FormatError::Shape("the file is empty".to_owned())),
    }
    let records: Vec<LObj<RawTime>> =
        serde_json::from_str(text).map_err(|e| invalid_json(text, &e))?;
    let mut latency = Vec::with_capacity(records.len());
    let mut compute = Vec::new();
    let mut h2d = Vec::new();
    let mut d2h = Vec::new();
    let mut enqueue = Vec::new();
    let mut skipped = 0;
    for rec in records {
        let Slot::Value(rec) = rec.0 else {
            skipped += 1;
            continue;
        };
        if !rec.name.0.is_missing() {
            return Err(FormatError::WrongKind {
                expected: "a times export",
                found: "it looks like a trtexec --exportProfile file (per-layer times)".to_owned(),
            });
        }
        let Some(l) = rec.latency.0.value().copied() else {
            skipped += 1;
            continue;
        };
        latency.push(l);
        compute.extend(rec.compute.0.value().copied());
        h2d.extend(rec.h2d.0.value().copied());
        d2h.extend(rec.d2h.0.value().copied());
        if let (Some(s), Some(e)) = (rec.start_enq.0.value(), rec.end_enq.0.value()) {
            enqueue.push(e - s);
        }
    }
    if latency.is_empty() {
        return Err(FormatError::Shape(
            "no record has a numeric `latencyMs`".to_owned(),
        ));
    }
    Ok(Times {
        iterations: latency.len(),
        latency_ms: Stats::of(latency),
        compute_ms: Stats::of(compute),
        h2d_ms: Stats::of(h2d),
        d2h_ms: Stats::of(d2h),
        enqueue_ms: Stats::of(enqueue),
        skipped_records: skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarises_latency() {
        let text = r#"[{"startEnqMs": 1, "endEnqMs": 1.5, "h2dMs": 0, "computeMs": 2, "d2hMs": 0, "latencyMs": 2},
                      {"startEnqMs": 3, "endEnqMs": 3.5, "h2dMs": 0, "computeMs": 4, "d2hMs": 0, "latencyMs": 4},
                      {"latencyMs": 3}]"#;
        let t = read_times(text).expect("reads");
        assert_eq!(t.iterations, 3);
        let l = t.latency_ms.expect("latency");
        assert_eq!((l.mean, l.median, l.min, l.max), (3.0, 3.0, 2.0, 4.0));
        assert_eq!(t.enqueue_ms.expect("enqueue").mean, 0.5);
    }

    #[test]
    fn percentiles_use_nearest_rank() {
        let s = Stats::of((1..=100).map(f64::from).collect()).expect("stats");
        assert_eq!((s.p90, s.p99, s.median), (90.0, 99.0, 50.5));
    }

    #[test]
    fn rejects_other_documents() {
        assert!(read_times(r#"[{"count": 1}, {"name": "a", "timeMs": 1}]"#).is_err());
        assert!(read_times(r#"{"Layers": []}"#).is_err());
        assert!(read_times("[]").is_err());
        assert!(read_times("[1, 2").is_err());
    }
}
