//! The environment file (`trtmc.perf-environment/v1`, YAML): what a machine provides for a verb's jobs
//! (bundle cache, runtime folders, the Python reference, the Slurm settings). The matrix reads all of
//! it; `tune --executor slurm` reads its `slurm:` section. Format and defaults: docs/matrix.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use trtmc_core::artifacts::matrix::{Expanded, SlurmSettings};
use trtmc_core::case::LONGEST_S;

/// The `schema:` an environment file may declare; any other is refused.
pub const ENVIRONMENT_SCHEMA: &str = "trtmc.perf-environment/v1";

/// The environment file: what a machine must provide for the suite to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    /// [`ENVIRONMENT_SCHEMA`] when given; absent is accepted.
    #[serde(default)]
    pub schema: Option<String>,
    /// The environment's name, shown in the matrix plan and on its report page.
    pub name: String,
    /// Variables the other fields may use as `${NAME}`; `required` ones must be set (or have a default).
    #[serde(default)]
    pub variables: Vec<Variable>,
    /// Executables that must be on PATH.
    #[serde(default)]
    pub executables: Vec<String>,
    /// The managed bundle cache (`--bundle-cache`).
    pub bundle_cache: String,
    /// Directories searched for prepared bundles (`--bundle-root`).
    #[serde(default)]
    pub bundle_roots: Vec<String>,
    /// Directories holding runtime libraries; each must exist. Every candidate `run` gets them as
    /// `--runtime-dir`.
    #[serde(default)]
    pub runtime_dirs: Vec<String>,
    /// The trtmc-bench the candidate rows run (e.g. `${TRTMC_PERF_WORKER:-}`); empty or absent: this
    /// program.
    #[serde(default)]
    pub worker: Option<String>,
    /// Where new run directories are created.
    pub results_root: String,
    /// Free storage required below `results_root` and `bundle_cache`, GiB.
    #[serde(default)]
    pub free_storage_gib: f64,
    /// The Python interpreter of the reference runners.
    #[serde(default = "default_python")]
    pub python: String,
    /// Directory of the reference runners (`ort_reference.py`); default: the repository's `reference/`.
    #[serde(default)]
    pub reference_dir: Option<String>,
    /// Refuse a debug build of trtmc-bench (release numbers need a release build).
    #[serde(default)]
    pub require_release_build: bool,
    /// Intra-op threads of the Python reference.
    #[serde(default = "one")]
    pub reference_threads: u64,
    /// How jobs are submitted under `--executor slurm` (partition, time limits, sbatch arguments).
    #[serde(default)]
    pub slurm: SlurmSettings,
}

fn default_python() -> String {
    "python3".into()
}
fn one() -> u64 {
    1
}

/// One entry of the environment's `variables:`: a process environment variable the other fields use
/// as `${NAME}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variable {
    /// The variable's name in the process environment.
    pub name: String,
    /// Unset (or empty) and without default, the environment is refused even if no field uses it;
    /// a variable that is not required fails only where a field uses it.
    #[serde(default)]
    pub required: bool,
    /// The value used when the variable is unset or empty; it may itself use `${NAME}`.
    #[serde(default)]
    pub default: Option<String>,
    /// What the variable is for, quoted in the error when a required one is missing.
    #[serde(default)]
    pub description: String,
}

/// Why an environment file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum EnvironmentError {
    /// The file cannot be read (missing, too large, not text).
    #[error("cannot read environment {}: {source}", path.display())]
    Read {
        /// The environment file.
        path: PathBuf,
        /// The reading failure.
        source: std::io::Error,
    },
    /// The file's content is refused; `source` says why.
    #[error("environment {}: {source}", path.display())]
    InFile {
        /// The environment file.
        path: PathBuf,
        /// What is wrong with its content.
        source: Box<EnvironmentError>,
    },
    /// Not YAML of the environment's shape.
    #[error("malformed YAML: {reason}")]
    Yaml {
        /// The YAML parser's message.
        reason: String,
    },
    /// Another `schema:`.
    #[error("schema `{found}` is not `{expected}`")]
    Schema {
        /// The file's `schema:`.
        found: String,
        /// [`ENVIRONMENT_SCHEMA`].
        expected: &'static str,
    },
    /// `free_storage_gib` outside its range.
    #[error("free_storage_gib: give GiB from 0 to {most}, got {value}")]
    FreeStorage {
        /// The value given, GiB.
        value: f64,
        /// The largest value accepted, GiB.
        most: f64,
    },
    /// `reference_threads` outside its range.
    #[error("reference_threads: give from 1 to {most}, got {value}")]
    ReferenceThreads {
        /// The value given.
        value: u64,
        /// The most threads accepted.
        most: u64,
    },
    /// A Slurm duration outside its range.
    #[error("{field}: give seconds above 0 and at most {most}, got {value}")]
    Seconds {
        /// The setting, as spelled in the file (`slurm.…`).
        field: &'static str,
        /// The value given, seconds.
        value: f64,
        /// The longest accepted, seconds.
        most: f64,
    },
}

/// Why `${NAME}` cannot be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    /// A `${` without its `}`.
    #[error("`{text}` has an unclosed `${{`")]
    Unclosed {
        /// The whole text being expanded.
        text: String,
    },
    /// A variable that is not set and has no default.
    #[error("variable `{name}` is not set (used in `{text}`): export it or give it a default")]
    Unset {
        /// The variable.
        name: String,
        /// The whole text being expanded.
        text: String,
    },
}

/// Reads and checks the environment file `path`; errors name the file.
pub fn load_environment(path: &Path) -> Result<Environment, EnvironmentError> {
    let text = trtmc_core::limits::read_outside_text(path, trtmc_core::limits::FileKind::Text)
        .map_err(|source| EnvironmentError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    parse_environment(&text).map_err(|e| EnvironmentError::InFile {
        path: path.to_path_buf(),
        source: Box::new(e),
    })
}

/// Parses and checks the text of an environment file (schema, value ranges); `${NAME}`s are left
/// for [`Environment::expand`].
pub fn parse_environment(text: &str) -> Result<Environment, EnvironmentError> {
    let env: Environment = serde_saphyr::from_str(text).map_err(|e| EnvironmentError::Yaml {
        reason: e.to_string(),
    })?;
    if let Some(s) = &env.schema
        && s != ENVIRONMENT_SCHEMA
    {
        return Err(EnvironmentError::Schema {
            found: s.clone(),
            expected: ENVIRONMENT_SCHEMA,
        });
    }
    if !(env.free_storage_gib.is_finite()
        && (0.0..=MOST_STORAGE_GIB).contains(&env.free_storage_gib))
    {
        return Err(EnvironmentError::FreeStorage {
            value: env.free_storage_gib,
            most: MOST_STORAGE_GIB,
        });
    }
    if !(1..=MOST_REFERENCE_THREADS).contains(&env.reference_threads) {
        return Err(EnvironmentError::ReferenceThreads {
            value: env.reference_threads,
            most: MOST_REFERENCE_THREADS,
        });
    }
    let slurm = &env.slurm;
    for (field, value, most) in [
        ("slurm.poll_s", slurm.poll_s, 3600.0),
        ("slurm.timeout_s", slurm.timeout_s, LONGEST_S),
    ] {
        if !(value.is_finite() && value > 0.0 && value <= most) {
            return Err(EnvironmentError::Seconds { field, value, most });
        }
    }
    Ok(env)
}

/// The most free storage an environment may require (a petabyte): more is a typo.
const MOST_STORAGE_GIB: f64 = 1_048_576.0;
/// The most intra-op threads of the Python reference.
const MOST_REFERENCE_THREADS: u64 = 1024;

/// Expands `${NAME}` and `${NAME:-default}` from `lookup`; an unset name without default is an error
/// naming it.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| ExpandError::Unclosed {
            text: text.to_string(),
        })?;
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        match lookup(name).filter(|v| !v.is_empty()) {
            Some(v) => out.push_str(&v),
            None => match default {
                Some(d) => out.push_str(&expand(d, lookup)?),
                None => {
                    return Err(ExpandError::Unset {
                        name: name.to_string(),
                        text: text.to_string(),
                    });
                }
            },
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

impl Environment {
    /// Expands every field; `repo_reference` is the default reference directory.
    pub fn expand(&self, repo_reference: &Path) -> Result<Expanded, Vec<String>> {
        let mut errors = Vec::new();
        let mut vars = BTreeMap::new();
        for v in &self.variables {
            match std::env::var(&v.name).ok().filter(|s| !s.is_empty()) {
                Some(value) => {
                    vars.insert(v.name.clone(), value);
                }
                None => match &v.default {
                    Some(d) => match expand(d, &|n| std::env::var(n).ok()) {
                        Ok(value) => {
                            vars.insert(v.name.clone(), value);
                        }
                        Err(e) => errors.push(format!("variable `{}`: {e}", v.name)),
                    },
                    None if v.required => errors.push(format!(
                        "required variable `{}` is not set{}: export {}=…",
                        v.name,
                        if v.description.is_empty() {
                            String::new()
                        } else {
                            format!(" ({})", v.description)
                        },
                        v.name
                    )),
                    None => {}
                },
            }
        }
        let lookup = |n: &str| vars.get(n).cloned().or_else(|| std::env::var(n).ok());
        let mut one = |field: &str, text: &str| -> String {
            match expand(text, &lookup) {
                Ok(v) => v,
                Err(e) => {
                    errors.push(format!("environment field `{field}`: {e}"));
                    String::new()
                }
            }
        };
        let bundle_cache = PathBuf::from(one("bundle_cache", &self.bundle_cache));
        let results_root = PathBuf::from(one("results_root", &self.results_root));
        let python = one("python", &self.python);
        let worker = self
            .worker
            .as_ref()
            .map(|w| one("worker", w))
            .filter(|w| !w.is_empty())
            .map(PathBuf::from);
        let reference_dir = match &self.reference_dir {
            Some(d) => PathBuf::from(one("reference_dir", d)),
            None => repo_reference.to_path_buf(),
        };
        let mut list = |field: &str, items: &[String]| -> Vec<String> {
            items
                .iter()
                .map(|s| one(field, s))
                .flat_map(|s| {
                    // A variable may hold a colon-separated list (TRTMC_PERF_BUNDLE_ROOTS=/a:/b).
                    s.split(':')
                        .filter(|p| !p.is_empty())
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        let bundle_roots = list("bundle_roots", &self.bundle_roots)
            .into_iter()
            .map(PathBuf::from)
            .collect();
        let runtime_dirs = list("runtime_dirs", &self.runtime_dirs)
            .into_iter()
            .map(PathBuf::from)
            .collect();
        let executables = self
            .executables
            .iter()
            .map(|e| (e.clone(), String::new()))
            .collect();
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Expanded {
            name: self.name.clone(),
            variables: vars,
            executables,
            bundle_cache,
            bundle_roots,
            runtime_dirs,
            worker,
            results_root,
            free_storage_gib: self.free_storage_gib,
            python,
            reference_dir,
            require_release_build: self.require_release_build,
            reference_threads: self.reference_threads.max(1),
            slurm: self.slurm.clone(),
        })
    }
}
