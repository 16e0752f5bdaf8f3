//! The analysis document (`trtmc.analysis/v1`) and the entry point that builds it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::backend;
use crate::classify::Family;
use crate::compare::{self, Comparison};
use crate::discover::{self, BackendFiles, DataSpec, DiscoverError};
use crate::findings::Findings;
use crate::identity::{self, CategoryGuess, Confidence, ModelIdentity};
use crate::read::{IntOrStr, Times};

/// Schema name written into every analysis document.
pub const SCHEMA: &str = "trtmc.analysis/v1";

/// What to analyze.
#[derive(Debug, Clone)]
pub enum Inputs {
    /// A folder that directly holds layer-info / profile files.
    Folder(PathBuf),
    /// Explicit `--data LAYERS [PROFILE [TIMES]]` groups.
    Data(Vec<DataSpec>),
    /// A previously written `analyze-data.json` (published v1.0 format), analyzed again.
    AnalyzeData(PathBuf),
}

#[derive(Debug, Clone)]
pub struct Request {
    pub inputs: Inputs,
    /// `--model-name`: wins over every inferred name.
    pub model_name: Option<String>,
}

/// Choices that change how the backends are compared, not what is read.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--baseline LABEL`: the backend every other one is compared with (default: the first
    /// `--data` given, or the first in folder order).
    pub baseline: Option<String>,
}

/// Nothing structured can be emitted (the caller exits nonzero).
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error(transparent)]
    Discover(#[from] DiscoverError),
    #[error("--data needs at least one layer-info file")]
    NoData,
    #[error("{path}: {message}")]
    AnalyzeData { path: PathBuf, message: String },
    #[error("--baseline {label:?} names no backend; the backends are: {}", .labels.join(", "))]
    UnknownBaseline { label: String, labels: Vec<String> },
}

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
    pub input_shapes: std::collections::BTreeMap<String, Vec<i64>>,
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
    pub memory: Option<crate::memory::Memory>,
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

/// Runs the whole analysis. Fails only when nothing structured can be produced.
pub fn analyze(request: &Request) -> Result<Analysis, AnalyzeError> {
    analyze_with(request, &Options::default())
}

/// [`analyze`] with comparison choices (`--baseline`).
pub fn analyze_with(request: &Request, options: &Options) -> Result<Analysis, AnalyzeError> {
    let (mode, folder, ignored, engine_files, loaded, recorded_name) = match &request.inputs {
        Inputs::Folder(folder) => {
            let d = discover::discover(folder)?;
            let loaded = load_all(&d.backends);
            (
                InputMode::Folder,
                Some(d.folder),
                d.ignored,
                d.engine_files,
                loaded,
                None,
            )
        }
        Inputs::Data(specs) => {
            if specs.is_empty() {
                return Err(AnalyzeError::NoData);
            }
            let files = discover::from_data(specs);
            let folder = common_parent(&files);
            let engine_files = folder.as_deref().map(engine_files_in).unwrap_or_default();
            let loaded = load_all(&files);
            (
                InputMode::Data,
                folder,
                Vec::new(),
                engine_files,
                loaded,
                None,
            )
        }
        Inputs::AnalyzeData(path) => {
            let doc = crate::compat::read_analyze_data(path).map_err(|message| {
                AnalyzeError::AnalyzeData {
                    path: path.clone(),
                    message,
                }
            })?;
            let folder = doc
                .folder
                .as_ref()
                .map(PathBuf::from)
                .filter(|f| f.is_dir());
            let engine_files = folder.as_deref().map(engine_files_in).unwrap_or_default();
            (
                InputMode::AnalyzeData,
                folder,
                Vec::new(),
                engine_files,
                doc.backends,
                doc.model_name,
            )
        }
    };

    let labels: Vec<String> = loaded.iter().map(|l| l.label.clone()).collect();
    if let Some(label) = options.baseline.as_ref().filter(|l| !labels.contains(l)) {
        return Err(AnalyzeError::UnknownBaseline {
            label: label.clone(),
            labels,
        });
    }
    let explicit = request.model_name.as_deref().or(recorded_name.as_deref());
    let prefix = identity::layer_name_prefix(loaded.iter().filter_map(|l| match &l.layers {
        Some(Ok(info)) => Some(info.layers.iter().map(|x| x.name.as_str())),
        _ => None,
    }));
    let identity =
        identity::infer_with_prefix(explicit, folder.as_deref(), &labels, prefix.as_ref());
    let config = folder.as_deref().and_then(|f| {
        identity::config_paths(f)
            .into_iter()
            .find_map(|p| identity::load_config(&p).map(|c| (c, p.display().to_string())))
    });
    let ctx = Context {
        engine_files: engine_files.clone(),
        identity,
        config,
    };

    let backends: Vec<Backend> = if loaded.len() > 1 {
        // Backends are independent: analyze them on separate threads.
        std::thread::scope(|s| {
            let ctx = &ctx;
            let handles: Vec<_> = loaded
                .into_iter()
                .map(|l| (l.label.clone(), s.spawn(move || backend::analyze(l, ctx))))
                .collect();
            handles
                .into_iter()
                .map(|(label, h)| {
                    h.join()
                        .unwrap_or_else(|_| backend::internal_failure(label))
                })
                .collect()
        })
    } else {
        loaded
            .into_iter()
            .map(|l| backend::analyze(l, &ctx))
            .collect()
    };

    let first = match mode {
        InputMode::Data => "the first --data given",
        InputMode::Folder => {
            "the first in the folder's order (by label); choose another with --baseline"
        }
        InputMode::AnalyzeData => "the first backend of analyze-data.json",
    };
    let comparisons = compare::compare_all(
        &backends,
        ctx.identity.name.as_deref(),
        options.baseline.as_deref(),
        first,
    );
    let passed = backends.iter().filter(|b| b.passed()).count();
    let failed = backends.len() - passed;
    let mut warnings = Vec::new();
    if !ignored.is_empty() {
        warnings.push(format!(
            "{} JSON file(s) in the folder matched no naming scheme and were ignored: {}",
            ignored.len(),
            ignored.join(", ")
        ));
    }
    let status = match (passed, failed) {
        (_, 0) => OverallStatus::Passed,
        (0, _) => OverallStatus::Failed,
        _ => OverallStatus::Partial,
    };
    Ok(Analysis {
        schema: SCHEMA,
        generator: Generator {
            name: "trtmc-analyze",
            version: env!("CARGO_PKG_VERSION"),
        },
        input: InputInfo {
            mode,
            folder: folder.map(|f| f.display().to_string()),
            ignored_files: ignored,
            engine_files,
        },
        model: ctx.identity,
        validation: Overall {
            status,
            backend_count: backends.len(),
            passed_count: passed,
            failed_count: failed,
            warnings,
        },
        backends,
        comparisons,
    })
}

/// Reads and parses every backend's files, each backend on a thread of its own (a two-build
/// comparison uses both cores of a small machine; within a backend the profile is read beside
/// the layer file too).
fn load_all(files: &[BackendFiles]) -> Vec<backend::Loaded> {
    if files.len() < 2 {
        return files.iter().map(backend::load_files).collect();
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = files
            .iter()
            .map(|f| s.spawn(move || backend::load_files(f)))
            .collect();
        handles
            .into_iter()
            .zip(files)
            .map(|(h, f)| h.join().unwrap_or_else(|_| backend::load_files(f)))
            .collect()
    })
}

fn common_parent(files: &[BackendFiles]) -> Option<PathBuf> {
    let mut dirs = files
        .iter()
        .flat_map(|b| [b.layers.as_ref(), b.profile.as_ref(), b.times.as_ref()])
        .flatten()
        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
        .filter_map(|p| p.parent().map(Path::to_path_buf));
    let mut common = dirs.next()?;
    for d in dirs {
        while !d.starts_with(&common) {
            common = common.parent()?.to_path_buf();
        }
    }
    Some(common)
}

fn engine_files_in(folder: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| {
                    let l = n.to_ascii_lowercase();
                    [".engine", ".trt", ".plan"].iter().any(|s| l.ends_with(s))
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

impl Analysis {
    /// Writes the analysis as JSON (`trtmc.analysis/v1`).
    pub fn write_json<W: std::io::Write>(&self, mut w: W) -> serde_json::Result<()> {
        // Byte for byte what `serde_json::to_writer(w, self)` writes, faster (see write.rs).
        crate::write::analysis(&mut w, self)
    }

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
