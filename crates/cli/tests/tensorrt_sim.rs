//! TensorRT end to end against the trtexec simulator (crates/trtexec-standin, simulate mode): no GPU
//! here, so the simulator builds "engines" whose latency follows the route (a known best route,
//! identical routes, routes that crash, hang or export wrong outputs; docs/trtexec-standin.md) and
//! computes real outputs of the ONNX model with tract. Everything else is the real program: `tune`
//! builds each route with trtexec in its own process, checks accuracy through --loadInputs and
//! --exportOutput, times with --exportTimes; `run` takes a route or a saved bundle; the matrix
//! compares two TensorRT builds.
#![cfg(unix)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::Value;

/// The simulator, built beside trtmc-bench by a workspace build.
fn simulator() -> PathBuf {
    let p = Path::new(BIN).with_file_name("trtexec-standin");
    assert!(
        p.is_file(),
        "{} is missing: run `cargo build --workspace --tests` first",
        p.display()
    );
    p
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Measurement settings small enough for a route to cost a few trtexec runs.
const QUICK: &[&str] = &[
    "--calls",
    "20",
    "--warmup",
    "1",
    "--final-passes",
    "6",
    "--final-calls",
    "10",
];

struct Sim {
    dir: tempfile::TempDir,
    /// One JSON line per simulator invocation (mode, argv, route).
    calls: PathBuf,
    onnx: PathBuf,
    bundles: PathBuf,
    trtexec: PathBuf,
}

impl Sim {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tmp");
        let onnx = dir.path().join("cnn.onnx");
        std::fs::write(
            &onnx,
            trtmc_modelgen::generate("tiny-cnn", 5).expect("model"),
        )
        .expect("onnx");
        let calls = dir.path().join("calls.jsonl");
        let bundles = dir.path().join("bundles");
        Self {
            dir,
            calls,
            onnx,
            bundles,
            trtexec: simulator(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `trtmc-bench ARGS` driving the simulator as TensorRT `version` (e.g. 110100, 101601).
    fn cmd(&self, version: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .env_remove("TRTMC_MANIFEST_ROOT")
            .env_remove("TRTMC_STANDIN_LOG")
            .env("TRTMC_TEST", "1")
            .env("TRTMC_SIM_VERSION", version)
            .env("TRTMC_SIM_CALLS", &self.calls);
        cmd
    }

    fn run(&self, version: &str, args: &[&str]) -> Output {
        self.cmd(version, args).output().expect("start trtmc-bench")
    }

    fn tune_args<'a>(&'a self, out: &'a Path, routes: &'a str) -> Vec<&'a str> {
        let mut args = vec![
            "tune",
            "--onnx",
            s(&self.onnx),
            "--runtime",
            "tensorrt",
            "--trtexec",
            s(&self.trtexec),
            "--routes",
            routes,
            "--bundle-cache",
            s(&self.bundles),
            // tiny-cnn's batch dimension is symbolic; trtexec engines are built for one shape.
            "--dim",
            "batch=1",
            "-o",
            s(out),
        ];
        args.extend_from_slice(QUICK);
        args
    }

    /// `run` of the model on the simulated TensorRT with `extra` arguments.
    fn run_engine(&self, version: &str, extra: &[&str]) -> Output {
        let mut args = vec!["--set", "build.dims.batch=1"];
        args.extend_from_slice(extra);
        self.run_onnx(version, &self.onnx, &args)
    }

    /// `run --onnx ONNX` on the simulated TensorRT with `extra` arguments.
    fn run_onnx(&self, version: &str, onnx: &Path, extra: &[&str]) -> Output {
        let mut args = vec![
            "run",
            "--onnx",
            s(onnx),
            "--runtime",
            "tensorrt",
            "--trtexec",
            s(&self.trtexec),
            "--bundle-cache",
            s(&self.bundles),
        ];
        args.extend_from_slice(extra);
        self.run(version, &args)
    }

    /// `run` with `build.route=ROUTE`.
    fn run_route(&self, version: &str, route: &str, extra: &[&str]) -> Output {
        let set = format!("build.route={route}");
        let mut args = vec!["--set", &set];
        args.extend_from_slice(extra);
        self.run_engine(version, &args)
    }

    /// The simulator's invocations of one mode.
    fn invocations(&self, mode: &str) -> Vec<Value> {
        std::fs::read_to_string(&self.calls)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["mode"] == mode)
            .collect()
    }
}

/// A successful run's result in `out` and its first case's output checks.
#[track_caller]
fn output_checks(o: &Output, out: &Path) -> (Value, Vec<Value>) {
    assert_eq!(code(o), 0, "{}", stderr(o));
    let result = read_json(&out.join("result.json"));
    let checks = result["cases"][0]["output_check"]
        .as_array()
        .expect("output_check")
        .clone();
    (result, checks)
}

#[test]
fn tune_finds_the_known_best_route_and_the_saved_bundle_runs() {
    let sim = Sim::new();
    let out = sim.path("out");
    let saved = sim.path("best.bundle");
    let mut args = sim.tune_args(&out, "-kgen:tiling=[0|1|2]");
    args.extend(["--save-bundle", s(&saved)]);
    let o = sim.run("110100", &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let summary = read_json(&out.join("tuning-summary.json"));
    assert_eq!(
        summary["decision"]["kind"], "winner",
        "{}",
        summary["decision"]
    );
    assert_eq!(summary["decision"]["route"], "-kgen:tiling=1");
    // Every route was built by trtexec with --setBuildRoute, once, in its own process.
    let builds = sim.invocations("build");
    let routes: BTreeSet<String> = builds
        .iter()
        .filter_map(|b| b["route"].as_str().map(String::from))
        .collect();
    let expected: BTreeSet<String> = ["-kgen:tiling=0", "-kgen:tiling=1", "-kgen:tiling=2"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(routes, expected, "{builds:?}");
    assert_eq!(builds.len(), 3, "one build per route: {builds:?}");
    // trtexec was probed once for the whole tune, its children included: the bundle cache kept the
    // answers of `--help` and `--helpBuildRoute` (each real `--helpBuildRoute` initializes CUDA).
    assert_eq!(
        sim.invocations("help").len(),
        1,
        "{:?}",
        sim.invocations("help")
    );
    assert_eq!(
        sim.invocations("help_build_route").len(),
        1,
        "{:?}",
        sim.invocations("help_build_route")
    );
    // Timing runs were fixed-count trtexec runs exporting their times.
    let timed = sim.invocations("infer");
    assert!(
        timed.iter().any(|t| {
            let argv: Vec<&str> = t["argv"]
                .as_array()
                .expect("argv")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            argv.contains(&"--duration=0")
                && argv.iter().any(|a| a.starts_with("--exportTimes="))
                && argv.iter().any(|a| a.starts_with("--iterations="))
        }),
        "{timed:?}"
    );
    // Accuracy: each route ran on the same --loadInputs and was compared with the default route.
    let checks: Vec<&Value> = timed
        .iter()
        .filter(|t| t["argv"].to_string().contains("--exportOutput="))
        .collect();
    assert!(checks.len() >= 3, "{checks:?}");
    assert!(
        checks
            .iter()
            .all(|t| t["argv"].to_string().contains("--loadInputs=")),
        "{checks:?}"
    );
    assert_eq!(
        tune_route(&summary, "-kgen:tiling=1")["status"],
        "ok",
        "{}",
        tune_route(&summary, "-kgen:tiling=1")
    );
    assert_eq!(summary["golden"], "the default route -kgen:tiling=2");
    let context = &summary["context"];
    assert_eq!(context["runtime"], "tensorrt");
    assert!(
        context["measurement"]
            .as_str()
            .expect("measurement")
            .contains("trtexec"),
        "{context}"
    );

    // The tuned bundle runs with `run --bundle`, and reproduces with `run --set build.route=...`.
    let record = read_json(&saved.join("tuned-route.json"));
    assert_eq!(
        record["build_settings"]["route"], "-kgen:tiling=1",
        "{record}"
    );
    let result = sim.path("run-saved");
    let o = sim.run_engine(
        "110100",
        &[
            "--bundle",
            s(&saved),
            "--iterations",
            "30",
            "-o",
            s(&result),
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let run = read_json(&result.join("result.json"));
    assert_eq!(run["timing_boundary"], "trtexec_gpu_compute", "{run}");
    // The same bundle under another TensorRT version is refused before timing, naming both.
    let other = sim.path("run-other-version");
    let o = sim.run_engine("101601", &["--bundle", s(&saved), "-o", s(&other)]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("11.1.0") && err.contains("10.16.1"), "{err}");
}

#[test]
fn crashed_hung_failed_and_inaccurate_routes_are_excluded_with_their_reasons() {
    let sim = Sim::new();
    let out = sim.path("out");
    let routes = "-tactic:cublas=[off|on] -match_ragged_mha=[off|on] -kgen:codegen:cuda_tile=[1|0] -kgen:sigmoid_approx=[on|off] -kgen:tiling=[2|1]";
    let mut args = sim.tune_args(&out, routes);
    args.extend(["--route-timeout", "8"]);
    let started = Instant::now();
    let o = sim.run("110100", &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        started.elapsed() < Duration::from_secs(300),
        "the hung build was not stopped by the route timeout"
    );
    let summary = read_json(&out.join("tuning-summary.json"));
    let base = "-tactic:cublas=off -match_ragged_mha=off -kgen:codegen:cuda_tile=1 -kgen:sigmoid_approx=on";
    let with = |changed: &str, value: &str| {
        let mut tokens: Vec<String> = base.split(' ').map(String::from).collect();
        tokens.push("-kgen:tiling=2".into());
        for t in &mut tokens {
            if t.starts_with(&format!("{changed}=")) {
                *t = format!("{changed}={value}");
            }
        }
        tokens.join(" ")
    };
    let crashed = tune_route(&summary, &with("-tactic:cublas", "on"));
    assert_eq!(crashed["status"], "crashed", "{crashed}");
    let hung = tune_route(&summary, &with("-match_ragged_mha", "on"));
    assert_eq!(hung["status"], "timed_out", "{hung}");
    let failed = tune_route(&summary, &with("-kgen:codegen:cuda_tile", "0"));
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(
        failed.to_string().contains("Unknown")
            || failed.to_string().contains("FAILED")
            || failed.to_string().contains("exit status 1"),
        "{failed}"
    );
    let wrong = tune_route(&summary, &with("-kgen:sigmoid_approx", "off"));
    assert_eq!(wrong["status"], "accuracy_failed", "{wrong}");
    assert_eq!(summary["decision"]["route"], with("-kgen:tiling", "1"));
    // Each failed build's trtexec log is kept in the route's tool folder.
    let logs: Vec<PathBuf> = std::fs::read_dir(out.join("logs"))
        .expect("logs")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "tool"))
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n == "trtexec-build.log"))
        .collect();
    assert!(logs.len() >= 3, "{logs:?}");
    // The crashed and failed routes' reasons name only logs that exist: the route's own log and
    // the kept copies of trtexec's, never the build folder that is gone.
    for reason in [crashed.to_string(), failed.to_string()] {
        let named: Vec<&str> = reason
            .split(|c: char| c.is_whitespace() || "()'\"`\\".contains(c))
            .map(|w| w.trim_end_matches(['.', ',', ':', ';']))
            .filter(|w| w.contains('/') && w.ends_with(".log"))
            .collect();
        assert!(!named.is_empty(), "{reason}");
        for log in named {
            assert!(Path::new(log).is_file(), "{log} is named but missing");
        }
    }
    // The hung trtexec was killed with its worker: no simulator is left running.
    std::thread::sleep(Duration::from_millis(200));
    let ps = Command::new("ps")
        .args(["-eo", "args"])
        .output()
        .expect("ps");
    let left = String::from_utf8_lossy(&ps.stdout)
        .lines()
        .filter(|l| l.contains("trtexec-standin") && l.contains(s(&sim.onnx)))
        .count();
    assert_eq!(left, 0, "a simulated trtexec outlived its route");
}

#[test]
fn mixed_and_racing_searches_find_the_best_combination_and_save_all_keeps_every_engine() {
    let sim = Sim::new();
    // -kgen:tiling=1 (0.90) and -conv_lowering=off (0.97) each help; together they are best.
    let expression = "-kgen:tiling=[2|0|1] -conv_lowering=[on|off]";
    for search in ["mixed", "racing"] {
        let out = sim.path(search);
        let mut args = sim.tune_args(&out, expression);
        args.extend(["--search", search]);
        if search == "racing" {
            args.push("--save-all");
        }
        let o = sim.run("110100", &args);
        assert_eq!(code(&o), 0, "{search}: {}", stderr(&o));
        let summary = read_json(&out.join("tuning-summary.json"));
        assert_eq!(
            summary["decision"]["route"], "-kgen:tiling=1 -conv_lowering=off",
            "{search}: {}",
            summary["decision"]
        );
        if search == "racing" {
            let saved: Vec<PathBuf> = std::fs::read_dir(out.join("bundles"))
                .expect("bundles")
                .flatten()
                .map(|e| e.path().join("model.plan"))
                .collect();
            assert_eq!(saved.len(), 6, "{saved:?}");
            assert!(saved.iter().all(|p| p.is_file()), "{saved:?}");
        }
    }
}

#[test]
fn the_golden_falls_back_to_onnxruntime_when_the_default_route_fails() {
    let sim = Sim::new();
    let config = sim.path("default-fails.json");
    // Noisier queries too (3 %): trtexec then warns that GPU compute time is unstable.
    std::fs::write(
        &config,
        r#"{"noise": 0.03, "faults": {"-kgen:tiling=2": "fail_build"}}"#,
    )
    .expect("config");
    let out = sim.path("out");
    let o = sim
        .cmd("110100", &sim.tune_args(&out, "-kgen:tiling=[0|1|2]"))
        .env("TRTMC_SIM_CONFIG", &config)
        .output()
        .expect("tune");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let summary = read_json(&out.join("tuning-summary.json"));
    let golden = summary["golden"].as_str().expect("golden");
    assert!(golden.starts_with("onnxruntime "), "{golden}");
    // The other routes passed the gate against ONNX Runtime's outputs (tract inside the simulator).
    assert_eq!(tune_route(&summary, "-kgen:tiling=1")["status"], "ok");
    assert_eq!(summary["decision"]["route"], "-kgen:tiling=1");
    assert!(
        summary["notes"]
            .to_string()
            .contains("gave no reference outputs"),
        "{}",
        summary["notes"]
    );
    // trtexec's own warning is kept with the route, in the summary and in the cache lines.
    let best = tune_route(&summary, "-kgen:tiling=1");
    assert!(best["notes"].to_string().contains("unstable"), "{best}");
    let cache = std::fs::read_to_string(out.join("tuning-cache.jsonl")).expect("cache");
    assert!(cache.contains("GPU compute time is unstable"), "{cache}");
}

#[test]
fn identical_routes_tie_and_kill_9_then_continue_builds_every_route_once() {
    let sim = Sim::new();
    // Identical engines (-slice_fusion has no effect in the simulator) end in a tie.
    let out = sim.path("tie");
    let o = sim.run("110100", &sim.tune_args(&out, "-slice_fusion=[on|off]"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let summary = read_json(&out.join("tuning-summary.json"));
    assert_eq!(
        summary["decision"]["kind"], "tie",
        "{}",
        summary["decision"]
    );

    // kill -9 in the middle of a tune, then --continue: every route once in the cache.
    let config = sim.path("slow-builds.json");
    std::fs::write(&config, r#"{"build_ms": 400}"#).expect("config");
    let out = sim.path("killed");
    let cache = out.join("tuning-cache.jsonl");
    let args = sim.tune_args(&out, "-conv_lowering=[on|off] -kgen:tiling=[0|1|2]");
    let mut full = args.clone();
    full.extend(["--search", "full"]);
    let mut child = spawn_silent(sim.cmd("110100", &full).env("TRTMC_SIM_CONFIG", &config));
    kill_9_when(
        &mut child,
        Duration::from_secs(300),
        "four lines in the tuning cache",
        || cache_lines(&cache) >= 4,
    );
    let o = sim
        .cmd("110100", &["tune", "--continue", "--cache", s(&cache)])
        .env("TRTMC_SIM_CONFIG", &config)
        .output()
        .expect("continue");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let lines: Vec<Value> = std::fs::read_to_string(&cache)
        .expect("cache")
        .lines()
        .skip(1)
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let search: Vec<&str> = lines
        .iter()
        .filter(|l| l["phase"] == "full")
        .filter_map(|l| l["build_route"].as_str())
        .collect();
    let distinct: BTreeSet<&&str> = search.iter().collect();
    assert_eq!(search.len(), 6, "{search:?}");
    assert_eq!(distinct.len(), 6, "{search:?}");
    let summary = read_json(&out.join("tuning-summary.json"));
    assert_eq!(
        summary["decision"]["route"], "-conv_lowering=off -kgen:tiling=1",
        "{}",
        summary["decision"]
    );
}

#[test]
fn tensorrt_10_tunes_its_flag_knobs_and_refuses_routes() {
    let sim = Sim::new();
    let out = sim.path("out");
    let o = sim.run(
        "101601",
        &sim.tune_args(&out, "-trtexec:builderOptimizationLevel=[3|5|0]"),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let summary = read_json(&out.join("tuning-summary.json"));
    assert_eq!(
        summary["decision"]["route"], "-trtexec:builderOptimizationLevel=5",
        "{}",
        summary["decision"]
    );
    let builds = sim.invocations("build");
    assert!(
        builds.iter().any(|b| b["argv"]
            .to_string()
            .contains("--builderOptimizationLevel=5")),
        "{builds:?}"
    );
    // A build route on 10.x: exit 3 naming the knob and the TensorRT version.
    let o = sim.run(
        "101601",
        &sim.tune_args(&sim.path("routes"), "-kgen:tiling=[0|1]"),
    );
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("-kgen:tiling") && stderr(&o).contains("tensorrt 10.16.1"),
        "{}",
        stderr(&o)
    );
    // On 11.1 a value outside the knob's list: the allowed values and the version.
    let o = sim.run(
        "110100",
        &sim.tune_args(&sim.path("bad-value"), "-kgen:tiling=[0|7]"),
    );
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    for needle in ["-kgen:tiling", "[0|1|2]", "tensorrt 11.1.0"] {
        assert!(stderr(&o).contains(needle), "{needle}: {}", stderr(&o));
    }
}

#[test]
fn run_takes_a_checked_route_and_dry_run_prints_trtexecs_commands() {
    let sim = Sim::new();
    let o = sim.run_route("110100", "-kgen:tiling=1", &["--dry-run"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("build (in ") && text.contains("--setBuildRoute=-kgen:tiling=1"),
        "{text}"
    );
    assert!(
        text.contains("time (in the case folder): ") && text.contains("--loadEngine="),
        "{text}"
    );
    assert!(
        sim.invocations("build").is_empty(),
        "a dry run built something"
    );

    for (route, version, needles) in [
        (
            "-kgen:tiling=7",
            "110100",
            vec!["-kgen:tiling", "[0|1|2]", "11.1.0"],
        ),
        ("-no:such=1", "110100", vec!["-no:such", "11.1.0"]),
        (
            "-kgen:tiling=1",
            "101601",
            vec![">= 11.1", "10.16.1", "build.builder_optimization_level"],
        ),
    ] {
        let o = sim.run_route(version, route, &["--dry-run"]);
        assert_eq!(code(&o), 3, "{route}: {}", stderr(&o));
        for needle in needles {
            assert!(
                stderr(&o).contains(needle),
                "{route}: {needle}: {}",
                stderr(&o)
            );
        }
    }

    // A route is part of the bundle key: two routes, two engines, two different latencies.
    let mut p50 = Vec::new();
    for route in ["-kgen:tiling=1", "-kgen:tiling=0"] {
        let out = sim.path(&format!("run{}", p50.len()));
        let o = sim.run_route("110100", route, &["--iterations", "50", "-o", s(&out)]);
        assert_eq!(code(&o), 0, "{route}: {}", stderr(&o));
        let result = read_json(&out.join("result.json"));
        p50.push(
            result["cases"][0]["metrics"]["latency_ms"]["p50"]
                .as_f64()
                .expect("p50"),
        );
    }
    assert!(p50[0] < p50[1] * 0.95, "{p50:?}");
    assert_eq!(sim.invocations("build").len(), 2);
}

/// The argv the simulator recorded for its last call of `mode` whose argv has `needle`, as the shell
/// line `run --dry-run` prints.
fn recorded_line(sim: &Sim, mode: &str, needle: &str) -> String {
    let call = sim
        .invocations(mode)
        .into_iter()
        .rev()
        .find(|c| c["argv"].to_string().contains(needle))
        .unwrap_or_else(|| panic!("no {mode} call with {needle}"));
    let mut argv = vec![s(&sim.trtexec).to_string()];
    argv.extend(
        call["argv"]
            .as_array()
            .expect("argv")
            .iter()
            .map(|a| a.as_str().expect("text").to_string()),
    );
    trtmc_core::text::shell_line(&argv)
}

/// The command line of a `run --dry-run` line starting with `prefix` (`build (in `, `time (in `).
fn dry_run_line(text: &str, prefix: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in {text}"));
    line.split_once("): ")
        .map(|(_, command)| command.to_string())
        .unwrap_or_else(|| panic!("{line}"))
}

#[test]
fn dry_run_prints_exactly_the_argv_the_run_executes() {
    let sim = Sim::new();
    let catalog = repo_root().join("benchmarks/performance/catalog-gpu");
    let onnx_model = ["--onnx", s(&sim.onnx), "--set", "build.dims.batch=1"];
    let generated_model = ["--manifest-root", s(&catalog), "--model", "cnn-infer"];
    let mut checked = 0;
    for (model, route) in [
        (&onnx_model[..], None),
        (&onnx_model[..], Some("build.route=-kgen:tiling=1")),
        (&generated_model[..], None),
        (&generated_model[..], Some("build.route=-kgen:tiling=2")),
    ] {
        let mut args = vec![
            "run",
            "--runtime",
            "tensorrt",
            "--trtexec",
            s(&sim.trtexec),
            "--bundle-cache",
            s(&sim.bundles),
            "--iterations",
            "30",
        ];
        args.extend_from_slice(model);
        if let Some(route) = route {
            args.extend(["--set", route]);
        }
        let mut dry = args.clone();
        dry.push("--dry-run");
        let o = sim.run("110100", &dry);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let planned = stdout(&o);
        let out = sim.path(&format!("run{checked}"));
        args.extend(["-o", s(&out)]);
        let o = sim.run("110100", &args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert_eq!(
            dry_run_line(&planned, "build (in "),
            recorded_line(&sim, "build", "--saveEngine="),
            "{model:?} {route:?}"
        );
        assert_eq!(
            dry_run_line(&planned, "time (in "),
            recorded_line(&sim, "infer", "--exportTimes="),
            "{model:?} {route:?}"
        );
        // The route trtexec reported it used is kept with the engine and the timed case.
        let result = read_json(&out.join("result.json"));
        let case = &result["cases"][0];
        let bundle = PathBuf::from(case["bundle"]["path"].as_str().expect("bundle"));
        let used = route.map(|r| r.trim_start_matches("build.route="));
        let build = read_json(&bundle.join("tensorrt-build.json"));
        assert_eq!(build["route_used"].as_str(), used, "{build}");
        assert_eq!(case["bundle"]["route_used"].as_str(), used, "{case}");
        assert_valid("benchmark-run.schema.json", &result);
        let page = std::fs::read_to_string(out.join("report.html")).expect("report.html");
        assert_eq!(
            page.contains("class=\"route-used\""),
            used.is_some(),
            "the report's route line"
        );
        if let Some(used) = used {
            assert!(
                page.contains(&format!(">{used}</code>")),
                "route missing in the report"
            );
        }
        let notes = read_json(
            &out.join(case["dir"].as_str().expect("dir"))
                .join("timing-notes.json"),
        );
        assert_eq!(
            notes["notes"]["trtexec_build_route_used"].as_str(),
            used,
            "{notes}"
        );
        checked += 1;
    }
    // Each real run built its own engine: the dry runs built nothing.
    assert_eq!(sim.invocations("build").len(), checked);
}

/// A stored probe answer is used only while nothing that could change it changed: the simulated
/// version (as a TensorRT library swapped under the same trtexec) and the executable itself.
#[test]
fn probes_are_kept_in_the_bundle_cache_until_the_version_or_the_executable_changes() {
    let mut sim = Sim::new();
    let wrapper = sim.path("bin/trtexec");
    std::fs::create_dir_all(sim.path("bin")).expect("bin");
    let script = format!("#!/bin/sh\nexec '{}' \"$@\"\n", s(&sim.trtexec));
    write_script(&wrapper, &script);
    sim.trtexec = wrapper.clone();
    let dry_run = |sim: &Sim, version: &str| {
        let o = sim.run_route(version, "-kgen:tiling=1", &["--dry-run"]);
        // 10.x has no routes: the run is refused after the version probe, which is what counts here.
        let expected = if version.starts_with("11") { 0 } else { 3 };
        assert_eq!(code(&o), expected, "{version}: {}", stderr(&o));
        (
            sim.invocations("help").len(),
            sim.invocations("help_build_route").len(),
        )
    };
    assert_eq!(dry_run(&sim, "110100"), (1, 1));
    assert_eq!(
        dry_run(&sim, "110100"),
        (1, 1),
        "the answers were not reused"
    );
    let stored: Vec<String> = std::fs::read_dir(sim.bundles.join("probes"))
        .expect("probes folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(stored.len(), 2, "{stored:?}");
    // Another version behind the same executable is probed anew.
    assert_eq!(dry_run(&sim, "101601").0, 2);
    assert_eq!(dry_run(&sim, "101601").0, 2);
    // A rewritten executable is probed anew, and so is its knob database.
    write_script(&wrapper, &format!("{script}# upgraded\n"));
    assert_eq!(dry_run(&sim, "110100"), (3, 2));
    assert_eq!(dry_run(&sim, "110100"), (3, 2));
}

/// The simulator as TensorRT `version`, run directly with `args`; fails the test unless it passed.
fn simulate(sim: &Sim, version: &str, args: &[String]) {
    let out = Command::new(&sim.trtexec)
        .args(args)
        .env_remove("TRTMC_STANDIN_LOG")
        .env("TRTMC_SIM_VERSION", version)
        .env("TRTMC_SIM_CALLS", &sim.calls)
        .output()
        .expect("simulator");
    assert_eq!(code(&out), 0, "{version} {args:?}: {}", stderr(&out));
}

/// analyze reads trtexec's two layer-information forms on purpose: the simulator's 11.x export
/// (`Datatype` and `Format` apart, `Strides`, `Constants`, Myelin `custom_layer` records without
/// outputs, `"I/O Tensors"`) gives the same layers, times, formats and precisions as its 10.x export
/// of the same model, and is dated TensorRT 11 by its I/O list.
#[test]
fn analyze_reads_the_11x_and_10x_layer_information_alike() {
    let sim = Sim::new();
    let profile = sim.path("profile.json");
    let mut layer_files = Vec::new();
    for version in ["110100", "101601"] {
        let engine = sim.path(&format!("{version}.plan"));
        let layers = sim.path(&format!("layers-{version}.json"));
        simulate(
            &sim,
            version,
            &[
                format!("--onnx={}", s(&sim.onnx)),
                format!("--saveEngine={}", s(&engine)),
                "--shapes=image:1x3x64x64".into(),
                "--profilingVerbosity=detailed".into(),
                format!("--exportLayerInfo={}", s(&layers)),
                "--skipInference".into(),
            ],
        );
        if version == "110100" {
            simulate(
                &sim,
                version,
                &[
                    format!("--loadEngine={}", s(&engine)),
                    format!("--exportProfile={}", s(&profile)),
                    "--iterations=20".into(),
                    "--duration=0".into(),
                ],
            );
        }
        layer_files.push(layers);
    }
    let eleven = read_json(&layer_files[0]);
    let ten = read_json(&layer_files[1]);
    // The two forms really differ where TensorRT 11 changed them.
    assert!(eleven.get("Bindings").is_none() && ten.get("I/O Tensors").is_none());
    assert_eq!(eleven["I/O Tensors"][0]["Name"], ten["Bindings"][0]);
    let first = &eleven["Layers"][0];
    assert!(
        first["Inputs"][0].get("Format/Datatype").is_none(),
        "{first}"
    );
    for key in ["Datatype", "Format", "Strides", "StrideOrder"] {
        assert!(first["Inputs"][0].get(key).is_some(), "{key}: {first}");
    }
    assert!(
        first.get("Constants").is_some(),
        "the conv's weights: {first}"
    );
    let custom: Vec<&Value> = eleven["Layers"]
        .as_array()
        .expect("layers")
        .iter()
        .filter(|l| l["LayerType"] == "custom_layer")
        .collect();
    assert!(!custom.is_empty() && custom.iter().all(|l| l.get("Outputs").is_none()));

    // One analysis, one backend per form, both on the same per-layer profile.
    let o = Command::new(BIN)
        .args([
            "analyze",
            "--quiet",
            "--data",
            s(&layer_files[0]),
            s(&profile),
        ])
        .args([
            "--label",
            "trt11",
            "--data",
            s(&layer_files[1]),
            s(&profile),
        ])
        .args(["--label", "trt10"])
        .output()
        .expect("analyze");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("analysis JSON");
    assert_valid("analysis.schema.json", &doc);
    let backends = doc["backends"].as_array().expect("backends");
    // Per layer: its name, precision, time and input formats; outputs where both forms list them.
    let summary = |b: &Value| -> Vec<Value> {
        b["layers"]
            .as_array()
            .expect("layers")
            .iter()
            .map(|l| {
                let formats = |side: &str| -> Vec<Value> {
                    l[side]
                        .as_array()
                        .map(|ts| ts.iter().map(|t| t["format"].clone()).collect())
                        .unwrap_or_default()
                };
                // TensorRT 11's Myelin records list no outputs.
                let outputs = if l["raw_type"] == "custom_layer" {
                    Value::Null
                } else {
                    Value::from(formats("outputs"))
                };
                serde_json::json!({
                    "name": l["name"],
                    "precision": l["precision"],
                    "timing": l["timing"],
                    "inputs": formats("inputs"),
                    "outputs": outputs,
                })
            })
            .collect()
    };
    let (trt11, trt10) = (summary(&backends[0]), summary(&backends[1]));
    assert!(trt11.len() >= 3, "{trt11:?}");
    let mut trt10 = trt10;
    for (a, b) in trt11.iter().zip(trt10.iter_mut()) {
        if a["outputs"].is_null() {
            b["outputs"] = Value::Null;
        }
    }
    assert_eq!(trt11, trt10);
    assert!(
        trt11
            .iter()
            .all(|l| l["precision"] == "FP32" && l["timing"].is_object()),
        "{trt11:?}"
    );
    assert!(
        backends[0]["export"].to_string().contains("TensorRT 11"),
        "{}",
        backends[0]["export"]
    );
}

/// As trtexec's logger does, the simulator prints warnings on stderr and information on stdout.
#[test]
fn simulated_warnings_go_to_stderr() {
    let sim = Sim::new();
    let engine = sim.path("m.plan");
    let out = Command::new(&sim.trtexec)
        .arg(format!("--onnx={}", s(&sim.onnx)))
        .arg(format!("--saveEngine={}", s(&engine)))
        .args([
            "--shapes=image:1x3x64x64",
            "--useCudaGraph",
            "--skipInference",
        ])
        .env_remove("TRTMC_STANDIN_LOG")
        .env("TRTMC_SIM_VERSION", "110100")
        .output()
        .expect("simulator");
    assert_refused(&out, 0, "] [W] --useCudaGraph is deprecated");
    assert!(!stdout(&out).contains("] [W] "), "{}", stdout(&out));
    assert!(stdout(&out).contains("] [I] "), "{}", stdout(&out));
}

#[test]
fn a_matrix_row_compares_two_tensorrt_builds() {
    let sim = Sim::new();
    let (suite, common) = trt_matrix(&sim, "-kgen:tiling=1", None);
    let common: Vec<&str> = common.iter().map(String::as_str).collect();
    let mut check = vec!["matrix", "check", s(&suite)];
    check.extend(&common);
    let o = sim.run("110100", &check);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let out = sim.path("matrix-out");
    let mut run = vec!["matrix", "run", s(&suite), "-o", s(&out)];
    run.extend(&common);
    let o = sim.run("110100", &run);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let results = read_json(&out.join("results.json"));
    let row = &results["rows"][0];
    assert_eq!(row["status"], "compared", "{row}");
    // The tuned route is 10 % faster in the simulator: green, with the ratio to show it.
    assert_eq!(row["comparison"]["light"], "green", "{row}");
    let ratio = row["comparison"]["ratio"].as_f64().expect("ratio");
    assert!((0.85..0.95).contains(&ratio), "{ratio}");
}

/// A matrix of one `cnn-infer` row comparing TensorRT builds: the candidate with `candidate_route`,
/// the reference with `reference_route` (else the default route). Returns the suite and the
/// arguments every matrix command takes.
fn trt_matrix(
    sim: &Sim,
    candidate_route: &str,
    reference_route: Option<&str>,
) -> (PathBuf, Vec<String>) {
    let root = sim.path("catalog");
    let model = root.join("cnn-infer");
    std::fs::create_dir_all(&model).expect("mkdir");
    std::fs::write(
        model.join("MODEL.toml"),
        "name = \"cnn-infer\"\nfamily = \"cnn-infer\"\nsummary = \"tiny-cnn as plain ONNX inference\"\ntask_strategy = \"onnx_inference\"\nruntime_strategy = \"tract\"\nreference_precision = \"fp32\"\ntest_manifests = [\"e2e.toml\"]\n\n[source]\nbuiltin = \"tiny-cnn\"\nseed = 5\n\n[build]\nprecision = \"fp32\"\n\n[build.dims]\nbatch = 1\n",
    )
    .expect("model");
    std::fs::write(
        model.join("e2e.toml"),
        "[[case]]\nname = \"single\"\nsummary = \"seeded inputs\"\n[case.request]\nseed = 7\n",
    )
    .expect("cases");
    let env = sim.path("env.yaml");
    std::fs::write(
        &env,
        format!(
            "schema: trtmc.perf-environment/v1\nname: sim\nexecutables: []\nbundle_cache: {}\nresults_root: {}\nfree_storage_gib: 0\n",
            sim.bundles.display(),
            sim.path("results").display()
        ),
    )
    .expect("env");
    let trt = sim.trtexec.display().to_string();
    let reference_set = reference_route
        .map(|r| format!(", set: {{build.route: \"{r}\"}}"))
        .unwrap_or_default();
    let suite = sim.path("suite.yaml");
    std::fs::write(
        &suite,
        format!(
            "schema: trtmc.perf-suite/v1\nname: trt-builds\nthresholds: {{green_max: 1.05, yellow_max: 1.2, min_samples: 10}}\nmeasure: {{warmup: 1, iterations: 40, rounds: 6}}\nrows:\n  - entry: cnn-infer.infer\n    model: cnn-infer\n    testcase: single\n    candidate: {{runtime: tensorrt, trtexec: {trt}, set: {{build.route: \"{candidate_route}\"}}}}\n    reference: {{backend: \"trtmc:tensorrt\", trtexec: {trt}{reference_set}}}\n"
        ),
    )
    .expect("suite");
    let common = vec![
        "--environment".to_string(),
        s(&env).to_string(),
        "--manifest-root".to_string(),
        s(&root).to_string(),
    ];
    (suite, common)
}

/// A TensorRT row that is slower is explained as a CPU runtime's row is: each side's trtexec
/// `--exportProfile` run, the layers aligned on the ONNX graph (TensorRT's fused `a + b` layers at
/// their last node), the groups with most of the gap listed.
#[test]
fn a_slower_tensorrt_row_is_explained_layer_by_layer_from_trtexecs_profiles() {
    let sim = Sim::new();
    // -kgen:tiling=0 runs 1.04 x the default, -kgen:tiling=1 0.90 x: 1.16, a yellow light.
    let (suite, common) = trt_matrix(&sim, "-kgen:tiling=0", Some("-kgen:tiling=1"));
    let out = sim.path("matrix-out");
    let mut run = vec!["matrix", "run", s(&suite), "-o", s(&out)];
    run.extend(common.iter().map(String::as_str));
    let o = sim.run("110100", &run);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let results = read_json(&out.join("results.json"));
    let row = &results["rows"][0];
    assert_eq!(row["comparison"]["light"], "yellow", "{row}");
    let explanation = &row["explanation"];
    assert!(explanation["missing"].is_null(), "{explanation}");
    let candidate_ms = explanation["candidate_ms"].as_f64().expect("candidate_ms");
    let reference_ms = explanation["reference_ms"].as_f64().expect("reference_ms");
    assert!(candidate_ms > reference_ms * 1.05, "{explanation}");
    let layers = explanation["layers"].as_array().expect("layers");
    assert!(!layers.is_empty(), "{explanation}");
    // The largest share of the gap is a group of ONNX nodes, found through TensorRT's layer names.
    let top = &layers[0];
    assert!(!top["nodes"].as_array().expect("nodes").is_empty(), "{top}");
    assert!(top["delta_ms"].as_f64().expect("delta") > 0.0, "{top}");
    // Both profiles came from trtexec's --exportProfile runs of the two engines.
    let files: Vec<&str> = explanation["files"]
        .as_array()
        .expect("files")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        files
            .iter()
            .filter(|f| f.ends_with("profile_tensorrt.json"))
            .count()
            == 2,
        "{files:?}"
    );
    let profiled: Vec<Value> = sim
        .invocations("infer")
        .into_iter()
        .filter(|c| c["argv"].to_string().contains("--exportProfile="))
        .collect();
    assert_eq!(profiled.len(), 2, "{profiled:?}");
}

/// `--runtime-dir` is searched for trtexec before PATH, and trtexec runs with the folder first on
/// its loader path (where TensorRT's libraries sit in a tar install).
#[test]
fn trtexec_is_found_in_a_runtime_dir_and_sees_it_on_its_library_path() {
    let sim = Sim::new();
    let runtime_dir = sim.path("TensorRT-11.1/bin");
    std::fs::create_dir_all(&runtime_dir).expect("mkdir");
    // A wrapper named trtexec that records its LD_LIBRARY_PATH, then is the simulator.
    let seen = sim.path("ld-library-path.txt");
    let wrapper = runtime_dir.join("trtexec");
    write_script(
        &wrapper,
        &format!(
            "#!/bin/sh\necho \"$LD_LIBRARY_PATH\" >> '{}'\nexec '{}' \"$@\"\n",
            s(&seen),
            s(&sim.trtexec)
        ),
    );
    let out = sim.path("result");
    let o = sim
        .cmd(
            "110100",
            &[
                "run",
                "--onnx",
                s(&sim.onnx),
                "--runtime",
                "tensorrt",
                "--runtime-dir",
                s(&runtime_dir),
                "--bundle-cache",
                s(&sim.bundles),
                "--set",
                "build.dims.batch=1",
                "--iterations",
                "3",
                "--quiet",
                "-o",
                s(&out),
            ],
        )
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("start trtmc-bench");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let canonical = std::fs::canonicalize(&runtime_dir).expect("canonical");
    let lines = std::fs::read_to_string(&seen).expect("trtexec ran through the runtime dir");
    assert!(!lines.is_empty());
    for line in lines.lines() {
        assert!(line.starts_with(s(&canonical)), "LD_LIBRARY_PATH={line}");
    }
    let run = read_json(&out.join("result.json"));
    assert_eq!(
        run["provenance"]["runtime_dirs"],
        serde_json::json!([s(&canonical)])
    );
}

#[test]
fn check_outputs_on_tensorrt_reads_trtexecs_export_output() {
    let sim = Sim::new();
    // Inputs and expected outputs from ONNX Runtime's Python API; the simulator computes its
    // outputs with tract, so they agree within float rounding.
    let script = r#"
import sys
import numpy as np, onnxruntime as ort
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
i = s.get_inputs()[0]
x = np.random.default_rng(3).standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
names = [o.name for o in s.get_outputs()]
got = s.run(None, {i.name: x})
np.savez(sys.argv[2], **{i.name: x})
np.savez(sys.argv[3], **dict(zip(names, got)))
np.savez(sys.argv[4], **{n: g * 2 + 1 for n, g in zip(names, got)})
"#;
    let (inputs, expected, wrong) = (
        sim.path("in.npz"),
        sim.path("out.npz"),
        sim.path("wrong.npz"),
    );
    let o = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args([&sim.onnx, &inputs, &expected, &wrong])
        .output()
        .expect("python3 with numpy and onnxruntime");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = sim.path("ok");
    let o = sim.run_engine(
        "110100",
        &[
            "--inputs",
            s(&inputs),
            "--check-outputs",
            s(&expected),
            "--atol",
            "1e-4",
            "--rtol",
            "1e-3",
            "--iterations",
            "5",
            "-o",
            s(&out),
        ],
    );
    let (result, checks) = output_checks(&o, &out);
    assert!(!checks.is_empty(), "{result}");
    assert!(checks.iter().all(|c| c["passed"] == true), "{result}");
    // trtexec was asked for the outputs of the given inputs.
    let line = recorded_line(&sim, "infer", "--exportOutput=");
    assert!(line.contains("--loadInputs="), "{line}");
    // Its timed loop fed them too (not trtexec's random values), and `--dry-run` prints that very
    // command line.
    let timed = recorded_line(&sim, "infer", "--exportTimes=");
    assert!(
        timed.contains("--loadInputs=") && timed.contains("inputs_tensorrt/input-0.bin"),
        "{timed}"
    );
    let dry = sim.run_engine(
        "110100",
        &[
            "--inputs",
            s(&inputs),
            "--check-outputs",
            s(&expected),
            "--iterations",
            "5",
            "--dry-run",
        ],
    );
    assert_eq!(code(&dry), 0, "{}", stderr(&dry));
    assert_eq!(dry_run_line(&stdout(&dry), "time (in "), timed);
    // Wrong expected outputs fail the case naming the output (exit 5), as on the other runtimes.
    let out = sim.path("wrong");
    let o = sim.run_engine(
        "110100",
        &[
            "--inputs",
            s(&inputs),
            "--check-outputs",
            s(&wrong),
            "--iterations",
            "5",
            "-o",
            s(&out),
        ],
    );
    assert_eq!(code(&o), 5, "{}", stderr(&o));
    let result = read_json(&out.join("result.json"));
    let error = result["cases"][0]["error"].as_str().expect("error");
    assert!(
        error.contains("differs from the expected outputs"),
        "{error}"
    );
}

/// trtexec lists `--exportOutput` tensors in hash order (a `std::unordered_map`) at a C++ stream's
/// 6 significant digits; the simulator does the same, and `--check-outputs` at the default
/// tolerances still matches every output by name. On the onnx wheel's
/// `test_operator_symbolic_override_nested` (three inputs, three outputs, its own data set).
#[test]
fn outputs_exported_in_hash_order_at_six_digits_are_matched_by_name() {
    let sim = Sim::new();
    let folder = backend_model("pytorch-operator/test_operator_symbolic_override_nested");
    let data = folder.join("test_data_set_0");
    let out = sim.path("out");
    let o = sim.run_onnx(
        "110100",
        &folder.join("model.onnx"),
        &[
            "--inputs",
            s(&data),
            "--check-outputs",
            s(&data),
            "--iterations",
            "3",
            "-o",
            s(&out),
        ],
    );
    let (result, checks) = output_checks(&o, &out);
    assert_eq!(checks.len(), 3, "{result}");
    assert!(checks.iter().all(|c| c["passed"] == true), "{result}");
    // The exported file itself: not the model's order, no value with more than 6 digits.
    let exported = walk_files(&out)
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n == "outputs_tensorrt.json"))
        .expect("the --exportOutput file is kept with the case");
    let text = std::fs::read_to_string(&exported).expect("read");
    let tensors: serde_json::Value = serde_json::from_str(&text).expect("finite values are JSON");
    let names: Vec<&str> = tensors
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names.len(), 3, "{text}");
    assert_ne!(names, ["3", "4", "5"], "{text}");
    let values_line = text
        .lines()
        .find(|l| l.contains("\"values\""))
        .expect("values");
    for token in values_line
        .split(['[', ']', ','])
        .map(str::trim)
        .filter(|t| t.parse::<f64>().is_ok())
    {
        let digits = token
            .split(['e', 'E'])
            .next()
            .unwrap_or(token)
            .chars()
            .filter(char::is_ascii_digit)
            .collect::<String>();
        assert!(
            digits.trim_start_matches('0').len() <= 6,
            "{token} in {values_line}"
        );
    }
}
