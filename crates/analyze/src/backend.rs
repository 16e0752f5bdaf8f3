//! One backend: load its files, validate them, and compute everything the report shows.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use foldhash::{HashMap, HashMapExt};

use crate::analysis::{
    Backend, BackendModel, BackendValidation, Breakdowns, Bucket, Check, CheckStatus,
    Concentration, Context, CountSource, Engines, ExportInfo, GraphView, LayerTiming, LayerView,
    Level, Message, Mode, Sources, Status, Timing,
};
use crate::classify::{self, Family};
use crate::discover::BackendFiles;
use crate::findings::{self, Findings};
use crate::identity::{CategorySignals, Confidence};
use crate::provenance::{self, Runtime};
use crate::read::{self, HeaderCount, Layer, LayerInfo, Profile, ProfileRecord, Times, Verbosity};

/// Why one export file of a backend cannot be read; it becomes the backend's `*_unreadable` message.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExportError {
    /// The file cannot be read, or is not of its export's format.
    #[error(transparent)]
    Source(#[from] read::SourceError),
    /// An export recorded in an earlier `analyze-data.json` that no longer reads.
    #[error("recorded {what}: {source}")]
    Recorded {
        /// `layers`, `profile`.
        what: &'static str,
        source: read::FormatError,
    },
}

/// A backend's files, read but not yet validated.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub label: String,
    pub sources: Sources,
    /// `None` when the backend has no such file.
    pub layers: Option<Result<LayerInfo, ExportError>>,
    pub profile: Option<Result<Profile, ExportError>>,
    pub times: Option<Result<Times, ExportError>>,
    /// Messages found while loading (encoding problems, messages recorded in an earlier analysis).
    pub notes: Vec<Message>,
    /// The backend was recorded as failed in an earlier analysis; its messages are in `notes`.
    pub recorded_failure: bool,
}

fn read_file<T>(
    path: &std::path::Path,
    notes: &mut Vec<Message>,
    parse: impl FnOnce(read::Text) -> Result<T, read::FormatError>,
) -> Result<T, ExportError> {
    let (text, warning) = read::read_text(path)?;
    if let Some(w) = warning {
        notes.push(Message {
            level: Level::Warning,
            code: "encoding",
            message: format!("{}: {w}", path.display()),
        });
    }
    parse(text).map_err(|e| {
        ExportError::Source(read::SourceError {
            path: path.to_path_buf(),
            kind: e.into(),
        })
    })
}

pub(crate) fn load_files(files: &BackendFiles) -> Loaded {
    let mut notes = Vec::new();
    let show = |p: &Option<std::path::PathBuf>| p.as_ref().map(|p| p.display().to_string());
    let sources = Sources {
        layers: show(&files.layers),
        profile: show(&files.profile),
        times: show(&files.times),
        metadata: files
            .metadata
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
    };
    // The profile and times are read on a second thread while the (larger) layer file is parsed.
    let read_side = || {
        let mut notes = Vec::new();
        let profile = files
            .profile
            .as_ref()
            .map(|p| read_file(p, &mut notes, |t| read::read_profile(&t)));
        let times = files
            .times
            .as_ref()
            .map(|p| read_file(p, &mut notes, |t| read::read_times(&t)));
        (profile, times, notes)
    };
    let (layers, (profile, times, side_notes)) = std::thread::scope(|s| {
        let side = s.spawn(read_side);
        let layers = files
            .layers
            .as_ref()
            .map(|p| read_file(p, &mut notes, read::read_layer_text));
        (layers, side.join().unwrap_or_else(|_| read_side()))
    });
    notes.extend(side_notes);
    Loaded {
        label: files.label.clone(),
        sources,
        layers,
        profile,
        times,
        notes,
        recorded_failure: false,
    }
}

/// A failed backend for a worker thread that did not finish (a bug; reported, not hidden).
pub(crate) fn internal_failure(label: String) -> Backend {
    let mut v = Validator::default();
    v.error(
        "internal",
        "internal error while analyzing this backend; please report it with the input files"
            .to_owned(),
    );
    empty_backend(label, Sources::default(), v)
}

#[derive(Default)]
struct Validator {
    messages: Vec<Message>,
    checks: Vec<Check>,
}

impl Validator {
    fn error(&mut self, code: &'static str, message: String) {
        self.messages.push(Message {
            level: Level::Error,
            code,
            message,
        });
    }
    fn warning(&mut self, code: &'static str, message: String) {
        self.messages.push(Message {
            level: Level::Warning,
            code,
            message,
        });
    }
    fn info(&mut self, code: &'static str, message: String) {
        self.messages.push(Message {
            level: Level::Info,
            code,
            message,
        });
    }
    fn check(&mut self, name: &'static str, status: CheckStatus, detail: impl Into<String>) {
        self.checks.push(Check {
            name,
            status,
            detail: detail.into(),
        });
    }
    fn has_errors(&self) -> bool {
        self.messages.iter().any(|m| m.level == Level::Error)
    }
    fn finish(self, mode: Mode) -> BackendValidation {
        let status = if mode == Mode::Unusable {
            Status::Failed
        } else {
            Status::Passed
        };
        BackendValidation {
            status,
            analysis_mode: mode,
            latency_interpretation: mode == Mode::LayerProfile,
            report_available: mode != Mode::Unusable,
            messages: self.messages,
            checks: self.checks,
        }
    }
}

fn empty_backend(label: String, sources: Sources, v: Validator) -> Backend {
    Backend {
        label,
        runtime: None,
        sources,
        validation: v.finish(Mode::Unusable),
        export: None,
        layer_count: 0,
        profile_count: None,
        count: None,
        count_source: CountSource::None,
        timing: None,
        end_to_end: None,
        model: None,
        engines: None,
        layers: Vec::new(),
        graph: None,
        breakdowns: None,
        memory: None,
        hot_layers: Vec::new(),
        findings: Findings::default(),
        source: None,
    }
}

/// Short, quoted, control-character-free name for messages.
fn q(name: &str) -> String {
    let shown: String = name
        .chars()
        .take(96)
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect();
    if name.chars().count() > 96 {
        format!("`{shown}…`")
    } else {
        format!("`{shown}`")
    }
}

fn list(names: &[String], limit: usize) -> String {
    let mut out: Vec<String> = names.iter().take(limit).map(|n| q(n)).collect();
    if names.len() > limit {
        out.push(format!("and {} more", names.len() - limit));
    }
    out.join(", ")
}

pub(crate) fn analyze(loaded: Loaded, ctx: &Context) -> Backend {
    let Loaded {
        label,
        sources,
        layers,
        profile,
        times,
        notes,
        recorded_failure,
    } = loaded;
    let mut v = Validator {
        messages: notes,
        checks: Vec::new(),
    };
    if recorded_failure {
        return empty_backend(label, sources, v);
    }
    let info = match layers {
        None => return without_layer_file(label, sources, profile, v),
        Some(Err(e)) => {
            v.error("layers_unreadable", e.to_string());
            v.check("layer_file", CheckStatus::Failed, "unreadable");
            return empty_backend(label, sources, v);
        }
        Some(Ok(info)) => info,
    };
    let names_only = check_layer_file(&info, &mut v);

    let profile_read = profile.as_ref().and_then(|p| p.as_ref().ok());
    let runtime = provenance::detect_runtime(&label, &info, profile_read);
    // TensorRT exports are dated; the era rules mean nothing for other runtimes.
    let era = (runtime.name == Runtime::Tensorrt)
        .then(|| provenance::infer_era(&info, profile_read, &sources.metadata));
    // CPU runtimes name ONNX (or tract) operators; their families are decided up front.
    let cpu_families = (runtime.name != Runtime::Tensorrt)
        .then(|| provenance::cpu_families(runtime.name, &info.layers));
    let mut signals = CategorySignals {
        names_only,
        ..CategorySignals::default()
    };
    let (graph, derived, duplicates) =
        derive_layers(&info, cpu_families.as_deref(), names_only, &mut signals);
    check_structure(&duplicates, graph.as_ref(), &info.layers, &mut v);

    let model_inputs = ModelInputs::gather(&info, graph.as_ref());
    for b in info.bindings.iter().flatten() {
        signals.scan(b);
    }
    let LayerInfo {
        source,
        root,
        verbosity,
        layers: raw_layers,
        bindings,
        ..
    } = info;
    let mut layers: Vec<LayerView> = raw_layers
        .into_iter()
        .zip(derived)
        .enumerate()
        .map(|(i, (l, d))| layer_view(i as u32, l, d))
        .collect();

    let joined = join_profile_file(profile, &mut layers, runtime.name, &mut v);
    let end_to_end = check_times_file(times, &mut v);
    let mode = if v.has_errors() {
        Mode::Unusable
    } else if joined.joined && !names_only {
        Mode::LayerProfile
    } else {
        Mode::LayerOnly
    };

    if joined.joined {
        signals.conv_time_share = Some(convolution_share(&layers));
    }
    if let Some((config, path)) = &ctx.config {
        signals.config_model_type = config
            .get("model_type")
            .and_then(|m| m.as_str())
            .map(str::to_owned);
        signals.config_path = Some(path.clone());
    }
    let category = signals.decide();
    let model = backend_model(&label, ctx, category, &model_inputs);
    let engines = engines(&layers, ctx);
    let breakdowns = joined
        .joined
        .then(|| breakdowns(&layers))
        .or_else(|| Some(count_breakdowns(&layers)));
    let hot = hot_layers(&layers);
    let graph_view = graph.map(graph_view);
    let export = ExportInfo {
        verbosity,
        root,
        bindings,
        profile_has_median: joined.profile_has_median,
        version_hints: era
            .as_ref()
            .map(|e| e.evidence.iter().chain(&e.set_aside).cloned().collect())
            .unwrap_or_default(),
        era,
    };
    let findings = if mode == Mode::Unusable {
        Findings::default()
    } else {
        findings::derive(&findings::Input {
            mode,
            layers: &layers,
            timing: joined.timing.as_ref(),
            count: joined.count,
            end_to_end: end_to_end.as_ref(),
            breakdowns: breakdowns.as_ref(),
            engines: &engines,
            model: &model,
            graph: graph_view.as_ref(),
            names_only,
            runtime: runtime.name,
        })
    };
    Backend {
        label,
        runtime: Some(runtime),
        sources,
        validation: v.finish(mode),
        export: Some(export),
        layer_count: layers.len(),
        profile_count: joined.profile_count,
        count: joined.count,
        count_source: joined.count_source,
        timing: joined.timing,
        end_to_end,
        model: Some(model),
        engines: Some(engines),
        graph: graph_view,
        breakdowns: if mode == Mode::Unusable {
            None
        } else {
            breakdowns
        },
        memory: if mode == Mode::Unusable || names_only {
            None
        } else {
            crate::memory::footprint(&layers)
        },
        hot_layers: hot,
        layers,
        findings,
        source: Some(source),
    }
}

/// A backend with a profile or times file but no layer-info file: an error naming the export to add.
fn without_layer_file(
    label: String,
    sources: Sources,
    profile: Option<Result<Profile, ExportError>>,
    mut v: Validator,
) -> Backend {
    let what = sources
        .profile
        .as_deref()
        .or(sources.times.as_deref())
        .unwrap_or("this backend");
    v.error(
        "layers_missing",
        format!("no layer-info file: {what} has no matching layers_{label}.json; export one with trtexec --exportLayerInfo=FILE --profilingVerbosity=detailed"),
    );
    v.check("layer_file", CheckStatus::Failed, "missing");
    let mut b = empty_backend(label, sources, v);
    b.profile_count = profile.and_then(|p| p.ok()).map(|p| p.records.len());
    b
}

/// Checks of the layer-info file as a whole and of its records; returns whether it holds names only.
fn check_layer_file(info: &LayerInfo, v: &mut Validator) -> bool {
    v.check(
        "layer_file",
        CheckStatus::Passed,
        format!("{} layer records", info.layers.len()),
    );
    for n in &info.notes {
        v.info("layer_file", n.clone());
    }
    let names_only = info.verbosity == Verbosity::NamesOnly;
    if names_only {
        v.warning(
            "names_only",
            "the layer-info export holds layer names only (trtexec's default --profilingVerbosity=layer_names_only): layer types, tensors and tactics are unknown, so this backend is analyzed in layer_only mode; rebuild the engine with --profilingVerbosity=detailed and export again for a full analysis".to_owned(),
        );
        v.check("detailed_layers", CheckStatus::Warning, "names only");
    } else {
        v.check("detailed_layers", CheckStatus::Passed, "detailed records");
    }

    // Record-level problems: unreadable or unnamed records are errors, the rest warnings.
    let mut fatal = Vec::new();
    let mut minor = Vec::new();
    for l in &info.layers {
        for p in &l.problems {
            if l.name.is_empty() {
                fatal.push(p.clone())
            } else {
                minor.push(p.clone())
            }
        }
    }
    if !fatal.is_empty() {
        v.error(
            "layer_records",
            format!(
                "{} layer record(s) cannot be identified: {}",
                fatal.len(),
                fatal.iter().take(5).cloned().collect::<Vec<_>>().join("; ")
            ),
        );
    }
    if !minor.is_empty() {
        v.warning(
            "layer_fields",
            format!(
                "{} field problem(s) in layer records: {}",
                minor.len(),
                minor.iter().take(5).cloned().collect::<Vec<_>>().join("; ")
            ),
        );
    }
    v.check(
        "layer_records",
        if !fatal.is_empty() {
            CheckStatus::Failed
        } else if !minor.is_empty() {
            CheckStatus::Warning
        } else {
            CheckStatus::Passed
        },
        format!(
            "{} unidentifiable, {} field problems",
            fatal.len(),
            minor.len()
        ),
    );
    names_only
}

/// The graph (detailed exports only), each layer's derived view and the duplicated names.
///
/// These only read the records: on large exports the graph and the last part of the
/// classification run on a second thread.
fn derive_layers(
    info: &LayerInfo,
    cpu_families: Option<&[Family]>,
    names_only: bool,
    signals: &mut CategorySignals,
) -> (Option<crate::graph::Graph>, Vec<Derived>, Vec<String>) {
    if info.layers.len() < crate::PARALLEL_LAYERS {
        return (
            (!names_only).then(|| crate::graph::build(&info.layers)),
            derive_views(&info.layers, cpu_families, signals),
            duplicate_names(&info.layers),
        );
    }
    let split = info.layers.len() * 3 / 5;
    let (head, tail) = info.layers.split_at(split);
    let (head_families, tail_families) = match cpu_families {
        Some(f) => (Some(&f[..split]), Some(&f[split..])),
        None => (None, None),
    };
    std::thread::scope(|s| {
        let other = s.spawn(|| {
            let graph = (!names_only).then(|| crate::graph::build(&info.layers));
            let mut local = CategorySignals {
                names_only,
                ..CategorySignals::default()
            };
            let derived = derive_views(tail, tail_families, &mut local);
            (graph, derived, local)
        });
        let duplicates = duplicate_names(&info.layers);
        let mut derived = derive_views(head, head_families, signals);
        let (graph, more, local) = other
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        derived.extend(more);
        signals.merge(local);
        (graph, derived, duplicates)
    })
}

/// Duplicate names (a warning) and the graph's own checks, or the note that there is no graph.
fn check_structure(
    duplicates: &[String],
    graph: Option<&crate::graph::Graph>,
    layers: &[Layer],
    v: &mut Validator,
) {
    if !duplicates.is_empty() {
        v.warning(
            "duplicate_names",
            format!(
                "{} layer name(s) occur more than once (joined to the profile in order): {}",
                duplicates.len(),
                list(duplicates, 5)
            ),
        );
    }
    if let Some(g) = graph {
        check_graph(g, layers, v);
    } else {
        v.check(
            "graph_dag",
            CheckStatus::Skipped,
            "names-only export has no tensors",
        );
    }
}

/// What the profile file added to a backend's layers.
struct ProfileJoin {
    /// Records in the profile, when it could be read.
    profile_count: Option<usize>,
    /// Every layer got its timing and the profile had no problem records.
    joined: bool,
    count: Option<u64>,
    count_source: CountSource,
    timing: Option<Timing>,
    profile_has_median: Option<bool>,
}

/// Checks the profile file and joins its records to the layers; only a clean join sets timings.
fn join_profile_file(
    profile: Option<Result<Profile, ExportError>>,
    layers: &mut [LayerView],
    runtime: Runtime,
    v: &mut Validator,
) -> ProfileJoin {
    let mut out = ProfileJoin {
        profile_count: None,
        joined: false,
        count: None,
        count_source: CountSource::None,
        timing: None,
        profile_has_median: None,
    };
    let p = match profile {
        None => {
            v.check(
                "profile",
                CheckStatus::Skipped,
                "no profile file: layer_only analysis",
            );
            return out;
        }
        Some(Err(e)) => {
            v.error("profile_unreadable", e.to_string());
            v.check("profile", CheckStatus::Failed, "unreadable");
            return out;
        }
        Some(Ok(p)) => p,
    };
    out.profile_count = Some(p.records.len());
    out.profile_has_median = Some(p.records.iter().all(|r| r.median_ms.is_some()));
    if let Some(why) = &p.recovered_from {
        v.warning(
            "profile_recovered",
            format!("the profile is not valid JSON ({why}); trtexec writes names unescaped, so its {} records were recovered from trtexec's one-record-per-line layout", p.records.len()),
        );
    }
    let mut problems = p.problems.clone();
    problems.extend(negative_times(&p.records));
    if !problems.is_empty() {
        v.error(
            "profile_records",
            format!(
                "{} profile record problem(s): {}",
                problems.len(),
                problems
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        );
    }
    v.check(
        "profile",
        if problems.is_empty() {
            CheckStatus::Passed
        } else {
            CheckStatus::Failed
        },
        format!("{} records", p.records.len()),
    );
    if join_profile(layers, &p.records, v) && problems.is_empty() {
        out.joined = true;
        let (count, source) = infer_count(&p, v);
        if let Some(n) = count.filter(|n| *n < FEW_ITERATIONS) {
            warn_few_iterations(n, runtime, v);
        }
        out.count = count;
        out.count_source = source;
        out.timing = Some(check_timing(&p.records, count, v));
    }
    out
}

/// The optional `--exportTimes` file: unreadable is a warning, never an error.
fn check_times_file(times: Option<Result<Times, ExportError>>, v: &mut Validator) -> Option<Times> {
    match times {
        None => None,
        Some(Err(e)) => {
            v.warning("times_unreadable", e.to_string());
            v.check("times", CheckStatus::Warning, "unreadable (optional)");
            None
        }
        Some(Ok(t)) => {
            v.check(
                "times",
                CheckStatus::Passed,
                format!("{} iterations", t.iterations),
            );
            Some(t)
        }
    }
}

/// Percent of the profiled time spent in convolutions (a category signal).
fn convolution_share(layers: &[LayerView]) -> f64 {
    layers
        .iter()
        .filter(|l| l.family == Family::Convolution)
        .filter_map(|l| l.timing.as_ref())
        .map(|t| t.percentage)
        .sum()
}

/// The 20 timed layers with the largest time share, largest first.
fn hot_layers(layers: &[LayerView]) -> Vec<u32> {
    let mut hot: Vec<u32> = layers
        .iter()
        .filter(|l| l.timing.is_some())
        .map(|l| l.index)
        .collect();
    let share = |i: &u32| {
        layers[*i as usize]
            .timing
            .as_ref()
            .map(|t| t.percentage)
            .unwrap_or(0.0)
    };
    // Largest share first, ties by index: a total order, so picking the top 20 before sorting
    // them gives what sorting every layer would.
    let by_share = |a: &u32, b: &u32| share(b).total_cmp(&share(a)).then(a.cmp(b));
    if hot.len() > 20 {
        hot.select_nth_unstable_by(19, by_share);
        hot.truncate(20);
    }
    hot.sort_by(by_share);
    hot
}

fn graph_view(g: crate::graph::Graph) -> GraphView {
    GraphView {
        edge_count: g.edges.len(),
        edges: g.edges.iter().map(|(a, b)| [*a, *b]).collect(),
        external_inputs: g.external_inputs,
        graph_outputs: g.graph_outputs,
        is_dag: g.is_dag,
        cycles: g.cycles,
        multi_writers: g.multi_writers,
        back_references: g.back_references,
    }
}

/// Non-empty layer names that occur more than once, sorted.
fn duplicate_names(layers: &[Layer]) -> Vec<String> {
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(layers.len());
    for l in layers {
        *seen.entry(l.name.as_str()).or_default() += 1;
    }
    let mut duplicates: Vec<String> = seen
        .iter()
        .filter(|(n, c)| **c > 1 && !n.is_empty())
        .map(|(n, _)| (*n).to_owned())
        .collect();
    duplicates.sort();
    duplicates
}

/// What a layer view adds to the record: its classification.
struct Derived {
    family: Family,
    report_type: Arc<str>,
    tags: Vec<&'static str>,
    origins: Vec<String>,
    precision: Option<&'static str>,
    output_precision: Option<&'static str>,
}

/// `families`: the layers' families when already decided (CPU runtimes), else TensorRT's rules.
fn derive_views(
    layers: &[Layer],
    families: Option<&[Family]>,
    signals: &mut CategorySignals,
) -> Vec<Derived> {
    layers
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let family = families
                .and_then(|f| f.get(i).copied())
                .unwrap_or_else(|| classify::family(l));
            derive_view(l, family, signals)
        })
        .collect()
}

fn derive_view(l: &Layer, family: Family, signals: &mut CategorySignals) -> Derived {
    let attention_like = !l.names_only && classify::looks_like_attention(l);
    signals.count_family(family, attention_like);
    signals.scan(&l.name);
    if let Some(m) = &l.metadata {
        signals.scan(m);
    }
    let (report_type, tags) = if l.names_only {
        (classify::unknown(), Vec::new())
    } else {
        (classify::report_type(l), classify::tags(l, family))
    };
    Derived {
        family,
        report_type,
        tags,
        origins: classify::origins(l),
        precision: classify::layer_precision(l),
        output_precision: classify::output_precision(l),
    }
}

fn layer_view(index: u32, l: Layer, d: Derived) -> LayerView {
    LayerView {
        index,
        raw_type: l.layer_type.unwrap_or_else(classify::unknown),
        report_type: d.report_type,
        family: d.family,
        family_from_name: l.names_only,
        parameter_type: l.parameter_type,
        precision: d.precision,
        output_precision: d.output_precision,
        tactic: l.tactic_name,
        stream: l.stream_id,
        subgraph: l.subgraph,
        origins: d.origins,
        inputs: l.inputs,
        outputs: l.outputs,
        tags: d.tags,
        timing: None,
        raw: l.raw,
        verbatim_ok: l.verbatim_ok,
        conv: l.conv,
        weights: l.weights,
        bias: l.bias,
        name: l.name,
    }
}

fn check_graph(g: &crate::graph::Graph, layers: &[Layer], v: &mut Validator) {
    let name = |i: u32| {
        layers
            .get(i as usize)
            .map(|l| q(&l.name))
            .unwrap_or_default()
    };
    if g.is_dag {
        v.check(
            "graph_dag",
            CheckStatus::Passed,
            format!("{} edges, acyclic", g.edges.len()),
        );
    } else {
        let described: Vec<String> = g
            .cycles
            .iter()
            .take(3)
            .map(|c| {
                let mut members: Vec<String> = c.iter().take(8).map(|i| name(*i)).collect();
                if c.len() > 8 {
                    members.push(format!("and {} more", c.len() - 8));
                }
                format!("[{}]", members.join(", "))
            })
            .collect();
        v.error(
            "graph_cycle",
            format!(
                "the layer graph is not a DAG: {} cycle(s); members: {}",
                g.cycles.len(),
                described.join("; ")
            ),
        );
        v.check(
            "graph_dag",
            CheckStatus::Failed,
            format!("{} cycle(s)", g.cycles.len()),
        );
    }
    if g.multi_writers.is_empty() {
        v.check(
            "single_writer_tensors",
            CheckStatus::Passed,
            "every tensor has one writer",
        );
    } else {
        let evidence: Vec<String> = g
            .multi_writers
            .iter()
            .take(5)
            .map(|m| {
                let writers: Vec<String> = m
                    .writers
                    .iter()
                    .take(4)
                    .map(|w| format!("{} [{}]", name(*w), layers.get(*w as usize).and_then(|l| l.layer_type.as_deref()).unwrap_or("")))
                    .collect();
                let how = match m.pattern {
                    crate::graph::WritePattern::PartialWrites => "before any read: treated as partial writes into one buffer (e.g. concat slices)",
                    crate::graph::WritePattern::Rewritten => "again after being read: treated as buffer reuse",
                    crate::graph::WritePattern::Both => "both before and after reads: partial writes and buffer reuse",
                };
                format!("tensor {} is written by {} layers ({}) {how}", q(&m.tensor), m.writers.len(), writers.join(", "))
            })
            .collect();
        let more = if g.multi_writers.len() > 5 {
            format!("; and {} more tensors", g.multi_writers.len() - 5)
        } else {
            String::new()
        };
        v.warning("multi_writer", format!("{} tensor(s) have several writers, which real engines produce (reformats, Myelin); the graph stays usable: {}{more}", g.multi_writers.len(), evidence.join("; ")));
        v.check(
            "single_writer_tensors",
            CheckStatus::Warning,
            format!("{} tensor(s) with several writers", g.multi_writers.len()),
        );
    }
    if !g.back_references.is_empty() {
        let first = &g.back_references[0];
        v.warning(
            "layer_order",
            format!(
                "{} layer input(s) are read before any layer writes them, so the file is not in execution order (first: {} reads {} written later by {}); edges were added from the later writer",
                g.back_references.len(),
                name(first.reader),
                q(&first.tensor),
                name(first.writer)
            ),
        );
    }
}

/// Joins profile records to layers by position when the names line up, else by name in order.
/// Returns true when every layer and every record found its partner.
/// A time or share below zero is no measurement: one problem per field, naming the layer.
fn negative_times(records: &[ProfileRecord]) -> Vec<String> {
    let mut out = Vec::new();
    for r in records {
        for (key, value) in [
            ("timeMs", r.time_ms),
            ("averageMs", r.average_ms),
            ("medianMs", r.median_ms),
            ("percentage", r.percentage),
        ] {
            if let Some(x) = value.filter(|x| *x < 0.0) {
                out.push(format!(
                    "layer `{}` has a negative `{key}` ({x}): a layer's time cannot be below zero; export the profile again (trtexec --exportProfile=FILE)",
                    r.name
                ));
            }
        }
    }
    out
}

fn join_profile(layers: &mut [LayerView], records: &[ProfileRecord], v: &mut Validator) -> bool {
    let timing = |r: &ProfileRecord| LayerTiming {
        time_ms: r.time_ms.unwrap_or(0.0),
        avg_ms: r.average_ms.unwrap_or(0.0),
        median_ms: r.median_ms,
        percentage: r.percentage.unwrap_or(0.0),
    };
    if layers.len() == records.len() && layers.iter().zip(records).all(|(l, r)| l.name == r.name) {
        for (l, r) in layers.iter_mut().zip(records) {
            l.timing = Some(timing(r));
        }
        v.check(
            "names_match",
            CheckStatus::Passed,
            format!("{} names, same order", layers.len()),
        );
        return true;
    }
    let mut by_name: HashMap<&str, VecDeque<usize>> = HashMap::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        by_name.entry(r.name.as_str()).or_default().push_back(i);
    }
    let mut missing_in_profile = Vec::new();
    let mut matched = vec![None; layers.len()];
    for (li, l) in layers.iter().enumerate() {
        match by_name
            .get_mut(l.name.as_str())
            .and_then(VecDeque::pop_front)
        {
            Some(ri) => matched[li] = Some(ri),
            None => missing_in_profile.push(l.name.clone()),
        }
    }
    let mut missing_in_layers: Vec<(usize, String)> = by_name
        .into_iter()
        .flat_map(|(n, idx)| idx.into_iter().map(move |i| (i, n.to_owned())))
        .collect();
    missing_in_layers.sort();
    let missing_in_layers: Vec<String> = missing_in_layers.into_iter().map(|(_, n)| n).collect();
    if missing_in_profile.is_empty() && missing_in_layers.is_empty() {
        for (l, m) in layers.iter_mut().zip(&matched) {
            l.timing = m.map(|ri| timing(&records[ri]));
        }
        v.check(
            "names_match",
            CheckStatus::Passed,
            format!("{} names, matched by name (order differs)", layers.len()),
        );
        return true;
    }
    let mut parts = Vec::new();
    if !missing_in_profile.is_empty() {
        parts.push(format!(
            "{} layer name(s) missing from the profile: {}",
            missing_in_profile.len(),
            list(&missing_in_profile, 6)
        ));
    }
    if !missing_in_layers.is_empty() {
        parts.push(format!(
            "{} profile name(s) missing from the layer info: {}",
            missing_in_layers.len(),
            list(&missing_in_layers, 6)
        ));
    }
    v.error(
        "names_mismatch",
        format!(
            "layer and profile names do not match ({}); export both files from the same engine in one trtexec run, or pass only the layer file (--data LAYERS) for a layer-only analysis",
            parts.join("; ")
        ),
    );
    v.check(
        "names_match",
        CheckStatus::Failed,
        format!(
            "{} missing from profile, {} missing from layers",
            missing_in_profile.len(),
            missing_in_layers.len()
        ),
    );
    false
}

/// The number of profiled iterations: the header when valid, cross-checked against timeMs/averageMs.
fn infer_count(p: &Profile, v: &mut Validator) -> (Option<u64>, CountSource) {
    let ratios: Vec<f64> = p
        .records
        .iter()
        .filter_map(|r| match (r.time_ms, r.average_ms) {
            (Some(t), Some(a)) if a > 0.0 => Some(t / a),
            _ => None,
        })
        .collect();
    let inferred = if ratios.is_empty() {
        None
    } else {
        let mut sorted = ratios.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        let rounded = median.round();
        let spread = sorted
            .iter()
            .map(|r| (r - rounded).abs())
            .fold(0.0, f64::max);
        (rounded >= 1.0 && spread <= (0.05 * rounded).max(0.5)).then_some(rounded as u64)
    };
    match (p.header, inferred) {
        (Some(HeaderCount::Valid(h)), inf) => {
            let detail = match inf {
                Some(i) if i.abs_diff(h) > (h / 20).max(1) => {
                    v.warning(
                        "count_disagrees",
                        format!(
                            "the profile header says {h} iterations but timeMs/averageMs says {i}"
                        ),
                    );
                    format!("{h} from the profile header; timeMs/averageMs says {i}")
                }
                Some(i) => format!("{h} from the profile header; timeMs/averageMs agrees ({i})"),
                None => format!("{h} from the profile header; timeMs/averageMs cannot confirm it"),
            };
            v.check("iteration_count", CheckStatus::Passed, detail);
            (Some(h), CountSource::ProfileHeader)
        }
        (header, Some(i)) => {
            if header == Some(HeaderCount::Invalid) {
                v.warning("count_header", "the profile's {\"count\"} header is not a positive integer; the count was inferred instead".to_owned());
            }
            v.check(
                "iteration_count",
                CheckStatus::Passed,
                format!("{i} inferred from timeMs/averageMs"),
            );
            (Some(i), CountSource::TimeAverageRatio)
        }
        (header, None) => {
            if header == Some(HeaderCount::Invalid) {
                v.warning(
                    "count_header",
                    "the profile's {\"count\"} header is not a positive integer".to_owned(),
                );
            }
            v.warning("count_unknown", "the number of profiled iterations is unknown: no valid header and timeMs/averageMs ratios disagree".to_owned());
            v.check("iteration_count", CheckStatus::Warning, "unknown");
            (None, CountSource::None)
        }
    }
}

/// Profiles of fewer iterations than this get a warning: each layer's time is that few samples.
const FEW_ITERATIONS: u64 = 10;

/// Warns (never fails) about a profile of few iterations, and marks the count check.
fn warn_few_iterations(n: u64, runtime: Runtime, v: &mut Validator) {
    let how = match runtime {
        Runtime::Tensorrt => {
            "profile again with more iterations (trtexec --iterations=N, or a longer --duration, with --exportProfile)"
        }
        Runtime::Tract | Runtime::Onnxruntime => {
            "profile again with more iterations (trtmc-bench run --profile --profile-iterations N)"
        }
    };
    v.warning(
        "few_iterations",
        format!(
            "the profile covers only {n} iteration(s) (fewer than {FEW_ITERATIONS}): each layer's time is {n} sample(s), so small layers' shares and medians are noise; {how}"
        ),
    );
    if let Some(check) = v
        .checks
        .iter_mut()
        .rev()
        .find(|c| c.name == "iteration_count")
    {
        check.status = CheckStatus::Warning;
        check.detail = format!("{}; fewer than {FEW_ITERATIONS} iterations", check.detail);
    }
}

fn check_timing(records: &[ProfileRecord], count: Option<u64>, v: &mut Validator) -> Timing {
    let total_time_ms: f64 = records.iter().filter_map(|r| r.time_ms).sum();
    let average_inference_ms: f64 = records.iter().filter_map(|r| r.average_ms).sum();
    let total_percentage: f64 = records.iter().filter_map(|r| r.percentage).sum();
    let median_sum_ms = records.iter().map(|r| r.median_ms).sum::<Option<f64>>();
    if (total_percentage - 100.0).abs() > 2.0 {
        v.warning(
            "percentages",
            format!("profile percentages sum to {total_percentage:.2}%, not about 100%"),
        );
        v.check(
            "percentages",
            CheckStatus::Warning,
            format!("sum {total_percentage:.2}%"),
        );
    } else {
        v.check(
            "percentages",
            CheckStatus::Passed,
            format!("sum {total_percentage:.2}%"),
        );
    }
    if let Some(c) = count
        && average_inference_ms > 0.0
    {
        let expected = average_inference_ms * c as f64;
        if (expected - total_time_ms).abs() > (0.02 * expected.max(total_time_ms)).max(0.01) {
            v.warning(
                "time_sum",
                format!(
                    "Σ timeMs ({total_time_ms:.4}) differs from Σ averageMs × count ({expected:.4})"
                ),
            );
        }
    }
    Timing {
        total_time_ms,
        average_inference_ms,
        median_sum_ms,
        total_percentage,
    }
}

static BLOCK_PREFIXES: std::sync::LazyLock<Option<aho_corasick::AhoCorasick>> =
    std::sync::LazyLock::new(|| {
        aho_corasick::AhoCorasick::new([
            "encoder.layer.",
            "layers.",
            "transformer_blocks.",
            ".h.",
            "blocks.",
        ])
        .ok()
    });

/// Facts about the graph's inputs needed for the model object, gathered before layers are consumed.
struct ModelInputs {
    input_shapes: BTreeMap<String, Vec<i64>>,
    dynamic_dims: bool,
    block_indices: Option<i64>,
}

impl ModelInputs {
    fn gather(info: &LayerInfo, graph: Option<&crate::graph::Graph>) -> ModelInputs {
        let mut input_shapes = BTreeMap::new();
        let wanted: BTreeSet<&str> = match (&info.bindings, graph) {
            (Some(b), _) if !b.is_empty() => b.iter().map(String::as_str).collect(),
            (_, Some(g)) => g.external_inputs.iter().map(String::as_str).collect(),
            _ => BTreeSet::new(),
        };
        let mut dynamic_dims = false;
        for l in &info.layers {
            for t in &l.inputs {
                if let Some(d) = &t.dims {
                    dynamic_dims |= d.iter().any(|x| *x < 0);
                    if wanted.contains(t.name.as_str()) && !input_shapes.contains_key(&t.name) {
                        input_shapes.insert(t.name.clone(), d.clone());
                    }
                }
            }
            dynamic_dims |= l
                .outputs
                .iter()
                .any(|t| t.dims.as_ref().is_some_and(|d| d.iter().any(|x| *x < 0)));
        }
        // Transformer block count from names like `encoder.layer.11.` or `layers.31.`.
        let mut max_block: Option<i64> = None;
        if let Some(matcher) = BLOCK_PREFIXES.as_ref() {
            for l in &info.layers {
                for m in matcher.find_overlapping_iter(&l.name) {
                    let digits = &l.name[m.end()..];
                    let end = digits
                        .find(|c: char| !c.is_ascii_digit())
                        .unwrap_or(digits.len());
                    if let Ok(n) = digits[..end].parse::<i64>() {
                        max_block = Some(max_block.map_or(n, |b| b.max(n)));
                    }
                }
            }
        }
        ModelInputs {
            input_shapes,
            dynamic_dims,
            block_indices: max_block.map(|m| m + 1),
        }
    }
}

fn backend_model(
    label: &str,
    ctx: &Context,
    category: crate::identity::CategoryGuess,
    inputs: &ModelInputs,
) -> BackendModel {
    let (name, name_confidence) = match &ctx.identity.name {
        Some(n) => (Some(n.clone()), ctx.identity.confidence),
        None => match crate::identity::clean_name(label) {
            Some(n) => (Some(n), Confidence::Low),
            None => (None, Confidence::Low),
        },
    };
    let cfg = |keys: &[&str]| {
        ctx.config
            .as_ref()
            .and_then(|(c, _)| keys.iter().find_map(|k| c.get(*k).and_then(|v| v.as_i64())))
    };
    let transformer = category.category.contains("ransformer")
        || category.category == crate::identity::category::DIFFUSION;
    let sequence_length = inputs
        .input_shapes
        .iter()
        .filter(|(n, d)| {
            ["input_ids", "attention_mask", "token_type_ids"]
                .iter()
                .any(|k| n.contains(k))
                && d.len() >= 2
        })
        .filter_map(|(_, d)| d.last().copied())
        .find(|d| *d > 0);
    BackendModel {
        name,
        name_confidence,
        config_path: ctx.config.as_ref().map(|(_, p)| p.clone()),
        hidden_size: cfg(&["hidden_size", "d_model", "n_embd"]),
        intermediate_size: cfg(&["intermediate_size", "ffn_dim", "n_inner"]),
        num_layers: cfg(&["num_hidden_layers", "n_layer", "num_layers"]).or(if transformer {
            inputs.block_indices
        } else {
            None
        }),
        num_heads: cfg(&["num_attention_heads", "n_head"]),
        max_position_embeddings: cfg(&["max_position_embeddings", "n_positions"]),
        sequence_length,
        dynamic_dims: inputs.dynamic_dims,
        input_shapes: inputs.input_shapes.clone(),
        category,
    }
}

fn engines(layers: &[LayerView], ctx: &Context) -> Engines {
    let mut streams = Vec::new();
    for l in layers {
        if let Some(s) = &l.stream
            && !streams.contains(s)
        {
            streams.push(s.clone());
        }
    }
    streams.sort_by_key(|s| s.to_string());
    let myelin_regions = layers.iter().filter(|l| &*l.raw_type == "Myelin").count();
    let plugin_layers = layers
        .iter()
        .filter(|l| {
            l.family == Family::Plugin || l.raw_type.to_ascii_lowercase().contains("plugin")
        })
        .count();
    let mut subgraphs = Vec::new();
    for l in layers {
        if let Some(s) = &l.subgraph
            && !subgraphs.contains(s)
        {
            subgraphs.push(s.clone());
        }
    }
    let (inferred_count, source, inferred) = if ctx.engine_files.len() > 1 {
        (
            Some(ctx.engine_files.len()),
            "engine files next to the inputs".to_owned(),
            true,
        )
    } else if subgraphs.len() > 1 {
        (
            Some(subgraphs.len()),
            "_subgraph ids in the layer records".to_owned(),
            true,
        )
    } else if !ctx.engine_files.is_empty() {
        (
            Some(1),
            "one engine file next to the inputs".to_owned(),
            true,
        )
    } else {
        (
            Some(1),
            "one layer-info export describes one engine".to_owned(),
            false,
        )
    };
    Engines {
        engine_files: ctx.engine_files.clone(),
        subgraphs,
        streams,
        myelin_regions,
        plugin_layers,
        inferred_count,
        source,
        inferred,
    }
}

fn bucket_sort(buckets: &mut [Bucket]) {
    buckets.sort_by(|a, b| {
        b.percentage
            .unwrap_or(0.0)
            .total_cmp(&a.percentage.unwrap_or(0.0))
            .then(b.count.cmp(&a.count))
            .then(a.name.cmp(&b.name))
    });
}

fn aggregate<'a, K: IntoIterator<Item = &'a str>>(
    layers: &'a [LayerView],
    keys: impl Fn(&'a LayerView) -> K,
    timed: bool,
) -> Vec<Bucket> {
    let mut map: HashMap<&'a str, Bucket> = HashMap::new();
    for l in layers {
        for key in keys(l) {
            let b = map.entry(key).or_insert_with(|| Bucket {
                name: key.to_owned(),
                count: 0,
                time_ms: timed.then_some(0.0),
                avg_ms: timed.then_some(0.0),
                percentage: timed.then_some(0.0),
            });
            b.count += 1;
            if let (Some(t), true) = (&l.timing, timed) {
                b.time_ms = b.time_ms.map(|x| x + t.time_ms);
                b.avg_ms = b.avg_ms.map(|x| x + t.avg_ms);
                b.percentage = b.percentage.map(|x| x + t.percentage);
            }
        }
    }
    let mut out: Vec<Bucket> = map.into_values().collect();
    bucket_sort(&mut out);
    out
}

fn by_keys(
    layers: &[LayerView],
    timed: bool,
) -> (Vec<Bucket>, Vec<Bucket>, Vec<Bucket>, Vec<Bucket>) {
    (
        aggregate(layers, |l| std::iter::once(&*l.report_type), timed),
        aggregate(layers, |l| std::iter::once(l.family.as_str()), timed),
        aggregate(
            layers,
            |l| std::iter::once(l.precision.unwrap_or("unknown")),
            timed,
        ),
        aggregate(layers, |l| l.tags.iter().copied(), timed),
    )
}

/// The seed's concentration categories and the time share at which each is flagged.
pub(crate) const CONCENTRATION: [(&str, f64); 7] = [
    ("kgen", 25.0),
    ("shape", 3.0),
    ("cast", 3.0),
    ("gather", 5.0),
    ("reshape", 5.0),
    ("pointwise", 20.0),
    ("reduction", 15.0),
];

/// Per-type time shares and the seed's concentration categories.
pub(crate) fn breakdowns(layers: &[LayerView]) -> Breakdowns {
    let (by_type, by_family, by_precision, by_tag) = by_keys(layers, true);
    let share = |pred: &dyn Fn(&LayerView) -> bool| -> (usize, f64) {
        layers
            .iter()
            .filter(|l| pred(l))
            .fold((0, 0.0), |(c, p), l| {
                (
                    c + 1,
                    p + l.timing.as_ref().map(|t| t.percentage).unwrap_or(0.0),
                )
            })
    };
    let concentration = CONCENTRATION
        .iter()
        .map(|(category, threshold)| {
            let (count, percentage) = share(&|l: &LayerView| l.in_concentration_category(category));
            Concentration {
                category,
                count,
                percentage,
                threshold: *threshold,
                flagged: percentage >= *threshold,
            }
        })
        .collect();
    Breakdowns {
        by_type,
        by_family,
        by_precision,
        by_tag,
        concentration,
    }
}

fn count_breakdowns(layers: &[LayerView]) -> Breakdowns {
    let (by_type, by_family, by_precision, by_tag) = by_keys(layers, false);
    Breakdowns {
        by_type,
        by_family,
        by_precision,
        by_tag,
        concentration: Vec::new(),
    }
}
