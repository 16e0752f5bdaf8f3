//! `trtmc-bench matrix` through the real binary on the embedded tiny-cnn model: preflight, lights that
//! match the measured ratios, an injected slowdown (red), A/A (green), contract mismatches (workload,
//! precision, boundary), kill -9 then resume, preparation receipts, the report in headless Chromium,
//! and the Slurm job-array executor (with TRTMC_TEST_SLURM=1, as in CI: then it fails if Slurm cannot
//! be reached).
//!
//! Suites here are small (a few rows of tiny-cnn, 20 timed calls): correctness, not speed.

use crate::chromium;
use crate::xmllint;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::common::*;
use serde_json::Value;

/// Rows are timed one test at a time: parallel tests would load the 2 cores unevenly between the two
/// sides of a row.
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub(crate) fn measuring() -> std::sync::MutexGuard<'static, ()> {
    MEASURING.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) struct Setup {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) catalog: PathBuf,
    pub(crate) env: PathBuf,
}

pub(crate) fn setup(extra_env: &str) -> Setup {
    let dir = tempfile::tempdir().expect("tmp");
    let catalog = tiny_cnn_catalog(dir.path());
    let env = write_matrix_environment(
        dir.path(),
        &format!("slurm: {{poll_s: 0.5, timeout_s: 600}}\n{extra_env}"),
    );
    Setup { dir, catalog, env }
}

pub(crate) const ROW_ORT: &str = "  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: single\n    candidate: {runtime: onnxruntime}\n    reference: {backend: onnxruntime-python}\n";

pub(crate) fn suite(s: &Setup, name: &str, rows: &str) -> PathBuf {
    let path = s.dir.path().join(format!("{name}.yaml"));
    std::fs::write(
        &path,
        format!(
            "schema: trtmc.perf-suite/v1\nname: {name}\nthresholds: {{green_max: 1.3, yellow_max: 2.0, min_samples: 10}}\nmeasure: {{warmup: 3, iterations: 24, rounds: 6}}\nrows:\n{rows}"
        ),
    )
    .expect("write suite");
    path
}

pub(crate) fn p(path: &Path) -> String {
    path.to_str().expect("utf8").to_string()
}

/// `matrix check SUITE` against the setup's environment and catalog.
fn check(s: &Setup, suite: &str) -> Output {
    matrix(
        s,
        &[
            "check",
            suite,
            "--environment",
            &p(&s.env),
            "--manifest-root",
            &p(&s.catalog),
        ],
        &[],
    )
}

pub(crate) fn matrix(_s: &Setup, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.arg("matrix")
        .args(args)
        .env_remove("TRTMC_MANIFEST_ROOT")
        .env_remove("TRTMC_TEST_MATRIX_CANDIDATE_DELAY_US")
        .env_remove("TRTMC_TEST_MATRIX_ABORT_ROW")
        .env("TRTMC_TEST", "1");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("start trtmc-bench")
}

fn run_suite(s: &Setup, suite: &Path, out: &Path, extra: &[&str], envs: &[(&str, &str)]) -> Output {
    let (suite, env, cat, out) = (p(suite), p(&s.env), p(&s.catalog), p(out));
    let mut args = vec![
        "run",
        &suite,
        "--environment",
        &env,
        "--manifest-root",
        &cat,
        "-o",
        &out,
    ];
    args.extend_from_slice(extra);
    matrix(s, &args, envs)
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn samples(side: &Value) -> Vec<f64> {
    side["samples_ms"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|v| v.as_f64().expect("f64"))
        .collect()
}

fn numbers(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|v| v.as_f64().expect("f64"))
        .collect()
}

/// Every compared row's ratio is the median of its rounds' p50 ratios (each round's p50 being the
/// median of that round's calls), and its light is the claim its interval backs (docs/matrix.md).
fn assert_lights_match_ratios(results: &Value) {
    let t = &results["suite"]["thresholds"];
    let (green, yellow) = (
        t["green_max"].as_f64().unwrap(),
        t["yellow_max"].as_f64().unwrap(),
    );
    for row in results["rows"].as_array().expect("rows") {
        if row["status"] != "compared" {
            continue;
        }
        let c = &row["comparison"];
        let (cand, refr) = (
            numbers(&row["candidate"]["round_p50_ms"]),
            numbers(&row["reference"]["round_p50_ms"]),
        );
        assert_eq!(cand.len(), c["rounds"].as_u64().unwrap() as usize, "{row}");
        assert_eq!(cand.len(), refr.len());
        assert_eq!(row["round_loads"].as_array().unwrap().len(), cand.len());
        let ratios: Vec<f64> = cand.iter().zip(&refr).map(|(a, b)| a / b).collect();
        let ratio = median(&ratios);
        assert_eq!(c["method"], "paired_rounds_median");
        assert!(
            (c["candidate_p50_ms"].as_f64().unwrap() - median(&samples(&row["candidate"]))).abs()
                < 1e-9
        );
        assert!(
            (c["ratio"].as_f64().unwrap() - ratio).abs() < 1e-9 * ratio.max(1.0),
            "{row}"
        );
        let (low, high) = (
            c["ci_low"].as_f64().unwrap(),
            c["ci_high"].as_f64().unwrap(),
        );
        let expected = if high <= green {
            "green"
        } else if ratio > yellow && low > green {
            "red"
        } else {
            "yellow"
        };
        assert_eq!(c["light"], expected, "row {}: ratio {ratio}", row["id"]);
        assert!(c["ci_low"].as_f64().unwrap() <= ratio && ratio <= c["ci_high"].as_f64().unwrap());
    }
}

fn rows_by_id(results: &Value) -> Vec<(String, Value)> {
    results["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| (r["id"].as_str().unwrap().to_string(), r.clone()))
        .collect()
}

#[test]
fn the_checked_in_release_suites_pass_check() {
    let check = |suite: &str| {
        let o = run(&[
            "matrix",
            "check",
            &p(&repo_root().join("benchmarks/performance").join(suite)),
            "--environment",
            &p(&repo_root().join("benchmarks/performance/environments/cpu.yaml")),
        ]);
        assert_eq!(code(&o), 0, "{suite}: {}", stderr(&o));
        stdout(&o)
    };
    // The full suite: the same rows with release-grade counts.
    let full = check("release-full.yaml");
    assert!(
        full.contains("densenet121.classify/light-densenet121/single/tract"),
        "{full}"
    );
    assert!(!full.contains("warning:"), "{full}");
    let out = check("release.yaml");
    // The two suites hold the same rows (the row id starts each row's line).
    let row_ids = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.strip_prefix("  ")?.split_whitespace().next())
            .filter(|word| word.contains('/'))
            .map(str::to_string)
            .collect()
    };
    let (quick_ids, full_ids) = (row_ids(&out), row_ids(&full));
    assert!(quick_ids.len() >= 30, "{out}");
    // …except that the quick pass runs each generated family on its l0 smoke variant.
    let real_size: Vec<String> = quick_ids.iter().map(|id| id.replace("-l0/", "/")).collect();
    assert_eq!(
        real_size, full_ids,
        "release.yaml and release-full.yaml rows"
    );
    assert!(out.contains("passes the preflight"), "{out}");
    assert!(
        out.contains("resnet50.classify/light-resnet50/single/tract"),
        "{out}"
    );
    assert!(
        out.contains("baseline precision fp32 (row baseline.precision)"),
        "{out}"
    );
    assert!(
        !out.contains("warning:"),
        "the shipped suite measures enough rounds: {out}"
    );
}

/// The suite and environment shipped inside the binary, by name, from a folder with no checkout.
#[test]
fn the_shipped_suite_is_checked_by_name_from_anywhere() {
    let elsewhere = tempfile::tempdir().expect("tmp");
    let o = Command::new(BIN)
        .args(["matrix", "check", "release", "--environment", "cpu"])
        .current_dir(elsewhere.path())
        .env_remove("TRTMC_MANIFEST_ROOT")
        .output()
        .expect("start trtmc-bench");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("passes the preflight"),
        "{}",
        stdout(&o)
    );
    let o = Command::new(BIN)
        .args(["matrix", "check", "no-such-suite", "--environment", "cpu"])
        .current_dir(elsewhere.path())
        .output()
        .expect("start trtmc-bench");
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("no-such-suite") && err.contains("release, release-full, gpu"),
        "{err}"
    );
}

/// The environment's `worker` is the trtmc-bench every candidate run starts, and each of its
/// `runtime_dirs` reaches that run as `--runtime-dir` (recorded in its result); a worker that is not
/// a file is a machine finding (exit 7).
#[test]
fn the_environment_worker_runs_the_candidates_with_its_runtime_dirs() {
    let _one_at_a_time = measuring();
    let tmp = tempfile::tempdir().expect("tmp");
    let log = tmp.path().join("worker-argv.log");
    let worker = tmp.path().join("worker.sh");
    write_script(
        &worker,
        &format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{BIN}' \"$@\"\n",
            p(&log)
        ),
    );
    let libs = tmp.path().join("libs");
    std::fs::create_dir_all(&libs).expect("mkdir");
    let s = setup(&format!(
        "runtime_dirs: [\"{}\"]\nworker: \"${{TRTMC_TEST_WORKER_X:-}}\"\n",
        p(&libs)
    ));
    let row = ROW_ORT.replace("{runtime: onnxruntime}", "{runtime: tract}");
    let suite_path = suite(&s, "worker", &row);
    let missing = [("TRTMC_TEST_WORKER_X", "/nonexistent/trtmc-bench")];
    let o = matrix(
        &s,
        &[
            "check",
            &p(&suite_path),
            "--environment",
            &p(&s.env),
            "--manifest-root",
            &p(&s.catalog),
        ],
        &missing,
    );
    assert_eq!(code(&o), 7, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("/nonexistent/trtmc-bench") && stderr(&o).contains("TRTMC_PERF_WORKER"),
        "{}",
        stderr(&o)
    );
    let out = s.dir.path().join("run");
    let o = run_suite(
        &s,
        &suite_path,
        &out,
        &[],
        &[("TRTMC_TEST_WORKER_X", &p(&worker))],
    );
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    let calls = std::fs::read_to_string(&log).expect("the worker ran");
    let runs: Vec<&str> = calls.lines().filter(|l| l.starts_with("run ")).collect();
    // A yellow or red row adds one profiling run (its explanation) after the six timed rounds.
    let timed = runs.iter().filter(|l| !l.contains(" --profile")).count();
    assert_eq!(timed, 6, "one candidate run per round: {calls}");
    let canonical = std::fs::canonicalize(&libs).expect("canonical");
    for line in &runs {
        assert!(
            line.contains(&format!("--runtime-dir {}", p(&libs))),
            "{line}"
        );
    }
    let results = read_json(&out.join("results.json"));
    let dir = results["rows"][0]["commands"][0]["argv"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    assert!(dir.starts_with(&p(&worker)), "recorded command: {dir}");
    let first = walk_files(&out.join("rows"))
        .into_iter()
        .find(|p| p.ends_with("candidate-1/result.json"))
        .expect("the first candidate's result.json");
    assert_eq!(
        read_json(&first)["provenance"]["runtime_dirs"],
        serde_json::json!([p(&canonical)])
    );
}

#[test]
fn check_names_every_problem_with_its_row_or_variable() {
    let s = setup(
        "variables:\n  - {name: TRTMC_TEST_UNSET_VARIABLE_X, required: true, description: the worker}\n",
    );
    // The coverage rule: tiny-cnn has no row here.
    let uncovered = suite(
        &s,
        "uncovered",
        "  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: nope\n    candidate: {runtime: tract}\n    reference: {backend: onnxruntime-python}\n  - entry: wrong.classify\n    model: tiny-cnn\n    testcase: single\n    candidate: {runtime: tract}\n    reference: {backend: onnxruntime-python}\n",
    );
    let o = check(&s, &p(&uncovered));
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let err = stderr(&o);
    for needle in [
        "TRTMC_TEST_UNSET_VARIABLE_X",
        "testcase `nope` is not a case of `tiny-cnn`",
        "entry `wrong.classify` does not name this row's contract",
        "tiny-cnn.classify",
    ] {
        assert!(err.contains(needle), "`{needle}` missing from:\n{err}");
    }
    // Coverage: a catalog profile with neither a row nor an exclusion.
    let s2 = setup("");
    std::fs::create_dir_all(s2.catalog.join("tiny-cnn-2")).unwrap();
    let toml = std::fs::read_to_string(s2.catalog.join("tiny-cnn/MODEL.toml"))
        .unwrap()
        .replace("name = \"tiny-cnn\"", "name = \"tiny-cnn-2\"");
    std::fs::write(s2.catalog.join("tiny-cnn-2/MODEL.toml"), toml).unwrap();
    std::fs::copy(
        s2.catalog.join("tiny-cnn/e2e.toml"),
        s2.catalog.join("tiny-cnn-2/e2e.toml"),
    )
    .unwrap();
    let one = suite(&s2, "one", ROW_ORT);
    let o = check(&s2, &p(&one));
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("coverage/tiny-cnn-2"), "{}", stderr(&o));
    let excluded = p(&s2.dir.path().join("excluded.yaml"));
    std::fs::write(
        &excluded,
        std::fs::read_to_string(&one).unwrap()
            + "excluded_profiles:\n  - {profile: tiny-cnn-2, reason: a copy of tiny-cnn}\n",
    )
    .unwrap();
    let o = check(&s2, &excluded);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("excluded tiny-cnn-2: a copy of tiny-cnn"));
    // Two rounds against the default min_rounds (6), and thresholds inside the measured A/A spread:
    // check passes and says what the lights will not be able to show.
    let warned = p(&s2.dir.path().join("warned.yaml"));
    std::fs::write(
        &warned,
        std::fs::read_to_string(&excluded)
            .unwrap()
            .replace("rounds: 6}", "rounds: 2}")
            .replace(
                "green_max: 1.3, yellow_max: 2.0",
                "green_max: 1.02, yellow_max: 1.04",
            ),
    )
    .unwrap();
    let o = check(&s2, &warned);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("warning: row `tiny-cnn.classify/tiny-cnn/single/onnxruntime` has 2 round(s)"),
        "{out}"
    );
    assert!(out.contains("warning: thresholds.green_max 1.02"), "{out}");
    assert!(
        out.contains("warning: the yellow band (1.02 to 1.04)"),
        "{out}"
    );
}

#[test]
fn lights_match_ratios_aa_is_green_and_an_injected_slowdown_is_red() {
    let _one_at_a_time = measuring();
    let s = setup("");
    let rows = format!(
        "{ROW_ORT}  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: batch8\n    candidate: {{runtime: onnxruntime}}\n    reference: {{backend: \"trtmc:onnxruntime\"}}\n    measure: {{iterations: 150, rounds: 30}}\n"
    );
    let suite_path = suite(&s, "small", &rows);
    let out = s.dir.path().join("run1");
    let o = run_suite(&s, &suite_path, &out, &[], &[]);
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    let results = read_json(&out.join("results.json"));
    assert_eq!(results["schema"], "trtmc.matrix-results/v1");
    let _: trtmc_core::artifacts::matrix::Results =
        assert_document("matrix-results.schema.json", &results);
    for index in 0..2 {
        let row = read_json(&out.join(format!("rows/{index:03}.json")));
        assert_valid_def("matrix-results.schema.json", "row", &row);
        let _: trtmc_core::artifacts::matrix::RowResult =
            serde_json::from_value(row).expect("rows/NNN.json reads as RowResult");
    }
    assert_eq!(results["summary"]["rows"], 2);
    assert_lights_match_ratios(&results);
    let rows = rows_by_id(&results);
    // A/A: onnxruntime against itself.
    let aa = &rows[1].1;
    assert_eq!(aa["reference"]["backend"], "trtmc:onnxruntime");
    assert_eq!(aa["comparison"]["light"], "green", "A/A: {aa}");
    // Provenance and exact leaf commands.
    let ort = &rows[0].1;
    assert_eq!(ort["resolved_settings"]["baseline_precision"], "fp32");
    assert_eq!(ort["candidate"]["identity"], ort["reference"]["identity"]);
    assert_eq!(ort["candidate"]["boundary"], "public_pipeline_call_wall");
    let candidate_run = ort["commands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["argv"][1] == "run")
        .expect("the candidate's run command");
    assert!(
        candidate_run["argv"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "onnxruntime")
    );
    assert!(ort["commands"].as_array().unwrap().iter().any(|c| {
        c["argv"][1]
            .as_str()
            .is_some_and(|a| a.ends_with("ort_reference.py"))
    }));
    assert!(out.join("report.html").is_file());

    // A/A again: still green (lights are not a coin toss at a ratio near 1).
    let out2 = s.dir.path().join("run2");
    let o = run_suite(
        &s,
        &suite_path,
        &out2,
        &["--entry", "tiny-cnn.classify/tiny-cnn/batch8/onnxruntime"],
        &[],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let again = read_json(&out2.join("results.json"));
    assert_eq!(again["summary"]["rows"], 1);
    assert_eq!(again["rows"][0]["comparison"]["light"], "green");

    // Injected slowdown: 20 ms added to every timed candidate call of a sub-millisecond model.
    let out3 = s.dir.path().join("run3");
    let o = run_suite(
        &s,
        &suite_path,
        &out3,
        &["--entry", "tiny-cnn.classify/tiny-cnn/single/onnxruntime"],
        &[("TRTMC_TEST_MATRIX_CANDIDATE_DELAY_US", "20000")],
    );
    assert_eq!(
        code(&o),
        0,
        "a red light is a completed comparison: {}",
        stderr(&o)
    );
    let slow = read_json(&out3.join("results.json"));
    let row = &slow["rows"][0];
    assert_eq!(row["comparison"]["light"], "red", "{row}");
    assert!(row["comparison"]["candidate_p50_ms"].as_f64().unwrap() >= 20.0);
    // The delay reached the candidate only.
    assert!(row["comparison"]["reference_p50_ms"].as_f64().unwrap() < 20.0);
    assert_eq!(
        row["commands"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["argv"][1] == "run")
            .expect("candidate run")["env"]["TRTMC_TEST_CALL_DELAY_US"],
        "20000",
        "the candidate's leaf command records the knob"
    );
    assert_lights_match_ratios(&slow);
}

/// `--fail-on red|yellow` and `--export-junit` on `matrix run` and `matrix report`: a red row (an
/// injected slowdown) exits 9 once results.json, report.html and the JUnit file are written, and is a
/// JUnit failure; the same row turned yellow passes (its reason in system-out) unless `--fail-on
/// yellow`, which also fails on red.
#[test]
fn fail_on_red_or_yellow_exits_9_after_writing_results_and_junit() {
    let _one_at_a_time = measuring();
    let s = setup("");
    let rows = "  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: single\n    candidate: {runtime: onnxruntime}\n    reference: {backend: \"trtmc:onnxruntime\"}\n";
    let suite_path = suite(&s, "ci", rows);
    let out = s.dir.path().join("run");
    let junit = s.dir.path().join("junit.xml");
    let o = run_suite(
        &s,
        &suite_path,
        &out,
        &["--fail-on", "red", "--export-junit", &p(&junit)],
        &[("TRTMC_TEST_MATRIX_CANDIDATE_DELAY_US", "20000")],
    );
    assert_eq!(code(&o), 9, "{}\n{}", stdout(&o), stderr(&o));
    let results = read_json(&out.join("results.json"));
    let row = &results["rows"][0];
    assert_eq!(row["comparison"]["light"], "red", "{row}");
    assert!(out.join("report.html").is_file());
    let id = row["id"].as_str().expect("id").to_string();
    let err = stderr(&o);
    assert!(
        err.contains("--fail-on red: 1 row(s) red: ") && err.contains(&id),
        "{err}"
    );
    xmllint::assert_valid_junit(&junit);
    let xml = std::fs::read_to_string(&junit).expect("junit");
    assert!(
        xml.contains(
            "<testsuite name=\"trtmc-bench matrix ci\" tests=\"1\" failures=\"1\" errors=\"0\""
        ),
        "{xml}"
    );
    assert!(
        xml.contains(&format!("<testcase classname=\"ci\" name=\"{id}\"")),
        "{xml}"
    );
    assert!(xml.contains("<failure message=\"red: ratio "), "{xml}");

    let report = |extra: &[&str]| {
        let mut args = vec!["report".to_string(), p(&out)];
        args.extend(extra.iter().map(|a| a.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        matrix(&s, &args, &[])
    };
    // Yellow means yellow or red.
    assert_eq!(code(&report(&["--fail-on", "yellow"])), 9);
    assert_eq!(
        code(&report(&[])),
        0,
        "without --fail-on a red row is exit 0"
    );

    // The same row, yellow: passes unless --fail-on yellow.
    let row_file = out.join("rows/000.json");
    let mut row = read_json(&row_file);
    row["comparison"]["light"] = "yellow".into();
    std::fs::write(&row_file, serde_json::to_vec(&row).expect("json")).expect("write row");
    let yellow_junit = s.dir.path().join("yellow.xml");
    let o = report(&["--fail-on", "red", "--export-junit", &p(&yellow_junit)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    xmllint::assert_valid_junit(&yellow_junit);
    let xml = std::fs::read_to_string(&yellow_junit).expect("junit");
    assert!(xml.contains("failures=\"0\""), "{xml}");
    assert!(xml.contains("<system-out>yellow: ratio "), "{xml}");
    let o = report(&["--fail-on", "yellow", "--export-junit", &p(&yellow_junit)]);
    assert_refused(&o, 9, "--fail-on yellow: 1 row(s) yellow or red: ");
    let xml = std::fs::read_to_string(&yellow_junit).expect("junit");
    assert!(xml.contains("<failure message=\"yellow: ratio "), "{xml}");
}

#[test]
fn workload_precision_and_boundary_mismatches_are_contract_mismatches_without_a_light() {
    let _one_at_a_time = measuring();
    let s = setup("");
    let rows = "  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: single\n    candidate: {runtime: onnxruntime}\n    reference: {backend: onnxruntime-python, set: {request.batch_size: 2}}\n  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: batch8\n    candidate: {runtime: onnxruntime}\n    reference: {backend: onnxruntime-python}\n    baseline: {precision: fp16}\n";
    let suite_path = suite(&s, "mismatch", rows);
    let out = s.dir.path().join("run");
    let o = run_suite(&s, &suite_path, &out, &[], &[]);
    assert_eq!(code(&o), 8, "{}\n{}", stdout(&o), stderr(&o));
    let results = read_json(&out.join("results.json"));
    assert_eq!(results["summary"]["contract_mismatch"], 2);
    assert_valid("matrix-results.schema.json", &results);
    let rows = rows_by_id(&results);
    for (_, r) in &rows {
        assert_eq!(r["status"], "contract_mismatch", "{r}");
        assert!(r["comparison"].is_null(), "no light for a mismatch");
    }
    assert!(
        rows[0].1["message"]
            .as_str()
            .unwrap()
            .contains("workload identity differs")
    );
    let precision = rows[1].1["message"].as_str().unwrap();
    assert!(
        precision.contains("fp16") && precision.contains("row baseline.precision"),
        "{precision}"
    );
    assert_eq!(rows[1].1["resolved_settings"]["baseline_precision"], "fp16");

    // Boundary: a reference runner that reports another timing boundary.
    let fake = s.dir.path().join("fake-reference");
    std::fs::create_dir_all(&fake).unwrap();
    std::fs::write(
        fake.join("ort_reference.py"),
        format!(
            "import json, subprocess, sys\nrc = subprocess.call([sys.executable, {:?}] + sys.argv[1:])\nd = json.load(open(sys.argv[2]))\nd['boundary'] = 'python_process_wall'\njson.dump(d, open(sys.argv[2], 'w'))\nsys.exit(rc)\n",
            p(&repo_root().join("reference/ort_reference.py"))
        ),
    )
    .unwrap();
    let s2 = setup(&format!("reference_dir: {}\n", p(&fake)));
    let suite2 = suite(&s2, "boundary", ROW_ORT);
    let out2 = s2.dir.path().join("run");
    let o = run_suite(&s2, &suite2, &out2, &[], &[]);
    assert_eq!(code(&o), 8, "{}", stderr(&o));
    let r = read_json(&out2.join("results.json"));
    let msg = r["rows"][0]["message"].as_str().unwrap();
    assert!(
        msg.contains("timing boundary differs") && msg.contains("python_process_wall"),
        "{msg}"
    );
    assert!(r["rows"][0]["comparison"].is_null());
}

/// Both sides' result.json without `timing_boundary`: read through pointers that default to "", the
/// boundaries compared equal and the row got a light. Read through the type, the row fails and says
/// which file lacks which field.
#[test]
fn a_result_without_timing_boundary_is_a_failed_row_never_a_compared_one() {
    let _one_at_a_time = measuring();
    let s = setup("");
    let rows = "  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: single\n    candidate: {runtime: onnxruntime}\n    reference: {backend: \"trtmc:onnxruntime\"}\n    measure: {rounds: 1}\n";
    let suite_path = suite(&s, "boundaryless", rows);
    let out = s.dir.path().join("run");
    let o = run_suite(&s, &suite_path, &out, &[], &[]);
    assert_eq!(code(&o), 0, "the untouched row compares: {}", stderr(&o));

    // Run the row again as a Slurm task would, with the plan's program replaced by one that drops
    // `timing_boundary` from every result.json it writes (both sides run `trtmc-bench run`).
    let wrapper = s.dir.path().join("trtmc-bench-without-boundary");
    write_script(
        &wrapper,
        &format!(
            "#!/bin/sh\n{bin:?} \"$@\"\nrc=$?\nprev=\nfor a in \"$@\"; do\n  if [ \"$prev\" = -o ] && [ -f \"$a/result.json\" ]; then\n    python3 -c 'import json, sys; p = sys.argv[1]; d = json.load(open(p)); d.pop(\"timing_boundary\"); json.dump(d, open(p, \"w\"))' \"$a/result.json\" || exit 97\n  fi\n  prev=$a\ndone\nexit $rc\n",
            bin = BIN
        ),
    );
    let plan_path = out.join("matrix-run.json");
    let mut plan = read_json(&plan_path);
    plan["exe"] = Value::from(p(&wrapper));
    std::fs::write(&plan_path, plan.to_string()).expect("write plan");
    std::fs::remove_file(out.join("rows/000.json")).expect("remove the first result");
    let tasks = s.dir.path().join("tasks.json");
    std::fs::write(&tasks, "[0]").expect("write tasks");
    let o = matrix(
        &s,
        &["task", &p(&out), "--tasks-file", &p(&tasks), "--task", "0"],
        &[],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = matrix(&s, &["report", &p(&out)], &[]);
    assert_eq!(code(&o), 5, "a failed row: {}", stderr(&o));

    let results = read_json(&out.join("results.json"));
    assert_valid("matrix-results.schema.json", &results);
    let row = &results["rows"][0];
    assert_eq!(
        row["commands"][0]["argv"][0],
        p(&wrapper),
        "the candidate ran through the wrapper"
    );
    // The logged command is `run`'s arguments written back from a value: it parses as one, with the
    // row's model, case, runtime and counts.
    let argv: Vec<String> = row["commands"][0]["argv"]
        .as_array()
        .expect("argv")
        .iter()
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect();
    assert_eq!(argv[1], "run", "{argv:?}");
    let run = trtmc_runner::args::RunArgs::from_argv(&argv[2..]).expect("the row's run parses");
    assert_eq!(run.models, ["tiny-cnn"]);
    assert_eq!(run.cases, ["single"]);
    assert_eq!(run.runtimes, ["onnxruntime"]);
    assert_eq!(run.telemetry, trtmc_runner::args::TelemetryMode::Off);
    assert!(run.iterations.is_some() && run.warmup.is_some() && run.output.is_some());
    assert_eq!(row["status"], "failed", "{row}");
    assert!(row["comparison"].is_null(), "no light: {row}");
    assert_eq!(results["summary"]["failed"], 1);
    assert_eq!(
        results["summary"]["green"].as_u64().unwrap()
            + results["summary"]["yellow"].as_u64().unwrap()
            + results["summary"]["red"].as_u64().unwrap(),
        0
    );
    let message = row["message"].as_str().expect("message");
    assert!(
        message.contains("candidate/result.json") && message.contains("timing_boundary"),
        "the message names the file and the field: {message}"
    );
}

#[test]
fn kill_during_run_then_resume_runs_every_row_exactly_once() {
    let _one_at_a_time = measuring();
    let s = setup("");
    let rows = format!(
        "{ROW_ORT}  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: batch8\n    candidate: {{runtime: onnxruntime}}\n    reference: {{backend: onnxruntime-python}}\n  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: single\n    candidate: {{runtime: tract}}\n    reference: {{backend: onnxruntime-python}}\n"
    );
    let suite_path = suite(&s, "resume", &rows);
    let out = s.dir.path().join("run");
    let mut child = Command::new(BIN)
        .args([
            "matrix",
            "run",
            &p(&suite_path),
            "--environment",
            &p(&s.env),
            "--manifest-root",
            &p(&s.catalog),
            "-o",
            &p(&out),
        ])
        .env_remove("TRTMC_MANIFEST_ROOT")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let first = out.join("rows/000.json");
    kill_9_when(
        &mut child,
        Duration::from_secs(300),
        "the first row to finish",
        || first.exists(),
    );
    let before = std::fs::read(&first).unwrap();
    let partial = read_json(&out.join("results.json"));
    assert!(
        partial["summary"]["pending"].as_u64().unwrap() >= 1,
        "killed before the end"
    );

    let o = matrix(&s, &["resume", &p(&out)], &[]);
    assert!(matches!(code(&o), 0), "{}\n{}", stdout(&o), stderr(&o));
    let results = read_json(&out.join("results.json"));
    let ids: Vec<String> = rows_by_id(&results).into_iter().map(|(id, _)| id).collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert_eq!(unique.len(), 3, "a row appears twice: {ids:?}");
    assert_eq!(results["summary"]["pending"], 0);
    assert_valid("matrix-results.schema.json", &partial);
    assert_valid("matrix-results.schema.json", &results);
    assert_eq!(
        std::fs::read(&first).unwrap(),
        before,
        "the finished row was not run again"
    );
    assert!(!out.join("rows/000/attempt-2").exists());
    // A second resume has nothing left to do.
    let o = matrix(&s, &["resume", &p(&out)], &[]);
    assert_eq!(code(&o), 0);
    assert_eq!(
        read_json(&out.join("results.json"))["rows"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn preparation_receipts_are_checked_and_a_matching_one_shows_built() {
    let _one_at_a_time = measuring();
    let s = setup("");
    // The separately run preparation step: builds the bundle into the environment's cache.
    let prep = run(&[
        "run",
        "--manifest-root",
        &p(&s.catalog),
        "--model",
        "tiny-cnn",
        "--runtime",
        "onnxruntime",
        "--iterations",
        "1",
        "--warmup",
        "0",
        "--bundle-cache",
        &p(&s.dir.path().join("bundles")),
        "-o",
        &p(&s.dir.path().join("prep")),
    ]);
    assert_eq!(code(&prep), 0, "{}", stderr(&prep));
    let suite_path = suite(&s, "receipt", ROW_ORT);
    let out = s.dir.path().join("run");
    let o = run_suite(&s, &suite_path, &out, &[], &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let results = read_json(&out.join("results.json"));
    let row = &results["rows"][0];
    assert_eq!(row["preparation"]["origin"], "cache_hit");
    let bundle = row["preparation"]["bundle"].as_str().unwrap().to_string();
    let model = row["preparation"]["model"].as_str().unwrap().to_string();
    let revision = results["program"]["revision"].as_str().unwrap().to_string();
    let receipt = |rev: &str, records: Value| {
        serde_json::json!({
            "schema": "trtmc.perf-bundle-preparation/v1",
            "scope": "test_task",
            "revision": rev,
            "records": records,
        })
    };
    let rec = |bundle: &str, secs: Value| serde_json::json!({"model": model, "bundle": bundle, "action": "built", "build_seconds": secs});
    let path = s.dir.path().join("receipt.json");
    let attach = |doc: &Value| {
        std::fs::write(&path, serde_json::to_vec(doc).unwrap()).unwrap();
        matrix(
            &s,
            &["report", &p(&out), "--preparation-receipt", &p(&path)],
            &[],
        )
    };
    for (doc, needle) in [
        (
            receipt("0000000", serde_json::json!([rec(&bundle, 2.0.into())])),
            "revision mismatch",
        ),
        (
            receipt(
                &revision,
                serde_json::json!([rec(&bundle, 2.0.into()), rec(&bundle, 3.0.into())]),
            ),
            "duplicate record",
        ),
        (
            receipt(&revision, serde_json::json!([rec(&bundle, (-1.0).into())])),
            "invalid build time",
        ),
        (
            receipt(&revision, serde_json::json!([rec(&bundle, Value::Null)])),
            "invalid build time",
        ),
        (
            receipt(
                &revision,
                serde_json::json!([
                    rec(&bundle, 2.0.into()),
                    rec("/elsewhere/bundle", 1.0.into())
                ]),
            ),
            "unused bundle path",
        ),
        (
            serde_json::json!({"schema": "trtmc.perf-bundle-preparation/v1", "scope": "campaign", "revision": revision, "records": [rec(&bundle, 2.0.into())]}),
            "scope",
        ),
    ] {
        let o = attach(&doc);
        assert_eq!(code(&o), 3, "{needle}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(needle),
            "`{needle}` missing: {}",
            stderr(&o)
        );
        assert!(read_json(&out.join("results.json"))["preparation_receipt"].is_null());
    }
    // The run records the 12-character commit; a receipt with the full 40-character one is the same
    // revision (where this checkout can spell it out).
    let (commit, dirty) = match revision.strip_suffix("-dirty") {
        Some(c) => (c, "-dirty"),
        None => (revision.as_str(), ""),
    };
    let full = Command::new("git")
        .args([
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{commit}^{{commit}}"),
        ])
        .current_dir(repo_root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if let Some(full) = full {
        assert_eq!(full.len(), 40, "{full}");
        let o = attach(&receipt(
            &format!("{full}{dirty}"),
            serde_json::json!([rec(&bundle, 2.5.into())]),
        ));
        assert_eq!(code(&o), 0, "the full commit: {}", stderr(&o));
    }
    let o = attach(&receipt(
        &revision,
        serde_json::json!([rec(&bundle, 2.5.into())]),
    ));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let results = read_json(&out.join("results.json"));
    assert_valid("matrix-results.schema.json", &results);
    assert_valid("matrix-bundle-preparation.schema.json", &read_json(&path));
    assert_eq!(
        results["preparation_receipt"]["records"][0]["bundle"],
        bundle
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("Built (2.5 s, receipt)"),
        "the receipt's Built wins over the cache hit"
    );

    // The report in headless Chromium: loads from file://, script runs, tables filter.
    let Some(browser) = chromium::require() else {
        return;
    };
    let dom = self_tested_dom(&browser, &out.join("report.html"));
    assert!(dom.contains("data-report-kind=\"matrix\""));
    assert!(dom.contains("Filter rows"));
}

#[test]
fn slurm_job_array_runs_rows_reports_failed_tasks_and_resumes() {
    let _one_at_a_time = measuring();
    if std::env::var("TRTMC_TEST_SLURM").as_deref() != Ok("1") {
        eprintln!(
            "skipped: set TRTMC_TEST_SLURM=1 with a running Slurm (CI starts one in .ci/run)"
        );
        return;
    }
    // In CI this must run: Slurm unreachable is a failure, not a skip.
    let ping = Command::new("scontrol").arg("ping").output();
    assert!(
        ping.as_ref().is_ok_and(|o| o.status.success()),
        "TRTMC_TEST_SLURM=1 but `scontrol ping` fails: {ping:?}"
    );
    let s = setup("");
    let rows = format!(
        "{ROW_ORT}  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: batch8\n    candidate: {{runtime: onnxruntime}}\n    reference: {{backend: onnxruntime-python}}\n"
    );
    let suite_path = suite(&s, "slurm", &rows);
    let out = s.dir.path().join("run");
    let aborted = "tiny-cnn.classify/tiny-cnn/batch8/onnxruntime";
    let o = run_suite(
        &s,
        &suite_path,
        &out,
        &["--executor", "slurm"],
        &[("TRTMC_TEST_MATRIX_ABORT_ROW", aborted)],
    );
    assert_eq!(code(&o), 5, "one task died: {}\n{}", stdout(&o), stderr(&o));
    let results = read_json(&out.join("results.json"));
    assert_eq!(results["executor"], "slurm");
    let job = results["slurm_jobs"][0]["job"]
        .as_str()
        .expect("job id")
        .to_string();
    let rows = rows_by_id(&results);
    assert_eq!(rows[0].1["status"], "compared", "{}", rows[0].1);
    assert_eq!(rows[0].1["slurm_task"], format!("{job}_0"));
    assert_eq!(rows[1].1["status"], "failed");
    let msg = rows[1].1["message"].as_str().unwrap();
    assert!(
        msg.contains(&format!("Slurm task {job}_1")) && msg.contains("FAILED"),
        "{msg}"
    );
    let first = std::fs::read(out.join("rows/000.json")).unwrap();

    let o = matrix(&s, &["resume", &p(&out)], &[]);
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    let results = read_json(&out.join("results.json"));
    assert_eq!(results["summary"]["rows"], 2);
    assert_eq!(results["summary"]["pending"], 0);
    assert_eq!(results["slurm_jobs"].as_array().unwrap().len(), 2);
    assert_valid("matrix-results.schema.json", &results);
    let rows = rows_by_id(&results);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].1["status"], "compared");
    assert!(rows[1].1["slurm_task"].as_str().unwrap().ends_with("_0"));
    assert_eq!(
        std::fs::read(out.join("rows/000.json")).unwrap(),
        first,
        "row 0 kept"
    );
    assert_lights_match_ratios(&results);
}

/// The pid of a process that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().expect("spawn true");
    let pid = child.id();
    child.wait().expect("reap");
    pid
}

/// `-o` and run directories after kills: what an interrupted creation left (rows/ and the plan's
/// temporary, no plan) is named with the command that removes it by `resume` and cleared by `run -o`;
/// symlinks, files and unrelated directories are refused without pointing to `matrix resume`; the
/// temporaries of dead processes are removed by the next resume, a live process's kept; a row's figures
/// reach results.json bit for bit.
#[test]
fn run_directories_half_created_refused_and_swept_of_dead_temporaries() {
    let _one_at_a_time = measuring();
    let s = setup("");
    let rows = "  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: single\n    candidate: {runtime: onnxruntime}\n    reference: {backend: \"trtmc:onnxruntime\"}\n    measure: {rounds: 1}\n";
    let suite_path = suite(&s, "dirs", rows);
    let dead = dead_pid();

    // What a kill -9 right after creation left with an earlier version.
    let out = s.dir.path().join("run");
    std::fs::create_dir_all(out.join("rows")).expect("mkdir");
    std::fs::write(out.join(format!(".matrix-run.json.tmp-{dead}")), "{\"sch").expect("write");
    let o = matrix(&s, &["resume", &p(&out)], &[]);
    assert_refused(&o, 3, &format!("`rm -r -- {}`", p(&out)));
    let staging_left = s.dir.path().join(format!(".run.staging-{dead}"));
    std::fs::create_dir(&staging_left).expect("mkdir");
    let o = run_suite(&s, &suite_path, &out, &[], &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(out.join("matrix-run.json").is_file());
    assert!(
        !staging_left.exists(),
        "a killed creation's staging directory stayed"
    );
    let names: Vec<String> = std::fs::read_dir(&out)
        .expect("ls")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.starts_with('.')), "{names:?}");

    // A directory that holds a run: resume is the advice.
    let o = run_suite(&s, &suite_path, &out, &[], &[]);
    assert_refused(&o, 6, "matrix resume");

    // A symlink, a file, an unrelated directory: refused, and resume is not suggested.
    let real = s.dir.path().join("real");
    std::fs::create_dir(&real).expect("mkdir");
    let link = s.dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let file = s.dir.path().join("file");
    std::fs::write(&file, "x").expect("write");
    let photos = s.dir.path().join("photos");
    std::fs::create_dir(&photos).expect("mkdir");
    std::fs::write(photos.join("cat.jpg"), "x").expect("write");
    for (target, needle) in [
        (&link, "symlink"),
        (&file, "is a file"),
        (&photos, "holds no matrix run"),
    ] {
        let o = run_suite(&s, &suite_path, target, &[], &[]);
        assert_eq!(code(&o), 6, "{needle}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{needle}: {}", stderr(&o));
        assert!(!stderr(&o).contains("resume"), "{needle}: {}", stderr(&o));
    }
    assert_eq!(
        std::fs::read_dir(&real).expect("ls").count(),
        0,
        "written through the symlink"
    );

    // Temporaries: a dead process's are removed by resume, a live one's (this test's) kept.
    let live = std::process::id();
    let dead_results = out.join(format!(".results.json.tmp-{dead}"));
    let dead_report = out.join(format!(".report.html.tmp-{dead}"));
    let dead_row = out.join("rows").join(format!(".000.json.tmp-{dead}"));
    let live_results = out.join(format!(".results.json.tmp-{live}"));
    // … and one a kill left inside an attempt's `reference/` folder (the Python reference's inputs).
    let attempt = read_json(&out.join("rows/000.json"))["attempt_dir"]
        .as_str()
        .expect("attempt_dir")
        .to_string();
    let reference_dir = out.join(attempt).join("reference");
    std::fs::create_dir_all(&reference_dir).expect("mkdir");
    let dead_input = reference_dir.join(format!(".inputs.json.tmp-{dead}"));
    for f in [
        &dead_results,
        &dead_report,
        &dead_row,
        &live_results,
        &dead_input,
    ] {
        std::fs::write(f, "half").expect("write");
    }
    // A row figure with a long mantissa, as a row file holds it.
    let row_path = out.join("rows/000.json");
    let mut row = read_json(&row_path);
    let awkward: [f64; 4] = [
        0.1 + 0.2,
        2.638_344_616_030_823e-256,
        1.0 / 3.0,
        9.007_199_254_740_993e15,
    ];
    row["round_loads"] = serde_json::json!(awkward);
    std::fs::write(&row_path, serde_json::to_vec(&row).expect("json")).expect("write row");
    let o = matrix(&s, &["resume", &p(&out)], &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for f in [&dead_results, &dead_report, &dead_row, &dead_input] {
        assert!(!f.exists(), "{} stayed", f.display());
    }
    assert!(
        live_results.exists(),
        "a live process's temporary was removed"
    );
    let results = read_json(&out.join("results.json"));
    let loads: Vec<u64> = results["rows"][0]["round_loads"]
        .as_array()
        .expect("round_loads")
        .iter()
        .map(|v| v.as_f64().expect("number").to_bits())
        .collect();
    let expected: Vec<u64> = awkward.iter().map(|v| v.to_bits()).collect();
    assert_eq!(loads, expected, "results.json differs from the row");
}

/// A yellow or red light explains itself (docs/matrix.md): a tract candidate made slower in one known
/// node (60 ms after `n3_maxpool_4` in every call, timed and profiled, by the test hook) names that
/// node first against ONNX Runtime's Python loop, through ORT's profiler, with the analyze report of
/// both profiles linked from report.html. A profiling pass that fails (the second row's reference, by
/// the test hook) keeps the light and says why the explanation is missing.
#[test]
fn a_red_or_yellow_row_names_the_node_the_candidate_was_slowed_in() {
    let _one_at_a_time = measuring();
    let s = setup("");
    let measure = "    measure: {warmup: 1, iterations: 12, rounds: 2}\n";
    let rows = format!(
        "  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: single\n    candidate: {{runtime: tract}}\n    reference: {{backend: onnxruntime-python}}\n{measure}  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: batch8\n    candidate: {{runtime: tract}}\n    reference: {{backend: \"trtmc:tract\"}}\n{measure}"
    );
    let suite_path = suite(&s, "explain", &rows);
    let out = s.dir.path().join("run");
    let failing_row = "tiny-cnn.classify/tiny-cnn/batch8/tract";
    let o = run_suite(
        &s,
        &suite_path,
        &out,
        &[],
        &[
            (
                "TRTMC_TEST_MATRIX_CANDIDATE_SLOW_NODE",
                "n3_maxpool_4=60000",
            ),
            ("TRTMC_TEST_MATRIX_PROFILE_FAIL_ROW", failing_row),
        ],
    );
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    let results = read_json(&out.join("results.json"));
    let _: trtmc_core::artifacts::matrix::Results =
        assert_document("matrix-results.schema.json", &results);
    let rows = rows_by_id(&results);

    let explained = &rows[0].1;
    assert_ne!(explained["comparison"]["light"], "green", "{explained}");
    let e = &explained["explanation"];
    assert_eq!(e["missing"], Value::Null, "{e}");
    let first = &e["layers"][0];
    assert_eq!(first["layer"], "n3_maxpool_4", "{e}");
    assert!(first["candidate_ms"].as_f64().unwrap() >= 60.0, "{first}");
    assert!(first["reference_ms"].as_f64().unwrap() < 5.0, "{first}");
    let share = first["share"].as_f64().unwrap();
    assert!(share > 0.5 && share <= 1.0, "{first}");
    let report = e["report"]
        .as_str()
        .expect("the analyze report of both profiles");
    assert!(out.join(report).is_file(), "{report}");
    for f in e["files"].as_array().unwrap() {
        assert!(out.join(f.as_str().unwrap()).is_file(), "{f}");
    }
    // The hook slowed the candidate only: its profiling pass carries it, the reference's does not.
    let commands = explained["commands"].as_array().unwrap();
    let slowed = |c: &Value| c["env"]["TRTMC_TEST_SLOW_NODE"] == "n3_maxpool_4=60000";
    let profile_leaf = |c: &&Value| {
        c["argv"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "--profile")
    };
    assert!(commands.iter().filter(profile_leaf).all(slowed));
    assert!(
        commands
            .iter()
            .filter(|c| c["argv"][1]
                .as_str()
                .is_some_and(|a| a.ends_with("ort_reference.py")))
            .all(|c| !slowed(c))
    );
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert!(html.contains("Where the time went"));
    assert!(
        html.contains(&format!("href=\"{report}\"")),
        "links {report}"
    );

    let unexplained = &rows[1].1;
    assert_eq!(rows[1].0, failing_row);
    assert_eq!(unexplained["status"], "compared");
    assert_ne!(
        unexplained["comparison"]["light"], "green",
        "the light stays: {unexplained}"
    );
    let missing = unexplained["explanation"]["missing"]
        .as_str()
        .expect("why the explanation is missing");
    assert!(
        missing.contains("the reference's profiling pass failed")
            && missing.contains("--profile-iterations"),
        "{missing}"
    );
    assert_eq!(unexplained["explanation"]["layers"], serde_json::json!([]));
}

/// Sequential rounds (docs/matrix.md#sequential-rounds): a row whose light is decided at its first look
/// stops there; a row whose interval keeps holding `green_max` stops at its budget, `max_rounds` or
/// `max_seconds`, and says which and after how many rounds. Rounds alternate who goes first.
#[test]
fn rows_add_rounds_until_decided_or_their_budget_is_spent() {
    let _one_at_a_time = measuring();
    let s = setup("");
    // green_max 1.0: an A/A interval always holds it, so these rows can never decide.
    let row = |testcase: &str, measure: &str| {
        format!(
            "  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: {testcase}\n    candidate: {{runtime: onnxruntime}}\n    reference: {{backend: \"trtmc:onnxruntime\"}}\n    measure: {measure}\n"
        )
    };
    let undecidable = s.dir.path().join("undecidable.yaml");
    std::fs::write(
        &undecidable,
        format!(
            "schema: trtmc.perf-suite/v1\nname: undecidable\nthresholds: {{green_max: 1.0, yellow_max: 2.0, min_samples: 10}}\nmeasure: {{warmup: 2, iterations: 16, rounds: 8, max_rounds: 40}}\nrows:\n{}{}",
            row("single", "{max_rounds: 12}"),
            row("batch8", "{max_seconds: 1}"),
        ),
    )
    .expect("write suite");
    let out = s.dir.path().join("undecided");
    let o = run_suite(&s, &undecidable, &out, &[], &[]);
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    let results = read_json(&out.join("results.json"));
    let _: trtmc_core::artifacts::matrix::Results =
        assert_document("matrix-results.schema.json", &results);
    assert_lights_match_ratios(&results);
    let rows = rows_by_id(&results);
    let by_rounds = &rows
        .iter()
        .find(|(id, _)| id.contains("/single/"))
        .expect("single row")
        .1;
    let c = &by_rounds["comparison"];
    assert_eq!(c["rounds"], 12, "looks at 8 and 12 rounds: {c}");
    assert_eq!(c["stopped_by"], "max_rounds", "{c}");
    assert_eq!(c["uncertain"], true);
    assert_ne!(c["light"], "red");
    assert!(
        c["note"]
            .as_str()
            .unwrap()
            .starts_with("undecided after 12 rounds: max_rounds (12) ran out"),
        "{c}"
    );
    // Two planned looks share the 5 % error.
    assert!(
        (c["look_confidence"].as_f64().unwrap() - 0.975).abs() < 1e-12,
        "{c}"
    );
    assert_eq!(
        by_rounds["resolved_settings"]["looks"],
        serde_json::json!([8, 12])
    );
    // Round 1: the candidate first; round 2: the reference first.
    let outputs: Vec<String> = by_rounds["commands"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["argv"][1] == "run")
        .map(|c| {
            let argv = c["argv"].as_array().unwrap();
            let at = argv.iter().position(|a| a == "-o").expect("-o");
            let o = argv[at + 1].as_str().unwrap();
            o.rsplit('/').next().unwrap().to_string()
        })
        .collect();
    assert_eq!(
        &outputs[..4],
        ["candidate-1", "reference-1", "reference-2", "candidate-2"],
        "{outputs:?}"
    );
    let by_time = &rows
        .iter()
        .find(|(id, _)| id.contains("/batch8/"))
        .expect("batch8 row")
        .1;
    let c = &by_time["comparison"];
    assert_eq!(c["stopped_by"], "max_seconds", "{c}");
    assert_eq!(c["rounds"], 8, "no second look fits in 1 s: {c}");
    assert!(
        c["note"]
            .as_str()
            .unwrap()
            .starts_with("undecided after 8 rounds: max_seconds (1 s)"),
        "{c}"
    );

    // A 20 ms slowdown of a sub-millisecond model is red at the first look: 8 of up to 40 rounds.
    let decided = s.dir.path().join("decided.yaml");
    std::fs::write(
        &decided,
        format!(
            "schema: trtmc.perf-suite/v1\nname: decided\nthresholds: {{green_max: 1.3, yellow_max: 2.0, min_samples: 10}}\nmeasure: {{warmup: 2, iterations: 16, rounds: 8, max_rounds: 40}}\nrows:\n{}",
            row("single", "{}"),
        ),
    )
    .expect("write suite");
    let out = s.dir.path().join("decided");
    let o = run_suite(
        &s,
        &decided,
        &out,
        &[],
        &[("TRTMC_TEST_MATRIX_CANDIDATE_DELAY_US", "20000")],
    );
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    let results = read_json(&out.join("results.json"));
    assert_lights_match_ratios(&results);
    let c = &results["rows"][0]["comparison"];
    assert_eq!(
        (c["light"].as_str(), c["rounds"].as_u64()),
        (Some("red"), Some(8)),
        "{c}"
    );
    assert_eq!(c["stopped_by"], "decided");
    assert_eq!(c["uncertain"], false);
    assert_eq!(
        results["rows"][0]["resolved_settings"]["looks"],
        serde_json::json!([8, 12, 18, 27, 40])
    );
}
