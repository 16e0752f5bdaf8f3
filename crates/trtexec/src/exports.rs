//! The JSON files trtexec writes: `--exportTimes` (one record per timed query) and
//! `--exportProfile` (per-layer times, led by `{ "count" : N }`).
//!
//! Each format has one reader in the workspace, `trtmc_trtexec_exports` (fuzzed, lenient, fast);
//! this module asks more of what it read, as driving trtexec needs: every query must carry every
//! time and durations must be finite and non-negative, the profile must lead with its count and
//! every layer must have its numbers.

use std::path::Path;

use serde::Serialize;
use trtmc_trtexec_exports::{HeaderCount, TimeRecord, read_profile as read_profile_records};

use crate::error::{Result, TrtexecError};

/// Timing boundary of [`QueryTime::compute_ms`]: GPU time of one query's kernels, between CUDA
/// events around the enqueue (no host overhead, no copies). The one definition is the documents'.
pub use trtmc_core::artifacts::TRTEXEC_GPU_COMPUTE as BOUNDARY_GPU_COMPUTE;

/// Timing boundary of [`QueryTime::latency_ms`]: H2D + GPU compute + D2H of one query (equal to
/// GPU compute when data transfers are off).
pub const BOUNDARY_HOST_LATENCY: &str = "trtexec_host_latency";

/// One timed query from `--exportTimes` (warm-ups are not exported). Times are ms since the
/// start of the run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryTime {
    /// Host: enqueue started (absent in TensorRT 7.0 exports).
    pub start_enq_ms: Option<f64>,
    /// Host: enqueue returned (absent in TensorRT 7.0 exports).
    pub end_enq_ms: Option<f64>,
    /// Input copies started (7.x: `startInMs`).
    pub start_h2d_ms: f64,
    /// Input copies ended.
    pub end_h2d_ms: f64,
    /// Kernels started.
    pub start_compute_ms: f64,
    /// Kernels ended.
    pub end_compute_ms: f64,
    /// Output copies started (7.x: `startOutMs`).
    pub start_d2h_ms: f64,
    /// Output copies ended.
    pub end_d2h_ms: f64,
    /// Duration of the input copies (7.x: `inMs`).
    pub h2d_ms: f64,
    /// Duration of the kernels: the `trtexec_gpu_compute` observation.
    pub compute_ms: f64,
    /// Duration of the output copies (7.x: `outMs`).
    pub d2h_ms: f64,
    /// h2d + compute + d2h: the `trtexec_host_latency` observation.
    pub latency_ms: f64,
    /// 7.x–8.2 end-to-end latency.
    pub end_to_end_ms: Option<f64>,
}

impl QueryTime {
    /// The query of record `index`, when it has every time and its durations are finite and
    /// non-negative; else what is wrong with it.
    fn from_record(
        index: usize,
        record: Option<TimeRecord>,
    ) -> std::result::Result<Self, RecordError> {
        let r = record.ok_or(RecordError::NotAnObject { index })?;
        let need = |name: &'static str, value: Option<f64>| {
            value.ok_or(RecordError::Missing { index, name })
        };
        let query = QueryTime {
            start_enq_ms: r.start_enq_ms,
            end_enq_ms: r.end_enq_ms,
            start_h2d_ms: need("startH2dMs", r.start_h2d_ms)?,
            end_h2d_ms: need("endH2dMs", r.end_h2d_ms)?,
            start_compute_ms: need("startComputeMs", r.start_compute_ms)?,
            end_compute_ms: need("endComputeMs", r.end_compute_ms)?,
            start_d2h_ms: need("startD2hMs", r.start_d2h_ms)?,
            end_d2h_ms: need("endD2hMs", r.end_d2h_ms)?,
            h2d_ms: need("h2dMs", r.h2d_ms)?,
            compute_ms: need("computeMs", r.compute_ms)?,
            d2h_ms: need("d2hMs", r.d2h_ms)?,
            latency_ms: need("latencyMs", r.latency_ms)?,
            end_to_end_ms: r.end_to_end_ms,
        };
        let durations = [
            ("computeMs", query.compute_ms),
            ("latencyMs", query.latency_ms),
            ("h2dMs", query.h2d_ms),
            ("d2hMs", query.d2h_ms),
        ];
        if let Some((name, value)) = durations
            .iter()
            .find(|(_, value)| !value.is_finite() || *value < 0.0)
        {
            return Err(RecordError::BadDuration {
                index,
                name,
                value: *value,
            });
        }
        Ok(query)
    }
}

/// Why one record of an `--exportTimes` file is not a query time.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum RecordError {
    #[error("record {index} is not an object")]
    NotAnObject { index: usize },
    #[error("record {index} has no numeric {name}")]
    Missing { index: usize, name: &'static str },
    #[error("record {index} has {name} = {value}; durations must be finite and non-negative")]
    BadDuration {
        index: usize,
        name: &'static str,
        value: f64,
    },
}

/// Parses the text of an `--exportTimes` file; `what` names it in errors.
pub fn parse_times(text: &str, what: &str) -> Result<Vec<QueryTime>> {
    let unparsable = |detail: String| TrtexecError::Unparsable {
        what: what.to_string(),
        detail,
    };
    let records = trtmc_trtexec_exports::read_time_records(text).map_err(|e| {
        unparsable(format!(
            "{e}. Expected trtexec's --exportTimes JSON: an array of objects with startEnqMs … \
             computeMs, d2hMs, latencyMs (trtexec writes nan/inf as bare words, which is not JSON)"
        ))
    })?;
    records
        .into_iter()
        .enumerate()
        .map(|(index, record)| {
            QueryTime::from_record(index, record).map_err(|e| unparsable(e.to_string()))
        })
        .collect()
}

/// Reads an `--exportTimes` file.
pub fn read_times(path: &Path) -> Result<Vec<QueryTime>> {
    let text = read_text(path)?;
    parse_times(&text, &format!("the --exportTimes file {}", path.display()))
}

/// One layer of an `--exportProfile` file.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LayerTime {
    /// Layer name, as in `--exportLayerInfo`.
    pub name: String,
    /// Sum over all profiled iterations, ms.
    pub time_ms: f64,
    /// Per iteration, ms.
    pub average_ms: f64,
    /// Median per iteration, ms (absent before 8.4).
    pub median_ms: Option<f64>,
    /// Share of the total, %.
    pub percentage: f64,
}

/// An `--exportProfile` file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileExport {
    /// Profiled iterations (`{ "count" : N }`).
    pub count: u64,
    /// The layers in execution order.
    pub layers: Vec<LayerTime>,
}

/// Parses the text of an `--exportProfile` file; `what` names it in errors.
///
/// trtexec writes layer names without JSON escaping, so a name with `"` or `\` makes the file
/// invalid JSON; the reader then falls back on trtexec's one-record-per-line layout.
pub fn parse_profile(text: &str, what: &str) -> Result<ProfileExport> {
    let unparsable = |detail: String| TrtexecError::Unparsable {
        what: what.to_string(),
        detail,
    };
    let profile = read_profile_records(text).map_err(|e| {
        unparsable(format!(
            "{e}. Expected trtexec's --exportProfile JSON: [ {{ \"count\" : N }}, {{ \"name\" : ..., \
             \"timeMs\" : ..., \"averageMs\" : ..., \"medianMs\" : ..., \"percentage\" : ... }}, ... ]"
        ))
    })?;
    let Some(HeaderCount::Valid(count)) = profile.header else {
        return Err(unparsable(
            "the first element is not { \"count\" : N } with N a positive integer".into(),
        ));
    };
    if let Some(problem) = profile.problems.first() {
        return Err(unparsable(format!(
            "{problem} (every element after the first is a layer with name, timeMs, averageMs and percentage)"
        )));
    }
    let layers = profile
        .records
        .into_iter()
        .map(|r| {
            let need = |key: &str, value: Option<f64>| {
                value.ok_or_else(|| unparsable(format!("layer `{}` has no numeric {key}", r.name)))
            };
            Ok(LayerTime {
                time_ms: need("timeMs", r.time_ms)?,
                average_ms: need("averageMs", r.average_ms)?,
                median_ms: r.median_ms,
                percentage: need("percentage", r.percentage)?,
                name: r.name,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(ProfileExport { count, layers })
}

/// Reads an `--exportProfile` file.
pub fn read_profile(path: &Path) -> Result<ProfileExport> {
    let text = read_text(path)?;
    parse_profile(
        &text,
        &format!("the --exportProfile file {}", path.display()),
    )
}

fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|source| TrtexecError::Io {
        action: "read",
        path: path.to_path_buf(),
        source,
    })?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescaped_names_fall_back_to_lines() {
        let text = "[\n  { \"count\" : 2 }\n, { \"name\" : \"weird \"quoted\" \\ name\", \"timeMs\" : 1.5, \"averageMs\" : 0.75, \"medianMs\" : 0.7, \"percentage\" : 100 }\n]\n";
        let profile = parse_profile(text, "test").expect("fallback reads it");
        assert_eq!(profile.count, 2);
        assert_eq!(profile.layers[0].name, "weird \"quoted\" \\ name");
        assert_eq!(profile.layers[0].median_ms, Some(0.7));
    }

    #[test]
    fn a_second_count_or_a_missing_one_is_refused() {
        let no_count = "[{\"name\": \"a\", \"timeMs\": 1, \"averageMs\": 1, \"percentage\": 1}]";
        let err = parse_profile(no_count, "p").expect_err("no count first");
        assert!(err.to_string().contains("count"), "{err}");
        let two = "[{\"count\": 2}, {\"count\": 3}, {\"name\": \"a\", \"timeMs\": 1, \"averageMs\": 1, \"percentage\": 1}]";
        let err = parse_profile(two, "p").expect_err("second count");
        assert!(err.to_string().contains("record 1"), "{err}");
    }

    #[test]
    fn times_need_every_field_of_every_record() {
        let text = r#"[{ "startH2dMs" : 1, "endH2dMs" : 1, "startComputeMs" : 1, "endComputeMs" : 2, "startD2hMs" : 2, "endD2hMs" : 2, "h2dMs" : 0, "computeMs" : 1, "d2hMs" : 0, "latencyMs" : 1 },
                       { "computeMs" : 1 }]"#;
        let err = parse_times(text, "t.json").expect_err("second record incomplete");
        assert!(
            err.to_string()
                .contains("record 1 has no numeric startH2dMs"),
            "{err}"
        );
        let first = text.split_once(",\n").expect("two records").0;
        let queries = parse_times(&format!("{first}]"), "t.json").expect("complete");
        assert_eq!(queries[0].start_enq_ms, None);
        assert_eq!(queries[0].compute_ms, 1.0);
    }

    #[test]
    fn times_reject_negative_durations() {
        let text = r#"[{ "startEnqMs" : 1, "endEnqMs" : 1, "startH2dMs" : 1, "endH2dMs" : 1, "startComputeMs" : 1, "endComputeMs" : 1, "startD2hMs" : 1, "endD2hMs" : 1, "h2dMs" : 0, "computeMs" : -1, "d2hMs" : 0, "latencyMs" : 1 }]"#;
        let err = parse_times(text, "t.json").expect_err("negative");
        assert!(
            err.to_string().contains("record 0 has computeMs = -1"),
            "{err}"
        );
    }
}
