//! The JSON files trtexec writes: `--exportTimes` (one record per timed query) and
//! `--exportProfile` (per-layer times, led by `{ "count" : N }`).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Result, TrtexecError};

/// Timing boundary of [`QueryTime::compute_ms`]: GPU time of one query's kernels, between CUDA
/// events around the enqueue (no host overhead, no copies).
pub const BOUNDARY_GPU_COMPUTE: &str = "trtexec_gpu_compute";

/// Timing boundary of [`QueryTime::latency_ms`]: H2D + GPU compute + D2H of one query (equal to
/// GPU compute when data transfers are off).
pub const BOUNDARY_HOST_LATENCY: &str = "trtexec_host_latency";

/// One timed query from `--exportTimes` (warm-ups are not exported). Times are ms since the
/// start of the run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryTime {
    /// Host: enqueue started (absent in TensorRT 7.0 exports).
    #[serde(default)]
    pub start_enq_ms: Option<f64>,
    /// Host: enqueue returned (absent in TensorRT 7.0 exports).
    #[serde(default)]
    pub end_enq_ms: Option<f64>,
    /// Input copies started (7.x: `startInMs`).
    #[serde(alias = "startInMs")]
    pub start_h2d_ms: f64,
    /// Input copies ended.
    #[serde(alias = "endInMs")]
    pub end_h2d_ms: f64,
    /// Kernels started.
    pub start_compute_ms: f64,
    /// Kernels ended.
    pub end_compute_ms: f64,
    /// Output copies started (7.x: `startOutMs`).
    #[serde(alias = "startOutMs")]
    pub start_d2h_ms: f64,
    /// Output copies ended.
    #[serde(alias = "endOutMs")]
    pub end_d2h_ms: f64,
    /// Duration of the input copies (7.x: `inMs`).
    #[serde(alias = "inMs")]
    pub h2d_ms: f64,
    /// Duration of the kernels: the `trtexec_gpu_compute` observation.
    pub compute_ms: f64,
    /// Duration of the output copies (7.x: `outMs`).
    #[serde(alias = "outMs")]
    pub d2h_ms: f64,
    /// h2d + compute + d2h: the `trtexec_host_latency` observation.
    pub latency_ms: f64,
    /// 7.x–8.2 end-to-end latency.
    #[serde(default)]
    pub end_to_end_ms: Option<f64>,
}

/// Parses the text of an `--exportTimes` file; `what` names it in errors.
pub fn parse_times(text: &str, what: &str) -> Result<Vec<QueryTime>> {
    let records: Vec<QueryTime> =
        serde_json::from_str(text).map_err(|e| TrtexecError::Unparsable {
            what: what.to_string(),
            detail: format!(
                "{e}. Expected trtexec's --exportTimes JSON: an array of objects with startEnqMs … \
                 computeMs, d2hMs, latencyMs (trtexec writes nan/inf as bare words, which is not JSON)"
            ),
        })?;
    for (index, record) in records.iter().enumerate() {
        let durations = [
            ("computeMs", record.compute_ms),
            ("latencyMs", record.latency_ms),
            ("h2dMs", record.h2d_ms),
            ("d2hMs", record.d2h_ms),
        ];
        if let Some((name, value)) = durations
            .iter()
            .find(|(_, value)| !value.is_finite() || *value < 0.0)
        {
            return Err(TrtexecError::Unparsable {
                what: what.to_string(),
                detail: format!(
                    "record {index} has {name} = {value}; durations must be finite and non-negative"
                ),
            });
        }
    }
    Ok(records)
}

/// Reads an `--exportTimes` file.
pub fn read_times(path: &Path) -> Result<Vec<QueryTime>> {
    let text = read_text(path)?;
    parse_times(&text, &format!("the --exportTimes file {}", path.display()))
}

/// One layer of an `--exportProfile` file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LayerTime {
    /// Layer name, as in `--exportLayerInfo`.
    pub name: String,
    /// Sum over all profiled iterations, ms.
    pub time_ms: f64,
    /// Per iteration, ms.
    pub average_ms: f64,
    /// Median per iteration, ms (absent before 8.4).
    #[serde(default)]
    pub median_ms: Option<f64>,
    /// Share of the total, %.
    pub percentage: f64,
}

/// An `--exportProfile` file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileExport {
    /// Profiled iterations (`{ "count" : N }`).
    pub count: u64,
    /// The layers in execution order.
    pub layers: Vec<LayerTime>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ProfileItem {
    Count { count: u64 },
    Layer(LayerTime),
}

/// Parses the text of an `--exportProfile` file; `what` names it in errors.
///
/// trtexec writes layer names without JSON escaping, so a name with `"` or `\` makes the file
/// invalid JSON; such files are read line by line instead (one record per line, as trtexec
/// writes them).
pub fn parse_profile(text: &str, what: &str) -> Result<ProfileExport> {
    let error = match serde_json::from_str::<Vec<ProfileItem>>(text) {
        Ok(items) => return profile_from_items(items, what),
        Err(error) => error,
    };
    match parse_profile_lines(text) {
        Some(profile) => Ok(profile),
        None => Err(TrtexecError::Unparsable {
            what: what.to_string(),
            detail: format!(
                "{error}. Expected trtexec's --exportProfile JSON: [ {{ \"count\" : N }}, {{ \"name\" : ..., \
                 \"timeMs\" : ..., \"averageMs\" : ..., \"medianMs\" : ..., \"percentage\" : ... }}, ... ]"
            ),
        }),
    }
}

/// Reads an `--exportProfile` file.
pub fn read_profile(path: &Path) -> Result<ProfileExport> {
    let text = read_text(path)?;
    parse_profile(
        &text,
        &format!("the --exportProfile file {}", path.display()),
    )
}

fn profile_from_items(items: Vec<ProfileItem>, what: &str) -> Result<ProfileExport> {
    let mut items = items.into_iter();
    let count = match items.next() {
        Some(ProfileItem::Count { count }) => count,
        _ => {
            return Err(TrtexecError::Unparsable {
                what: what.to_string(),
                detail: "the first element is not { \"count\" : N }".into(),
            });
        }
    };
    let mut layers = Vec::new();
    for (index, item) in items.enumerate() {
        match item {
            ProfileItem::Layer(layer) => layers.push(layer),
            ProfileItem::Count { .. } => {
                return Err(TrtexecError::Unparsable {
                    what: what.to_string(),
                    detail: format!(
                        "element {} is a second {{ \"count\" }}; only the first may be",
                        index + 1
                    ),
                });
            }
        }
    }
    Ok(ProfileExport { count, layers })
}

/// The fallback for unescaped names: `, { "name" : "<raw>", "timeMs" : 1, ... }` per line.
fn parse_profile_lines(text: &str) -> Option<ProfileExport> {
    let mut count = None;
    let mut layers = Vec::new();
    for line in text.lines() {
        let line = line.trim().trim_start_matches(',').trim();
        if line.is_empty() || line == "[" || line == "]" {
            continue;
        }
        if count.is_none() {
            let value: serde_json::Value = serde_json::from_str(line).ok()?;
            count = Some(value.get("count")?.as_u64()?);
            continue;
        }
        let rest = line.strip_prefix('{')?.trim_start();
        let rest = rest.strip_prefix("\"name\"")?.trim_start();
        let rest = rest.strip_prefix(':')?.trim_start();
        let rest = rest.strip_prefix('"')?;
        let (name, numbers) = rest.rsplit_once("\", \"timeMs\"")?;
        let numbers: serde_json::Value =
            serde_json::from_str(&format!("{{\"timeMs\"{numbers}")).ok()?;
        layers.push(LayerTime {
            name: name.to_string(),
            time_ms: numbers.get("timeMs")?.as_f64()?,
            average_ms: numbers.get("averageMs")?.as_f64()?,
            median_ms: numbers.get("medianMs").and_then(|v| v.as_f64()),
            percentage: numbers.get("percentage")?.as_f64()?,
        });
    }
    Some(ProfileExport {
        count: count?,
        layers,
    })
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
    fn times_reject_negative_durations() {
        let text = r#"[{ "startEnqMs" : 1, "endEnqMs" : 1, "startH2dMs" : 1, "endH2dMs" : 1, "startComputeMs" : 1, "endComputeMs" : 1, "startD2hMs" : 1, "endD2hMs" : 1, "h2dMs" : 0, "computeMs" : -1, "d2hMs" : 0, "latencyMs" : 1 }]"#;
        let err = parse_times(text, "t.json").expect_err("negative");
        assert!(
            err.to_string().contains("record 0 has computeMs = -1"),
            "{err}"
        );
    }
}
