//! The checks TREx's linter makes, as findings on the real fixtures (each triggered by an export
//! that has the problem and silent on one that has not), and the per-layer memory footprint
//! against TREx's own figures for the MobileNet QAT engine.

mod common;

use common::{analyze, data, fixture};
use trtmc_analyze::analysis::Backend;
use trtmc_analyze::findings::Issue;

fn trex(stem: &str) -> Backend {
    let layers = fixture(&format!("trex/{stem}.layers.json"));
    let profile = fixture(&format!("trex/{stem}.profile.json"));
    analyze(data(&layers, Some(&profile))).backends.remove(0)
}

fn issue<'a>(b: &'a Backend, id: &str) -> Option<&'a Issue> {
    b.findings.issues.iter().find(|i| i.id == id)
}

fn names(b: &Backend, i: &Issue) -> Vec<String> {
    i.layers
        .iter()
        .map(|&l| b.layers[l as usize].name.clone())
        .collect()
}

#[test]
fn channels_off_the_tensor_core_multiple_are_found_per_precision() {
    // MobileNet QAT (INT8): the 24-channel bottlenecks and the 1000-class classifier are off the
    // multiple of 16 (24 % 16 = 1000 % 16 = 8), and the first convolution reads 3 channels.
    let m = trex("mobilenet-qat-titanrtx");
    let i = issue(&m, "conv_channels_unaligned").expect("unaligned channels found");
    let listed = names(&m, i);
    assert_eq!(listed.len(), 6, "{listed:?}");
    assert!(
        listed.iter().any(|n| n.starts_with("classifier.1.weight")),
        "{listed:?}"
    );
    assert!(
        i.evidence
            .iter()
            .any(|e| e.contains("INT8 C=96 K=24 (multiple 16)")),
        "{:?}",
        i.evidence
    );
    assert!(!i.hypothesis.contains("expected"), "{}", i.hypothesis);
    // fp16 ResNet18: only the first convolution (C=3) is off its multiple of 8, which is
    // expected and said so; every other channel count is a multiple of 64.
    let r = trex("resnet18-pt-a100-fp16");
    let i = issue(&r, "conv_channels_unaligned").expect("the RGB input");
    assert_eq!(names(&r, i), ["Conv_0 + Relu_1"]);
    assert!(
        i.evidence
            .iter()
            .any(|e| e.contains("C=3 K=64 (multiple 8)")),
        "{:?}",
        i.evidence
    );
    assert!(i.hypothesis.contains("expected"), "{}", i.hypothesis);
}

#[test]
fn int8_convolutions_writing_float_are_found() {
    let q = trex("resnet18-pt-a100-qat");
    let i = issue(&q, "int8_conv_float_output").expect("found");
    assert_eq!(i.layers.len(), 13, "{:?}", names(&q, i));
    assert!(
        names(&q, i)
            .iter()
            .any(|n| n.starts_with("conv1.weight + QuantizeLinear_7"))
    );
    // The build with quantized residuals writes INT8 everywhere but at the residual tail and FC.
    let qr = trex("resnet18-pt-a100-qat-residual");
    assert_eq!(
        issue(&qr, "int8_conv_float_output")
            .expect("found")
            .layers
            .len(),
        2
    );
    // No INT8 layers: nothing to say.
    assert!(issue(&trex("resnet18-pt-a100-fp16"), "int8_conv_float_output").is_none());
}

#[test]
fn reformats_that_convert_the_data_type_are_found() {
    let r = trex("resnet18-pt-a100-fp16");
    let i = issue(&r, "reformat_converts_type").expect("found");
    let listed = names(&r, i);
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(listed[0].starts_with("Reformatting CopyNode for Input Tensor 0 to Conv_0"));
    assert!(
        i.evidence.iter().any(|e| e.contains("FP32 → FP16")),
        "{:?}",
        i.evidence
    );
    // fp32 converts nothing.
    assert!(issue(&trex("resnet18-pt-a100-fp32"), "reformat_converts_type").is_none());
}

#[test]
fn unfused_quantize_scale_layers_are_found_in_the_8_2_export() {
    let old = trex("mobilenet-qat-titanrtx-trt82");
    let i = issue(&old, "unfused_quantize").expect("found");
    assert_eq!(i.layers.len(), 17, "{:?}", names(&old, i));
    assert!(
        i.layers
            .iter()
            .all(|&l| &*old.layers[l as usize].raw_type == "Scale")
    );
    // The same model exported by TensorRT 8.4 fuses its Q/DQ (Reformat QDQ, not Scale).
    assert!(issue(&trex("mobilenet-qat-titanrtx"), "unfused_quantize").is_none());
}

/// TREx's golden summary of this engine (`tests/test_engine_plan.py` on mobilenet.qat):
/// "Activations" 15.9 MB (MiB), "Weights" 3.3 MB, 72 layers once its one NoOp is folded.
#[test]
fn the_memory_footprint_matches_trex_on_mobilenet_qat() {
    let m = trex("mobilenet-qat-titanrtx");
    let mem = m
        .memory
        .as_ref()
        .expect("the export lists weights and tensors");
    assert_eq!(mem.weights_bytes.len(), m.layers.len());
    let mib = |b: u64| b as f64 / 1048576.0;
    assert_eq!(format!("{:.1}", mib(mem.total_activation_bytes)), "15.9");
    // TREx's 3.3 is the Int8 `Weights` alone; the column adds each layer's Float `Bias`.
    let weights_only: f64 = m
        .layers
        .iter()
        .filter_map(|l| l.weights.as_ref())
        .map(|w| w.count)
        .sum();
    assert_eq!(format!("{:.1}", weights_only / 1048576.0), "3.3");
    assert_eq!(
        mem.total_weights_bytes, 3_541_984,
        "Int8 weights + Float bias, by hand"
    );
    let noops = m.layers.iter().filter(|l| &*l.raw_type == "NoOp").count();
    assert_eq!(m.layers.len() - noops, 72);
    // A layer without weights has none; a convolution's input + output tensors are counted.
    let first_conv = m
        .layers
        .iter()
        .position(|l| l.conv.is_some())
        .expect("a convolution");
    assert!(mem.weights_bytes[first_conv].is_some_and(|w| w > 0));
    assert!(mem.activation_bytes[first_conv].is_some_and(|a| a > 0));
    // Names-only exports have no footprint.
    let names_only = analyze(data(
        &fixture("trtexec-other/yolo-qat-int8-orin-trt85-namesonly.layers.json"),
        None,
    ));
    assert!(names_only.backends[0].memory.is_none());
}
