//! A case's own data (`run --inputs`, `--check-outputs`): where each data set's tensors come from, and
//! the element-wise output check with Polygraphy's tolerances.
//!
//! The records are part of `resolved-case.json` (`data`); the input files' hashes are part of the
//! workload identity, the expected outputs are not (they check a run, they do not change what it
//! computes). Reading the files is `trtmc_runtime::data`'s job.

use serde::{Deserialize, Serialize};
pub use trtmc_metadata::{OutputCheck, WorstElement};

/// Polygraphy's default absolute tolerance (`CompareFunc.simple`, `--atol`).
pub const DEFAULT_ATOL: f64 = 1e-5;
/// Polygraphy's default relative tolerance (`CompareFunc.simple`, `--rtol`).
pub const DEFAULT_RTOL: f64 = 1e-5;
/// What Polygraphy adds to an expected value of zero before dividing by it (f64 machine epsilon).
const ZERO_EXPECTED_EPSILON: f64 = f64::EPSILON;

/// The data a case feeds and checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseData {
    /// Input data sets: call `i` uses set `i mod n` (warm-up calls count), as declared samples rotate.
    pub inputs: Vec<DataSetRecord>,
    /// Expected outputs, one set per input set (the same count), checked once per set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expected: Vec<DataSetRecord>,
    /// Absolute tolerance of the output check: an element fails only when its absolute error exceeds this and its relative error exceeds `rtol` ([`DEFAULT_ATOL`] unless given).
    pub atol: f64,
    /// Relative tolerance of the output check (see `atol`; [`DEFAULT_RTOL`] unless given).
    pub rtol: f64,
}

/// One data set: a file or folder and the tensors read from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataSetRecord {
    /// The file or folder (or trtexec `--loadInputs` spec) as resolved, absolute.
    pub source: String,
    /// `npz`, `npy`, `json` (raw index), `onnx-pb` (TensorProto files) or `raw` (`--loadInputs`).
    pub format: String,
    /// The tensors read from it.
    pub tensors: Vec<DataTensor>,
}

/// One tensor of a data set and the file that holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataTensor {
    /// The tensor's name, matched against the model's input or output names.
    pub name: String,
    /// Element type as stored (`f32`, `i64`, …).
    pub dtype: String,
    /// Dimensions, outermost first.
    pub shape: Vec<usize>,
    /// The file holding it (for `npz` and `json`, the archive or index).
    pub file: String,
    /// SHA-256 of that file.
    pub sha256: String,
}

impl CaseData {
    /// What the input data adds to the workload identity: each tensor's name, type, shape and file hash,
    /// set by set.
    pub fn identity_part(&self) -> serde_json::Value {
        serde_json::Value::from(
            self.inputs
                .iter()
                .map(|set| {
                    set.tensors
                        .iter()
                        .map(|t| serde_json::json!([t.name, t.dtype, t.shape, t.sha256]))
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>(),
        )
    }
}

/// Compares `got` with `expected` element by element the way Polygraphy's default check
/// (`CompareFunc.simple`, `check_error_stat=elemwise`) does: an element mismatches when its absolute
/// error exceeds `atol` (or is NaN) **and** its relative error exceeds `rtol` (or is NaN); the relative
/// error divides by |expected|, an expected zero counting as f64 epsilon. Infinities compare unequal
/// (inf - inf is NaN), as with Polygraphy's default.
pub fn check_output(
    output: &str,
    set: usize,
    (shape, got): (&[usize], &[f64]),
    (expected_shape, expected): (&[usize], &[f64]),
    atol: f64,
    rtol: f64,
) -> OutputCheck {
    let mut check = unchecked(output, set, (shape, got), (expected_shape, expected));
    if check.note.is_some() {
        return check;
    }
    let mut max_abs: f64 = 0.0;
    let mut max_rel: f64 = 0.0;
    let mut nan = false;
    let mut worst: Option<(usize, f64, bool)> = None;
    for (i, (&g, &e)) in got.iter().zip(expected).enumerate() {
        let abs = (g - e).abs();
        let denominator = if e == 0.0 {
            ZERO_EXPECTED_EPSILON
        } else {
            e.abs()
        };
        let rel = abs / denominator;
        let mismatch = (abs.is_nan() || abs > atol) && (rel.is_nan() || rel > rtol);
        if abs.is_nan() {
            nan = true;
        } else {
            max_abs = max_abs.max(abs);
            max_rel = max_rel.max(rel);
        }
        if mismatch {
            check.mismatches += 1;
        }
        // Prefer a mismatch over any passing element, then the larger (or NaN) absolute error.
        let better = match worst {
            None => true,
            Some((_, w_abs, w_mismatch)) => {
                (mismatch && !w_mismatch)
                    || (mismatch == w_mismatch && (abs.is_nan() && !w_abs.is_nan() || abs > w_abs))
            }
        };
        if better {
            worst = Some((i, abs, mismatch));
        }
    }
    if !expected.is_empty() && !nan {
        check.max_abs_error = Some(max_abs);
        check.max_rel_error = Some(max_rel);
    }
    check.worst = worst.map(|(i, _, _)| WorstElement {
        index: unravel(i, shape),
        got: Some(got[i]).filter(|v| v.is_finite()),
        expected: Some(expected[i]).filter(|v| v.is_finite()),
    });
    check.passed = check.mismatches == 0;
    check
}

/// The check of one output before its elements are compared: failed with a note when the shapes
/// differ (then no element is compared).
fn unchecked<T>(
    output: &str,
    set: usize,
    (shape, got): (&[usize], &[T]),
    (expected_shape, expected): (&[usize], &[T]),
) -> OutputCheck {
    let note = (shape != expected_shape || got.len() != expected.len()).then(|| {
        format!(
            "the run produced shape {shape:?}, the expected outputs have shape {expected_shape:?}"
        )
    });
    OutputCheck {
        output: output.to_string(),
        set,
        passed: false,
        max_abs_error: None,
        max_rel_error: None,
        elements: expected.len() as u64,
        mismatches: 0,
        worst: None,
        note,
    }
}

/// Compares string outputs exactly (Polygraphy and ONNX's backend tests do the same): any differing
/// element fails the check, and the note names the first one. Tolerances do not apply.
pub fn check_string_output(
    output: &str,
    set: usize,
    (shape, got): (&[usize], &[String]),
    (expected_shape, expected): (&[usize], &[String]),
) -> OutputCheck {
    let mut check = unchecked(output, set, (shape, got), (expected_shape, expected));
    if check.note.is_some() {
        return check;
    }
    let differing: Vec<usize> = (0..got.len()).filter(|&i| got[i] != expected[i]).collect();
    check.mismatches = differing.len() as u64;
    check.passed = differing.is_empty();
    if let Some(&first) = differing.first() {
        let index: Vec<String> = unravel(first, shape).iter().map(usize::to_string).collect();
        check.note = Some(format!(
            "{} of {} strings differ from the expected outputs (strings must match exactly); first at [{}]: got {:?}, expected {:?}",
            differing.len(),
            expected.len(),
            index.join(","),
            got[first],
            expected[first]
        ));
    } else {
        // Equal strings: no error at all.
        check.max_abs_error = Some(0.0);
        check.max_rel_error = Some(0.0);
    }
    check
}

/// The multi-dimensional index of flat element `i` in C order.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (axis, &n) in shape.iter().enumerate().rev() {
        if n > 0 {
            index[axis] = i % n;
            i /= n;
        }
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_element_fails_only_beyond_both_tolerances_like_polygraphy() {
        // |1.5 - 1.0| = 0.5 > atol 0.1, but relative 0.5 <= rtol 0.6: it passes.
        let c = check_output("y", 0, (&[1], &[1.5]), (&[1], &[1.0]), 0.1, 0.6);
        assert!(c.passed);
        // Beyond both: fails, and the worst element is named.
        let c = check_output(
            "y",
            0,
            (&[2, 2], &[0.0, 1.0, 2.0, 9.0]),
            (&[2, 2], &[0.0, 1.0, 2.0, 3.0]),
            1e-5,
            1e-5,
        );
        assert!(!c.passed);
        assert_eq!(c.mismatches, 1);
        let w = c.worst.as_ref().expect("worst");
        assert_eq!(w.index, vec![1, 1]);
        assert_eq!((w.got, w.expected), (Some(9.0), Some(3.0)));
        assert_eq!(c.max_abs_error, Some(6.0));
        assert_eq!(c.max_rel_error, Some(2.0));
        assert!(
            c.describe_failure(1e-5, 1e-5)
                .contains("worst element [1,1]: got 9, expected 3")
        );
    }

    #[test]
    fn defaults_are_polygraphys_and_nan_or_shape_fail() {
        assert_eq!((DEFAULT_ATOL, DEFAULT_RTOL), (1e-5, 1e-5));
        let c = check_output(
            "y",
            0,
            (&[1], &[1.000_005]),
            (&[1], &[1.0]),
            DEFAULT_ATOL,
            DEFAULT_RTOL,
        );
        assert!(c.passed);
        let c = check_output("y", 0, (&[1], &[f64::NAN]), (&[1], &[1.0]), 1.0, 1.0);
        assert!(!c.passed && c.max_abs_error.is_none());
        let c = check_output(
            "y",
            0,
            (&[2], &[1.0, 2.0]),
            (&[1, 2], &[1.0, 2.0]),
            1.0,
            1.0,
        );
        assert!(!c.passed && c.note.is_some());
    }

    #[test]
    fn strings_must_match_exactly() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let same = check_string_output("y", 0, (&[2], &s(&["a", "b"])), (&[2], &s(&["a", "b"])));
        assert!(same.passed && same.max_abs_error == Some(0.0));
        let c = check_string_output(
            "y",
            1,
            (&[1, 2], &s(&["a", "B "])),
            (&[1, 2], &s(&["a", "b"])),
        );
        assert!(!c.passed);
        assert_eq!(c.mismatches, 1);
        let text = c.describe_failure(1e-5, 1e-5);
        assert!(
            text.contains("1 of 2 strings differ")
                && text.contains(r#"[0,1]: got "B ", expected "b""#),
            "{text}"
        );
    }
}
