//! `trtmc-bench run` and `list models` through the real binary, on the embedded models and the test-only
//! operations.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;

fn catalog_arg() -> String {
    test_catalog().display().to_string()
}

/// `run --model test-noop` (the test catalog) with `iterations` calls into `out`, quiet.
fn noop_run_args(iterations: &str, out: &Path) -> Vec<String> {
    let catalog = catalog_arg();
    let out = out.to_str().expect("utf8");
    let args = ["run", "--manifest-root", &catalog, "--model", "test-noop"];
    let rest = ["--iterations", iterations, "-o", out, "-q"];
    args.iter().chain(&rest).map(|a| a.to_string()).collect()
}

/// Runs what [`noop_run_args`] lists.
fn run_noop(iterations: &str, out: &Path) -> std::process::Output {
    let out = out.to_str().expect("utf8");
    run_test_model("test-noop", &["--iterations", iterations, "-o", out, "-q"])
}

#[test]
fn list_models_shows_every_profile_with_its_status() {
    let out = run(&["list", "models", "--manifest-root", &catalog_arg()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("test-noop") && text.contains("ready"),
        "{text}"
    );
    assert!(text.contains("unsupported: malformed MODEL.toml"), "{text}");
    assert!(
        text.contains("unsupported: unknown task_strategy `mind_reading`"),
        "{text}"
    );
    assert!(text.contains("distributed: needs 8 ranks"), "{text}");
    assert!(text.contains("tract 0.23.9 (available)"), "{text}");

    let default = run(&["list", "models"]);
    assert_eq!(code(&default), 0, "{}", stderr(&default));
    for name in ["tiny-cnn", "tiny-encoder", "tiny-gpt", "light-resnet50"] {
        assert!(
            stdout(&default).contains(name),
            "{name} missing from the default catalog"
        );
    }
}

/// A user catalog whose profile names a test-only operation: refused with exit 3 outside the test
/// harness, run under it (where the operation does what it is for: the worker crashes).
#[test]
fn test_only_operations_run_only_under_the_test_harness() {
    let tmp = tempfile::tempdir().expect("tmp");
    let profile = tmp.path().join("catalog/user-crash");
    std::fs::create_dir_all(&profile).expect("mkdir");
    std::fs::write(
        profile.join("MODEL.toml"),
        "name = \"user-crash\"\nsummary = \"a user profile\"\ntask_strategy = \"test_crash\"\ntest_manifests = [\"cases.toml\"]\n[source]\nnone = true\n",
    )
    .expect("write MODEL.toml");
    std::fs::write(
        profile.join("cases.toml"),
        "[[case]]\nname = \"default\"\n[case.request]\nafter_calls = 1\n",
    )
    .expect("write cases.toml");
    let root = tmp.path().join("catalog");
    let out_dir = tmp.path().join("out");
    let invoke = |harness: bool, args: &[&str]| {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .env("TRTMC_MANIFEST_ROOT", &root)
            .env_remove("TRTMC_TEST");
        if harness {
            cmd.env("TRTMC_TEST", "1");
        }
        cmd.output().expect("start trtmc-bench")
    };
    let out_arg = out_dir.to_str().expect("utf8");
    let run_args = ["run", "--model", "user-crash", "-o", out_arg, "-q"];

    for args in [
        &run_args[..],
        &["run", "--model", "user-crash", "--dry-run"],
        &["tune", "--runtime", "tract", "--model", "user-crash"],
    ] {
        let refused = invoke(false, args);
        assert_eq!(code(&refused), 3, "{args:?}: {}", stderr(&refused));
        let message = stderr(&refused);
        assert!(
            message.contains("model `user-crash`")
                && message.contains("`test_crash`, a test-only operation")
                && message.contains("TRTMC_TEST=1"),
            "{args:?}: {message}"
        );
    }
    assert!(!out_dir.exists(), "nothing was measured");

    let crashed = invoke(true, &run_args);
    assert_eq!(code(&crashed), 5, "{}", stderr(&crashed));
    let result = read_json(&out_dir.join("result.json"));
    assert!(
        result["cases"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("SIGABRT")),
        "{result}"
    );
}

#[test]
fn selecting_an_unusable_profile_fails_closed_with_its_reason() {
    let out = run(&[
        "run",
        "--manifest-root",
        &catalog_arg(),
        "--model",
        "unknown-task",
        "--dry-run",
    ]);
    assert_eq!(code(&out), 3);
    assert!(stderr(&out).contains("mind_reading"), "{}", stderr(&out));
    let out = run(&[
        "run",
        "--manifest-root",
        &catalog_arg(),
        "--model",
        "needs-ranks",
        "--dry-run",
    ]);
    assert_eq!(code(&out), 3);
    assert!(stderr(&out).contains("distributed"), "{}", stderr(&out));
    let out = run(&["run", "--model", "tiny-gtp", "--dry-run"]);
    assert_eq!(code(&out), 3);
    assert!(
        stderr(&out).contains("Did you mean `tiny-gpt`") && stderr(&out).contains("list models"),
        "{}",
        stderr(&out)
    );
    let out = run(&[
        "run",
        "--model",
        "tiny-gpt",
        "--set",
        "request.max_new_tokenz=3",
        "--dry-run",
    ]);
    assert_eq!(code(&out), 3);
    assert!(stderr(&out).contains("max_new_tokens"), "{}", stderr(&out));
    let out = run(&["run", "--model", "tiny-gpt", "--case", "nope", "--dry-run"]);
    assert_eq!(code(&out), 3);
    assert!(stderr(&out).contains("greedy"), "{}", stderr(&out));
}

#[test]
fn noop_run_writes_a_valid_result_with_exactly_the_requested_observations() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("out");
    let out = run_test_model(
        "test-noop",
        &[
            "--warmup",
            "3",
            "--iterations",
            "37",
            "-o",
            out_dir.to_str().expect("utf8"),
            "--telemetry",
            "on",
            "--quiet",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&out_dir);
    assert_eq!(doc["timing_boundary"], "public_pipeline_call_wall");
    assert_eq!(doc["task_quality_evaluated"], false);
    let case = &doc["cases"][0];
    assert_eq!(case["measurement"]["observations"], 37);
    let dir = out_dir.join(case["dir"].as_str().expect("dir"));
    assert_eq!(line_count(&dir.join("observations.jsonl")), 37);
    assert!(dir.join("worker.log").exists());
    let telemetry = read_json(&dir.join("telemetry.json"));
    assert_eq!(telemetry["schema"], "trtmc.telemetry/v1");
    let _: trtmc_core::artifacts::Telemetry = assert_document("telemetry.schema.json", &telemetry);
    let resolved = read_json(&dir.join("resolved-case.json"));
    assert_eq!(resolved["measure"]["iterations"]["source"], "cli");
    assert_eq!(resolved["measure"]["iterations"]["value"], 37);
}

#[test]
fn a_crashing_worker_is_a_failed_case_with_its_evidence_kept() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("crash");
    let out = run_test_model("test-crash", &["-o", out_dir.to_str().expect("utf8"), "-q"]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&out_dir);
    assert_eq!(doc["status"], "failed");
    let case = &doc["cases"][0];
    let error = case["error"].as_str().expect("error");
    assert!(error.contains("SIGABRT"), "{error}");
    let dir = out_dir.join(case["dir"].as_str().expect("dir"));
    assert!(
        dir.join("worker-request.json").exists(),
        "the request is kept for diagnosis"
    );
    let log = std::fs::read_to_string(dir.join("worker.log")).expect("log");
    assert!(log.contains("aborting the worker on purpose"), "{log}");
}

#[test]
fn a_hanging_worker_is_killed_at_the_timeout() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("hang");
    let started = Instant::now();
    let out = run_test_model(
        "test-hang",
        &[
            "--timeout",
            "2",
            "-o",
            out_dir.to_str().expect("utf8"),
            "-q",
        ],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the timeout must end the case"
    );
    let doc = read_json(&out_dir.join("result.json"));
    let error = doc["cases"][0]["error"]
        .as_str()
        .expect("error")
        .to_string();
    assert!(error.contains("did not finish within 2 s"), "{error}");
    assert!(
        out_dir
            .join(doc["cases"][0]["dir"].as_str().expect("dir"))
            .join("worker-request.json")
            .exists()
    );
}

#[test]
fn non_finite_outputs_fail_the_case() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("nan");
    let out = run_test_model("test-nan", &["-o", out_dir.to_str().expect("utf8"), "-q"]);
    assert_eq!(code(&out), 5);
    let doc = read_json(&out_dir.join("result.json"));
    assert!(
        doc["cases"][0]["error"]
            .as_str()
            .expect("error")
            .contains("non-finite")
    );
    let dir = out_dir.join(doc["cases"][0]["dir"].as_str().expect("dir"));
    assert!(
        dir.join("worker-result.json").exists(),
        "the worker's own result is kept when it reported the failure"
    );
}

#[test]
fn output_slots_refuse_unrelated_directories_and_symlinks() {
    let tmp = tempfile::tempdir().expect("tmp");
    let photos = tmp.path().join("photos");
    std::fs::create_dir(&photos).expect("mkdir");
    std::fs::write(photos.join("cat.jpg"), "meow").expect("write");
    let out = run_noop("3", &photos);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(stderr(&out).contains("not a trtmc result"));
    assert_eq!(
        std::fs::read_to_string(photos.join("cat.jpg")).expect("kept"),
        "meow"
    );

    let real = tmp.path().join("real");
    let ok = run_noop("3", &real);
    assert_eq!(code(&ok), 0, "{}", stderr(&ok));
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let out = run_noop("3", &link);
    assert_eq!(code(&out), 6);
    assert!(stderr(&out).contains("symlink"));
}

#[test]
fn a_recognized_result_is_replaced_whole_and_never_merged() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("slot");
    let first = run_noop("5", &out_dir);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let old_id = read_json(&out_dir.join("result.json"))["run_id"].clone();
    std::fs::write(out_dir.join("stray.txt"), "from the old run").expect("write");
    let second = run_noop("6", &out_dir);
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    let doc = read_json(&out_dir.join("result.json"));
    assert_ne!(doc["run_id"], old_id);
    assert_eq!(doc["cases"][0]["measurement"]["observations"], 6);
    assert!(
        !out_dir.join("stray.txt").exists(),
        "results are never merged"
    );
}

#[test]
fn killing_a_run_while_it_stages_leaves_the_old_result_intact() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out_dir = tmp.path().join("slot");
    let first = run_noop("4", &out_dir);
    assert_eq!(code(&first), 0);
    let old = std::fs::read(out_dir.join("result.json")).expect("old result");

    let mut child = Command::new(BIN)
        .args(noop_run_args("9", &out_dir))
        .env_remove("TRTMC_MANIFEST_ROOT")
        .env("TRTMC_TEST", "1")
        .env("TRTMC_TEST_PAUSE_BEFORE_COMMIT_MS", "20000")
        .spawn()
        .expect("spawn");
    let staged = wait_for_staged_result(tmp.path(), Duration::from_secs(60));
    assert!(staged, "the second run never staged its result");
    child.kill().expect("kill -9");
    let _ = child.wait();
    assert_eq!(
        std::fs::read(out_dir.join("result.json")).expect("still there"),
        old,
        "old result must survive"
    );
    assert_valid(
        "benchmark-run.schema.json",
        &read_json(&out_dir.join("result.json")),
    );

    // The next run cleans the dead run's staging directory and replaces the slot normally.
    let third = run_noop("2", &out_dir);
    assert_eq!(code(&third), 0, "{}", stderr(&third));
    let leftovers: Vec<_> = std::fs::read_dir(tmp.path())
        .expect("ls")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("staging"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "stale staging directories are removed"
    );
}

fn wait_for_staged_result(parent: &Path, limit: Duration) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Ok(entries) = std::fs::read_dir(parent) {
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().contains(".staging-")
                    && e.path().join("result.json").exists()
                {
                    return true;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}
