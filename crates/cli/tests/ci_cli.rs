//! CI signals through the real binary: `--fail-on` (exit 9 after everything is written) and
//! `--export-junit` for `run`, `--fail-on unusable` for `analyze`, and the usage errors. The matrix's
//! `--fail-on red|yellow` and JUnit rows are tested in matrix_cli.rs, next to its injected slowdown.

use crate::xmllint;

use std::path::Path;

use crate::common::*;
use xmllint::assert_valid_junit;

/// The documented code of a met `--fail-on` condition (docs/exit-codes.md).
const FAIL_ON: i32 = 9;

fn p(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// `run --model test-noop` with 5 timed calls: far fewer than the 100 a p99 needs, so INVALID.
fn run_invalid(out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["--warmup", "1", "--iterations", "5", "-o", p(out), "-q"];
    args.extend_from_slice(extra);
    run_test_model("test-noop", &args)
}

#[test]
fn an_invalid_case_fails_ci_only_when_asked_and_the_result_and_junit_are_written_either_way() {
    let tmp = tempfile::tempdir().expect("tmp");

    // Without --fail-on: exit 0 as before, even with the JUnit file, which records the failure.
    let plain = tmp.path().join("plain");
    let junit_plain = tmp.path().join("plain.xml");
    let o = run_invalid(&plain, &["--export-junit", p(&junit_plain)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("INVALID"), "{}", stdout(&o));
    assert_valid_junit(&junit_plain);
    let xml = std::fs::read_to_string(&junit_plain).expect("junit");
    assert!(
        xml.contains("tests=\"1\" failures=\"1\" errors=\"0\""),
        "{xml}"
    );

    // With --fail-on invalid: exit 9 naming the case and the flag, after writing everything.
    let failing = tmp.path().join("failing");
    let junit = tmp.path().join("reports/junit.xml");
    std::fs::create_dir_all(junit.parent().expect("parent")).expect("mkdir");
    let o = run_invalid(
        &failing,
        &["--fail-on", "invalid", "--export-junit", p(&junit)],
    );
    assert_eq!(code(&o), FAIL_ON, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("--fail-on invalid: 1 of 1 case(s) INVALID")
            && err.contains("test-noop · default")
            && err.contains("samples: 5 timed calls"),
        "{err}"
    );
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error:")).count(),
        1,
        "one reason line: {err}"
    );
    let doc = assert_result_dir_valid(&failing);
    assert_eq!(doc["cases"][0]["status"], "completed");
    assert!(
        stdout(&o).contains("INVALID"),
        "the summary is still printed"
    );

    assert_valid_junit(&junit);
    let xml = std::fs::read_to_string(&junit).expect("junit");
    assert!(
        xml.contains("<testcase classname=\"test-noop\" name=\"default\""),
        "{xml}"
    );
    assert!(
        xml.contains("<failure message=\"INVALID: samples: 5 timed calls, fewer than the 10"),
        "the failure carries the verdict's reason: {xml}"
    );
    assert!(
        xml.contains(&format!(
            "timestamp=\"{}\"",
            doc["created"].as_str().expect("created")
        )),
        "{xml}"
    );
}

/// A case name from a user's catalog with quotes, markup and a control character XML 1.0 forbids.
#[test]
fn a_hostile_case_name_is_escaped_in_the_junit_report() {
    let tmp = tempfile::tempdir().expect("tmp");
    let profile = tmp.path().join("catalog/noop");
    std::fs::create_dir_all(&profile).expect("mkdir");
    std::fs::copy(
        test_catalog().join("test-noop/MODEL.toml"),
        profile.join("MODEL.toml"),
    )
    .expect("copy MODEL.toml");
    std::fs::write(
        profile.join("cases.toml"),
        "[[case]]\nname = \"a\\\"b<c>&d\\u0001e\"\n",
    )
    .expect("write cases.toml");
    let junit = tmp.path().join("junit.xml");
    let o = run(&[
        "run",
        "--manifest-root",
        p(&tmp.path().join("catalog")),
        "--model",
        "test-noop",
        "--iterations",
        "5",
        "-q",
        "-o",
        p(&tmp.path().join("out")),
        "--export-junit",
        p(&junit),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_valid_junit(&junit);
    let xml = std::fs::read_to_string(&junit).expect("junit");
    assert!(
        xml.contains("name=\"a&quot;b&lt;c&gt;&amp;d\u{FFFD}e\""),
        "{xml}"
    );
}

#[test]
fn a_failed_case_keeps_exit_5_and_is_a_junit_error() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("crash");
    let junit = tmp.path().join("junit.xml");
    let o = run_test_model(
        "test-crash",
        &[
            "-o",
            p(&out),
            "-q",
            "--fail-on",
            "invalid",
            "--export-junit",
            p(&junit),
        ],
    );
    assert_eq!(
        code(&o),
        5,
        "a failed case is exit 5 with or without --fail-on: {}",
        stderr(&o)
    );
    assert_valid_junit(&junit);
    let xml = std::fs::read_to_string(&junit).expect("junit");
    assert!(
        xml.contains("errors=\"1\"") && xml.contains("<error message=\"failed: "),
        "{xml}"
    );
    assert!(xml.contains("SIGABRT"), "{xml}");
}

#[test]
fn an_unwritable_junit_file_is_exit_6_and_the_result_is_kept() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("r");
    let junit = tmp.path().join("no/such/dir/junit.xml");
    let o = run_invalid(&out, &["--export-junit", p(&junit)]);
    assert_refused(&o, 6, "--export-junit");
    assert!(out.join("result.json").is_file());
}

#[test]
fn conditions_a_command_does_not_take_are_usage_errors_before_any_work() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("never");
    let never = p(&out);
    // A run of the no-op model into `never` with `--fail-on CONDITIONS`.
    let run_failing_on = |conditions| {
        [
            "run",
            "--model",
            "test-noop",
            "-o",
            never,
            "--fail-on",
            conditions,
        ]
        .to_vec()
    };
    for (args, takes) in [
        (run_failing_on("red"), "`run` takes --fail-on invalid"),
        (
            run_failing_on("invalid,yellow"),
            "`run` takes --fail-on invalid",
        ),
        (
            vec!["analyze", "somewhere", "--fail-on", "invalid"],
            "`analyze` takes --fail-on unusable",
        ),
        (
            vec!["matrix", "report", "somewhere", "--fail-on", "unusable"],
            "`matrix report` takes --fail-on yellow, red",
        ),
        (
            vec![
                "matrix",
                "run",
                "release",
                "--environment",
                "cpu",
                "--fail-on",
                "invalid",
            ],
            "`matrix run` takes --fail-on yellow, red",
        ),
    ] {
        let o = run(&args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(takes), "{args:?}: {}", stderr(&o));
    }
    assert!(!out.exists(), "nothing ran");

    let o = run(&["run", "--model", "test-noop", "--fail-on", "purple"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("invalid value 'purple'")
            && stderr(&o).contains("invalid, yellow, red, unusable"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn analyze_fails_on_unusable_backends_only_when_asked_and_still_writes_its_documents() {
    let fixtures = repo_root().join("tests/fixtures");
    let knob = fixtures.join("trtexec-logs/trt11.1_helpBuildRoute_knobdb_EXCERPT.json");
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("analysis.json");

    // Every backend unusable: exit 0 without the flag (structured data was written), 9 with it.
    let o = run(&["analyze", "--data", p(&knob), "-q"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = run(&[
        "analyze",
        "--data",
        p(&knob),
        "-q",
        "-o",
        p(&out),
        "--fail-on",
        "unusable",
    ]);
    assert_eq!(code(&o), FAIL_ON, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "--fail-on unusable: 1 of 1 backend(s) unusable: trt11.1_helpBuildRoute_knobdb_EXCERPT"
        ) && err.contains("helpBuildRoute"),
        "{err}"
    );
    assert_eq!(read_json(&out)["validation"]["status"], "failed");

    // The packaged report too.
    let parent = tmp.path().join("reports");
    std::fs::create_dir_all(&parent).expect("mkdir");
    let o = run(&[
        "analyze",
        "package",
        "--data",
        p(&knob),
        "--output-parent",
        p(&parent),
        "--fail-on",
        "unusable",
    ]);
    assert_eq!(code(&o), FAIL_ON, "{}", stderr(&o));
    assert!(stdout(&o).contains("index: "), "{}", stdout(&o));

    // Every backend usable: the flag changes nothing.
    let o = run(&[
        "analyze",
        p(&fixtures.join("trex")),
        "-q",
        "-o",
        p(&tmp.path().join("trex.json")),
        "--fail-on",
        "unusable",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}
