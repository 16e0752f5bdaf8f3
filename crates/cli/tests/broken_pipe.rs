//! A reader that leaves early (`trtmc-bench list models | head -1`) is not a crash: no panic message,
//! and the exit code the command earned (docs/exit-codes.md, "A reader that leaves early").

use std::process::{Command, Output, Stdio};

use crate::common::{BIN, code, stderr};

/// Runs trtmc-bench with stdout a pipe whose read end is closed before the program starts, so its
/// first write to stdout fails with EPIPE (what `| head -1` does after the first line).
fn with_reader_gone(args: &[&str], cache: &std::path::Path) -> Output {
    let (reader, writer) = std::io::pipe().expect("create a pipe");
    drop(reader);
    Command::new(BIN)
        .args(args)
        .env_remove("TRTMC_MANIFEST_ROOT")
        .env("TRTMC_TEST", "1")
        .env("XDG_CACHE_HOME", cache)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start trtmc-bench")
        .wait_with_output()
        .expect("wait for trtmc-bench")
}

fn assert_quiet_success(args: &[&str]) {
    let cache = tempfile::tempdir().expect("temp dir");
    let out = with_reader_gone(args, cache.path());
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert!(
        !err.contains("Broken pipe"),
        "{args:?} reported the pipe: {err}"
    );
    assert_eq!(code(&out), 0, "{args:?}: {err}");
}

#[test]
fn list_models_into_a_closed_pipe_exits_0_without_a_panic() {
    assert_quiet_success(&["list", "models"]);
    assert_quiet_success(&["list", "models", "--format", "json"]);
}

#[test]
fn a_dry_run_plan_into_a_closed_pipe_exits_0_without_a_panic() {
    let cache = tempfile::tempdir().expect("temp dir");
    let bundles = cache.path().join("bundles");
    let bundles = bundles.to_str().expect("utf-8 temp path");
    assert_quiet_success(&[
        "run",
        "--model",
        "tiny-cnn",
        "--model",
        "tiny-gpt",
        "--bundle-cache",
        bundles,
        "--dry-run",
    ]);
}
