//! Simulate mode's command line: banner and version, the knob database, option and route
//! validation per release, the environment (config, call log, argv), and replay mode.

mod common;

use common::{Sim, fixture};
use trtmc_trtexec::{RunStatus, TrtexecVersion, parse_knob_database};

#[test]
fn help_banner_carries_the_simulated_version() {
    let run = Sim::new().run(&["--help"]);
    run.assert_code(0);
    let banner = run.parsed().banner().cloned().expect("banner");
    assert_eq!(banner.version, Some(TrtexecVersion::new(11, 1, 0)));
    assert_eq!(banner.build, Some(106));
    assert_eq!(banner.command_line.as_deref(), Some("trtexec --help"));
    assert!(
        run.log.starts_with(
            "&&&& RUNNING TensorRT.trtexec [TensorRT v110100] [b106] # trtexec --help\n"
        )
    );
    assert_eq!(
        run.parsed().outcome(),
        None,
        "--help prints no final status"
    );

    let run = Sim::version(101601).run(&["-h"]);
    run.assert_code(0);
    let banner = run.parsed().banner().cloned().expect("banner");
    assert_eq!(banner.version, Some(TrtexecVersion::new(10, 16, 1)));
    assert_eq!(banner.build, Some(11));

    // The driver reads the version the same way.
    let sim = Sim::version(101601);
    let version = trtmc_trtexec::detect_version(&sim.wrapper(), std::time::Duration::from_secs(60))
        .expect("version");
    assert_eq!(version, TrtexecVersion::new(10, 16, 1));
}

#[test]
fn knob_database_parses_with_trtmcs_reader() {
    let run = Sim::new().run(&["--helpBuildRoute"]);
    run.assert_code(0);
    let db = parse_knob_database(&run.log).expect("knob database");
    assert_eq!(db.tuner_version, "2.19.45");
    assert_eq!(db.tuner_options.len(), 21);
    let tiling = db.knob("-kgen:tiling").expect("tiling knob");
    assert_eq!(tiling.default_value, "2");
    // Filtered by one knob, with or without its dash.
    for name in ["match_ragged_mha", "-match_ragged_mha"] {
        let run = Sim::new().run(&[&format!("--helpBuildRoute={name}")]);
        run.assert_code(0);
        let db = parse_knob_database(&run.log).expect("one knob");
        assert_eq!(db.tuner_options.len(), 1);
        assert_eq!(db.tuner_options[0].option, "-match_ragged_mha");
    }
    let run = Sim::new().run(&["--helpBuildRoute=nope"]);
    run.assert_code(1);
    assert!(run.log.contains("[E] Unknown knob: -nope"), "{}", run.log);

    // Through trtmc's driver.
    let sim = Sim::new();
    let trtexec = trtmc_trtexec::Trtexec::locate(Some(&sim.wrapper())).expect("locate");
    let db = trtexec
        .knob_database(&sim.path("knobs.log"), std::time::Duration::from_secs(60))
        .expect("database through the driver");
    assert_eq!(db.tuner_options.len(), 21);
}

#[test]
fn build_routes_do_not_exist_before_11_1() {
    for encoded in [101601, 110000] {
        let run = Sim::version(encoded).run(&["--helpBuildRoute"]);
        run.assert_code(1);
        assert!(
            run.log.contains("[E] Unknown option: --helpBuildRoute"),
            "{}",
            run.log
        );
        assert_eq!(run.parsed().outcome(), Some(RunStatus::Failed));
    }
    let sim = Sim::version(101601);
    let model = sim.model("tiny-cnn");
    let run = sim.run_owned(&[
        format!("--onnx={}", model.display()),
        sim.arg("--saveEngine", "e.plan"),
        "--setBuildRoute=-kgen:tiling=1".into(),
    ]);
    run.assert_code(1);
    assert!(run.log.contains("[E] Unknown option: --setBuildRoute"));
    assert!(!sim.path("e.plan").exists());
}

#[test]
fn bad_routes_and_precision_flags_fail_with_trtexecs_messages() {
    let sim = Sim::new();
    let model = sim.model("tiny-cnn");
    let build = |extra: &str| {
        sim.run_owned(&[
            format!("--onnx={}", model.display()),
            sim.arg("--saveEngine", "e.plan"),
            extra.to_string(),
        ])
    };
    let cases = [
        (
            "--setBuildRoute=-kgen:tilling=1",
            "[E] Unknown knob: -kgen:tilling",
        ),
        (
            "--setBuildRoute=-kgen:tiling=7",
            "[E] Invalid value(s) for knob -kgen:tiling: 7",
        ),
        (
            "--setBuildRoute=-conv_lowering=maybe",
            "[E] Invalid value(s) for knob -conv_lowering: maybe",
        ),
        (
            "--setBuildRoute=kgen:tiling",
            "[E] Invalid build route token",
        ),
        ("--fp16", "[E] Unknown option: --fp16"),
        ("--best", "[E] Unknown option: --best"),
        ("--useCudaGraphs", "[E] Unknown option: --useCudaGraphs"),
        (
            "--builderOptimizationLevel=9",
            "[E] Invalid value for --builderOptimizationLevel",
        ),
    ];
    for (arg, message) in cases {
        let run = build(arg);
        run.assert_code(1);
        assert!(run.log.contains(message), "{arg}: {}", run.log);
        let parsed = run.parsed();
        // 11.1 ends a command line it cannot parse without `&&&& FAILED`; a bad route is found
        // later, by the builder, and fails as before.
        let expected = if arg.starts_with("--setBuildRoute") {
            Some(RunStatus::Failed)
        } else {
            None
        };
        assert_eq!(parsed.outcome(), expected, "{arg}");
        assert!(!parsed.errors.is_empty());
        assert!(!sim.path("e.plan").exists(), "{arg} wrote an engine");
    }
    // Open-range and unbounded knobs take any integer; 10.x takes its precision flags.
    sim.build(
        &model,
        "ok.plan",
        &["--setBuildRoute=-peep:max=3 -cask_fusion:num_tactics=40"],
    );
    let old = Sim::version(101601);
    let model = old.model("tiny-cnn");
    old.build(
        &model,
        "fp16.plan",
        &["--fp16", "--builderOptimizationLevel=5"],
    );
    assert_eq!(
        old.engine("fp16.plan")["tokens"],
        serde_json::json!(["--fp16", "--builderOptimizationLevel=5"])
    );
}

#[test]
fn flags_follow_each_release() {
    // 11.x: the 10.x opt-in flags are deprecated no-ops, the opt-out flags exist.
    let sim = Sim::new();
    let model = sim.model("tiny-cnn");
    sim.build(&model, "e.plan", &[]);
    let run = sim.time(
        "e.plan",
        10,
        &["--useCudaGraph", "--noSpinWait", "--includeDataTransfers"],
    );
    run.assert_passed();
    assert!(
        run.log.contains("[W] --useCudaGraph is deprecated"),
        "{}",
        run.log
    );
    assert!(run.log.contains("Data transfers: Enabled"));
    // 10.x: the 11.x flags are unknown.
    let old = Sim::version(101601);
    let model = old.model("tiny-cnn");
    old.build(&model, "e.plan", &[]);
    let run = old.time("e.plan", 10, &["--noCudaGraph"]);
    run.assert_code(1);
    assert!(run.log.contains("[E] Unknown option: --noCudaGraph"));
    let run = old.time(
        "e.plan",
        10,
        &["--useCudaGraph", "--useSpinWait", "--noDataTransfers"],
    );
    run.assert_passed();
    assert!(run.log.contains("CUDA Graph: Enabled"));
}

#[test]
fn a_command_without_model_or_engine_fails() {
    let run = Sim::new().run(&[]);
    run.assert_code(1);
    assert!(
        run.log
            .contains("[E] Model missing or format not supported")
    );
    assert_eq!(run.parsed().outcome(), Some(RunStatus::Failed));
}

#[test]
fn a_malformed_config_names_the_file_and_exits_2() {
    let mut sim = Sim::new();
    sim.config("{\"base_ms\": 2.0,");
    let run = sim.run(&["--help"]);
    run.assert_code(2);
    let config = sim.path("sim-config.json");
    assert!(
        run.log.contains(&format!(
            "[E] trtexec-standin: TRTMC_SIM_CONFIG {}",
            config.display()
        )),
        "{}",
        run.log
    );
    sim.config("{\"faults\": {\"-a=1\": \"explode\"}}");
    sim.run(&["--help"]).assert_code(2);
    sim.config("{\"base_ms\": -1}");
    sim.run(&["--help"]).assert_code(2);
    let mut sim = Sim::new();
    sim.set("TRTMC_SIM_CONFIG", "/nonexistent/sim.json");
    let run = sim.run(&["--help"]);
    run.assert_code(2);
    assert!(run.log.contains("/nonexistent/sim.json"));
    let mut sim = Sim::new();
    sim.set("TRTMC_SIM_VERSION", "11.1");
    sim.run(&["--help"]).assert_code(2);
}

#[test]
fn calls_and_argv_are_recorded() {
    let mut sim = Sim::new();
    let calls = sim.path("calls.jsonl");
    let argv = sim.path("argv.json");
    sim.set("TRTMC_SIM_CALLS", calls.display());
    sim.set("TRTMC_STANDIN_ARGV", argv.display());
    let model = sim.model("tiny-cnn");
    sim.run(&["--help"]).assert_code(0);
    sim.run(&["--helpBuildRoute"]).assert_code(0);
    sim.build(&model, "a.plan", &["--setBuildRoute=-kgen:tiling=1"]);
    sim.build(&model, "b.plan", &[]);
    sim.time("a.plan", 5, &[]).assert_passed();
    let argv_json: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(&argv).expect("argv")).expect("JSON");
    assert_eq!(argv_json[0], sim.arg("--loadEngine", "a.plan"));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&calls)
        .expect("calls")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let modes: Vec<&str> = lines.iter().filter_map(|l| l["mode"].as_str()).collect();
    assert_eq!(
        modes,
        vec!["help", "help_build_route", "build", "build", "infer"]
    );
    assert_eq!(lines[2]["route"], "-kgen:tiling=1");
    assert!(lines[3].get("route").is_none());
    assert_eq!(
        lines[4]["argv"][0],
        sim.arg("--loadEngine", "a.plan").as_str()
    );
}

#[test]
fn replay_mode_is_unchanged() {
    let sim = Sim::new();
    let argv = sim.path("argv.json");
    let times = fixture("trtexec-logs/trt10.16_dumpProfile_exportTimes_exportProfile.log");
    let mut replay = Sim::new();
    replay.set(
        "TRTMC_STANDIN_LOG",
        fixture("trtexec-logs/trt10.16_onnx_build_and_bench_default.log").display(),
    );
    replay.set("TRTMC_STANDIN_ARGV", argv.display());
    replay.set("TRTMC_STANDIN_TIMES", times.display());
    let run = replay.run_owned(&[
        "--onnx=model.onnx".into(),
        sim.arg("--saveEngine", "dummy.plan"),
        sim.arg("--exportTimes", "t.json"),
    ]);
    run.assert_passed();
    assert!(run.log.contains("Throughput: 15374.3 qps"));
    assert_eq!(
        std::fs::read(sim.path("dummy.plan")).expect("dummy engine"),
        b"trtmc trtexec-standin dummy engine\n"
    );
    assert_eq!(
        std::fs::read(sim.path("t.json")).expect("copied"),
        std::fs::read(&times).expect("fixture")
    );
    let help = replay.run(&["--help"]);
    help.assert_code(0);
    assert!(
        help.log.starts_with(
            "&&&& RUNNING TensorRT.trtexec [TensorRT v101601] [b11] # trtexec --help\n"
        )
    );
    replay.set("TRTMC_STANDIN_EXIT", 3);
    replay.run(&["--onnx=m.onnx"]).assert_code(3);
    // Replay mode ignores the simulator's variables.
    replay.set("TRTMC_SIM_VERSION", "garbage");
    replay.run(&["--onnx=m.onnx"]).assert_code(3);
}
