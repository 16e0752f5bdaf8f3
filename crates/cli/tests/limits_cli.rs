//! Every value is checked where it is resolved, before any build, worker or file (issue 17): settings by
//! the runtime or operation that declares them, counts, durations and timeouts against their documented
//! limits (docs/run.md, "Limits"), each refusal one message with exit 3 (2 for a value that is not a
//! number of its kind). A property test feeds arbitrary numbers to the numeric flags and plan fields:
//! never a panic (exit 101).

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::*;
use proptest::prelude::*;

/// Nothing at `path`, or an empty directory.
fn nothing_in(path: &Path) -> bool {
    std::fs::read_dir(path).map_or(true, |mut d| d.next().is_none())
}

/// `command` then `extra`, writing into `dir/out` and the bundle cache `dir/cache`: a refusal must
/// leave both as they were. Returns the output and those two paths.
fn run_writing_into(
    dir: &Path,
    command: &[&str],
    out: &str,
    extra: &[&str],
) -> (Output, PathBuf, PathBuf) {
    let (out_dir, cache) = (dir.join(out), dir.join("cache"));
    let mut args = command.to_vec();
    args.extend([
        "-o",
        out_dir.to_str().expect("utf-8"),
        "--bundle-cache",
        cache.to_str().expect("utf-8"),
    ]);
    args.extend_from_slice(extra);
    (run(&args), out_dir, cache)
}

/// `run --model tiny-cnn` with `extra`, writing into a fresh result directory and bundle cache; asserts
/// exit `want`, a message holding every piece of `says`, and that neither was written.
fn refused_run(extra: &[&str], want: i32, says: &[&str]) {
    let t = tempfile::tempdir().expect("tmp");
    let run_tiny_cnn = ["run", "--model", "tiny-cnn"];
    let (out, out_dir, cache) = run_writing_into(t.path(), &run_tiny_cnn, "out", extra);
    let err = stderr(&out);
    assert_eq!(code(&out), want, "{extra:?}: {err}");
    for piece in says {
        assert!(
            err.contains(piece),
            "{extra:?}: `{piece}` missing from: {err}"
        );
    }
    assert_eq!(
        err.trim().lines().next().map(|l| l.starts_with("error:")),
        Some(true),
        "{err}"
    );
    assert!(!out_dir.exists(), "{extra:?} wrote a result directory");
    assert!(nothing_in(&cache), "{extra:?} wrote into the bundle cache");
}

#[test]
fn settings_are_checked_by_their_runtime_or_operation_before_any_build_or_worker() {
    // Runtime settings, against tract's declaration `threads [1|2|...]`.
    refused_run(
        &["--set", "runtime.threads=0"],
        3,
        &["runtime.threads=0", "runtime `tract`", "from 1 to 1024"],
    );
    refused_run(
        &["--set", "runtime.threads=abc"],
        3,
        &["runtime.threads=abc", "whole number"],
    );
    refused_run(&["--set", "runtime.threads=100000"], 3, &["to 1024"]);
    // A build setting, against tract's `precision [fp32|fp16]`: refused before the build.
    refused_run(
        &["--set", "build.precision=fp7"],
        3,
        &["build.precision=fp7", "fp32 or fp16"],
    );
    // A batch no bundle could load: the operation's batch-binding field is bounded.
    refused_run(
        &["--set", "request.batch_size=1000000000"],
        3,
        &["request.batch_size=1000000000", "from 1 to 4096"],
    );
    refused_run(
        &["--set", "build.dims.batch=-2"],
        3,
        &["build.dims.batch=-2", "from 1 to 1048576"],
    );
    // The same declarations hold for a sweep's values.
    refused_run(
        &["--sweep", "runtime.threads=1,0"],
        3,
        &["runtime.threads=0"],
    );
}

#[test]
fn tune_checks_its_fixed_settings_and_limits_before_writing_anything() {
    for (extra, says) in [
        (&["--set", "runtime.threads=0"][..], "runtime.threads=0"),
        (&["--set", "build.precision=fp7"], "build.precision=fp7"),
        (&["--timeout", "1e20"], "--timeout 1e20"),
        (&["--route-timeout", "1e20"], "--route-timeout 1e20"),
        (&["--route-budget", "nan"], "--route-budget NaN"),
        (&["--early-stop-factor", "-1"], "--early-stop-factor -1"),
        (&["--calls", "1000000000000"], "at most 100000000 calls"),
        (&["--live-workers", "0"], "--live-workers 0"),
    ] {
        let t = tempfile::tempdir().expect("tmp");
        let (out, out_dir, cache) =
            run_writing_into(t.path(), &TUNE_TINY_CNN_THREADS, "tune", extra);
        let err = stderr(&out);
        assert_eq!(code(&out), 3, "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        // No output directory, so no tuning cache holding only its header.
        assert!(!out_dir.exists(), "{extra:?} wrote {}", out_dir.display());
        assert!(nothing_in(&cache), "{extra:?} wrote into the bundle cache");
    }
}

#[test]
fn counts_durations_and_sweeps_are_bounded_with_the_limit_named() {
    refused_run(&["--timeout", "1e20"], 3, &["--timeout 1e20", "one week"]);
    refused_run(&["--duration", "1e308"], 3, &["--duration 1e308", "604800"]);
    refused_run(&["--duration", "-3"], 3, &["--duration -3"]);
    refused_run(
        &["--warmup", "1000000000000"],
        3,
        &["--warmup 1000000000000", "100000000 calls"],
    );
    refused_run(
        &["--warmup", "-1"],
        2,
        &["'-1' for '--warmup <N>'", "negative values are not allowed"],
    );
    refused_run(
        &["--rounds", "99999999999999999999999"],
        2,
        &["larger than any limit"],
    );
    refused_run(
        &["--rounds", "1001"],
        3,
        &["--rounds 1001", "from 1 to 1000"],
    );
    refused_run(
        &["--profile", "--profile-iterations", "1000000000000"],
        3,
        &["--profile-iterations 1000000000000", "100000000"],
    );
    // A million-point sweep is refused before one point is expanded (it used to take 30 s to say
    // anything).
    let values: Vec<String> = (1..=100).map(|v| v.to_string()).collect();
    let axis = |key: &str| format!("{key}={}", values.join(","));
    let (a, b, c) = (
        axis("request.seed"),
        axis("request.batch_size"),
        axis("request.image"),
    );
    let started = std::time::Instant::now();
    refused_run(
        &["--sweep", &a, "--sweep", &b, "--sweep", &c],
        3,
        &["100 × 100 × 100 points", "10000"],
    );
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
}

#[test]
fn plan_fields_are_named_as_written() {
    let t = tempfile::tempdir().expect("tmp");
    let plan = t.path().join("plan.yaml");
    std::fs::write(&plan, "models:\n  - model: tiny-cnn\n    timeout: 1e300\n").expect("plan");
    let out = run(&["run", plan.to_str().expect("utf-8"), "--dry-run"]);
    let err = stderr(&out);
    assert_eq!(code(&out), 3, "{err}");
    assert!(err.contains("plan field `timeout:` 1e300"), "{err}");
    assert!(err.contains("at most 604800"), "{err}");
}

/// Numbers as a hostile user types them: huge, tiny, negative, NaN, infinities, exponents, digits
/// beyond any integer type.
fn numeric_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|x| x.to_string()),
        any::<f64>().prop_map(|x| format!("{x:e}")),
        (0u32..400).prop_map(|e| format!("1e{e}")),
        (0usize..60).prop_map(|n| "9".repeat(n + 1)),
        prop::sample::select(vec![
            "NaN",
            "nan",
            "inf",
            "-inf",
            "-0",
            "0",
            "1",
            "-1",
            "0.5",
            "1e-320",
            "1e308",
            "-1e308",
            "18446744073709551616",
            "+3",
            "",
            " ",
            "1_000",
            "0x10",
        ])
        .prop_map(String::from),
    ]
}

/// The numeric flags and fields, each as the arguments of one dry run with `value` in its place.
fn numeric_arguments(which: usize, value: &str, plan: &Path) -> Vec<String> {
    let run = |flag: &str| -> Vec<String> {
        ["run", "--model", "tiny-cnn", "--dry-run", flag, value]
            .map(String::from)
            .to_vec()
    };
    let set = |key: &str| {
        run("--set")
            .into_iter()
            .take(5)
            .chain([format!("{key}={value}")])
            .collect()
    };
    let tune = |flag: &str| -> Vec<String> {
        TUNE_TINY_CNN_THREADS
            .iter()
            .chain(&["--dry-run", flag, value])
            .map(|a| a.to_string())
            .collect()
    };
    match which {
        0 => run("--warmup"),
        1 => run("--iterations"),
        2 => run("--duration"),
        3 => run("--max-duration"),
        4 => run("--timeout"),
        5 => run("--rounds"),
        6 => run("--baseline"),
        7 => {
            let mut a = run("--profile-iterations");
            a.push("--profile".into());
            a
        }
        8 => set("request.batch_size"),
        9 => set("runtime.threads"),
        10 => set("build.dims.batch"),
        11 => set("request.seed"),
        12 => tune("--timeout"),
        13 => tune("--route-timeout"),
        14 => tune("--route-budget"),
        15 => tune("--early-stop-factor"),
        16 => tune("--calls"),
        17 => tune("--warmup"),
        18 => tune("--max-routes"),
        19 => tune("--live-workers"),
        20 => tune("--confidence"),
        21 => tune("--min-effect"),
        _ => {
            let field = [
                "warmup",
                "iterations",
                "duration",
                "max_duration",
                "timeout",
            ][which % 5];
            std::fs::write(
                plan,
                format!("models:\n  - model: tiny-cnn\n    {field}: {value}\n"),
            )
            .expect("plan");
            ["run", plan.to_str().expect("utf-8"), "--dry-run"]
                .map(String::from)
                .to_vec()
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn no_numeric_input_panics(which in 0usize..27, value in numeric_text()) {
        let t = tempfile::tempdir().expect("tmp");
        let cache = t.path().join("cache");
        let mut args = numeric_arguments(which, &value, &t.path().join("plan.yaml"));
        args.extend(["--bundle-cache".to_string(), cache.display().to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&args);
        let err = stderr(&out);
        prop_assert!(
            matches!(code(&out), 0 | 2 | 3),
            "{args:?} exited {}: {err}",
            code(&out)
        );
        prop_assert!(!err.contains("panicked"), "{args:?}: {err}");
        prop_assert!(nothing_in(&cache), "{args:?} wrote into the bundle cache");
    }
}

#[test]
fn matrix_check_refuses_a_setting_value_and_an_environment_limit_before_measuring() {
    let t = tempfile::tempdir().expect("tmp");
    let catalog = tiny_cnn_catalog(t.path());
    let env = |extra: &str| {
        let path = t.path().join("env.yaml");
        std::fs::write(
            &path,
            format!(
                "name: test\nbundle_cache: {}\nresults_root: {}\n{extra}",
                t.path().join("bundles").display(),
                t.path().join("results").display()
            ),
        )
        .expect("env");
        path
    };
    let suite = t.path().join("suite.yaml");
    std::fs::write(
        &suite,
        "name: s\nrows:\n  - entry: tiny-cnn.classify\n    model: tiny-cnn\n    testcase: single\n    candidate: {runtime: tract, set: {runtime.threads: 0}}\n    reference: {backend: \"trtmc:tract\"}\n",
    )
    .expect("suite");
    let check = |env: &Path| {
        run(&[
            "matrix",
            "check",
            suite.to_str().expect("utf-8"),
            "--environment",
            env.to_str().expect("utf-8"),
            "--manifest-root",
            catalog.to_str().expect("utf-8"),
        ])
    };
    let out = check(&env(""));
    let err = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(code(&out), 3, "{err}");
    assert!(
        err.contains("runtime.threads=0") && err.contains("from 1 to 1024"),
        "{err}"
    );
    let out = check(&env("free_storage_gib: -5\n"));
    assert_refused(&out, 3, "free_storage_gib: give GiB from 0");
    assert!(!t.path().join("results").exists() && !t.path().join("bundles").exists());
}
