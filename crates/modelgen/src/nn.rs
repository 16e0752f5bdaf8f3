//! Building blocks of the generated model families (see [`crate::families`]): norms, activations,
//! convolutions and attention in the variants the published architectures use. Only operators that
//! both tract and ONNX Runtime run at opset 17 appear here (GroupNorm, for one, is written with
//! InstanceNormalization, as exporters do before opset 18).

use serde::Serialize;

use crate::init::scaled_bound;
use crate::layers::gelu;
use crate::proto::{Graph, attr_float, attr_int, attr_ints};

/// Normalisation of a transformer block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Norm {
    LayerNorm,
    /// Root-mean-square norm without a bias (Llama, T5).
    RmsNorm,
}

/// Activation of a feed-forward block (or a convolution).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Act {
    /// Exact erf GELU.
    Gelu,
    /// GPT-2's tanh approximation of GELU.
    GeluTanh,
    /// CLIP's `x * sigmoid(1.702 x)`.
    QuickGelu,
    Relu,
    /// `x * sigmoid(x)` (swish).
    Silu,
    /// Gated: `silu(gate(x)) * up(x)` (Llama's SwiGLU); the FFN has three matrices.
    SwiGlu,
}

/// `x @ W (+ b)` over the last axis.
pub(crate) fn dense(
    g: &mut Graph,
    x: &str,
    prefix: &str,
    inp: usize,
    out: usize,
    gain: f32,
    bias: bool,
) -> String {
    let w = g.weight(
        &format!("{prefix}.weight"),
        &[inp, out],
        scaled_bound(gain, inp),
    );
    let y = g.op("MatMul", &[x, &w], vec![]);
    if !bias {
        return y;
    }
    let b = g.weight(&format!("{prefix}.bias"), &[out], 0.02);
    g.op("Add", &[&y, &b], vec![])
}

pub(crate) fn norm(g: &mut Graph, x: &str, prefix: &str, dim: usize, kind: Norm) -> String {
    match kind {
        Norm::LayerNorm => crate::layers::layer_norm(g, x, prefix, dim),
        Norm::RmsNorm => {
            let scale = g.weight_range(&format!("{prefix}.weight"), &[dim], 0.9, 1.1);
            let sq = g.op("Mul", &[x, x], vec![]);
            let mean = g.op("ReduceMean", &[&sq], vec![attr_ints("axes", &[-1])]);
            let eps = g.const_f32("const.rms_eps", &[], &[1e-6]);
            let shifted = g.op("Add", &[&mean, &eps], vec![]);
            let root = g.op("Sqrt", &[&shifted], vec![]);
            let normed = g.op("Div", &[x, &root], vec![]);
            g.op("Mul", &[&normed, &scale], vec![])
        }
    }
}

/// LayerNorm over the channel axis of an NCHW (or NCL) tensor.
pub(crate) fn channel_norm(
    g: &mut Graph,
    x: &str,
    prefix: &str,
    dim: usize,
    rank: usize,
) -> String {
    let (to_last, back): (Vec<i64>, Vec<i64>) = if rank == 4 {
        (vec![0, 2, 3, 1], vec![0, 3, 1, 2])
    } else {
        (vec![0, 2, 1], vec![0, 2, 1])
    };
    let t = g.op("Transpose", &[x], vec![attr_ints("perm", &to_last)]);
    let n = crate::layers::layer_norm(g, &t, prefix, dim);
    g.op("Transpose", &[&n], vec![attr_ints("perm", &back)])
}

pub(crate) fn sigmoid_gate(g: &mut Graph, x: &str, slope: f32) -> String {
    let s = if slope == 1.0 {
        g.op("Sigmoid", &[x], vec![])
    } else {
        let k = g.const_f32(&format!("const.slope_{slope}"), &[], &[slope]);
        let kx = g.op("Mul", &[x, &k], vec![]);
        g.op("Sigmoid", &[&kx], vec![])
    };
    g.op("Mul", &[x, &s], vec![])
}

/// A pointwise activation (not SwiGLU, which needs two inputs: see [`ffn`]).
pub(crate) fn activate(g: &mut Graph, x: &str, act: Act) -> String {
    match act {
        Act::Gelu => gelu(g, x),
        Act::GeluTanh => {
            let c = g.const_f32("const.gelu_c", &[], &[0.044_715]);
            let k = g.const_f32("const.sqrt_2_over_pi", &[], &[0.797_884_6]);
            let one = g.const_f32("const.one", &[], &[1.0]);
            let half = g.const_f32("const.half", &[], &[0.5]);
            let x2 = g.op("Mul", &[x, x], vec![]);
            let x3 = g.op("Mul", &[&x2, x], vec![]);
            let cx3 = g.op("Mul", &[&x3, &c], vec![]);
            let inner = g.op("Add", &[x, &cx3], vec![]);
            let inner = g.op("Mul", &[&inner, &k], vec![]);
            let t = g.op("Tanh", &[&inner], vec![]);
            let t = g.op("Add", &[&t, &one], vec![]);
            let y = g.op("Mul", &[x, &t], vec![]);
            g.op("Mul", &[&y, &half], vec![])
        }
        Act::QuickGelu => sigmoid_gate(g, x, 1.702),
        Act::Relu => g.op("Relu", &[x], vec![]),
        Act::Silu | Act::SwiGlu => sigmoid_gate(g, x, 1.0),
    }
}

/// Feed-forward block: up, activation, down (SwiGLU: `down(silu(gate(x)) * up(x))`).
pub(crate) fn ffn(
    g: &mut Graph,
    x: &str,
    prefix: &str,
    hidden: usize,
    inner: usize,
    act: Act,
    bias: bool,
) -> String {
    let up = dense(g, x, &format!("{prefix}.up"), hidden, inner, 2.0, bias);
    let mid = if act == Act::SwiGlu {
        let gate = dense(g, x, &format!("{prefix}.gate"), hidden, inner, 2.0, bias);
        let gate = activate(g, &gate, Act::Silu);
        g.op("Mul", &[&gate, &up], vec![])
    } else {
        activate(g, &up, act)
    };
    dense(g, &mid, &format!("{prefix}.down"), inner, hidden, 1.0, bias)
}

/// A convolution with bias (BatchNorm folded in, as inference exports have it). `kernel` and
/// `stride` apply to every spatial axis (`spatial` = 1 or 2); "same" padding for odd kernels unless
/// `pad` is given.
pub(crate) struct ConvSpec {
    pub cin: usize,
    pub cout: usize,
    pub kernel: usize,
    pub stride: usize,
    pub groups: usize,
    pub dilation: usize,
    pub spatial: usize,
    pub pad: Option<usize>,
}

impl ConvSpec {
    pub(crate) fn d2(cin: usize, cout: usize, kernel: usize, stride: usize) -> Self {
        ConvSpec {
            cin,
            cout,
            kernel,
            stride,
            groups: 1,
            dilation: 1,
            spatial: 2,
            pad: None,
        }
    }
    pub(crate) fn d1(cin: usize, cout: usize, kernel: usize, stride: usize) -> Self {
        ConvSpec {
            spatial: 1,
            ..Self::d2(cin, cout, kernel, stride)
        }
    }
    pub(crate) fn depthwise(mut self) -> Self {
        self.groups = self.cin;
        self
    }
    pub(crate) fn groups(mut self, groups: usize) -> Self {
        self.groups = groups;
        self
    }
    pub(crate) fn dilation(mut self, dilation: usize) -> Self {
        self.dilation = dilation;
        self
    }
    pub(crate) fn pad(mut self, pad: usize) -> Self {
        self.pad = Some(pad);
        self
    }
}

pub(crate) fn conv(g: &mut Graph, x: &str, prefix: &str, c: ConvSpec) -> String {
    let per_group = c.cin / c.groups.max(1);
    let mut dims = vec![c.cout, per_group];
    dims.extend(std::iter::repeat_n(c.kernel, c.spatial));
    let fan_in = per_group * c.kernel.pow(c.spatial as u32);
    let w = g.weight(
        &format!("{prefix}.weight"),
        &dims,
        scaled_bound(2.0, fan_in),
    );
    let b = g.weight(&format!("{prefix}.bias"), &[c.cout], 0.05);
    let pad = c.pad.unwrap_or(c.dilation * (c.kernel - 1) / 2) as i64;
    let n = c.spatial;
    g.op(
        "Conv",
        &[x, &w, &b],
        vec![
            attr_ints("kernel_shape", &vec![c.kernel as i64; n]),
            attr_ints("strides", &vec![c.stride as i64; n]),
            attr_ints("dilations", &vec![c.dilation as i64; n]),
            attr_ints("pads", &vec![pad; 2 * n]),
            attr_int("group", c.groups as i64),
        ],
    )
}

/// GroupNorm over an NCHW tensor: InstanceNormalization of [b, groups, rest], then a per-channel
/// scale and shift.
pub(crate) fn group_norm(
    g: &mut Graph,
    x: &str,
    prefix: &str,
    channels: usize,
    groups: usize,
) -> String {
    let shape = g.op("Shape", &[x], vec![]);
    let grouped_shape = g.const_i64(&format!("const.groups_{groups}"), &[0, groups as i64, -1]);
    let grouped = g.op("Reshape", &[x, &grouped_shape], vec![]);
    let ones = g.const_f32(
        &format!("const.ones_{groups}"),
        &[groups],
        &vec![1.0; groups],
    );
    let zeros = g.const_f32(
        &format!("const.zeros_{groups}"),
        &[groups],
        &vec![0.0; groups],
    );
    let normed = g.op(
        "InstanceNormalization",
        &[&grouped, &ones, &zeros],
        vec![attr_float("epsilon", 1e-5)],
    );
    let back = g.op("Reshape", &[&normed, &shape], vec![]);
    let scale = g.weight_range(&format!("{prefix}.weight"), &[channels, 1, 1], 0.9, 1.1);
    let bias = g.weight(&format!("{prefix}.bias"), &[channels, 1, 1], 0.05);
    let y = g.op("Mul", &[&back, &scale], vec![]);
    g.op("Add", &[&y, &bias], vec![])
}

/// Nearest-neighbour upsampling by `factor` on the last two axes.
pub(crate) fn upsample2d(g: &mut Graph, x: &str, factor: f32) -> String {
    let scales = g.const_f32(
        &format!("const.upsample_{factor}"),
        &[4],
        &[1.0, 1.0, factor, factor],
    );
    g.op(
        "Resize",
        &[x, "", &scales],
        vec![crate::proto::attr_string("mode", "nearest")],
    )
}

/// `[lo, hi)` of `axis` (a static slice).
pub(crate) fn slice(g: &mut Graph, x: &str, axis: i64, lo: i64, hi: i64) -> String {
    let starts = g.const_i64(&format!("const.i64_{lo}"), &[lo]);
    let ends = g.const_i64(&format!("const.i64_{hi}"), &[hi]);
    let axes = g.const_i64(&format!("const.i64_{axis}"), &[axis]);
    g.op("Slice", &[x, &starts, &ends, &axes], vec![])
}

/// The length of `axis` of `x` as an i64 tensor of shape [1].
pub(crate) fn dim_of(g: &mut Graph, x: &str, axis: i64) -> String {
    g.op(
        "Shape",
        &[x],
        vec![attr_int("start", axis), attr_int("end", axis + 1)],
    )
}

/// The first `len` rows (a [1] i64 tensor) of a table's axis 0.
pub(crate) fn rows(g: &mut Graph, table: &str, len: &str) -> String {
    let zero = g.const_i64("const.zero_1d", &[0]);
    g.op("Slice", &[table, &zero, len, &zero], vec![])
}

/// Sinusoidal position table [positions, dim] (sin on the first half, cos on the second).
pub(crate) fn sinusoid_table(positions: usize, dim: usize) -> Vec<f32> {
    let half = dim / 2;
    let mut out = vec![0.0f32; positions * dim];
    for p in 0..positions {
        for i in 0..half {
            let freq = (-(10_000f64.ln()) * i as f64 / half.max(1) as f64).exp();
            let angle = p as f64 * freq;
            out[p * dim + i] = angle.sin() as f32;
            out[p * dim + half + i] = angle.cos() as f32;
        }
    }
    out
}
