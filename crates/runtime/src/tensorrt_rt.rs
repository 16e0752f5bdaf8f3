//! TensorRT through NVIDIA's own `trtexec` (driven by `crates/trtexec`), a runtime that times itself:
//! trtexec owns its timed loop, so there is no in-process [`Session`]; the runner calls
//! [`SelfTimed`] instead of the worker.
//!
//! - **Find:** `--trtexec PATH` ([`crate::runtime::RuntimeOptions`]), else `trtexec` on `PATH`, else
//!   `/usr/src/tensorrt/bin`; the version comes from the banner of `trtexec --help`.
//! - **Build:** `--onnx … --saveEngine=model.plan` with the bound input shapes, the precision flags the
//!   found version understands, `--profilingVerbosity=detailed --exportLayerInfo=layers_tensorrt.json`
//!   and `--skipInference`; "Engine built in X sec." and the other build timings are build evidence.
//! - **Time:** `--loadEngine=model.plan … --exportTimes=times_tensorrt.json`; each exported query is one
//!   observation of its `computeMs`, under the boundary `trtexec_gpu_compute` (never comparable with
//!   `public_pipeline_call_wall`). trtexec warms up by time (200 ms by default), not by count.
//! - **Profile:** a separate run with `--exportProfile=profile_tensorrt.json --exportLayerInfo=…`.
//!
//! Only `infer` runs here: trtexec feeds its own random inputs to the engine and has no pre- or
//! post-processing, token loop or tokenizer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use trtmc_core::artifacts::Observation;
use trtmc_core::case::ResolvedCase;
use trtmc_core::fsutil::write_json_atomic;
use trtmc_trtexec::{
    BOUNDARY_GPU_COMPUTE, BuildRequest, BuildShapes, InferenceBehaviour, KnobDatabase, KnobOption,
    Precision, ProfileRequest, TensorShape, TimeRequest, Trtexec, read_times,
};

use crate::bundle::BundleManifest;
use crate::knobs::{KnobError, KnobSetting, KnobSource};
use crate::profile::{ExportFiles, export_paths};
use crate::runtime::{
    BuildOutput, BuildStep, Runtime, SelfTimed, SelfTimedRequest, SelfTimedRun, Session,
    SettingDecl, SettingSection, check_build_settings,
};
use crate::tensor::{DType, Dim, TensorSpec};

const NAME: &str = "tensorrt";
pub const ENGINE: &str = "model.plan";
/// What the build resolved (trtexec version and argv, input shapes), schema `trtmc.tensorrt-build/v1`.
pub const BUILD_FILE: &str = "tensorrt-build.json";
pub const BUILD_SCHEMA: &str = "trtmc.tensorrt-build/v1";
pub const BUILD_LOG: &str = "trtexec-build.log";
pub const TIME_LOG: &str = "trtexec-time.log";
pub const PROFILE_LOG: &str = "trtexec-profile.log";
/// Engine builds may take long on big models; this bounds a hung trtexec.
const BUILD_TIMEOUT: Duration = Duration::from_secs(4 * 3600);

static SETTINGS: &[SettingDecl] = &[
    SettingDecl {
        section: SettingSection::Runtime,
        name: "cuda_graph",
        help: "launch each query as a captured CUDA graph",
        default: "true",
        allowed: "[true|false]",
        tunable: false,
    },
    SettingDecl {
        section: SettingSection::Runtime,
        name: "spin_wait",
        help: "spin-wait for GPU completion instead of blocking synchronization",
        default: "true",
        allowed: "[true|false]",
        tunable: false,
    },
    SettingDecl {
        section: SettingSection::Runtime,
        name: "data_transfers",
        help: "copy inputs and outputs between host and device inside each query",
        default: "false",
        allowed: "[true|false]",
        tunable: false,
    },
];

/// Knob-name prefix of the trtexec build flags offered as knobs beside TensorRT's own.
pub const TRTEXEC_KNOB_PREFIX: &str = "-trtexec:";
/// Knob source names: TensorRT's database (`--helpBuildRoute`) and the trtexec build flags.
pub const BUILD_ROUTE_KNOBS: &str = "trtexec";
pub const TRTEXEC_FLAG_KNOBS: &str = "trtexec-flags";
/// How long `trtexec --helpBuildRoute` may take.
const HELP_BUILD_ROUTE_TIMEOUT: Duration = Duration::from_secs(120);

/// A trtexec build flag offered as the knob `-trtexec:<flag>` (ordinary flags are no Myelin knobs).
struct FlagKnob {
    flag: &'static str,
    allowed: &'static str,
    default: &'static str,
    help: &'static str,
}

const TRTEXEC_FLAGS: &[FlagKnob] = &[
    FlagKnob {
        flag: "builderOptimizationLevel",
        allowed: "[0|1|2|3|4|5]",
        default: "3",
        help: "trtexec --builderOptimizationLevel: how hard the builder searches for tactics (higher: longer builds, possibly faster engines)",
    },
    FlagKnob {
        flag: "tilingOptimizationLevel",
        allowed: "[0|1|2|3]",
        default: "0",
        help: "trtexec --tilingOptimizationLevel: how hard the builder searches for tiling strategies",
    },
    FlagKnob {
        flag: "maxAuxStreams",
        allowed: "[0|1|2|...]",
        default: "auto",
        help: "trtexec --maxAuxStreams: auxiliary streams the engine may use to run layers in parallel (auto: the builder decides)",
    },
];

/// The trtexec build flags as a knob database.
fn trtexec_flag_database() -> KnobDatabase {
    KnobDatabase {
        tuner_version: "trtmc-trtexec-flags 1".into(),
        tuner_options: TRTEXEC_FLAGS
            .iter()
            .map(|f| {
                let knob = format!("{TRTEXEC_KNOB_PREFIX}{}", f.flag);
                KnobOption {
                    allowed_values: format!("{knob}={}", f.allowed),
                    option: knob,
                    default_value: f.default.to_string(),
                    help: f.help.to_string(),
                }
            })
            .collect(),
    }
}

pub struct TensorrtRuntime {
    explicit: Option<PathBuf>,
}

/// Located trtexecs by requested path, so that one process probes each only once.
type Located = Vec<(Option<PathBuf>, Result<Trtexec, String>)>;
static LOCATED: Mutex<Located> = Mutex::new(Vec::new());

impl TensorrtRuntime {
    /// The runtime driving `explicit` (`--trtexec PATH`), else the trtexec found on `PATH`.
    pub fn new(explicit: Option<PathBuf>) -> Self {
        Self { explicit }
    }

    /// The located trtexec with its version (probed once per process and path).
    pub fn trtexec(&self) -> Result<Trtexec, String> {
        let mut located = LOCATED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, found)) = located.iter().find(|(p, _)| *p == self.explicit) {
            return found.clone();
        }
        let found = Trtexec::locate(self.explicit.as_deref()).map_err(|e| e.to_string());
        located.push((self.explicit.clone(), found.clone()));
        found
    }

    fn require(&self) -> anyhow::Result<Trtexec> {
        self.trtexec().map_err(anyhow::Error::msg)
    }
}

fn behaviour(settings: &BTreeMap<String, Value>) -> anyhow::Result<InferenceBehaviour> {
    let flag = |name: &str, default: bool| -> anyhow::Result<bool> {
        match settings.get(name) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => bail!("runtime.{name} must be true or false, got {v}"),
        }
    };
    let d = InferenceBehaviour::default();
    Ok(InferenceBehaviour {
        cuda_graph: flag("cuda_graph", d.cuda_graph)?,
        spin_wait: flag("spin_wait", d.spin_wait)?,
        data_transfers: flag("data_transfers", d.data_transfers)?,
    })
}

fn precisions(settings: &BTreeMap<String, Value>) -> anyhow::Result<Vec<Precision>> {
    let precision = settings
        .get("precision")
        .and_then(Value::as_str)
        .unwrap_or("fp32");
    Ok(match precision {
        "fp32" => Vec::new(),
        "fp16" => vec![Precision::Fp16],
        "bf16" => vec![Precision::Bf16],
        "int8" => vec![Precision::Int8],
        "fp8" => vec![Precision::Fp8],
        "best" => vec![Precision::Best],
        other => bail!(
            "runtime tensorrt understands build.precision fp32, fp16, bf16, int8, fp8 or best, not `{other}`"
        ),
    })
}

/// A declared model input or output, read from the ONNX file.
#[derive(Debug, Clone)]
struct Declared {
    name: String,
    dtype: Option<DType>,
    dims: Vec<Dim>,
}

fn declared_io(onnx: &Path) -> anyhow::Result<(Vec<Declared>, Vec<Declared>)> {
    use tract_onnx::pb::tensor_shape_proto::dimension::Value as DimValue;
    use tract_onnx::pb::type_proto::Value as TypeValue;
    use tract_onnx::prelude::Framework as _;
    let proto = tract_onnx::onnx()
        .proto_model_for_path(onnx)
        .with_context(|| format!("cannot read {}", onnx.display()))?;
    let graph = proto
        .graph
        .with_context(|| format!("{} has no graph", onnx.display()))?;
    let initializers: Vec<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
    let convert = |v: &tract_onnx::pb::ValueInfoProto| -> Declared {
        let mut dtype = None;
        let mut dims = Vec::new();
        if let Some(TypeValue::TensorType(t)) = v.r#type.as_ref().and_then(|t| t.value.as_ref()) {
            dtype = onnx_dtype(t.elem_type);
            if let Some(shape) = &t.shape {
                for (axis, d) in shape.dim.iter().enumerate() {
                    dims.push(match &d.value {
                        Some(DimValue::DimValue(n)) => Dim::Fixed(*n),
                        Some(DimValue::DimParam(p)) if !p.is_empty() => Dim::Symbol(p.clone()),
                        _ => Dim::Symbol(format!("{}_dim{axis}", v.name)),
                    });
                }
            }
        }
        Declared {
            name: v.name.clone(),
            dtype,
            dims,
        }
    };
    let inputs = graph
        .input
        .iter()
        .filter(|v| !initializers.contains(&v.name.as_str()))
        .map(convert)
        .collect();
    let outputs = graph.output.iter().map(convert).collect();
    Ok((inputs, outputs))
}

/// ONNX `TensorProto.DataType` numbers.
fn onnx_dtype(elem_type: i32) -> Option<DType> {
    Some(match elem_type {
        1 => DType::F32,
        2 => DType::U8,
        6 => DType::I32,
        7 => DType::I64,
        9 => DType::Bool,
        10 => DType::F16,
        _ => return None,
    })
}

/// Concrete input shapes from `build.shapes.<input>` and `build.dims.<symbol>`; `None` when the model's
/// own shapes are static and nothing was asked.
fn bound_shapes(
    inputs: &[Declared],
    settings: &BTreeMap<String, Value>,
) -> anyhow::Result<Option<Vec<TensorShape>>> {
    let static_model = inputs
        .iter()
        .all(|i| i.dims.iter().all(|d| matches!(d, Dim::Fixed(_))));
    let asked = settings
        .keys()
        .any(|k| k.starts_with("shapes.") || k.starts_with("dims."));
    if static_model && !asked {
        return Ok(None);
    }
    let mut shapes = Vec::with_capacity(inputs.len());
    for input in inputs {
        let given = settings
            .get(&format!("shapes.{}", input.name))
            .and_then(Value::as_array);
        let dims: Vec<u64> = match given {
            Some(list) => list
                .iter()
                .map(|v| v.as_u64())
                .collect::<Option<_>>()
                .with_context(|| format!("build.shapes.{} must list non-negative integers", input.name))?,
            None => input
                .dims
                .iter()
                .map(|d| match d {
                    Dim::Fixed(n) => u64::try_from(*n).with_context(|| {
                        format!("input `{}` declares a negative dimension {n}", input.name)
                    }),
                    Dim::Symbol(s) => settings
                        .get(&format!("dims.{s}"))
                        .and_then(Value::as_u64)
                        .with_context(|| {
                            format!(
                                "input `{}` has the dynamic dimension `{s}`: give build.dims.{s}=N or --shape {}:<dims>",
                                input.name, input.name
                            )
                        }),
                })
                .collect::<anyhow::Result<_>>()?,
        };
        shapes.push(TensorShape::new(input.name.clone(), dims));
    }
    for key in settings.keys().filter_map(|k| k.strip_prefix("shapes.")) {
        if !inputs.iter().any(|i| i.name == key) {
            let names: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
            bail!(
                "shape given for unknown input `{key}` (inputs: {})",
                names.join(", ")
            );
        }
    }
    Ok(Some(shapes))
}

fn spec(d: &Declared, shape: Option<&TensorShape>) -> anyhow::Result<TensorSpec> {
    Ok(TensorSpec {
        name: d.name.clone(),
        dtype: d
            .dtype
            .with_context(|| format!("`{}` has an element type trtmc does not handle", d.name))?,
        shape: match shape {
            Some(s) => s.dims.iter().map(|&n| Dim::Fixed(n as i64)).collect(),
            None => d.dims.clone(),
        },
    })
}

/// GPU name and compute capability from nvidia-smi, which engines are tied to.
fn gpu_target() -> String {
    let out = std::process::Command::new("nvidia-smi")
        .args(["--query-gpu=name,compute_cap", "--format=csv,noheader"])
        .output();
    match out {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout);
            let first = text.lines().next().unwrap_or("").trim();
            let cleaned: String = first
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '.' {
                        c
                    } else {
                        '-'
                    }
                })
                .collect();
            format!("gpu-{cleaned}")
        }
        _ => "gpu-unknown".into(),
    }
}

/// The input shapes timing and profiling pass (those the engine was built with), from the bundle.
fn run_shapes(bundle_dir: &Path) -> anyhow::Result<Vec<TensorShape>> {
    let path = bundle_dir.join(BUILD_FILE);
    let doc: Value = serde_json::from_slice(
        &std::fs::read(&path)
            .with_context(|| format!("cannot read {} (rebuild the bundle)", path.display()))?,
    )
    .with_context(|| format!("{} is malformed (rebuild the bundle)", path.display()))?;
    if doc["schema"] != BUILD_SCHEMA {
        bail!(
            "{} is not a {BUILD_SCHEMA} file (rebuild the bundle)",
            path.display()
        );
    }
    match &doc["shapes"] {
        Value::Null => Ok(Vec::new()),
        v => serde_json::from_value(v.clone()).with_context(|| {
            format!(
                "{}: `shapes` is malformed (rebuild the bundle)",
                path.display()
            )
        }),
    }
}

impl Runtime for TensorrtRuntime {
    fn name(&self) -> &'static str {
        NAME
    }

    fn version(&self) -> String {
        self.trtexec()
            .map(|t| t.version().to_string())
            .unwrap_or_else(|_| "unavailable".into())
    }

    fn target(&self) -> String {
        gpu_target()
    }

    fn availability(&self) -> Result<(), String> {
        self.trtexec().map(|_| ())
    }

    fn settings(&self) -> &'static [SettingDecl] {
        SETTINGS
    }

    /// TensorRT's own knob database (`trtexec --helpBuildRoute`, 11.1+), then the trtexec build flags.
    fn knob_databases(&self, _base: Option<&ResolvedCase>) -> Result<Vec<KnobSource>, KnobError> {
        let trtexec = self.trtexec().map_err(KnobError::Tool)?;
        let log =
            std::env::temp_dir().join(format!("trtmc-helpBuildRoute-{}.log", std::process::id()));
        let database = trtexec.knob_database(&log, HELP_BUILD_ROUTE_TIMEOUT);
        let _ = std::fs::remove_file(&log);
        let database =
            database.map_err(|e| KnobError::Tool(format!("trtexec --helpBuildRoute: {e}")))?;
        Ok(vec![
            KnobSource {
                name: BUILD_ROUTE_KNOBS.into(),
                database,
            },
            KnobSource {
                name: TRTEXEC_FLAG_KNOBS.into(),
                database: trtexec_flag_database(),
            },
        ])
    }

    /// `-trtexec:<flag>` is a trtexec build flag; every other knob goes to `--setBuildRoute`.
    fn knob_setting(&self, knob: &str, _value: &str) -> Result<KnobSetting, String> {
        Ok(match knob.strip_prefix(TRTEXEC_KNOB_PREFIX) {
            Some(flag) => KnobSetting::ToolFlag(flag.to_string()),
            None => KnobSetting::BuildRoute,
        })
    }

    fn build(
        &self,
        onnx: &Path,
        settings: &BTreeMap<String, Value>,
        out_dir: &Path,
    ) -> anyhow::Result<BuildOutput> {
        check_build_settings(NAME, settings, &[])?;
        let trtexec = self.require()?;
        let (declared_in, declared_out) = declared_io(onnx)?;
        let shapes = bound_shapes(&declared_in, settings)?;
        let mut request = BuildRequest::new(onnx, out_dir.join(ENGINE));
        request.shapes = match &shapes {
            None => BuildShapes::Model,
            Some(s) => BuildShapes::Static(s.clone()),
        };
        request.precisions = precisions(settings)?;
        let layers = export_paths(out_dir, NAME).layer_info;
        request.layer_info = Some(layers);
        let argv = request.args(trtexec.version())?;
        let log_path = out_dir.join(BUILD_LOG);
        let started = Instant::now();
        let built = trtexec
            .build(&request, &log_path, BUILD_TIMEOUT)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let wall_ms = started.elapsed().as_secs_f64() * 1e3;
        let timings = &built.log.build;
        let mut steps = vec![BuildStep {
            name: "trtexec_build_wall".into(),
            ms: wall_ms,
        }];
        for (name, seconds) in [
            ("engine_built", timings.engine_built_s),
            ("parse", timings.parse_s),
            ("tactic_selection", timings.tactic_selection_s),
            ("engine_generation", timings.engine_generation_s),
        ] {
            if let Some(s) = seconds {
                steps.push(BuildStep {
                    name: name.into(),
                    ms: s * 1e3,
                });
            }
        }
        let mut log = vec![
            format!(
                "trtexec {} (TensorRT {})",
                trtexec.path().display(),
                trtexec.version()
            ),
            format!("argv: {}", argv.join(" ")),
        ];
        match timings.engine_built_s {
            Some(s) => log.push(format!("Engine built in {s} sec. (trtexec)")),
            None => log.push("note: the trtexec log has no 'Engine built in' line".into()),
        }
        if let Some(mib) = timings.engine_size_mib {
            log.push(format!("engine size {mib} MiB"));
        }
        log.push(format!(
            "trtexec log: {BUILD_LOG}; layer information: layers_{NAME}.json"
        ));
        write_json_atomic(
            &out_dir.join(BUILD_FILE),
            &json!({
                "schema": BUILD_SCHEMA,
                "trtexec": {"path": trtexec.path(), "version": trtexec.version().to_string()},
                "argv": argv,
                "shapes": shapes,
                "engine_built_s": timings.engine_built_s,
                "build_timings": timings,
            }),
        )?;
        let inputs = declared_in
            .iter()
            .map(|d| {
                spec(
                    d,
                    shapes
                        .as_ref()
                        .and_then(|s| s.iter().find(|t| t.name == d.name)),
                )
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let outputs = declared_out
            .iter()
            .map(|d| spec(d, None))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(BuildOutput {
            artifact: ENGINE.into(),
            inputs,
            outputs,
            steps,
            log,
            command: json!({"program": trtexec.path(), "argv": argv}),
        })
    }

    fn load(
        &self,
        _bundle_dir: &Path,
        _manifest: &BundleManifest,
        _settings: &BTreeMap<String, Value>,
    ) -> anyhow::Result<Box<dyn Session>> {
        bail!(
            "runtime tensorrt runs the engine inside trtexec, which owns its timed loop: it has no in-process session (use `run`, which times it with trtexec)"
        )
    }

    fn supports_operation(&self, operation: &str) -> Result<(), String> {
        if operation == "infer" {
            return Ok(());
        }
        Err(format!(
            "runtime tensorrt times the engine with trtexec, which feeds its own random inputs and runs one forward pass per query: operation `{operation}` cannot run on it (use --runtime tract or onnxruntime, or a profile whose operation is infer, e.g. --onnx FILE)"
        ))
    }

    fn timing_boundary(&self) -> &'static str {
        BOUNDARY_GPU_COMPUTE
    }

    fn self_timed(&self) -> Option<&dyn SelfTimed> {
        Some(self)
    }
}

fn clamp_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl SelfTimed for TensorrtRuntime {
    fn time_log(&self) -> &'static str {
        TIME_LOG
    }

    fn profile_log(&self) -> &'static str {
        PROFILE_LOG
    }

    fn time(&self, r: &SelfTimedRequest<'_>) -> anyhow::Result<SelfTimedRun> {
        self.supports_operation(r.operation)
            .map_err(anyhow::Error::msg)?;
        let trtexec = self.require()?;
        let mut request = TimeRequest::new(r.bundle_dir.join(&r.manifest.artifact));
        request.shapes = run_shapes(r.bundle_dir)?;
        request.warm_up_ms = (r.warmup == 0).then_some(0);
        request.iterations = Some(clamp_u32(r.iterations.max(1)));
        request.duration_s = Some(r.min_duration_s.max(0.0).ceil() as u32);
        request.behaviour = behaviour(r.settings)?;
        let times_path = r.case_dir.join(format!("times_{NAME}.json"));
        request.export_times = Some(times_path.clone());
        let argv = request.args(trtexec.version())?;
        let output = trtexec
            .time(&request, &r.case_dir.join(TIME_LOG), r.timeout)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let queries = read_times(&times_path).map_err(|e| anyhow::anyhow!("{e}"))?;
        let Some(first) = queries.first() else {
            bail!(
                "trtexec exported no timed query to {}",
                times_path.display()
            );
        };
        let origin = first.start_compute_ms;
        let observations = queries
            .iter()
            .enumerate()
            .map(|(i, q)| Observation {
                iteration: i as u64,
                start_ns: ((q.start_compute_ms - origin).max(0.0) * 1e6) as u64,
                wall_ns: (q.compute_ms * 1e6).round() as u64,
                items: Some(1),
                ..Default::default()
            })
            .collect();
        let mut notes = BTreeMap::new();
        notes.insert(
            "trtexec_version".into(),
            json!(trtexec.version().to_string()),
        );
        notes.insert("trtexec_argv".into(), json!(argv));
        if let Some(summary) = output.log.summary() {
            notes.insert("trtexec_summary".into(), serde_json::to_value(summary)?);
        }
        if let Some(w) = output.log.warmup {
            notes.insert("trtexec_warmup".into(), serde_json::to_value(w)?);
        }
        Ok(SelfTimedRun {
            observations,
            files: vec![TIME_LOG.into(), format!("times_{NAME}.json")],
            notes,
        })
    }

    fn profile(&self, r: &SelfTimedRequest<'_>, iterations: u64) -> anyhow::Result<ExportFiles> {
        let trtexec = self.require()?;
        let files = export_paths(r.case_dir, NAME);
        let mut request = ProfileRequest::new(
            r.bundle_dir.join(&r.manifest.artifact),
            files.profile.clone(),
        );
        request.shapes = run_shapes(r.bundle_dir)?;
        request.iterations = Some(clamp_u32(iterations.max(1)));
        request.duration_s = Some(0);
        request.behaviour = behaviour(r.settings)?;
        request.export_layer_info = Some(files.layer_info.clone());
        trtexec
            .profile(&request, &r.case_dir.join(PROFILE_LOG), r.timeout)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(name: &str, dims: Vec<Dim>) -> Declared {
        Declared {
            name: name.into(),
            dtype: Some(DType::F32),
            dims,
        }
    }

    #[test]
    fn shapes_bind_from_dims_and_shapes_or_say_what_is_missing() {
        let inputs = vec![declared(
            "x",
            vec![Dim::Symbol("batch".into()), Dim::Fixed(3)],
        )];
        let s = |pairs: &[(&str, Value)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<BTreeMap<_, _>>()
        };
        let bound = bound_shapes(&inputs, &s(&[("dims.batch", json!(4))])).expect("dims");
        assert_eq!(bound, Some(vec![TensorShape::new("x", [4, 3])]));
        let bound = bound_shapes(&inputs, &s(&[("shapes.x", json!([2, 3]))])).expect("shape");
        assert_eq!(bound, Some(vec![TensorShape::new("x", [2, 3])]));
        let err = bound_shapes(&inputs, &s(&[])).expect_err("unbound");
        assert!(err.to_string().contains("build.dims.batch"), "{err}");
        let err = bound_shapes(
            &inputs,
            &s(&[("dims.batch", json!(1)), ("shapes.y", json!([1]))]),
        )
        .expect_err("unknown");
        assert!(err.to_string().contains("unknown input `y`"), "{err}");
        let fixed = vec![declared("x", vec![Dim::Fixed(1)])];
        assert_eq!(bound_shapes(&fixed, &s(&[])).expect("model"), None);
    }

    #[test]
    fn precision_and_behaviour_settings_are_checked() {
        let s = |k: &str, v: Value| BTreeMap::from([(k.to_string(), v)]);
        assert_eq!(
            precisions(&s("precision", json!("fp16"))).expect("fp16"),
            vec![Precision::Fp16]
        );
        assert!(
            precisions(&s("precision", json!("fp32")))
                .expect("fp32")
                .is_empty()
        );
        assert!(precisions(&s("precision", json!("fp64"))).is_err());
        let b = behaviour(&s("cuda_graph", json!(false))).expect("behaviour");
        assert!(!b.cuda_graph && b.spin_wait && !b.data_transfers);
        assert!(behaviour(&s("spin_wait", json!("sometimes"))).is_err());
    }

    /// A stand-in trtexec printing TensorRT `version`'s banner, and for `--helpBuildRoute` the
    /// recorded TensorRT 11.1 knob database.
    #[cfg(unix)]
    fn standin(dir: &Path, version: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt as _;
        let db = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/trtexec-logs/trt11.1_helpBuildRoute_knobdb_EXCERPT.json");
        let script = format!(
            "#!/bin/sh\necho '&&&& RUNNING TensorRT.trtexec [TensorRT v{version}] [b1] # trtexec '\"$*\"\n\
             case \" $* \" in\n  *\" --helpBuildRoute\"*) cat '{}' ;;\nesac\n",
            db.display()
        );
        let path = dir.join(format!("trtexec-{version}"));
        std::fs::write(&path, script).expect("write stand-in");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    #[cfg(unix)]
    #[test]
    fn knob_databases_are_the_versions_own_then_the_trtexec_flags() {
        let tmp = tempfile::tempdir().expect("tmp");
        let rt = TensorrtRuntime::new(Some(standin(tmp.path(), "110100")));
        let sources = rt.knob_databases(None).expect("11.1 has a knob database");
        let names: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, [BUILD_ROUTE_KNOBS, TRTEXEC_FLAG_KNOBS]);
        let recorded: KnobDatabase = serde_json::from_str(
            &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(
                "../../tests/fixtures/trtexec-logs/trt11.1_helpBuildRoute_knobdb_EXCERPT.json",
            ))
            .expect("fixture"),
        )
        .expect("fixture JSON");
        assert_eq!(sources[0].database, recorded);
        let flags = &sources[1].database;
        assert_eq!(flags.tuner_options.len(), TRTEXEC_FLAGS.len());
        for option in &flags.tuner_options {
            assert!(option.option.starts_with(TRTEXEC_KNOB_PREFIX), "{option:?}");
            option.values().expect("flag values parse");
            assert_eq!(
                rt.knob_setting(&option.option, &option.default_value),
                Ok(KnobSetting::ToolFlag(
                    option.option[TRTEXEC_KNOB_PREFIX.len()..].to_string()
                ))
            );
        }
        assert_eq!(
            rt.knob_setting("-kgen:tiling", "1"),
            Ok(KnobSetting::BuildRoute)
        );

        // TensorRT 10.x has no knob database: a tool error naming the version it needs.
        let old = TensorrtRuntime::new(Some(standin(tmp.path(), "101601")));
        match old.knob_databases(None) {
            Err(KnobError::Tool(message)) => {
                assert!(message.contains(">= 11.1"), "{message}")
            }
            other => panic!("expected a tool error, got {other:?}"),
        }
    }
}
