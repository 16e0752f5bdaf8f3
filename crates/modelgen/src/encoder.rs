//! `tiny-encoder`: a BERT-like sentence embedder over the byte vocabulary.
//!
//! token + learned position embeddings, LayerNorm, 2 post-LN encoder layers (4 heads, FFN 256,
//! exact GELU), then attention-mask-weighted mean pooling and L2 normalisation.

use tract_onnx::pb::tensor_proto::DataType;

use crate::layers::{
    MaskedMean, attention, feed_forward, layer_norm, masked_mean, merge_heads, split_heads,
};
use crate::nn::dense;
use crate::proto::{Dim, Graph, attr_int};
use crate::vocab::VOCAB_SIZE;

pub(crate) const HIDDEN: usize = 64;
pub(crate) const LAYERS: usize = 2;
pub(crate) const HEADS: usize = 4;
pub(crate) const FFN: usize = 256;
pub(crate) const MAX_POSITIONS: usize = 128;
/// Added to attention scores of padding positions.
const MASKED: f32 = -1e9;

pub(crate) fn build(seed: u64) -> Vec<u8> {
    let head_dim = HIDDEN / HEADS;
    let mut g = Graph::new(seed);
    let seq_dims = [Dim::Param("batch"), Dim::Param("seq")];
    let ids = g.input("input_ids", DataType::Int64, &seq_dims);
    let mask = g.input("attention_mask", DataType::Int64, &seq_dims);

    // Embeddings: token rows are near unit scale so the first LayerNorm sees a real signal.
    let tok_table = g.weight("embeddings.token", &[VOCAB_SIZE, HIDDEN], 1.0);
    let pos_table = g.weight("embeddings.position", &[MAX_POSITIONS, HIDDEN], 0.5);
    let tok = g.op("Gather", &[&tok_table, &ids], vec![attr_int("axis", 0)]);
    // Positions 0..seq: the first `seq` rows of the table.
    let seq_len = g.op(
        "Shape",
        &[&ids],
        vec![attr_int("start", 1), attr_int("end", 2)],
    );
    let zero = g.const_i64("const.zero_1d", &[0]);
    let pos = g.op("Slice", &[&pos_table, &zero, &seq_len, &zero], vec![]);
    let x = g.op("Add", &[&tok, &pos], vec![]);
    let mut x = layer_norm(&mut g, &x, "embeddings.norm", HIDDEN);

    // Additive mask [batch, 1, 1, seq]: 0 where attended, MASKED on padding.
    let mask_f = g.op(
        "Cast",
        &[&mask],
        vec![attr_int("to", DataType::Float as i64)],
    );
    let one = g.const_f32("const.one", &[], &[1.0]);
    let masked = g.const_f32("const.masked", &[], &[MASKED]);
    let inverted = g.op("Sub", &[&one, &mask_f], vec![]);
    let additive = g.op("Mul", &[&inverted, &masked], vec![]);
    let axes_1_2 = g.const_i64("const.axes_1_2", &[1, 2]);
    let bias = g.op("Unsqueeze", &[&additive, &axes_1_2], vec![]);

    for layer in 0..LAYERS {
        let p = format!("layers.{layer}");
        let q = dense(
            &mut g,
            &x,
            &format!("{p}.attn.q"),
            HIDDEN,
            HIDDEN,
            1.0,
            true,
        );
        let k = dense(
            &mut g,
            &x,
            &format!("{p}.attn.k"),
            HIDDEN,
            HIDDEN,
            1.0,
            true,
        );
        let v = dense(
            &mut g,
            &x,
            &format!("{p}.attn.v"),
            HIDDEN,
            HIDDEN,
            1.0,
            true,
        );
        let q = split_heads(&mut g, &q, HEADS, head_dim);
        let k = split_heads(&mut g, &k, HEADS, head_dim);
        let v = split_heads(&mut g, &v, HEADS, head_dim);
        let ctx = attention(&mut g, &q, &k, &v, &bias, head_dim);
        let ctx = merge_heads(&mut g, &ctx, HEADS, head_dim);
        let attn_out = dense(
            &mut g,
            &ctx,
            &format!("{p}.attn.out"),
            HIDDEN,
            HIDDEN,
            1.0,
            true,
        );
        let x1 = g.op("Add", &[&x, &attn_out], vec![]);
        let x1 = layer_norm(&mut g, &x1, &format!("{p}.attn_norm"), HIDDEN);
        let ff = feed_forward(&mut g, &x1, &format!("{p}.ffn"), HIDDEN, FFN);
        let x2 = g.op("Add", &[&x1, &ff], vec![]);
        x = layer_norm(&mut g, &x2, &format!("{p}.ffn_norm"), HIDDEN);
    }

    let hidden_dims = [
        Dim::Param("batch"),
        Dim::Param("seq"),
        Dim::Fixed(HIDDEN as i64),
    ];
    g.output(&x, "last_hidden_state", DataType::Float, &hidden_dims);

    // Mean over attended positions: sum(x * m) / max(sum(m), tiny), then divide by the L2 norm.
    let MaskedMean { mean, axis_1, tiny } = masked_mean(&mut g, &x, &mask_f);
    let squares = g.op("Mul", &[&mean, &mean], vec![]);
    let sq_norm = g.op(
        "ReduceSum",
        &[&squares, &axis_1],
        vec![attr_int("keepdims", 1)],
    );
    let sq_norm = g.op("Max", &[&sq_norm, &tiny], vec![]);
    let norm = g.op("Sqrt", &[&sq_norm], vec![]);
    let embeddings = g.op("Div", &[&mean, &norm], vec![]);
    g.output(
        &embeddings,
        "embeddings",
        DataType::Float,
        &[Dim::Param("batch"), Dim::Fixed(HIDDEN as i64)],
    );
    g.finish(
        "tiny_encoder",
        "trtmc tiny-encoder: seeded 2-layer BERT-like byte-level sentence embedder",
    )
}
