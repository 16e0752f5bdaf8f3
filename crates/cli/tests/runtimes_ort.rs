//! The `onnxruntime` runtime through the real binary: library discovery, bundle build (offline
//! optimization), every operation, settings, and clear errors (exit 7) when the library is missing.
//! Needs the `onnxruntime` Python wheel (scripts/test installs it).

use std::path::Path;
use std::process::{Command, Output};

use crate::common::*;

/// trtmc-bench with a private bundle cache under `tmp`.
fn bench(tmp: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let cache = tmp.join("cache");
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .arg("--bundle-cache")
        .arg(&cache)
        .env_remove("TRTMC_MANIFEST_ROOT")
        .env_remove("ORT_DYLIB_PATH")
        .env("TRTMC_TEST", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("start trtmc-bench")
}

/// `run --model tiny-cnn --runtime onnxruntime` then `args`, through [`bench`].
fn run_tiny_cnn_on_ort(tmp: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let run = ["run", "--model", "tiny-cnn", "--runtime", "onnxruntime"];
    bench(tmp, &[&run, args].concat(), env)
}

fn bundle_dir(out: &Path) -> std::path::PathBuf {
    let doc = read_json(&out.join("result.json"));
    std::path::PathBuf::from(
        doc["cases"][0]["bundle"]["path"]
            .as_str()
            .expect("bundle path"),
    )
}

#[test]
fn list_models_shows_onnxruntime_available_and_tensorrt_with_its_reason() {
    let out = run(&["list", "models", "--format", "json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    let rt = |n: &str| {
        doc["runtimes"]
            .as_array()
            .expect("runtimes")
            .iter()
            .find(|r| r["name"] == n)
            .cloned()
            .expect(n)
    };
    let ort = rt("onnxruntime");
    assert_eq!(ort["available"], true, "{ort}");
    assert!(
        ort["version"].as_str().expect("version").starts_with("1."),
        "{ort}"
    );
    let trt = rt("tensorrt");
    if trt["available"] == false {
        assert!(
            trt["reason"]
                .as_str()
                .expect("reason")
                .contains("--trtexec"),
            "{trt}"
        );
    }
}

#[test]
fn classify_on_onnxruntime_builds_an_offline_optimized_bundle_and_a_valid_result() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("out");
    let out = run_tiny_cnn_on_ort(
        tmp.path(),
        &[
            "--warmup",
            "2",
            "--iterations",
            "12",
            "-o",
            out_dir.to_str().expect("utf8"),
            "-q",
        ],
        &[],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&out_dir);
    assert_eq!(doc["timing_boundary"], "public_pipeline_call_wall");
    let case = &doc["cases"][0];
    assert_eq!(case["runtime"]["name"], "onnxruntime");
    assert_eq!(case["measurement"]["observations"], 12);
    let bundle = bundle_dir(&out_dir);
    assert!(
        bundle.join("model.ort.onnx").is_file(),
        "the offline-optimized model is the artifact"
    );
    let session = read_json(&bundle.join("ort-session.json"));
    assert_valid("ort-session.schema.json", &session);
    assert_eq!(session["optimization_level"], "all");
    assert_eq!(
        session["dimension_overrides"]["batch"], 1,
        "request.batch_size binds the batch dimension"
    );
    let timing = read_json(&bundle.join("build-timing.json"));
    let steps: Vec<&str> = timing["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        steps,
        [
            "bind_dimensions",
            "drop_weight_inputs",
            "optimize_and_save",
            "reload_check"
        ]
    );
    let log = std::fs::read_to_string(bundle.join("build.log")).expect("build.log");
    assert!(
        log.contains("ORT_ENABLE_ALL") && log.contains("input  image: f32[1,3,64,64]"),
        "{log}"
    );

    // The same request again is a cache hit; another optimization level is another bundle.
    let again = run_tiny_cnn_on_ort(tmp.path(), &["--dry-run"], &[]);
    assert!(stdout(&again).contains("cache hit"), "{}", stdout(&again));
    let basic = run_tiny_cnn_on_ort(
        tmp.path(),
        &["--set", "build.optimization_level=basic", "--dry-run"],
        &[],
    );
    assert!(stdout(&basic).contains("would build"), "{}", stdout(&basic));
}

#[test]
fn every_operation_runs_on_onnxruntime_with_its_session_settings() {
    let tmp = tempfile::tempdir().expect("tmp");
    for (model, extra) in [
        (
            "tiny-encoder",
            vec![
                "--set",
                "runtime.intra_threads=2",
                "--set",
                "runtime.intra_spinning=false",
            ],
        ),
        (
            "tiny-gpt",
            vec![
                "--set",
                "runtime.execution_mode=parallel",
                "--set",
                "runtime.inter_threads=2",
                "--set",
                "runtime.memory_pattern=false",
            ],
        ),
        (
            "tiny-cnn",
            vec![
                "--set",
                "runtime.cpu_arena=false",
                "--set",
                "build.optimization_level=extended",
            ],
        ),
    ] {
        let out_dir = tmp.path().join(model);
        let mut args = vec![
            "run",
            "--model",
            model,
            "--runtime",
            "onnxruntime",
            "--warmup",
            "1",
            "--iterations",
            "3",
            "-o",
            out_dir.to_str().expect("utf8"),
            "-q",
        ];
        args.extend(extra);
        let out = bench(tmp.path(), &args, &[]);
        assert_eq!(code(&out), 0, "{model}: {}", stderr(&out));
        let doc = assert_result_dir_valid(&out_dir);
        let case = &doc["cases"][0];
        assert_eq!(case["measurement"]["observations"], 3, "{model}");
        assert!(case["metrics"]["latency_ms"]["p50"].as_f64().expect("p50") > 0.0);
    }
    // `infer` on any ONNX file (tiny-cnn's, written to disk) with a dynamic batch bound by --shape.
    let onnx = tmp.path().join("cnn.onnx");
    std::fs::write(
        &onnx,
        trtmc_modelgen::generate("tiny-cnn", 3).expect("model"),
    )
    .expect("write");
    let out_dir = tmp.path().join("infer");
    let out = bench(
        tmp.path(),
        &[
            "run",
            "--onnx",
            onnx.to_str().expect("utf8"),
            "--shape",
            "image:2x3x64x64",
            "--runtime",
            "onnxruntime",
            "--warmup",
            "1",
            "--iterations",
            "4",
            "-o",
            out_dir.to_str().expect("utf8"),
            "-q",
        ],
        &[],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let manifest = read_json(&bundle_dir(&out_dir).join("bundle.json"));
    assert_eq!(
        manifest["inputs"][0]["shape"],
        serde_json::json!([2, 3, 64, 64])
    );
}

#[test]
fn bad_settings_are_input_errors_naming_the_fix() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dry = |sets: &[&str]| {
        let mut args = vec![
            "run",
            "--model",
            "tiny-cnn",
            "--runtime",
            "onnxruntime",
            "--dry-run",
        ];
        for s in sets {
            args.extend(["--set", s]);
        }
        bench(tmp.path(), &args, &[])
    };
    let out = dry(&["build.optimization_level=max"]);
    assert_eq!(code(&out), 3);
    assert!(
        stderr(&out).contains("disable, basic, extended, layout, all"),
        "{}",
        stderr(&out)
    );
    let out = dry(&["runtime.intra_thread=2"]);
    assert_eq!(code(&out), 3);
    assert!(stderr(&out).contains("intra_threads"), "{}", stderr(&out));
    // tract has no optimization level: refused before anything is built.
    let out = bench(
        tmp.path(),
        &[
            "run",
            "--model",
            "tiny-cnn",
            "--runtime",
            "tract",
            "--set",
            "build.optimization_level=all",
            "--dry-run",
        ],
        &[],
    );
    assert_eq!(code(&out), 3);
    assert!(
        stderr(&out).contains("does not use build.optimization_level"),
        "{}",
        stderr(&out)
    );
    // A value the runtime's declaration does not allow is refused while resolving (exit 3), before
    // any build or worker: no result directory.
    let out_dir = tmp.path().join("bad-mode");
    let out = run_tiny_cnn_on_ort(
        tmp.path(),
        &[
            "--set",
            "runtime.execution_mode=fastest",
            "--iterations",
            "2",
            "-o",
            out_dir.to_str().expect("utf8"),
            "-q",
        ],
        &[],
    );
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("runtime.execution_mode=fastest")
            && stderr(&out).contains("sequential or parallel"),
        "{}",
        stderr(&out)
    );
    assert!(!out_dir.exists());
}

#[test]
fn a_missing_library_is_exit_7_with_the_install_command() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = run_tiny_cnn_on_ort(
        tmp.path(),
        &["--dry-run"],
        &[("ORT_DYLIB_PATH", "/nonexistent/libonnxruntime.so.1.31.1")],
    );
    assert_refused(
        &out,
        7,
        "ORT_DYLIB_PATH=/nonexistent/libonnxruntime.so.1.31.1 is not a file",
    );
    let out = run_tiny_cnn_on_ort(
        tmp.path(),
        &["--dry-run"],
        &[("TRTMC_PYTHON", "/nonexistent/python3")],
    );
    assert_refused(&out, 7, "pip install onnxruntime==1.31.1");
    // A file that is not libonnxruntime: the load fails with the path named (no panic).
    let fake = tmp.path().join("libonnxruntime.so.1.31.1");
    std::fs::write(&fake, b"not a library").expect("write");
    let out_dir = tmp.path().join("fake");
    let out = run_tiny_cnn_on_ort(
        tmp.path(),
        &["-o", out_dir.to_str().expect("utf8"), "-q"],
        &[("ORT_DYLIB_PATH", fake.to_str().expect("utf8"))],
    );
    assert_eq!(
        code(&out),
        4,
        "the build loads the library: {}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("cannot load ONNX Runtime from"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    assert!(
        !out_dir.join("result.json").exists(),
        "no case ran without a bundle"
    );
    // An older ONNX Runtime (a GPU machine's image had the 1.30.0 wheel) is a missing prerequisite
    // named before anything is built, not a failed build.
    let old = tmp.path().join("libonnxruntime.so.1.30.0");
    std::fs::write(&old, b"an older library").expect("write");
    let old_dir = tmp.path().join("old");
    let out = run_tiny_cnn_on_ort(
        tmp.path(),
        &["-o", old_dir.to_str().expect("utf8"), "-q"],
        &[("ORT_DYLIB_PATH", old.to_str().expect("utf8"))],
    );
    assert_refused(&out, 7, "ONNX Runtime 1.30.0 at ");
    assert!(
        stderr(&out).contains("is older than 1.31, the oldest this trtmc-bench can load")
            && stderr(&out).contains("pip install onnxruntime==1.31.1"),
        "{}",
        stderr(&out)
    );
    assert!(!old_dir.exists(), "nothing written");
}

/// The onnx wheel's light_resnet50 (ONNX IR 3) lists its weights as graph inputs; ORT's optimizers leave
/// them behind as required inputs without data. The build says so and names the fix; at level `disable`
/// the model builds and runs.
#[test]
fn an_ir3_model_listing_its_weights_as_inputs_runs_at_every_optimization_level() {
    // The onnx wheel's light_resnet50 is ONNX IR 3: its 269 weights are graph inputs too. Optimized
    // as is, ORT's model asked for 213 inputs; the build drops the weight inputs first.
    let tmp = tempfile::tempdir().expect("tmp");
    for level in ["all", "disable"] {
        let dir = tmp.path().join(level);
        let out = bench(
            tmp.path(),
            &[
                "run",
                "--model",
                "light-resnet50",
                "--runtime",
                "onnxruntime",
                "--set",
                &format!("build.optimization_level={level}"),
                "--warmup",
                "0",
                "--iterations",
                "1",
                "-q",
                "-o",
                dir.to_str().expect("utf8"),
            ],
            &[],
        );
        assert_eq!(code(&out), 0, "level {level}: {}", stderr(&out));
        let result: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("result.json")).expect("result.json"))
                .expect("json");
        assert_eq!(result["cases"][0]["status"], "completed", "level {level}");
    }
    // The bundle's build log says what was changed, and only the optimized model is kept.
    let logs: Vec<String> = walk_files(&tmp.path().join("cache"))
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "build.log"))
        .map(|p| std::fs::read_to_string(p).expect("log"))
        .collect();
    assert!(
        logs.iter()
            .any(|l| l
                .contains("(ONNX IR 3) lists 269 weight(s) as graph inputs: re-encoded as IR 4")),
        "{logs:?}"
    );
    assert!(
        walk_files(&tmp.path().join("cache"))
            .iter()
            .all(|p| !p.ends_with("source-ir4.onnx"))
    );
}
