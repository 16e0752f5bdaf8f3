//! The Python reference runners (`reference/`): the same resolved case (same inputs written by trtmc,
//! warm-ups, iterations, seed) in their own process, answering in the worker's observation protocol.
//! Needs python3 with numpy and the `onnxruntime` wheel (scripts/test installs them).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;
use trtmc_runtime::reference::{ReferenceRequest, ReferenceResult};

fn python(script: &str, request: &Path, result: &Path) -> Output {
    let python = std::env::var("TRTMC_PYTHON").unwrap_or_else(|_| "python3".into());
    Command::new(python)
        .arg(repo_root().join("reference").join(script))
        .arg(request)
        .arg(result)
        .output()
        .expect("start python3")
}

/// Saves tiny-cnn's inputs and reference request (ONNX Runtime in the worker wrote them) and returns
/// the request path, with fewer iterations for the test.
fn prepared(tmp: &Path) -> PathBuf {
    let dir = tmp.join("ref");
    let out = compare_model(
        tmp,
        "tiny-cnn",
        "onnxruntime",
        &["--save-inputs", dir.to_str().expect("utf8")],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let path = dir.join("reference-request.json");
    let mut doc = read_json(&path);
    assert_valid("reference-request.schema.json", &doc);
    assert_eq!(doc["operation"], "classify");
    assert_eq!(doc["seed"], 7, "the case's own seed");
    assert_eq!(doc["precision"], "fp32");
    assert_eq!(doc["iterations"], 500, "the case's resolved iterations");
    doc["iterations"] = 20.into();
    doc["warmup"] = 3.into();
    // A default case keeps timing for 1 s (the stopping rule): exactly 20 calls here.
    doc["min_duration_s"] = 0.0.into();
    std::fs::write(&path, doc.to_string()).expect("write");
    path
}

fn edit(path: &Path, f: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    let mut doc = read_json(path);
    f(&mut doc);
    let edited = path.with_file_name(format!("edited-{}.json", std::process::id()));
    std::fs::write(&edited, doc.to_string()).expect("write");
    edited
}

#[test]
fn the_onnxruntime_reference_runs_the_same_case_and_its_outputs_match_ours() {
    let tmp = tempfile::tempdir().expect("tmp");
    let request_path = prepared(tmp.path());
    let py_out = tmp.path().join("py-out");
    let request_path = edit(&request_path, |d| {
        d["save_outputs"] = py_out.display().to_string().into()
    });
    let result_path = tmp.path().join("result.json");
    let out = python("ort_reference.py", &request_path, &result_path);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = read_json(&result_path);
    assert_valid("reference-result.schema.json", &doc);
    let request: ReferenceRequest =
        serde_json::from_value(read_json(&request_path)).expect("request");
    let result = ReferenceResult::read_checked(&result_path, &request).expect("the contract holds");
    assert_eq!(result.observations.len(), 20);
    assert_eq!(result.warmup_ms.len(), 3);
    assert_eq!(result.boundary, "public_pipeline_call_wall");
    assert_eq!(result.precision.as_deref(), Some("fp32"));
    assert!(result.observations.iter().all(|o| o.wall_ns > 0));
    assert!(
        result
            .observations
            .windows(2)
            .all(|w| w[0].start_ns < w[1].start_ns)
    );
    // The reference saw the same inputs: its outputs agree with ours element for element.
    let out = compare_model(
        tmp.path(),
        "tiny-cnn",
        "onnxruntime",
        &[
            "--golden",
            py_out.join("outputs.json").to_str().expect("utf8"),
            "--atol",
            "0",
            "--rtol",
            "1e-6",
        ],
    );
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));

    // The same golden outputs as NumPy files (.npz with one member per output, .npy named after the
    // output), against tract this time: golden data in every format the issue names.
    let script = "import sys, numpy as np\nsys.path.insert(0, sys.argv[1])\nimport trtmc_reference as ref\nt = ref.read_tensor_set(sys.argv[2], 'outputs')\nnp.savez(sys.argv[3], **dict(t))\nnp.save(sys.argv[4], t[0][1])\n";
    let npz = tmp.path().join("golden.npz");
    let npy = tmp.path().join("logits.npy");
    let converted =
        Command::new(std::env::var("TRTMC_PYTHON").unwrap_or_else(|_| "python3".into()))
            .args(["-c", script])
            .arg(repo_root().join("reference"))
            .arg(py_out.join("outputs.json"))
            .arg(&npz)
            .arg(&npy)
            .output()
            .expect("start python3");
    assert_eq!(code(&converted), 0, "{}", stderr(&converted));
    for golden in [&npz, &npy] {
        let report = tmp.path().join("agreement.json");
        let out = compare_model(
            tmp.path(),
            "tiny-cnn",
            "tract",
            &[
                "--golden",
                golden.to_str().expect("utf8"),
                "-o",
                report.to_str().expect("utf8"),
            ],
        );
        assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
        let doc = read_json(&report);
        assert_valid("output-agreement.schema.json", &doc);
        assert_eq!(doc["tensors"][0]["name"], "logits");
        assert_eq!(doc["tensors"][0]["losses"]["l0"], 0.0, "{doc}");
    }
}

#[test]
fn precision_mismatches_and_non_finite_outputs_are_reference_failures() {
    let tmp = tempfile::tempdir().expect("tmp");
    let request_path = prepared(tmp.path());
    let result_path = tmp.path().join("result.json");

    let fp16 = edit(&request_path, |d| d["precision"] = "fp16".into());
    let out = python("ort_reference.py", &fp16, &result_path);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let doc = read_json(&result_path);
    assert_valid("reference-result.schema.json", &doc);
    assert_eq!(doc["status"], "error");
    assert_eq!(doc["precision"], "fp32", "what it ran at is recorded");
    assert!(
        doc["error"]
            .as_str()
            .expect("error")
            .contains("contract mismatch"),
        "{doc}"
    );
    let request: ReferenceRequest = serde_json::from_value(read_json(&fp16)).expect("request");
    assert!(ReferenceResult::read_checked(&result_path, &request).is_err());

    // NaN inputs make NaN logits: a failure, never a result. `classify` feeds the runner's per-call
    // image batches (operation-inputs.json), so that is where the NaN goes.
    let dir = request_path.parent().expect("dir");
    let calls = read_json(&dir.join("operation-inputs.json"));
    let bin = dir.join(
        calls["calls"][0]["tensors"][0]["file"]
            .as_str()
            .expect("file"),
    );
    let mut bytes = std::fs::read(&bin).expect("bin");
    bytes[..4].copy_from_slice(&f32::NAN.to_le_bytes());
    std::fs::write(&bin, bytes).expect("write");
    let out = python("ort_reference.py", &request_path, &result_path);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let doc = read_json(&result_path);
    assert_valid("reference-result.schema.json", &doc);
    assert!(
        doc["error"].as_str().expect("error").contains("non-finite"),
        "{doc}"
    );
    assert_eq!(doc["observations"], serde_json::json!([]));
}

#[test]
fn the_pytorch_reference_runs_where_torch_is_installed_and_says_how_to_install_it_elsewhere() {
    let tmp = tempfile::tempdir().expect("tmp");
    let request_path = prepared(tmp.path());
    let result_path = tmp.path().join("torch.json");
    let out = python("torch_reference.py", &request_path, &result_path);
    let doc = read_json(&result_path);
    assert_valid("reference-result.schema.json", &doc);
    let has_torch =
        Command::new(std::env::var("TRTMC_PYTHON").unwrap_or_else(|_| "python3".into()))
            .args(["-c", "import torch, onnx2torch"])
            .status()
            .is_ok_and(|s| s.success());
    if has_torch {
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(doc["status"], "ok");
        assert_eq!(doc["observations"].as_array().expect("obs").len(), 20);
    } else {
        assert_eq!(code(&out), 7, "{}", stderr(&out));
        assert!(
            doc["error"]
                .as_str()
                .expect("error")
                .contains("pip install torch onnx2torch"),
            "{doc}"
        );
    }
}
