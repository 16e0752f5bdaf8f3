//! `tiny-gpt`: a decoder-only byte-level text generator with an explicit KV cache.
//!
//! token + learned position embeddings, 2 pre-LN decoder layers (4 heads of 16, FFN 256, exact
//! GELU), final LayerNorm, LM head tied to the token embedding.

use tract_onnx::pb::tensor_proto::DataType;

use crate::layers::{attention, feed_forward, layer_norm, merge_heads, split_heads};
use crate::nn::dense;
use crate::proto::{Dim, Graph, attr_int, attr_ints, kv_cache_dims};
use crate::vocab::{BOS_ID, EOS_ID, PAD_ID, VOCAB_SIZE};

/// What a host-side generation loop needs to drive `tiny-gpt`.
///
/// One call takes `seq` new tokens and the cache of `past` earlier tokens, and returns logits for
/// the new tokens plus the cache of all `total = past + seq` tokens:
///
/// | name | dtype | shape |
/// |---|---|---|
/// | `input_ids` | i64 | [1, seq] |
/// | `position_ids` | i64 | [1, seq], the absolute positions `past..total` (< `max_positions`) |
/// | `attention_bias` | f32 | [1, 1, seq, total]: 0 where query i may see key j, `mask_value` elsewhere (causal: j <= past + i) |
/// | `past_key_values.{i}.key` / `.value` | f32 | [1, heads, past, head_dim] for each layer i |
/// | `logits` (output) | f32 | [1, seq, vocab] |
/// | `present.{i}.key` / `.value` (output) | f32 | [1, heads, total, head_dim] |
///
/// The first (prefill) call passes `past = 0`: empty cache tensors of shape [1, heads, 0,
/// head_dim]. Each later call feeds the previous call's `present.*` back as `past_key_values.*`.
/// Both tract 0.23.9 and onnxruntime run this graph with `past = 0` and with `seq > 1` on top of
/// a non-empty cache (chunked prefill), so no dummy cache slot or separate prefill graph is needed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecoderSpec {
    /// Decoder layers, each with one key and one value cache tensor.
    pub layers: usize,
    /// Attention heads per layer (the cache's second dimension).
    pub heads: usize,
    /// Width of one head (the cache's last dimension).
    pub head_dim: usize,
    /// Vocabulary size: the last dimension of `logits`.
    pub vocab: usize,
    /// Positions the model has embeddings for: prompt and generated tokens together stay below it.
    pub max_positions: usize,
    /// Token that starts a sequence.
    pub bos_id: i64,
    /// Token that ends generation.
    pub eos_id: i64,
    /// Token used to pad shorter sequences of a batch.
    pub pad_id: i64,
    /// Additive bias for a masked (query, key) pair in `attention_bias`.
    pub mask_value: f32,
    /// Name of the token-ids input.
    pub input_ids: &'static str,
    /// Name of the positions input.
    pub position_ids: &'static str,
    /// Name of the additive attention-mask input.
    pub attention_bias: &'static str,
    /// Name of the next-token logits output.
    pub logits: &'static str,
}

impl DecoderSpec {
    /// Input name of layer `layer`'s cached keys.
    pub fn past_key(&self, layer: usize) -> String {
        format!("past_key_values.{layer}.key")
    }
    /// Input name of layer `layer`'s cached values.
    pub fn past_value(&self, layer: usize) -> String {
        format!("past_key_values.{layer}.value")
    }
    /// Output name of layer `layer`'s updated keys.
    pub fn present_key(&self, layer: usize) -> String {
        format!("present.{layer}.key")
    }
    /// Output name of layer `layer`'s updated values.
    pub fn present_value(&self, layer: usize) -> String {
        format!("present.{layer}.value")
    }
    /// Hidden size (`heads * head_dim`).
    pub fn hidden(&self) -> usize {
        self.heads * self.head_dim
    }
}

/// The contract of the built-in `tiny-gpt` model.
pub const TINY_GPT: DecoderSpec = DecoderSpec {
    layers: 2,
    heads: 4,
    head_dim: 16,
    vocab: VOCAB_SIZE,
    max_positions: 256,
    bos_id: BOS_ID,
    eos_id: EOS_ID,
    pad_id: PAD_ID,
    mask_value: -1e9,
    input_ids: "input_ids",
    position_ids: "position_ids",
    attention_bias: "attention_bias",
    logits: "logits",
};

const FFN: usize = 256;

/// Side of the square image patches `tiny-vlm` takes (RGB, flattened channel-major: 3 x 8 x 8 = 192).
pub const VLM_PATCH: usize = 8;
/// Flattened length of one `tiny-vlm` image patch.
pub const VLM_PATCH_DIM: usize = 3 * VLM_PATCH * VLM_PATCH;

pub(crate) fn build(seed: u64) -> Vec<u8> {
    build_decoder(seed, false)
}

/// `tiny-vlm`: `tiny-gpt` with a patch-embedding vision encoder in front. Extra input `image_patches`
/// f32 [1, patches, 192]; the prefill call passes the image's patches (their embeddings come before the
/// prompt's, so `position_ids` and `attention_bias` cover patches + prompt tokens), decode calls pass
/// `patches = 0`.
pub(crate) fn build_vlm(seed: u64) -> Vec<u8> {
    build_decoder(seed, true)
}

fn build_decoder(seed: u64, vision: bool) -> Vec<u8> {
    let spec = TINY_GPT;
    let hidden = spec.hidden();
    let mut g = Graph::new(seed);
    let seq_dims = [Dim::Fixed(1), Dim::Param("seq")];
    let ids = g.input(spec.input_ids, DataType::Int64, &seq_dims);
    let positions = g.input(
        spec.position_ids,
        DataType::Int64,
        &[
            Dim::Fixed(1),
            Dim::Param(if vision { "new" } else { "seq" }),
        ],
    );
    let patches = vision.then(|| g.rows_input("image_patches", "patches", VLM_PATCH_DIM));
    let new_dim = if vision { "new" } else { "seq" };
    let bias = g.attention_bias_input(spec.attention_bias, new_dim);
    let cache_dims = |len| kv_cache_dims(spec.heads, len, spec.head_dim);
    let mut past = Vec::new();
    for layer in 0..spec.layers {
        let k = g.input(&spec.past_key(layer), DataType::Float, &cache_dims("past"));
        let v = g.input(
            &spec.past_value(layer),
            DataType::Float,
            &cache_dims("past"),
        );
        past.push((k, v));
    }

    let tok_table = g.weight("embeddings.token", &[spec.vocab, hidden], 1.0);
    let pos_table = g.weight("embeddings.position", &[spec.max_positions, hidden], 0.5);
    let mut tok = g.op("Gather", &[&tok_table, &ids], vec![attr_int("axis", 0)]);
    if let Some(patches) = &patches {
        // Vision encoder: patch embedding and a GELU MLP, then the image tokens precede the text tokens.
        let v = dense(
            &mut g,
            patches,
            "vision.patch",
            VLM_PATCH_DIM,
            hidden,
            2.0,
            true,
        );
        let v = crate::layers::gelu(&mut g, &v);
        let v = dense(&mut g, &v, "vision.project", hidden, hidden, 1.0, true);
        tok = g.op("Concat", &[&v, &tok], vec![attr_int("axis", 1)]);
    }
    let pos = g.op(
        "Gather",
        &[&pos_table, &positions],
        vec![attr_int("axis", 0)],
    );
    let mut x = g.op("Add", &[&tok, &pos], vec![]);

    let mut presents = Vec::new();
    for (layer, (past_k, past_v)) in past.iter().enumerate() {
        let p = format!("layers.{layer}");
        let h = layer_norm(&mut g, &x, &format!("{p}.attn_norm"), hidden);
        let q = dense(
            &mut g,
            &h,
            &format!("{p}.attn.q"),
            hidden,
            hidden,
            1.0,
            true,
        );
        let k = dense(
            &mut g,
            &h,
            &format!("{p}.attn.k"),
            hidden,
            hidden,
            1.0,
            true,
        );
        let v = dense(
            &mut g,
            &h,
            &format!("{p}.attn.v"),
            hidden,
            hidden,
            1.0,
            true,
        );
        let q = split_heads(&mut g, &q, spec.heads, spec.head_dim);
        let k = split_heads(&mut g, &k, spec.heads, spec.head_dim);
        let v = split_heads(&mut g, &v, spec.heads, spec.head_dim);
        // The cache grows along the sequence axis: present = past ++ new.
        let present_k = g.op_to(
            "Concat",
            &[past_k, &k],
            vec![attr_int("axis", 2)],
            &spec.present_key(layer),
        );
        let present_v = g.op_to(
            "Concat",
            &[past_v, &v],
            vec![attr_int("axis", 2)],
            &spec.present_value(layer),
        );
        let ctx = attention(&mut g, &q, &present_k, &present_v, &bias, spec.head_dim);
        let ctx = merge_heads(&mut g, &ctx, spec.heads, spec.head_dim);
        let attn_out = dense(
            &mut g,
            &ctx,
            &format!("{p}.attn.out"),
            hidden,
            hidden,
            1.0,
            true,
        );
        let x1 = g.op("Add", &[&x, &attn_out], vec![]);
        let h = layer_norm(&mut g, &x1, &format!("{p}.ffn_norm"), hidden);
        let ff = feed_forward(&mut g, &h, &format!("{p}.ffn"), hidden, FFN);
        x = g.op("Add", &[&x1, &ff], vec![]);
        presents.push((present_k, present_v));
    }

    let x = layer_norm(&mut g, &x, "final_norm", hidden);
    // Tied LM head: logits = x @ token_table^T, scaled so logits have a spread of a few units.
    let head = g.op("Transpose", &[&tok_table], vec![attr_ints("perm", &[1, 0])]);
    let raw = g.op("MatMul", &[&x, &head], vec![]);
    let head_scale = g.const_f32("const.lm_head_scale", &[], &[2.0 / (hidden as f32).sqrt()]);
    let logits = g.op("Mul", &[&raw, &head_scale], vec![]);
    g.output(
        &logits,
        spec.logits,
        DataType::Float,
        &[
            Dim::Fixed(1),
            Dim::Param(new_dim),
            Dim::Fixed(spec.vocab as i64),
        ],
    );
    for (layer, (k, v)) in presents.iter().enumerate() {
        g.output(
            k,
            &spec.present_key(layer),
            DataType::Float,
            &cache_dims("total"),
        );
        g.output(
            v,
            &spec.present_value(layer),
            DataType::Float,
            &cache_dims("total"),
        );
    }
    if vision {
        g.finish(
            "tiny_vlm",
            "trtmc tiny-vlm: seeded patch-embedding vision encoder in front of the tiny-gpt decoder, KV cache",
        )
    } else {
        g.finish(
            "tiny_gpt",
            "trtmc tiny-gpt: seeded 2-layer byte-level decoder with KV-cache inputs and outputs",
        )
    }
}
