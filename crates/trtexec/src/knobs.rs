//! The Global Performance Tuner's knob database: what `trtexec --helpBuildRoute` prints
//! (`IBuilderConfig::getAllBuildRoutes()`, TensorRT 11.1+).
//!
//! ```json
//! {"tuner_version": "2.19.45",
//!  "tuner_options": [{"option": "-kgen:tiling", "allowed_values": "-kgen:tiling=[0|1|2]",
//!                     "default_value": "2", "help": "Tiling mode. ..."}, ...]}
//! ```
//!
//! `allowed_values` comes in these forms: `-k=[a|b|c]` (a closed list), `-k=[1|2|...]` (an open
//! range: the listed values and more) and `-k=int` (any 32-bit integer).

use serde::{Deserialize, Serialize};

use crate::error::{Result, TrtexecError};

/// The knob database, in the `getAllBuildRoutes` JSON shape (serializes back to it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnobDatabase {
    /// The tuner (Myelin) version, e.g. `2.19.45`.
    pub tuner_version: String,
    /// One entry per knob, in the database's order.
    pub tuner_options: Vec<Knob>,
}

/// One knob entry, exactly as in the database.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Knob {
    /// The knob name with its leading dash, e.g. `-kgen:tiling` (names may contain `:`).
    pub option: String,
    /// The allowed-values pattern, e.g. `-kgen:tiling=[0|1|2]`.
    pub allowed_values: String,
    /// The default value (may lie outside the listed values, e.g. `-peep:max` defaults to `0`).
    pub default_value: String,
    /// The description.
    pub help: String,
}

/// What `allowed_values` admits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "values")]
pub enum KnobValues {
    /// `[a|b|c]`: exactly these.
    Closed(Vec<String>),
    /// `[1|2|...]`: these and more of the same kind (unbounded).
    Open(Vec<String>),
    /// `int`: any 32-bit integer (unbounded).
    Int,
    /// A form this crate does not know yet, verbatim (treat as unbounded).
    Unrecognized(String),
}

impl KnobValues {
    /// True when the set of values is finite and fully listed.
    pub fn is_bounded(&self) -> bool {
        matches!(self, KnobValues::Closed(_))
    }
}

impl Knob {
    /// The knob name without its leading dash (as `--helpBuildRoute=NAME` also accepts).
    pub fn bare_name(&self) -> &str {
        self.option.strip_prefix('-').unwrap_or(&self.option)
    }

    /// Interprets [`Knob::allowed_values`].
    pub fn values(&self) -> KnobValues {
        let raw = self.allowed_values.trim();
        let pattern = raw
            .strip_prefix(self.option.as_str())
            .and_then(|rest| rest.strip_prefix('='))
            .or_else(|| raw.rsplit_once('=').map(|(_, p)| p))
            .unwrap_or(raw)
            .trim();
        if pattern == "int" {
            return KnobValues::Int;
        }
        let Some(inner) = pattern
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
        else {
            return KnobValues::Unrecognized(raw.to_string());
        };
        let mut values: Vec<String> = inner
            .split('|')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(String::from)
            .collect();
        if values.iter().any(|v| v == "...") {
            values.retain(|v| v != "...");
            return KnobValues::Open(values);
        }
        if values.is_empty() {
            return KnobValues::Unrecognized(raw.to_string());
        }
        KnobValues::Closed(values)
    }
}

impl KnobDatabase {
    /// The knob called `name` (with or without the leading dash).
    pub fn knob(&self, name: &str) -> Option<&Knob> {
        let bare = name.strip_prefix('-').unwrap_or(name);
        self.tuner_options.iter().find(|k| k.bare_name() == bare)
    }

    /// The default build route: every knob at its default, `-k1=v1 -k2=v2 ...`.
    pub fn default_route(&self) -> String {
        let tokens: Vec<String> = self
            .tuner_options
            .iter()
            .map(|k| format!("{}={}", k.option, k.default_value))
            .collect();
        tokens.join(" ")
    }
}

/// Parses a knob database: the bare JSON, or `trtexec --helpBuildRoute` output (log lines before
/// the JSON object are skipped, anything after it is ignored).
pub fn parse_knob_database(text: &str) -> Result<KnobDatabase> {
    let Some(start) = json_start(text) else {
        return Err(knob_error(
            "no JSON object found; expected the output of `trtexec --helpBuildRoute` (TensorRT 11.1+)"
                .into(),
        ));
    };
    let json = &text[start..];
    let mut stream = serde_json::Deserializer::from_str(json).into_iter::<KnobDatabase>();
    let database = match stream.next() {
        Some(Ok(database)) => database,
        Some(Err(e)) => {
            return Err(knob_error(format!(
                "{e}; expected {{\"tuner_version\": ..., \"tuner_options\": [{{\"option\", \"allowed_values\", \
                 \"default_value\", \"help\"}}, ...]}}"
            )));
        }
        None => return Err(knob_error("the JSON object is empty".into())),
    };
    let mut seen = std::collections::HashSet::new();
    for knob in &database.tuner_options {
        if !knob.option.starts_with('-') || knob.option.len() < 2 {
            return Err(knob_error(format!(
                "knob name {:?} does not start with '-'",
                knob.option
            )));
        }
        if knob.option.contains(char::is_whitespace) {
            return Err(knob_error(format!(
                "knob name {:?} contains whitespace",
                knob.option
            )));
        }
        if !seen.insert(knob.option.as_str()) {
            return Err(knob_error(format!(
                "knob {:?} is listed twice",
                knob.option
            )));
        }
    }
    Ok(database)
}

/// Byte offset of the first line that starts a JSON object.
fn json_start(text: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with('{') {
            return Some(offset + (line.len() - trimmed.len()));
        }
        offset += line.len();
    }
    None
}

fn knob_error(detail: String) -> TrtexecError {
    TrtexecError::Unparsable {
        what: "the build-route knob database".into(),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knob(option: &str, allowed: &str, default: &str) -> Knob {
        Knob {
            option: option.into(),
            allowed_values: allowed.into(),
            default_value: default.into(),
            help: String::new(),
        }
    }

    #[test]
    fn allowed_value_forms() {
        assert_eq!(
            knob("-kgen:tiling", "-kgen:tiling=[0|1|2]", "2").values(),
            KnobValues::Closed(vec!["0".into(), "1".into(), "2".into()])
        );
        assert_eq!(
            knob("-peep:max", "-peep:max=[1|2|...]", "0").values(),
            KnobValues::Open(vec!["1".into(), "2".into()])
        );
        assert_eq!(
            knob(
                "-cask_fusion:num_tactics",
                "-cask_fusion:num_tactics=int",
                "20"
            )
            .values(),
            KnobValues::Int
        );
        assert!(matches!(
            knob("-x", "-x=float", "0").values(),
            KnobValues::Unrecognized(_)
        ));
        assert!(matches!(
            knob("-x", "-x=[]", "0").values(),
            KnobValues::Unrecognized(_)
        ));
    }

    #[test]
    fn skips_log_lines_before_the_json() {
        let text = "&&&& RUNNING TensorRT.trtexec [TensorRT v110100] [b106] # trtexec --helpBuildRoute\n\
                    [08/27/2026-12:20:40] [I] note\n\
                    {\"tuner_version\": \"1\", \"tuner_options\": [{\"option\": \"-a\", \"allowed_values\": \"-a=[on|off]\", \"default_value\": \"on\", \"help\": \"h\"}]}\n";
        let db = parse_knob_database(text).expect("parses");
        assert_eq!(db.tuner_options.len(), 1);
        assert_eq!(db.default_route(), "-a=on");
        assert!(db.knob("a").is_some() && db.knob("-a").is_some());
    }

    #[test]
    fn rejects_duplicates_and_missing_json() {
        let dup = r#"{"tuner_version": "1", "tuner_options": [
            {"option": "-a", "allowed_values": "-a=int", "default_value": "0", "help": ""},
            {"option": "-a", "allowed_values": "-a=int", "default_value": "0", "help": ""}]}"#;
        let err = parse_knob_database(dup).expect_err("duplicate");
        assert!(err.to_string().contains("listed twice"), "{err}");
        let err = parse_knob_database("[E] no knob database").expect_err("none");
        assert!(err.to_string().contains("--helpBuildRoute"), "{err}");
    }
}
