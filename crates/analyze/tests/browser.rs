//! The packaged report in headless Chromium (Debian package `chromium`): it renders from file://
//! with no console errors, shows every panel, draws the ~400-layer ControlNet graph, writes a
//! screenshot, and shows an XSS probe layer name as text.
//!
//! Fails when Chromium is missing, unless TRTMC_SKIP_BROWSER=1. TRTMC_CHROMIUM names the binary.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use trtmc_analyze::Inputs;
use trtmc_analyze::report::{PackageOptions, package};

const PROBE: &str = "<img src=x onerror=alert(1)>\"'";

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TRTMC_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find_map(trtmc_core::machine::find_program)
}

/// Runs Chromium with exactly the flags the project uses, plus `extra`; returns (stdout, stderr).
fn run_chromium(bin: &Path, profile: &Path, extra: &[&str], url: &str) -> (String, String) {
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let out = child.stdout.take().expect("stdout");
    let err = child.stderr.take().expect("stderr");
    let read_out = std::thread::spawn(move || std::io::read_to_string(out).unwrap_or_default());
    let read_err = std::thread::spawn(move || std::io::read_to_string(err).unwrap_or_default());
    let started = Instant::now();
    loop {
        match child.try_wait().expect("wait") {
            Some(_) => break,
            None if started.elapsed() > Duration::from_secs(90) => {
                let _ = child.kill();
                panic!("chromium did not finish within 90 s");
            }
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    (
        read_out.join().unwrap_or_default(),
        read_err.join().unwrap_or_default(),
    )
}

/// A backend folder whose first layer is named like an XSS probe.
fn probe_inputs(dir: &Path) {
    let fixtures = common::fixtures_dir().join("trex");
    let mut layers: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures.join("resnet18-pt-a100-fp16.layers.json"))
            .expect("layers"),
    )
    .expect("json");
    let mut profile: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures.join("resnet18-pt-a100-fp16.profile.json"))
            .expect("profile"),
    )
    .expect("json");
    let old = layers["Layers"][1]["Name"]
        .as_str()
        .expect("name")
        .to_owned();
    layers["Layers"][1]["Name"] = PROBE.into();
    for rec in profile.as_array_mut().expect("list") {
        if rec["name"] == old.as_str() {
            rec["name"] = PROBE.into();
        }
    }
    std::fs::write(dir.join("layers_probe.json"), layers.to_string()).expect("write");
    std::fs::write(dir.join("profile_probe.json"), profile.to_string()).expect("write");
}

#[test]
fn report_renders_in_headless_chromium() {
    let Some(bin) = chromium() else {
        if std::env::var_os("TRTMC_SKIP_BROWSER").is_some_and(|v| v == "1") {
            eprintln!("skipping: chromium not found and TRTMC_SKIP_BROWSER=1");
            return;
        }
        panic!(
            "chromium not found: install Debian's `chromium` package (or set TRTMC_CHROMIUM, or TRTMC_SKIP_BROWSER=1 to skip)"
        );
    };
    let work = tempfile::tempdir().expect("tempdir");

    // 1. XSS probe: the layer name must appear as text, never as an element.
    let inputs = work.path().join("probe");
    std::fs::create_dir(&inputs).expect("mkdir");
    probe_inputs(&inputs);
    let a = common::analyze(Inputs::Folder(inputs));
    assert!(
        a.backends[0].passed(),
        "{:?}",
        a.backends[0].validation.messages
    );
    let md = work.path().join("analysis.md");
    std::fs::write(
        &md,
        format!("## Summary\nProbe {PROBE}\n\n## Details\nnone\n"),
    )
    .expect("md");
    let report = package(
        &a,
        &PackageOptions {
            report_dir: Some(work.path().join("probe-report")),
            analyze_md: Some(md),
            ..Default::default()
        },
    )
    .expect("packaged");
    let url = format!("file://{}", report.index.display());
    let (dom, _) = run_chromium(&bin, &work.path().join("profile-a"), &["--dump-dom"], &url);
    assert!(
        dom.contains("data-report-ready=\"true\""),
        "the app did not finish rendering: {}",
        &dom[..dom.len().min(2000)]
    );
    assert!(
        dom.contains("data-report-errors=\"0\""),
        "page errors: {}",
        dom.split("self-check").nth(1).unwrap_or("")
    );
    assert!(
        dom.contains("&lt;img src=x onerror=alert(1)&gt;\"'"),
        "the probe name is shown as text"
    );
    assert!(
        dom.contains("ready errors=0 imgs=0"),
        "the probe must not become an element: {}",
        dom.split("self-check").nth(1).unwrap_or("")
    );
    for panel in [
        "summary-panel",
        "analysis-panel",
        "findings-panel",
        "validation-panel",
        "charts-panel",
        "layers-panel",
        "details-panel",
        "graph-panel",
        "comparison-panel",
    ] {
        assert!(dom.contains(&format!("id=\"{panel}\"")), "{panel} missing");
    }
    assert!(
        !dom.contains("id=\"analysis-panel\" hidden"),
        "the written analysis is shown"
    );
    // The title follows the runtime; the Summary dates the export and says from what.
    assert!(
        dom.contains("TensorRT analysis report</h1>"),
        "runtime title"
    );
    assert!(
        dom.contains("Export era: TensorRT 8.4–8.x — from: profile records carry medianMs"),
        "era with its evidence in the Summary"
    );

    // 2. Console: no errors or CSP refusals while loading, and a screenshot.
    let shot = work.path().join("report.png");
    let (_, log) = run_chromium(
        &bin,
        &work.path().join("profile-b"),
        &[
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1400,3200",
            &format!("--screenshot={}", shot.display()),
        ],
        &url,
    );
    let console: Vec<&str> = log
        .lines()
        .filter(|l| {
            l.contains("CONSOLE")
                || l.contains("Uncaught")
                || l.contains("Refused to")
                || l.contains("Content Security Policy")
        })
        .collect();
    assert!(console.is_empty(), "console output: {console:#?}");
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "screenshot of {} bytes",
        png.len()
    );
    if let Some(keep) = std::env::var_os("TRTMC_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).expect("keep screenshot");
    }

    // 3. The ~400-layer ControlNet graph is drawn whole, with the comparison of the MNIST builds.
    let a = common::analyze(Inputs::Folder(common::fixtures_dir().join("trtexec-other")));
    let report = package(
        &a,
        &PackageOptions {
            report_dir: Some(work.path().join("other-report")),
            ..Default::default()
        },
    )
    .expect("packaged");
    let url = format!(
        "file://{}?backend=controlnet-sd15-trt86",
        report.index.display()
    );
    let (dom, _) = run_chromium(&bin, &work.path().join("profile-c"), &["--dump-dom"], &url);
    assert!(
        dom.contains("data-report-errors=\"0\""),
        "page errors: {}",
        dom.split("self-check").nth(1).unwrap_or("")
    );
    let nodes = dom.matches("class=\"node").count();
    assert_eq!(nodes, 389, "every ControlNet layer is a graph node");
    assert!(
        dom.contains("mnist-cnn: 2 backends"),
        "comparison panel lists the MNIST builds"
    );
}
