//! Bundle-preparation receipts (`trtmc.perf-bundle-preparation/v1`): evidence of a separately run
//! preparation step (building the bundles before the campaign), attached to a run by `matrix report`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Embedded in results.json, so typed with the matrix documents in core.
pub use trtmc_core::artifacts::matrix::{RECEIPT_SCHEMA, Receipt, Record};

/// The only `scope` a receipt may have.
pub(crate) const RECEIPT_SCOPE: &str = "test_task";

/// What the run consumed: bundle path → model path.
pub type Consumed = BTreeMap<String, String>;

/// Reads and validates a receipt against the run's revision and consumed bundles. Every rejection
/// names the record and what to fix.
pub fn load(path: &Path, revision: &str, consumed: &Consumed) -> Result<Receipt, String> {
    let bytes =
        std::fs::read(path).map_err(|e| format!("cannot read receipt {}: {e}", path.display()))?;
    parse(&bytes, revision, consumed).map_err(|e| format!("receipt {}: {e}", path.display()))
}

/// Parses and validates receipt bytes.
pub fn parse(bytes: &[u8], revision: &str, consumed: &Consumed) -> Result<Receipt, String> {
    let r: Receipt = serde_json::from_slice(bytes)
        .map_err(|e| format!("not a {RECEIPT_SCHEMA} document: {e}"))?;
    validate(&r, revision, consumed)?;
    Ok(r)
}

/// Checks a parsed receipt: schema, scope, revision, and that its records match `consumed`.
pub(crate) fn validate(r: &Receipt, revision: &str, consumed: &Consumed) -> Result<(), String> {
    if r.schema != RECEIPT_SCHEMA {
        return Err(format!("schema `{}` is not `{RECEIPT_SCHEMA}`", r.schema));
    }
    if r.scope != RECEIPT_SCOPE {
        return Err(format!(
            "scope `{}` is not `{RECEIPT_SCOPE}` (only task-level preparation can be attached)",
            r.scope
        ));
    }
    if !same_revision(&r.revision, revision) {
        return Err(format!(
            "revision mismatch: the receipt is for `{}`, the run was made by `{revision}`; prepare the bundles with the run's exact revision",
            r.revision
        ));
    }
    if r.records.is_empty() {
        return Err("`records` is empty".into());
    }
    let mut seen = BTreeSet::new();
    for (i, rec) in r.records.iter().enumerate() {
        let at = format!("record {i} (bundle {})", rec.bundle);
        if !seen.insert(rec.bundle.as_str()) {
            return Err(format!("duplicate record: {at} is listed more than once"));
        }
        match rec.action.as_str() {
            "built" => match rec.build_seconds {
                Some(s) if s.is_finite() && s >= 0.0 => {}
                Some(s) => {
                    return Err(format!(
                        "{at}: invalid build time {s}: it must be a finite number of seconds >= 0"
                    ));
                }
                None => {
                    return Err(format!(
                        "{at}: invalid build time: a `built` record needs build_seconds"
                    ));
                }
            },
            "reused" => {
                if let Some(s) = rec.build_seconds
                    && (!s.is_finite() || s < 0.0)
                {
                    return Err(format!("{at}: invalid build time {s}"));
                }
            }
            other => {
                return Err(format!(
                    "{at}: action `{other}` is neither `built` nor `reused`"
                ));
            }
        }
        match consumed.get(&rec.bundle) {
            None => {
                return Err(format!(
                    "unused bundle path: {at} was not consumed by any row of this run (consumed: {})",
                    consumed.keys().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
            Some(model) if model != &rec.model => {
                return Err(format!(
                    "{at}: model `{}` is not the model the run built it from (`{model}`)",
                    rec.model
                ));
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
                .contains("revision mismatch")
        );
        let mut dup = receipt();
        dup.records.push(dup.records[0].clone());
        assert!(
            validate(&dup, "abc", &consumed())
                .unwrap_err()
                .contains("duplicate")
        );
        let mut bad = receipt();
        bad.records[0].build_seconds = Some(-1.0);
        assert!(
            validate(&bad, "abc", &consumed())
                .unwrap_err()
                .contains("invalid build time")
        );
        let mut unused = receipt();
        unused.records[0].bundle = "/other".into();
        assert!(
            validate(&unused, "abc", &consumed())
                .unwrap_err()
                .contains("unused bundle path")
        );
        let mut scope = receipt();
        scope.scope = "campaign".into();
        assert!(
            validate(&scope, "abc", &consumed())
                .unwrap_err()
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
            assert!(e.contains("revision mismatch"), "{other}: {e}");
        }
    }
}
