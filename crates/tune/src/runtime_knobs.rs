//! The knobs `tune` searches: each runtime's own databases ([`Runtime::knob_databases`], derived from
//! its declared settings or, for tensorrt, read from trtexec), plus the test-only knobs of the harness
//! (`crate::testing`), and what a route's knob values ask of the runtime ([`route_settings`]).

use crate::KnobSet;
use crate::expr::Route;
use crate::protocol::ChildHooks;
use crate::testing::{TEST_ENV, TEST_PREFIX, route_hook, with_test_knobs};
use trtmc_core::case::{Override, ResolvedCase, Source};
use trtmc_runtime::knobs::{KnobError, KnobSetting};
use trtmc_runtime::runtime::Runtime;

/// `runtime`'s knob databases ([`Runtime::knob_databases`]) merged in their order, plus the test knobs
/// under the test harness.
pub fn knob_set(
    runtime: &dyn Runtime,
    base: Option<&ResolvedCase>,
) -> Result<KnobSet, KnobSetError> {
    let sources = runtime
        .knob_databases(base)
        .map_err(KnobSetError::Runtime)?;
    let mut parts = Vec::with_capacity(sources.len());
    for source in sources {
        let set = KnobSet::from_db(&source.database, &source.name)
            .map_err(|e| KnobSetError::Database(e.to_string()))?;
        parts.push(set);
    }
    let set = KnobSet::merge(parts).map_err(|e| KnobSetError::Database(e.to_string()))?;
    with_test_knobs(set).map_err(|e| KnobSetError::Internal(e.to_string()))
}

/// Why a runtime's knob set could not be put together.
#[derive(Debug, Clone, PartialEq)]
pub enum KnobSetError {
    /// The runtime has no knobs, or its tool could not list them.
    Runtime(KnobError),
    /// A database the runtime gave is not valid (a bad `allowed_values`, a knob defined twice).
    Database(String),
    /// The test-only knobs cannot be added to the runtime's (a bug, not the user's input).
    Internal(String),
}

impl std::fmt::Display for KnobSetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KnobSetError::Runtime(e) => e.fmt(f),
            KnobSetError::Database(m) | KnobSetError::Internal(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for KnobSetError {}

/// What one route asks of the runtime besides its build and runtime settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouteSettings {
    /// `build.*` / `runtime.*` overrides, applied as the sweep point of the profile's case.
    pub overrides: Vec<Override>,
    /// Myelin knobs for TensorRT's `--setBuildRoute` (`-k=v` tokens in route order), also in
    /// `overrides` as `build.route`.
    pub tensorrt_route: Vec<(String, String)>,
    /// The route's test-only knobs (`-test:*`, under the test harness only); `None` without them.
    pub hooks: Option<ChildHooks>,
}

/// Translates a route of `runtime`'s knobs into settings. Unknown knobs are an error naming them.
pub fn route_settings(
    runtime: &dyn Runtime,
    route: &Route,
) -> Result<RouteSettings, RouteSettingError> {
    let mut out = RouteSettings::default();
    let mut hooks = ChildHooks::default();
    for (knob, value) in &route.settings {
        if knob.starts_with(TEST_PREFIX) {
            route_hook(knob, value, &mut hooks)?;
            continue;
        }
        match runtime.knob_setting(knob, value)? {
            KnobSetting::Setting { key, value } => out.overrides.push(Override {
                key,
                value,
                source: Source::Sweep,
            }),
            KnobSetting::BuildRoute => out.tensorrt_route.push((knob.clone(), value.clone())),
        }
    }
    out.hooks = (hooks != ChildHooks::default()).then_some(hooks);
    if !out.tensorrt_route.is_empty() {
        let tokens: Vec<String> = out
            .tensorrt_route
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        out.overrides.push(Override {
            key: "build.route".into(),
            value: tokens.join(" "),
            source: Source::Sweep,
        });
    }
    Ok(out)
}

/// Why a route's knobs do not translate into settings.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RouteSettingError {
    /// A `-test:*` knob outside the test harness.
    #[error("knob {knob} exists only under the test harness ({}=1)", TEST_ENV)]
    TestOnly {
        /// The knob, with its leading dash.
        knob: String,
    },
    /// `-test:sleep_us` with a value that is not a whole number.
    #[error("knob {knob}: '{value}' is not a number of microseconds")]
    NotMicroseconds {
        /// The knob, with its leading dash.
        knob: String,
        /// The value as given.
        value: String,
    },
    /// A `-test:*` knob (or value) that the test harness does not know.
    #[error("unknown test knob {knob}={value}")]
    UnknownTestKnob {
        /// The knob, with its leading dash.
        knob: String,
        /// The value as given.
        value: String,
    },
    /// The runtime does not have the knob.
    #[error(transparent)]
    Runtime(#[from] trtmc_runtime::error::SettingError),
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
    use crate::testing::{test_knob_db, test_mode};
    use trtmc_core::case::{ResolveInput, resolve};
    use trtmc_core::catalog::Profile;
    use trtmc_runtime::registry::runtime;

    /// The case an ONNX file resolves to with these `--set` overrides, through the real resolver.
    fn base(sets: &[&str]) -> ResolvedCase {
        let dir = tempfile::tempdir().expect("tmp");
        let onnx = dir.path().join("m.onnx");
        std::fs::write(&onnx, b"not read by the resolver").expect("write");
        let profile = Profile::from_onnx_file(&onnx).expect("profile");
        let input = ResolveInput {
            sets: sets
                .iter()
                .map(|s| Override::parse(s, Source::Set).expect("set"))
                .collect(),
            ..ResolveInput::default()
        };
        resolve(
            &profile,
            &input,
            trtmc_runtime::registry::declared_settings(),
        )
        .expect("resolve")
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
        let b = base(&["build.precision=fp16", "runtime.intra_spinning=false"]);
        let tract = runtime("tract").expect("tract");
        let set = knob_set(tract.as_ref(), Some(&b)).expect("tract knobs");
        assert_eq!(
            set.get("-precision").map(|k| k.default.as_str()),
            Some("fp16")
        );
        assert_eq!(set.get("-threads").map(|k| k.default.as_str()), Some("1"));
        assert_eq!(
            set.get("-threads").map(|k| k.source.as_str()),
            Some("tract")
        );
        let ort = runtime("onnxruntime").expect("ort");
        let set = knob_set(ort.as_ref(), Some(&b)).expect("ort knobs");
        assert_eq!(
            set.get("-intra_spinning").map(|k| k.default.as_str()),
            Some("off")
        );
        let declared = ort.settings().iter().filter(|d| d.tunable).count();
        let test_knobs = if test_mode() { 2 } else { 0 };
        assert_eq!(set.len(), declared + test_knobs);
        KnobSet::from_db(&test_knob_db(), "test").expect("test db");
    }

    #[test]
    fn routes_become_typed_overrides_and_unknown_knobs_are_named() {
        let ort = runtime("onnxruntime").expect("ort");
        let s = route_settings(
            ort.as_ref(),
            &route(&[("-intra_threads", "2"), ("-intra_spinning", "off")]),
        )
        .expect("settings");
        assert_eq!(
            run_sets(&s),
            vec!["runtime.intra_threads=2", "runtime.intra_spinning=false"]
        );
        assert!(s.overrides.iter().all(|o| o.source == Source::Sweep));
        let tract = runtime("tract").expect("tract");
        let err = route_settings(tract.as_ref(), &route(&[("-intra_threads", "2")]))
            .expect_err("not tract")
            .to_string();
        assert!(
            err.contains("-intra_threads") && err.contains("--help-routes"),
            "{err}"
        );
        let tensorrt = runtime("tensorrt").expect("tensorrt");
        let trt = route_settings(
            tensorrt.as_ref(),
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
        assert_eq!(
            run_sets(&trt),
            vec![
                "build.builder_optimization_level=5",
                "build.route=-kgen:tiling=1"
            ]
        );
    }
}
