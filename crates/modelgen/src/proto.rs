//! A small builder over `tract_onnx::pb` for writing ONNX graphs (IR 8, opset 17).

use prost::Message;
use tract_onnx::pb;
use tract_onnx::pb::attribute_proto::AttributeType;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::pb::tensor_shape_proto::dimension;
use tract_onnx::pb::type_proto;

use crate::init::TensorRng;

pub(crate) const IR_VERSION: i64 = 8;
pub(crate) const OPSET: i64 = 17;

/// One dimension of a declared graph input or output.
#[derive(Clone, Copy)]
pub(crate) enum Dim {
    Fixed(i64),
    Param(&'static str),
}

/// The dims of one layer's key or value cache of `len` positions: [1, kv_heads, len, head_dim].
pub(crate) fn kv_cache_dims(kv_heads: usize, len: &'static str, head_dim: usize) -> [Dim; 4] {
    [
        Dim::Fixed(1),
        Dim::Fixed(kv_heads as i64),
        Dim::Param(len),
        Dim::Fixed(head_dim as i64),
    ]
}

/// Builds one graph: seeded weights, constants, nodes, inputs and outputs.
pub(crate) struct Graph {
    seed: u64,
    nodes: Vec<pb::NodeProto>,
    initializers: Vec<pb::TensorProto>,
    inputs: Vec<pb::ValueInfoProto>,
    outputs: Vec<pb::ValueInfoProto>,
    next_id: usize,
}

impl Graph {
    pub(crate) fn new(seed: u64) -> Self {
        Graph {
            seed,
            nodes: Vec::new(),
            initializers: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            next_id: 0,
        }
    }

    pub(crate) fn input(&mut self, name: &str, elem: DataType, dims: &[Dim]) -> String {
        self.inputs.push(value_info(name, elem, dims));
        name.to_string()
    }

    /// A float input of a batch of RGB images `size` pixels square: [batch, 3, size, size].
    pub(crate) fn image_input(&mut self, name: &str, size: usize) -> String {
        self.input(
            name,
            DataType::Float,
            &[
                Dim::Param("batch"),
                Dim::Fixed(3),
                Dim::Fixed(size as i64),
                Dim::Fixed(size as i64),
            ],
        )
    }

    /// A float input of one sequence of `len` rows of `width` features: [1, len, width].
    pub(crate) fn rows_input(&mut self, name: &str, len: &'static str, width: usize) -> String {
        self.input(
            name,
            DataType::Float,
            &[Dim::Fixed(1), Dim::Param(len), Dim::Fixed(width as i64)],
        )
    }

    /// Declares `value` as the float output `name` of `len` rows of `width` features: [1, len, width].
    pub(crate) fn rows_output(&mut self, value: &str, name: &str, len: &'static str, width: usize) {
        self.output(
            value,
            name,
            DataType::Float,
            &[Dim::Fixed(1), Dim::Param(len), Dim::Fixed(width as i64)],
        );
    }

    /// The additive attention bias [1, 1, new, total] of a decoder step over `new` new positions.
    pub(crate) fn attention_bias_input(&mut self, name: &str, new: &'static str) -> String {
        self.input(
            name,
            DataType::Float,
            &[
                Dim::Fixed(1),
                Dim::Fixed(1),
                Dim::Param(new),
                Dim::Param("total"),
            ],
        )
    }

    /// Squashes `x` into [-1, 1] with Tanh and flattens it into the waveform output `name`
    /// [1, samples].
    pub(crate) fn audio_output(&mut self, x: &str, name: &str) {
        let x = self.op("Tanh", &[x], vec![]);
        let shape = self.const_i64("const.flatten_audio", &[1, -1]);
        let audio = self.op("Reshape", &[&x, &shape], vec![]);
        self.output(
            &audio,
            name,
            DataType::Float,
            &[Dim::Fixed(1), Dim::Param("samples")],
        );
    }

    /// Declares `value` as a graph output; adds an Identity when it must be renamed.
    pub(crate) fn output(&mut self, value: &str, name: &str, elem: DataType, dims: &[Dim]) {
        if value != name {
            self.op_to("Identity", &[value], vec![], name);
        }
        self.outputs.push(value_info(name, elem, dims));
    }

    /// A trainable f32 weight with seeded values uniform in `[-bound, bound)`.
    pub(crate) fn weight(&mut self, name: &str, dims: &[usize], bound: f32) -> String {
        self.weight_range(name, dims, -bound, bound)
    }

    /// A trainable f32 weight with seeded values uniform in `[lo, hi)`.
    pub(crate) fn weight_range(&mut self, name: &str, dims: &[usize], lo: f32, hi: f32) -> String {
        let count = dims.iter().product();
        let values = TensorRng::new(self.seed, name).fill(count, lo, hi);
        self.initializers.push(f32_tensor(name, dims, &values));
        name.to_string()
    }

    /// A fixed f32 constant (not a parameter), e.g. a scalar used by an arithmetic node.
    /// Constants are shared by name: a second request for the same name reuses the first.
    pub(crate) fn const_f32(&mut self, name: &str, dims: &[usize], values: &[f32]) -> String {
        if !self.has_initializer(name) {
            self.initializers.push(f32_tensor(name, dims, values));
        }
        name.to_string()
    }

    /// A fixed i64 constant: shapes, axes, slice bounds.
    pub(crate) fn const_i64(&mut self, name: &str, values: &[i64]) -> String {
        if self.has_initializer(name) {
            return name.to_string();
        }
        self.initializers.push(pb::TensorProto {
            name: name.to_string(),
            dims: vec![values.len() as i64],
            data_type: DataType::Int64 as i32,
            raw_data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            ..Default::default()
        });
        name.to_string()
    }

    fn has_initializer(&self, name: &str) -> bool {
        self.initializers.iter().any(|t| t.name == name)
    }

    /// Adds a node with one generated output name and returns that name.
    pub(crate) fn op(
        &mut self,
        op: &str,
        inputs: &[&str],
        attrs: Vec<pb::AttributeProto>,
    ) -> String {
        self.next_id += 1;
        let out = format!("{}_{}", op.to_ascii_lowercase(), self.next_id);
        self.op_to(op, inputs, attrs, &out)
    }

    /// Adds a node whose single output has the given name.
    pub(crate) fn op_to(
        &mut self,
        op: &str,
        inputs: &[&str],
        attrs: Vec<pb::AttributeProto>,
        output: &str,
    ) -> String {
        self.nodes.push(pb::NodeProto {
            name: format!("n{}_{}", self.nodes.len(), output),
            op_type: op.to_string(),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec![output.to_string()],
            attribute: attrs,
            ..Default::default()
        });
        output.to_string()
    }

    /// Encodes the finished model.
    pub(crate) fn finish(self, graph_name: &str, doc: &str) -> Vec<u8> {
        let model = pb::ModelProto {
            ir_version: IR_VERSION,
            opset_import: vec![pb::OperatorSetIdProto {
                domain: String::new(),
                version: OPSET,
            }],
            producer_name: "trtmc-modelgen".to_string(),
            producer_version: env!("CARGO_PKG_VERSION").to_string(),
            doc_string: doc.to_string(),
            graph: Some(pb::GraphProto {
                name: graph_name.to_string(),
                node: self.nodes,
                initializer: self.initializers,
                input: self.inputs,
                output: self.outputs,
                ..Default::default()
            }),
            ..Default::default()
        };
        model.encode_to_vec()
    }
}

pub(crate) fn f32_tensor(name: &str, dims: &[usize], values: &[f32]) -> pb::TensorProto {
    pb::TensorProto {
        name: name.to_string(),
        dims: dims.iter().map(|&d| d as i64).collect(),
        data_type: DataType::Float as i32,
        raw_data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ..Default::default()
    }
}

fn value_info(name: &str, elem: DataType, dims: &[Dim]) -> pb::ValueInfoProto {
    let dim = dims
        .iter()
        .map(|d| pb::tensor_shape_proto::Dimension {
            value: Some(match d {
                Dim::Fixed(v) => dimension::Value::DimValue(*v),
                Dim::Param(p) => dimension::Value::DimParam(p.to_string()),
            }),
            ..Default::default()
        })
        .collect();
    pb::ValueInfoProto {
        name: name.to_string(),
        r#type: Some(pb::TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: elem as i32,
                shape: Some(pb::TensorShapeProto { dim }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub(crate) fn attr_int(name: &str, value: i64) -> pb::AttributeProto {
    pb::AttributeProto {
        name: name.to_string(),
        r#type: AttributeType::Int as i32,
        i: value,
        ..Default::default()
    }
}

pub(crate) fn attr_ints(name: &str, values: &[i64]) -> pb::AttributeProto {
    pb::AttributeProto {
        name: name.to_string(),
        r#type: AttributeType::Ints as i32,
        ints: values.to_vec(),
        ..Default::default()
    }
}

pub(crate) fn attr_float(name: &str, value: f32) -> pb::AttributeProto {
    pb::AttributeProto {
        name: name.to_string(),
        r#type: AttributeType::Float as i32,
        f: value,
        ..Default::default()
    }
}

pub(crate) fn attr_string(name: &str, value: &str) -> pb::AttributeProto {
    pb::AttributeProto {
        name: name.to_string(),
        r#type: AttributeType::String as i32,
        s: value.as_bytes().to_vec(),
        ..Default::default()
    }
}
