//! Transformer families, each built from its published configuration ([`Transformer`]): text
//! encoders (sentence embedders, cross-encoder rerankers), decoder-only generators with an explicit
//! KV cache (the `tiny-gpt` contract, see [`crate::DecoderSpec`]), optionally behind a vision
//! encoder (the `tiny-vlm` contract), ViT classifiers, encoder-decoders (text or log-mel audio in,
//! logits out) and a CLIP-style image-text pair.

use serde::Serialize;
use tract_onnx::pb::tensor_proto::DataType;

use crate::layers::{merge_heads, split_heads};
use crate::nn::{Act, ConvSpec, Norm, activate, conv, dense, dim_of, ffn, norm, rows, slice};
use crate::proto::{Dim, Graph, attr_int, attr_ints, kv_cache_dims};

/// Where a transformer's token positions come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Positions {
    /// A learned table of this many rows.
    Learned(usize),
    /// A fixed sinusoidal table of this many rows.
    Sinusoidal(usize),
    /// Rotary embeddings on `dims` of each head (all of them for Llama, a quarter for Pythia), up to
    /// `max` positions.
    Rotary { max: usize, dims: usize },
    /// T5's relative position bias: a learned bias per head and (query, key) pair up to `max`.
    RelativeBias(usize),
}

/// The shape of a transformer stack, as the public configuration states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Transformer {
    pub layers: usize,
    pub hidden: usize,
    pub heads: usize,
    /// Key/value heads (fewer than `heads`: grouped-query attention).
    pub kv_heads: usize,
    pub ffn: usize,
    pub vocab: usize,
    pub norm: Norm,
    pub act: Act,
    pub positions: Positions,
    /// Pre-norm (GPT-2, Llama, ViT) or post-norm (BERT, BART).
    pub pre_norm: bool,
    /// Attention and FFN read the same input and add together (GPT-NeoX / Pythia).
    pub parallel: bool,
    /// Linear layers carry a bias (not in Llama or T5).
    pub bias: bool,
}

impl Transformer {
    fn head_dim(&self) -> usize {
        self.hidden / self.heads
    }
}

/// Additive bias for masked attention scores.
const MASKED: f32 = -1e9;

/// Rotary tables gathered at the call's positions: ([1, 1, seq, dims] cos, same sin).
struct Rope {
    cos: String,
    sin: String,
    dims: usize,
}

/// Multi-head (or grouped-query) self- or cross-attention. `kv_source` is the memory for cross-attention
/// (`None`: self-attention over `x`). `cache` = (past key, past value, present names) appends the new
/// keys/values to a KV cache and returns the presents.
struct Attend<'a> {
    t: &'a Transformer,
    bias: Option<&'a str>,
    rope: Option<&'a Rope>,
    kv_source: Option<&'a str>,
    cache: Option<(&'a str, &'a str, String, String)>,
}

fn attention_block(
    g: &mut Graph,
    x: &str,
    prefix: &str,
    a: Attend<'_>,
) -> (String, Option<(String, String)>) {
    let t = a.t;
    let hd = t.head_dim();
    let kv_width = t.kv_heads * hd;
    let q = dense(
        g,
        x,
        &format!("{prefix}.q"),
        t.hidden,
        t.hidden,
        1.0,
        t.bias,
    );
    let src = a.kv_source.unwrap_or(x);
    let k = dense(
        g,
        src,
        &format!("{prefix}.k"),
        t.hidden,
        kv_width,
        1.0,
        t.bias,
    );
    let v = dense(
        g,
        src,
        &format!("{prefix}.v"),
        t.hidden,
        kv_width,
        1.0,
        t.bias,
    );
    let mut q = split_heads(g, &q, t.heads, hd);
    let mut k = split_heads(g, &k, t.kv_heads, hd);
    let mut v = split_heads(g, &v, t.kv_heads, hd);
    if let Some(rope) = a.rope {
        q = rotate(g, &q, rope, hd);
        k = rotate(g, &k, rope, hd);
    }
    let mut presents = None;
    if let Some((past_k, past_v, name_k, name_v)) = a.cache {
        k = g.op_to("Concat", &[past_k, &k], vec![attr_int("axis", 2)], &name_k);
        v = g.op_to("Concat", &[past_v, &v], vec![attr_int("axis", 2)], &name_v);
        presents = Some((k.clone(), v.clone()));
    }
    if t.kv_heads != t.heads {
        k = repeat_kv(g, &k, t.heads / t.kv_heads, t.heads, hd);
        v = repeat_kv(g, &v, t.heads / t.kv_heads, t.heads, hd);
    }
    let scale = g.const_f32(
        &format!("const.attn_scale_{hd}"),
        &[],
        &[1.0 / (hd as f32).sqrt()],
    );
    let kt = g.op("Transpose", &[&k], vec![attr_ints("perm", &[0, 1, 3, 2])]);
    let scores = g.op("MatMul", &[&q, &kt], vec![]);
    let mut scores = g.op("Mul", &[&scores, &scale], vec![]);
    if let Some(bias) = a.bias {
        scores = g.op("Add", &[&scores, bias], vec![]);
    }
    let probs = g.op("Softmax", &[&scores], vec![attr_int("axis", -1)]);
    let ctx = g.op("MatMul", &[&probs, &v], vec![]);
    let ctx = merge_heads(g, &ctx, t.heads, hd);
    let out = dense(
        g,
        &ctx,
        &format!("{prefix}.out"),
        t.hidden,
        t.hidden,
        1.0,
        t.bias,
    );
    (out, presents)
}

/// [1, kv_heads, t, d] -> [1, heads, t, d]: each key/value head serves `rep` query heads.
fn repeat_kv(g: &mut Graph, x: &str, rep: usize, heads: usize, hd: usize) -> String {
    let axis = g.const_i64("const.i64_2", &[2]);
    let x5 = g.op("Unsqueeze", &[x, &axis], vec![]);
    let copies: Vec<&str> = std::iter::repeat_n(x5.as_str(), rep).collect();
    let tiled = g.op("Concat", &copies, vec![attr_int("axis", 2)]);
    let shape = g.const_i64(
        &format!("const.kv_heads_{heads}x{hd}"),
        &[0, heads as i64, -1, hd as i64],
    );
    g.op("Reshape", &[&tiled, &shape], vec![])
}

/// Rotary position embedding on the first `rope.dims` of each head (rotate-half form).
fn rotate(g: &mut Graph, x: &str, rope: &Rope, hd: usize) -> String {
    let d = rope.dims as i64;
    let (rot, pass) = if rope.dims < hd {
        (slice(g, x, 3, 0, d), Some(slice(g, x, 3, d, hd as i64)))
    } else {
        (x.to_string(), None)
    };
    let x1 = slice(g, &rot, 3, 0, d / 2);
    let x2 = slice(g, &rot, 3, d / 2, d);
    let neg = g.op("Neg", &[&x2], vec![]);
    let half = g.op("Concat", &[&neg, &x1], vec![attr_int("axis", 3)]);
    let a = g.op("Mul", &[&rot, &rope.cos], vec![]);
    let b = g.op("Mul", &[&half, &rope.sin], vec![]);
    let y = g.op("Add", &[&a, &b], vec![]);
    match pass {
        Some(p) => g.op("Concat", &[&y, &p], vec![attr_int("axis", 3)]),
        None => y,
    }
}

/// cos/sin tables [max, dims] (the frequencies repeated over both halves), gathered at `positions`
/// [1, seq] and shaped [1, 1, seq, dims].
fn rope_at(g: &mut Graph, positions: &str, max: usize, dims: usize) -> Rope {
    let half = dims / 2;
    let mut cos = vec![0.0f32; max * dims];
    let mut sin = vec![0.0f32; max * dims];
    for p in 0..max {
        for i in 0..half {
            let freq = 10_000f64.powf(-(2.0 * i as f64) / dims as f64);
            let angle = p as f64 * freq;
            for j in [i, i + half] {
                cos[p * dims + j] = angle.cos() as f32;
                sin[p * dims + j] = angle.sin() as f32;
            }
        }
    }
    let cos_t = g.const_f32(&format!("const.rope_cos_{max}x{dims}"), &[max, dims], &cos);
    let sin_t = g.const_f32(&format!("const.rope_sin_{max}x{dims}"), &[max, dims], &sin);
    let axis = g.const_i64("const.i64_1", &[1]);
    let c = g.op("Gather", &[&cos_t, positions], vec![attr_int("axis", 0)]);
    let s = g.op("Gather", &[&sin_t, positions], vec![attr_int("axis", 0)]);
    Rope {
        cos: g.op("Unsqueeze", &[&c, &axis], vec![]),
        sin: g.op("Unsqueeze", &[&s, &axis], vec![]),
        dims,
    }
}

/// One transformer layer (self-attention, optional cross-attention, FFN) in pre- or post-norm form.
fn layer(
    g: &mut Graph,
    x: &str,
    prefix: &str,
    t: &Transformer,
    self_attn: Attend<'_>,
    cross: Option<(&str, Option<&str>)>,
) -> (String, Option<(String, String)>) {
    let h = if t.pre_norm {
        norm(g, x, &format!("{prefix}.attn_norm"), t.hidden, t.norm)
    } else {
        x.to_string()
    };
    let (attn, presents) = attention_block(g, &h, &format!("{prefix}.attn"), self_attn);
    if t.parallel {
        // GPT-NeoX: x + attn(ln1(x)) + ffn(ln2(x)).
        let h2 = norm(g, x, &format!("{prefix}.ffn_norm"), t.hidden, t.norm);
        let f = ffn(
            g,
            &h2,
            &format!("{prefix}.ffn"),
            t.hidden,
            t.ffn,
            t.act,
            t.bias,
        );
        let y = g.op("Add", &[x, &attn], vec![]);
        return (g.op("Add", &[&y, &f], vec![]), presents);
    }
    let mut x = g.op("Add", &[x, &attn], vec![]);
    if !t.pre_norm {
        x = norm(g, &x, &format!("{prefix}.attn_norm"), t.hidden, t.norm);
    }
    if let Some((memory, memory_bias)) = cross {
        let h = if t.pre_norm {
            norm(g, &x, &format!("{prefix}.cross_norm"), t.hidden, t.norm)
        } else {
            x.clone()
        };
        let a = Attend {
            t,
            bias: memory_bias,
            rope: None,
            kv_source: Some(memory),
            cache: None,
        };
        let (c, _) = attention_block(g, &h, &format!("{prefix}.cross"), a);
        x = g.op("Add", &[&x, &c], vec![]);
        if !t.pre_norm {
            x = norm(g, &x, &format!("{prefix}.cross_norm"), t.hidden, t.norm);
        }
    }
    let h = if t.pre_norm {
        norm(g, &x, &format!("{prefix}.ffn_norm"), t.hidden, t.norm)
    } else {
        x.clone()
    };
    let f = ffn(
        g,
        &h,
        &format!("{prefix}.ffn"),
        t.hidden,
        t.ffn,
        t.act,
        t.bias,
    );
    let mut y = g.op("Add", &[&x, &f], vec![]);
    if !t.pre_norm {
        y = norm(g, &y, &format!("{prefix}.ffn_norm"), t.hidden, t.norm);
    }
    (y, presents)
}

/// A plain stack of self-attention layers over `x` with an optional additive bias.
pub(crate) fn stack(
    g: &mut Graph,
    x: &str,
    prefix: &str,
    t: &Transformer,
    bias: Option<&str>,
) -> String {
    let mut x = x.to_string();
    for i in 0..t.layers {
        let a = Attend {
            t,
            bias,
            rope: None,
            kv_source: None,
            cache: None,
        };
        x = layer(g, &x, &format!("{prefix}.{i}"), t, a, None).0;
    }
    if t.pre_norm {
        x = norm(g, &x, &format!("{prefix}.final_norm"), t.hidden, t.norm);
    }
    x
}

/// Token embeddings of `ids` [b, s] plus absolute positions 0..s (learned or sinusoidal).
fn embed_tokens(g: &mut Graph, ids: &str, prefix: &str, t: &Transformer) -> (String, String) {
    let table = g.weight(&format!("{prefix}.token"), &[t.vocab, t.hidden], 1.0);
    let tok = g.op("Gather", &[&table, ids], vec![attr_int("axis", 0)]);
    let seq = dim_of(g, ids, 1);
    let x = match t.positions {
        Positions::Learned(max) => {
            let pos = g.weight(&format!("{prefix}.position"), &[max, t.hidden], 0.5);
            let pos = rows(g, &pos, &seq);
            g.op("Add", &[&tok, &pos], vec![])
        }
        Positions::Sinusoidal(max) => {
            let values = crate::nn::sinusoid_table(max, t.hidden);
            let pos = g.const_f32(
                &format!("const.sinusoid_{max}x{}", t.hidden),
                &[max, t.hidden],
                &values,
            );
            let pos = rows(g, &pos, &seq);
            g.op("Add", &[&tok, &pos], vec![])
        }
        Positions::Rotary { .. } | Positions::RelativeBias(_) => tok,
    };
    (x, table)
}

/// [b, s] int mask (1 = attend) -> additive [b, 1, 1, s].
fn padding_bias(g: &mut Graph, mask: &str) -> String {
    let mask_f = g.op(
        "Cast",
        &[mask],
        vec![attr_int("to", DataType::Float as i64)],
    );
    let one = g.const_f32("const.one", &[], &[1.0]);
    let masked = g.const_f32("const.masked", &[], &[MASKED]);
    let inverted = g.op("Sub", &[&one, &mask_f], vec![]);
    let additive = g.op("Mul", &[&inverted, &masked], vec![]);
    let axes = g.const_i64("const.axes_1_2", &[1, 2]);
    g.op("Unsqueeze", &[&additive, &axes], vec![])
}

/// [1, 1, s, s] causal bias for `ids` [b, s] (sliced from a fixed [max, max] table).
fn causal_bias(g: &mut Graph, ids: &str, max: usize) -> String {
    let mut table = vec![0.0f32; max * max];
    for q in 0..max {
        for k in q + 1..max {
            table[q * max + k] = MASKED;
        }
    }
    let t = g.const_f32(&format!("const.causal_{max}"), &[max, max], &table);
    let s = dim_of(g, ids, 1);
    let ends = g.op("Concat", &[&s, &s], vec![attr_int("axis", 0)]);
    let starts = g.const_i64("const.zeros_2", &[0, 0]);
    let axes = g.const_i64("const.axes_0_1", &[0, 1]);
    let square = g.op("Slice", &[&t, &starts, &ends, &axes], vec![]);
    let axes = g.const_i64("const.i64_0_1", &[0, 1]);
    g.op("Unsqueeze", &[&square, &axes], vec![])
}

/// T5's relative position bias [1, heads, s, s] for `ids` [b, s] (a learned table sliced to s).
fn relative_bias(g: &mut Graph, ids: &str, prefix: &str, heads: usize, max: usize) -> String {
    let table = g.weight(&format!("{prefix}.relative_bias"), &[heads, max, max], 0.5);
    let s = dim_of(g, ids, 1);
    let ends = g.op("Concat", &[&s, &s], vec![attr_int("axis", 0)]);
    let starts = g.const_i64("const.zeros_2", &[0, 0]);
    let axes = g.const_i64("const.axes_1_2", &[1, 2]);
    let cut = g.op("Slice", &[&table, &starts, &ends, &axes], vec![]);
    let axis = g.const_i64("const.zero_1d", &[0]);
    g.op("Unsqueeze", &[&cut, &axis], vec![])
}

/// How a text encoder's sequence becomes its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum EncoderHead {
    /// Mask-weighted mean, L2-normalised `embeddings` (sentence-transformers).
    MeanPool,
    /// The first token's state, L2-normalised `embeddings` (BGE).
    ClsPool,
    /// Cross-encoder: tanh pooler on the first token, then one relevance `scores` [batch, 1].
    Rerank,
}

/// `input_ids`, `attention_mask` [batch, seq] -> `last_hidden_state` and `embeddings` (or `scores`).
pub(crate) fn text_encoder(seed: u64, t: &Transformer, head: EncoderHead, name: &str) -> Vec<u8> {
    let mut g = Graph::new(seed);
    let dims = [Dim::Param("batch"), Dim::Param("seq")];
    let ids = g.input("input_ids", DataType::Int64, &dims);
    let mask = g.input("attention_mask", DataType::Int64, &dims);
    let (x, _) = embed_tokens(&mut g, &ids, "embeddings", t);
    let x = if t.pre_norm {
        x
    } else {
        norm(&mut g, &x, "embeddings.norm", t.hidden, t.norm)
    };
    let mut bias = padding_bias(&mut g, &mask);
    if let Positions::RelativeBias(max) = t.positions {
        let rel = relative_bias(&mut g, &ids, "encoder", t.heads, max);
        bias = g.op("Add", &[&bias, &rel], vec![]);
    }
    let x = stack(&mut g, &x, "encoder", t, Some(bias.as_str()));
    let batch_seq_hidden = [
        Dim::Param("batch"),
        Dim::Param("seq"),
        Dim::Fixed(t.hidden as i64),
    ];
    // A cross-encoder's export gives its scores alone (the rerank runner reads its one output).
    if head != EncoderHead::Rerank {
        g.output(&x, "last_hidden_state", DataType::Float, &batch_seq_hidden);
    }
    let first = g.const_i64("const.zero_1d", &[0]);
    let axis1 = g.const_i64("const.i64_1", &[1]);
    let cls = {
        let c = g.op("Gather", &[&x, &first], vec![attr_int("axis", 1)]);
        g.op("Squeeze", &[&c, &axis1], vec![])
    };
    match head {
        EncoderHead::Rerank => {
            let p = dense(&mut g, &cls, "pooler", t.hidden, t.hidden, 1.0, true);
            let p = g.op("Tanh", &[&p], vec![]);
            let score = dense(&mut g, &p, "classifier", t.hidden, 1, 1.0, true);
            g.output(
                &score,
                "scores",
                DataType::Float,
                &[Dim::Param("batch"), Dim::Fixed(1)],
            );
        }
        EncoderHead::MeanPool | EncoderHead::ClsPool => {
            let pooled = if head == EncoderHead::ClsPool {
                cls
            } else {
                let mask_f = g.op(
                    "Cast",
                    &[&mask],
                    vec![attr_int("to", DataType::Float as i64)],
                );
                let axis2 = g.const_i64("const.i64_2", &[2]);
                let m = g.op("Unsqueeze", &[&mask_f, &axis2], vec![]);
                let weighted = g.op("Mul", &[&x, &m], vec![]);
                let summed = g.op(
                    "ReduceSum",
                    &[&weighted, &axis1],
                    vec![attr_int("keepdims", 0)],
                );
                let count = g.op("ReduceSum", &[&m, &axis1], vec![attr_int("keepdims", 0)]);
                let tiny = g.const_f32("const.tiny", &[], &[1e-9]);
                let count = g.op("Max", &[&count, &tiny], vec![]);
                g.op("Div", &[&summed, &count], vec![])
            };
            let e = l2_normalize(&mut g, &pooled);
            g.output(
                &e,
                "embeddings",
                DataType::Float,
                &[Dim::Param("batch"), Dim::Fixed(t.hidden as i64)],
            );
        }
    }
    g.finish(
        name,
        &format!("trtmc generated {name}: seeded text encoder"),
    )
}

fn l2_normalize(g: &mut Graph, x: &str) -> String {
    let axis = g.const_i64("const.i64_m1", &[-1]);
    let sq = g.op("Mul", &[x, x], vec![]);
    let sum = g.op("ReduceSum", &[&sq, &axis], vec![attr_int("keepdims", 1)]);
    let tiny = g.const_f32("const.tiny", &[], &[1e-9]);
    let sum = g.op("Max", &[&sum, &tiny], vec![]);
    let norm = g.op("Sqrt", &[&sum], vec![]);
    g.op("Div", &[x, &norm], vec![])
}

/// A vision encoder over flattened patches (the VLM's image side): patch size and its own stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct VisionPrefix {
    pub patch: usize,
    pub max_patches: usize,
    pub encoder: Transformer,
}

/// A decoder-only generator with the KV-cache contract of [`crate::DecoderSpec`]; with `vision`, the
/// `tiny-vlm` contract (`image_patches` [1, patches, 3·p·p] ahead of the prompt).
pub(crate) fn decoder(
    seed: u64,
    t: &Transformer,
    tied_head: bool,
    vision: Option<&VisionPrefix>,
    name: &str,
) -> Vec<u8> {
    let hd = t.head_dim();
    let mut g = Graph::new(seed);
    let new_dim = if vision.is_some() { "new" } else { "seq" };
    let ids = g.input(
        "input_ids",
        DataType::Int64,
        &[Dim::Fixed(1), Dim::Param("seq")],
    );
    let positions = g.input(
        "position_ids",
        DataType::Int64,
        &[Dim::Fixed(1), Dim::Param(new_dim)],
    );
    let patches = vision.map(|v| g.rows_input("image_patches", "patches", 3 * v.patch * v.patch));
    let bias = g.attention_bias_input("attention_bias", new_dim);
    let cache_dims = |len| kv_cache_dims(t.kv_heads, len, hd);
    let mut past = Vec::new();
    for layer in 0..t.layers {
        let k = g.input(
            &format!("past_key_values.{layer}.key"),
            DataType::Float,
            &cache_dims("past"),
        );
        let v = g.input(
            &format!("past_key_values.{layer}.value"),
            DataType::Float,
            &cache_dims("past"),
        );
        past.push((k, v));
    }
    let table = g.weight("embeddings.token", &[t.vocab, t.hidden], 1.0);
    let mut x = g.op("Gather", &[&table, &ids], vec![attr_int("axis", 0)]);
    if let (Some(v), Some(patches)) = (vision, &patches) {
        let e = &v.encoder;
        let emb = dense(
            &mut g,
            patches,
            "vision.patch",
            3 * v.patch * v.patch,
            e.hidden,
            1.0,
            true,
        );
        let pos = g.weight("vision.position", &[v.max_patches, e.hidden], 0.5);
        let count = dim_of(&mut g, patches, 1);
        let pos = rows(&mut g, &pos, &count);
        let emb = g.op("Add", &[&emb, &pos], vec![]);
        let enc = stack(&mut g, &emb, "vision.encoder", e, None);
        let proj = dense(
            &mut g,
            &enc,
            "vision.project",
            e.hidden,
            t.hidden,
            1.0,
            true,
        );
        x = g.op("Concat", &[&proj, &x], vec![attr_int("axis", 1)]);
    }
    let rope = match t.positions {
        Positions::Learned(max) => {
            let pos = g.weight("embeddings.position", &[max, t.hidden], 0.5);
            let p = g.op("Gather", &[&pos, &positions], vec![attr_int("axis", 0)]);
            x = g.op("Add", &[&x, &p], vec![]);
            None
        }
        Positions::Sinusoidal(max) => {
            let values = crate::nn::sinusoid_table(max, t.hidden);
            let pos = g.const_f32("const.sinusoid", &[max, t.hidden], &values);
            let p = g.op("Gather", &[&pos, &positions], vec![attr_int("axis", 0)]);
            x = g.op("Add", &[&x, &p], vec![]);
            None
        }
        Positions::Rotary { max, dims } => Some(rope_at(&mut g, &positions, max, dims)),
        Positions::RelativeBias(_) => None,
    };
    let mut presents = Vec::new();
    for (i, (pk, pv)) in past.iter().enumerate() {
        let a = Attend {
            t,
            bias: Some(bias.as_str()),
            rope: rope.as_ref(),
            kv_source: None,
            cache: Some((
                pk.as_str(),
                pv.as_str(),
                format!("present.{i}.key"),
                format!("present.{i}.value"),
            )),
        };
        let (y, p) = layer(&mut g, &x, &format!("layers.{i}"), t, a, None);
        x = y;
        presents.extend(p);
    }
    let x = norm(&mut g, &x, "final_norm", t.hidden, t.norm);
    let head = if tied_head {
        g.op("Transpose", &[&table], vec![attr_ints("perm", &[1, 0])])
    } else {
        g.weight(
            "lm_head.weight",
            &[t.hidden, t.vocab],
            crate::init::scaled_bound(1.0, t.hidden),
        )
    };
    let raw = g.op("MatMul", &[&x, &head], vec![]);
    let scale = g.const_f32(
        "const.lm_head_scale",
        &[],
        &[2.0 / (t.hidden as f32).sqrt()],
    );
    let logits = g.op("Mul", &[&raw, &scale], vec![]);
    g.output(
        &logits,
        "logits",
        DataType::Float,
        &[
            Dim::Fixed(1),
            Dim::Param(new_dim),
            Dim::Fixed(t.vocab as i64),
        ],
    );
    for (i, (k, v)) in presents.iter().enumerate() {
        g.output(
            k,
            &format!("present.{i}.key"),
            DataType::Float,
            &cache_dims("total"),
        );
        g.output(
            v,
            &format!("present.{i}.value"),
            DataType::Float,
            &cache_dims("total"),
        );
    }
    g.finish(
        name,
        &format!("trtmc generated {name}: seeded decoder with KV-cache inputs and outputs"),
    )
}

/// A ViT image classifier (or CLIP's image tower).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Vit {
    pub image: usize,
    pub patch: usize,
    pub classes: usize,
    pub encoder: Transformer,
}

/// `pixel` [b, 3, H, W] -> the class token's final state [b, hidden].
fn vit_features(g: &mut Graph, image: &str, prefix: &str, v: &Vit) -> String {
    let e = &v.encoder;
    let patches = conv(
        g,
        image,
        &format!("{prefix}.patch"),
        ConvSpec::d2(3, e.hidden, v.patch, v.patch).pad(0),
    );
    let flat_shape = g.const_i64(
        &format!("const.flatten_{}", e.hidden),
        &[0, e.hidden as i64, -1],
    );
    let flat = g.op("Reshape", &[&patches, &flat_shape], vec![]);
    let tokens = g.op("Transpose", &[&flat], vec![attr_ints("perm", &[0, 2, 1])]);
    // The class token, broadcast over the batch: zero times the first patch, plus the learned row.
    let cls = g.weight(&format!("{prefix}.cls"), &[1, 1, e.hidden], 0.5);
    let first = slice(g, &tokens, 1, 0, 1);
    let zero = g.const_f32("const.zero", &[], &[0.0]);
    let z = g.op("Mul", &[&first, &zero], vec![]);
    let cls = g.op("Add", &[&z, &cls], vec![]);
    let x = g.op("Concat", &[&cls, &tokens], vec![attr_int("axis", 1)]);
    let n = (v.image / v.patch).pow(2) + 1;
    let pos = g.weight(&format!("{prefix}.position"), &[1, n, e.hidden], 0.5);
    let x = g.op("Add", &[&x, &pos], vec![]);
    let x = stack(g, &x, &format!("{prefix}.encoder"), e, None);
    let c = slice(g, &x, 1, 0, 1);
    let axis = g.const_i64("const.i64_1", &[1]);
    g.op("Squeeze", &[&c, &axis], vec![])
}

/// `image` [b, 3, H, W] -> `logits` [b, classes].
pub(crate) fn vit_classifier(seed: u64, v: &Vit, name: &str) -> Vec<u8> {
    let mut g = Graph::new(seed);
    let image = g.image_input("image", v.image);
    let f = vit_features(&mut g, &image, "vit", v);
    let logits = dense(&mut g, &f, "head", v.encoder.hidden, v.classes, 1.0, true);
    g.output(
        &logits,
        "logits",
        DataType::Float,
        &[Dim::Param("batch"), Dim::Fixed(v.classes as i64)],
    );
    g.finish(
        name,
        &format!("trtmc generated {name}: seeded ViT classifier"),
    )
}

/// The input side of an encoder-decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Source {
    /// Token ids [b, src].
    Text,
    /// Whisper: log-mel features [b, mels, frames] through two convolutions (the second halves the
    /// frames) and sinusoidal positions.
    LogMel { mels: usize, frames: usize },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EncoderDecoder {
    pub source: Source,
    pub encoder: Transformer,
    pub decoder: Transformer,
}

/// (`input_ids` [b, src] or `input_features` [b, mels, frames]) and `decoder_input_ids` [b, tgt] ->
/// `logits` [b, tgt, vocab]: one teacher-forced pass of the whole model.
pub(crate) fn encoder_decoder(seed: u64, m: &EncoderDecoder, name: &str) -> Vec<u8> {
    let mut g = Graph::new(seed);
    let (enc, dec) = (&m.encoder, &m.decoder);
    let x = match m.source {
        Source::Text => {
            let ids = g.input(
                "input_ids",
                DataType::Int64,
                &[Dim::Param("batch"), Dim::Param("src")],
            );
            let (x, _) = embed_tokens(&mut g, &ids, "encoder.embeddings", enc);
            let x = if enc.pre_norm {
                x
            } else {
                norm(&mut g, &x, "encoder.embeddings.norm", enc.hidden, enc.norm)
            };
            let bias = match enc.positions {
                Positions::RelativeBias(max) => {
                    Some(relative_bias(&mut g, &ids, "encoder", enc.heads, max))
                }
                _ => None,
            };
            stack(&mut g, &x, "encoder.layers", enc, bias.as_deref())
        }
        Source::LogMel { mels, frames } => {
            let f = g.input(
                "input_features",
                DataType::Float,
                &[
                    Dim::Param("batch"),
                    Dim::Fixed(mels as i64),
                    Dim::Fixed(frames as i64),
                ],
            );
            let h = conv(
                &mut g,
                &f,
                "encoder.conv1",
                ConvSpec::d1(mels, enc.hidden, 3, 1),
            );
            let h = activate(&mut g, &h, Act::Gelu);
            let h = conv(
                &mut g,
                &h,
                "encoder.conv2",
                ConvSpec::d1(enc.hidden, enc.hidden, 3, 2),
            );
            let h = activate(&mut g, &h, Act::Gelu);
            let h = g.op("Transpose", &[&h], vec![attr_ints("perm", &[0, 2, 1])]);
            let n = frames.div_ceil(2);
            let pos = crate::nn::sinusoid_table(n, enc.hidden);
            let pos = g.const_f32(
                &format!("const.audio_positions_{n}"),
                &[n, enc.hidden],
                &pos,
            );
            let h = g.op("Add", &[&h, &pos], vec![]);
            stack(&mut g, &h, "encoder.layers", enc, None)
        }
    };
    let dec_ids = g.input(
        "decoder_input_ids",
        DataType::Int64,
        &[Dim::Param("batch"), Dim::Param("tgt")],
    );
    let (mut y, table) = embed_tokens(&mut g, &dec_ids, "decoder.embeddings", dec);
    if !dec.pre_norm {
        y = norm(&mut g, &y, "decoder.embeddings.norm", dec.hidden, dec.norm);
    }
    let max = match dec.positions {
        Positions::Learned(m) | Positions::Sinusoidal(m) | Positions::RelativeBias(m) => m,
        Positions::Rotary { max, .. } => max,
    };
    let mut bias = causal_bias(&mut g, &dec_ids, max);
    if let Positions::RelativeBias(max) = dec.positions {
        let rel = relative_bias(&mut g, &dec_ids, "decoder", dec.heads, max);
        bias = g.op("Add", &[&bias, &rel], vec![]);
    }
    for i in 0..dec.layers {
        let a = Attend {
            t: dec,
            bias: Some(bias.as_str()),
            rope: None,
            kv_source: None,
            cache: None,
        };
        y = layer(
            &mut g,
            &y,
            &format!("decoder.layers.{i}"),
            dec,
            a,
            Some((x.as_str(), None)),
        )
        .0;
    }
    if dec.pre_norm {
        y = norm(&mut g, &y, "decoder.final_norm", dec.hidden, dec.norm);
    }
    let head = g.op("Transpose", &[&table], vec![attr_ints("perm", &[1, 0])]);
    let raw = g.op("MatMul", &[&y, &head], vec![]);
    let scale = g.const_f32(
        "const.lm_head_scale",
        &[],
        &[2.0 / (dec.hidden as f32).sqrt()],
    );
    let logits = g.op("Mul", &[&raw, &scale], vec![]);
    g.output(
        &logits,
        "logits",
        DataType::Float,
        &[
            Dim::Param("batch"),
            Dim::Param("tgt"),
            Dim::Fixed(dec.vocab as i64),
        ],
    );
    g.finish(
        name,
        &format!("trtmc generated {name}: seeded encoder-decoder"),
    )
}

/// CLIP: an image tower and a causal text tower projected into one space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Clip {
    pub vision: Vit,
    pub text: Transformer,
    pub projection: usize,
}

/// `pixel_values` [images, 3, H, W], `input_ids` [texts, seq] -> `logits_per_image` [images, texts].
pub(crate) fn clip(seed: u64, c: &Clip, name: &str) -> Vec<u8> {
    let mut g = Graph::new(seed);
    let image = g.image_input("pixel_values", c.vision.image);
    let ids = g.input(
        "input_ids",
        DataType::Int64,
        &[Dim::Param("texts"), Dim::Param("seq")],
    );
    let img = vit_features(&mut g, &image, "vision", &c.vision);
    let img = dense(
        &mut g,
        &img,
        "vision.project",
        c.vision.encoder.hidden,
        c.projection,
        1.0,
        false,
    );
    let img = l2_normalize(&mut g, &img);
    let (x, _) = embed_tokens(&mut g, &ids, "text.embeddings", &c.text);
    let max = match c.text.positions {
        Positions::Learned(m) => m,
        _ => 77,
    };
    let bias = causal_bias(&mut g, &ids, max);
    let x = stack(&mut g, &x, "text.encoder", &c.text, Some(bias.as_str()));
    // The pooled text state: the last position (where CLIP's end-of-text token sits in a full prompt).
    let last = g.const_i64("const.i64_m1", &[-1]);
    let big = g.const_i64("const.i64_max", &[i64::MAX]);
    let axis = g.const_i64("const.i64_1", &[1]);
    let t = g.op("Slice", &[&x, &last, &big, &axis], vec![]);
    let t = g.op("Squeeze", &[&t, &axis], vec![]);
    let t = dense(
        &mut g,
        &t,
        "text.project",
        c.text.hidden,
        c.projection,
        1.0,
        false,
    );
    let t = l2_normalize(&mut g, &t);
    let tt = g.op("Transpose", &[&t], vec![attr_ints("perm", &[1, 0])]);
    let sim = g.op("MatMul", &[&img, &tt], vec![]);
    let scale = g.const_f32("const.clip_logit_scale", &[], &[100.0]);
    let logits = g.op("Mul", &[&sim, &scale], vec![]);
    g.output(
        &logits,
        "logits_per_image",
        DataType::Float,
        &[Dim::Param("batch"), Dim::Param("texts")],
    );
    g.finish(
        name,
        &format!("trtmc generated {name}: seeded CLIP-style image-text pair"),
    )
}
