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

/// How the inputs were named ([`crate::Inputs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InputMode {
    /// A folder whose files were found by their names.
    Folder,
    /// Explicit `--data` groups.
    Data,
    /// A previously written `analyze-data.json`, analyzed again.
    AnalyzeData,
}

/// The program that wrote the document.
#[derive(Debug, Clone, Serialize)]
pub struct Generator {
    /// Always `trtmc-analyze`.
    pub name: &'static str,
    /// This crate's version.
    pub version: &'static str,
}

/// Where the inputs came from (`input` in the document).
#[derive(Debug, Clone, Serialize)]
pub struct InputInfo {
    /// How they were named.
    pub mode: InputMode,
    /// The folder the inputs came from (the common parent for `--data`).
    pub folder: Option<String>,
    /// JSON files in the folder that matched no naming scheme.
    pub ignored_files: Vec<String>,
    /// Serialized engines next to the inputs.
    pub engine_files: Vec<String>,
}

/// The verdict over all backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OverallStatus {
    /// Every backend passed validation.
    Passed,
    /// Some backends passed, some failed.
    Partial,
    /// No backend passed.
    Failed,
}

/// The request's validation summary (`validation` in the document).
#[derive(Debug, Clone, Serialize)]
pub struct Overall {
    /// Passed, partial or failed.
    pub status: OverallStatus,
    /// Backends analyzed.
    pub backend_count: usize,
    /// Backends that passed validation.
    pub passed_count: usize,
    /// Backends that failed (analysis mode `unusable`).
    pub failed_count: usize,
    /// Request-level warnings (e.g. JSON files in the folder that were ignored).
    pub warnings: Vec<String>,
}

/// One backend's validation verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Usable: analysis mode `layer_profile` or `layer_only`.
    Passed,
    /// Unusable: an error-level message says why.
    Failed,
}

/// How much of the analysis a backend's files allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Detailed layers with a matching profile: latency interpretation allowed.
    LayerProfile,
    /// Layers only (no profile, or names only): graph and layer inspection, no latency interpretation.
    LayerOnly,
    /// Nothing to analyze: the layer info is missing or unreadable, the graph has a cycle, or the
    /// profile is unreadable or does not match (any error-level message); status `failed`.
    Unusable,
}

/// How serious a validation message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// The backend cannot be used (its mode becomes `unusable`).
    Error,
    /// Something to know that does not stop the analysis (few iterations, names only, …).
    Warning,
    /// Context only (e.g. notes of the layer-file reader).
    Info,
}

/// One validation message of a backend.
#[derive(Debug, Clone, Serialize)]
pub struct Message {
    /// How serious it is.
    pub level: Level,
    /// Stable identifier of the rule that produced the message.
    pub code: &'static str,
    /// What was found and, for a problem, how to fix it.
    pub message: String,
}

/// The outcome of one validation check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// The check holds.
    Passed,
    /// The check holds with a reservation (a warning message says which).
    Warning,
    /// The check fails (an error message says why).
    Failed,
    /// The check does not apply (no profile, names-only layer info).
    Skipped,
}

/// One line of the validation checklist.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// The check's identifier (`layer_file`, `names_match`, `percentages`, `iteration_count`, …).
    pub name: &'static str,
    /// Its outcome.
    pub status: CheckStatus,
    /// The short result (`12 layer records`, `sum 99.98%`, `unreadable`).
    pub detail: String,
}

/// One backend's validation: its verdict, the analysis it allows, and why.
#[derive(Debug, Clone, Serialize)]
pub struct BackendValidation {
    /// Passed or failed.
    pub status: Status,
    /// What the files allow.
    pub analysis_mode: Mode,
    /// True only for passed layer_profile backends: the only ones whose latency may be interpreted.
    pub latency_interpretation: bool,
    /// Whether the report shows this backend's analysis (every mode but `unusable`).
    pub report_available: bool,
    /// Errors, warnings and notes, in the order found.
    pub messages: Vec<Message>,
    /// The checklist, one line per check run.
    pub checks: Vec<Check>,
}

/// The files a backend was read from, as paths (`None`: no such file).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Sources {
    /// The layer-info file.
    pub layers: Option<String>,
    /// The profile.
    pub profile: Option<String>,
    /// The times file.
    pub times: Option<String>,
    /// TREx metadata side files.
    pub metadata: Vec<String>,
}

/// How the export was written, as far as the files tell.
#[derive(Debug, Clone, Serialize)]
pub struct ExportInfo {
    /// Detailed records or names only.
    pub verbosity: crate::read::Verbosity,
    /// `{"Layers": [...]}` or a bare list.
    pub root: crate::read::RootShape,
    /// The engine's I/O tensor names, when the layer info lists them.
    pub bindings: Option<Vec<String>>,
    /// Whether every profile record has `medianMs` (TensorRT 8.4 and newer); `None` without a
    /// readable profile.
    pub profile_has_median: Option<bool>,
    /// The era's evidence as plain lines (the facts used, then those set aside); empty for
    /// runtimes other than TensorRT.
    pub version_hints: Vec<String>,
    /// The TensorRT release range the export's fields allow, with the evidence (TensorRT only).
    pub era: Option<crate::provenance::Era>,
}

/// Where a backend's number of profiled iterations came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CountSource {
    /// The profile's `{"count": N}` header.
    ProfileHeader,
    /// Inferred from the records' `timeMs / averageMs` (their median, when consistent).
    TimeAverageRatio,
    /// Unknown: no valid header and no consistent ratio (or no profile).
    None,
}

impl CountSource {
    /// The source in words, for people (`profile header`, `timeMs/averageMs ratio`, `none`).
    pub fn describe(self) -> &'static str {
        match self {
            CountSource::ProfileHeader => "profile header",
            CountSource::TimeAverageRatio => "timeMs/averageMs ratio",
            CountSource::None => "none",
        }
    }
}

/// A backend's whole-profile sums (present when its profile joined its layers).
#[derive(Debug, Clone, Serialize)]
pub struct Timing {
    /// Σ timeMs: all profiled iterations together.
    pub total_time_ms: f64,
    /// Σ averageMs: one inference as the sum of per-layer averages.
    pub average_inference_ms: f64,
    /// Σ medianMs (absent for TensorRT 8.2 profiles).
    pub median_sum_ms: Option<f64>,
    /// Σ percentage: about 100 in a sound profile (± 2 passes the check).
    pub total_percentage: f64,
}

/// What one backend says about the model: name, category and, from a config file or the
/// exports, its dimensions.
#[derive(Debug, Clone, Serialize)]
pub struct BackendModel {
    /// The request's model name, else the label cleaned as a name (low confidence).
    pub name: Option<String>,
    /// How sure that name is.
    pub name_confidence: Confidence,
    /// The model category, with its evidence (its fields appear at this level when serialized).
    #[serde(flatten)]
    pub category: CategoryGuess,
    /// The config file the numbers below were read from.
    pub config_path: Option<String>,
    /// Config `hidden_size` (or `d_model`, `n_embd`).
    pub hidden_size: Option<i64>,
    /// Config `intermediate_size` (or `ffn_dim`, `n_inner`).
    pub intermediate_size: Option<i64>,
    /// Config `num_hidden_layers` (or `n_layer`, `num_layers`); for transformers and diffusion
    /// models without one, the highest block index in the layer names (`layers.31.`).
    pub num_layers: Option<i64>,
    /// Config `num_attention_heads` (or `n_head`).
    pub num_heads: Option<i64>,
    /// Config `max_position_embeddings` (or `n_positions`).
    pub max_position_embeddings: Option<i64>,
    /// The last dimension of an `input_ids` / `attention_mask` / `token_type_ids` input, when fixed.
    pub sequence_length: Option<i64>,
    /// Whether some tensor has a dynamic (`-1`) dimension: the export was made without concrete
    /// input shapes.
    pub dynamic_dims: bool,
    /// Dimensions of tensors that enter the graph from outside.
    pub input_shapes: BTreeMap<String, Vec<i64>>,
}

/// How the layers are split over engines, streams and opaque regions.
#[derive(Debug, Clone, Serialize)]
pub struct Engines {
    /// Serialized engines next to the inputs.
    pub engine_files: Vec<String>,
    /// The distinct `_subgraph` ids of the layers.
    pub subgraphs: Vec<IntOrStr>,
    /// The distinct `StreamId`s of the layers.
    pub streams: Vec<IntOrStr>,
    /// Opaque Myelin regions (`{ForeignNode[…]}`).
    pub myelin_regions: usize,
    /// Plugin layers.
    pub plugin_layers: usize,
    /// How many engines the inputs describe.
    pub inferred_count: Option<usize>,
    /// What that number rests on, in words (`engine files next to the inputs`, …).
    pub source: String,
    /// True when the count comes from hints (files next to the inputs) rather than the export.
    pub inferred: bool,
}

/// A tensor as shown in the analysis (name, dimensions, format).
pub use crate::read::Tensor as TensorView;

/// One layer's profile record, joined to the layer.
#[derive(Debug, Clone, Serialize)]
pub struct LayerTiming {
    /// `timeMs`: the layer's time over all profiled iterations, in milliseconds.
    pub time_ms: f64,
    /// `averageMs`: its mean time per iteration, in milliseconds.
    pub avg_ms: f64,
    /// `medianMs` (absent for TensorRT 8.2 profiles).
    pub median_ms: Option<f64>,
    /// `percentage`: its share of the profile's total time, in percent.
    pub percentage: f64,
}

/// One layer as the analysis shows it: the record's fields plus its classification and timing.
#[derive(Debug, Clone, Serialize)]
pub struct LayerView {
    /// Position in the layer-info file (engine order), from 0; other fields refer to layers by it.
    pub index: u32,
    /// `Name` as written (fused layers join their parts with ` + `).
    pub name: String,
    /// `LayerType` as written (`unknown` when absent).
    pub raw_type: std::sync::Arc<str>,
    /// Report type: raw LayerType with the `kgen_mha` / `misc` overrides.
    #[serde(rename = "type")]
    pub report_type: std::sync::Arc<str>,
    /// What the layer computes.
    pub family: Family,
    /// True when the family was guessed from the name (names-only exports).
    pub family_from_name: bool,
    /// `ParameterType`: the network layer it implements (`Convolution`, `Pooling`, …).
    pub parameter_type: Option<std::sync::Arc<str>>,
    /// Normalized precision (`FP16`, `INT8`, …) of the first input with a known format, else of the
    /// first output.
    pub precision: Option<&'static str>,
    /// Normalized precision of the first output with a known format.
    pub output_precision: Option<&'static str>,
    /// `TacticName`: the kernel the builder chose.
    pub tactic: Option<String>,
    /// `StreamId`: the CUDA stream it runs on.
    pub stream: Option<IntOrStr>,
    /// `_subgraph`: the Myelin subgraph it belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subgraph: Option<IntOrStr>,
    /// Source ONNX nodes (from Metadata, else from the fused name).
    pub origins: Vec<String>,
    /// `Inputs`, in order.
    pub inputs: Vec<TensorView>,
    /// `Outputs`, in order.
    pub outputs: Vec<TensorView>,
    /// Tags in the published analysis format's vocabulary (plus family names), for the tag
    /// breakdown.
    pub tags: Vec<&'static str>,
    /// Its profile record; `None` unless the whole profile joined the layers.
    pub timing: Option<LayerTiming>,
    /// Where the record as written sits in the backend's layer-info source, for the
    /// published-format output.
    #[serde(skip)]
    pub raw: Option<std::ops::Range<usize>>,
    /// Whether the record as written already has the published format's layer shape, so it is
    /// copied verbatim into `analyze-data.json`.
    #[serde(skip)]
    pub verbatim_ok: bool,
    /// A convolution's kernel, stride, groups and output maps, for telling convolutions apart
    /// when aligning builds and for the channel-alignment check.
    #[serde(skip)]
    pub conv: Option<crate::read::ConvFields>,
    /// `Weights` and `Bias` (element type and count), where the export lists them.
    #[serde(skip)]
    pub weights: Option<crate::read::WeightCount>,
    /// See `weights`.
    #[serde(skip)]
    pub bias: Option<crate::read::WeightCount>,
}

/// The layers that share one key (a type, family, precision or tag), with their summed times.
#[derive(Debug, Clone, Serialize)]
pub struct Bucket {
    /// The key.
    pub name: String,
    /// Layers with that key.
    pub count: usize,
    /// Σ of their `timeMs`, in milliseconds (`None` without a joined profile).
    pub time_ms: Option<f64>,
    /// Σ of their `averageMs`, in milliseconds (`None` without a joined profile).
    pub avg_ms: Option<f64>,
    /// Σ of their time shares, in percent (`None` without a joined profile).
    pub percentage: Option<f64>,
}

/// Time share of one of the categories the seed names for concentration checks.
#[derive(Debug, Clone, Serialize)]
pub struct Concentration {
    /// The category (`kgen`, `shape`, `cast`, `gather`, `reshape`, `pointwise`, `reduction`).
    pub category: &'static str,
    /// Layers in it.
    pub count: usize,
    /// Their share of the time, in percent.
    pub percentage: f64,
    /// The share at which the category is flagged, in percent.
    pub threshold: f64,
    /// Whether `percentage` reaches `threshold`.
    pub flagged: bool,
}

/// A backend's layers grouped several ways, largest time share first (by count without a profile).
#[derive(Debug, Clone, Serialize)]
pub struct Breakdowns {
    /// By report type.
    pub by_type: Vec<Bucket>,
    /// By family.
    pub by_family: Vec<Bucket>,
    /// By precision (`unknown` where none is known).
    pub by_precision: Vec<Bucket>,
    /// By tag (a layer counts once per tag).
    pub by_tag: Vec<Bucket>,
    /// The concentration categories' shares (empty without a joined profile).
    pub concentration: Vec<Concentration>,
}

/// The layer graph as the document shows it ([`crate::graph::Graph`], edges as pairs).
#[derive(Debug, Clone, Serialize)]
pub struct GraphView {
    /// Number of edges.
    pub edge_count: usize,
    /// `[from, to]` layer indices, sorted and without duplicates.
    pub edges: Vec<[u32; 2]>,
    /// Tensors read but never written (engine inputs, constants, Myelin internals).
    pub external_inputs: Vec<String>,
    /// Tensors written but never read.
    pub graph_outputs: Vec<String>,
    /// Whether the graph has no cycle.
    pub is_dag: bool,
    /// Strongly connected groups of layers, when it has cycles.
    pub cycles: Vec<Vec<u32>>,
    /// Tensors with several writers.
    pub multi_writers: Vec<crate::graph::MultiWriter>,
    /// Reads that come before the tensor's first write in the file.
    pub back_references: Vec<crate::graph::BackReference>,
}

/// Everything about one backend (one build's exports): validation, layers, graph, breakdowns and
/// findings.
#[derive(Debug, Clone, Serialize)]
pub struct Backend {
    /// The backend's name (`fp16` of `layers_fp16.json`, or the `--label` given).
    pub label: String,
    /// The runtime that wrote the files and why (`None` when the layer info could not be read).
    pub runtime: Option<crate::provenance::RuntimeInfo>,
    /// The files read.
    pub sources: Sources,
    /// Its validation.
    pub validation: BackendValidation,
    /// How the export was written (`None` when the layer info could not be read).
    pub export: Option<ExportInfo>,
    /// Layer records in the layer info.
    pub layer_count: usize,
    /// Records in the profile, when it could be read.
    pub profile_count: Option<usize>,
    /// Profiled iterations, and where the number came from.
    pub count: Option<u64>,
    /// Where `count` came from.
    pub count_source: CountSource,
    /// Whole-profile sums, when the profile joined the layers.
    pub timing: Option<Timing>,
    /// `--exportTimes` summary, when given.
    pub end_to_end: Option<Times>,
    /// What this backend says about the model (`None` when the layer info could not be read).
    pub model: Option<BackendModel>,
    /// Engines, streams and regions (`None` when the layer info could not be read).
    pub engines: Option<Engines>,
    /// The layers, in file (engine) order.
    pub layers: Vec<LayerView>,
    /// The layer graph (`None` for names-only exports, which have no tensors, and when the layer
    /// info could not be read).
    pub graph: Option<GraphView>,
    /// Layers grouped by type, family, precision and tag (`None` when unusable).
    pub breakdowns: Option<Breakdowns>,
    /// Per-layer weights and activations, where the export has the fields.
    pub memory: Option<Memory>,
    /// Layer indices by time share, largest first.
    pub hot_layers: Vec<u32>,
    /// Facts, ranked issues and positives.
    pub findings: Findings,
    /// The layer-info document the layers' `raw` ranges point into.
    #[serde(skip)]
    pub source: Option<std::sync::Arc<crate::read::Text>>,
}

impl Backend {
    /// Whether the backend passed validation (it is usable).
    pub fn passed(&self) -> bool {
        self.validation.status == Status::Passed
    }
}

/// The analysis document (`trtmc.analysis/v1`) that [`crate::analyze`] returns: `analysis.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    /// Always [`SCHEMA`].
    pub schema: &'static str,
    /// The program that wrote it.
    pub generator: Generator,
    /// Where the inputs came from.
    pub input: InputInfo,
    /// Which model the inputs belong to.
    pub model: ModelIdentity,
    /// The verdict over all backends.
    pub validation: Overall,
    /// One entry per backend, in input order.
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

/// One ranked issue: facts from the files, a hypothesis about them, and how to check it.
#[derive(Debug, Clone, Serialize)]
pub struct Issue {
    /// Stable rule identifier.
    pub id: &'static str,
    /// Ranking key: larger is more likely to matter (roughly the time share involved plus a rule weight).
    pub score: f64,
    /// One line naming the issue.
    pub title: String,
    /// Facts from the files that triggered the rule.
    pub evidence: Vec<String>,
    /// What the facts may mean (not established).
    pub hypothesis: String,
    /// What to look at or try next to confirm or refute the hypothesis.
    pub next_check: String,
    /// How likely the hypothesis is.
    pub confidence: Confidence,
    /// Layers the issue is about.
    pub layers: Vec<u32>,
}

/// What the analysis found in one backend; facts and hypotheses are kept apart.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Findings {
    /// Measurements read from the files, as sentences.
    pub facts: Vec<String>,
    /// Issues, highest score first.
    pub issues: Vec<Issue>,
    /// Things that look as they should (e.g. tensor-core kernels on the matrix math).
    pub positives: Vec<String>,
}

// The memory footprint of one backend (filled by `memory::footprint`).

/// A backend's memory footprint, computed as TREx computes it.
#[derive(Debug, Clone, Serialize)]
pub struct Memory {
    /// Per layer (in `layers` order): bytes of its `Weights` and `Bias`, `None` when it lists
    /// neither.
    pub weights_bytes: Vec<Option<u64>>,
    /// Per layer: bytes of its input and output tensors, `None` when none has a known size.
    pub activation_bytes: Vec<Option<u64>>,
    /// Σ of the per-layer weights, in bytes.
    pub total_weights_bytes: u64,
    /// Σ of the per-layer activations (a tensor counts once for its writer and once per reader,
    /// as in TREx's "Activations").
    pub total_activation_bytes: u64,
}

// Comparisons between backends (filled by `compare::compare_all`).

/// One backend's totals in a comparison.
#[derive(Debug, Clone, Serialize)]
pub struct TotalRow {
    /// The backend's label.
    pub label: String,
    /// Its analysis mode.
    pub analysis_mode: Mode,
    /// Its number of layers.
    pub layer_count: usize,
    /// Σ averageMs, when the backend has a matching profile.
    pub average_inference_ms: Option<f64>,
    /// This backend's `average_inference_ms` minus the baseline's, in milliseconds.
    pub delta_ms: Option<f64>,
    /// Baseline time divided by this backend's time (> 1: faster than the baseline).
    pub speedup: Option<f64>,
    /// Share of time (or of layers without a profile) per input precision.
    pub precision_mix: BTreeMap<String, f64>,
}

/// One backend's layers of one type or family, in a comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// How many.
    pub count: usize,
    /// Σ of their `averageMs`, in milliseconds (`None` when none is profiled).
    pub avg_ms: Option<f64>,
}

/// One report type or family across the compared backends.
#[derive(Debug, Clone, Serialize)]
pub struct TypeRow {
    /// The type or family.
    pub name: String,
    /// One cell per compared backend, in `backends` order.
    pub cells: Vec<Cell>,
}

/// How an aligned pair of layers was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// The same layer name.
    Name,
    /// Shared source (ONNX) nodes.
    Origin,
    /// The aligned producers and consumers around it.
    Position,
    /// The only unaligned layer of its family and shapes on each side.
    Signature,
    /// No partner (the row's `reason` says why).
    Unmatched,
}

/// Why a layer has no partner, as a code.
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
    /// Ambiguous, or no counterpart.
    pub code: UnmatchedCode,
    /// The reason in words (the candidates, or what was looked for).
    pub detail: String,
}

/// One row of a pair's alignment: a layer of `a`, of `b`, or one of each.
#[derive(Debug, Clone, Serialize)]
pub struct AlignedRow {
    /// The layer's index in backend `a`, if the row has one.
    pub a: Option<u32>,
    /// The layer's index in backend `b`, if the row has one.
    pub b: Option<u32>,
    /// How the pair was found (`unmatched` for a lone layer).
    pub method: Method,
    /// Both layers have a precision, and they differ.
    pub precision_changed: bool,
    /// Both layers have a tactic, and they differ.
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

/// The baseline aligned layer by layer with one other backend.
#[derive(Debug, Clone, Serialize)]
pub struct Pair {
    /// The baseline's label.
    pub a: String,
    /// The other backend's label.
    pub b: String,
    /// Pairs with the same layer name.
    pub matched_by_name: usize,
    /// Pairs that share source nodes.
    pub matched_by_origin: usize,
    /// Pairs found from the aligned producers and consumers around them.
    pub matched_by_position: usize,
    /// Pairs that were the only unaligned layers of their family and shapes on each side.
    pub matched_by_signature: usize,
    /// Layers of `a` without a partner.
    pub unmatched_a: usize,
    /// Layers of `b` without a partner.
    pub unmatched_b: usize,
    /// Unmatched because several candidates fit equally well.
    pub ambiguous_a: usize,
    /// The same for `b`.
    pub ambiguous_b: usize,
    /// Pairs whose precision changed.
    pub precision_changes: usize,
    /// Pairs whose tactic changed.
    pub tactic_changes: usize,
    /// Readable examples of what changed (first few).
    pub changes: Vec<String>,
    /// The alignment: `a`'s layers in order, then `b`'s unmatched ones.
    pub rows: Vec<AlignedRow>,
}

/// The backends of one model compared: totals, per-type and per-family tables, and the baseline
/// aligned with each other backend.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The model these backends are builds of, as far as their labels tell.
    pub model: Option<String>,
    /// The baseline's label.
    pub baseline: String,
    /// Why that backend is the baseline: `--baseline LABEL`, the first `--data` given, or the
    /// first in the folder's (alphabetical) order.
    pub baseline_reason: String,
    /// The compared backends' labels, baseline first.
    pub backends: Vec<String>,
    /// One row per compared backend, in `backends` order.
    pub totals: Vec<TotalRow>,
    /// Per report type, largest total time first.
    pub by_type: Vec<TypeRow>,
    /// Per family, largest total time first.
    pub by_family: Vec<TypeRow>,
    /// The baseline aligned with each other backend.
    pub pairs: Vec<Pair>,
}
