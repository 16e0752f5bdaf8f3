//! `analyze-data.json`: the published "TensorRT Performance Analysis Data" format, schema_version
//! 1.0, so report apps built for that format can read our results; and reading such a file back
//! for re-packaging.
//!
//! Layer records are copied verbatim when they already satisfy that format's layer shape (keys,
//! order, numbers and strings as written; only the whitespace between tokens is dropped, as the
//! rest of the file has none); other records (names-only exports, records with missing or
//! mistyped fields) are written in a normalized form built from what was read.

use std::collections::BTreeMap;
use std::path::Path;

use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::analysis::{Analysis, Backend, LayerView, Level, Message, Mode, Sources};
use crate::backend::{ExportError, Loaded};
use crate::read::{self, IntOrStr};

#[derive(Serialize)]
struct Doc<'a> {
    schema_version: &'static str,
    folder: Option<&'a str>,
    model_name: Option<&'a str>,
    model_name_confidence: &'static str,
    model_name_evidence: &'a [String],
    model_components: &'a [String],
    validation: TopValidation<'a>,
    results: Vec<Result<'a>>,
}

#[derive(Serialize)]
struct TopValidation<'a> {
    status: &'static str,
    backend_count: usize,
    passed_count: usize,
    failed_count: usize,
    warnings: &'a [String],
}

#[derive(Serialize)]
#[serde(untagged)]
enum Result<'a> {
    LayerProfile(Box<LayerProfileResult<'a>>),
    LayerOnly(Box<LayerOnlyResult<'a>>),
    Failure(FailureResult<'a>),
}

#[derive(Serialize)]
struct Validation<'a> {
    status: &'static str,
    analysis_mode: &'static str,
    messages: Vec<Msg<'a>>,
    source_paths: SourcePaths<'a>,
    report_available: bool,
}

#[derive(Serialize)]
struct Msg<'a> {
    level: &'static str,
    message: &'a str,
}

#[derive(Serialize)]
struct SourcePaths<'a> {
    layer: Option<&'a str>,
    profile: Option<&'a str>,
}

#[derive(Serialize)]
struct LayerProfileResult<'a> {
    label: &'a str,
    validation: Validation<'a>,
    layers: Layers<'a>,
    profile: Vec<ProfileEntry<'a>>,
    layer_count: usize,
    profile_count: usize,
    graph: Graph<'a>,
    count: Option<u64>,
    count_source: &'static str,
    timing: TimingOut,
    model: Model<'a>,
    engines: EnginesOut<'a>,
    records: Records<'a>,
    type_breakdown: Vec<BreakdownItem<'a>>,
    tag_breakdown: Vec<BreakdownItem<'a>>,
    issues: Vec<IssueOut>,
    positives: &'a [String],
}

#[derive(Serialize)]
struct LayerOnlyResult<'a> {
    label: &'a str,
    validation: Validation<'a>,
    layers: Layers<'a>,
    layer_count: usize,
    graph: Graph<'a>,
    model: Model<'a>,
    engines: EnginesOut<'a>,
}

#[derive(Serialize)]
struct FailureResult<'a> {
    label: &'a str,
    validation: Validation<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    layer_count: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    profile_count: Option<usize>,
}

#[derive(Serialize)]
#[allow(non_snake_case)]
struct ProfileEntry<'a> {
    name: &'a str,
    timeMs: f64,
    averageMs: f64,
    medianMs: f64,
    percentage: f64,
    /// Present when the source profile had no medianMs (TensorRT 8.2) and averageMs stands in.
    #[serde(skip_serializing_if = "Option::is_none")]
    medianMs_source: Option<&'static str>,
}

#[derive(Serialize)]
struct Graph<'a> {
    edge_count: usize,
    external_inputs: &'a [String],
    graph_outputs: &'a [String],
}

#[derive(Serialize)]
struct TimingOut {
    average_inference_ms: f64,
    total_time_ms: f64,
    total_percentage: f64,
}

#[derive(Serialize)]
struct Model<'a> {
    name: Option<&'a str>,
    name_confidence: &'static str,
    name_evidence: &'a [String],
    components: &'a [String],
    category: &'static str,
    confidence: &'static str,
    evidence: &'a [String],
    config_path: Option<&'a str>,
    hidden_size: Option<i64>,
    intermediate_size: Option<i64>,
    num_layers: Option<i64>,
    num_heads: Option<i64>,
    max_position_embeddings: Option<i64>,
    sequence_length: Option<i64>,
    dynamic_dims: bool,
    input_shapes: &'a BTreeMap<String, Vec<i64>>,
}

#[derive(Serialize)]
struct EnginesOut<'a> {
    engine_files: &'a [String],
    subgraphs: &'a [IntOrStr],
    streams: &'a [IntOrStr],
    inferred_count: Option<usize>,
    source: &'a str,
}

#[derive(Serialize)]
struct BreakdownItem<'a> {
    name: &'a str,
    count: usize,
    time_ms: f64,
    percentage: f64,
}

#[derive(Serialize)]
struct IssueOut {
    score: f64,
    title: String,
    evidence: String,
    next_check: String,
    confidence: &'static str,
}

/// A layer in the published format: verbatim when possible.
struct LayerOut<'a>(&'a LayerView, Option<&'a RawValue>);

/// A layer record as written: the verbatim JSON with no whitespace between tokens.
type Verbatim = Option<Box<RawValue>>;

#[derive(Serialize)]
#[allow(non_snake_case)]
struct NormalizedLayer<'a> {
    Name: &'a str,
    LayerType: &'a str,
    Inputs: Vec<NormalizedTensor<'a>>,
    Outputs: Vec<NormalizedTensor<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    TacticName: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    StreamId: Option<&'a IntOrStr>,
    #[serde(
        rename = "_trtmc_names_only",
        skip_serializing_if = "std::ops::Not::not"
    )]
    names_only: bool,
}

#[derive(Serialize)]
#[allow(non_snake_case)]
struct NormalizedTensor<'a> {
    Name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    Dimensions: Option<&'a [i64]>,
    #[serde(rename = "Format/Datatype", skip_serializing_if = "Option::is_none")]
    format: Option<&'a str>,
}

impl Serialize for LayerOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let l = self.0;
        if let (true, Some(raw)) = (l.verbatim_ok, self.1) {
            return raw.serialize(s);
        }
        NormalizedLayer {
            Name: &l.name,
            LayerType: &l.raw_type,
            Inputs: normalized_tensors(&l.inputs),
            Outputs: normalized_tensors(&l.outputs),
            TacticName: l.tactic.as_deref(),
            StreamId: l.stream.as_ref(),
            names_only: l.family_from_name,
        }
        .serialize(s)
    }
}

fn normalized_tensors(ts: &[crate::analysis::TensorView]) -> Vec<NormalizedTensor<'_>> {
    ts.iter()
        .map(|t| NormalizedTensor {
            Name: &t.name,
            Dimensions: t.dims.as_deref(),
            format: t.format.as_deref(),
        })
        .collect()
}

struct Layers<'a>(&'a [LayerView], &'a [Verbatim]);

impl Serialize for Layers<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for (i, l) in self.0.iter().enumerate() {
            seq.serialize_element(&LayerOut(l, verbatim(self.1, i)))?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct Record<'a> {
    name: &'a str,
    layer_type: &'a str,
    raw_layer_type: &'a str,
    tactic: Option<&'a str>,
    time_ms: f64,
    avg_ms: f64,
    median_ms: f64,
    percentage: f64,
    tags: &'a [&'static str],
    layer: LayerOut<'a>,
}

struct Records<'a>(&'a [LayerView], &'a [Verbatim]);

fn verbatim(raws: &[Verbatim], i: usize) -> Option<&RawValue> {
    raws.get(i).and_then(Option::as_deref)
}

/// The records as written, checked and stripped of whitespace once, for layers and records
/// alike. trtexec indents its layer records: copied with their indentation they would be a large
/// part of the file, twice over.
fn verbatim_records(b: &Backend) -> Vec<Verbatim> {
    let Some(source) = &b.source else {
        return Vec::new();
    };
    b.layers
        .iter()
        .map(|l| {
            let range = l.raw.clone().filter(|_| l.verbatim_ok)?;
            RawValue::from_string(without_whitespace(source.get(range)?)).ok()
        })
        .collect()
}

/// `json` without the whitespace between its tokens (strings are copied as they are). The result
/// is checked as JSON by the caller.
fn without_whitespace(json: &str) -> String {
    let mut out = Vec::with_capacity(json.len());
    let mut in_string = false;
    let mut escaped = false;
    for &c in json.as_bytes() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_string = false;
            }
        } else if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
            continue;
        } else if c == b'"' {
            in_string = true;
        }
        out.push(c);
    }
    // Only ASCII whitespace was removed, between tokens, so the bytes are still UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

impl Serialize for Records<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let timed = self
            .0
            .iter()
            .enumerate()
            .filter(|(_, l)| l.timing.is_some());
        let mut seq = s.serialize_seq(Some(timed.clone().count()))?;
        for (i, l) in timed {
            let Some(t) = &l.timing else { continue };
            seq.serialize_element(&Record {
                name: &l.name,
                layer_type: &l.report_type,
                raw_layer_type: &l.raw_type,
                tactic: l.tactic.as_deref(),
                time_ms: t.time_ms,
                avg_ms: t.avg_ms,
                median_ms: t.median_ms.unwrap_or(t.avg_ms),
                percentage: t.percentage,
                tags: &l.tags,
                layer: LayerOut(l, verbatim(self.1, i)),
            })?;
        }
        seq.end()
    }
}

const EMPTY: &[String] = &[];

fn validation<'a>(b: &'a Backend) -> Validation<'a> {
    let v = &b.validation;
    let (status, mode) = match v.analysis_mode {
        Mode::LayerProfile => ("passed", "layer_profile"),
        Mode::LayerOnly => ("passed", "layer_only"),
        Mode::Unusable => ("failed", "unusable"),
    };
    Validation {
        status,
        analysis_mode: mode,
        messages: v
            .messages
            .iter()
            .map(|m| Msg {
                level: match m.level {
                    Level::Error => "error",
                    Level::Warning => "warning",
                    Level::Info => "info",
                },
                message: &m.message,
            })
            .collect(),
        source_paths: SourcePaths {
            layer: b.sources.layers.as_deref(),
            profile: b.sources.profile.as_deref(),
        },
        report_available: v.report_available,
    }
}

fn graph(b: &Backend) -> Graph<'_> {
    match &b.graph {
        Some(g) => Graph {
            edge_count: g.edge_count,
            external_inputs: &g.external_inputs,
            graph_outputs: &g.graph_outputs,
        },
        None => Graph {
            edge_count: 0,
            external_inputs: EMPTY,
            graph_outputs: EMPTY,
        },
    }
}

fn model<'a>(a: &'a Analysis, b: &'a Backend) -> Option<Model<'a>> {
    let m = b.model.as_ref()?;
    Some(Model {
        name: m.name.as_deref(),
        name_confidence: m.name_confidence.as_str(),
        name_evidence: if a.model.name.is_some() {
            &a.model.evidence
        } else {
            EMPTY
        },
        components: &a.model.components,
        category: m.category.category,
        confidence: m.category.confidence.as_str(),
        evidence: &m.category.evidence,
        config_path: m.config_path.as_deref(),
        hidden_size: m.hidden_size,
        intermediate_size: m.intermediate_size,
        num_layers: m.num_layers,
        num_heads: m.num_heads,
        max_position_embeddings: m.max_position_embeddings,
        sequence_length: m.sequence_length,
        dynamic_dims: m.dynamic_dims,
        input_shapes: &m.input_shapes,
    })
}

fn engines(b: &Backend) -> Option<EnginesOut<'_>> {
    let e = b.engines.as_ref()?;
    Some(EnginesOut {
        engine_files: &e.engine_files,
        subgraphs: &e.subgraphs,
        streams: &e.streams,
        inferred_count: e.inferred_count,
        source: &e.source,
    })
}

fn result<'a>(a: &'a Analysis, b: &'a Backend, raws: &'a [Verbatim]) -> Result<'a> {
    let failure = || {
        let mut v = validation(b);
        v.status = "failed";
        v.analysis_mode = "unusable";
        v.report_available = false;
        Result::Failure(FailureResult {
            label: &b.label,
            validation: v,
            layer_count: (b.layer_count > 0).then_some(b.layer_count),
            profile_count: b.profile_count,
        })
    };
    let (Some(model), Some(engines)) = (model(a, b), engines(b)) else {
        return failure();
    };
    match b.validation.analysis_mode {
        Mode::Unusable => failure(),
        Mode::LayerOnly => Result::LayerOnly(Box::new(LayerOnlyResult {
            label: &b.label,
            validation: validation(b),
            layers: Layers(&b.layers, raws),
            layer_count: b.layers.len(),
            graph: graph(b),
            model,
            engines,
        })),
        Mode::LayerProfile => {
            let (Some(t), Some(bd)) = (&b.timing, &b.breakdowns) else {
                return failure();
            };
            let profile = b
                .layers
                .iter()
                .filter_map(|l| {
                    l.timing.as_ref().map(|t| ProfileEntry {
                        name: &l.name,
                        timeMs: t.time_ms,
                        averageMs: t.avg_ms,
                        medianMs: t.median_ms.unwrap_or(t.avg_ms),
                        percentage: t.percentage,
                        medianMs_source: t.median_ms.is_none().then_some("averageMs"),
                    })
                })
                .collect::<Vec<_>>();
            let items = |v: &'a [crate::analysis::Bucket]| -> Vec<BreakdownItem<'a>> {
                v.iter()
                    .map(|x| BreakdownItem {
                        name: &x.name,
                        count: x.count,
                        time_ms: x.time_ms.unwrap_or(0.0),
                        percentage: x.percentage.unwrap_or(0.0),
                    })
                    .collect()
            };
            Result::LayerProfile(Box::new(LayerProfileResult {
                label: &b.label,
                validation: validation(b),
                layers: Layers(&b.layers, raws),
                profile_count: profile.len(),
                profile,
                layer_count: b.layers.len(),
                graph: graph(b),
                count: b.count,
                count_source: b.count_source.describe(),
                timing: TimingOut {
                    average_inference_ms: t.average_inference_ms,
                    total_time_ms: t.total_time_ms,
                    total_percentage: t.total_percentage,
                },
                model,
                engines,
                records: Records(&b.layers, raws),
                type_breakdown: items(&bd.by_type),
                tag_breakdown: items(&bd.by_tag),
                issues: b
                    .findings
                    .issues
                    .iter()
                    .map(|i| IssueOut {
                        score: i.score,
                        title: i.title.clone(),
                        evidence: i.evidence.join("; "),
                        next_check: format!(
                            "Hypothesis: {}. Next check: {}.",
                            i.hypothesis, i.next_check
                        ),
                        confidence: i.confidence.as_str(),
                    })
                    .collect(),
                positives: &b.findings.positives,
            }))
        }
    }
}

impl Analysis {
    /// Writes `analyze-data.json` (published schema_version 1.0).
    pub fn write_analyze_data<W: std::io::Write>(&self, w: W) -> serde_json::Result<()> {
        let raws: Vec<Vec<Verbatim>> = self.backends.iter().map(verbatim_records).collect();
        let doc = Doc {
            schema_version: "1.0",
            folder: self.input.folder.as_deref(),
            model_name: self.model.name.as_deref(),
            model_name_confidence: self.model.confidence.as_str(),
            model_name_evidence: &self.model.evidence,
            model_components: &self.model.components,
            validation: TopValidation {
                status: match self.validation.status {
                    crate::analysis::OverallStatus::Passed => "passed",
                    crate::analysis::OverallStatus::Partial => "partial",
                    crate::analysis::OverallStatus::Failed => "failed",
                },
                backend_count: self.validation.backend_count,
                passed_count: self.validation.passed_count,
                failed_count: self.validation.failed_count,
                warnings: &self.validation.warnings,
            },
            results: self
                .backends
                .iter()
                .zip(&raws)
                .map(|(b, r)| result(self, b, r))
                .collect(),
        };
        serde_json::to_writer(w, &doc)
    }
}

// ---- reading analyze-data.json back ----

#[derive(Deserialize)]
struct InDoc<'a> {
    schema_version: serde_json::Value,
    #[serde(default)]
    folder: Option<String>,
    #[serde(default)]
    model_name: Option<String>,
    #[serde(borrow)]
    results: Vec<InResult<'a>>,
}

#[derive(Deserialize)]
struct InResult<'a> {
    label: String,
    validation: InValidation,
    #[serde(borrow, default)]
    layers: Option<&'a RawValue>,
    #[serde(default)]
    profile: Option<Vec<serde_json::Map<String, serde_json::Value>>>,
    #[serde(default)]
    count: Option<u64>,
    #[serde(default)]
    count_source: Option<String>,
}

#[derive(Deserialize)]
struct InValidation {
    status: String,
    #[serde(default)]
    messages: Vec<InMessage>,
    #[serde(default)]
    source_paths: Option<InPaths>,
}

#[derive(Deserialize)]
struct InMessage {
    level: String,
    message: String,
}

#[derive(Deserialize)]
struct InPaths {
    layer: Option<String>,
    profile: Option<String>,
}

pub(crate) struct RecordedDoc {
    pub folder: Option<String>,
    pub model_name: Option<String>,
    pub backends: Vec<Loaded>,
}

/// Why an `analyze-data.json` cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum RecordedError {
    /// The file cannot be read (its path is in the enclosing error).
    #[error(transparent)]
    Unreadable { kind: read::SourceErrorKind },
    #[error("not a readable analyze-data.json: {source}")]
    NotJson { source: serde_json::Error },
    #[error("unsupported schema_version {found} (expected \"1.0\")")]
    Schema { found: String },
    #[error("`results` is empty")]
    NoResults,
}

/// Reads an `analyze-data.json` (ours or another tool's) back into backends to analyze again.
pub(crate) fn read_analyze_data(path: &Path) -> std::result::Result<RecordedDoc, RecordedError> {
    let (text, _) =
        read::read_text(path).map_err(|e| RecordedError::Unreadable { kind: e.kind })?;
    let doc: InDoc =
        serde_json::from_str(&text).map_err(|source| RecordedError::NotJson { source })?;
    if doc.schema_version != serde_json::Value::String("1.0".to_owned()) {
        return Err(RecordedError::Schema {
            found: doc.schema_version.to_string(),
        });
    }
    if doc.results.is_empty() {
        return Err(RecordedError::NoResults);
    }
    let mut backends = Vec::new();
    for r in doc.results {
        let paths = r.validation.source_paths.unwrap_or(InPaths {
            layer: None,
            profile: None,
        });
        let sources = Sources {
            layers: paths.layer,
            profile: paths.profile,
            times: None,
            metadata: Vec::new(),
        };
        let mut notes: Vec<Message> = Vec::new();
        let failed = r.validation.status == "failed";
        if failed || r.layers.is_none() {
            notes.extend(r.validation.messages.into_iter().map(|m| Message {
                level: match m.level.as_str() {
                    "error" => Level::Error,
                    "warning" => Level::Warning,
                    _ => Level::Info,
                },
                code: "recorded",
                message: m.message,
            }));
            if !notes.iter().any(|m| m.level == Level::Error) {
                notes.push(Message {
                    level: Level::Error,
                    code: "recorded",
                    message: "recorded as failed in the analyze-data.json, without layers"
                        .to_owned(),
                });
            }
            backends.push(Loaded {
                label: r.label,
                sources,
                layers: None,
                profile: None,
                times: None,
                notes,
                recorded_failure: true,
            });
            continue;
        }
        let layers = r.layers.map(|raw| {
            read::read_layer_info(raw.get().to_owned()).map_err(|source| ExportError::Recorded {
                what: "layers",
                source,
            })
        });
        let profile = r.profile.map(|entries| {
            let mut list: Vec<serde_json::Value> = Vec::with_capacity(entries.len() + 1);
            if let (Some(c), Some("profile header")) = (r.count, r.count_source.as_deref()) {
                list.push(serde_json::json!({ "count": c }));
            }
            for mut e in entries {
                if e.remove("medianMs_source").is_some() {
                    e.remove("medianMs");
                }
                list.push(serde_json::Value::Object(e));
            }
            let text = serde_json::Value::Array(list).to_string();
            read::read_profile(&text).map_err(|source| ExportError::Recorded {
                what: "profile",
                source,
            })
        });
        backends.push(Loaded {
            label: r.label,
            sources,
            layers,
            profile,
            times: None,
            notes,
            recorded_failure: false,
        });
    }
    Ok(RecordedDoc {
        folder: doc.folder,
        model_name: doc.model_name,
        backends,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_goes_between_tokens_only() {
        let text = "{\n  \"Name\" : \"a \\\" b\\\\\",\t\"Inputs\": [ 1, 2 ],\r\n \"K\":\"x  y\" }";
        let out = without_whitespace(text);
        assert_eq!(
            out,
            "{\"Name\":\"a \\\" b\\\\\",\"Inputs\":[1,2],\"K\":\"x  y\"}"
        );
        let a: serde_json::Value = serde_json::from_str(text).expect("json");
        let b: serde_json::Value = serde_json::from_str(&out).expect("json");
        assert_eq!(a, b);
        assert_eq!(without_whitespace("\"é ∑\" "), "\"é ∑\"");
    }
}
