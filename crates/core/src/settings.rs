//! Runtime settings as data: what a runtime declares it understands under `build.*` and `runtime.*`.
//!
//! Each runtime owns its declarations (`trtmc_runtime::runtime::Runtime::settings`); the type lives here,
//! below the runtimes, so that what reads declarations (case resolution, documents, the tuner) needs no
//! runtime.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::case_error::ValueError;

/// Where a setting lives in a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SettingSection {
    /// `build.<name>`: fixed when the bundle is built (part of the bundle key).
    Build,
    /// `runtime.<name>`: applied when the bundle is loaded.
    Runtime,
}

impl SettingSection {
    /// The key prefix in a case: `build` or `runtime`.
    pub fn prefix(self) -> &'static str {
        match self {
            SettingSection::Build => "build",
            SettingSection::Runtime => "runtime",
        }
    }
}

/// How a setting's value is written and which values it takes: the one declaration case resolution
/// reads a `--set`, sweep or plan value by, and the knob database's allowed values are rendered from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum SettingKind {
    /// One of the listed words.
    Listed {
        /// The accepted words.
        words: &'static [&'static str],
    },
    /// A whole number from `least` to `most`; `most: None` is an open range (`[1|2|...]`) that stops
    /// at [`OPEN_RANGE_MOST`].
    Integer {
        /// Smallest accepted value.
        least: i64,
        /// Largest accepted value; `None`: up to [`OPEN_RANGE_MOST`].
        most: Option<i64>,
    },
    /// A whole number like [`SettingKind::Integer`], or the one word (`auto`: the tool decides).
    IntegerOrWord {
        /// Smallest accepted value.
        least: i64,
        /// Largest accepted value; `None`: up to [`OPEN_RANGE_MOST`].
        most: Option<i64>,
        /// The one word accepted besides numbers (e.g. `auto`).
        word: &'static str,
    },
    /// `true` or `false` (its knob says `on`/`off`).
    Switch,
    /// Free text of whitespace-separated tokens, kept with single spaces (TensorRT's build route,
    /// checked by the runtime against its tool).
    Tokens,
}

/// The largest value an open integer range (`[1|2|...]`) of a declared setting takes: thread and
/// stream counts beyond it are typos, and a worker asked for a million threads fails after the build.
pub const OPEN_RANGE_MOST: i64 = 1024;

impl SettingKind {
    /// The largest value of an integer kind.
    pub fn most(most: Option<i64>) -> i64 {
        most.unwrap_or(OPEN_RANGE_MOST)
    }

    /// The values it takes in getAllBuildRoutes' notation after the `=`: `[a|b]`, an open integer range
    /// `[1|2|...]`, `[true|false]` for a switch, `-knob=value ...` for tokens.
    pub fn allowed(&self) -> String {
        let range = |least: i64, most: Option<i64>| match most {
            Some(most) => (least..=most).map(|n| n.to_string()).collect::<Vec<_>>(),
            None => vec![
                least.to_string(),
                (least + 1).to_string(),
                "...".to_string(),
            ],
        };
        let listed = match self {
            SettingKind::Listed { words } => words.iter().map(|w| w.to_string()).collect(),
            SettingKind::Integer { least, most }
            | SettingKind::IntegerOrWord { least, most, .. } => range(*least, *most),
            SettingKind::Switch => vec!["true".to_string(), "false".to_string()],
            SettingKind::Tokens => return "-knob=value ...".to_string(),
        };
        format!("[{}]", listed.join("|"))
    }

    /// Reads `text` as a value of this kind; `Err` says what was expected.
    pub fn parse(&self, text: &str) -> Result<Value, ValueError> {
        let t = text.trim();
        let whole = |least: i64, most: Option<i64>| {
            let most = Self::most(most);
            match t.parse::<i64>() {
                Ok(n) if (least..=most).contains(&n) => Ok(Value::from(n)),
                Ok(_) => Err(ValueError::OutOfRange {
                    text: text.to_string(),
                    least,
                    most,
                }),
                Err(_) => Err(ValueError::NotInteger {
                    text: text.to_string(),
                }),
            }
        };
        match self {
            SettingKind::Listed { words } if words.contains(&t) => Ok(Value::from(t)),
            SettingKind::Listed { words } => Err(ValueError::NotListed {
                text: text.to_string(),
                levels: words,
            }),
            SettingKind::Integer { least, most } => whole(*least, *most),
            SettingKind::IntegerOrWord { word, .. } if t == *word => Ok(Value::from(t)),
            SettingKind::IntegerOrWord { least, most, .. } => whole(*least, *most),
            SettingKind::Switch => match t {
                "true" | "false" => Ok(Value::Bool(t == "true")),
                _ => Err(ValueError::NotBool {
                    text: text.to_string(),
                }),
            },
            SettingKind::Tokens => Ok(Value::from(
                t.split_whitespace().collect::<Vec<_>>().join(" "),
            )),
        }
    }
}

/// A setting a runtime understands (`--set build.<name>=…` / `--set runtime.<name>=…`): the one
/// declaration the setting checks, the help and the tuning knobs (`tune --help-routes`) come from.
#[derive(Debug, Clone, Serialize)]
pub struct SettingDecl {
    /// Whether it is set under `build.` or `runtime.`.
    pub section: SettingSection,
    /// The setting's name after the section prefix (e.g. `threads` in `runtime.threads`).
    pub name: &'static str,
    /// One line on what it does, shown in help and in messages.
    pub help: &'static str,
    /// The runtime's own default: what applies when no case sets it.
    pub default: &'static str,
    /// How its value is written and which values it takes ([`SettingKind::allowed`] renders them).
    pub kind: SettingKind,
    /// Offered to `tune` as the knob `-<name>`.
    pub tunable: bool,
    /// A build setting that says how the bundle is built, not what it computes (precision, an
    /// optimization level, a build route): part of the bundle key, not of the workload identity
    /// ([`is_recipe`] reads it from the declarations).
    #[serde(skip)]
    pub recipe: bool,
}

impl SettingDecl {
    /// The values it takes, in getAllBuildRoutes' notation ([`SettingKind::allowed`]).
    pub fn allowed(&self) -> String {
        self.kind.allowed()
    }
}

/// The settings of every runtime compiled in, by runtime name, in the registry's order
/// (`trtmc_runtime::registry::declared_settings`): what case resolution reads `build.*` and
/// `runtime.*` values by. Core itself knows no runtime.
pub type DeclaredSettings = [(&'static str, &'static [SettingDecl])];

/// Build settings every runtime has, whatever it declares: the model's input dimensions and shapes
/// (`dims.<name>`, `shapes.<input>`, read by [`crate::case`] and bounded by [`crate::limits`]), the
/// KV-cache length the generation operations size their cache by, and the precision. They are what
/// MODEL.toml's `[build]` holds. Each runtime declares the precisions it takes (its `precision`
/// declaration), and checks them before the build, since which ones a tool takes may depend on its
/// version; here the precision is one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommonBuildSetting {
    /// `precision`: a word, part of the recipe.
    Precision,
    /// `kv_cache_length`: a dimension.
    KvCacheLength,
    /// `dims.<name>`: a dimension.
    Dim,
    /// `shapes.<input>`: a shape like `1x3x224x224`.
    Shape,
}

impl CommonBuildSetting {
    /// The common setting `key` (a `build.*` key without its prefix) names, if any.
    pub fn of(key: &str) -> Option<Self> {
        match key {
            "precision" => Some(Self::Precision),
            "kv_cache_length" => Some(Self::KvCacheLength),
            _ if key.strip_prefix("dims.").is_some_and(|n| !n.is_empty()) => Some(Self::Dim),
            _ if key.strip_prefix("shapes.").is_some_and(|n| !n.is_empty()) => Some(Self::Shape),
            _ => None,
        }
    }

    /// The keys, as a message lists them.
    pub const NAMES: &'static [&'static str] = &[
        "precision",
        "kv_cache_length",
        "dims.<dim>",
        "shapes.<input>",
    ];

    /// How the bundle is built, not what it computes.
    pub fn recipe(self) -> bool {
        self == Self::Precision
    }
}

/// The declaration of `section.name` in `runtime`'s settings, else in the first other runtime that
/// declares it (a value for another runtime is read by that runtime's declaration, and the runner
/// says that the chosen runtime does not use it).
pub fn find_decl<'d>(
    declared: &'d DeclaredSettings,
    runtime: &str,
    section: SettingSection,
    name: &str,
) -> Option<&'d SettingDecl> {
    let in_runtime = |settings: &'d [SettingDecl]| {
        settings
            .iter()
            .find(|d| d.section == section && d.name == name)
    };
    declared
        .iter()
        .filter(|(r, _)| *r == runtime)
        .chain(declared.iter().filter(|(r, _)| *r != runtime))
        .find_map(|(_, settings)| in_runtime(settings))
}

/// Whether the build setting `key` says how the bundle is built rather than what it computes: the
/// precision, and what any runtime declares as its recipe (a test in the runtime crate checks that
/// the runtimes declaring one name agree).
pub fn is_recipe(declared: &DeclaredSettings, key: &str) -> bool {
    match CommonBuildSetting::of(key) {
        Some(common) => common.recipe(),
        None => declared.iter().any(|(_, settings)| {
            settings
                .iter()
                .any(|d| d.section == SettingSection::Build && d.name == key && d.recipe)
        }),
    }
}

/// The build settings a message lists: the common ones, then each runtime's own.
pub fn known_build_settings(declared: &DeclaredSettings) -> String {
    let common: Vec<String> = CommonBuildSetting::NAMES
        .iter()
        .map(|n| format!("build.{n}"))
        .collect();
    let mut text = format!("every runtime: {}", common.join(", "));
    for (runtime, settings) in declared {
        let own: Vec<String> = settings
            .iter()
            .filter(|d| {
                d.section == SettingSection::Build && CommonBuildSetting::of(d.name).is_none()
            })
            .map(|d| format!("build.{}", d.name))
            .collect();
        if !own.is_empty() {
            text.push_str(&format!("; {runtime}: {}", own.join(", ")));
        }
    }
    text
}

/// The input shapes among a case's build values (`shapes.<input>` = `[d, …]`), by input name; a value
/// that is not a list of integers is left out (its setting check reports it).
pub fn shape_settings(build: &BTreeMap<String, Value>) -> impl Iterator<Item = (&str, Vec<i64>)> {
    build.iter().filter_map(|(k, v)| {
        let name = k.strip_prefix("shapes.")?;
        let dims = v
            .as_array()?
            .iter()
            .map(Value::as_i64)
            .collect::<Option<_>>()?;
        Some((name, dims))
    })
}

/// Declarations shaped like the runtimes' own, for core's tests (core knows no runtime).
#[cfg(test)]
pub(crate) static TEST_DECLARED: &DeclaredSettings = &[
    (
        "tract",
        &[SettingDecl {
            section: SettingSection::Runtime,
            name: "threads",
            help: "threads",
            default: "1",
            kind: SettingKind::Integer {
                least: 1,
                most: None,
            },
            tunable: true,
            recipe: false,
        }],
    ),
    (
        "onnxruntime",
        &[SettingDecl {
            section: SettingSection::Build,
            name: "optimization_level",
            help: "graph optimization level",
            default: "all",
            kind: SettingKind::Listed {
                words: &["disable", "basic", "extended", "layout", "all"],
            },
            tunable: true,
            recipe: true,
        }],
    ),
    (
        "tensorrt",
        &[
            SettingDecl {
                section: SettingSection::Build,
                name: "route",
                help: "build route",
                default: "",
                kind: SettingKind::Tokens,
                tunable: false,
                recipe: true,
            },
            SettingDecl {
                section: SettingSection::Build,
                name: "max_aux_streams",
                help: "auxiliary streams",
                default: "auto",
                kind: SettingKind::IntegerOrWord {
                    least: 0,
                    most: None,
                    word: "auto",
                },
                tunable: false,
                recipe: true,
            },
        ],
    ),
];

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_kind_reads_its_values_and_renders_them_as_a_knob_database_does() {
        let level = SettingKind::Integer {
            least: 0,
            most: Some(5),
        };
        assert_eq!(level.allowed(), "[0|1|2|3|4|5]");
        assert_eq!(level.parse(" 5 "), Ok(json!(5)));
        let e = level.parse("9").expect_err("9").to_string();
        assert!(e.contains("from 0 to 5"), "{e}");
        assert!(level.parse("x").is_err());
        let streams = SettingKind::IntegerOrWord {
            least: 0,
            most: None,
            word: "auto",
        };
        assert_eq!(streams.allowed(), "[0|1|...]");
        assert_eq!(streams.parse("auto"), Ok(json!("auto")));
        assert_eq!(streams.parse("2"), Ok(json!(2)));
        assert!(streams.parse(&(OPEN_RANGE_MOST + 1).to_string()).is_err());
        assert_eq!(SettingKind::Switch.allowed(), "[true|false]");
        assert_eq!(SettingKind::Switch.parse("false"), Ok(json!(false)));
        assert!(SettingKind::Switch.parse("maybe").is_err());
        assert_eq!(
            SettingKind::Tokens.parse(" -a=1   -b=2 "),
            Ok(json!("-a=1 -b=2"))
        );
        let listed = SettingKind::Listed {
            words: &["fp32", "fp16"],
        };
        assert_eq!(listed.allowed(), "[fp32|fp16]");
        assert!(listed.parse("fp7").is_err());
    }

    #[test]
    fn a_setting_is_read_by_the_case_runtime_first_and_recipe_comes_from_the_declarations() {
        let d = find_decl(TEST_DECLARED, "tract", SettingSection::Build, "route")
            .expect("declared by tensorrt");
        assert_eq!(d.kind, SettingKind::Tokens);
        assert!(find_decl(TEST_DECLARED, "tract", SettingSection::Runtime, "route").is_none());
        for key in [
            "precision",
            "route",
            "optimization_level",
            "max_aux_streams",
        ] {
            assert!(is_recipe(TEST_DECLARED, key), "{key}");
        }
        for key in [
            "kv_cache_length",
            "dims.batch",
            "shapes.x",
            "threads",
            "colour",
        ] {
            assert!(!is_recipe(TEST_DECLARED, key), "{key}");
        }
        assert_eq!(CommonBuildSetting::of("dims."), None);
        let known = known_build_settings(TEST_DECLARED);
        assert!(
            known.starts_with("every runtime: build.precision, build.kv_cache_length")
                && known.contains("onnxruntime: build.optimization_level"),
            "{known}"
        );
    }
}
