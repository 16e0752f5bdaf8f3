//! The ONNX side of the simulator, through tract: what a model declares (inputs, outputs, nodes,
//! weights), the shape of every tensor for given input shapes, and running it for
//! `--exportOutput`.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::error::ModelError;

use rand::Rng;
use tract_onnx::pb;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::infer::Factoid;

use crate::log::g6;

/// Element types the simulator handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    F32,
    F16,
    F64,
    I64,
    I32,
    I8,
    U8,
    Bool,
}

impl DType {
    /// From ONNX's `TensorProto.DataType`.
    pub fn from_onnx(elem_type: i32) -> Option<Self> {
        Some(match elem_type {
            1 => DType::F32,
            2 => DType::U8,
            3 => DType::I8,
            6 => DType::I32,
            7 => DType::I64,
            9 => DType::Bool,
            10 => DType::F16,
            11 => DType::F64,
            _ => return None,
        })
    }

    fn from_datum(dt: DatumType) -> Option<Self> {
        Some(match dt {
            DatumType::F32 => DType::F32,
            DatumType::F16 => DType::F16,
            DatumType::F64 => DType::F64,
            DatumType::I64 => DType::I64,
            DatumType::I32 => DType::I32,
            DatumType::I8 => DType::I8,
            DatumType::U8 => DType::U8,
            DatumType::Bool => DType::Bool,
            _ => return None,
        })
    }

    fn datum(self) -> DatumType {
        match self {
            DType::F32 => DatumType::F32,
            DType::F16 => DatumType::F16,
            DType::F64 => DatumType::F64,
            DType::I64 => DatumType::I64,
            DType::I32 => DatumType::I32,
            DType::I8 => DatumType::I8,
            DType::U8 => DatumType::U8,
            DType::Bool => DatumType::Bool,
        }
    }

    /// Bytes per element in a raw input file.
    pub fn size(self) -> usize {
        match self {
            DType::F64 | DType::I64 => 8,
            DType::F32 | DType::I32 => 4,
            DType::F16 => 2,
            DType::I8 | DType::U8 | DType::Bool => 1,
        }
    }

    /// As trtexec names binding types (`fp32`, `int64`, ...).
    pub fn trt_name(self) -> &'static str {
        match self {
            DType::F32 => "fp32",
            DType::F16 => "fp16",
            DType::F64 => "fp64",
            DType::I64 => "int64",
            DType::I32 => "int32",
            DType::I8 => "int8",
            DType::U8 => "uint8",
            DType::Bool => "bool",
        }
    }

    /// As the engine inspector writes `Format/Datatype` (TensorRT 10 short form).
    pub fn inspector_name(self) -> &'static str {
        match self {
            DType::F32 => "Float",
            DType::F16 => "Half",
            DType::F64 => "Double",
            DType::I64 => "Int64",
            DType::I32 => "Int32",
            DType::I8 => "Int8",
            DType::U8 => "UInt8",
            DType::Bool => "Bool",
        }
    }

    fn onnx_size(elem_type: i32) -> u64 {
        match elem_type {
            11 | 7 | 13 => 8,
            1 | 6 | 12 => 4,
            10 | 16 | 5 | 4 => 2,
            _ => 1,
        }
    }
}

/// A graph input or output as the model declares it; `None` dimensions are dynamic.
#[derive(Debug, Clone)]
pub struct Decl {
    pub name: String,
    pub dtype: DType,
    pub dims: Option<Vec<Option<u64>>>,
}

/// One ONNX node.
#[derive(Debug, Clone)]
pub struct Node {
    pub name: String,
    pub op_type: String,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
}

/// What the model file declares.
#[derive(Debug, Clone)]
pub struct ModelInfo {
    pub ir_version: i64,
    pub opset: i64,
    pub producer_name: String,
    pub producer_version: String,
    pub domain: String,
    pub model_version: i64,
    pub doc_string: String,
    pub inputs: Vec<Decl>,
    pub outputs: Vec<Decl>,
    pub nodes: Vec<Node>,
    /// Tensors that are weights: initializers and `Constant` outputs.
    pub constants: HashSet<String>,
    pub weight_bytes: u64,
}

/// Reads the model's protobuf (no tract graph yet).
pub fn inspect(path: &Path) -> Result<ModelInfo, ModelError> {
    let proto = tract_onnx::onnx()
        .proto_model_for_path(path)
        .map_err(ModelError::tract)?;
    let graph = proto.graph.as_ref().ok_or(ModelError::NoGraph)?;
    let initializers: HashSet<String> = graph.initializer.iter().map(|t| t.name.clone()).collect();
    let mut constants = initializers.clone();
    let weight_bytes = graph
        .initializer
        .iter()
        .map(|t| {
            let count: u64 = t
                .dims
                .iter()
                .map(|d| u64::try_from(*d).unwrap_or(0))
                .product();
            count * DType::onnx_size(t.data_type)
        })
        .sum();
    let decl = |v: &pb::ValueInfoProto| -> Result<Decl, ModelError> {
        let Some(pb::type_proto::Value::TensorType(t)) =
            v.r#type.as_ref().and_then(|t| t.value.as_ref())
        else {
            return Err(ModelError::NotATensor {
                name: v.name.clone(),
            });
        };
        let dtype = DType::from_onnx(t.elem_type).ok_or_else(|| ModelError::ElementType {
            name: v.name.clone(),
            code: t.elem_type,
        })?;
        let dims = t.shape.as_ref().map(|s| {
            s.dim
                .iter()
                .map(|d| match d.value {
                    Some(pb::tensor_shape_proto::dimension::Value::DimValue(n)) if n >= 0 => {
                        u64::try_from(n).ok()
                    }
                    _ => None,
                })
                .collect()
        });
        Ok(Decl {
            name: v.name.clone(),
            dtype,
            dims,
        })
    };
    let inputs = graph
        .input
        .iter()
        .filter(|i| !initializers.contains(&i.name))
        .map(decl)
        .collect::<Result<Vec<_>, _>>()?;
    let outputs = graph
        .output
        .iter()
        .map(decl)
        .collect::<Result<Vec<_>, _>>()?;
    let mut nodes = Vec::with_capacity(graph.node.len());
    for (index, n) in graph.node.iter().enumerate() {
        if n.op_type == "Constant" {
            constants.extend(n.output.iter().cloned());
            continue;
        }
        let name = if n.name.is_empty() {
            format!("({}) [{}]", index, n.op_type)
        } else {
            n.name.clone()
        };
        nodes.push(Node {
            name,
            op_type: n.op_type.clone(),
            inputs: n.input.iter().filter(|s| !s.is_empty()).cloned().collect(),
            outputs: n.output.iter().filter(|s| !s.is_empty()).cloned().collect(),
        });
    }
    let opset = proto
        .opset_import
        .iter()
        .find(|o| o.domain.is_empty() || o.domain == "ai.onnx")
        .map_or(0, |o| o.version);
    Ok(ModelInfo {
        ir_version: proto.ir_version,
        opset,
        producer_name: proto.producer_name.clone(),
        producer_version: proto.producer_version.clone(),
        domain: proto.domain.clone(),
        model_version: proto.model_version,
        doc_string: proto.doc_string.clone(),
        inputs,
        outputs,
        nodes,
        constants,
        weight_bytes,
    })
}

/// The type and dimensions (`-1` where unknown) of a tensor.
pub type TensorFact = (Option<DType>, Vec<i64>);

/// A tensor's name, type and concrete dimensions.
pub type Shaped = (String, DType, Vec<usize>);

/// Loads the model in tract with concrete input shapes and types it; returns the fact of every
/// named tensor, and the output facts in graph output order.
pub fn analyse(
    path: &Path,
    inputs: &[Shaped],
) -> Result<(HashMap<String, TensorFact>, Vec<Shaped>), ModelError> {
    let (mut model, outlets) = load(path, inputs)?;
    model.analyse(false).map_err(ModelError::tract)?;
    let mut facts = HashMap::with_capacity(outlets.len());
    for (name, outlet) in &outlets {
        let Ok(fact) = model.outlet_fact(*outlet) else {
            continue;
        };
        let dims = fact
            .shape
            .concretize()
            .map(|dims| dims.iter().map(|d| d.to_i64().unwrap_or(-1)).collect())
            .unwrap_or_default();
        let dtype = fact.datum_type.concretize().and_then(DType::from_datum);
        facts.insert(name.clone(), (dtype, dims));
    }
    let typed = model.into_typed().map_err(ModelError::tract)?;
    let mut outputs = Vec::with_capacity(typed.outputs.len());
    for outlet in &typed.outputs {
        let fact = typed.outlet_fact(*outlet).map_err(ModelError::tract)?;
        let name = typed
            .outlet_label(*outlet)
            .map_or_else(|| typed.node(outlet.node).name.clone(), str::to_string);
        let dtype = DType::from_datum(fact.datum_type).ok_or_else(|| ModelError::OutputType {
            name: name.clone(),
            datum: format!("{:?}", fact.datum_type),
        })?;
        let dims = fact
            .shape
            .as_concrete()
            .map(|d| d.to_vec())
            .ok_or_else(|| ModelError::OutputShape {
                name: name.clone(),
                shape: format!("{:?}", fact.shape),
            })?;
        outputs.push((name, dtype, dims));
    }
    Ok((facts, outputs))
}

fn load(
    path: &Path,
    inputs: &[Shaped],
) -> Result<(InferenceModel, HashMap<String, OutletId>), ModelError> {
    let onnx = tract_onnx::onnx();
    let proto = onnx.proto_model_for_path(path).map_err(ModelError::tract)?;
    let dir = path.parent().and_then(Path::to_str);
    let parsed = onnx.parse(&proto, dir).map_err(ModelError::tract)?;
    let mut model = parsed.model;
    for i in 0..model.inputs.len() {
        let name = model.node(model.inputs[i].node).name.clone();
        let Some((_, dtype, dims)) = inputs.iter().find(|(n, _, _)| *n == name) else {
            return Err(ModelError::NoInputShape { name });
        };
        let shape: TVec<usize> = dims.iter().copied().collect();
        model
            .set_input_fact(i, InferenceFact::dt_shape(dtype.datum(), shape))
            .map_err(ModelError::tract)?;
    }
    Ok((model, parsed.outlets_by_name))
}

/// Values of one tensor.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    F32(Vec<f32>),
    F16(Vec<f16>),
    F64(Vec<f64>),
    I64(Vec<i64>),
    I32(Vec<i32>),
    I8(Vec<i8>),
    U8(Vec<u8>),
    Bool(Vec<bool>),
}

impl Values {
    /// Little-endian raw bytes (`--loadInputs` files) of `count` elements of `dtype`.
    pub fn from_le_bytes(dtype: DType, bytes: &[u8]) -> Self {
        fn each<const N: usize, T>(bytes: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
            bytes
                .chunks_exact(N)
                .map(|c| {
                    let mut a = [0u8; N];
                    a.copy_from_slice(c);
                    f(a)
                })
                .collect()
        }
        match dtype {
            DType::F32 => Values::F32(each(bytes, f32::from_le_bytes)),
            DType::F16 => Values::F16(each(bytes, f16::from_le_bytes)),
            DType::F64 => Values::F64(each(bytes, f64::from_le_bytes)),
            DType::I64 => Values::I64(each(bytes, i64::from_le_bytes)),
            DType::I32 => Values::I32(each(bytes, i32::from_le_bytes)),
            DType::I8 => Values::I8(each(bytes, i8::from_le_bytes)),
            DType::U8 => Values::U8(bytes.to_vec()),
            DType::Bool => Values::Bool(bytes.iter().map(|b| *b != 0).collect()),
        }
    }

    /// Random values: floats uniform in [-1, 1], integers in 0..10, booleans either way.
    pub fn random(dtype: DType, count: usize, rng: &mut impl Rng) -> Self {
        let mut float = || rng.random_range(-1.0f64..=1.0);
        match dtype {
            DType::F32 => Values::F32((0..count).map(|_| float() as f32).collect()),
            DType::F16 => Values::F16((0..count).map(|_| f16::from_f64(float())).collect()),
            DType::F64 => Values::F64((0..count).map(|_| float()).collect()),
            DType::I64 => Values::I64((0..count).map(|_| rng.random_range(0..10)).collect()),
            DType::I32 => Values::I32((0..count).map(|_| rng.random_range(0..10)).collect()),
            DType::I8 => Values::I8((0..count).map(|_| rng.random_range(0..10)).collect()),
            DType::U8 => Values::U8((0..count).map(|_| rng.random_range(0..10)).collect()),
            DType::Bool => Values::Bool((0..count).map(|_| rng.random_bool(0.5)).collect()),
        }
    }

    /// A wrong engine's outputs: floats in reverse order × 1.25 + 0.1 (reversed so that a cosine
    /// check sees them too: a mere scale keeps the direction), integers + 1, booleans flipped.
    pub fn perturbed(self) -> Self {
        match self {
            Values::F32(v) => Values::F32(v.into_iter().rev().map(|x| x * 1.25 + 0.1).collect()),
            Values::F16(v) => Values::F16(
                v.into_iter()
                    .rev()
                    .map(|x| f16::from_f32(x.to_f32() * 1.25 + 0.1))
                    .collect(),
            ),
            Values::F64(v) => Values::F64(v.into_iter().rev().map(|x| x * 1.25 + 0.1).collect()),
            Values::I64(v) => Values::I64(v.into_iter().map(|x| x.wrapping_add(1)).collect()),
            Values::I32(v) => Values::I32(v.into_iter().map(|x| x.wrapping_add(1)).collect()),
            Values::I8(v) => Values::I8(v.into_iter().map(|x| x.wrapping_add(1)).collect()),
            Values::U8(v) => Values::U8(v.into_iter().map(|x| x.wrapping_add(1)).collect()),
            Values::Bool(v) => Values::Bool(v.into_iter().map(|x| !x).collect()),
        }
    }

    /// The values as `--exportOutput` prints them: a C++ stream at its default precision, so
    /// floats keep 6 significant digits (`%g`: `0.333333`, `1.23457e+08`, `nan`, `-inf`),
    /// half-precision values are printed as floats, booleans as 0/1.
    pub fn texts(&self) -> Vec<String> {
        match self {
            Values::F32(v) => v.iter().map(|x| g6(f64::from(*x))).collect(),
            Values::F16(v) => v.iter().map(|x| g6(f64::from(x.to_f32()))).collect(),
            Values::F64(v) => v.iter().map(|x| g6(*x)).collect(),
            Values::I64(v) => v.iter().map(ToString::to_string).collect(),
            Values::I32(v) => v.iter().map(ToString::to_string).collect(),
            Values::I8(v) => v.iter().map(ToString::to_string).collect(),
            Values::U8(v) => v.iter().map(ToString::to_string).collect(),
            Values::Bool(v) => v.iter().map(|b| u8::from(*b).to_string()).collect(),
        }
    }

    fn to_tensor(&self, shape: &[usize]) -> TractResult<Tensor> {
        match self {
            Values::F32(v) => Tensor::from_shape(shape, v),
            Values::F16(v) => Tensor::from_shape(shape, v),
            Values::F64(v) => Tensor::from_shape(shape, v),
            Values::I64(v) => Tensor::from_shape(shape, v),
            Values::I32(v) => Tensor::from_shape(shape, v),
            Values::I8(v) => Tensor::from_shape(shape, v),
            Values::U8(v) => Tensor::from_shape(shape, v),
            Values::Bool(v) => Tensor::from_shape(shape, v),
        }
    }

    fn from_tensor(t: &Tensor) -> Result<Self, ModelError> {
        fn all<T: Datum + Copy>(t: &Tensor) -> Result<Vec<T>, ModelError> {
            t.to_plain_array_view::<T>()
                .map(|a| a.iter().copied().collect())
                .map_err(ModelError::tract)
        }
        Ok(match t.datum_type() {
            DatumType::F32 => Values::F32(all(t)?),
            DatumType::F16 => Values::F16(all(t)?),
            DatumType::F64 => Values::F64(all(t)?),
            DatumType::I64 => Values::I64(all(t)?),
            DatumType::I32 => Values::I32(all(t)?),
            DatumType::I8 => Values::I8(all(t)?),
            DatumType::U8 => Values::U8(all(t)?),
            DatumType::Bool => Values::Bool(all(t)?),
            other => {
                return Err(ModelError::OutputValues {
                    datum: format!("{other:?}"),
                });
            }
        })
    }
}

/// The shortest text that reads back to the same float (`T`'s own `Display`/`LowerExp`, both
/// shortest round-trip), with exponent notation for very small and very large magnitudes;
/// `nan`, `inf`, `-inf` as C++ streams print them.
/// One input or output tensor with its values.
#[derive(Debug, Clone)]
pub struct HostTensor {
    pub name: String,
    pub dims: Vec<usize>,
    pub values: Values,
}

/// Runs the model once on `inputs` (one per model input, any order) and returns the outputs in
/// graph output order.
pub fn run(path: &Path, inputs: &[HostTensor]) -> Result<Vec<HostTensor>, ModelError> {
    let shapes: Vec<(String, DType, Vec<usize>)> = inputs
        .iter()
        .map(|t| (t.name.clone(), values_dtype(&t.values), t.dims.clone()))
        .collect();
    let (model, _) = load(path, &shapes)?;
    let order: Vec<String> = model
        .inputs
        .iter()
        .map(|o| model.node(o.node).name.clone())
        .collect();
    let typed = model.into_typed().map_err(ModelError::tract)?;
    let names: Vec<String> = typed
        .outputs
        .iter()
        .map(|o| {
            typed
                .outlet_label(*o)
                .map_or_else(|| typed.node(o.node).name.clone(), str::to_string)
        })
        .collect();
    let plan = typed
        .into_optimized()
        .and_then(|m| m.into_runnable())
        .map_err(ModelError::tract)?;
    let mut values = TVec::new();
    for name in &order {
        let tensor = inputs
            .iter()
            .find(|t| t.name == *name)
            .ok_or_else(|| ModelError::NoInputValue { name: name.clone() })?;
        let t = tensor
            .values
            .to_tensor(&tensor.dims)
            .map_err(|e| ModelError::Input {
                name: name.clone(),
                reason: format!("{e:#}"),
            })?;
        values.push(t.into_tvalue());
    }
    let outputs = plan.run(values).map_err(ModelError::tract)?;
    names
        .into_iter()
        .zip(outputs)
        .map(|(name, value)| {
            let tensor = value.into_tensor();
            Ok(HostTensor {
                name,
                dims: tensor.shape().to_vec(),
                values: Values::from_tensor(&tensor)?,
            })
        })
        .collect()
}

fn values_dtype(values: &Values) -> DType {
    match values {
        Values::F32(_) => DType::F32,
        Values::F16(_) => DType::F16,
        Values::F64(_) => DType::F64,
        Values::I64(_) => DType::I64,
        Values::I32(_) => DType::I32,
        Values::I8(_) => DType::I8,
        Values::U8(_) => DType::U8,
        Values::Bool(_) => DType::Bool,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_a_cpp_stream_does_with_six_significant_digits() {
        // Each expected text is what `std::cout << x` prints (printf "%g").
        let cases: [(f64, &str); 14] = [
            (1.0 / 3.0, "0.333333"),
            (123456789.0, "1.23457e+08"),
            (999999.0, "999999"),
            (999999.5, "1e+06"),
            (0.0001, "0.0001"),
            (0.000012345678, "1.23457e-05"),
            (-2.5, "-2.5"),
            (100.0, "100"),
            (-0.0, "-0"),
            (1e100, "1e+100"),
            (0.1f32 as f64, "0.1"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
            (65504.0, "65504"),
        ];
        for (x, text) in cases {
            assert_eq!(g6(x), text, "{x:e}");
        }
        // Six digits are within the default output tolerances (1e-5 relative) of the exact value.
        for x in [1.0 / 3.0, 2.0 / 3.0, 123456789.0, 1.000005, 9.999995e-9] {
            let back: f64 = g6(x).parse().expect("a number");
            assert!((back - x).abs() <= 5.0e-6 * x.abs(), "{x} -> {back}");
        }
    }

    #[test]
    fn raw_bytes_and_texts_round_trip() {
        let bytes: Vec<u8> = [1.5f32, -0.1, 3.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let v = Values::from_le_bytes(DType::F32, &bytes);
        assert_eq!(v, Values::F32(vec![1.5, -0.1, 3.0]));
        assert_eq!(v.texts(), vec!["1.5", "-0.1", "3"]);
        for text in v.texts() {
            let back: f32 = text.parse().expect("number");
            assert!(bytes.chunks(4).any(|c| c == back.to_le_bytes()));
        }
        assert_eq!(
            Values::F32(vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY]).texts(),
            vec!["nan", "inf", "-inf"]
        );
        assert_eq!(Values::Bool(vec![true, false]).texts(), vec!["1", "0"]);
        assert_eq!(
            Values::F32(vec![4.4703484e-7, 1e20, 0.0, -2.5e-6]).texts(),
            vec!["4.47035e-07", "1e+20", "0", "-2.5e-06"]
        );
        for text in Values::F32(vec![4.4703484e-7, 1e20, -2.5e-6, 0.1]).texts() {
            let parsed: f64 = serde_json::from_str(&text).expect("a JSON number");
            assert!(parsed.is_finite());
        }
        assert_eq!(
            Values::F32(vec![2.0]).perturbed(),
            Values::F32(vec![2.0 * 1.25 + 0.1])
        );
        assert_eq!(Values::I64(vec![3]).perturbed(), Values::I64(vec![4]));
        let i64s: Vec<u8> = [7i64, -2].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(
            Values::from_le_bytes(DType::I64, &i64s),
            Values::I64(vec![7, -2])
        );
    }
}
