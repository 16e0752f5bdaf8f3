//! The Global Performance Tuner's knob database: what `trtexec --helpBuildRoute` prints
//! (`IBuilderConfig::getAllBuildRoutes()`, TensorRT 11.1+). The same shape serves every runtime's
//! tuning knobs, so this is the one type for it in the workspace.
//!
//! ```json
//! {"tuner_version": "2.19.45",
//!  "tuner_options": [{"option": "-kgen:tiling", "allowed_values": "-kgen:tiling=[0|1|2]",
//!                     "default_value": "2", "help": "Tiling mode. ..."}, ...]}
//! ```
//!
//! `allowed_values` comes in three forms, read by [`parse_allowed_values`]:
//!
//! * `-k=[a|b|c]`: a closed list ([`KnobValues::Listed`]);
//! * `-k=[1|2|...]`: an open integer range ([`KnobValues::OpenRange`]). TensorRT 11.1's real
//!   database has this form only with integers before a final `...` (`-peep:max=[1|2|...]`, whose
//!   default `0` is not listed), so the listed values are examples and any integer is accepted;
//!   `...` anywhere else, or after a non-integer, is refused rather than guessed at;
//! * `-k=int`: any value of that type ([`KnobValues::Unbounded`]; `int`, `int32_t`, `int64_t`,
//!   `float`, `double` are checked, other type names accept any non-empty value).

use serde::{Deserialize, Serialize};

use crate::error::{Result, TrtexecError};

/// The knob database, in the `getAllBuildRoutes` JSON shape (serializes back to it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnobDatabase {
    /// The tuner (Myelin) version, e.g. `2.19.45`.
    pub tuner_version: String,
    /// One entry per knob, in the database's order.
    pub tuner_options: Vec<KnobOption>,
}

/// One knob entry of `tuner_options`, exactly as in the database.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnobOption {
    /// The knob name with its leading dash, e.g. `-kgen:tiling` (names may contain `:`).
    pub option: String,
    /// The allowed-values pattern, e.g. `-kgen:tiling=[0|1|2]`.
    pub allowed_values: String,
    /// The default value (may lie outside the listed values, e.g. `-peep:max` defaults to `0`).
    pub default_value: String,
    /// The description (databases written by hand may leave it out).
    #[serde(default)]
    pub help: String,
}

/// The values a knob accepts, from its `allowed_values`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "values")]
pub enum KnobValues {
    /// `[a|b|c]`: exactly these.
    Listed(Vec<String>),
    /// `[1|2|...]`: an open integer range; the listed values are examples, any integer is accepted.
    OpenRange(Vec<String>),
    /// A type such as `int`: any value of it; an expression may pin it but never list values for it.
    Unbounded(String),
}

impl KnobValues {
    /// True when the set of values is finite and fully listed.
    pub fn is_bounded(&self) -> bool {
        matches!(self, KnobValues::Listed(_))
    }

    /// Whether `value` is acceptable (a knob's own default is acceptable whatever this says).
    pub fn accepts(&self, value: &str) -> bool {
        match self {
            KnobValues::Listed(values) => values.iter().any(|v| v == value),
            KnobValues::OpenRange(_) => value.parse::<i64>().is_ok(),
            KnobValues::Unbounded(kind) => match kind.as_str() {
                "int" | "int32_t" | "int64_t" => value.parse::<i64>().is_ok(),
                "float" | "double" => value.parse::<f64>().is_ok(),
                _ => !value.is_empty() && value != kind,
            },
        }
    }

    /// How the values read in an `allowed_values` string (after `=`).
    pub fn render(&self) -> String {
        match self {
            KnobValues::Listed(values) => format!("[{}]", values.join("|")),
            KnobValues::OpenRange(values) if values.is_empty() => "[...]".to_string(),
            KnobValues::OpenRange(values) => format!("[{}|...]", values.join("|")),
            KnobValues::Unbounded(kind) => kind.clone(),
        }
    }
}

/// An `allowed_values` string that is none of the three forms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "allowed_values of {knob} is '{allowed}', expected '{knob}=[a|b|...]', '{knob}=[1|2|...]' or '{knob}=int'"
)]
pub struct AllowedValuesError {
    /// The knob name.
    pub knob: String,
    /// The `allowed_values` string as given.
    pub allowed: String,
}

/// Reads the `allowed_values` string of knob `option` (which it must start with, followed by `=`).
pub fn parse_allowed_values(
    option: &str,
    allowed: &str,
) -> std::result::Result<KnobValues, AllowedValuesError> {
    let bad = || AllowedValuesError {
        knob: option.to_string(),
        allowed: allowed.to_string(),
    };
    let rest = allowed
        .trim()
        .strip_prefix(option)
        .and_then(|r| r.strip_prefix('='))
        .ok_or_else(bad)?;
    let Some(inner) = rest.strip_prefix('[') else {
        let kind = rest.trim();
        if kind.is_empty() || kind.contains(['[', ']', '|', ' ']) {
            return Err(bad());
        }
        return Ok(KnobValues::Unbounded(kind.to_string()));
    };
    let inner = inner.strip_suffix(']').ok_or_else(bad)?;
    let mut values: Vec<String> = inner
        .split('|')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(String::from)
        .collect();
    if values.last().map(String::as_str) == Some("...") {
        values.pop();
        if values.iter().any(|v| v.parse::<i64>().is_err()) {
            return Err(bad());
        }
        return Ok(KnobValues::OpenRange(values));
    }
    if values.is_empty() || values.iter().any(|v| v == "...") {
        return Err(bad());
    }
    Ok(KnobValues::Listed(values))
}

impl KnobOption {
    /// The knob name without its leading dash (as `--helpBuildRoute=NAME` also accepts).
    pub fn bare_name(&self) -> &str {
        self.option.strip_prefix('-').unwrap_or(&self.option)
    }

    /// Interprets [`KnobOption::allowed_values`].
    pub fn values(&self) -> std::result::Result<KnobValues, AllowedValuesError> {
        parse_allowed_values(self.option.trim(), &self.allowed_values)
    }
}

impl KnobDatabase {
    /// The knob called `name` (with or without the leading dash).
    pub fn knob(&self, name: &str) -> Option<&KnobOption> {
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

    fn knob(option: &str, allowed: &str, default: &str) -> KnobOption {
        KnobOption {
            option: option.into(),
            allowed_values: allowed.into(),
            default_value: default.into(),
            help: String::new(),
        }
    }

    fn values(allowed: &str) -> std::result::Result<KnobValues, AllowedValuesError> {
        let option = allowed.split_once('=').map_or(allowed, |(name, _)| name);
        parse_allowed_values(option, allowed)
    }

    #[test]
    fn allowed_value_forms() {
        assert_eq!(
            knob("-kgen:tiling", "-kgen:tiling=[0|1|2]", "2").values(),
            Ok(KnobValues::Listed(vec!["0".into(), "1".into(), "2".into()]))
        );
        assert_eq!(
            knob("-peep:max", "-peep:max=[1|2|...]", "0").values(),
            Ok(KnobValues::OpenRange(vec!["1".into(), "2".into()]))
        );
        assert_eq!(
            knob(
                "-cask_fusion:num_tactics",
                "-cask_fusion:num_tactics=int",
                "20"
            )
            .values(),
            Ok(KnobValues::Unbounded("int".into()))
        );
        // Another type name is unbounded too, checked as that type.
        let float = values("-x=float").expect("a type");
        assert_eq!(float, KnobValues::Unbounded("float".into()));
        assert!(float.accepts("0.5") && !float.accepts("x") && !float.is_bounded());
        // Spaces around entries and empty entries do not count.
        assert_eq!(
            values("-a=[ on | | off ]"),
            Ok(KnobValues::Listed(vec!["on".into(), "off".into()]))
        );
    }

    /// `...` as TensorRT 11.1's database writes it (`-peep:max=[1|2|...]`, default `0`): integers are
    /// examples of an open range; anything else with `...` is refused, never read as a list.
    #[test]
    fn ellipsis_ends_an_integer_range_and_nothing_else() {
        let peep = values("-peep:max=[1|2|...]").expect("open range");
        assert!(!peep.is_bounded());
        for accepted in ["0", "1", "2", "17", "-1"] {
            assert!(peep.accepts(accepted), "{accepted}");
        }
        for refused in ["x", "1.5", "", "..."] {
            assert!(!peep.accepts(refused), "{refused:?}");
        }
        assert_eq!(peep.render(), "[1|2|...]");
        assert_eq!(values("-a=[...]"), Ok(KnobValues::OpenRange(Vec::new())));
        for refused in ["-a=[x|...]", "-a=[...|1]", "-a=[1|...|2]", "-a=[on|...]"] {
            let err = values(refused).expect_err(refused);
            assert_eq!(err.knob, "-a");
            assert!(err.to_string().contains(refused), "{err}");
        }
    }

    #[test]
    fn malformed_allowed_values_name_the_knob() {
        for refused in [
            "-a=[]",
            "-a=[on|off",
            "-a=",
            "-a=[|]",
            "-a=in t",
            "-a=[on]x",
        ] {
            assert!(values(refused).is_err(), "{refused} should be refused");
        }
        // The pattern must name the knob it belongs to.
        let err = parse_allowed_values("-a", "-b=[on|off]").expect_err("other knob");
        assert_eq!(
            err.to_string(),
            "allowed_values of -a is '-b=[on|off]', expected '-a=[a|b|...]', '-a=[1|2|...]' or '-a=int'"
        );
    }

    #[test]
    fn rendering_reads_back_the_same_values() {
        for allowed in ["-k=[on|off]", "-k=[1|2|...]", "-k=int", "-k=[...]"] {
            let parsed = values(allowed).expect(allowed);
            assert_eq!(format!("-k={}", parsed.render()), allowed);
        }
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
