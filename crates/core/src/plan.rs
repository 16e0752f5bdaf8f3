//! `run plan.yaml`: per-model cases, counts and overrides in one file (format: docs/plans.md).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::case::{MeasureFlags, Override, Source, SweepAxis};
use serde::Deserialize;

pub use trtmc_metadata::PLAN_SCHEMA;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PlanFile {
    #[serde(default)]
    pub schema: Option<String>,
    /// Default runtime for every entry.
    #[serde(default)]
    pub runtime: Option<String>,
    #[serde(default)]
    pub warmup: Option<u64>,
    #[serde(default)]
    pub iterations: Option<u64>,
    #[serde(default)]
    pub duration: Option<f64>,
    #[serde(default)]
    pub max_duration: Option<f64>,
    #[serde(default)]
    pub timeout: Option<f64>,
    pub models: Vec<PlanEntry>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PlanEntry {
    /// A catalog model, or (`onnx:`) an ONNX file, relative to the plan file.
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub onnx: Option<PathBuf>,
    #[serde(default)]
    pub cases: Vec<String>,
    #[serde(default)]
    pub runtime: Option<String>,
    #[serde(default)]
    pub warmup: Option<u64>,
    #[serde(default)]
    pub iterations: Option<u64>,
    #[serde(default)]
    pub duration: Option<f64>,
    #[serde(default)]
    pub max_duration: Option<f64>,
    #[serde(default)]
    pub timeout: Option<f64>,
    /// `key: value` overrides, as `--set key=value`.
    #[serde(default)]
    pub set: BTreeMap<String, serde_json::Value>,
    /// `key: [a, b]` axes, as `--sweep key=a,b`.
    #[serde(default)]
    pub sweep: BTreeMap<String, Vec<serde_json::Value>>,
}

/// One entry with everything converted to the resolver's vocabulary.
#[derive(Debug, Clone)]
pub struct PlannedModel {
    /// The catalog model's name, or the ONNX file as written in the plan.
    pub model: String,
    /// The ONNX file of an `onnx:` entry, relative to the plan's folder once loaded.
    pub onnx: Option<PathBuf>,
    /// The test cases to run; empty: the profile's default case.
    pub cases: Vec<String>,
    /// The entry's runtime, or else the plan's default runtime.
    pub runtime: Option<String>,
    /// Measurement settings: the entry's, each falling back to the plan's.
    pub measure: MeasureFlags,
    /// The entry's `set` overrides.
    pub sets: Vec<Override>,
    /// The entry's `sweep` axes.
    pub sweeps: Vec<SweepAxis>,
}

/// Why a plan file cannot be used; the message names the file, the entry and the fix.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The plan file cannot be read.
    #[error("cannot read plan {}: {source}", path.display())]
    Read {
        /// The plan file as given.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A problem inside the plan file, wrapped with the file's path.
    #[error("plan {}: {source}", path.display())]
    InFile {
        /// The plan file as given.
        path: PathBuf,
        /// What is wrong inside the file (e.g. [`PlanError::Entry`]).
        source: Box<PlanError>,
    },
    /// The file is not valid YAML or not of the plan's form (unknown or mistyped keys).
    #[error("malformed YAML: {reason}")]
    Yaml {
        /// The YAML parser's message.
        reason: String,
    },
    /// A `schema` other than [`PLAN_SCHEMA`].
    #[error("schema `{found}` is not `{}`", PLAN_SCHEMA)]
    Schema {
        /// The schema the file names.
        found: String,
    },
    /// The plan lists no model.
    #[error("`models` is empty: list at least one `- model: NAME`")]
    NoModels,
    /// An entry that names neither or both of `model` and `onnx`.
    #[error("each entry names exactly one of `model: NAME` and `onnx: PATH`")]
    EntryForm,
    /// A problem inside one entry, wrapped with the entry's model.
    #[error("model `{model}`: {source}")]
    Entry {
        /// The entry's model name or ONNX file.
        model: String,
        /// What is wrong with the entry (e.g. a `sweep` that does not read).
        source: Box<PlanError>,
    },
    /// A `set` or `sweep` value that is a table or null rather than a scalar or list.
    #[error("value {value} is not a scalar or list")]
    NotScalar {
        /// The value as JSON.
        value: String,
    },
    /// A `sweep` axis that does not read (see [`crate::case::OverrideError`]).
    #[error(transparent)]
    Sweep(#[from] crate::case::OverrideError),
}

/// Reads the plan file at `path`; `onnx:` paths of its entries are made relative to its folder.
pub fn load(path: &Path) -> Result<Vec<PlannedModel>, PlanError> {
    let text = crate::limits::read_outside_text(path, crate::limits::FileKind::Text).map_err(
        |source| PlanError::Read {
            path: path.to_path_buf(),
            source,
        },
    )?;
    let mut planned = parse(&text).map_err(|e| PlanError::InFile {
        path: path.to_path_buf(),
        source: Box::new(e),
    })?;
    let folder = path.parent().unwrap_or(Path::new("."));
    for p in &mut planned {
        if let Some(onnx) = &mut p.onnx
            && onnx.is_relative()
        {
            *onnx = folder.join(&*onnx);
        }
    }
    Ok(planned)
}

/// Parses a plan's YAML text into its entries (relative `onnx:` paths left as written).
pub fn parse(text: &str) -> Result<Vec<PlannedModel>, PlanError> {
    let plan: PlanFile = serde_saphyr::from_str(text).map_err(|e| PlanError::Yaml {
        reason: e.to_string(),
    })?;
    if let Some(s) = &plan.schema
        && s != PLAN_SCHEMA
    {
        return Err(PlanError::Schema { found: s.clone() });
    }
    if plan.models.is_empty() {
        return Err(PlanError::NoModels);
    }
    plan.models
        .into_iter()
        .map(|e| {
            let name = match (&e.model, &e.onnx) {
                (Some(m), None) => m.clone(),
                (None, Some(f)) => f.display().to_string(),
                _ => return Err(PlanError::EntryForm),
            };
            let sets = e
                .set
                .iter()
                .map(|(k, v)| {
                    Ok(Override {
                        key: k.clone(),
                        value: scalar_text(v)?,
                        source: Source::Plan,
                    })
                })
                .collect::<Result<Vec<_>, PlanError>>()
                .map_err(|err| PlanError::Entry {
                    model: name.clone(),
                    source: Box::new(err),
                })?;
            let sweeps = e
                .sweep
                .iter()
                .map(|(k, values)| {
                    let texts = values
                        .iter()
                        .map(scalar_text)
                        .collect::<Result<Vec<_>, _>>()?;
                    Ok(SweepAxis::parse(&format!("{k}={}", texts.join(",")))?)
                })
                .collect::<Result<Vec<_>, PlanError>>()
                .map_err(|err| PlanError::Entry {
                    model: name.clone(),
                    source: Box::new(err),
                })?;
            Ok(PlannedModel {
                runtime: e.runtime.or_else(|| plan.runtime.clone()),
                measure: MeasureFlags {
                    warmup: e.warmup.or(plan.warmup),
                    iterations: e.iterations.or(plan.iterations),
                    min_duration_s: e.duration.or(plan.duration),
                    max_duration_s: e.max_duration.or(plan.max_duration),
                    timeout_s: e.timeout.or(plan.timeout),
                },
                model: name,
                onnx: e.onnx,
                cases: e.cases,
                sets,
                sweeps,
            })
        })
        .collect()
}

fn scalar_text(v: &serde_json::Value) -> Result<String, PlanError> {
    Ok(match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::Bool(b) => b.to_string(),
        serde_json::Value::Array(_) => v.to_string(),
        other => {
            return Err(PlanError::NotScalar {
                value: other.to_string(),
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_entries_with_defaults_overrides_and_sweeps() {
        let plan = parse(
            "iterations: 20\nmodels:\n  - model: tiny-gpt\n    cases: [greedy]\n    warmup: 1\n    set:\n      request.max_new_tokens: 8\n    sweep:\n      request.temperature: [0.5, 1.0]\n  - model: tiny-cnn\n",
        )
        .expect("plan");
        assert_eq!(plan.len(), 2);
        assert_eq!(plan[0].measure.iterations, Some(20));
        assert_eq!(plan[0].measure.warmup, Some(1));
        assert_eq!(plan[0].sets[0].value, "8");
        assert_eq!(plan[0].sweeps[0].values, vec!["0.5", "1.0"]);
        assert_eq!(plan[1].measure.iterations, Some(20));
    }

    #[test]
    fn an_entry_names_a_model_or_an_onnx_file_relative_to_the_plan() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("plan.yaml");
        std::fs::write(&path, "models:\n  - onnx: m.onnx\n  - model: tiny-cnn\n").expect("write");
        let plan = load(&path).expect("plan");
        assert_eq!(
            plan[0].onnx.as_deref(),
            Some(dir.path().join("m.onnx").as_path())
        );
        assert_eq!(plan[1].onnx, None);
        let both = parse("models:\n  - model: a\n    onnx: b.onnx\n")
            .expect_err("both")
            .to_string();
        assert!(both.contains("exactly one"), "{both}");
        assert!(parse("models:\n  - cases: [x]\n").is_err());
    }

    #[test]
    fn malformed_and_unknown_keys_are_errors() {
        assert!(
            parse("models: [")
                .expect_err("yaml")
                .to_string()
                .contains("malformed YAML")
        );
        assert!(parse("models:\n  - model: a\n    iterationz: 3\n").is_err());
        assert!(
            parse("models: []\n")
                .expect_err("empty")
                .to_string()
                .contains("at least one")
        );
    }
}
