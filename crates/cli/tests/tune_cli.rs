//! `trtmc-bench tune` through the real binary on real models (the embedded tiny-cnn, seeded weights):
//! knob databases, trtexec's dry-run order (against the recorded TensorRT 11.1 dry run), expression
//! errors, the accuracy gate, a test knob that crashes the build, every route failing, kill -9 and
//! `--continue`, fingerprint checks, user golden data, onnxruntime's real knobs, and the HTML report in
//! headless Chromium. No assertion depends on timing: routes that must lose sleep inside every call.

use crate::chromium;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::Value;

/// Small measurement settings so a route costs a few dozen calls.
pub(crate) const QUICK: &[&str] = &[
    "--calls",
    "8",
    "--warmup",
    "1",
    // Six passes: fewer can never name a winner (trtmc_core::intervals::MIN_ROUNDS).
    "--final-passes",
    "6",
    "--final-calls",
    "3",
    "--race-round-calls",
    "4",
];

pub(crate) fn tune_cmd(tmp: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("tune").args(args);
    // `--continue` takes its bundle cache from the cache header.
    if !args.contains(&"--continue") {
        cmd.arg("--bundle-cache").arg(tmp.join("bundles"));
    }
    cmd.env_remove("TRTMC_MANIFEST_ROOT").env("TRTMC_TEST", "1");
    cmd
}

pub(crate) fn tune(tmp: &Path, args: &[&str]) -> Output {
    tune_cmd(tmp, args).output().expect("start trtmc-bench")
}

pub(crate) fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("cache")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a cache line"))
        .collect()
}

pub(crate) fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `tune` with `args` followed by the small measurement settings [`QUICK`].
pub(crate) fn tune_quick(tmp: &Path, args: &[&str]) -> Output {
    tune(tmp, &[args, QUICK].concat())
}

/// `--model tiny-cnn --runtime RUNTIME --routes ROUTES` followed by `rest`: how most tunes here start.
fn tiny_cnn_args<'a>(runtime: &'a str, routes: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--model",
        "tiny-cnn",
        "--runtime",
        runtime,
        "--routes",
        routes,
    ];
    args.extend_from_slice(rest);
    args
}

/// `--onnx ONNX --dim batch=1 --runtime tract --routes ROUTES` followed by `rest`: a tune of an ONNX file.
fn onnx_tract_args<'a>(onnx: &'a Path, routes: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--onnx", s(onnx), "--dim", "batch=1"];
    args.extend_from_slice(&["--runtime", "tract", "--routes", routes]);
    args.extend_from_slice(rest);
    args
}

/// `--runtime tensorrt --trtexec TRTEXEC` followed by `rest`: a dry run against the stand-in trtexec.
fn trtexec_args<'a>(trtexec: &'a Path, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--runtime", "tensorrt", "--trtexec", s(trtexec)];
    args.extend_from_slice(rest);
    args
}

/// Writes the generated tiny-cnn with weights from `seed` to `DIR/cnn.onnx` (the tunes of an ONNX file).
fn write_tiny_cnn_onnx(dir: &Path, seed: u64) -> PathBuf {
    let onnx = dir.join("cnn.onnx");
    std::fs::write(
        &onnx,
        trtmc_modelgen::generate("tiny-cnn", seed).expect("model"),
    )
    .expect("onnx");
    onnx
}

/// Asserts that the tune's decision is a winner, `route`.
#[track_caller]
fn assert_winner(summary: &Value, route: &str) {
    assert_eq!(
        summary["decision"]["kind"], "winner",
        "{}",
        summary["decision"]
    );
    assert_eq!(summary["decision"]["route"], route);
}

/// The routes the cache's lines evaluated in `phase` (the search phase: `full`), in order.
fn routes_in_phase(cache: &Path, phase: &str) -> Vec<String> {
    lines(cache)[1..]
        .iter()
        .filter(|l| l["phase"] == phase)
        .map(|l| l["build_route"].as_str().expect("route").to_string())
        .collect()
}

#[test]
fn help_routes_prints_each_runtimes_knob_database_in_trtexecs_shape() {
    let tmp = tempfile::tempdir().expect("tmp");
    for (runtime, knobs) in [
        ("tract", &["-threads", "-precision"][..]),
        (
            "onnxruntime",
            &["-intra_threads", "-optimization_level", "-execution_mode"][..],
        ),
    ] {
        let out = tune(tmp.path(), &["--runtime", runtime, "--help-routes"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let db: Value = serde_json::from_str(&stdout(&out)).expect("json");
        assert!(db["tuner_version"].as_str().is_some(), "{db}");
        let options = db["tuner_options"].as_array().expect("options");
        for knob in knobs {
            let k = options
                .iter()
                .find(|o| o["option"] == *knob)
                .unwrap_or_else(|| panic!("{runtime}: {knob} missing"));
            for field in ["allowed_values", "default_value", "help"] {
                assert!(k[field].as_str().is_some(), "{runtime} {knob}: {field}");
            }
            assert!(
                k["allowed_values"]
                    .as_str()
                    .expect("allowed")
                    .starts_with(&format!("{knob}=")),
                "{k}"
            );
        }
    }
    // One knob, named with or without its dash, as trtexec --helpBuildRoute=KNOB.
    for filter in [
        "--help-routes=execution_mode",
        "--help-routes=-execution_mode",
    ] {
        let out = tune(tmp.path(), &["--runtime", "onnxruntime", filter]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let db: Value = serde_json::from_str(&stdout(&out)).expect("json");
        let options = db["tuner_options"].as_array().expect("options");
        assert_eq!(options.len(), 1, "{db}");
        assert_eq!(
            options[0]["allowed_values"],
            "-execution_mode=[sequential|parallel]"
        );
    }
    let out = tune(
        tmp.path(),
        &["--runtime", "onnxruntime", "--help-routes=execution_mod"],
    );
    assert_refused(&out, 3, "-execution_mode");
}

/// A stand-in `trtexec` that prints TensorRT 11.1's banner, and for `--helpBuildRoute` the recorded
/// knob database (the excerpt of the real 209-knob database).
fn fake_trtexec(dir: &Path) -> PathBuf {
    let db =
        repo_root().join("tests/fixtures/trtexec-logs/trt11.1_helpBuildRoute_knobdb_EXCERPT.json");
    let script = format!(
        "#!/bin/sh\necho '&&&& RUNNING TensorRT.trtexec [TensorRT v110100] [b106] # trtexec '\"$*\"\ncase \" $* \" in\n  *\" --helpBuildRoute\"*) cat '{}' ;;\nesac\necho '&&&& PASSED TensorRT.trtexec [TensorRT v110100] [b106] # trtexec'\n",
        db.display()
    );
    let path = dir.join("trtexec");
    trtmc_testkit::write_script(&path, &script);
    path
}

/// Asserts that a dry run succeeded and listed `line` (`[i]:route`).
#[track_caller]
fn assert_lists_route(out: &Output, line: &str) {
    assert_eq!(code(out), 0, "{}", stderr(out));
    assert!(stdout(out).contains(line), "{}", stdout(out));
}

/// The lines of a dry-run listing (`Expanded to`, `--dryRun:`, `[i]:route`), any log prefix removed.
fn listed(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split_once("] [I] ").map_or(l, |(_, rest)| rest))
        .filter(|l| {
            l.starts_with("Expanded to")
                || l.starts_with("--dryRun:")
                || (l.starts_with('[') && l.contains("]:"))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn dry_run_lists_tensorrt_routes_in_trtexecs_order_exactly_as_recorded() {
    let tmp = tempfile::tempdir().expect("tmp");
    let trtexec = fake_trtexec(tmp.path());
    let recorded = std::fs::read_to_string(
        repo_root()
            .join("tests/fixtures/trtexec-logs/trt11.1_tuneBuildRoutes_dryRun_fast_and_full.log"),
    )
    .expect("fixture");
    let recorded = listed(&recorded);
    assert_eq!(recorded.len(), 2 + 4 + 2 + 6, "{recorded:#?}");
    let mut ours = Vec::new();
    for search in ["fast", "full"] {
        let routes = "-conv_lowering=[on|off] -kgen:tiling=[0|1|2]";
        let args = trtexec_args(
            &trtexec,
            &["--routes", routes, "--search", search, "--dry-run"],
        );
        let out = tune(tmp.path(), &args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        ours.extend(listed(&stdout(&out)));
    }
    assert_eq!(ours, recorded);

    // trtexec's spellings work too, and the knob database merges trtexec build flags.
    let args = trtexec_args(
        &trtexec,
        &[
            "--tuneBuildRoutes=-kgen:tiling=[0|1] -trtexec:builderOptimizationLevel=[3|5]",
            "--tuningSearch=full",
            "--dryRun",
        ],
    );
    let out = tune(tmp.path(), &args);
    assert_lists_route(
        &out,
        "[3]:-kgen:tiling=1 -trtexec:builderOptimizationLevel=5",
    );
    // Without trtexec nothing can be listed or measured: the environment exit with the install hint.
    let out_dir = tmp.path().join("trt-out");
    let out = tune(
        tmp.path(),
        &[
            "--model",
            "tiny-cnn",
            "--runtime",
            "tensorrt",
            "--trtexec",
            s(&tmp.path().join("no-trtexec")),
            "--routes",
            "-kgen:tiling=[0|1]",
            "-o",
            s(&out_dir),
        ],
    );
    assert_refused(&out, 7, "no-trtexec");
    assert!(!out_dir.exists());
}

#[test]
fn expression_errors_name_the_knob_and_the_fix() {
    let tmp = tempfile::tempdir().expect("tmp");
    for (expr, needle) in [
        ("-thread=[1|2]", "did you mean -threads"),
        ("-precision=[fp32|int8]", "int8"),
        ("-precision=[fp32|fp32]", "listed twice"),
        ("-threads=[1|...]", "unbounded"),
        ("-threads=[]", "empty"),
    ] {
        let out = tune(tmp.path(), &tiny_cnn_args("tract", expr, &["--dry-run"]));
        assert_eq!(code(&out), 3, "{expr}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{expr}: {}", stderr(&out));
    }
    // The routes file holds the same tokens, one per line.
    let file = tmp.path().join("routes.txt");
    std::fs::write(&file, "-threads=[1|2]\n-precision=[fp32|fp16]\n").expect("write");
    let out = tune(
        tmp.path(),
        &[
            "--runtime",
            "tract",
            "--routes-file",
            s(&file),
            "--search",
            "full",
            "--dry-run",
        ],
    );
    assert_lists_route(&out, "[3]:-threads=2 -precision=fp16");
}

/// The accuracy gate rejects tract's f16 route (seeded random weights, lInf beyond 1e-6), the crash
/// knob's routes crash in their build process and stay excluded with their error, a failing build is a
/// failure; the one accurate route is chosen, saved, and drawn in the report.
#[test]
fn accuracy_gate_and_crashing_builds_exclude_routes_and_the_survivor_is_saved_and_reported() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("out");
    let saved = tmp.path().join("best.bundle");
    let args = tiny_cnn_args(
        "tract",
        "-precision=[fp32|fp16] -test:fault=[none|crash_build|fail_build]",
        &[
            "--search",
            "full",
            "--accuracy-algorithm",
            "lInf",
            "--accuracy-threshold",
            "1e-6",
            "-o",
            s(&out_dir),
            "--save-bundle",
            s(&saved),
            "--save-all",
            "--quiet",
        ],
    );
    let out = tune_quick(tmp.path(), &args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    let summary = read_json(&out_dir.join("tuning-summary.json"));
    let _: trtmc_core::artifacts::TuneSummary =
        assert_document("tuning-summary.schema.json", &summary);
    let fp16 = tune_route(&summary, "-precision=fp16 -test:fault=none");
    assert_eq!(fp16["status"], "accuracy_failed", "{fp16}");
    assert_eq!(fp16["eligible"], false);
    let loss = fp16["accuracy"]["tensors"][0]["loss"]
        .as_f64()
        .expect("loss");
    assert!(loss > 1e-6, "{fp16}");
    for precision in ["fp32", "fp16"] {
        let crashed = tune_route(
            &summary,
            &format!("-precision={precision} -test:fault=crash_build"),
        );
        assert_eq!(crashed["status"], "crashed", "{crashed}");
        assert_eq!(crashed["crash"], true);
        let message = crashed["error_message"].as_str().expect("message");
        assert!(
            message.contains("SIGABRT") && message.contains("crash_build"),
            "{message}"
        );
        let failed = tune_route(
            &summary,
            &format!("-precision={precision} -test:fault=fail_build"),
        );
        assert_eq!(failed["status"], "failed", "{failed}");
        assert!(
            failed["error_message"]
                .as_str()
                .expect("message")
                .contains("fail_build")
        );
    }
    let chosen = "-precision=fp32 -test:fault=none";
    assert_eq!(
        summary["decision"]["route"], chosen,
        "{}",
        summary["decision"]
    );
    assert_eq!(summary["counts"]["eligible"], 1);
    assert_eq!(summary["counts"]["crashed"], 2);

    // The cache keeps every iteration with trtexec's fields, errors included; the f16 route was
    // measured (to show what it would have cost) but never eligible.
    let cache = lines(&out_dir.join("tuning-cache.jsonl"));
    let header = &cache[0];
    assert_eq!(header["searching_algorithm"], "full");
    assert_eq!(header["accuracy_algorithm"], "lInf");
    for line in &cache[1..] {
        for field in [
            "iter",
            "build_route",
            "crash",
            "error_message",
            "accuracy_loss",
        ] {
            assert!(line.get(field).is_some(), "{field} missing in {line}");
        }
    }
    let f16_line = cache[1..]
        .iter()
        .find(|l| l["build_route"] == "-precision=fp16 -test:fault=none")
        .expect("f16 line");
    assert!(f16_line["accuracy_loss"]["logits"].as_f64().expect("loss") > 1e-6);

    // The chosen bundle, with the route that made it; --save-all keeps each eligible route's bundle.
    let record = read_json(&saved.join("tuned-route.json"));
    let typed: trtmc_core::artifacts::TunedRoute =
        assert_document("tuned-route.schema.json", &record);
    assert_eq!(typed.schema, trtmc_core::artifacts::TUNED_ROUTE_SCHEMA);
    assert_eq!(record["route"], chosen);
    assert_eq!(record["chosen"], true);
    assert!(
        saved.join("bundle.json").is_file() || std::fs::read_dir(&saved).expect("dir").count() > 1
    );
    let all: Vec<_> = std::fs::read_dir(out_dir.join("bundles"))
        .expect("bundles")
        .collect();
    assert_eq!(all.len(), 1);

    // The HTML report: self-contained, every route with its status, opened in headless Chromium.
    let page = out_dir.join("tuning-report.html");
    let html = std::fs::read_to_string(&page).expect("report");
    assert!(html.contains("data-report-kind=\"tune\""));
    assert!(html.contains("accuracy_failed") && html.contains("crash_build"));
    for remote in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!html.contains(remote), "the report loads `{remote}`");
    }
    let Some(browser) = chromium::require() else {
        return;
    };
    let dom = browser
        .dump_dom(&chromium::file_url(&page, "selftest"), &[])
        .stdout;
    let check = chromium::self_check(&dom);
    assert!(
        dom.contains("data-report-ready=\"true\""),
        "script did not finish: {check}"
    );
    assert!(
        dom.contains("data-report-errors=\"0\""),
        "page errors: {check}"
    );
    assert!(dom.contains(chosen), "the chosen route is not on the page");
    let shot = tmp.path().join("tune.png");
    let launch = browser.screenshot(&chromium::file_url(&page, ""), &shot, (1400, 2000), &[]);
    let problems = chromium::console_problems(&launch.stderr);
    assert!(problems.is_empty(), "console output: {problems:#?}");
    assert!(shot.is_file());
}

#[test]
fn when_every_route_fails_the_tune_exits_5_and_still_writes_its_summary() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("out");
    let args = tiny_cnn_args(
        "tract",
        "-test:fault=[crash_build|fail_build]",
        &["--search", "full", "-o", s(&out_dir), "--quiet"],
    );
    let out = tune_quick(tmp.path(), &args);
    assert_refused(&out, 5, "no route was eligible");
    let summary = read_json(&out_dir.join("tuning-summary.json"));
    assert_eq!(summary["decision"]["kind"], "none");
    assert!(out_dir.join("tuning-report.html").is_file());
}

/// A tune over routes that sleep 0, 50, 100 and 150 ms inside every call (far beyond the ~3 ms the
/// model takes, even when other processes stretch its CPU time). Early stopping is off, so every route
/// is measured in full and the tune lasts long enough to be killed in the middle.
pub(crate) fn sleepy_args<'a>(out_dir: &'a Path, model: &'a [&'a str]) -> Vec<&'a str> {
    let mut args = model.to_vec();
    args.extend_from_slice(&[
        "--runtime",
        "tract",
        "--routes",
        "-test:sleep_us=[0|50000|100000|150000]",
        "--search",
        "full",
        "--early-stop-factor",
        "0",
        "-o",
        s(out_dir),
    ]);
    args.extend_from_slice(QUICK);
    args
}

/// Routes that sleep 200 ms in every call are stopped after their probe (one warm-up and three calls)
/// in a fast search; the route that does not sleep wins, and the terminal output says why.
#[test]
fn routes_slower_beyond_doubt_are_stopped_after_their_probe() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("out");
    let args = tiny_cnn_args(
        "tract",
        "-test:sleep_us=[0|200000|300000]",
        &["-o", s(&out_dir)],
    );
    let out = tune_quick(tmp.path(), &args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let summary = read_json(&out_dir.join("tuning-summary.json"));
    for slow in ["-test:sleep_us=200000", "-test:sleep_us=300000"] {
        let r = tune_route(&summary, slow);
        assert_eq!(r["status"], "eliminated", "{r}");
        assert_eq!(r["search_samples"]["count"], 3, "{r}");
        assert!(
            r["error_message"]
                .as_str()
                .is_some_and(|m| m.contains("stopped early after 3 probe call(s)")),
            "{r}"
        );
    }
    assert_eq!(summary["counts"]["eliminated"], 2);
    assert_winner(&summary, "-test:sleep_us=0");
    assert!(
        stdout(&out).contains("2 stopped early as clearly slower"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("eliminated: stopped early"),
        "{}",
        stderr(&out)
    );
    let report = std::fs::read_to_string(out_dir.join("tuning-report.html")).expect("report");
    assert!(report.contains("log scale") && report.contains("(eliminated)"));
}

pub(crate) fn iterations(cache: &Path) -> Vec<u64> {
    lines(cache)[1..]
        .iter()
        .map(|l| l["iter"].as_u64().expect("iter"))
        .collect()
}

#[test]
fn kill_9_during_a_tune_then_continue_ends_with_the_same_winner_and_every_iteration_once() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("out");
    let cache = out_dir.join("tuning-cache.jsonl");
    let model = ["--model", "tiny-cnn"];
    let mut child = spawn_silent(&mut tune_cmd(tmp.path(), &sleepy_args(&out_dir, &model)));
    // Wait until the reference and two routes are in the cache (header + 3 lines), then kill -9.
    kill_9_when(
        &mut child,
        Duration::from_secs(600),
        "the reference and two routes in the cache",
        || cache_lines(&cache) >= 4,
    );
    let before = iterations(&cache);
    assert!(before.len() >= 3, "{before:?}");
    // A torn last line, as a write cut short by the kill would leave.
    {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&cache)
            .expect("open");
        f.write_all(b"{\"iter\": 99, \"build_route\": \"-test:sl")
            .expect("tear");
    }
    // --continue needs nothing but the cache, and refuses anything else.
    let out = tune(
        tmp.path(),
        &["--continue", "--cache", s(&cache), "--runtime", "tract"],
    );
    assert_refused(&out, 2, "--runtime");
    let out = tune(tmp.path(), &["--continue", "--cache", s(&cache)]);
    assert_refused(&out, 0, "torn");
    assert!(
        stderr(&out).contains("(from the cache)"),
        "{}",
        stderr(&out)
    );

    let after = iterations(&cache);
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "earlier iterations were rewritten"
    );
    let expected: Vec<u64> = (0..after.len() as u64).collect();
    assert_eq!(after, expected, "iterations duplicated or lost");
    let summary = read_json(&out_dir.join("tuning-summary.json"));
    // Every search route evaluated exactly once across the two sessions.
    let search = routes_in_phase(&cache, "full");
    let distinct: BTreeSet<&String> = search.iter().collect();
    assert_eq!(search.len(), 4, "{search:?}");
    assert_eq!(distinct.len(), 4, "{search:?}");
    // The same winner as an uninterrupted tune: the route that does not sleep.
    assert_winner(&summary, "-test:sleep_us=0");
}

#[test]
fn continue_refuses_a_changed_model_and_names_the_differing_field() {
    let tmp = tempfile::tempdir().expect("tmp");
    let onnx = write_tiny_cnn_onnx(tmp.path(), 5);
    let out_dir = tmp.path().join("out");
    let args = onnx_tract_args(&onnx, "-threads=1", &["-o", s(&out_dir), "--quiet"]);
    let out = tune_quick(tmp.path(), &args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let cache = out_dir.join("tuning-cache.jsonl");
    let header = &lines(&cache)[0];
    assert!(
        header["fingerprint"]["model_sha256"].as_str().is_some(),
        "{header}"
    );
    let before = std::fs::read(&cache).expect("cache");
    // Same file name, different weights.
    write_tiny_cnn_onnx(tmp.path(), 6);
    let out = tune(tmp.path(), &["--continue", "--cache", s(&cache)]);
    assert_refused(&out, 3, "model_sha256");
    assert_eq!(
        std::fs::read(&cache).expect("cache"),
        before,
        "the cache was touched"
    );
}

/// Golden data from the user: reference outputs that no route reproduces fail every route's gate.
#[test]
fn user_reference_outputs_gate_every_route() {
    let tmp = tempfile::tempdir().expect("tmp");
    let onnx = write_tiny_cnn_onnx(tmp.path(), 5);
    // Inputs and (wrong: all zero) reference outputs as raw little-endian files with a JSON index.
    let image: Vec<u8> = (0..3 * 64 * 64)
        .flat_map(|i| ((i % 17) as f32 / 17.0).to_le_bytes())
        .collect();
    std::fs::write(tmp.path().join("image.bin"), image).expect("write");
    std::fs::write(
        tmp.path().join("inputs.json"),
        r#"{"inputs": [{"name": "image", "dtype": "f32", "shape": [1, 3, 64, 64], "file": "image.bin"}]}"#,
    )
    .expect("write");
    std::fs::write(tmp.path().join("logits.bin"), vec![0u8; 10 * 4]).expect("write");
    std::fs::write(
        tmp.path().join("ref.json"),
        r#"{"outputs": [{"name": "logits", "dtype": "f32", "shape": [1, 10], "file": "logits.bin"}]}"#,
    )
    .expect("write");
    let out_dir = tmp.path().join("out");
    let inputs = tmp.path().join("inputs.json");
    let reference = tmp.path().join("ref.json");
    let args = [
        "--onnx",
        s(&onnx),
        "--set",
        "build.dims.batch=1",
        "--runtime",
        "tract",
        "--routes",
        "-threads=[1|2]",
        "--inputs",
        s(&inputs),
        "--ref-outputs",
        s(&reference),
        "--accuracy-algorithm",
        "l1",
        "--accuracy-threshold",
        "1e-3",
        "-o",
        s(&out_dir),
        "--quiet",
    ];
    let out = tune_quick(tmp.path(), &args);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    let summary = read_json(&out_dir.join("tuning-summary.json"));
    for r in summary["routes"].as_array().expect("routes") {
        assert_eq!(r["status"], "accuracy_failed", "{r}");
    }
}

/// onnxruntime's real settings as knobs: intra-op threads × graph optimization level × execution mode.
#[test]
fn onnxruntime_settings_are_tuned_as_knobs() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("out");
    let args = tiny_cnn_args(
        "onnxruntime",
        "-intra_threads=[1|2] -optimization_level=[basic|all] -execution_mode=[sequential|parallel]",
        &["--search", "racing", "-o", s(&out_dir), "--quiet"],
    );
    let out = tune_quick(tmp.path(), &args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let summary = read_json(&out_dir.join("tuning-summary.json"));
    assert_valid("tuning-summary.schema.json", &summary);
    assert_eq!(summary["counts"]["evaluated"], 8, "{}", summary["counts"]);
    // A route may be stopped early when other work on the machine makes it slower beyond doubt.
    let eligible = summary["counts"]["eligible"].as_u64().unwrap_or_default();
    let eliminated = summary["counts"]["eliminated"].as_u64().unwrap_or_default();
    assert_eq!(eligible + eliminated, 8, "{}", summary["counts"]);
    assert!(
        matches!(summary["decision"]["kind"].as_str(), Some("winner" | "tie")),
        "{}",
        summary["decision"]
    );
    let chosen = &summary["context"]["chosen"];
    if !chosen.is_null() {
        let sets = chosen["run_sets"].as_array().expect("run sets");
        assert!(
            sets.iter().any(|s| s
                .as_str()
                .is_some_and(|s| s.starts_with("runtime.intra_threads="))),
            "{chosen}"
        );
    }
}

/// The `run it:` line a tune of an ONNX file prints measures the tuned bundle itself: `run --onnx` and
/// `tune --onnx` describe the file with one profile, so the bundle cache key is the same and the run
/// (with --no-build, which fails rather than build) reuses the bundle the tune built.
#[test]
fn the_run_line_printed_by_tune_onnx_reuses_the_tuned_bundle() {
    let tmp = tempfile::tempdir().expect("tmp");
    let onnx = write_tiny_cnn_onnx(tmp.path(), 5);
    let out_dir = tmp.path().join("out");
    let saved = tmp.path().join("best.bundle");
    let args = onnx_tract_args(
        &onnx,
        "-threads=[1|2]",
        &["-o", s(&out_dir), "--save-bundle", s(&saved), "--quiet"],
    );
    let out = tune_quick(tmp.path(), &args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let printed = stdout(&out);
    let line = printed
        .lines()
        .find_map(|l| l.trim().strip_prefix("run it: trtmc-bench "))
        .unwrap_or_else(|| panic!("no run line in:\n{printed}"));
    assert!(line.contains("--set runtime.threads="), "{line}");
    let result_dir = tmp.path().join("run");
    let script = format!(
        "exec {BIN} {line} --no-build --iterations 5 --warmup 1 --quiet -o {}",
        s(&result_dir)
    );
    let run = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .env_remove("TRTMC_MANIFEST_ROOT")
        .env("TRTMC_TEST", "1")
        .output()
        .expect("start sh");
    assert_eq!(code(&run), 0, "{script}\n{}", stderr(&run));
    let case = &read_json(&result_dir.join("result.json"))["cases"][0];
    assert_eq!(case["bundle"]["origin"], "cache_hit", "{}", case["bundle"]);
    let tuned = read_json(&saved.join("tuned-route.json"));
    assert_eq!(case["bundle"]["path"], tuned["source_bundle"], "{tuned}");
}

/// A tuning cache whose header line was cut off (a tune killed as it started): a new tune and
/// `--continue` both call it damaged and name the same commands, and neither touches it.
#[test]
fn a_cache_with_a_cut_off_header_gets_one_remedy_from_a_new_tune_and_from_continue() {
    let tmp = tempfile::tempdir().expect("tmp");
    let cache = tmp.path().join("cut.jsonl");
    let torn = br#"{"tuner_version":"trtmc 0.1","accuracy_algo"#;
    std::fs::write(&cache, torn).expect("write");
    let out_dir = tmp.path().join("out");
    let fresh = tune(
        tmp.path(),
        &tiny_cnn_args(
            "tract",
            "-threads=1",
            &["--cache", s(&cache), "-o", s(&out_dir), "--quiet"],
        ),
    );
    let resumed = tune(tmp.path(), &["--continue", "--cache", s(&cache)]);
    let remedy = format!("`rm {}`", s(&cache));
    for (what, out) in [("new tune", &fresh), ("--continue", &resumed)] {
        assert_eq!(code(out), 3, "{what}: {}", stderr(out));
        let err = stderr(out);
        assert!(err.contains("cannot be continued"), "{what}: {err}");
        assert!(err.contains(&remedy), "{what}: {err}");
        assert!(!err.contains("resume it with --continue"), "{what}: {err}");
    }
    assert_eq!(
        std::fs::read(&cache).expect("cache"),
        torn,
        "the cache was touched"
    );
}

/// A full search over the uncapped limit is refused before the reference route is built: no bundle,
/// no cache, no output directory.
#[test]
fn an_oversized_full_search_is_refused_before_anything_is_built() {
    let tmp = tempfile::tempdir().expect("tmp");
    let list = |n: usize| (1..=n).map(|v| v.to_string()).collect::<Vec<_>>().join("|");
    // 400 × 300 routes: over the 100,000 a full search takes without --max-routes.
    let expression = format!("-threads=[{}] -test:sleep_us=[0|{}]", list(400), list(299));
    let out_dir = tmp.path().join("out");
    let out = tune(
        tmp.path(),
        &tiny_cnn_args(
            "tract",
            &expression,
            &["--search", "full", "-o", s(&out_dir), "--quiet"],
        ),
    );
    assert_refused(&out, 3, "--max-routes");
    assert!(!out_dir.exists(), "the output directory was created");
    assert!(!tmp.path().join("bundles").exists(), "a bundle was built");
}

/// A tune killed while it wrote its summary left `.tuning-summary.json.tmp-PID` in its output
/// directory: the next tune there removes it (its process is dead) instead of refusing the directory.
#[test]
fn a_dead_tunes_half_written_summary_does_not_block_the_next_tune() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dead = dead_pid();
    let out_dir = tmp.path().join("out");
    std::fs::create_dir(&out_dir).expect("mkdir");
    let leftover = out_dir.join(format!(".tuning-summary.json.tmp-{dead}"));
    std::fs::write(&leftover, "{\"sch").expect("write");
    let args = tiny_cnn_args("tract", "-threads=1", &["-o", s(&out_dir), "--quiet"]);
    let out = tune_quick(tmp.path(), &args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!leftover.exists(), "the dead tune's temporary stayed");
    assert!(out_dir.join("tuning-summary.json").is_file());
}

/// An environment (the matrix's format) for the single-node cluster `.ci/slurm.sh` starts: tasks share
/// the node (no `--exclusive`, so a round's builds run side by side), and the test's temporary folder,
/// the checkout (its catalog) and the folder of this trtmc-bench count as shared, since every task runs
/// on this machine.
fn slurm_environment(dir: &Path) -> PathBuf {
    let path = dir.join("slurm-env.yaml");
    let canonical = |p: &Path| std::fs::canonicalize(p).expect("canonical path");
    let bin_dir = Path::new(BIN).parent().expect("bin dir").to_path_buf();
    std::fs::write(
        &path,
        format!(
            "schema: trtmc.perf-environment/v1\nname: slurm-test\nbundle_cache: {0}/bundles\n\
             results_root: {0}/results\nslurm:\n  exclusive: false\n  poll_s: 0.3\n  timeout_s: 300\n  \
             shared_paths: [\"{0}\", \"{1}\", \"{2}\"]\n",
            dir.display(),
            canonical(&repo_root()).display(),
            canonical(&bin_dir).display(),
        ),
    )
    .expect("environment");
    path
}

/// The checkout's catalog (the embedded one unpacks into the user cache, which the tests do not share).
fn checkout_catalog() -> String {
    std::fs::canonicalize(repo_root().join("catalog"))
        .expect("catalog")
        .display()
        .to_string()
}

/// `true` when the Slurm tests run (TRTMC_TEST_SLURM=1, as CI sets it after starting a cluster); then a
/// controller that does not answer fails the test instead of skipping it.
fn slurm_available() -> bool {
    if std::env::var("TRTMC_TEST_SLURM").as_deref() != Ok("1") {
        eprintln!(
            "skipped: set TRTMC_TEST_SLURM=1 with a running Slurm (CI starts one in .ci/run)"
        );
        return false;
    }
    let ping = Command::new("scontrol").arg("ping").output();
    assert!(
        ping.as_ref().is_ok_and(|o| o.status.success()),
        "TRTMC_TEST_SLURM=1 but `scontrol ping` fails: {ping:?}"
    );
    true
}

fn slurm_jobs(out_dir: &Path) -> Vec<Value> {
    read_json(&out_dir.join("slurm/jobs.json"))
        .as_array()
        .expect("jobs")
        .clone()
}

/// The state of every task of Slurm job `job` (`squeue -r -t all`), one a line, ended tasks included
/// until Slurm forgets them.
fn squeue_states(job: &str) -> Vec<String> {
    let q = Command::new("squeue")
        .args(["-h", "-r", "-t", "all", "-j", job, "-o", "%T"])
        .output()
        .expect("squeue");
    String::from_utf8_lossy(&q.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .collect()
}

/// Polls [`squeue_states`] of `job` every 200 ms until `done` holds; `timeout` passing fails the test
/// with `failure` and the last states.
fn wait_for_squeue(job: &str, timeout: Duration, failure: &str, done: impl Fn(&[String]) -> bool) {
    let started = Instant::now();
    loop {
        let now = squeue_states(job);
        if done(&now) {
            break;
        }
        assert!(started.elapsed() < timeout, "{failure}: {now:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn job_routes(job: &Value) -> BTreeSet<String> {
    job["routes"]
        .as_array()
        .expect("routes")
        .iter()
        .map(|r| r.as_str().expect("route").to_string())
        .collect()
}

/// The routes sleep 0, 50 and 100 ms in every call, so `-test:sleep_us=0` wins beyond doubt; the task
/// of `-test:sleep_us=100000` dies without a result (as one lost with its node). The coordinator is
/// killed -9 while it follows the first array; `--continue` waits for nothing that is over, resubmits
/// only the routes without a result file, records the dead task as that route's crash, and ends with
/// the winner of the local executor.
#[test]
fn slurm_executor_builds_rounds_as_arrays_survives_a_dead_task_and_a_killed_coordinator() {
    if !slurm_available() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let env = slurm_environment(tmp.path());
    let out_dir = tmp.path().join("out");
    let cache = out_dir.join("tuning-cache.jsonl");
    let routes = "-test:sleep_us=[0|50000|100000]";
    let dead = "-test:sleep_us=100000";
    let catalog = checkout_catalog();
    let local_search = ["--search", "full", "--early-stop-factor", "0"];
    let mut args = vec!["--manifest-root", &catalog];
    args.extend(tiny_cnn_args("tract", routes, &local_search));
    args.extend_from_slice(&["-o", s(&out_dir)]);
    args.extend_from_slice(&["--executor", "slurm", "--environment", s(&env)]);
    args.extend_from_slice(QUICK);
    let mut child = tune_cmd(tmp.path(), &args)
        .env("TRTMC_TEST_TUNE_ABORT_ROUTE", dead)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start");
    // Kill -9 once the first array is submitted: the coordinator is following it.
    let jobs_file = out_dir.join("slurm/jobs.json");
    kill_9_when(
        &mut child,
        Duration::from_secs(120),
        "the first array's submission",
        || jobs_file.is_file(),
    );
    let first = slurm_jobs(&out_dir);
    assert_eq!(first.len(), 1, "{first:?}");
    // The reference route is the first round's route -test:sleep_us=0: one task per distinct route.
    assert_eq!(
        job_routes(&first[0]),
        ["-test:sleep_us=0", "-test:sleep_us=50000", dead]
            .map(String::from)
            .into(),
    );
    let job = first[0]["job"].as_str().expect("job id").to_string();
    // The array goes on without its coordinator; wait until it is over.
    wait_for_squeue(
        &job,
        Duration::from_secs(120),
        "the array never ended",
        // `squeue -t all` also lists ended tasks until Slurm forgets them: over is "none active".
        |states| !states.iter().any(|st| trtmc_executor::slurm::is_active(st)),
    );
    let results = out_dir.join("slurm/routes");
    let written: Vec<Value> = std::fs::read_dir(&results)
        .expect("route results")
        .map(|e| read_json(&e.expect("entry").path()))
        .collect();
    assert_eq!(written.len(), 2, "the dead task wrote nothing: {written:?}");
    for r in &written {
        assert_eq!(r["schema"], "trtmc.tune-route-result/v1");
        assert_eq!(r["status"], "built", "{r}");
        assert!(r["node"].as_str().is_some_and(|n| !n.is_empty()), "{r}");
        assert!(
            r["hardware"]
                .as_str()
                .is_some_and(|h| h.contains(" CPUs; ")),
            "{r}"
        );
        assert!(
            r["slurm_task"]
                .as_str()
                .is_some_and(|t| t.starts_with(&job)),
            "{r}"
        );
    }
    // A route whose result is lost is built again; the one that has its result is not.
    let lost = written
        .iter()
        .find(|r| r["route"] == "-test:sleep_us=50000")
        .expect("result of -test:sleep_us=50000");
    assert_eq!(lost["route"], "-test:sleep_us=50000");
    for e in std::fs::read_dir(&results).expect("results") {
        let path = e.expect("entry").path();
        if read_json(&path)["route"] == "-test:sleep_us=50000" {
            std::fs::remove_file(path).expect("lose a result");
        }
    }

    let out = tune_cmd(tmp.path(), &["--continue", "--cache", s(&cache)])
        .env("TRTMC_TEST_TUNE_ABORT_ROUTE", dead)
        .output()
        .expect("continue");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let jobs = slurm_jobs(&out_dir);
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    assert_eq!(
        job_routes(&jobs[1]),
        ["-test:sleep_us=50000", dead].map(String::from).into(),
        "only the routes without a result are submitted again"
    );
    let summary = read_json(&out_dir.join("tuning-summary.json"));
    let crashed = tune_route(&summary, dead);
    assert_eq!(crashed["status"], "crashed", "{crashed}");
    let message = crashed["error_message"].as_str().expect("message");
    assert!(
        message.contains(&format!(
            "Slurm task {}_",
            jobs[1]["job"].as_str().expect("job")
        )) && message.contains("without a result"),
        "{message}"
    );
    assert_eq!(tune_route(&summary, "-test:sleep_us=50000")["status"], "ok");
    assert_winner(&summary, "-test:sleep_us=0");
    // Every route evaluated once across the two sessions.
    let search = routes_in_phase(&cache, "full");
    assert_eq!(search.len(), 3, "{search:?}");

    // The local executor on the same routes (the dead task's hook only acts in Slurm tasks) picks the
    // same winner.
    let local_dir = tmp.path().join("local");
    let mut local = tiny_cnn_args("tract", routes, &local_search);
    local.extend_from_slice(&["-o", s(&local_dir)]);
    let out = tune_quick(tmp.path(), &local);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let summary = read_json(&local_dir.join("tuning-summary.json"));
    assert_eq!(summary["decision"]["route"], "-test:sleep_us=0");
    assert!(!local_dir.join("slurm").exists());
}

/// Cancels a Slurm job when dropped, so a failing test leaves no held array on the cluster.
struct CancelOnDrop(String);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let _ = Command::new("scancel").arg(&self.0).status();
    }
}

/// A graceful stop (SIGTERM) of `tune --executor slurm` cancels the arrays it submitted: the array is
/// submitted held (`sbatch --hold`), so it is still pending when the signal comes; the tune exits 130
/// naming the array, and Slurm lists every task of it CANCELLED.
#[test]
fn slurm_executor_cancels_its_arrays_when_stopped() {
    if !slurm_available() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let env = slurm_environment(tmp.path());
    let mut yaml = std::fs::read_to_string(&env).expect("environment");
    yaml.push_str("  sbatch_args: [\"--hold\"]\n");
    std::fs::write(&env, yaml).expect("environment");
    let out_dir = tmp.path().join("out");
    let catalog = checkout_catalog();
    let mut args = vec!["--manifest-root", &catalog];
    args.extend(tiny_cnn_args(
        "tract",
        "-test:sleep_us=[0|50000]",
        &["--search", "full", "-o", s(&out_dir)],
    ));
    args.extend_from_slice(&["--executor", "slurm", "--environment", s(&env)]);
    args.extend_from_slice(QUICK);
    let log = tmp.path().join("tune-stderr.txt");
    let mut child = tune_cmd(tmp.path(), &args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("start");
    let jobs_file = out_dir.join("slurm/jobs.json");
    let started = Instant::now();
    while !jobs_file.is_file() {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "the tune ended before submitting: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no submission"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let job = slurm_jobs(&out_dir)[0]["job"]
        .as_str()
        .expect("job id")
        .to_string();
    let _cleanup = CancelOnDrop(job.clone());
    let states = || squeue_states(&job);
    assert!(
        states().iter().all(|st| st == "PENDING"),
        "held: {:?}",
        states()
    );
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::TERM,
    )
    .expect("SIGTERM");
    let status = child.wait().expect("wait");
    let err = std::fs::read_to_string(&log).expect("log");
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        err.contains("cancelled the Slurm job array(s) this tune submitted") && err.contains(&job),
        "{err}"
    );
    assert!(err.contains("tune --continue --cache"), "{err}");
    wait_for_squeue(
        &job,
        Duration::from_secs(30),
        &format!("array {job} not cancelled"),
        |now| !now.is_empty() && now.iter().all(|st| st == "CANCELLED"),
    );
}

fn tune_strings(tmp: &Path, args: &[String]) -> Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    tune(tmp, &args)
}

/// Refused before anything is submitted: a missing --environment (usage), an output directory in a
/// node-local folder (exit 3, with the fix), and a machine without the Slurm client (exit 7). None of
/// these needs a cluster.
#[test]
fn slurm_executor_refuses_what_cannot_work_before_submitting() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("out");
    let catalog = checkout_catalog();
    let mut base = vec!["--manifest-root", &catalog];
    base.extend(tiny_cnn_args(
        "tract",
        "-threads=[1|2]",
        &["-o", s(&out_dir)],
    ));
    let with = |extra: &[&'static str]| -> Vec<String> {
        base.iter().chain(extra).map(|a| a.to_string()).collect()
    };
    let out = tune_strings(tmp.path(), &with(&["--executor", "slurm"]));
    assert_refused(&out, 2, "--environment");

    // An environment without shared_paths: the temporary folder is node-local.
    let env = tmp.path().join("env.yaml");
    std::fs::write(
        &env,
        "schema: trtmc.perf-environment/v1\nname: cluster\nbundle_cache: /shared/b\nresults_root: /shared/r\n",
    )
    .expect("env");
    let mut args = with(&["--executor", "slurm", "--environment"]);
    args.push(s(&env).to_string());
    let out = tune_strings(tmp.path(), &args);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("local to each node") && err.contains("shared_paths"),
        "{err}"
    );
    assert!(!out_dir.join("slurm").exists() && !out_dir.join("tuning-cache.jsonl").exists());

    // Paths that count as shared, but no Slurm client on PATH: exit 7 before any submission.
    let env = slurm_environment(tmp.path());
    let mut args = with(&["--executor", "slurm", "--environment"]);
    args.push(s(&env).to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = tune_cmd(tmp.path(), &args)
        .env("PATH", tmp.path())
        .output()
        .expect("run");
    assert_refused(&out, 7, "`sbatch` is not on PATH");
    assert!(!out_dir.join("slurm").exists() && !out_dir.join("tuning-cache.jsonl").exists());
}

/// `tune --inputs` and `--ref-outputs` read every data-set format `run --inputs` reads: here the
/// onnx wheel's backend-test folder (unnamed `input_0.pb`/`output_0.pb`), and a folder of NAME.npy.
#[test]
fn tune_reads_run_data_set_formats_for_its_gate() {
    let tmp = tempfile::tempdir().expect("tmp");
    let py = Command::new("python3")
        .arg("-c")
        .arg(
            r#"
import os, sys
import numpy as np, onnx
from onnx import numpy_helper
folder = os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/pytorch-converted/test_Conv2d")
t = onnx.TensorProto(); t.ParseFromString(open(os.path.join(folder, "test_data_set_0/output_0.pb"), "rb").read())
os.makedirs(sys.argv[1])
np.save(os.path.join(sys.argv[1], "3.npy"), numpy_helper.to_array(t) * 3 + 1)
print(folder)
"#,
        )
        .arg(tmp.path().join("wrong"))
        .output()
        .expect("python3 with onnx and numpy");
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    let folder = PathBuf::from(String::from_utf8_lossy(&py.stdout).trim().to_string());
    let (model, set) = (folder.join("model.onnx"), folder.join("test_data_set_0"));
    let wrong = tmp.path().join("wrong");
    for (reference, want) in [(&set, 0), (&wrong, 5)] {
        let out_dir = tmp.path().join(format!("out-{want}"));
        let args = [
            "--onnx",
            s(&model),
            "--runtime",
            "tract",
            "--routes",
            "-threads=[1|2]",
            "--inputs",
            s(&set),
            "--ref-outputs",
            s(reference),
            "-o",
            s(&out_dir),
            "--quiet",
        ];
        let out = tune_quick(tmp.path(), &args);
        assert_eq!(code(&out), want, "{}", stderr(&out));
        let summary = read_json(&out_dir.join("tuning-summary.json"));
        // The expected outputs gate every route: they pass the model's own, fail the wrong ones.
        for r in summary["routes"].as_array().expect("routes") {
            assert_eq!(r["status"] == "accuracy_failed", want == 5, "{r}");
        }
    }
}
