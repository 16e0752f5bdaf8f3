//! A runtime's settings as `tune` knobs: the getAllBuildRoutes-shaped database derived from its
//! [`SettingDecl`]s, and what a route's `knob=value` token sets.
//!
//! The knob of a setting is its name with a dash (`-threads` is `runtime.threads`, `-precision` is
//! `build.precision`); its allowed values are the declaration's, a `[true|false]` switch reads
//! `[on|off]` as TensorRT's Myelin knobs do; its default is the value the case resolves to without
//! tuning, else the runtime's own default, so that the default route is what `run` would build.

use serde_json::Value;
use trtmc_core::case::ResolvedCase;
use trtmc_trtexec::{KnobDatabase, KnobOption};

use trtmc_core::settings::{SettingDecl, SettingKind, SettingSection};

use crate::error::SettingError;

/// One knob database of a runtime with the name of its source (`tract`, `trtexec`, `trtexec-flags`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnobSource {
    /// The source's name, shown with the knobs it contributes.
    pub name: String,
    /// Its knobs and their values.
    pub database: KnobDatabase,
}

/// Why a runtime has no knob database to offer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KnobError {
    /// It declares no tunable setting.
    #[error("runtime `{runtime}` has no tunable knobs in this build")]
    NoKnobs {
        /// The runtime's name.
        runtime: String,
    },
    /// Its tool could not list them (not found, failed, printed no database).
    #[error("{0}")]
    Tool(String),
}

/// What a route's `knob=value` token asks of the runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KnobSetting {
    /// A case setting: `key` is `build.<name>` or `runtime.<name>`, `value` its text (`on` → `true`).
    Setting {
        /// `build.<name>` or `runtime.<name>`.
        key: String,
        /// The value's text.
        value: String,
    },
    /// A knob of TensorRT's build route: the route's such tokens, in order, make `build.route`
    /// (`--setBuildRoute`).
    BuildRoute,
}

/// A `[true|false]` setting: its knob takes `on`/`off`.
fn is_switch(decl: &SettingDecl) -> bool {
    decl.kind == SettingKind::Switch
}

/// A setting value as a knob value (`true`/`false` become `on`/`off` for switches).
fn knob_value(decl: &SettingDecl, value: &Value) -> String {
    match value {
        Value::Bool(b) if is_switch(decl) => if *b { "on" } else { "off" }.to_string(),
        Value::String(s) if is_switch(decl) => knob_text(decl, s),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn knob_text(decl: &SettingDecl, text: &str) -> String {
    match (is_switch(decl), text) {
        (true, "true") => "on".to_string(),
        (true, "false") => "off".to_string(),
        _ => text.to_string(),
    }
}

fn resolved_value<'a>(base: Option<&'a ResolvedCase>, decl: &SettingDecl) -> Option<&'a Value> {
    let base = base?;
    let values = match decl.section {
        SettingSection::Build => &base.build,
        SettingSection::Runtime => &base.runtime_settings,
    };
    values.get(decl.name).map(|s| &s.value)
}

/// The knob database of the tunable settings in `decls`; defaults from `base` where it sets them.
pub fn declared_database(
    runtime: &str,
    version: &str,
    decls: &[SettingDecl],
    base: Option<&ResolvedCase>,
) -> Result<KnobDatabase, KnobError> {
    let tuner_options: Vec<KnobOption> = decls
        .iter()
        .filter(|d| d.tunable)
        .map(|d| {
            let allowed = if is_switch(d) {
                "[on|off]".to_string()
            } else {
                d.allowed()
            };
            let default = match resolved_value(base, d) {
                Some(value) => knob_value(d, value),
                None => knob_text(d, d.default),
            };
            KnobOption {
                option: format!("-{}", d.name),
                allowed_values: format!("-{}={allowed}", d.name),
                default_value: default,
                help: format!("{}.{}: {}", d.section.prefix(), d.name, d.help),
            }
        })
        .collect();
    if tuner_options.is_empty() {
        return Err(KnobError::NoKnobs {
            runtime: runtime.to_string(),
        });
    }
    Ok(KnobDatabase {
        tuner_version: format!("{runtime} {version}"),
        tuner_options,
    })
}

/// The setting the knob `knob` of a tunable declaration stands for, with `value` as setting text.
pub fn declared_setting(
    runtime: &'static str,
    decls: &[SettingDecl],
    knob: &str,
    value: &str,
) -> Result<KnobSetting, SettingError> {
    if !decls.iter().any(|d| d.tunable) {
        return Err(SettingError::NoKnobs { runtime });
    }
    let Some(decl) = decls
        .iter()
        .find(|d| d.tunable && knob.strip_prefix('-') == Some(d.name))
    else {
        return Err(SettingError::UnknownKnob {
            runtime,
            knob: knob.to_string(),
        });
    };
    let text = match (is_switch(decl), value) {
        (true, "on") => "true",
        (true, "off") => "false",
        _ => value,
    };
    Ok(KnobSetting::Setting {
        key: format!("{}.{}", decl.section.prefix(), decl.name),
        value: text.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use trtmc_core::case::{Measure, RESOLVED_CASE_SCHEMA, Source, Sourced};
    use trtmc_trtexec::KnobValues;

    use super::*;
    use crate::registry::runtime;
    use crate::runtime::Runtime;

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
                max_duration_s: Sourced::new(None, Source::Default),
                timeout_s: Sourced::new(1.0, Source::Default),
            },
            sweep_point: BTreeMap::new(),
            chat: None,
            identity: String::new(),
            inputs: Default::default(),
            data: None,
        }
    }

    fn only_database(rt: &dyn Runtime, base: Option<&ResolvedCase>) -> KnobDatabase {
        let mut sources = rt.knob_databases(base).expect("knobs");
        assert_eq!(sources.len(), 1, "{sources:?}");
        let source = sources.remove(0);
        assert_eq!(source.name, rt.name());
        source.database
    }

    /// `(knob, allowed values after '=', default)` of every option, in order.
    fn knobs(db: &KnobDatabase) -> Vec<(String, String, String)> {
        db.tuner_options
            .iter()
            .map(|o| {
                let (name, allowed) = o.allowed_values.split_once('=').expect("knob=values");
                assert_eq!(name, o.option);
                (
                    o.option.clone(),
                    allowed.to_string(),
                    o.default_value.clone(),
                )
            })
            .collect()
    }

    fn owned(rows: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
        rows.iter()
            .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
            .collect()
    }

    #[test]
    fn the_knobs_of_tract_and_onnxruntime_are_exactly_their_tunable_settings() {
        let tract = runtime("tract").expect("tract");
        let db = only_database(tract.as_ref(), None);
        assert_eq!(db.tuner_version, format!("tract {}", tract.version()));
        assert_eq!(
            knobs(&db),
            owned(&[
                ("-threads", "[1|2|...]", "1"),
                ("-precision", "[fp32|fp16]", "fp32"),
            ])
        );
        let ort = runtime("onnxruntime").expect("onnxruntime");
        let db = only_database(ort.as_ref(), None);
        assert_eq!(
            knobs(&db),
            owned(&[
                (
                    "-optimization_level",
                    "[disable|basic|extended|layout|all]",
                    "all"
                ),
                ("-intra_threads", "[1|2|...]", "1"),
                ("-inter_threads", "[1|2|...]", "1"),
                ("-execution_mode", "[sequential|parallel]", "sequential"),
                ("-intra_spinning", "[on|off]", "on"),
                ("-memory_pattern", "[on|off]", "on"),
                ("-cpu_arena", "[on|off]", "on"),
            ])
        );
        // Every knob is a declared setting with the same values (switches as on/off), and reads back.
        for rt in [tract.as_ref(), ort.as_ref()] {
            let db = only_database(rt, None);
            let tunable: Vec<&SettingDecl> = rt.settings().iter().filter(|d| d.tunable).collect();
            assert_eq!(tunable.len(), db.tuner_options.len());
            for (decl, option) in tunable.iter().zip(&db.tuner_options) {
                assert_eq!(option.option, format!("-{}", decl.name));
                let values = option.values().expect("declared values parse");
                assert!(values.accepts(&option.default_value), "{option:?}");
                if decl.kind == SettingKind::Switch {
                    assert_eq!(values, KnobValues::Listed(vec!["on".into(), "off".into()]));
                } else {
                    assert_eq!(values.render(), decl.allowed());
                }
                assert!(option.help.starts_with(&format!(
                    "{}.{}: ",
                    decl.section.prefix(),
                    decl.name
                )));
            }
        }
    }

    #[test]
    fn knob_defaults_follow_the_resolved_case() {
        let b = base(
            &[("precision", Value::from("fp16"))],
            &[
                ("intra_spinning", Value::Bool(false)),
                ("threads", Value::from(4)),
            ],
        );
        let tract = only_database(runtime("tract").expect("tract").as_ref(), Some(&b));
        let default = |db: &KnobDatabase, knob: &str| {
            db.knob(knob).map(|k| k.default_value.clone()).expect(knob)
        };
        assert_eq!(default(&tract, "-precision"), "fp16");
        assert_eq!(default(&tract, "-threads"), "4");
        let ort = only_database(runtime("onnxruntime").expect("ort").as_ref(), Some(&b));
        assert_eq!(default(&ort, "-intra_spinning"), "off");
        assert_eq!(default(&ort, "-memory_pattern"), "on");
    }

    #[test]
    fn route_tokens_become_settings_and_unknown_knobs_are_named() {
        let ort = runtime("onnxruntime").expect("ort");
        assert_eq!(
            ort.knob_setting("-intra_spinning", "off").ok(),
            Some(KnobSetting::Setting {
                key: "runtime.intra_spinning".into(),
                value: "false".into()
            })
        );
        assert_eq!(
            ort.knob_setting("-optimization_level", "basic").ok(),
            Some(KnobSetting::Setting {
                key: "build.optimization_level".into(),
                value: "basic".into()
            })
        );
        let tract = runtime("tract").expect("tract");
        let err = tract
            .knob_setting("-intra_threads", "2")
            .expect_err("not tract's")
            .to_string();
        assert!(
            err.contains("-intra_threads") && err.contains("--help-routes"),
            "{err}"
        );
        // A setting that is declared but not tunable is no knob.
        let trt = runtime("tensorrt").expect("tensorrt");
        assert!(declared_setting("tensorrt", trt.settings(), "-cuda_graph", "on").is_err());
        assert_eq!(
            declared_database("x", "1", trt.settings(), None),
            Err(KnobError::NoKnobs {
                runtime: "x".into()
            })
        );
    }
}
