//! `trtmc-bench analyze`, `analyze package` and `analyze serve`, run as the real binary.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::start_analyze_serve;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_trtmc-bench"))
}

/// `$TRTMC_FIXTURES`, else the vendored `<repo>/tests/fixtures`; missing fixtures fail the test.
pub(crate) fn fixtures() -> PathBuf {
    if let Some(dir) = std::env::var_os("TRTMC_FIXTURES") {
        return PathBuf::from(dir);
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    assert!(
        dir.is_dir(),
        "fixtures not found at {}: clone next to shared/ or set TRTMC_FIXTURES",
        dir.display()
    );
    dir
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run trtmc-bench")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .expect("JSON")
}

fn valid(schema: &Path, doc: &serde_json::Value) -> Result<(), String> {
    let v = jsonschema::validator_for(&json(schema)).expect("schema");
    let errors: Vec<String> = v
        .iter_errors(doc)
        .take(3)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

#[test]
fn folder_analysis_prints_json_and_a_summary() {
    let trex = fixtures().join("trex");
    let out = run(&["analyze", trex.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(doc["schema"], "trtmc.analysis/v1");
    assert_eq!(doc["backends"].as_array().map(Vec::len), Some(7));
    let summary = text(&out.stderr);
    assert!(
        summary.contains("resnet18-pt-a100-fp16: passed, layer_profile, 36 layers, 1.0168 ms per inference (sum of layer averages); TensorRT 8.4–8.x export"),
        "{summary}"
    );
}

#[test]
fn outputs_validate_against_their_schemas() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ours, theirs) = (
        dir.path().join("analysis.json"),
        dir.path().join("analyze-data.json"),
    );
    let other = fixtures().join("trtexec-other");
    let out = run(&[
        "analyze",
        other.to_str().expect("path"),
        "-o",
        ours.to_str().expect("path"),
        "--analyze-data-output",
        theirs.to_str().expect("path"),
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        out.stdout.is_empty() && out.stderr.is_empty(),
        "quiet with -o prints nothing"
    );
    valid(&repo().join("schemas/analysis.schema.json"), &json(&ours)).expect("analysis.json");
    valid(
        &fixtures().join("trt-perf-analysis/analyze-data.schema.json"),
        &json(&theirs),
    )
    .expect("analyze-data.json");
}

#[test]
fn exit_codes_follow_the_contract() {
    let f = fixtures();
    // Structured data even when every backend fails validation: exit 0.
    let knob = f.join("trtexec-logs/trt11.1_helpBuildRoute_knobdb_EXCERPT.json");
    let out = run(&["analyze", "--data", knob.to_str().expect("path"), "--quiet"]);
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["validation"]["status"], "failed");
    assert!(
        doc["backends"][0]["validation"]["messages"][0]["message"]
            .as_str()
            .expect("msg")
            .contains("helpBuildRoute")
    );

    // Nothing structured: exit 3 with the reason.
    let out = run(&["analyze", f.join("trtexec-logs").to_str().expect("path")]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).contains("--data LAYERS"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["analyze", f.to_str().expect("path")]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).contains("one report per component"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["analyze", "/definitely/not/here"]);
    assert_eq!(out.status.code(), Some(3));

    // Usage errors: exit 2.
    assert_eq!(run(&["analyze"]).status.code(), Some(2));
    let trex = f.join("trex");
    assert_eq!(
        run(&[
            "analyze",
            trex.to_str().expect("path"),
            "--data",
            knob.to_str().expect("path")
        ])
        .status
        .code(),
        Some(2)
    );
}

#[test]
fn package_writes_named_reports_and_repackages() {
    let parent = tempfile::tempdir().expect("tempdir");
    let md = parent.path().join("final.md");
    std::fs::write(
        &md,
        "## Summary\nINT8 QAT is fastest.\n\n## Details\nReformats cost 25%.\n",
    )
    .expect("md");
    let trex = fixtures().join("trex");
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a = vec![
            "analyze".to_owned(),
            "package".to_owned(),
            trex.display().to_string(),
            "--output-parent".to_owned(),
            parent.path().display().to_string(),
            "--timestamp".to_owned(),
            "20260101_000000".to_owned(),
        ];
        a.extend(extra.iter().map(|s| (*s).to_owned()));
        a
    };
    let out = bin()
        .args(args(&["--analyze-md", md.to_str().expect("path")]))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let report = parent.path().join("report_unknown_model_20260101_000000");
    assert!(
        stdout.contains(&format!("report_dir: {}", report.display())),
        "{stdout}"
    );
    for f in [
        "index.html",
        "app.js",
        "styles.css",
        "data.js",
        "analyze-data.json",
        "analyze.md",
    ] {
        assert!(report.join(f).is_file(), "{f}");
    }
    // The app's data is in data.js only: no analysis.json copy in the folder.
    assert!(!report.join("analysis.json").exists());
    // Same name again: a collision suffix.
    let out = bin().args(args(&[])).output().expect("run");
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stdout).contains("report_unknown_model_20260101_000000_2"),
        "{}",
        text(&out.stdout)
    );
    // An exact --report-dir that is not empty is refused (exit 6).
    let out = run(&[
        "analyze",
        "package",
        trex.to_str().expect("path"),
        "--report-dir",
        report.to_str().expect("path"),
    ]);
    assert_eq!(out.status.code(), Some(6), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("not empty"));

    // Re-package from the analyze-data.json: data.js is rewritten, analyze-data.json kept.
    let before = std::fs::read(report.join("analyze-data.json")).expect("read");
    std::fs::remove_file(report.join("data.js")).expect("rm");
    let data = report.join("analyze-data.json");
    let out = run(&[
        "analyze",
        "package",
        "--analyze-data",
        data.to_str().expect("path"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(report.join("data.js").is_file());
    assert!(!report.join("analysis.json").exists());
    assert_eq!(std::fs::read(&data).expect("read"), before);
    assert!(
        std::fs::read_to_string(report.join("data.js"))
            .expect("data.js")
            .contains("INT8 QAT is fastest."),
        "analyze.md kept"
    );
}

fn http_get(addr: &str, path: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .expect("timeout");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut body = String::new();
    s.read_to_string(&mut body).expect("read");
    let status = body
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, body)
}

#[test]
fn serve_previews_a_report_on_loopback_only() {
    let parent = tempfile::tempdir().expect("tempdir");
    let report = parent.path().join("r");
    let other = fixtures().join("trtexec-other");
    let out = run(&[
        "analyze",
        "package",
        other.to_str().expect("path"),
        "--report-dir",
        report.to_str().expect("path"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let out = run(&[
        "analyze",
        "serve",
        report.to_str().expect("path"),
        "--bind",
        "0.0.0.0",
        "--port",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stderr).contains("loopback"));

    let (mut child, _, addr) =
        start_analyze_serve(&[report.to_str().expect("path"), "--port", "0"]);
    let result = std::panic::catch_unwind(|| {
        let (status, body) = http_get(&addr, "/");
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("analysis report</title>"));
        assert_eq!(http_get(&addr, "/data.js").0, 200);
        assert_eq!(http_get(&addr, "/../../etc/passwd").0, 404);
        assert_eq!(http_get(&addr, "/missing.js").0, 404);
    });
    let _ = child.kill();
    let _ = child.wait();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

/// The trex fixtures of resnet18 on an A100: the fp16 layers and profile, then the QAT ones.
fn trex_resnet18_fp16_and_qat() -> (String, String, String, String) {
    let trex = fixtures().join("trex");
    let f = |name: &str| trex.join(name).display().to_string();
    (
        f("resnet18-pt-a100-fp16.layers.json"),
        f("resnet18-pt-a100-fp16.profile.json"),
        f("resnet18-pt-a100-qat.layers.json"),
        f("resnet18-pt-a100-qat.profile.json"),
    )
}

#[test]
fn labels_name_their_data_groups_and_model_names_stay_verbatim() {
    let (fp16, fp16_p, qat, qat_p) = trex_resnet18_fp16_and_qat();
    let out = run(&[
        "analyze",
        "--quiet",
        "--model-name",
        "ResNet 18 (torchvision)",
        "--data",
        &fp16,
        &fp16_p,
        "--label",
        "FP16 build",
        "--data",
        &qat,
        &qat_p,
        "--label",
        "QAT int8",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["model"]["name"], "ResNet 18 (torchvision)");
    assert_eq!(doc["model"]["id"], "resnet-18-torchvision");
    let labels: Vec<&str> = doc["backends"]
        .as_array()
        .expect("backends")
        .iter()
        .map(|b| b["label"].as_str().expect("label"))
        .collect();
    assert_eq!(labels, ["FP16 build", "QAT int8"]);
    valid(&repo().join("schemas/analysis.schema.json"), &doc).expect("schema");

    // A label must follow its --data group, once, and be unique.
    for (args, says) in [
        (
            vec!["--label", "x", "--data", &fp16],
            "comes before any --data",
        ),
        (
            vec!["--data", &fp16, "--label", "a", "--label", "b"],
            "has two labels",
        ),
        (
            vec![
                "--data", &fp16, "--label", "a", "--data", &qat, "--label", "a",
            ],
            "two --data groups",
        ),
        (
            vec!["--data", &fp16, "--label", " "],
            "not a usable backend label",
        ),
    ] {
        let mut full = vec!["analyze", "--quiet"];
        full.extend(args.iter().copied());
        let out = run(&full);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    // In folder mode labels come from the file names.
    let trex = fixtures().join("trex");
    let out = run(&[
        "analyze",
        "--quiet",
        trex.to_str().expect("path"),
        "--label",
        "x",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

/// Issue 36: the comparison's baseline is the first --data given, `--baseline LABEL` picks
/// another (the report says which rule chose it), and a label that names no backend is a usage
/// error (exit 2) listing the labels.
#[test]
fn baseline_is_the_first_data_given_or_the_one_named() {
    let (fp16, fp16_p, qat, qat_p) = trex_resnet18_fp16_and_qat();
    let base = [
        "analyze", "--quiet", "--data", &qat, &qat_p, "--label", "qat", "--data", &fp16, &fp16_p,
        "--label", "fp16",
    ];
    for (extra, baseline, reason) in [
        (None, "qat", "the first --data given"),
        (Some("fp16"), "fp16", "chosen with --baseline"),
    ] {
        let mut args = base.to_vec();
        if let Some(label) = extra {
            args.extend(["--baseline", label]);
        }
        let out = run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let c = &doc["comparisons"][0];
        assert_eq!(c["baseline"], baseline);
        assert_eq!(c["baseline_reason"], reason);
        // Matched rows say what they were found by.
        let rows = c["pairs"][0]["rows"].as_array().expect("rows");
        assert!(
            rows.iter()
                .filter(|r| r["method"] != "unmatched")
                .all(|r| r["evidence"].as_str().is_some_and(|e| !e.is_empty())),
            "every pair has evidence"
        );
        valid(&repo().join("schemas/analysis.schema.json"), &doc).expect("schema");
    }
    let mut args = base.to_vec();
    args.extend(["--baseline", "int8"]);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("--baseline \"int8\"") && err.contains("qat, fp16"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing written on a usage error");
}
