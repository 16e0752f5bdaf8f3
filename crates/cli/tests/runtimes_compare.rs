//! Output agreement (`trtmc-bench compare`): tract against ONNX Runtime on the embedded models and on
//! light_resnet50 with seeded random weights, golden files, and the failure path. Needs the `onnx` and
//! `onnxruntime` Python wheels (scripts/test installs them).
//!
//! Stated tolerances: every output element within |a - r| <= 1e-4 + 1e-3·|r| (l0 = 0), and cosine
//! loss below 1e-6.

use std::path::Path;
use std::process::Output;

use crate::common::*;

fn bench(tmp: &Path, args: &[&str]) -> Output {
    bench_cached(&tmp.join("cache"), args)
}

/// Compares tract (candidate) with onnxruntime (reference) and returns the agreement document.
fn agree(tmp: &Path, model: &str, extra: &[&str]) -> serde_json::Value {
    let report = tmp.join(format!("{model}.json"));
    let mut args = vec![
        "compare",
        "--model",
        model,
        "--runtime",
        "tract",
        "--against",
        "onnxruntime",
        "-o",
        report.to_str().expect("utf8"),
    ];
    args.extend(extra);
    let out = bench(tmp, &args);
    assert_eq!(code(&out), 0, "{model}: {}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("outputs agree"), "{}", stdout(&out));
    let doc = read_json(&report);
    assert_valid("output-agreement.schema.json", &doc);
    assert_eq!(doc["passed"], true);
    assert!(
        doc["candidate"]
            .as_str()
            .expect("candidate")
            .starts_with("tract ")
    );
    assert!(
        doc["reference"]
            .as_str()
            .expect("reference")
            .starts_with("onnxruntime 1.")
    );
    for t in doc["tensors"].as_array().expect("tensors") {
        assert_eq!(t["losses"]["l0"], 0.0, "{model} {}: {t}", t["name"]);
        assert!(
            t["losses"]["cos"].as_f64().expect("cos") < 1e-6,
            "{model}: {t}"
        );
        assert!(
            t["losses"]["lInf"].as_f64().expect("lInf") < 1e-3,
            "{model}: {t}"
        );
    }
    doc
}

#[test]
fn tract_and_onnxruntime_agree_on_the_embedded_models() {
    let tmp = tempfile::tempdir().expect("tmp");
    let cnn = agree(tmp.path(), "tiny-cnn", &[]);
    assert_eq!(cnn["tensors"][0]["shape"], serde_json::json!([1, 10]));
    let encoder = agree(tmp.path(), "tiny-encoder", &[]);
    assert!(!encoder["tensors"].as_array().expect("tensors").is_empty());
    // tiny-gpt's cache dimensions are bound for one chunk of 4 tokens on top of 4 cached ones.
    let gpt = agree(
        tmp.path(),
        "tiny-gpt",
        &["--dim", "seq=4", "--dim", "past=4", "--dim", "total=8"],
    );
    let names: Vec<&str> = gpt["tensors"]
        .as_array()
        .expect("tensors")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert!(
        names.contains(&"logits") && names.iter().any(|n| n.starts_with("present.")),
        "{names:?}"
    );
    // Without the dimensions the synthesis says which ones are missing.
    let out = compare_model(
        tmp.path(),
        "tiny-gpt",
        "tract",
        &["--against", "onnxruntime"],
    );
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unbound dimensions") && stderr(&out).contains("--dim"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn tract_and_onnxruntime_agree_on_light_resnet50_with_seeded_random_weights() {
    let tmp = tempfile::tempdir().expect("tmp");
    let doc = agree(tmp.path(), "light-resnet50-rand", &[]);
    let softmax = &doc["tensors"][0];
    assert_eq!(softmax["shape"], serde_json::json!([1, 1000]));
    // With random weights the outputs are not one constant, so the agreement means something.
    let saved = tmp.path().join("saved");
    let out = compare_model(
        tmp.path(),
        "light-resnet50-rand",
        "onnxruntime",
        &["--save-outputs", saved.to_str().expect("utf8")],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let outputs =
        trtmc_tune::golden::read_golden(&saved.join("onnxruntime/outputs.json")).expect("golden");
    let values = &outputs[0].values;
    let spread = values.iter().cloned().fold(f64::MIN, f64::max)
        - values.iter().cloned().fold(f64::MAX, f64::min);
    assert!(
        spread > 1e-4,
        "the random-weight model's outputs vary (spread {spread})"
    );
}

#[test]
fn golden_files_round_trip_and_a_disagreement_fails_with_exit_5() {
    let tmp = tempfile::tempdir().expect("tmp");
    let golden = tmp.path().join("golden");
    let out = compare_model(
        tmp.path(),
        "tiny-cnn",
        "tract",
        &["--save-outputs", golden.to_str().expect("utf8")],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let index = golden.join("tract/outputs.json");
    // ONNX Runtime against tract's saved outputs: the same seeded inputs, so they agree.
    let out = compare_model(
        tmp.path(),
        "tiny-cnn",
        "onnxruntime",
        &["--golden", index.to_str().expect("utf8")],
    );
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    // Other inputs (another seed) give other logits: a disagreement, exit 5, naming the tensor.
    let report = tmp.path().join("differ.json");
    let out = compare_model(
        tmp.path(),
        "tiny-cnn",
        "onnxruntime",
        &[
            "--seed",
            "99",
            "--golden",
            index.to_str().expect("utf8"),
            "-o",
            report.to_str().expect("utf8"),
        ],
    );
    assert_refused(&out, 5, "disagree on logits");
    assert!(stdout(&out).contains("DIFFER"), "{}", stdout(&out));
    let doc = read_json(&report);
    assert_valid("output-agreement.schema.json", &doc);
    assert_eq!(doc["passed"], false);
    assert!(doc["tensors"][0]["losses"]["l0"].as_f64().expect("l0") > 0.5);
    // Nothing to compare and nothing to save is a usage error.
    let out = bench(tmp.path(), &["compare", "--model", "tiny-cnn"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}
