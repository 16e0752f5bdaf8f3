//! Every kind of report this crate writes, opened from file:// in headless Chromium (Debian `chromium`):
//! run reports (test-only catalog and the embedded tiny-cnn model), the collection report, and a
//! 1000-row matrix-like table built from the shared components. Each must finish its script with no
//! errors and no console output, show its expected elements, sort and filter its tables (the page's
//! `#selftest`), and produce screenshots; model and case names containing `<script>` and quotes must
//! render as text.
//!
//! Fails when Chromium is missing, unless TRTMC_SKIP_BROWSER=1. TRTMC_KEEP_SCREENSHOTS=DIR keeps the PNGs.

use crate::chromium;

use std::path::Path;

use crate::common::*;
use crate::report_cli::{PROBE_MODEL, probe_catalog, probe_sweep};
use chromium::{Chromium, console_problems, file_url, self_check};

/// How the probe must appear in a serialized DOM: as text (angle brackets escaped), never as an element.
const PROBE_AS_TEXT: &str = "m&lt;script&gt;alert(1)&lt;/script&gt;\"'";

fn ok(args: &[&str]) {
    let o = run(args);
    assert_eq!(code(&o), 0, "trtmc-bench {args:?}: {}", stderr(&o));
}

/// Loads `page#selftest`, checks the self-check and the expected markers, and takes a screenshot.
fn check_page(
    browser: &Chromium,
    page: &Path,
    shots: &Path,
    name: &str,
    expected: &[&str],
) -> String {
    let url = file_url(page, "selftest");
    let dom = browser.dump_dom(&url, &[]).stdout;
    let check = self_check(&dom);
    assert!(
        dom.contains("data-report-ready=\"true\""),
        "{name}: the script did not finish: {check}"
    );
    assert!(
        dom.contains("data-report-errors=\"0\""),
        "{name}: page errors: {check}"
    );
    assert!(
        dom.contains("data-selftest=\"pass\""),
        "{name}: sorting/filtering self-test: {check}"
    );
    assert!(
        check.contains("errors=0") && check.contains("scripts=1"),
        "{name}: {check}"
    );
    for marker in expected {
        assert!(dom.contains(marker), "{name}: `{marker}` missing");
    }
    assert!(
        !dom.contains("<script>alert"),
        "{name}: a name became an element"
    );
    let shot = shots.join(format!("report-{name}.png"));
    let launch = browser.screenshot(&file_url(page, ""), &shot, (1400, 2000), &[]);
    let problems = console_problems(&launch.stderr);
    assert!(problems.is_empty(), "{name}: console output: {problems:#?}");
    dom
}

#[test]
fn run_and_collection_reports_render_in_headless_chromium() {
    let Some(browser) = chromium::require() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let shots = tmp.path().join("shots");
    std::fs::create_dir_all(&shots).expect("mkdir");
    let root = tmp.path().join("results");
    let catalog = test_catalog().display().to_string();
    let probe = probe_catalog(tmp.path());
    let path = |p: &Path| p.to_str().expect("utf8").to_string();

    ok(&[
        "run",
        "--manifest-root",
        &catalog,
        "--model",
        "test-noop",
        "--warmup",
        "5",
        "--iterations",
        "150",
        "-o",
        &path(&root.join("noop")),
        "--quiet",
    ]);
    probe_sweep(&probe, &root.join("probe"));
    ok(&[
        "run",
        "--model",
        "tiny-cnn",
        "--warmup",
        "3",
        "--iterations",
        "40",
        "--bundle-cache",
        &path(&tmp.path().join("bundles")),
        "-o",
        &path(&root.join("tiny-cnn")),
        "--quiet",
    ]);
    ok(&["report", &path(&root), "--quiet"]);

    let per_case = [
        "id=\"overview\"",
        "id=\"summary-table\"",
        "id=\"cases\"",
        "data-plot=\"histogram\"",
        "data-plot=\"cdf\"",
        "data-plot=\"timeline\"",
        "class=\"validity",
        "Result is: ",
        "samples: ",
    ];
    let dom = check_page(
        &browser,
        &root.join("noop/report.html"),
        &shots,
        "run-noop",
        &per_case,
    );
    assert!(dom.contains("data-report-kind=\"run\""));
    let dom = check_page(
        &browser,
        &root.join("tiny-cnn/report.html"),
        &shots,
        "run-tiny-cnn",
        &per_case,
    );
    assert!(
        dom.contains("tiny-cnn") && dom.contains("image/s"),
        "classify throughput is shown"
    );
    let mut probe_markers = per_case.to_vec();
    probe_markers.extend([
        "id=\"sweeps\"",
        "data-plot=\"sweep-latency\"",
        "data-plot=\"bars-latency\"",
        PROBE_AS_TEXT,
    ]);
    check_page(
        &browser,
        &root.join("probe/report.html"),
        &shots,
        "run-probe",
        &probe_markers,
    );

    let mut collection = per_case.to_vec();
    collection.extend([
        "data-report-kind=\"report\"",
        "id=\"runs-table\"",
        "id=\"comparison\"",
        "data-plot=\"bars-latency\"",
        "data-plot=\"bars-throughput\"",
        "data-plot=\"sweep-latency\"",
        "data-plot=\"sweep-throughput\"",
        PROBE_AS_TEXT,
    ]);
    let dom = check_page(
        &browser,
        &root.join("report.html"),
        &shots,
        "collection",
        &collection,
    );
    assert_eq!(
        dom.matches("<article class=\"case\"").count(),
        5,
        "1 no-op + 3 sweep points + 1 tiny-cnn"
    );
    // The probe is also a bar label inside an SVG: still text there.
    let svg_labels = dom
        .split("<svg")
        .filter(|s| s.contains(PROBE_AS_TEXT.split('"').next().unwrap_or("")))
        .count();
    assert!(svg_labels > 0, "the probe is drawn as an SVG label");

    // Dark mode follows the system preference.
    let dark = browser
        .dump_dom(
            &file_url(&root.join("report.html"), ""),
            &["--force-dark-mode"],
        )
        .stdout;
    let check = self_check(&dark);
    assert!(
        check.contains("theme=dark") && check.contains("bg=rgb(15,19,26)"),
        "{check}"
    );
    let light = self_check(
        &browser
            .dump_dom(&file_url(&root.join("report.html"), ""), &[])
            .stdout,
    );
    assert!(
        light.contains("theme=light") && light.contains("bg=rgb(246,247,249)"),
        "{light}"
    );
    let launch = browser.screenshot(
        &file_url(&root.join("report.html"), ""),
        &shots.join("report-collection-dark.png"),
        (1400, 2000),
        &["--force-dark-mode"],
    );
    assert!(console_problems(&launch.stderr).is_empty());
}

#[test]
fn a_thousand_row_table_from_the_shared_components_renders_sorts_and_filters() {
    use trtmc_report::html::{Page, Section, pill, text};
    use trtmc_report::table::{Cell, Column, Table};

    let Some(browser) = chromium::require() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let mut t = Table::new(
        "matrix-table",
        vec![
            Column::text("entry"),
            Column::text("family").filter(),
            Column::text("light").filter(),
            Column::num("candidate p50 ms"),
            Column::num("reference p50 ms"),
            Column::num("ratio"),
        ],
    );
    for i in 0..1000u32 {
        let cand = 1.0 + f64::from((i * 7919) % 1000) / 10.0;
        let refr = 1.0 + f64::from((i * 104_729) % 1000) / 10.0;
        let light = ["green", "yellow", "red"][(i % 3) as usize];
        let name = if i == 500 {
            PROBE_MODEL.to_string()
        } else {
            format!("family-{}.model-{i}.generate", i % 76)
        };
        t.push(vec![
            Cell::text(&name),
            Cell::text(&format!("family-{}", i % 76)),
            Cell::markup(pill(light, light), light),
            Cell::num(cand, &format!("{cand:.2}")),
            Cell::num(refr, &format!("{refr:.2}")),
            Cell::num(cand / refr, &format!("{:.3}", cand / refr)),
        ]);
    }
    let mut page = Page::new("matrix", "matrix-like table, 1000 rows");
    page.subtitle.push(text(
        "shared components: page shell, theme, sortable and filterable table",
    ));
    page.sections.push(Section::new("rows", "Rows", t.render()));
    let file = tmp.path().join("matrix.html");
    std::fs::write(&file, page.render()).expect("write");

    let dom = check_page(
        &browser,
        &file,
        tmp.path(),
        "matrix-1000",
        &[
            "data-report-kind=\"matrix\"",
            "id=\"matrix-table\"",
            PROBE_AS_TEXT,
        ],
    );
    assert!(
        self_check(&dom).contains("rows=1000"),
        "{}",
        self_check(&dom)
    );
    assert_eq!(dom.matches("<tr>").count(), 1001, "header + 1000 rows");
    let ready = dom
        .split("data-ready-ms=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or("?");
    let selftest = dom
        .split("data-selftest-ms=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or("?");
    eprintln!(
        "1000-row table: script ready at {ready} ms after navigation start, sort ×2 + filter ×3 in {selftest} ms"
    );
}
