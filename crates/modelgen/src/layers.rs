//! Building blocks shared by the generated models. Every helper takes a name prefix so that
//! weight names (and hence their seeded values) are stable and readable.

use crate::nn::dense;
use crate::proto::{Graph, attr_float, attr_int, attr_ints};

/// LayerNormalization over the last axis, with a scale near one and a bias near zero.
pub(crate) fn layer_norm(g: &mut Graph, x: &str, prefix: &str, dim: usize) -> String {
    let scale = g.weight_range(&format!("{prefix}.weight"), &[dim], 0.9, 1.1);
    let bias = g.weight(&format!("{prefix}.bias"), &[dim], 0.05);
    g.op(
        "LayerNormalization",
        &[x, &scale, &bias],
        vec![attr_int("axis", -1), attr_float("epsilon", 1e-5)],
    )
}

/// Exact GELU: `0.5 * x * (1 + erf(x / sqrt(2)))`.
pub(crate) fn gelu(g: &mut Graph, x: &str) -> String {
    let inv_sqrt2 = g.const_f32("const.inv_sqrt2", &[], &[std::f32::consts::FRAC_1_SQRT_2]);
    let one = g.const_f32("const.one", &[], &[1.0]);
    let half = g.const_f32("const.half", &[], &[0.5]);
    let scaled = g.op("Mul", &[x, &inv_sqrt2], vec![]);
    let erf = g.op("Erf", &[&scaled], vec![]);
    let shifted = g.op("Add", &[&erf, &one], vec![]);
    let gated = g.op("Mul", &[x, &shifted], vec![]);
    g.op("Mul", &[&gated, &half], vec![])
}

/// A mask-weighted mean over the sequence and the constants it made, for callers that go on to
/// use them.
pub(crate) struct MaskedMean {
    /// [b, d]: sum(x * m) / max(sum(m), tiny).
    pub(crate) mean: String,
    /// The axis constant `[1]` (the sequence axis).
    pub(crate) axis_1: String,
    /// The constant 1e-9 that keeps the divisor positive.
    pub(crate) tiny: String,
}

/// Mean of [b, seq, d] `x` over the positions where the float [b, seq] mask `mask_f` is 1.
pub(crate) fn masked_mean(g: &mut Graph, x: &str, mask_f: &str) -> MaskedMean {
    let axis_2 = g.const_i64("const.axis_2", &[2]);
    let axis_1 = g.const_i64("const.axis_1", &[1]);
    let m = g.op("Unsqueeze", &[mask_f, &axis_2], vec![]);
    let weighted = g.op("Mul", &[x, &m], vec![]);
    let summed = g.op(
        "ReduceSum",
        &[&weighted, &axis_1],
        vec![attr_int("keepdims", 0)],
    );
    let count = g.op("ReduceSum", &[&m, &axis_1], vec![attr_int("keepdims", 0)]);
    let tiny = g.const_f32("const.tiny", &[], &[1e-9]);
    let count = g.op("Max", &[&count, &tiny], vec![]);
    let mean = g.op("Div", &[&summed, &count], vec![]);
    MaskedMean { mean, axis_1, tiny }
}

/// Transformer feed-forward block: linear, GELU, linear.
pub(crate) fn feed_forward(
    g: &mut Graph,
    x: &str,
    prefix: &str,
    hidden: usize,
    ffn: usize,
) -> String {
    let up = dense(g, x, &format!("{prefix}.up"), hidden, ffn, 2.0, true);
    let act = gelu(g, &up);
    dense(g, &act, &format!("{prefix}.down"), ffn, hidden, 1.0, true)
}

/// [b, s, heads*head_dim] -> [b, heads, s, head_dim].
pub(crate) fn split_heads(g: &mut Graph, x: &str, heads: usize, head_dim: usize) -> String {
    let shape = g.const_i64(
        &format!("const.split_heads_{heads}x{head_dim}"),
        &[0, 0, heads as i64, head_dim as i64],
    );
    let r = g.op("Reshape", &[x, &shape], vec![]);
    g.op("Transpose", &[&r], vec![attr_ints("perm", &[0, 2, 1, 3])])
}

/// [b, heads, s, head_dim] -> [b, s, heads*head_dim].
pub(crate) fn merge_heads(g: &mut Graph, x: &str, heads: usize, head_dim: usize) -> String {
    let shape = g.const_i64(
        &format!("const.merge_heads_{}", heads * head_dim),
        &[0, 0, (heads * head_dim) as i64],
    );
    let t = g.op("Transpose", &[x], vec![attr_ints("perm", &[0, 2, 1, 3])]);
    g.op("Reshape", &[&t, &shape], vec![])
}

/// Scaled dot-product attention of q [b,h,s,d] over k, v [b,h,t,d] with an additive bias
/// broadcastable to [b,h,s,t].
pub(crate) fn attention(
    g: &mut Graph,
    q: &str,
    k: &str,
    v: &str,
    bias: &str,
    head_dim: usize,
) -> String {
    let scale = g.const_f32(
        &format!("const.attn_scale_{head_dim}"),
        &[],
        &[1.0 / (head_dim as f32).sqrt()],
    );
    let kt = g.op("Transpose", &[k], vec![attr_ints("perm", &[0, 1, 3, 2])]);
    let scores = g.op("MatMul", &[q, &kt], vec![]);
    let scaled = g.op("Mul", &[&scores, &scale], vec![]);
    let biased = g.op("Add", &[&scaled, bias], vec![]);
    let probs = g.op("Softmax", &[&biased], vec![attr_int("axis", -1)]);
    g.op("MatMul", &[&probs, v], vec![])
}
