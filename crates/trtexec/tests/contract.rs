//! Contract tests: a stand-in trtexec (crate `crates/trtexec-standin`, replay mode) replays real
//! recorded trtexec output and records the argv it received. The tests assert exactly what we send per version,
//! that we read what real trtexec printed, and that every failure is a clear, typed error.
//!
//! Each test writes a small `trtexec` shell script into a temporary folder that sets the
//! stand-in's environment and execs it, so discovery, the version probe and the runner all run
//! as they would against a real installation.
#![cfg(unix)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{data, fixture, read, standin};
use trtmc_trtexec::{
    BuildRequest, BuildShapes, ProfileRequest, TensorShape, TimeRequest, Trtexec, TrtexecError,
    TrtexecVersion, detect_version, find_executable_in, read_profile, read_times,
};

const TIMEOUT: Duration = Duration::from_secs(60);

/// A temporary folder with a `trtexec` script that runs the stand-in on one recorded log.
/// The recorded 10.16 timing run (CUDA graph, spin wait, no data transfers).
const TIMING_10_16: &str = "trt10.16_loadEngine_cudagraph_spinwait_nodatatransfers_verbose.log";

struct Standin {
    dir: tempfile::TempDir,
    env: Vec<(&'static str, String)>,
}

impl Standin {
    fn new(log: &Path) -> Self {
        let dir = tempfile::tempdir().expect("temporary folder");
        let argv = dir.path().join("argv.json");
        Self {
            dir,
            env: vec![
                ("TRTMC_STANDIN_LOG", log.display().to_string()),
                ("TRTMC_STANDIN_ARGV", argv.display().to_string()),
            ],
        }
    }

    fn recorded(name: &str) -> Self {
        Self::new(&fixture(&format!("trtexec-logs/{name}")))
    }

    /// The recorded 10.16 timing run, exporting TREx's resnet18 times as it replays.
    fn timing_10_16() -> Self {
        Self::recorded(TIMING_10_16).with(
            "TRTMC_STANDIN_TIMES",
            fixture("trex/resnet18-pt-a100-fp16.timing.json").display(),
        )
    }

    fn with(mut self, key: &'static str, value: impl ToString) -> Self {
        self.env.push((key, value.to_string()));
        self
    }

    /// Writes the script and returns its path.
    fn install(&self) -> PathBuf {
        let mut script = String::from("#!/bin/sh\n");
        for (key, value) in &self.env {
            script.push_str(&format!("{key}='{value}'\nexport {key}\n"));
        }
        script.push_str(&format!("exec '{}' \"$@\"\n", standin().display()));
        let path = self.dir.path().join("trtexec");
        trtmc_testkit::write_script(&path, &script);
        path
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The argv the stand-in received on its last run.
    fn argv(&self) -> Vec<String> {
        let text = read(&self.path("argv.json"));
        serde_json::from_str(&text).expect("argv JSON")
    }
}

#[test]
fn version_is_read_from_every_banner_form() {
    for (log, expected) in [
        (
            "trt8.0.3_onnx_fp16_dynamic_shapes_verbose.log",
            TrtexecVersion::new(8, 0, 3),
        ),
        (
            "trt8.4.1_onnx_fp16_dynamic_shapes_verbose.log",
            TrtexecVersion::new(8, 4, 1),
        ),
        (
            "trt10.16_onnx_build_and_bench_default.log",
            TrtexecVersion::new(10, 16, 1),
        ),
        (
            "trt11.1_tuneBuildRoutes_fast_run_head.log",
            TrtexecVersion::new(11, 1, 0),
        ),
    ] {
        let standin = Standin::recorded(log);
        let script = standin.install();
        let trtexec = Trtexec::locate(Some(&script)).unwrap_or_else(|e| panic!("{log}: {e}"));
        assert_eq!(*trtexec.version(), expected, "{log}");
        assert_eq!(trtexec.path(), script);
        // The probe is `trtexec --help`, which prints the banner and exits.
        assert_eq!(standin.argv(), ["--help"]);
    }
}

#[test]
fn trtexec_is_found_on_path() {
    let standin = Standin::recorded("trt10.16_onnx_build_and_bench_default.log");
    let script = standin.install();
    let empty = tempfile::tempdir().expect("temporary folder");
    let path_var = std::env::join_paths([empty.path(), standin.dir.path()]).expect("PATH");
    let found = find_executable_in(None, Some(&path_var), &[]).expect("on PATH");
    assert_eq!(found, script);
    assert_eq!(
        detect_version(&found, TIMEOUT).expect("version"),
        TrtexecVersion::new(10, 16, 1)
    );
    // A bare program name given with --trtexec is looked up on PATH too.
    let found =
        find_executable_in(Some(Path::new("trtexec")), Some(&path_var), &[]).expect("bare name");
    assert_eq!(found, script);
    // Fallback folders are searched after PATH.
    let found = find_executable_in(None, Some(empty.path().as_os_str()), &[standin.dir.path()])
        .expect("fallback folder");
    assert_eq!(found, script);
}

#[test]
fn missing_trtexec_says_how_to_install_or_point_at_it() {
    let empty = tempfile::tempdir().expect("temporary folder");
    let err = find_executable_in(
        None,
        Some(empty.path().as_os_str()),
        &[Path::new("/nonexistent")],
    )
    .expect_err("nothing on PATH");
    assert!(matches!(err, TrtexecError::NotFound { .. }));
    let message = err.to_string();
    assert!(message.contains("Install TensorRT"), "{message}");
    assert!(message.contains("--trtexec"), "{message}");
    assert!(message.contains("/nonexistent"), "{message}");

    let err = Trtexec::locate(Some(Path::new("/nonexistent/bin/trtexec")))
        .expect_err("explicit path missing");
    assert!(matches!(err, TrtexecError::NotFound { .. }));
    assert!(
        err.to_string()
            .contains("/nonexistent/bin/trtexec does not exist"),
        "{err}"
    );
}

#[test]
fn a_file_that_cannot_run_is_not_executable() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let file = dir.path().join("trtexec");
    std::fs::write(&file, "#!/bin/sh\n").expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let err = Trtexec::locate(Some(&file)).expect_err("no execute bit");
    assert!(matches!(err, TrtexecError::NotExecutable { .. }));
    assert!(err.to_string().contains("chmod +x"), "{err}");
    // On PATH, a non-executable match is reported rather than "not found".
    let err = find_executable_in(None, Some(dir.path().as_os_str()), &[])
        .expect_err("only a non-executable match");
    assert!(matches!(err, TrtexecError::NotExecutable { .. }), "{err}");

    let err = Trtexec::locate(Some(dir.path())).expect_err("a directory");
    assert!(err.to_string().contains("directory"), "{err}");
}

#[test]
fn version_probe_failures_are_explained() {
    // 7.x banners carry no version.
    let standin = Standin::new(&data("trt7.0_synthetic_block_summary.log"));
    let err = Trtexec::locate(Some(&standin.install())).expect_err("7.x");
    assert!(matches!(err, TrtexecError::VersionUnknown { .. }));
    assert!(err.to_string().contains("7.x"), "{err}");

    // Something that is not trtexec prints no banner.
    let standin = Standin::recorded("trt11.1_helpBuildRoute_knobdb_EXCERPT.json");
    let err = Trtexec::locate(Some(&standin.install())).expect_err("no banner");
    assert!(err.to_string().contains("no '&&&& RUNNING"), "{err}");

    // A probe that hangs is stopped.
    let standin = Standin::recorded("trt10.16_onnx_build_and_bench_default.log");
    let script = standin.install();
    std::fs::write(&script, "#!/bin/sh\nexec sleep 30\n").expect("rewrite script");
    let started = Instant::now();
    let err = detect_version(&script, Duration::from_millis(300)).expect_err("hangs");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(err.to_string().contains("did not finish"), "{err}");
}

#[test]
fn build_sends_the_10_16_argv_and_reads_the_recorded_build() {
    let standin = Standin::recorded("trt10.16_onnx_build_and_bench_default.log").with(
        "TRTMC_STANDIN_LAYERS",
        fixture("trtexec-logs/trt10.16_exportLayerInfo_detailed.json").display(),
    );
    let trtexec = Trtexec::locate(Some(&standin.install())).expect("stand-in");
    let mut request = BuildRequest::new("model.onnx", standin.path("model.plan"));
    request.shapes = BuildShapes::Static(vec![TensorShape::new("x", [1, 1, 28, 28])]);
    request.timing_cache = Some(standin.path("timing.cache"));
    request.layer_info = Some(standin.path("layers_tensorrt.json"));
    request.skip_inference = false;
    let log_path = standin.path("build.log");
    let output = trtexec.build(&request, &log_path, TIMEOUT).expect("build");

    let expected = request.args(trtexec.version()).expect("args");
    assert_eq!(standin.argv(), expected);
    assert_eq!(expected[0], "--onnx=model.onnx");
    assert!(expected.contains(&"--shapes=x:1x1x28x28".to_string()));
    assert!(
        std::fs::metadata(standin.path("model.plan"))
            .expect("engine")
            .len()
            > 0
    );
    assert_eq!(
        std::fs::read(standin.path("layers_tensorrt.json")).expect("layers"),
        std::fs::read(fixture(
            "trtexec-logs/trt10.16_exportLayerInfo_detailed.json"
        ))
        .expect("fixture")
    );
    assert_eq!(output.exit_code, Some(0));
    assert_eq!(output.log.build.engine_built_s, Some(8.09138));
    assert_eq!(
        output.log.summary().map(|s| s.throughput_qps),
        Some(15374.3)
    );
    // The captured log is the recorded one.
    assert_eq!(
        read(&log_path),
        read(&fixture(
            "trtexec-logs/trt10.16_onnx_build_and_bench_default.log"
        ))
    );
}

#[test]
fn timing_run_on_10_16_sends_the_recorded_command_and_reads_times() {
    let standin = Standin::timing_10_16();
    let trtexec = Trtexec::locate(Some(&standin.install())).expect("stand-in");
    let mut request = TimeRequest::new("model-trained.trt");
    request.shapes = vec![TensorShape::new("x", [4, 1, 28, 28])];
    request.verbose = true;
    request.export_times = Some(standin.path("times.json"));
    let output = trtexec
        .time(&request, &standin.path("time.log"), TIMEOUT)
        .expect("time");

    let argv = standin.argv();
    assert_eq!(argv, request.args(trtexec.version()).expect("args"));
    // Apart from the export we added, it is the command line the recorded run printed.
    let banner = output.log.banner().and_then(|b| b.command_line.clone());
    let without_export: Vec<&str> = argv
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with("--exportTimes="))
        .collect();
    assert_eq!(
        Some(format!("trtexec {}", without_export.join(" "))),
        banner
    );
    let summary = output.require_summary().expect("summary");
    assert_eq!(summary.throughput_qps, 24896.9);
    let times = read_times(&standin.path("times.json")).expect("times");
    assert_eq!(times.len(), 3698);
}

/// In a working folder, relative export paths are trtexec's (its current folder) and ours alike:
/// the argv names `times.json`, the file lands in the folder and is found there.
#[test]
fn a_run_in_a_folder_names_its_files_relative_to_it() {
    let standin = Standin::timing_10_16();
    let trtexec = Trtexec::locate(Some(&standin.install())).expect("stand-in");
    let folder = standin.path("case");
    std::fs::create_dir_all(&folder).expect("mkdir");
    let mut request = TimeRequest::new("model-trained.trt");
    request.export_times = Some("times.json".into());
    trtexec
        .in_dir(&folder)
        .time(&request, &standin.path("time.log"), TIMEOUT)
        .expect("time");
    assert!(
        standin
            .argv()
            .contains(&"--exportTimes=times.json".to_string())
    );
    assert!(folder.join("times.json").is_file());
    assert!(
        !std::env::current_dir()
            .expect("cwd")
            .join("times.json")
            .exists()
    );
    // Out of the folder, the same request misses its file (it went to trtexec's current folder).
    request.export_times = Some("elsewhere/times.json".into());
    let err = trtexec
        .in_dir(&folder)
        .time(&request, &standin.path("time2.log"), TIMEOUT)
        .expect_err("no such folder");
    assert!(err.to_string().contains("elsewhere"), "{err}");
}

#[test]
fn timing_run_on_11_1_sends_no_flags_for_its_defaults() {
    let standin = Standin::recorded("trt11.1_tuneBuildRoutes_fast_run_head.log");
    let script = standin.install();
    let trtexec = Trtexec::locate(Some(&script)).expect("stand-in");
    assert_eq!(*trtexec.version(), TrtexecVersion::new(11, 1, 0));

    // Replay the 11.1 summary excerpt for the timed run itself.
    let run = Standin::recorded("trt11.1_accuracy_cos_perf_summary.log");
    let trtexec = Trtexec::with_version(run.install(), *trtexec.version());
    let mut request = TimeRequest::new("model-trained.trt");
    request.shapes = vec![TensorShape::new("x", [1, 1, 28, 28])];
    let output = trtexec
        .time(&request, &run.path("time.log"), TIMEOUT)
        .expect("time");
    assert_eq!(
        run.argv(),
        ["--loadEngine=model-trained.trt", "--shapes=x:1x1x28x28"]
    );
    assert_eq!(
        output.require_summary().expect("summary").throughput_qps,
        15590.511719
    );
}

#[test]
fn build_route_travels_as_one_argument_on_11_1() {
    let standin = Standin::recorded("trt11.1_tuneBuildRoutes_fast_run_tail.log");
    let trtexec = Trtexec::with_version(standin.install(), TrtexecVersion::new(11, 1, 0));
    let mut request = BuildRequest::new("model-trained.onnx", standin.path("route.plan"));
    request.build_route = Some("-conv_lowering=off -kgen:tiling=2".into());
    trtexec
        .build(&request, &standin.path("build.log"), TIMEOUT)
        .expect("build");
    assert_eq!(
        standin.argv(),
        [
            "--onnx=model-trained.onnx",
            &format!("--saveEngine={}", standin.path("route.plan").display()),
            "--setBuildRoute=-conv_lowering=off -kgen:tiling=2",
            "--skipInference",
        ]
    );
}

#[test]
fn profiling_run_writes_and_reads_the_profile() {
    let standin = Standin::recorded("trt10.16_dumpProfile_exportTimes_exportProfile.log")
        .with(
            "TRTMC_STANDIN_PROFILE",
            fixture("trex/resnet18-pt-a100-fp16.profile.json").display(),
        )
        .with(
            "TRTMC_STANDIN_LAYERS",
            fixture("trtexec-logs/trt10.16_exportLayerInfo_detailed.json").display(),
        );
    let trtexec = Trtexec::locate(Some(&standin.install())).expect("stand-in");
    let mut request = ProfileRequest::new("./model-trained.trt", standin.path("profile.json"));
    request.export_layer_info = Some(standin.path("layers.json"));
    request.dump_profile = true;
    let output = trtexec
        .profile(&request, &standin.path("profile.log"), TIMEOUT)
        .expect("profile");
    let argv = standin.argv();
    assert_eq!(argv, request.args(trtexec.version()).expect("args"));
    assert!(argv.contains(&"--separateProfileRun".to_string()));
    assert_eq!(output.log.profile_tables.len(), 1);
    let profile = read_profile(&standin.path("profile.json")).expect("profile");
    assert_eq!(profile.layers.len(), 36);

    // That recording profiled inside the timed run, so it has no summary to time with.
    let err = output.require_summary().expect_err("no summary");
    assert!(err.to_string().contains("profiler"), "{err}");
}

#[test]
fn knob_database_is_read_from_help_build_route() {
    let standin = Standin::recorded("trt11.1_helpBuildRoute_knobdb_EXCERPT.json");
    let trtexec = Trtexec::with_version(standin.install(), TrtexecVersion::new(11, 1, 0));
    let db = trtexec
        .knob_database(&standin.path("knobs.log"), TIMEOUT)
        .expect("knob database");
    assert_eq!(standin.argv(), ["--helpBuildRoute"]);
    assert_eq!(db.tuner_options.len(), 21);
    let old = Trtexec::with_version(standin.install(), TrtexecVersion::new(10, 16, 1));
    let err = old
        .knob_database(&standin.path("knobs.log"), TIMEOUT)
        .expect_err("10.x has no knob database");
    assert!(err.to_string().contains(">= 11.1"), "{err}");
}

#[test]
fn failed_build_quotes_the_last_error_lines() {
    let standin = Standin::new(&data("trt10.16_synthetic_build_failed.log"));
    let trtexec = Trtexec::with_version(standin.install(), TrtexecVersion::new(10, 16, 1));
    let log_path = standin.path("build.log");
    let err = trtexec
        .build(
            &BuildRequest::new("missing-ops.onnx", standin.path("m.plan")),
            &log_path,
            TIMEOUT,
        )
        .expect_err("failed build");
    let TrtexecError::Failed {
        status,
        errors,
        log,
        ..
    } = &err
    else {
        panic!("expected Failed, got {err}");
    };
    assert_eq!(status, "exit status 1");
    assert_eq!(errors.len(), 5);
    assert_eq!(errors[4], "Engine set up failed");
    assert_eq!(
        errors[0],
        "[TRT] ModelImporter.cpp:1008: ERROR: No importer registered for op: FancyOp."
    );
    assert_eq!(log, &log_path);
    let message = err.to_string();
    assert!(
        message.contains("No importer registered for op: FancyOp"),
        "{message}"
    );
    assert!(
        message.contains(&log_path.display().to_string()),
        "{message}"
    );
    // The [E] lines went to stderr and still reached the log.
    assert!(read(&log_path).contains("[E] Engine set up failed"));

    // A CUDA failure has no [E] and no final status: the message quotes it all the same.
    let standin =
        Standin::new(&data("trt11.1_synthetic_cuda_failure.log")).with("TRTMC_STANDIN_EXIT", 134);
    let trtexec = Trtexec::with_version(standin.install(), TrtexecVersion::new(11, 1, 0));
    let err = trtexec
        .run(&[], &standin.path("time.log"), TIMEOUT)
        .expect_err("CUDA failure");
    let message = err.to_string();
    assert!(
        message.contains("exit status 134")
            && message.contains(
                "Last errors:\n  Cuda failure at samples/common/sampleDevice.h:304: out of memory"
            ),
        "{message}"
    );

    // '&&&& FAILED' alone is a failure even with exit status 0.
    let standin =
        Standin::new(&data("trt10.16_synthetic_build_failed.log")).with("TRTMC_STANDIN_EXIT", 0);
    let trtexec = Trtexec::with_version(standin.install(), TrtexecVersion::new(10, 16, 1));
    let err = trtexec
        .run(&[], &standin.path("run.log"), TIMEOUT)
        .expect_err("FAILED line");
    assert!(
        err.to_string().contains("'&&&& FAILED' with exit status 0"),
        "{err}"
    );
}

#[test]
fn removed_precision_flag_on_11_1_fails_with_its_error_line() {
    let standin = Standin::new(&data("trt11.1_synthetic_unknown_option_fp16.log"))
        .with("TRTMC_STANDIN_EXIT", 1);
    let trtexec = Trtexec::with_version(standin.install(), TrtexecVersion::new(11, 1, 0));
    let args = vec!["--onnx=model.onnx".to_string(), "--fp16".to_string()];
    let err = trtexec
        .run(&args, &standin.path("run.log"), TIMEOUT)
        .expect_err("unknown option");
    assert!(err.to_string().contains("Unknown option: --fp16"), "{err}");
    // Our own builder refuses before running anything.
    let mut request = BuildRequest::new("model.onnx", "model.plan");
    request.precisions = vec![trtmc_trtexec::Precision::Fp16];
    assert!(matches!(
        trtexec.build(&request, &standin.path("b.log"), TIMEOUT),
        Err(TrtexecError::StrongTyping { .. })
    ));
}

#[test]
fn a_run_past_its_timeout_is_stopped() {
    let standin = Standin::recorded("trt10.16_onnx_build_and_bench_default.log")
        .with("TRTMC_STANDIN_SLEEP_MS", 20_000);
    let trtexec = Trtexec::with_version(standin.install(), TrtexecVersion::new(10, 16, 1));
    let log_path = standin.path("slow.log");
    let started = Instant::now();
    let err = trtexec
        .run(&[], &log_path, Duration::from_millis(500))
        .expect_err("timeout");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let TrtexecError::TimedOut { after, log } = &err else {
        panic!("expected TimedOut, got {err}");
    };
    assert_eq!(*after, Duration::from_millis(500));
    assert_eq!(log, &log_path);
    assert!(err.to_string().contains("Raise the timeout"), "{err}");
}

#[test]
fn output_that_is_not_a_finished_trtexec_run_is_unparsable() {
    // Not trtexec output at all.
    let standin = Standin::recorded("trt11.1_helpBuildRoute_knobdb_EXCERPT.json");
    let trtexec = Trtexec::with_version(standin.install(), TrtexecVersion::new(11, 1, 0));
    let err = trtexec
        .run(&[], &standin.path("a.log"), TIMEOUT)
        .expect_err("no banner");
    assert!(matches!(err, TrtexecError::Unparsable { .. }));
    assert!(
        err.to_string().contains("does not look like trtexec"),
        "{err}"
    );

    // A real log cut off before its final status.
    let full = read(&fixture(
        "trtexec-logs/trt10.16_onnx_build_and_bench_default.log",
    ));
    let dir = tempfile::tempdir().expect("temporary folder");
    let cut = dir.path().join("cut.log");
    let head: Vec<&str> = full.lines().take(150).collect();
    std::fs::write(&cut, head.join("\n")).expect("write");
    let standin = Standin::new(&cut);
    let trtexec = Trtexec::with_version(standin.install(), TrtexecVersion::new(10, 16, 1));
    let err = trtexec
        .run(&[], &standin.path("b.log"), TIMEOUT)
        .expect_err("truncated");
    assert!(err.to_string().contains("truncated"), "{err}");
}

#[test]
fn a_missing_export_is_reported() {
    let standin = Standin::recorded(TIMING_10_16);
    let trtexec = Trtexec::with_version(standin.install(), TrtexecVersion::new(10, 16, 1));
    let mut request = TimeRequest::new("model-trained.trt");
    request.export_times = Some(standin.path("never-written.json"));
    let err = trtexec
        .time(&request, &standin.path("t.log"), TIMEOUT)
        .expect_err("no export");
    assert!(matches!(err, TrtexecError::MissingOutput { .. }));
    assert!(err.to_string().contains("never-written.json"), "{err}");
}

/// Every recorded log goes through the stand-in and the runner unchanged: what we capture is
/// what trtexec printed, and the run is judged by its recorded final status.
#[test]
fn every_recorded_log_replays_through_the_runner() {
    let dir = common::fixtures_dir().join("trtexec-logs");
    let mut logs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("list fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    assert_eq!(logs.len(), 12, "{logs:?}");
    for recorded in &logs {
        let name = recorded.display().to_string();
        let text = read(recorded);
        let expected = trtmc_trtexec::parse_log(&text);
        let standin = Standin::new(recorded);
        let trtexec = Trtexec::with_version(standin.install(), TrtexecVersion::new(10, 16, 1));
        let log_path = standin.path("replay.log");
        let result = trtexec.run(&["--verbose".to_string()], &log_path, TIMEOUT);
        let captured = read(&log_path);
        assert!(captured.lines().eq(text.lines()), "{name}: capture differs");
        match expected.outcome() {
            Some(trtmc_trtexec::RunStatus::Passed) => {
                let output = result.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(output.log, expected, "{name}");
                assert_eq!(output.exit_code, Some(0), "{name}");
            }
            other => {
                // Excerpts without a final status line.
                assert_eq!(other, None, "{name}");
                let err = result.expect_err(&name);
                assert!(
                    matches!(err, TrtexecError::Unparsable { .. }),
                    "{name}: {err}"
                );
            }
        }
    }
}
