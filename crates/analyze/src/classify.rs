//! Per-layer classification: report type (raw LayerType with the narrow `kgen_mha` / `misc`
//! overrides), operation family, precision, source ONNX nodes and tactic hints.

use std::sync::{Arc, LazyLock};

use crate::read::Layer;

/// Raw layer types grouped as `misc` in report output.
const MISC_TYPES: &[&str] = &[
    "reshape",
    "shape_call",
    "signal",
    "wait",
    "signal_and_wait",
    "signal_wait",
];

/// What a layer computes, independent of how TensorRT names the implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// Convolutions and deconvolutions (also fused `ConvActPool`).
    Convolution,
    /// Matrix multiplications and fully connected layers (`gemm`, `MatrixMultiply`, `MatMul`).
    Gemm,
    /// Fused attention kernels and plugins (`fmha`, `mha`, `flash_attn`, … in the name or tactic).
    Attention,
    /// Pooling layers.
    Pooling,
    /// Element-wise math: activations, unary and binary operations, scales.
    Pointwise,
    /// Reductions (sum, mean, max, top-k, arg-max, …).
    Reduction,
    /// Softmax layers.
    Softmax,
    /// Batch, layer, instance and group normalization (also normalization plugins).
    Normalization,
    /// Reformats: copies between tensor formats or precisions that the graph does not ask for.
    Reformat,
    /// Quantize / dequantize (Q/DQ) layers, including TensorRT 8.2's Q/DQ `Scale` layers.
    QuantDequant,
    /// Shuffles, reshapes, transposes and layout reorders.
    Shuffle,
    /// Shape computations (`Shape`, `shape_call`, shape-only kgen kernels).
    Shape,
    /// Data-type casts.
    Cast,
    /// Gathers and scatters.
    Gather,
    /// Slices, concatenations and padding.
    Copy,
    /// Resize (up/down-sampling) layers.
    Resize,
    /// Constant layers.
    Constant,
    /// TensorRT `NoOp` layers.
    NoOp,
    /// An opaque Myelin region (TensorRT 8.x `{ForeignNode[…]}`).
    Myelin,
    /// A TensorRT 10+ `kgen` kernel whose name names no operation this crate knows.
    Kgen,
    /// A plugin that is neither attention nor normalization.
    Plugin,
    /// TensorRT's internal `TrainStation` layers.
    TrainStation,
    /// Stream synchronization (`signal`, `wait`).
    Sync,
    /// Anything else.
    Other,
}

impl Family {
    /// The family's name in the analysis document and the report (`convolution`, `quant_dequant`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Convolution => "convolution",
            Family::Gemm => "gemm",
            Family::Attention => "attention",
            Family::Pooling => "pooling",
            Family::Pointwise => "pointwise",
            Family::Reduction => "reduction",
            Family::Softmax => "softmax",
            Family::Normalization => "normalization",
            Family::Reformat => "reformat",
            Family::QuantDequant => "quant_dequant",
            Family::Shuffle => "shuffle",
            Family::Shape => "shape",
            Family::Cast => "cast",
            Family::Gather => "gather",
            Family::Copy => "copy",
            Family::Resize => "resize",
            Family::Constant => "constant",
            Family::NoOp => "noop",
            Family::Myelin => "myelin",
            Family::Kgen => "kgen",
            Family::Plugin => "plugin",
            Family::TrainStation => "train_station",
            Family::Sync => "sync",
            Family::Other => "other",
        }
    }

    /// Families whose kernels do math-heavy work where tensor cores matter.
    pub fn is_matrix_math(self) -> bool {
        matches!(self, Family::Convolution | Family::Gemm | Family::Attention)
    }
}

impl serde::Serialize for Family {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

static MISC: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from("misc"));
static KGEN_MHA: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from("kgen_mha"));
static UNKNOWN: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from("unknown"));

/// "unknown", shared.
pub fn unknown() -> Arc<str> {
    UNKNOWN.clone()
}

/// `raw` equals `target` ignoring ASCII case, with spaces and dashes read as underscores.
fn type_is(raw: &str, target: &str) -> bool {
    let raw = raw.trim();
    raw.len() == target.len()
        && raw.bytes().zip(target.bytes()).all(|(a, b)| {
            let a = if a == b' ' || a == b'-' {
                b'_'
            } else {
                a.to_ascii_lowercase()
            };
            a == b
        })
}

/// ASCII case-insensitive substring test, without allocating.
pub fn contains_ci(hay: &str, needle: &str) -> bool {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    let Some(first) = n.first() else {
        return true;
    };
    let (lower, upper) = (first.to_ascii_lowercase(), first.to_ascii_uppercase());
    // Compare whole windows only where the first byte matches (names are long, needles rare).
    h.len() >= n.len()
        && (0..=h.len() - n.len())
            .any(|i| (h[i] == lower || h[i] == upper) && h[i..i + n.len()].eq_ignore_ascii_case(n))
}

/// The report `Type`: raw LayerType, except attention-like kgen (`kgen_mha`) and the
/// reshape/shape_call/signal/wait group (`misc`).
pub fn report_type(layer: &Layer) -> Arc<str> {
    let Some(raw) = layer.layer_type.as_ref() else {
        return unknown();
    };
    if MISC_TYPES.iter().any(|t| type_is(raw, t)) {
        MISC.clone()
    } else if type_is(raw, "kgen") && looks_like_attention(layer) {
        KGEN_MHA.clone()
    } else {
        raw.clone()
    }
}

const ATTENTION_WORDS: &[&str] = &[
    "fmha",
    "multihead",
    "multi_head",
    "multi-head",
    "attention",
    "flash_attn",
    "flashattn",
    "scaled_dot_product",
    "sdpa",
    "qkvtocontext",
    "mha",
];

static ATTENTION: LazyLock<Option<aho_corasick::AhoCorasick>> = LazyLock::new(|| {
    aho_corasick::AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(ATTENTION_WORDS)
        .ok()
});

/// Whether a text names attention; "mha" only counts as a whole token (`_gemm_mha_v2`, not `mhamster`).
fn mentions_attention(text: &str) -> bool {
    let Some(matcher) = ATTENTION.as_ref() else {
        return false;
    };
    // A plain (prefiltered) search rules out most texts before the overlapping one.
    if !matcher.is_match(text) {
        return false;
    }
    let b = text.as_bytes();
    matcher.find_overlapping_iter(text).any(|m| {
        if ATTENTION_WORDS[m.pattern().as_usize()] != "mha" {
            return true;
        }
        let before = m
            .start()
            .checked_sub(1)
            .is_some_and(|i| b[i].is_ascii_alphanumeric());
        let after = b.get(m.end()).is_some_and(|c| c.is_ascii_alphanumeric());
        !before && !after
    })
}

/// Whether the layer's name, tactic or source nodes say it is a fused attention kernel.
pub fn looks_like_attention(layer: &Layer) -> bool {
    [
        Some(layer.name.as_str()),
        layer.tactic_name.as_deref(),
        layer.metadata.as_deref(),
        layer.plugin_type.as_deref(),
    ]
    .into_iter()
    .flatten()
    .any(mentions_attention)
}

/// Normalized data type named in a `Format/Datatype` string (TensorRT 8 long forms and TensorRT 10
/// short names alike).
pub fn precision_of(format: &str) -> Option<&'static str> {
    // Runs for every tensor format; a match on the lowercased token beats comparing each token
    // with every name in turn.
    format
        .as_bytes()
        .split(|c| !c.is_ascii_alphanumeric())
        .find_map(|token| {
            // The longest name, `bfloat16`, has 8 letters.
            if token.len() > 8 {
                return None;
            }
            let mut lower = [0u8; 8];
            for (l, c) in lower.iter_mut().zip(token) {
                *l = c.to_ascii_lowercase();
            }
            Some(match &lower[..token.len()] {
                b"fp32" | b"float" | b"float32" => "FP32",
                b"fp16" | b"half" | b"float16" => "FP16",
                b"bf16" | b"bfloat16" => "BF16",
                b"int8" => "INT8",
                b"fp8" | b"e4m3" | b"e5m2" | b"float8" => "FP8",
                b"fp4" | b"nvfp4" | b"e2m1" => "FP4",
                b"int4" => "INT4",
                b"int32" => "INT32",
                b"int64" => "INT64",
                b"int16" => "INT16",
                b"uint8" => "UINT8",
                b"bool" => "BOOL",
                b"double" | b"fp64" => "FP64",
                _ => return None,
            })
        })
}

/// Precision of the first input with a known format, else of the first output (TREx convention).
pub fn layer_precision(layer: &Layer) -> Option<&'static str> {
    first_precision(&layer.inputs).or_else(|| first_precision(&layer.outputs))
}

/// Precision of the first output with a known format.
pub fn output_precision(layer: &Layer) -> Option<&'static str> {
    first_precision(&layer.outputs)
}

fn first_precision(tensors: &[crate::read::Tensor]) -> Option<&'static str> {
    tensors
        .iter()
        .find_map(|t| t.format.as_deref().and_then(precision_of))
}

/// Operation abbreviations of a Myelin-generated kernel name: `__myl_MulSumAdd_myl4_1` → Mul, Sum, Add.
pub fn kgen_ops(name: &str) -> Vec<String> {
    let core = name.trim_start_matches('_');
    let core = core.strip_prefix("myl_").unwrap_or(core);
    // Drop `_myl<p>_<i>` and `_0x<hash>` suffixes.
    let core = match core.find("_myl") {
        Some(i) => &core[..i],
        None => core,
    };
    let core = match core.find("_0x") {
        Some(i) => &core[..i],
        None => core,
    };
    let mut ops = Vec::new();
    for part in core.split('_').filter(|p| !p.is_empty()) {
        let mut current = String::new();
        for c in part.chars() {
            if c.is_ascii_uppercase() && !current.is_empty() {
                ops.push(std::mem::take(&mut current));
            }
            current.push(c);
        }
        if !current.is_empty() {
            ops.push(current);
        }
    }
    ops
}

fn kgen_family(layer: &Layer) -> Family {
    if looks_like_attention(layer) {
        return Family::Attention;
    }
    let ops: Vec<String> = kgen_ops(&layer.name)
        .into_iter()
        .map(|o| o.to_ascii_lowercase())
        .collect();
    let any = |keys: &[&str]| ops.iter().any(|o| keys.iter().any(|k| o.starts_with(k)));
    let all = |keys: &[&str]| {
        !ops.is_empty() && ops.iter().all(|o| keys.iter().any(|k| o.starts_with(k)))
    };
    if any(&["gemm", "fc", "matmul"]) {
        Family::Gemm
    } else if any(&[
        "sum", "mean", "maxr", "minr", "topk", "reduce", "argmax", "argmin", "norm",
    ]) {
        Family::Reduction
    } else if any(&["gath", "scat"]) {
        Family::Gather
    } else if all(&["cast"]) {
        Family::Cast
    } else if all(&["resh", "tran", "move", "copy", "perm"]) {
        Family::Shuffle
    } else if any(&["shape", "iota", "slic", "conc"])
        && all(&["shape", "iota", "slic", "conc", "cast", "resh"])
    {
        Family::Shape
    } else if ops.is_empty() {
        Family::Kgen
    } else {
        Family::Pointwise
    }
}

/// The operation family of a detailed layer.
pub fn family(layer: &Layer) -> Family {
    if layer.names_only {
        return family_from_name(&layer.name);
    }
    let raw = layer.layer_type.as_deref().unwrap_or("");
    let param = layer.parameter_type.as_deref().unwrap_or("");
    let is = |t: &str| raw.eq_ignore_ascii_case(t);
    let has = |t: &str| contains_ci(raw, t);
    let p_is = |t: &str| param.eq_ignore_ascii_case(t);
    if is("kgen") {
        return kgen_family(layer);
    }
    if is("gemm") || is("matrixmultiply") || is("matrix_multiply") {
        return Family::Gemm;
    }
    for (t, f) in [
        ("myelin", Family::Myelin),
        ("noop", Family::NoOp),
        ("constant", Family::Constant),
        ("trainstation", Family::TrainStation),
        ("signal", Family::Sync),
        ("wait", Family::Sync),
        ("signal_and_wait", Family::Sync),
        ("signal_wait", Family::Sync),
        ("shape_call", Family::Shape),
        ("reshape", Family::Shuffle),
    ] {
        if is(t) {
            return f;
        }
    }
    if is("reformat") || p_is("reformat") || is("myelinreformat") {
        return if layer
            .origin
            .as_deref()
            .is_some_and(|o| o.eq_ignore_ascii_case("qdq"))
        {
            Family::QuantDequant
        } else if is("myelinreformat")
            && (contains_ci(&layer.name, "cast") || io_dtypes_differ(layer))
        {
            Family::Cast
        } else {
            Family::Reformat
        };
    }
    if has("plugin") {
        return if looks_like_attention(layer) {
            Family::Attention
        } else if layer
            .plugin_type
            .as_deref()
            .is_some_and(|p| contains_ci(p, "norm"))
        {
            Family::Normalization
        } else {
            Family::Plugin
        };
    }
    if has("convolution") || has("convactpool") || p_is("convolution") || p_is("deconvolution") {
        return Family::Convolution;
    }
    if has("pooling") || p_is("pooling") {
        return Family::Pooling;
    }
    if has("softmax") || p_is("softmax") {
        return Family::Softmax;
    }
    if has("reduce") || p_is("reduce") {
        return Family::Reduction;
    }
    if has("normalization") || contains_ci(param, "normalization") {
        return Family::Normalization;
    }
    if is("scale") || p_is("scale") {
        // TensorRT 8.2 shows unfused Q/DQ as Scale layers with Int8 on exactly one side.
        let int8_in = layer
            .inputs
            .first()
            .and_then(|t| t.format.as_deref())
            .and_then(precision_of)
            == Some("INT8");
        let int8_out = output_precision(layer) == Some("INT8");
        return if int8_in != int8_out {
            Family::QuantDequant
        } else {
            Family::Pointwise
        };
    }
    if has("quantize") || contains_ci(param, "quantize") {
        return Family::QuantDequant;
    }
    if has("pointwise") || has("elementwise") || has("activation") || has("unary") {
        return Family::Pointwise;
    }
    if has("shuffle") || p_is("shuffle") {
        return Family::Shuffle;
    }
    if has("gather") || p_is("gather") {
        return Family::Gather;
    }
    if is("cast") || p_is("cast") {
        return Family::Cast;
    }
    if is("shape") || p_is("shape") {
        return Family::Shape;
    }
    if has("slice") || has("concat") || has("padding") || p_is("slice") || p_is("padding") {
        return Family::Copy;
    }
    if has("resize") {
        return Family::Resize;
    }
    Family::Other
}

/// The family of an ONNX operator type (ONNX Runtime's kernels) or of an operator of tract's
/// plans (`OptMatMul`, `OptMaxByScalar`, `Reduce<Sum>`, `OptBinChain(Add+Max)`, …); `None` for a
/// name neither uses.
pub fn onnx_op_family(op: &str) -> Option<Family> {
    // `Reduce<Sum>` and `OptBinChain(Add+Max)` carry their details after the base name.
    let base = op.split(['<', '(']).next().unwrap_or(op).trim();
    let mut base = base;
    for prefix in ["Opt", "Fused", "QLinear", "Nhwc", "Lir"] {
        if let Some(rest) = base.strip_prefix(prefix)
            && rest.starts_with(|c: char| c.is_ascii_uppercase())
        {
            base = rest;
        }
    }
    for suffix in ["ByScalar", "Unicast", "Unary", "Integer", "NBits"] {
        if let Some(rest) = base.strip_suffix(suffix)
            && !rest.is_empty()
        {
            base = rest;
        }
    }
    // Every convolution kernel, grouped and depthwise ones included, is a convolution: tract's
    // `DepthWiseConv`, `DirectSpatialConv`, `BlockedConv`, ONNX Runtime's `NhwcFusedConv`, …
    if base.ends_with("Conv") {
        return Some(Family::Convolution);
    }
    Some(match base {
        "Conv" | "ConvTranspose" | "DepthWise" | "Deconv" | "DeconvSum" | "DepthwiseDeconv"
        | "conv_nhwc" | "ConvInteger" => Family::Convolution,
        "MatMul" | "Gemm" | "EinSum" | "Einsum" | "MatMatMul" => Family::Gemm,
        "Attention" | "MultiHeadAttention" | "GroupQueryAttention" | "PackedAttention" => {
            Family::Attention
        }
        "MaxPool" | "AveragePool" | "GlobalAveragePool" | "GlobalMaxPool" | "LpPool"
        | "GlobalLpPool" | "SumPool" | "MaxRoiPool" | "RoiAlign" => Family::Pooling,
        "Softmax" | "LogSoftmax" | "Hardmax" => Family::Softmax,
        "BatchNormalization"
        | "LayerNormalization"
        | "InstanceNormalization"
        | "GroupNormalization"
        | "LpNormalization"
        | "MeanVarianceNormalization"
        | "SkipLayerNormalization"
        | "SimplifiedLayerNormalization"
        | "SkipSimplifiedLayerNormalization"
        | "EmbedLayerNormalization"
        | "RMSNormalization"
        | "LRN"
        | "LayerNorm"
        | "RmsNorm" => Family::Normalization,
        "Reduce" | "ReduceSum" | "ReduceMean" | "ReduceMax" | "ReduceMin" | "ReduceProd"
        | "ReduceL1" | "ReduceL2" | "ReduceLogSum" | "ReduceLogSumExp" | "ReduceSumSquare"
        | "ArgMax" | "ArgMin" | "TopK" | "CumSum" => Family::Reduction,
        "Reshape" | "Transpose" | "Flatten" | "Squeeze" | "Unsqueeze" | "IntoShape" | "AxisOp"
        | "AddAxis" | "RmAxis" | "Move" | "DepthToSpace" | "SpaceToDepth" | "Expand"
        | "MultiBroadcastTo" | "Tile" | "ReorderInput" | "ReorderOutput" | "MatMulPack" => {
            Family::Shuffle
        }
        "Shape" | "Size" | "ConstantOfShape" | "Range" => Family::Shape,
        "Concat" | "TypedConcat" | "Slice" | "Split" | "Pad" | "Downsample" | "LazyIm2col"
        | "Im2col" => Family::Copy,
        "Gather" | "GatherElements" | "GatherND" | "GatherNd" | "ScatterND" | "ScatterNd"
        | "ScatterElements" | "OneHot" | "Compress" | "NonZero" => Family::Gather,
        "Cast" | "CastLike" => Family::Cast,
        "Resize" | "Upsample" => Family::Resize,
        "Constant" | "Const" => Family::Constant,
        "Identity" | "Dropout" => Family::NoOp,
        "QuantizeLinear" | "DequantizeLinear" | "DynamicQuantizeLinear" => Family::QuantDequant,
        "Add" | "Sub" | "Mul" | "Div" | "Pow" | "Max" | "Min" | "Sum" | "Mean" | "Relu"
        | "LeakyRelu" | "PRelu" | "Sigmoid" | "HardSigmoid" | "HardSwish" | "Tanh" | "Exp"
        | "Log" | "Sqrt" | "Rsqrt" | "Reciprocal" | "Recip" | "Abs" | "Neg" | "Erf" | "Gelu"
        | "FastGelu" | "BiasGelu" | "QuickGelu" | "Elu" | "Selu" | "Celu" | "Mish" | "Softplus"
        | "Softsign" | "Silu" | "Swish" | "Clip" | "Where" | "Equal" | "Less" | "Greater"
        | "LessOrEqual" | "GreaterOrEqual" | "And" | "Or" | "Not" | "Xor" | "Sin" | "Cos"
        | "Floor" | "Ceil" | "Round" | "Sign" | "Mod" | "IsNaN" | "IsInf" | "BitShift"
        | "BinChain" | "BinOp" | "TypedBinOp" | "ElementWiseOp" | "MapScalar" | "Square"
        | "BiasAdd" | "BiasSplitGelu" | "ThresholdedRelu" => Family::Pointwise,
        _ => return None,
    })
}

/// The family of a layer of a CPU runtime's profile: its operator type first, then the
/// TensorRT rules (which also know `Reshape`, `Softmax`, …).
pub fn cpu_family(layer: &Layer) -> Family {
    layer
        .layer_type
        .as_deref()
        .and_then(onnx_op_family)
        .unwrap_or_else(|| family(layer))
}

fn io_dtypes_differ(layer: &Layer) -> bool {
    let i = layer
        .inputs
        .first()
        .and_then(|t| t.format.as_deref())
        .and_then(precision_of);
    let o = output_precision(layer);
    i.is_some() && o.is_some() && i != o
}

/// A guess from the name alone, for names-only exports (always a hypothesis).
pub fn family_from_name(name: &str) -> Family {
    let lower = name.to_ascii_lowercase();
    if lower.starts_with("[trainstation") {
        Family::TrainStation
    } else if lower.starts_with("reformatting copynode") {
        Family::Reformat
    } else if lower.starts_with("{foreignnode[") {
        Family::Myelin
    } else if lower.starts_with("__myl_") {
        Family::Kgen
    } else if lower.contains("conv") {
        Family::Convolution
    } else if lower.contains("matmul") || lower.contains("gemm") {
        Family::Gemm
    } else if lower.contains("pool") {
        Family::Pooling
    } else if lower.contains("softmax") {
        Family::Softmax
    } else if (lower.contains("quantizelinear") || lower.contains("quantize_linear"))
        && !lower.contains(" + ")
    {
        Family::QuantDequant
    } else if lower.starts_with("pwn(") {
        Family::Pointwise
    } else if lower.contains("[constant]") {
        Family::Constant
    } else if lower.contains("[shuffle]")
        || lower.contains("reshape")
        || lower.contains("transpose")
    {
        Family::Shuffle
    } else {
        Family::Other
    }
}

/// ONNX nodes a layer came from: from `Metadata` (`[ONNX Layer: X]` joined by U+001E / U+001F),
/// else from the fused name (`a + b`, `PWN(a, b)`, `a || b`). A reformat copy's source is the
/// tensor it copies ([`copy_origins`]).
pub fn origins(layer: &Layer) -> Vec<String> {
    if is_reformat_copy(&layer.name) {
        return copy_origins(layer);
    }
    if let Some(meta) = layer.metadata.as_deref().filter(|m| !m.is_empty()) {
        let found: Vec<String> = meta
            .split(['\u{1e}', '\u{1f}'])
            .filter_map(|part| {
                let part = part.trim();
                let inner = part
                    .strip_prefix("[ONNX Layer:")
                    .and_then(|p| p.strip_suffix(']'))
                    .unwrap_or(part);
                let inner = inner.trim();
                (!inner.is_empty()).then(|| inner.to_owned())
            })
            .collect();
        if !found.is_empty() {
            return found;
        }
    }
    origins_from_name(&layer.name)
}

/// Whether TensorRT inserted this layer to copy a tensor into another format
/// (`Reformatting CopyNode for Input Tensor 0 to Conv_5 + Add_6`). Such a name ends with its
/// consumer's (or producer's) name, which says nothing about the copy itself.
pub fn is_reformat_copy(name: &str) -> bool {
    name.starts_with("Reformatting CopyNode for ")
}

/// The tensors a reformat copy moves: its inputs' and outputs' names, except the
/// `Reformatted Input/Output Tensor N to …` buffers TensorRT names after the consumer. Without such
/// a tensor (names-only exports), the whole layer name, unsplit, so that it cannot equal a
/// computing layer's source node.
fn copy_origins(layer: &Layer) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in layer.inputs.iter().chain(&layer.outputs) {
        let own = !t.name.is_empty() && !t.name.starts_with("Reformatted ");
        if own && !out.contains(&t.name) {
            out.push(t.name.clone());
        }
    }
    if out.is_empty() {
        out.push(layer.name.clone());
    }
    out
}

/// Source node names read from a fused layer name: the parts of `A + B`, `A || B`, `A...B`,
/// `PWN(A, B)` and `{ForeignNode[…]}`, each once, in order.
pub fn origins_from_name(name: &str) -> Vec<String> {
    let inner = name
        .strip_prefix("{ForeignNode[")
        .and_then(|n| n.strip_suffix("]}"))
        .unwrap_or(name);
    let mut out = Vec::new();
    for part in split_str(inner, " + ")
        .flat_map(|p| split_str(p, " || "))
        .flat_map(|p| split_str(p, "..."))
    {
        let mut part = part.trim();
        while let Some(rest) = part.strip_prefix("PWN(") {
            part = rest.trim();
        }
        for piece in split_str(part, ", ") {
            let piece = piece.trim().trim_end_matches(')').trim();
            if !piece.is_empty() && !out.iter().any(|o: &String| o == piece) {
                out.push(piece.to_owned());
            }
        }
    }
    out
}

/// `text.split(pattern)` without building a substring searcher per call (this runs for every
/// layer name; the patterns are short and their first byte is rare in names).
fn split_str<'a>(text: &'a str, pattern: &'static str) -> impl Iterator<Item = &'a str> {
    let p = pattern.as_bytes();
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let r = rest?;
        let b = r.as_bytes();
        let found = (0..(b.len() + 1).saturating_sub(p.len()))
            .find(|&i| b[i] == p[0] && b[i..].starts_with(p));
        match found {
            Some(i) => {
                rest = Some(&r[i + p.len()..]);
                Some(&r[..i])
            }
            None => {
                rest = None;
                Some(r)
            }
        }
    })
}

/// What a tactic (kernel) name says about tensor-core use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorCoreHint {
    /// The name marks a tensor-core kernel (`hmma`, `imma`, `16816`, `tf32`, `tensorop`, …).
    Yes,
    /// The name marks a kernel without tensor cores (`simt`, `ffma`, `sgemm`, `gemv`, …).
    No,
    /// The name says neither.
    Unknown,
}

/// What the tactic name `tactic` says about tensor-core use (ASCII case ignored).
pub fn tensor_core_hint(tactic: &str) -> TensorCoreHint {
    let t = tactic.to_ascii_lowercase();
    // `tensor16x8x16` (xmma), `h16816` / `i8816` (cuDNN/cuBLAS MMA shapes), `tf32`, `hmma`/`imma`/`gmma`.
    const YES: &[&str] = &[
        "hmma", "imma", "gmma", "16816", "8816", "1688", "884", "tf32", "tensorop",
    ];
    const NO: &[&str] = &[
        "simt",
        "ffma",
        "scudnn",
        "icudnn",
        "gemv",
        "sgemm",
        "fp32_nchw",
        "fp32nchw",
        "_fp32_",
    ];
    let tensor_shape = t
        .match_indices("tensor")
        .any(|(i, m)| t[i + m.len()..].starts_with(|c: char| c.is_ascii_digit()));
    if tensor_shape || YES.iter().any(|k| t.contains(k)) {
        TensorCoreHint::Yes
    } else if NO.iter().any(|k| t.contains(k)) {
        TensorCoreHint::No
    } else {
        TensorCoreHint::Unknown
    }
}

/// Tags in the published analysis format's vocabulary (plus our families' names), for the tag
/// breakdown.
pub fn tags(layer: &Layer, family: Family) -> Vec<&'static str> {
    let mut tags = Vec::new();
    if layer
        .layer_type
        .as_deref()
        .is_some_and(|t| t.eq_ignore_ascii_case("kgen"))
    {
        tags.push("kgen");
    }
    match family {
        Family::Gemm => tags.push("matmul/gemm"),
        Family::Attention => tags.push("attention"),
        Family::Convolution => tags.push("convolution"),
        Family::Pooling => tags.push("pooling"),
        Family::Shape | Family::Cast | Family::Gather | Family::Shuffle => {
            tags.push("shape/cast/dynamic")
        }
        Family::Reduction | Family::Normalization | Family::Softmax => {
            tags.push("layernorm/reduction")
        }
        Family::Pointwise => tags.push("pointwise"),
        Family::Reformat | Family::NoOp => tags.push("reformat"),
        Family::QuantDequant => tags.push("qdq"),
        Family::Myelin => tags.push("myelin"),
        Family::Plugin => tags.push("plugin"),
        _ => {}
    }
    if contains_ci(&layer.name, "scaled_dot_product_attention") {
        tags.push("sdpa");
    }
    if contains_ci(&layer.name, "gelu") || contains_ci(&layer.name, "erf") || layer.has_activation {
        tags.push("activation");
    }
    if tags.is_empty() {
        tags.push("other");
    }
    tags
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::Tensor;

    fn layer(name: &str, ty: &str) -> Layer {
        Layer {
            name: name.to_owned(),
            layer_type: Some(ty.into()),
            ..Layer::default()
        }
    }

    #[test]
    fn report_type_overrides_are_narrow() {
        let ty = |name: &str, raw: &str| report_type(&layer(name, raw)).to_string();
        assert_eq!(ty("__mye780_0_myl0_0", "shape_call"), "misc");
        assert_eq!(ty("x", "Signal"), "misc");
        assert_eq!(ty("_gemm_mha_v2_myl0_172", "kgen"), "kgen_mha");
        assert_eq!(ty("__myl_MulSum_myl4_1", "kgen"), "kgen");
        assert_eq!(ty("mhamster_kernel", "kgen"), "kgen");
        assert_eq!(ty("conv", "CaskConvolution"), "CaskConvolution");
    }

    #[test]
    fn precision_reads_long_and_short_formats() {
        assert_eq!(precision_of("Row major linear FP32"), Some("FP32"));
        assert_eq!(
            precision_of("Channel major FP16 format where channel % 8 == 0"),
            Some("FP16")
        );
        assert_eq!(
            precision_of("Thirty-two wide channel vectorized row major Int8 format"),
            Some("INT8")
        );
        assert_eq!(precision_of("Half"), Some("FP16"));
        assert_eq!(precision_of("BFloat16"), Some("BF16"));
        assert_eq!(precision_of("Int64"), Some("INT64"));
        assert_eq!(precision_of("strange"), None);
        // The table the match replaced, as the oracle.
        const DTYPES: &[(&str, &str)] = &[
            ("fp32", "FP32"),
            ("float", "FP32"),
            ("float32", "FP32"),
            ("fp16", "FP16"),
            ("half", "FP16"),
            ("float16", "FP16"),
            ("bf16", "BF16"),
            ("bfloat16", "BF16"),
            ("int8", "INT8"),
            ("fp8", "FP8"),
            ("e4m3", "FP8"),
            ("e5m2", "FP8"),
            ("float8", "FP8"),
            ("fp4", "FP4"),
            ("nvfp4", "FP4"),
            ("e2m1", "FP4"),
            ("int4", "INT4"),
            ("int32", "INT32"),
            ("int64", "INT64"),
            ("int16", "INT16"),
            ("uint8", "UINT8"),
            ("bool", "BOOL"),
            ("double", "FP64"),
            ("fp64", "FP64"),
        ];
        let oracle = |f: &str| {
            f.split(|c: char| !c.is_ascii_alphanumeric()).find_map(|t| {
                DTYPES
                    .iter()
                    .find(|(k, _)| t.eq_ignore_ascii_case(k))
                    .map(|(_, p)| *p)
            })
        };
        let mut cases: Vec<String> = Vec::new();
        for (k, _) in DTYPES {
            for f in [
                k.to_string(),
                k.to_uppercase(),
                format!("Row major {k}x"),
                format!("x{k}"),
                format!("é{k}é"),
                format!("a-{k}/INT8"),
                format!("{k}1"),
                format!("Channel major {k} format"),
            ] {
                cases.push(f);
            }
        }
        cases.extend(
            [
                "",
                "Half/Float",
                "bfloat160",
                "fp 16",
                "INT64 Int8",
                "ＦＰ16",
            ]
            .map(String::from),
        );
        for f in &cases {
            assert_eq!(precision_of(f), oracle(f), "{f:?}");
        }
    }

    #[test]
    fn kgen_names_split_into_ops() {
        assert_eq!(kgen_ops("__myl_MulSum_myl4_1"), ["Mul", "Sum"]);
        assert_eq!(kgen_ops("__myl_DivMulTopk_0x3ccf"), ["Div", "Mul", "Topk"]);
        assert_eq!(
            family(&layer("__myl_MulSum_myl4_1", "kgen")),
            Family::Reduction
        );
        assert_eq!(family(&layer("__myl_Cast_myl0_3", "kgen")), Family::Cast);
        assert_eq!(
            family(&layer("__myl_ReshTran_myl0_3", "kgen")),
            Family::Shuffle
        );
        assert_eq!(
            family(&layer("__myl_AddMul_myl0_3", "kgen")),
            Family::Pointwise
        );
    }

    #[test]
    fn families_from_layer_types() {
        assert_eq!(
            family(&layer("c", "CaskGemmConvolution")),
            Family::Convolution
        );
        let mut q = layer("r", "Reformat");
        q.origin = Some("QDQ".to_owned());
        assert_eq!(family(&q), Family::QuantDequant);
        let mut s = layer("QuantizeLinear_2", "Scale");
        s.inputs = vec![Tensor {
            format: Some("Row major linear FP32".into()),
            ..Tensor::default()
        }];
        s.outputs = vec![Tensor {
            format: Some("Row major linear Int8".into()),
            ..Tensor::default()
        }];
        assert_eq!(family(&s), Family::QuantDequant);
        assert_eq!(
            family(&layer("{ForeignNode[a...b]}", "Myelin")),
            Family::Myelin
        );
    }

    #[test]
    fn origins_prefer_metadata() {
        let mut l = layer("node_linear_myl4_0", "gemm");
        l.metadata = Some("[ONNX Layer: node_linear]\u{1f}[ONNX Layer: node_relu_2]".to_owned());
        assert_eq!(origins(&l), ["node_linear", "node_relu_2"]);
        assert_eq!(
            origins(&layer("Conv_0 + Relu_1", "x")),
            ["Conv_0", "Relu_1"]
        );
        assert_eq!(
            origins(&layer("PWN(PWN(Sigmoid_5), Mul_6)", "x")),
            ["Sigmoid_5", "Mul_6"]
        );
    }

    #[test]
    fn reformat_copies_take_their_origins_from_their_own_tensors() {
        let tensor = |name: &str| Tensor {
            name: name.to_owned(),
            ..Tensor::default()
        };
        // An input-side copy: the tensor it reads is its own; the consumer's ONNX nodes are not.
        let mut input_copy = layer(
            "Reformatting CopyNode for Input Tensor 0 to Conv_5 + Add_6 + Relu_7",
            "NoOp",
        );
        input_copy.inputs = vec![tensor("onnx::Conv_129")];
        input_copy.outputs = vec![tensor(
            "Reformatted Input Tensor 0 to Conv_5 + Add_6 + Relu_7",
        )];
        // Metadata naming the consumer does not win either.
        input_copy.metadata = Some("[ONNX Layer: Conv_5]".to_owned());
        assert_eq!(origins(&input_copy), ["onnx::Conv_129"]);
        // An output-side copy writes the real tensor.
        let mut output_copy = layer(
            "Reformatting CopyNode for Output Tensor 0 to MaxPool_2",
            "Reformat",
        );
        output_copy.inputs = vec![tensor("Reformatted Output Tensor 0 to MaxPool_2")];
        output_copy.outputs = vec![tensor("input.8")];
        assert_eq!(origins(&output_copy), ["input.8"]);
        // Names only: the whole name, never its consumer's parts.
        let bare = layer(
            "Reformatting CopyNode for Input Tensor 0 to Conv_5 + Add_6",
            "x",
        );
        assert_eq!(
            origins(&bare),
            ["Reformatting CopyNode for Input Tensor 0 to Conv_5 + Add_6"]
        );
        // Other layers keep reading their fused names.
        assert_eq!(origins(&layer("Conv_5 + Add_6", "x")), ["Conv_5", "Add_6"]);
    }

    #[test]
    fn split_str_and_contains_ci_match_the_standard_ones() {
        let texts = [
            "",
            "a",
            " + ",
            "a + b + c",
            "a +  + b",
            "....",
            "a...b...",
            "x || y ||",
            ", , ,",
            "PWN(a, b)",
            "ab + ",
            " + ab",
        ];
        for t in texts {
            for p in [" + ", " || ", "...", ", "] {
                let ours: Vec<&str> = split_str(t, p).collect();
                let std: Vec<&str> = t.split(p).collect();
                assert_eq!(ours, std, "{t:?} by {p:?}");
            }
            for n in ["", "a", "A", "+ b", "PWN(", "pwn(a", "...", "zz"] {
                let plain = t.to_ascii_lowercase().contains(&n.to_ascii_lowercase());
                assert_eq!(contains_ci(t, n), plain, "{t:?} has {n:?}");
            }
        }
    }

    #[test]
    fn tensor_core_hints() {
        assert_eq!(
            tensor_core_hint(
                "sm80_xmma_fprop_implicit_gemm_f16f16_f16f16_f16_nhwckrsc_nhwc_tilesize128x128x32_stage4_warpsize2x2x1_g1_tensor16x8x16"
            ),
            TensorCoreHint::Yes
        );
        assert_eq!(
            tensor_core_hint(
                "sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize32x32x8_stage3_warpsize1x2x1_g1_ffma_t1r5s5"
            ),
            TensorCoreHint::No
        );
        assert_eq!(
            tensor_core_hint(
                "ampere_h16816cudnn_128x128_ldg8_relu_exp_stages_64x3_large_nhwc_tn_v1"
            ),
            TensorCoreHint::Yes
        );
        assert_eq!(
            tensor_core_hint(
                "sm70_xmma_gemm_as_conv1x1_f16f16_f16_f16_tn_n_simt_small_batch_bias_relu"
            ),
            TensorCoreHint::No
        );
        assert_eq!(
            tensor_core_hint(
                "sm50_xmma_cublas_gemvx_f32f32_f32_f32_tn_n_int32_unit_n_launch_param8x32x32"
            ),
            TensorCoreHint::No
        );
        assert_eq!(
            tensor_core_hint("__myl_MulSum_0xf5"),
            TensorCoreHint::Unknown
        );
    }
}
