//! Issue 34, processes and outputs, through the real binary: one writer per directory (a second `run -o`,
//! `tune --continue` or `matrix resume` exits 6 naming the holder's pid), a directory made at `-o`
//! during a run is never deleted, tune workers, matrix leaf runs and the matrix's Python references end
//! with their orchestrator (kill -9 of the orchestrator alone, SIGINT, SIGTERM), SIGHUP keeps what a run measured, `analyze`/`report`
//! outputs refuse symlinks and `analyze package` replaces only an incomplete report, and `analyze serve`
//! checks the Host header, answers 405 with `Allow`, takes `--bind localhost` and serves one client
//! while another has stopped reading.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::analyze_cli::fixtures;
use crate::common::*;
use crate::matrix_cli::{ROW_ORT, Setup, matrix, measuring, p, setup, suite};
use crate::tune_cli::{iterations, s, sleepy_args, tune, tune_cmd};

/// A long `run` of the test catalog's sleeping operation into `out` (2 ms a call).
fn long_run(out: &Path, iterations: &str, stderr_file: &Path) -> Child {
    test_model_command("test-sleep")
        .args(["--iterations", iterations, "-o", s(out)])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(stderr_file).expect("stderr file"))
        .spawn()
        .expect("start run")
}

/// Polls `ready` every 20 ms for up to `timeout`; fails the test naming `what` when it never holds.
fn wait_for(timeout: Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(started.elapsed() < timeout, "waited {timeout:?} for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `dir` holds an entry whose name starts with `prefix`.
fn has_entry(dir: &Path, prefix: &str) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(prefix))
    })
}

/// Every live descendant of `pid` (children of each of its threads, recursively).
fn descendants(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut queue = vec![pid];
    while let Some(parent) = queue.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                found.push(child);
                queue.push(child);
            }
        }
    }
    found
}

/// Whether `pid` runs (a zombie does not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

fn signal(child: &Child, signal: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_child(child);
    rustix::process::kill_process(pid, signal).expect("signal");
}

/// Waits for every pid in `pids` to end (orphans reparented to init are not reaped by us).
fn assert_all_end(pids: &[u32], within: Duration, what: &str) {
    let started = Instant::now();
    while pids.iter().any(|&p| alive(p)) {
        let left: Vec<String> = pids
            .iter()
            .filter(|&&p| alive(p))
            .map(|&p| format!("{p} ({})", cmdline(p)))
            .collect();
        assert!(
            started.elapsed() < within,
            "{what}: still running after {within:?}: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn a_directory_made_at_the_output_during_a_run_is_kept_and_the_result_moved_aside() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("D");
    let log = tmp.path().join("stderr.txt");
    let mut child = long_run(&out, "1500", &log);
    wait_for(Duration::from_secs(120), "the staging directory", || {
        has_entry(tmp.path(), ".D.staging-")
    });
    // The issue's repro: someone makes the directory while the run measures.
    std::fs::create_dir(&out).expect("mkdir D");
    std::fs::write(out.join("precious.txt"), "x\n").expect("write precious");
    let status = child.wait().expect("wait");
    let err = read(&log);
    assert_eq!(status.code(), Some(6), "{err}");
    assert_eq!(read(&out.join("precious.txt")), "x\n", "precious.txt kept");
    assert_eq!(
        std::fs::read_dir(&out).expect("ls D").count(),
        1,
        "nothing was added to or removed from D"
    );
    let kept = tmp.path().join("D.kept");
    assert!(
        err.contains(s(&kept)),
        "the message names where the result is: {err}"
    );
    let doc = assert_result_dir_valid(&kept);
    assert_eq!(doc["cases"][0]["status"], "completed", "{doc}");
    assert!(
        !tmp.path().join(".D.lock").exists(),
        "the lock file is gone"
    );
}

#[test]
fn a_second_writer_of_an_output_is_refused_and_sighup_keeps_what_was_measured() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("r");
    let log = tmp.path().join("stderr.txt");
    let mut child = long_run(&out, "1000000", &log);
    wait_for(Duration::from_secs(120), "the staging directory", || {
        has_entry(tmp.path(), ".r.staging-")
    });
    let second = run_test_model("test-noop", &["-o", s(&out)]);
    assert_eq!(code(&second), 6, "{}", stderr(&second));
    assert!(
        stderr(&second).contains(&format!("pid {}", child.id())),
        "the holder's pid: {}",
        stderr(&second)
    );
    // Some calls first, then the terminal closes.
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, rustix::process::Signal::HUP);
    let status = child.wait().expect("wait");
    let err = read(&log);
    assert_eq!(status.code(), Some(130), "{err}");
    let doc = assert_result_dir_valid(&out);
    let case = &doc["cases"][0];
    assert_eq!(case["status"], "interrupted", "{doc}");
    assert_eq!(case["measurement"]["stopped_by"], "signal");
    assert!(case["measurement"]["observations"].as_u64().expect("n") > 10);
}

#[test]
fn a_second_tune_on_a_cache_is_refused_and_sigint_stops_the_workers_then_continue_finishes() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("out");
    let cache = out_dir.join("tuning-cache.jsonl");
    let log = tmp.path().join("tune-stderr.txt");
    let mut child = tune_cmd(tmp.path(), &sleepy_args(&out_dir, &["--model", "tiny-cnn"]))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("start tune");
    let tuner = child.id();
    wait_for(
        Duration::from_secs(600),
        "two cache lines and a live tune-worker",
        || {
            cache_lines(&cache) >= 2
                && descendants(tuner)
                    .iter()
                    .any(|&w| cmdline(w).contains("tune-worker"))
        },
    );
    let second = tune(tmp.path(), &["--continue", "--cache", s(&cache)]);
    assert_eq!(code(&second), 6, "{}", stderr(&second));
    assert!(
        stderr(&second).contains(&format!("pid {tuner}")),
        "{}",
        stderr(&second)
    );
    let workers = descendants(tuner);
    signal(&child, rustix::process::Signal::INT);
    let status = child.wait().expect("wait");
    let err = read(&log);
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("tune --continue --cache"), "{err}");
    assert_all_end(
        &workers,
        Duration::from_secs(5),
        "tune workers after SIGINT",
    );
    let out = tune(tmp.path(), &["--continue", "--cache", s(&cache)]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let done = iterations(&cache);
    let expected: Vec<u64> = (0..done.len() as u64).collect();
    assert_eq!(done, expected, "every iteration once");
}

#[test]
fn tune_workers_end_when_the_tuner_alone_is_killed() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("out");
    let mut child = tune_cmd(tmp.path(), &sleepy_args(&out_dir, &["--model", "tiny-cnn"]))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start tune");
    let tuner = child.id();
    let mut workers = Vec::new();
    wait_for(Duration::from_secs(600), "a serving tune-worker", || {
        workers = descendants(tuner)
            .into_iter()
            .filter(|&w| cmdline(w).contains("tune-worker"))
            .collect();
        // The reference is measured by a serving worker once the cache has its first line.
        !workers.is_empty() && cache_lines(&out_dir.join("tuning-cache.jsonl")) >= 1
    });
    child.kill().expect("kill -9 the tuner only");
    child.wait().expect("reap");
    assert_all_end(
        &workers,
        Duration::from_secs(5),
        "tune workers after kill -9",
    );
}

/// The local matrix's leaf `run`s among the descendants of `pid`.
fn leaf_runs(pid: u32) -> Vec<u32> {
    descendants(pid)
        .into_iter()
        .filter(|&c| {
            let line = cmdline(c);
            line.contains(" run ") && line.contains("--parent-pipe")
        })
        .collect()
}

fn start_matrix(_s: &Setup, args: &[&str], log: &Path) -> Child {
    Command::new(BIN)
        .arg("matrix")
        .args(args)
        .env_remove("TRTMC_MANIFEST_ROOT")
        .env("TRTMC_TEST", "1")
        // Long calls: each leaf run takes seconds.
        .env("TRTMC_TEST_MATRIX_CANDIDATE_DELAY_US", "150000")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).expect("log"))
        .spawn()
        .expect("start matrix")
}

/// [`start_matrix`]: `matrix run SUITE` with the setup's environment and catalog, into `out`.
fn start_matrix_run(s: &Setup, suite_path: &Path, out: &Path, log: &Path) -> Child {
    let (suite, env, catalog, out) = (p(suite_path), p(&s.env), p(&s.catalog), p(out));
    let args = ["run", &suite, "--environment", &env];
    let args = [&args[..], &["--manifest-root", &catalog, "-o", &out]].concat();
    start_matrix(s, &args, log)
}

#[test]
fn one_matrix_writer_per_run_and_leaves_end_with_their_orchestrator() {
    let _one_at_a_time = measuring();
    let s = setup("");
    let rows = format!(
        "{ROW_ORT}  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: single\n    candidate: {{runtime: tract}}\n    reference: {{backend: onnxruntime-python}}\n"
    );
    let suite_path = suite(&s, "proc", &rows);
    let out = s.dir.path().join("run");
    let log = s.dir.path().join("matrix-stderr.txt");
    let mut child = start_matrix_run(&s, &suite_path, &out, &log);
    let orchestrator = child.id();
    let mut leaves = Vec::new();
    wait_for(Duration::from_secs(300), "a leaf run", || {
        leaves = leaf_runs(orchestrator);
        !leaves.is_empty()
    });
    // A second session on the same run is refused: no row runs twice.
    let second = matrix(&s, &["resume", &p(&out)], &[]);
    assert_eq!(code(&second), 6, "{}", stderr(&second));
    assert!(
        stderr(&second).contains(&format!("pid {orchestrator}")),
        "{}",
        stderr(&second)
    );
    // SIGTERM: the leaf is stopped gracefully, its row left pending, exit 130.
    signal(&child, rustix::process::Signal::TERM);
    let status = child.wait().expect("wait");
    let err = read(&log);
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("matrix resume"), "{err}");
    assert_all_end(&leaves, Duration::from_secs(15), "leaf runs after SIGTERM");
    assert!(
        !out.join("rows/000.json").exists(),
        "the stopped row stays pending"
    );

    // kill -9 of the orchestrator alone: its leaf stops by its pipe.
    let mut child = start_matrix(&s, &["resume", &p(&out)], &log);
    let orchestrator = child.id();
    wait_for(Duration::from_secs(300), "a leaf run", || {
        leaves = leaf_runs(orchestrator);
        !leaves.is_empty()
    });
    child.kill().expect("kill -9 the orchestrator only");
    child.wait().expect("reap");
    assert_all_end(&leaves, Duration::from_secs(15), "leaf runs after kill -9");

    let o = matrix(&s, &["resume", &p(&out)], &[]);
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    let results = read_json(&out.join("results.json"));
    assert_eq!(results["summary"]["pending"], 0, "{results}");
    for index in 0..2 {
        let row = read_json(&out.join(format!("rows/{index:03}.json")));
        assert_eq!(row["index"], index, "{row}");
    }
}

/// The matrix's Python reference runners (`ort_reference.py`) among the descendants of `pid`.
fn python_references(pid: u32) -> Vec<u32> {
    descendants(pid)
        .into_iter()
        .filter(|&c| cmdline(c).contains("ort_reference.py"))
        .collect()
}

#[test]
fn a_python_reference_ends_with_its_killed_matrix() {
    let _one_at_a_time = measuring();
    let s = setup("");
    // Each reference call sleeps 5 s (a test-only option): the 4 calls of a round outlast the
    // 5 s the reference is given to end after the kill.
    let row = ROW_ORT.replace(
        "{backend: onnxruntime-python}",
        "{backend: onnxruntime-python, options: {test_call_delay_s: 5}}",
    );
    let suite_path = suite(&s, "python-leaf", &row);
    let out = s.dir.path().join("run");
    let log = s.dir.path().join("matrix-stderr.txt");
    let mut child = start_matrix_run(&s, &suite_path, &out, &log);
    let orchestrator = child.id();
    let mut references = Vec::new();
    wait_for(Duration::from_secs(300), "a Python reference", || {
        references = python_references(orchestrator);
        !references.is_empty()
    });
    for &r in &references {
        assert!(cmdline(r).contains("--parent-pipe"), "{}", cmdline(r));
    }
    // Into its timed calls (past the interpreter's start and the model load).
    std::thread::sleep(Duration::from_secs(2));
    child.kill().expect("kill -9 the orchestrator only");
    child.wait().expect("reap");
    assert_all_end(
        &references,
        Duration::from_secs(5),
        "Python references after kill -9 of the matrix",
    );
    let attempt_log = std::fs::read_dir(out.join("rows/000"))
        .expect("attempts")
        .flatten()
        .map(|a| read(&a.path().join("reference-1.log")))
        .collect::<String>();
    assert!(
        attempt_log.contains("the orchestrator is gone"),
        "the reference says why it stopped: {attempt_log}"
    );
}

#[test]
fn analyze_and_report_outputs_refuse_symlinks_and_package_replaces_only_an_incomplete_report() {
    let tmp = tempfile::tempdir().expect("tmp");
    let data = fixtures().join("trtexec-other");
    let target = tmp.path().join("precious.json");
    std::fs::write(&target, "keep me").expect("write");
    let link = tmp.path().join("link.json");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    for flag in ["-o", "--analyze-data-output"] {
        let out = run(&["analyze", "--quiet", s(&data), flag, s(&link)]);
        assert_eq!(code(&out), 6, "{flag}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("symbolic link"),
            "{flag}: {}",
            stderr(&out)
        );
        assert_eq!(read(&target), "keep me", "{flag} wrote through the link");
    }
    // Written atomically: no temporary left beside the document.
    let doc = tmp.path().join("analysis.json");
    let out = run(&["analyze", "--quiet", s(&data), "-o", s(&doc)]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(read(&doc).starts_with('{'));

    let real = tmp.path().join("real-dir");
    std::fs::create_dir(&real).expect("mkdir");
    let link_dir = tmp.path().join("link-dir");
    std::os::unix::fs::symlink(&real, &link_dir).expect("symlink");
    let out = run(&["report", s(tmp.path()), "-o", s(&link_dir)]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(&real).expect("ls").count(), 0);

    // What a packaging killed mid-write by an earlier version left: replaced by a rerun.
    let report = tmp.path().join("report");
    std::fs::create_dir(&report).expect("mkdir");
    std::fs::write(report.join("index.html"), "<html>half").expect("write");
    let package = |dir: &Path| run(&["analyze", "package", s(&data), "--report-dir", s(dir)]);
    let out = package(&report);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    for f in ["index.html", "data.js", "analyze-data.json", "app.js"] {
        assert!(report.join(f).is_file(), "{f}");
    }
    assert!(!read(&report.join("index.html")).contains("half"));
    let leftovers: Vec<String> = std::fs::read_dir(tmp.path())
        .expect("ls")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "staging or lock left: {leftovers:?}");
    // A complete report stays refused.
    let before = std::fs::read(report.join("data.js")).expect("read");
    let out = package(&report);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(stderr(&out).contains("not empty"), "{}", stderr(&out));
    assert_eq!(std::fs::read(report.join("data.js")).expect("read"), before);
    // A symlinked report folder is refused.
    let out = package(&link_dir);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
}

/// Sends `head` (a request without its final blank line) and returns the status and the whole answer.
fn exchange(addr: &str, head: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(s, "{head}\r\n\r\n").expect("send");
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, answer)
}

#[test]
fn serve_checks_the_host_names_allowed_methods_and_is_not_blocked_by_a_slow_client() {
    let tmp = tempfile::tempdir().expect("tmp");
    let report = tmp.path().join("r");
    let data = fixtures().join("trtexec-other");
    let out = run(&["analyze", "package", s(&data), "--report-dir", s(&report)]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // Far more than the socket buffers hold: its reader below stops after the first bytes.
    std::fs::write(report.join("big.json"), vec![b' '; 64 << 20]).expect("big file");
    let (mut server, line, addr) =
        start_analyze_serve(&[s(&report), "--bind", "localhost", "--port", "0"]);
    let port = addr.rsplit(':').next().unwrap_or_default().to_string();
    let result = std::panic::catch_unwind(|| {
        assert!(addr.starts_with("127.0.0.1:"), "--bind localhost: {line}");
        let ok = |host: &str| exchange(&addr, &format!("GET / HTTP/1.1\r\nHost: {host}"));
        let (status, body) = ok(&addr);
        assert_eq!(status, 200, "{body}");
        assert_eq!(ok(&format!("localhost:{port}")).0, 200);
        // A DNS-rebinding page sends its own host name: nothing is served.
        let (status, body) = ok(&format!("evil.example:{port}"));
        assert_eq!(status, 421, "{body}");
        assert!(!body.contains("analysis report"), "{body}");
        let (status, body) = exchange(&addr, "GET / HTTP/1.1");
        assert_eq!(status, 421, "no Host header: {body}");
        let (status, body) = exchange(&addr, &format!("POST / HTTP/1.1\r\nHost: {addr}"));
        assert_eq!(status, 405, "{body}");
        assert!(body.contains("Allow: GET, HEAD"), "{body}");

        // A client that asks for the large file and stops reading.
        let mut slow = std::net::TcpStream::connect(&addr).expect("connect");
        write!(slow, "GET /big.json HTTP/1.1\r\nHost: {addr}\r\n\r\n").expect("send");
        let mut first = [0u8; 16];
        slow.read_exact(&mut first).expect("the first bytes");
        std::thread::sleep(Duration::from_millis(500));
        let started = Instant::now();
        let (status, _) = ok(&addr);
        assert_eq!(status, 200);
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "served while another client stalls: {:?}",
            started.elapsed()
        );
        drop(slow);
    });
    let _ = server.kill();
    let _ = server.wait();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}
