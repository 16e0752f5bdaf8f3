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
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use trtmc_core::accuracy::{ElementType, Tensor};
use trtmc_core::artifacts::Observation;
use trtmc_core::case::ResolvedCase;
use trtmc_core::fsutil::write_atomic;
use trtmc_core::fsutil::write_json_atomic;
use trtmc_trtexec::{
    BOUNDARY_GPU_COMPUTE, BuildRequest, BuildShapes, InferenceBehaviour, KnobDatabase, KnobOption,
    Precision, ProbeCache, ProfileRequest, SummaryWarning, TensorShape, TimeRequest, Trtexec,
    TrtexecVersion, read_outputs, read_times,
};

use crate::bundle::BundleManifest;
use crate::error::{BundleCheckError, SettingError, Unavailable, UnsupportedOperation};
use crate::knobs::{KnobError, KnobSetting, KnobSource};
use crate::outputs::{from_tensor, le_bytes};
use crate::profile::{ExportFiles, export_paths};
use crate::runtime::{
    BuildOutput, BuildStep, Runtime, SelfTimed, SelfTimedRequest, SelfTimedRun, Session,
    SettingDecl, SettingKind, SettingSection, TimedPlan, check_build_settings,
};
use crate::tensor::{DType, Dim, HostTensor, TensorSpec};

const NAME: &str = "tensorrt";
/// The serialized TensorRT engine trtexec builds into the bundle (`--saveEngine`).
pub const ENGINE: &str = "model.plan";
/// What the build resolved (trtexec version and argv, input shapes), schema `trtmc.tensorrt-build/v1`.
pub const BUILD_FILE: &str = "tensorrt-build.json";
/// The `schema` of [`BUILD_FILE`]; a bundle with another one is refused (rebuild it).
pub const BUILD_SCHEMA: &str = "trtmc.tensorrt-build/v1";
/// trtexec's output of the engine build, in the bundle.
pub const BUILD_LOG: &str = "trtexec-build.log";
/// trtexec's output of the timed run, in the case directory.
pub const TIME_LOG: &str = "trtexec-time.log";
/// trtexec's output of the profiling run, in the case directory.
pub const PROFILE_LOG: &str = "trtexec-profile.log";
/// trtexec's output of the accuracy run (the one writing [`OUTPUTS_FILE`]), in the case directory.
pub const OUTPUTS_LOG: &str = "trtexec-outputs.log";
/// trtexec's `--exportOutput` of the accuracy run, in the case directory.
pub const OUTPUTS_FILE: &str = "outputs_tensorrt.json";
/// trtexec's `--exportTimes` of the timed run, in the case directory.
pub const TIMES_FILE: &str = "times_tensorrt.json";
/// The timing note holding the build route trtexec reported it used; `run` lifts it into
/// result.json (`bundle.route_used`).
pub const ROUTE_USED_NOTE: &str = "trtexec_build_route_used";
/// Engine builds may take long on big models; this bounds a hung trtexec.
const BUILD_TIMEOUT: Duration = Duration::from_secs(4 * 3600);

pub(crate) static SETTINGS: &[SettingDecl] = &[
    SettingDecl {
        section: SettingSection::Build,
        name: "route",
        help: "a build route for TensorRT's Global Performance Tuner (--setBuildRoute, TensorRT >= 11.1), e.g. '-kgen:tiling=1 -conv_lowering=off'; knobs and values are checked against the installed trtexec's --helpBuildRoute",
        default: "",
        kind: SettingKind::Tokens,
        tunable: false,
        recipe: true,
    },
    SettingDecl {
        section: SettingSection::Build,
        name: "precision",
        help: "the reduced precision the builder may choose (trtexec --fp16/--bf16/--int8/--fp8/--best; TensorRT before 11.0, 11.x takes the model's types)",
        default: "fp32",
        kind: SettingKind::Listed {
            words: &["fp32", "fp16", "bf16", "int8", "fp8", "best"],
        },
        tunable: false,
        recipe: true,
    },
    SettingDecl {
        section: SettingSection::Build,
        name: "builder_optimization_level",
        help: "trtexec --builderOptimizationLevel: how hard the builder searches for tactics (higher: longer builds, possibly faster engines)",
        default: "3",
        kind: SettingKind::Integer {
            least: 0,
            most: Some(5),
        },
        tunable: false,
        recipe: true,
    },
    SettingDecl {
        section: SettingSection::Build,
        name: "tiling_optimization_level",
        help: "trtexec --tilingOptimizationLevel (TensorRT >= 10.8): how hard the builder searches for tiling strategies",
        default: "0",
        kind: SettingKind::Integer {
            least: 0,
            most: Some(3),
        },
        tunable: false,
        recipe: true,
    },
    SettingDecl {
        section: SettingSection::Build,
        name: "max_aux_streams",
        help: "trtexec --maxAuxStreams: auxiliary streams the engine may use to run layers in parallel (unset: the builder decides; 0: least memory)",
        default: "auto",
        kind: SettingKind::IntegerOrWord {
            least: 0,
            most: None,
            word: "auto",
        },
        tunable: false,
        recipe: true,
    },
    SettingDecl {
        section: SettingSection::Runtime,
        name: "cuda_graph",
        help: "launch each query as a captured CUDA graph",
        default: "true",
        kind: SettingKind::Switch,
        tunable: false,
        recipe: false,
    },
    SettingDecl {
        section: SettingSection::Runtime,
        name: "spin_wait",
        help: "spin-wait for GPU completion instead of blocking synchronization",
        default: "true",
        kind: SettingKind::Switch,
        tunable: false,
        recipe: false,
    },
    SettingDecl {
        section: SettingSection::Runtime,
        name: "data_transfers",
        help: "copy inputs and outputs between host and device inside each query",
        default: "false",
        kind: SettingKind::Switch,
        tunable: false,
        recipe: false,
    },
];

/// Knob-name prefix of the trtexec build flags offered as knobs beside TensorRT's own.
pub const TRTEXEC_KNOB_PREFIX: &str = "-trtexec:";
/// Knob source names: TensorRT's database (`--helpBuildRoute`) and the trtexec build flags.
pub const BUILD_ROUTE_KNOBS: &str = "trtexec";
/// Knob source name of the trtexec build flags (see [`BUILD_ROUTE_KNOBS`]).
pub const TRTEXEC_FLAG_KNOBS: &str = "trtexec-flags";
/// How long `trtexec --helpBuildRoute` may take.
const HELP_BUILD_ROUTE_TIMEOUT: Duration = Duration::from_secs(120);

/// A trtexec build flag offered as the knob `-trtexec:<flag>` (ordinary flags are no Myelin knobs); a
/// route's value becomes the build setting `build.<setting>`, so `run --set` reproduces it.
struct FlagKnob {
    flag: &'static str,
    setting: &'static str,
    allowed: &'static str,
    default: &'static str,
    help: &'static str,
}

const TRTEXEC_FLAGS: &[FlagKnob] = &[
    FlagKnob {
        flag: "builderOptimizationLevel",
        setting: "builder_optimization_level",
        allowed: "[0|1|2|3|4|5]",
        default: "3",
        help: "trtexec --builderOptimizationLevel: how hard the builder searches for tactics (higher: longer builds, possibly faster engines)",
    },
    FlagKnob {
        flag: "tilingOptimizationLevel",
        setting: "tiling_optimization_level",
        allowed: "[0|1|2|3]",
        default: "0",
        help: "trtexec --tilingOptimizationLevel: how hard the builder searches for tiling strategies",
    },
    FlagKnob {
        flag: "maxAuxStreams",
        setting: "max_aux_streams",
        allowed: "[0|1|2|...]",
        default: "auto",
        help: "trtexec --maxAuxStreams: auxiliary streams the engine may use to run layers in parallel (auto: the builder decides)",
    },
];

/// The precision flags (`--fp16`, ...) as one knob; weakly typed TensorRT (before 11.0) only.
const PRECISION_KNOB: FlagKnob = FlagKnob {
    flag: "precision",
    setting: "precision",
    allowed: "[fp32|fp16|bf16|int8|fp8|best]",
    default: "fp32",
    help: "trtexec --fp16/--bf16/--int8/--fp8/--best: the reduced precision the builder may choose (TensorRT before 11.0; 11.x takes the model's types)",
};

/// The flag knobs `version` understands.
fn flag_knobs(version: &TrtexecVersion) -> Vec<&'static FlagKnob> {
    let mut knobs: Vec<&'static FlagKnob> = TRTEXEC_FLAGS
        .iter()
        .filter(|f| f.flag != "tilingOptimizationLevel" || version.has_tiling_optimization_level())
        .collect();
    if version.has_fp16_int8_best_flags() {
        knobs.push(&PRECISION_KNOB);
    }
    knobs
}

/// The trtexec build flags `version` understands as a knob database.
fn trtexec_flag_database(version: &TrtexecVersion) -> KnobDatabase {
    KnobDatabase {
        tuner_version: "trtmc-trtexec-flags 1".into(),
        tuner_options: flag_knobs(version)
            .into_iter()
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

/// The TensorRT runtime (`tensorrt`): builds an engine with NVIDIA's `trtexec` and times, profiles
/// and checks it through trtexec too (a runtime that times itself).
pub struct TensorrtRuntime {
    explicit: Option<PathBuf>,
    /// Where probe answers outlive this process (docs/tensorrt.md, "Probes are cached").
    probes: Option<ProbeCache>,
}

/// Located trtexecs by requested path, so that one process probes each only once.
type Located = Vec<(Option<PathBuf>, Result<Trtexec, Unavailable>)>;
static LOCATED: Mutex<Located> = Mutex::new(Vec::new());

impl TensorrtRuntime {
    /// The runtime driving `explicit` (`--trtexec PATH`), else the trtexec found on `PATH`.
    pub fn new(explicit: Option<PathBuf>) -> Self {
        Self {
            explicit,
            probes: None,
        }
    }

    /// The same runtime keeping its probes' answers in the bundle cache `bundle_cache`.
    pub fn with_probe_cache(self, bundle_cache: Option<&Path>) -> Self {
        Self {
            probes: bundle_cache.map(ProbeCache::in_bundle_cache),
            ..self
        }
    }

    /// The located trtexec with its version (probed once per process and path, and with a probe
    /// cache once per executable and library).
    pub fn trtexec(&self) -> Result<Trtexec, Unavailable> {
        let mut located = LOCATED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, found)) = located.iter().find(|(p, _)| *p == self.explicit) {
            return found.clone();
        }
        let found = match &self.probes {
            Some(probes) => probes.locate(self.explicit.as_deref()),
            None => Trtexec::locate(self.explicit.as_deref()),
        }
        .map_err(|e| Unavailable::Trtexec(Arc::new(e)));
        located.push((self.explicit.clone(), found.clone()));
        found
    }

    fn require(&self) -> anyhow::Result<Trtexec> {
        self.trtexec().map_err(anyhow::Error::msg)
    }

    /// The build-route knob database of `trtexec` (`--helpBuildRoute`), read once per process.
    fn route_database(&self, trtexec: &Trtexec) -> Result<KnobDatabase, SettingError> {
        type Read = Vec<(PathBuf, Result<KnobDatabase, SettingError>)>;
        static READ: Mutex<Read> = Mutex::new(Vec::new());
        let mut read = READ.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, db)) = read.iter().find(|(p, _)| p == trtexec.path()) {
            return db.clone();
        }
        let log =
            std::env::temp_dir().join(format!("trtmc-helpBuildRoute-{}.log", std::process::id()));
        let database = match &self.probes {
            Some(probes) => probes.knob_database(trtexec, &log, HELP_BUILD_ROUTE_TIMEOUT),
            None => trtexec.knob_database(&log, HELP_BUILD_ROUTE_TIMEOUT),
        }
        .map_err(|e| SettingError::RouteDatabase(Arc::new(e)));
        let _ = std::fs::remove_file(&log);
        read.push((trtexec.path().to_path_buf(), database.clone()));
        database
    }
}

/// Checks every `-knob=value` token of a build route against the knob database of TensorRT `version`.
fn check_route(
    route: &str,
    database: &KnobDatabase,
    version: &TrtexecVersion,
) -> Result<(), SettingError> {
    let tokens: Vec<&str> = route.split_whitespace().collect();
    if tokens.is_empty() {
        return Err(SettingError::EmptyRoute);
    }
    let mut seen = Vec::new();
    for token in tokens {
        let Some((knob, value)) = token.split_once('=').filter(|(k, _)| k.starts_with('-')) else {
            return Err(SettingError::RouteToken {
                token: token.to_string(),
            });
        };
        let Some(option) = database.knob(knob) else {
            return Err(SettingError::RouteUnknownKnob {
                version: *version,
                knob: knob.to_string(),
                knob_count: database.tuner_options.len(),
            });
        };
        if seen.contains(&knob) {
            return Err(SettingError::RouteKnobTwice {
                knob: knob.to_string(),
            });
        }
        seen.push(knob);
        let values = option.values()?;
        if value != option.default_value && !values.accepts(value) {
            return Err(SettingError::RouteValue {
                knob: knob.to_string(),
                expected: values.render(),
                version: *version,
                default: option.default_value.clone(),
                value: value.to_string(),
            });
        }
    }
    Ok(())
}

/// TensorRT's `build.*` settings ([`SETTINGS`]), decoded once where the engine is built or its
/// settings are checked (the shapes and dimensions are bound by [`bound_shapes`]).
#[derive(Debug, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TensorrtBuild {
    #[serde(default)]
    route: Option<String>,
    #[serde(default)]
    precision: BuildPrecision,
    #[serde(default)]
    builder_optimization_level: Option<FlagNumber>,
    #[serde(default)]
    tiling_optimization_level: Option<FlagNumber>,
    #[serde(default)]
    max_aux_streams: Option<FlagNumber>,
}

/// A trtexec flag's number as a case holds it: a whole number, or a word (`auto`: no flag, the
/// builder decides); its range is checked by [`TensorrtBuild::flags`].
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(untagged)]
enum FlagNumber {
    Whole(u64),
    Other(Value),
}

/// `build.precision`: the reduced precisions the builder may choose.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(try_from = "String")]
struct BuildPrecision(Vec<Precision>);

impl TryFrom<String> for BuildPrecision {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        Ok(BuildPrecision(match text.as_str() {
            "fp32" => Vec::new(),
            "fp16" => vec![Precision::Fp16],
            "bf16" => vec![Precision::Bf16],
            "int8" => vec![Precision::Int8],
            "fp8" => vec![Precision::Fp8],
            "best" => vec![Precision::Best],
            other => {
                return Err(format!(
                    "runtime tensorrt understands build.precision fp32, fp16, bf16, int8, fp8 or best, not `{other}`"
                ));
            }
        }))
    }
}

/// The trtexec build flags a case's build settings ask for.
#[derive(Debug, Default, PartialEq)]
struct BuildFlags {
    route: Option<String>,
    builder_optimization_level: Option<u32>,
    tiling_optimization_level: Option<u32>,
    max_aux_streams: Option<u32>,
}

impl TensorrtBuild {
    fn decode(settings: &BTreeMap<String, Value>) -> Result<Self, SettingError> {
        crate::runtime::decode_settings(NAME, SettingSection::Build, settings).map_err(|e| {
            SettingError::Undecodable {
                reason: format!("{e:#}"),
            }
        })
    }

    fn flags(&self) -> Result<BuildFlags, SettingError> {
        let level = |name: &str, given: &Option<FlagNumber>, max: u32| match given {
            None => Ok(None),
            Some(FlagNumber::Other(Value::String(s)))
                if s == "auto" && name == "max_aux_streams" =>
            {
                Ok(None)
            }
            Some(FlagNumber::Whole(n)) if u32::try_from(*n).is_ok_and(|n| n <= max) => {
                Ok(u32::try_from(*n).ok())
            }
            Some(v) => Err(SettingError::Level {
                name: name.to_string(),
                max,
                value: match v {
                    FlagNumber::Whole(n) => n.to_string(),
                    FlagNumber::Other(v) => v.to_string(),
                },
            }),
        };
        Ok(BuildFlags {
            route: self
                .route
                .as_deref()
                .map(|r| r.split_whitespace().collect::<Vec<_>>().join(" "))
                .filter(|r| !r.is_empty()),
            builder_optimization_level: level(
                "builder_optimization_level",
                &self.builder_optimization_level,
                5,
            )?,
            tiling_optimization_level: level(
                "tiling_optimization_level",
                &self.tiling_optimization_level,
                3,
            )?,
            max_aux_streams: level("max_aux_streams", &self.max_aux_streams, u32::MAX)?,
        })
    }
}

/// TensorRT's `runtime.*` settings ([`SETTINGS`]): how trtexec runs each query, decoded once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TensorrtRuntimeSettings {
    #[serde(default)]
    cuda_graph: Option<bool>,
    #[serde(default)]
    spin_wait: Option<bool>,
    #[serde(default)]
    data_transfers: Option<bool>,
}

fn behaviour(settings: &BTreeMap<String, Value>) -> anyhow::Result<InferenceBehaviour> {
    let s: TensorrtRuntimeSettings =
        crate::runtime::decode_settings(NAME, SettingSection::Runtime, settings)?;
    let d = InferenceBehaviour::default();
    Ok(InferenceBehaviour {
        cuda_graph: s.cuda_graph.unwrap_or(d.cuda_graph),
        spin_wait: s.spin_wait.unwrap_or(d.spin_wait),
        data_transfers: s.data_transfers.unwrap_or(d.data_transfers),
    })
}

#[cfg(test)]
fn precisions(settings: &BTreeMap<String, Value>) -> Result<Vec<Precision>, SettingError> {
    Ok(TensorrtBuild::decode(settings)?.precision.0)
}

use crate::data::{Declared, declared_io};

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

/// GPU name and compute capability from nvidia-smi, which engines are tied to: of the device CUDA
/// will use (the first of `CUDA_VISIBLE_DEVICES`, else GPU 0).
fn gpu_target() -> String {
    match trtmc_core::machine::find_program("nvidia-smi") {
        Some(smi) => gpu_target_with(&smi, std::env::var("CUDA_VISIBLE_DEVICES").ok().as_deref()),
        None => "gpu-unknown".into(),
    }
}

/// [`gpu_target`] asking `smi` with `CUDA_VISIBLE_DEVICES` = `visible`. Drivers older than 510 have
/// no `compute_cap` query field: the capability then comes from the GPU's name
/// ([`compute_capability_of`]), or is `cc-unknown`.
fn gpu_target_with(smi: &Path, visible: Option<&str>) -> String {
    let Some(device) = trtmc_core::machine::nvidia_smi_selected(smi, visible) else {
        return "gpu-none-visible".into();
    };
    let query = |fields: &str| -> Option<String> {
        let out = std::process::Command::new(smi)
            .arg(format!("--id={device}"))
            .arg(format!("--query-gpu={fields}"))
            .arg("--format=csv,noheader")
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text.lines().next().unwrap_or("").trim();
        (out.status.success() && !line.is_empty()).then(|| line.to_string())
    };
    let identity = match query("name,compute_cap") {
        Some(line) => line,
        None => match query("name") {
            Some(name) => {
                let cc = compute_capability_of(&name).unwrap_or("cc-unknown");
                format!("{name}, {cc}")
            }
            None => return "gpu-unknown".into(),
        },
    };
    let cleaned: String = identity
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

/// The compute capability of a data-centre or desktop NVIDIA GPU from its name, for drivers that
/// cannot report it (NVIDIA's CUDA GPUs table); `None` for names not listed.
fn compute_capability_of(name: &str) -> Option<&'static str> {
    const MODELS: &[(&str, &str)] = &[
        ("B200", "10.0"),
        ("B100", "10.0"),
        ("GB200", "10.0"),
        ("H200", "9.0"),
        ("H100", "9.0"),
        ("GH200", "9.0"),
        ("H800", "9.0"),
        ("L4", "8.9"),
        ("L40", "8.9"),
        ("L40S", "8.9"),
        ("A100", "8.0"),
        ("A800", "8.0"),
        ("A30", "8.0"),
        ("A10", "8.6"),
        ("A10G", "8.6"),
        ("A40", "8.6"),
        ("A16", "8.6"),
        ("A2", "8.6"),
        ("T4", "7.5"),
        ("V100", "7.0"),
        ("V100S", "7.0"),
        ("P100", "6.0"),
        ("P40", "6.1"),
        ("P4", "6.1"),
    ];
    let words: Vec<&str> = name.split([' ', '-']).filter(|w| !w.is_empty()).collect();
    if let Some((_, cc)) = MODELS.iter().find(|(model, _)| words.contains(model)) {
        return Some(cc);
    }
    // GeForce RTX NNNN: the series is the first digit.
    let rtx = words.iter().position(|w| *w == "RTX")?;
    let series = words.get(rtx + 1)?;
    if series.len() != 4 || !series.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    match &series[..1] {
        "5" => Some("12.0"),
        "4" => Some("8.9"),
        "3" => Some("8.6"),
        "2" => Some("7.5"),
        _ => None,
    }
}

/// The engine build a bundle's settings ask for. trtexec runs inside the (temporary) bundle folder,
/// so the engine and layer files are named relative to it and the argv is the same wherever the
/// folder is staged.
fn build_request(
    onnx: &Path,
    settings: &BTreeMap<String, Value>,
    shapes: Option<&[TensorShape]>,
) -> anyhow::Result<BuildRequest> {
    let mut request = BuildRequest::new(onnx, ENGINE);
    request.shapes = match shapes {
        None => BuildShapes::Model,
        Some(s) => BuildShapes::Static(s.to_vec()),
    };
    let build = TensorrtBuild::decode(settings).map_err(anyhow::Error::msg)?;
    let flags = build.flags().map_err(anyhow::Error::msg)?;
    request.precisions = build.precision.0;
    request.build_route = flags.route;
    request.builder_optimization_level = flags.builder_optimization_level;
    request.tiling_optimization_level = flags.tiling_optimization_level;
    request.max_aux_streams = flags.max_aux_streams;
    request.layer_info = Some(export_paths(Path::new(""), NAME).layer_info);
    Ok(request)
}

/// The TensorRT version that built the bundle's engine.
fn built_version(bundle_dir: &Path) -> anyhow::Result<String> {
    let doc = build_record(bundle_dir)?;
    doc["trtexec"]["version"]
        .as_str()
        .map(String::from)
        .with_context(|| {
            format!(
                "{} names no trtexec version (rebuild the bundle)",
                bundle_dir.join(BUILD_FILE).display()
            )
        })
}

/// The input shapes timing and profiling pass (those the engine was built with), from the bundle.
fn run_shapes(bundle_dir: &Path) -> anyhow::Result<Vec<TensorShape>> {
    let doc = build_record(bundle_dir)?;
    let path = bundle_dir.join(BUILD_FILE);
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

/// The bundle's `tensorrt-build.json`.
fn build_record(bundle_dir: &Path) -> anyhow::Result<Value> {
    let path = bundle_dir.join(BUILD_FILE);
    let doc: Value = serde_json::from_slice(
        &trtmc_core::limits::read_outside(&path, trtmc_core::limits::FileKind::Text)
            .with_context(|| format!("cannot read {} (rebuild the bundle)", path.display()))?,
    )
    .with_context(|| format!("{} is malformed (rebuild the bundle)", path.display()))?;
    if doc["schema"] != BUILD_SCHEMA {
        bail!(
            "{} is not a {BUILD_SCHEMA} file (rebuild the bundle)",
            path.display()
        );
    }
    Ok(doc)
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

    fn availability(&self) -> Result<(), Unavailable> {
        self.trtexec().map(|_| ())
    }

    fn settings(&self) -> &'static [SettingDecl] {
        SETTINGS
    }

    /// TensorRT's own knob database (`trtexec --helpBuildRoute`, 11.1+), then the trtexec build flags
    /// the version understands; before 11.1 only the flags.
    fn knob_databases(&self, _base: Option<&ResolvedCase>) -> Result<Vec<KnobSource>, KnobError> {
        let trtexec = self.trtexec().map_err(|e| KnobError::Tool(e.to_string()))?;
        let flags = KnobSource {
            name: TRTEXEC_FLAG_KNOBS.into(),
            database: trtexec_flag_database(trtexec.version()),
        };
        if !trtexec.version().has_build_routes() {
            return Ok(vec![flags]);
        }
        let database = self
            .route_database(&trtexec)
            .map_err(|e| KnobError::Tool(e.to_string()))?;
        Ok(vec![
            KnobSource {
                name: BUILD_ROUTE_KNOBS.into(),
                database,
            },
            flags,
        ])
    }

    /// `-trtexec:<flag>` sets its build setting; every other knob is a token of `build.route`.
    fn knob_setting(&self, knob: &str, value: &str) -> Result<KnobSetting, SettingError> {
        let Some(flag) = knob.strip_prefix(TRTEXEC_KNOB_PREFIX) else {
            return Ok(KnobSetting::BuildRoute);
        };
        let known = TRTEXEC_FLAGS
            .iter()
            .chain(std::iter::once(&PRECISION_KNOB))
            .find(|f| f.flag == flag)
            .ok_or_else(|| SettingError::UnknownFlagKnob {
                knob: knob.to_string(),
            })?;
        Ok(KnobSetting::Setting {
            key: format!("build.{}", known.setting),
            value: value.to_string(),
        })
    }

    fn check_build_values(&self, settings: &BTreeMap<String, Value>) -> Result<(), SettingError> {
        let trtexec = self.trtexec()?;
        let version = trtexec.version();
        if let Some(route) = settings.get("route") {
            let Some(route) = route.as_str() else {
                return Err(SettingError::RouteNotText {
                    value: route.to_string(),
                });
            };
            if !version.has_build_routes() {
                return Err(SettingError::RouteUnsupported {
                    trtexec: trtexec.path().to_path_buf(),
                    version: *version,
                    offered: flag_knobs(version)
                        .iter()
                        .map(|f| format!("build.{}", f.setting))
                        .collect(),
                });
            }
            let database = self.route_database(&trtexec)?;
            check_route(route, &database, version)?;
        }
        for knob in TRTEXEC_FLAGS {
            if settings.contains_key(knob.setting)
                && !flag_knobs(version).iter().any(|f| f.flag == knob.flag)
            {
                return Err(SettingError::FlagUnsupported {
                    setting: knob.setting,
                    flag: knob.flag,
                    version: *version,
                });
            }
        }
        // The flags' ranges first (their message names the range), then what they leave unchecked
        // (build.precision) against the declarations, then the rest of the decoding.
        let build = TensorrtBuild::decode(settings);
        if let Ok(build) = &build {
            build.flags()?;
        }
        crate::runtime::check_declared_values(NAME, SETTINGS, SettingSection::Build, settings)?;
        build.and_then(|b| b.flags()).map(|_| ())
    }

    fn build(
        &self,
        onnx: &Path,
        settings: &BTreeMap<String, Value>,
        out_dir: &Path,
    ) -> anyhow::Result<BuildOutput> {
        check_build_settings(NAME, settings, &self.build_settings())?;
        self.check_build_values(settings)
            .map_err(anyhow::Error::msg)?;
        let trtexec = self.require()?;
        let (declared_in, declared_out) = declared_io(onnx)?;
        let shapes = bound_shapes(&declared_in, settings)?;
        let request = build_request(onnx, settings, shapes.as_deref())?;
        let argv = request.args(trtexec.version())?;
        let log_path = out_dir.join(BUILD_LOG);
        let started = Instant::now();
        // The typed error travels on, so that a tuner can tell a crashed build from a refused one.
        let built = trtexec
            .in_dir(out_dir)
            .build(&request, &log_path, BUILD_TIMEOUT)
            .map_err(anyhow::Error::new)?;
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
                "route_used": built.log.tuning.build_route,
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

    /// The trtexec command lines of the build and of the timed run, each exactly the argv `run`
    /// starts (trtexec runs in the bundle folder to build and in the case folder to time, so files
    /// without a folder land there).
    fn describe_commands(
        &self,
        onnx: Option<&Path>,
        build: &BTreeMap<String, Value>,
        runtime: &BTreeMap<String, Value>,
        bundle_dir: &Path,
        timed: &TimedPlan,
    ) -> Result<Vec<String>, String> {
        // Before probing trtexec: `run --dry-run` first asks with no model file whether a runtime
        // has commands at all.
        let Some(onnx) = onnx else {
            return Err(
                "the model file is produced at build time, so its shapes are not known yet".into(),
            );
        };
        let trtexec = self.trtexec().map_err(|e| e.to_string())?;
        let version = trtexec.version();
        let text = |e: anyhow::Error| format!("{e:#}");
        let (inputs, _) = declared_io(onnx).map_err(text)?;
        let shapes = bound_shapes(&inputs, build).map_err(text)?;
        let request = build_request(onnx, build, shapes.as_deref()).map_err(text)?;
        let mut time = time_request(
            bundle_dir.join(ENGINE),
            shapes.unwrap_or_default(),
            runtime,
            timed,
        )
        .map_err(text)?;
        if timed.feeds_data {
            let names: Vec<&str> = inputs.iter().map(|d| d.name.as_str()).collect();
            time.load_inputs = load_inputs_files(&names);
        }
        let line = |args: Vec<String>| {
            let mut argv = vec![trtexec.path().display().to_string()];
            argv.extend(args);
            trtmc_core::text::shell_line(&argv)
        };
        Ok(vec![
            format!(
                "build (in {}): {}",
                bundle_dir.display(),
                line(request.args(version).map_err(|e| e.to_string())?)
            ),
            format!(
                "time (in the case folder): {}",
                line(time.args(version).map_err(|e| e.to_string())?)
            ),
        ])
    }

    /// The engine's TensorRT version (from `tensorrt-build.json`) must be the installed trtexec's.
    fn check_bundle(
        &self,
        bundle_dir: &Path,
        _manifest: &BundleManifest,
    ) -> Result<(), BundleCheckError> {
        let trtexec = self.trtexec()?;
        let built_with = built_version(bundle_dir).map_err(|e| BundleCheckError::BuildRecord {
            bundle: bundle_dir.to_path_buf(),
            reason: format!("{e:#}"),
        })?;
        let here = trtexec.version().to_string();
        if built_with != here {
            return Err(BundleCheckError::EngineVersion {
                bundle: bundle_dir.to_path_buf(),
                built_with,
                trtexec: trtexec.path().to_path_buf(),
                here,
            });
        }
        Ok(())
    }

    fn supports_operation(&self, operation: &str) -> Result<(), UnsupportedOperation> {
        if operation == "infer" {
            return Ok(());
        }
        Err(UnsupportedOperation {
            runtime: NAME,
            operation: operation.to_string(),
            why: "times the engine with trtexec, which feeds its own random inputs and runs one forward pass per query",
            instead: "use --runtime tract or onnxruntime, or a profile whose operation is infer, e.g. --onnx FILE",
        })
    }

    fn timing_boundary(&self) -> &'static str {
        BOUNDARY_GPU_COMPUTE
    }

    fn self_timed(&self) -> Option<&dyn SelfTimed> {
        Some(self)
    }
}

/// The timed run of a case: `engine` with `shapes` (those it was built for), the case's loop
/// (trtexec's own 200 ms warm-up unless the case asks for none; the minimum duration rounded up to
/// whole seconds) and loop behaviour, its queries exported to `times_tensorrt.json` in the folder
/// trtexec runs in. `run` and `run --dry-run` both build it here.
fn time_request(
    engine: PathBuf,
    shapes: Vec<TensorShape>,
    settings: &BTreeMap<String, Value>,
    timed: &TimedPlan,
) -> anyhow::Result<TimeRequest> {
    let mut request = TimeRequest::new(engine);
    request.shapes = shapes;
    request.warm_up_ms = (timed.warmup == 0).then_some(0);
    request.iterations = Some(clamp_u32(timed.iterations.max(1)));
    request.duration_s = Some(timed.min_duration_s.max(0.0).ceil() as u32);
    request.behaviour = behaviour(settings)?;
    request.export_times = Some(PathBuf::from(TIMES_FILE));
    Ok(request)
}

/// A timing run of the bundle's engine with the shapes it was built for, for `r`.
fn time_request_of(r: &SelfTimedRequest<'_>, timed: &TimedPlan) -> anyhow::Result<TimeRequest> {
    time_request(
        r.bundle_dir.join(&r.manifest.artifact),
        run_shapes(r.bundle_dir)?,
        r.settings,
        timed,
    )
}

/// One of trtexec's warnings under its performance summary, as a sentence.
fn describe_warning(w: &SummaryWarning) -> String {
    match w {
        SummaryWarning::EnqueueBound => {
            "trtexec: throughput may be bound by enqueue time (the host cannot keep the GPU busy)"
                .into()
        }
        SummaryWarning::H2dBound => {
            "trtexec: throughput may be bound by host-to-device transfers".into()
        }
        SummaryWarning::D2hBound => {
            "trtexec: throughput may be bound by device-to-host transfers".into()
        }
        SummaryWarning::Unstable {
            coefficient_of_variance_percent,
        } => format!(
            "trtexec: GPU compute time is unstable, coefficient of variance {coefficient_of_variance_percent} %"
        ),
        SummaryWarning::MultipleStreams => {
            "trtexec: several inference streams ran in parallel".into()
        }
        SummaryWarning::Other { text } => format!("trtexec: {text}"),
    }
}

/// Where the case's inputs go for `--loadInputs`, relative to the case folder trtexec runs in: one
/// raw file per input, in the engine's input order (the dry run names the same files).
fn load_inputs_files(names: &[&str]) -> Vec<(String, PathBuf)> {
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            (
                name.to_string(),
                Path::new(LOAD_INPUTS_DIR).join(format!("input-{i}.bin")),
            )
        })
        .collect()
}

/// Writes `inputs` (by name) for `--loadInputs` into the case folder; the list to pass.
fn write_load_inputs(
    case_dir: &Path,
    manifest: &BundleManifest,
    inputs: &[(String, HostTensor)],
) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let dir = case_dir.join(LOAD_INPUTS_DIR);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let names: Vec<&str> = manifest.inputs.iter().map(|s| s.name.as_str()).collect();
    let files = load_inputs_files(&names);
    for (spec, (_, file)) in manifest.inputs.iter().zip(&files) {
        let (_, tensor) = inputs
            .iter()
            .find(|(n, _)| *n == spec.name)
            .with_context(|| {
                format!(
                    "the engine needs input `{}`, which was not given",
                    spec.name
                )
            })?;
        let path = case_dir.join(file);
        write_atomic(&path, &load_inputs_bytes(spec, tensor)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(files)
}

/// An input's bytes as trtexec's `--loadInputs` reads them: raw, little-endian, in the engine's type.
/// A float16 input travels as f32 in trtmc and is narrowed here (round to nearest even).
fn load_inputs_bytes(spec: &TensorSpec, tensor: &HostTensor) -> anyhow::Result<Vec<u8>> {
    match (spec.dtype, tensor) {
        (DType::F16, HostTensor::F32(a)) => Ok(a
            .iter()
            .flat_map(|&x| tract_core::prelude::f16::from_f32(x).to_le_bytes())
            .collect()),
        (DType::F16, other) => bail!(
            "input `{}` is float16 but was given as {}: give float values",
            spec.name,
            other.dtype().name()
        ),
        _ => Ok(le_bytes(tensor)),
    }
}

/// The case folder's subfolder of `--loadInputs` files.
const LOAD_INPUTS_DIR: &str = "inputs_tensorrt";

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
        let mut request = time_request_of(
            r,
            &TimedPlan {
                warmup: r.warmup,
                iterations: r.iterations,
                min_duration_s: r.min_duration_s,
                feeds_data: r.inputs.is_some(),
            },
        )?;
        if let Some(inputs) = r.inputs {
            request.load_inputs = write_load_inputs(r.case_dir, r.manifest, inputs)?;
        }
        let times_path = r.case_dir.join(TIMES_FILE);
        let argv = request.args(trtexec.version())?;
        let output = trtexec
            .in_dir(r.case_dir)
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
        // The route trtexec said it built the engine with (11.1+), from the bundle's build record.
        if let Some(route) = build_record(r.bundle_dir)
            .ok()
            .and_then(|doc| doc["route_used"].as_str().map(String::from))
        {
            notes.insert(ROUTE_USED_NOTE.into(), json!(route));
        }
        if let Some(summary) = output.log.summary() {
            notes.insert("trtexec_summary".into(), serde_json::to_value(summary)?);
        }
        if let Some(w) = output.log.warmup {
            notes.insert("trtexec_warmup".into(), serde_json::to_value(w)?);
        }
        let warnings = output
            .log
            .summary()
            .map(|s| s.warnings.iter().map(describe_warning).collect())
            .unwrap_or_default();
        Ok(SelfTimedRun {
            observations,
            files: vec![TIME_LOG.into(), TIMES_FILE.into()],
            notes,
            warnings,
        })
    }

    /// `--loadInputs` with the given tensors as raw files, one query, `--exportOutput`.
    fn outputs(
        &self,
        r: &SelfTimedRequest<'_>,
        inputs: &[(String, HostTensor)],
    ) -> anyhow::Result<Vec<(String, HostTensor)>> {
        let trtexec = self.require()?;
        let load = write_load_inputs(r.case_dir, r.manifest, inputs)?;
        // One query, no warm-up, nothing timed.
        let mut request = time_request_of(
            r,
            &TimedPlan {
                warmup: 0,
                iterations: 1,
                min_duration_s: 0.0,
                feeds_data: true,
            },
        )?;
        request.export_times = None;
        request.load_inputs = load;
        let exported = r.case_dir.join(OUTPUTS_FILE);
        request.export_output = Some(PathBuf::from(OUTPUTS_FILE));
        trtexec
            .in_dir(r.case_dir)
            .time(&request, &r.case_dir.join(OUTPUTS_LOG), r.timeout)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let tensors = read_outputs(&exported).map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut named = Vec::with_capacity(r.manifest.outputs.len());
        for spec in &r.manifest.outputs {
            let t = tensors
                .iter()
                .find(|t| t.name == spec.name)
                .with_context(|| {
                    let found: Vec<&str> = tensors.iter().map(|t| t.name.as_str()).collect();
                    format!(
                        "trtexec exported no output `{}` to {} (it exported: {})",
                        spec.name,
                        exported.display(),
                        found.join(", ")
                    )
                })?;
            let shape: Vec<usize> = t.dims.iter().map(|&d| d as usize).collect();
            let tensor = Tensor::new(&t.name, ElementType::F32, shape, t.values.clone())?;
            named.push((spec.name.clone(), from_tensor(&tensor, spec.dtype)?));
        }
        Ok(named)
    }

    fn profile(&self, r: &SelfTimedRequest<'_>, iterations: u64) -> anyhow::Result<ExportFiles> {
        let trtexec = self.require()?;
        let files = export_paths(r.case_dir, NAME);
        // trtexec runs in the case folder: the exports are named relative to it.
        let named = export_paths(Path::new(""), NAME);
        let mut request =
            ProfileRequest::new(r.bundle_dir.join(&r.manifest.artifact), named.profile);
        request.shapes = run_shapes(r.bundle_dir)?;
        request.iterations = Some(clamp_u32(iterations.max(1)));
        request.duration_s = Some(0);
        request.behaviour = behaviour(r.settings)?;
        request.export_layer_info = Some(named.layer_info);
        trtexec
            .in_dir(r.case_dir)
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
            elem_type: 1,
            dtype: Some(DType::F32),
            has_shape: true,
            unnamed: vec![false; dims.len()],
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
        let err = bound_shapes(&inputs, &s(&[]))
            .expect_err("unbound")
            .to_string();
        assert!(err.to_string().contains("build.dims.batch"), "{err}");
        let err = bound_shapes(
            &inputs,
            &s(&[("dims.batch", json!(1)), ("shapes.y", json!([1]))]),
        )
        .expect_err("unknown")
        .to_string();
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

    /// `script` written to `path` as an executable.
    #[cfg(unix)]
    fn executable_script(path: PathBuf, script: &str) -> PathBuf {
        trtmc_testkit::write_script(&path, script);
        path
    }

    /// A fake nvidia-smi of a driver without the `compute_cap` field; it records its arguments.
    #[cfg(unix)]
    fn old_nvidia_smi(dir: &Path) -> PathBuf {
        let args = dir.join("smi-args");
        let script = format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\n\
             case \"$*\" in\n  *compute_cap*) echo 'Field \"compute_cap\" is not a valid field to query.'; exit 2 ;;\n\
               *--id=1*) echo 'Tesla T4' ;;\n  *) echo 'NVIDIA A100-SXM4-40GB' ;;\nesac\n",
            args.display()
        );
        let path = dir.join("nvidia-smi");
        executable_script(path, &script)
    }

    #[cfg(unix)]
    #[test]
    fn the_gpu_target_falls_back_to_the_name_and_follows_cuda_visible_devices() {
        let tmp = tempfile::tempdir().expect("tmp");
        let smi = old_nvidia_smi(tmp.path());
        assert_eq!(
            gpu_target_with(&smi, None),
            "gpu-NVIDIA-A100-SXM4-40GB--8.0"
        );
        assert_eq!(gpu_target_with(&smi, Some("1,0")), "gpu-Tesla-T4--7.5");
        assert_eq!(gpu_target_with(&smi, Some("")), "gpu-none-visible");
        let asked = std::fs::read_to_string(tmp.path().join("smi-args")).expect("args");
        assert!(
            asked.contains("--id=0 --query-gpu=name,compute_cap"),
            "{asked}"
        );
        assert!(
            asked.contains("--id=1 --query-gpu=name --format"),
            "{asked}"
        );
        assert_eq!(compute_capability_of("NVIDIA H200"), Some("9.0"));
        assert_eq!(compute_capability_of("NVIDIA A10"), Some("8.6"));
        assert_eq!(
            compute_capability_of("NVIDIA GeForce RTX 4090"),
            Some("8.9")
        );
        assert_eq!(compute_capability_of("NVIDIA Mystery 9"), None);
    }

    /// A stand-in trtexec printing TensorRT `version`'s banner, and for `--helpBuildRoute` the
    /// recorded TensorRT 11.1 knob database.
    #[cfg(unix)]
    fn standin(dir: &Path, version: &str) -> PathBuf {
        let db = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/trtexec-logs/trt11.1_helpBuildRoute_knobdb_EXCERPT.json");
        let script = format!(
            "#!/bin/sh\necho '&&&& RUNNING TensorRT.trtexec [TensorRT v{version}] [b1] # trtexec '\"$*\"\n\
             case \" $* \" in\n  *\" --helpBuildRoute\"*) cat '{}' ;;\nesac\n",
            db.display()
        );
        let path = dir.join(format!("trtexec-{version}"));
        executable_script(path, &script)
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
            let Ok(KnobSetting::Setting { key, value }) =
                rt.knob_setting(&option.option, &option.default_value)
            else {
                panic!("{} is no build setting", option.option);
            };
            assert!(
                key.starts_with("build.") && value == option.default_value,
                "{key}"
            );
        }
        assert_eq!(
            rt.knob_setting("-kgen:tiling", "1").ok(),
            Some(KnobSetting::BuildRoute)
        );
        // A route's knobs and values are checked against the database before anything is built.
        let route = |r: &str| BTreeMap::from([("route".to_string(), json!(r))]);
        rt.check_build_values(&route("-kgen:tiling=1  -conv_lowering=off"))
            .expect("known knobs and values");
        let err = rt
            .check_build_values(&route("-kgen:tiling=7"))
            .expect_err("value")
            .to_string();
        assert!(err.contains("[0|1|2]") && err.contains("11.1.0"), "{err}");
        let err = rt
            .check_build_values(&route("-no:such=1"))
            .expect_err("knob")
            .to_string();
        assert!(
            err.contains("`-no:such`") && err.contains("11.1.0"),
            "{err}"
        );

        // TensorRT 10.x has no knob database: only the flag knobs, precision among them; a route is
        // refused naming the settings it has instead.
        let old = TensorrtRuntime::new(Some(standin(tmp.path(), "101601")));
        let sources = old.knob_databases(None).expect("10.x flag knobs");
        let names: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, [TRTEXEC_FLAG_KNOBS]);
        assert!(sources[0].database.knob("-trtexec:precision").is_some());
        let err = old
            .check_build_values(&route("-kgen:tiling=1"))
            .expect_err("no routes on 10.x")
            .to_string();
        assert!(
            err.contains(">= 11.1")
                && err.contains("10.16.1")
                && err.contains("build.builder_optimization_level"),
            "{err}"
        );
        let level = BTreeMap::from([("builder_optimization_level".to_string(), json!(6))]);
        let err = old
            .check_build_values(&level)
            .expect_err("out of range")
            .to_string();
        assert!(err.contains("0 to 5"), "{err}");
    }

    #[test]
    fn float16_inputs_are_written_as_half_precision_for_load_inputs() {
        let spec = TensorSpec {
            name: "x".into(),
            dtype: DType::F16,
            shape: vec![Dim::Fixed(3)],
        };
        let values = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[3]), vec![1.0f32, -2.5, 0.1])
            .expect("array");
        let bytes = load_inputs_bytes(&spec, &HostTensor::F32(values)).expect("bytes");
        // IEEE half: 1.0 = 0x3c00, -2.5 = 0xc100, 0.1 rounds to 0x2e66.
        assert_eq!(bytes, vec![0x00, 0x3c, 0x00, 0xc1, 0x66, 0x2e]);
        let ints =
            ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[1]), vec![1i64]).expect("array");
        let e = load_inputs_bytes(&spec, &HostTensor::I64(ints))
            .expect_err("ints for a float16")
            .to_string();
        assert!(format!("{e:#}").contains("input `x` is float16"), "{e:#}");
    }
}
