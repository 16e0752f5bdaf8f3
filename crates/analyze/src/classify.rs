//! Per-layer classification: report type (raw LayerType with the narrow `kgen_mha` / `misc`
//! overrides), operation family, precision, source ONNX nodes and tactic hints.

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
    Convolution,
    Gemm,
    Attention,
    Pooling,
    Pointwise,
    Reduction,
    Softmax,
    Normalization,
    Reformat,
    QuantDequant,
    Shuffle,
    Shape,
    Cast,
    Gather,
    Copy,
    Resize,
    Constant,
    NoOp,
    Myelin,
    Kgen,
    Plugin,
    TrainStation,
    Sync,
    Other,
}

impl Family {
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

/// The report `Type`: raw LayerType, except attention-like kgen (`kgen_mha`) and the
/// reshape/shape_call/signal/wait group (`misc`).
pub fn report_type(layer: &Layer) -> String {
    let raw = layer.layer_type.as_deref().unwrap_or("unknown");
    let normalized: String = raw
        .trim()
        .chars()
        .map(|c| {
            if c.is_whitespace() || c == '-' {
                '_'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect();
    if MISC_TYPES.contains(&normalized.as_str()) {
        "misc".to_owned()
    } else if normalized == "kgen" && looks_like_attention(layer) {
        "kgen_mha".to_owned()
    } else {
        raw.to_owned()
    }
}

/// Whether the layer's name, tactic or source nodes say it is a fused attention kernel.
pub fn looks_like_attention(layer: &Layer) -> bool {
    let texts = [
        Some(layer.name.as_str()),
        layer.tactic_name.as_deref(),
        layer.metadata.as_deref(),
        layer.plugin_type.as_deref(),
    ];
    texts.into_iter().flatten().any(|t| {
        let t = t.to_ascii_lowercase();
        [
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
        ]
        .iter()
        .any(|k| t.contains(k))
            || has_token(&t, "mha")
    })
}

/// `needle` as a whole alphanumeric token of `hay` (so "mha" matches `_gemm_mha_v2` but not "mhamster").
fn has_token(hay: &str, needle: &str) -> bool {
    hay.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|tok| tok == needle)
}

/// Normalized data type named in a `Format/Datatype` string (TensorRT 8 long forms and TensorRT 10
/// short names alike).
pub fn precision_of(format: &str) -> Option<&'static str> {
    for token in format.split(|c: char| !c.is_ascii_alphanumeric()) {
        let p = match token.to_ascii_lowercase().as_str() {
            "fp32" | "float" | "float32" => "FP32",
            "fp16" | "half" | "float16" => "FP16",
            "bf16" | "bfloat16" => "BF16",
            "int8" => "INT8",
            "fp8" | "e4m3" | "e5m2" | "float8" => "FP8",
            "fp4" | "nvfp4" | "e2m1" => "FP4",
            "int4" => "INT4",
            "int32" => "INT32",
            "int64" => "INT64",
            "int16" => "INT16",
            "uint8" => "UINT8",
            "bool" => "BOOL",
            "double" | "fp64" => "FP64",
            _ => continue,
        };
        return Some(p);
    }
    None
}

/// Precision of the first input with a known format, else of the first output (TREx convention).
pub fn layer_precision(layer: &Layer) -> Option<&'static str> {
    first_precision(&layer.inputs).or_else(|| first_precision(&layer.outputs))
}

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
    let raw = layer
        .layer_type
        .as_deref()
        .unwrap_or("")
        .to_ascii_lowercase();
    let param = layer
        .parameter_type
        .as_deref()
        .unwrap_or("")
        .to_ascii_lowercase();
    let name = layer.name.to_ascii_lowercase();
    match raw.as_str() {
        "kgen" => return kgen_family(layer),
        "gemm" | "matrixmultiply" | "matrix_multiply" => return Family::Gemm,
        "myelin" => return Family::Myelin,
        "noop" => return Family::NoOp,
        "constant" => return Family::Constant,
        "trainstation" => return Family::TrainStation,
        "signal" | "wait" | "signal_and_wait" | "signal_wait" => return Family::Sync,
        "shape_call" => return Family::Shape,
        "reshape" => return Family::Shuffle,
        _ => {}
    }
    if raw == "reformat" || param == "reformat" || raw == "myelinreformat" {
        let origin = layer.origin.as_deref().unwrap_or("").to_ascii_lowercase();
        return if origin == "qdq" {
            Family::QuantDequant
        } else if raw == "myelinreformat" && (name.contains("cast") || io_dtypes_differ(layer)) {
            Family::Cast
        } else {
            Family::Reformat
        };
    }
    if raw.contains("plugin") {
        let plugin = layer
            .plugin_type
            .as_deref()
            .unwrap_or("")
            .to_ascii_lowercase();
        return if looks_like_attention(layer) {
            Family::Attention
        } else if plugin.contains("norm") {
            Family::Normalization
        } else {
            Family::Plugin
        };
    }
    if raw.contains("convolution")
        || raw.contains("convactpool")
        || param == "convolution"
        || param == "deconvolution"
    {
        return Family::Convolution;
    }
    if raw.contains("pooling") || param == "pooling" {
        return Family::Pooling;
    }
    if raw.contains("softmax") || param == "softmax" {
        return Family::Softmax;
    }
    if raw.contains("reduce") || param == "reduce" {
        return Family::Reduction;
    }
    if raw.contains("normalization") || param.contains("normalization") {
        return Family::Normalization;
    }
    if raw == "scale" || param == "scale" {
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
    if raw.contains("quantize") || param.contains("quantize") {
        return Family::QuantDequant;
    }
    if raw.contains("pointwise")
        || raw.contains("elementwise")
        || raw.contains("activation")
        || raw.contains("unary")
    {
        return Family::Pointwise;
    }
    if raw.contains("shuffle") || param == "shuffle" {
        return Family::Shuffle;
    }
    if raw.contains("gather") || param == "gather" {
        return Family::Gather;
    }
    if raw == "cast" || param == "cast" {
        return Family::Cast;
    }
    if raw == "shape" || param == "shape" {
        return Family::Shape;
    }
    if raw.contains("slice")
        || raw.contains("concat")
        || raw.contains("padding")
        || param == "slice"
        || param == "padding"
    {
        return Family::Copy;
    }
    if raw.contains("resize") {
        return Family::Resize;
    }
    Family::Other
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
/// else from the fused name (`a + b`, `PWN(a, b)`, `a || b`).
pub fn origins(layer: &Layer) -> Vec<String> {
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

pub fn origins_from_name(name: &str) -> Vec<String> {
    let inner = name
        .strip_prefix("{ForeignNode[")
        .and_then(|n| n.strip_suffix("]}"))
        .unwrap_or(name);
    let mut out = Vec::new();
    for part in inner
        .split(" + ")
        .flat_map(|p| p.split(" || "))
        .flat_map(|p| p.split("..."))
    {
        let mut part = part.trim();
        while let Some(rest) = part.strip_prefix("PWN(") {
            part = rest.trim();
        }
        for piece in part.split(", ") {
            let piece = piece.trim().trim_end_matches(')').trim();
            if !piece.is_empty() && !out.iter().any(|o: &String| o == piece) {
                out.push(piece.to_owned());
            }
        }
    }
    out
}

/// What a tactic (kernel) name says about tensor-core use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorCoreHint {
    Yes,
    No,
    Unknown,
}

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
    let lower = layer.name.to_ascii_lowercase();
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
    if lower.contains("scaled_dot_product_attention") {
        tags.push("sdpa");
    }
    if lower.contains("gelu") || lower.contains("erf") || layer.activation.is_some() {
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
            layer_type: Some(ty.to_owned()),
            ..Layer::default()
        }
    }

    #[test]
    fn report_type_overrides_are_narrow() {
        assert_eq!(
            report_type(&layer("__mye780_0_myl0_0", "shape_call")),
            "misc"
        );
        assert_eq!(report_type(&layer("x", "Signal")), "misc");
        assert_eq!(
            report_type(&layer("_gemm_mha_v2_myl0_172", "kgen")),
            "kgen_mha"
        );
        assert_eq!(report_type(&layer("__myl_MulSum_myl4_1", "kgen")), "kgen");
        assert_eq!(
            report_type(&layer("conv", "CaskConvolution")),
            "CaskConvolution"
        );
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
            format: Some("Row major linear FP32".to_owned()),
            ..Tensor::default()
        }];
        s.outputs = vec![Tensor {
            format: Some("Row major linear Int8".to_owned()),
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
