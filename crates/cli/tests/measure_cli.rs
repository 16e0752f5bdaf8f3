//! The stopping rule, interruptions and progress of `trtmc-bench run`, through the real binary on the
//! test catalog's `test-sleep` profile (calls of a known length, no model).

use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

fn catalog_arg() -> String {
    test_catalog().display().to_string()
}

fn observation_lines(result: &Path, case: &serde_json::Value) -> usize {
    line_count(
        &result
            .join(case["dir"].as_str().expect("dir"))
            .join("observations.jsonl"),
    )
}

#[test]
fn a_default_count_keeps_timing_for_the_minimum_duration() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("r");
    // 0.2 ms calls: the operation's 50 calls take 10 ms, the default minimum duration 1 s.
    let out = run_test_model(
        "test-sleep",
        &[
            "--set",
            "request.sleep_us=200",
            "-o",
            out_dir.to_str().expect("utf8"),
            "-q",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&out_dir);
    let m = &doc["cases"][0]["measurement"];
    assert_eq!(m["stopped_by"], "complete", "{m}");
    assert_eq!(m["min_duration_s"], 1.0);
    assert_eq!(m["max_duration_s"], 30.0);
    let n = m["observations"].as_u64().expect("observations");
    assert!(n > 1000, "1 s of 0.2 ms calls, not just 50: {n}");
    assert_eq!(observation_lines(&out_dir, &doc["cases"][0]), n as usize);
}

#[test]
fn the_budget_ends_a_default_run_early_and_keeps_a_valid_result() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("r");
    // 50 calls of 40 ms would take 2 s; the budget is 1.2 s.
    let out = run_test_model(
        "test-sleep",
        &[
            "--set",
            "request.sleep_us=40000",
            "--max-duration",
            "1.2",
            "-o",
            out_dir.to_str().expect("utf8"),
            "-q",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&out_dir);
    let case = &doc["cases"][0];
    assert_eq!(case["status"], "completed");
    let m = &case["measurement"];
    assert_eq!(m["stopped_by"], "budget", "{m}");
    let n = m["observations"].as_u64().expect("observations");
    assert!((20..50).contains(&n), "{n}");
    // The warm-up may spend a fifth of the budget: 0.24 s of 40 ms calls, not the operation's 5 × 40.
    let warmups = m["warmup_done"].as_u64().expect("warmup_done");
    assert!((1..=5).contains(&warmups), "{warmups}");
}

#[test]
fn an_explicit_count_is_exact_and_the_summary_marks_unsupported_percentiles() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("r");
    let out = run_test_model(
        "test-sleep",
        &[
            "--iterations",
            "30",
            "--warmup",
            "1",
            "-o",
            out_dir.to_str().expect("utf8"),
            "-q",
            "--format",
            "json",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = read_json(&out_dir.join("result.json"));
    let m = &doc["cases"][0]["measurement"];
    assert_eq!(m["observations"], 30);
    assert_eq!(m["min_duration_s"], 0.0);
    assert_eq!(m["max_duration_s"], serde_json::Value::Null);
    let summary: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json summary");
    let notes = summary["cases"][0]["validity"]["notes"].to_string();
    assert!(notes.contains("p99 rest on 30 calls"), "{notes}");
    assert!(!notes.contains("p90"), "30 calls reach p90: {notes}");
}

#[test]
fn a_timeout_keeps_the_calls_already_timed() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("r");
    let out = run_test_model(
        "test-sleep",
        &[
            "--iterations",
            "100000",
            "--timeout",
            "1.5",
            "-o",
            out_dir.to_str().expect("utf8"),
            "-q",
        ],
    );
    assert_refused(&out, 5, "stopped by --timeout");
    let doc = assert_result_dir_valid(&out_dir);
    assert_eq!(doc["status"], "partial");
    let case = &doc["cases"][0];
    assert_eq!(case["status"], "interrupted");
    assert_eq!(case["measurement"]["stopped_by"], "timeout");
    let n = case["measurement"]["observations"].as_u64().expect("n");
    assert!(n > 50, "about 1.5 s of 2 ms calls are kept: {n}");
    assert_eq!(observation_lines(&out_dir, case), n as usize);
    assert!(case["metrics"]["latency_ms"]["p50"].as_f64().expect("p50") >= 2.0);
    let error = case["error"].as_str().expect("reason");
    assert!(error.contains("statistics are partial"), "{error}");
    // The report still reads it, and says the statistics are partial.
    let collection = tmp.path().join("collection");
    let report = run(&[
        "report",
        out_dir.to_str().expect("utf8"),
        "-o",
        collection.to_str().expect("utf8"),
    ]);
    assert!(
        stdout(&report).contains("interrupted"),
        "{}",
        stdout(&report)
    );
}

#[test]
fn sigterm_commits_what_was_timed_and_lists_the_cases_not_started() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("r");
    let mut child = test_model_command("test-sleep")
        .args([
            "--model",
            "test-noop",
            "--iterations",
            "1000000",
            "-o",
            out_dir.to_str().expect("utf8"),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start");
    // Long enough for one progress line (every 5 s when stderr is not a terminal).
    std::thread::sleep(Duration::from_millis(6500));
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
    let started = Instant::now();
    let status = child.wait().expect("wait");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the stop is prompt"
    );
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("read");
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        err.contains("timed ") && err.contains("calls, "),
        "a progress line: {err}"
    );
    assert!(err.contains("ETA"), "{err}");
    assert!(err.contains("1 case(s) not started"), "{err}");
    let doc = assert_result_dir_valid(&out_dir);
    assert_eq!(doc["status"], "partial");
    assert_eq!(doc["cases"].as_array().expect("cases").len(), 1);
    let case = &doc["cases"][0];
    assert_eq!(case["status"], "interrupted");
    assert_eq!(case["measurement"]["stopped_by"], "signal");
    let n = case["measurement"]["observations"].as_u64().expect("n");
    assert!(n > 500, "{n}");
    assert_eq!(observation_lines(&out_dir, case), n as usize);
    assert_eq!(doc["not_run"][0], "002-test-noop-default");
    assert!(
        !out_dir
            .join(case["dir"].as_str().expect("dir"))
            .join(".worker-progress.json")
            .exists(),
        "the progress file is gone"
    );
}

#[test]
fn interleaved_rounds_give_each_case_a_verdict_against_the_baseline() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("r");
    let rounds = |baseline: &str, dir: &Path| {
        run_test_model(
            "test-sleep",
            &[
                "--sweep",
                "request.sleep_us=2000,6000",
                "--iterations",
                "18",
                "--warmup",
                "1",
                // 9 rounds, not 6: the 95 % interval of 9 round ratios drops the slowest and the fastest
                // (that of 6 is [min, max]), so one round a neighbour's load disturbed cannot blur the
                // verdict (a 6-round run once read 0.95–2.95 under load).
                "--rounds",
                "9",
                "--baseline",
                baseline,
                "-o",
                dir.to_str().expect("utf8"),
                "-q",
            ],
        )
    };
    let out = rounds("1", &out_dir);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&out_dir);
    for case in doc["cases"].as_array().expect("cases") {
        assert_eq!(
            case["rounds"].as_array().expect("rounds").len(),
            9,
            "{case}"
        );
        assert_eq!(
            case["measurement"]["observations"], 18,
            "2 calls in each of 9 rounds"
        );
        let dir = out_dir.join(case["dir"].as_str().expect("dir"));
        assert!(
            dir.join("worker-r09.log").exists(),
            "each round keeps its log"
        );
        assert!(
            !dir.join("worker-request-r01.json").exists(),
            "and drops its protocol files"
        );
    }
    let c = &doc["comparisons"][0];
    assert_eq!(c["case"], "002-test-sleep-2ms-sleep_us-6000");
    assert_eq!(c["baseline"], "001-test-sleep-2ms-sleep_us-2000");
    assert_eq!(c["trusted"], true);
    let ratio = c["ratio"].as_f64().expect("ratio");
    // 3 on a quiet machine; a loaded one adds the same wake-up delay to both sides, which pulls the
    // ratio towards 1 (2.3 at a 1 ms delay, 1.8 at 3 ms).
    assert!(
        (1.8..3.3).contains(&ratio),
        "6 ms calls against 2 ms calls: {ratio}"
    );
    let verdict = c["verdict"].as_str().expect("verdict");
    assert!(
        verdict.starts_with("sleep_us=6000 ran ")
            && verdict.contains("× slower than sleep_us=2000 (95 % CI"),
        "{verdict}"
    );
    assert!(
        stdout(&out).contains(verdict),
        "the summary ends with it: {}",
        stdout(&out)
    );
    let html = std::fs::read_to_string(out_dir.join("report.html")).expect("html");
    assert!(
        html.contains("sleep_us=6000 ran "),
        "report.html shows the verdict"
    );

    // The other case as the baseline: the same comparison, the other way round.
    let flipped_dir = tmp.path().join("flipped");
    let flipped = rounds("2", &flipped_dir);
    assert_eq!(code(&flipped), 0, "{}", stderr(&flipped));
    let doc = read_json(&flipped_dir.join("result.json"));
    let verdict = doc["comparisons"][0]["verdict"].as_str().expect("verdict");
    assert!(
        verdict.contains("sleep_us=2000 ran ") && verdict.contains("× faster than sleep_us=6000"),
        "{verdict}"
    );

    let bad = rounds("3", &tmp.path().join("bad"));
    assert_eq!(code(&bad), 3);
    assert!(
        stderr(&bad).contains("--baseline 3: give a case number from 1 to 2"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn two_runtimes_on_one_model_are_two_cases_and_threads_means_the_same_on_both() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("r");
    let out = run(&[
        "run",
        "--model",
        "tiny-cnn",
        "--runtime",
        "tract",
        "--runtime",
        "onnxruntime",
        "--set",
        "runtime.threads=1",
        "--iterations",
        "4",
        "--warmup",
        "1",
        "--rounds",
        "2",
        "--bundle-cache",
        tmp.path().join("cache").to_str().expect("utf8"),
        "-o",
        out_dir.to_str().expect("utf8"),
        "-q",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&out_dir);
    let runtimes: Vec<&str> = doc["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| c["runtime"]["name"].as_str().expect("runtime"))
        .collect();
    assert_eq!(runtimes, ["tract", "onnxruntime"]);
    let c = &doc["comparisons"][0];
    assert_eq!(c["trusted"], false, "2 rounds cannot carry a 95 % interval");
    let verdict = c["verdict"].as_str().expect("verdict");
    assert!(
        verdict.starts_with("onnxruntime at ") && verdict.contains("too few rounds"),
        "{verdict}"
    );
    let session = std::fs::read_to_string(
        out_dir
            .join(doc["cases"][1]["dir"].as_str().expect("dir"))
            .join("resolved-case.json"),
    )
    .expect("resolved case");
    assert!(session.contains("\"threads\""), "{session}");
}

/// A worker request for `n` calls of 2 ms, run by `trtmc-bench worker` directly.
fn long_sleep_request(dir: &Path) -> std::path::PathBuf {
    let request = dir.join("request.json");
    std::fs::write(
        &request,
        serde_json::json!({
            "schema": "trtmc.worker-request/v1",
            "operation": "test_sleep",
            "runtime": "tract",
            "request": {"sleep_us": 2000},
            "runtime_settings": {},
            "warmup": 0,
            "iterations": 10_000_000u64,
            "min_duration_s": 0.0
        })
        .to_string(),
    )
    .expect("request");
    request
}

/// Waits up to `limit` for `child` to exit; `None` when it is still running (then it is killed).
fn exits_within(child: &mut std::process::Child, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if child.try_wait().expect("wait").is_some() {
            return Some(started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn a_worker_stops_itself_after_its_timeout_and_keeps_what_it_timed() {
    let tmp = tempfile::tempdir().expect("tmp");
    let result = tmp.path().join("result.json");
    let mut child = Command::new(BIN)
        .args(["worker", "--request"])
        .arg(long_sleep_request(tmp.path()))
        .arg("--result")
        .arg(&result)
        .args(["--timeout-s", "1"])
        .env("TRTMC_TEST", "1")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start");
    // Without the watchdog this request runs for hours.
    let took = exits_within(&mut child, Duration::from_secs(20));
    assert!(took.is_some(), "the worker ignored its own timeout");
    let mut err = String::new();
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err);
    assert!(err.contains("past its 1 s timeout"), "{err}");
    let doc = read_json(&result);
    assert_eq!(doc["status"], "interrupted", "{doc}");
    assert!(doc["observations"].as_array().expect("calls").len() > 10);
}

#[test]
fn a_worker_stops_when_its_orchestrator_pipe_closes() {
    let tmp = tempfile::tempdir().expect("tmp");
    let result = tmp.path().join("result.json");
    let mut child = Command::new(BIN)
        .args(["worker", "--parent-pipe", "--request"])
        .arg(long_sleep_request(tmp.path()))
        .arg("--result")
        .arg(&result)
        .env("TRTMC_TEST", "1")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(child.try_wait().expect("wait").is_none(), "still working");
    drop(child.stdin.take());
    let took = exits_within(&mut child, Duration::from_secs(20));
    assert!(
        took.is_some(),
        "the worker outlived its orchestrator's pipe"
    );
    let doc = read_json(&result);
    assert_eq!(doc["status"], "interrupted", "{doc}");
}

/// The pids of `parent`'s children, from /proc.
fn children_of(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // The fields after the parenthesised command name: state, ppid, …
        let after = stat.rsplit_once(')').map(|(_, a)| a).unwrap_or("");
        if after.split_whitespace().nth(1) == Some(&parent.to_string()) {
            out.push(pid);
        }
    }
    out
}

/// Running (neither gone nor a zombie waiting to be reaped).
fn is_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let after = stat.rsplit_once(')').map(|(_, a)| a).unwrap_or("");
            !matches!(after.split_whitespace().next(), Some("Z" | "X"))
        }
        Err(_) => false,
    }
}

#[test]
fn killing_only_the_orchestrator_does_not_leave_its_worker_running() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("r");
    let args = |iterations: &str| {
        vec![
            "run".to_owned(),
            "--manifest-root".to_owned(),
            catalog_arg(),
            "--model".to_owned(),
            "test-sleep".to_owned(),
            "--iterations".to_owned(),
            iterations.to_owned(),
            "-o".to_owned(),
            out_dir.display().to_string(),
        ]
    };
    let mut orchestrator = Command::new(BIN)
        .args(args("1000000"))
        .env("TRTMC_TEST", "1")
        .env_remove("TRTMC_MANIFEST_ROOT")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start");
    let started = Instant::now();
    let worker = loop {
        if let Some(w) = children_of(orchestrator.id()).first() {
            break *w;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no worker started"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(500));
    // SIGKILL to the orchestrator alone, not its process group.
    orchestrator.kill().expect("kill");
    let _ = orchestrator.wait();
    let killed = Instant::now();
    while is_running(worker) && killed.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !is_running(worker),
        "worker {worker} still runs 20 s after its orchestrator died"
    );
    // The dead run's staging directory goes with the next run into the same place.
    let staged = |dir: &Path| {
        std::fs::read_dir(dir)
            .expect("list")
            .flatten()
            .any(|e| e.file_name().to_string_lossy().contains(".staging-"))
    };
    assert!(staged(tmp.path()), "the killed run left its staging dir");
    let out = Command::new(BIN)
        .args(args("20"))
        .env("TRTMC_TEST", "1")
        .env_remove("TRTMC_MANIFEST_ROOT")
        .output()
        .expect("rerun");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!staged(tmp.path()), "the stale staging dir was removed");
}

/// `run` with two test-sleep cases and no `--rounds`: 10 rounds first, then rounds added on the
/// schedule of looks (10, 15, …) until the verdict is decided or a budget is spent. One call of
/// 2 ms per round and no warm-up, so a worker's first call has its round's number (`swing_pct`
/// alternates with it).
fn sequential_run(dir: &Path, sweep: &str, extra: &[&str]) -> std::process::Output {
    let catalog = catalog_arg();
    let mut args = vec![
        "run",
        "--manifest-root",
        catalog.as_str(),
        "--model",
        "test-sleep",
        "--set",
        "request.sleep_us=2000",
        "--sweep",
        sweep,
        "--iterations",
        "10",
        "--warmup",
        "0",
        // The cases' requests differ, so they are different workloads: compared only on request.
        "--baseline",
        "1",
        "-o",
        dir.to_str().expect("utf8"),
        "-q",
    ];
    args.extend_from_slice(extra);
    run(&args)
}

fn round_counts(doc: &serde_json::Value) -> Vec<usize> {
    doc["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| c["rounds"].as_array().map_or(0, Vec::len))
        .collect()
}

#[test]
fn a_verdict_decided_at_the_first_look_stops_the_rounds_there() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("r");
    // 10x slower: decided at 10 rounds even when a loaded machine stretches a sleep.
    let out = sequential_run(&out_dir, "request.sleep_us=2000,20000", &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&out_dir);
    let c = &doc["comparisons"][0];
    assert_eq!(c["stopped_by"], "decided", "{c}");
    assert_eq!(c["rounds"], 10, "10x slower shows at the first look: {c}");
    assert_eq!(round_counts(&doc), [10, 10]);
    // Four looks (10, 15, 22, 30) share the 5 % error.
    let look = c["look_confidence"].as_f64().expect("look_confidence");
    assert!((look - 0.9875).abs() < 1e-9, "{c}");
    assert_eq!(c["confidence"], 0.95);
    let verdict = c["verdict"].as_str().expect("verdict");
    assert!(
        verdict.contains("× slower than") && !verdict.contains("undecided"),
        "{verdict}"
    );
}

#[test]
fn an_undecidable_verdict_adds_rounds_until_max_rounds_and_says_so() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("r");
    // The second case's rounds alternate 2.6 ms and 1.4 ms against a steady 2 ms: its interval holds
    // 1 and reaches far past 2 %, whatever the number of rounds.
    let out = sequential_run(&out_dir, "request.swing_pct=0,30", &["--max-rounds", "15"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&out_dir);
    let c = &doc["comparisons"][0];
    assert_eq!(c["stopped_by"], "max_rounds", "{c}");
    assert_eq!(c["rounds"], 15, "{c}");
    assert_eq!(round_counts(&doc), [15, 15]);
    let verdict = c["verdict"].as_str().expect("verdict");
    assert!(
        verdict.contains("no difference shown")
            && verdict.ends_with("[undecided: --max-rounds reached]"),
        "{verdict}"
    );
    // The summary ends with it (wrapped to the terminal's width).
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words(&stdout(&out)).contains(&words(verdict)),
        "{}",
        stdout(&out)
    );
    // The added rounds keep their own logs.
    let dir = out_dir.join(doc["cases"][1]["dir"].as_str().expect("dir"));
    assert!(dir.join("worker-r15.log").exists());
    assert!(!dir.join("worker-r16.log").exists());

    // The same with a budget that cannot pay for the next block: it stops at the first look.
    let budget_dir = tmp.path().join("budget");
    let out = sequential_run(
        &budget_dir,
        "request.swing_pct=0,30",
        &["--max-duration", "0.025"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&budget_dir);
    let c = &doc["comparisons"][0];
    assert_eq!(c["stopped_by"], "max_duration", "{c}");
    assert_eq!(c["rounds"], 10, "{c}");
    assert!(
        c["verdict"]
            .as_str()
            .is_some_and(|v| v.ends_with("[undecided: --max-duration spent]")),
        "{c}"
    );

    // An explicit --rounds is exact: no look, no added round, no stop reason.
    let fixed_dir = tmp.path().join("fixed");
    let out = sequential_run(&fixed_dir, "request.swing_pct=0,30", &["--rounds", "10"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = read_json(&fixed_dir.join("result.json"));
    assert_eq!(round_counts(&doc), [10, 10]);
    assert!(doc["comparisons"][0].get("stopped_by").is_none());

    let bad = sequential_run(
        &tmp.path().join("bad"),
        "request.swing_pct=0,30",
        &["--rounds", "10", "--max-rounds", "8"],
    );
    assert_refused(&bad, 3, "--max-rounds 8 is below --rounds 10");
}
