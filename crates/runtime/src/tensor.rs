//! Host tensors exchanged between operations and runtimes, and seeded input synthesis.

use ndarray::{ArrayD, IxDyn};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Element types the operations produce and consume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    /// 32-bit float.
    F32,
    /// 16-bit float: a declared model type only; on the host its values travel as [`HostTensor::F32`]
    /// and the runtime converts them.
    F16,
    /// 64-bit float.
    F64,
    /// 64-bit signed integer (token ids, positions).
    I64,
    /// 32-bit signed integer.
    I32,
    /// Boolean.
    Bool,
    /// 8-bit unsigned integer (image bytes).
    U8,
    /// ONNX strings (ONNX Runtime only; tract's runner refuses them).
    #[serde(rename = "string")]
    Str,
}

impl DType {
    /// The type's short name (`f32`, `i64`, `string`, ...), as in shapes shown to people and in
    /// serialized specs.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::F64 => "f64",
            DType::I64 => "i64",
            DType::I32 => "i32",
            DType::Bool => "bool",
            DType::U8 => "u8",
            DType::Str => "string",
        }
    }
}

/// One dimension of a declared tensor shape: fixed, or a named symbol bound at run time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Dim {
    /// A fixed extent.
    Fixed(i64),
    /// A symbolic extent (`batch`, `seq`), bound to a number when the model is fed.
    Symbol(String),
}

impl std::fmt::Display for Dim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dim::Fixed(n) => write!(f, "{n}"),
            Dim::Symbol(s) => f.write_str(s),
        }
    }
}

/// A declared model input or output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorSpec {
    /// The graph's name for the tensor.
    pub name: String,
    /// Its element type.
    pub dtype: DType,
    /// Its declared shape, fixed or symbolic per dimension.
    pub shape: Vec<Dim>,
}

impl TensorSpec {
    /// `name: dtype[d0,d1,...]`, for messages and logs.
    pub fn describe(&self) -> String {
        let dims: Vec<String> = self.shape.iter().map(Dim::to_string).collect();
        format!("{}: {}[{}]", self.name, self.dtype.name(), dims.join(","))
    }

    /// The concrete shape, or the names of unbound symbols.
    pub fn concrete_shape(&self) -> Result<Vec<usize>, Vec<String>> {
        let unbound: Vec<String> = self
            .shape
            .iter()
            .filter_map(|d| {
                if let Dim::Symbol(s) = d {
                    Some(s.clone())
                } else {
                    None
                }
            })
            .collect();
        if !unbound.is_empty() {
            return Err(unbound);
        }
        Ok(self
            .shape
            .iter()
            .map(|d| {
                if let Dim::Fixed(n) = d {
                    (*n).max(0) as usize
                } else {
                    0
                }
            })
            .collect())
    }
}

/// A tensor on the host.
#[derive(Debug, Clone, PartialEq)]
pub enum HostTensor {
    /// 32-bit floats (also the host form of [`DType::F16`]).
    F32(ArrayD<f32>),
    /// 64-bit floats.
    F64(ArrayD<f64>),
    /// 64-bit signed integers.
    I64(ArrayD<i64>),
    /// 32-bit signed integers.
    I32(ArrayD<i32>),
    /// Booleans.
    Bool(ArrayD<bool>),
    /// Bytes.
    U8(ArrayD<u8>),
    /// Strings (ONNX Runtime only).
    Str(ArrayD<String>),
}

impl HostTensor {
    /// The tensor's shape.
    pub fn shape(&self) -> &[usize] {
        match self {
            HostTensor::F32(a) => a.shape(),
            HostTensor::F64(a) => a.shape(),
            HostTensor::I64(a) => a.shape(),
            HostTensor::I32(a) => a.shape(),
            HostTensor::Bool(a) => a.shape(),
            HostTensor::U8(a) => a.shape(),
            HostTensor::Str(a) => a.shape(),
        }
    }

    /// The element type of its values ([`DType::F32`] for an F16 model tensor's host values).
    pub fn dtype(&self) -> DType {
        match self {
            HostTensor::F32(_) => DType::F32,
            HostTensor::F64(_) => DType::F64,
            HostTensor::I64(_) => DType::I64,
            HostTensor::I32(_) => DType::I32,
            HostTensor::Bool(_) => DType::Bool,
            HostTensor::U8(_) => DType::U8,
            HostTensor::Str(_) => DType::Str,
        }
    }

    /// The values when they are 32-bit floats.
    pub fn as_f32(&self) -> Option<&ArrayD<f32>> {
        if let HostTensor::F32(a) = self {
            Some(a)
        } else {
            None
        }
    }

    /// Whether every element is finite (integer tensors always are).
    pub fn is_finite(&self) -> bool {
        match self {
            HostTensor::F32(a) => a.iter().all(|x| x.is_finite()),
            HostTensor::F64(a) => a.iter().all(|x| x.is_finite()),
            _ => true,
        }
    }

    /// The elements as f64, exactly (for checking outputs against expected values).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        match self {
            HostTensor::F64(a) => a.iter().copied().collect(),
            HostTensor::I64(a) => a.iter().map(|&x| x as f64).collect(),
            other => other.to_f32_vec().into_iter().map(f64::from).collect(),
        }
    }

    /// The elements of a string tensor (`None` for a numeric one).
    pub fn strings(&self) -> Option<Vec<String>> {
        match self {
            HostTensor::Str(a) => Some(a.iter().cloned().collect()),
            _ => None,
        }
    }

    /// The elements as f32 (for output comparison; a string is NaN, never equal to anything).
    pub fn to_f32_vec(&self) -> Vec<f32> {
        match self {
            HostTensor::F32(a) => a.iter().copied().collect(),
            HostTensor::F64(a) => a.iter().map(|&x| x as f32).collect(),
            HostTensor::I64(a) => a.iter().map(|&x| x as f32).collect(),
            HostTensor::I32(a) => a.iter().map(|&x| x as f32).collect(),
            HostTensor::Bool(a) => a.iter().map(|&x| f32::from(u8::from(x))).collect(),
            HostTensor::U8(a) => a.iter().map(|&x| f32::from(x)).collect(),
            HostTensor::Str(a) => vec![f32::NAN; a.len()],
        }
    }
}

/// Synthesizes a seeded input for `spec` with the concrete `shape` (like trtexec's random inputs):
/// floats uniform in [-1, 1), integers in [0, int_high), booleans fair coins.
pub fn synthesize(
    spec: &TensorSpec,
    shape: &[usize],
    seed: u64,
    int_high: i64,
) -> anyhow::Result<HostTensor> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n: usize = shape.iter().product();
    let dim = IxDyn(shape);
    Ok(match spec.dtype {
        DType::F32 | DType::F16 => HostTensor::F32(ArrayD::from_shape_vec(
            dim,
            (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect(),
        )?),
        DType::F64 => HostTensor::F64(ArrayD::from_shape_vec(
            dim,
            (0..n).map(|_| rng.random_range(-1.0f64..1.0)).collect(),
        )?),
        DType::I64 => HostTensor::I64(ArrayD::from_shape_vec(
            dim,
            (0..n)
                .map(|_| rng.random_range(0..int_high.max(1)))
                .collect(),
        )?),
        DType::I32 => HostTensor::I32(ArrayD::from_shape_vec(
            dim,
            (0..n)
                .map(|_| rng.random_range(0..int_high.clamp(1, i32::MAX as i64) as i32))
                .collect(),
        )?),
        DType::Bool => HostTensor::Bool(ArrayD::from_shape_vec(
            dim,
            (0..n).map(|_| rng.random_bool(0.5)).collect(),
        )?),
        DType::U8 => HostTensor::U8(ArrayD::from_shape_vec(
            dim,
            (0..n).map(|_| rng.random::<u8>()).collect(),
        )?),
        DType::Str => anyhow::bail!(
            "input `{}` is a string tensor, which trtmc does not synthesize: give its values with --inputs",
            spec.name
        ),
    })
}

/// Upper bound (exclusive) of synthesized integer inputs: small, so token-id inputs stay in range.
const INT_HIGH: i64 = 100;

/// Seeded inputs for every declared input; input `i` uses seed `seed + i`.
pub fn synthesize_all(specs: &[TensorSpec], seed: u64) -> anyhow::Result<Vec<HostTensor>> {
    specs
        .iter()
        .enumerate()
        .map(|(i, spec)| match spec.concrete_shape() {
            Ok(shape) => synthesize(spec, &shape, seed.wrapping_add(i as u64), INT_HIGH),
            Err(unbound) => anyhow::bail!(
                "input `{}` has unbound dimensions {} (give them with --shape {}:<dims> or build.dims.<name>)",
                spec.name,
                unbound.join(", "),
                spec.name
            ),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthesis_is_seeded_and_typed() {
        let spec = TensorSpec {
            name: "x".into(),
            dtype: DType::F32,
            shape: vec![Dim::Fixed(2), Dim::Fixed(3)],
        };
        let a = synthesize(&spec, &[2, 3], 1, 10).expect("a");
        let b = synthesize(&spec, &[2, 3], 1, 10).expect("b");
        let c = synthesize(&spec, &[2, 3], 2, 10).expect("c");
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.shape(), &[2, 3]);
        let ids = TensorSpec {
            dtype: DType::I64,
            ..spec
        };
        let t = synthesize(&ids, &[50], 3, 7).expect("ids");
        assert!(t.to_f32_vec().iter().all(|&v| (0.0..7.0).contains(&v)));
    }

    #[test]
    fn symbolic_shapes_report_unbound_names() {
        let spec = TensorSpec {
            name: "x".into(),
            dtype: DType::F32,
            shape: vec![Dim::Symbol("batch".into()), Dim::Fixed(3)],
        };
        assert_eq!(spec.concrete_shape(), Err(vec!["batch".to_string()]));
        assert_eq!(spec.describe(), "x: f32[batch,3]");
    }
}
