//! `scripts/gpu-check.sh`, the script for the first machine with a GPU and trtexec: here it must refuse
//! (no GPU, no trtexec) with one clear message and nothing written, and its `--simulator` rehearsal must
//! run every step (build, run, profile + analyze, tune, run of the tuned bundle, the TensorRT matrix)
//! against the trtexec simulator and say on every page that nothing was measured on a GPU.
#![cfg(unix)]

use std::path::Path;
use std::process::Command;

use crate::common::*;

fn script() -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg(repo_root().join("scripts/gpu-check.sh"))
        .current_dir(repo_root())
        .env_remove("TRTMC_STANDIN_LOG")
        .env_remove("TRTMC_SIM_CONFIG");
    cmd
}

fn simulator() -> std::path::PathBuf {
    Path::new(BIN).with_file_name("trtexec-standin")
}

#[test]
fn refuses_without_trtexec_or_gpu_and_writes_nothing() {
    let tmp = tempfile::tempdir().expect("tmp");
    let evidence = tmp.path().join("evidence");
    // No trtexec anywhere: PATH holds only the basic tools.
    let out = script()
        .env("PATH", "/usr/bin:/bin")
        .args(["--bin", BIN, "-o"])
        .arg(&evidence)
        .output()
        .expect("run script");
    assert_refused(&out, 7, "trtexec");
    assert!(!evidence.exists());
    // trtexec given (the simulator), but no GPU and no --simulator: refused too.
    let out = script()
        .env("PATH", "/usr/bin:/bin")
        .args(["--bin", BIN, "--trtexec"])
        .arg(simulator())
        .arg("-o")
        .arg(&evidence)
        .output()
        .expect("run script");
    assert_refused(&out, 7, "GPU");
    assert!(!evidence.exists());
}

/// A folder with a `python3` that cannot see the installed `onnx` package (site-packages off), first
/// on `PATH`: a machine with TensorRT but without the `onnx` wheel.
fn python_without_onnx(dir: &Path) -> String {
    let bin = dir.join("python-without-onnx");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let real = trtmc_core::machine::find_program("python3").expect("python3 on PATH");
    let wrapper = bin.join("python3");
    trtmc_testkit::write_script(
        &wrapper,
        &format!("#!/bin/sh\nexec '{}' -S \"$@\"\n", real.display()),
    );
    let check = Command::new(&wrapper)
        .args(["-c", "import onnx"])
        .output()
        .expect("run wrapper");
    assert!(!check.status.success(), "the wrapper still imports onnx");
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Runs the `--simulator` rehearsal on the default model and checks every step, the files and the
/// SIMULATED marks.
fn rehearse(mut script: Command, version: &str, evidence: &Path) {
    let out = script
        .env("TRTMC_SIM_VERSION", version)
        .arg("--simulator")
        .arg("-o")
        .arg(evidence)
        .output()
        .expect("run script");
    assert_eq!(code(&out), 0, "{version}: {}{}", stdout(&out), stderr(&out));
    assert!(
        stderr(&out).contains("estimated run time about"),
        "{}",
        stderr(&out)
    );
    let summary = std::fs::read_to_string(evidence.join("SUMMARY.md")).expect("summary");
    assert!(summary.contains("SIMULATED"), "{summary}");
    assert!(summary.contains("every step passed"), "{summary}");
    assert!(summary.contains("Model `resnet18-infer`"), "{summary}");
    assert!(
        summary.contains("Free disk where the evidence went"),
        "{summary}"
    );
    for dir in [
        "run",
        "run-profile",
        "analyze",
        "tune",
        "tuned.bundle",
        "run-tuned",
        "matrix",
    ] {
        assert!(evidence.join(dir).is_dir(), "{dir} missing: {summary}");
    }
    let tuned = read_json(&evidence.join("tune/tuning-summary.json"));
    let best = if version == "110100" {
        "-kgen:tiling=1"
    } else {
        "-trtexec:builderOptimizationLevel=5"
    };
    assert_eq!(tuned["decision"]["route"], best, "{}", tuned["decision"]);
    let matrix = read_json(&evidence.join("matrix/results.json"));
    let rows = matrix["rows"].as_array().expect("rows");
    // TensorRT 10.x has no build routes: only the two resnet18 rows run.
    assert_eq!(rows.len(), if version == "110100" { 3 } else { 2 });
    assert!(rows.iter().all(|r| r["status"] == "compared"), "{matrix}");
    let run = read_json(&evidence.join("run/result.json"));
    assert_eq!(run["cases"][0]["model"], "resnet18-infer");
}

#[test]
fn the_simulator_rehearsal_runs_every_step_on_tensorrt_11_1_with_the_onnx_package() {
    let tmp = tempfile::tempdir().expect("tmp");
    let mut cmd = script();
    cmd.args(["--bin", BIN, "--trtexec"]).arg(simulator());
    rehearse(cmd, "110100", &tmp.path().join("evidence"));
}

/// TensorRT 10.16, no `onnx` package, and no source checkout: the script copied into a folder that
/// holds only trtmc-bench (what the wheel installs) and a trtexec, found on PATH.
#[test]
fn the_simulator_rehearsal_runs_on_tensorrt_10_16_without_onnx_from_an_installed_binary() {
    let tmp = tempfile::tempdir().expect("tmp");
    let folder = tmp.path().join("installed");
    std::fs::create_dir_all(&folder).expect("mkdir");
    for (from, to) in [
        (repo_root().join("scripts/gpu-check.sh"), "gpu-check.sh"),
        (Path::new(BIN).to_path_buf(), "trtmc-bench"),
        (simulator(), "trtexec"),
    ] {
        std::fs::copy(&from, folder.join(to)).expect("copy");
    }
    let path = python_without_onnx(tmp.path());
    let mut cmd = Command::new("bash");
    cmd.arg(folder.join("gpu-check.sh"))
        .current_dir(&folder)
        .env_remove("TRTMC_STANDIN_LOG")
        .env_remove("TRTMC_SIM_CONFIG")
        .env_remove("TRTMC_MANIFEST_ROOT")
        .env("XDG_CACHE_HOME", tmp.path().join("cache"))
        .env("PATH", format!("{}:{path}", folder.display()));
    rehearse(cmd, "101601", &tmp.path().join("evidence"));
}

/// A model whose file ships in the `onnx` wheel is refused before anything runs where the wheel is
/// missing, naming the install command; `list models` and `matrix check` say the same.
#[test]
fn a_model_that_needs_the_onnx_package_is_refused_with_the_install_command() {
    let tmp = tempfile::tempdir().expect("tmp");
    let evidence = tmp.path().join("evidence");
    let path = python_without_onnx(tmp.path());
    let out = script()
        .env("PATH", &path)
        .env("XDG_CACHE_HOME", tmp.path().join("cache"))
        .args([
            "--simulator",
            "--model",
            "resnet50-infer",
            "--bin",
            BIN,
            "--trtexec",
        ])
        .arg(simulator())
        .arg("-o")
        .arg(&evidence)
        .output()
        .expect("run script");
    assert_eq!(code(&out), 7, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("pip install onnx") && stderr(&out).contains("resnet50-infer"),
        "{}",
        stderr(&out)
    );
    assert!(!evidence.exists());

    let catalog = repo_root().join("benchmarks/performance/catalog-gpu");
    let list = Command::new(BIN)
        .args(["list", "models", "--manifest-root"])
        .arg(&catalog)
        .env("PATH", &path)
        .env("XDG_CACHE_HOME", tmp.path().join("cache"))
        .output()
        .expect("list models");
    let text = stdout(&list);
    let line = text
        .lines()
        .find(|l| l.starts_with("resnet50-infer"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("missing prerequisite:") && line.contains("pip install onnx"),
        "{line}"
    );
    let ready = text
        .lines()
        .find(|l| l.starts_with("resnet18-infer"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(ready.trim_end().ends_with("ready"), "{ready}");

    // The GPU suite with a row of that model added: matrix check names the package (exit 7).
    let suite = tmp.path().join("gpu-resnet50.yaml");
    let text = std::fs::read_to_string(repo_root().join("benchmarks/performance/gpu.yaml"))
        .expect("suite");
    // Without the exclusion, with a row of resnet50-infer.
    let mut kept = Vec::new();
    let mut skipping = false;
    for line in text.lines() {
        if line.starts_with("excluded_profiles:") {
            skipping = true;
            continue;
        }
        if skipping && line.starts_with("  ") {
            continue;
        }
        skipping = false;
        kept.push(line.to_string());
        if line == "rows:" {
            kept.extend(
                [
                    "  - entry: resnet50.infer",
                    "    model: resnet50-infer",
                    "    testcase: single",
                    "    candidate: {runtime: tensorrt, set: {}}",
                    "    reference: {backend: \"trtmc:tensorrt\", set: {}}",
                ]
                .map(String::from),
            );
        }
    }
    let text = kept.join("\n") + "\n";
    std::fs::write(&suite, text).expect("suite");
    let check = Command::new(BIN)
        .args(["matrix", "check"])
        .arg(&suite)
        .arg("--environment")
        .arg(repo_root().join("benchmarks/performance/environments/gpu.yaml"))
        .arg("--manifest-root")
        .arg(&catalog)
        .args(["--entry", "resnet50.infer"])
        .env("PATH", &path)
        .env("XDG_CACHE_HOME", tmp.path().join("cache"))
        .output()
        .expect("matrix check");
    assert_eq!(code(&check), 7, "{}{}", stdout(&check), stderr(&check));
    let said = format!("{}{}", stdout(&check), stderr(&check));
    assert!(
        said.contains("resnet50-infer") && said.contains("pip install onnx"),
        "{said}"
    );
}
