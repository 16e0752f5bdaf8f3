//! Contract tests of the `tensorrt` runtime: no GPU and no TensorRT here, so a stand-in trtexec
//! (crate `crates/trtexec-standin` in replay mode, built by `cargo build --workspace`) replays real
//! recorded trtexec output (tests/fixtures/trtexec-logs, trex) and records the argv it received. The
//! tests assert exactly what we send, that we parse what real trtexec prints, and that a missing or
//! failing trtexec is a clear error with the documented exit code (7 missing, 4 build, 5 case).
#![cfg(unix)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use crate::common::*;
use serde_json::json;
use trtmc_runtime::bundle::{BUNDLE_SCHEMA, BundleManifest};
use trtmc_runtime::runtime::{Runtime, SelfTimedRequest};
use trtmc_runtime::tensorrt_rt::TensorrtRuntime;

/// `TRTMC_FIXTURES`, else the vendored `<repo>/tests/fixtures`; missing fixtures fail the test.
fn fixtures() -> PathBuf {
    let dir = std::env::var_os("TRTMC_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("tests/fixtures"));
    assert!(
        dir.join("trtexec-logs").is_dir(),
        "the trtexec fixtures are missing at {} (set TRTMC_FIXTURES)",
        dir.display()
    );
    dir
}

fn fixture(relative: &str) -> PathBuf {
    let p = fixtures().join(relative);
    assert!(p.is_file(), "fixture {} is missing", p.display());
    p
}

/// The stand-in, built beside trtmc-bench by a workspace build.
fn standin() -> PathBuf {
    let p = Path::new(BIN).with_file_name("trtexec-standin");
    assert!(
        p.is_file(),
        "{} is missing: run `cargo build --workspace --tests` first",
        p.display()
    );
    p
}

/// What the stand-in replays in one phase.
#[derive(Clone, Default)]
struct Phase {
    log: PathBuf,
    env: Vec<(&'static str, String)>,
}

impl Phase {
    fn new(log: PathBuf) -> Self {
        Self {
            log,
            env: Vec::new(),
        }
    }
    fn with(mut self, key: &'static str, value: impl ToString) -> Self {
        self.env.push((key, value.to_string()));
        self
    }

    // The recorded 10.16 runs of NVIDIA's cookbook, one a phase; a test that breaks one phase
    // keeps the other three as recorded.
    fn recorded(log: &str) -> Self {
        Self::new(fixture(&format!("trtexec-logs/{log}")))
    }
    fn help_10_16() -> Self {
        Self::recorded("trt10.16_onnx_build_and_bench_default.log")
    }
    /// The build, with the layer information it exports.
    fn build_10_16() -> Self {
        Self::recorded("trt10.16_onnx_build_and_bench_default.log").with(
            "TRTMC_STANDIN_LAYERS",
            fixture("trtexec-logs/trt10.16_exportLayerInfo_detailed.json").display(),
        )
    }
    fn time_10_16() -> Self {
        Self::recorded("trt10.16_loadEngine_cudagraph_spinwait_nodatatransfers_verbose.log")
    }
    fn profile_10_16() -> Self {
        Self::recorded("trt10.16_dumpProfile_exportTimes_exportProfile.log")
    }
}

/// A folder with a `trtexec` script that picks the phase from the argv (build: --onnx=, profile:
/// --exportProfile=, time: --loadEngine=, else the --help probe) and execs the stand-in with that
/// phase's recording; each phase's argv lands in argv-<phase>.json, the folder it ran in in
/// cwd-<phase>.txt.
struct FakeTrtexec {
    dir: tempfile::TempDir,
}

impl FakeTrtexec {
    fn new(help: Phase, build: Phase, time: Phase, profile: Phase) -> Self {
        let dir = tempfile::tempdir().expect("tmp");
        for (name, phase) in [
            ("help", help),
            ("build", build),
            ("time", time),
            ("profile", profile),
        ] {
            let mut env = format!(
                "TRTMC_STANDIN_LOG='{}'\nexport TRTMC_STANDIN_LOG\n",
                phase.log.display()
            );
            for (k, v) in &phase.env {
                env.push_str(&format!("{k}='{v}'\nexport {k}\n"));
            }
            std::fs::write(dir.path().join(format!("env-{name}.sh")), env).expect("env");
        }
        let script = format!(
            "#!/bin/sh\nDIR='{}'\ncase \" $* \" in\n  *\" --onnx=\"*) phase=build ;;\n  *\" --exportProfile=\"*) phase=profile ;;\n  *\" --loadEngine=\"*) phase=time ;;\n  *) phase=help ;;\nesac\nTRTMC_STANDIN_ARGV=\"$DIR/argv-$phase.json\"\nexport TRTMC_STANDIN_ARGV\npwd > \"$DIR/cwd-$phase.txt\"\n. \"$DIR/env-$phase.sh\"\nexec '{}' \"$@\"\n",
            dir.path().display(),
            standin().display()
        );
        let path = dir.path().join("trtexec");
        trtmc_testkit::write_script(&path, &script);
        Self { dir }
    }

    /// Every phase replays the recorded 10.16 runs of NVIDIA's cookbook, with TREx's resnet18 exports.
    fn recorded_10_16() -> Self {
        Self::new(
            Phase::help_10_16(),
            Phase::build_10_16(),
            Phase::time_10_16().with(
                "TRTMC_STANDIN_TIMES",
                fixture("trex/resnet18-pt-a100-fp16.timing.json").display(),
            ),
            Phase::profile_10_16()
                .with(
                    "TRTMC_STANDIN_PROFILE",
                    fixture("trex/resnet18-pt-a100-fp16.profile.json").display(),
                )
                .with(
                    "TRTMC_STANDIN_LAYERS",
                    fixture("trex/resnet18-pt-a100-fp16.layers.json").display(),
                ),
        )
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("trtexec")
    }

    /// The folder the last run of `phase` ran in.
    fn cwd(&self, phase: &str) -> PathBuf {
        let text = std::fs::read_to_string(self.dir.path().join(format!("cwd-{phase}.txt")))
            .unwrap_or_else(|e| panic!("no {phase} run: {e}"));
        PathBuf::from(text.trim_end())
    }

    fn argv(&self, phase: &str) -> Vec<String> {
        let text = std::fs::read_to_string(self.dir.path().join(format!("argv-{phase}.json")))
            .unwrap_or_else(|e| panic!("no {phase} run: {e}"));
        serde_json::from_str(&text).expect("argv")
    }
}

/// tiny-cnn's ONNX (input `image`, dynamic batch) written to `dir`.
fn model(dir: &Path) -> PathBuf {
    let p = dir.join("cnn.onnx");
    std::fs::write(&p, trtmc_modelgen::generate("tiny-cnn", 5).expect("model")).expect("write");
    p
}

fn bench(tmp: &Path, trtexec: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .arg("--bundle-cache")
        .arg(tmp.join("cache"))
        .env_remove("TRTMC_MANIFEST_ROOT")
        .env("TRTMC_TEST", "1");
    if let Some(t) = trtexec {
        cmd.arg("--trtexec").arg(t);
    }
    cmd.output().expect("start trtmc-bench")
}

/// `run --onnx ONNX` of [`model`] at batch 1 on `runtime`, with `args` after it.
fn run_model(
    tmp: &Path,
    trtexec: Option<&Path>,
    onnx: &str,
    runtime: &str,
    args: &[&str],
) -> Output {
    let head = [
        "run",
        "--onnx",
        onnx,
        "--shape",
        "image:1x3x64x64",
        "--runtime",
        runtime,
    ];
    bench(tmp, trtexec, &[&head[..], args].concat())
}

#[test]
fn build_time_and_profile_send_exactly_this_argv_and_read_what_trtexec_printed() {
    let tmp = tempfile::tempdir().expect("tmp");
    let fake = FakeTrtexec::recorded_10_16();
    let onnx = model(tmp.path());
    let out_dir = tmp.path().join("out");
    let out = run_model(
        tmp.path(),
        Some(&fake.path()),
        onnx.to_str().expect("utf8"),
        "tensorrt",
        &[
            "--iterations",
            "100",
            "--profile",
            "--profile-iterations",
            "7",
            "-o",
            out_dir.to_str().expect("utf8"),
            "-q",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&out_dir);
    assert_eq!(
        doc["timing_boundary"], "trtexec_gpu_compute",
        "results name the boundary"
    );
    let case = &doc["cases"][0];
    assert_eq!(case["runtime"]["name"], "tensorrt");
    assert_eq!(
        case["runtime"]["version"], "10.16.1",
        "from the banner of `trtexec --help`"
    );
    let bundle = PathBuf::from(case["bundle"]["path"].as_str().expect("bundle"));
    let case_dir = out_dir.join(case["dir"].as_str().expect("dir"));
    let p = |d: &Path, f: &str| d.join(f).display().to_string();

    assert_eq!(fake.argv("help"), ["--help"]);
    // The bundle is built in `.tmp-<key>-<pid>` beside its cache folder and renamed into place;
    // trtexec runs inside it and names its files relative to it.
    let build_dir = fake.cwd("build");
    assert_eq!(build_dir.parent(), bundle.parent());
    assert!(
        build_dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .starts_with(".tmp-"),
        "{}",
        build_dir.display()
    );
    assert_eq!(
        fake.argv("build"),
        [
            format!("--onnx={}", onnx.display()),
            "--saveEngine=model.plan".into(),
            "--shapes=image:1x3x64x64".into(),
            "--profilingVerbosity=detailed".into(),
            "--exportLayerInfo=layers_tensorrt.json".into(),
            "--skipInference".into(),
        ]
    );
    // The result is written in `.<name>.staging-<pid>` beside `-o` and renamed when complete;
    // trtexec times and profiles inside the staged case folder.
    let staged_case = fake.cwd("time");
    assert_eq!(fake.cwd("profile"), staged_case);
    assert_eq!(staged_case.file_name(), case_dir.file_name());
    let staging = staged_case.parent().expect("staging");
    assert_eq!(staging.parent(), out_dir.parent());
    assert!(
        staging
            .file_name()
            .expect("name")
            .to_string_lossy()
            .starts_with(".out.staging-"),
        "{}",
        staging.display()
    );
    assert_eq!(
        fake.argv("time"),
        [
            format!("--loadEngine={}", p(&bundle, "model.plan")),
            "--shapes=image:1x3x64x64".into(),
            "--iterations=100".into(),
            "--duration=0".into(),
            "--noDataTransfers".into(),
            "--useSpinWait".into(),
            "--useCudaGraph".into(),
            "--exportTimes=times_tensorrt.json".into(),
        ]
    );
    assert_eq!(
        fake.argv("profile"),
        [
            format!("--loadEngine={}", p(&bundle, "model.plan")),
            "--shapes=image:1x3x64x64".into(),
            "--iterations=7".into(),
            "--duration=0".into(),
            "--noDataTransfers".into(),
            "--useSpinWait".into(),
            "--useCudaGraph".into(),
            "--separateProfileRun".into(),
            "--exportProfile=profile_tensorrt.json".into(),
            "--exportLayerInfo=layers_tensorrt.json".into(),
        ]
    );

    // Build evidence: the engine, trtexec's layer information and log, and "Engine built in 8.09138 sec.".
    for f in [
        "model.plan",
        "layers_tensorrt.json",
        "trtexec-build.log",
        "tensorrt-build.json",
    ] {
        assert!(bundle.join(f).is_file(), "{f} is in the bundle");
    }
    let build = read_json(&bundle.join("tensorrt-build.json"));
    assert_valid("tensorrt-build.schema.json", &build);
    assert_eq!(build["engine_built_s"], 8.09138);
    let timing = read_json(&bundle.join("build-timing.json"));
    let engine = timing["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|s| s["name"] == "engine_built")
        .expect("engine_built step");
    assert!((engine["ms"].as_f64().expect("ms") - 8091.38).abs() < 1e-6);
    assert!(
        std::fs::read_to_string(bundle.join("build.log"))
            .expect("log")
            .contains("Engine built in 8.09138 sec.")
    );

    // One observation per exported query: computeMs as wall_ns, in order.
    let queries = trtmc_trtexec::read_times(&fixture("trex/resnet18-pt-a100-fp16.timing.json"))
        .expect("times");
    assert_eq!(
        case["measurement"]["observations"].as_u64(),
        Some(queries.len() as u64)
    );
    let obs: Vec<serde_json::Value> = std::fs::read_to_string(case_dir.join("observations.jsonl"))
        .expect("obs")
        .lines()
        .map(|l| serde_json::from_str(l).expect("line"))
        .collect();
    assert_eq!(obs[0]["wall_ns"], 873_472);
    assert_eq!(obs[1]["wall_ns"], 844_800);
    assert_eq!(obs[0]["start_ns"], 0);
    let median = case["metrics"]["latency_ms"]["p50"].as_f64().expect("p50");
    assert!(median > 0.5 && median < 2.0, "{median}");
    let notes = read_json(&case_dir.join("timing-notes.json"));
    let _: trtmc_core::artifacts::TimingNotes = assert_document("timing-notes.schema.json", &notes);
    let recorded = trtmc_trtexec::parse_log(
        &std::fs::read_to_string(fixture(
            "trtexec-logs/trt10.16_loadEngine_cudagraph_spinwait_nodatatransfers_verbose.log",
        ))
        .expect("log"),
    );
    assert_eq!(
        notes["notes"]["trtexec_summary"],
        serde_json::to_value(recorded.summary().expect("summary")).expect("json"),
        "trtexec's own summary is kept as parsed"
    );

    // The profiling pass wrote the trtexec exports; analyze reads them.
    assert_eq!(case["profile"]["status"], "completed");
    let analysis = tmp.path().join("analysis.json");
    let doc = analyze_into(&case_dir, &analysis);
    let backend = doc["backends"]
        .as_array()
        .expect("backends")
        .iter()
        .find(|b| b["label"] == "tensorrt")
        .expect("tensorrt backend");
    assert_eq!(
        backend["validation"]["status"], "passed",
        "{}",
        backend["validation"]
    );
}

/// The `*.log` paths a message names.
fn logs_named_in(message: &str) -> Vec<String> {
    message
        .split(|c: char| c.is_whitespace() || "()'\"`".contains(c))
        .map(|w| w.trim_end_matches(['.', ',', ':', ';']))
        .filter(|w| w.contains('/') && w.ends_with(".log"))
        .map(String::from)
        .collect()
}

#[test]
fn every_recorded_log_is_read_as_trtexec_printed_it_or_refused_clearly() {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(fixtures().join("trtexec-logs"))
        .expect("logs")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    let data = repo_root().join("crates/trtexec/tests/data");
    logs.extend(
        std::fs::read_dir(&data)
            .expect("data")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "log")),
    );
    logs.sort();
    assert!(logs.len() >= 15, "{logs:?}");
    let times = fixture("trex/resnet18-pt-a100-fp16.timing.json");
    for log in &logs {
        let text = std::fs::read_to_string(log).expect("log");
        let parsed = trtmc_trtexec::parse_log(&text);
        let phase = Phase::new(log.clone()).with("TRTMC_STANDIN_TIMES", times.display());
        let fake = FakeTrtexec::new(phase.clone(), phase.clone(), phase.clone(), phase);
        let rt = TensorrtRuntime::new(Some(fake.path()));
        let name = log
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let version = parsed.banner().and_then(|b| b.version);
        let drivable = version.is_some_and(|v| v.major >= 8);
        if !drivable {
            let err = rt.availability().expect_err(&name).to_string();
            assert!(
                err.contains("could not detect the TensorRT version"),
                "{name}: {err}"
            );
            continue;
        }
        rt.availability().unwrap_or_else(|e| panic!("{name}: {e}"));
        let bundle = tempfile::tempdir().expect("bundle");
        let case = tempfile::tempdir().expect("case");
        std::fs::write(bundle.path().join("model.plan"), b"engine").expect("engine");
        std::fs::write(
            bundle.path().join("tensorrt-build.json"),
            json!({"schema": "trtmc.tensorrt-build/v1", "shapes": null}).to_string(),
        )
        .expect("build file");
        let manifest = manifest();
        let settings = BTreeMap::new();
        let request = SelfTimedRequest {
            bundle_dir: bundle.path(),
            manifest: &manifest,
            operation: "infer",
            settings: &settings,
            warmup: 1,
            iterations: 10,
            min_duration_s: 0.0,
            timeout: Duration::from_secs(60),
            case_dir: case.path(),
            inputs: None,
        };
        let timer = rt.self_timed().expect("self-timed");
        let outcome = timer.time(&request);
        let failed = parsed.outcome() == Some(trtmc_trtexec::RunStatus::Failed);
        match (parsed.summary(), failed) {
            (Some(summary), false) => {
                let run = outcome.unwrap_or_else(|e| panic!("{name}: {e:#}"));
                assert_eq!(
                    run.notes["trtexec_summary"],
                    serde_json::to_value(summary).expect("json"),
                    "{name}"
                );
                assert_eq!(run.observations.len(), 3698, "{name}");
                let argv = fake.argv("time");
                let v = version.expect("version");
                let flags: Vec<&str> = argv
                    .iter()
                    .map(String::as_str)
                    .filter(|a| !a.contains('='))
                    .collect();
                if v.major >= 11 {
                    assert!(
                        flags.is_empty(),
                        "{name}: 11.x defaults already give graph, spin-wait, no copies: {argv:?}"
                    );
                } else {
                    assert_eq!(
                        flags,
                        ["--noDataTransfers", "--useSpinWait", "--useCudaGraph"],
                        "{name}"
                    );
                }
            }
            (_, true) => {
                let err = format!("{:#}", outcome.expect_err(&name));
                assert!(err.contains("trtexec failed"), "{name}: {err}");
            }
            (None, false) => {
                let err = format!("{:#}", outcome.expect_err(&name));
                assert!(
                    err.contains("no readable performance summary")
                        || err.contains("looks truncated")
                        || err.contains("does not look like trtexec output"),
                    "{name}: {err}"
                );
            }
        }
    }
}

fn manifest() -> BundleManifest {
    BundleManifest {
        schema: BUNDLE_SCHEMA.into(),
        key: "0".repeat(64),
        model: "m".into(),
        runtime: trtmc_core::artifacts::RuntimeInfo {
            name: "tensorrt".into(),
            version: "10.16.1".into(),
        },
        arch: std::env::consts::ARCH.into(),
        target: "gpu-unknown".into(),
        artifact: "model.plan".into(),
        build_settings: BTreeMap::new(),
        inputs: Vec::new(),
        outputs: Vec::new(),
        created: "now".into(),
        build_seconds: 0.0,
        source_commit: None,
    }
}

#[test]
fn a_missing_or_failing_trtexec_is_a_clear_error_with_its_exit_code() {
    let tmp = tempfile::tempdir().expect("tmp");
    let onnx = model(tmp.path());
    let onnx = onnx.to_str().expect("utf8");
    // Missing: exit 7, naming the flag and the install.
    let out = run_model(
        tmp.path(),
        Some(Path::new("/nonexistent/trtexec")),
        onnx,
        "tensorrt",
        &["--dry-run"],
    );
    assert_eq!(code(&out), 7, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--trtexec /nonexistent/trtexec does not exist")
            && stderr(&out).contains("Install TensorRT"),
        "{}",
        stderr(&out)
    );

    // A failing build (recorded parser failure): exit 4 with trtexec's [E] lines.
    let failed_build =
        repo_root().join("crates/trtexec/tests/data/trt10.16_synthetic_build_failed.log");
    let fake = FakeTrtexec::new(
        Phase::help_10_16(),
        Phase::new(failed_build),
        Phase::time_10_16(),
        Phase::profile_10_16(),
    );
    let out = run_model(
        tmp.path(),
        Some(&fake.path()),
        onnx,
        "tensorrt",
        &["-o", tmp.path().join("b").to_str().expect("utf8"), "-q"],
    );
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("trtexec failed")
            && stderr(&out).contains("No importer registered for op: FancyOp"),
        "{}",
        stderr(&out)
    );
    // Every log the message names exists after the command: the build log and trtexec's own,
    // kept beside the cache entry (the build folder is gone).
    let named = logs_named_in(&stderr(&out));
    assert!(
        named.iter().any(|l| l.ends_with(".trtexec-build.log")),
        "{named:?}"
    );
    for log in &named {
        assert!(Path::new(log).is_file(), "{log} is named but missing");
    }

    // A failing timed run: the case fails (exit 5) and trtexec's log is kept.
    let fake = FakeTrtexec::new(
        Phase::help_10_16(),
        Phase::build_10_16(),
        Phase::time_10_16().with("TRTMC_STANDIN_EXIT", 1),
        Phase::profile_10_16(),
    );
    let out_dir = tmp.path().join("t");
    let out = run_model(
        tmp.path(),
        Some(&fake.path()),
        onnx,
        "tensorrt",
        &["--rebuild", "-o", out_dir.to_str().expect("utf8"), "-q"],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    let doc = assert_result_dir_valid(&out_dir);
    let case = &doc["cases"][0];
    assert!(
        case["error"]
            .as_str()
            .expect("error")
            .contains("trtexec failed (exit status 1)"),
        "{}",
        case["error"]
    );
    // The message names trtexec's log where it is after the run: in the committed result folder.
    let named = logs_named_in(case["error"].as_str().expect("error"));
    assert!(!named.is_empty(), "{}", case["error"]);
    for log in &named {
        assert!(
            Path::new(log).is_file() && !log.contains(".staging-"),
            "{log} is named but missing"
        );
    }
    let log = out_dir.join(case["files"]["worker_log"].as_str().expect("trtexec's log"));
    assert!(
        log.ends_with("trtexec-time.log") && log.is_file(),
        "{}",
        log.display()
    );

    // Operations other than infer are refused before anything runs.
    let fake = FakeTrtexec::recorded_10_16();
    let out = bench(
        tmp.path(),
        Some(&fake.path()),
        &[
            "run",
            "--model",
            "tiny-gpt",
            "--runtime",
            "tensorrt",
            "--dry-run",
        ],
    );
    assert_refused(&out, 3, "operation `generate` cannot run on it");
}

/// `run --profile` of one ONNX file on all three runtimes (tensorrt through the stand-in, which replays
/// recorded exports of another model: the contract is the file shapes, not the numbers), and the six
/// files in one folder: `analyze` reads the three side by side and each passes its validation.
#[test]
fn profiles_of_tract_onnxruntime_and_tensorrt_load_in_analyze_side_by_side() {
    let tmp = tempfile::tempdir().expect("tmp");
    let onnx = model(tmp.path());
    let fake = FakeTrtexec::recorded_10_16();
    let side_by_side = tmp.path().join("side-by-side");
    std::fs::create_dir(&side_by_side).expect("mkdir");
    for runtime in ["tract", "onnxruntime", "tensorrt"] {
        let out_dir = tmp.path().join(runtime);
        let trtexec = (runtime == "tensorrt").then(|| fake.path());
        let out = run_model(
            tmp.path(),
            trtexec.as_deref(),
            onnx.to_str().expect("utf8"),
            runtime,
            &[
                "--warmup",
                "1",
                "--iterations",
                "3",
                "--profile",
                "--profile-iterations",
                "3",
                "-o",
                out_dir.to_str().expect("utf8"),
                "-q",
            ],
        );
        assert_eq!(code(&out), 0, "{runtime}: {}", stderr(&out));
        let doc = assert_result_dir_valid(&out_dir);
        let case = &doc["cases"][0];
        assert_eq!(case["profile"]["status"], "completed", "{runtime}");
        let case_dir = out_dir.join(case["dir"].as_str().expect("dir"));
        for kind in ["layers", "profile"] {
            let name = format!("{kind}_{runtime}.json");
            std::fs::copy(case_dir.join(&name), side_by_side.join(&name))
                .unwrap_or_else(|e| panic!("{runtime} wrote no {name}: {e}"));
        }
    }
    let analysis = tmp.path().join("analysis.json");
    let doc = analyze_into(&side_by_side, &analysis);
    assert_valid("analysis.schema.json", &doc);
    let backends = doc["backends"].as_array().expect("backends");
    let mut labels: Vec<&str> = backends
        .iter()
        .map(|b| b["label"].as_str().expect("label"))
        .collect();
    labels.sort_unstable();
    assert_eq!(labels, ["onnxruntime", "tensorrt", "tract"]);
    for b in backends {
        let v = &b["validation"];
        assert_eq!(v["status"], "passed", "{}: {v}", b["label"]);
        assert!(
            b["layer_count"].as_u64().expect("layers") > 3,
            "{}",
            b["label"]
        );
        // Each backend knows the runtime that wrote it; only TensorRT's export is dated.
        assert_eq!(b["runtime"]["name"], b["label"], "{}", b["runtime"]);
        assert_eq!(
            b["export"]["era"].is_null(),
            b["label"] != "tensorrt",
            "{}",
            b["export"]
        );
    }
}

/// The GPU CUDA uses is the first of `CUDA_VISIBLE_DEVICES`: telemetry samples it as typed fields,
/// and the result's machine description marks it; no GPU UUID reaches the result files. The fake
/// nvidia-smi answers as a real one did on an H200 (driver 580): a UUID prefix, which CUDA accepts,
/// or an index it does not list is "No devices were found" with status 6, so a prefix is completed
/// from `nvidia-smi -L` and an unknown device gives no GPU reading (it once gave a GPU of that name).
#[test]
fn telemetry_and_provenance_follow_cuda_visible_devices_and_hide_uuids() {
    let tmp = tempfile::tempdir().expect("tmp");
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    write_script(
        &bin.join("nvidia-smi"),
        &format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\ncase \"$*\" in\n\
             \x20 -L) echo 'GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-11111111-2222-3333-4444-555555555555)'; \
             echo 'GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-66666666-2222-3333-4444-555555555555)' ;;\n\
             \x20 *--id=1\\ *|*--id=GPU-66666666-2222-3333-4444-555555555555\\ *) echo 'NVIDIA H100 80GB HBM3, 97, 1234, 1980, 54, [N/A]' ;;\n\
             \x20 *--id=0\\ *|*--id=GPU-11111111-2222-3333-4444-555555555555\\ *) echo 'NVIDIA A100-SXM4-80GB, 0, 0, 210, 30, 50.5' ;;\n\
             \x20 *--id=*) echo 'No devices were found'; exit 6 ;;\n\
             \x20 *) echo 'NVIDIA A100-SXM4-80GB, 0, 0, 210, 30, 50.5' ;;\nesac\n",
            tmp.path().join("smi-calls").display()
        ),
    );
    // CUDA_VISIBLE_DEVICES, the GPU the listing marks as CUDA's device 0, the GPU telemetry reads.
    let cases = [
        ("1,0", Some(1), Some("NVIDIA H100 80GB HBM3")),
        ("GPU-66666666", Some(1), Some("NVIDIA H100 80GB HBM3")),
        ("3", None, None),
    ];
    for (n, (visible, marked, read)) in cases.into_iter().enumerate() {
        let out_dir = tmp.path().join(format!("out-{n}"));
        let out = Command::new(BIN)
            .args(["run", "--manifest-root"])
            .arg(test_catalog())
            .args([
                "--model",
                "test-noop",
                "--iterations",
                "20",
                "--telemetry",
                "on",
                "-q",
                "-o",
            ])
            .arg(&out_dir)
            .env_remove("TRTMC_MANIFEST_ROOT")
            .env("TRTMC_TEST", "1")
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    bin.display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .env("CUDA_VISIBLE_DEVICES", visible)
            .output()
            .expect("run");
        assert_eq!(code(&out), 0, "{visible}: {}", stderr(&out));
        let doc = assert_result_dir_valid(&out_dir);
        let gpus = doc["provenance"]["machine"]["gpus"]
            .as_array()
            .expect("gpus");
        assert_eq!(gpus.len(), 2, "{gpus:?}");
        for (i, gpu) in gpus.iter().enumerate() {
            assert_eq!(
                gpu.as_str()
                    .expect("text")
                    .ends_with("(CUDA_VISIBLE_DEVICES: device 0)"),
                marked == Some(i),
                "{visible}: {gpus:?}"
            );
        }
        let case_dir = out_dir.join(doc["cases"][0]["dir"].as_str().expect("dir"));
        let telemetry = read_json(&case_dir.join("telemetry.json"));
        let _: trtmc_core::artifacts::Telemetry =
            assert_document("telemetry.schema.json", &telemetry);
        let gpu = &telemetry["samples"][0]["gpu"];
        match read {
            Some(name) => {
                assert_eq!(gpu["name"], name, "{visible}: {telemetry}");
                assert_eq!(gpu["utilization_percent"], 97.0);
                assert_eq!(gpu["power_w"], serde_json::Value::Null);
            }
            None => assert!(gpu.is_null(), "{visible}: {telemetry}"),
        }
        for file in walk_files(&out_dir) {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            assert!(
                !text.contains("GPU-11111111") && !text.contains("GPU-66666666"),
                "{} holds a GPU UUID",
                file.display()
            );
        }
    }
}
