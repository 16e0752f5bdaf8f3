//! `scripts/gpu-check.sh`, the script for the first machine with a GPU and trtexec: here it must refuse
//! (no GPU, no trtexec) with one clear message and nothing written, and its `--simulator` rehearsal must
//! run every step (build, run, profile + analyze, tune, run of the tuned bundle, the TensorRT matrix)
//! against the trtexec simulator and say on every page that nothing was measured on a GPU.
#![cfg(unix)]

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

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
    assert_eq!(code(&out), 7, "{}", stderr(&out));
    assert!(stderr(&out).contains("trtexec"), "{}", stderr(&out));
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
    assert_eq!(code(&out), 7, "{}", stderr(&out));
    assert!(stderr(&out).contains("GPU"), "{}", stderr(&out));
    assert!(!evidence.exists());
}

#[test]
fn the_simulator_rehearsal_runs_every_step_and_says_it_is_simulated() {
    let tmp = tempfile::tempdir().expect("tmp");
    let evidence = tmp.path().join("evidence");
    let out = script()
        .args([
            "--simulator",
            "--model",
            "cnn-infer",
            "--bin",
            BIN,
            "--trtexec",
        ])
        .arg(simulator())
        .arg("-o")
        .arg(&evidence)
        .output()
        .expect("run script");
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let summary = std::fs::read_to_string(evidence.join("SUMMARY.md")).expect("summary");
    assert!(summary.contains("SIMULATED"), "{summary}");
    assert!(summary.contains("every step passed"), "{summary}");
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
    assert_eq!(
        tuned["decision"]["route"], "-kgen:tiling=1",
        "{}",
        tuned["decision"]
    );
    let matrix = read_json(&evidence.join("matrix/results.json"));
    let rows = matrix["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 3);
    assert!(
        rows.iter()
            .all(|r| r["status"] == "compared" && r["comparison"]["light"] == "green"),
        "{matrix}"
    );
}
