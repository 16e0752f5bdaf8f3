//! Where a backend's files came from: the runtime that wrote them (TensorRT, tract, ONNX Runtime)
//! and, for TensorRT, the export's era, each with the evidence it rests on.

use serde::Serialize;

use crate::classify::{self, Family};
use crate::read::{Layer, LayerInfo, Profile, Verbosity};

/// The runtime whose per-layer export a backend holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Runtime {
    /// TensorRT: a trtexec (or TREx) export; also the fallback when nothing names another runtime.
    Tensorrt,
    /// tract: a per-layer profile of the embedded runtime, as `trtmc-bench run --profile` writes it.
    Tract,
    /// ONNX Runtime: a per-layer profile from ORT's profiler, as `trtmc-bench run --profile` writes
    /// it.
    Onnxruntime,
}

impl Runtime {
    /// The name shown to people.
    pub fn display_name(self) -> &'static str {
        match self {
            Runtime::Tensorrt => "TensorRT",
            Runtime::Tract => "tract",
            Runtime::Onnxruntime => "ONNX Runtime",
        }
    }

    /// A runtime named by a `runtime` key or a file label (`layers_<label>.json`).
    fn from_name(name: &str) -> Option<Runtime> {
        let lower = name
            .trim()
            .to_ascii_lowercase()
            .replace([' ', '-', '_'], "");
        match lower.as_str() {
            "tensorrt" | "trt" | "trtexec" => Some(Runtime::Tensorrt),
            "tract" => Some(Runtime::Tract),
            "onnxruntime" | "ort" => Some(Runtime::Onnxruntime),
            _ => None,
        }
    }
}

/// The runtime and why.
#[derive(Debug, Clone, Serialize)]
pub struct RuntimeInfo {
    /// The runtime (`tensorrt`, `tract`, `onnxruntime`).
    pub name: Runtime,
    /// Its name for people ([`Runtime::display_name`]).
    pub display_name: &'static str,
    /// The facts the decision used, strongest first.
    pub evidence: Vec<String>,
}

/// Schema keys of the exports `trtmc-bench run --profile` writes for CPU runtimes.
const OWN_SCHEMAS: [&str; 2] = ["trtmc.layer-info/v1", "trtmc.layer-profile/v1"];

/// Operator types only tract's optimized plans have (ONNX has none of them).
fn is_tract_op(op: &str) -> bool {
    op.starts_with("Opt")
        || op.starts_with("Lir")
        || op.starts_with("Reduce<")
        || matches!(
            op,
            "LazyIm2col"
                | "Im2col"
                | "IntoShape"
                | "AddAxis"
                | "RmAxis"
                | "Move"
                | "Downsample"
                | "MultiBroadcastTo"
                | "TypedConcat"
                | "EinSum"
                | "DepthWise"
                | "DeconvUnary"
                | "ConvUnary"
                | "MatMulUnary"
                | "TypedBinOp"
                | "ElementWiseOp"
                | "SumPool"
                | "Const"
        )
}

/// Decides the runtime from the files' shape: an explicit `runtime` key, trtmc's schema key with
/// the file label, then the layer-type vocabulary; TensorRT when nothing says otherwise.
pub fn detect_runtime(label: &str, info: &LayerInfo, profile: Option<&Profile>) -> RuntimeInfo {
    let mut evidence = Vec::new();
    let decided = |name: Runtime, evidence: Vec<String>| RuntimeInfo {
        name,
        display_name: name.display_name(),
        evidence,
    };
    for (what, value) in [
        ("the layer-info file", info.runtime.as_deref()),
        (
            "the profile header",
            profile.and_then(|p| p.runtime.as_deref()),
        ),
    ] {
        if let Some(value) = value {
            match Runtime::from_name(value) {
                Some(_) => evidence.push(format!("{what} says \"runtime\": {value:?}")),
                None => evidence.push(format!(
                    "{what} says \"runtime\": {value:?}, which is not a runtime this analyzer knows"
                )),
            }
        }
    }
    let explicit = [
        info.runtime.as_deref(),
        profile.and_then(|p| p.runtime.as_deref()),
    ]
    .into_iter()
    .flatten()
    .find_map(Runtime::from_name);
    let own_schema = [
        info.schema.as_deref(),
        profile.and_then(|p| p.schema.as_deref()),
    ]
    .into_iter()
    .flatten()
    .find(|s| OWN_SCHEMAS.contains(s));
    if let Some(s) = own_schema {
        evidence.push(format!(
            "schema {s:?}: written by `trtmc-bench run --profile`, not by trtexec"
        ));
    }
    let detailed: Vec<&Layer> = info.layers.iter().filter(|l| !l.names_only).collect();
    let types = || detailed.iter().filter_map(|l| l.layer_type.as_deref());
    let tract_ops: Vec<&str> = types().filter(|t| is_tract_op(t)).collect();
    let onnx_ops: Vec<&str> = types()
        .filter(|t| classify::onnx_op_family(t).is_some())
        .collect();
    let trt_fields = detailed
        .iter()
        .any(|l| l.tactic_name.is_some() || l.parameter_type.is_some() || l.origin.is_some());
    if let Some(r) = explicit {
        return decided(r, evidence);
    }
    let by_label = Runtime::from_name(label);
    if let (Some(r), Some(_)) = (by_label, own_schema) {
        evidence.push(format!("the files are named for {label:?}"));
        return decided(r, evidence);
    }
    if !tract_ops.is_empty() && !trt_fields {
        evidence.push(format!(
            "{} layer(s) have tract's operator types ({})",
            tract_ops.len(),
            sample(&tract_ops)
        ));
        return decided(Runtime::Tract, evidence);
    }
    if !detailed.is_empty() && onnx_ops.len() * 2 >= detailed.len() && !trt_fields {
        evidence.push(format!(
            "{} of {} layer types are ONNX operators ({}) and no layer has a tactic, ParameterType or Origin",
            onnx_ops.len(),
            detailed.len(),
            sample(&onnx_ops)
        ));
        return decided(Runtime::Onnxruntime, evidence);
    }
    if let Some(r) = by_label.filter(|r| *r != Runtime::Tensorrt) {
        evidence.push(format!("the files are named for {label:?}"));
        return decided(r, evidence);
    }
    if trt_fields {
        evidence.push("layers carry TensorRT's TacticName / ParameterType / Origin".to_owned());
    } else if info.verbosity == Verbosity::NamesOnly {
        evidence.push(
            "a names-only layer list, which only trtexec's --exportLayerInfo writes".to_owned(),
        );
    }
    evidence.push(
        "no runtime key, trtmc schema or CPU operator vocabulary: read as a trtexec export"
            .to_owned(),
    );
    decided(Runtime::Tensorrt, evidence)
}

/// Up to four distinct values, for evidence lines.
fn sample(values: &[&str]) -> String {
    let mut distinct: Vec<&str> = Vec::new();
    for v in values {
        if !distinct.contains(v) {
            distinct.push(v);
        }
    }
    let more = distinct.len().saturating_sub(4);
    let mut out = distinct.into_iter().take(4).collect::<Vec<_>>().join(", ");
    if more > 0 {
        out.push_str(&format!(", … {more} more"));
    }
    out
}

/// A TensorRT release as the evidence can tell it: `(major, minor)`, minor [`ANY_MINOR`] for "x".
type Version = (u8, u8);
const ANY_MINOR: u8 = u8::MAX;

fn version_text(v: Version) -> String {
    match v {
        (major, ANY_MINOR) => format!("{major}.x"),
        (major, 0) if major >= 10 => format!("{major}"),
        (major, minor) => format!("{major}.{minor}"),
    }
}

/// The export's TensorRT era: the version range every strong fact allows, narrowed by the weak
/// ones (absences) that agree with it.
#[derive(Debug, Clone, Serialize)]
pub struct Era {
    /// "TensorRT 8.4–8.x", "TensorRT 10 or newer", "TensorRT 8.2 or older", …
    pub label: String,
    /// Oldest release the evidence allows (`8.4`, `10`; `null`: unbounded).
    pub min: Option<String>,
    /// Newest release the evidence allows (`8.2`, `8.x`; `null`: unbounded).
    pub max: Option<String>,
    /// Every fact used, each with what it implies.
    pub evidence: Vec<String>,
    /// Facts not used because stronger evidence contradicts them (e.g. a missing `Location` in a
    /// profile with `medianMs`).
    pub set_aside: Vec<String>,
    /// True when strong facts contradict each other (the label says so).
    pub conflict: bool,
}

struct Fact {
    text: String,
    min: Option<Version>,
    max: Option<Version>,
    /// Presence of a feature (strong) or its absence (weak: other tools drop fields).
    strong: bool,
}

/// The facts that date a TensorRT export: profile fields, Origin values, tensor fields, layer
/// types and TREx build metadata.
fn era_facts(info: &LayerInfo, profile: Option<&Profile>, metadata: &[String]) -> Vec<Fact> {
    let mut facts = Vec::new();
    let mut fact = |text: &str, min: Option<Version>, max: Option<Version>, strong: bool| {
        facts.push(Fact {
            text: text.to_owned(),
            min,
            max,
            strong,
        })
    };
    if let Some(p) = profile.filter(|p| !p.records.is_empty()) {
        if p.records.iter().all(|r| r.median_ms.is_some()) {
            fact(
                "profile records carry medianMs (added in TensorRT 8.4)",
                Some((8, 4)),
                None,
                true,
            );
        } else if p.records.iter().all(|r| r.median_ms.is_none()) {
            fact(
                "profile records have no medianMs (TensorRT 8.2 and older)",
                None,
                Some((8, 2)),
                true,
            );
        }
    }
    let detailed: Vec<&Layer> = info.layers.iter().filter(|l| !l.names_only).collect();
    if detailed.is_empty() {
        return facts;
    }
    let has_type = |t: &str| detailed.iter().any(|l| l.layer_type.as_deref() == Some(t));
    let tensors = || {
        detailed
            .iter()
            .flat_map(|l| l.inputs.iter().chain(&l.outputs))
    };
    if detailed.iter().any(|l| {
        l.origin
            .as_deref()
            .is_some_and(|o| o.eq_ignore_ascii_case("qdq"))
    }) {
        fact(
            "Q/DQ layers are Reformat with Origin QDQ (TensorRT 8.4 and newer)",
            Some((8, 4)),
            None,
            true,
        );
    }
    if detailed.iter().any(|l| {
        l.layer_type.as_deref() == Some("Scale") && classify::family(l) == Family::QuantDequant
    }) {
        fact(
            "Q/DQ appears as Scale layers with INT8 on one side (TensorRT 8.2 and older)",
            None,
            Some((8, 2)),
            true,
        );
    }
    if tensors().any(|t| t.has_location) {
        fact(
            "tensors have Location (TensorRT 8.4 and newer)",
            Some((8, 4)),
            None,
            true,
        );
    } else if tensors().next().is_some() {
        fact(
            "no tensor has Location (TensorRT 8.2, or tensors of Myelin kernels only)",
            None,
            Some((8, 2)),
            false,
        );
    }
    if detailed
        .iter()
        .any(|l| l.stream_id.is_some() || l.metadata.is_some())
    {
        fact(
            "layers carry StreamId / Metadata (TensorRT 8.6 and newer)",
            Some((8, 6)),
            None,
            true,
        );
    }
    if has_type("kgen") || has_type("gemm") || has_type("shape_call") {
        fact(
            "Myelin kernels are listed one by one as kgen / gemm / shape_call (TensorRT 10 and newer)",
            Some((10, 0)),
            None,
            true,
        );
    }
    if info.io_tensor_objects {
        fact(
            "the I/O tensors are listed as `I/O Tensors` objects, not `Bindings` names (TensorRT 11 and newer)",
            Some((11, 0)),
            None,
            true,
        );
    }
    if has_type("Myelin") {
        fact(
            "opaque Myelin regions ({ForeignNode[…]}) (TensorRT 8.x)",
            None,
            Some((8, ANY_MINOR)),
            false,
        );
    }
    let formats: Vec<&str> = tensors().filter_map(|t| t.format.as_deref()).collect();
    let short = |f: &str| !f.contains(' ') && classify::precision_of(f).is_some();
    if formats.iter().any(|f| short(f)) {
        fact(
            "tensor formats use TensorRT 10's short datatype names (\"Float\", \"Half\", …)",
            Some((10, 0)),
            None,
            true,
        );
    } else if !formats.is_empty() {
        fact(
            "tensor formats are TensorRT 8's long descriptions (\"Row major linear FP32\", …)",
            None,
            Some((8, ANY_MINOR)),
            false,
        );
    }
    for path in metadata
        .iter()
        .filter(|p| p.ends_with(".build.metadata.json"))
    {
        let keys = build_option_keys(std::path::Path::new(path));
        if keys.iter().any(|k| k == "Memory Pools") {
            fact(
                "the TREx build metadata lists \"Memory Pools\" (trtexec 8.4 and newer)",
                Some((8, 4)),
                None,
                true,
            );
        }
    }
    facts
}

/// The `build_options` keys of a TREx `.build.metadata.json` (empty when unreadable or large).
fn build_option_keys(path: &std::path::Path) -> Vec<String> {
    let small = std::fs::metadata(path).is_ok_and(|m| m.len() < 1 << 20);
    let doc = small
        .then(|| std::fs::read(path).ok())
        .flatten()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok());
    doc.as_ref()
        .and_then(|d| d.get("build_options"))
        .and_then(|o| o.as_object())
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// The era of a TensorRT export, from every fact the files hold.
pub fn infer_era(info: &LayerInfo, profile: Option<&Profile>, metadata: &[String]) -> Era {
    let facts = era_facts(info, profile, metadata);
    let mut evidence = Vec::new();
    let mut set_aside = Vec::new();
    if info.verbosity == Verbosity::NamesOnly {
        evidence.push("the layer info holds names only, so its records cannot date the export (the engine was built without --profilingVerbosity=detailed)".to_owned());
    }
    let (mut lo, mut hi): (Option<Version>, Option<Version>) = (None, None);
    for f in facts.iter().filter(|f| f.strong) {
        lo = lo.max(f.min);
        hi = match (hi, f.max) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        evidence.push(f.text.clone());
    }
    let conflict = matches!((lo, hi), (Some(l), Some(h)) if l > h);
    for f in facts.iter().filter(|f| !f.strong) {
        let new_lo = lo.max(f.min);
        let new_hi = match (hi, f.max) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if !conflict && !matches!((new_lo, new_hi), (Some(l), Some(h)) if l > h) {
            lo = new_lo;
            hi = new_hi;
            evidence.push(f.text.clone());
        } else {
            set_aside.push(format!(
                "{} — set aside: stronger evidence says otherwise",
                f.text
            ));
        }
    }
    let label = if conflict {
        format!(
            "TensorRT, conflicting evidence ({} or newer by one fact, {} or older by another)",
            lo.map(version_text).unwrap_or_default(),
            hi.map(version_text).unwrap_or_default()
        )
    } else {
        match (lo, hi) {
            (None, None) => "TensorRT, version not datable from the export".to_owned(),
            (Some(l), None) => format!("TensorRT {} or newer", version_text(l)),
            (None, Some(h)) => format!("TensorRT {} or older", version_text(h)),
            (Some(l), Some(h)) if l == h => format!("TensorRT {}", version_text(l)),
            (Some(l), Some(h)) => format!("TensorRT {}–{}", version_text(l), version_text(h)),
        }
    };
    Era {
        label,
        min: lo.map(version_text),
        max: hi.map(version_text),
        evidence,
        set_aside,
        conflict,
    }
}

/// The family of every layer of a CPU runtime's profile. tract lowers a convolution into
/// padding, `LazyIm2col`, `OptMatMul` and reshapes named `<node>.<part>`: those parts count as the
/// convolution they implement when a sibling is an im2col or the source node's name says `conv`.
pub fn cpu_families(runtime: Runtime, layers: &[Layer]) -> Vec<Family> {
    let mut families: Vec<Family> = layers.iter().map(classify::cpu_family).collect();
    if runtime != Runtime::Tract {
        return families;
    }
    let group = |name: &str| name.rsplit_once('.').map_or(name, |(g, _)| g).to_owned();
    let im2col_groups: std::collections::HashSet<String> = layers
        .iter()
        .filter(|l| {
            l.layer_type
                .as_deref()
                .is_some_and(|t| t.ends_with("Im2col"))
        })
        .map(|l| group(&l.name))
        .collect();
    for (l, f) in layers.iter().zip(families.iter_mut()) {
        let source = l.name.split('.').next().unwrap_or(&l.name);
        let lowered_part = matches!(*f, Family::Gemm | Family::Copy | Family::Shuffle);
        if lowered_part
            && (im2col_groups.contains(&group(&l.name)) || classify::contains_ci(source, "conv"))
        {
            *f = Family::Convolution;
        }
    }
    families
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::read_layer_info;

    fn layers(types: &[(&str, &str)], top: &str) -> LayerInfo {
        let records: Vec<String> = types
            .iter()
            .map(|(name, ty)| {
                format!(
                    r#"{{"Name": "{name}", "LayerType": "{ty}", "Inputs": [{{"Name": "{name}:in", "Dimensions": [1], "Format/Datatype": "Float"}}], "Outputs": []}}"#
                )
            })
            .collect();
        read_layer_info(format!(r#"{{{top}"Layers": [{}]}}"#, records.join(",")))
            .expect("layer info")
    }

    #[test]
    fn files_written_before_the_runtime_key_are_known_by_schema_and_label() {
        let info = layers(
            &[("conv", "Conv"), ("relu", "Relu")],
            r#""schema": "trtmc.layer-info/v1", "#,
        );
        let r = detect_runtime("tract", &info, None);
        assert_eq!(r.name, Runtime::Tract);
        assert!(r.evidence.iter().any(|e| e.contains("named for \"tract\"")));
        let r = detect_runtime("ort", &info, None);
        assert_eq!(r.name, Runtime::Onnxruntime);
    }

    #[test]
    fn an_explicit_runtime_key_wins_over_label_and_vocabulary() {
        let info = layers(
            &[("conv", "Conv")],
            r#""schema": "trtmc.layer-info/v1", "runtime": "onnxruntime", "#,
        );
        let r = detect_runtime("tract", &info, None);
        assert_eq!(r.name, Runtime::Onnxruntime);
        assert_eq!(r.display_name, "ONNX Runtime");
        assert!(r.evidence[0].contains("\"runtime\": \"onnxruntime\""));
    }

    #[test]
    fn operator_vocabulary_tells_cpu_runtimes_from_tensorrt() {
        let ort = layers(&[("a", "Conv"), ("b", "MaxPool"), ("c", "Gemm")], "");
        assert_eq!(detect_runtime("x", &ort, None).name, Runtime::Onnxruntime);
        let tract = layers(
            &[
                ("a.pad", "Pad"),
                ("a.lazyIm2col", "LazyIm2col"),
                ("a.matmatmul", "OptMatMul"),
            ],
            "",
        );
        assert_eq!(detect_runtime("x", &tract, None).name, Runtime::Tract);
        let trt = layers(&[("a", "CaskConvolution"), ("b", "Reformat")], "");
        let r = detect_runtime("x", &trt, None);
        assert_eq!(r.name, Runtime::Tensorrt);
        assert!(r.evidence.iter().any(|e| e.contains("trtexec export")));
    }

    #[test]
    fn onnx_and_tract_operators_have_families() {
        for (op, family) in [
            ("Conv", Family::Convolution),
            ("ConvTranspose", Family::Convolution),
            ("FusedConv", Family::Convolution),
            ("QLinearConv", Family::Convolution),
            ("MatMul", Family::Gemm),
            ("Gemm", Family::Gemm),
            ("OptMatMul", Family::Gemm),
            ("Add", Family::Pointwise),
            ("Relu", Family::Pointwise),
            ("Sigmoid", Family::Pointwise),
            ("OptMaxByScalar", Family::Pointwise),
            ("OptBinChain(Add+Max)", Family::Pointwise),
            ("BatchNormalization", Family::Normalization),
            ("LayerNormalization", Family::Normalization),
            ("MaxPool", Family::Pooling),
            ("GlobalAveragePool", Family::Pooling),
            ("OptMaxPool", Family::Pooling),
            ("Reshape", Family::Shuffle),
            ("Transpose", Family::Shuffle),
            ("Flatten", Family::Shuffle),
            ("IntoShape", Family::Shuffle),
            ("Softmax", Family::Softmax),
            ("Concat", Family::Copy),
            ("Reduce<Sum>", Family::Reduction),
            ("QuantizeLinear", Family::QuantDequant),
            // Grouped and depthwise convolutions as each runtime names their kernels.
            ("DepthWiseConv", Family::Convolution),
            ("DirectSpatialConv", Family::Convolution),
            ("BlockedConv", Family::Convolution),
            ("conv_nhwc", Family::Convolution),
            ("DepthwiseDeconv", Family::Convolution),
            ("NhwcFusedConv", Family::Convolution),
            ("FusedConv", Family::Convolution),
            ("QLinearConv", Family::Convolution),
            ("ConvInteger", Family::Convolution),
        ] {
            assert_eq!(classify::onnx_op_family(op), Some(family), "{op}");
        }
        assert_eq!(classify::onnx_op_family("CaskConvolution"), None);
        assert_eq!(classify::onnx_op_family("Reformat"), None);
    }

    #[test]
    fn tract_lowered_convolutions_count_as_convolutions() {
        let info = layers(
            &[
                ("n0.pad", "Pad"),
                ("n0.lazyIm2col", "LazyIm2col"),
                ("n0.matmatmul", "OptMatMul"),
                ("n0.reshape_group", "IntoShape"),
                ("n5_conv_6.pack_a", "OptMatMulPack"),
                ("fc.matmatmul", "OptMatMul"),
                ("relu", "OptMaxByScalar"),
            ],
            "",
        );
        let families = cpu_families(Runtime::Tract, &info.layers);
        assert_eq!(
            families,
            [
                Family::Convolution,
                Family::Convolution,
                Family::Convolution,
                Family::Convolution,
                Family::Convolution,
                Family::Gemm,
                Family::Pointwise
            ]
        );
        // ONNX Runtime's names are its own nodes: no regrouping.
        assert_eq!(
            cpu_families(Runtime::Onnxruntime, &info.layers)[0],
            Family::Copy
        );
    }
}
