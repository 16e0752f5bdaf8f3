//! Every file in the shared fixtures either passes validation or fails with its specific reason,
//! and the analysis reports concrete facts of the real exports.

mod common;

use std::path::{Path, PathBuf};

use common::{analyze, backend, data, fixture, fixtures_dir, version_hints};
use trtmc_analyze::analysis::{Backend, CountSource, Level, Mode, Status};
use trtmc_analyze::{AnalyzeError, Inputs, Request};

fn top_layer(b: &Backend) -> (&str, f64) {
    let l = &b.layers[b.hot_layers[0] as usize];
    (
        l.name.as_str(),
        l.timing.as_ref().map(|t| t.percentage).unwrap_or(-1.0),
    )
}

fn type_share(b: &Backend, ty: &str) -> f64 {
    let bd = b.breakdowns.as_ref().expect("breakdowns");
    bd.by_type
        .iter()
        .find(|x| x.name == ty)
        .and_then(|x| x.percentage)
        .unwrap_or(0.0)
}

fn errors(b: &Backend) -> Vec<&str> {
    b.validation
        .messages
        .iter()
        .filter(|m| m.level == Level::Error)
        .map(|m| m.message.as_str())
        .collect()
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn trex_folder_reads_every_backend_with_its_facts() {
    let a = analyze(Inputs::Folder(fixtures_dir().join("trex")));
    assert_eq!(a.backends.len(), 7);
    assert!(
        a.backends
            .iter()
            .all(|b| b.validation.analysis_mode == Mode::LayerProfile && b.passed())
    );

    // (label, layers, count, Σ averageMs, top layer, top %, top type, its %)
    let expected = [
        (
            "mobilenet-qat-titanrtx",
            73,
            6610,
            0.4704,
            "features.15.conv.2.weight + QuantizeLinear_722 + Conv_726 + Add_728",
            3.497,
            "CaskConvolution",
            63.41,
        ),
        (
            "mobilenet-qat-titanrtx-trt82",
            85,
            4216,
            0.6471,
            "features.16.conv.2.weight + QuantizeLinear_771 + Conv_775 + Add_777",
            2.688,
            "Scale",
            19.74,
        ),
        (
            "resnet18-pt-a100-fp16",
            36,
            1,
            1.0168,
            "Conv_0 + Relu_1",
            10.977,
            "CaskConvolution",
            84.29,
        ),
        (
            "resnet18-pt-a100-fp32",
            32,
            1,
            2.1238,
            "Conv_0 + Relu_1",
            24.59,
            "CaskConvolution",
            93.01,
        ),
        (
            "resnet18-pt-a100-qat",
            37,
            1,
            1.0957,
            "conv1.weight + QuantizeLinear_7 + Conv_9",
            18.411,
            "Reformat",
            25.42,
        ),
        (
            "resnet18-pt-a100-qat-residual",
            26,
            1,
            0.7311,
            "QuantizeLinear_2",
            13.025,
            "ConvActPool",
            9.94,
        ),
        (
            "resnet18-pt-a100-qat-residual-qgap",
            24,
            1,
            0.6728,
            "QuantizeLinear_2",
            14.155,
            "ConvActPool",
            10.65,
        ),
    ];
    for (label, layers, count, sum_avg, top, top_pct, ty, ty_pct) in expected {
        let b = backend(&a, label);
        assert_eq!(b.layer_count, layers, "{label}");
        assert_eq!(b.count, Some(count), "{label}");
        assert_eq!(b.count_source, CountSource::ProfileHeader, "{label}");
        let t = b.timing.as_ref().expect("timing");
        assert!(
            close(t.average_inference_ms, sum_avg, 5e-4),
            "{label}: {}",
            t.average_inference_ms
        );
        assert!(
            close(t.total_percentage, 100.0, 0.1),
            "{label}: {}",
            t.total_percentage
        );
        let (name, pct) = top_layer(b);
        assert_eq!(name, top, "{label}");
        assert!(close(pct, top_pct, 0.01), "{label}: {pct}");
        assert!(
            close(type_share(b, ty), ty_pct, 0.01),
            "{label}: {ty} {}",
            type_share(b, ty)
        );
        assert!(b.graph.as_ref().expect("graph").is_dag, "{label}");
        assert_eq!(
            b.model.as_ref().expect("model").category.category,
            "CNN / convolutional vision model",
            "{label}"
        );
        assert!(
            b.end_to_end.as_ref().is_none_or(|t| t.iterations > 1000),
            "{label}"
        );
    }
    // The TensorRT 8.2-era export is recognised as such.
    let old = backend(&a, "mobilenet-qat-titanrtx-trt82");
    let export = old.export.as_ref().expect("export");
    assert_eq!(export.profile_has_median, Some(false));
    assert_eq!(
        export.era.as_ref().expect("era").label,
        "TensorRT 8.2 or older",
        "{:?}",
        export.era
    );
    assert!(
        export
            .version_hints
            .iter()
            .any(|h| h.contains("Q/DQ appears as Scale")),
        "{:?}",
        export.version_hints
    );
    // fp16 end-to-end times come from the .timing.json next to it.
    let fp16 = backend(&a, "resnet18-pt-a100-fp16");
    let e2e = fp16.end_to_end.as_ref().expect("timing.json read");
    assert_eq!(e2e.iterations, 3698);
    // The fp32 engine's 24.6% first convolution is ranked as a hotspot with its evidence.
    let fp32 = backend(&a, "resnet18-pt-a100-fp32");
    let hot = fp32
        .findings
        .issues
        .iter()
        .find(|i| i.id == "hotspot")
        .expect("hotspot issue");
    assert_eq!(hot.title, "Single-layer hotspot");
    assert!(
        hot.evidence[0].contains("Conv_0 + Relu_1") && hot.evidence[0].contains("24.6%"),
        "{:?}",
        hot.evidence
    );
    // The QAT engine's Q/DQ and reformat time is called out.
    let qat = backend(&a, "resnet18-pt-a100-qat");
    assert!(
        qat.findings
            .issues
            .iter()
            .any(|i| i.id == "reformat_overhead" || i.id == "qdq_overhead"),
        "{:?}",
        qat.findings.issues
    );
}

#[test]
fn trex_comparisons_group_builds_of_one_model() {
    let a = analyze(Inputs::Folder(fixtures_dir().join("trex")));
    let resnet = a
        .comparisons
        .iter()
        .find(|c| c.model.as_deref() == Some("resnet18"))
        .expect("resnet18 group");
    assert_eq!(
        resnet.backends,
        [
            "resnet18-pt-a100-fp16",
            "resnet18-pt-a100-fp32",
            "resnet18-pt-a100-qat"
        ]
    );
    let fp32 = resnet
        .totals
        .iter()
        .find(|t| t.label == "resnet18-pt-a100-fp32")
        .expect("fp32 row");
    assert!(
        close(fp32.delta_ms.expect("delta"), 2.1238 - 1.0168, 1e-3),
        "{:?}",
        fp32.delta_ms
    );
    let pair = &resnet.pairs[0];
    assert_eq!(pair.b, "resnet18-pt-a100-fp32");
    assert!(pair.matched_by_name >= 20, "{}", pair.matched_by_name);
    assert!(
        pair.precision_changes >= 20,
        "fp16 → fp32 changes precision: {}",
        pair.precision_changes
    );
    assert!(
        pair.changes
            .iter()
            .any(|c| c.contains("Conv_0 + Relu_1") && c.contains("FP16 → FP32")),
        "{:?}",
        pair.changes
    );
    // Rows cover every layer of both builds exactly once.
    let a_rows = pair.rows.iter().filter(|r| r.a.is_some()).count();
    let b_rows = pair.rows.iter().filter(|r| r.b.is_some()).count();
    assert_eq!((a_rows, b_rows), (36, 32));
}

#[test]
fn trtexec_other_folder_handles_myelin_kgen_and_names_only() {
    let a = analyze(Inputs::Folder(fixtures_dir().join("trtexec-other")));
    assert_eq!(a.backends.len(), 4);

    // ControlNet: one tensor with two writers does not reject the real engine; it is evidence.
    let cn = backend(&a, "controlnet-sd15-trt86");
    assert_eq!(
        (cn.validation.status, cn.validation.analysis_mode),
        (Status::Passed, Mode::LayerProfile)
    );
    assert_eq!((cn.layer_count, cn.count), (389, Some(175)));
    let g = cn.graph.as_ref().expect("graph");
    assert!(g.is_dag);
    assert_eq!(g.multi_writers.len(), 1);
    assert_eq!(g.multi_writers[0].tensor, "/Concat_output_0");
    let warn = cn
        .validation
        .messages
        .iter()
        .find(|m| m.code == "multi_writer")
        .expect("multi-writer evidence");
    assert!(
        warn.level == Level::Warning
            && warn.message.contains("PWN(/Sin)")
            && warn.message.contains("PWN(/Cos)"),
        "{}",
        warn.message
    );
    assert_eq!(cn.engines.as_ref().expect("engines").myelin_regions, 7);
    assert!(close(type_share(cn, "Myelin"), 38.90, 0.01));
    let model = cn.model.as_ref().expect("model");
    assert_eq!(model.category.category, "Diffusion / U-Net style model");
    assert!(a.model.components.contains(&"controlnet".to_owned()));

    // MNIST on TensorRT 10.x: kgen/gemm layers, no profile → layer_only.
    for label in ["mnist-cnn-trt10.14-rtx6000ada", "mnist-cnn-trt10.16-h100"] {
        let b = backend(&a, label);
        assert_eq!(
            (b.validation.status, b.validation.analysis_mode),
            (Status::Passed, Mode::LayerOnly),
            "{label}"
        );
        assert!(!b.validation.latency_interpretation);
        assert_eq!(b.layer_count, 9);
        let kgen = b.layers.iter().filter(|l| &*l.raw_type == "kgen").count();
        assert_eq!(kgen, 4, "{label}");
        assert!(version_hints(b).iter().any(|h| h.contains("TensorRT 10")));
        assert!(
            b.findings.issues.iter().all(|i| i.id != "hotspot"),
            "no latency interpretation without a profile"
        );
    }
    let mnist = a
        .comparisons
        .iter()
        .find(|c| c.model.as_deref() == Some("mnist-cnn"))
        .expect("mnist comparison");
    let pair = &mnist.pairs[0];
    assert_eq!(
        (
            pair.matched_by_name,
            pair.matched_by_origin,
            pair.unmatched_a,
            pair.unmatched_b
        ),
        (8, 1, 0, 0)
    );
    assert_eq!(pair.tactic_changes, 4);
    assert!(
        pair.changes
            .iter()
            .any(|c| c.contains("DivMulTopk") && c.contains("DivMulMaxr")),
        "{:?}",
        pair.changes
    );

    // Names only: layer_only with a clear reason, not unusable.
    let yolo = backend(&a, "yolo-qat-int8-orin-trt85-namesonly");
    assert_eq!(
        (yolo.validation.status, yolo.validation.analysis_mode),
        (Status::Passed, Mode::LayerOnly)
    );
    assert_eq!((yolo.layer_count, yolo.count), (86, Some(11)));
    assert!(
        yolo.validation
            .messages
            .iter()
            .any(|m| m.code == "names_only" && m.message.contains("--profilingVerbosity=detailed"))
    );
    assert!(yolo.graph.is_none());
    let (name, pct) = top_layer(yolo);
    assert_eq!(
        name,
        "{ForeignNode[/head/Constant_2_output_0.../Unsqueeze_2]}"
    );
    assert!(close(pct, 28.03, 0.01));
}

fn explicit(rel: &str) -> trtmc_analyze::Analysis {
    analyze(data(&fixture(rel), None))
}

fn failure_reason(rel: &str) -> String {
    let a = explicit(rel);
    let b = &a.backends[0];
    assert_eq!(
        (b.validation.status, b.validation.analysis_mode),
        (Status::Failed, Mode::Unusable),
        "{rel}"
    );
    errors(b).join(" | ")
}

/// What each fixture file is, and what analyzing it as a layer-info file must say.
fn expectation(rel: &str) -> Option<&'static str> {
    let name = Path::new(rel).file_name()?.to_str()?;
    Some(if name == "SOURCES.md" || name == "README.md" {
        "invalid JSON at line 1"
    } else if name.ends_with(".log") {
        "trtexec text log"
    } else if name.ends_with(".timing.json") {
        "--exportTimes"
    } else if name.ends_with(".profile.json") {
        "--exportProfile"
    } else if name.ends_with(".build.metadata.json") || name.ends_with(".profile.metadata.json") {
        "TREx metadata"
    } else if name.ends_with(".device.metadata.json") {
        "device metadata"
    } else if name == "analyze-data.schema.json" {
        "JSON Schema"
    } else if name.contains("helpBuildRoute") {
        "helpBuildRoute"
    } else if name.ends_with(".layers.json") || name.contains("exportLayerInfo") {
        "PASS"
    } else {
        return None;
    })
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read fixtures").flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out)
        } else {
            out.push(p)
        }
    }
}

#[test]
fn every_fixture_file_passes_or_fails_for_its_specific_reason() {
    let root = fixtures_dir();
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    assert!(
        files.len() >= 60,
        "expected the full fixture set, found {}",
        files.len()
    );
    for path in files {
        let rel = path
            .strip_prefix(&root)
            .expect("inside")
            .to_string_lossy()
            .replace('\\', "/");
        let want = expectation(&rel)
            .unwrap_or_else(|| panic!("no expectation for fixture {rel}: add one to this test"));
        if want == "PASS" {
            let a = explicit(&rel);
            let b = &a.backends[0];
            assert!(b.passed(), "{rel}: {:?}", errors(b));
            let names_only = rel.contains("names") || rel.contains("namesonly");
            let want_mode = Mode::LayerOnly;
            assert_eq!(b.validation.analysis_mode, want_mode, "{rel}");
            assert_eq!(
                b.export
                    .as_ref()
                    .map(|e| e.verbosity == trtmc_analyze::read::Verbosity::NamesOnly),
                Some(names_only),
                "{rel}"
            );
        } else {
            let reason = failure_reason(&rel);
            assert!(
                reason.contains(want),
                "{rel}: expected a reason mentioning {want:?}, got {reason:?}"
            );
            assert!(
                reason.contains(&rel.rsplit('/').next().unwrap_or_default().to_owned()),
                "{rel}: the reason names the file: {reason}"
            );
        }
    }
}

#[test]
fn folders_without_direct_inputs_are_refused_with_a_reason() {
    let err = trtmc_analyze::analyze(&Request {
        inputs: Inputs::Folder(fixtures_dir().join("trtexec-logs")),
        model_name: None,
    })
    .expect_err("no naming-scheme files");
    let msg = err.to_string();
    assert!(matches!(err, AnalyzeError::Discover(_)));
    assert!(
        msg.contains("--data") && msg.contains("trt10.16_exportLayerInfo_detailed.json"),
        "{msg}"
    );

    // The fixtures root only holds component-like folders with inputs: one report per folder.
    let err = trtmc_analyze::analyze(&Request {
        inputs: Inputs::Folder(fixtures_dir()),
        model_name: None,
    })
    .expect_err("parent refused");
    let msg = err.to_string();
    assert!(
        msg.contains("trex")
            && msg.contains("trtexec-other")
            && msg.contains("one report per component"),
        "{msg}"
    );
}

#[test]
fn explicit_pairs_and_model_name() {
    let dir = fixtures_dir().join("trex");
    let a = trtmc_analyze::analyze(&Request {
        inputs: Inputs::Data(vec![
            trtmc_analyze::DataSpec {
                layers: dir.join("resnet18-pt-a100-fp16.layers.json"),
                profile: Some(dir.join("resnet18-pt-a100-fp16.profile.json")),
                times: Some(dir.join("resnet18-pt-a100-fp16.timing.json")),
                label: None,
            },
            trtmc_analyze::DataSpec {
                layers: dir.join("resnet18-pt-a100-fp32.layers.json"),
                profile: None,
                times: None,
                label: None,
            },
        ]),
        model_name: Some("ResNet-18 (torchvision)".to_owned()),
    })
    .expect("analysis");
    // The name is kept as typed; the normalised id sits beside it.
    assert_eq!(a.model.name.as_deref(), Some("ResNet-18 (torchvision)"));
    assert_eq!(a.model.id.as_deref(), Some("resnet-18-torchvision"));
    assert_eq!(a.model.evidence, ["explicit --model-name"]);
    assert_eq!(a.backends[0].validation.analysis_mode, Mode::LayerProfile);
    assert_eq!(a.backends[1].validation.analysis_mode, Mode::LayerOnly);
    let fact = a.backends[0]
        .findings
        .facts
        .iter()
        .find(|f| f.contains("--exportTimes"))
        .expect("e2e fact");
    assert!(fact.contains("3698 iterations"), "{fact}");
    // One comparison because the model is named.
    assert_eq!(a.comparisons.len(), 1);
}

#[test]
fn mismatched_profile_fails_with_the_names_listed() {
    let dir = fixtures_dir().join("trex");
    let a = analyze(data(
        &dir.join("resnet18-pt-a100-fp16.layers.json"),
        Some(&dir.join("resnet18-pt-a100-fp32.profile.json")),
    ));
    let b = &a.backends[0];
    assert_eq!(b.validation.analysis_mode, Mode::Unusable);
    let e = errors(b).join(" ");
    assert!(
        e.contains("missing from the profile") && e.contains("Reformatting CopyNode"),
        "{e}"
    );
    assert!(
        e.contains("--data LAYERS"),
        "says how to get a layer-only analysis: {e}"
    );
}

#[test]
fn profile_without_layers_is_unusable_with_the_fix() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        fixture("trex/resnet18-pt-a100-fp16.profile.json"),
        dir.path().join("profile_trt.json"),
    )
    .expect("copy");
    let a = analyze(Inputs::Folder(dir.path().to_owned()));
    let e = errors(&a.backends[0]).join(" ");
    assert!(
        e.contains("no layer-info file") && e.contains("--profilingVerbosity=detailed"),
        "{e}"
    );
    assert_eq!(a.backends[0].profile_count, Some(36));
}

#[test]
fn large_exports_read_on_two_threads_keep_order_and_totals() {
    // 150 chained copies of the ResNet18 fp16 engine: 5,400 layers, above the two-thread threshold.
    let dir = tempfile::tempdir().expect("tempdir");
    let src = fixtures_dir().join("trex");
    let layers: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(src.join("resnet18-pt-a100-fp16.layers.json")).expect("read"),
    )
    .expect("json");
    let profile: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(src.join("resnet18-pt-a100-fp16.profile.json")).expect("read"),
    )
    .expect("json");
    let copies = 150;
    let mut all_layers = Vec::new();
    let mut all_records = vec![profile[0].clone()];
    for c in 0..copies {
        for l in layers["Layers"].as_array().expect("layers") {
            let mut l = l.clone();
            l["Name"] = format!("c{c}/{}", l["Name"].as_str().expect("name")).into();
            for key in ["Inputs", "Outputs"] {
                for t in l[key].as_array_mut().expect("tensors") {
                    t["Name"] = format!("c{c}/{}", t["Name"].as_str().expect("tensor")).into();
                }
            }
            all_layers.push(l);
        }
        for r in profile.as_array().expect("profile").iter().skip(1) {
            let mut r = r.clone();
            r["name"] = format!("c{c}/{}", r["name"].as_str().expect("name")).into();
            r["percentage"] = (r["percentage"].as_f64().expect("pct") / copies as f64).into();
            all_records.push(r);
        }
    }
    let expected_names: Vec<String> = all_layers
        .iter()
        .map(|l| l["Name"].as_str().expect("name").to_owned())
        .collect();
    std::fs::write(
        dir.path().join("layers_big.json"),
        serde_json::json!({ "Layers": all_layers }).to_string(),
    )
    .expect("write");
    std::fs::write(
        dir.path().join("profile_big.json"),
        serde_json::Value::Array(all_records).to_string(),
    )
    .expect("write");

    let a = analyze(Inputs::Folder(dir.path().to_owned()));
    let b = &a.backends[0];
    assert_eq!(
        b.validation.analysis_mode,
        Mode::LayerProfile,
        "{:?}",
        errors(b)
    );
    assert_eq!(b.layer_count, 36 * copies);
    let names: Vec<&str> = b.layers.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        expected_names
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        "order is kept across the two halves"
    );
    assert!(
        b.layers
            .iter()
            .enumerate()
            .all(|(i, l)| l.index as usize == i)
    );
    assert_eq!(
        b.layers
            .iter()
            .filter(|l| &*l.raw_type == "CaskConvolution")
            .count(),
        21 * copies
    );
    assert!(close(
        b.timing.as_ref().expect("timing").average_inference_ms,
        1.0168 * copies as f64,
        0.1
    ));
    let model = b.model.as_ref().expect("model");
    assert_eq!(model.category.category, "CNN / convolutional vision model");
    assert!(
        model.category.evidence[0].starts_with(&format!(
            "{} of {} layers are convolutions",
            21 * copies,
            36 * copies
        )),
        "{:?}",
        model.category.evidence
    );
    // Each copy's graph is separate: 150 copies of 43 edges.
    assert_eq!(b.graph.as_ref().expect("graph").edge_count, 43 * copies);
    // The layer records are written on two threads at this size: still serde_json's bytes.
    let mut ours = Vec::new();
    a.write_json(&mut ours).expect("write analysis");
    assert!(
        ours == serde_json::to_vec(&a).expect("serialize"),
        "analysis.json written on two threads differs from serde_json's"
    );
}

/// The fp16 ResNet18 profile with `from` replaced by `to` once (the records are trtexec's
/// one-per-line layout, so the text edit hits one record).
fn edited_profile(dir: &Path, from: &str, to: &str) -> PathBuf {
    let text = std::fs::read_to_string(fixture("trex/resnet18-pt-a100-fp16.profile.json"))
        .expect("profile");
    assert!(text.contains(from), "{from} not in the profile");
    let out = dir.join("edited.profile.json");
    std::fs::write(&out, text.replacen(from, to, 1)).expect("write");
    out
}

/// Issue 36: a negative or non-finite time is an error that names the layer, and the backend
/// fails validation instead of passing with a nonsense share.
#[test]
fn negative_or_non_finite_times_fail_naming_the_layer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let layers = fixture("trex/resnet18-pt-a100-fp16.layers.json");
    let text = std::fs::read_to_string(fixture("trex/resnet18-pt-a100-fp16.profile.json"))
        .expect("profile");
    // The MaxPool record's averageMs, whatever its digits.
    let line = text
        .lines()
        .find(|l| l.contains("\"name\" : \"MaxPool_2\""))
        .expect("MaxPool_2 record");
    let avg = line
        .split("\"averageMs\" : ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .expect("averageMs")
        .trim()
        .to_owned();
    for (bad, what) in [
        (format!("-{avg}"), "negative `averageMs`"),
        ("nan".to_owned(), "not a finite number"),
    ] {
        let edited = line.replace(
            &format!("\"averageMs\" : {avg}"),
            &format!("\"averageMs\" : {bad}"),
        );
        let profile = edited_profile(dir.path(), line, &edited);
        let a = analyze(data(&layers, Some(&profile)));
        let b = &a.backends[0];
        assert_eq!(b.validation.status, Status::Failed, "{bad}");
        assert!(b.timing.is_none(), "{bad}: no timing from a broken profile");
        let errs = errors(b);
        assert!(
            errs.iter()
                .any(|e| e.contains("MaxPool_2") && e.contains(what)),
            "{bad}: {errs:?}"
        );
    }
}

/// Issue 36: the model name comes from the layer names' common top scope before the folder's
/// name (a comparison folder is named for the comparison).
#[test]
fn the_model_name_comes_from_the_layer_names_before_the_folder() {
    let work = tempfile::tempdir().expect("tempdir");
    let dir = work.path().join("pair");
    std::fs::create_dir(&dir).expect("mkdir");
    let mut doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("trex/resnet18-pt-a100-fp16.layers.json")).expect("read"),
    )
    .expect("json");
    let copy = "Reformatting CopyNode for ";
    for l in doc["Layers"].as_array_mut().expect("layers") {
        let name = l["Name"].as_str().expect("name").to_owned();
        let new = match name.strip_prefix(copy).and_then(|r| r.split_once(" to ")) {
            Some((head, consumer)) => format!("{copy}{head} to resnet50/{consumer}"),
            None => format!("resnet50/{name}"),
        };
        l["Name"] = serde_json::json!(new);
    }
    let layers = dir.join("layers_fp16.json");
    std::fs::write(&layers, doc.to_string()).expect("write");
    let a = analyze(data(&layers, None));
    assert_eq!(a.model.name.as_deref(), Some("resnet50"), "{:?}", a.model);
    assert!(
        a.model
            .evidence
            .iter()
            .any(|e| e.contains("start with `resnet50/`")),
        "{:?}",
        a.model.evidence
    );
    // Without the common scope the folder names it, as before.
    let plain = dir.join("layers_fp32.json");
    std::fs::copy(fixture("trex/resnet18-pt-a100-fp32.layers.json"), &plain).expect("copy");
    assert_eq!(
        analyze(data(&plain, None)).model.name.as_deref(),
        Some("pair")
    );
}

/// Issue 36: the baseline is the first `--data` given (said so), and `--baseline LABEL` picks
/// another; an unknown label is refused with the labels there are.
#[test]
fn the_baseline_is_the_first_data_given_or_the_one_chosen() {
    let dir = fixtures_dir().join("trex");
    let spec = |stem: &str| trtmc_analyze::DataSpec {
        layers: dir.join(format!("{stem}.layers.json")),
        profile: Some(dir.join(format!("{stem}.profile.json"))),
        times: None,
        label: None,
    };
    let request = Request {
        inputs: Inputs::Data(vec![
            spec("resnet18-pt-a100-qat"),
            spec("resnet18-pt-a100-fp16"),
        ]),
        model_name: None,
    };
    let a = trtmc_analyze::analyze(&request).expect("analysis");
    let c = &a.comparisons[0];
    assert_eq!(
        c.baseline, "resnet18-pt-a100-qat",
        "not alphabetical: the first given"
    );
    assert_eq!(c.baseline_reason, "the first --data given");
    let chosen = trtmc_analyze::analyze_with(
        &request,
        &trtmc_analyze::Options {
            baseline: Some("resnet18-pt-a100-fp16".to_owned()),
        },
    )
    .expect("analysis");
    let c = &chosen.comparisons[0];
    assert_eq!(c.baseline, "resnet18-pt-a100-fp16");
    assert_eq!(c.baseline_reason, "chosen with --baseline");
    assert_eq!(c.pairs[0].b, "resnet18-pt-a100-qat");
    let wrong = trtmc_analyze::analyze_with(
        &request,
        &trtmc_analyze::Options {
            baseline: Some("int8".to_owned()),
        },
    );
    match wrong {
        Err(e @ AnalyzeError::UnknownBaseline { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("\"int8\"") && msg.contains("resnet18-pt-a100-fp16"),
                "{msg}"
            );
        }
        other => panic!("expected UnknownBaseline, got {:?}", other.map(|_| ())),
    }
}
