//! The simulated engine file: a JSON document with everything a later `--loadEngine` needs
//! (version, model path, tokens, latency, faults, bindings, layers), and the layers themselves,
//! derived from the ONNX graph.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::model::{DType, ModelInfo, TensorFact};
use crate::version::SimVersion;

/// The `format` of every simulated engine.
pub const FORMAT: &str = "trtmc-sim-engine/1";

/// An input binding: the shapes of the optimization profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputBinding {
    pub name: String,
    pub dtype: DType,
    /// The `OPT` shape (what inference uses without `--shapes`).
    pub dims: Vec<usize>,
    pub min: Vec<usize>,
    pub max: Vec<usize>,
}

/// An output binding (shape for the `OPT` input shapes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputBinding {
    pub name: String,
    pub dtype: DType,
    pub dims: Vec<usize>,
}

/// One tensor of a layer record, as the engine inspector writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorRecord {
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Location", skip_serializing_if = "Option::is_none", default)]
    pub location: Option<String>,
    #[serde(rename = "Dimensions")]
    pub dimensions: Vec<i64>,
    #[serde(rename = "Format/Datatype")]
    pub format: String,
}

/// One layer record of `--exportLayerInfo` at detailed verbosity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerRecord {
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "LayerType")]
    pub layer_type: String,
    #[serde(rename = "Inputs")]
    pub inputs: Vec<TensorRecord>,
    #[serde(rename = "Outputs")]
    pub outputs: Vec<TensorRecord>,
    #[serde(
        rename = "ParameterType",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub parameter_type: Option<String>,
    #[serde(rename = "TacticName")]
    pub tactic_name: String,
    #[serde(
        rename = "TacticValue",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub tactic_value: Option<String>,
    #[serde(rename = "StreamId")]
    pub stream_id: i64,
    #[serde(rename = "Metadata")]
    pub metadata: String,
}

/// A layer and its share of the engine's GPU time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineLayer {
    pub share: f64,
    pub record: LayerRecord,
    /// The weights the layer reads (ONNX initializers); only TensorRT 11's form lists them.
    #[serde(default)]
    pub constants: Vec<TensorRecord>,
}

/// The engine document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Engine {
    pub format: String,
    /// `11.1.0`
    pub tensorrt: String,
    /// `11.1.0.106`
    pub library: String,
    /// Absolute path of the ONNX model it was built from.
    pub onnx: String,
    pub route: Option<String>,
    pub tokens: Vec<String>,
    /// Mean GPU compute time of one query.
    pub latency_ms: f64,
    pub wrong_outputs: bool,
    pub crash_infer: bool,
    /// The size a real engine of this model would have (weights plus a little).
    pub size_mib: f64,
    /// `layer_names_only`, `detailed` or `none`, as built.
    pub profiling_verbosity: String,
    pub inputs: Vec<InputBinding>,
    pub outputs: Vec<OutputBinding>,
    pub layers: Vec<EngineLayer>,
}

/// Why an engine file cannot be used.
#[derive(Debug)]
pub enum LoadError {
    /// The file cannot be read.
    Unreadable(String),
    /// Not a simulator engine (or damaged).
    NotAnEngine,
    /// Built by another simulated TensorRT release: (built with, running).
    OtherVersion(String),
}

impl Engine {
    pub fn write(&self, path: &Path) -> Result<(), std::io::Error> {
        let text = serde_json::to_string_pretty(self)?;
        std::fs::write(path, text + "\n")
    }

    /// Reads an engine file for release `v`.
    pub fn read(path: &Path, v: &SimVersion) -> Result<Self, LoadError> {
        let bytes = std::fs::read(path).map_err(|e| LoadError::Unreadable(e.to_string()))?;
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|_| LoadError::NotAnEngine)?;
        if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
            return Err(LoadError::NotAnEngine);
        }
        let built_with = value
            .get("library")
            .and_then(|f| f.as_str())
            .unwrap_or("unknown");
        if built_with != v.library() {
            return Err(LoadError::OtherVersion(built_with.to_string()));
        }
        serde_json::from_value(value).map_err(|_| LoadError::NotAnEngine)
    }

    /// The layer names, in execution order.
    pub fn layer_names(&self) -> Vec<&str> {
        self.layers.iter().map(|l| l.record.name.as_str()).collect()
    }

    /// `--exportLayerInfo`: detailed records if the engine was built with detailed profiling
    /// verbosity, else names only (trtexec's default), as `{"Layers": [...], "Bindings": [...]}`.
    ///
    /// TensorRT 11 writes another form (docs/trtexec-standin.md, "Layer information of 11.x"): each
    /// tensor's `Datatype` and `Format` apart with its `Strides` and `StrideOrder`, a layer's weights
    /// as `Constants`, Myelin kernels as `custom_layer` records without `Outputs`, and a top-level
    /// `"I/O Tensors"` list of objects instead of the `Bindings` names.
    pub fn layer_info_json(&self) -> Result<String, crate::error::SimError> {
        let detailed = self.profiling_verbosity == "detailed";
        let eleven = self
            .tensorrt
            .split('.')
            .next()
            .and_then(|major| major.parse::<u64>().ok())
            .is_some_and(|major| major >= 11);
        let document = if eleven {
            let layers: Vec<Value> = if detailed {
                self.layers.iter().map(layer_record_11).collect()
            } else {
                self.layer_names().into_iter().map(Value::from).collect()
            };
            json!({"Layers": layers, "I/O Tensors": self.io_tensors_11()})
        } else {
            let bindings: Vec<&str> = self
                .inputs
                .iter()
                .map(|b| b.name.as_str())
                .chain(self.outputs.iter().map(|b| b.name.as_str()))
                .collect();
            if detailed {
                let layers: Vec<&LayerRecord> = self.layers.iter().map(|l| &l.record).collect();
                json!({"Layers": layers, "Bindings": bindings})
            } else {
                json!({"Layers": self.layer_names(), "Bindings": bindings})
            }
        };
        serde_json::to_string_pretty(&document)
            .map(|t| t + "\n")
            .map_err(|source| crate::error::SimError::Json { source })
    }

    /// TensorRT 11's `"I/O Tensors"`: the engine's inputs then outputs, each an object.
    fn io_tensors_11(&self) -> Vec<Value> {
        let io = |name: &str, mode: &str, dtype: DType, dims: &[usize]| {
            json!({
                "Name": name,
                "IOMode": mode,
                "Location": "Device",
                "Dimensions": dims,
                "Datatype": dtype.inspector_name(),
                "Format": LINEAR_FORMAT_11,
            })
        };
        self.inputs
            .iter()
            .map(|b| io(&b.name, "Input", b.dtype, &b.dims))
            .chain(
                self.outputs
                    .iter()
                    .map(|b| io(&b.name, "Output", b.dtype, &b.dims)),
            )
            .collect()
    }
}

/// The `Format` TensorRT 11 writes beside `Datatype` for a plain row-major tensor (10.x wrote only
/// the data type then, `"Format/Datatype": "Float"`).
pub const LINEAR_FORMAT_11: &str = "Row major linear";

/// A tensor as TensorRT 11 writes it: the data type and the format apart, with its strides.
fn tensor_11(t: &TensorRecord) -> Value {
    let mut tensor = json!({"Name": t.name});
    if let Some(location) = &t.location {
        tensor["Location"] = json!(location);
    }
    tensor["Dimensions"] = json!(t.dimensions);
    tensor["Datatype"] = json!(t.format);
    tensor["Format"] = json!(LINEAR_FORMAT_11);
    tensor["Strides"] = json!(row_major_strides(&t.dimensions));
    // Dimensions from the outermost (largest stride) to the innermost: row-major order.
    tensor["StrideOrder"] = json!((0..t.dimensions.len()).collect::<Vec<_>>());
    tensor
}

/// Row-major strides in elements; a stride that depends on a dynamic (`-1`) dimension is `-1`.
fn row_major_strides(dims: &[i64]) -> Vec<i64> {
    let mut strides = vec![1i64; dims.len()];
    let mut inner: Option<i64> = Some(1);
    for i in (0..dims.len()).rev() {
        strides[i] = inner.unwrap_or(-1);
        inner = match (inner, dims[i]) {
            (Some(n), d) if d >= 0 => n.checked_mul(d),
            _ => None,
        };
    }
    strides
}

/// A detailed layer record in TensorRT 11's form. Myelin kernels (no tactic value) become
/// `custom_layer` records that list their inputs but no outputs.
fn layer_record_11(engine_layer: &EngineLayer) -> Value {
    let record = &engine_layer.record;
    let myelin = record.tactic_value.is_none();
    let mut layer = json!({
        "Name": record.name,
        "LayerType": if myelin { "custom_layer" } else { record.layer_type.as_str() },
        "Inputs": record.inputs.iter().map(tensor_11).collect::<Vec<_>>(),
    });
    if !myelin {
        layer["Outputs"] = json!(record.outputs.iter().map(tensor_11).collect::<Vec<_>>());
    }
    if !engine_layer.constants.is_empty() {
        layer["Constants"] = json!(
            engine_layer
                .constants
                .iter()
                .map(tensor_11)
                .collect::<Vec<_>>()
        );
    }
    if let Some(parameter_type) = &record.parameter_type {
        layer["ParameterType"] = json!(parameter_type);
    }
    layer["TacticName"] = json!(record.tactic_name);
    if let Some(tactic_value) = &record.tactic_value {
        layer["TacticValue"] = json!(tactic_value);
    }
    layer["StreamId"] = json!(record.stream_id);
    layer["Metadata"] = json!(record.metadata);
    layer
}

/// How an ONNX operator is implemented: layer type, parameter type, tactic family, time weight.
fn kind_of(op: &str) -> (&'static str, Option<&'static str>, &'static str, f64) {
    match op {
        "Conv" => (
            "CaskConvolution",
            Some("Convolution"),
            "sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nchwkcrs_nchw_tilesize64x64x32_stage3",
            4.0,
        ),
        "ConvTranspose" => (
            "CaskDeconvolutionV2",
            Some("Deconvolution"),
            "sm90_xmma_dgrad_implicit_gemm_f32f32_tf32f32_f32_nchwkcrs_nchw_tilesize64x64x32",
            4.0,
        ),
        "MatMul" | "Gemm" => (
            "gemm",
            None,
            "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize64x64x32_stage3",
            4.0,
        ),
        "MaxPool" | "AveragePool" | "GlobalAveragePool" | "GlobalMaxPool" => (
            "CaskPooling",
            Some("Pooling"),
            "sm50_xmma_pooling_tiled_FP32NCHW",
            1.5,
        ),
        "Softmax" | "LogSoftmax" => ("CudaSoftMax", Some("SoftMax"), "cuda_softmax", 1.5),
        "Reshape" | "Flatten" | "Transpose" | "Squeeze" | "Unsqueeze" => {
            ("Shuffle", Some("Shuffle"), "shuffle", 0.3)
        }
        "Relu" | "LeakyRelu" | "Sigmoid" | "Tanh" | "Clip" | "Elu" | "Selu" | "HardSigmoid"
        | "Softplus" | "Gelu" | "Erf" | "Add" | "Sub" | "Mul" | "Div" | "Pow" | "Sqrt" | "Exp"
        | "Log" | "Neg" | "Abs" | "Max" | "Min" | "Where" | "Cast" => {
            ("PointWiseV2", Some("PointWise"), "pointwise", 1.0)
        }
        _ => ("kgen", None, "__myl_", 1.0),
    }
}

/// Activations TensorRT fuses into a preceding convolution or matrix multiplication.
fn is_fusable_activation(op: &str) -> bool {
    matches!(
        op,
        "Relu"
            | "LeakyRelu"
            | "Sigmoid"
            | "Tanh"
            | "Clip"
            | "Elu"
            | "Selu"
            | "HardSigmoid"
            | "Softplus"
            | "Gelu"
    )
}

fn hash16(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    hex::encode(&digest[..8])
}

/// The nodes TensorRT would fuse into convolution or matrix multiplication `head`: a batch norm
/// or a constant bias/scale, then one activation, as long as each tensor on the way feeds only
/// the next node.
fn fused_after(
    info: &ModelInfo,
    consumers: &HashMap<&str, usize>,
    graph_outputs: &HashSet<&str>,
    head: usize,
) -> Vec<usize> {
    let mut fused = Vec::new();
    let mut tail = head;
    while let [output] = info.nodes[tail].outputs.as_slice() {
        if consumers.get(output.as_str()) != Some(&1) || graph_outputs.contains(output.as_str()) {
            break;
        }
        let Some(j) = (tail + 1..info.nodes.len())
            .find(|&j| info.nodes[j].inputs.iter().any(|x| x == output))
        else {
            break;
        };
        let next = &info.nodes[j];
        let first_input = next.inputs.first() == Some(output);
        if is_fusable_activation(&next.op_type) && first_input {
            fused.push(j);
            break;
        }
        let absorbable = (next.op_type == "BatchNormalization" && first_input)
            || (matches!(next.op_type.as_str(), "Add" | "Mul")
                && next
                    .inputs
                    .iter()
                    .filter(|x| *x != output)
                    .all(|x| info.constants.contains(x)));
        if !absorbable {
            break;
        }
        fused.push(j);
        tail = j;
    }
    fused
}

/// The engine's layers: one per ONNX node, with an activation fused into the convolution or
/// matrix multiplication that feeds it alone (`conv + relu`), weighted by kind and normalized
/// to shares that sum to 1.
pub fn build_layers(info: &ModelInfo, facts: &HashMap<String, TensorFact>) -> Vec<EngineLayer> {
    let graph_outputs: HashSet<&str> = info.outputs.iter().map(|o| o.name.as_str()).collect();
    let mut consumers: HashMap<&str, usize> = HashMap::new();
    for node in &info.nodes {
        for input in &node.inputs {
            *consumers.entry(input.as_str()).or_default() += 1;
        }
    }
    let tensor = |name: &str, location: bool| {
        let (dtype, dims) = facts.get(name).cloned().unwrap_or((None, vec![-1]));
        TensorRecord {
            name: name.to_string(),
            location: location.then(|| "Device".to_string()),
            dimensions: dims,
            format: dtype.unwrap_or(DType::F32).inspector_name().to_string(),
        }
    };
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut fused_into_previous: HashSet<usize> = HashSet::new();
    for (i, node) in info.nodes.iter().enumerate() {
        if fused_into_previous.contains(&i) {
            continue;
        }
        let mut group = vec![i];
        if matches!(
            node.op_type.as_str(),
            "Conv" | "ConvTranspose" | "MatMul" | "Gemm"
        ) {
            let fused = fused_after(info, &consumers, &graph_outputs, i);
            fused_into_previous.extend(fused.iter().copied());
            group.extend(fused);
        }
        groups.push(group);
    }
    let mut used_names: HashSet<String> = HashSet::new();
    let mut layers = Vec::with_capacity(groups.len());
    for group in &groups {
        let first = &info.nodes[group[0]];
        let last = &info.nodes[group[group.len() - 1]];
        let (layer_type, parameter_type, tactic, weight) = kind_of(&first.op_type);
        let myelin = parameter_type.is_none();
        let mut name = group
            .iter()
            .map(|&i| info.nodes[i].name.as_str())
            .collect::<Vec<_>>()
            .join(" + ");
        if !used_names.insert(name.clone()) {
            let mut n = 2;
            while !used_names.insert(format!("{name}_{n}")) {
                n += 1;
            }
            name = format!("{name}_{n}");
        }
        let internal: HashSet<&str> = group
            .iter()
            .flat_map(|&i| info.nodes[i].outputs.iter().map(String::as_str))
            .collect();
        let inputs = group
            .iter()
            .flat_map(|&i| info.nodes[i].inputs.iter())
            .filter(|t| !info.constants.contains(*t) && !internal.contains(t.as_str()))
            .map(|t| tensor(t, !myelin))
            .collect();
        let outputs = last.outputs.iter().map(|t| tensor(t, !myelin)).collect();
        let constants = group
            .iter()
            .flat_map(|&i| info.nodes[i].inputs.iter())
            .filter(|t| info.constants.contains(*t))
            .map(|t| tensor(t, false))
            .collect();
        let metadata = group
            .iter()
            .map(|&i| format!("[ONNX Layer: {}]", info.nodes[i].name))
            .collect::<Vec<_>>()
            .join(if myelin { "\u{1f}" } else { "\u{1e}" });
        let hash = hash16(&name);
        let tactic_name = if tactic == "__myl_" {
            format!("__myl_{}_0x{hash}", first.op_type)
        } else {
            tactic.to_string()
        };
        layers.push(EngineLayer {
            share: weight,
            record: LayerRecord {
                name,
                layer_type: layer_type.to_string(),
                inputs,
                outputs,
                parameter_type: parameter_type.map(str::to_string),
                tactic_name,
                tactic_value: (!myelin).then(|| format!("0x{hash}")),
                stream_id: 0,
                metadata,
            },
            constants,
        });
    }
    if layers.is_empty() {
        let outputs = info.outputs.iter().map(|o| tensor(&o.name, true)).collect();
        layers.push(EngineLayer {
            share: 1.0,
            record: LayerRecord {
                name: "(Unnamed Layer* 0) [Constant]".to_string(),
                layer_type: "Constant".to_string(),
                inputs: Vec::new(),
                outputs,
                parameter_type: Some("Constant".to_string()),
                tactic_name: String::new(),
                tactic_value: Some("0x0000000000000000".to_string()),
                stream_id: 0,
                metadata: String::new(),
            },
            constants: Vec::new(),
        });
    }
    let total: f64 = layers.iter().map(|l| l.share).sum();
    for layer in &mut layers {
        layer.share /= total;
    }
    layers
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Decl, Node};

    fn node(name: &str, op: &str, inputs: &[&str], outputs: &[&str]) -> Node {
        Node {
            name: name.into(),
            op_type: op.into(),
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            outputs: outputs.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn activations_fuse_into_their_only_producer() {
        let info = ModelInfo {
            ir_version: 8,
            opset: 17,
            producer_name: String::new(),
            producer_version: String::new(),
            domain: String::new(),
            model_version: 0,
            doc_string: String::new(),
            inputs: vec![Decl {
                name: "x".into(),
                dtype: DType::F32,
                dims: Some(vec![Some(1), Some(4)]),
            }],
            outputs: vec![Decl {
                name: "y".into(),
                dtype: DType::F32,
                dims: None,
            }],
            nodes: vec![
                node("conv", "Conv", &["x", "w"], &["c0"]),
                node(
                    "bn",
                    "BatchNormalization",
                    &["c0", "s", "b", "m", "v"],
                    &["c"],
                ),
                node("relu", "Relu", &["c"], &["r"]),
                node("mm", "MatMul", &["r", "w2"], &["m"]),
                node("sig", "Sigmoid", &["m"], &["y"]),
                node("sig", "Sigmoid", &["m"], &["y2"]),
            ],
            constants: ["w", "w2", "s", "b", "m", "v"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            weight_bytes: 0,
        };
        let facts = HashMap::from([("x".to_string(), (Some(DType::F32), vec![1, 4]))]);
        let layers = build_layers(&info, &facts);
        let names: Vec<&str> = layers.iter().map(|l| l.record.name.as_str()).collect();
        // `m` has two consumers: no fusion. Duplicate names get a suffix.
        assert_eq!(names, vec!["conv + bn + relu", "mm", "sig", "sig_2"]);
        assert_eq!(
            layers[0].record.metadata,
            "[ONNX Layer: conv]\u{1e}[ONNX Layer: bn]\u{1e}[ONNX Layer: relu]"
        );
        assert_eq!(layers[0].record.inputs.len(), 1);
        assert_eq!(layers[0].record.inputs[0].dimensions, vec![1, 4]);
        assert_eq!(layers[0].record.outputs[0].name, "r");
        assert_eq!(layers[1].record.layer_type, "gemm");
        assert!(layers[1].record.tactic_value.is_none());
        let total: f64 = layers.iter().map(|l| l.share).sum();
        assert!((total - 1.0).abs() < 1e-12);
        assert!(layers[0].share > layers[2].share);
    }
}
