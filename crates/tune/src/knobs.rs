//! Knob databases in the shape of TensorRT's `IBuilderConfig::getAllBuildRoutes()` JSON, validated
//! and merged for tuning. The document type and its `allowed_values` parser are `trtmc_trtexec`'s
//! ([`KnobDatabase`], [`KnobValues`]): one reading of the format for trtexec's own database and for
//! the databases the other runtimes derive from their declared settings.

use std::collections::BTreeMap;
use std::fmt::Write as _;

pub use trtmc_trtexec::{KnobDatabase, KnobOption, KnobValues};

/// A parsed knob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Knob {
    /// The option name with its leading dash, e.g. `-kgen:tiling`.
    pub name: String,
    /// The values it accepts: a closed list, an open integer range, or an unbounded type.
    pub domain: KnobValues,
    /// The value a route that does not mention the knob gets.
    pub default: String,
    /// One-line description, as `--help-routes` prints it.
    pub help: String,
    /// Which database the knob came from (a runtime's own knobs, extra build-flag knobs, ...).
    pub source: String,
}

/// A problem in a knob database.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KnobDbError {
    /// The document does not parse as a getAllBuildRoutes database.
    #[error(
        "knob database '{source_name}' is not valid JSON in the getAllBuildRoutes shape: {message}"
    )]
    Json {
        /// The database as errors name it (a path, a runtime).
        source_name: String,
        /// The JSON parser's message.
        message: String,
    },
    /// An option entry with an empty `option` name.
    #[error(
        "knob database '{source_name}': an option has an empty name; every entry needs \"option\": \"-name\""
    )]
    EmptyName {
        /// The database as errors name it (a path, a runtime).
        source_name: String,
    },
    /// An option's `allowed_values` in none of the three accepted forms.
    #[error(
        "knob database '{source_name}': allowed_values of {knob} is '{allowed}', expected '{knob}=[a|b|...]', \
         '{knob}=[1|2|...]' or '{knob}=int'"
    )]
    BadAllowedValues {
        /// The database as errors name it (a path, a runtime).
        source_name: String,
        /// The knob whose entry is malformed.
        knob: String,
        /// Its `allowed_values` as written.
        allowed: String,
    },
    /// Merged databases define the same knob.
    #[error(
        "knob {knob} is defined by both '{first}' and '{second}'; a knob may come from one database only"
    )]
    Duplicate {
        /// The knob defined twice.
        knob: String,
        /// The database that defined it first.
        first: String,
        /// The database that defined it again.
        second: String,
    },
    /// `--help-routes=KNOB` names no knob.
    #[error("no knob named '{query}'{}", did_you_mean(suggestion.as_deref()))]
    UnknownFilter {
        /// The name as given.
        query: String,
        /// The closest knob name, if one is close.
        suggestion: Option<String>,
    },
}

/// ` (did you mean X?)` when there is a suggestion.
pub(crate) fn did_you_mean(suggestion: Option<&str>) -> String {
    suggestion
        .map(|s| format!(" (did you mean {s}?)"))
        .unwrap_or_default()
}

/// A validated knob database, possibly merged from several sources.
#[derive(Debug, Clone, PartialEq)]
pub struct KnobSet {
    /// `tuner_version` of each source, in merge order: `(source, version)`.
    pub sources: Vec<(String, String)>,
    knobs: Vec<Knob>,
    index: BTreeMap<String, usize>,
}

impl KnobSet {
    /// Parse a getAllBuildRoutes JSON document; `source_name` names it in errors (a path, a runtime).
    pub fn from_json(text: &str, source_name: &str) -> Result<Self, KnobDbError> {
        let db: KnobDatabase = serde_json::from_str(text).map_err(|e| KnobDbError::Json {
            source_name: source_name.to_string(),
            message: e.to_string(),
        })?;
        Self::from_db(&db, source_name)
    }

    /// Validate a raw database.
    pub fn from_db(db: &KnobDatabase, source_name: &str) -> Result<Self, KnobDbError> {
        let mut set = KnobSet {
            sources: vec![(source_name.to_string(), db.tuner_version.clone())],
            knobs: Vec::new(),
            index: BTreeMap::new(),
        };
        for option in &db.tuner_options {
            let knob = parse_option(option, source_name)?;
            set.push(knob)?;
        }
        Ok(set)
    }

    /// Merge databases in order (e.g. a runtime's knobs, then extra build-flag knobs). A knob defined twice
    /// is an error naming both sources.
    pub fn merge(parts: impl IntoIterator<Item = KnobSet>) -> Result<Self, KnobDbError> {
        let mut merged = KnobSet {
            sources: Vec::new(),
            knobs: Vec::new(),
            index: BTreeMap::new(),
        };
        for part in parts {
            merged.sources.extend(part.sources);
            for knob in part.knobs {
                merged.push(knob)?;
            }
        }
        Ok(merged)
    }

    fn push(&mut self, knob: Knob) -> Result<(), KnobDbError> {
        if let Some(&i) = self.index.get(&knob.name) {
            return Err(KnobDbError::Duplicate {
                knob: knob.name,
                first: self.knobs[i].source.clone(),
                second: knob.source,
            });
        }
        self.index.insert(knob.name.clone(), self.knobs.len());
        self.knobs.push(knob);
        Ok(())
    }

    /// The tuner version: one source's version, or `source=version` pairs joined by `+` after a merge.
    pub fn tuner_version(&self) -> String {
        match self.sources.as_slice() {
            [(_, version)] => version.clone(),
            many => many
                .iter()
                .map(|(s, v)| format!("{s}={v}"))
                .collect::<Vec<_>>()
                .join("+"),
        }
    }

    /// Every knob, in database (and merge) order.
    pub fn knobs(&self) -> &[Knob] {
        &self.knobs
    }

    /// The number of knobs.
    pub fn len(&self) -> usize {
        self.knobs.len()
    }

    /// Whether the set has no knob at all.
    pub fn is_empty(&self) -> bool {
        self.knobs.is_empty()
    }

    /// A knob by exact name (with its leading dash).
    pub fn get(&self, name: &str) -> Option<&Knob> {
        self.index.get(name).map(|&i| &self.knobs[i])
    }

    /// A knob by name with or without the leading dash (as `--helpBuildRoute=KNOB` accepts).
    pub fn find(&self, name: &str) -> Option<&Knob> {
        let name = name.trim();
        self.get(name)
            .or_else(|| self.get(&format!("-{}", name.trim_start_matches('-'))))
    }

    /// The closest knob name to a misspelt one, if any is close enough to be a plausible typo.
    pub fn suggest(&self, name: &str) -> Option<String> {
        let wanted = format!("-{}", name.trim().trim_start_matches('-'));
        trtmc_core::text::closest(&wanted, self.knobs.iter().map(|k| k.name.as_str()))
            .map(str::to_string)
    }

    /// Every knob at its default, space-separated: the default build route.
    pub fn default_route(&self) -> String {
        self.knobs
            .iter()
            .map(|k| format!("{}={}", k.name, k.default))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Back to the getAllBuildRoutes shape (after a merge: the merged document).
    pub fn to_db(&self) -> KnobDatabase {
        KnobDatabase {
            tuner_version: self.tuner_version(),
            tuner_options: self.knobs.iter().map(to_option).collect(),
        }
    }

    /// The knobs a `--help-routes[=KNOB]` filter selects: all, or the one named (dash optional).
    pub fn select(&self, filter: Option<&str>) -> Result<Vec<&Knob>, KnobDbError> {
        match filter.map(str::trim).filter(|f| !f.is_empty()) {
            None => Ok(self.knobs.iter().collect()),
            Some(query) => match self.find(query) {
                Some(k) => Ok(vec![k]),
                None => Err(KnobDbError::UnknownFilter {
                    query: query.to_string(),
                    suggestion: self.suggest(query),
                }),
            },
        }
    }

    /// `--help-routes[=KNOB]` as JSON in the getAllBuildRoutes shape (pretty-printed).
    pub fn help_json(&self, filter: Option<&str>) -> Result<String, KnobDbError> {
        let selected = self.select(filter)?;
        let db = KnobDatabase {
            tuner_version: self.tuner_version(),
            tuner_options: selected.into_iter().map(to_option).collect(),
        };
        serde_json::to_string_pretty(&db).map_err(|e| KnobDbError::Json {
            source_name: "help output".into(),
            message: e.to_string(),
        })
    }

    /// `--help-routes[=KNOB]` as text: one block per knob with its values, default and help.
    pub fn help_text(&self, filter: Option<&str>) -> Result<String, KnobDbError> {
        let selected = self.select(filter)?;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "tuner version {} ({} of {} knobs)",
            self.tuner_version(),
            selected.len(),
            self.len()
        );
        for k in selected {
            let _ = writeln!(
                out,
                "{}={}  (default: {}; from {})",
                k.name,
                k.domain.render(),
                k.default,
                k.source
            );
            if !k.help.is_empty() {
                let _ = writeln!(out, "    {}", k.help);
            }
        }
        Ok(out)
    }
}

fn to_option(k: &Knob) -> KnobOption {
    KnobOption {
        option: k.name.clone(),
        allowed_values: format!("{}={}", k.name, k.domain.render()),
        default_value: k.default.clone(),
        help: k.help.clone(),
    }
}

fn parse_option(option: &KnobOption, source_name: &str) -> Result<Knob, KnobDbError> {
    let name = option.option.trim().to_string();
    if name.is_empty() {
        return Err(KnobDbError::EmptyName {
            source_name: source_name.to_string(),
        });
    }
    let domain =
        trtmc_trtexec::parse_allowed_values(&name, &option.allowed_values).map_err(|e| {
            KnobDbError::BadAllowedValues {
                source_name: source_name.to_string(),
                knob: e.knob,
                allowed: e.allowed,
            }
        })?;
    Ok(Knob {
        name,
        domain,
        default: option.default_value.trim().to_string(),
        help: option.help.clone(),
        source: source_name.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!(
        "../../../tests/fixtures/trtexec-logs/trt11.1_helpBuildRoute_knobdb_EXCERPT.json"
    );

    fn fixture() -> KnobSet {
        KnobSet::from_json(FIXTURE, "trtexec --helpBuildRoute").expect("fixture parses")
    }

    #[test]
    fn parses_every_allowed_values_form_of_the_real_database() {
        let set = fixture();
        assert_eq!(set.len(), 21);
        assert_eq!(set.tuner_version(), "2.19.45");
        let lowering = set.get("-conv_lowering").expect("knob");
        assert_eq!(
            lowering.domain,
            KnobValues::Listed(vec!["on".into(), "off".into()])
        );
        assert_eq!(lowering.default, "on");
        let tiling = set.get("-kgen:tiling").expect("knob");
        assert_eq!(
            tiling.domain,
            KnobValues::Listed(vec!["0".into(), "1".into(), "2".into()])
        );
        let peep = set.get("-peep:max").expect("knob");
        assert_eq!(
            peep.domain,
            KnobValues::OpenRange(vec!["1".into(), "2".into()])
        );
        assert_eq!(peep.default, "0");
        assert!(peep.domain.accepts("17") && !peep.domain.accepts("x"));
        let tactics = set.get("-cask_fusion:num_tactics").expect("knob");
        assert_eq!(tactics.domain, KnobValues::Unbounded("int".into()));
        assert!(tactics.domain.accepts("10") && !tactics.domain.accepts("int"));
    }

    #[test]
    fn json_round_trips_the_fixture() {
        let set = fixture();
        let original: KnobDatabase = serde_json::from_str(FIXTURE).expect("raw");
        assert_eq!(set.to_db(), original);
    }

    #[test]
    fn help_filter_accepts_the_name_with_or_without_dash() {
        let set = fixture();
        for query in ["kgen:tiling", "-kgen:tiling"] {
            let json = set.help_json(Some(query)).expect("known knob");
            let db: KnobDatabase = serde_json::from_str(&json).expect("json");
            assert_eq!(db.tuner_options.len(), 1);
            assert_eq!(db.tuner_options[0].option, "-kgen:tiling");
        }
        let all: KnobDatabase =
            serde_json::from_str(&set.help_json(None).expect("all")).expect("json");
        assert_eq!(all.tuner_options.len(), 21);
        let text = set.help_text(Some("peep:max")).expect("text");
        assert!(text.contains("-peep:max=[1|2|...]  (default: 0;"), "{text}");
        assert!(text.contains("Control peephole maximum"), "{text}");
        let err = set.help_text(Some("kgen:tilling")).expect_err("typo");
        assert_eq!(
            err.to_string(),
            "no knob named 'kgen:tilling' (did you mean -kgen:tiling?)"
        );
    }

    #[test]
    fn merge_keeps_order_and_refuses_a_knob_defined_twice() {
        let extra = KnobSet::from_json(
            r#"{"tuner_version":"1","tuner_options":[{"option":"-builder_optimization_level",
                "allowed_values":"-builder_optimization_level=[0|1|2|3|4|5]","default_value":"3","help":"h"}]}"#,
            "trtexec build flags",
        )
        .expect("extra");
        let merged = KnobSet::merge([fixture(), extra.clone()]).expect("merge");
        assert_eq!(merged.len(), 22);
        assert_eq!(merged.knobs()[21].name, "-builder_optimization_level");
        assert_eq!(merged.knobs()[21].source, "trtexec build flags");
        assert_eq!(
            merged.tuner_version(),
            "trtexec --helpBuildRoute=2.19.45+trtexec build flags=1"
        );
        let err = KnobSet::merge([extra.clone(), extra]).expect_err("duplicate");
        assert!(
            err.to_string()
                .contains("defined by both 'trtexec build flags' and 'trtexec build flags'")
        );
    }

    #[test]
    fn malformed_databases_are_refused_with_the_knob_named() {
        let bad = r#"{"tuner_version":"1","tuner_options":[{"option":"-a","allowed_values":"-b=[on|off]","default_value":"on"}]}"#;
        let err = KnobSet::from_json(bad, "db.json").expect_err("mismatched name");
        assert!(
            err.to_string()
                .contains("allowed_values of -a is '-b=[on|off]'"),
            "{err}"
        );
        let err = KnobSet::from_json("{", "db.json").expect_err("json");
        assert!(
            err.to_string()
                .starts_with("knob database 'db.json' is not valid JSON"),
            "{err}"
        );
        for allowed in ["-a=[]", "-a=[on|off", "-a=", "-a=[x|...]"] {
            let text = format!(
                r#"{{"tuner_version":"1","tuner_options":[{{"option":"-a","allowed_values":"{allowed}","default_value":"on"}}]}}"#
            );
            assert!(
                KnobSet::from_json(&text, "db").is_err(),
                "{allowed} should be refused"
            );
        }
    }
}
