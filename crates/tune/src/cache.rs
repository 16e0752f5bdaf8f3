//! The tuning cache: JSON Lines, schema `trtmc.tuning-cache/v1` (schemas/tuning-cache.schema.json).
//!
//! Line 1 is the header, with trtexec's header fields first (`tuner_version`, `accuracy_algorithm`,
//! `accuracy_parameter`, `searching_algorithm`, `command_line`, `default_build_route`, `tuning_expr`,
//! `files`, `argv`) and then what trtexec lacks: a fingerprint that `--continue` checks, every option, and
//! the knob database. Every later line is one finished iteration, appended with one write of the whole
//! line and synced to disk before the tuner goes on. A line cut short by a kill is detected on resume,
//! dropped, and the file is truncated back to the last full line.

use crate::config::TuneConfig;
use crate::knobs::KnobDatabase;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use trtmc_core::accuracy::{AccuracyReport, Algorithm};
use trtmc_core::stats::Summary;

/// The iteration enums are shared with the tuning summary, whose types live in core.
pub use trtmc_core::artifacts::tune_summary::{Phase, RouteStatus, Stage};

/// The `schema` value of a tuning cache's header line.
pub const CACHE_SCHEMA: &str = "trtmc.tuning-cache/v1";

/// What the measurements depend on. `--continue` refuses a cache whose fingerprint differs from now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// SHA-256 of the model file (`trtmc_core::hash::file_sha256`).
    pub model_sha256: String,
    /// Name of the runtime the routes are built and timed with.
    pub runtime: String,
    /// The runtime's version string.
    pub runtime_version: String,
    /// CPU model, core count, OS (`trtmc_core::artifacts::MachineInfo::fingerprint_line`).
    pub machine: String,
    /// Input name -> shape, e.g. `"x": "1x3x224x224"`.
    #[serde(default)]
    pub shapes: BTreeMap<String, String>,
    /// Build settings that are not knobs (precision, batch, threads, ...).
    #[serde(default)]
    pub build_settings: BTreeMap<String, String>,
}

/// One field that differs between two fingerprints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldDifference {
    /// The differing field, dotted for map entries (`shapes.x`).
    pub field: String,
    /// The value the cache recorded (`(absent)` when it had none).
    pub cached: String,
    /// The value now (`(absent)` when there is none).
    pub current: String,
}

impl fmt::Display for FieldDifference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: cache has '{}', now '{}'",
            self.field, self.cached, self.current
        )
    }
}

impl Fingerprint {
    /// Every differing field, maps compared key by key (`shapes.x`, `build_settings.fp16`).
    pub fn differences(&self, current: &Fingerprint) -> Vec<FieldDifference> {
        let mut out = Vec::new();
        let mut scalar = |field: &str, cached: &str, now: &str| {
            if cached != now {
                out.push(FieldDifference {
                    field: field.into(),
                    cached: cached.into(),
                    current: now.into(),
                });
            }
        };
        scalar("model_sha256", &self.model_sha256, &current.model_sha256);
        scalar("runtime", &self.runtime, &current.runtime);
        scalar(
            "runtime_version",
            &self.runtime_version,
            &current.runtime_version,
        );
        scalar("machine", &self.machine, &current.machine);
        for (name, cached, now) in [
            ("shapes", &self.shapes, &current.shapes),
            (
                "build_settings",
                &self.build_settings,
                &current.build_settings,
            ),
        ] {
            let keys: BTreeSet<&String> = cached.keys().chain(now.keys()).collect();
            for key in keys {
                let (a, b) = (cached.get(key), now.get(key));
                if a != b {
                    out.push(FieldDifference {
                        field: format!("{name}.{key}"),
                        cached: a.cloned().unwrap_or_else(|| "(absent)".into()),
                        current: b.cloned().unwrap_or_else(|| "(absent)".into()),
                    });
                }
            }
        }
        out
    }
}

/// trtexec's `accuracy_parameter`, plus per-tensor thresholds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccuracyParameter {
    /// Absolute tolerance of the `l0` loss.
    pub atol: f64,
    /// Relative tolerance of the `l0` loss.
    pub rtol: f64,
    /// The loss threshold a tensor must stay within.
    pub epsilon: f64,
    /// Thresholds that replace `epsilon` for the named output tensors.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_tensor_epsilon: BTreeMap<String, f64>,
}

/// The first line of a tuning cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheHeader {
    /// trtexec's field: the knob database's version (`<runtime> <version>` for tract and onnxruntime).
    pub tuner_version: String,
    /// How outputs are compared with the reference's.
    pub accuracy_algorithm: Algorithm,
    /// The thresholds of that comparison.
    pub accuracy_parameter: AccuracyParameter,
    /// The search order (`fast`, `full`, `mixed`, `racing`).
    pub searching_algorithm: crate::search::SearchOrder,
    /// The command line, shell-quoted, for people.
    pub command_line: String,
    /// Every knob of the database at its default.
    pub default_build_route: String,
    /// The expression, already read from `--routes-file` if one was given.
    pub tuning_expr: String,
    /// Absolute paths of the files the tune read (model, inputs, reference outputs, ...).
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// The argument vector, for machines.
    #[serde(default)]
    pub argv: Vec<String>,
    /// Always [`CACHE_SCHEMA`].
    pub schema: String,
    /// What the measurements depend on; `--continue` refuses a cache whose fingerprint differs.
    pub fingerprint: Fingerprint,
    /// Every option of the tune, so `--continue` needs none of them again.
    pub options: TuneConfig,
    /// The (merged) knob database the expression was read against.
    pub knob_db: KnobDatabase,
}

impl CacheHeader {
    /// A header whose trtexec-style fields are derived from `options`, `knob_db` and `tuning_expr`.
    pub fn new(
        options: TuneConfig,
        knob_db: KnobDatabase,
        tuning_expr: String,
        fingerprint: Fingerprint,
        argv: Vec<String>,
        files: BTreeMap<String, String>,
    ) -> Self {
        let default_build_route = knob_db
            .tuner_options
            .iter()
            .map(|o| format!("{}={}", o.option, o.default_value))
            .collect::<Vec<_>>()
            .join(" ");
        Self {
            tuner_version: knob_db.tuner_version.clone(),
            accuracy_algorithm: options.accuracy.algorithm,
            accuracy_parameter: AccuracyParameter {
                atol: options.accuracy.atol,
                rtol: options.accuracy.rtol,
                epsilon: options.accuracy.epsilon,
                per_tensor_epsilon: options.accuracy.per_tensor_epsilon.clone(),
            },
            searching_algorithm: options.search,
            command_line: trtmc_core::text::shell_line(&argv),
            default_build_route,
            tuning_expr,
            files,
            argv,
            schema: CACHE_SCHEMA.to_string(),
            fingerprint,
            options,
            knob_db,
        }
    }

    /// Refuse to continue when the fingerprint differs from `current`.
    pub fn check_fingerprint(&self, current: &Fingerprint) -> Result<(), CacheError> {
        let differences = self.fingerprint.differences(current);
        if differences.is_empty() {
            Ok(())
        } else {
            Err(CacheError::FingerprintMismatch { differences })
        }
    }
}

/// One line after the header: one finished iteration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IterationRecord {
    /// Position of the iteration in the plan, from 0; a resumed tune checks it against what it expects.
    pub iter: usize,
    /// The search phase the line belongs to (`reference`, `fast`, …, `final`).
    pub phase: Phase,
    /// Racing round (1, 2, ...) or head-to-head pass (0, 1, ...) of a measurement-only line; absent on a
    /// line that built and checked the route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<usize>,
    /// The route, as `knob=value` tokens.
    pub build_route: String,
    /// trtexec's meaning: the child died or was killed.
    pub crash: bool,
    /// Why the route failed or was eliminated; `null` when it did neither.
    pub error_message: Option<String>,
    /// What became of the route (`ok`, `crashed`, `timed_out`, …).
    pub status: RouteStatus,
    /// Where a failed route failed (build, outputs, accuracy or measurement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_stage: Option<Stage>,
    /// trtexec's map: tensor -> loss (`null` for a non-finite loss); `null` when not checked.
    pub accuracy_loss: Option<BTreeMap<String, Option<f64>>>,
    /// The full accuracy check, per tensor, when outputs were compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<AccuracyReport>,
    /// `time_statistic` of this line's steady-state samples, in ms (trtexec's `gpu_time`, named for what
    /// it is).
    pub time_ms: Option<f64>,
    /// The objective's statistic that `time_ms` is (`p50`, `p95` or `mean`).
    pub time_statistic: String,
    /// Warm-up calls before the steady-state samples.
    pub warmup_calls: usize,
    /// Steady-state per-call times in ms, in call order (warm-ups excluded).
    pub samples_ms: Vec<f64>,
    /// Summary statistics of `samples_ms`, when there are any.
    pub summary: Option<Summary>,
    /// SHA-256 over the reference outputs (reference lines only), to notice a changed reference on resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs_sha256: Option<String>,
    /// What the runtime's own tool said about the measurement, e.g. trtexec's "GPU compute time is
    /// unstable" warning.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A problem with a cache file. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The cache file cannot be read, written or synced.
    #[error("tuning cache {path}: {source}")]
    Io {
        /// The cache file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A new tune was pointed at a cache that `--continue` could resume.
    #[error(
        "tuning cache {path} already exists; resume it with --continue --cache {path} or choose another --cache"
    )]
    Exists {
        /// The existing cache file.
        path: PathBuf,
    },
    /// The file has no complete first line, so there is no plan to continue.
    #[error(
        "tuning cache {path} is empty or has no complete header line (a tune killed while it started), so it \
         cannot be continued; {}",
        start_over(path)
    )]
    NoHeader {
        /// The cache file.
        path: PathBuf,
    },
    /// The header line is not a valid header.
    #[error(
        "tuning cache {path}, line 1 (header): {message}; it cannot be continued; {}",
        start_over(path)
    )]
    BadHeader {
        /// The cache file.
        path: PathBuf,
        /// The JSON parser's message.
        message: String,
    },
    /// The header's `schema` is not [`CACHE_SCHEMA`] (another tool's file, or another version).
    #[error(
        "tuning cache {path} has schema '{found}', this tuner reads '{CACHE_SCHEMA}'; {}",
        start_over(path)
    )]
    WrongSchema {
        /// The cache file.
        path: PathBuf,
        /// The schema the header names (`(none)` when it names none).
        found: String,
    },
    /// An iteration line before the last cannot be parsed (a torn last line is dropped instead).
    #[error(
        "tuning cache {path}, line {line}: {message}; the file was edited or damaged; {}",
        start_over(path)
    )]
    BadLine {
        /// The cache file.
        path: PathBuf,
        /// The damaged line's number, from 1.
        line: usize,
        /// The JSON parser's message.
        message: String,
    },
    /// `--continue` on a cache measured under other conditions (model, runtime, machine, shapes, settings).
    #[error(
        "the tuning cache was made for different conditions, so its measurements cannot be mixed with new \
         ones; differing fields: {}. Start a new tune (another --cache) or restore those conditions",
        differences.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    FingerprintMismatch {
        /// Every field that differs, cached value against current.
        differences: Vec<FieldDifference>,
    },
}

/// What to do with a cache that cannot be continued: the same words from a new tune and from
/// `--continue`, naming the commands that clear the way.
pub fn start_over(path: &Path) -> String {
    let quoted = |p: &Path| trtmc_core::text::shell_line(&[p.display().to_string()]);
    let mut aside = path.as_os_str().to_owned();
    aside.push(".damaged");
    format!(
        "move it aside (`mv {} {}`) or delete it (`rm {}`) and start the tune again, or give the new tune \
         another --cache",
        quoted(path),
        quoted(Path::new(&aside)),
        quoted(path)
    )
}

/// Appends iteration lines to a cache file.
#[derive(Debug)]
pub struct CacheWriter {
    path: PathBuf,
    file: File,
}

impl CacheWriter {
    /// Create a new cache with its header. Refuses an existing non-empty file: one that `--continue`
    /// can resume says so, one it cannot (damaged, no header) says what `--continue` would say.
    pub fn create(path: &Path, header: &CacheHeader) -> Result<Self, CacheError> {
        if std::fs::metadata(path).is_ok_and(|m| m.len() > 0) {
            return Err(match read(path) {
                Ok(_) | Err(CacheError::Io { .. }) => CacheError::Exists {
                    path: path.to_path_buf(),
                },
                Err(not_continuable) => not_continuable,
            });
        }
        let io = |source| CacheError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        let mut writer = Self {
            path: path.to_path_buf(),
            file,
        };
        writer.append_value(header)?;
        Ok(writer)
    }

    /// Append one iteration: the line is written with one write call and synced before returning.
    pub fn append(&mut self, record: &IterationRecord) -> Result<(), CacheError> {
        self.append_value(record)
    }

    fn append_value(&mut self, value: &impl Serialize) -> Result<(), CacheError> {
        let mut line = serde_json::to_string(value).map_err(|e| CacheError::Io {
            path: self.path.clone(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        })?;
        line.push('\n');
        let io = |source| CacheError::Io {
            path: self.path.clone(),
            source,
        };
        self.file.write_all(line.as_bytes()).map_err(io)?;
        self.file.sync_data().map_err(|source| CacheError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// The cache file appended to.
    /// The cache file this writer appends to.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A cache read back from disk.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheContent {
    /// The header line.
    pub header: CacheHeader,
    /// The complete iteration lines, in file order.
    pub records: Vec<IterationRecord>,
    /// Bytes of a torn last line that were dropped (0 when the file ended cleanly).
    pub torn_bytes: usize,
    /// Length of the file up to the end of the last full line.
    pub valid_len: u64,
}

/// Read a cache without changing it.
pub fn read(path: &Path) -> Result<CacheContent, CacheError> {
    let bytes = std::fs::read(path).map_err(|source| CacheError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse(path, &bytes)
}

/// Parse cache bytes: the header, then full iteration lines. An unterminated or unparsable *last* line is
/// a torn write and is dropped; a damaged line before it is an error.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<CacheContent, CacheError> {
    let mut lines: Vec<(usize, &[u8])> = Vec::new();
    let mut start = 0usize;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            lines.push((start, &bytes[start..i]));
            start = i + 1;
        }
    }
    let mut torn_bytes = bytes.len() - start;
    let mut valid_len = start;
    let Some(&(_, header_line)) = lines.first() else {
        return Err(CacheError::NoHeader {
            path: path.to_path_buf(),
        });
    };
    let header_value: serde_json::Value =
        serde_json::from_slice(header_line).map_err(|e| CacheError::BadHeader {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    let schema = header_value
        .get("schema")
        .and_then(|s| s.as_str())
        .unwrap_or("(none)")
        .to_string();
    if schema != CACHE_SCHEMA {
        return Err(CacheError::WrongSchema {
            path: path.to_path_buf(),
            found: schema,
        });
    }
    let header: CacheHeader =
        serde_json::from_value(header_value).map_err(|e| CacheError::BadHeader {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    let mut records = Vec::with_capacity(lines.len().saturating_sub(1));
    let count = lines.len();
    for (n, &(offset, line)) in lines.iter().enumerate().skip(1) {
        let parsed = serde_json::from_slice::<IterationRecord>(line);
        let record = match parsed {
            Ok(r) => r,
            Err(_) if n + 1 == count && torn_bytes == 0 => {
                // A damaged last line: treat it like a torn write.
                torn_bytes = line.len() + 1;
                valid_len = offset;
                break;
            }
            Err(e) => {
                return Err(CacheError::BadLine {
                    path: path.to_path_buf(),
                    line: n + 1,
                    message: e.to_string(),
                });
            }
        };
        if record.iter != records.len() {
            return Err(CacheError::BadLine {
                path: path.to_path_buf(),
                line: n + 1,
                message: format!(
                    "iteration {} where {} was expected",
                    record.iter,
                    records.len()
                ),
            });
        }
        records.push(record);
    }
    Ok(CacheContent {
        header,
        records,
        torn_bytes,
        valid_len: valid_len as u64,
    })
}

/// Open a cache for `--continue`: read it, drop a torn last line (truncating the file to the last full
/// line, synced), and return a writer that appends after it.
pub fn open_for_continue(path: &Path) -> Result<(CacheContent, CacheWriter), CacheError> {
    let content = read(path)?;
    let io = |source| CacheError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = OpenOptions::new().append(true).open(path).map_err(io)?;
    if content.torn_bytes > 0 {
        file.set_len(content.valid_len).map_err(io)?;
        file.sync_all().map_err(io)?;
    }
    Ok((
        content,
        CacheWriter {
            path: path.to_path_buf(),
            file,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> CacheHeader {
        let db = KnobDatabase {
            tuner_version: "1".into(),
            tuner_options: vec![],
        };
        CacheHeader::new(
            TuneConfig::default(),
            db,
            "-a=[on|off]".into(),
            Fingerprint {
                model_sha256: "abc".into(),
                runtime: "fake".into(),
                ..Fingerprint::default()
            },
            vec![
                "trtmc-bench".into(),
                "tune".into(),
                "--routes".into(),
                "-a=[on|off]".into(),
            ],
            BTreeMap::new(),
        )
    }

    fn record(iter: usize) -> IterationRecord {
        IterationRecord {
            iter,
            phase: Phase::Fast,
            round: None,
            build_route: format!("-a=v{iter}"),
            crash: false,
            error_message: None,
            status: RouteStatus::Ok,
            failed_stage: None,
            accuracy_loss: None,
            accuracy: None,
            time_ms: Some(1.0),
            time_statistic: "p50".into(),
            warmup_calls: 1,
            samples_ms: vec![1.0, 1.5],
            summary: None,
            outputs_sha256: None,
            notes: Vec::new(),
        }
    }

    #[test]
    fn header_quotes_the_command_line_for_people() {
        assert_eq!(
            header().command_line,
            "trtmc-bench tune --routes '-a=[on|off]'"
        );
    }

    #[test]
    fn lines_round_trip_and_a_torn_tail_is_dropped_and_truncated() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("cache.jsonl");
        let mut w = CacheWriter::create(&path, &header()).expect("create");
        for i in 0..3 {
            w.append(&record(i)).expect("append");
        }
        drop(w);
        let full = std::fs::read(&path).expect("read");
        let content = read(&path).expect("parse");
        assert_eq!((content.records.len(), content.torn_bytes), (3, 0));
        assert_eq!(content.records[2], record(2));
        // Cut the file in the middle of the last line.
        let cut = full.len() - 10;
        std::fs::write(&path, &full[..cut]).expect("truncate");
        let (content, mut w) = open_for_continue(&path).expect("continue");
        assert_eq!(content.records.len(), 2);
        assert!(content.torn_bytes > 0);
        assert_eq!(
            std::fs::metadata(&path).expect("meta").len(),
            content.valid_len
        );
        w.append(&record(2)).expect("append after resume");
        assert_eq!(std::fs::read(&path).expect("read"), full);
        assert!(matches!(
            CacheWriter::create(&path, &header()),
            Err(CacheError::Exists { .. })
        ));
    }

    #[test]
    fn damage_before_the_last_line_is_an_error_and_a_wrong_iteration_too() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("c.jsonl");
        let h = serde_json::to_string(&header()).expect("h");
        let r0 = serde_json::to_string(&record(0)).expect("r");
        let r2 = serde_json::to_string(&record(2)).expect("r");
        let bad = format!("{h}\n{{oops\n{r0}\n");
        assert!(matches!(
            parse(&path, bad.as_bytes()),
            Err(CacheError::BadLine { line: 2, .. })
        ));
        let skipped = format!("{h}\n{r0}\n{r2}\n");
        let err = parse(&path, skipped.as_bytes()).expect_err("gap");
        assert!(
            err.to_string().contains("iteration 2 where 1 was expected"),
            "{err}"
        );
        let damaged_last = format!("{h}\n{r0}\n{{\"iter\":1}}\n");
        let content = parse(&path, damaged_last.as_bytes()).expect("damaged last line is torn");
        assert_eq!(content.records.len(), 1);
        assert!(matches!(
            parse(&path, b""),
            Err(CacheError::NoHeader { .. })
        ));
        let other = h.replace(CACHE_SCHEMA, "trtmc.tuning-cache/v0");
        assert!(matches!(
            parse(&path, format!("{other}\n").as_bytes()),
            Err(CacheError::WrongSchema { .. })
        ));
    }

    #[test]
    fn fingerprint_mismatch_lists_every_differing_field() {
        let h = header();
        let mut now = h.fingerprint.clone();
        assert!(h.check_fingerprint(&now).is_ok());
        now.model_sha256 = "def".into();
        now.runtime_version = "2".into();
        now.shapes.insert("x".into(), "1x3".into());
        let err = h.check_fingerprint(&now).expect_err("differs");
        let CacheError::FingerprintMismatch { differences } = &err else {
            panic!("wrong error {err}")
        };
        let fields: Vec<&str> = differences.iter().map(|d| d.field.as_str()).collect();
        assert_eq!(fields, vec!["model_sha256", "runtime_version", "shapes.x"]);
        let text = err.to_string();
        assert!(
            text.contains("model_sha256: cache has 'abc', now 'def'"),
            "{text}"
        );
        assert!(
            text.contains("shapes.x: cache has '(absent)', now '1x3'"),
            "{text}"
        );
    }
}
