//! Output agreement as documents record it: the algorithm and tolerances asked for, and the verdict
//! per tensor. The losses themselves are computed by `trtmc_core::accuracy`.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Default absolute and relative tolerances of the `l0` loss (trtexec's `--atol` / `--rtol` defaults).
pub const DEFAULT_ATOL: f64 = 1e-5;
/// See [`DEFAULT_ATOL`].
pub const DEFAULT_RTOL: f64 = 1e-5;

/// Loss algorithm, named as trtexec names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Algorithm {
    /// Fraction of elements beyond `atol + rtol * |r|`.
    #[serde(rename = "l0")]
    L0,
    /// Mean absolute difference.
    #[serde(rename = "l1")]
    L1,
    /// Mean squared difference.
    #[serde(rename = "l2")]
    L2,
    /// Largest absolute difference.
    #[serde(rename = "lInf")]
    LInf,
    /// One minus the cosine similarity.
    #[serde(rename = "cos")]
    Cos,
}

impl Algorithm {
    /// Every algorithm, in trtexec's order.
    pub const ALL: [Algorithm; 5] = [
        Algorithm::L0,
        Algorithm::L1,
        Algorithm::L2,
        Algorithm::LInf,
        Algorithm::Cos,
    ];

    /// The name trtexec gives the algorithm (`--accuracyAlgorithm`).
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::L0 => "l0",
            Algorithm::L1 => "l1",
            Algorithm::L2 => "l2",
            Algorithm::LInf => "lInf",
            Algorithm::Cos => "cos",
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Algorithm {
    type Err = String;

    /// Accepts trtexec's names, case-insensitively (`l0`, `l1`, `l2`, `lInf`, `cos`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Algorithm::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                format!("unknown accuracy algorithm '{s}': use one of l0, l1, l2, lInf, cos")
            })
    }
}

/// How two sets of outputs are compared: algorithm, tolerances (l0 only) and thresholds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccuracySpec {
    /// The loss computed per tensor.
    pub algorithm: Algorithm,
    /// Absolute tolerance of the `l0` loss.
    pub atol: f64,
    /// Relative tolerance of the `l0` loss.
    pub rtol: f64,
    /// Threshold for every tensor without its own entry in `per_tensor_epsilon`.
    pub epsilon: f64,
    /// Thresholds of single tensors, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_tensor_epsilon: BTreeMap<String, f64>,
}

impl AccuracySpec {
    /// A spec with the default tolerances and one threshold for every tensor.
    pub fn new(algorithm: Algorithm, epsilon: f64) -> Self {
        Self {
            algorithm,
            atol: DEFAULT_ATOL,
            rtol: DEFAULT_RTOL,
            epsilon,
            per_tensor_epsilon: BTreeMap::new(),
        }
    }

    /// The threshold that applies to `tensor`.
    pub fn threshold(&self, tensor: &str) -> f64 {
        self.per_tensor_epsilon
            .get(tensor)
            .copied()
            .unwrap_or(self.epsilon)
    }
}

/// The verdict for one output tensor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorAccuracy {
    /// The output tensor's name.
    pub name: String,
    /// `None` when the loss is not a finite number (then the tensor fails).
    pub loss: Option<f64>,
    /// The threshold the loss was held against.
    pub threshold: f64,
    /// Whether the loss is finite and at most the threshold.
    pub passed: bool,
    /// Why a tensor failed beyond its loss, e.g. non-finite candidate values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The verdict for a whole set of outputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccuracyReport {
    /// The loss computed per tensor.
    pub algorithm: Algorithm,
    /// Absolute tolerance of the `l0` loss.
    pub atol: f64,
    /// Relative tolerance of the `l0` loss.
    pub rtol: f64,
    /// Whether every compared tensor passed.
    pub passed: bool,
    /// The verdict per compared tensor.
    pub tensors: Vec<TensorAccuracy>,
    /// Candidate outputs that have no reference and were therefore not checked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchecked: Vec<String>,
}

impl AccuracyReport {
    /// Loss per tensor (trtexec's `accuracy_loss` map); `None` for a non-finite loss.
    pub fn losses(&self) -> BTreeMap<String, Option<f64>> {
        self.tensors
            .iter()
            .map(|t| (t.name.clone(), t.loss))
            .collect()
    }

    /// Names of the tensors that failed.
    pub fn failed(&self) -> Vec<&str> {
        self.tensors
            .iter()
            .filter(|t| !t.passed)
            .map(|t| t.name.as_str())
            .collect()
    }
}
