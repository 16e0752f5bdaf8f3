//! Seeded random weights for real-architecture ONNX models whose weights are placeholders.
//!
//! The `onnx` wheel's `light_*` models keep their architecture but fill every weight with one
//! constant (mostly through `ConstantOfShape`), so their outputs cannot tell two runtimes or two
//! precisions apart. [`reweight`] gives each weight tensor seeded values chosen by what consumes it:
//!
//! | consumer (through Unsqueeze/Reshape/Identity/...) | values |
//! |---|---|
//! | Conv / ConvTranspose weight | He uniform (variance 2 / fan_in) |
//! | Gemm / MatMul weight | uniform with variance 1 / fan_in |
//! | bias of Conv, Gemm, a normalisation; Add / Sub / Sum operand | uniform in ±0.05 |
//! | BatchNormalization scale; Mul / Div operand; other norm scales | uniform in [0.8, 1.2) |
//! | BatchNormalization mean / variance | calibrated, see below |
//! | PRelu slope | uniform in [0, 0.25) |
//!
//! Without real running statistics a deep network's activations grow or shrink layer by layer.
//! So one pass in graph order estimates the mean and mean square of every activation (unit-scale
//! input, zero-mean weights, ReLU of a Gaussian, independent branches adding their variances) and
//! sets each BatchNormalization's running mean and variance near the estimate for its input: the
//! mean within ±0.1 standard deviations, the variance within a factor [0.8, 1.25) and always
//! positive. Activations then stay near unit scale through any depth.
//!
//! Everything else (graph structure, names, non-weight constants, integer tensors, opsets) is
//! kept. Weights produced by `ConstantOfShape` become initializers of the same name, shape and
//! dtype; the shape tensors they leave unused are dropped.

use std::collections::{HashMap, HashSet};

use anyhow::{Context, Result, bail};
use prost::Message;
use tract_onnx::pb;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::f16;

use crate::init::{TensorRng, scaled_bound};

/// Gives every weight tensor of `onnx_bytes` seeded random values (see the module docs) and
/// returns the re-encoded model. The same bytes and seed always give the same output.
pub fn reweight(onnx_bytes: &[u8], seed: u64) -> Result<Vec<u8>> {
    let mut model = pb::ModelProto::decode(onnx_bytes).context("input is not an ONNX model")?;
    let ir_version = model.ir_version;
    let graph = model.graph.as_mut().context("ONNX model has no graph")?;
    let candidates = find_weights(graph)?;
    let roles = assign_roles(graph, &candidates);
    let values = generate(graph, &candidates, &roles, seed)?;
    apply(graph, ir_version, &candidates, values)?;
    Ok(model.encode_to_vec())
}

/// A float tensor whose values can be replaced.
#[derive(Debug, Clone)]
struct Weight {
    dims: Vec<usize>,
    dtype: DataType,
    /// `Some(node index)` when a ConstantOfShape node produces it, `None` for an initializer.
    fill_node: Option<usize>,
}

/// How a weight is used, which decides its distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Role {
    ConvWeight,
    /// Matrix operand of Gemm/MatMul; `fan_in_axis` is the axis summed over.
    Matrix {
        fan_in_axis: usize,
    },
    Shift,
    Scale,
    BnMean,
    BnVar,
    Slope,
}

fn find_weights(graph: &pb::GraphProto) -> Result<HashMap<String, Weight>> {
    let int_consts: HashMap<&str, Vec<i64>> = graph
        .initializer
        .iter()
        .filter_map(|t| int64_values(t).map(|v| (t.name.as_str(), v)))
        .collect();
    let mut weights = HashMap::new();
    for t in &graph.initializer {
        if let Some(dtype) = float_dtype(t.data_type) {
            let dims = to_dims(&t.dims).with_context(|| format!("initializer {:?}", t.name))?;
            weights.insert(
                t.name.clone(),
                Weight {
                    dims,
                    dtype,
                    fill_node: None,
                },
            );
        }
    }
    for (index, node) in graph.node.iter().enumerate() {
        if node.op_type != "ConstantOfShape" || node.output.len() != 1 {
            continue;
        }
        let Some(shape) = node.input.first().and_then(|i| int_consts.get(i.as_str())) else {
            continue; // shape computed at run time: not a weight
        };
        // The fill value's dtype is the output dtype; without `value` the output is f32 zeros.
        let value_dtype = node
            .attribute
            .iter()
            .find(|a| a.name == "value")
            .and_then(|a| a.t.as_ref())
            .map_or(DataType::Float as i32, |t| t.data_type);
        if let Some(dtype) = float_dtype(value_dtype) {
            let dims =
                to_dims(shape).with_context(|| format!("ConstantOfShape {:?}", node.name))?;
            weights.insert(
                node.output[0].clone(),
                Weight {
                    dims,
                    dtype,
                    fill_node: Some(index),
                },
            );
        }
    }
    Ok(weights)
}

/// Follows each weight through shape-only ops to the first op that uses its values.
fn assign_roles(
    graph: &pb::GraphProto,
    weights: &HashMap<String, Weight>,
) -> HashMap<String, Role> {
    let mut consumers: HashMap<&str, Vec<(&pb::NodeProto, usize)>> = HashMap::new();
    for node in &graph.node {
        for (slot, input) in node.input.iter().enumerate() {
            consumers
                .entry(input.as_str())
                .or_default()
                .push((node, slot));
        }
    }
    let mut roles = HashMap::new();
    for name in weights.keys() {
        let mut frontier = vec![name.as_str()];
        let mut seen = HashSet::new();
        'search: while let Some(value) = frontier.pop() {
            if !seen.insert(value) {
                continue;
            }
            for &(node, slot) in consumers.get(value).map(Vec::as_slice).unwrap_or_default() {
                if is_shape_only(&node.op_type) && slot == 0 {
                    frontier.extend(node.output.iter().map(String::as_str));
                } else if let Some(role) = role_of(node, slot) {
                    roles.insert(name.clone(), role);
                    break 'search;
                }
            }
        }
    }
    roles
}

fn is_shape_only(op: &str) -> bool {
    matches!(
        op,
        "Unsqueeze"
            | "Squeeze"
            | "Reshape"
            | "Identity"
            | "Flatten"
            | "Transpose"
            | "Cast"
            | "Expand"
    )
}

fn role_of(node: &pb::NodeProto, slot: usize) -> Option<Role> {
    let int_attr = |name: &str| {
        node.attribute
            .iter()
            .find(|a| a.name == name)
            .map_or(0, |a| a.i)
    };
    Some(match (node.op_type.as_str(), slot) {
        ("Conv" | "ConvTranspose", 1) => Role::ConvWeight,
        ("Conv" | "ConvTranspose" | "Gemm", 2) => Role::Shift,
        ("Gemm", 1) => Role::Matrix {
            fan_in_axis: if int_attr("transB") != 0 { 1 } else { 0 },
        },
        ("MatMul", 1) => Role::Matrix { fan_in_axis: 0 },
        ("BatchNormalization", 1) => Role::Scale,
        ("BatchNormalization", 2) => Role::Shift,
        ("BatchNormalization", 3) => Role::BnMean,
        ("BatchNormalization", 4) => Role::BnVar,
        ("InstanceNormalization" | "LayerNormalization", 1) => Role::Scale,
        ("InstanceNormalization" | "LayerNormalization", 2) => Role::Shift,
        ("Mul" | "Div", _) => Role::Scale,
        ("Add" | "Sub" | "Sum", _) => Role::Shift,
        ("PRelu", 1) => Role::Slope,
        _ => return None,
    })
}

/// Estimated elementwise mean and mean square of an activation.
#[derive(Debug, Clone, Copy)]
struct Stat {
    mean: f64,
    sq: f64,
}

impl Stat {
    const UNIT: Stat = Stat { mean: 0.0, sq: 1.0 };
    fn from_mean_var(mean: f64, var: f64) -> Stat {
        Stat {
            mean,
            sq: var + mean * mean,
        }
    }
    fn var(self) -> f64 {
        (self.sq - self.mean * self.mean).max(1e-12)
    }
}

/// Seeded values for every weight with a role, in graph order so BatchNormalization statistics
/// can follow the estimated activations.
fn generate(
    graph: &pb::GraphProto,
    weights: &HashMap<String, Weight>,
    roles: &HashMap<String, Role>,
    seed: u64,
) -> Result<HashMap<String, Vec<f32>>> {
    let mut values: HashMap<String, Vec<f32>> = HashMap::new();
    let mut stats: HashMap<&str, Stat> = HashMap::new();
    // Values computed only from constants (e.g. an Unsqueeze of a weight) are operands, not
    // activations, and do not enter the activation estimates.
    let mut constants: HashSet<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
    constants.extend(weights.keys().map(String::as_str));

    for node in &graph.node {
        let inputs: Vec<&str> = node
            .input
            .iter()
            .map(String::as_str)
            .filter(|i| !i.is_empty())
            .collect();
        if !inputs.is_empty() && inputs.iter().all(|i| constants.contains(i)) {
            constants.extend(node.output.iter().map(String::as_str));
        }
        let activation_inputs: Vec<Stat> = inputs
            .iter()
            .filter(|i| !constants.contains(*i))
            .map(|i| stats.get(i).copied().unwrap_or(Stat::UNIT))
            .collect();
        let first = activation_inputs.first().copied().unwrap_or(Stat::UNIT);

        // Generate this node's weights, BatchNormalization statistics from its input estimate.
        for input in &node.input {
            let (Some(weight), Some(&role)) = (weights.get(input), roles.get(input)) else {
                continue;
            };
            if values.contains_key(input) {
                continue;
            }
            let calibrate = (node.op_type == "BatchNormalization").then_some(first);
            let generated = weight_values(input, weight, role, seed, calibrate)?;
            values.insert(input.clone(), generated);
        }

        let operand_sq = |slot: usize| -> Option<f64> {
            let name = node.input.get(slot)?;
            let v = values.get(name)?;
            Some(
                v.iter().map(|&x| f64::from(x) * f64::from(x)).sum::<f64>() / v.len().max(1) as f64,
            )
        };
        let out = match node.op_type.as_str() {
            "Conv" | "Gemm" | "MatMul" => match (
                operand_sq(1),
                node.input.get(1).and_then(|w| weights.get(w)),
            ) {
                (Some(w_sq), Some(w)) => {
                    let fan_in = match roles.get(&node.input[1]) {
                        Some(Role::Matrix { fan_in_axis }) => {
                            w.dims.get(*fan_in_axis).copied().unwrap_or(1)
                        }
                        _ => w.dims.iter().skip(1).product(),
                    };
                    let bias_sq = operand_sq(2).unwrap_or(0.0);
                    Stat {
                        mean: 0.0,
                        sq: fan_in as f64 * w_sq * first.sq + bias_sq,
                    }
                }
                _ => first,
            },
            "BatchNormalization" | "InstanceNormalization" | "LayerNormalization" => Stat::UNIT,
            "Relu" => relu(first),
            // Independent branches: means and variances add.
            "Add" | "Sum" if activation_inputs.len() > 1 => Stat::from_mean_var(
                activation_inputs.iter().map(|s| s.mean).sum(),
                activation_inputs.iter().map(|s| s.var()).sum(),
            ),
            "Concat" if !activation_inputs.is_empty() => {
                let n = activation_inputs.len() as f64;
                Stat {
                    mean: activation_inputs.iter().map(|s| s.mean).sum::<f64>() / n,
                    sq: activation_inputs.iter().map(|s| s.sq).sum::<f64>() / n,
                }
            }
            _ => first,
        };
        for output in &node.output {
            stats.insert(output.as_str(), out);
        }
    }
    Ok(values)
}

/// Mean and mean square of ReLU(x) for x ~ N(mean, var).
fn relu(s: Stat) -> Stat {
    let sigma = s.var().sqrt();
    let z = s.mean / sigma;
    let cdf = 0.5 * (1.0 + erf(z / std::f64::consts::SQRT_2));
    let pdf = (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt();
    Stat {
        mean: s.mean * cdf + sigma * pdf,
        sq: (s.mean * s.mean + sigma * sigma) * cdf + s.mean * sigma * pdf,
    }
}

/// Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7): plenty for a scale estimate.
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let y = 1.0 - poly * (-x * x).exp();
    if x < 0.0 { -y } else { y }
}

fn weight_values(
    name: &str,
    w: &Weight,
    role: Role,
    seed: u64,
    input: Option<Stat>,
) -> Result<Vec<f32>> {
    let count = w
        .dims
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .with_context(|| format!("weight {name:?} has too many elements"))?;
    let mut rng = TensorRng::new(seed, name);
    let input = input.unwrap_or(Stat::UNIT);
    let (mean, std) = (input.mean as f32, input.var().sqrt() as f32);
    Ok(match role {
        Role::ConvWeight => {
            let bound = scaled_bound(2.0, w.dims.iter().skip(1).product());
            rng.fill(count, -bound, bound)
        }
        Role::Matrix { fan_in_axis } => {
            let bound = scaled_bound(1.0, w.dims.get(fan_in_axis).copied().unwrap_or(1));
            rng.fill(count, -bound, bound)
        }
        Role::Shift => rng.fill(count, -0.05, 0.05),
        Role::Scale => rng.fill(count, 0.8, 1.2),
        Role::Slope => rng.fill(count, 0.0, 0.25),
        Role::BnMean => rng
            .fill(count, -0.1, 0.1)
            .into_iter()
            .map(|u| mean + u * std)
            .collect(),
        Role::BnVar => {
            let var = (std * std).max(1e-6);
            rng.fill(count, 0.8, 1.25)
                .into_iter()
                .map(|u| u * var)
                .collect()
        }
    })
}

/// Writes the generated values back: initializers in place, ConstantOfShape outputs as new
/// initializers (with graph inputs too before IR 4, where every initializer must be one).
fn apply(
    graph: &mut pb::GraphProto,
    ir_version: i64,
    weights: &HashMap<String, Weight>,
    mut values: HashMap<String, Vec<f32>>,
) -> Result<()> {
    for t in &mut graph.initializer {
        if let (Some(v), Some(w)) = (values.remove(&t.name), weights.get(&t.name)) {
            set_data(t, w.dtype, &v)?;
        }
    }
    let mut replaced_nodes = HashSet::new();
    let mut new_initializers = Vec::new();
    let mut names: Vec<&String> = values.keys().collect();
    names.sort(); // stable output order
    for name in names {
        let (Some(w), Some(v)) = (weights.get(name), values.get(name)) else {
            continue;
        };
        let Some(node) = w.fill_node else { continue };
        replaced_nodes.insert(node);
        let mut t = pb::TensorProto {
            name: name.clone(),
            dims: w.dims.iter().map(|&d| d as i64).collect(),
            data_type: w.dtype as i32,
            ..Default::default()
        };
        set_data(&mut t, w.dtype, v)?;
        if ir_version < 4 {
            graph.input.push(pb::ValueInfoProto {
                name: name.clone(),
                r#type: Some(tensor_type(w)),
                ..Default::default()
            });
        }
        new_initializers.push(t);
    }
    let removed_shapes: HashSet<String> = replaced_nodes
        .iter()
        .filter_map(|&i| graph.node.get(i).and_then(|n| n.input.first().cloned()))
        .collect();
    let mut index = 0;
    graph.node.retain(|_| {
        index += 1;
        !replaced_nodes.contains(&(index - 1))
    });
    // Drop shape tensors that only fed the replaced ConstantOfShape nodes.
    let still_used: HashSet<&str> = graph
        .node
        .iter()
        .flat_map(|n| n.input.iter().map(String::as_str))
        .chain(graph.output.iter().map(|o| o.name.as_str()))
        .collect();
    let orphaned: HashSet<String> = removed_shapes
        .into_iter()
        .filter(|s| !still_used.contains(s.as_str()))
        .collect();
    graph.initializer.retain(|t| !orphaned.contains(&t.name));
    graph.input.retain(|i| !orphaned.contains(&i.name));
    graph.initializer.extend(new_initializers);
    Ok(())
}

fn tensor_type(w: &Weight) -> pb::TypeProto {
    use pb::tensor_shape_proto::{Dimension, dimension};
    let dim = w
        .dims
        .iter()
        .map(|&d| Dimension {
            value: Some(dimension::Value::DimValue(d as i64)),
            ..Default::default()
        })
        .collect();
    pb::TypeProto {
        value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
            elem_type: w.dtype as i32,
            shape: Some(pb::TensorShapeProto { dim }),
        })),
        ..Default::default()
    }
}

/// Replaces a tensor's data with `values` in `dtype`, as raw little-endian bytes.
fn set_data(t: &mut pb::TensorProto, dtype: DataType, values: &[f32]) -> Result<()> {
    t.raw_data = match dtype {
        DataType::Float => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        DataType::Double => values
            .iter()
            .flat_map(|&v| f64::from(v).to_le_bytes())
            .collect(),
        DataType::Float16 => values
            .iter()
            .flat_map(|&v| f16::from_f32(v).to_bits().to_le_bytes())
            .collect(),
        other => bail!("tensor {:?}: cannot write dtype {other:?}", t.name),
    };
    t.float_data.clear();
    t.double_data.clear();
    t.int32_data.clear();
    t.external_data.clear();
    t.data_location = None;
    Ok(())
}

fn float_dtype(code: i32) -> Option<DataType> {
    match DataType::try_from(code).ok()? {
        d @ (DataType::Float | DataType::Double | DataType::Float16) => Some(d),
        _ => None,
    }
}

fn to_dims(dims: &[i64]) -> Result<Vec<usize>> {
    dims.iter()
        .map(|&d| usize::try_from(d).with_context(|| format!("negative dimension {d}")))
        .collect()
}

fn int64_values(t: &pb::TensorProto) -> Option<Vec<i64>> {
    if t.data_type != DataType::Int64 as i32 {
        return None;
    }
    if !t.int64_data.is_empty() {
        return Some(t.int64_data.clone());
    }
    if !t.raw_data.len().is_multiple_of(8) {
        return None;
    }
    Some(
        t.raw_data
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relu_of_standard_normal() {
        let s = relu(Stat::UNIT);
        assert!((s.mean - 1.0 / (2.0 * std::f64::consts::PI).sqrt()).abs() < 1e-6);
        assert!((s.sq - 0.5).abs() < 1e-6);
    }

    #[test]
    fn erf_matches_known_values() {
        assert!(erf(0.0).abs() < 1e-7);
        assert!((erf(1.0) - 0.842_700_79).abs() < 2e-7);
        assert!((erf(-2.0) + 0.995_322_27).abs() < 2e-7);
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(reweight(b"not an onnx model at all", 1).is_err());
    }
}
