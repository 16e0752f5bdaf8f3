//! Bundle-preparation receipts (`trtmc.perf-bundle-preparation/v1`): evidence of a separately run
//! preparation step (building the bundles before the campaign), attached to a run by `matrix report`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Embedded in results.json, so typed with the matrix documents in core.
pub use trtmc_core::artifacts::matrix::{RECEIPT_SCHEMA, Receipt, Record};

/// The only `scope` a receipt may have.
pub(crate) const RECEIPT_SCOPE: &str = "test_task";

/// What the run consumed: bundle path → model path.
pub type Consumed = BTreeMap<String, String>;

/// Where a receipt's record is: its index and bundle, as the rejections name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordAt {
    /// The record's index in `records`, from 0.
    pub index: usize,
    /// The record's bundle path.
    pub bundle: String,
}

impl std::fmt::Display for RecordAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "record {} (bundle {})", self.index, self.bundle)
    }
}

/// Why a preparation receipt cannot be attached to a run.
#[derive(Debug, thiserror::Error)]
pub enum ReceiptError {
    /// The file cannot be read.
    #[error("cannot read receipt {}: {source}", path.display())]
    Read {
        /// The receipt file.
        path: PathBuf,
        /// The reading failure.
        source: std::io::Error,
    },
    /// The file's content is refused; `source` says why.
    #[error("receipt {}: {source}", path.display())]
    InFile {
        /// The receipt file.
        path: PathBuf,
        /// What is wrong with its content.
        source: Box<ReceiptError>,
    },
    /// Not JSON of the receipt's shape.
    #[error("not a {RECEIPT_SCHEMA} document: {source}")]
    NotAReceipt {
        /// The JSON error.
        source: serde_json::Error,
    },
    /// Another `schema`.
    #[error("schema `{found}` is not `{RECEIPT_SCHEMA}`")]
    Schema {
        /// The receipt's `schema`.
        found: String,
    },
    /// Another `scope` than task-level preparation.
    #[error(
        "scope `{found}` is not `{RECEIPT_SCOPE}` (only task-level preparation can be attached)"
    )]
    Scope {
        /// The receipt's `scope`.
        found: String,
    },
    /// The receipt was made by another revision than the run.
    #[error(
        "revision mismatch: the receipt is for `{receipt}`, the run was made by `{run}`; prepare the bundles with the run's exact revision"
    )]
    Revision {
        /// The receipt's revision.
        receipt: String,
        /// The run's revision.
        run: String,
    },
    /// `records` is empty.
    #[error("`records` is empty")]
    NoRecords,
    /// Two records name the same bundle.
    #[error("duplicate record: {at} is listed more than once")]
    Duplicate {
        /// The second record of the bundle.
        at: RecordAt,
    },
    /// A `built` record whose build time is not a finite number of seconds >= 0.
    #[error("{at}: invalid build time {seconds}: it must be a finite number of seconds >= 0")]
    BadBuildTime {
        /// The record.
        at: RecordAt,
        /// Its `build_seconds`.
        seconds: f64,
    },
    /// A `built` record without `build_seconds`.
    #[error("{at}: invalid build time: a `built` record needs build_seconds")]
    NoBuildTime {
        /// The record.
        at: RecordAt,
    },
    /// A `reused` record whose build time is not a finite number of seconds >= 0.
    #[error("{at}: invalid build time {seconds}")]
    BadReusedTime {
        /// The record.
        at: RecordAt,
        /// Its `build_seconds`.
        seconds: f64,
    },
    /// An `action` other than `built` or `reused`.
    #[error("{at}: action `{action}` is neither `built` nor `reused`")]
    Action {
        /// The record.
        at: RecordAt,
        /// Its `action`.
        action: String,
    },
    /// A record of a bundle no row of the run consumed.
    #[error(
        "unused bundle path: {at} was not consumed by any row of this run (consumed: {})",
        consumed.join(", ")
    )]
    Unused {
        /// The record.
        at: RecordAt,
        /// The bundles the run consumed.
        consumed: Vec<String>,
    },
    /// A record whose model is not the one the run built the bundle from.
    #[error("{at}: model `{model}` is not the model the run built it from (`{built_from}`)")]
    Model {
        /// The record.
        at: RecordAt,
        /// The record's model.
        model: String,
        /// The model the run consumed with the bundle.
        built_from: String,
    },
}

/// Reads and validates a receipt against the run's revision and consumed bundles. Every rejection
/// names the record and what to fix.
pub fn load(path: &Path, revision: &str, consumed: &Consumed) -> Result<Receipt, ReceiptError> {
    let bytes = std::fs::read(path).map_err(|source| ReceiptError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&bytes, revision, consumed).map_err(|e| ReceiptError::InFile {
        path: path.to_path_buf(),
        source: Box::new(e),
    })
}

/// Parses and validates receipt bytes.
pub fn parse(bytes: &[u8], revision: &str, consumed: &Consumed) -> Result<Receipt, ReceiptError> {
    let r: Receipt =
        serde_json::from_slice(bytes).map_err(|source| ReceiptError::NotAReceipt { source })?;
    validate(&r, revision, consumed)?;
    Ok(r)
}

/// Checks a parsed receipt: schema, scope, revision, and that its records match `consumed`.
pub(crate) fn validate(
    r: &Receipt,
    revision: &str,
    consumed: &Consumed,
) -> Result<(), ReceiptError> {
    if r.schema != RECEIPT_SCHEMA {
        return Err(ReceiptError::Schema {
            found: r.schema.clone(),
        });
    }
    if r.scope != RECEIPT_SCOPE {
        return Err(ReceiptError::Scope {
            found: r.scope.clone(),
        });
    }
    if !same_revision(&r.revision, revision) {
        return Err(ReceiptError::Revision {
            receipt: r.revision.clone(),
            run: revision.to_string(),
        });
    }
    if r.records.is_empty() {
        return Err(ReceiptError::NoRecords);
    }
    let mut seen = BTreeSet::new();
    for (i, rec) in r.records.iter().enumerate() {
        let at = RecordAt {
            index: i,
            bundle: rec.bundle.clone(),
        };
        if !seen.insert(rec.bundle.as_str()) {
            return Err(ReceiptError::Duplicate { at });
        }
        match rec.action.as_str() {
            "built" => match rec.build_seconds {
                Some(s) if s.is_finite() && s >= 0.0 => {}
                Some(seconds) => return Err(ReceiptError::BadBuildTime { at, seconds }),
                None => return Err(ReceiptError::NoBuildTime { at }),
            },
            "reused" => {
                if let Some(seconds) = rec.build_seconds
                    && (!seconds.is_finite() || seconds < 0.0)
                {
                    return Err(ReceiptError::BadReusedTime { at, seconds });
                }
            }
            other => {
                return Err(ReceiptError::Action {
                    at,
                    action: other.to_string(),
                });
            }
        }
        match consumed.get(&rec.bundle) {
            None => {
                return Err(ReceiptError::Unused {
                    at,
                    consumed: consumed.keys().cloned().collect(),
                });
            }
            Some(model) if model != &rec.model => {
                return Err(ReceiptError::Model {
                    at,
                    model: rec.model.clone(),
                    built_from: model.clone(),
                });
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Shortest abbreviation of a commit that names it (git's default `--short`).
const MIN_COMMIT_CHARS: usize = 7;

/// Whether two revision strings name the same build: equal, or commits (with the same `-dirty`
/// marker) where one is an abbreviation of the other of at least [`MIN_COMMIT_CHARS`] characters, so a
/// receipt may carry the full 40-character commit of a run recorded with its 12-character form.
fn same_revision(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let split = |r: &str| match r.strip_suffix("-dirty") {
        Some(commit) => (commit.to_ascii_lowercase(), true),
        None => (r.to_ascii_lowercase(), false),
    };
    let ((a, a_dirty), (b, b_dirty)) = (split(a), split(b));
    let is_commit =
        |c: &str| c.len() >= MIN_COMMIT_CHARS && c.bytes().all(|b| b.is_ascii_hexdigit());
    a_dirty == b_dirty && is_commit(&a) && is_commit(&b) && (a.starts_with(&b) || b.starts_with(&a))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipt() -> Receipt {
        Receipt {
            schema: RECEIPT_SCHEMA.into(),
            scope: RECEIPT_SCOPE.into(),
            revision: "abc".into(),
            records: vec![Record {
                model: "/m.onnx".into(),
                bundle: "/b".into(),
                action: "built".into(),
                build_seconds: Some(1.5),
            }],
        }
    }

    fn consumed() -> Consumed {
        BTreeMap::from([("/b".to_string(), "/m.onnx".to_string())])
    }

    #[test]
    fn a_matching_receipt_passes_and_each_rejection_names_its_cause() {
        assert!(validate(&receipt(), "abc", &consumed()).is_ok());
        assert!(
            validate(&receipt(), "xyz", &consumed())
                .unwrap_err()
                .to_string()
                .contains("revision mismatch")
        );
        let mut dup = receipt();
        dup.records.push(dup.records[0].clone());
        assert!(
            validate(&dup, "abc", &consumed())
                .unwrap_err()
                .to_string()
                .contains("duplicate")
        );
        let mut bad = receipt();
        bad.records[0].build_seconds = Some(-1.0);
        assert!(
            validate(&bad, "abc", &consumed())
                .unwrap_err()
                .to_string()
                .contains("invalid build time")
        );
        let mut unused = receipt();
        unused.records[0].bundle = "/other".into();
        assert!(
            validate(&unused, "abc", &consumed())
                .unwrap_err()
                .to_string()
                .contains("unused bundle path")
        );
        let mut scope = receipt();
        scope.scope = "campaign".into();
        assert!(
            validate(&scope, "abc", &consumed())
                .unwrap_err()
                .to_string()
                .contains("scope")
        );
    }

    #[test]
    fn full_and_abbreviated_commits_of_one_revision_match() {
        let full = "97a453d13fd1c0ffee0123456789abcdef012345";
        let run = "97a453d13fd1";
        let mut r = receipt();
        r.revision = full.into();
        assert!(
            validate(&r, run, &consumed()).is_ok(),
            "full receipt, short run"
        );
        r.revision = run.into();
        assert!(
            validate(&r, full, &consumed()).is_ok(),
            "short receipt, full run"
        );
        r.revision = "97a453d".into();
        assert!(validate(&r, run, &consumed()).is_ok(), "7 characters");
        r.revision = format!("{full}-dirty");
        assert!(validate(&r, &format!("{run}-dirty"), &consumed()).is_ok());
        for other in ["97a453", "97a453d13fd2", "97a453d13fd1-dirty", "unknown"] {
            r.revision = other.into();
            let e = validate(&r, run, &consumed()).expect_err(other);
            assert!(e.to_string().contains("revision mismatch"), "{other}: {e}");
        }
    }
}
