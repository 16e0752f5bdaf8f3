//! The analysis document (`trtmc.analysis/v1`): every type it is made of, and nothing that builds it.
//! The entry point is [`crate::request`]; the steps that fill these types (`backend`, `findings`,
//! `compare`, `memory`) import them from here, never the other way round.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::classify::Family;
use crate::identity::{CategoryGuess, Confidence, ModelIdentity};
use crate::read::{IntOrStr, Times};

/// Schema name written into every analysis document.
pub const SCHEMA: &str = "trtmc.analysis/v1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InputMode {
    Folder,
    Data,
    AnalyzeData,
}

#[derive(Debug, Clone, Serialize)]
pub struct Generator {
    pub name: &'static str,
    pub version: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct InputInfo {
    pub mode: InputMode,
    /// The folder the inputs came from (the common parent for `--data`).
    pub folder: Option<String>,
    /// JSON files in the folder that matched no naming scheme.
    pub ignored_files: Vec<String>,
    /// Serialized engines next to the inputs.
    pub engine_files: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OverallStatus {
    Passed,
    Partial,
    Failed,
}

#[derive(Debug, Clone, Serialize)]
pub struct Overall {
    pub status: OverallStatus,
    pub backend_count: usize,
    pub passed_count: usize,
    pub failed_count: usize,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Passed,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Detailed layers with a matching profile: latency interpretation allowed.
    LayerProfile,
    /// Layers only (no profile, or names only): graph and layer inspection, no latency interpretation.
    LayerOnly,
    Unusable,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Error,
    Warning,
    Info,
}

#[derive(Debug, Clone, Serialize)]
pub struct Message {
    pub level: Level,
    /// Stable identifier of the rule that produced the message.
    pub code: &'static str,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Passed,
    Warning,
    Failed,
    Skipped,
}

/// One line of the validation checklist.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub status: CheckStatus,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct BackendValidation {
    pub status: Status,
    pub analysis_mode: Mode,
    /// True only for passed layer_profile backends: the only ones whose latency may be interpreted.
    pub latency_interpretation: bool,
    pub report_available: bool,
    pub messages: Vec<Message>,
    pub checks: Vec<Check>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Sources {
    pub layers: Option<String>,
    pub profile: Option<String>,
    pub times: Option<String>,
    pub metadata: Vec<String>,
}

/// How the export was written, as far as the files tell.
#[derive(Debug, Clone, Serialize)]
pub struct ExportInfo {
    pub verbosity: crate::read::Verbosity,
    pub root: crate::read::RootShape,
    pub bindings: Option<Vec<String>>,
    pub profile_has_median: Option<bool>,
    /// The era's evidence as plain lines (the facts used, then those set aside); empty for
    /// runtimes other than TensorRT.
    pub version_hints: Vec<String>,
    /// The TensorRT release range the export's fields allow, with the evidence (TensorRT only).
    pub era: Option<crate::provenance::Era>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CountSource {
    ProfileHeader,
    TimeAverageRatio,
    None,
}

impl CountSource {
    pub fn describe(self) -> &'static str {
        match self {
            CountSource::ProfileHeader => "profile header",
            CountSource::TimeAverageRatio => "timeMs/averageMs ratio",
            CountSource::None => "none",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Timing {
    /// Σ timeMs: all profiled iterations together.
    pub total_time_ms: f64,
    /// Σ averageMs: one inference as the sum of per-layer averages.
    pub average_inference_ms: f64,
    /// Σ medianMs (absent for TensorRT 8.2 profiles).
    pub median_sum_ms: Option<f64>,
    pub total_percentage: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct BackendModel {
    pub name: Option<String>,
    pub name_confidence: Confidence,
    #[serde(flatten)]
    pub category: CategoryGuess,
    pub config_path: Option<String>,
    pub hidden_size: Option<i64>,
    pub intermediate_size: Option<i64>,
    pub num_layers: Option<i64>,
    pub num_heads: Option<i64>,
    pub max_position_embeddings: Option<i64>,
    pub sequence_length: Option<i64>,
    pub dynamic_dims: bool,
    /// Dimensions of tensors that enter the graph from outside.
    pub input_shapes: BTreeMap<String, Vec<i64>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Engines {
    pub engine_files: Vec<String>,
    pub subgraphs: Vec<IntOrStr>,
    pub streams: Vec<IntOrStr>,
    /// Opaque Myelin regions (`{ForeignNode[…]}`).
    pub myelin_regions: usize,
    pub plugin_layers: usize,
    pub inferred_count: Option<usize>,
    pub source: String,
    /// True when the count comes from hints (files next to the inputs) rather than the export.
    pub inferred: bool,
}

/// A tensor as shown in the analysis (name, dimensions, format).
pub use crate::read::Tensor as TensorView;

#[derive(Debug, Clone, Serialize)]
pub struct LayerTiming {
    pub time_ms: f64,
    pub avg_ms: f64,
    pub median_ms: Option<f64>,
    pub percentage: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct LayerView {
    pub index: u32,
    pub name: String,
    pub raw_type: std::sync::Arc<str>,
    /// Report type: raw LayerType with the `kgen_mha` / `misc` overrides.
    #[serde(rename = "type")]
    pub report_type: std::sync::Arc<str>,
    pub family: Family,
    /// True when the family was guessed from the name (names-only exports).
    pub family_from_name: bool,
    pub parameter_type: Option<std::sync::Arc<str>>,
    pub precision: Option<&'static str>,
    pub output_precision: Option<&'static str>,
    pub tactic: Option<String>,
    pub stream: Option<IntOrStr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subgraph: Option<IntOrStr>,
    /// Source ONNX nodes (from Metadata, else from the fused name).
    pub origins: Vec<String>,
    pub inputs: Vec<TensorView>,
    pub outputs: Vec<TensorView>,
    pub tags: Vec<&'static str>,
    pub timing: Option<LayerTiming>,
    /// Where the record as written sits in the backend's layer-info source, for the
    /// published-format output.
    #[serde(skip)]
    pub raw: Option<std::ops::Range<usize>>,
    #[serde(skip)]
    pub verbatim_ok: bool,
    /// A convolution's kernel, stride, groups and output maps, for telling convolutions apart
    /// when aligning builds and for the channel-alignment check.
    #[serde(skip)]
    pub conv: Option<crate::read::ConvFields>,
    /// `Weights` and `Bias` (element type and count), where the export lists them.
    #[serde(skip)]
    pub weights: Option<crate::read::WeightCount>,
    #[serde(skip)]
    pub bias: Option<crate::read::WeightCount>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Bucket {
    pub name: String,
    pub count: usize,
    pub time_ms: Option<f64>,
    pub avg_ms: Option<f64>,
    pub percentage: Option<f64>,
}

/// Time share of one of the categories the seed names for concentration checks.
#[derive(Debug, Clone, Serialize)]
pub struct Concentration {
    pub category: &'static str,
    pub count: usize,
    pub percentage: f64,
    pub threshold: f64,
    pub flagged: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Breakdowns {
    pub by_type: Vec<Bucket>,
    pub by_family: Vec<Bucket>,
    pub by_precision: Vec<Bucket>,
    pub by_tag: Vec<Bucket>,
    pub concentration: Vec<Concentration>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GraphView {
    pub edge_count: usize,
    pub edges: Vec<[u32; 2]>,
    pub external_inputs: Vec<String>,
    pub graph_outputs: Vec<String>,
    pub is_dag: bool,
    pub cycles: Vec<Vec<u32>>,
    pub multi_writers: Vec<crate::graph::MultiWriter>,
    pub back_references: Vec<crate::graph::BackReference>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Backend {
    pub label: String,
    /// The runtime that wrote the files and why (`None` when the layer info could not be read).
    pub runtime: Option<crate::provenance::RuntimeInfo>,
    pub sources: Sources,
    pub validation: BackendValidation,
    pub export: Option<ExportInfo>,
    pub layer_count: usize,
    pub profile_count: Option<usize>,
    /// Profiled iterations, and where the number came from.
    pub count: Option<u64>,
    pub count_source: CountSource,
    pub timing: Option<Timing>,
    /// `--exportTimes` summary, when given.
    pub end_to_end: Option<Times>,
    pub model: Option<BackendModel>,
    pub engines: Option<Engines>,
    pub layers: Vec<LayerView>,
    pub graph: Option<GraphView>,
    pub breakdowns: Option<Breakdowns>,
    /// Per-layer weights and activations, where the export has the fields.
    pub memory: Option<Memory>,
    /// Layer indices by time share, largest first.
    pub hot_layers: Vec<u32>,
    pub findings: Findings,
    /// The layer-info document the layers' `raw` ranges point into.
    #[serde(skip)]
    pub source: Option<std::sync::Arc<crate::read::Text>>,
}

impl Backend {
    pub fn passed(&self) -> bool {
        self.validation.status == Status::Passed
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    pub schema: &'static str,
    pub generator: Generator,
    pub input: InputInfo,
    pub model: ModelIdentity,
    pub validation: Overall,
    pub backends: Vec<Backend>,
    /// One comparison per model with at least two usable backends (builds).
    pub comparisons: Vec<Comparison>,
}

/// Shared context for every backend of one request.
pub(crate) struct Context {
    pub engine_files: Vec<String>,
    pub identity: ModelIdentity,
    pub config: Option<(serde_json::Map<String, serde_json::Value>, String)>,
}

impl Analysis {
    /// One line per backend for a terminal.
    pub fn summary_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(name) = &self.model.name {
            lines.push(format!(
                "model: {name} ({} confidence)",
                self.model.confidence.as_str()
            ));
        }
        for b in &self.backends {
            let mode = match b.validation.analysis_mode {
                Mode::LayerProfile => "layer_profile",
                Mode::LayerOnly => "layer_only",
                Mode::Unusable => "unusable",
            };
            let status = if b.passed() { "passed" } else { "FAILED" };
            let mut line = format!("{}: {status}, {mode}, {} layers", b.label, b.layer_count);
            if let Some(t) = &b.timing {
                line.push_str(&format!(
                    ", {:.4} ms per inference (sum of layer averages)",
                    t.average_inference_ms
                ));
            }
            // What wrote the files: the TensorRT era, or the CPU runtime.
            match (b.export.as_ref().and_then(|e| e.era.as_ref()), &b.runtime) {
                (Some(era), _) => line.push_str(&format!("; {} export", era.label)),
                (None, Some(r)) => line.push_str(&format!("; {} profile", r.display_name)),
                (None, None) => {}
            }
            if let Some(first) = b
                .validation
                .messages
                .iter()
                .find(|m| m.level == Level::Error)
            {
                line.push_str(&format!(" — {}", first.message));
            }
            lines.push(line);
        }
        lines
    }
}

impl LayerView {
    /// Whether the layer belongs to one of the seed's concentration categories (`backend::CONCENTRATION`).
    pub(crate) fn in_concentration_category(&self, category: &str) -> bool {
        match category {
            "kgen" => self.raw_type.eq_ignore_ascii_case("kgen"),
            "shape" => self.family == Family::Shape,
            "cast" => self.family == Family::Cast,
            "gather" => self.family == Family::Gather,
            "reshape" => self.family == Family::Shuffle,
            "pointwise" => self.family == Family::Pointwise,
            "reduction" => matches!(
                self.family,
                Family::Reduction | Family::Softmax | Family::Normalization
            ),
            _ => false,
        }
    }
}

// The findings of one backend (filled by `findings::derive`).

#[derive(Debug, Clone, Serialize)]
pub struct Issue {
    /// Stable rule identifier.
    pub id: &'static str,
    /// Ranking key: larger is more likely to matter (roughly the time share involved plus a rule weight).
    pub score: f64,
    pub title: String,
    /// Facts from the files that triggered the rule.
    pub evidence: Vec<String>,
    /// What the facts may mean (not established).
    pub hypothesis: String,
    pub next_check: String,
    pub confidence: Confidence,
    /// Layers the issue is about.
    pub layers: Vec<u32>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Findings {
    pub facts: Vec<String>,
    pub issues: Vec<Issue>,
    pub positives: Vec<String>,
}

// The memory footprint of one backend (filled by `memory::footprint`).

#[derive(Debug, Clone, Serialize)]
pub struct Memory {
    /// Per layer (in `layers` order): bytes of its `Weights` and `Bias`, `None` when it lists
    /// neither.
    pub weights_bytes: Vec<Option<u64>>,
    /// Per layer: bytes of its input and output tensors, `None` when none has a known size.
    pub activation_bytes: Vec<Option<u64>>,
    pub total_weights_bytes: u64,
    /// Σ of the per-layer activations (a tensor counts once for its writer and once per reader,
    /// as in TREx's "Activations").
    pub total_activation_bytes: u64,
}

// Comparisons between backends (filled by `compare::compare_all`).

#[derive(Debug, Clone, Serialize)]
pub struct TotalRow {
    pub label: String,
    pub analysis_mode: Mode,
    pub layer_count: usize,
    /// Σ averageMs, when the backend has a matching profile.
    pub average_inference_ms: Option<f64>,
    /// Against the baseline.
    pub delta_ms: Option<f64>,
    /// Baseline time divided by this backend's time (> 1: faster than the baseline).
    pub speedup: Option<f64>,
    /// Share of time (or of layers without a profile) per input precision.
    pub precision_mix: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub count: usize,
    pub avg_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TypeRow {
    pub name: String,
    /// One cell per compared backend, in `backends` order.
    pub cells: Vec<Cell>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    Name,
    Origin,
    /// The aligned producers and consumers around it.
    Position,
    /// The only unaligned layer of its family and shapes on each side.
    Signature,
    Unmatched,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnmatchedCode {
    /// Several candidates fit equally well; none was chosen.
    Ambiguous,
    /// Nothing of its kind sits at its place in the other build.
    NoCounterpart,
}

/// Why a layer has no partner.
#[derive(Debug, Clone, Serialize)]
pub struct Unmatched {
    pub code: UnmatchedCode,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct AlignedRow {
    pub a: Option<u32>,
    pub b: Option<u32>,
    pub method: Method,
    pub precision_changed: bool,
    pub tactic_changed: bool,
    /// b's average minus a's, when both are profiled.
    pub delta_ms: Option<f64>,
    /// Matched rows only: what the pair was found by (the shared name, source nodes, signature or
    /// aligned neighbour).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// Unmatched rows only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<Unmatched>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Pair {
    pub a: String,
    pub b: String,
    pub matched_by_name: usize,
    pub matched_by_origin: usize,
    pub matched_by_position: usize,
    pub matched_by_signature: usize,
    pub unmatched_a: usize,
    pub unmatched_b: usize,
    /// Unmatched because several candidates fit equally well.
    pub ambiguous_a: usize,
    pub ambiguous_b: usize,
    pub precision_changes: usize,
    pub tactic_changes: usize,
    /// Readable examples of what changed (first few).
    pub changes: Vec<String>,
    pub rows: Vec<AlignedRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The model these backends are builds of, as far as their labels tell.
    pub model: Option<String>,
    pub baseline: String,
    /// Why that backend is the baseline: `--baseline LABEL`, the first `--data` given, or the
    /// first in the folder's (alphabetical) order.
    pub baseline_reason: String,
    pub backends: Vec<String>,
    pub totals: Vec<TotalRow>,
    pub by_type: Vec<TypeRow>,
    pub by_family: Vec<TypeRow>,
    /// The baseline aligned with each other backend.
    pub pairs: Vec<Pair>,
}
