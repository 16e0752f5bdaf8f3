//! Unit tests of `tune`'s option handling: the stored command line, `--continue`, option errors.

use super::*;

#[test]
fn the_canonical_argv_parses_back_to_the_same_options() {
    let args = TuneArgs {
        model: Some("tiny-cnn".into()),
        runtime: Some("tract".into()),
        routes: Some("-threads=[1|2] -precision=fp32".into()),
        search: Some("racing".into()),
        timeout: Some(-1.0),
        calls: Some(20),
        tensor_thresholds: vec!["y=1e-3".into()],
        sets: vec!["request.seed=3".into()],
        dims: vec!["batch=1".into()],
        save_all: true,
        output: Some(PathBuf::from("out")),
        executor: Some("slurm".into()),
        environment: Some(PathBuf::from("/shared/env.yaml")),
        ..TuneArgs::default()
    };
    let argv = args.canonical_argv();
    let back = Stored::try_parse_from(argv.iter().skip(1))
        .expect("parses")
        .args;
    assert_eq!(back.canonical_argv(), argv);
    assert_eq!(back.routes, args.routes);
    assert_eq!(back.timeout, Some(-1.0));
    assert_eq!(back.dims, vec!["batch=1"]);
    // `--continue` submits to the same cluster.
    assert_eq!(back.executor.as_deref(), Some("slurm"));
    assert_eq!(back.environment, args.environment);
    assert!(
        back.overrides()
            .expect("overrides")
            .iter()
            .any(|o| o.key == "build.dims.batch" && o.value == "1")
    );
    assert!(back.output.as_ref().expect("output").is_absolute());
    assert_eq!(back.config().expect("config").budget_s, None);
}

#[test]
fn continue_refuses_other_options() {
    let args = TuneArgs {
        resume: true,
        cache: Some("c.jsonl".into()),
        quiet: true,
        ..TuneArgs::default()
    };
    assert!(args.extra_options_for_continue().is_empty());
    let args = TuneArgs {
        runtime: Some("tract".into()),
        dry_run: true,
        ..args
    };
    assert_eq!(
        args.extra_options_for_continue(),
        vec!["--runtime", "--dry-run"]
    );
}

#[test]
fn bad_option_values_name_the_option() {
    let args = TuneArgs {
        search: Some("greedy".into()),
        ..TuneArgs::default()
    };
    assert!(args.config().expect_err("bad").message.contains("--search"));
    let args = TuneArgs {
        tensor_thresholds: vec!["logits".into()],
        ..TuneArgs::default()
    };
    assert!(args.config().expect_err("bad").message.contains("NAME=EPS"));
    let args = TuneArgs {
        confidence: Some(2.0),
        ..TuneArgs::default()
    };
    assert!(
        args.config()
            .expect_err("bad")
            .message
            .contains("confidence")
    );
}

#[test]
fn the_run_line_repeats_what_makes_the_tuned_bundle() {
    let args = TuneArgs {
        onnx: Some(PathBuf::from("m.onnx")),
        runtime: Some("tract".into()),
        dims: vec!["batch = 1".into()],
        shapes: vec!["x:1x3".into()],
        bundle_cache: Some(PathBuf::from("my bundles")),
        calls: Some(20),
        ..TuneArgs::default()
    };
    let line = run_command(&args, &["runtime.threads=2".into()]);
    let here = std::env::current_dir().expect("cwd");
    assert_eq!(
        line,
        format!(
            "trtmc-bench run --onnx {} --shape x:1x3 --set build.dims.batch=1 \
             --set runtime.threads=2 --runtime tract --bundle-cache '{}'",
            here.join("m.onnx").display(),
            here.join("my bundles").display()
        )
    );
}
