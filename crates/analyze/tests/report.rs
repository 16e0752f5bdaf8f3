//! Report folders: contents, naming and collisions, analyze.md, and re-packaging from an
//! analyze-data.json.

mod common;

use common::{analyze, fixtures_dir};
use trtmc_analyze::analysis::Mode;
use trtmc_analyze::report::{PackageError, PackageOptions, package, repackage};
use trtmc_analyze::{Inputs, Request};

fn opts(parent: &std::path::Path) -> PackageOptions {
    PackageOptions {
        output_parent: Some(parent.to_owned()),
        timestamp: Some("20260101_120000".to_owned()),
        ..PackageOptions::default()
    }
}

#[test]
fn a_report_folder_is_self_contained() {
    let out = tempfile::tempdir().expect("tempdir");
    let a = analyze(Inputs::Folder(fixtures_dir().join("trtexec-other")));
    let p = package(&a, &opts(out.path())).expect("packaged");
    assert_eq!(
        p.report_dir,
        out.path().join("report_unknown_model_20260101_120000")
    );
    for f in [
        "index.html",
        "app.js",
        "styles.css",
        "data.js",
        "analyze-data.json",
    ] {
        assert!(p.report_dir.join(f).is_file(), "{f}");
    }
    let v = report_data(&p.report_dir);
    assert_eq!(v["analysis"]["schema"], "trtmc.analysis/v1");
    assert!(v["analyze_md_html"].is_null());
    // No network: the page references only files in the folder.
    let html = std::fs::read_to_string(p.report_dir.join("index.html")).expect("index");
    for needle in ["http://", "https://", "//cdn", "@import"] {
        let hits: Vec<&str> = html
            .lines()
            .filter(|l| {
                l.contains(needle) && !l.contains("http-equiv") && !l.contains("json-schema.org")
            })
            .collect();
        assert!(hits.is_empty(), "{needle}: {hits:?}");
    }
    assert!(
        !std::fs::read_to_string(p.report_dir.join("app.js"))
            .expect("app")
            .contains("fetch(")
    );
}

/// The JSON inside data.js (`window.TRTMC_REPORT = {...};`).
fn report_data(dir: &std::path::Path) -> serde_json::Value {
    let data = std::fs::read_to_string(dir.join("data.js")).expect("data.js");
    let json = data
        .strip_prefix("window.TRTMC_REPORT = ")
        .and_then(|d| d.trim_end().strip_suffix(';'))
        .expect("data.js shape");
    serde_json::from_str(json).expect("embedded JSON")
}

#[test]
fn the_folder_holds_the_app_data_once_and_packed() {
    let out = tempfile::tempdir().expect("tempdir");
    let a = analyze(Inputs::Folder(fixtures_dir().join("trex")));
    let p = package(&a, &opts(out.path())).expect("packaged");
    let mut files: Vec<String> = std::fs::read_dir(&p.report_dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    // No analysis.json beside data.js: the app reads data.js, `analyze --output` writes analysis.json.
    assert_eq!(
        files,
        [
            "analyze-data.json",
            "app.js",
            "data.js",
            "index.html",
            "styles.css"
        ]
    );
    let v = report_data(&p.report_dir);
    let mut full = Vec::new();
    a.write_json(&mut full).expect("analysis.json");
    let full: serde_json::Value = serde_json::from_slice(&full).expect("json");
    let (mut packed_len, mut records_len) = (0, 0);
    for (i, b) in a.backends.iter().enumerate() {
        let packed = &v["analysis"]["backends"][i]["layers"];
        packed_len += serde_json::to_vec(packed).expect("json").len();
        records_len += serde_json::to_vec(&full["backends"][i]["layers"])
            .expect("json")
            .len();
        assert_eq!(packed["packed"], 1, "{}", b.label);
        assert_eq!(packed["count"], b.layers.len(), "{}", b.label);
        // Everything but the layer records is as in analysis.json.
        let mut ours = v["analysis"]["backends"][i].clone();
        let mut theirs = full["backends"][i].clone();
        ours["layers"] = serde_json::Value::Null;
        theirs["layers"] = serde_json::Value::Null;
        assert_eq!(ours, theirs, "{}", b.label);
        // Each layer name once in the backend's layer data (its string table).
        let packed = serde_json::to_string(packed).expect("json");
        for l in &b.layers {
            let quoted = serde_json::to_string(&l.name).expect("json");
            assert_eq!(
                packed.matches(&quoted).count(),
                1,
                "{} ({})",
                l.name,
                b.label
            );
        }
    }
    // The packed layers are far smaller than the records they stand for (on a model this small the
    // comparisons, which are not packed, are a large part of data.js).
    assert!(
        packed_len * 2 < records_len,
        "packed layers {packed_len} bytes, layer records {records_len} bytes"
    );
}

#[test]
fn automatic_names_get_collision_suffixes_and_exact_dirs_must_be_empty() {
    let out = tempfile::tempdir().expect("tempdir");
    let a = analyze(Inputs::Folder(fixtures_dir().join("trtexec-other")));
    let first = package(&a, &opts(out.path())).expect("first");
    let second = package(&a, &opts(out.path())).expect("second");
    assert_eq!(
        second.report_dir.file_name().and_then(|n| n.to_str()),
        Some("report_unknown_model_20260101_120000_2")
    );
    assert_ne!(first.report_dir, second.report_dir);
    let taken = PackageOptions {
        report_dir: Some(first.report_dir.clone()),
        ..PackageOptions::default()
    };
    match package(&a, &taken) {
        Err(e @ PackageError::NotEmpty(_)) => assert!(e.to_string().contains("not empty")),
        other => panic!("expected a refusal, got {other:?}"),
    }
    let bad_ts = PackageOptions {
        timestamp: Some("yesterday".to_owned()),
        ..opts(out.path())
    };
    assert!(matches!(
        package(&a, &bad_ts),
        Err(PackageError::Timestamp(_))
    ));
}

#[test]
fn analyze_md_is_copied_rendered_and_checked() {
    let out = tempfile::tempdir().expect("tempdir");
    let md = out.path().join("notes.md");
    std::fs::write(&md, "## Summary\nFP16 is **2.1×** faster. <img src=x onerror=alert(1)>\n\n## Details\n- check Conv_0\n").expect("write md");
    let a = analyze(Inputs::Folder(fixtures_dir().join("trex")));
    let mut o = opts(out.path());
    o.analyze_md = Some(md.clone());
    let p = package(&a, &o).expect("packaged");
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    assert_eq!(
        std::fs::read_to_string(p.report_dir.join("analyze.md")).expect("copied"),
        std::fs::read_to_string(&md).expect("md")
    );
    let data = std::fs::read_to_string(p.report_dir.join("data.js")).expect("data.js");
    assert!(data.contains("<strong>2.1×</strong>"), "markdown rendered");
    assert!(
        data.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "raw HTML escaped"
    );
    assert!(
        !data.contains("<img src=x"),
        "no live HTML from the markdown"
    );

    std::fs::write(&md, "just text").expect("write md");
    let p = package(&a, &o).expect("packaged");
    assert_eq!(p.warnings.len(), 2, "{:?}", p.warnings);
}

#[test]
fn repackaging_from_analyze_data_reproduces_the_analysis() {
    let out = tempfile::tempdir().expect("tempdir");
    let original = analyze(Inputs::Folder(fixtures_dir().join("trtexec-other")));
    let p = package(&original, &opts(out.path())).expect("packaged");
    let before = std::fs::read(&p.analyze_data_json).expect("analyze-data");

    let again = trtmc_analyze::analyze(&Request {
        inputs: Inputs::AnalyzeData(p.analyze_data_json.clone()),
        model_name: None,
    })
    .expect("re-read");
    assert_eq!(again.backends.len(), original.backends.len());
    for (x, y) in original.backends.iter().zip(&again.backends) {
        assert_eq!(x.label, y.label);
        assert_eq!(
            x.validation.analysis_mode, y.validation.analysis_mode,
            "{}",
            x.label
        );
        assert_eq!(x.layer_count, y.layer_count, "{}", x.label);
        if x.validation.analysis_mode == Mode::LayerProfile {
            assert_eq!(x.count, y.count, "{}", x.label);
            let (a, b) = (
                x.timing.as_ref().expect("timing"),
                y.timing.as_ref().expect("timing"),
            );
            assert!(
                (a.average_inference_ms - b.average_inference_ms).abs() < 1e-9,
                "{}",
                x.label
            );
        } else {
            // The published format has no profile for layer_only results.
            assert!(y.timing.is_none(), "{}", x.label);
        }
    }
    // names-only survives the round trip as layer_only, not as detailed layers of type "unknown".
    let yolo = again
        .backends
        .iter()
        .find(|b| b.label.contains("namesonly"))
        .expect("yolo");
    assert_eq!(yolo.validation.analysis_mode, Mode::LayerOnly);
    assert!(yolo.graph.is_none());

    let md = out.path().join("a.md");
    std::fs::write(&md, "## Summary\nx\n## Details\ny\n").expect("md");
    // A folder packaged by an earlier version holds an analysis.json: it is brought up to date.
    let old_analysis = p.report_dir.join("analysis.json");
    std::fs::write(&old_analysis, "{}").expect("old analysis.json");
    let r = repackage(&again, &p.analyze_data_json, Some(&md)).expect("repackaged");
    assert_eq!(r.report_dir, p.report_dir);
    assert!(r.report_dir.join("analyze.md").is_file());
    let mut fresh = Vec::new();
    again.write_json(&mut fresh).expect("analysis");
    assert_eq!(std::fs::read(&old_analysis).expect("rewritten"), fresh);
    assert_eq!(
        report_data(&r.report_dir)["analysis"]["backends"]
            .as_array()
            .expect("backends")
            .len(),
        again.backends.len()
    );
    assert_eq!(
        std::fs::read(&p.analyze_data_json).expect("kept"),
        before,
        "re-packaging leaves analyze-data.json as it was"
    );
}

#[test]
fn failed_backends_survive_repackaging_with_their_messages() {
    let out = tempfile::tempdir().expect("tempdir");
    let f = fixtures_dir().join("trex");
    let a = analyze(common::data(
        &f.join("resnet18-pt-a100-fp16.layers.json"),
        Some(&f.join("mobilenet-qat-titanrtx.profile.json")),
    ));
    let p = package(&a, &opts(out.path())).expect("packaged");
    let again = trtmc_analyze::analyze(&Request {
        inputs: Inputs::AnalyzeData(p.analyze_data_json),
        model_name: None,
    })
    .expect("re-read");
    let b = &again.backends[0];
    assert_eq!(b.validation.analysis_mode, Mode::Unusable);
    assert!(
        b.validation
            .messages
            .iter()
            .any(|m| m.message.contains("do not match")),
        "{:?}",
        b.validation.messages
    );
}

#[test]
fn analyze_data_of_another_kind_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("analyze-data.json");
    std::fs::write(&path, r#"{"schema_version": "2.0", "results": []}"#).expect("write");
    let err = trtmc_analyze::analyze(&Request {
        inputs: Inputs::AnalyzeData(path),
        model_name: None,
    })
    .expect_err("refused");
    assert!(err.to_string().contains("schema_version"), "{err}");
}
