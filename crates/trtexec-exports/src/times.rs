//! `--exportTimes` reader: one record per timed iteration with enqueue/H2D/compute/D2H timestamps.

use serde::Deserialize;
use trtmc_core::stats::{percentile_nearest_rank_sorted, percentile_sorted};

use super::loose::{LNum, LObj, LStr, Slot};
use super::{Export, FormatError, describe_object_keys, first_byte, invalid_json};

/// Summary statistics of one per-iteration quantity, in milliseconds.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Stats {
    /// Number of values.
    pub count: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median, interpolated between the two middle values of an even count.
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// 90th percentile, nearest rank.
    pub p90: f64,
    /// 99th percentile, nearest rank.
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
    /// Records with a numeric `latencyMs`: the iterations the statistics describe.
    pub iterations: usize,
    /// Host latency per iteration (`latencyMs`: input copy, compute, output copy).
    pub latency_ms: Option<Stats>,
    /// GPU compute per iteration (`computeMs`).
    pub compute_ms: Option<Stats>,
    /// Input copies per iteration (`h2dMs`).
    pub h2d_ms: Option<Stats>,
    /// Output copies per iteration (`d2hMs`).
    pub d2h_ms: Option<Stats>,
    /// Enqueue time per iteration (`endEnqMs - startEnqMs`), from records that have both.
    pub enqueue_ms: Option<Stats>,
    /// Records that lacked the numbers above.
    pub skipped_records: usize,
}

/// One record of an `--exportTimes` file as trtexec wrote it (ms since the start of the run); a value
/// the record lacks, or holds as something other than a number, is `None`. TensorRT 7.x's names
/// (`startInMs`, `inMs`, `outMs`, ...) are read as their later equivalents.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TimeRecord {
    /// Enqueue started (`startEnqMs`).
    pub start_enq_ms: Option<f64>,
    /// Enqueue returned (`endEnqMs`).
    pub end_enq_ms: Option<f64>,
    /// Input copies started (`startH2dMs`).
    pub start_h2d_ms: Option<f64>,
    /// Input copies ended (`endH2dMs`).
    pub end_h2d_ms: Option<f64>,
    /// Kernels started (`startComputeMs`).
    pub start_compute_ms: Option<f64>,
    /// Kernels ended (`endComputeMs`).
    pub end_compute_ms: Option<f64>,
    /// Output copies started (`startD2hMs`).
    pub start_d2h_ms: Option<f64>,
    /// Output copies ended (`endD2hMs`).
    pub end_d2h_ms: Option<f64>,
    /// Duration of the input copies.
    pub h2d_ms: Option<f64>,
    /// Duration of the kernels.
    pub compute_ms: Option<f64>,
    /// Duration of the output copies.
    pub d2h_ms: Option<f64>,
    /// h2d + compute + d2h.
    pub latency_ms: Option<f64>,
    /// TensorRT 7.x-8.2 end-to-end latency.
    pub end_to_end_ms: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawTime {
    #[serde(rename = "startEnqMs")]
    start_enq: LNum,
    #[serde(rename = "endEnqMs")]
    end_enq: LNum,
    #[serde(rename = "startH2dMs", alias = "startInMs")]
    start_h2d: LNum,
    #[serde(rename = "endH2dMs", alias = "endInMs")]
    end_h2d: LNum,
    #[serde(rename = "startComputeMs")]
    start_compute: LNum,
    #[serde(rename = "endComputeMs")]
    end_compute: LNum,
    #[serde(rename = "startD2hMs", alias = "startOutMs")]
    start_d2h: LNum,
    #[serde(rename = "endD2hMs", alias = "endOutMs")]
    end_d2h: LNum,
    #[serde(rename = "h2dMs", alias = "inMs")]
    h2d: LNum,
    #[serde(rename = "computeMs")]
    compute: LNum,
    #[serde(rename = "d2hMs", alias = "outMs")]
    d2h: LNum,
    #[serde(rename = "latencyMs")]
    latency: LNum,
    #[serde(rename = "endToEndMs")]
    end_to_end: LNum,
    name: LStr,
}

impl RawTime {
    fn record(self) -> TimeRecord {
        let v = |n: LNum| n.0.into_value();
        TimeRecord {
            start_enq_ms: v(self.start_enq),
            end_enq_ms: v(self.end_enq),
            start_h2d_ms: v(self.start_h2d),
            end_h2d_ms: v(self.end_h2d),
            start_compute_ms: v(self.start_compute),
            end_compute_ms: v(self.end_compute),
            start_d2h_ms: v(self.start_d2h),
            end_d2h_ms: v(self.end_d2h),
            h2d_ms: v(self.h2d),
            compute_ms: v(self.compute),
            d2h_ms: v(self.d2h),
            latency_ms: v(self.latency),
            end_to_end_ms: v(self.end_to_end),
        }
    }
}

/// Reads the records of an `--exportTimes` document in file order (`None`: an element that is not an
/// object). The one reader of the format: [`read_times`] summarises it, `trtmc-trtexec` turns it
/// into the observations of the tensorrt runtime.
pub fn read_time_records(text: &str) -> Result<Vec<Option<TimeRecord>>, FormatError> {
    match first_byte(text) {
        Some(b'[') => {}
        Some(b'{') => {
            let keys = super::layers::object_keys(text);
            if keys.is_empty() {
                return Err(match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                    Err(e) => invalid_json(text, &e, Export::Times),
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
                Err(e) => invalid_json(text, &e, Export::Times),
                Ok(_) => {
                    FormatError::Shape("the document is not a list of timing records".to_owned())
                }
            });
        }
        None => return Err(FormatError::Shape("the file is empty".to_owned())),
    }
    let raw: Vec<LObj<RawTime>> =
        serde_json::from_str(text).map_err(|e| invalid_json(text, &e, Export::Times))?;
    let mut records = Vec::with_capacity(raw.len());
    for rec in raw {
        let Slot::Value(rec) = rec.0 else {
            records.push(None);
            continue;
        };
        if !rec.name.0.is_missing() {
            return Err(FormatError::WrongKind {
                expected: "a times export",
                found: "it looks like a trtexec --exportProfile file (per-layer times)".to_owned(),
            });
        }
        records.push(Some(rec.record()));
    }
    Ok(records)
}

/// Reads an `--exportTimes` document.
pub fn read_times(text: &str) -> Result<Times, FormatError> {
    let records = read_time_records(text)?;
    let mut latency = Vec::with_capacity(records.len());
    let mut compute = Vec::new();
    let mut h2d = Vec::new();
    let mut d2h = Vec::new();
    let mut enqueue = Vec::new();
    let mut skipped = 0;
    for rec in records {
        let Some((rec, l)) = rec.and_then(|r| r.latency_ms.map(|l| (r, l))) else {
            skipped += 1;
            continue;
        };
        latency.push(l);
        compute.extend(rec.compute_ms);
        h2d.extend(rec.h2d_ms);
        d2h.extend(rec.d2h_ms);
        if let (Some(s), Some(e)) = (rec.start_enq_ms, rec.end_enq_ms) {
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
    fn records_keep_every_field_in_file_order() {
        let text = r#"[{"startEnqMs": 1, "endEnqMs": 1.5, "startH2dMs": 1.5, "endH2dMs": 1.5,
                        "startComputeMs": 1.5, "endComputeMs": 3.5, "startD2hMs": 3.5, "endD2hMs": 3.5,
                        "h2dMs": 0, "computeMs": 2, "d2hMs": 0, "latencyMs": 2},
                       7,
                       {"startInMs": 0, "endInMs": 1, "inMs": 1, "outMs": 2, "computeMs": "x",
                        "endToEndMs": 4}]"#;
        let records = read_time_records(text).expect("reads");
        assert_eq!(records.len(), 3);
        let first = records[0].expect("an object");
        assert_eq!(
            (
                first.start_compute_ms,
                first.end_compute_ms,
                first.compute_ms
            ),
            (Some(1.5), Some(3.5), Some(2.0))
        );
        assert_eq!(records[1], None);
        // TensorRT 7.x names; a non-number is no value.
        let old = records[2].expect("an object");
        assert_eq!((old.start_h2d_ms, old.end_h2d_ms), (Some(0.0), Some(1.0)));
        assert_eq!((old.h2d_ms, old.d2h_ms), (Some(1.0), Some(2.0)));
        assert_eq!((old.compute_ms, old.end_to_end_ms), (None, Some(4.0)));
        assert_eq!(read_time_records("[]"), Ok(Vec::new()));
    }

    #[test]
    fn rejects_other_documents() {
        assert!(read_times(r#"[{"count": 1}, {"name": "a", "timeMs": 1}]"#).is_err());
        assert!(read_times(r#"{"Layers": []}"#).is_err());
        assert!(read_times("[]").is_err());
        assert!(read_times("[1, 2").is_err());
    }
}
