//! The runtime abstraction: build an optimized artifact from ONNX, load it into a session, run it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::bail;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use trtmc_core::artifacts::{Observation, PUBLIC_PIPELINE_CALL_WALL};
use trtmc_core::case::ResolvedCase;

use crate::bundle::BundleManifest;
use crate::error::{BundleCheckError, SettingError, Unavailable, UnsupportedOperation};
use crate::knobs::{KnobError, KnobSetting, KnobSource};
use crate::profile::{ExportFiles, LayerProfile};
use crate::tensor::{HostTensor, TensorSpec};

pub use trtmc_core::settings::{
    DeclaredSettings, OPEN_RANGE_MOST, SettingDecl, SettingKind, SettingSection,
};

/// One timed build step, for build-timing.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildStep {
    /// The step's own label (`parse_onnx`, trtexec's `tactic_selection`, ...), chosen by the runtime.
    pub name: String,
    /// How long the step took, in milliseconds.
    pub ms: f64,
}

/// What a runtime's build produced inside the bundle directory.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildOutput {
    /// File name of the optimized artifact, relative to the bundle directory.
    pub artifact: String,
    /// The model's inputs as the artifact takes them, recorded in the bundle manifest.
    pub inputs: Vec<TensorSpec>,
    /// The model's outputs as the artifact produces them, recorded in the bundle manifest.
    pub outputs: Vec<TensorSpec>,
    /// The build's timed steps, in order; the bundle adds its own total wall time beside them.
    pub steps: Vec<BuildStep>,
    /// Human-readable lines for build.log.
    pub log: Vec<String>,
    /// The resolved build command or equivalent step list, for build-command.json.
    pub command: Value,
}

/// A loaded model ready to run.
pub trait Session {
    /// The inputs [`Session::run`] takes, in the order it takes them.
    fn inputs(&self) -> &[TensorSpec];
    /// The outputs [`Session::run`] returns, in the order it returns them.
    fn outputs(&self) -> &[TensorSpec];
    /// One forward pass; `inputs` are in [`Session::inputs`] order.
    fn run(&mut self, inputs: Vec<HostTensor>) -> anyhow::Result<Vec<HostTensor>>;
    /// Sessions from [`Runtime::load_profiling`]: forget what was recorded so far (the warm-up calls).
    fn profile_start(&mut self) -> anyhow::Result<()> {
        bail!("this session was not loaded for per-layer profiling")
    }
    /// Sessions from [`Runtime::load_profiling`]: the per-layer times of the runs since
    /// [`Session::profile_start`].
    fn profile_finish(&mut self) -> anyhow::Result<LayerProfile> {
        bail!("this session was not loaded for per-layer profiling")
    }
}

/// The timed loop of one run of a case as `run` will start it, for [`Runtime::describe_commands`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimedPlan {
    /// Untimed calls before the timed loop.
    pub warmup: u64,
    /// Timed calls at least (the loop goes on until `min_duration_s` has passed too).
    pub iterations: u64,
    /// Shortest timed loop, in seconds.
    pub min_duration_s: f64,
    /// The case feeds its own data (`--inputs`): a tool that owns its loop loads the first data set
    /// instead of inventing inputs (trtexec: `--loadInputs`).
    pub feeds_data: bool,
}

/// What a runtime that times itself (its own tool owns the timed loop) is asked to do.
pub struct SelfTimedRequest<'a> {
    /// The bundle directory holding the built artifact.
    pub bundle_dir: &'a Path,
    /// The bundle's manifest (artifact file, inputs, outputs, build settings).
    pub manifest: &'a BundleManifest,
    /// The case's operation (`infer`, ...); the runtime refuses those its tool cannot time.
    pub operation: &'a str,
    /// Load-time settings (`runtime.*`).
    pub settings: &'a BTreeMap<String, Value>,
    /// Untimed calls the tool makes before timing.
    pub warmup: u64,
    /// Timed calls at least.
    pub iterations: u64,
    /// Shortest timed loop, in seconds.
    pub min_duration_s: f64,
    /// Longest the tool may run before it is stopped and the run fails.
    pub timeout: Duration,
    /// The case directory: the tool's logs and exports are written here.
    pub case_dir: &'a Path,
    /// The case's first data set (`--inputs`), by input name: what the tool feeds in its timed loop.
    /// `None`: the tool's own inputs (trtexec: random values).
    pub inputs: Option<&'a [(String, HostTensor)]>,
}

/// A finished self-timed run: one observation per timed query at the runtime's boundary.
#[derive(Debug, Clone, Default)]
pub struct SelfTimedRun {
    /// One per timed query, in the order the tool ran them.
    pub observations: Vec<Observation>,
    /// Files written into the case directory (names relative to it), e.g. the tool's log.
    pub files: Vec<String>,
    /// Facts worth keeping (the tool's own summary, its version).
    pub notes: BTreeMap<String, Value>,
    /// The tool's own warnings about this measurement, as sentences (trtexec: "GPU compute time is
    /// unstable ...").
    pub warnings: Vec<String>,
}

/// Runtimes whose own tool owns the timed loop (trtexec). They cannot offer a [`Session`]: the runner
/// times them through this instead of the worker.
pub trait SelfTimed {
    /// The tool's log of a timed run, in the case directory (kept on failure too).
    fn time_log(&self) -> &'static str;
    /// The tool's log of a profiling run, in the case directory.
    fn profile_log(&self) -> &'static str;
    /// Times the bundle; observations are at [`Runtime::timing_boundary`].
    fn time(&self, request: &SelfTimedRequest<'_>) -> anyhow::Result<SelfTimedRun>;
    /// One inference on `inputs` (matched to the bundle's inputs by name) inside the tool, returning
    /// the outputs by name; the tool's log and files go into the request's case directory.
    fn outputs(
        &self,
        request: &SelfTimedRequest<'_>,
        inputs: &[(String, HostTensor)],
    ) -> anyhow::Result<Vec<(String, HostTensor)>>;
    /// A separate per-layer profiling run writing `layers_<runtime>.json` and `profile_<runtime>.json`
    /// into the case directory.
    fn profile(
        &self,
        request: &SelfTimedRequest<'_>,
        iterations: u64,
    ) -> anyhow::Result<ExportFiles>;
}

/// One inference backend (tract, ONNX Runtime, TensorRT): what it understands, how it builds a
/// bundle's artifact and loads it, and how `tune` may vary it. The registry
/// ([`crate::registry`]) holds one value per runtime; it is shared between threads.
pub trait Runtime: Send + Sync {
    /// The runtime's name as cases, bundle manifests and the command line spell it (`tract`, ...).
    fn name(&self) -> &'static str;
    /// The installed backend's version, recorded in bundle manifests and results (`unavailable`
    /// when the backend cannot be found).
    fn version(&self) -> String;
    /// What the artifact is tied to besides the architecture (CPU features, GPU compute capability).
    fn target(&self) -> String;
    /// `Err` with an install hint when the runtime cannot be used on this machine.
    fn availability(&self) -> Result<(), Unavailable>;
    /// Every `build.*` (beyond [`COMMON_BUILD_SETTINGS`]) and `runtime.*` setting it understands.
    fn settings(&self) -> &'static [SettingDecl];
    /// Builds the optimized artifact from `onnx` into the empty directory `out_dir`.
    fn build(
        &self,
        onnx: &Path,
        settings: &BTreeMap<String, Value>,
        out_dir: &Path,
    ) -> anyhow::Result<BuildOutput>;
    /// Loads a bundle this runtime built into a session ready to run, with the load-time
    /// (`runtime.*`) `settings`.
    fn load(
        &self,
        bundle_dir: &Path,
        manifest: &BundleManifest,
        settings: &BTreeMap<String, Value>,
    ) -> anyhow::Result<Box<dyn Session>>;
    /// Loads the bundle like [`Runtime::load`] with a per-layer profiler attached; `scratch` may receive
    /// the runtime's own trace files.
    fn load_profiling(
        &self,
        _bundle_dir: &Path,
        _manifest: &BundleManifest,
        _settings: &BTreeMap<String, Value>,
        _scratch: &Path,
    ) -> anyhow::Result<Box<dyn Session>> {
        bail!("runtime `{}` has no per-layer profiler", self.name())
    }
    /// Build settings this runtime understands beyond [`COMMON_BUILD_SETTINGS`] (its `build.*` decls).
    fn build_settings(&self) -> Vec<&'static str> {
        self.settings()
            .iter()
            .filter(|s| s.section == SettingSection::Build)
            .map(|s| s.name)
            .collect()
    }
    /// The knob databases `tune` searches (getAllBuildRoutes shape), in merge order, each named by its
    /// source. By default one database of the tunable [`SettingDecl`]s, defaults from `base` where the
    /// case sets them, so that the default route is what `run` would build.
    fn knob_databases(&self, base: Option<&ResolvedCase>) -> Result<Vec<KnobSource>, KnobError> {
        let database =
            crate::knobs::declared_database(self.name(), &self.version(), self.settings(), base)?;
        Ok(vec![KnobSource {
            name: self.name().to_string(),
            database,
        }])
    }
    /// What the route token `knob=value` asks of this runtime (by default: a declared setting).
    fn knob_setting(&self, knob: &str, value: &str) -> Result<KnobSetting, SettingError> {
        crate::knobs::declared_setting(self.name(), self.settings(), knob, value)
    }
    /// Checks the values of its build settings before anything is built (a route against the installed
    /// tool's knob database, say); `Err` names the setting, the allowed values and the tool's version.
    /// By default the values of the declared build settings (see [`check_declared_values`]).
    fn check_build_values(&self, settings: &BTreeMap<String, Value>) -> Result<(), SettingError> {
        check_declared_values(
            self.name(),
            self.settings(),
            SettingSection::Build,
            settings,
        )
    }
    /// The external commands a build into `bundle_dir` and the timed run `timed` would execute
    /// (`run --dry-run`), each exactly as it will be started; empty for runtimes that run
    /// in-process. `onnx` is `None` when the model file is only produced at build time.
    fn describe_commands(
        &self,
        _onnx: Option<&Path>,
        _build: &BTreeMap<String, Value>,
        _runtime: &BTreeMap<String, Value>,
        _bundle_dir: &Path,
        _timed: &TimedPlan,
    ) -> Result<Vec<String>, String> {
        Ok(Vec::new())
    }
    /// Whether a bundle built earlier (`run --bundle`, a tuner's saved bundle) can run here; `Err` says
    /// why not and what to do (a TensorRT engine loads only in the TensorRT version that built it).
    fn check_bundle(
        &self,
        _bundle_dir: &Path,
        _manifest: &BundleManifest,
    ) -> Result<(), BundleCheckError> {
        Ok(())
    }
    /// `Err` naming the runtimes that can run `operation` when this one cannot.
    fn supports_operation(&self, _operation: &str) -> Result<(), UnsupportedOperation> {
        Ok(())
    }
    /// The timed region its observations measure.
    fn timing_boundary(&self) -> &'static str {
        PUBLIC_PIPELINE_CALL_WALL
    }
    /// `Some` for runtimes whose own tool owns the timed loop (no [`Session`]).
    fn self_timed(&self) -> Option<&dyn SelfTimed> {
        None
    }
}

/// How this process finds the runtimes' external tools; passed down from the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeOptions {
    /// `--trtexec PATH`: the trtexec the `tensorrt` runtime drives (else it is looked up on `PATH`).
    pub trtexec: Option<PathBuf>,
    /// The bundle cache (`--bundle-cache`), where the answers of a tool's probes (`trtexec --help`,
    /// `--helpBuildRoute`) are kept for the next process; `None`: each process probes once.
    pub probe_cache: Option<PathBuf>,
}

/// Checks `settings` against a runtime's declared settings.
pub fn check_settings(
    rt: &dyn Runtime,
    settings: &BTreeMap<String, Value>,
) -> Result<(), SettingError> {
    let declared = || {
        rt.settings()
            .iter()
            .filter(|s| s.section == SettingSection::Runtime)
    };
    for key in settings.keys() {
        if !declared().any(|s| s.name == key) {
            return Err(SettingError::UnknownRuntimeSetting {
                runtime: rt.name(),
                key: key.clone(),
                known: declared().map(|s| s.name.to_string()).collect(),
            });
        }
    }
    check_declared_values(rt.name(), rt.settings(), SettingSection::Runtime, settings)
}

/// Checks the values of `settings` (all of one `section`) that `runtime` declares in `decls` against
/// each declaration's allowed values, before anything is built or loaded: a listed value exactly, an
/// open integer range `[N|N+1|...]` as a whole number from N to [`OPEN_RANGE_MOST`], a switch as true
/// or false. The declared default always passes; free-form declarations (TensorRT's build route) are
/// left to the runtime's own check.
pub fn check_declared_values(
    runtime: &'static str,
    decls: &[SettingDecl],
    section: SettingSection,
    settings: &BTreeMap<String, Value>,
) -> Result<(), SettingError> {
    for (name, value) in settings {
        let Some(decl) = decls
            .iter()
            .find(|d| d.section == section && d.name == name)
        else {
            continue;
        };
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if text == decl.default {
            continue;
        }
        let option = format!("-{name}");
        let Ok(allowed) =
            trtmc_trtexec::parse_allowed_values(&option, &format!("{option}={}", decl.allowed()))
        else {
            continue;
        };
        let key = format!("{}.{name}", section.prefix());
        match allowed {
            trtmc_trtexec::KnobValues::OpenRange(examples) => {
                let least = examples
                    .first()
                    .and_then(|v| v.parse::<i64>().ok())
                    .unwrap_or(0);
                if !value
                    .as_i64()
                    .is_some_and(|n| (least..=OPEN_RANGE_MOST).contains(&n))
                {
                    return Err(SettingError::OutOfRange {
                        runtime,
                        key,
                        value: text,
                        least,
                        most: OPEN_RANGE_MOST,
                        example: decl.default,
                    });
                }
            }
            trtmc_trtexec::KnobValues::Listed(values) => {
                if !values.contains(&text) {
                    return Err(SettingError::NotListed {
                        runtime,
                        key,
                        value: text,
                        allowed: values,
                        example: decl.default,
                    });
                }
            }
            unbounded @ trtmc_trtexec::KnobValues::Unbounded(_) => {
                if !unbounded.accepts(&text) {
                    return Err(SettingError::NotAccepted {
                        runtime,
                        key,
                        value: text,
                        expected: unbounded.render(),
                    });
                }
            }
        }
    }
    Ok(())
}

/// Decodes one section of a case's resolved settings into a runtime's settings struct (serde, with
/// `deny_unknown_fields` on the struct): once, where the runtime builds or loads, instead of map
/// lookups through it. The common build settings other than the precision (`dims.*`, `shapes.*`,
/// `kv_cache_length`: the shape binding and the operations read them) are left out of the build
/// section.
pub fn decode_settings<T: serde::de::DeserializeOwned>(
    runtime: &str,
    section: SettingSection,
    settings: &BTreeMap<String, Value>,
) -> anyhow::Result<T> {
    use trtmc_core::settings::CommonBuildSetting;
    let own = |key: &str| {
        section == SettingSection::Runtime
            || matches!(
                CommonBuildSetting::of(key),
                None | Some(CommonBuildSetting::Precision)
            )
    };
    let object = settings
        .iter()
        .filter(|(k, _)| own(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    serde_json::from_value(Value::Object(object))
        .map_err(|e| anyhow::anyhow!("runtime `{runtime}`: {}.* settings: {e}", section.prefix()))
}

/// A switch as a settings struct reads it: true or false, also written 1/0, on/off or yes/no.
pub fn switch<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    let v = <Value as serde::Deserialize>::deserialize(d)?;
    match &v {
        Value::Bool(b) => Ok(Some(*b)),
        Value::Number(n) if n.as_u64() == Some(0) => Ok(Some(false)),
        Value::Number(n) if n.as_u64() == Some(1) => Ok(Some(true)),
        Value::String(s) if matches!(s.as_str(), "true" | "on" | "yes") => Ok(Some(true)),
        Value::String(s) if matches!(s.as_str(), "false" | "off" | "no") => Ok(Some(false)),
        _ => Err(serde::de::Error::custom(format!(
            "expected true or false, got {v}"
        ))),
    }
}

/// Build settings every runtime understands (`trtmc_core::settings::CommonBuildSetting`, as a
/// message names them); each runtime may accept more.
pub const COMMON_BUILD_SETTINGS: &[&str] = trtmc_core::settings::CommonBuildSetting::NAMES;

/// Fails on a build setting that runtime `runtime` does not use, naming the ones it does.
pub fn check_build_settings(
    runtime: &str,
    settings: &BTreeMap<String, Value>,
    extra: &[&str],
) -> anyhow::Result<()> {
    let known = |key: &str| {
        trtmc_core::settings::CommonBuildSetting::of(key).is_some() || extra.contains(&key)
    };
    if let Some(key) = settings.keys().find(|k| !known(k)) {
        let names: Vec<String> = COMMON_BUILD_SETTINGS
            .iter()
            .chain(extra.iter().filter(|k| !COMMON_BUILD_SETTINGS.contains(k)))
            .map(|k| format!("build.{k}"))
            .collect();
        bail!(
            "runtime `{runtime}` does not use build.{key} (its build settings: {})",
            names.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::{runtime, runtime_names};

    fn one(key: &str, value: Value) -> BTreeMap<String, Value> {
        BTreeMap::from([(key.to_string(), value)])
    }

    /// The workload identity leaves out what any runtime declares as its recipe
    /// (`trtmc_core::settings::is_recipe`): every runtime that declares a build setting of that name
    /// must agree, and agree with the common settings core reads itself.
    #[test]
    fn runtimes_that_declare_one_build_setting_agree_whether_it_is_recipe() {
        let declared = crate::registry::declared_settings();
        for name in runtime_names() {
            for decl in runtime(name).expect("listed").settings() {
                assert!(
                    decl.section == SettingSection::Build || !decl.recipe,
                    "{name}: {}",
                    decl.name
                );
                if decl.section == SettingSection::Build {
                    assert_eq!(
                        trtmc_core::settings::is_recipe(declared, decl.name),
                        decl.recipe,
                        "{name}: {}",
                        decl.name
                    );
                }
            }
        }
        for key in [
            "precision",
            "route",
            "optimization_level",
            "max_aux_streams",
        ] {
            assert!(trtmc_core::settings::is_recipe(declared, key), "{key}");
        }
        for key in ["kv_cache_length", "dims.batch", "shapes.input"] {
            assert!(!trtmc_core::settings::is_recipe(declared, key), "{key}");
        }
    }

    /// The registry's declarations are what each runtime answers, and every default reads as its kind.
    #[test]
    fn the_registry_declares_what_each_runtime_answers() {
        let declared = crate::registry::declared_settings();
        assert_eq!(
            declared.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
            runtime_names()
        );
        for (name, settings) in declared {
            let answered = runtime(name).expect("listed").settings();
            let view = |decls: &[SettingDecl]| -> Vec<(SettingSection, &str, SettingKind, bool)> {
                decls
                    .iter()
                    .map(|d| (d.section, d.name, d.kind, d.recipe))
                    .collect()
            };
            assert_eq!(view(settings), view(answered), "{name}");
            for decl in *settings {
                if decl.kind != SettingKind::Tokens {
                    assert!(
                        decl.kind.parse(decl.default).is_ok(),
                        "{name}: {}",
                        decl.name
                    );
                }
            }
        }
    }

    #[test]
    fn every_listed_runtime_is_made_under_its_own_name() {
        assert_eq!(runtime_names(), ["tract", "onnxruntime", "tensorrt"]);
        for name in runtime_names() {
            assert_eq!(runtime(name).expect("listed").name(), name);
        }
        assert_eq!(
            runtime("mxnet").err().as_deref(),
            Some("unknown runtime `mxnet` (known: tract, onnxruntime, tensorrt)")
        );
    }

    #[test]
    fn declared_values_are_checked_by_the_declaring_runtime() {
        let tract = runtime("tract").expect("tract");
        let ort = runtime("onnxruntime").expect("onnxruntime");
        let runtime_values = |rt: &dyn Runtime, key: &str, value: Value| -> Result<(), String> {
            check_settings(rt, &one(key, value)).map_err(|e| e.to_string())
        };
        assert_eq!(runtime_values(tract.as_ref(), "threads", json!(4)), Ok(()));
        for bad in [
            json!(0),
            json!(-3),
            json!("abc"),
            json!(2.5),
            json!(OPEN_RANGE_MOST + 1),
        ] {
            let e = runtime_values(tract.as_ref(), "threads", bad.clone()).expect_err("refused");
            assert!(
                e.contains("runtime.threads=") && e.contains("from 1 to 1024"),
                "{bad}: {e}"
            );
        }
        assert_eq!(
            runtime_values(ort.as_ref(), "intra_spinning", json!(false)),
            Ok(())
        );
        let e = runtime_values(ort.as_ref(), "execution_mode", json!("fast")).expect_err("listed");
        assert!(e.contains("sequential or parallel"), "{e}");
        // Build settings: the default check is the declaration's, precision included.
        assert_eq!(
            tract
                .check_build_values(&one("precision", json!("fp16")))
                .map_err(|e| e.to_string()),
            Ok(())
        );
        let e = tract
            .check_build_values(&one("precision", json!("fp7")))
            .expect_err("fp7")
            .to_string();
        assert!(
            e.contains("build.precision=fp7") && e.contains("fp32 or fp16"),
            "{e}"
        );
        let e = ort
            .check_build_values(&one("precision", json!("fp16")))
            .expect_err("ort builds fp32 only")
            .to_string();
        assert!(e.contains("takes fp32"), "{e}");
        let e = ort
            .check_build_values(&one("optimization_level", json!("max")))
            .expect_err("level")
            .to_string();
        assert!(e.contains("disable, basic, extended, layout or all"), "{e}");
    }

    #[test]
    fn a_default_and_a_free_form_declaration_pass_the_declared_check() {
        let trt = runtime("tensorrt").expect("tensorrt");
        let decls = trt.settings();
        // `auto` is max_aux_streams' default though not in `[0|1|2|...]`; a route is free text.
        for (key, value) in [
            ("max_aux_streams", json!("auto")),
            ("max_aux_streams", json!(2)),
            ("route", json!("-kgen:tiling=1")),
            ("precision", json!("int8")),
        ] {
            assert_eq!(
                check_declared_values("tensorrt", decls, SettingSection::Build, &one(key, value))
                    .map_err(|e| e.to_string()),
                Ok(()),
                "{key}"
            );
        }
        let e = check_declared_values(
            "tensorrt",
            decls,
            SettingSection::Build,
            &one("builder_optimization_level", json!(9)),
        )
        .expect_err("level 9")
        .to_string();
        assert!(e.contains("0, 1, 2, 3, 4 or 5"), "{e}");
    }
}
