//! Output agreement between two runs of a model (a candidate against a reference).
//!
//! The losses are TensorRT 11.1's (`trtexec --accuracyAlgorithm`), computed per output tensor in f64 over
//! the flattened values, with `a` the candidate and `r` the reference:
//!
//! | name   | loss                                                                  |
//! | ------ | --------------------------------------------------------------------- |
//! | `l0`   | fraction of elements with `|a - r| > atol + rtol * |r|`               |
//! | `l1`   | mean of `|a - r|`                                                     |
//! | `l2`   | mean of `(a - r)^2`                                                   |
//! | `lInf` | max of `|a - r|`                                                      |
//! | `cos`  | `1 - cosine_similarity(a, r)`; the similarity is 1.0 when both norms are below 1e-12 and 0.0 when only one is |
//!
//! Lower is better and 0.0 is a perfect match. A tensor passes when its loss is at most its threshold
//! (epsilon). A candidate with a non-finite value (NaN, ±inf), or a loss that comes out non-finite, fails
//! whatever the threshold. A reference with a non-finite value, a missing tensor or a shape mismatch is an
//! error naming the tensor: the comparison itself is meaningless then. Empty tensors have loss 0.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

pub use trtmc_metadata::accuracy::{
    AccuracyReport, AccuracySpec, Algorithm, DEFAULT_ATOL, DEFAULT_RTOL, TensorAccuracy,
};

/// Norm below which a vector counts as zero in the `cos` loss.
pub const COS_ZERO_NORM: f64 = 1e-12;

/// Element type a tensor was stored with (values are held as f64 for the comparison; i64 and u64 beyond
/// 2^53 lose precision there).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElementType {
    /// IEEE half precision (16-bit float).
    F16,
    /// 32-bit float.
    F32,
    /// 64-bit float.
    F64,
    /// Signed 8-bit integer.
    I8,
    /// Signed 16-bit integer.
    I16,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
    /// Unsigned 8-bit integer.
    U8,
    /// Unsigned 16-bit integer.
    U16,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
    /// Boolean, held as 0.0 or 1.0.
    Bool,
    /// ONNX strings (UTF-8), held in [`Tensor::strings`]; compared only for equality.
    String,
}

impl ElementType {
    /// Every element type, in declaration order (what [`FromStr`] accepts).
    pub const ALL: [ElementType; 13] = [
        ElementType::F16,
        ElementType::F32,
        ElementType::F64,
        ElementType::I8,
        ElementType::I16,
        ElementType::I32,
        ElementType::I64,
        ElementType::U8,
        ElementType::U16,
        ElementType::U32,
        ElementType::U64,
        ElementType::Bool,
        ElementType::String,
    ];

    /// The lowercase name used in files and messages (e.g. `f16`, `string`); [`FromStr`] reads it back.
    pub fn name(self) -> &'static str {
        match self {
            ElementType::F16 => "f16",
            ElementType::F32 => "f32",
            ElementType::F64 => "f64",
            ElementType::I8 => "i8",
            ElementType::I16 => "i16",
            ElementType::I32 => "i32",
            ElementType::I64 => "i64",
            ElementType::U8 => "u8",
            ElementType::U16 => "u16",
            ElementType::U32 => "u32",
            ElementType::U64 => "u64",
            ElementType::Bool => "bool",
            ElementType::String => "string",
        }
    }

    /// Bytes per element (0 for strings, which have no fixed size).
    pub fn size(self) -> usize {
        match self {
            ElementType::String => 0,
            ElementType::I8 | ElementType::U8 | ElementType::Bool => 1,
            ElementType::F16 | ElementType::I16 | ElementType::U16 => 2,
            ElementType::F32 | ElementType::I32 | ElementType::U32 => 4,
            ElementType::F64 | ElementType::I64 | ElementType::U64 => 8,
        }
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ElementType {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ElementType::ALL
            .into_iter()
            .find(|t| t.name() == s.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = ElementType::ALL.iter().map(|t| t.name()).collect();
                format!(
                    "unknown element type '{s}': use one of {}",
                    names.join(", ")
                )
            })
    }
}

/// One named tensor, row-major (C order), values widened to f64.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tensor {
    /// The tensor's name as the model declares it (an input or an output); tensors are matched by it.
    pub name: String,
    /// The element type it was stored with.
    pub dtype: ElementType,
    /// Dimensions, outermost first.
    pub shape: Vec<usize>,
    /// The elements widened to f64, row-major (empty for a string tensor).
    pub values: Vec<f64>,
    /// The elements of a string tensor (`values` is then empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub strings: Vec<String>,
}

impl Tensor {
    /// A tensor whose value count must equal the product of its shape.
    pub fn new(
        name: impl Into<String>,
        dtype: ElementType,
        shape: Vec<usize>,
        values: Vec<f64>,
    ) -> Result<Self, AccuracyError> {
        Self::filling_its_shape(name.into(), dtype, shape, values, Vec::new())
    }

    /// A string tensor, whose element count must equal the product of its shape.
    pub fn new_strings(
        name: impl Into<String>,
        shape: Vec<usize>,
        strings: Vec<String>,
    ) -> Result<Self, AccuracyError> {
        Self::filling_its_shape(name.into(), ElementType::String, shape, Vec::new(), strings)
    }

    /// The tensor, when its elements (`values` or `strings`, the other one empty) are exactly the
    /// product of its shape.
    fn filling_its_shape(
        name: String,
        dtype: ElementType,
        shape: Vec<usize>,
        values: Vec<f64>,
        strings: Vec<String>,
    ) -> Result<Self, AccuracyError> {
        let len = values.len() + strings.len();
        match element_count(&shape) {
            Some(n) if n == len => Ok(Self {
                name,
                dtype,
                shape,
                values,
                strings,
            }),
            _ => Err(AccuracyError::LengthMismatch { name, shape, len }),
        }
    }
}

/// Product of a shape's dimensions, `None` on overflow.
pub fn element_count(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
}

/// Loss of `candidate` against `reference` (same length). Returns NaN when a value is non-finite.
pub fn loss(
    algorithm: Algorithm,
    atol: f64,
    rtol: f64,
    candidate: &[f64],
    reference: &[f64],
) -> f64 {
    let n = candidate.len().min(reference.len());
    if n == 0 {
        return 0.0;
    }
    let pairs = candidate.iter().zip(reference.iter());
    match algorithm {
        Algorithm::L0 => {
            let mut over = 0usize;
            for (a, r) in pairs {
                let diff = (a - r).abs();
                if diff.is_nan() {
                    return f64::NAN;
                }
                if diff > atol + rtol * r.abs() {
                    over += 1;
                }
            }
            over as f64 / n as f64
        }
        Algorithm::L1 => pairs.map(|(a, r)| (a - r).abs()).sum::<f64>() / n as f64,
        Algorithm::L2 => pairs.map(|(a, r)| (a - r) * (a - r)).sum::<f64>() / n as f64,
        Algorithm::LInf => {
            let mut max = 0.0f64;
            for (a, r) in pairs {
                let diff = (a - r).abs();
                if diff.is_nan() {
                    return f64::NAN;
                }
                max = max.max(diff);
            }
            max
        }
        Algorithm::Cos => {
            let (mut dot, mut norm_a, mut norm_r) = (0.0f64, 0.0f64, 0.0f64);
            for (a, r) in pairs {
                dot += a * r;
                norm_a += a * a;
                norm_r += r * r;
            }
            let (norm_a, norm_r) = (norm_a.sqrt(), norm_r.sqrt());
            let similarity = match (norm_a < COS_ZERO_NORM, norm_r < COS_ZERO_NORM) {
                (true, true) => 1.0,
                (true, false) | (false, true) => 0.0,
                (false, false) => dot / (norm_a * norm_r),
            };
            1.0 - similarity
        }
    }
}

/// A comparison that cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AccuracyError {
    /// The reference holds no tensor at all.
    #[error(
        "reference has no output tensors: nothing to compare against; give golden outputs with at least one tensor"
    )]
    EmptyReference,
    /// Two tensors of one side have the same name.
    #[error("output tensor '{name}' appears twice in the {side}; tensor names must be unique")]
    DuplicateTensor {
        /// The repeated tensor name.
        name: String,
        /// Which side it is on (`candidate` or `reference`).
        side: &'static str,
    },
    /// A reference tensor the candidate did not produce.
    #[error(
        "output tensor '{name}' has a reference but the candidate did not produce it (candidate outputs: {available})"
    )]
    MissingTensor {
        /// The tensor's name.
        name: String,
        /// The candidate's output names, comma-separated (or a word saying there are none).
        available: String,
    },
    /// The candidate's tensor has another shape than the reference's.
    #[error(
        "output tensor '{name}': candidate shape {candidate:?} differs from reference shape {reference:?}"
    )]
    ShapeMismatch {
        /// The tensor's name.
        name: String,
        /// The candidate's shape.
        candidate: Vec<usize>,
        /// The reference's shape.
        reference: Vec<usize>,
    },
    /// A tensor whose number of elements is not the product of its shape (or the product overflows).
    #[error(
        "tensor '{name}': shape {shape:?} needs a different number of values than the {len} given"
    )]
    LengthMismatch {
        /// The tensor's name.
        name: String,
        /// The shape given.
        shape: Vec<usize>,
        /// The number of elements given.
        len: usize,
    },
    /// The reference holds NaN or infinite values, so no loss against it means anything.
    #[error(
        "reference tensor '{name}' has {count} non-finite value(s) (NaN or ±inf); regenerate the golden outputs"
    )]
    NonFiniteReference {
        /// The tensor's name.
        name: String,
        /// How many of its values are not finite.
        count: usize,
    },
    /// A loss was asked for on a string tensor; strings are only checked for equality.
    #[error(
        "tensor '{name}' holds strings, which a loss cannot measure; check string outputs with run --check-outputs (exact match)"
    )]
    StringTensor {
        /// The tensor's name.
        name: String,
    },
}

/// Compare every reference tensor with the candidate tensor of the same name.
pub fn compare(
    candidate: &[Tensor],
    reference: &[Tensor],
    spec: &AccuracySpec,
) -> Result<AccuracyReport, AccuracyError> {
    if reference.is_empty() {
        return Err(AccuracyError::EmptyReference);
    }
    let candidates = index_by_name(candidate, "candidate outputs")?;
    let references = index_by_name(reference, "reference outputs")?;
    let mut tensors = Vec::with_capacity(reference.len());
    for r in reference {
        check_length(r)?;
        let Some(a) = candidates.get(r.name.as_str()) else {
            let available: Vec<&str> = candidate.iter().map(|t| t.name.as_str()).collect();
            let available = if available.is_empty() {
                "none".to_string()
            } else {
                available.join(", ")
            };
            return Err(AccuracyError::MissingTensor {
                name: r.name.clone(),
                available,
            });
        };
        check_length(a)?;
        if a.shape != r.shape {
            return Err(AccuracyError::ShapeMismatch {
                name: r.name.clone(),
                candidate: a.shape.clone(),
                reference: r.shape.clone(),
            });
        }
        let bad_reference = r.values.iter().filter(|v| !v.is_finite()).count();
        if bad_reference > 0 {
            return Err(AccuracyError::NonFiniteReference {
                name: r.name.clone(),
                count: bad_reference,
            });
        }
        tensors.push(judge(a, r, spec));
    }
    let unchecked = candidate
        .iter()
        .filter(|t| !references.contains_key(t.name.as_str()))
        .map(|t| t.name.clone())
        .collect();
    let passed = tensors.iter().all(|t| t.passed);
    Ok(AccuracyReport {
        algorithm: spec.algorithm,
        atol: spec.atol,
        rtol: spec.rtol,
        passed,
        tensors,
        unchecked,
    })
}

fn judge(candidate: &Tensor, reference: &Tensor, spec: &AccuracySpec) -> TensorAccuracy {
    let threshold = spec.threshold(&reference.name);
    // A loss that cannot be computed fails the tensor, with the reason in its note.
    let failed = |note: String| TensorAccuracy {
        name: reference.name.clone(),
        loss: None,
        threshold,
        passed: false,
        note: Some(note),
    };
    let non_finite = candidate.values.iter().filter(|v| !v.is_finite()).count();
    if non_finite > 0 {
        return failed(format!(
            "{non_finite} of {} candidate values are not finite (NaN or ±inf)",
            candidate.values.len()
        ));
    }
    let value = loss(
        spec.algorithm,
        spec.atol,
        spec.rtol,
        &candidate.values,
        &reference.values,
    );
    if !value.is_finite() {
        return failed(format!(
            "the {} loss is not a finite number",
            spec.algorithm
        ));
    }
    TensorAccuracy {
        name: reference.name.clone(),
        loss: Some(value),
        threshold,
        passed: value <= threshold,
        note: None,
    }
}

fn check_length(t: &Tensor) -> Result<(), AccuracyError> {
    if t.dtype == ElementType::String {
        return Err(AccuracyError::StringTensor {
            name: t.name.clone(),
        });
    }
    match element_count(&t.shape) {
        Some(n) if n == t.values.len() => Ok(()),
        _ => Err(AccuracyError::LengthMismatch {
            name: t.name.clone(),
            shape: t.shape.clone(),
            len: t.values.len(),
        }),
    }
}

fn index_by_name<'a>(
    tensors: &'a [Tensor],
    side: &'static str,
) -> Result<BTreeMap<&'a str, &'a Tensor>, AccuracyError> {
    let mut seen = BTreeSet::new();
    let mut map = BTreeMap::new();
    for t in tensors {
        if !seen.insert(t.name.as_str()) {
            return Err(AccuracyError::DuplicateTensor {
                name: t.name.clone(),
                side,
            });
        }
        map.insert(t.name.as_str(), t);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, values: &[f64]) -> Tensor {
        Tensor::new(name, ElementType::F32, vec![values.len()], values.to_vec())
            .expect("consistent tensor")
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn losses_match_their_definitions() {
        let a = [1.0, 2.0, 3.5, -4.0];
        let r = [1.0, 2.5, 3.0, -4.0];
        // diffs: 0, 0.5, 0.5, 0
        assert!(close(loss(Algorithm::L0, 1e-5, 1e-5, &a, &r), 0.5));
        assert!(close(loss(Algorithm::L1, 0.0, 0.0, &a, &r), 0.25));
        assert!(close(loss(Algorithm::L2, 0.0, 0.0, &a, &r), 0.125));
        assert!(close(loss(Algorithm::LInf, 0.0, 0.0, &a, &r), 0.5));
        let dot = 1.0 + 5.0 + 10.5 + 16.0;
        let na = (1.0f64 + 4.0 + 12.25 + 16.0).sqrt();
        let nr = (1.0f64 + 6.25 + 9.0 + 16.0).sqrt();
        assert!(close(
            loss(Algorithm::Cos, 0.0, 0.0, &a, &r),
            1.0 - dot / (na * nr)
        ));
    }

    #[test]
    fn l0_tolerance_scales_with_the_reference() {
        // |a - r| = 0.1 is within atol + rtol * |r| = 0 + 0.01 * 100 = 1 for r = 100, not for r = 1.
        let a = [100.1, 1.1];
        let r = [100.0, 1.0];
        assert!(close(loss(Algorithm::L0, 0.0, 0.01, &a, &r), 0.5));
        assert!(close(loss(Algorithm::L0, 0.2, 0.0, &a, &r), 0.0));
    }

    #[test]
    fn cos_treats_two_zero_vectors_as_identical_and_one_as_orthogonal() {
        assert_eq!(
            loss(Algorithm::Cos, 0.0, 0.0, &[0.0, 0.0], &[0.0, 0.0]),
            0.0
        );
        assert_eq!(
            loss(Algorithm::Cos, 0.0, 0.0, &[0.0, 0.0], &[1.0, 0.0]),
            1.0
        );
        assert!(close(
            loss(Algorithm::Cos, 0.0, 0.0, &[2.0, 0.0], &[1.0, 0.0]),
            0.0
        ));
        assert!(close(
            loss(Algorithm::Cos, 0.0, 0.0, &[-1.0, 0.0], &[1.0, 0.0]),
            2.0
        ));
    }

    #[test]
    fn threshold_decides_per_tensor() {
        let mut spec = AccuracySpec::new(Algorithm::LInf, 0.1);
        spec.per_tensor_epsilon.insert("y".into(), 1.0);
        let report = compare(
            &[t("x", &[1.5]), t("y", &[1.5])],
            &[t("x", &[1.0]), t("y", &[1.0])],
            &spec,
        )
        .expect("comparable");
        assert!(!report.passed);
        assert_eq!(report.failed(), vec!["x"]);
        assert_eq!(report.tensors[1].threshold, 1.0);
        assert!(report.tensors[1].passed);
        // Exactly at the threshold passes.
        let exact = compare(
            &[t("x", &[1.5])],
            &[t("x", &[1.0])],
            &AccuracySpec::new(Algorithm::LInf, 0.5),
        )
        .expect("comparable");
        assert!(exact.passed);
    }

    #[test]
    fn non_finite_candidate_fails_even_with_an_infinite_threshold() {
        let spec = AccuracySpec::new(Algorithm::L1, f64::INFINITY);
        let report = compare(&[t("y", &[f64::NAN, 1.0])], &[t("y", &[1.0, 1.0])], &spec)
            .expect("comparable");
        assert!(!report.passed);
        assert_eq!(report.tensors[0].loss, None);
        assert!(
            report.tensors[0]
                .note
                .as_deref()
                .unwrap_or("")
                .contains("1 of 2")
        );
        // A finite candidate whose loss overflows also fails.
        let report = compare(
            &[t("y", &[1e300])],
            &[t("y", &[-1e300])],
            &AccuracySpec::new(Algorithm::L2, 1e308),
        )
        .expect("comparable");
        assert!(!report.passed);
    }

    #[test]
    fn mismatches_are_errors_naming_the_tensor() {
        let spec = AccuracySpec::new(Algorithm::L1, 1.0);
        let err = compare(&[t("a", &[1.0])], &[t("y", &[1.0])], &spec).expect_err("missing");
        assert!(
            err.to_string().contains("'y'") && err.to_string().contains("a"),
            "{err}"
        );
        let shaped = Tensor::new("y", ElementType::F32, vec![1, 2], vec![1.0, 2.0]).expect("ok");
        let err = compare(&[shaped], &[t("y", &[1.0, 2.0])], &spec).expect_err("shape");
        assert!(matches!(err, AccuracyError::ShapeMismatch { ref name, .. } if name == "y"));
        let err =
            compare(&[t("y", &[1.0])], &[t("y", &[f64::INFINITY])], &spec).expect_err("bad ref");
        assert!(err.to_string().contains("reference tensor 'y'"), "{err}");
        let err =
            compare(&[t("y", &[1.0]), t("y", &[1.0])], &[t("y", &[1.0])], &spec).expect_err("dup");
        assert!(matches!(err, AccuracyError::DuplicateTensor { .. }));
        assert_eq!(compare(&[], &[], &spec), Err(AccuracyError::EmptyReference));
        assert!(Tensor::new("z", ElementType::F32, vec![2, 2], vec![1.0]).is_err());
    }

    #[test]
    fn extra_candidate_outputs_are_listed_as_unchecked() {
        let spec = AccuracySpec::new(Algorithm::L0, 0.0);
        let report = compare(
            &[t("y", &[1.0]), t("aux", &[2.0])],
            &[t("y", &[1.0])],
            &spec,
        )
        .expect("ok");
        assert!(report.passed);
        assert_eq!(report.unchecked, vec!["aux".to_string()]);
        assert_eq!(report.losses().get("y"), Some(&Some(0.0)));
    }

    #[test]
    fn names_round_trip() {
        for a in Algorithm::ALL {
            assert_eq!(a.name().parse::<Algorithm>(), Ok(a));
            let json = serde_json::to_string(&a).expect("serializes");
            assert_eq!(json, format!("\"{}\"", a.name()));
        }
        assert_eq!("LINF".parse::<Algorithm>(), Ok(Algorithm::LInf));
        assert!("l3".parse::<Algorithm>().is_err());
        for e in ElementType::ALL {
            assert_eq!(e.name().parse::<ElementType>(), Ok(e));
        }
    }
}
