//! Knob databases of the runtimes, in TensorRT's `getAllBuildRoutes` JSON shape, and what each knob
//! value means for a build: a `build.*` or `runtime.*` setting (tract, onnxruntime), a Myelin knob in
//! TensorRT's `--setBuildRoute`, a trtexec build flag, or (tests only) an injected fault.
//!
//! The knob names of the CPU runtimes are the names of their settings (`-threads` is `runtime.threads`,
//! `-precision` is `build.precision`); a knob's default is the value the profile's case resolves to
//! without tuning, else the runtime's own default, so that the default route is what `run` would build.

use std::collections::BTreeMap;

use serde_json::Value;
use trtmc_core::case::{Override, ResolvedCase, Source};
use trtmc_tune::KnobSet;
use trtmc_tune::expr::Route;
use trtmc_tune::knobs::{KnobDb, KnobOption};

/// Set to `1` by the test harness; only then do the `-test:*` knobs exist and act.
pub const TEST_ENV: &str = "TRTMC_TEST";

/// True when this process runs under the test harness (`TRTMC_TEST=1`).
pub fn test_mode() -> bool {
    std::env::var(TEST_ENV).is_ok_and(|v| v == "1")
}

/// Knob name prefix of the trtexec build flags that the tensorrt runtime offers as knobs.
pub const TRTEXEC_PREFIX: &str = "-trtexec:";
/// Knob name prefix of the test-only knobs.
pub const TEST_PREFIX: &str = "-test:";

/// Faults a `-test:fault` knob injects into a route's child process (tests only).
pub const FAULTS: &[&str] = &[
    "none",
    "crash_build",
    "hang_build",
    "fail_build",
    "crash_measure",
];

/// What a knob of a session runtime sets, and how its values translate to the setting's text.
struct SettingKnob {
    knob: &'static str,
    /// `build.<name>` or `runtime.<name>`.
    key: &'static str,
    allowed: &'static str,
    /// Default when the resolved case does not set the key.
    default: &'static str,
    /// `on`/`off` knob values stand for `true`/`false`.
    boolean: bool,
    help: &'static str,
}

const TRACT: &[SettingKnob] = &[
    SettingKnob {
        knob: "-threads",
        key: "runtime.threads",
        allowed: "[1|2|...]",
        default: "1",
        boolean: false,
        help: "runtime.threads: threads of tract's matrix-multiplication executor (1 is tract's single-threaded path)",
    },
    SettingKnob {
        knob: "-precision",
        key: "build.precision",
        allowed: "[fp32|fp16]",
        default: "fp32",
        boolean: false,
        help: "build.precision: fp16 applies tract's f32_to_f16 transform (accurate to about 1e-3, but far slower on CPUs without native f16 arithmetic)",
    },
];

const ONNXRUNTIME: &[SettingKnob] = &[
    SettingKnob {
        knob: "-optimization_level",
        key: "build.optimization_level",
        allowed: "[disable|basic|extended|layout|all]",
        default: "all",
        boolean: false,
        help: "build.optimization_level: ONNX Runtime's graph optimization level, applied offline when the bundle is built",
    },
    SettingKnob {
        knob: "-intra_threads",
        key: "runtime.intra_threads",
        allowed: "[1|2|...]",
        default: "1",
        boolean: false,
        help: "runtime.intra_threads: threads of ONNX Runtime's intra-op pool (parallelism inside one operator)",
    },
    SettingKnob {
        knob: "-inter_threads",
        key: "runtime.inter_threads",
        allowed: "[1|2|...]",
        default: "1",
        boolean: false,
        help: "runtime.inter_threads: threads of the inter-op pool (used with -execution_mode=parallel)",
    },
    SettingKnob {
        knob: "-execution_mode",
        key: "runtime.execution_mode",
        allowed: "[sequential|parallel]",
        default: "sequential",
        boolean: false,
        help: "runtime.execution_mode: run one node at a time, or independent nodes at once",
    },
    SettingKnob {
        knob: "-intra_spinning",
        key: "runtime.intra_spinning",
        allowed: "[on|off]",
        default: "on",
        boolean: true,
        help: "runtime.intra_spinning: intra-op threads spin while waiting for work (on) or sleep (off)",
    },
    SettingKnob {
        knob: "-memory_pattern",
        key: "runtime.memory_pattern",
        allowed: "[on|off]",
        default: "on",
        boolean: true,
        help: "runtime.memory_pattern: plan memory from the first run's allocation pattern",
    },
    SettingKnob {
        knob: "-cpu_arena",
        key: "runtime.cpu_arena",
        allowed: "[on|off]",
        default: "on",
        boolean: true,
        help: "runtime.cpu_arena: allocate CPU tensors from ONNX Runtime's arena",
    },
];

/// trtexec build flags offered as knobs of the tensorrt runtime: `(knob, allowed, default, help)`.
pub const TRTEXEC_FLAGS: &[(&str, &str, &str, &str)] = &[
    (
        "-trtexec:builderOptimizationLevel",
        "[0|1|2|3|4|5]",
        "3",
        "trtexec --builderOptimizationLevel: how hard the builder searches for tactics (higher: longer builds, possibly faster engines)",
    ),
    (
        "-trtexec:tilingOptimizationLevel",
        "[0|1|2|3]",
        "0",
        "trtexec --tilingOptimizationLevel: how hard the builder searches for tiling strategies",
    ),
    (
        "-trtexec:maxAuxStreams",
        "[0|1|2|...]",
        "auto",
        "trtexec --maxAuxStreams: auxiliary streams the engine may use to run layers in parallel (auto: the builder decides)",
    ),
];

fn session_knobs(runtime: &str) -> Option<&'static [SettingKnob]> {
    match runtime {
        "tract" => Some(TRACT),
        "onnxruntime" => Some(ONNXRUNTIME),
        _ => None,
    }
}

/// A setting value as a knob value: `true`/`false` become `on`/`off` for boolean knobs.
fn knob_value_of(setting: &Value, boolean: bool) -> String {
    match setting {
        Value::Bool(b) if boolean => if *b { "on" } else { "off" }.to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn resolved_value<'a>(base: Option<&'a ResolvedCase>, key: &str) -> Option<&'a Value> {
    let base = base?;
    let (section, name) = key.split_once('.')?;
    match section {
        "build" => base.build.get(name).map(|s| &s.value),
        "runtime" => base.runtime_settings.get(name).map(|s| &s.value),
        _ => None,
    }
}

fn option(name: &str, allowed: &str, default: &str, help: &str) -> KnobOption {
    KnobOption {
        option: name.to_string(),
        allowed_values: format!("{name}={allowed}"),
        default_value: default.to_string(),
        help: help.to_string(),
    }
}

/// The knob database of a session runtime (tract, onnxruntime), defaults from the resolved case `base`
/// where it sets them (without a model: the runtime's defaults).
pub fn session_knob_db(
    runtime: &str,
    runtime_version: &str,
    base: Option<&ResolvedCase>,
) -> Option<KnobDb> {
    let table = session_knobs(runtime)?;
    Some(KnobDb {
        tuner_version: format!("{runtime} {runtime_version}"),
        tuner_options: table
            .iter()
            .map(|k| {
                let default = resolved_value(base, k.key)
                    .map(|v| knob_value_of(v, k.boolean))
                    .unwrap_or_else(|| k.default.to_string());
                option(k.knob, k.allowed, &default, k.help)
            })
            .collect(),
    })
}

/// The extra knobs of the tensorrt runtime: trtexec build flags.
pub fn trtexec_flag_db() -> KnobDb {
    KnobDb {
        tuner_version: "trtmc-trtexec-flags 1".into(),
        tuner_options: TRTEXEC_FLAGS
            .iter()
            .map(|(k, allowed, default, help)| option(k, allowed, default, help))
            .collect(),
    }
}

/// The test-only knobs (present when `TRTMC_TEST=1`).
pub fn test_knob_db() -> KnobDb {
    KnobDb {
        tuner_version: "trtmc-test 1".into(),
        tuner_options: vec![
            option(
                "-test:fault",
                &format!("[{}]", FAULTS.join("|")),
                "none",
                "tests only: make this route's child process crash, hang or fail while building, or crash while measuring",
            ),
            option(
                "-test:sleep_us",
                "[0|500|...]",
                "0",
                "tests only: sleep this many microseconds inside every timed call",
            ),
        ],
    }
}

/// Adds the test knobs to `set` when running under the test harness.
pub fn with_test_knobs(set: KnobSet) -> Result<KnobSet, String> {
    if !test_mode() {
        return Ok(set);
    }
    let test = KnobSet::from_db(&test_knob_db(), "test").map_err(|e| e.to_string())?;
    KnobSet::merge([set, test]).map_err(|e| e.to_string())
}

/// What one route asks of the runtime besides its build and runtime settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouteSettings {
    /// `build.*` / `runtime.*` overrides, applied as the sweep point of the profile's case.
    pub overrides: Vec<Override>,
    /// Myelin knobs for TensorRT's `--setBuildRoute` (`-k=v` tokens in route order).
    pub tensorrt_route: Vec<(String, String)>,
    /// trtexec build flags by knob name without the prefix, e.g. `builderOptimizationLevel` → `4`.
    pub trtexec_flags: BTreeMap<String, String>,
    /// Test-only fault (`-test:fault`), never `none`.
    pub fault: Option<String>,
    /// Test-only sleep inside every timed call, microseconds.
    pub sleep_us: u64,
}

/// Translates a route of `runtime`'s knobs into settings. Unknown knobs are an error naming them.
pub fn route_settings(runtime: &str, route: &Route) -> Result<RouteSettings, String> {
    let mut out = RouteSettings::default();
    for (knob, value) in &route.settings {
        if let Some(name) = knob.strip_prefix(TEST_PREFIX) {
            if !test_mode() {
                return Err(format!(
                    "knob {knob} exists only under the test harness ({TEST_ENV}=1)"
                ));
            }
            match name {
                "fault" if FAULTS.contains(&value.as_str()) => {
                    out.fault = (value != "none").then(|| value.clone())
                }
                "sleep_us" => {
                    out.sleep_us = value.parse().map_err(|_| {
                        format!("knob {knob}: '{value}' is not a number of microseconds")
                    })?
                }
                _ => return Err(format!("unknown test knob {knob}={value}")),
            }
            continue;
        }
        if let Some(table) = session_knobs(runtime) {
            let Some(k) = table.iter().find(|k| k.knob == knob) else {
                return Err(format!(
                    "knob {knob} is not a knob of runtime `{runtime}` (see tune --runtime {runtime} --help-routes)"
                ));
            };
            let text = match (k.boolean, value.as_str()) {
                (true, "on") => "true".to_string(),
                (true, "off") => "false".to_string(),
                _ => value.clone(),
            };
            out.overrides.push(Override {
                key: k.key.to_string(),
                value: text,
                source: Source::Sweep,
            });
            continue;
        }
        if runtime == "tensorrt" {
            match knob.strip_prefix(TRTEXEC_PREFIX) {
                Some(flag) => {
                    out.trtexec_flags.insert(flag.to_string(), value.clone());
                }
                None => out.tensorrt_route.push((knob.clone(), value.clone())),
            }
            continue;
        }
        return Err(format!("runtime `{runtime}` has no tunable knobs"));
    }
    Ok(out)
}

/// `--set` arguments of `trtmc-bench run` that reproduce a route's settings.
pub fn run_sets(settings: &RouteSettings) -> Vec<String> {
    settings
        .overrides
        .iter()
        .map(|o| format!("{}={}", o.key, o.value))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use trtmc_core::case::Sourced;
    use trtmc_core::case::{Measure, RESOLVED_CASE_SCHEMA};

    fn base(build: &[(&str, Value)], runtime: &[(&str, Value)]) -> ResolvedCase {
        let sourced = |v: &[(&str, Value)]| {
            v.iter()
                .map(|(k, v)| (k.to_string(), Sourced::new(v.clone(), Source::Manifest)))
                .collect()
        };
        ResolvedCase {
            schema: RESOLVED_CASE_SCHEMA.into(),
            model: "m".into(),
            case: "c".into(),
            label: "c".into(),
            task_strategy: "t".into(),
            operation: "infer".into(),
            runtime: Sourced::new("tract".into(), Source::Default),
            request: BTreeMap::new(),
            build: sourced(build),
            runtime_settings: sourced(runtime),
            measure: Measure {
                warmup: Sourced::new(1, Source::Default),
                iterations: Sourced::new(1, Source::Default),
                min_duration_s: Sourced::new(0.0, Source::Default),
                timeout_s: Sourced::new(1.0, Source::Default),
            },
            sweep_point: BTreeMap::new(),
            identity: String::new(),
        }
    }

    fn route(pairs: &[(&str, &str)]) -> Route {
        Route {
            settings: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn defaults_follow_the_resolved_case_and_databases_parse() {
        let b = base(
            &[("precision", Value::from("fp16"))],
            &[("intra_spinning", Value::Bool(false))],
        );
        let tract = session_knob_db("tract", "0.23.9", Some(&b)).expect("tract");
        let set = KnobSet::from_db(&tract, "tract").expect("valid db");
        assert_eq!(
            set.get("-precision").map(|k| k.default.as_str()),
            Some("fp16")
        );
        assert_eq!(set.get("-threads").map(|k| k.default.as_str()), Some("1"));
        let ort = session_knob_db("onnxruntime", "1.32.0", Some(&b)).expect("ort");
        let set = KnobSet::from_db(&ort, "onnxruntime").expect("valid db");
        assert_eq!(
            set.get("-intra_spinning").map(|k| k.default.as_str()),
            Some("off")
        );
        assert_eq!(set.len(), ONNXRUNTIME.len());
        assert!(session_knob_db("tensorrt", "11.1", None).is_none());
        KnobSet::from_db(&trtexec_flag_db(), "flags").expect("flags db");
        KnobSet::from_db(&test_knob_db(), "test").expect("test db");
    }

    #[test]
    fn routes_become_typed_overrides_and_unknown_knobs_are_named() {
        let s = route_settings(
            "onnxruntime",
            &route(&[("-intra_threads", "2"), ("-intra_spinning", "off")]),
        )
        .expect("settings");
        assert_eq!(
            run_sets(&s),
            vec!["runtime.intra_threads=2", "runtime.intra_spinning=false"]
        );
        assert!(s.overrides.iter().all(|o| o.source == Source::Sweep));
        let err =
            route_settings("tract", &route(&[("-intra_threads", "2")])).expect_err("not tract");
        assert!(
            err.contains("-intra_threads") && err.contains("--help-routes"),
            "{err}"
        );
        let trt = route_settings(
            "tensorrt",
            &route(&[
                ("-kgen:tiling", "1"),
                ("-trtexec:builderOptimizationLevel", "5"),
            ]),
        )
        .expect("trt");
        assert_eq!(
            trt.tensorrt_route,
            vec![("-kgen:tiling".to_string(), "1".to_string())]
        );
        assert_eq!(trt.trtexec_flags["builderOptimizationLevel"], "5");
        assert!(trt.overrides.is_empty());
    }
}
