//! Build comparison: which layers of two builds pair up. On the TREx ResNet18 builds (fp16, fp32,
//! QAT, QAT with quantized residuals) and on a build compared with a renamed, reordered copy of
//! itself.

mod common;

use std::collections::{BinaryHeap, HashMap};
use std::path::Path;

use common::{analyze, chained_resnets, data, fixture};
use proptest::prelude::*;
use trtmc_analyze::analysis::{Backend, LayerView};
use trtmc_analyze::classify::Family;
use trtmc_analyze::compare::{Method, Pair, UnmatchedCode, align};

fn trex(label: &str) -> Backend {
    let layers = fixture(&format!("trex/resnet18-pt-a100-{label}.layers.json"));
    let profile = fixture(&format!("trex/resnet18-pt-a100-{label}.profile.json"));
    let mut a = analyze(data(&layers, Some(&profile)));
    a.backends.remove(0)
}

fn layers_only(path: &Path) -> Backend {
    let mut a = analyze(data(path, None));
    a.backends.remove(0)
}

/// Reformats, copies and no-ops (what a build inserts to move data between formats).
fn moves_data(l: &LayerView) -> bool {
    l.name.starts_with("Reformatting CopyNode for ")
        || matches!(l.family, Family::Reformat | Family::NoOp | Family::Shuffle)
}

/// (layer of a, layer of b, method) for every matched row.
fn matched<'a>(
    a: &'a Backend,
    b: &'a Backend,
    p: &Pair,
) -> Vec<(&'a LayerView, &'a LayerView, Method)> {
    p.rows
        .iter()
        .filter_map(|r| Some((&a.layers[r.a? as usize], &b.layers[r.b? as usize], r.method)))
        .collect()
}

/// The name of b's partner of a's layer `name`, if any.
fn partner<'a>(a: &Backend, b: &'a Backend, p: &Pair, name: &str) -> Option<&'a str> {
    let i = a
        .layers
        .iter()
        .position(|l| l.name == name)
        .unwrap_or_else(|| panic!("no layer {name}")) as u32;
    p.rows
        .iter()
        .find(|r| r.a == Some(i))
        .and_then(|r| r.b)
        .map(|j| b.layers[j as usize].name.as_str())
}

/// Every matched pair is of one kind: data movement with data movement, Q/DQ with Q/DQ,
/// convolutions with convolutions.
fn assert_kinds_agree(a: &Backend, b: &Backend, p: &Pair) {
    for (x, y, how) in matched(a, b, p) {
        assert_eq!(
            moves_data(x),
            moves_data(y),
            "{} ↔ {} ({how:?}) pairs a reformat with a computing layer",
            x.name,
            y.name
        );
        if !moves_data(x) {
            assert_eq!(x.family, y.family, "{} ↔ {} ({how:?})", x.name, y.name);
        }
    }
}

/// The downsampling block of each stage of the fp16 build (main path and shortcut) pairs with the
/// other build's layer named after the same weight, whatever the fusions: the check both QAT builds
/// must pass.
fn assert_downsampling_blocks_pair_by_weight(fp16: &Backend, other: &Backend, p: &Pair) {
    for (stage, conv1, conv2, shortcut) in [
        (
            2,
            "Conv_13 + Relu_14",
            "Conv_15",
            "Conv_16 + Add_17 + Relu_18",
        ),
        (
            3,
            "Conv_24 + Relu_25",
            "Conv_26",
            "Conv_27 + Add_28 + Relu_29",
        ),
        (
            4,
            "Conv_35 + Relu_36",
            "Conv_37",
            "Conv_38 + Add_39 + Relu_40",
        ),
    ] {
        for (ours, theirs) in [
            (conv1, "conv1.weight"),
            (conv2, "conv2.weight"),
            (shortcut, "downsample.0.weight"),
        ] {
            let got = partner(fp16, other, p, ours).unwrap_or("(none)");
            assert!(
                got.starts_with(&format!("layer{stage}.0.{theirs}")),
                "{ours} ↔ {got}"
            );
        }
    }
}

#[test]
fn fixtures_show_zero_time_reformats_named_after_their_consumers() {
    let fp16 = trex("fp16");
    let copies: Vec<&LayerView> = fp16
        .layers
        .iter()
        .filter(|l| {
            &*l.raw_type == "NoOp"
                && l.name
                    .starts_with("Reformatting CopyNode for Input Tensor ")
                && l.timing.as_ref().is_some_and(|t| t.avg_ms == 0.0)
        })
        .collect();
    assert_eq!(
        copies.len(),
        9,
        "the pattern the alignment must not be fooled by"
    );
    let into_conv = copies
        .iter()
        .filter(|l| l.name.contains(" to Conv_") && l.name.contains(" + Add_"))
        .count();
    assert_eq!(into_conv, 4);
    // A copy's sources are the tensor it copies, not its consumer's ONNX nodes.
    let copy = fp16
        .layers
        .iter()
        .find(|l| l.name == "Reformatting CopyNode for Input Tensor 0 to Conv_5 + Add_6 + Relu_7")
        .expect("copy");
    assert_eq!(copy.origins, ["onnx::Conv_129"]);
    let out_copy = fp16
        .layers
        .iter()
        .find(|l| {
            l.name == "Reformatting CopyNode for Output Tensor 0 to Conv_27 + Add_28 + Relu_29"
        })
        .expect("output copy");
    assert_eq!(out_copy.origins, ["input.96"]);
}

#[test]
fn fp16_vs_qat_pairs_convolutions_by_position_and_no_reformat_with_a_convolution() {
    let (fp16, qat) = (trex("fp16"), trex("qat"));
    let p = align(&fp16, &qat);
    assert_kinds_agree(&fp16, &qat, &p);
    // Every convolution (and the FC layer, a CaskConvolution) of each build has a partner.
    let convs = |b: &Backend| {
        b.layers
            .iter()
            .filter(|l| l.family == Family::Convolution)
            .count()
    };
    let conv_pairs = matched(&fp16, &qat, &p)
        .iter()
        .filter(|(x, y, _)| x.family == Family::Convolution && y.family == Family::Convolution)
        .count();
    assert_eq!((convs(&fp16), convs(&qat), conv_pairs), (21, 21, 21));
    // Main path and shortcut: the downsampling block of each stage.
    assert_downsampling_blocks_pair_by_weight(&fp16, &qat, &p);
    // The zero-time copies fp16 needs have no counterpart in the QAT build (it quantizes instead).
    for r in p.rows.iter().filter(|r| r.b.is_none()) {
        let l = &fp16.layers[r.a.expect("a") as usize];
        assert!(moves_data(l), "{} left unmatched", l.name);
        assert!(r.reason.is_some(), "{} has no reason", l.name);
    }
    // And the QAT build's Q/DQ layers have none in fp16.
    assert!(
        p.rows.iter().filter(|r| r.a.is_none()).all(|r| moves_data(
            &qat.layers[r.b.expect("b") as usize]
        ) || qat.layers[r.b.expect("b") as usize]
            .family
            == Family::QuantDequant)
    );
    // Names differ: convolutions whose signature is unique pair by it, the rest by position.
    assert!(
        p.matched_by_position + p.matched_by_signature >= 20,
        "{} + {}",
        p.matched_by_position,
        p.matched_by_signature
    );
    assert!(p.matched_by_signature >= 1, "{}", p.matched_by_signature);
}

#[test]
fn fp16_vs_fp32_pairs_reformats_only_at_the_same_place() {
    let (fp16, fp32) = (trex("fp16"), trex("fp32"));
    let p = align(&fp16, &fp32);
    assert_kinds_agree(&fp16, &fp32, &p);
    for (x, y, how) in matched(&fp16, &fp32, &p) {
        // Both builds come from one ONNX file: every pair is the same layer.
        assert_eq!(x.name, y.name, "{how:?}");
    }
    assert_eq!(p.matched_by_name, 26);
    // fp32's copy after MaxPool_2 (feeding two layers) and fp16's copy into Conv_5's second input
    // copy the same tensor in different places: neither pairs.
    assert_eq!(
        partner(
            &fp16,
            &fp32,
            &p,
            "Reformatting CopyNode for Input Tensor 1 to Conv_5 + Add_6 + Relu_7"
        ),
        None
    );
    let unmatched_b: Vec<&str> = p
        .rows
        .iter()
        .filter(|r| r.a.is_none())
        .map(|r| fp32.layers[r.b.expect("b") as usize].name.as_str())
        .collect();
    assert!(
        unmatched_b.contains(&"Reformatting CopyNode for Output Tensor 0 to MaxPool_2"),
        "{unmatched_b:?}"
    );
}

#[test]
fn fp16_vs_qat_residual_tells_main_path_from_shortcut_under_another_fusion() {
    // In qat-residual the residual Add fuses into conv2, not into the shortcut convolution; all
    // three convolutions of a downsampling block have the same output shape.
    let (fp16, res) = (trex("fp16"), trex("qat-residual"));
    let p = align(&fp16, &res);
    assert_kinds_agree(&fp16, &res, &p);
    assert_downsampling_blocks_pair_by_weight(&fp16, &res, &p);
    // MaxPool_2 is fused into qat-residual's first convolution: nothing to pair with.
    let i = fp16
        .layers
        .iter()
        .position(|l| l.name == "MaxPool_2")
        .expect("pool") as u32;
    let row = p.rows.iter().find(|r| r.a == Some(i)).expect("row");
    assert_eq!(row.method, Method::Unmatched);
    assert_eq!(
        row.reason.as_ref().map(|r| r.code),
        Some(UnmatchedCode::NoCounterpart)
    );
    // Three copies after fp16's FC layer, one in qat-residual: which one is its twin is
    // ambiguous, so none is chosen.
    let tail: Vec<_> = p
        .rows
        .iter()
        .filter(|r| {
            r.reason
                .as_ref()
                .is_some_and(|u| u.code == UnmatchedCode::Ambiguous)
        })
        .collect();
    assert_eq!(tail.len(), 4, "{tail:?}");
    assert_eq!((p.ambiguous_a, p.ambiguous_b), (3, 1));
    assert!(
        tail[0]
            .reason
            .as_ref()
            .is_some_and(|u| u.detail.contains("3 reformat/copy layer(s)")),
        "{tail:?}"
    );
}

/// A splitmix64 step: the random order and names of one property case.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `doc`'s layers with every layer and tensor renamed (names share nothing with the original, so
/// neither names nor source nodes can pair them), in a random topological order. Returns the new
/// document and, per new position, the original index.
fn scrambled(doc: &serde_json::Value, seed: u64) -> (serde_json::Value, Vec<usize>) {
    let mut rng = seed;
    let layers = doc["Layers"].as_array().expect("Layers");
    let tensor_names = |l: &serde_json::Value, key: &str| -> Vec<String> {
        l[key]
            .as_array()
            .map(|ts| {
                ts.iter()
                    .filter_map(|t| t["Name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut writer: HashMap<String, usize> = HashMap::new();
    for (i, l) in layers.iter().enumerate() {
        for t in tensor_names(l, "Outputs") {
            writer.entry(t).or_insert(i);
        }
    }
    let n = layers.len();
    let mut indegree = vec![0usize; n];
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, l) in layers.iter().enumerate() {
        let mut deps: Vec<usize> = tensor_names(l, "Inputs")
            .iter()
            .filter_map(|t| writer.get(t).copied())
            .filter(|w| *w != i)
            .collect();
        deps.sort_unstable();
        deps.dedup();
        indegree[i] = deps.len();
        for d in deps {
            readers[d].push(i);
        }
    }
    // Kahn's algorithm, the next layer drawn at random among the ready ones.
    let mut ready: BinaryHeap<(u64, usize)> = (0..n)
        .filter(|i| indegree[*i] == 0)
        .map(|i| (next(&mut rng), i))
        .collect();
    let mut order = Vec::with_capacity(n);
    while let Some((_, i)) = ready.pop() {
        order.push(i);
        for &r in &readers[i] {
            indegree[r] -= 1;
            if indegree[r] == 0 {
                ready.push((next(&mut rng), r));
            }
        }
    }
    assert_eq!(order.len(), n, "the fixture's graph has a cycle");
    let salt = next(&mut rng);
    let mut renamed: HashMap<String, String> = HashMap::new();
    let mut rename = |name: &str| -> String {
        let k = renamed.len();
        renamed
            .entry(name.to_owned())
            .or_insert_with(|| format!("t{:x}_{k}", salt & 0xffff))
            .clone()
    };
    let mut out = Vec::with_capacity(n);
    for (pos, &i) in order.iter().enumerate() {
        let mut l = layers[i].clone();
        let obj = l.as_object_mut().expect("layer object");
        obj.insert(
            "Name".to_owned(),
            serde_json::Value::String(format!("layer{:x}_{pos}", salt >> 48)),
        );
        obj.remove("Metadata");
        for key in ["Inputs", "Outputs"] {
            if let Some(ts) = obj.get_mut(key).and_then(|v| v.as_array_mut()) {
                for t in ts {
                    if let Some(name) = t["Name"].as_str().map(str::to_owned) {
                        t["Name"] = serde_json::Value::String(rename(&name));
                    }
                }
            }
        }
        out.push(l);
    }
    let bindings: Vec<serde_json::Value> = doc["Bindings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b.as_str())
        .map(|b| serde_json::Value::String(rename(b)))
        .collect();
    (
        serde_json::json!({ "Layers": out, "Bindings": bindings }),
        order,
    )
}

const BASES: [&str; 7] = [
    "trex/resnet18-pt-a100-fp16.layers.json",
    "trex/resnet18-pt-a100-fp32.layers.json",
    "trex/resnet18-pt-a100-qat.layers.json",
    "trex/resnet18-pt-a100-qat-residual.layers.json",
    "trex/resnet18-pt-a100-qat-residual-qgap.layers.json",
    "trex/mobilenet-qat-titanrtx.layers.json",
    "trex/mobilenet-qat-titanrtx-trt82.layers.json",
];

/// Aligns `path`'s build with a scrambled copy of itself and checks every layer met its twin.
fn assert_twins(path: &Path, seed: u64) -> Result<(), TestCaseError> {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("json");
    let (copy, order) = scrambled(&doc, seed);
    let dir = tempfile::tempdir().expect("tempdir");
    let copy_path = dir.path().join("copy.layers.json");
    std::fs::write(&copy_path, copy.to_string()).expect("write copy");
    let (a, b) = (layers_only(path), layers_only(&copy_path));
    prop_assert_eq!(a.layers.len(), b.layers.len());
    let p = align(&a, &b);
    prop_assert_eq!((p.matched_by_name, p.matched_by_origin), (0, 0));
    let mut twin_in_b = vec![0u32; order.len()];
    for (pos, &i) in order.iter().enumerate() {
        twin_in_b[i] = pos as u32;
    }
    for r in &p.rows {
        let Some(i) = r.a else {
            let j = r.b.unwrap_or(0) as usize;
            prop_assert!(
                false,
                "{}: {} unmatched ({:?})",
                path.display(),
                a.layers[order[j]].name,
                r.reason
            );
            continue;
        };
        prop_assert_eq!(
            r.b,
            Some(twin_in_b[i as usize]),
            "{}: {} paired with the twin of {:?} ({:?}, {:?})",
            path.display(),
            a.layers[i as usize].name,
            r.b.map(|j| &a.layers[order[j as usize]].name),
            r.method,
            r.reason
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn a_renamed_reordered_copy_pairs_every_layer_with_its_twin(
        base in 0..BASES.len(),
        seed in any::<u64>(),
    ) {
        assert_twins(&fixture(BASES[base]), seed)?;
    }
}

#[test]
fn every_fixture_meets_its_scrambled_twin() {
    for base in BASES {
        assert_twins(&fixture(base), 7).expect("twins");
    }
}

/// A layer-info record: `(name, LayerType, inputs, outputs)` with one shape for every tensor;
/// `qdq` marks a Q/DQ reformat.
fn record(name: &str, ty: &str, ins: &[&str], outs: &[&str], dims: &[i64]) -> serde_json::Value {
    let tensors = |names: &[&str]| -> Vec<serde_json::Value> {
        names
            .iter()
            .map(|n| {
                serde_json::json!({
                    "Name": n, "Location": "Device", "Dimensions": dims,
                    "Format/Datatype": "Row major linear FP16 format"
                })
            })
            .collect()
    };
    let mut r = serde_json::json!({
        "Name": name, "LayerType": ty, "Inputs": tensors(ins), "Outputs": tensors(outs),
        "TacticValue": "0x0"
    });
    if ty == "Reformat" {
        r["Origin"] = if name.starts_with("QuantizeLinear") {
            "QDQ"
        } else {
            "REFORMAT"
        }
        .into();
    }
    r
}

fn build(dir: &Path, label: &str, layers: Vec<serde_json::Value>) -> Backend {
    let path = dir.join(format!("{label}.layers.json"));
    std::fs::write(&path, serde_json::json!({ "Layers": layers }).to_string()).expect("write");
    layers_only(&path)
}

/// The pattern seen on real exports: a QAT build that keeps the ONNX node names of the fp16 build
/// (`w + QuantizeLinear_21 + Conv_5 + Add_6 + Relu_7`). The fp16 build's copies, named after
/// their consumers, used to take those convolutions "by source nodes" (they come first) and leave
/// the real fp16 convolutions unmatched.
#[test]
fn copies_named_after_a_convolution_never_take_its_partner() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (c64, c128) = ([1, 64, 56, 56], [1, 128, 28, 28]);
    let fp16 = build(
        dir.path(),
        "block-fp16",
        vec![
            record(
                "Conv_0 + Relu_1",
                "CaskConvolution",
                &["input"],
                &["a1"],
                &c64,
            ),
            record(
                "Reformatting CopyNode for Input Tensor 0 to Conv_2 + Relu_3",
                "NoOp",
                &["a1"],
                &["Reformatted Input Tensor 0 to Conv_2 + Relu_3"],
                &c64,
            ),
            record(
                "Conv_2 + Relu_3",
                "CaskConvolution",
                &["Reformatted Input Tensor 0 to Conv_2 + Relu_3"],
                &["a2"],
                &c128,
            ),
            record("Conv_4", "CaskConvolution", &["a2"], &["a3"], &c128),
            record(
                "Reformatting CopyNode for Input Tensor 0 to Conv_5 + Add_6 + Relu_7",
                "NoOp",
                &["a1"],
                &["Reformatted Input Tensor 0 to Conv_5 + Add_6 + Relu_7"],
                &c64,
            ),
            record(
                "Conv_5 + Add_6 + Relu_7",
                "CaskConvolution",
                &[
                    "Reformatted Input Tensor 0 to Conv_5 + Add_6 + Relu_7",
                    "a3",
                ],
                &["a4"],
                &c128,
            ),
            record(
                "Reformatting CopyNode for Input Tensor 0 to Conv_8 + Add_9 + Relu_10",
                "NoOp",
                &["a4"],
                &["Reformatted Input Tensor 0 to Conv_8 + Add_9 + Relu_10"],
                &c128,
            ),
            record(
                "Conv_8 + Add_9 + Relu_10",
                "CaskConvolution",
                &[
                    "Reformatted Input Tensor 0 to Conv_8 + Add_9 + Relu_10",
                    "a4",
                ],
                &["a5"],
                &c128,
            ),
        ],
    );
    let qat = build(
        dir.path(),
        "block-qat",
        vec![
            record("QuantizeLinear_20", "Reformat", &["input"], &["q0"], &c64),
            record(
                "w0 + QuantizeLinear_21 + Conv_0 + Relu_1",
                "CaskConvolution",
                &["q0"],
                &["b1"],
                &c64,
            ),
            record("QuantizeLinear_22", "Reformat", &["b1"], &["q1"], &c64),
            record(
                "w2 + QuantizeLinear_23 + Conv_2 + Relu_3",
                "CaskConvolution",
                &["q1"],
                &["b2"],
                &c128,
            ),
            record(
                "w4 + QuantizeLinear_24 + Conv_4",
                "CaskConvolution",
                &["b2"],
                &["b3"],
                &c128,
            ),
            record(
                "w5 + QuantizeLinear_25 + Conv_5 + Add_6 + Relu_7",
                "CaskConvolution",
                &["q1", "b3"],
                &["b4"],
                &c128,
            ),
            record("QuantizeLinear_26", "Reformat", &["b4"], &["q2"], &c128),
            record(
                "w8 + QuantizeLinear_27 + Conv_8 + Add_9 + Relu_10",
                "CaskConvolution",
                &["q2", "b4"],
                &["b5"],
                &c128,
            ),
        ],
    );
    let p = align(&fp16, &qat);
    assert_kinds_agree(&fp16, &qat, &p);
    for conv in [
        "Conv_0 + Relu_1",
        "Conv_2 + Relu_3",
        "Conv_4",
        "Conv_5 + Add_6 + Relu_7",
        "Conv_8 + Add_9 + Relu_10",
    ] {
        let got = partner(&fp16, &qat, &p, conv).unwrap_or("(none)");
        assert!(got.ends_with(conv), "{conv} ↔ {got}");
    }
    // Copies and Q/DQ layers have no counterpart of their kind.
    assert_eq!((p.unmatched_a, p.unmatched_b), (3, 3));
    assert!(p.rows.iter().filter(|r| r.b.is_none()).all(|r| {
        r.reason.as_ref().is_some_and(|u| {
            u.code == UnmatchedCode::NoCounterpart && u.detail.contains("reformat/copy")
        })
    }));
}

/// Two convolutions of one shape that read the same tensor and feed nothing: nothing in either
/// build tells them apart, so neither is guessed.
#[test]
fn indistinguishable_layers_stay_unmatched_as_ambiguous() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = [1, 64, 56, 56];
    let a = build(
        dir.path(),
        "twins-a",
        vec![
            record("Conv_0", "CaskConvolution", &["input"], &["x"], &s),
            record("Conv_1", "CaskConvolution", &["x"], &["y1"], &s),
            record("Conv_2", "CaskConvolution", &["x"], &["y2"], &s),
        ],
    );
    let b = build(
        dir.path(),
        "twins-b",
        vec![
            record("first", "CaskConvolution", &["in"], &["t"], &s),
            record("left", "CaskConvolution", &["t"], &["u1"], &s),
            record("right", "CaskConvolution", &["t"], &["u2"], &s),
        ],
    );
    let p = align(&a, &b);
    assert_eq!(partner(&a, &b, &p, "Conv_0"), Some("first"));
    assert_eq!((p.matched_by_position, p.matched_by_signature), (1, 0));
    assert_eq!((p.ambiguous_a, p.ambiguous_b), (2, 2));
    let detail = p
        .rows
        .iter()
        .find_map(|r| r.reason.as_ref())
        .map(|u| u.detail.clone())
        .unwrap_or_default();
    assert!(
        detail.contains("2 convolution layer(s) in `twins-a` and 2 in `twins-b`"),
        "{detail}"
    );
}

/// Alignment stays linear: a large engine against itself (names) and against a renamed,
/// reordered copy (graph position only). `ALIGN_COPIES=400` gives the 14,400-layer case.
#[test]
fn large_engines_align_with_themselves_and_their_scrambled_copies() {
    let copies: usize = std::env::var("ALIGN_COPIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let (doc, _) = chained_resnets(copies);
    let (copy, order) = scrambled(&doc, 11);
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, copy_path) = (
        dir.path().join("big.layers.json"),
        dir.path().join("copy.layers.json"),
    );
    std::fs::write(&path, doc.to_string()).expect("write");
    std::fs::write(&copy_path, copy.to_string()).expect("write");
    let (a, b) = (layers_only(&path), layers_only(&copy_path));
    let n = a.layers.len();
    assert_eq!(n, 36 * copies);

    let started = std::time::Instant::now();
    let same = align(&a, &a);
    let by_name = started.elapsed();
    assert_eq!(same.matched_by_name, n);

    let started = std::time::Instant::now();
    let p = align(&a, &b);
    let by_position = started.elapsed();
    eprintln!("{n} layers: against itself {by_name:?}, against a scrambled copy {by_position:?}");
    let mut twin = vec![0u32; n];
    for (pos, &i) in order.iter().enumerate() {
        twin[i] = pos as u32;
    }
    let wrong = p
        .rows
        .iter()
        .filter(|r| r.a.is_none() || r.b != Some(twin[r.a.unwrap_or(0) as usize]))
        .count();
    assert_eq!(wrong, 0, "{:?}", (p.matched_by_position, p.unmatched_a));
}

/// `doc` (a ResNet build) with the residual add of every downsampling block fused into the
/// main-path convolution instead of the shortcut convolution, as another build (or another
/// TensorRT version) may fuse it. Returns the new document and, per layer of `doc`, the index of
/// its twin in the new one (the convolution that computes the same ONNX Conv).
/// Also returns how many blocks were changed (none in a build that already fuses the add into the
/// main path).
fn add_fused_into_main_path(doc: &serde_json::Value) -> (serde_json::Value, Vec<usize>, usize) {
    let mut layers = doc["Layers"].as_array().expect("Layers").clone();
    let is_conv = |l: &serde_json::Value| {
        l["LayerType"]
            .as_str()
            .is_some_and(|t| t.contains("Convolution"))
    };
    let mut twin: Vec<usize> = (0..layers.len()).collect();
    let mut swaps = 0;
    let mut sc = 0;
    while sc < layers.len() {
        let l = &layers[sc];
        let shortcut = is_conv(l)
            && l["Kernel"] == serde_json::json!([1, 1])
            && l["Stride"] == serde_json::json!([2, 2])
            && l["Inputs"].as_array().is_some_and(|i| i.len() == 2);
        let residual = l["Inputs"][1]["Name"].as_str().unwrap_or("").to_owned();
        let main = layers.iter().position(|m| {
            m["Outputs"]
                .as_array()
                .is_some_and(|o| o.iter().any(|t| t["Name"] == residual.as_str()))
        });
        let Some(m) = main.filter(|&m| shortcut && is_conv(&layers[m]) && m < sc) else {
            sc += 1;
            continue;
        };
        let name = layers[sc]["Name"].as_str().expect("name").to_owned();
        let parts: Vec<&str> = name.split(" + ").collect();
        let conv_part = parts
            .iter()
            .position(|p| p.starts_with("Conv_"))
            .expect("a Conv_ part");
        let (own, add) = (
            parts[..=conv_part].join(" + "),
            parts[conv_part + 1..].join(" + "),
        );
        let link = format!("shortcut_of_{own}");
        let mut new_short = layers[sc].clone();
        let mut new_main = layers[m].clone();
        let mut link_tensor = layers[sc]["Outputs"][0].clone();
        link_tensor["Name"] = serde_json::json!(link);
        new_short["Name"] = serde_json::json!(own);
        new_short["Inputs"] = serde_json::json!([layers[sc]["Inputs"][0].clone()]);
        new_short["Outputs"] = serde_json::json!([link_tensor.clone()]);
        new_short["Activation"] = serde_json::json!("NONE");
        new_short["HasReLU"] = serde_json::json!(0);
        new_main["Name"] = serde_json::json!(format!(
            "{} + {add}",
            layers[m]["Name"].as_str().expect("name")
        ));
        new_main["Inputs"]
            .as_array_mut()
            .expect("inputs")
            .push(link_tensor);
        new_main["Outputs"] = layers[sc]["Outputs"].clone();
        new_main["Activation"] = serde_json::json!("RELU");
        new_main["HasReLU"] = serde_json::json!(1);
        // The shortcut now runs before the main-path convolution that reads it.
        layers[m] = new_main;
        layers.remove(sc);
        layers.insert(m, new_short);
        for t in twin.iter_mut() {
            if *t == sc {
                *t = m;
            } else if *t >= m && *t < sc {
                *t += 1;
            }
        }
        swaps += 1;
        sc += 1;
    }
    let mut out = doc.clone();
    out["Layers"] = serde_json::Value::Array(layers);
    (out, twin, swaps)
}

/// The convolution parameters alignment must never mix: kernel, stride, groups, input and output
/// channels.
type ConvSignature = (Vec<i64>, Vec<i64>, Option<i64>, Option<i64>, Option<i64>);

fn conv_signature(l: &LayerView) -> Option<ConvSignature> {
    let c = l.conv.as_ref()?;
    let in_channels = l.inputs.first()?.dims.as_ref()?.get(1).copied();
    Some((
        c.kernel.clone(),
        c.stride.clone(),
        c.groups,
        in_channels,
        c.out_maps,
    ))
}

fn read_doc(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("json")
}

/// Every convolution of `a` pairs with its twin in `b` (`twin_in_b[i]`), and the pairs say why.
fn assert_conv_twins(a: &Backend, b: &Backend, p: &Pair, twin_in_b: &[usize]) {
    for l in a.layers.iter().filter(|l| l.family == Family::Convolution) {
        let row = p
            .rows
            .iter()
            .find(|r| r.a == Some(l.index))
            .expect("a row per layer");
        let want = &b.layers[twin_in_b[l.index as usize]];
        let got = row.b.map(|j| b.layers[j as usize].name.as_str());
        assert_eq!(
            got,
            Some(want.name.as_str()),
            "{} paired by {:?} ({:?}; {:?})",
            l.name,
            row.method,
            row.evidence,
            row.reason
        );
        assert!(
            row.evidence.as_deref().is_some_and(|e| !e.is_empty()),
            "{} ↔ {}: no evidence",
            l.name,
            want.name
        );
    }
}

/// The issue-36 case: one build fused each downsampling block's residual add into the shortcut
/// convolution, the other into the main-path convolution. The add's source nodes sit on two
/// different convolutions; the signatures (1×1 /2 against 3×3 /1) tell them apart.
#[test]
fn a_residual_add_fused_into_another_convolution_pairs_every_convolution_with_its_twin() {
    let path = fixture("trex/resnet18-pt-a100-fp16.layers.json");
    let (other, twin, swaps) = add_fused_into_main_path(&read_doc(&path));
    assert_eq!(swaps, 3, "one downsampling block per stage 2-4");
    let dir = tempfile::tempdir().expect("tempdir");
    let other_path = dir.path().join("main-path-add.layers.json");
    std::fs::write(&other_path, other.to_string()).expect("write");
    let (a, b) = (layers_only(&path), layers_only(&other_path));
    // The names (and so the add's source nodes) are kept: `Conv_15 + Add_17 + Relu_18` here,
    // `Conv_16 + Add_17 + Relu_18` there.
    assert!(
        b.layers
            .iter()
            .any(|l| l.name == "Conv_15 + Add_17 + Relu_18")
    );
    assert!(b.layers.iter().any(|l| l.name == "Conv_16"));
    let p = align(&a, &b);
    assert_kinds_agree(&a, &b, &p);
    assert_conv_twins(&a, &b, &p, &twin);
    let row = |name: &str| {
        let i = a.layers.iter().position(|l| l.name == name).expect("layer") as u32;
        p.rows.iter().find(|r| r.a == Some(i)).expect("row").clone()
    };
    let short = row("Conv_16 + Add_17 + Relu_18");
    assert_eq!(short.method, Method::Signature);
    assert!(
        short
            .evidence
            .as_deref()
            .is_some_and(|e| e.contains("1×1 /2×2, 64→128")),
        "{:?}",
        short.evidence
    );
    assert_eq!(
        row("Conv_3 + Relu_4").evidence.as_deref(),
        Some("the same name")
    );

    // The same pair with every layer and tensor renamed and the order shuffled: the graph alone.
    for seed in [1, 2, 3] {
        let (scr, order) = scrambled(&other, seed);
        let scr_path = dir.path().join(format!("scrambled-{seed}.layers.json"));
        std::fs::write(&scr_path, scr.to_string()).expect("write");
        let c = layers_only(&scr_path);
        let mut pos = vec![0usize; order.len()];
        for (p, &i) in order.iter().enumerate() {
            pos[i] = p;
        }
        let twin_in_c: Vec<usize> = twin.iter().map(|&t| pos[t]).collect();
        let p = align(&a, &c);
        assert_kinds_agree(&a, &c, &p);
        assert_conv_twins(&a, &c, &p, &twin_in_c);
    }
}

const RESNETS: [&str; 5] = [
    "trex/resnet18-pt-a100-fp16.layers.json",
    "trex/resnet18-pt-a100-fp32.layers.json",
    "trex/resnet18-pt-a100-qat.layers.json",
    "trex/resnet18-pt-a100-qat-residual.layers.json",
    "trex/resnet18-pt-a100-qat-residual-qgap.layers.json",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Whatever the two builds (any two ResNet18 fixtures, the add fused into either convolution,
    /// names kept or scrambled), no pair joins convolutions of different kernel, stride, groups or
    /// channels.
    #[test]
    fn no_pair_joins_different_convolution_signatures(
        first in 0..RESNETS.len(),
        second in 0..RESNETS.len(),
        move_add in any::<bool>(),
        scramble in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let a = layers_only(&fixture(RESNETS[first]));
        let mut doc = read_doc(&fixture(RESNETS[second]));
        if move_add {
            doc = add_fused_into_main_path(&doc).0;
        }
        if scramble {
            doc = scrambled(&doc, seed).0;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("other.layers.json");
        std::fs::write(&path, doc.to_string()).expect("write");
        let b = layers_only(&path);
        let p = align(&a, &b);
        for (x, y, how) in matched(&a, &b, &p) {
            if let (Some(sx), Some(sy)) = (conv_signature(x), conv_signature(y)) {
                prop_assert_eq!(sx, sy, "{} ↔ {} ({:?})", &x.name, &y.name, how);
            }
        }
    }
}
