//! The matrix report (issue 18, "a report people can act on") in headless Chromium (Debian
//! `chromium`, the project's flags, a fresh profile per launch), on a real `matrix run` of the embedded
//! tiny-cnn: two compared rows and one whose reference fails. At 1400 px the page must show the forest
//! plot with one mark per row with a ratio, list the failed row as not plotted with its reason, wrap
//! no word in the middle (the page measures itself: `#wrapcheck` in the shared script), scroll nothing
//! sideways, and every link must lead to a file of the run directory or an anchor of the page.
//!
//! Fails when Chromium is missing, unless TRTMC_SKIP_BROWSER=1. TRTMC_KEEP_SCREENSHOTS=DIR keeps the PNG.

use crate::chromium;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;
use serde_json::Value;

const PROBE: &str = "<img src=x onerror=alert(1)>\"'";
/// The probe's start as a serialized DOM shows text (a `<wbr>` may follow each `=`).
const PROBE_AS_TEXT: &str = "&lt;img src=";

fn p(path: &Path) -> String {
    path.to_str().expect("utf8").to_string()
}

fn matrix(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("matrix")
        .args(args)
        .env_remove("TRTMC_MANIFEST_ROOT")
        .env_remove("TRTMC_TEST_MATRIX_CANDIDATE_DELAY_US")
        .env_remove("TRTMC_TEST_MATRIX_ABORT_ROW")
        .env("TRTMC_TEST", "1")
        .output()
        .expect("start trtmc-bench")
}

/// The value of `name="…"` on the page's `<body>`.
fn body_attr(dom: &str, name: &str) -> String {
    let body = dom
        .split("<body")
        .nth(1)
        .and_then(|b| b.split('>').next())
        .unwrap_or("");
    body.split(&format!("{name}=\""))
        .nth(1)
        .and_then(|v| v.split('"').next())
        .unwrap_or_else(|| panic!("no {name} on <body>: {body}"))
        .to_string()
}

fn body_number(dom: &str, name: &str) -> u64 {
    let v = body_attr(dom, name);
    v.parse()
        .unwrap_or_else(|_| panic!("{name}=\"{v}\" is not a number"))
}

/// `%XX` escapes back to bytes (the report percent-encodes each path segment).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Rewrites a finished row file with long identifiers (as the release suite's generation rows have):
/// the report must break them after dots, hyphens, underscores and slashes only.
fn lengthen_names(row_file: &Path) {
    let mut row = read_json(row_file);
    row["entry"] = "generate_vl.qwen2_vl_2b_instruct_long_entry_name".into();
    row["model"] = "qwen2-vl-2b-instruct-onnx-community-fp16-merged-kv-cache".into();
    row["testcase"] = "chat-multiturn-long-context-greedy-decoding-128-tokens".into();
    row["id"] = "generate_vl.qwen2_vl_2b_instruct_long_entry_name/qwen2-vl-2b-instruct-onnx-community-fp16-merged-kv-cache/chat-multiturn-long-context-greedy-decoding-128-tokens/onnxruntime".into();
    std::fs::write(row_file, row.to_string()).expect("rewrite the row");
}

#[test]
fn the_matrix_report_has_a_forest_plot_working_links_and_no_mid_word_breaks_at_1400_px() {
    let Some(browser) = chromium::require() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    let catalog = tiny_cnn_catalog(dir);
    // A Python reference that cannot run: its row fails and names why.
    let fake = dir.join("no-reference");
    std::fs::create_dir_all(&fake).expect("mkdir");
    std::fs::write(
        fake.join("ort_reference.py"),
        "import sys\nprint('reference failure: this model needs a piece the reference does not have')\nsys.exit(3)\n",
    )
    .expect("write");
    let env = write_matrix_environment(dir, &format!("reference_dir: {}\n", p(&fake)));
    let suite = dir.join("report.yaml");
    std::fs::write(
        &suite,
        "schema: trtmc.perf-suite/v1\nname: report\nthresholds: {green_max: 1.3, yellow_max: 2.0, min_samples: 10}\nmeasure: {warmup: 2, iterations: 12, rounds: 3}\nrows:\n  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: single\n    candidate: {runtime: onnxruntime}\n    reference: {backend: \"trtmc:onnxruntime\"}\n  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: batch8\n    candidate: {runtime: onnxruntime}\n    reference: {backend: \"trtmc:onnxruntime\"}\n  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: single\n    candidate: {runtime: tract}\n    reference: {backend: onnxruntime-python}\n",
    )
    .expect("write suite");
    let run = dir.join("run");
    let o = matrix(&[
        "run",
        &p(&suite),
        "--environment",
        &p(&env),
        "--manifest-root",
        &p(&catalog),
        "-o",
        &p(&run),
    ]);
    assert_eq!(code(&o), 5, "a failed row: {}\n{}", stdout(&o), stderr(&o));
    let results = read_json(&run.join("results.json"));
    let rows = results["rows"].as_array().expect("rows").clone();
    let compared: Vec<&Value> = rows.iter().filter(|r| r["status"] == "compared").collect();
    assert_eq!(compared.len(), 2, "{results}");
    let failed = &rows[2];
    assert_eq!(failed["status"], "failed", "{failed}");

    // Long identifiers, and an explanation on row 1 (the field issue 18's explain step writes), then
    // the report is built again from the row files.
    lengthen_names(&run.join("rows/000.json"));
    let mut row1 = read_json(&run.join("rows/001.json"));
    row1["explanation"] = serde_json::json!({
        "missing": null,
        "candidate_ms": 2.5,
        "reference_ms": 0.5,
        "layers": [{
            "layer": format!("layer {PROBE}"),
            "nodes": [format!("layer {PROBE}")],
            "candidate_ms": 2.25,
            "reference_ms": 0.25,
            "delta_ms": 2.0,
            "share": 1.0,
        }],
        "report": "rows/001/explain/index.html",
        "report_error": null,
        "files": [],
    });
    std::fs::write(run.join("rows/001.json"), row1.to_string()).expect("write");
    std::fs::create_dir_all(run.join("rows/001/explain")).expect("mkdir");
    std::fs::write(run.join("rows/001/explain/index.html"), "<p>package</p>").expect("write");
    let o = matrix(&["report", &p(&run)]);
    assert_eq!(code(&o), 5, "{}", stderr(&o));
    let report = run.join("report.html");
    let long_id = read_json(&run.join("rows/000.json"))["id"]
        .as_str()
        .expect("id")
        .to_string();

    let launch = browser.dump_dom(
        &chromium::file_url(&report, "wrapcheck"),
        &["--window-size=1400,1000"],
    );
    let dom = launch.stdout;
    let check = chromium::self_check(&dom);
    assert_eq!(body_attr(&dom, "data-report-ready"), "true", "{check}");
    assert_eq!(body_attr(&dom, "data-report-errors"), "0", "{check}");
    assert!(!dom.contains("<img src=x"), "the probe became an element");
    assert!(dom.contains(PROBE_AS_TEXT), "the probe is shown as text");

    // No word wraps in the middle at 1400 px, nothing scrolls sideways.
    assert!(
        body_number(&dom, "data-wrapcheck-chars") > 1500,
        "the check measured the page's text"
    );
    assert_eq!(
        body_number(&dom, "data-midword-breaks"),
        0,
        "mid-word breaks: {}",
        body_attr(&dom, "data-midword-samples")
    );
    assert_eq!(body_number(&dom, "data-overflowing-cells"), 0);
    assert_eq!(
        body_number(&dom, "data-wide-boxes"),
        0,
        "a table or plot wider than the page at 1400 px: {}",
        body_attr(&dom, "data-wide-samples")
    );

    // The forest plot: one mark per row with a ratio, each line labelled with its row.
    let forest = dom
        .split("data-plot=\"forest\"")
        .nth(1)
        .and_then(|f| f.split("</figure>").next())
        .expect("the forest plot");
    assert_eq!(
        forest.matches("<circle").count(),
        compared.len(),
        "{forest}"
    );
    for row in &compared {
        let c = &row["comparison"];
        let numbers = format!(
            "{:.3} [{:.3}, {:.3}]",
            c["ratio"].as_f64().unwrap(),
            c["ci_low"].as_f64().unwrap(),
            c["ci_high"].as_f64().unwrap()
        );
        assert!(forest.contains(&numbers), "{numbers} missing: {forest}");
    }
    assert!(
        forest.contains("tiny-cnn.classify/tiny-cnn/batch8/onnxruntime"),
        "{forest}"
    );
    assert!(forest.contains("…"), "the long id is shortened in the plot");
    // The failed row is listed under the plot with its reason.
    let unplotted = dom
        .split("class=\"unplotted\"")
        .nth(1)
        .and_then(|u| u.split("</ul>").next())
        .expect("the not-plotted list");
    assert!(unplotted.contains("data-row=\"2\""), "{unplotted}");
    assert!(
        unplotted.contains("failed: ") && unplotted.contains("reference failure"),
        "{unplotted}"
    );
    assert!(!unplotted.contains("data-row=\"0\""));

    // Every link leads somewhere: anchors to ids of the page, files to files of the run directory.
    let hrefs: Vec<String> = dom
        .split("href=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .map(str::to_string)
        .collect();
    let mut files = 0;
    for href in &hrefs {
        if let Some(id) = href.strip_prefix('#') {
            assert!(dom.contains(&format!("id=\"{id}\"")), "#{id} has no target");
            continue;
        }
        assert!(
            !href.contains(':'),
            "{href}: the report links inside the run directory only"
        );
        let target: PathBuf = run.join(percent_decode(href));
        assert!(target.exists(), "{href} does not exist");
        files += 1;
    }
    // Per compared row: row result, both sides' results, the attempt folder, and per round both logs
    // and results; the failed row still links its row result, folder and logs.
    assert!(
        files >= 2 * (4 + 3 * 4) + 3,
        "{files} file links: {hrefs:?}"
    );
    for index in 0..3 {
        assert!(
            hrefs.contains(&format!("rows/{index:03}.json")),
            "row {index}'s result: {hrefs:?}"
        );
        assert!(
            hrefs.iter().any(
                |h| h.starts_with(&format!("rows/{index:03}/attempt-1/candidate"))
                    && h.ends_with(".log")
            ),
            "row {index}'s candidate log: {hrefs:?}"
        );
    }
    assert!(
        hrefs
            .iter()
            .any(|h| h == "rows/002/attempt-1/reference-1.log"),
        "the failed reference's log: {hrefs:?}"
    );
    assert!(hrefs.contains(&"rows/001/explain/index.html".to_string()));
    assert!(hrefs.contains(&"#row-001-explanation".to_string()));
    // The long identifiers break after their separators only.
    assert!(long_id.contains("qwen2-vl-2b-instruct"));
    assert!(
        dom.contains("qwen2-<wbr>vl-<wbr>2b-<wbr>instruct"),
        "no break points"
    );

    // The check sees a mid-word break where there is one: the shared theme's `overflow-wrap: anywhere`
    // table cells in a narrow table split `classify` (what the old matrix report did).
    let mut control = trtmc_report::html::Page::new("matrix", "control");
    control.extra_css = "main { width: 260px; }".into();
    let mut t = trtmc_report::table::Table::new(
        "t",
        vec![
            trtmc_report::table::Column::text("entry"),
            trtmc_report::table::Column::text("status"),
            trtmc_report::table::Column::text("note"),
        ],
    );
    t.push(
        ["tiny-cnn.classify", "compared", "reference failure"]
            .map(trtmc_report::table::Cell::text)
            .to_vec(),
    );
    control
        .sections
        .push(trtmc_report::html::Section::new("rows", "Rows", t.render()));
    let control_file = dir.join("control.html");
    std::fs::write(&control_file, control.render()).expect("write");
    let control_dom = browser
        .dump_dom(
            &chromium::file_url(&control_file, "wrapcheck"),
            &["--window-size=1400,1000"],
        )
        .stdout;
    assert!(
        body_number(&control_dom, "data-midword-breaks") > 0,
        "the check finds no break in a table squeezed to 260 px"
    );

    // Sorting and filtering still work, and the page loads with no console output.
    let selftest = browser
        .dump_dom(&chromium::file_url(&report, "selftest"), &[])
        .stdout;
    assert_eq!(
        body_attr(&selftest, "data-selftest"),
        "pass",
        "{}",
        chromium::self_check(&selftest)
    );
    let shot = browser.screenshot(
        &chromium::file_url(&report, ""),
        &dir.join("matrix-report.png"),
        (1400, 2000),
        &[],
    );
    let problems = chromium::console_problems(&shot.stderr);
    assert!(problems.is_empty(), "console output: {problems:#?}");
}
