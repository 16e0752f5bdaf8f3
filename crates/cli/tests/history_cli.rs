//! `trtmc-bench history` on result folders the real binary wrote: add (idempotent, all-or-nothing per
//! folder, safe against kill -9 and concurrent writers), list, show, check (exit 9, JUnit, Markdown),
//! report (headless Chromium), and the real tiny-cnn series with a slowdown injected from point 12.
//!
//! Every test runs on SQLite, and again on PostgreSQL when TRTMC_TEST_POSTGRES=postgres://… names a
//! server (CI starts one in `.ci/run`; each test creates and drops its own database there).

use crate::chromium;
use crate::test_db::databases;
use crate::xmllint;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::*;

const FAIL_ON: i32 = 9;
const PROBE: &str = "c<script>alert(1)</script>\"'";

fn p(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

fn history(db: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["history", args[0], "--db", db];
    all.extend_from_slice(&args[1..]);
    run(&all)
}

/// A catalog with one test_sleep profile: a model whose every call sleeps `request.sleep_us`.
fn sleep_catalog(dir: &Path) -> PathBuf {
    let root = dir.join("sleep-catalog");
    std::fs::create_dir_all(root.join("sleeper")).expect("mkdir");
    std::fs::write(
        root.join("sleeper/MODEL.toml"),
        "name = \"m<script>alert(1)</script>\\\"'\"\nsummary = \"sleeps\"\ntask_strategy = \"test_sleep\"\ntest_manifests = [\"cases.toml\"]\n[source]\nnone = true\n",
    )
    .expect("write");
    std::fs::write(
        root.join("sleeper/cases.toml"),
        "[[case]]\nname = \"nap\"\n[case.request]\nsleep_us = 1000\n",
    )
    .expect("write");
    root
}

/// One real `run` of the sleeping model: `calls` timed calls of `sleep_us` each, into `out`; with
/// `slowdown`, every timed call is made that fraction slower by the run's test hook (the same
/// workload, slower).
fn sleep_run_slowed(catalog: &Path, out: &Path, sleep_us: u32, calls: u32, slowdown: Option<&str>) {
    let mut cmd = Command::new(BIN);
    cmd.args([
        "run",
        "--manifest-root",
        p(catalog),
        "--model",
        "m<script>alert(1)</script>\"'",
    ])
    .args([
        "--set",
        &format!("request.sleep_us={sleep_us}"),
        "--warmup",
        "2",
    ])
    .args(["--iterations", &calls.to_string(), "-o", p(out), "-q"])
    .env_remove("TRTMC_MANIFEST_ROOT")
    .env("TRTMC_TEST", "1");
    if let Some(s) = slowdown {
        cmd.env("TRTMC_TEST_CALL_SLOWDOWN", s);
    }
    let o = cmd.output().expect("run");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

fn sleep_run(catalog: &Path, out: &Path, sleep_us: u32, calls: u32) {
    sleep_run_slowed(catalog, out, sleep_us, calls, None);
}

/// `n` copies of a real run's result folder, each a distinct result (its own run id and time).
fn copies(real: &Path, root: &Path, n: usize) -> Vec<PathBuf> {
    let doc = read_json(&real.join("result.json"));
    (0..n)
        .map(|i| {
            let dir = root.join(format!("copy-{i:04}"));
            std::fs::create_dir_all(&dir).expect("mkdir");
            let mut d = doc.clone();
            d["run_id"] = format!("copy-{i}").into();
            d["created"] = format!(
                "2026-01-01T{:02}:{:02}:{:02}Z",
                i / 3600,
                (i / 60) % 60,
                i % 60
            )
            .into();
            std::fs::write(
                dir.join("result.json"),
                serde_json::to_vec(&d).expect("json"),
            )
            .expect("write");
            dir
        })
        .collect()
}

/// history.json of `history report`, read back.
fn exported(db: &str, dir: &Path) -> serde_json::Value {
    let out = dir.join(format!("report-{}", std::process::id()));
    let o = history(db, &["report", "-o", p(&out)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    read_json(&out.join("history.json"))
}

/// Points per series in an export.
fn point_counts(export: &serde_json::Value) -> Vec<usize> {
    export["series"]
        .as_array()
        .expect("series")
        .iter()
        .map(|s| s["points"].as_array().expect("points").len())
        .collect()
}

#[test]
fn add_list_show_and_adding_again_changes_nothing() {
    let tmp = tempfile::tempdir().expect("tmp");
    let catalog = sleep_catalog(tmp.path());
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    sleep_run(&catalog, &a, 500, 20);
    sleep_run(&catalog, &b, 500, 20);
    for db in databases(tmp.path(), "trtmc_cli", "add") {
        let db = db.url.as_str();
        let o = history(db, &["add", p(&a), p(&b), "--commit", "abc123"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert!(
            stdout(&o).contains("2 of 2 folder(s) stored (4 point(s))"),
            "{}",
            stdout(&o)
        );
        let again = history(db, &["add", p(&b)]);
        assert_eq!(code(&again), 0, "{}", stderr(&again));
        assert!(
            stdout(&again).contains("already stored"),
            "{}",
            stdout(&again)
        );
        assert_eq!(
            point_counts(&exported(db, tmp.path())),
            vec![2, 2],
            "stored once"
        );

        let list = history(db, &["list", "--metric", "p50_ms"]);
        assert_eq!(code(&list), 0, "{}", stderr(&list));
        let text = stdout(&list);
        assert!(
            text.contains(" · nap · ") && text.contains("p50_ms"),
            "{text}"
        );
        assert!(!text.contains("p99_ms"), "--metric filters: {text}");
        let id = text
            .lines()
            .nth(1)
            .and_then(|l| l.split_whitespace().next())
            .expect("a series id")
            .to_string();
        let show = history(db, &["show", &id]);
        assert_eq!(code(&show), 0, "{}", stderr(&show));
        let shown = stdout(&show);
        assert_eq!(shown.matches("abc123").count(), 2, "{shown}");
        assert!(shown.contains(p(&a)) && shown.contains(p(&b)), "{shown}");

        let unknown = history(db, &["show", "9999"]);
        assert_refused(&unknown, 3, "no series 9999");
    }
}

#[test]
fn a_folder_that_is_not_a_result_stops_the_add_before_anything_is_stored() {
    let tmp = tempfile::tempdir().expect("tmp");
    let catalog = sleep_catalog(tmp.path());
    let good = tmp.path().join("good");
    sleep_run(&catalog, &good, 200, 10);
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let broken = tmp.path().join("broken");
    std::fs::create_dir_all(&broken).expect("mkdir");
    std::fs::write(broken.join("result.json"), "{\"schema\": ").expect("write");
    for db in databases(tmp.path(), "trtmc_cli", "notresult") {
        let db = db.url.as_str();
        let o = history(db, &["add", p(&good), p(&empty)]);
        assert_refused(&o, 3, "not a trtmc result folder");
        let o = history(db, &["add", p(&good), p(&broken)]);
        assert_refused(&o, 3, "cannot read this result document");
        assert!(
            point_counts(&exported(db, tmp.path())).is_empty(),
            "nothing stored"
        );
    }
    let o = run(&["history", "list", "--db", "/proc/no/such/history.sqlite"]);
    assert_refused(&o, 6, "cannot open the history database");
    let o = run(&[
        "history",
        "list",
        "--db",
        "postgres://nobody@127.0.0.1:1/none",
    ]);
    assert_eq!(code(&o), 7, "{}", stderr(&o));
}

#[test]
fn kill_9_during_an_ingest_leaves_only_whole_folders() {
    let tmp = tempfile::tempdir().expect("tmp");
    let catalog = sleep_catalog(tmp.path());
    let real = tmp.path().join("real");
    sleep_run(&catalog, &real, 200, 10);
    let folders = copies(&real, &tmp.path().join("copies"), 400);
    for db in databases(tmp.path(), "trtmc_cli", "kill") {
        let log = tmp.path().join("add.log");
        let mut child = Command::new(BIN)
            .args(["history", "add", "--db", &db.url])
            .args(&folders)
            .env("TRTMC_TEST", "1")
            .stdout(std::fs::File::create(&log).expect("log"))
            .stderr(Stdio::null())
            .spawn()
            .expect("start history add");
        kill_9_when(
            &mut child,
            std::time::Duration::from_secs(120),
            "20 folders stored",
            || cache_lines(&log) >= 20,
        );
        let before = cache_lines(&log);
        assert!(before < folders.len(), "killed before the end");
        // Every folder the killed process stored is whole: adding all again stores exactly the rest.
        let mut args = vec!["add"];
        args.extend(folders.iter().map(|f| p(f)));
        let o = history(&db.url, &args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let counts = point_counts(&exported(&db.url, tmp.path()));
        assert_eq!(
            counts,
            vec![400, 400],
            "each folder once, each with both points"
        );
    }
}

#[test]
fn concurrent_writers_store_each_folder_once() {
    let tmp = tempfile::tempdir().expect("tmp");
    let catalog = sleep_catalog(tmp.path());
    let real = tmp.path().join("real");
    sleep_run(&catalog, &real, 200, 10);
    let folders = copies(&real, &tmp.path().join("copies"), 60);
    for db in databases(tmp.path(), "trtmc_cli", "concurrent") {
        // Four Slurm-task-like writers over the same folders, each in another order.
        let children: Vec<_> = (0..4)
            .map(|w| {
                let mut order = folders.clone();
                order.rotate_left(w * 15);
                Command::new(BIN)
                    .args(["history", "add", "--db", &db.url])
                    .args(&order)
                    .env("TRTMC_TEST", "1")
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("start history add")
            })
            .collect();
        let mut stored = 0;
        for c in children {
            let o = c.wait_with_output().expect("wait");
            assert_eq!(code(&o), 0, "{}", stderr(&o));
            stored += stdout(&o)
                .lines()
                .filter(|l| l.starts_with("stored "))
                .count();
        }
        assert_eq!(stored, 60, "each folder stored by exactly one writer");
        assert_eq!(point_counts(&exported(&db.url, tmp.path())), vec![60, 60]);
    }
}

/// Sixteen runs of the sleeping model, the last seven 60 % slower (the call-slowdown hook: the same
/// workload, so one series), labelled with commits; the first
/// commit is an XSS probe.
fn stepped_series(tmp: &Path) -> Vec<(String, PathBuf)> {
    let catalog = sleep_catalog(tmp);
    (0..16)
        .map(|i| {
            let dir = tmp.join(format!("step-{i:02}"));
            sleep_run_slowed(&catalog, &dir, 1000, 15, (i >= 9).then_some("0.6"));
            let commit = if i == 0 {
                PROBE.to_string()
            } else {
                format!("c{i:02}")
            };
            (commit, dir)
        })
        .collect()
}

#[test]
fn check_fails_on_a_confirmed_slowdown_with_junit_and_markdown() {
    let tmp = tempfile::tempdir().expect("tmp");
    let series = stepped_series(tmp.path());
    for db in databases(tmp.path(), "trtmc_cli", "check") {
        let db = db.url.as_str();
        for (commit, dir) in &series {
            let o = history(db, &["add", "--commit", commit, p(dir)]);
            assert_eq!(code(&o), 0, "{}", stderr(&o));
        }
        let junit = tmp.path().join("history.xml");
        let md = tmp.path().join("history.md");
        let o = history(
            db,
            &[
                "check",
                "--fail-on",
                "regression",
                "--since",
                "c03",
                "--export-junit",
                p(&junit),
                "--export-markdown",
                p(&md),
            ],
        );
        assert_eq!(code(&o), FAIL_ON, "{}\n{}", stdout(&o), stderr(&o));
        assert!(
            stderr(&o).contains("--fail-on regression: "),
            "{}",
            stderr(&o)
        );
        let text = stdout(&o);
        assert!(
            text.contains("between c08 and c09"),
            "the commit range: {text}"
        );
        assert!(
            text.contains(p(&series[8].1)) && text.contains(p(&series[9].1)),
            "both sides' folders: {text}"
        );
        xmllint::assert_valid_junit(&junit);
        let xml = std::fs::read_to_string(&junit).expect("junit");
        assert!(
            xml.contains("<failure message=\"regression: slowdown"),
            "{xml}"
        );
        let summary = std::fs::read_to_string(&md).expect("markdown");
        assert!(summary.contains("`c08`..`c09`"), "{summary}");

        // Nothing changed after c09: no regression since then, exit 0.
        let o = history(db, &["check", "--fail-on", "regression", "--since", "c09"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert!(
            stdout(&o).contains("0 confirmed slowdown(s) since c09"),
            "{}",
            stdout(&o)
        );
        let o = history(db, &["check", "--since", "no-such-commit"]);
        assert_eq!(code(&o), 3, "{}", stderr(&o));
        let o = history(db, &["check", "--fail-on", "red"]);
        assert_refused(&o, 2, "`history check` takes --fail-on regression");
    }
}

#[test]
fn the_report_renders_in_headless_chromium_with_every_string_escaped() {
    let Some(browser) = chromium::require() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let series = stepped_series(tmp.path());
    let db = tmp.path().join("report.sqlite");
    for (commit, dir) in &series {
        let o = history(p(&db), &["add", "--commit", commit, p(dir)]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let out = tmp.path().join("report");
    let o = history(p(&db), &["report", "-o", p(&out)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let html = std::fs::read_to_string(out.join("index.html")).expect("page");
    assert!(html.contains("Content-Security-Policy"));
    assert!(
        !html.contains("<script>alert"),
        "an input string became markup"
    );
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http"),
        "self-contained"
    );
    let dom = self_tested_dom(&browser, &out.join("index.html"));
    assert!(
        dom.contains("class=\"change\""),
        "the change point is marked"
    );
    assert!(
        dom.contains("between c08 and c09"),
        "its commit range is shown"
    );
    assert!(
        dom.contains("m&lt;script&gt;alert(1)&lt;/script&gt;"),
        "the model name as text"
    );
    assert!(!dom.contains("<script>alert"), "a name became an element");
    let csv = std::fs::read_to_string(out.join("history.csv")).expect("csv");
    assert_eq!(
        csv.lines().count(),
        1 + 2 * 16,
        "a header and one line per point"
    );
    let json = read_json(&out.join("history.json"));
    assert_eq!(json["schema"], "trtmc.history-export/v1");
    assert_valid("history-export.schema.json", &json);
}

/// tiny-cnn on tract, 20 runs, the candidate slowed by `slowdown` from point 12 (index 11) on by the
/// run's call-slowdown test hook; returns the p50 change points `history check` reports.
fn tiny_cnn_series(tmp: &Path, name: &str, slowdown: Option<&str>) -> Vec<serde_json::Value> {
    let cache = tmp.join("cache");
    let db = tmp.join(format!("{name}.sqlite"));
    for i in 0..20 {
        let dir = tmp.join(format!("{name}-{i:02}"));
        let mut cmd = Command::new(BIN);
        cmd.args([
            "run",
            "--model",
            "tiny-cnn",
            "--runtime",
            "tract",
            "--warmup",
            "20",
            "--iterations",
            "300",
            "-q",
        ])
        .arg("--bundle-cache")
        .arg(&cache)
        .arg("-o")
        .arg(&dir)
        .env("TRTMC_TEST", "1")
        .env_remove("TRTMC_MANIFEST_ROOT");
        if let (Some(s), true) = (slowdown, i >= 11) {
            cmd.env("TRTMC_TEST_CALL_SLOWDOWN", s);
        }
        let o = cmd.output().expect("run");
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let o = history(
            p(&db),
            &["add", "--commit", &format!("c{:02}", i + 1), p(&dir)],
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let export = exported(p(&db), tmp);
    export["series"]
        .as_array()
        .expect("series")
        .iter()
        .filter(|s| s["series"]["metric"] == "p50_ms")
        .flat_map(|s| s["changes"].as_array().cloned().unwrap_or_default())
        .collect()
}

// A series is measured one run after another, so a change of machine load between its points is a real
// change the history must report: with the other tests of the pass starting and stopping beside it, an
// A/A series once moved 13 % at point 7 (CI, stop 43). It runs alone, after the rest (scripts/test).
//
// The step is 60 %, not 30 %: the p50 of one run of tiny-cnn drifts ±15 % from run to run on these
// machines even alone (A/A points 0.78–1.04 ms in one series), so a 30 % step was once placed two
// points late (CI, 2026-12-04) and once measured at 1.147. How small a step the history finds, and how
// exactly it places it, is measured over repeats by scripts/history-validity.py (docs/performance.md),
// not by one series in a test.
#[test]
#[ignore = "needs a steady machine: scripts/test runs it alone after the other tests"]
fn a_real_60_percent_slowdown_is_found_at_point_12_and_an_aa_series_has_none() {
    let tmp = tempfile::tempdir().expect("tmp");
    let changes = tiny_cnn_series(tmp.path(), "slow", Some("0.6"));
    assert_eq!(changes.len(), 1, "{changes:#?}");
    let at = changes[0]["at"].as_u64().expect("at");
    // `at` is the index of the first slower point: point 12 is index 11.
    assert!((10..=12).contains(&at), "found at index {at}: {changes:#?}");
    assert_eq!(changes[0]["direction"], "slowdown");
    let ratio = changes[0]["ratio"]["ratio"].as_f64().expect("ratio");
    // The realized ratio is above the nominal one (the busy wait competes with the runtime's threads:
    // docs/run.md, TRTMC_TEST_CALL_SLOWDOWN): 1.59–1.62 measured alone.
    assert!((1.35..2.2).contains(&ratio), "ratio {ratio}");
    let aa = tiny_cnn_series(tmp.path(), "aa", None);
    assert!(aa.is_empty(), "A/A: {aa:#?}");
}

#[test]
fn run_with_history_stores_its_committed_result() {
    let tmp = tempfile::tempdir().expect("tmp");
    let catalog = sleep_catalog(tmp.path());
    for db in databases(tmp.path(), "trtmc_cli", "runflag") {
        let out = tmp.path().join(format!("run-{}", db.admin.is_some()));
        let o = run(&[
            "run",
            "--manifest-root",
            p(&catalog),
            "--model",
            "m<script>alert(1)</script>\"'",
            "--iterations",
            "10",
            "-o",
            p(&out),
            "-q",
            "--history",
            &db.url,
        ]);
        assert_refused(&o, 0, "history: stored 2 point(s)");
        let export = exported(&db.url, tmp.path());
        assert_eq!(point_counts(&export), vec![1, 1]);
        let folder = export["series"][0]["points"][0]["folder"]
            .as_str()
            .expect("folder");
        assert!(
            folder.ends_with(&format!("run-{}", db.admin.is_some())),
            "{folder}"
        );
    }
}

#[test]
fn matrix_run_with_history_stores_both_sides_of_each_compared_row() {
    let tmp = tempfile::tempdir().expect("tmp");
    let catalog = tiny_cnn_catalog(tmp.path());
    let env = write_matrix_environment(tmp.path(), "");
    let suite = tmp.path().join("suite.yaml");
    std::fs::write(
        &suite,
        "schema: trtmc.perf-suite/v1\nname: history\nthresholds: {green_max: 1.3, yellow_max: 2.0, min_samples: 10}\nmeasure: {warmup: 3, iterations: 24, rounds: 6}\nrows:\n  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: single\n    candidate: {runtime: onnxruntime}\n    reference: {backend: \"trtmc:onnxruntime\"}\n",
    )
    .expect("suite");
    let db = tmp.path().join("matrix.sqlite");
    let out = tmp.path().join("matrix");
    let o = run(&[
        "matrix",
        "run",
        p(&suite),
        "--environment",
        p(&env),
        "--manifest-root",
        p(&catalog),
        "-o",
        p(&out),
        "--history",
        p(&db),
    ]);
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("history: stored 2 point(s)"),
        "{}",
        stderr(&o)
    );
    let export = exported(p(&db), tmp.path());
    let series = export["series"].as_array().expect("series");
    // Both sides measured the same workload on the same runtime, version and machine: one series,
    // one point per side.
    assert_eq!(series.len(), 1, "{export:#}");
    let points = series[0]["points"].as_array().expect("points");
    assert_eq!(points.len(), 2, "candidate and reference: {export:#}");
    let results = read_json(&out.join("results.json"));
    let row = &results["rows"][0];
    for point in points {
        assert_eq!(point["kind"], "matrix");
        let side = if point["case_dir"]
            .as_str()
            .expect("case")
            .ends_with("(candidate)")
        {
            "candidate"
        } else {
            "reference"
        };
        assert_eq!(
            series[0]["series"]["workload"], row[side]["identity"],
            "{side}"
        );
        // The side's p50 over its six rounds, with the rounds' interval.
        let rounds: Vec<f64> = row[side]["round_p50_ms"]
            .as_array()
            .expect("rounds")
            .iter()
            .map(|v| v.as_f64().expect("f64"))
            .collect();
        assert_eq!(rounds.len(), 6);
        let (low, high) = (
            point["low"].as_f64().expect("low"),
            point["high"].as_f64().expect("high"),
        );
        assert_eq!(low, rounds.iter().copied().fold(f64::INFINITY, f64::min));
        assert_eq!(
            high,
            rounds.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        );
        assert!(
            point["verdict"]
                .as_str()
                .expect("verdict")
                .starts_with(&format!("{side}: "))
        );
    }
}

/// `tune` of tiny-cnn over tract's thread counts with the tune tests' quick settings, into `out`.
fn tune_threads(cache: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = TUNE_TINY_CNN_THREADS.to_vec();
    args.extend(["--search", "full", "-o", p(out), "--quiet"]);
    args.extend_from_slice(crate::tune_cli::QUICK);
    args.extend_from_slice(extra);
    bench_cached(cache, &args)
}

#[test]
fn tune_with_history_stores_each_measured_route_as_its_own_series() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("tune");
    let cache = tmp.path().join("bundles");
    let o = tune_threads(&cache, &out, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let summary = read_json(&out.join("tuning-summary.json"));
    let context = &summary["context"];
    assert!(context["created"].as_str().is_some(), "{context:#}");
    assert!(context["program"]["revision"].as_str().is_some());
    let eligible: Vec<&serde_json::Value> = summary["routes"]
        .as_array()
        .expect("routes")
        .iter()
        .filter(|r| r["eligible"] == true)
        .collect();
    assert!(eligible.len() >= 2, "{summary:#}");
    for db in databases(tmp.path(), "trtmc_cli", "tune") {
        let o = history(&db.url, &["add", p(&out)]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let export = exported(&db.url, tmp.path());
        let series = export["series"].as_array().expect("series");
        // One series per measured route, each holding the route's cost with its interval.
        assert_eq!(series.len(), eligible.len(), "{export:#}");
        for route in &eligible {
            let label = format!("route {}", route["route"].as_str().expect("route"));
            let s = series
                .iter()
                .find(|s| s["series"]["label"] == label.as_str())
                .unwrap_or_else(|| panic!("no series {label}: {export:#}"));
            let point = &s["points"][0];
            assert_eq!(point["kind"], "tune");
            let estimate = if route["head_to_head"].is_object() {
                &route["head_to_head"]
            } else {
                &route["search"]
            };
            assert_eq!(point["estimate"], estimate["cost"]["estimate"], "{label}");
            assert_eq!(point["low"], estimate["cost"]["low"], "{label}");
            assert_eq!(s["series"]["model"], "tiny-cnn");
            assert_eq!(s["series"]["runtime"], "tract");
        }
        // The same folder again is stored once.
        let o = history(&db.url, &["add", p(&out)]);
        assert!(stdout(&o).contains("already stored"), "{}", stdout(&o));
    }
    // `tune --history` stores on completion, as `run --history` does.
    let db = tmp.path().join("flag.sqlite");
    let o = tune_threads(
        &cache,
        &tmp.path().join("tune-again"),
        &["--history", p(&db)],
    );
    assert_refused(
        &o,
        0,
        &format!("history: stored {} point(s)", eligible.len()),
    );
}
