//! The embedded runtime: tract (pure Rust).
//!
//! Build = parse the ONNX, bind the manifest's shapes and dimensions, type and declutter the graph, and
//! serialize it as NNEF (tract cannot serialize its fully optimized form; the NNEF reloads about twice as
//! fast as the ONNX). Load = read the NNEF, optimize for this CPU, plan, and keep one execution state for
//! the session (optionally with a multi-threaded executor).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use tract_core::ops::OpState;
use tract_core::plan::{EvalContext, SimpleState};
use tract_nnef::prelude::*;
use tract_onnx::prelude::{InferenceFact, InferenceModelExt, TDim};
use tract_onnx::tract_hir::infer::Factoid;
use trtmc_core::fsutil::write_json_atomic;

mod nnef_ext;

/// The NNEF framework bundles are written and read with (tract's ONNX operators plus trtmc's own), for
/// tools that load a bundle's `model.nnef.tar` as `run` does (examples/tract_loop.rs).
pub fn nnef_framework() -> tract_nnef::framework::Nnef {
    nnef_ext::framework()
}

use crate::bundle::BundleManifest;
use crate::profile::{LayerProfile, LayerTensor, ProfiledLayer, trt_datatype};
use crate::runtime::{
    BuildOutput, BuildStep, Runtime, Session, SettingDecl, SettingKind, SettingSection,
    check_build_settings,
};
use crate::tensor::{DType, Dim, HostTensor, TensorSpec};

/// The tract version compiled in (pinned in the workspace Cargo.toml; checked by a test).
pub const TRACT_VERSION: &str = "0.23.9";
/// The artifact's file name in the bundle.
const ARTIFACT: &str = "model.nnef.tar";
/// The bundle's record of the names it changed so that NNEF can hold them (the NNEF name → the ONNX
/// name), and of the model properties it dropped; profiles report the ONNX names through it.
pub const NAMES_FILE: &str = "nnef-names.json";
/// The `schema` of [`NAMES_FILE`].
const NAMES_SCHEMA: &str = "trtmc.nnef-names/v1";

/// The tract runtime: builds an NNEF archive from ONNX and runs it in-process on the CPU.
pub struct TractRuntime;

pub(crate) static SETTINGS: &[SettingDecl] = &[
    SettingDecl {
        section: SettingSection::Runtime,
        name: "threads",
        help: "threads of tract's matrix-multiplication executor (1 is tract's single-threaded path)",
        default: "1",
        kind: SettingKind::Integer {
            least: 1,
            most: None,
        },
        tunable: true,
        recipe: false,
    },
    SettingDecl {
        section: SettingSection::Build,
        name: "precision",
        help: "fp16 applies tract's f32_to_f16 transform (accurate to about 1e-3, but far slower on CPUs without native f16 arithmetic)",
        default: "fp32",
        kind: SettingKind::Listed {
            words: &["fp32", "fp16"],
        },
        tunable: true,
        recipe: true,
    },
];

impl Runtime for TractRuntime {
    fn name(&self) -> &'static str {
        "tract"
    }

    fn version(&self) -> String {
        TRACT_VERSION.into()
    }

    fn target(&self) -> String {
        cpu_target()
    }

    fn availability(&self) -> Result<(), crate::error::Unavailable> {
        Ok(())
    }

    fn settings(&self) -> &'static [SettingDecl] {
        SETTINGS
    }

    fn build(
        &self,
        onnx: &Path,
        settings: &BTreeMap<String, Value>,
        out_dir: &Path,
    ) -> anyhow::Result<BuildOutput> {
        check_build_settings("tract", settings, &self.build_settings())?;
        let precision = crate::runtime::decode_settings::<TractBuild>(
            "tract",
            SettingSection::Build,
            settings,
        )?
        .precision;
        let mut steps = Vec::new();
        let mut log = Vec::new();
        let mut timed = |name: &str, started: Instant| {
            steps.push(BuildStep {
                name: name.into(),
                ms: started.elapsed().as_secs_f64() * 1e3,
            })
        };

        crate::guard::check_graph(onnx, Some(crate::guard::NEWEST_ONNX_OPSET))?;
        let t = Instant::now();
        let mut model = tract_onnx::onnx()
            .model_for_path(onnx)
            .with_context(|| format!("tract cannot parse {}", onnx.display()))?;
        timed("parse_onnx", t);
        // The ONNX names of the inputs, in order: declutter may rename an input after a node it
        // folded away (a no-op Slice right after it), and the data given is named as the file says.
        let onnx_inputs: Vec<String> = model
            .input_outlets()?
            .iter()
            .map(|o| model.node(o.node).name.clone())
            .collect();

        let t = Instant::now();
        bind_input_shapes(&mut model, settings, &mut log)?;
        timed("bind_shapes", t);

        let t = Instant::now();
        let typed = model
            .into_typed()
            .context("tract cannot type the graph (check the input shapes)")?;
        timed("into_typed", t);

        let t = Instant::now();
        let mut decluttered = typed
            .into_decluttered()
            .context("tract cannot declutter the graph")?;
        timed("declutter", t);

        match precision {
            Precision::Fp32 => {}
            Precision::Fp16 => {
                let t = Instant::now();
                let transform = tract_core::transform::get_transform("f32_to_f16")?
                    .context("tract has no f32_to_f16 transform")?;
                decluttered.transform(&*transform)?;
                timed("f32_to_f16", t);
                log.push("precision fp16: f32_to_f16 transform applied".into());
            }
        }

        for (outlet, name) in decluttered.inputs.clone().into_iter().zip(onnx_inputs) {
            // (Unless another node holds that name: NNEF needs unique ones.)
            if decluttered.node(outlet.node).name != name
                && !decluttered.nodes.iter().any(|n| n.name == name)
            {
                decluttered.node_mut(outlet.node).name = name.clone();
                if !decluttered.outputs.contains(&outlet) {
                    decluttered.set_outlet_label(outlet, name)?;
                }
            }
        }
        let inputs = specs(&decluttered, true)?;
        let outputs = specs(&decluttered, false)?;
        let t = Instant::now();
        // Names and metadata are the model author's free text; NNEF holds ASCII identifiers and
        // quote-free strings, so what it cannot hold is renamed (and recorded) or dropped.
        let names = nnef_safe(&mut decluttered)?;
        if !names.renamed.is_empty() {
            log.push(format!(
                "{} node or tensor name(s) renamed to NNEF identifiers (the ONNX names are kept in {NAMES_FILE})",
                names.renamed.len()
            ));
        }
        if !names.dropped_properties.is_empty() {
            log.push(format!(
                "model metadata NNEF cannot hold left out of the bundle: {}",
                names.dropped_properties.join(", ")
            ));
        }
        write_json_atomic(&out_dir.join(NAMES_FILE), &names)?;
        timed("nnef_names", t);
        let t = Instant::now();
        let file = std::fs::File::create(out_dir.join(ARTIFACT))?;
        nnef_ext::framework().write_to_tar(&decluttered, std::io::BufWriter::new(file))?;
        timed("write_nnef", t);
        log.push(format!("{} nodes after declutter", decluttered.nodes.len()));
        for s in &inputs {
            log.push(format!("input  {}", s.describe()));
        }
        for s in &outputs {
            log.push(format!("output {}", s.describe()));
        }
        let command = json!([
            {"step": "tract_onnx::onnx().model_for_path", "path": onnx},
            {"step": "bind input shapes", "settings": settings},
            {"step": "into_typed"},
            {"step": "into_decluttered"},
            {"step": "precision", "value": precision.name()},
            {"step": "tract_nnef::nnef().with_onnx() + trtmc_gelu_exact; write_to_tar", "artifact": ARTIFACT},
        ]);
        Ok(BuildOutput {
            artifact: ARTIFACT.into(),
            inputs,
            outputs,
            steps,
            log,
            command,
        })
    }

    fn load(
        &self,
        bundle_dir: &Path,
        manifest: &BundleManifest,
        settings: &BTreeMap<String, Value>,
    ) -> anyhow::Result<Box<dyn Session>> {
        Ok(Box::new(load_session(
            bundle_dir, manifest, settings, false,
        )?))
    }

    fn load_profiling(
        &self,
        bundle_dir: &Path,
        manifest: &BundleManifest,
        settings: &BTreeMap<String, Value>,
        _scratch: &Path,
    ) -> anyhow::Result<Box<dyn Session>> {
        Ok(Box::new(load_session(
            bundle_dir, manifest, settings, true,
        )?))
    }
}

/// What [`nnef_safe`] changed: the NNEF names it gave (to the ONNX names they replace) and the model
/// properties it left out.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct NnefNames {
    /// [`NAMES_SCHEMA`].
    schema: String,
    /// NNEF name → the ONNX name it replaces.
    renamed: BTreeMap<String, String>,
    /// The model properties left out of the archive.
    dropped_properties: Vec<String>,
}

impl NnefNames {
    /// The record of a bundle (empty for a bundle built before it was written).
    fn read(bundle_dir: &Path) -> anyhow::Result<NnefNames> {
        let path = bundle_dir.join(NAMES_FILE);
        match trtmc_core::limits::read_outside(&path, trtmc_core::limits::FileKind::Text) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .with_context(|| format!("malformed {}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(NnefNames::default()),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    /// `name` with the longest renamed prefix (the whole name, or one followed by `_` or `.`: tract
    /// names the steps of a node `<node>.<step>`) given back its ONNX name.
    pub fn original(&self, name: &str) -> String {
        let ends = name
            .char_indices()
            .filter(|(_, c)| matches!(c, '_' | '.'))
            .map(|(i, _)| i)
            .chain([name.len()]);
        let mut found = None;
        for end in ends {
            if let Some(original) = self.renamed.get(&name[..end]) {
                found = Some((end, original));
            }
        }
        match found {
            Some((end, original)) => format!("{original}{}", &name[end..]),
            None => name.to_string(),
        }
    }
}

/// An NNEF identifier: ASCII letters, digits and `_`, not starting with a digit (tract's parser takes
/// no more; its writer lets other letters through and mangles the rest without avoiding collisions).
fn is_nnef_identifier(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A string tract's NNEF writer quotes so that its parser reads it back unchanged: no `'` (written
/// unescaped, it ends the literal) and nothing Rust's debug format escapes other than `"` and `\`.
fn is_nnef_string(text: &str) -> bool {
    text.chars()
        .all(|c| c != '\'' && (c == '"' || c == '\\' || c.escape_debug().count() == 1))
}

/// Makes `model` writable as NNEF and readable back: every node name and output label that is not an
/// NNEF identifier gets one (`p2o.Conv.58` → `p2o_Conv_58`, unique), and the properties whose key or
/// text NNEF cannot hold (ONNX doc strings and metadata_props are free text) are dropped.
fn nnef_safe(model: &mut TypedModel) -> anyhow::Result<NnefNames> {
    let mut names = NnefNames {
        schema: NAMES_SCHEMA.into(),
        ..NnefNames::default()
    };
    let mut taken: std::collections::HashSet<String> = model
        .nodes
        .iter()
        .map(|n| n.name.clone())
        .chain(model.outlet_labels.values().cloned())
        .filter(|n| is_nnef_identifier(n))
        .collect();
    let mut rename = |name: &str, taken: &mut std::collections::HashSet<String>| -> String {
        let mut base: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        if !base.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            base.insert(0, '_');
        }
        let mut candidate = base.clone();
        let mut n = 2;
        while taken.contains(&candidate) {
            candidate = format!("{base}_{n}");
            n += 1;
        }
        taken.insert(candidate.clone());
        names.renamed.insert(candidate.clone(), name.to_string());
        candidate
    };
    for node in &mut model.nodes {
        if !is_nnef_identifier(&node.name) {
            node.name = rename(&node.name, &mut taken);
        }
    }
    let mut labels: Vec<(OutletId, String)> = model
        .outlet_labels
        .iter()
        .filter(|(_, label)| !is_nnef_identifier(label))
        .map(|(o, label)| (*o, label.clone()))
        .collect();
    labels.sort();
    for (outlet, label) in labels {
        let safe = rename(&label, &mut taken);
        model.set_outlet_label(outlet, safe)?;
    }
    let unsafe_keys: Vec<String> = model
        .properties
        .iter()
        .filter(|(key, value)| {
            let text_ok = match value.to_plain_array_view::<String>() {
                Ok(texts) => texts.iter().all(|t| is_nnef_string(t)),
                Err(_) => true,
            };
            // The model's name becomes the NNEF graph's identifier when tract thinks it is one.
            let name_ok = key.as_str() != tract_core::model::TRACT_NAME
                || value
                    .to_plain_array_view::<String>()
                    .is_ok_and(|t| t.iter().all(|n| is_nnef_identifier(n)));
            !(is_nnef_string(key) && text_ok && name_ok)
        })
        .map(|(key, _)| key.clone())
        .collect();
    for key in &unsafe_keys {
        model.properties.remove(key);
    }
    names.dropped_properties = unsafe_keys;
    names.dropped_properties.sort();
    Ok(names)
}

/// tract's `build.*` settings ([`SETTINGS`]), decoded once where the bundle is built (the shapes and
/// dimensions are bound by [`bind_input_shapes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TractBuild {
    #[serde(default)]
    precision: Precision,
}

/// `build.precision` of tract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(try_from = "String")]
enum Precision {
    #[default]
    Fp32,
    /// tract's f32_to_f16 transform.
    Fp16,
}

impl Precision {
    fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Fp16 => "fp16",
        }
    }
}

impl TryFrom<String> for Precision {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        match text.as_str() {
            "fp32" => Ok(Precision::Fp32),
            "fp16" => Ok(Precision::Fp16),
            other => Err(format!(
                "tract supports build.precision fp32 or fp16, not `{other}`"
            )),
        }
    }
}

/// tract's `runtime.*` settings, decoded once where a session is loaded (case resolution checked their
/// values against [`SETTINGS`] already).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TractSettings {
    /// Threads of the matrix-multiplication executor; 1 is tract's single-threaded path.
    #[serde(default = "TractSettings::single_thread")]
    threads: std::num::NonZeroUsize,
}

impl TractSettings {
    fn single_thread() -> std::num::NonZeroUsize {
        std::num::NonZeroUsize::MIN
    }

    fn decode(settings: &BTreeMap<String, Value>) -> anyhow::Result<Self> {
        crate::runtime::decode_settings("tract", SettingSection::Runtime, settings)
            .context("tract's runtime settings (runtime.threads, a positive integer)")
    }
}

/// Loads a bundle; `profiling` times every node of every run (tract's `run_plan_with_eval` hook).
fn load_session(
    bundle_dir: &Path,
    manifest: &BundleManifest,
    settings: &BTreeMap<String, Value>,
    profiling: bool,
) -> anyhow::Result<TractSession> {
    let threads = TractSettings::decode(settings)?.threads.get();
    let path = bundle_dir.join(&manifest.artifact);
    let model = nnef_ext::framework()
        .model_for_path(&path)
        .with_context(|| format!("tract cannot read {}", path.display()))?;
    let optimized = model
        .into_optimized()
        .context("tract cannot optimize the bundle")?;
    let options = RunOptions {
        executor: (threads > 1).then(|| tract_linalg::multithread::Executor::multithread(threads)),
        ..Default::default()
    };
    let plan = Arc::new(TypedSimplePlan::build(optimized, &options)?);
    let state = SimpleState::new(&plan)?;
    Ok(TractSession {
        plan,
        state,
        inputs: manifest.inputs.clone(),
        outputs: manifest.outputs.clone(),
        profiler: profiling.then(TractProfiler::default),
        names: NnefNames::read(bundle_dir)?,
    })
}

/// Binds `shapes.<input>` (whole shapes) and `dims.<symbol>` (symbolic dimensions) on the inputs.
fn bind_input_shapes(
    model: &mut tract_onnx::prelude::InferenceModel,
    settings: &BTreeMap<String, Value>,
    log: &mut Vec<String>,
) -> anyhow::Result<()> {
    let dims: BTreeMap<&str, i64> = settings
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("dims.")?, v.as_i64()?)))
        .collect();
    let mut shapes: BTreeMap<&str, Vec<i64>> = settings
        .iter()
        .filter_map(|(k, v)| {
            let dims = v
                .as_array()?
                .iter()
                .map(Value::as_i64)
                .collect::<Option<Vec<i64>>>()?;
            Some((k.strip_prefix("shapes.")?, dims))
        })
        .collect();
    let mut used_dims = std::collections::BTreeSet::new();
    for i in 0..model.inputs.len() {
        let name = model.node(model.inputs[i].node).name.clone();
        let mut fact = model.input_fact(i)?.clone();
        if let Some(shape) = shapes.remove(name.as_str()) {
            let dt = fact
                .datum_type
                .concretize()
                .with_context(|| format!("input `{name}` has no element type"))?;
            fact = InferenceFact::dt_shape(
                dt,
                shape.iter().map(|&d| d as usize).collect::<TVec<usize>>(),
            );
            log.push(format!("input `{name}` shape set to {shape:?}"));
        } else {
            let declared: Vec<_> = fact.shape.dims().cloned().collect();
            for (axis, d) in declared.iter().enumerate() {
                if let Some(TDim::Sym(sym)) = d.concretize() {
                    let sym_name = format!("{sym}");
                    if let Some(&v) = dims.get(sym_name.as_str()) {
                        fact.shape.set_dim(axis, TDim::Val(v));
                        used_dims.insert(sym_name.clone());
                        log.push(format!("input `{name}` axis {axis}: {sym_name} = {v}"));
                    }
                }
            }
        }
        model.set_input_fact(i, fact)?;
    }
    if let Some(name) = shapes.keys().next() {
        let inputs: Vec<String> = model
            .inputs
            .iter()
            .map(|o| model.node(o.node).name.clone())
            .collect();
        bail!(
            "shape given for unknown input `{name}` (inputs: {})",
            inputs.join(", ")
        );
    }
    for d in dims.keys().filter(|d| !used_dims.contains(**d)) {
        log.push(format!(
            "note: dimension `{d}` does not appear in any input"
        ));
    }
    Ok(())
}

fn specs(model: &TypedModel, inputs: bool) -> anyhow::Result<Vec<TensorSpec>> {
    let outlets = if inputs {
        &model.inputs
    } else {
        &model.outputs
    };
    outlets
        .iter()
        .map(|o| {
            let node = model.node(o.node);
            let fact = model.outlet_fact(*o)?;
            let name = if inputs {
                node.name.clone()
            } else {
                output_name(model, *o)
            };
            Ok(TensorSpec {
                name,
                dtype: dtype_of(fact.datum_type).with_context(|| {
                    format!("`{}` has unsupported type {:?}", node.name, fact.datum_type)
                })?,
                shape: fact
                    .shape
                    .iter()
                    .map(|d| match d.to_i64() {
                        Ok(v) => Dim::Fixed(v),
                        Err(_) => Dim::Symbol(d.to_string()),
                    })
                    .collect(),
            })
        })
        .collect()
}

/// Output names as the ONNX declared them (tract keeps them as outlet labels).
fn output_name(model: &TypedModel, outlet: OutletId) -> String {
    model
        .outlet_label(outlet)
        .map(str::to_string)
        .unwrap_or_else(|| model.node(outlet.node).name.clone())
}

fn dtype_of(dt: DatumType) -> Option<DType> {
    Some(match dt {
        DatumType::F32 => DType::F32,
        DatumType::F16 => DType::F16,
        DatumType::F64 => DType::F64,
        DatumType::I64 => DType::I64,
        DatumType::I32 => DType::I32,
        DatumType::Bool => DType::Bool,
        DatumType::U8 => DType::U8,
        _ => return None,
    })
}

/// `cpu-<arch>[-<features>]`: the CPU features tract's kernels specialise on.
pub fn cpu_target() -> String {
    let mut features: Vec<&str> = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            features.push("avx2");
        }
        if std::arch::is_x86_feature_detected!("fma") {
            features.push("fma");
        }
        if std::arch::is_x86_feature_detected!("f16c") {
            features.push("f16c");
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            features.push("avx512f");
        }
    }
    let mut target = format!("cpu-{}", std::env::consts::ARCH);
    for f in features {
        target.push('-');
        target.push_str(f);
    }
    target
}

struct TractSession {
    plan: Arc<TypedSimplePlan>,
    state: SimpleState<TypedFact, Box<dyn TypedOp>>,
    inputs: Vec<TensorSpec>,
    outputs: Vec<TensorSpec>,
    profiler: Option<TractProfiler>,
    /// The ONNX names of what the bundle renamed: profiles report those.
    names: NnefNames,
}

/// Shapes and element types of a node's inputs and outputs, as they ran.
type NodeShapes = (Vec<(Vec<usize>, DatumType)>, Vec<(Vec<usize>, DatumType)>);

/// Per-node times of the profiled runs (after `profile_start`).
#[derive(Default)]
struct TractProfiler {
    recording: bool,
    runs: u64,
    /// Node ids in the order they first ran.
    order: Vec<usize>,
    /// Milliseconds per node id, one entry per profiled run.
    run_ms: HashMap<usize, Vec<f64>>,
    /// Shapes seen in the first profiled run.
    shapes: HashMap<usize, NodeShapes>,
}

fn value_shapes(values: &[TValue]) -> Vec<(Vec<usize>, DatumType)> {
    values
        .iter()
        .map(|v| (v.shape().to_vec(), v.datum_type()))
        .collect()
}

/// The name of the tensor an outlet carries: its label (the ONNX name), else its node's name.
fn tensor_name(model: &TypedModel, outlet: OutletId) -> String {
    match model.outlet_label(outlet) {
        Some(label) => label.to_string(),
        None if outlet.slot == 0 => model.node(outlet.node).name.clone(),
        None => format!("{}:{}", model.node(outlet.node).name, outlet.slot),
    }
}

fn datatype_name(dt: DatumType) -> String {
    let short = match dt {
        DatumType::F32 => "float",
        DatumType::F16 => "half",
        DatumType::F64 => "double",
        DatumType::I64 => "int64",
        DatumType::I32 => "int32",
        DatumType::I16 => "int16",
        DatumType::I8 => "int8",
        DatumType::U8 => "uint8",
        DatumType::Bool => "bool",
        other => return format!("{other:?}"),
    };
    trt_datatype(short)
}

impl TractSession {
    /// One run with every node timed (the profiling path; the timed path is `SimpleState::run`).
    fn run_profiled(&mut self, values: TVec<TValue>) -> anyhow::Result<TVec<TValue>> {
        let Some(profiler) = self.profiler.as_mut() else {
            return self.state.run(values);
        };
        let capture = profiler.recording && profiler.runs == 0;
        let mut times: Vec<(usize, f64)> = Vec::with_capacity(self.plan.model().nodes.len());
        let mut shapes: HashMap<usize, NodeShapes> = HashMap::new();
        let outputs = self.state.run_plan_with_eval(
            values,
            |ctx: &EvalContext,
             st: Option<&mut (dyn OpState + 'static)>,
             node: &TypedNode,
             input: TVec<TValue>| {
                let seen_inputs = if capture {
                    value_shapes(&input)
                } else {
                    Vec::new()
                };
                let started = Instant::now();
                let result = tract_core::plan::eval(ctx, st, node, input);
                times.push((node.id, started.elapsed().as_secs_f64() * 1e3));
                if capture && let Ok(out) = &result {
                    shapes.insert(node.id, (seen_inputs, value_shapes(out)));
                }
                result
            },
        )?;
        if profiler.recording {
            for (id, ms) in times {
                let runs = profiler.run_ms.entry(id).or_insert_with(|| {
                    profiler.order.push(id);
                    Vec::new()
                });
                runs.push(ms);
            }
            profiler.shapes.extend(shapes);
            profiler.runs += 1;
        }
        Ok(outputs)
    }
}

impl Session for TractSession {
    fn inputs(&self) -> &[TensorSpec] {
        &self.inputs
    }

    fn outputs(&self) -> &[TensorSpec] {
        &self.outputs
    }

    fn run(&mut self, inputs: Vec<HostTensor>) -> anyhow::Result<Vec<HostTensor>> {
        if inputs.len() != self.inputs.len() {
            bail!(
                "expected {} inputs, got {}",
                self.inputs.len(),
                inputs.len()
            );
        }
        let values: TVec<TValue> = inputs
            .into_iter()
            .zip(&self.inputs)
            .map(|(t, spec)| to_tract(t, spec.dtype).map(|t| t.into_tvalue()))
            .collect::<anyhow::Result<_>>()?;
        let outputs = match self.profiler {
            Some(_) => self.run_profiled(values)?,
            None => self.state.run(values)?,
        };
        outputs
            .into_iter()
            .map(|v| from_tract(v.into_tensor()))
            .collect()
    }

    fn profile_start(&mut self) -> anyhow::Result<()> {
        let p = self
            .profiler
            .as_mut()
            .context("this tract session was not loaded for profiling")?;
        *p = TractProfiler {
            recording: true,
            ..TractProfiler::default()
        };
        Ok(())
    }

    fn profile_finish(&mut self) -> anyhow::Result<LayerProfile> {
        let p = self
            .profiler
            .take()
            .context("this tract session was not loaded for profiling")?;
        let model = self.plan.model();
        let mut layers = Vec::with_capacity(p.order.len());
        for id in p.order {
            let node = model.node(id);
            let op = node.op().name().to_string();
            if op == "Source" {
                continue;
            }
            let (seen_in, seen_out) = p.shapes.get(&id).cloned().unwrap_or_default();
            let tensor =
                |name: String, seen: Option<&(Vec<usize>, DatumType)>, fact: Option<&TypedFact>| {
                    let (dims, dt) = match (seen, fact) {
                        (Some((shape, dt)), _) => (shape.iter().map(|&d| d as i64).collect(), *dt),
                        (None, Some(f)) => (
                            f.shape.iter().map(|d| d.to_i64().unwrap_or(-1)).collect(),
                            f.datum_type,
                        ),
                        (None, None) => (Vec::new(), DatumType::F32),
                    };
                    LayerTensor {
                        name,
                        dims,
                        datatype: datatype_name(dt),
                    }
                };
            let inputs = node
                .inputs
                .iter()
                .enumerate()
                .map(|(i, o)| {
                    tensor(
                        self.names.original(&tensor_name(model, *o)),
                        seen_in.get(i),
                        model.outlet_fact(*o).ok(),
                    )
                })
                .collect();
            let outputs = (0..node.outputs.len())
                .map(|slot| {
                    let o = OutletId::new(id, slot);
                    tensor(
                        self.names.original(&tensor_name(model, o)),
                        seen_out.get(slot),
                        model.outlet_fact(o).ok(),
                    )
                })
                .collect();
            layers.push(ProfiledLayer {
                name: self.names.original(&node.name),
                layer_type: op,
                inputs,
                outputs,
                run_ms: p.run_ms.get(&id).cloned().unwrap_or_default(),
                extra: serde_json::Map::new(),
            });
        }
        let bindings = self
            .inputs
            .iter()
            .chain(&self.outputs)
            .map(|s| s.name.clone())
            .collect();
        Ok(LayerProfile {
            runtime: "tract".into(),
            runs: p.runs,
            layers,
            bindings,
        })
    }
}

fn to_tract(t: HostTensor, dtype: DType) -> anyhow::Result<Tensor> {
    let tensor = match t {
        HostTensor::F32(a) => a.into_tensor(),
        HostTensor::F64(a) => a.into_tensor(),
        HostTensor::I64(a) => a.into_tensor(),
        HostTensor::I32(a) => a.into_tensor(),
        HostTensor::Bool(a) => a.into_tensor(),
        HostTensor::U8(a) => a.into_tensor(),
        // tract's build refuses string models; this guards a mismatched feed.
        HostTensor::Str(_) => bail!("tract: trtmc does not feed string tensors to tract"),
    };
    if dtype == DType::F16 && tensor.datum_type() == DatumType::F32 {
        return Ok(tensor.cast_to_dt(DatumType::F16)?.into_owned());
    }
    Ok(tensor)
}

fn from_tract(t: Tensor) -> anyhow::Result<HostTensor> {
    Ok(match t.datum_type() {
        DatumType::F32 => HostTensor::F32(t.into_plain_array::<f32>()?),
        DatumType::F16 => {
            HostTensor::F32(t.cast_to::<f32>()?.into_owned().into_plain_array::<f32>()?)
        }
        DatumType::F64 => HostTensor::F64(t.into_plain_array::<f64>()?),
        DatumType::I64 => HostTensor::I64(t.into_plain_array::<i64>()?),
        DatumType::I32 => HostTensor::I32(t.into_plain_array::<i32>()?),
        DatumType::Bool => HostTensor::Bool(t.into_plain_array::<bool>()?),
        DatumType::U8 => HostTensor::U8(t.into_plain_array::<u8>()?),
        other => bail!("unsupported output type {other:?}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_settings_decode_once_into_their_struct() {
        let decode = |pairs: &[(&str, Value)]| {
            TractSettings::decode(
                &pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.clone()))
                    .collect(),
            )
        };
        assert_eq!(decode(&[]).expect("default").threads.get(), 1);
        assert_eq!(
            decode(&[("threads", Value::from(4))])
                .expect("4")
                .threads
                .get(),
            4
        );
        assert!(decode(&[("threads", Value::from(0))]).is_err());
        let unknown = decode(&[("intra_threads", Value::from(2))]).expect_err("not tract's");
        assert!(
            format!("{unknown:#}").contains("intra_threads"),
            "{unknown:#}"
        );
    }

    #[test]
    fn pinned_version_matches_the_lockfile() {
        let lock =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock"))
                .expect("Cargo.lock");
        let needle = format!("name = \"tract-core\"\nversion = \"{TRACT_VERSION}\"");
        assert!(
            lock.contains(&needle),
            "Cargo.lock does not pin tract-core {TRACT_VERSION}"
        );
    }

    #[test]
    fn target_names_the_architecture() {
        assert!(cpu_target().starts_with(&format!("cpu-{}", std::env::consts::ARCH)));
    }

    #[test]
    fn profiled_names_get_their_onnx_names_back_by_the_longest_renamed_prefix() {
        let names = NnefNames {
            renamed: BTreeMap::from([
                ("p2o_Conv_58".to_string(), "p2o.Conv.58".to_string()),
                (
                    "p2o_Conv_58_bias".to_string(),
                    "p2o.Conv.58.bias".to_string(),
                ),
            ]),
            ..NnefNames::default()
        };
        assert_eq!(names.original("p2o_Conv_58"), "p2o.Conv.58");
        assert_eq!(
            names.original("p2o_Conv_58.matmatmul"),
            "p2o.Conv.58.matmatmul"
        );
        assert_eq!(names.original("p2o_Conv_58_bias.0"), "p2o.Conv.58.bias.0");
        assert_eq!(
            names.original("p2o_Conv_580"),
            "p2o_Conv_580",
            "not a prefix"
        );
        assert_eq!(names.original("relu_3"), "relu_3");
    }

    /// A one-input model `x → Neg → Relu → y` whose tensor and node names, doc strings and metadata
    /// are `texts`, as bytes of an ONNX file.
    fn named_model(texts: &[String; 6]) -> Vec<u8> {
        use prost::Message as _;
        use tract_onnx::pb;
        let [input, neg, relu, output, key, value] = texts;
        let (input, mid, output) = (format!("{input}i"), format!("{neg}m"), format!("{output}o"));
        let tensor = |name: &str| pb::ValueInfoProto {
            name: name.to_string(),
            r#type: Some(pb::TypeProto {
                value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
                    elem_type: pb::tensor_proto::DataType::Float as i32,
                    shape: Some(pb::TensorShapeProto {
                        dim: [1, 4]
                            .into_iter()
                            .map(|d| pb::tensor_shape_proto::Dimension {
                                value: Some(pb::tensor_shape_proto::dimension::Value::DimValue(d)),
                                ..Default::default()
                            })
                            .collect(),
                    }),
                })),
                ..Default::default()
            }),
            doc_string: value.clone(),
        };
        let node = |op: &str, name: String, from: &str, to: &str| pb::NodeProto {
            input: vec![from.to_string()],
            output: vec![to.to_string()],
            name,
            op_type: op.into(),
            doc_string: key.clone(),
            ..Default::default()
        };
        pb::ModelProto {
            ir_version: 8,
            opset_import: vec![pb::OperatorSetIdProto {
                domain: String::new(),
                version: 17,
            }],
            producer_name: value.clone(),
            doc_string: value.clone(),
            graph: Some(pb::GraphProto {
                node: vec![
                    node("Neg", format!("{neg}n"), &input, &mid),
                    node("Relu", format!("{relu}r"), &mid, &output),
                ],
                name: key.clone(),
                input: vec![tensor(&input)],
                output: vec![tensor(&output)],
                doc_string: value.clone(),
                ..Default::default()
            }),
            metadata_props: vec![
                pb::StringStringEntryProto {
                    key: key.clone(),
                    value: value.clone(),
                },
                pb::StringStringEntryProto {
                    key: format!("{value}2"),
                    value: key.clone(),
                },
            ],
            ..Default::default()
        }
        .encode_to_vec()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        /// Whatever the names and metadata, the bundle builds, loads and computes `relu(-x)`.
        #[test]
        fn any_names_and_metadata_make_a_bundle_that_loads_and_runs(
            texts in proptest::array::uniform6(proptest::prelude::any::<String>())
        ) {
            let tmp = tempfile::tempdir().expect("tmp");
            let onnx = tmp.path().join("model.onnx");
            std::fs::write(&onnx, named_model(&texts)).expect("write");
            let dir = tmp.path().join("bundle");
            std::fs::create_dir_all(&dir).expect("mkdir");
            let settings = BTreeMap::new();
            let plan = crate::bundle::BuildPlan {
                key: "k",
                model: "m",
                onnx: &onnx,
                settings: &settings,
                command_line: &[],
                created: "now",
                source_commit: None,
            };
            let manifest = crate::bundle::build_bundle(&TractRuntime, &plan, &dir)
                .map_err(|e| proptest::test_runner::TestCaseError::fail(format!("build: {e:#}")))?;
            proptest::prop_assert_eq!(&manifest.inputs[0].name, &format!("{}i", texts[0]));
            proptest::prop_assert_eq!(&manifest.outputs[0].name, &format!("{}o", texts[3]));
            let mut session = TractRuntime
                .load(&dir, &manifest, &settings)
                .map_err(|e| proptest::test_runner::TestCaseError::fail(format!("load: {e:#}")))?;
            let x = ndarray::ArrayD::from_shape_vec(vec![1, 4], vec![-2.0f32, -1.0, 0.5, 3.0])
                .expect("shape");
            let out = session
                .run(vec![HostTensor::F32(x)])
                .map_err(|e| proptest::test_runner::TestCaseError::fail(format!("run: {e:#}")))?;
            match &out[0] {
                HostTensor::F32(y) => proptest::prop_assert_eq!(
                    y.iter().copied().collect::<Vec<f32>>(),
                    vec![2.0, 1.0, 0.0, 0.0]
                ),
                _ => proptest::prop_assert!(false, "not f32"),
            }
        }
    }
}
