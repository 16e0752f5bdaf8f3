//! `run --profile`: a separate per-layer profiling pass after the timed run, written in trtexec's
//! `--exportLayerInfo` / `--exportProfile` shapes, so that `analyze` reads a tract and an ONNX Runtime
//! profile of one model side by side. Needs the `onnxruntime` Python wheel (scripts/test installs it).

use std::path::{Path, PathBuf};

use crate::common::*;

/// Runs `model` on `runtime` with `--profile` and returns the case directory.
fn profiled_run(tmp: &Path, model: &str, runtime: &str, iterations: &str) -> PathBuf {
    let out_dir = tmp.join(format!("{model}-{runtime}"));
    let out = bench_cached(
        &tmp.join("cache"),
        &[
            "run",
            "--model",
            model,
            "--runtime",
            runtime,
            "--warmup",
            "2",
            "--iterations",
            iterations,
            "--profile",
            "--profile-iterations",
            "4",
            "-o",
            out_dir.to_str().expect("utf8"),
            "-q",
        ],
    );
    assert_eq!(code(&out), 0, "{model} on {runtime}: {}", stderr(&out));
    let doc = assert_result_dir_valid(&out_dir);
    let case = &doc["cases"][0];
    // The timed run is untouched by the profiler: exactly the requested observations, from worker.log's run.
    assert_eq!(
        case["measurement"]["observations"].as_u64(),
        iterations.parse::<u64>().ok()
    );
    let profile = &case["profile"];
    assert_eq!(profile["status"], "completed", "{profile}");
    assert_eq!(profile["iterations"], 4);
    let dir = out_dir.join(case["dir"].as_str().expect("dir"));
    assert_eq!(
        profile["layer_info"].as_str(),
        Some(
            format!(
                "{}/layers_{runtime}.json",
                case["dir"].as_str().expect("dir")
            )
            .as_str()
        )
    );
    assert!(
        dir.join("profile.log").is_file(),
        "the profiling pass has its own log"
    );
    assert!(
        !dir.join("profile-request.json").exists(),
        "intermediates are removed on success"
    );
    dir
}

fn check_exports(
    dir: &Path,
    runtime: &str,
    min_runs: u64,
) -> (serde_json::Value, serde_json::Value) {
    let layers = read_json(&dir.join(format!("layers_{runtime}.json")));
    let profile = read_json(&dir.join(format!("profile_{runtime}.json")));
    assert_valid("layer-info.schema.json", &layers);
    assert_valid("layer-profile.schema.json", &profile);
    let records = profile.as_array().expect("profile array");
    assert!(
        records[0]["count"].as_u64().expect("count") >= min_runs,
        "{}",
        records[0]
    );
    let names: Vec<&str> = layers["Layers"]
        .as_array()
        .expect("layers")
        .iter()
        .map(|l| l["Name"].as_str().expect("name"))
        .collect();
    let profiled: Vec<&str> = records[1..]
        .iter()
        .map(|r| r["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names, profiled,
        "{runtime}: layer and profile names line up"
    );
    let total: f64 = records[1..]
        .iter()
        .map(|r| r["percentage"].as_f64().expect("pct"))
        .sum();
    assert!(
        (total - 100.0).abs() < 1e-6,
        "{runtime}: percentages sum to {total}"
    );
    (layers, profile)
}

#[test]
fn tract_and_onnxruntime_profiles_of_one_model_pass_analyze_side_by_side() {
    let tmp = tempfile::tempdir().expect("tmp");
    let tract = profiled_run(tmp.path(), "tiny-cnn", "tract", "6");
    let ort = profiled_run(tmp.path(), "tiny-cnn", "onnxruntime", "6");
    let (tract_layers, _) = check_exports(&tract, "tract", 4);
    let (ort_layers, _) = check_exports(&ort, "onnxruntime", 4);
    assert!(
        tract_layers["Layers"]
            .as_array()
            .expect("layers")
            .iter()
            .any(|l| l["LayerType"]
                .as_str()
                .is_some_and(|t| t.contains("Conv") || t.contains("MatMul")))
    );
    assert!(
        ort_layers["Layers"]
            .as_array()
            .expect("layers")
            .iter()
            .all(|l| l["Provider"] == "CPUExecutionProvider")
    );
    assert_eq!(ort_layers["Bindings"][0], "image");
    assert!(
        ort.join("onnxruntime-trace.json").is_file(),
        "ORT's own trace is kept beside the exports"
    );

    let side_by_side = tmp.path().join("side-by-side");
    std::fs::create_dir(&side_by_side).expect("mkdir");
    for (dir, rt) in [(&tract, "tract"), (&ort, "onnxruntime")] {
        for kind in ["layers", "profile"] {
            let name = format!("{kind}_{rt}.json");
            std::fs::copy(dir.join(&name), side_by_side.join(&name)).expect("copy");
        }
    }
    let analysis = tmp.path().join("analysis.json");
    let doc = analyze_into(&side_by_side, &analysis);
    assert_valid("analysis.schema.json", &doc);
    let backends = doc["backends"].as_array().expect("backends");
    assert_eq!(backends.len(), 2);
    for b in backends {
        let v = &b["validation"];
        assert_eq!(v["status"], "passed", "{}: {v}", b["label"]);
        assert_eq!(v["analysis_mode"], "layer_profile", "{}: {v}", b["label"]);
        assert!(b["layer_count"].as_u64().expect("layers") > 3);
    }
    let labels: Vec<&str> = backends
        .iter()
        .map(|b| b["label"].as_str().expect("label"))
        .collect();
    assert!(
        labels.contains(&"tract") && labels.contains(&"onnxruntime"),
        "{labels:?}"
    );
    for b in backends {
        let rt = b["label"].as_str().expect("label");
        assert_cpu_backend(b, rt);
    }
    // Side by side, the package is titled for both runtimes (app.js runtimeTitle reads these).
    let names: Vec<&str> = backends
        .iter()
        .map(|b| b["runtime"]["display_name"].as_str().expect("name"))
        .collect();
    assert!(
        names.contains(&"tract") && names.contains(&"ONNX Runtime"),
        "{names:?}"
    );

    // Each run packaged its own profile, and its report.html links the package.
    for (dir, rt) in [(&tract, "tract"), (&ort, "onnxruntime")] {
        let out_dir = dir.parent().expect("result dir");
        let result = read_json(&out_dir.join("result.json"));
        let case = &result["cases"][0];
        let link = case["profile"]["report"].as_str().expect("profile.report");
        assert_eq!(
            link,
            format!(
                "{}/profile-report/index.html",
                case["dir"].as_str().expect("dir")
            )
        );
        assert!(out_dir.join(link).is_file(), "{rt}: {link} exists");
        let html = std::fs::read_to_string(out_dir.join("report.html")).expect("report.html");
        assert!(
            html.contains(&format!("href=\"{link}\"")),
            "{rt}: report.html links {link}"
        );
        // The package's data.js carries the analysis (layers packed; the rest as analysis.json).
        let data = std::fs::read_to_string(dir.join("profile-report/data.js")).expect("data.js");
        let packaged: serde_json::Value = serde_json::from_str(
            data.strip_prefix("window.TRTMC_REPORT = ")
                .and_then(|d| d.trim_end().strip_suffix(';'))
                .expect("data.js shape"),
        )
        .expect("data.js JSON");
        let packaged = &packaged["analysis"];
        let b = &packaged["backends"][0];
        assert_eq!(b["runtime"]["name"], rt, "{rt}");
        assert!(b["export"]["era"].is_null(), "{rt}: no TensorRT era");
        assert_eq!(
            b["model"]["category"], "CNN / convolutional vision model",
            "{rt}"
        );
        assert_eq!(packaged["model"]["name"], "tiny-cnn", "{rt}");
        let index = std::fs::read_to_string(dir.join("profile-report/index.html")).expect("index");
        assert!(!index.contains("TensorRT analysis report"), "{rt}");
    }
}

/// A CPU runtime's backend: its runtime with evidence, no TensorRT era, convolutions in the
/// convolution family carrying the time, and a CNN category.
fn assert_cpu_backend(b: &serde_json::Value, rt: &str) {
    let runtime = &b["runtime"];
    assert_eq!(runtime["name"], rt, "{runtime}");
    assert_eq!(
        runtime["display_name"],
        if rt == "tract" {
            "tract"
        } else {
            "ONNX Runtime"
        }
    );
    assert!(
        runtime["evidence"][0]
            .as_str()
            .expect("evidence")
            .contains(&format!("\"runtime\": \"{rt}\"")),
        "{runtime}"
    );
    assert!(b["export"]["era"].is_null(), "{rt}: no TensorRT era");
    assert_eq!(b["export"]["version_hints"], serde_json::json!([]), "{rt}");
    assert!(
        !b.to_string().contains("8.2-era"),
        "{rt}: no TensorRT 8.2 label"
    );
    let layers = b["layers"].as_array().expect("layers");
    // ONNX Runtime runs Conv kernels; tract lowers each into pad / im2col / matmul parts.
    let conv_type = if rt == "tract" { "OptMatMul" } else { "Conv" };
    let convs: Vec<&serde_json::Value> = layers
        .iter()
        .filter(|l| l["type"] == conv_type && l["family"] == "convolution")
        .collect();
    assert!(convs.len() >= 4, "{rt}: {} convolutions", convs.len());
    let families = b["breakdowns"]["by_family"].as_array().expect("families");
    assert_eq!(families[0]["name"], "convolution", "{rt}: {families:?}");
    let share = families[0]["percentage"].as_f64().expect("share");
    assert!(share >= 60.0, "{rt}: convolutions take {share}%");
    assert!(
        families
            .iter()
            .all(|f| f["name"] != "other" || f["percentage"].as_f64() < Some(5.0)),
        "{rt}: little time in `other`: {families:?}"
    );
    assert_eq!(
        b["model"]["category"], "CNN / convolutional vision model",
        "{rt}: {}",
        b["model"]
    );
    // Four profiled iterations: a warning, not a failure.
    assert_eq!(b["validation"]["status"], "passed");
    assert!(
        b["validation"]["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .any(|m| m["code"] == "few_iterations" && m["level"] == "warning"),
        "{rt}"
    );
}

#[test]
fn generate_profiles_through_the_same_runner_and_a_failed_pass_keeps_the_timed_result() {
    let tmp = tempfile::tempdir().expect("tmp");
    // tiny-gpt's generate loop calls the session many times per operation call: all of them are profiled.
    let dir = profiled_run(tmp.path(), "tiny-gpt", "tract", "2");
    let (_, profile) = check_exports(&dir, "tract", 4 * 2);
    assert!(
        profile[0]["count"].as_u64().expect("count") > 4,
        "one generate call runs the model once per token"
    );

    // Profiling a model without a bundle (the test-only noop) fails the pass, not the timed run.
    let out_dir = tmp.path().join("noop");
    let catalog = test_catalog();
    let out = bench_cached(
        &tmp.path().join("cache"),
        &[
            "run",
            "--manifest-root",
            catalog.to_str().expect("utf8"),
            "--model",
            "test-noop",
            "--iterations",
            "3",
            "--profile",
            "-o",
            out_dir.to_str().expect("utf8"),
            "-q",
        ],
    );
    assert_refused(&out, 5, "profiling pass failed");
    let doc = assert_result_dir_valid(&out_dir);
    let case = &doc["cases"][0];
    assert_eq!(case["status"], "completed");
    assert_eq!(case["measurement"]["observations"], 3);
    assert_eq!(case["profile"]["status"], "failed");
    assert!(
        case["profile"]["error"]
            .as_str()
            .expect("error")
            .contains("needs a model bundle"),
        "{}",
        case["profile"]
    );
    let case_dir = out_dir.join(case["dir"].as_str().expect("dir"));
    assert!(
        case_dir.join("profile-request.json").is_file(),
        "a failed pass keeps its request"
    );
}
