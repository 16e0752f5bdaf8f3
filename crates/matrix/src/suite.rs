//! The suite file (`trtmc.perf-suite/v1`) and the environment file (`trtmc.perf-environment/v1`), both
//! YAML. Format and defaults: docs/matrix.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use trtmc_core::case::{LONGEST_S, MOST_CALLS};

/// Recorded in results.json, so typed with the matrix documents in core.
pub use trtmc_core::artifacts::matrix::{Expanded, SlurmSettings, Thresholds};
/// The environment file is the executor's (tune's `--executor slurm` reads it too).
pub use trtmc_executor::environment::{
    ENVIRONMENT_SCHEMA, Environment, Variable, expand, load_environment, parse_environment,
};

/// The `schema:` a suite file may declare; any other is refused.
pub const SUITE_SCHEMA: &str = "trtmc.perf-suite/v1";

/// Reference backend that runs `reference/ort_reference.py` (ONNX Runtime's Python loop).
pub const ORT_PYTHON: &str = "onnxruntime-python";
/// Prefix of a reference backend that is a trtmc runtime itself (A/A comparisons): `trtmc:tract`.
pub const TRTMC_PREFIX: &str = "trtmc:";

/// The suite file: the rows of a performance matrix and how they are judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    /// [`SUITE_SCHEMA`] when given; absent is accepted.
    #[serde(default)]
    pub schema: Option<String>,
    /// The suite's name (the JUnit class name, the report's title).
    pub name: String,
    /// The bounds that turn a row's ratio into its light.
    #[serde(default)]
    pub thresholds: Thresholds,
    /// Counts for every row unless the row sets its own.
    #[serde(default)]
    pub measure: MeasureSpec,
    /// The comparisons to run, in order.
    pub rows: Vec<Row>,
    /// Catalog profiles the suite leaves out on purpose, each with its reason (coverage accepts them).
    #[serde(default)]
    pub excluded_profiles: Vec<Exclusion>,
    /// Rule-based exclusion: every profile whose operation is listed (e.g. an operation no reference
    /// backend implements), with the reason.
    #[serde(default)]
    pub excluded_operations: Vec<OperationExclusion>,
}

/// One entry of `excluded_operations`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperationExclusion {
    /// The operation whose profiles are left out.
    pub operation: String,
    /// Why, shown by `matrix check`.
    pub reason: String,
}

/// How much a row times; a row's own values win over the suite's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasureSpec {
    /// Untimed calls per side. Default: the candidate's test case.
    #[serde(default)]
    pub warmup: Option<u64>,
    /// Timed calls per side in total. Default: the candidate's test case.
    #[serde(default)]
    pub iterations: Option<u64>,
    /// Candidate and reference alternate this many times (C R C R …), each round timing
    /// `iterations / rounds` calls; the samples are pooled. Load that changes during a row then hits
    /// both sides alike. Default 1.
    #[serde(default)]
    pub rounds: Option<u64>,
    /// Budget: a row whose light is not decided after `rounds` keeps adding rounds, up to this many
    /// in all (docs/matrix.md#sequential-rounds). Default: `rounds` (no rounds added).
    #[serde(default)]
    pub max_rounds: Option<u64>,
    /// Budget: no further block of rounds is started that would take the row's rounds past this many
    /// seconds (estimated from the rounds so far). Default: no time budget.
    #[serde(default)]
    pub max_seconds: Option<f64>,
}

/// One comparison: a model's test case on a candidate runtime against a reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// `<family>.<operation>` of the model profile, exactly.
    pub entry: String,
    /// Model profile name in the catalog.
    pub model: String,
    /// Test case of the profile.
    pub testcase: String,
    /// The side being judged.
    pub candidate: Candidate,
    /// The side it is compared with.
    pub reference: Reference,
    /// What the reference side is held to (its precision).
    #[serde(default)]
    pub baseline: Baseline,
    /// This row's counts, over the suite's.
    #[serde(default)]
    pub measure: MeasureSpec,
    /// Data both sides feed instead of synthesized inputs: anything `run --inputs` reads (an .npz, a
    /// folder of NAME.npy or of `input_N.pb`, …), relative to the suite file. The Python reference
    /// feeds the first data set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<String>,
    /// Expected outputs of `inputs` (`run --check-outputs`): each side's outputs are checked, and a
    /// mismatch fails the row naming the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_outputs: Option<String>,
    /// Tolerances of the output check (`run --atol`/`--rtol`; default Polygraphy's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atol: Option<f64>,
    /// See `atol`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtol: Option<f64>,
}

/// A row's candidate side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    /// The trtmc runtime it runs on.
    pub runtime: String,
    /// `--set` overrides of the candidate (`request.batch_size: 2`, `runtime.threads: 1`).
    #[serde(default)]
    pub set: BTreeMap<String, Value>,
    /// The trtexec a `tensorrt` candidate drives (`--trtexec`); absent: the one on `PATH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trtexec: Option<std::path::PathBuf>,
}

/// A row's reference side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// `onnxruntime-python`, or `trtmc:<runtime>` for an A/A or trtmc-vs-trtmc comparison.
    pub backend: String,
    /// Overrides of the reference side's workload (normally none: both sides run the same case).
    #[serde(default)]
    pub set: BTreeMap<String, Value>,
    /// Runner options passed to the Python reference (`graph_optimization_level: all`).
    #[serde(default)]
    pub options: BTreeMap<String, Value>,
    /// The trtexec a `trtmc:tensorrt` reference drives, e.g. another TensorRT install; absent: the
    /// one on `PATH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trtexec: Option<std::path::PathBuf>,
}

/// A row's `baseline:`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// The reference's precision; default: the test case's or manifest's `reference_precision`,
    /// then the model's precision.
    #[serde(default)]
    pub precision: Option<String>,
}

/// One entry of `excluded_profiles`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exclusion {
    /// The catalog profile left out.
    pub profile: String,
    /// Why, shown by `matrix check`.
    pub reason: String,
}

impl Row {
    /// The row's unique id: entry, model, testcase and candidate runtime.
    pub fn id(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.entry, self.model, self.testcase, self.candidate.runtime
        )
    }
    /// Untimed calls per side: the row's, else the suite's; `None`: the test case decides.
    pub fn warmup(&self, suite: &Suite) -> Option<u64> {
        self.measure.warmup.or(suite.measure.warmup)
    }
    /// Timed calls per side in total: the row's, else the suite's; `None`: the test case decides.
    pub fn iterations(&self, suite: &Suite) -> Option<u64> {
        self.measure.iterations.or(suite.measure.iterations)
    }
    /// Candidate/reference alternations: the row's, else the suite's, else 1.
    pub fn rounds(&self, suite: &Suite) -> u64 {
        self.measure.rounds.or(suite.measure.rounds).unwrap_or(1)
    }
    /// The most rounds the row may run: at least its first block of `rounds`.
    pub fn max_rounds(&self, suite: &Suite) -> u64 {
        self.measure
            .max_rounds
            .or(suite.measure.max_rounds)
            .unwrap_or(0)
            .max(self.rounds(suite))
    }
    /// The row's time budget for added rounds, seconds: the row's, else the suite's; `None`: no budget.
    pub fn max_seconds(&self, suite: &Suite) -> Option<f64> {
        self.measure.max_seconds.or(suite.measure.max_seconds)
    }
}

/// Why a suite file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// The file cannot be read (missing, too large, not text).
    #[error("cannot read suite {}: {source}", path.display())]
    Read {
        /// The suite file.
        path: PathBuf,
        /// The reading failure.
        source: std::io::Error,
    },
    /// The file's content is refused; `source` says why.
    #[error("suite {}: {source}", path.display())]
    InFile {
        /// The suite file.
        path: PathBuf,
        /// What is wrong with its content.
        source: Box<SuiteError>,
    },
    /// Not YAML of the suite's shape.
    #[error("malformed YAML: {reason}")]
    Yaml {
        /// The YAML parser's message.
        reason: String,
    },
    /// Another `schema:`.
    #[error("schema `{found}` is not `{SUITE_SCHEMA}`")]
    Schema {
        /// The file's `schema:`.
        found: String,
    },
    /// `green_max`/`yellow_max` out of order, not positive or not finite (or a non-finite confidence).
    #[error(
        "thresholds: need 0 < green_max <= yellow_max (got green_max {green_max}, yellow_max {yellow_max})"
    )]
    Bounds {
        /// `thresholds.green_max`.
        green_max: f64,
        /// `thresholds.yellow_max`.
        yellow_max: f64,
    },
    /// `thresholds.confidence` outside (0, 1).
    #[error("thresholds.confidence must be between 0 and 1 (e.g. 0.95), got {confidence}")]
    Confidence {
        /// The value given.
        confidence: f64,
    },
    /// `thresholds.min_samples` or `min_rounds` above the calls a case may make.
    #[error(
        "thresholds.min_samples and min_rounds take at most {MOST_CALLS} (got {min_samples} and {min_rounds})"
    )]
    TooManyRequired {
        /// `thresholds.min_samples`.
        min_samples: u64,
        /// `thresholds.min_rounds`.
        min_rounds: u64,
    },
    /// `thresholds.min_samples` below 2.
    #[error("thresholds.min_samples must be at least 2")]
    MinSamples,
    /// `thresholds.min_rounds` below 2.
    #[error("thresholds.min_rounds must be at least 2 (an interval over rounds needs two)")]
    MinRounds,
    /// No rows.
    #[error("`rows` is empty: list at least one row")]
    NoRows,
    /// Two rows with the same id.
    #[error(
        "rows {first} and {second} (counting from 1) are both `{id}`: each (entry, model, testcase, candidate runtime) may appear once"
    )]
    DuplicateRow {
        /// The first row's position, from 1.
        first: usize,
        /// The second row's position, from 1.
        second: usize,
        /// Their id.
        id: String,
    },
    /// A reference backend that is neither the Python runner nor a trtmc runtime.
    #[error(
        "row `{id}`: reference backend `{backend}` is unknown (use `{ORT_PYTHON}` or `{TRTMC_PREFIX}<runtime>`)"
    )]
    UnknownBackend {
        /// The row id.
        id: String,
        /// The backend given.
        backend: String,
    },
    /// `iterations: 0`.
    #[error("row `{id}`: iterations must be at least 1")]
    NoIterations {
        /// The row id.
        id: String,
    },
    /// `measure.warmup` or `measure.iterations` above the calls a case may make.
    #[error(
        "row `{id}`: measure.{what} {calls} is more than the {MOST_CALLS} calls a case may make"
    )]
    TooManyCalls {
        /// The row id.
        id: String,
        /// `warmup` or `iterations`.
        what: &'static str,
        /// The count given.
        calls: u64,
    },
    /// `rounds` outside 1..=100.
    #[error("row `{id}`: rounds must be between 1 and 100")]
    Rounds {
        /// The row id.
        id: String,
    },
    /// `measure.max_rounds` below the row's rounds or above 1000.
    #[error(
        "row `{id}`: measure.max_rounds {max_rounds} must be at least its rounds ({rounds}) and at most 1000"
    )]
    MaxRounds {
        /// The row id.
        id: String,
        /// The `max_rounds` given.
        max_rounds: u64,
        /// The row's rounds.
        rounds: u64,
    },
    /// `measure.max_seconds` not above 0 or above the longest a case may take.
    #[error(
        "row `{id}`: measure.max_seconds {seconds} must be seconds above 0 and at most {LONGEST_S}"
    )]
    MaxSeconds {
        /// The row id.
        id: String,
        /// The value given.
        seconds: f64,
    },
    /// Fewer timed calls per side than `thresholds.min_samples`: the row could never get a light.
    #[error(
        "row `{id}`: {timed} timed call(s) per side ({iterations} iterations over {rounds} round(s)) are fewer than thresholds.min_samples {least}, so the row could never get a light: raise its measure.iterations to at least {least} or lower min_samples"
    )]
    NeverALight {
        /// The row id.
        id: String,
        /// Timed calls per side.
        timed: u64,
        /// The row's iterations.
        iterations: u64,
        /// The row's rounds.
        rounds: u64,
        /// `thresholds.min_samples`.
        least: u64,
    },
}

/// Reads and checks the suite file `path`; the error names the file.
pub fn load_suite(path: &Path) -> Result<Suite, SuiteError> {
    let text = trtmc_core::limits::read_outside_text(path, trtmc_core::limits::FileKind::Text)
        .map_err(|source| SuiteError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    parse_suite(&text).map_err(|e| SuiteError::InFile {
        path: path.to_path_buf(),
        source: Box::new(e),
    })
}

/// Parses a suite and checks what needs no catalog: schema, thresholds, unique row ids, backends.
pub fn parse_suite(text: &str) -> Result<Suite, SuiteError> {
    let suite: Suite = serde_saphyr::from_str(text).map_err(|e| SuiteError::Yaml {
        reason: e.to_string(),
    })?;
    if let Some(s) = &suite.schema
        && s != SUITE_SCHEMA
    {
        return Err(SuiteError::Schema { found: s.clone() });
    }
    let t = &suite.thresholds;
    let finite = [t.green_max, t.yellow_max, t.confidence]
        .iter()
        .all(|v| v.is_finite());
    if !finite || t.green_max <= 0.0 || t.yellow_max < t.green_max {
        return Err(SuiteError::Bounds {
            green_max: t.green_max,
            yellow_max: t.yellow_max,
        });
    }
    if !(t.confidence > 0.0 && t.confidence < 1.0) {
        return Err(SuiteError::Confidence {
            confidence: t.confidence,
        });
    }
    if t.min_samples > MOST_CALLS || t.min_rounds > MOST_CALLS {
        return Err(SuiteError::TooManyRequired {
            min_samples: t.min_samples,
            min_rounds: t.min_rounds,
        });
    }
    if t.min_samples < 2 {
        return Err(SuiteError::MinSamples);
    }
    if t.min_rounds < 2 {
        return Err(SuiteError::MinRounds);
    }
    if suite.rows.is_empty() {
        return Err(SuiteError::NoRows);
    }
    let mut seen = BTreeMap::new();
    for (i, row) in suite.rows.iter().enumerate() {
        let id = row.id();
        if let Some(first) = seen.insert(id.clone(), i) {
            return Err(SuiteError::DuplicateRow {
                first: first + 1,
                second: i + 1,
                id,
            });
        }
        let b = &row.reference.backend;
        if b != ORT_PYTHON && !b.starts_with(TRTMC_PREFIX) {
            return Err(SuiteError::UnknownBackend {
                id,
                backend: b.clone(),
            });
        }
        for (what, n) in [
            ("warmup", row.warmup(&suite)),
            ("iterations", row.iterations(&suite)),
        ] {
            if what == "iterations" && n == Some(0) {
                return Err(SuiteError::NoIterations { id });
            }
            if let Some(calls) = n.filter(|n| *n > MOST_CALLS) {
                return Err(SuiteError::TooManyCalls { id, what, calls });
            }
        }
        let rounds = row.rounds(&suite);
        if !(1..=100).contains(&rounds) {
            return Err(SuiteError::Rounds { id });
        }
        let most = row.measure.max_rounds.or(suite.measure.max_rounds);
        if let Some(max_rounds) = most
            && !(rounds..=1000).contains(&max_rounds)
        {
            return Err(SuiteError::MaxRounds {
                id,
                max_rounds,
                rounds,
            });
        }
        if let Some(seconds) = row.max_seconds(&suite)
            && !(seconds.is_finite() && seconds > 0.0 && seconds <= LONGEST_S)
        {
            return Err(SuiteError::MaxSeconds { id, seconds });
        }
        // Each round times ceil(iterations / rounds) calls: fewer than min_samples in all can never
        // give a light, so say so before anything runs.
        if let Some(n) = row.iterations(&suite) {
            let timed = n.div_ceil(rounds) * rounds;
            let least = suite.thresholds.min_samples;
            if timed < least {
                return Err(SuiteError::NeverALight {
                    id,
                    timed,
                    iterations: n,
                    rounds,
                    least,
                });
            }
        }
    }
    Ok(suite)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUITE: &str = "
name: t
rows:
  - entry: tiny-cnn.classify
    model: tiny-cnn
    testcase: single
    candidate: {runtime: tract}
    reference: {backend: onnxruntime-python}
";

    #[test]
    fn suite_defaults_and_ids() {
        let s = parse_suite(SUITE).unwrap();
        assert_eq!(s.thresholds, Thresholds::default());
        assert_eq!(s.rows[0].id(), "tiny-cnn.classify/tiny-cnn/single/tract");
    }

    #[test]
    fn duplicate_rows_and_bad_thresholds_are_rejected() {
        let dup = format!(
            "{SUITE}  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: single\n    candidate: {{runtime: tract}}\n    reference: {{backend: onnxruntime-python}}\n"
        );
        assert!(parse_suite(&dup).unwrap_err().to_string().contains("both"));
        let bad = SUITE.replace(
            "name: t",
            "name: t\nthresholds: {green_max: 2, yellow_max: 1}",
        );
        assert!(
            parse_suite(&bad)
                .unwrap_err()
                .to_string()
                .contains("green_max")
        );
        let backend = SUITE.replace("onnxruntime-python", "nope");
        assert!(
            parse_suite(&backend)
                .unwrap_err()
                .to_string()
                .contains("unknown")
        );
        // Fewer timed calls than min_samples could never give a light (12 over 6 rounds; 7 over 3
        // rounds times 3 per round, 9 in all).
        for (measure, timed) in [
            ("{iterations: 12, rounds: 6}", 12),
            ("{iterations: 7, rounds: 3}", 9),
        ] {
            let few = format!("{SUITE}    measure: {measure}\n")
                .replace("name: t", "name: t\nthresholds: {min_samples: 20}");
            let e = parse_suite(&few).expect_err(measure).to_string();
            assert!(
                e.contains(&format!("{timed} timed call(s)")) && e.contains("at least 20"),
                "{e}"
            );
        }
        let enough = format!("{SUITE}    measure: {{iterations: 19, rounds: 5}}\n")
            .replace("name: t", "name: t\nthresholds: {min_samples: 20}");
        assert!(
            parse_suite(&enough).is_ok(),
            "4 per round over 5 rounds: 20"
        );
    }

    #[test]
    fn expansion_uses_defaults_and_names_missing_variables() {
        let look = |n: &str| (n == "A").then(|| "x".to_string());
        assert_eq!(expand("${A}/y", &look).unwrap(), "x/y");
        assert_eq!(expand("${B:-d}/y", &look).unwrap(), "d/y");
        assert!(
            expand("${B}", &look)
                .unwrap_err()
                .to_string()
                .contains("`B`")
        );
        assert!(expand("${A", &look).is_err());
    }

    #[test]
    fn malformed_input_never_panics() {
        for text in ["", ":", "rows: 3", "name: [", "\u{0}", "rows: []\nname: x"] {
            let _ = parse_suite(text);
        }
    }

    #[test]
    fn numeric_fields_of_suites_and_environments_are_bounded() {
        let env = |extra: &str| {
            parse_environment(&format!(
                "name: e\nbundle_cache: /c\nresults_root: /r\n{extra}"
            ))
        };
        assert!(env("").is_ok());
        for (extra, says) in [
            ("free_storage_gib: -5", "free_storage_gib: give GiB from 0"),
            ("free_storage_gib: .nan", "free_storage_gib"),
            (
                "reference_threads: 0",
                "reference_threads: give from 1 to 1024",
            ),
            ("slurm: {timeout_s: 1e300}", "slurm.timeout_s"),
            ("slurm: {poll_s: 0}", "slurm.poll_s"),
        ] {
            let e = env(extra).expect_err(extra).to_string();
            assert!(e.contains(says), "{extra}: {e}");
        }
        let e = parse_suite(&format!("{SUITE}measure: {{warmup: 1000000000000}}\n"))
            .expect_err("huge warmup")
            .to_string();
        assert!(e.contains("measure.warmup 1000000000000"), "{e}");
    }
}
