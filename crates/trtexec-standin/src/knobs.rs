//! The build-route knob database of TensorRT 11.1 (`--helpBuildRoute`) and the validation of
//! `--setBuildRoute` against it.
//!
//! The database is the recorded excerpt of a real 11.1.0 `--helpBuildRoute` (21 of 209 knobs,
//! every `allowed_values` form). Validation is written here independently of `trtmc-trtexec`'s
//! reader, so the simulator can catch that reader's mistakes rather than share them.

use serde::{Deserialize, Serialize};

/// The recorded knob database (TensorRT 11.1.0, tuner 2.19.45).
pub const KNOB_DATABASE: &str =
    include_str!("../../../tests/fixtures/trtexec-logs/trt11.1_helpBuildRoute_knobdb_EXCERPT.json");

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KnobDatabase {
    pub tuner_version: String,
    pub tuner_options: Vec<Knob>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Knob {
    pub option: String,
    pub allowed_values: String,
    pub default_value: String,
    pub help: String,
}

/// What a knob's `allowed_values` admits.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Allowed {
    /// `-k=[a|b]`
    Listed(Vec<String>),
    /// `-k=[1|2|...]`: any integer.
    OpenIntegers,
    /// `-k=int` (or another type name): any value of that type.
    Typed(String),
}

impl Knob {
    fn allowed(&self) -> Allowed {
        let rest = self
            .allowed_values
            .split_once('=')
            .map_or("", |(_, rest)| rest)
            .trim();
        match rest.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            Some(inner) => {
                let values: Vec<String> = inner
                    .split('|')
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .map(String::from)
                    .collect();
                if values.iter().any(|v| v == "...") {
                    Allowed::OpenIntegers
                } else {
                    Allowed::Listed(values)
                }
            }
            None => Allowed::Typed(rest.to_string()),
        }
    }

    fn accepts(&self, value: &str) -> bool {
        if value == self.default_value {
            return true;
        }
        match self.allowed() {
            Allowed::Listed(values) => values.iter().any(|v| v == value),
            Allowed::OpenIntegers => value.parse::<i64>().is_ok(),
            Allowed::Typed(kind) => match kind.as_str() {
                "int" | "int32_t" | "int64_t" => value.parse::<i64>().is_ok(),
                "float" | "double" => value.parse::<f64>().is_ok(),
                _ => !value.is_empty() && value != kind,
            },
        }
    }
}

impl KnobDatabase {
    /// The embedded database.
    pub fn load() -> Result<Self, crate::error::SimError> {
        serde_json::from_str(KNOB_DATABASE).map_err(|source| crate::error::SimError::Embedded {
            what: "embedded knob database",
            source,
        })
    }

    fn knob(&self, option: &str) -> Option<&Knob> {
        self.tuner_options.iter().find(|k| k.option == option)
    }

    /// The database restricted to one knob (`--helpBuildRoute=NAME`, with or without the dash).
    pub fn only(&self, name: &str) -> Option<Self> {
        let wanted = format!("-{}", name.trim().trim_start_matches('-'));
        let knob = self.knob(&wanted)?.clone();
        Some(Self {
            tuner_version: self.tuner_version.clone(),
            tuner_options: vec![knob],
        })
    }

    /// Checks a `--setBuildRoute` value: space-separated `-knob=value` tokens, every knob known,
    /// none twice, every value allowed. Returns the tokens, or trtexec-style error messages.
    pub fn validate_route(&self, route: &str) -> Result<Vec<String>, Vec<String>> {
        let mut errors = Vec::new();
        let mut tokens = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for token in route.split_whitespace() {
            let Some((knob, value)) = token.split_once('=') else {
                errors.push(format!(
                    "Invalid build route token: {token} (expected -knob=value)"
                ));
                continue;
            };
            let knob = knob.trim();
            if value.is_empty() {
                errors.push(format!(
                    "Invalid build route token: {token} (expected -knob=value)"
                ));
                continue;
            }
            let Some(entry) = self.knob(knob) else {
                errors.push(format!("Unknown knob: {knob}"));
                continue;
            };
            if value.contains(['[', ']', '|']) {
                errors.push(format!(
                    "Invalid value(s) for knob {knob}: {value} (--setBuildRoute takes one value \
                     per knob; value lists belong to --tuneBuildRoutes)"
                ));
                continue;
            }
            if !entry.accepts(value) {
                errors.push(format!(
                    "Invalid value(s) for knob {knob}: {value} (allowed: {})",
                    entry.allowed_values
                ));
                continue;
            }
            if seen.contains(&knob) {
                errors.push(format!("Knob {knob} is given twice in the build route"));
                continue;
            }
            seen.push(knob);
            tokens.push(format!("{knob}={value}"));
        }
        if tokens.is_empty() && errors.is_empty() {
            errors.push("--setBuildRoute needs at least one -knob=value token".to_string());
        }
        if errors.is_empty() {
            Ok(tokens)
        } else {
            Err(errors)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> KnobDatabase {
        KnobDatabase::load().expect("embedded database")
    }

    #[test]
    fn the_recorded_database_is_embedded() {
        let db = db();
        assert_eq!(db.tuner_version, "2.19.45");
        assert_eq!(db.tuner_options.len(), 21);
        assert!(db.only("kgen:tiling").is_some() && db.only("-kgen:tiling").is_some());
        assert!(db.only("nope").is_none());
    }

    #[test]
    fn routes_are_validated_like_trtexec() {
        let db = db();
        assert_eq!(
            db.validate_route("-conv_lowering=off   -kgen:tiling=2"),
            Ok(vec![
                "-conv_lowering=off".to_string(),
                "-kgen:tiling=2".to_string()
            ])
        );
        // Open range, unbounded int, and a default outside the listed values.
        assert!(
            db.validate_route("-peep:max=7 -cask_fusion:num_tactics=40")
                .is_ok()
        );
        assert!(db.validate_route("-peep:max=0").is_ok());
        let err = |route: &str| db.validate_route(route).expect_err(route).join(" | ");
        assert_eq!(err("-nope=1"), "Unknown knob: -nope");
        assert!(err("-kgen:tiling=7").starts_with("Invalid value(s) for knob -kgen:tiling: 7"));
        assert!(err("-peep:max=x").starts_with("Invalid value(s) for knob -peep:max"));
        assert!(err("-cask_fusion:num_tactics=int32_t").starts_with("Invalid value(s)"));
        assert!(err("-kgen:tiling=[0|1]").starts_with("Invalid value(s)"));
        assert!(err("conv_lowering").starts_with("Invalid build route token"));
        assert!(err("-kgen:tiling=").starts_with("Invalid build route token"));
        assert!(err("-kgen:tiling=1 -kgen:tiling=0").contains("twice"));
        assert!(err("   ").contains("at least one"));
        // Every error is reported, not only the first.
        assert_eq!(db.validate_route("-a=1 -b=2").expect_err("two").len(), 2);
    }
}
